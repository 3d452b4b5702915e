"""Every page of the web site, POSTed to by a logged-in volunteer's browser
without the form's token (what another site's forged form, or a replayed
request, sends): whatever the page and its parameters, no page answers with
a server error or a traceback, and nothing in the database changes.

The property is checked over the whole site (boincpy.web.user.main.PAGES),
each page with the actions its families use, against a project holding the
rows those actions would touch (the volunteer's team, computer, thread,
post, message, friend request), so a page that forgot its check would show
up as a changed table."""

import io
import time
from urllib.parse import urlencode

import MySQLdb
import pytest

from boincpy.web.http import read_request
from boincpy.web.user.main import PAGES, handle
from site_util import execute

AUTH_A = "forgedpostsvolunteeraaaaaaaaaaaa"
AUTH_B = "forgedpostsvolunteerbbbbbbbbbbbb"
# Pages that are meant to act on a POST without a logged-in user's token:
# the sign-up (no account yet; same-site checked), the login, and the
# password-reset request (it makes a token row, and answers the same
# whatever the address).
NO_TOKEN_BY_DESIGN = {"create_account_action.php", "login_action.php", "mail_passwd.php"}
# Tables a read may write: counters of views and read markers, failed logins,
# the e-mailed tokens of the password reset.
READ_WRITES = {"thread", "forum_logging", "login_failure", "token"}
# Columns a read may write: a private message is marked opened when its
# recipient reads the inbox (BOINC's pm.php does the same); the rest of the
# row must not change.
READ_COLUMNS = {"private_messages": ("id", "userid", "senderid", "date", "subject", "content")}
ACTIONS = ("", "send", "delete", "delete_selected", "add", "add_confirm", "accept", "ignore",
           "cancel", "remove", "update", "block", "confirmedblock", "unblock", "hide",
           "unhide", "lock", "unlock", "sticky", "move", "join", "quit", "save", "confirm",
           "reset", "merge", "subscribe", "unsubscribe", "rate", "vote", "banish", "title",
           "new", "edit", "transfer", "decline")


def _db(site):
    return MySQLdb.connect(db=site.db_name, **site.db_root_params)


def _checksums(site):
    conn = _db(site)
    try:
        cur = conn.cursor()
        cur.execute("SHOW TABLES")
        tables = sorted(row[0] for row in cur.fetchall() if row[0] not in READ_WRITES)
        cur.execute("CHECKSUM TABLE " + ", ".join("`%s`" % t for t in tables
                                                  if t not in READ_COLUMNS))
        sums = {row[0].split(".")[-1]: row[1] for row in cur.fetchall()}
        for table, columns in READ_COLUMNS.items():
            cur.execute("SELECT COUNT(*), SUM(CRC32(CONCAT_WS('|', %s))) FROM `%s`"
                        % (", ".join(columns), table))
            sums[table] = cur.fetchone()
        return sums
    finally:
        conn.close()


def _populate(site):
    from boincpy.config import load_config
    from boincpy.db import connect
    from boincpy.web import accounts
    now = int(time.time())
    ids = {}
    db = connect(load_config(site.root))
    try:
        for key, auth in (("a", AUTH_A), ("b", AUTH_B)):
            user = accounts.make_user(db, load_config(site.root), "%s@example.org" % key,
                                      "Volunteer %s" % key.upper(), "0" * 32, "None",
                                      now=now - 30 * 86400)
            db.execute("UPDATE user SET authenticator = %s, total_credit = 500, "
                       "expavg_credit = 50 WHERE id = %s", (auth, user.id))
            ids[key] = user.id
    finally:
        db.close()
    ids["team"] = execute(
        site, "INSERT INTO team (create_time, userid, name, name_lc, url, type, name_html, "
        "description, nusers, country, total_credit, expavg_credit, expavg_time, seti_id, "
        "ping_user, ping_time, joinable, mod_time) VALUES (%s, %s, 'Team A', 'team a', '', 1, "
        "'', '', 2, 'None', 0, 0, 0, 0, 0, 0, 1, NOW())", (now, ids["a"]))
    execute(site, "UPDATE user SET teamid = %s WHERE id IN (%s, %s)",
             (ids["team"], ids["a"], ids["b"]))
    ids["host"] = execute(
        site, "INSERT INTO host (create_time, userid, domain_name, last_ip_addr, "
        "external_ip_addr, os_name, p_ncpus, misc, venue) VALUES (%s, %s, 'hostA', "
        "'192.0.2.1', '', 'Linux', 2, '', '')", (now, ids["a"]))
    conn = _db(site)                        # a forum make_project made
    try:
        cur = conn.cursor()
        cur.execute("SELECT id FROM forum ORDER BY id LIMIT 1 OFFSET 1")
        forum = cur.fetchone()[0]
    finally:
        conn.close()
    ids["forum"] = forum
    ids["thread"] = execute(
        site, "INSERT INTO thread (forum, owner, status, title, timestamp, views, replies, "
        "activity, sufferers, score, votes, create_time, hidden, sticky, locked) VALUES "
        "(%s, %s, 0, 'A thread', %s, 0, 0, 0, 0, 0, 0, %s, 0, 0, 0)",
        (forum, ids["a"], now, now))
    ids["post"] = execute(
        site, "INSERT INTO post (thread, user, timestamp, content, modified, parent_post, "
        "score, votes, signature, hidden) VALUES (%s, %s, %s, 'first post', 0, 0, 0, 0, 0, 0)",
        (ids["thread"], ids["a"], now))
    ids["pm"] = execute(
        site, "INSERT INTO private_messages (userid, senderid, date, opened, subject, content) "
        "VALUES (%s, %s, %s, 0, 'hi', 'hello')", (ids["a"], ids["b"], now))
    execute(site, "INSERT INTO friend (user_src, user_dest, message, create_time, reciprocated) "
             "VALUES (%s, %s, 'be my friend', %s, 0)", (ids["b"], ids["a"], now))
    return ids


