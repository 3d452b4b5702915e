"""The project's news, as BOINC keeps them: the threads of the "News" forum
(a forum titled "News" of a category that is not a help desk; html/inc/news.inc),
each item the first post of its thread.  The ops page
:mod:`boincpy.web.ops.news` posts, edits and hides them; BOINC's own
forum_post.php writes the same rows.

=====================  ==========================================================
``rss_main.php``       RSS 2.0 of the news (BOINC's forum_rss: channel title
                       "PROJECT: News", items newest first, ``ndays`` limits
                       their age); a valid feed even with no news or no News
                       forum (BOINC's answered an empty body)
``old_news.php``       every news item, newest first, 20 a page (``start``)
``notices.php``        the client's Notices feed (gui_urls.xml's <rss_feeds>:
                       ``notices.php?userid=N&auth=RSS_AUTH``): news items of
                       the last 30 days not marked "don't export" (thread
                       status 0), with the user's community notifications
                       (boincpy.web.user.messages: private messages,
                       friends, subscriptions), newest first
=====================  ==========================================================

Post texts are BBCode, shown by :mod:`boincpy.web.bbcode` (its whitelist of
tags; everything else escaped), so markup stored in a post is shown as text,
in the pages and in the feeds.
"""

import time

from boincpy import passwords
from boincpy.db.forum import NEWS_FORUM
from boincpy.errors import MissingTableError
from boincpy.web import accounts, bbcode
from boincpy.web.http import Response
from boincpy.web.markup import esc, fmt, join, link, url
from boincpy.web.page import notice, paging, render
from boincpy.web.user import messages
from boincpy.xml import xml_escape

NEWS_PER_PAGE = 20
NOTICE_DAYS = 30                    # notices.php: items of the last 30 days
RSS_CONTENT_TYPE = "application/xml; charset=utf-8"

def plain_title(title):
    """A thread title for a feed: tags stripped, as BOINC's sanitize_tags."""
    return accounts.strip_tags(title or "")


def news_forum(db):
    """The News forum's row (BOINC's news_forum), or None (none yet, or a
    database without the forum tables)."""
    try:
        return db.query_one(
            "SELECT f.* FROM forum f JOIN category c ON c.id = f.category "
            "WHERE f.parent_type = 0 AND f.title = %s AND c.is_helpdesk = 0 ORDER BY f.id "
            "LIMIT 1", (NEWS_FORUM,))
    except MissingTableError:
        return None


def news_items(db, forum, where="", params=(), order="t.create_time DESC, t.id DESC",
               limit=None, offset=0):
    """Visible news threads with their first visible post: dicts with the
    thread's columns and ``content``, ``post_time``, ``author``."""
    if forum is None:
        return []
    sql = ("SELECT t.*, p.content, p.timestamp AS post_time, p.user AS author, "
           "p.modified AS post_modified FROM thread t JOIN post p ON p.id = "
           "(SELECT MIN(id) FROM post WHERE thread = t.id AND hidden = 0) "
           "WHERE t.forum = %%s AND t.hidden = 0 %s ORDER BY %s" % (where, order))
    args = [forum["id"]] + list(params)
    if limit is not None:
        sql += " LIMIT %s, %s"
        args += [offset, limit]
    return db.query(sql, args)


def count_news(db, forum):
    if forum is None:
        return 0
    return db.query_value("SELECT COUNT(*) FROM thread WHERE forum = %s AND hidden = 0",
                          (forum["id"],), 0)


def site_url(cfg):
    """BOINC's secure_url_base(): the HTTPS base if there is one, else the master URL."""
    return cfg.secure_url_base or cfg.master_url


def http_date(when):
    return time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(int(when)))


def cdata(text):
    """``text`` inside CDATA (a "]]>" in it split so it can't end the section)."""
    return "<![CDATA[%s]]>" % text.replace("]]>", "]]]]><![CDATA[>")


def rss_item(cfg, item):
    """One <item> (BOINC's show_forum_rss_item): the thread's title, the first
    post's text as HTML, the thread's permanent URL."""
    permalink = xml_escape(site_url(cfg) + "forum_thread.php?id=%d" % item["id"])
    return ("<item>\n    <title>%s</title>\n    <link>%s</link>\n"
            "    <guid isPermaLink=\"true\">%s</guid>\n    <description>%s</description>\n"
            "    <pubDate>%s</pubDate>\n</item>\n"
            % (cdata(str(esc(plain_title(item["title"])))), permalink, permalink,
               cdata("\n%s\n" % bbcode.render(item["content"])),
               http_date(item["post_time"])))


