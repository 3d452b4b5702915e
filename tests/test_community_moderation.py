"""Moderation of the message boards (forum_moderate_post/thread[_action].php,
forum_banishment_vote[_action].php), reCAPTCHA against a verifier on
127.0.0.1, bin/delete_spammers and the ops page accounts_by_address.php,
in-process against a project made by make_project, e-mail read back from a
real SMTP server (aiosmtpd) on 127.0.0.1.

One project serves the module; each test makes users and threads of its own."""

import http.server
import itertools
import json
import os
import re
import subprocess
import threading
import time
import urllib.parse

import pytest

from boincpy.config import load_config
from boincpy.db import forum as forum_db
from boincpy.web import accounts, recaptcha
from boincpy.tools.httpd import free_port
from boincpy.web.http import Request
from boincpy.web.user import moderation
from site_util import add_config as _set_config
from site_util import call, mailing_project, numbered_user, ok, one, q
from site_util import token_of as token

HOSTILE = '<script>alert("x")</script><b>bold</b>'
REPORTS = "mods@example.com|admin2@example.com"
_serial = itertools.count(1)


class Verifier(http.server.BaseHTTPRequestHandler):
    """A stand-in for Google's siteverify: response "good" passes."""
    asked = []

    def do_GET(self):
        query = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query)
        Verifier.asked.append(query)
        ok = query.get("secret") == ["s3cret"] and query.get("response") == ["good"]
        body = json.dumps({"success": ok}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def verifier():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Verifier)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield "http://127.0.0.1:%d/recaptcha/api/siteverify" % server.server_port
    server.shutdown()


@pytest.fixture(scope="module")
def site(db_root_params, smtp):
    with mailing_project(db_root_params, smtp,
                         "\n    <post_report_emails>%s</post_report_emails>\n"
                         "    <moderators_vote_to_ban/>\n" % REPORTS) as project:
        yield project


def new_user(site, name=None, special=None, send_email=1, create_time=None, url=""):
    n = next(_serial)
    changes = {}
    if not send_email:
        changes["send_email"] = 0
    if url:
        changes["url"] = url
    user = numbered_user(site, n, "m", "secret", name or "user%d" % n, create_time, changes,
                         keep_name=True)
    if special is not None:
        accounts.set_special_user(site.db, user.id, special)
    return accounts.lookup_user_by_id(site.db, user.id)


def forum_id(site, title="Science"):
    return one(site, "SELECT id FROM forum WHERE title = %s AND parent_type = 0", (title,))["id"]


def new_thread(site, author, title="a thread", content="first post", forum="Science"):
    now = int(time.time())
    with site.db.transaction():
        tid = forum_db.insert_thread(site.db, forum_id(site, forum), author.id, title, content,
                                     now - 100)
    pid = one(site, "SELECT id FROM post WHERE thread = %s", (tid,))["id"]
    return tid, pid


def reply(site, tid, author, content="a reply", when=None):
    thread = one(site, "SELECT forum FROM thread WHERE id = %s", (tid,))
    with site.db.transaction():
        return forum_db.insert_post(site.db, tid, thread["forum"], author.id, content,
                                    when or int(time.time()) - 50)


def counters(site, tid):
    t = one(site, "SELECT * FROM thread WHERE id = %s", (tid,))
    f = one(site, "SELECT threads, posts FROM forum WHERE id = %s", (t["forum"],))
    return t, f


def pms(site, user):
    return q(site, "SELECT * FROM private_messages WHERE userid = %s ORDER BY id", (user.id,))


def act(site, user, form_page, get, action_page, fields):
    """Open the form as ``user``, post it with its token."""
    body = ok(call(site, form_page, user, get))
    post = dict(fields, csrf_token=token(body))
    return call(site, action_page, user, {k: v for k, v in get.items() if k != "action"}, post)


MOD = [moderation.S_MODERATOR]
ADMIN = [moderation.S_ADMIN]


# ---------------------------------------------------------------------------
# who moderates

def test_only_special_users_moderate(site):
    author = new_user(site)
    plain = new_user(site)
    tester = new_user(site, special=[3])           # project tester: not a moderator
    tid, pid = new_thread(site, author)
    pages = (("forum_moderate_post.php", {"id": pid, "action": "hide"}),
             ("forum_moderate_thread.php", {"thread": tid, "action": "lock"}),
             ("forum_moderate_post_action.php", {"id": pid, "action": "unhide"}),
             ("forum_moderate_thread_action.php", {"thread": tid, "action": "sticky"}),
             ("forum_banishment_vote.php", {"userid": author.id, "action": "start"}))
    for who in (plain, tester, author):
        for page, get in pages:
            resp = call(site, page, who, get)
            assert resp.status.startswith("403"), (page, resp.status)
    # not logged in: to the login form
    resp = call(site, "forum_moderate_post.php", None, {"id": pid, "action": "hide"})
    assert resp.status.startswith("303") and "login_form.php" in dict(resp.headers)["Location"]
    # a post without a token from a non-moderator changes nothing
    resp = call(site, "forum_moderate_post_action.php", plain, {"id": pid},
                {"action": "hide", "id": str(pid)})
    assert resp.status.startswith("403")
    assert one(site, "SELECT hidden FROM post WHERE id = %s", (pid,))["hidden"] == 0
    # each moderating flag opens the form
    for flags in (MOD, ADMIN, [2], [6]):
        mod = new_user(site, special=flags)
        assert "Reason" in ok(call(site, "forum_moderate_post.php", mod,
                                   {"id": pid, "action": "hide"}))
    # the links the boards' pages show
    assert moderation.is_moderator(site.db, new_user(site, special=MOD), None)
    assert not moderation.is_moderator(site.db, plain, None)
    assert not moderation.is_admin(site.db, new_user(site, special=MOD))


