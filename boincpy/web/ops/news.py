"""``news.php``: the project's news, for the operators: post, edit, hide and
show again.  (BOINC has no ops page for this: its admins post in the News
forum through forum_post.php as special users.)

A news item is a thread of the News forum with its first post, written by
:mod:`boincpy.db.forum` as BOINC's forum code writes them, in the name of an
account of the project (``thread.owner``, ``post.user``); "show as a notice"
is the thread's ``status`` 0, as BOINC's "export" checkbox.  A project made
before boincpy had the forum tables gets them, and BOINC's default forums,
on the first post.  Every change is a POST with the form token.
"""

import time

from boincpy.db import forum as forum_table
from boincpy.db.schema import ensure_table
from boincpy.web import accounts
from boincpy.web.bbcode import render as bb_html
from boincpy.web.markup import Markup, fmt, join, link, url
from boincpy.web.page import PageError, hidden, notice, render, table, text_input
from boincpy.web.user.news import news_forum

FORUM_TABLES = ("category", "forum", "thread", "post")
MAX_TITLE = 254


def _forum(db, create=False):
    forum = news_forum(db)
    if forum is None and create:
        with db.transaction():
            for name in FORUM_TABLES:
                ensure_table(db, name)
            forum_table.create_forums(db)
        forum = news_forum(db)
    return forum


def _thread(db, forum, thread_id):
    """A thread of the News forum (hidden or not) with its first post."""
    row = db.query_one(
        "SELECT t.*, p.id AS post_id, p.content FROM thread t JOIN post p ON p.id = "
        "(SELECT MIN(id) FROM post WHERE thread = t.id) WHERE t.id = %s AND t.forum = %s",
        (thread_id, forum["id"]))
    if row is None:
        raise PageError("thread: no news item %d." % thread_id, "404 Not Found")
    return row


def _default_author(db):
    """The first account flagged "Project administrator", else none."""
    for userid in accounts.special_user_ids(db):
        if accounts.forum_prefs(db, userid)["special_user"][1:2] == "1":
            return userid
    return ""


def _fields(ctx):
    title = ctx.req.post("title").strip()
    content = ctx.req.post("content")
    if not title:
        raise PageError("title: give the news item a title.")
    if len(title) > MAX_TITLE:
        raise PageError("title: at most %d characters." % MAX_TITLE)
    if not content.strip():
        raise PageError("content: the news item has no text.")
    if len(content.encode("utf-8", "surrogatepass")) > forum_table.MAX_POST_CONTENT:
        raise PageError("content: at most %d bytes of UTF-8." % forum_table.MAX_POST_CONTENT)
    return accounts.strip_tags(title), content


def _post(ctx):
    db = ctx.db
    action = ctx.req.post("action")
    if action == "post":
        title, content = _fields(ctx)
        author = ctx.int_arg("author", None, post=True, minimum=1, maximum=2 ** 31 - 1)
        if author is None or accounts.lookup_user_by_id(db, author) is None:
            raise PageError("author: give the id of an existing account to post as.")
        forum = _forum(db, create=True)
        with db.transaction():
            thread_id = forum_table.insert_thread(
                db, forum["id"], author, title, content, ctx.now,
                status=0 if ctx.req.post("export") else 1)
        return "News item %d posted." % thread_id
    forum = _forum(db)
    if forum is None:
        raise PageError("There is no News forum yet: post a news item first.")
    thread_id = ctx.int_arg("thread", None, post=True, minimum=1, maximum=2 ** 31 - 1)
    if thread_id is None:
        raise PageError("thread: which news item?")
    with db.transaction():
        item = _thread(db, forum, thread_id)
        if action == "edit":
            title, content = _fields(ctx)
            forum_table.set_thread_title(db, thread_id, title)
            forum_table.edit_post(db, item["post_id"], content, ctx.now)
            forum_table.set_thread_status(db, thread_id, 0 if ctx.req.post("export") else 1)
            return "News item %d changed." % thread_id
        if action == "hide":
            forum_table.hide_thread(db, thread_id, forum["id"])
            return "News item %d hidden." % thread_id
        if action == "unhide":
            forum_table.unhide_thread(db, thread_id, forum["id"])
            return "News item %d shown again." % thread_id
    raise PageError("action: post, edit, hide or unhide.")