def rss_main(ctx):
    """rss_main.php[?ndays=N]: the news as RSS 2.0."""
    cfg, db = ctx.cfg, ctx.rdb
    ndays = ctx.int_arg("ndays", 0, minimum=0, maximum=100000)
    forum = news_forum(db)
    since = ctx.now - ndays * 86400 if ndays else 0
    items = news_items(db, forum, "AND t.create_time > %s", (since,))
    built = items[0]["create_time"] if items else ctx.now
    base = site_url(cfg)
    title = "%s: %s" % (cfg.long_name, forum["title"] if forum else NEWS_FORUM)
    body = ['<?xml version="1.0" encoding="UTF-8" ?>\n<rss version="2.0">\n<channel>\n'
            "<title>%s</title>\n<description>%s</description>\n<link>%s</link>\n"
            "<copyright>%s</copyright>\n<lastBuildDate>%s</lastBuildDate>\n"
            "<language>en-us</language>\n<image>\n    <url>%s</url>\n    <title>%s</title>\n"
            "    <link>%s</link>\n</image>\n"
            % (xml_escape(title), xml_escape(title), xml_escape(base), xml_escape(cfg.long_name),
               http_date(built), xml_escape(base + "rss_image.gif"), xml_escape(cfg.long_name),
               xml_escape(base))]
    body += [rss_item(cfg, item) for item in items]
    body.append("</channel>\n</rss>\n")
    headers = [("Expires", http_date(ctx.now + 86400))]
    if items:
        headers.append(("Last-Modified", http_date(built)))
    return Response("".join(body), RSS_CONTENT_TYPE, "200 OK", headers)


def _xml_error(num, msg):
    """BOINC's xml_error() as notices.php prints it (no XML declaration)."""
    return Response("<error>\n    <error_num>%d</error_num>\n    <error_msg>%s</error_msg>\n"
                    "</error>\n" % (num, xml_escape(msg)), RSS_CONTENT_TYPE, "200 OK")


def _notifications(ctx, user, since):
    """The user's community notifications (private messages, friends,
    subscriptions) as (time, <item>) pairs, as the messages pages make them."""
    try:
        items = messages.notices_of(ctx.rdb, user.id, site_url(ctx.cfg), since=since,
                                    now=ctx.now)
    except MissingTableError:               # a project without the notify table
        return []
    return [(item["time"], messages.rss_item_xml(item)) for item in items]


def notices(ctx):
    """notices.php?userid=N&auth=RSS_AUTH: the client's Notices feed."""
    cfg = ctx.cfg
    userid = ctx.int_arg("userid", 0, minimum=0, maximum=2 ** 31 - 1)
    user = accounts.lookup_user_by_id(ctx.db, userid) if userid else None
    if user is None:
        return _xml_error(-1, "Unknown error")
    wanted = passwords.rss_auth(user.id, user.authenticator, user.passwd_hash)
    if not passwords.compare_digest(ctx.req.get("auth").encode("utf-8", "replace"),
                               wanted.encode()):
        return _xml_error(-155, "Invalid authenticator")
    db = ctx.rdb
    since = ctx.now - NOTICE_DAYS * 86400
    items = [(item["create_time"], rss_item(cfg, item)) for item in news_items(
        db, news_forum(db), "AND t.status = 0 AND t.create_time > %s", (since,))]
    items += _notifications(ctx, user, since)
    items.sort(key=lambda pair: -pair[0])
    stamp = http_date(ctx.now)
    body = ['<?xml version="1.0" encoding="UTF-8" ?>\n<rss version="2.0">\n<channel>\n'
            "<title>%s notices</title>\n<link>%s</link>\n<description>Notices</description>\n"
            "<lastBuildDate>%s</lastBuildDate>\n"
            % (xml_escape(cfg.long_name), xml_escape(site_url(cfg)), stamp)]
    body += [xml for _, xml in items]
    body.append("</channel>\n</rss>\n")
    return Response("".join(body), RSS_CONTENT_TYPE, "200 OK",
                    [("Expires", stamp), ("Last-Modified", stamp)])


def news_html(item):
    """One news item on a page (BOINC's news_item): title unless the text
    starts with it, the text, the date and the thread's "Discuss" link."""
    content = item["content"] or ""
    title = plain_title(item["title"])
    parts = [fmt('<article class="news" id="news_{}">', item["id"])]
    if title and not content.startswith(title):
        parts.append(fmt("<h2>{}</h2>", title))
    parts.append(fmt('<p>{}</p><p class="muted small">{} &middot; {}</p></article>',
                     bbcode.render(content), time.strftime("%d %b %Y, %H:%M:%S UTC",
                                                           time.gmtime(int(item["create_time"]))),
                     link(url("forum_thread.php", id=item["id"]), "Discuss")))
    return join(parts)


def old_news(ctx):
    """old_news.php[?start=K]: all news, newest first, paged."""
    ctx.logged_in_user()
    db = ctx.rdb
    start = ctx.int_arg("start", 0, minimum=0, maximum=10 ** 9)
    forum = news_forum(db)
    if forum is None:
        return render(ctx, "News archive", notice("warn", "This project has no news forum."))
    total = count_news(db, forum)
    items = news_items(db, forum, order="t.id DESC", limit=NEWS_PER_PAGE, offset=start)
    body = [join(news_html(item) for item in items) if items else
            fmt('<p class="muted">No news yet.</p>'),
            paging("old_news.php", {}, start, len(items), total, NEWS_PER_PAGE),
            fmt('<p class="small">Follow the news with a feed reader: {}.</p>',
                link(url("rss_main.php"), "RSS"))]
    return render(ctx, "News archive", join(body))


PAGES = {
    "rss_main.php": rss_main,
    "old_news.php": old_news,
    "notices.php": notices,
}
