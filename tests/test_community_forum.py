"""The message boards (forum_index.php ... forum_search_action.php,
forum_post/reply/edit/subscribe/rate.php, edit_forum_preferences_*.php) in
process against a project made by make_project, rows written the way BOINC's
PHP writes them read back by the pages, hostile text escaped, the posting
rules, subscriptions' notifications (e-mail read back from aiosmtpd), a
thread of 1,000 posts paged, every page's statements on an index, and
bin/update_forum_activities."""

import itertools
import os
import re
import subprocess
import time

import pytest

from boincpy.db import forum as fdb
from boincpy.db import messages as mdb
from boincpy.db.user import set_forum_pref
from boincpy.web import accounts
from site_util import call, mailing_project, make_token, numbered_user, ok, one

HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(1)>'
_serial = itertools.count(1)


@pytest.fixture(scope="module")
def site(db_root_params, smtp):
    with mailing_project(db_root_params, smtp) as project:
        yield project


def new_user(site, credit=100.0, name=None, **prefs):
    n = next(_serial)
    return numbered_user(site, n, "f", "pw", name or "poster%d" % n, None,
                         {"total_credit": credit, "expavg_credit": credit}, prefs)


def tok(site, user, page):
    return make_token(site.cfg, user, page, int(time.time()))


def forum_id(site, title):
    return one(site, "SELECT id FROM forum WHERE title = %s", (title,))["id"]


def new_thread(site, user, forum, title="A thread", content="first post", **extra):
    form = {"title": title, "content": content, "csrf_token": tok(site, user, "forum_post.php")}
    form.update(extra)
    resp = call(site, "forum_post.php", user, {"id": forum}, post=form)
    assert resp.status.startswith("303"), (resp.status, resp.body[-1500:])
    return int(re.search(r"forum_thread\.php\?id=(\d+)", dict(resp.headers)["Location"]).group(1))


def reply(site, user, thread, content="a reply", post_id=None, **extra):
    get = {"thread": thread}
    if post_id:
        get["post"] = post_id
    form = {"content": content, "csrf_token": tok(site, user, "forum_reply.php")}
    form.update(extra)
    return call(site, "forum_reply.php", user, get, post=form)


def reply_id(resp):
    assert resp.status.startswith("303"), (resp.status, resp.body[-1500:])
    return int(re.search(r"postid=(\d+)", dict(resp.headers)["Location"]).group(1))


# ---------------------------------------------------------------------------

def test_boinc_rows_shown_and_escaped(site):
    """A category, forum, thread and posts inserted with the column values
    BOINC's PHP writes (create_thread/create_post), hostile text in every
    field: the pages show them, escaped, with BOINC's counts."""
    db = site.db
    author = new_user(site, name=HOSTILE)
    now = int(time.time())
    cat = db.insert("INSERT INTO category (orderID, lang, name, is_helpdesk) VALUES "
                    "(5, 1, %s, 0)", ("Cat " + HOSTILE,))
    fid = db.insert("INSERT INTO forum (category, orderID, title, description, timestamp, "
                    "threads, posts) VALUES (%s, 0, %s, %s, %s, 1, 2)",
                    (cat, "Forum " + HOSTILE, "Desc " + HOSTILE, now - 60))
    tid = db.insert("INSERT INTO thread (forum, owner, status, title, timestamp, views, "
                    "replies, activity, sufferers, score, votes, create_time, hidden, sticky, "
                    "locked) VALUES (%s, %s, 0, %s, %s, 7, 1, 0, 0, 0, 0, %s, 0, 0, 0)",
                    (fid, author.id, "Title " + HOSTILE, now - 60, now - 120))
    p1 = db.insert("INSERT INTO post (thread, user, timestamp, content, modified, parent_post, "
                   "score, votes, signature, hidden) VALUES (%s, %s, %s, %s, 0, 0, 0, 0, 0, 0)",
                   (tid, author.id, now - 120, "[b]bold[/b] " + HOSTILE))
    db.insert("INSERT INTO post (thread, user, timestamp, content, modified, parent_post, "
              "score, votes, signature, hidden) VALUES (%s, %s, %s, %s, 0, %s, 0, 0, 0, 0)",
              (tid, author.id, now - 60, "[quote]quoted[/quote][url=javascript:alert(1)]x[/url]",
               p1))
    for page, get in (("forum_index.php", {}), ("forum_forum.php", {"id": fid}),
                      ("forum_thread.php", {"id": tid}),
                      ("forum_user_posts.php", {"userid": author.id})):
        body = ok(call(site, page, get=get))
        assert "<script>" not in body and "onerror=alert" not in body.replace(
            "onerror=alert(1)&gt;", ""), page
        assert "&lt;script&gt;" in body, page
    index = ok(call(site, "forum_index.php"))
    row = index[index.index("Forum &lt;script"):]
    assert re.search(r'<td class="num">1</td><td class="num">2</td><td>1 min ago', row)
    listing = ok(call(site, "forum_forum.php", get={"id": fid}))
    # posts (replies + 1), the author, views (the thread page counted one)
    assert re.search(r"</a> </td><td>2</td><td><a href=\"show_user.php\?userid=%d\">[^<]*</a>"
                     r"</td><td>8</td><td>1 min ago" % author.id, listing)
    body = ok(call(site, "forum_thread.php", get={"id": tid}))
    assert "<b>bold</b>" in body and '<blockquote class="quote">quoted</blockquote>' in body
    assert "javascript:" not in body.replace("[url=javascript:alert(1)]", "")
    assert "in response to" in body
    assert one(site, "SELECT views FROM thread WHERE id = %s", (tid,))["views"] == 9


