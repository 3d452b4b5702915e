"""Private messages, friends and notifications (pm.php, friend.php,
notifications.php, notify_rss.php) in-process against a project made by
make_project, and the site's tasks (bin/notify, remind,
delete_expired_tokens, delete_expired_users_and_hosts) one pass at a time,
with e-mail read back from a real SMTP server (aiosmtpd) on 127.0.0.1.

One project serves the module; each test makes users of its own."""

import itertools
import os
import re
import subprocess
import time

import pytest

from boincpy import passwords
from boincpy.db import messages as mdb
from boincpy.web import accounts
from boincpy.web.user import messages as pm
from site_util import call, mailing_project, numbered_user, ok, q
from site_util import token_of as token

HOSTILE = '<script>alert("x")</script><b>bold</b>'
_serial = itertools.count(1)


@pytest.fixture(scope="module")
def site(db_root_params, smtp):
    """The project, its e-mail to the module's SMTP server (conftest's ``smtp``)."""
    with mailing_project(db_root_params, smtp) as project:
        yield project


def new_user(site, name=None, pm_notification=None, send_email=1, create_time=None,
             total_credit=None):
    n = next(_serial)
    changes = {}
    if not send_email:
        changes["send_email"] = 0
    if total_credit is not None:
        changes["total_credit"] = total_credit
    return numbered_user(site, n, "u", "secret", name or "user%d" % n, create_time, changes,
                         None if pm_notification is None else {"pm_notification": pm_notification})


def pm_token(site, user):
    return token(ok(call(site, "pm.php", user, {"action": "new"})))


def send(site, sender, to, subject="hello", content="text", now=None):
    form = {"action": "send", "to": to, "subject": subject, "content": content,
            "csrf_token": pm_token(site, sender)}
    return call(site, "pm.php", sender, post=form, now=now)


# ---------------------------------------------------------------------------
# private messages

def test_pm_send_read_reply_delete(site):
    a, b, c = new_user(site), new_user(site), new_user(site)
    resp = send(site, a, str(b.id), HOSTILE, "line one\nline two [b]strong[/b] " + HOSTILE)
    assert resp.status.startswith("303") and ("Location", "pm.php?action=inbox&sent=1") \
        in resp.headers
    rows = q(site, "SELECT * FROM private_messages WHERE userid = %s", (b.id,))
    assert len(rows) == 1 and rows[0]["senderid"] == a.id and rows[0]["opened"] == 0
    mid = rows[0]["id"]
    assert q(site, "SELECT type, opaque FROM notify WHERE userid = %s", (b.id,)) == [
        {"type": mdb.NOTIFY_PM, "opaque": mid}]
    assert pm.unread_pm_count(site.db, b.id) == 1
    assert "1 unread" in str(pm.pm_links_html(site.db, b.id))

    # the notification, the inbox: escaped, line breaks kept, marked read
    assert "Private message" in ok(call(site, "notifications.php", b))
    body = ok(call(site, "pm.php", b))
    assert HOSTILE not in body and "&lt;script&gt;" in body
    assert "line one<br>" in body and "<b>strong</b>" in body       # BBCode
    assert pm.unread_pm_count(site.db, b.id) == 0
    assert not q(site, "SELECT * FROM notify WHERE userid = %s", (b.id,))

    # the reply quotes the message, subject re:, addressed "ID (name)"
    body = ok(call(site, "pm.php", b, {"action": "new", "replyto": mid}))
    assert "[quote]line one" in body and 're: &lt;script&gt;' in body
    assert "%d (%s)" % (a.id, a.name) in body
    # another user's message: not readable, not quotable, not deletable
    assert call(site, "pm.php", c, {"action": "new", "replyto": mid}).status.startswith("404")
    assert call(site, "pm.php", c, {"action": "read", "id": mid}).status.startswith("404")
    resp = call(site, "pm.php", c, post={"action": "delete", "id": str(mid),
                                          "csrf_token": pm_token(site, c)})
    assert resp.status.startswith("404")
    resp = call(site, "pm.php", c, post={"action": "delete_selected", "pm_select_%d" % mid: "on",
                                          "csrf_token": pm_token(site, c)})
    assert q(site, "SELECT id FROM private_messages WHERE id = %s", (mid,))
    # the recipient reads it alone, replies by name, deletes it
    assert "line two" in ok(call(site, "pm.php", b, {"action": "read", "id": mid}))
    assert send(site, b, a.name, "re: x", "[quote]x[/quote]\nthanks").status.startswith("303")
    assert q(site, "SELECT senderid FROM private_messages WHERE userid = %s", (a.id,)) == [
        {"senderid": b.id}]
    resp = call(site, "pm.php", b, post={"action": "delete", "id": str(mid),
                                          "csrf_token": pm_token(site, b)})
    assert resp.status.startswith("303")
    assert not q(site, "SELECT id FROM private_messages WHERE id = %s", (mid,))


