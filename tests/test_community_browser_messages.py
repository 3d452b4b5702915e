"""Private messages and friends as two volunteers use them, in headless
Chromium against a project made by make_project under a private Apache (the
pages as CGIs, and once more in persistent processes): A writes B a message,
B sees the unread count, reads it and replies through the Reply link (the
text quoted); A asks B for friendship, B accepts it from the notification."""

import os

import pytest

import webdriver
from boincpy import passwords
from ops_fixtures import db_rows
from webdriver import Browser

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not webdriver.available(),
                                 reason="chromium and chromedriver are not installed")]

SCREENS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "artifacts",
                       "messages-screens")


@pytest.fixture(scope="module", params=["cgi", "persistent"])
def site(request, db_root_params):
    from conftest import RunningApache, make_test_project, remove_test_project
    from boincpy.db import connect
    from boincpy.tools import server_mode
    from boincpy.tools.httpd import PrivateApache
    from boincpy.web import accounts
    project = make_test_project(db_root_params, test_app=False, ops=False)
    try:
        db = connect(project.cfg)
        users = {}
        for who in ("alice", "bob"):
            addr = "%s.%s@example.org" % (who, request.param)
            user = accounts.make_user(db, project.cfg, addr, who.title() + " & Co",
                                      passwords.md5_hex("pw " + who + addr))
            users[who] = (user.id, addr, "pw " + who)
        db.close()
        if request.param != "cgi":
            server_mode.set_mode(project.root, request.param, processes=1)
        server = PrivateApache(project.root, project.port)
        server.start()
        try:
            running = RunningApache(project, server)
            running.mode = request.param
            running.users = users
            yield running
        finally:
            server.stop(graceful=False)
    finally:
        remove_test_project(project)


def login(b, site, who):
    _, addr, pw = site.users[who]
    b.get(site.master_url + "login_form.php")
    b.find("#email_addr").send_keys(addr)
    b.find("#passwd").send_keys(pw)
    b.find("form[action='login_action.php'] button").follow()


def rows(site, sql, params=()):
    return db_rows(site.project.db_root_params, site.project.db_name, sql, params)


def shot(b, site, name):
    os.makedirs(SCREENS, exist_ok=True)
    b.screenshot(os.path.join(SCREENS, "%s-%s.png" % (site.mode, name)))


def test_message_reply_and_friendship_in_chromium(site):
    base = site.master_url
    alice, bob = site.users["alice"][0], site.users["bob"][0]
    with Browser.start() as b:
        # A writes to B
        login(b, site, "alice")
        b.get(base + "pm.php?action=new&userid=%d" % bob)
        assert b.find("#to").property("value") == "%d (Bob & Co)" % bob
        b.find("#subject").send_keys("Hello <b>Bob</b>")
        b.find("#content").send_keys("First line\nsecond line")
        b.find("form[action='pm.php'] button:not([name])").follow()
        assert "Your message has been sent." in b.body_text()

        # B sees one unread, reads it, replies with the quote
        login(b, site, "bob")                   # on to home.php
        text = b.body_text()
        assert "(1 unread)" in text and "Private message from Alice & Co" in text
        shot(b, site, "home")
        b.link("Inbox").follow()
        text = b.body_text()
        assert "Hello <b>Bob</b>" in text and "second line" in text
        shot(b, site, "inbox")
        b.link("Reply").follow()
        assert b.find("#subject").property("value") == "re: Hello <b>Bob</b>"
        content = b.find("#content")
        assert content.property("value").startswith("[quote]First line")
        content.send_keys("Hi Alice!")
        b.find("form[action='pm.php'] button:not([name])").follow()
        assert "Your message has been sent." in b.body_text()
        b.get(base + "notifications.php")
        assert "unread" not in b.find("body").text.split("Notifications are")[0]

        # A reads the reply, asks for friendship
        login(b, site, "alice")
        b.get(base + "pm.php")
        assert "re: Hello <b>Bob</b>" in b.body_text() and "Hi Alice!" in b.body_text()
        b.get(base + "friend.php?action=add&userid=%d" % bob)
        b.find("#message").send_keys("We met in the forum")
        b.find("form[action='friend.php'] button").follow()
        assert "We have notified" in b.body_text()

        # B accepts from the notification
        login(b, site, "bob")
        b.get(base + "notifications.php")
        b.link("Friendship request").follow()
        assert "We met in the forum" in b.body_text()
        b.find("input[value='accept'] ~ button").follow()
        assert "has been confirmed" in b.body_text()
    assert {(r["user_src"], r["user_dest"], r["reciprocated"]) for r in rows(
        site, "SELECT * FROM friend")} == {(alice, bob, 1), (bob, alice, 1)}
    assert [(r["userid"], r["opened"]) for r in rows(
        site, "SELECT * FROM private_messages ORDER BY id")] == [(bob, 1), (alice, 1)]