def test_post_reply_quote_edit(site):
    alice, bob = new_user(site), new_user(site)
    fid = forum_id(site, "Science")
    before = one(site, "SELECT threads, posts FROM forum WHERE id = %s", (fid,))
    form = ok(call(site, "forum_post.php", alice, {"id": fid}))
    assert 'name="title"' in form and 'name="csrf_token"' in form
    tid = new_thread(site, alice, fid, title="<b>Hi</b> there " + HOSTILE, content="hello world")
    t = one(site, "SELECT * FROM thread WHERE id = %s", (tid,))
    assert t["replies"] == 0 and t["owner"] == alice.id and t["title"].startswith("Hi there")
    assert "<" not in t["title"]                      # create_thread's sanitize_tags
    after = one(site, "SELECT threads, posts FROM forum WHERE id = %s", (fid,))
    assert (after["threads"], after["posts"]) == (before["threads"] + 1, before["posts"] + 1)
    first = one(site, "SELECT * FROM post WHERE thread = %s", (tid,))
    # a reply quoting: the form holds BOINC's quote text
    quote_form = ok(call(site, "forum_reply.php", bob, {"thread": tid, "post": first["id"]}))
    assert "In reply to %s&#39;s message of" % alice.name in quote_form
    assert "[quote]hello world[/quote]" in quote_form
    pid = reply_id(reply(site, bob, tid, "[quote]hello world[/quote] " + HOSTILE,
                         post_id=first["id"]))
    p = one(site, "SELECT * FROM post WHERE id = %s", (pid,))
    assert p["parent_post"] == first["id"] and p["modified"] == 0
    assert one(site, "SELECT replies FROM thread WHERE id = %s", (tid,))["replies"] == 1
    assert one(site, "SELECT posts FROM forum_preferences WHERE userid = %s",
               (bob.id,))["posts"] == 1
    body = ok(call(site, "forum_thread.php", alice, {"id": tid}))
    assert "&lt;script&gt;" in body and "<script>" not in body
    # editing: the author, in time, also the title of the first post
    edit_form = ok(call(site, "forum_edit.php", alice, {"id": first["id"]}))
    assert 'name="title"' in edit_form
    resp = call(site, "forum_edit.php", alice, {"id": first["id"]}, post={
        "content": "edited text", "title": "New title", "submit": "1",
        "csrf_token": tok(site, alice, "forum_edit.php")})
    assert resp.status.startswith("303")
    assert one(site, "SELECT content, modified FROM post WHERE id = %s",
               (first["id"],))["modified"] > 0
    assert one(site, "SELECT title FROM thread WHERE id = %s", (tid,))["title"] == "New title"
    # another user's post: refused, unchanged
    resp = call(site, "forum_edit.php", alice, {"id": pid}, post={
        "content": "hijack", "submit": "1", "csrf_token": tok(site, alice, "forum_edit.php")})
    assert resp.status.startswith("403") and "not authorized" in resp.body
    assert "hijack" not in one(site, "SELECT content FROM post WHERE id = %s", (pid,))["content"]
    # after the edit time limit (MAXIMUM_EDIT_TIME, 3600 s): refused
    late = int(time.time()) + site.cfg.forum_max_edit_time + 5
    resp = call(site, "forum_edit.php", bob, {"id": pid}, now=late, post={
        "content": "too late", "submit": "1", "csrf_token": tok(site, bob, "forum_edit.php")})
    assert resp.status.startswith("403") and "can no longer edit" in resp.body
    assert "too late" not in one(site, "SELECT content FROM post WHERE id = %s",
                                 (pid,))["content"]
    assert "forum_edit.php" not in ok(call(site, "forum_thread.php", bob, {"id": tid},
                                           now=late)).split("Message %d" % pid)[-1][:2000]