def test_bad_requests(site):
    mod = new_user(site, special=MOD)
    author = new_user(site)
    tid, pid = new_thread(site, author)
    for page, get, status in (
            ("forum_moderate_post.php", {"id": pid, "action": "explode"}, "400"),
            ("forum_moderate_post.php", {"id": "x1", "action": "hide"}, "400"),
            ("forum_moderate_post.php", {"id": 10 ** 30, "action": "hide"}, "400"),
            ("forum_moderate_post.php", {"id": 2 ** 31 - 2, "action": "hide"}, "404"),
            ("forum_moderate_thread.php", {"thread": 2 ** 31 - 2, "action": "lock"}, "404"),
            ("forum_moderate_thread.php", {"action": "lock"}, "400"),
            ("forum_banishment_vote.php", {"userid": 2 ** 31 - 2, "action": "start"}, "404")):
        resp = call(site, page, mod, get)
        assert resp.status.startswith(status), (page, get, resp.status)
    # no action (the boards' "Moderate post" link): the choices
    body = ok(call(site, "forum_moderate_post.php", mod, {"id": pid}))
    assert "forum_moderate_post.php?action=hide&amp;id=%d" % pid in body
    assert call(site, "forum_moderate_post.php", author, {"id": pid}).status.startswith("403")
    # an odd category or duration: refused, nothing changed
    resp = act(site, mod, "forum_moderate_post.php", {"id": pid, "action": "hide"},
               "forum_moderate_post_action.php", {"action": "hide", "category": "99"})
    assert resp.status.startswith("400")
    assert one(site, "SELECT hidden FROM post WHERE id = %s", (pid,))["hidden"] == 0


# ---------------------------------------------------------------------------
# posts

def test_hide_unhide_post(site, smtp):
    mod = new_user(site, name="Mod " + HOSTILE, special=MOD)
    author = new_user(site)
    tid, first = new_thread(site, author, "Hide " + HOSTILE)
    pid = reply(site, tid, author, "spam spam " + HOSTILE)
    t0, f0 = counters(site, tid)
    assert t0["replies"] == 1

    body = ok(call(site, "forum_moderate_post.php", mod, {"id": pid, "action": "hide"}))
    assert HOSTILE not in body and "&lt;script&gt;" in body
    for label in ("Obscene", "Flame/Hate mail", "Commercial spam", "Doublepost",
                  "User Request", "Other"):
        assert label in body
    # wrong token, missing token, GET: nothing changes
    for post in ({"action": "hide", "category": "3"},
                 {"action": "hide", "category": "3", "csrf_token": "x" * 40}):
        assert call(site, "forum_moderate_post_action.php", mod, {"id": pid},
                    post).status.startswith("403")
    assert one(site, "SELECT hidden FROM post WHERE id = %s", (pid,))["hidden"] == 0

    resp = act(site, mod, "forum_moderate_post.php", {"id": pid, "action": "hide"},
               "forum_moderate_post_action.php",
               {"action": "hide", "category": "3", "reason": "Buy now " + HOSTILE})
    assert resp.status.startswith("303")
    assert dict(resp.headers)["Location"] == "forum_thread.php?id=%d" % tid
    assert one(site, "SELECT hidden FROM post WHERE id = %s", (pid,))["hidden"] == 1
    t1, f1 = counters(site, tid)
    assert t1["replies"] == 0 and f1["posts"] == f0["posts"] - 1
    # the author's notice: a private message from themselves, its notification, an e-mail
    msg = pms(site, author)[-1]
    assert msg["senderid"] == author.id and "moderation notice" in msg["subject"]
    assert "has been hidden by moderator" in msg["content"]
    assert "categorized as Commercial spam" in msg["content"]
    assert "Moderator comment: Buy now " + HOSTILE in msg["content"]
    assert one(site, "SELECT opaque FROM notify WHERE userid = %s AND type = 3 "
                     "AND opaque = %s", (author.id, msg["id"]))
    mails = smtp.to(author.email_addr)
    assert mails and "moderation notice" in mails[-1]["Subject"]
    # the moderators' report
    reports = smtp.to("mods@example.com")
    assert reports and "post hidden in" in reports[-1]["Subject"]
    assert smtp.to("admin2@example.com")
    # hiding again: nothing to do
    resp = act(site, mod, "forum_moderate_post.php", {"id": pid, "action": "hide"},
               "forum_moderate_post_action.php", {"action": "hide", "category": "1"})
    assert resp.status.startswith("409")

    # unhide: BOINC's link is a GET of the action page: a button that posts
    body = ok(call(site, "forum_moderate_post_action.php", mod, {"id": pid, "action": "unhide"}))
    assert one(site, "SELECT hidden FROM post WHERE id = %s", (pid,))["hidden"] == 1
    resp = call(site, "forum_moderate_post_action.php", mod, {"id": pid},
                {"action": "unhide", "csrf_token": token(body)})
    assert resp.status.startswith("303")
    assert one(site, "SELECT hidden FROM post WHERE id = %s", (pid,))["hidden"] == 0
    t2, f2 = counters(site, tid)
    assert t2["replies"] == 1 and f2["posts"] == f0["posts"]
    assert "unhidden" in pms(site, author)[-1]["content"]


def test_author_without_email_still_gets_the_pm(site, smtp):
    mod = new_user(site, special=MOD)
    author = new_user(site, send_email=0)
    tid, pid = new_thread(site, author)
    resp = act(site, mod, "forum_moderate_post.php", {"id": pid, "action": "hide"},
               "forum_moderate_post_action.php", {"action": "hide", "category": "1"})
    assert resp.status.startswith("303")
    assert pms(site, author)
    assert not smtp.to(author.email_addr)


def test_move_post(site):
    mod = new_user(site, special=MOD)
    author = new_user(site)
    tid, first = new_thread(site, author, "from")
    pid = reply(site, tid, author, "misplaced")
    dest, _ = new_thread(site, author, "to " + HOSTILE, forum="Cafe")
    src0, srcf0 = counters(site, tid)
    dst0, dstf0 = counters(site, dest)
    body = ok(call(site, "forum_moderate_post.php", mod, {"id": pid, "action": "move"}))
    assert 'name="threadid"' in body
    for bad, status in (("abc", "400"), ("999999999", "404"), (str(tid), "400")):
        resp = call(site, "forum_moderate_post_action.php", mod, {"id": pid},
                    {"action": "move", "threadid": bad, "csrf_token": token(body)})
        assert resp.status.startswith(status), (bad, resp.status)
    resp = call(site, "forum_moderate_post_action.php", mod, {"id": pid},
                {"action": "move", "threadid": str(dest), "csrf_token": token(body)})
    assert resp.status.startswith("303")
    assert one(site, "SELECT thread FROM post WHERE id = %s", (pid,))["thread"] == dest
    src1, srcf1 = counters(site, tid)
    dst1, dstf1 = counters(site, dest)
    assert src1["replies"] == src0["replies"] - 1 and dst1["replies"] == dst0["replies"] + 1
    assert srcf1["posts"] == srcf0["posts"] - 1 and dstf1["posts"] == dstf0["posts"] + 1
    content = pms(site, author)[-1]["content"]
    assert "moved to another thread" in content and "New thread: to " + HOSTILE in content


