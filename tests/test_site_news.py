"""The project's news (boincpy.web.user.news, the ops page news.php), the
forum tables they live in, gui_urls.xml and login_token_lookup.php,
in-process against a project made by make_project:

* make_project creates BOINC's forums (create_forums.php), rss_main.php is
  valid RSS 2.0 on the fresh project and after posting;
* the ops page posts, edits, hides and shows items (thread + first post as
  BOINC's forum code writes them), only with its form token;
* a news item written with BOINC's own INSERTs is shown by boincpy;
* a project made before the forum tables: feeds answer, the first post
  creates them;
* notices.php (the client's Notices feed) needs the user's RSS key and
  carries only exported items;
* gui_urls.xml is in the made project and in a scheduler reply, with the
  notices feed's URL for the user;
* login_token_lookup.php answers BOINC's captured reply to a wrong token."""

import io
import os
import secrets
import time

import pytest
from lxml import etree

from boincpy import passwords
from boincpy.web import csrf
from boincpy.web.http import Request, read_request
from site_util import Site, fixture, module_project, status, wire_request
from conftest import altered
from test_site_teams import HOSTILE

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")


@pytest.fixture(scope="module")
def site(db_root_params):
    with module_project(db_root_params) as project:
        yield Site(project)


def ops(site, post=None, get=None, token=True, user="admin", now=None):
    """news.php of the ops area, as the admin Apache authenticated."""
    from boincpy.web.ops.main import handle
    form = dict(post or {})
    if post is not None and token:
        form[csrf.FIELD] = token if isinstance(token, str) else csrf.make_token(
            site.secret, user, "news.php", now)
    req = wire_request("news.php", "POST" if post is not None else "GET", get, form, "/ops/",
                       None, headers={"REMOTE_USER": user, "AUTH_TYPE": "Basic"})
    resp = handle("news.php", req, site.project.root, now)
    assert "Traceback" not in resp.text, resp.text[-3000:]
    return resp


def rss(text):
    """The parsed feed, checked to be RSS 2.0 with the channel's required elements."""
    root = etree.fromstring(text.encode("utf-8"))
    assert root.tag == "rss" and root.get("version") == "2.0"
    channel = root.find("channel")
    for name in ("title", "link", "description"):
        assert channel.findtext(name), name
    for item in channel.findall("item"):
        assert item.findtext("title") and item.findtext("link") and item.findtext("pubDate")
    return channel


def news_forum_id(site):
    return site.db.query_value(
        "SELECT f.id FROM forum f JOIN category c ON c.id = f.category "
        "WHERE f.title = 'News' AND c.is_helpdesk = 0")


def post_news(site, author, title, content, export=True):
    resp = ops(site, post={"action": "post", "author": author.id, "title": title,
                           "content": content, "export": "1" if export else ""})
    assert status(resp) == 200 and "posted" in resp.text, resp.text[-2000:]
    return site.db.query_value("SELECT MAX(id) FROM thread")


# ---------------------------------------------------------------------------

def test_make_project_creates_boincs_forums(site):
    cats = site.db.query("SELECT orderID, lang, name, is_helpdesk FROM category ORDER BY id")
    assert [(c["orderID"], c["name"], c["is_helpdesk"]) for c in cats] == [
        (0, "", 0), (0, "Platform-specific problems", 1), (1, "General issues", 1)]
    forums = site.db.query("SELECT f.title, f.orderID, f.is_dev_blog, f.parent_type, c.name "
                           "FROM forum f JOIN category c ON c.id = f.category ORDER BY f.id")
    assert [(f["title"], f["orderID"], f["is_dev_blog"]) for f in forums][:4] == [
        ("News", 0, 1), ("Science", 1, 0), ("Number crunching", 2, 0), ("Cafe", 3, 0)]
    assert len(forums) == 10 and all(f["parent_type"] == 0 for f in forums)
    # the indexes of BOINC's constraints.sql
    keys = {(r["Table"], r["Key_name"]) for t in ("category", "forum", "thread", "post")
            for r in site.db.query("SHOW INDEX FROM `%s`" % t)}
    assert {("category", "cat1"), ("forum", "pct"), ("thread", "thread_title"),
            ("post", "post_user"), ("post", "post_thread"), ("post", "post_content")} <= keys