def test_pm_delete_selected_only_own(site):
    a, b = new_user(site), new_user(site)
    for i in range(2):
        send(site, a, str(b.id), "s%d" % i, "c")
    send(site, b, str(a.id), "to a", "c")
    ids = [r["id"] for r in q(site, "SELECT id FROM private_messages WHERE userid = %s",
                               (b.id,))]
    theirs = q(site, "SELECT id FROM private_messages WHERE userid = %s", (a.id,))[0]["id"]
    form = {"action": "delete_selected", "csrf_token": pm_token(site, b)}
    form.update({"pm_select_%d" % i: "on" for i in ids + [theirs]})
    assert call(site, "pm.php", b, post=form).status.startswith("303")
    assert not q(site, "SELECT id FROM private_messages WHERE userid = %s", (b.id,))
    assert q(site, "SELECT id FROM private_messages WHERE id = %s", (theirs,))


def test_pm_refusals(site):
    a, b = new_user(site), new_user(site)
    count = lambda: q(site, "SELECT COUNT(*) AS n FROM private_messages WHERE userid = %s",
                      (b.id,))[0]["n"]
    # no token, a wrong token, a GET, another site's POST: nothing sent
    form = {"action": "send", "to": str(b.id), "subject": "s", "content": "c"}
    assert call(site, "pm.php", a, post=form).status.startswith("403")
    assert call(site, "pm.php", a, post=dict(form, csrf_token="x")).status.startswith("403")
    assert call(site, "pm.php", a, get=form).status.startswith("405")
    assert call(site, "pm.php", a, post=dict(form, csrf_token=pm_token(site, a)),
                environ={"HTTP_ORIGIN": "http://evil.example"}).status.startswith("403")
    # not logged in: to the login form
    resp = call(site, "pm.php", None, {"action": "inbox"})
    assert resp.status.startswith("303") and "login_form.php" in dict(resp.headers)["Location"]
    # huge: a clear page, nothing stored
    resp = send(site, a, str(b.id), "s", "x" * 70000)
    assert resp.status.startswith("413") and "at most 65535" in resp.body
    resp = send(site, a, str(b.id), "s" * 300, "c")
    assert resp.status.startswith("413")
    # nobody of that id or name; blank fields
    assert "Could not find user with id 999999" in ok(send(site, a, "999999"))
    assert "Could not find user with username" in ok(send(site, a, "no such " + HOSTILE))
    assert HOSTILE not in send(site, a, "no such " + HOSTILE).body
    assert "fill all fields" in ok(send(site, a, str(b.id), "", "c"))
    assert "at most 50" in ok(send(site, a, "\n".join(str(i) for i in range(1, 200))))
    assert call(site, "pm.php", a, {"action": "read", "id": "abc"}).status.startswith("400")
    assert count() == 0
    # the rate: 2 a minute
    assert send(site, a, str(b.id)).status.startswith("303")
    assert send(site, a, str(b.id)).status.startswith("303")
    resp = send(site, a, str(b.id))
    assert resp.status.startswith("429") and "so often" in resp.body
    assert count() == 2
    # a banished user can't write
    c = new_user(site)
    accounts.set_banished_until(site.db, c.id, time.time() + 86400)
    assert call(site, "pm.php", c, {"action": "new"}).status.startswith("403")
    assert call(site, "pm.php", c, post={"action": "send", "to": str(b.id), "subject": "s",
                                          "content": "c", "csrf_token": pm_token(site, a)}
                ).status.startswith("403")