def test_csrf_on_every_action(site):
    alice = new_user(site)
    fid = forum_id(site, "Science")
    tid = new_thread(site, alice, fid)
    pid = one(site, "SELECT id FROM post WHERE thread = %s", (tid,))["id"]
    other = new_user(site)
    counts = lambda: (one(site, "SELECT COUNT(*) AS n FROM post")["n"],  # noqa: E731
                      one(site, "SELECT COUNT(*) AS n FROM thread")["n"],
                      one(site, "SELECT COUNT(*) AS n FROM subscriptions")["n"],
                      one(site, "SELECT COUNT(*) AS n FROM post_ratings")["n"])
    before = counts()
    cases = [("forum_post.php", {"id": fid}, {"title": "t", "content": "c"}),
             ("forum_reply.php", {"thread": tid}, {"content": "c"}),
             ("forum_edit.php", {"id": pid}, {"content": "c", "submit": "1"}),
             ("forum_subscribe.php", {}, {"action": "subscribe", "thread": tid}),
             ("forum_rate.php", {"post": pid}, {"choice": "p"}),
             ("edit_forum_preferences_action.php", {}, {
                 "signature": "sig", "pm_notification": "1", "forum_sort": "1",
                 "thread_sort": "6", "forum_display_wrap_postcount": "10"})]
    for page, get, form in cases:
        user = other if page in ("forum_rate.php", "forum_subscribe.php",
                                 "edit_forum_preferences_action.php") else alice
        for token in (None, "bogus", tok(site, user, "forum_index.php")):
            data = dict(form)
            if token:
                data["csrf_token"] = token
            resp = call(site, page, user, get, post=data)
            assert resp.status.startswith("403"), (page, resp.status)
        # from another site, even with the right token
        data = dict(form, csrf_token=tok(site, user, page))
        resp = call(site, page, user, get, post=data,
                    environ={"HTTP_ORIGIN": "http://evil.example"})
        assert resp.status.startswith("403"), page
    assert counts() == before
    assert one(site, "SELECT content FROM post WHERE id = %s", (pid,))["content"] == "first post"
    assert one(site, "SELECT signature FROM forum_preferences WHERE userid = %s",
               (other.id,)) is None


def test_posting_rules(site):
    db = site.db
    admin = new_user(site)
    fid = forum_id(site, "Science")
    tid = new_thread(site, admin, fid)
    # locked thread: no replies
    db.execute("UPDATE thread SET locked = 1 WHERE id = %s", (tid,))
    user = new_user(site)
    resp = reply(site, user, tid, "while locked")
    assert resp.status.startswith("403") and "locked" in resp.body
    assert "forum_reply.php" not in ok(call(site, "forum_thread.php", user, {"id": tid}))
    # a moderator may
    mod = new_user(site, special_user="10000000")
    reply_id(reply(site, mod, tid, "moderator note"))
    body = ok(call(site, "forum_thread.php", mod, {"id": tid}))
    assert "forum_moderate_post.php?action=hide&amp;id=" in body
    assert "forum_moderate_thread.php?action=move&amp;thread=%d" % tid in body
    assert "action=unlock&amp;thread=%d" % tid in body
    db.execute("UPDATE thread SET locked = 0 WHERE id = %s", (tid,))
    # banned
    banned = new_user(site, banished_until=int(time.time()) + 86400)
    resp = reply(site, banned, tid, "from a banned user")
    assert resp.status.startswith("403") and "may not post" in resp.body
    resp = call(site, "forum_post.php", banned, {"id": fid})
    assert resp.status.startswith("403")
    # no credit: not outside the help desk (NEED_CREDIT_TO_POST_EXCEPT_HELP)
    newbie = new_user(site, credit=0)
    assert call(site, "forum_post.php", newbie, {"id": fid}).status.startswith("403")
    help_id = forum_id(site, "Getting started")
    hid = new_thread(site, newbie, help_id, title="How do I start?")
    assert one(site, "SELECT forum FROM thread WHERE id = %s", (hid,))["forum"] == help_id
    # the forum's minimum credit and interval
    db.execute("UPDATE forum SET post_min_total_credit = 1000 WHERE id = %s", (fid,))
    assert reply(site, user, tid).status.startswith("403")
    db.execute("UPDATE forum SET post_min_total_credit = 0, post_min_interval = 600 "
               "WHERE id = %s", (fid,))
    reply_id(reply(site, user, tid, "one"))
    resp = reply(site, user, tid, "two, too soon")
    assert resp.status.startswith("403") and "try again later" in resp.body
    db.execute("UPDATE forum SET post_min_interval = 0 WHERE id = %s", (fid,))
    # News: only administrators
    news = forum_id(site, "News")
    assert call(site, "forum_post.php", user, {"id": news}).status.startswith("403")
    # empty posts, odd ids
    assert reply(site, user, tid, "   ").status.startswith("400")
    for page, get in (("forum_thread.php", {"id": "abc"}), ("forum_thread.php", {"id": "99999999"}),
                      ("forum_forum.php", {"id": "-3"}), ("forum_reply.php", {"thread": "1e99"}),
                      ("forum_thread.php", {"id": "1", "start": "-1"}),
                      ("forum_user_posts.php", {"userid": "x"})):
        resp = call(site, page, user, get)
        assert resp.status[:1] == "4", (page, get, resp.status)