def test_rss_on_a_fresh_project_is_valid_and_empty(site, db_root_params):
    """Before any news (and with no News forum at all) rss_main.php is a
    valid feed, not BOINC's empty body."""
    resp = site.call("rss_main.php")
    assert status(resp) == 200 and resp.content_type.startswith("application/xml")
    channel = rss(resp.text)
    assert channel.findtext("title") == "%s: News" % site.cfg.long_name
    assert channel.findtext("link") == site.cfg.master_url
    assert channel.findtext("language") == "en-us"
    assert channel.find("image/url").text.endswith("rss_image.gif")
    if not channel.findall("item"):
        assert "No news yet" in site.ok("old_news.php")
    # a project whose News forum is gone (or was never made)
    site.db.execute("UPDATE forum SET title = 'Old news' WHERE title = 'News'")
    try:
        channel = rss(site.call("rss_main.php").text)
        assert not channel.findall("item")
        assert "no news forum" in site.ok("old_news.php")
    finally:
        site.db.execute("UPDATE forum SET title = 'News' WHERE title = 'Old news'")


def test_ops_posts_edits_hides_news(site):
    author = site.user()
    title = "Release %s" % secrets.token_hex(3)
    # no token, a wrong token, a GET: nothing posted
    before = site.db.query_value("SELECT COUNT(*) FROM thread")
    form = {"action": "post", "author": author.id, "title": title, "content": "x"}
    assert status(ops(site, post=form, token=False)) == 403
    assert status(ops(site, post=form, token=csrf.make_token(site.secret, "admin",
                                                             "cancel_wu_action.php"))) == 403
    assert status(ops(site, post=form, user="mallory")) == 200    # mallory's own token
    site.db.execute("DELETE FROM post WHERE thread = (SELECT MAX(id) FROM thread)")
    site.db.execute("DELETE FROM thread WHERE id = (SELECT MAX(id) FROM (SELECT id FROM thread)"
                    " AS t)")
    site.db.execute("UPDATE forum SET threads = threads - 1, posts = posts - 1 WHERE id = %s",
                    (news_forum_id(site),))
    assert site.db.query_value("SELECT COUNT(*) FROM thread") == before
    for bad, field in (({"title": ""}, "title"), ({"content": " "}, "content"),
                       ({"author": "999999"}, "author"), ({"author": "x"}, "author"),
                       ({"title": "t" * 300}, "title"), ({"content": "\U0001f600" * 20000},
                                                         "content")):
        resp = ops(site, post=dict(form, **bad))
        assert status(resp) in (400, 404) and field in resp.text, bad
    assert site.db.query_value("SELECT COUNT(*) FROM thread") == before

    forum_before = site.db.query_one("SELECT threads, posts FROM forum WHERE id = %s",
                                     (news_forum_id(site),))
    tid = post_news(site, author, title, "We released [b]version 2[/b].\nEnjoy.")
    thread = site.db.query_one("SELECT * FROM thread WHERE id = %s", (tid,))
    post = site.db.query_one("SELECT * FROM post WHERE thread = %s", (tid,))
    assert (thread["forum"], thread["owner"], thread["status"], thread["title"],
            thread["replies"], thread["hidden"], thread["views"]) == \
        (news_forum_id(site), author.id, 0, title, 0, 0, 0)
    assert thread["timestamp"] == thread["create_time"] == post["timestamp"]
    assert (post["user"], post["modified"], post["parent_post"], post["hidden"],
            post["content"]) == (author.id, 0, 0, 0, "We released [b]version 2[/b].\nEnjoy.")
    forum = site.db.query_one("SELECT threads, posts, timestamp FROM forum WHERE id = %s",
                              (news_forum_id(site),))
    assert (forum["threads"], forum["posts"]) == (forum_before["threads"] + 1,
                                                  forum_before["posts"] + 1)
    channel = rss(site.call("rss_main.php").text)
    items = {i.findtext("title"): i for i in channel.findall("item")}
    assert "<b>version 2</b>" in items[title].findtext("description")
    assert items[title].findtext("link").endswith("forum_thread.php?id=%d" % tid)
    page = site.ok("old_news.php")
    assert title in page and "<b>version 2</b>" in page
    assert 'href="forum_thread.php?id=%d">Discuss' % tid in page
    assert title in ops(site).text
    from boincpy.web.ops.main import handle
    index = handle("index.php", read_request({"REQUEST_METHOD": "GET", "HTTP_HOST": "127.0.0.1",
                                              "REMOTE_USER": "admin"}, io.BytesIO(b"")),
                   site.project.root)
    assert 'href="news.php"' in index.text

    # edit
    assert "Save" in ops(site, get={"edit": tid}).text
    resp = ops(site, post={"action": "edit", "thread": tid, "title": title + " (fixed)",
                           "content": "Changed text", "export": "1"})
    assert status(resp) == 200
    assert site.db.query_value("SELECT content FROM post WHERE thread = %s", (tid,)) == \
        "Changed text"
    assert site.db.query_value("SELECT modified FROM post WHERE thread = %s", (tid,)) > 0
    assert "Changed text" in site.ok("old_news.php")
    # hide, show
    ops(site, post={"action": "hide", "thread": tid})
    assert site.db.query_value("SELECT hidden FROM thread WHERE id = %s", (tid,)) == 1
    assert "Changed text" not in site.ok("old_news.php")
    assert title not in site.call("rss_main.php").text
    ops(site, post={"action": "unhide", "thread": tid})
    assert "Changed text" in site.ok("old_news.php")
    # another forum's thread is not a news item
    other_forum = site.db.query_value("SELECT id FROM forum WHERE title = 'Cafe'")
    site.db.execute("INSERT INTO thread (forum, owner, title, create_time) VALUES "
                    "(%s, %s, 'cafe chat', 1)", (other_forum, author.id))
    cafe = site.db.query_value("SELECT MAX(id) FROM thread")
    assert status(ops(site, post={"action": "hide", "thread": cafe})) == 404
    assert site.db.query_value("SELECT hidden FROM thread WHERE id = %s", (cafe,)) == 0