def test_block_and_unblock(site):
    a, b, mod = new_user(site), new_user(site), new_user(site)
    accounts.set_special_user(site.db, mod.id, [0])
    body = ok(call(site, "pm.php", b, {"action": "block", "id": a.id}))
    form = {"action": "confirmedblock", "id": str(a.id), "csrf_token": token(body)}
    assert "has been blocked" in ok(call(site, "pm.php", b, post=form))
    assert q(site, "SELECT ignorelist FROM forum_preferences WHERE userid = %s",
             (b.id,))[0]["ignorelist"] == str(a.id)
    assert "not accepting private messages" in ok(send(site, a, str(b.id)))
    assert not q(site, "SELECT id FROM private_messages WHERE userid = %s", (b.id,))
    # no friend requests either
    assert call(site, "friend.php", a, {"action": "add", "userid": b.id}).status.startswith("403")
    # a moderator still gets through, and can't be blocked
    assert send(site, mod, str(b.id)).status.startswith("303")
    resp = call(site, "pm.php", b, post=dict(form, id=str(mod.id)))
    assert resp.status.startswith("403") and "moderator" in resp.body
    # unblock from the list
    body = ok(call(site, "pm.php", b, {"action": "blocked"}))
    assert a.name in body
    resp = call(site, "pm.php", b, post={"action": "unblock", "id": str(a.id),
                                          "csrf_token": token(body)})
    assert resp.status.startswith("303")
    assert send(site, a, str(b.id)).status.startswith("303")


# ---------------------------------------------------------------------------
# friends

def made_token(site, user, page):
    """A valid form token of ``user`` for ``page`` (where no page shows the form)."""
    from boincpy.web import csrf
    return csrf.make_token(csrf.load_secret(site.cfg), "user:%d:%s" % (user.id, user.authenticator),
                           page, int(time.time()))


# the page whose form posts each friend.php action
_FORM_PAGE = {"add_confirm": "add", "accept": "query", "ignore": "query",
              "cancel": "cancel_confirm"}


def friend_post(site, user, action, other, message=None):
    resp = call(site, "friend.php", user, {"action": _FORM_PAGE[action], "userid": other.id})
    tok = token(resp.body) if resp.status.startswith("200") and "csrf_token" in resp.body \
        else made_token(site, user, "friend.php")
    form = {"action": action, "userid": str(other.id), "csrf_token": tok}
    if message is not None:
        form["message"] = message
    return call(site, "friend.php", user, post=form)


def test_friend_request_accept_cancel(site):
    a, b = new_user(site, name="fa" + HOSTILE), new_user(site)
    assert call(site, "friend.php", a, {"action": "add", "userid": a.id}).status.startswith("400")
    # the request without its form token: refused
    assert call(site, "friend.php", a, post={"action": "add_confirm", "userid": str(b.id)}
                ).status.startswith("403")
    assert "We have notified" in ok(friend_post(site, a, "add_confirm", b, "hi " + HOSTILE))
    row = q(site, "SELECT * FROM friend WHERE user_src = %s", (a.id,))[0]
    assert row["user_dest"] == b.id and row["reciprocated"] == 0
    assert "<script" not in row["message"]              # tags stripped, as BOINC
    assert q(site, "SELECT type, opaque FROM notify WHERE userid = %s", (b.id,)) == [
        {"type": mdb.NOTIFY_FRIEND_REQ, "opaque": a.id}]
    # pending: asked again
    assert "still pending" in ok(call(site, "friend.php", a, {"action": "add", "userid": b.id}))
    # the notification and the request page, escaped
    body = ok(call(site, "notifications.php", b))
    assert "Friendship request" in body and HOSTILE not in body
    body = ok(call(site, "friend.php", b, {"action": "query", "userid": a.id}))
    assert "has requested friendship" in body and HOSTILE not in body
    # someone else can't accept it
    c = new_user(site)
    assert friend_post(site, c, "accept", a).status.startswith("404")
    assert "has been confirmed" in ok(friend_post(site, b, "accept", a))
    assert {(r["user_src"], r["reciprocated"]) for r in q(
        site, "SELECT * FROM friend WHERE user_src IN (%s, %s)", (a.id, b.id))} == {
        (a.id, 1), (b.id, 1)}
    assert not q(site, "SELECT * FROM notify WHERE userid = %s", (b.id,))
    assert q(site, "SELECT type, opaque FROM notify WHERE userid = %s", (a.id,)) == [
        {"type": mdb.NOTIFY_FRIEND_ACCEPT, "opaque": b.id}]
    html = str(pm.friends_html(site.db, b.id))
    assert "show_user.php?userid=%d" % a.id in html and HOSTILE not in html
    assert "Cancel friendship" in str(pm.friends_html(site.db, a.id, viewer=b))
    assert "Already friends" in call(site, "friend.php", a, {"action": "add",
                                                            "userid": b.id}).body
    ok(call(site, "friend.php", a, {"action": "accepted", "userid": b.id}))
    assert not q(site, "SELECT * FROM notify WHERE userid = %s", (a.id,))
    # cancel: both directions go
    assert "cancelled" in ok(friend_post(site, a, "cancel", b))
    assert not q(site, "SELECT * FROM friend WHERE user_src IN (%s, %s)", (a.id, b.id))
    assert str(pm.friends_html(site.db, b.id)).count("---") == 1