def test_banish_author(site, smtp):
    mod = new_user(site, special=MOD)
    admin = new_user(site, special=ADMIN)
    author = new_user(site, name="Troll " + HOSTILE)
    tid, pid = new_thread(site, author)
    # a volunteer moderator may not (no <moderators_allowed_to_ban>)
    resp = call(site, "forum_moderate_post.php", mod,
                {"id": pid, "action": "banish_user", "userid": author.id})
    assert resp.status.startswith("403")
    body = ok(call(site, "forum_moderate_post.php", admin,
                   {"id": pid, "action": "banish_user", "userid": author.id}))
    assert HOSTILE not in body and "Troll &lt;script&gt;" in body
    for bad in ("7", "x", ""):
        resp = call(site, "forum_moderate_post_action.php", admin, {"id": pid},
                    {"action": "banish_user", "userid": str(author.id), "duration": bad,
                     "csrf_token": token(body)})
        assert resp.status.startswith("400")
    assert not accounts.is_banished(site.db, author.id)
    now = int(time.time())
    resp = call(site, "forum_moderate_post_action.php", admin, {"id": pid},
                {"action": "banish_user", "userid": str(author.id), "duration": "86400",
                 "reason": "trolling", "csrf_token": token(body)})
    body2 = ok(resp)
    assert "has been banished" in body2 and HOSTILE not in body2
    until = accounts.forum_prefs(site.db, author.id)["banished_until"]
    assert now + 86400 - 5 <= until <= now + 86400 + 5
    assert "posting privileges suspended" in pms(site, author)[-1]["subject"]
    assert "trolling" in pms(site, author)[-1]["content"]
    assert any("has been banished" in m["Subject"] for m in smtp.to("mods@example.com"))
    # already banished: the form says so
    resp = call(site, "forum_moderate_post.php", admin,
                {"id": pid, "action": "banish_user", "userid": author.id})
    assert resp.status.startswith("400") and "already banished" in resp.body
    # forever
    other = new_user(site)
    tid2, pid2 = new_thread(site, other)
    resp = act(site, admin, "forum_moderate_post.php",
               {"id": pid2, "action": "banish_user", "userid": other.id},
               "forum_moderate_post_action.php",
               {"action": "banish_user", "userid": str(other.id), "duration": "-1"})
    ok(resp)
    assert accounts.forum_prefs(site.db, other.id)["banished_until"] == 2147483647


def test_delete_post_admins_only(site):
    mod = new_user(site, special=MOD)
    admin = new_user(site, special=ADMIN)
    author = new_user(site)
    tid, first = new_thread(site, author)
    pid = reply(site, tid, author)
    assert call(site, "forum_moderate_post.php", mod,
                {"id": pid, "action": "delete"}).status.startswith("403")
    resp = act(site, admin, "forum_moderate_post.php", {"id": pid, "action": "delete"},
               "forum_moderate_post_action.php", {"action": "delete"})
    assert "Post successfully deleted" in ok(resp)
    assert not one(site, "SELECT id FROM post WHERE id = %s", (pid,))
    resp = act(site, admin, "forum_moderate_post.php", {"id": first, "action": "delete"},
               "forum_moderate_post_action.php", {"action": "delete"})
    assert "Post and thread successfully deleted" in ok(resp)
    assert not one(site, "SELECT id FROM thread WHERE id = %s", (tid,))


# ---------------------------------------------------------------------------
# threads

def test_thread_actions(site, smtp):
    mod = new_user(site, special=MOD)
    author = new_user(site)
    tid, pid = new_thread(site, author, "Thread " + HOSTILE)
    reply(site, tid, author)
    body = ok(call(site, "forum_moderate_thread.php", mod, {"thread": tid, "action": "lock"}))
    assert HOSTILE not in body and "&lt;script&gt;" in body
    # CSRF
    assert call(site, "forum_moderate_thread_action.php", mod, {"thread": tid},
                {"action": "lock"}).status.startswith("403")
    assert one(site, "SELECT locked FROM thread WHERE id = %s", (tid,))["locked"] == 0

    def do(action, extra=None, form_action=None):
        get = {"thread": tid, "action": form_action or action}
        page = "forum_moderate_thread.php"
        if action in ("unhide", "sticky", "desticky", "unlock"):
            page = "forum_moderate_thread_action.php"       # BOINC's direct links
        resp = act(site, mod, page, get, "forum_moderate_thread_action.php",
                   dict({"action": action}, **(extra or {})))
        assert resp.status.startswith("303"), (action, resp.status, resp.body[-500:])
        return one(site, "SELECT * FROM thread WHERE id = %s", (tid,))

    assert do("lock", {"category": "2", "reason": "calm down"})["locked"] == 1
    msg = pms(site, author)[-1]
    assert msg["subject"].startswith("THREAD lock REPORT")
    assert "has been locked by moderator" in msg["content"]
    assert "Reason: flame/hate mail" in msg["content"]
    assert "Moderator comment: calm down" in msg["content"]
    assert any("THREAD lock REPORT" in m["Subject"] for m in smtp.to("mods@example.com"))
    assert do("unlock")["locked"] == 0
    assert do("sticky")["sticky"] == 1
    assert do("desticky")["sticky"] == 0
    t0, f0 = counters(site, tid)
    assert do("hide", {"category": "3"})["hidden"] == 1
    t1, f1 = counters(site, tid)
    assert f1["threads"] == f0["threads"] - 1 and f1["posts"] == f0["posts"] - 2
    assert do("unhide")["hidden"] == 0
    t2, f2 = counters(site, tid)
    assert f2 == f0
    renamed = do("title", {"newtitle": "New <i>title</i> " + HOSTILE})
    assert "<" not in renamed["title"] and renamed["title"].startswith("New title")
    assert "renamed from" in pms(site, author)[-1]["content"]
    for bad in ("", "x" * 300):
        resp = act(site, mod, "forum_moderate_thread.php", {"thread": tid, "action": "title"},
                   "forum_moderate_thread_action.php", {"action": "title", "newtitle": bad})
        assert resp.status.startswith("400")
    cafe = forum_id(site, "Cafe")
    body = ok(call(site, "forum_moderate_thread.php", mod, {"thread": tid, "action": "move"}))
    assert 'name="forumid"' in body
    before = one(site, "SELECT threads, posts FROM forum WHERE id = %s", (cafe,))
    moved = do("move", {"forumid": str(cafe)})
    assert moved["forum"] == cafe
    after = one(site, "SELECT threads, posts FROM forum WHERE id = %s", (cafe,))
    assert after["threads"] == before["threads"] + 1 and after["posts"] == before["posts"] + 2
    # delete: administrators only
    assert call(site, "forum_moderate_thread.php", mod,
                {"thread": tid, "action": "delete"}).status.startswith("403")
    admin = new_user(site, special=[6])
    resp = act(site, admin, "forum_moderate_thread.php", {"thread": tid, "action": "delete"},
               "forum_moderate_thread_action.php", {"action": "delete"})
    assert "Thread successfully deleted" in ok(resp)
    assert not q(site, "SELECT id FROM post WHERE thread = %s", (tid,))