def test_post_text_cut_in_bytes_as_boinc():
    from boincpy.db import forum
    wide = "\U0001f600" * 20000
    cut = forum.cut_content(wide)
    assert len(cut.encode()) <= forum.MAX_POST_CONTENT and wide.startswith(cut)
    assert forum.cut_content("short") == "short"


def test_hostile_news_is_escaped(site):
    author = site.user()
    post_news(site, author, "T" + HOSTILE, "text " + HOSTILE + " ]]> [url=javascript:x]y[/url]")
    page = site.ok("old_news.php")
    assert "<script>" not in page and "&lt;script&gt;" in page
    assert 'href="javascript' not in page
    feed = site.call("rss_main.php").text
    channel = rss(feed)                   # still well-formed with "]]>" in a post
    texts = [(i.findtext("title"), i.findtext("description")) for i in channel.iter("item")]
    hostile = [t for t in texts if t[1] and "]]&gt;" in t[1]]
    assert hostile and all("<script>" not in d and "&lt;script&gt;" in d for _, d in hostile)
    assert all("<script>" not in t for t, _ in texts)
    assert "<script>" not in ops(site).text


def test_news_written_by_boincs_php_is_shown(site):
    """A thread and post as BOINC's create_thread()/create_post() insert them."""
    forum = news_forum_id(site)
    author = site.user()
    now = int(time.time())
    title = "From PHP %s" % secrets.token_hex(3)
    db = site.db
    db.execute("INSERT INTO thread (forum, owner, status, title, timestamp, views, replies, "
               "activity, sufferers, score, votes, create_time, hidden, sticky, locked) values "
               "(%s, %s, 0, %s, %s, 0, -1, 0, 0, 0, 0, %s, 0, 0, 0)",
               (forum, author.id, title, now, now))
    tid = db.query_value("SELECT MAX(id) FROM thread")
    db.execute("INSERT INTO post (thread, user, timestamp, content, modified, parent_post, "
               "score, votes, signature, hidden) values (%s, %s, %s, %s, 0, 0, 0, 0, 0, 0)",
               (tid, author.id, now, "Written by [i]PHP[/i]"))
    db.execute("UPDATE thread SET replies=replies+1, timestamp=%s WHERE id = %s", (now, tid))
    db.execute("UPDATE forum SET posts=posts+1, timestamp=%s, threads=threads+1 WHERE id = %s",
               (now, forum))
    assert "Written by <i>PHP</i>" in site.ok("old_news.php")
    channel = rss(site.call("rss_main.php", get={"ndays": "2"}).text)
    assert title in [i.findtext("title") for i in channel.iter("item")]
    assert "Edit" in ops(site).text and title in ops(site).text