def test_friend_decline(site):
    a, b = new_user(site), new_user(site)
    ok(friend_post(site, a, "add_confirm", b))
    assert "declined" in ok(friend_post(site, b, "ignore", a))
    assert not q(site, "SELECT * FROM notify WHERE userid = %s", (b.id,))
    assert q(site, "SELECT reciprocated FROM friend WHERE user_src = %s", (a.id,)) == [
        {"reciprocated": 0}]
    # asking again starts over (check_pending drops the stale row)
    assert "Add friend" in ok(call(site, "friend.php", a, {"action": "add", "userid": b.id}))


# ---------------------------------------------------------------------------
# notifications: feeds, e-mail

def test_notify_rss_and_notices(site):
    a, b = new_user(site), new_user(site)
    send(site, a, str(b.id), "feed " + HOSTILE, "c")
    ok(friend_post(site, a, "add_confirm", b))
    items = pm.notices_of(site.db, b.id, "https://example.org/p/")
    assert {i["title"] for i in items} == {"Private message", "Friend request"}
    assert all(i["link"].startswith("https://example.org/p/") for i in items)
    assert "<script" not in "".join(i["description"] for i in items)
    b = accounts.lookup_user_by_id(site.db, b.id)
    resp = call(site, "notify_rss.php", None, {"userid": b.id, "auth": pm.notify_rss_auth(b)})
    assert resp.status.startswith("200") and resp.body.count("<item>") == 2
    assert "<script" not in resp.body
    bad = call(site, "notify_rss.php", None, {"userid": b.id, "auth": "x"})
    assert "<error>" in bad.body and "<item>" not in bad.body
    # the client's Notices feed carries them (news.py's notices.php)
    feed = call(site, "notices.php", None, {"userid": b.id, "auth": passwords.rss_auth(
        b.id, b.authenticator, b.passwd_hash)})
    if "Friend request" not in feed.body:
        pytest.skip("notices.php does not merge notices_of yet")
    assert "Private message" in feed.body


def test_immediate_email_honours_prefs(site, smtp):
    a = new_user(site)
    want = new_user(site, pm_notification=1)
    optout = new_user(site, pm_notification=1, send_email=0)
    none = new_user(site, pm_notification=0)
    digest = new_user(site, pm_notification=2)
    smtp.clear()
    for u in (want, optout, none, digest):
        assert send(site, a, str(u.id), "mail " + u.name, "body text").status.startswith("303")
        # out of the rate limit's reach (2 a minute)
        site.db.execute("UPDATE private_messages SET date = date - 100000 WHERE senderid = %s",
                        (a.id,))
    deadline = time.time() + 10
    while not smtp.to(want.email_addr) and time.time() < deadline:
        time.sleep(0.1)
    got = smtp.to(want.email_addr)
    assert len(got) == 1 and "private message" in got[0]["Subject"]
    assert "body text" in got[0].get_payload(decode=True).decode()
    time.sleep(0.5)
    for u in (optout, none, digest):
        assert not smtp.to(u.email_addr), u.name
    # a friend request to someone who wants e-mail each time
    smtp.clear()
    ok(friend_post(site, a, "add_confirm", want))
    deadline = time.time() + 10
    while not smtp.to(want.email_addr) and time.time() < deadline:
        time.sleep(0.1)
    assert "friend request" in smtp.to(want.email_addr)[0]["Subject"]