# ---------------------------------------------------------------------------
# banishment votes

def test_banishment_vote(site, smtp):
    site.db.execute("UPDATE forum_preferences SET special_user = '0' WHERE special_user LIKE '1%'")
    mods = [new_user(site, special=MOD) for _ in range(3)]
    author = new_user(site, name="Voted " + HOSTILE)
    body = ok(call(site, "forum_banishment_vote.php", mods[0],
                   {"action": "start", "userid": author.id}))
    assert HOSTILE not in body and "Proceed with vote" in body
    # an administrator without the moderator flag may not vote (BOINC: S_MODERATOR)
    assert call(site, "forum_banishment_vote.php", new_user(site, special=ADMIN),
                {"action": "start", "userid": author.id}).status.startswith("403")
    assert call(site, "forum_banishment_vote_action.php", mods[0], None,
                {"action": "start", "userid": str(author.id)}).status.startswith("403")
    now = int(time.time())
    resp = call(site, "forum_banishment_vote_action.php", mods[0], None,
                {"action": "start", "userid": str(author.id), "category": "2",
                 "reason": "flames", "csrf_token": token(body)})
    assert "Banishment vote started" in ok(resp) and "Ayes: 1 Nays: 0" in resp.body
    vote = one(site, "SELECT * FROM banishment_vote WHERE userid = %s", (author.id,))
    assert vote["modid"] == mods[0].id and vote["end_time"] - vote["start_time"] == 21600
    assert accounts.forum_prefs(site.db, author.id)["banished_until"] == vote["end_time"]
    assert "banishment vote underway" in pms(site, author)[-1]["subject"]
    assert any("banishment vote" in m["Subject"] for m in smtp.to("mods@example.com"))
    # the same moderator can't vote twice; a second start is refused
    body = ok(call(site, "forum_banishment_vote.php", mods[0],
                   {"action": "yes", "userid": author.id}))
    resp = call(site, "forum_banishment_vote_action.php", mods[0], None,
                {"action": "yes", "userid": str(author.id), "csrf_token": token(body)})
    assert "already voted" in ok(resp)
    # a nay: 1-1, still open
    body = ok(call(site, "forum_banishment_vote.php", mods[1],
                   {"action": "no", "userid": author.id}))
    resp = call(site, "forum_banishment_vote_action.php", mods[1], None,
                {"action": "no", "userid": str(author.id), "csrf_token": token(body)})
    assert "Vote recorded: Nay" in ok(resp) and "Ayes: 1 Nays: 1" in resp.body
    assert moderation.vote_in_progress(site.db, author.id, time.time())
    # an aye: 2 of 3 moderators, the majority: banished for two weeks from the start
    body = ok(call(site, "forum_banishment_vote.php", mods[2],
                   {"action": "yes", "userid": author.id}))
    resp = call(site, "forum_banishment_vote_action.php", mods[2], None,
                {"action": "yes", "userid": str(author.id), "csrf_token": token(body)})
    assert "majority" in ok(resp)
    assert accounts.forum_prefs(site.db, author.id)["banished_until"] == \
        vote["start_time"] + 14 * 86400
    assert not moderation.vote_in_progress(site.db, author.id, time.time())
    assert [r["yes"] for r in q(site, "SELECT yes FROM banishment_votes WHERE voteid = %s "
                                      "ORDER BY id", (vote["id"],))] == [1, 0, 1]
    assert vote["start_time"] >= now


def test_banishment_vote_majority_against_and_expiry(site):
    site.db.execute("UPDATE forum_preferences SET special_user = '0' WHERE special_user LIKE '1%'")
    mods = [new_user(site, special=MOD) for _ in range(3)]
    author = new_user(site)

    def vote_as(mod, action, now=None):
        body = ok(call(site, "forum_banishment_vote.php", mod,
                       {"action": "start" if action == "start" else action,
                        "userid": author.id}, now=now))
        return ok(call(site, "forum_banishment_vote_action.php", mod, None,
                       {"action": action, "userid": str(author.id), "csrf_token": token(body)},
                       now=now))

    vote_as(mods[0], "start")
    vote_as(mods[1], "no")
    vote_as(mods[2], "no")               # 2 nays of 3: over, the ban lifted
    assert not accounts.is_banished(site.db, author.id)
    assert not moderation.vote_in_progress(site.db, author.id, time.time())

    # a vote that runs out with more ayes than nays banishes at the next look
    t0 = int(time.time()) - 30000
    author2 = new_user(site)
    with site.db.transaction():
        vid = forum_db.insert_banishment_vote(site.db, author2.id, mods[0].id, t0, t0 + 21600)
        forum_db.insert_banishment_ballot(site.db, vid, mods[0].id, t0, True)
    accounts.set_banished_until(site.db, author2.id, t0 + 21600)
    assert not accounts.is_banished(site.db, author2.id)
    ok(call(site, "forum_banishment_vote.php", mods[1], {"action": "start",
                                                          "userid": author.id}))
    assert accounts.forum_prefs(site.db, author2.id)["banished_until"] == t0 + 14 * 86400