def test_notices_feed_for_the_client(site):
    author = site.user()
    user = site.user()
    exported = post_news(site, author, "Notice %s" % secrets.token_hex(3), "for the clients")
    quiet = post_news(site, author, "Web only %s" % secrets.token_hex(3), "not a notice",
                      export=False)
    key = passwords.rss_auth(user.id, user.authenticator, user.passwd_hash)
    resp = site.call("notices.php", get={"userid": user.id, "auth": key})
    channel = rss(resp.text)
    links = [i.findtext("link") for i in channel.iter("item")]
    assert any(link.endswith("id=%d" % exported) for link in links)
    assert not any(link.endswith("id=%d" % quiet) for link in links)
    assert channel.findtext("title") == "%s notices" % site.cfg.long_name
    wrong = site.call("notices.php", get={"userid": user.id, "auth": altered(key)})
    assert "<error_num>-155</error_num>" in wrong.text and "<item>" not in wrong.text
    nobody = site.call("notices.php", get={"userid": 99999999, "auth": key})
    assert "<error_num>-1</error_num>" in nobody.text
    # the user's private-message notification comes along, newest first
    from boincpy.db import messages
    messages.ensure_tables(site.db)
    pm = messages.insert_pm(site.db, user.id, author.id, int(time.time()) + 5, "Hi", "hello")
    site.db.execute("INSERT INTO notify (userid, create_time, type, opaque) VALUES "
                    "(%s, %s, %s, %s)", (user.id, int(time.time()) + 5, messages.NOTIFY_PM, pm))
    channel = rss(site.call("notices.php", get={"userid": user.id, "auth": key}).text)
    titles = [i.findtext("title") for i in channel.iter("item")]
    assert titles[0] == "Private message" and len(titles) >= 2
    # an item older than 30 days is no notice any more (but still news)
    site.db.execute("UPDATE thread SET create_time = create_time - 31 * 86400 WHERE id = %s",
                    (exported,))
    channel = rss(site.call("notices.php", get={"userid": user.id, "auth": key}).text)
    assert not any(i.findtext("link").endswith("id=%d" % exported) for i in channel.iter("item"))


def test_gui_urls_in_project_and_scheduler_reply(site):
    """make_project writes gui_urls.xml; the scheduler sends it filled in
    for the user (team entry only to team members), with the notices feed."""
    path = os.path.join(site.project.root, "gui_urls.xml")
    with open(path) as f:
        text = f.read()
    etree.fromstring(("<x>%s</x>" % text).encode())          # well-formed
    for page in ("forum_index.php", "home.php", "prefs.php?subset=global", "team.php",
                 "results.php", "hosts_user.php", "notices.php"):
        assert page in text, page
    founder = site.user()
    team = site.create_team(founder, "Gui " + secrets.token_hex(3))
    loner = site.user()
    from boincpy import shmem
    from jobs_helpers import make_feeder
    feeder = make_feeder(site.cfg)
    feeder.one_pass()
    array = shmem.attach(site.cfg, wait_ready=1)
    try:
        for user, in_team in ((loner, False), (founder, True)):
            _check_reply(site, array, user, team, in_team)
    finally:
        array.close()
        feeder.shutdown()