# ---------------------------------------------------------------------------
# the tasks

def run_task(site, cls, *argv, now=None):
    from backend_rows import run_pass
    daemon, found = run_pass(cls, site.root, *argv, now=now)
    return daemon.log_stream.getvalue()


def test_notify_digest(site, smtp):
    from boincpy.daemons.community import Notify
    a = new_user(site)
    digest = new_user(site, pm_notification=2)
    digest_optout = new_user(site, pm_notification=2, send_email=0)
    each = new_user(site, pm_notification=1)
    now = time.time()
    mdb.insert_pm(site.db, digest.id, a.id, int(now), "x", "y")
    for u in (digest, digest_optout, each):
        mid = mdb.insert_pm(site.db, u.id, a.id, int(now), "digest " + u.name, "c")
        mdb.insert_notify(site.db, u.id, int(now) - 3600, mdb.NOTIFY_PM, mid)
    mdb.insert_notify(site.db, digest.id, int(now) - 600, mdb.NOTIFY_FRIEND_REQ, a.id)
    mdb.insert_notify(site.db, digest.id, int(now) - 100 * 86400, mdb.NOTIFY_FRIEND_ACCEPT, a.id)
    smtp.clear()
    log = run_task(site, Notify, now=now)
    assert "Starting at" in log and "sending to %s" % digest.email_addr in log
    got = smtp.to(digest.email_addr)
    assert len(got) == 1 and got[0]["Subject"].startswith("Daily notification summary")
    text = got[0].get_payload(decode=True).decode()
    assert '1) %s sent you a private message; subject: "digest %s"' % (a.name, digest.name) \
        in text
    assert "2) %s has requested friendship with you" % a.name in text
    assert not smtp.to(digest_optout.email_addr) and not smtp.to(each.email_addr)
    # the 100-day-old notification is gone, the others stay
    assert q(site, "SELECT type FROM notify WHERE userid = %s ORDER BY type", (digest.id,)) == [
        {"type": mdb.NOTIFY_FRIEND_REQ}, {"type": mdb.NOTIFY_PM}]
    # two days later nothing is new
    smtp.clear()
    run_task(site, Notify, now=now + 2 * 86400)
    assert not smtp.to(digest.email_addr)


def _remind_files(site):
    d = os.path.join(site.root, "html", "ops", "remind_email")
    for kind in ("failed", "lapsed"):
        for part in ("subject", "text"):
            with open(os.path.join(d, "sample_%s_%s" % (kind, part))) as f:
                text = f.read()
            with open(os.path.join(d, "reminder_%s_%s" % (kind, part)), "w") as f:
                f.write(text)