def test_votes_off_without_the_option(site, db_root_params):
    assert site.cfg.moderators_vote_to_ban
    # a link helper for the boards' pages shows the vote buttons to moderators only
    mod = new_user(site, special=MOD)
    author = new_user(site)
    tid, pid = new_thread(site, author)
    post = one(site, "SELECT * FROM post WHERE id = %s", (pid,))
    forum = one(site, "SELECT * FROM forum WHERE id = %s", (forum_id(site),))
    thread = one(site, "SELECT * FROM thread WHERE id = %s", (tid,))

    class Ctx:
        db, cfg, now = site.db, site.cfg, time.time()
    links = str(moderation.moderation_links(Ctx, mod, post, forum))
    assert "forum_moderate_post.php?action=hide" in links and "Start vote" in links
    assert "Delete" not in links and "Banish author" not in links
    assert str(moderation.moderation_links(Ctx, author, post, forum)) == ""
    tlinks = str(moderation.thread_moderation_links(Ctx, mod, thread, forum))
    assert "action=lock" in tlinks and "action=sticky" in tlinks
    assert str(moderation.thread_moderation_links(Ctx, author, thread, forum)) == ""


# ---------------------------------------------------------------------------
# reCAPTCHA against a verifier on 127.0.0.1

class Cfg:
    recaptcha_public_key = ""
    recaptcha_private_key = ""
    recaptcha_verify_url = "http://127.0.0.1:9/never"


def _form(response, addr="192.0.2.9"):
    post = {} if response is None else {"g-recaptcha-response": response}
    return Request.of("POST", None, post, {"REMOTE_ADDR": addr, "HTTP_HOST": "x"})


def test_recaptcha(verifier):
    cfg = Cfg()
    # off by default: every form passes, no verifier asked, no box shown
    assert recaptcha.recaptcha_check(cfg, _form(None))
    assert str(recaptcha.recaptcha_html(cfg)) == ""
    cfg.recaptcha_public_key = 'site"key<'
    assert str(recaptcha.recaptcha_html(cfg)) == \
        '<div class="g-recaptcha" data-sitekey="site&#34;key&lt;"></div>'
    cfg.recaptcha_private_key = "s3cret"
    cfg.recaptcha_verify_url = verifier
    Verifier.asked.clear()
    assert recaptcha.recaptcha_check(cfg, _form("good"))
    assert Verifier.asked[-1] == {"secret": ["s3cret"], "response": ["good"],
                                  "remoteip": ["192.0.2.9"]}
    assert not recaptcha.recaptcha_check(cfg, _form("bad"))
    n = len(Verifier.asked)
    assert not recaptcha.recaptcha_check(cfg, _form(None))        # nothing to ask about
    assert len(Verifier.asked) == n
    assert not recaptcha.recaptcha_check(cfg, _form("good&secret=x"))
    cfg.recaptcha_private_key = "wrong"
    assert not recaptcha.recaptcha_check(cfg, _form("good"))
    # a verifier that isn't there, or answers no JSON: refused
    cfg.recaptcha_private_key = "s3cret"
    cfg.recaptcha_verify_url = "http://127.0.0.1:%d/" % free_port()
    assert not recaptcha.recaptcha_check(cfg, _form("good"))
    cfg.recaptcha_verify_url = verifier.replace("/recaptcha/api/siteverify", "/x?y=1")
    assert recaptcha.recaptcha_check(cfg, _form("good"))           # ? already in the URL


def test_recaptcha_config_declared(site):
    assert site.cfg.recaptcha_private_key == ""
    assert site.cfg.recaptcha_verify_url == "https://www.google.com/recaptcha/api/siteverify"
    assert not recaptcha.enabled(site.cfg)


# ---------------------------------------------------------------------------
# bin/delete_spammers

def add_host(site, user, addr="198.51.100.1", external=""):
    return site.db.insert(
        "INSERT INTO host (create_time, userid, domain_name, last_ip_addr, external_ip_addr, "
        "os_name, p_ncpus, misc) VALUES (%s, %s, 'h', %s, %s, 'Linux', 1, '')",
        (int(time.time()), user.id, addr, external))


def add_profile(site, user, text):
    from boincpy.db import profile as profile_db
    profile_db.insert_profile(site.db, user.id, "en", text, "", 0)


def spammers(site, *args):
    proc = subprocess.run([os.path.join(site.root, "bin", "delete_spammers"),
                           "--project_dir", site.root] + list(args),
                          capture_output=True, text=True, timeout=120)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def exists(site, user):
    return bool(one(site, "SELECT id FROM user WHERE id = %s", (user.id,)))