def test_subscriptions_notify(site, smtp):
    alice = new_user(site)
    bob = new_user(site, pm_notification=1)
    carol = new_user(site)               # subscribed, no e-mail
    fid = forum_id(site, "Cafe")
    tid = new_thread(site, alice, fid, subscribe="1")
    assert one(site, "SELECT * FROM subscriptions WHERE userid = %s AND threadid = %s",
               (alice.id, tid))
    for u in (bob, carol):
        body = ok(call(site, "forum_subscribe.php", u, post={
            "action": "subscribe", "thread": tid,
            "csrf_token": tok(site, u, "forum_subscribe.php")}))
        assert "You are now subscribed" in body
    thread_page = ok(call(site, "forum_thread.php", bob, {"id": tid}))
    assert 'value="unsubscribe"' in thread_page
    reply_id(reply(site, bob, tid, "bob replies"))
    # alice and carol notified, not bob (the poster)
    rows = site.db.query("SELECT userid FROM notify WHERE type = %s AND opaque = %s",
                         (mdb.NOTIFY_SUBSCRIBED_THREAD, tid))
    assert sorted(r["userid"] for r in rows) == sorted([alice.id, carol.id])
    assert not smtp.to(carol.email_addr) and not smtp.to(alice.email_addr)
    reply_id(reply(site, alice, tid, "alice answers"))
    mails = smtp.to(bob.email_addr)
    assert mails and "subscribed thread" in mails[-1]["Subject"]
    assert "forum_thread.php?id=%d" % tid in mails[-1].get_payload(decode=True).decode()
    # reading the thread clears the notification
    ok(call(site, "forum_thread.php", alice, {"id": tid}))
    assert not one(site, "SELECT id FROM notify WHERE userid = %s AND type = %s",
                   (alice.id, mdb.NOTIFY_SUBSCRIBED_THREAD))
    # unsubscribe
    ok(call(site, "forum_subscribe.php", carol, post={
        "action": "unsubscribe", "thread": tid,
        "csrf_token": tok(site, carol, "forum_subscribe.php")}))
    assert not one(site, "SELECT * FROM subscriptions WHERE userid = %s", (carol.id,))
    assert not one(site, "SELECT id FROM notify WHERE userid = %s", (carol.id,))
    # a forum subscription (BOINC's threadid = -forum id) hears of new threads
    site.db.execute("INSERT INTO subscriptions (userid, threadid) VALUES (%s, %s)",
                    (carol.id, -fid))
    new_thread(site, alice, fid, title="Another one")
    assert one(site, "SELECT id FROM notify WHERE userid = %s AND type = %s AND opaque = %s",
               (carol.id, mdb.NOTIFY_SUBSCRIBED_FORUM, fid))