def _fields(ids, action):
    """A form that names every object the site's actions take, as the
    volunteer's own (the forged request's best chance)."""
    n = {k: str(v) for k, v in ids.items()}
    return {
        "action": action, "id": n["thread"], "userid": n["b"], "teamid": n["team"],
        "hostid": n["host"], "hostid1": n["host"], "thread": n["thread"], "post": n["post"],
        "forum": n["forum"], "forumid": n["forum"], "postid": n["post"], "threadid": n["thread"],
        "replyto": n["pm"], "pm_select_%s" % n["pm"]: "1", "user_id": n["b"],
        "wuid": "1", "resultid": "1", "to": "Volunteer B", "subject": "x", "content": "forged",
        "title": "forged", "name": "Forged", "new_name": "Forged", "country": "Norway",
        "url": "evil.example", "venue": "home", "subset": "global", "cpu_usage_limit": "1",
        "resource_share": "1", "email_addr": "a@example.org", "passwd": "x", "passwd2": "x",
        "description": "forged", "type": "1", "reason": "forged", "category": "1",
        "hide": "1", "locked": "1", "sticky": "1", "new_forum": n["forum"],
        "new_thread": n["thread"], "rating": "1", "choice": "1", "vote": "1",
        "response1": "forged", "response2": "forged", "language": "en", "ninactive_users": "1",
        "inactive_id_0": n["b"], "email_addr_new": "evil@example.org",
        "signature": "forged", "send_email": "0", "show_hosts": "0", "confirm": "1",
    }


def _post(site, page, form, auth, method="POST"):
    body = urlencode(form).encode() if method == "POST" else b""
    query = form if method == "GET" else {k: form[k] for k in (
        "action", "id", "teamid", "hostid", "thread", "userid", "subset", "post")}
    environ = {"REQUEST_METHOD": method, "QUERY_STRING": urlencode(query),
               "HTTP_HOST": "127.0.0.1", "SCRIPT_NAME": "/proj/" + page,
               "REMOTE_ADDR": "192.0.2.20", "HTTP_ORIGIN": "http://127.0.0.1",
               "HTTP_COOKIE": "auth=%s" % auth,
               "CONTENT_TYPE": "application/x-www-form-urlencoded",
               "CONTENT_LENGTH": str(len(body))}
    return handle(page, read_request(environ, io.BytesIO(body)), site.root)


def _get(site, page, query, auth):
    environ = {"REQUEST_METHOD": "GET", "QUERY_STRING": urlencode(query),
               "HTTP_HOST": "127.0.0.1", "SCRIPT_NAME": "/proj/" + page,
               "REMOTE_ADDR": "192.0.2.20", "HTTP_COOKIE": "auth=%s" % auth}
    return handle(page, read_request(environ, io.BytesIO(b"")), site.root)


@pytest.fixture(scope="module")
def site(db_root_params):
    from conftest import make_test_project, remove_test_project
    project = make_test_project(db_root_params, test_app=False, ops=False)
    yield project
    remove_test_project(project)