def test_remind_intervals(site, smtp):
    from boincpy.daemons.community import Remind
    from boincpy.db.host import insert_host
    _remind_files(site)
    later = time.time() + 211 * 86400       # a fake clock, past every user made so far
    # everyone made so far was reminded yesterday: only the users below can be due
    site.db.execute("INSERT INTO sent_email (userid, time_sent, email_type) SELECT id, %s, 2 "
                    "FROM user ON DUPLICATE KEY UPDATE time_sent = VALUES(time_sent), "
                    "email_type = 2", (int(later - 86400),))
    failed = new_user(site, create_time=later - 20 * 86400)
    fresh = new_user(site, create_time=later - 5 * 86400)
    optout = new_user(site, create_time=later - 20 * 86400, send_email=0)
    lapsed = new_user(site, create_time=later - 400 * 86400, total_credit=50.0)
    active = new_user(site, create_time=later - 400 * 86400, total_credit=50.0)
    for u, rpc in ((lapsed, later - 70.5 * 86400), (active, later - 86400)):
        insert_host(site.db, {"userid": u.id, "rpc_time": rpc, "create_time": int(rpc),
                              "domain_name": "h%d" % u.id, "misc": ""})
    smtp.clear()
    log = run_task(site, Remind, "--failed", "--lapsed", "--explain", now=later)
    assert "dry run" in log and not smtp.messages
    assert not q(site, "SELECT * FROM sent_email WHERE userid IN (%s, %s)",
                 (failed.id, lapsed.id))
    assert "user: %d send_email = 0" % optout.id not in log     # the query skips them
    log = run_task(site, Remind, "--failed", "--lapsed", "--send", now=later)
    assert {tuple(r) for r, _ in smtp.messages} == {(failed.email_addr,), (lapsed.email_addr,)}
    text = smtp.to(lapsed.email_addr)[0].get_payload(decode=True).decode().replace("\r\n", "\n")
    assert re.search(r"for\s+70 days", text) and "opt_out.php?code=" in text and "userid=%d" % lapsed.id \
        in text
    assert lapsed.name in text
    assert {r["userid"]: r["email_type"] for r in q(
        site, "SELECT * FROM sent_email WHERE userid IN (%s, %s)", (failed.id, lapsed.id))} == {
        failed.id: mdb.EMAIL_FAILED, lapsed.id: mdb.EMAIL_LAPSED}
    # within the 200-day e-mail interval: nothing again; after it, again
    smtp.clear()
    run_task(site, Remind, "--failed", "--lapsed", "--send", now=later + 10 * 86400)
    assert [r for r, _ in smtp.messages] == [[fresh.email_addr]]     # now 15 days old
    smtp.clear()
    run_task(site, Remind, "--lapsed", "--send", "--count", "1", now=later + 201 * 86400)
    assert len(smtp.messages) == 1


def test_delete_expired_tokens_users_hosts(site):
    from boincpy.daemons.community import DeleteExpiredTokens, DeleteExpiredUsersAndHosts
    u = new_user(site)
    now = int(time.time())
    for tok, exp in (("old", now - 10), ("new", now + 3600), ("null", None)):
        site.db.execute("INSERT INTO token (token, userid, type, create_time, expire_time) "
                        "VALUES (%s, %s, 'D', %s, %s)", ("%s_%d" % (tok, u.id), u.id, now, exp))
    log = run_task(site, DeleteExpiredTokens, now=now)
    assert "1 tokens deleted" in log
    assert {r["token"] for r in q(site, "SELECT token FROM token WHERE userid = %s", (u.id,))} \
        == {"new_%d" % u.id, "null_%d" % u.id}
    base = 900000000 + u.id * 10
    for i, age in enumerate((61, 59)):
        site.db.execute("INSERT INTO user_deleted (userid, public_cross_project_id, create_time) "
                        "VALUES (%s, 'x', %s)", (base + i, now - age * 86400))
        site.db.execute("INSERT INTO host_deleted (hostid, public_cross_project_id, create_time) "
                        "VALUES (%s, 'x', %s)", (base + i, now - age * 86400))
    log = run_task(site, DeleteExpiredUsersAndHosts, now=now)
    assert "users deleted from user_deleted" in log and "hosts deleted from host_deleted" in log
    assert [r["userid"] for r in q(site, "SELECT userid FROM user_deleted WHERE userid >= %s",
                                   (base,))] == [base + 1]
    assert [r["hostid"] for r in q(site, "SELECT hostid FROM host_deleted WHERE hostid >= %s",
                                   (base,))] == [base + 1]