def test_thread_of_1000_posts_paged(site):
    db = site.db
    alice = new_user(site)
    fid = forum_id(site, "Number crunching")
    tid = new_thread(site, alice, fid, title="Long thread")
    base = int(time.time()) - 5000
    db.executemany("INSERT INTO post (thread, user, timestamp, content, modified, parent_post, "
                   "score, votes, signature, hidden) VALUES (%s, %s, %s, %s, 0, 0, 0, 0, 0, 0)",
                   [(tid, alice.id, base + i, "post number %d" % i) for i in range(999)])
    db.execute("UPDATE thread SET replies = replies + 999 WHERE id = %s", (tid,))
    anon = ok(call(site, "forum_thread.php", get={"id": tid}))      # 20 a page anonymously
    # the thread's first post came last (it is newer than the 999 inserted)
    assert anon.count('<div class="post">') == 20 and "post number 19<" in anon
    assert "start=20" in anon and "post number 20<" not in anon
    reader = new_user(site)                                         # 75 a page: their pref
    page = ok(call(site, "forum_thread.php", reader, {"id": tid, "start": 975}))
    assert page.count('<div class="post">') == 25 and "post number 998<" in page
    target = one(site, "SELECT id FROM post WHERE thread = %s AND content = 'post number 500'",
                 (tid,))["id"]
    jump = ok(call(site, "forum_thread.php", reader, {"id": tid, "postid": target}))
    assert "post number 500<" in jump and "post number 450<" in jump   # page 450..524
    assert "post number 524<" in jump and "post number 449<" not in jump
    newest = ok(call(site, "forum_thread.php", reader, {"id": tid, "sort": 5}))
    assert newest.index("post number 998<") < newest.index("post number 997<")
    assert one(site, "SELECT thread_sorting FROM forum_preferences WHERE userid = %s",
               (reader.id,))["thread_sorting"] == 5


def test_forum_list_sticky_and_sorts(site):
    db = site.db
    alice = new_user(site)
    fid = forum_id(site, "Cafe")
    ids = [new_thread(site, alice, fid, title="Thread %s" % c) for c in "ABC"]
    db.execute("UPDATE thread SET sticky = 1 WHERE id = %s", (ids[0],))
    db.execute("UPDATE thread SET views = 99 WHERE id = %s", (ids[1],))
    body = ok(call(site, "forum_forum.php", alice, {"id": fid, "sort": 1}))
    assert body.index("Thread A") < body.index("Thread C") < body.index("Thread B")
    body = ok(call(site, "forum_forum.php", alice, {"id": fid, "sort": 3}))
    assert body.index("Thread A") < body.index("Thread B") < body.index("Thread C")
    db.execute("UPDATE thread SET hidden = 1 WHERE id = %s", (ids[2],))
    assert "Thread C" not in ok(call(site, "forum_forum.php", alice, {"id": fid}))
    assert call(site, "forum_thread.php", alice, {"id": ids[2]}).status.startswith("404")


def test_rating_and_help_desk(site):
    asker, helper = new_user(site, credit=0), new_user(site)
    help_id = forum_id(site, "Preferences")
    tid = new_thread(site, asker, help_id, title="Which preferences?")
    pid = reply_id(reply(site, helper, tid, "Use the web page"))
    body = ok(call(site, "forum_thread.php", asker, {"id": tid}))
    assert "This answered my question" in body
    assert "Questions and Answers" in ok(call(site, "forum_help_desk.php"))
    resp = call(site, "forum_rate.php", asker, {"post": pid}, post={
        "choice": "p", "csrf_token": tok(site, asker, "forum_rate.php")})
    assert ok(resp) and "rating has been recorded" in resp.body
    assert one(site, "SELECT rating FROM post_ratings WHERE post = %s AND user = %s",
               (pid, asker.id))["rating"] == 1
    resp = call(site, "forum_rate.php", asker, {"post": pid}, post={
        "choice": "n", "csrf_token": tok(site, asker, "forum_rate.php")})
    assert resp.status.startswith("409")
    assert "Rating: +1 (1 votes)" in ok(call(site, "forum_thread.php", helper, {"id": tid}))