def test_delete_spammers_profiles_and_urls(site):
    old = int(time.time()) - 40 * 86400
    spam = new_user(site, create_time=old)
    add_profile(site, spam, "Cheap pills at http://spam.example")
    volunteer = new_user(site, create_time=old)         # a link, but a computer
    add_profile(site, volunteer, "My team: https://team.example")
    add_host(site, volunteer)
    poster = new_user(site, create_time=old)            # a link, but posts
    add_profile(site, poster, "see www.example.org")
    new_thread(site, poster)
    plain = new_user(site, create_time=old)             # a profile without links
    add_profile(site, plain, "Hello, I like science")
    url_spam = new_user(site, create_time=old, url="casino.example")
    fresh = new_user(site, url="casino2.example")       # too new for --min_days 30

    everyone = (spam, volunteer, poster, plain, url_spam, fresh)
    proc = spammers(site, "--test", "--min_days", "30", "--profiles", "--user_url")
    assert proc.returncode == 0, proc.stderr
    assert "(test mode - nothing deleted)" in proc.stdout
    assert "ID: %d" % url_spam.id in proc.stdout
    assert all(exists(site, u) for u in everyone)
    proc = spammers(site, "--dry_run", "--min_days", "30", "--profiles", "--user_url")
    assert all(exists(site, u) for u in everyone)

    proc = spammers(site, "--min_days", "30", "--profiles")
    assert proc.returncode == 0, proc.stderr
    assert "deleting user: profiles\n   ID: %d" % spam.id in proc.stdout
    assert [u for u in everyone if not exists(site, u)] == [spam]
    assert not one(site, "SELECT * FROM profile WHERE userid = %s", (spam.id,))
    assert one(site, "SELECT * FROM user_deleted WHERE userid = %s", (spam.id,))
    proc = spammers(site, "--min_days", "30", "--user_url")
    assert not exists(site, url_spam) and exists(site, fresh)
    assert "deleted 1 users" in proc.stdout
    assert all(exists(site, u) for u in (volunteer, poster, plain, fresh))


def test_delete_spammers_forums_list_ids_teams(site, tmp_path):
    forum_spam = new_user(site)
    new_thread(site, forum_spam, "deals", "http://a.example and http://b.example")
    tid, _ = new_thread(site, new_user(site), "a volunteer's thread")
    reply(site, tid, forum_spam, "[url=http://x]x[/url]")      # deleted with its author
    member = new_user(site)                 # two URLs too, but in a team
    team = accounts.make_team(site.db, member.id, "real team %d" % member.id, "", 0, "", "", "")
    accounts.join_team(site.db, team, member)
    new_thread(site, member, "links", "http://a.example http://b.example")
    one_link = new_user(site)
    new_thread(site, one_link, "one", "see http://a.example")
    before = counters(site, tid)
    proc = spammers(site, "--forums")
    assert not exists(site, forum_spam)
    assert exists(site, member) and exists(site, one_link)
    assert not q(site, "SELECT id FROM thread WHERE owner = %s", (forum_spam.id,))
    assert not q(site, "SELECT id FROM post WHERE user = %s", (forum_spam.id,))
    after = counters(site, tid)
    assert after[0]["replies"] == before[0]["replies"] - 1
    assert after[1]["posts"] == before[1]["posts"] - 2       # its thread and its reply

    a, b, c = new_user(site), new_user(site), new_user(site)
    listed = tmp_path / "ids"
    listed.write_text("%d\n%d\n" % (a.id, 2 ** 31 - 5))
    proc = spammers(site, "--list", str(listed))
    assert "no user ID %d" % (2 ** 31 - 5) in proc.stdout
    assert not exists(site, a) and exists(site, b)
    listed.write_text("%d\nDROP TABLE user\n" % b.id)
    proc = spammers(site, "--list", str(listed))
    assert proc.returncode == 1 and "bad ID DROP TABLE user" in proc.stderr
    assert exists(site, b)                   # refused before anything was deleted
    proc = spammers(site, "--id_range", str(b.id), str(c.id))
    assert not exists(site, b) and not exists(site, c)
    for bad in (["--id_range", "5", "3"], ["--id_range", "x", "3"], ["--min_days", "x"],
                ["--bogus"], ["--list"]):
        proc = spammers(site, *bad)
        assert proc.returncode == 1 and proc.stderr, bad

    # a spam team: no credit, one member, a link; its founder has no hosts or posts
    founder = new_user(site)
    spam_team = accounts.make_team(site.db, founder.id, "spam team %d" % founder.id,
                                   "casino.example", 0, "", "buy http://x.example", "")
    accounts.join_team(site.db, spam_team, founder)
    live = new_user(site)
    live_team = accounts.make_team(site.db, live.id, "live team %d" % live.id,
                                   "real.example", 0, "", "http://real.example", "")
    accounts.join_team(site.db, live_team, live)
    add_host(site, live)
    proc = spammers(site, "--teams", "--test")
    assert "would delete team:\n   ID: %d" % spam_team.id in proc.stdout
    assert one(site, "SELECT id FROM team WHERE id = %s", (spam_team.id,))
    proc = spammers(site, "--teams")
    assert not one(site, "SELECT id FROM team WHERE id = %s", (spam_team.id,))
    assert not exists(site, founder)
    assert one(site, "SELECT id FROM team WHERE id = %s", (live_team.id,)) and exists(site, live)