def _check_reply(site, array, user, team, in_team):
    """One scheduler request of ``user`` (the captured 7.20.5 client's first
    request): its reply's gui_urls and notices feed."""
    from boincpy.sched.handler import handle_request
    from boincpy.log import SchedLog
    with open(os.path.join(FIXTURES, "client-7.20.5", "no_work",
                           "02_sched_initial_hostid0.body.xml"), "rb") as f:
        body = f.read().replace(b"abcdef0123456789", user.authenticator.encode())
    out = handle_request(site.cfg, body, {"REMOTE_ADDR": "127.0.0.1",
                                          "REQUEST_METHOD": "POST"},
                         job_array=array, log=SchedLog(io.StringIO(), 3))
    reply = out.decode().partition("\n\n")[2]
    root = etree.fromstring(reply.encode())
    urls = [u.text for u in root.iter("url")]
    assert urls, reply[-3000:]
    assert site.cfg.master_url + "home.php" in urls
    assert site.cfg.master_url + "results.php?userid=%d" % user.id in urls
    key = passwords.rss_auth(user.id, user.authenticator, user.passwd_hash)
    feed = root.find("rss_feeds/rss_feed/url").text
    assert feed == "%snotices.php?userid=%d&auth=%s" % (site.cfg.master_url, user.id, key)
    team_url = site.cfg.master_url + "team_display.php?teamid=%d" % team.id
    assert (team_url in urls) == in_team
    # the feed it names answers
    query = dict(q.split("=") for q in feed.split("?")[1].split("&"))
    assert status(site.call("notices.php", get=query)) == 200


def test_login_token_lookup(site):
    from boincpy.web import rpc
    user = site.user()
    resp = rpc.handle("login_token_lookup", site.cfg,
                      Request.of(get={"user_id": str(user.id), "token": "x"}))
    assert resp.body == fixture("login_token_lookup_bad.xml")
    token = secrets.token_hex(16)
    site.db.execute("UPDATE user SET login_token = %s, login_token_time = %s WHERE id = %s",
                    (token, time.time(), user.id))
    good = rpc.handle("login_token_lookup", site.cfg,
                      Request.of(get={"user_id": str(user.id), "token": token}))
    root = etree.fromstring(good.body.encode())
    assert root.findtext("authenticator") == user.authenticator
    assert root.findtext("user_name") == user.name
    site.db.execute("UPDATE user SET login_token_time = %s WHERE id = %s",
                    (time.time() - 2 * 86400, user.id))
    old = rpc.handle("login_token_lookup", site.cfg,
                     Request.of(get={"user_id": str(user.id), "token": token}))
    assert "<error_num>token timed out</error_num>" in old.body
    missing = rpc.handle("login_token_lookup", site.cfg,
                         Request.of(get={"user_id": "99999999", "token": token}))
    assert "<error_num>user not found</error_num>" in missing.body
    from boincpy.persistent import WEB_PAGES
    assert "login_token_lookup.php" in WEB_PAGES
    assert os.access(os.path.join(site.project.root, "html", "user", "login_token_lookup.php"),
                     os.X_OK)


def test_project_made_before_the_forum_tables(project_factory):
    """A project whose database lacks the forum tables: the feeds still
    answer; the first news item posted creates the tables and BOINC's forums."""
    older = Site(project_factory())
    for table in ("post", "thread", "forum", "category"):
        older.db.execute("DROP TABLE `%s`" % table)
    rss(older.call("rss_main.php").text)
    assert "no news forum" in older.ok("old_news.php")
    user = older.user()
    key = passwords.rss_auth(user.id, user.authenticator, user.passwd_hash)
    rss(older.call("notices.php", get={"userid": user.id, "auth": key}).text)
    assert "no news yet" in ops(older).text
    post_news(older, user, "First news", "after the upgrade")
    assert older.db.query_value("SELECT COUNT(*) FROM forum") == 10
    channel = rss(older.call("rss_main.php").text)
    assert [i.findtext("title") for i in channel.iter("item")] == ["First news"]