@pytest.fixture(scope="module")
def ids(site):
    return _populate(site)


# A GET is what an <img src> on another site sends with the volunteer's
# cookie (BOINC's own pages acted on some GET links).
def _queries(ids):
    """Each one of the ids a page may take (pages refuse parameters they
    don't know, as BOINC's check_get_args, so a GET names one at a time)."""
    return [{}, {"userid": ids["a"]}, {"userid": ids["b"]}, {"hostid": ids["host"]},
            {"teamid": ids["team"]}, {"id": ids["thread"]}, {"id": ids["forum"]},
            {"id": ids["post"]}, {"thread": ids["thread"]}, {"post": ids["post"]},
            {"subset": "global"}]


def test_no_page_acts_on_a_post_without_its_form_token(site, ids):
    before = _checksums(site)
    failures = []
    # the owner of everything with each action the site knows; the other
    # volunteer (the recipient, the friend asked) with each page's default
    tries = [(action, AUTH_A) for action in ACTIONS] + [("", AUTH_B)]
    for page in sorted(set(PAGES) - NO_TOKEN_BY_DESIGN):
        for action, auth in tries:
            resp = _post(site, page, _fields(ids, action), auth)
            if resp.status.startswith("5") or "Traceback" in resp.text:
                failures.append("%s action=%r: %s" % (page, action, resp.status))
            after = _checksums(site)
            if after != before:
                changed = sorted(t for t in after if after[t] != before.get(t))
                failures.append("%s action=%r changed %s without a token"
                                % (page, action, changed))
                before = after
    assert failures == []


@pytest.mark.slow          # ~4,000 requests
def test_no_page_acts_on_a_get(site, ids):
    # what an <img src> on another site sends with the volunteer's cookie
    # (BOINC's own pages acted on some GET links): each id, with each action
    # where the page takes one
    before = _checksums(site)
    failures = []
    for page in sorted(set(PAGES) - NO_TOKEN_BY_DESIGN):
        probe = _get(site, page, {"action": "x"}, AUTH_A).text
        actions = [""] if "unexpected parameter: action" in probe else ACTIONS
        # the owner with each action; the other volunteer with each id alone
        tries = [(AUTH_A, q, a) for q in _queries(ids) for a in actions] + \
            [(AUTH_B, q, "") for q in _queries(ids)]
        for auth, query, action in tries:
            resp = _get(site, page, dict(query, action=action) if action else query, auth)
            if resp.status.startswith("5") or "Traceback" in resp.text:
                failures.append("%s %s: %s" % (page, query, resp.status))
        after = _checksums(site)
        if after != before:
            failures.append("%s changed %s on a GET" % (
                page, sorted(t for t in after if after[t] != before.get(t))))
            before = after
    assert failures == []


XSS = '<script>alert("x")</script><img src=x onerror=alert(1)>'


def test_every_page_escapes_what_the_database_holds(site, ids):
    # rows written by other tools (or BOINC's PHP, which trusted them) hold
    # markup in every text a page shows: no page may print it as markup
    # (names and titles may be unique: each row's own id follows the markup)
    for table, columns in (("user", ("name", "url", "country", "signature")),
                           ("team", ("name", "url", "name_html", "description")),
                           ("host", ("domain_name", "os_name", "p_model", "venue")),
                           ("thread", ("title",)), ("post", ("content",)),
                           ("private_messages", ("subject", "content")),
                           ("friend", ("message",)), ("forum", ("title", "description")),
                           ("category", ("name",))):
        key = "id" if table != "friend" else "user_src"
        execute(site, "UPDATE `%s` SET %s" % (table, ", ".join(
            "%s = CONCAT(%%s, %s)" % (c, key) for c in columns)), (XSS,) * len(columns))
    failures, shown = [], set()
    for page in sorted(PAGES):
        for auth, query in [(a, q) for a in (AUTH_A, AUTH_B) for q in _queries(ids)]:
            resp = _get(site, page, query, auth)
            if resp.status.startswith("5") or "Traceback" in resp.text:
                failures.append("%s: %s" % (page, resp.status))
            if "<script>alert" in resp.text or "<img src=x" in resp.text:
                failures.append("%s shows the markup as markup" % page)
            if "&lt;script&gt;alert" in resp.text:
                shown.add(page)
    assert failures == []
    # the rows were on the pages (escaped): the check looked at something
    assert {"home.php", "show_user.php", "team_display.php", "show_host_detail.php",
            "forum_thread.php", "forum_index.php", "pm.php", "hosts_user.php"} <= shown, shown
