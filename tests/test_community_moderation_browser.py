"""Moderation in a real browser (headless Chromium over WebDriver) against a
project made by make_project under a private Apache, through the pages' own
links and forms: a moderator opens a post's moderation choices, hides the
post with a reason, locks its thread; the author logs in and reads the
moderation notices in their private messages.  Once as CGIs, once in the
persistent mode (FastCGI workers).  One Apache serves the module."""

import os
import time

import pytest

from site_util import browser_logout, browser_site, login_as
from webdriver import Browser

pytestmark = pytest.mark.slow

SCREENS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "artifacts", "site-screens")


@pytest.fixture(scope="module")
def web(db_root_params):
    from boincpy.web import accounts
    with browser_site(db_root_params, ("moderator", "author")) as running:
        accounts.set_special_user(running.db, running.users["moderator"][0].id, [0])
        yield running


def login(b, web, who):
    user = login_as(b, web, who, "home.php")
    assert user.name in b.body_text()
    return user


def logout(b, web):
    browser_logout(b, web.master_url)


def new_thread(web, title):
    from boincpy.db import forum as forum_db
    author = web.users["author"][0]
    db = web.db
    fid = db.query_value("SELECT id FROM forum WHERE title = 'Science' AND parent_type = 0")
    now = int(time.time()) - 60
    with db.transaction():
        tid = forum_db.insert_thread(db, fid, author.id, title, "a fair question", now)
        pid = forum_db.insert_post(db, tid, fid, author.id, "BUY <b>NOW</b> cheap", now + 1)
    return tid, pid


def moderate(web, label):
    tid, pid = new_thread(web, "Thread %s" % label)
    with Browser.start() as b:
        login(b, web, "moderator")
        b.get(web.master_url + "forum_moderate_post.php?id=%d" % pid)   # the boards' link
        b.link("Hide").follow()
        b.find("#category").select("3")
        b.find("#reason").send_keys("advertising %s" % label)
        b.screenshot(os.path.join(SCREENS, "moderation-hide-%s.png" % label))
        b.find('form[action^="forum_moderate_post_action.php"] button').follow()
        assert web.db.query_value("SELECT hidden FROM post WHERE id = %s", (pid,)) == 1
        b.get(web.master_url + "forum_moderate_thread.php?action=lock&thread=%d" % tid)
        b.find("#category").select("2")
        b.find('form[action^="forum_moderate_thread_action.php"] button').follow()
        assert web.db.query_value("SELECT locked FROM thread WHERE id = %s", (tid,)) == 1
        logout(b, web)

        login(b, web, "author")
        b.get(web.master_url + "pm.php")
        text = b.body_text()
        b.screenshot(os.path.join(SCREENS, "moderation-notice-%s.png" % label))
        assert "moderation notice" in text
        assert "has been hidden by moderator" in text and "advertising %s" % label in text
        assert "Commercial spam" in text
        assert "THREAD lock REPORT: Thread %s" % label in text
        assert "has been locked by moderator" in text


def test_moderator_hides_and_locks_cgi(web):
    moderate(web, "cgi")


@pytest.mark.parametrize("mode", ["persistent"])
def test_moderator_hides_and_locks_persistent(web, mode):
    from boincpy.tools import server_mode
    from boincpy.tools.httpd import PrivateApache
    web.server.stop(graceful=False)
    server_mode.set_mode(web.project.root, mode, processes=2)
    server = PrivateApache(web.project.root, web.project.port)
    server.start()
    web.server = server
    moderate(web, "persistent")
    assert server_mode.persistent_pids(web.project.root)
