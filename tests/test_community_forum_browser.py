"""The message boards in a real browser (headless Chromium over WebDriver)
against a project made by make_project under a private Apache, through the
pages' own links and forms: a volunteer posts a thread (subscribing to it),
a second one subscribes too and replies quoting the first post, which
notifies the first (home.php's notice leads to the thread); then the boards once more in the persistent mode
(FastCGI workers), where the first volunteer answers.  One Apache serves the
module; screenshots go to tests/artifacts/forum-screens/."""

import os
import secrets

import pytest

from site_util import browser_logout, browser_site, login_as
from webdriver import Browser

pytestmark = pytest.mark.slow

SCREENS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "artifacts", "forum-screens")
TITLE = "Lensing question %s" % secrets.token_hex(3)


@pytest.fixture(scope="module")
def web(db_root_params):
    with browser_site(db_root_params, ("asker", "helper"), total_credit=50.0) as running:
        yield running


def shot(browser, name):
    return browser.screenshot(os.path.join(SCREENS, name + ".png"))


def login(b, web, who):
    user = login_as(b, web, who, "forum_index.php")
    assert "Message boards" in b.title
    return user


def logout(b, web):
    browser_logout(b, web.master_url)


def test_post_subscribe_reply_with_quote_notifies(web):
    from boincpy.db import messages as mdb
    with Browser.start() as b:
        asker = login(b, web, "asker")
        b.link("Science").follow()
        b.link("New thread").follow()
        b.find("#title").send_keys(TITLE)
        b.find("#content").send_keys("How does [b]lensing[/b] work? <script>x</script>")
        b.find("#subscribe").click()
        shot(b, "01-new-thread")
        b.find("#post").follow()
        assert TITLE in b.title
        text = b.body_text()
        assert "How does lensing work? <script>x</script>" in text      # markup as text
        shot(b, "02-thread")
        tid = web.db.query_value("SELECT id FROM thread WHERE title = %s", (TITLE,))
        assert web.db.query_value("SELECT COUNT(*) FROM subscriptions WHERE userid = %s "
                                  "AND threadid = %s", (asker.id, tid)) == 1
        logout(b, web)

        helper = login(b, web, "helper")
        b.link("Science").follow()
        b.link(TITLE).follow()
        b.find("#subscribe").follow()
        assert "You are now subscribed" in b.body_text()
        b.link("Return to thread").follow()
        b.link("Reply").follow()
        quoted = b.find("#content").property("value")
        assert quoted.startswith("In reply to %s's message of" % asker.name)
        assert "[quote]How does [b]lensing[/b] work?" in quoted
        b.find("#content").send_keys("\nLight bends around mass.")
        shot(b, "03-reply-form")
        b.find("#post").follow()
        assert "Light bends around mass." in b.body_text()
        assert b.find("blockquote.quote")
        shot(b, "04-thread-with-reply")
        assert web.db.query_value(
            "SELECT COUNT(*) FROM notify WHERE userid = %s AND type = %s AND opaque = %s",
            (asker.id, mdb.NOTIFY_SUBSCRIBED_THREAD, tid)) == 1
        assert web.db.query_value("SELECT COUNT(*) FROM notify WHERE userid = %s",
                                  (helper.id,)) == 0
        logout(b, web)

        login(b, web, "asker")
        b.get(web.master_url + "home.php")                 # the notice on the account page
        assert "New posts in the thread %s" % TITLE in b.body_text()
        shot(b, "05-home-notice")
        b.link(TITLE).follow()
        assert "Light bends around mass." in b.body_text()
        assert web.db.query_value("SELECT COUNT(*) FROM notify WHERE userid = %s AND "
                                  "type = %s", (asker.id, mdb.NOTIFY_SUBSCRIBED_THREAD)) == 0


@pytest.mark.parametrize("mode", ["persistent"])
def test_boards_in_persistent_mode(web, mode):
    from boincpy.tools import server_mode
    from boincpy.tools.httpd import PrivateApache
    web.server.stop(graceful=False)
    server_mode.set_mode(web.project.root, mode, processes=2)
    server = PrivateApache(web.project.root, web.project.port)
    server.start()
    web.server = server
    with Browser.start() as b:
        login(b, web, "asker")
        b.link("Science").follow()
        b.link(TITLE).follow()
        b.link("Post to thread").follow()
        b.find("#content").send_keys("Thanks, that answers it.")
        b.find("#post").follow()
        assert "Thanks, that answers it." in b.body_text()
        shot(b, "06-persistent-reply")
    helper = web.users["helper"][0]
    assert web.db.query_value("SELECT COUNT(*) FROM notify WHERE userid = %s",
                              (helper.id,)) == 1
    assert server_mode.persistent_pids(web.project.root)