def _button(ctx, action, thread_id, label):
    return fmt('<form class="inline" method="post" action="news.php">{}{}{}'
               '<button type="submit">{}</button></form>', ctx.token_field("news.php"),
               hidden("action", action), hidden("thread", thread_id), label)


def _form(ctx, item=None, author=""):
    fields = [ctx.token_field("news.php"), hidden("action", "edit" if item else "post")]
    if item:
        fields.append(hidden("thread", item["id"]))
        author_row = Markup("")
    else:
        author_row = fmt('<label for="author">Post as account (user id)</label><div>{}</div>',
                         text_input("author", author, 8))
    exported = item is None or item["status"] == 0
    return fmt(
        '<form class="filters" method="post" action="news.php">{}'
        '<label for="title">Title</label><div>{}</div>'
        '<label for="content">Text (BBCode)</label>'
        '<div><textarea name="content" id="content" rows="8" cols="70">{}</textarea></div>{}'
        '<label for="export">Show as a notice in the BOINC Manager</label>'
        '<div><input type="checkbox" name="export" id="export" value="1"{}></div>'
        '<span></span><div><button type="submit">{}</button></div></form>',
        join(fields), text_input("title", item["title"] if item else "", 60),
        item["content"] if item else "", author_row,
        Markup(" checked") if exported else Markup(""), "Save" if item else "Post")


def page(ctx):
    """news.php: the news items and the form to post one (``edit=N``: edit one)."""
    message = Markup("")
    if ctx.req.method == "POST":
        ctx.require_action()
        message = notice("ok", _post(ctx))
    db = ctx.db
    forum = _forum(db)
    edit = ctx.int_arg("edit", None, minimum=1, maximum=2 ** 31 - 1)
    if edit is not None and forum is not None:
        item = _thread(db, forum, edit)
        return render(ctx, "Edit news item %d" % edit,
                      join([_form(ctx, item), fmt("<p>{}</p>", link("news.php", "Back"))]))
    rows = []
    if forum is not None:
        for t in db.query(
                "SELECT t.id, t.title, t.create_time, t.hidden, t.status, t.owner, u.name, "
                "(SELECT content FROM post WHERE thread = t.id ORDER BY id LIMIT 1) AS content "
                "FROM thread t LEFT JOIN user u ON u.id = t.owner WHERE t.forum = %s "
                "ORDER BY t.id DESC LIMIT 200", (forum["id"],)):
            state = "hidden" if t["hidden"] else ("news and notice" if t["status"] == 0
                                                  else "news only")
            rows.append((t["id"], time.strftime("%Y-%m-%d %H:%M", time.gmtime(t["create_time"])),
                         t["title"], bb_html((t["content"] or "")[:300]),
                         fmt("{} ({})", t["name"] or "?", t["owner"]), state,
                         join([link(url("news.php", edit=t["id"]), "Edit"), Markup(" "),
                               _button(ctx, "unhide" if t["hidden"] else "hide", t["id"],
                                       "Show" if t["hidden"] else "Hide")])))
    body = join([message,
                 fmt("<p>The news are the threads of the project's News forum; volunteers read "
                     "them on {} and {}, BOINC clients as notices.</p>",
                     link(ctx.cfg.master_url + "old_news.php", "old_news.php"),
                     link(ctx.cfg.master_url + "rss_main.php", "rss_main.php")),
                 fmt("<h2>Post a news item</h2>"), _form(ctx, author=_default_author(db)),
                 fmt("<h2>News items</h2>"),
                 table(("ID", "Posted", "Title", "Text", "Author", "State", ""), rows,
                       empty="no news yet")])
    return render(ctx, "News", body)