def test_preferences_ignore_signature_images(site):
    alice = new_user(site)
    troll = new_user(site, name="troll")
    form = ok(call(site, "edit_forum_preferences_form.php", alice))
    assert 'name="forum_filter_user"' in form
    resp = call(site, "edit_forum_preferences_action.php", alice, post={
        "signature": "[b]Sig[/b] " + HOSTILE, "signature_by_default": "1",
        "pm_notification": "2", "forum_sort": "3", "thread_sort": "6",
        "forum_display_wrap_postcount": "10", "forum_images_as_links": "1",
        "forum_filter_user": str(troll.id),
        "csrf_token": tok(site, alice, "edit_forum_preferences_action.php")})
    assert resp.status.startswith("303"), resp.body
    p = one(site, "SELECT * FROM forum_preferences WHERE userid = %s", (alice.id,))
    assert (p["pm_notification"], p["forum_sorting"], p["display_wrap_postcount"],
            p["no_signature_by_default"], p["images_as_links"], p["ignorelist"]) == \
        (2, 3, 10, 0, 1, str(troll.id))
    fid = forum_id(site, "Cafe")
    tid = new_thread(site, alice, fid, title="Sig thread", add_signature="1")
    reply_id(reply(site, troll, tid, "troll text [img]https://example.com/a.png[/img]"))
    body = ok(call(site, "forum_thread.php", alice, {"id": tid}))
    assert "<b>Sig</b>" in body and "&lt;script&gt;" in body and "<script>" not in body
    assert "troll text" not in body and "ignore" in body
    assert "troll text" in ok(call(site, "forum_thread.php", alice, {"id": tid, "filter": "false"}))
    other = ok(call(site, "forum_thread.php", new_user(site), {"id": tid}))
    assert '<img src="https://example.com/a.png"' in other
    set_forum_pref(site.db, alice.id, "ignorelist", "")
    assert '<img src="https://example.com/a.png"' not in ok(
        call(site, "forum_thread.php", alice, {"id": tid}))      # images as links
    # removing from the ignore list; bad values
    bad = call(site, "edit_forum_preferences_action.php", alice, post={
        "signature": "x" * 300, "pm_notification": "0", "forum_sort": "1", "thread_sort": "6",
        "forum_display_wrap_postcount": "10",
        "csrf_token": tok(site, alice, "edit_forum_preferences_action.php")})
    assert bad.status.startswith("400") and "signature" in bad.body
    bad = call(site, "edit_forum_preferences_action.php", alice, post={
        "signature": "", "pm_notification": "7", "forum_sort": "1", "thread_sort": "6",
        "forum_display_wrap_postcount": "10",
        "csrf_token": tok(site, alice, "edit_forum_preferences_action.php")})
    assert bad.status.startswith("400")


def test_search_and_user_posts(site):
    alice = new_user(site)
    fid = forum_id(site, "Science")
    tid = new_thread(site, alice, fid, title="Gravitational lensing question",
                     content="Something about quasars and " + HOSTILE)
    body = ok(call(site, "forum_search.php"))
    assert 'name="search_keywords"' in body
    res = ok(call(site, "forum_search_action.php", post={
        "search_keywords": "gravitational", "search_forum": "-1", "search_max_time": "0",
        "search_sort": "1"}))
    assert "forum_thread.php?id=%d" % tid in res
    res = ok(call(site, "forum_search_action.php", post={"search_keywords": "quasars " + HOSTILE}))
    assert "forum_thread.php?id=%d&amp;postid=" % tid in res and "<script>" not in res
    assert "Message board search" in ok(call(site, "forum_search_action.php",
                                             post={"search_keywords": "zzzznothing"}))
    assert call(site, "forum_search_action.php", post={}).status.startswith("400")
    mine = ok(call(site, "forum_user_posts.php", get={"userid": alice.id}))
    assert "quasars" in mine and "Gravitational lensing" in mine


def _explain(db, sql, params):
    return db.query("EXPLAIN " + sql, params)


def test_queries_use_indexes(site):
    """EXPLAIN of the lists' statements: each table read through a key."""
    db = site.db
    fid = forum_id(site, "Science")
    uid = new_user(site).id
    for sql, params in (
            ("SELECT id FROM thread WHERE forum = %s AND hidden = 0 ORDER BY sticky DESC, "
             "timestamp DESC, id DESC LIMIT 0, 50", (fid,)),
            ("SELECT COUNT(*) AS n FROM thread WHERE forum = %s AND hidden = 0", (fid,)),
            ("SELECT * FROM post WHERE thread = %s AND hidden = 0 ORDER BY timestamp ASC, "
             "id ASC LIMIT 0, 20", (1,)),
            ("SELECT COUNT(*) AS n FROM post WHERE thread = %s AND hidden = 0", (1,)),
            ("SELECT * FROM post WHERE user = %s AND hidden = 0 ORDER BY id DESC LIMIT 0, 20",
             (uid,)),
            ("SELECT userid FROM subscriptions WHERE userid = %s AND threadid = %s", (uid, 1)),
            ("SELECT u.id FROM subscriptions s JOIN user u ON u.id = s.userid LEFT JOIN "
             "forum_preferences fp ON fp.userid = u.id WHERE s.threadid = %s AND "
             "s.userid <> %s", (1, uid)),
            ("SELECT post, SUM(rating) FROM post_ratings WHERE post IN (%s, %s) GROUP BY post",
             (1, 2))):
        for row in _explain(db, sql, params):
            # (a lookup the unique key answers with no row says so instead)
            assert row["key"] or "no matching" in (row["Extra"] or "") \
                or "Impossible WHERE" in (row["Extra"] or ""), (sql, row)