def test_delete_spammers_banished_and_run_in_ops(site):
    troll = new_user(site)
    accounts.set_banished_until(site.db, troll.id, int(time.time()) + 3600)
    proc = subprocess.run([os.path.join(site.root, "bin", "run_in_ops"),
                           "./delete_spammers.php", "--test", "--banished"],
                          cwd=site.root, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "deleting user: banished" in proc.stdout and exists(site, troll)
    spammers(site, "--banished")
    assert not exists(site, troll)


# ---------------------------------------------------------------------------
# ops: accounts by address

def test_accounts_by_address(site):
    from boincpy.web.ops.main import handle as ops_handle
    addr = "203.0.113.%d" % (next(_serial) % 250)
    users = [new_user(site, name="Bot%d %s" % (i, HOSTILE)) for i in range(3)]
    for u in users:
        add_host(site, u, addr)
    loner = new_user(site)
    add_host(site, loner, "203.0.113.251", external=addr)

    def ops(get):
        req = Request.of("GET", get, None, {"REMOTE_USER": "admin", "HTTP_HOST": "127.0.0.1",
                                            "REMOTE_ADDR": "127.0.0.1"})
        resp = ops_handle("accounts_by_address.php", req, site.root)
        assert "Traceback" not in resp.body
        return resp

    body = ok(ops({}))
    assert addr in body
    row = re.search(r"%s</a></td><td>(\d+)</td>" % re.escape(addr), body)
    assert row and row.group(1) == "4"
    body = ok(ops({"addr": addr}))
    assert HOSTILE not in body and "Bot0 &lt;script&gt;" in body
    for u in users + [loner]:
        assert "manage_user.php?userid=%d" % u.id in body
    assert ops({"min": "x"}).status.startswith("400")
    assert ops({"addr": "x" * 300}).status.startswith("400")
    assert "No account" in ok(ops({"addr": "<b>" + HOSTILE}))
    # the ops index links it
    req = Request.of("GET", {}, None, {"REMOTE_USER": "admin", "HTTP_HOST": "127.0.0.1"})
    assert 'href="accounts_by_address.php"' in ok(ops_handle("index.php", req, site.root))
    # without HTTP authentication the page refuses
    req = Request.of("GET", {}, None, {"HTTP_HOST": "127.0.0.1"})
    assert ops_handle("accounts_by_address.php", req, site.root).status.startswith("403")


def test_signup_asks_the_verifier(site, verifier):
    path = os.path.join(site.root, "config.xml")
    with open(path) as f:
        saved = f.read()
    _set_config(site, "    <recaptcha_public_key>sitekey</recaptcha_public_key>\n"
                "    <recaptcha_private_key>s3cret</recaptcha_private_key>\n"
                "    <recaptcha_verify_url>%s</recaptcha_verify_url>\n" % verifier)
    try:
        resp = call(site, "create_account_form.php")
        body = ok(resp)
        assert 'class="g-recaptcha" data-sitekey="sitekey"' in body
        # Google's script, and a policy that lets it run on this page
        assert '<script src="https://www.google.com/recaptcha/api.js"' in body
        policy = resp.header("Content-Security-Policy")
        assert "script-src https://recaptcha.google.com https://www.google.com" in policy
        n = next(_serial)
        form = {"new_name": "signup%d" % n, "new_email_addr": "signup%d@example.com" % n,
                "passwd": "secret123", "passwd2": "secret123", "country": "None",
                "next_url": ""}
        env = {"HTTP_ORIGIN": "http://127.0.0.1"}
        for response in (None, "bad"):
            post = dict(form) if response is None else dict(form, **{
                "g-recaptcha-response": response})
            resp = call(site, "create_account_action.php", post=post, environ=env)
            assert resp.status.startswith("403") and "reCAPTCHA" in resp.body
            assert not one(site, "SELECT id FROM user WHERE email_addr = %s",
                           (form["new_email_addr"],))
        resp = call(site, "create_account_action.php",
                    post=dict(form, **{"g-recaptcha-response": "good"}), environ=env)
        assert resp.status.startswith("303"), resp.body[-1500:]
        assert one(site, "SELECT id FROM user WHERE email_addr = %s", (form["new_email_addr"],))
    finally:
        with open(path, "w") as f:
            f.write(saved)
        site.cfg = load_config(site.root)
    # off again: no box, no script
    resp = call(site, "create_account_form.php")
    assert "g-recaptcha" not in ok(resp) and "<script" not in resp.body
    assert "script-src" not in resp.header("Content-Security-Policy")


def test_delete_spammers_user_null_and_usage(site):
    proc = spammers(site, "--help")
    assert proc.returncode == 0 and proc.stdout.startswith("Usage: delete_spammers")
    assert subprocess.run([os.path.join(site.root, "bin", "delete_spammers")],
                          capture_output=True, text=True).returncode == 1
    nothing = new_user(site)                       # no hosts, posts or team of their own
    founder = new_user(site)
    accounts.make_team(site.db, founder.id, "founded %d" % founder.id, "", 0, "", "", "")
    computing = new_user(site)
    add_host(site, computing)
    spammers(site, "--test", "--user_null")
    assert exists(site, nothing)
    proc = spammers(site, "--user_null", "--max_days", "1")
    assert proc.returncode == 0, proc.stderr
    assert not exists(site, nothing)
    assert exists(site, founder) and exists(site, computing)


def test_every_action_wants_the_token_and_the_site(site):
    mod = new_user(site, special=ADMIN + MOD)
    author = new_user(site)
    tid, pid = new_thread(site, author, "csrf")
    reply(site, tid, author)
    dest, _ = new_thread(site, author, "dest")
    before = (q(site, "SELECT * FROM post WHERE thread IN (%s, %s) ORDER BY id", (tid, dest)),
              q(site, "SELECT * FROM thread WHERE id IN (%s, %s) ORDER BY id", (tid, dest)),
              accounts.forum_prefs(site.db, author.id))
    posts = [("forum_moderate_post_action.php", {"id": pid}, dict(action=a, **extra))
             for a, extra in (("hide", {"category": "1"}), ("unhide", {}),
                              ("move", {"threadid": str(dest)}), ("delete", {}),
                              ("banish_user", {"userid": str(author.id), "duration": "86400"}))]
    threads = [("forum_moderate_thread_action.php", {"thread": tid}, dict(action=a, **extra))
               for a, extra in (("hide", {}), ("unhide", {}), ("sticky", {}), ("desticky", {}),
                                ("lock", {}), ("unlock", {}), ("delete", {}),
                                ("move", {"forumid": str(forum_id(site, "Cafe"))}),
                                ("title", {"newtitle": "x"}))]
    votes = [("forum_banishment_vote_action.php", None,
              {"action": a, "userid": str(author.id)}) for a in ("start", "yes", "no")]
    for page, get, form in posts + threads + votes:
        if page == "forum_moderate_thread_action.php":     # a token of another form
            other = token(ok(call(site, "forum_moderate_post.php", mod,
                                  {"id": pid, "action": "hide"})))
        else:
            other = token(ok(call(site, "forum_moderate_thread.php", mod,
                                  {"thread": tid, "action": "lock"})))
        for post, env in ((form, None), (dict(form, csrf_token="0" * 40), None),
                          (dict(form, csrf_token=other), None)):
            resp = call(site, page, mod, get, post, environ=env)
            assert resp.status.startswith("403"), (page, form, resp.status)
        # a GET never acts
        resp = call(site, page, mod, dict(get or {}, **form))
        assert not resp.status.startswith("303")
    after = (q(site, "SELECT * FROM post WHERE thread IN (%s, %s) ORDER BY id", (tid, dest)),
             q(site, "SELECT * FROM thread WHERE id IN (%s, %s) ORDER BY id", (tid, dest)),
             accounts.forum_prefs(site.db, author.id))
    assert before == after
    assert not q(site, "SELECT id FROM banishment_vote WHERE userid = %s", (author.id,))
    # another site's form with this form's own token
    body = ok(call(site, "forum_moderate_thread.php", mod, {"thread": tid, "action": "lock"}))
    resp = call(site, "forum_moderate_thread_action.php", mod, {"thread": tid},
                {"action": "lock", "csrf_token": token(body)},
                environ={"HTTP_ORIGIN": "http://evil.example"})
    assert resp.status.startswith("403")
    assert one(site, "SELECT locked FROM thread WHERE id = %s", (tid,))["locked"] == 0


def test_team_forum_moderated_by_its_founder(site, smtp):
    founder = new_user(site)
    team = accounts.make_team(site.db, founder.id, "forum team %d" % founder.id, "", 0, "", "",
                              "")
    member = new_user(site)
    accounts.join_team(site.db, team, member)
    with site.db.transaction():
        fid = forum_db.insert_forum(site.db, team.id, 0, "Team forum", "", 0, parent_type=1)
        tid = forum_db.insert_thread(site.db, fid, member.id, "team talk", "hello",
                                     int(time.time()) - 10)
    pid = one(site, "SELECT id FROM post WHERE thread = %s", (tid,))["id"]
    # a project moderator has no say in a team's forum; its founder has
    assert call(site, "forum_moderate_post.php", new_user(site, special=MOD),
                {"id": pid, "action": "hide"}).status.startswith("403")
    assert call(site, "forum_moderate_post.php", member,
                {"id": pid, "action": "hide"}).status.startswith("403")
    # moving a team forum's thread out is refused
    assert call(site, "forum_moderate_thread.php", founder,
                {"thread": tid, "action": "move"}).status.startswith("400")
    resp = act(site, founder, "forum_moderate_post.php", {"id": pid, "action": "hide"},
               "forum_moderate_post_action.php", {"action": "hide", "category": "2"})
    assert resp.status.startswith("303")
    assert one(site, "SELECT hidden FROM post WHERE id = %s", (pid,))["hidden"] == 1
    # the report goes to the team's founder, the notice to the member
    assert any("post hidden in" in m["Subject"] for m in smtp.to(founder.email_addr))
    assert "has been hidden" in pms(site, member)[-1]["content"]


# ---------------------------------------------------------------------------
# forum_report_post.php: a volunteer reports a post to the moderators

def test_report_post(site, smtp):
    author = new_user(site, name="Author " + HOSTILE)
    reader = new_user(site)
    tid, pid = new_thread(site, author, title="bad thread", content="offensive " + HOSTILE)
    # the thread shows other readers a Report link, not the author
    thread_page = ok(call(site, "forum_thread.php", reader, {"id": tid}))
    assert 'href="forum_report_post.php?post=%d"' % pid in thread_page
    assert 'forum_report_post.php' not in ok(call(site, "forum_thread.php", author, {"id": tid}))
    # not logged in: to the login form
    assert call(site, "forum_report_post.php", None, {"post": pid}).status.startswith("303")
    form = ok(call(site, "forum_report_post.php", reader, {"post": pid}))
    assert "<script>" not in form and "offensive" in form
    smtp.clear()
    # without the token, another user's token, an empty reason, no such post: nothing sent
    assert call(site, "forum_report_post.php", reader, None,
                {"post": str(pid), "reason": "spam"}).status.startswith("403")
    other = ok(call(site, "forum_report_post.php", author, {"post": pid}))
    assert call(site, "forum_report_post.php", reader, None,
                {"post": str(pid), "reason": "spam", "csrf_token": token(other)}
                ).status.startswith("403")
    assert call(site, "forum_report_post.php", reader, None,
                {"post": str(pid), "reason": "  ", "csrf_token": token(form)}
                ).status.startswith("400")
    assert call(site, "forum_report_post.php", reader, None,
                {"post": "999999999", "reason": "x", "csrf_token": token(form)}
                ).status.startswith("404")
    assert not smtp.messages
    resp = call(site, "forum_report_post.php", reader, None,
                {"post": str(pid), "reason": "rude " + HOSTILE, "csrf_token": token(form)})
    assert "Your report has been recorded" in ok(resp)
    for addr in REPORTS.split("|"):
        mails = [m for m in smtp.to(addr) if "reported as offensive" in m["Subject"]]
        assert len(mails) == 1 and "'bad thread'" in mails[0]["Subject"]
        text = mails[0].get_payload(decode=True).decode()
        assert "Reporting User: %d (%s)" % (reader.id, reader.name) in text
        assert "Post:           %d by %d" % (pid, author.id) in text
        assert "rude " + HOSTILE in text and "forum_thread.php?id=%d#%d" % (tid, pid) in text
    # the forum's rating credit is needed to report
    site.db.execute("UPDATE forum SET rate_min_total_credit = 1000 WHERE id = %s",
                    (forum_id(site),))
    try:
        resp = call(site, "forum_report_post.php", reader, {"post": pid})
        assert resp.status.startswith("403") and "more average or total credit" in resp.text
    finally:
        site.db.execute("UPDATE forum SET rate_min_total_credit = 0 WHERE id = %s",
                        (forum_id(site),))


def test_report_team_post_goes_to_founder_and_project(site, smtp):
    founder = new_user(site)
    team = accounts.make_team(site.db, founder.id, "report team %d" % founder.id, "", 0, "", "",
                              "")
    member = new_user(site)
    accounts.join_team(site.db, team, member)
    with site.db.transaction():
        fid = forum_db.insert_forum(site.db, team.id, 0, "Team forum", "", 0, parent_type=1)
        tid = forum_db.insert_thread(site.db, fid, founder.id, "team news", "hello",
                                     int(time.time()) - 10)
    pid = one(site, "SELECT id FROM post WHERE thread = %s", (tid,))["id"]
    smtp.clear()
    form = ok(call(site, "forum_report_post.php", member, {"post": pid}))
    ok(call(site, "forum_report_post.php", member, None,
            {"post": str(pid), "reason": "off topic", "csrf_token": token(form)}))
    assert any("reported as offensive" in m["Subject"] for m in smtp.to(founder.email_addr))
    assert any("reported as offensive" in m["Subject"] for m in smtp.to("mods@example.com"))
