"""Private messages and friends as two volunteers use them, in headless
Chromium against a project made by make_project under a private Apache (the
pages as CGIs, and once more in persistent processes): A writes B a message,
B sees the unread count, reads it and replies through the Reply link (the
text quoted); A asks B for friendship, B accepts it from the notification."""

import os

import pytest

import webdriver
from boincpy import passwords
from site_util import browser_login, rows, served_project
from webdriver import Browser

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not webdriver.available(),
                                 reason="chromium and chromedriver are not installed")]

SCREENS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "artifacts",
                       "messages-screens")


@pytest.fixture(scope="module", params=["cgi", "persistent"])
def site(request, db_root_params):
    users = {}

    def add_users(project):
        from boincpy.db import connect
        from boincpy.web import accounts
        db = connect(project.cfg)
        for who in ("alice", "bob"):
            addr = "%s.%s@example.org" % (who, request.param)
            user = accounts.make_user(db, project.cfg, addr, who.title() + " & Co",
                                      passwords.md5_hex("pw " + who + addr))
            users[who] = (user.id, addr, "pw " + who)
        db.close()
    with served_project(db_root_params, request.param, add_users, test_app=False,
                        ops=False) as running:
        running.users = users
        yield running


def login(b, site, who):
    _, addr, pw = site.users[who]
    browser_login(b, site.master_url, addr, pw)


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