def test_update_forum_activities(site):
    from backend_rows import run_pass
    from boincpy.daemons.forum_activities import UpdateForumActivities
    db = site.db
    alice = new_user(site)
    now = int(time.time())
    fid = forum_id(site, "Cafe")
    tid = new_thread(site, alice, fid, title="Active")
    db.execute("UPDATE post SET timestamp = %s WHERE thread = %s", (now - 7 * 86400, tid))
    db.execute("INSERT INTO post (thread, user, timestamp, content) VALUES (%s, %s, %s, 'x')",
               (tid, alice.id, now))
    hid = new_thread(site, alice, forum_id(site, "Windows"), title="Help")
    db.execute("UPDATE thread SET create_time = %s, sufferers = 3 WHERE id = %s",
               (now - 2 * 86400, hid))
    run_pass(UpdateForumActivities, site.root, now=now)
    assert one(site, "SELECT activity FROM thread WHERE id = %s",
               (tid,))["activity"] == pytest.approx(1.5)          # 2^-1 + 2^0
    assert one(site, "SELECT activity FROM thread WHERE id = %s",
               (hid,))["activity"] == pytest.approx(2.0)          # (3 + 1) / 2 days
    assert "update_forum_activities" in [t.cmd if hasattr(t, "cmd") else t["cmd"]
                                         for t in site.cfg.tasks]
    out = subprocess.run([os.path.join(site.root, "bin", "run_in_ops"),
                          "./update_forum_activities.php"], cwd=site.root,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and "threads updated" in out.stderr, out


def test_deleted_accounts_leave_no_posts(site):
    """BOINC's forum_delete_user, from both ways of deleting an account: the
    posts go with the counts kept, a thread left empty goes, subscriptions and
    ratings too."""
    db = site.db
    stay, leaver, hider = new_user(site), new_user(site), new_user(site)
    fid = forum_id(site, "Cafe")
    kept = new_thread(site, stay, fid, title="Stays")
    reply_id(reply(site, leaver, kept, "leaver's reply", subscribe="1"))
    own = new_thread(site, leaver, fid, title="Goes")
    reply_id(reply(site, hider, kept, "hider's reply", subscribe="1"))
    first = one(site, "SELECT id FROM post WHERE thread = %s ORDER BY id LIMIT 1", (kept,))["id"]
    fdb.rate_post(db, leaver.id, first, 1)
    before = one(site, "SELECT threads, posts FROM forum WHERE id = %s", (fid,))
    done = accounts.delete_account(db, leaver)
    assert done["forum posts"] == 2
    assert one(site, "SELECT id FROM thread WHERE id = %s", (own,)) is None
    assert one(site, "SELECT replies FROM thread WHERE id = %s", (kept,))["replies"] == 1
    after = one(site, "SELECT threads, posts FROM forum WHERE id = %s", (fid,))
    assert (after["threads"], after["posts"]) == (before["threads"] - 1, before["posts"] - 2)
    for table, col in (("subscriptions", "userid"), ("post_ratings", "user"), ("post", "user")):
        assert one(site, "SELECT COUNT(*) AS n FROM %s WHERE %s = %%s" % (table, col),
                   (leaver.id,))["n"] == 0
    accounts.obfuscate_account(db, hider)
    assert one(site, "SELECT COUNT(*) AS n FROM post WHERE user = %s", (hider.id,))["n"] == 0
    assert one(site, "SELECT COUNT(*) AS n FROM subscriptions WHERE userid = %s",
               (hider.id,))["n"] == 0
    assert "Stays" in ok(call(site, "forum_forum.php", get={"id": fid}))


def test_unread_marks_jump_and_mark_all_read(site):
    db = site.db
    alice, bob = new_user(site), new_user(site, display_wrap_postcount=5)
    fid = forum_id(site, "Science")
    tid = new_thread(site, alice, fid, title="Unread test")
    for i in range(7):
        reply_id(reply(site, alice, tid, "old reply %d" % i))
    assert "[new]" in ok(call(site, "forum_forum.php", bob, {"id": fid}))
    ok(call(site, "forum_thread.php", bob, {"id": tid}))            # read now
    assert "Unread test</a> [new]" not in ok(call(site, "forum_forum.php", bob, {"id": fid}))
    later = int(time.time()) + 100
    pid = reply_id(reply(site, alice, tid, "fresh reply"))
    db.execute("UPDATE post SET timestamp = %s WHERE id = %s", (later, pid))
    db.execute("UPDATE thread SET timestamp = %s WHERE id = %s", (later, tid))
    assert "Unread test</a> [new]" in ok(call(site, "forum_forum.php", bob, {"id": fid}))
    page = ok(call(site, "forum_thread.php", bob, {"id": tid}))      # jumps to the new post
    assert "fresh reply" in page and "old reply 0" not in page
    assert page.count('class="unread"') == 1
    # mark all read: a POST with the token
    index = ok(call(site, "forum_index.php", bob))
    assert call(site, "forum_index.php", bob, post={"read": "1"}).status.startswith("403")
    resp = call(site, "forum_index.php", bob, post={"read": "1", "csrf_token": re.search(
        r'name="csrf_token" value="([^"]+)"', index).group(1)}, now=later + 1)
    assert resp.status.startswith("303")
    assert one(site, "SELECT mark_as_read_timestamp FROM forum_preferences WHERE userid = %s",
               (bob.id,))["mark_as_read_timestamp"] == later + 1
    assert "Unread test</a> [new]" not in ok(call(site, "forum_forum.php", bob, {"id": fid}))


def test_previews_and_odd_values(site):
    alice = new_user(site)
    fid = forum_id(site, "Science")
    tok_post = tok(site, alice, "forum_post.php")
    before = one(site, "SELECT COUNT(*) AS n FROM thread")["n"]
    body = ok(call(site, "forum_post.php", alice, {"id": fid}, post={
        "title": HOSTILE, "content": "[b]x[/b]" + HOSTILE, "preview": "Preview",
        "csrf_token": tok_post}))
    assert "<script>" not in body and "&lt;script&gt;" in body and "<b>x</b>" in body
    assert one(site, "SELECT COUNT(*) AS n FROM thread")["n"] == before   # nothing posted
    # no title; a title of markup only; a huge message; a long title cut to the column
    for form in ({"title": "", "content": "text"}, {"title": "<b></b>", "content": "text"},
                 {"title": "t", "content": "x" * 300000}):
        resp = call(site, "forum_post.php", alice, {"id": fid},
                    post=dict(form, csrf_token=tok_post))
        assert resp.status.startswith("400"), form
    tid = new_thread(site, alice, fid, title="T" * 400, content="y" * 70000)
    assert len(one(site, "SELECT title FROM thread WHERE id = %s", (tid,))["title"]) == 254
    assert len(one(site, "SELECT content FROM post WHERE thread = %s",
                   (tid,))["content"]) == 64000
    # a quoted post of another thread; sort and start out of range; GET of actions
    other = one(site, "SELECT id FROM post WHERE thread = %s",
                (new_thread(site, alice, fid, title="Other"),))["id"]
    assert call(site, "forum_reply.php", alice, {"thread": tid, "post": other}) \
        .status.startswith("400")
    assert ok(call(site, "forum_thread.php", alice, {"id": tid, "sort": "99"}))
    assert call(site, "forum_thread.php", alice, {"id": tid, "start": "99999999999"}) \
        .status.startswith("400")
    for page in ("forum_subscribe.php", "forum_rate.php", "edit_forum_preferences_action.php"):
        resp = call(site, page, alice, {"post": other, "thread": tid})
        assert resp.status[:3] in ("400", "405"), page
    # not logged in: the posting pages send to the login form
    resp = call(site, "forum_post.php", None, {"id": fid})
    assert resp.status.startswith("303") and "login_form.php" in dict(resp.headers)["Location"]


def test_news_items_are_threads_of_the_news_forum(site):
    """A news item (the ops page's insert_thread in the News forum) is a
    thread these pages show; only administrators may start one here."""
    from boincpy.web.user.news import news_forum
    admin = new_user(site, special_user="01000000")
    news = news_forum(site.db)
    with site.db.transaction():
        tid = fdb.insert_thread(site.db, news["id"], admin.id, "Release " + HOSTILE,
                                "We [b]released[/b].", int(time.time()), status=1)
    body = ok(call(site, "forum_thread.php", get={"id": tid}))
    assert "<b>released</b>" in body and "&lt;script&gt;" in body and "<script>" not in body
    assert "Release" in ok(call(site, "forum_forum.php", get={"id": news["id"]}))
    assert "New thread" in ok(call(site, "forum_forum.php", admin, {"id": news["id"]}))
    assert "New thread" not in ok(call(site, "forum_forum.php", new_user(site),
                                       {"id": news["id"]}))
    # the admin's news thread from this page: status 1 unless exported (BOINC's checkbox)
    assert 'name="export"' in ok(call(site, "forum_post.php", admin, {"id": news["id"]}))
    nid = new_thread(site, admin, news["id"], title="Posted here")
    assert one(site, "SELECT status FROM thread WHERE id = %s", (nid,))["status"] == 1
    nid = new_thread(site, admin, news["id"], title="Exported", export="1")
    assert one(site, "SELECT status FROM thread WHERE id = %s", (nid,))["status"] == 0
    assert "Posted here" in ok(call(site, "old_news.php"))