def test_tasks_in_config_and_run_in_ops(site):
    cmds = [t.cmd if hasattr(t, "cmd") else t["cmd"] for t in site.cfg.tasks]
    for name in ("notify", "delete_expired_tokens", "delete_expired_users_and_hosts"):
        assert name in cmds
    for name in ("notify", "remind", "delete_expired_tokens", "delete_expired_users_and_hosts"):
        out = subprocess.run([os.path.join(site.root, "bin", name), "--help"],
                             capture_output=True, text=True, timeout=60)
        assert out.returncode == 0 and "Usage: %s" % name in out.stdout
    out = subprocess.run([os.path.join(site.root, "bin", "run_in_ops"),
                          "./delete_expired_tokens.php"], cwd=site.root, capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0 and "tokens deleted" in out.stderr, out


def test_unread_count_and_friends_without_tables(schema_db):
    """A database of a project made before these tables: the helpers answer empty."""
    db = schema_db()
    for table in mdb.TABLES:
        db.execute("DROP TABLE IF EXISTS %s" % table)
    assert pm.unread_pm_count(db, 1) == 0
    assert pm.friends_of(db, 1) == [] and pm.notices_of(db, 1) == []
    mdb.ensure_tables(db)
    assert pm.unread_pm_count(db, 1) == 0


def test_deleted_account_leaves_no_messages_or_friends(site):
    a, b, c = new_user(site), new_user(site), new_user(site)
    now = int(time.time())
    mdb.insert_pm(site.db, b.id, a.id, now, "from a", "x")
    mdb.insert_pm(site.db, a.id, b.id, now, "to a", "x")
    keep = mdb.insert_pm(site.db, c.id, b.id, now, "b to c", "x")
    mdb.replace_friend(site.db, a.id, b.id, "", now, True)
    mdb.replace_friend(site.db, b.id, a.id, "", now, True)
    mdb.replace_friend(site.db, b.id, c.id, "", now, False)
    mdb.insert_notify(site.db, b.id, now, mdb.NOTIFY_FRIEND_ACCEPT, a.id)
    mdb.insert_notify(site.db, c.id, now, mdb.NOTIFY_FRIEND_REQ, b.id)
    done = accounts.delete_account(site.db, a)
    assert done["private_messages"] == 2 and done["friend"] == 2 and done["notify"] == 1
    assert [r["id"] for r in q(site, "SELECT id FROM private_messages WHERE %s IN "
                                     "(userid, senderid) OR %s IN (userid, senderid)",
                                (a.id, b.id))] == [keep]
    assert q(site, "SELECT user_src, user_dest FROM friend WHERE %s IN (user_src, user_dest) "
                   "OR %s IN (user_src, user_dest)", (a.id, b.id)) == [
        {"user_src": b.id, "user_dest": c.id}]
    assert q(site, "SELECT userid FROM notify WHERE userid IN (%s, %s, %s)",
             (a.id, b.id, c.id)) == [{"userid": c.id}]


def test_team_message_from_an_admin(site):
    founder, m1, m2, outsider = (new_user(site) for _ in range(4))
    team = accounts.make_team(site.db, founder.id, "Team %d" % founder.id, "", 1, "", "", "")
    for u in (founder, m1, m2):
        accounts.join_team(site.db, team, u)
    body = ok(call(site, "pm.php", founder, {"action": "new", "teamid": team.id}))
    assert "every member of" in body
    form = {"action": "send", "teamid": str(team.id), "subject": "meeting " + HOSTILE,
            "content": "at noon", "csrf_token": token(body)}
    assert "sent to 3 team members" in ok(call(site, "pm.php", founder, post=form))
    got = q(site, "SELECT userid, subject FROM private_messages WHERE senderid = %s "
                  "ORDER BY userid", (founder.id,))
    assert [r["userid"] for r in got] == sorted([founder.id, m1.id, m2.id])
    assert got[0]["subject"] == "Message from team %s: meeting %s" % (team.name, HOSTILE)
    # team messages don't count against the rate
    assert send(site, founder, str(outsider.id)).status.startswith("303")
    # a member who is not an admin, an outsider: refused, nothing sent
    for u in (m1, outsider):
        assert call(site, "pm.php", u, {"action": "new", "teamid": team.id}
                    ).status.startswith("403")
        resp = call(site, "pm.php", u, post=dict(form, csrf_token=pm_token(site, u)))
        assert resp.status.startswith("403")
    assert q(site, "SELECT COUNT(*) AS n FROM private_messages WHERE senderid IN (%s, %s)",
             (m1.id, outsider.id))[0]["n"] == 0


def test_inbox_pages_by_the_users_preference(site):
    from boincpy.db.user import set_forum_pref
    a, b = new_user(site), new_user(site)
    set_forum_pref(site.db, b.id, "display_wrap_postcount", 2)
    now = int(time.time())
    for i in range(3):
        mdb.insert_pm(site.db, b.id, a.id, now + i, "subject %d" % i, "c")
    body = ok(call(site, "pm.php", b))
    assert "Showing messages 1 to 2 of 3" in body and "subject 2" in body \
        and "subject 0" not in body and "offset=2" in body
    body = ok(call(site, "pm.php", b, {"action": "inbox", "offset": 2}))
    assert "subject 0" in body and "subject 2" not in body
    # only the shown ones were marked read
    assert pm.unread_pm_count(site.db, b.id) == 0
    assert call(site, "pm.php", b, {"offset": "-1"}).status.startswith("400")


def test_home_page_shows_messages_notifications_friends(site):
    a, b = new_user(site), new_user(site)
    send(site, a, str(b.id), "for home", "c")
    ok(friend_post(site, a, "add_confirm", b))
    body = ok(call(site, "home.php", b))
    assert "(1 unread)" in body and "Friendship request" in body and "notifications.php" in body
    ok(friend_post(site, b, "accept", a))
    body = ok(call(site, "home.php", b))
    assert "show_user.php?userid=%d" % a.id in body


def test_odd_requests_get_clear_pages(site):
    from boincpy.db.user import set_forum_pref
    a, b = new_user(site), new_user(site)
    tok = pm_token(site, a)
    for get in ({"action": "nosuch"}, {"action": "block", "id": "x"},
                {"action": "new", "userid": "99999999999"}, {"action": "read"}):
        resp = call(site, "pm.php", a, get)
        assert resp.status.startswith(("400", "404")), (get, resp.status)
    assert call(site, "pm.php", a, {"action": "block", "id": 999999}).status.startswith("404")
    assert call(site, "friend.php", a, {"action": "nosuch"}).status.startswith("400")
    assert call(site, "friend.php", a, {"action": "query", "userid": b.id}
                ).status.startswith("404")
    resp = call(site, "pm.php", a, post={"action": "confirmedblock", "id": str(a.id),
                                          "csrf_token": tok})
    assert "block yourself" in resp.body
    # a full block list: refused, unchanged
    full = "|".join([str(1000000 + i) for i in range(31)] + ["123456"])
    assert len(full) == 254                                 # the column's size
    set_forum_pref(site.db, a.id, "ignorelist", full)
    resp = call(site, "pm.php", a, post={"action": "confirmedblock", "id": str(b.id),
                                          "csrf_token": tok})
    assert resp.status.startswith("400") and "block list is full" in resp.body
    assert q(site, "SELECT ignorelist FROM forum_preferences WHERE userid = %s",
             (a.id,))[0]["ignorelist"] == full


def test_subscription_notifications_shown_and_mailed(site, smtp):
    from boincpy.daemons.community import Notify
    u = new_user(site, pm_notification=2)
    now = int(time.time())
    thread = site.db.insert("INSERT INTO thread (forum, owner, title, create_time) "
                            "VALUES (0, 0, %s, %s)", ("Thread " + HOSTILE, now))
    mdb.insert_notify(site.db, u.id, now, mdb.NOTIFY_SUBSCRIBED_THREAD, thread)
    mdb.insert_notify(site.db, u.id, now, mdb.NOTIFY_SUBSCRIBED_THREAD, 999999999)  # gone
    mdb.insert_notify(site.db, u.id, now, 77, 1)             # a type nobody knows: kept
    body = ok(call(site, "notifications.php", u))
    assert "New posts in the thread" in body and "forum_thread.php?id=%d" % thread in body
    assert HOSTILE not in body
    items = pm.notices_of(site.db, u.id, "https://example.org/")
    assert [i["title"] for i in items] == ["New posts in subscribed thread"]
    assert "<script" not in items[0]["description"]
    smtp.clear()
    run_task(site, Notify, now=now)
    text = smtp.to(u.email_addr)[0].get_payload(decode=True).decode()
    assert "1) There are new posts in the thread 'Thread %s'" % HOSTILE in text
    assert {(r["type"], r["opaque"]) for r in q(
        site, "SELECT type, opaque FROM notify WHERE userid = %s", (u.id,))} == {
        (mdb.NOTIFY_SUBSCRIBED_THREAD, thread), (77, 1)}
