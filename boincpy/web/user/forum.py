"""The message boards, read side (BOINC's html/user/forum_*.php and
html/inc/forum.inc), on BOINC's tables category, forum, thread, post,
subscriptions, post_ratings and forum_preferences (writes in
:mod:`boincpy.db.forum` and :mod:`boincpy.db.user`):

==========================  =================================================
``forum_index.php``         categories (not help desk) and their forums: threads,
                            posts, last post
``forum_help_desk.php``     the same for the help-desk categories
``forum_forum.php``         ``id``: a forum's threads, sticky first, ``sort``
                            (BOINC's forum sort styles 1-6, kept in the reader's
                            forum_sorting), ``start`` (50 a page)
``forum_thread.php``        ``id``: a thread's posts, ``sort`` (5, 6, 7; kept in
                            thread_sorting), ``start``, ``postid`` (the page
                            holding it); display_wrap_postcount posts a page;
                            the reader's ignore list (``filter=false`` shows
                            those posts too), signatures, images and avatars
                            per their preferences; ratings; unread posts
``forum_user_posts.php``    ``userid``: a user's visible posts, newest first
``forum_search.php``        the search form; ``forum_search_action.php`` the
                            results (MySQL FULLTEXT on thread.title and
                            post.content, as BOINC's constraints.sql declares)
==========================  =================================================

The pages that post and change things are :mod:`boincpy.web.user.forum_post`.
Moderators (forum_preferences.special_user bits of forum.inc's is_moderator)
get the links of :mod:`boincpy.web.user.moderation` (moderation_links,
thread_moderation_links), whose pages do the moderating.  Every value is escaped where written;
titles as text, posts through :mod:`boincpy.web.bbcode`.
"""

import re
import time

from boincpy.db import forum as fdb
from boincpy.db import messages as mdb
from boincpy.web import bbcode
from boincpy.web.markup import Markup, esc, fmt, join, link, url
from boincpy.web.user import moderation
from boincpy.web.user.common import (ID_MAX, S_ADMIN, S_MODERATOR, check_visible, has_privilege,
                                     is_moderator, required_id, time_str, user_link)
from boincpy.web.page import (PageError, Redirect, hidden, notice, num, paging, render, select,
                              table)

THREADS_PER_PAGE = 50            # forum.inc
USER_POSTS_PER_PAGE = 20
SEARCH_LIMIT = 100               # rows a search shows at most
EXCERPT_LENGTH = 120

# forum.inc's sort styles
MODIFIED_NEW, MODIFIED_OLD, VIEWS_MOST, REPLIES_MOST = 1, 2, 3, 4
CREATE_TIME_NEW, CREATE_TIME_OLD, POST_SCORE = 5, 6, 7
FORUM_SORTS = {MODIFIED_NEW: ("Newest post first", "timestamp DESC"),
               MODIFIED_OLD: ("Oldest post first", "timestamp ASC"),
               VIEWS_MOST: ("Most read first", "views DESC"),
               REPLIES_MOST: ("Most posts first", "replies DESC"),
               CREATE_TIME_NEW: ("Newest first", "create_time DESC"),
               CREATE_TIME_OLD: ("Oldest first", "create_time ASC")}
THREAD_SORTS = {CREATE_TIME_NEW: ("Newest first", "timestamp DESC, id DESC"),
                CREATE_TIME_OLD: ("Oldest first", "timestamp ASC, id ASC"),
                POST_SCORE: ("Highest rated posts first", "score DESC, id ASC")}

# forum.inc's special_user flags (S_*)
S_HELP_DESK_EXPERT = 7
SPECIAL_NAMES = ("Volunteer moderator", "Project administrator", "Project developer",
                 "Project tester", "Volunteer developer", "Volunteer tester",
                 "Project scientist", "Help desk expert")

# the help desk's rating buttons (forum.inc SOLUTION, OFF_TOPIC)
SOLUTION = "This answered my question"
OFF_TOPIC = "Off-topic"

_PREF_DEFAULTS = {"signature": "", "posts": 0, "last_post": 0, "avatar": "", "hide_avatars": 0,
                  "forum_sorting": 0, "thread_sorting": 0, "no_signature_by_default": 1,
                  "images_as_links": 0, "link_popup": 0, "mark_as_read_timestamp": 0,
                  "special_user": "0", "jump_to_unread": 1, "hide_signatures": 0,
                  "rated_posts": "", "low_rating_threshold": -25, "high_rating_threshold": 5,
                  "minimum_wrap_postcount": 100, "display_wrap_postcount": 75,
                  "ignorelist": "", "ignore_sticky_posts": 0, "banished_until": 0,
                  "pm_notification": 0, "highlight_special": 1}
_AVATAR = re.compile(r"^(?!.*\.\.)[A-Za-z0-9_][A-Za-z0-9_/.-]{0,200}\.(?:jpg|jpeg|png|gif)$")


# ---------------------------------------------------------------------------
# rows and rules shared with forum_post

def prefs_of(db, user_id):
    """The user's forum_preferences (BOINC's defaults without a row)."""
    row = db.query_one("SELECT * FROM forum_preferences WHERE userid = %s", (user_id,)) \
        if user_id else None
    prefs = dict(_PREF_DEFAULTS)
    if row:
        prefs.update({k: v for k, v in row.items() if v is not None})
    prefs["ignored"] = ignorelist(prefs["ignorelist"])
    return prefs


def ignorelist(text):
    """forum_preferences.ignorelist: ids joined by ``|``."""
    return [int(x) for x in (text or "").split("|") if x.strip().isdigit()]


def privilege(prefs, bit):
    return has_privilege(prefs, (bit,))


def is_admin(prefs):
    return privilege(prefs, S_ADMIN)


def get_row(db, table, row_id):
    """The forum, thread or post of this id; a 404 if there is none."""
    row = db.query_one("SELECT * FROM %s WHERE id = %%s" % {"forum": "forum", "thread": "thread",
                                                          "post": "post"}[table], (row_id,))
    if row is None:
        raise PageError("No such %s" % table, "404 Not Found", "Not found")
    return row


def board(ctx, user, forum_id=None, thread_id=None, post_id=None):
    """The rows a page of the boards works on, from the id it got: (post,
    thread, forum, category, the reader's preferences or None); a forum the
    user may not see is refused."""
    db = ctx.db
    post = get_row(db, "post", post_id) if post_id else None
    thread = get_row(db, "thread", post["thread"] if post else thread_id) \
        if post or thread_id else None
    forum = get_row(db, "forum", thread["forum"] if thread else forum_id)
    check_visible(ctx, forum, user)
    prefs = prefs_of(db, user.id) if user else None
    if prefs is not None and forum["parent_type"] == 1 and moderation.is_team_admin(
            db, user.id, forum["category"]):
        prefs["team_admin_of"] = forum["category"]      # moderates the team's board
    return post, thread, forum, get_category(db, forum), prefs


def get_category(db, forum):
    if forum["parent_type"] != 0:
        return None
    return db.query_one("SELECT * FROM category WHERE id = %s", (forum["category"],))


def forum_title(category, forum, thread=None, link_thread=False):
    """forum.inc's forum_title: Message boards : category : forum : thread."""
    parts = [link("forum_help_desk.php" if category and category["is_helpdesk"]
                  else "forum_index.php",
                  "Questions and Answers" if category and category["is_helpdesk"]
                  else "Message boards")]
    if category is not None and category["name"]:
        parts.append(esc(category["name"]))
    elif forum["parent_type"] == 1:
        parts.append(link(url("team_display.php", teamid=forum["category"]), "Team"))
    if thread is None:
        parts.append(esc(forum["title"]))
    else:
        parts.append(link(url("forum_forum.php", id=forum["id"]), forum["title"]))
        parts.append(link(url("forum_thread.php", id=thread["id"]), title_text(thread["title"]))
                     if link_thread else esc(title_text(thread["title"])))
    return fmt('<p class="crumbs">{}</p>', join(parts, Markup(" : ")))


def title_text(title):
    """forum.inc's cleanup_title: the title as text, "(no title)" if empty."""
    text = bbcode.plain_text(title).strip()
    return text or "(no title)"


def time_diff(t, now):
    """util.inc's time_diff_str: "3 hours ago"."""
    if not t:
        return "---"
    d = max(0, int(now - t))
    for size, unit in ((86400, "day"), (3600, "hour"), (60, "min")):
        if d >= size:
            n = d // size
            return "%d %s%s ago" % (n, unit, "" if n == 1 else "s")
    return "%d sec ago" % d


def user_names(db, ids):
    ids = sorted({int(i) for i in ids if i})
    if not ids:
        return {}
    return {r["id"]: r["name"] for r in db.query(
        "SELECT id, name FROM user WHERE id IN (%s)" % ", ".join(["%s"] * len(ids)), ids)}


def _sort_arg(ctx, name, styles, stored, column):
    """The page's sort style: the request's (kept in the reader's preferences),
    else the reader's, else the first default."""
    value = ctx.int_arg(name, None, minimum=-ID_MAX, maximum=ID_MAX)
    user = ctx.account
    if value in styles:
        if user is not None and stored != value:
            from boincpy.db.user import set_forum_pref
            set_forum_pref(ctx.db, user.id, column, value)
        return value
    return stored if stored in styles else None


def _sort_form(page, id_value, styles, current):
    return fmt('<form class="inline" method="get" action="{}">{}{} '
               '<button type="submit">Sort</button></form>', page, hidden("id", id_value),
               select("sort", [(k, v[0]) for k, v in styles.items()], current))


# ---------------------------------------------------------------------------
# forum_index.php, forum_help_desk.php

def _boards(ctx, helpdesk, title):
    db = ctx.rdb
    user = ctx.logged_in_user()
    if ctx.req.method == "POST":
        # "Mark all threads as read" (forum_index.php?read=1 in BOINC)
        user = ctx.require_action()
        if ctx.req.post("read") != "1":
            raise PageError("read: only read=1 is an action here")
        from boincpy.db.user import set_forum_pref
        set_forum_pref(ctx.db, user.id, "mark_as_read_timestamp", ctx.now)
        raise Redirect(ctx.page)
    rows = db.query(
        "SELECT c.id AS cid, c.name AS cname, f.id, f.title, f.description, f.threads, "
        "f.posts, f.timestamp FROM category c JOIN forum f ON f.category = c.id "
        "AND f.parent_type = 0 WHERE c.is_helpdesk = %s ORDER BY c.orderID, c.id, "
        "f.orderID, f.id", (1 if helpdesk else 0,))
    parts = [_header(ctx, user)]
    current = None
    body = []
    for r in rows:
        if r["cid"] != current:
            current = r["cid"]
            if r["cname"]:
                body.append(fmt('<tr><td colspan="4"><b>{}</b></td></tr>', r["cname"]))
        body.append(fmt('<tr><td>{}<br><span class="small muted">{}</span></td>'
                        '<td class="num">{}</td><td class="num">{}</td><td>{}</td></tr>',
                        link(url("forum_forum.php", id=r["id"]), r["title"]), r["description"],
                        num(r["threads"]), num(r["posts"]), time_diff(r["timestamp"], ctx.now)))
    if user is not None:
        parts.append(fmt('<form class="inline" method="post" action="{}">{}{}<button '
                         'type="submit" id="mark_read">Mark all threads as read</button></form>',
                         ctx.page, ctx.token_field(), hidden("read", 1)))
    parts.append(fmt('<table class="forums"><thead><tr><th>Topic</th><th>Threads</th>'
                     '<th>Posts</th><th>Last post</th></tr></thead><tbody>{}</tbody></table>',
                     join(body) if body else Markup('<tr><td colspan="4">No forums</td></tr>')))
    return render(ctx, title, join(parts))


def _header(ctx, user):
    """forum.inc's show_forum_header: search, and the reader's own links."""
    links = [link("forum_search.php", "Search"), link("forum_index.php", "Message boards"),
             link("forum_help_desk.php", "Questions and Answers")]
    if user is not None:
        links.append(link(url("forum_user_posts.php", userid=user.id), "Your posts"))
        links.append(link("edit_forum_preferences_form.php", "Community preferences"))
    return fmt('<p class="forumnav">{}</p>', join(links, " \u00b7 "))


def forum_index(ctx):
    return _boards(ctx, False, "Message boards")


def forum_help_desk(ctx):
    return _boards(ctx, True, "Questions and Answers")


# ---------------------------------------------------------------------------
# forum_forum.php

def forum_forum(ctx):
    forum_id = required_id(ctx, "id")
    user = ctx.logged_in_user()
    db = ctx.db
    _, _, forum, category, prefs = board(ctx, user, forum_id=forum_id)
    stored = prefs["forum_sorting"] if prefs else MODIFIED_NEW
    sort = _sort_arg(ctx, "sort", FORUM_SORTS, stored, "forum_sorting") or MODIFIED_NEW
    start = ctx.int_arg("start", 0, minimum=0, maximum=10 ** 7)
    moderator = is_moderator(prefs, forum)
    hidden_clause = "" if moderator else " AND hidden = 0"
    total = db.query_one("SELECT COUNT(*) AS n FROM thread WHERE forum = %s" + hidden_clause,
                         (forum_id,))["n"]
    sticky = "" if prefs and prefs["ignore_sticky_posts"] else "sticky DESC, "
    threads = db.query(
        "SELECT id, owner, title, timestamp, views, replies, hidden, sticky, locked, status "
        "FROM thread WHERE forum = %%s%s ORDER BY %s%s, id DESC LIMIT %%s, %%s"
        % (hidden_clause, sticky, FORUM_SORTS[sort][1]),
        (forum_id, start, THREADS_PER_PAGE))
    names = user_names(db, [t["owner"] for t in threads])
    read = {}
    if user is not None and threads:
        ids = [t["id"] for t in threads]
        read = {r["threadid"]: r["timestamp"] for r in db.query(
            "SELECT threadid, timestamp FROM forum_logging WHERE userid = %%s AND threadid "
            "IN (%s)" % ", ".join(["%s"] * len(ids)), [user.id] + ids)}
    rows = []
    for t in threads:
        unread = user is not None and t["timestamp"] > max(prefs["mark_as_read_timestamp"],
                                                           read.get(t["id"], 0))
        marks = [m for m, on in (("[new]", unread), ("[sticky]", t["sticky"]),
                                 ("[locked]", t["locked"]), ("[hidden]", t["hidden"])) if on]
        title = link(url("forum_thread.php", id=t["id"]), title_text(t["title"]))
        rows.append((fmt("{} {}", title, " ".join(marks)), num(max(t["replies"], 0) + 1),
                     user_link(t["owner"], names.get(t["owner"])), num(t["views"]),
                     time_diff(t["timestamp"], ctx.now)))
    parts = [_header(ctx, user), forum_title(category, forum)]
    actions = []
    if user is None:
        actions.append(fmt("To create a new thread, {}.", link(
            url("login_form.php", next_url=url("forum_forum.php", id=forum_id)), "log in")))
    elif not forum["is_dev_blog"] or is_admin(prefs):
        actions.append(link(url("forum_post.php", id=forum_id), "New thread"))
    actions.append(_sort_form("forum_forum.php", forum_id, FORUM_SORTS, sort))
    parts.append(fmt("<p>{}</p>", join(actions, " ")))
    parts.append(table(("Threads", "Posts", "Author", "Views", "Last post"), rows,
                       empty="No threads"))
    parts.append(paging("forum_forum.php", {"id": forum_id, "sort": sort}, start, len(threads),
                        total, THREADS_PER_PAGE))
    return render(ctx, forum["title"], join(parts))


# ---------------------------------------------------------------------------
# forum_thread.php

def post_rows_of(db, posts):
    """The authors (user rows and forum preferences), rating sums of posts,
    and a cache of the authors' columns show_post fills."""
    ids = sorted({p["user"] for p in posts})
    users, fprefs, ratings = {}, {}, {}
    if ids:
        marks = ", ".join(["%s"] * len(ids))
        users = {r["id"]: r for r in db.query(
            "SELECT id, name, total_credit, expavg_credit, create_time, country FROM user "
            "WHERE id IN (%s)" % marks, ids)}
        fprefs = {r["userid"]: r for r in db.query(
            "SELECT userid, posts, signature, avatar, special_user FROM forum_preferences "
            "WHERE userid IN (%s)" % marks, ids)}
    pids = [p["id"] for p in posts]
    if pids:
        ratings = {r["post"]: (int(r["score"]), int(r["votes"])) for r in db.query(
            "SELECT post, SUM(rating) AS score, COUNT(*) AS votes FROM post_ratings "
            "WHERE post IN (%s) GROUP BY post" % ", ".join(["%s"] * len(pids)), pids)}
    return users, fprefs, ratings, {}


def _author_column(user_id, author, ap, rprefs):
    """The left column of a post: name, special flags, avatar, counts."""
    left = [user_link(user_id, author["name"] if author else None)]
    if author is not None:
        specials = [SPECIAL_NAMES[i] for i in range(len(SPECIAL_NAMES))
                    if (ap.get("special_user") or "")[i:i + 1] == "1"]
        if specials:
            left.append(fmt('<span class="small">{}</span>', ", ".join(specials)))
        avatar = ap.get("avatar") or ""
        if avatar and _AVATAR.match(avatar) and not (rprefs and rprefs["hide_avatars"]):
            left.append(fmt('<img src="{}" alt="avatar" width="100" height="100">', avatar))
        left.append(fmt('<span class="small">Joined: {}<br>Posts: {}<br>Credit: {}<br>'
                        'RAC: {}</span>', time.strftime("%d %b %y", time.gmtime(
                            author["create_time"] or 0)), num(ap.get("posts") or 0),
                        num(int(author["total_credit"])), num(int(author["expavg_credit"]))))
    return join(left, Markup("<br>"))


def show_post(ctx, post, thread, forum, category, unread_since, reader, rprefs, authors,
              links=True, filtered=True):
    """One post as forum.inc's show_post: the author's column and the message
    (marked new if posted after ``unread_since``, unless that is None)."""
    users, fprefs, ratings = authors[:3]
    author = users.get(post["user"])
    ap = fprefs.get(post["user"]) or {}
    moderator = is_moderator(rprefs, forum)
    if filtered and reader is not None and post["user"] in rprefs["ignored"] and not moderator:
        return fmt('<tr id="{}"><td>{}</td><td class="muted">This post is hidden because '
                   'the sender is on your \'ignore\' list. {} &middot; {}</td></tr>',
                   post["id"], user_link(post["user"], author["name"] if author else None),
                   link(url("forum_thread.php", id=thread["id"], filter="false",
                            postid=post["id"]) + "#%d" % post["id"], "Show it anyway"),
                   link(url("edit_forum_preferences_form.php"), "Change your ignore list"))
    columns = authors[3]
    if post["user"] not in columns:
        columns[post["user"]] = _author_column(post["user"], author, ap, rprefs)
    left = columns[post["user"]]
    head = [fmt('Message {} - Posted: {}', link(url("forum_thread.php", id=thread["id"],
                                                    postid=post["id"]) + "#%d" % post["id"],
                                                post["id"]),
                time_str(post["timestamp"]))]
    if post["modified"]:
        head.append(fmt("Last modified: {}", time_str(post["modified"])))
    if post["parent_post"]:
        head.append(fmt("in response to {}", link(url(
            "forum_thread.php", id=thread["id"], postid=post["parent_post"])
            + "#%d" % post["parent_post"], "message %d" % post["parent_post"])))
    if post["hidden"]:
        head.append(Markup("<b>[hidden by a moderator]</b>"))
    if unread_since is not None and post["timestamp"] > unread_since:
        head.append(Markup('<b class="unread">[new]</b>'))
    score, votes = ratings.get(post["id"], (0, 0))
    if votes:
        head.append(fmt("Rating: {:+d} ({} votes)", score, votes))
    actions = []
    if links and reader is not None:
        if not thread["locked"] or moderator:
            actions.append(link(url("forum_reply.php", thread=thread["id"], post=post["id"])
                                + "#input", "Reply"))
            actions.append(link(url("forum_reply.php", thread=thread["id"], post=post["id"],
                                    no_quote=1) + "#input", "Reply without quote"))
        if post["user"] == reader.id and (
                moderator or ctx.now <= post["timestamp"] + ctx.cfg.forum_max_edit_time):
            actions.append(link(url("forum_edit.php", id=post["id"]), "Edit"))
        if not ctx.cfg.no_forum_rating and post["user"] != reader.id:
            helpdesk = category is not None and category["is_helpdesk"]
            actions.append(rate_form(ctx, post["id"], SOLUTION if helpdesk else "+",
                                     OFF_TOPIC if helpdesk else "-"))
        if post["user"] != reader.id:
            actions.append(link(url("forum_report_post.php", post=post["id"]), "Report"))
        if moderator:
            actions.append(moderation.moderation_links(ctx, reader, post, forum))
    content = bbcode.render(post["content"], images=not (rprefs and rprefs["images_as_links"]))
    sig = Markup("")
    if post["signature"] and ap.get("signature") and not (rprefs and rprefs["hide_signatures"]):
        sig = fmt('<hr class="sig"><div class="signature">{}</div>',
                  bbcode.render(ap["signature"], images=False))
    return fmt('<tr id="{}"><td>{}</td><td><div class="small muted">{}</div>'
               '<div class="post">{}</div>{}<div class="small">{}</div></td></tr>',
               post["id"], left, join(head, " \u00b7 "), content, sig,
               join(actions, " "))


def rate_form(ctx, post_id, positive, negative):
    """The buttons rating a post (forum_rate.php, choice p or n, with the form
    token, made once a page)."""
    field = getattr(ctx, "_rate_token", None)
    if field is None:
        field = ctx._rate_token = ctx.token_field("forum_rate.php")
    return fmt('<form class="inline" method="post" action="forum_rate.php?post={}">{}'
               '<button type="submit" name="choice" value="p">{}</button> <button type="submit" '
               'name="choice" value="n">{}</button></form>', post_id, field, positive, negative)


def subscribe_form(ctx, thread_id, subscribed):
    action = "unsubscribe" if subscribed else "subscribe"
    return fmt('<form class="inline" method="post" action="forum_subscribe.php">{}{}{}'
               '<button type="submit" id="{}">{}</button></form>',
               ctx.token_field("forum_subscribe.php"), hidden("thread", thread_id),
               hidden("action", action), action, action.capitalize())


def forum_thread(ctx):
    thread_id = required_id(ctx, "id")
    db = ctx.db
    user = ctx.logged_in_user()
    _, thread, forum, category, prefs = board(ctx, user, thread_id=thread_id)
    moderator = is_moderator(prefs, forum)
    if thread["hidden"] and not moderator:
        raise PageError("This thread has been hidden by moderators.", "404 Not Found",
                        "Hidden")
    stored = prefs["thread_sorting"] if prefs else CREATE_TIME_OLD
    sort = _sort_arg(ctx, "sort", THREAD_SORTS, stored, "thread_sorting") or CREATE_TIME_OLD
    if forum["is_dev_blog"] and not moderator:
        sort = CREATE_TIME_OLD
    per_page = 20
    if prefs and prefs["display_wrap_postcount"] > 0:
        per_page = min(int(prefs["display_wrap_postcount"]), 500)
    hidden_clause = "" if moderator else " AND hidden = 0"
    total = db.query_one("SELECT COUNT(*) AS n FROM post WHERE thread = %s" + hidden_clause,
                         (thread_id,))["n"]
    start = ctx.int_arg("start", None, minimum=0, maximum=10 ** 7)
    postid = ctx.int_arg("postid", None, minimum=1, maximum=ID_MAX)
    read_mark = None
    if user is not None:
        # thread_is_unread: newer than the reader's "mark all read" and last visit
        log = db.query_one("SELECT timestamp FROM forum_logging WHERE userid = %s AND "
                           "threadid = %s", (user.id, thread_id))
        read_mark = max(prefs["mark_as_read_timestamp"], log["timestamp"] if log else 0)
        if (start is None and postid is None and prefs["jump_to_unread"] and read_mark
                and sort == CREATE_TIME_OLD and thread["timestamp"] > read_mark):
            first = db.query_one("SELECT id FROM post WHERE thread = %%s%s AND timestamp > %%s "
                                 "ORDER BY timestamp, id LIMIT 1" % hidden_clause,
                                 (thread_id, read_mark))
            postid = first["id"] if first else None
    if start is None and postid and sort != POST_SCORE:
        target = db.query_one("SELECT timestamp, id FROM post WHERE id = %s AND thread = %s",
                              (postid, thread_id))
        if target is not None:
            op = "<" if sort == CREATE_TIME_OLD else ">"
            before = db.query_one(
                "SELECT COUNT(*) AS n FROM post WHERE thread = %%s%s AND (timestamp %s %%s OR "
                "(timestamp = %%s AND id %s %%s))" % (hidden_clause, op, op),
                (thread_id, target["timestamp"], target["timestamp"], target["id"]))["n"]
            start = before - before % per_page
    start = start or 0
    posts = db.query("SELECT * FROM post WHERE thread = %%s%s ORDER BY %s LIMIT %%s, %%s"
                     % (hidden_clause, THREAD_SORTS[sort][1]), (thread_id, start, per_page))
    authors = post_rows_of(db, posts)
    parts = [_header(ctx, user), forum_title(category, forum, thread)]
    actions = []
    if user is None:
        actions.append(fmt("To post messages, you must {}.", link(
            url("login_form.php", next_url=url("forum_thread.php", id=thread_id)), "log in")))
    else:
        if not thread["locked"] or moderator:
            actions.append(link(url("forum_reply.php", thread=thread_id) + "#input",
                                "Post to thread"))
        subscribed = db.query_one("SELECT userid FROM subscriptions WHERE userid = %s AND "
                                  "threadid = %s", (user.id, thread_id)) is not None
        if subscribed:
            mdb.delete_notify(db, user.id, mdb.NOTIFY_SUBSCRIBED_THREAD, thread_id)
        actions.append(subscribe_form(ctx, thread_id, subscribed))
        if moderator:
            actions.append(moderation.thread_moderation_links(ctx, user, thread, forum))
    if thread["locked"]:
        parts.append(notice("warn", "This thread is locked: it takes no new posts."))
    actions.append(_sort_form("forum_thread.php", thread_id, THREAD_SORTS, sort))
    parts.append(fmt("<p>{}</p>", join(actions, " ")))
    nav = paging("forum_thread.php", {"id": thread_id, "sort": sort}, start, len(posts), total,
                 per_page)
    parts.append(nav)
    filtered = ctx.req.get("filter") != "false"      # BOINC's filter=false: ignored posts too
    rows = [show_post(ctx, p, thread, forum, category, read_mark, user, prefs, authors,
                      filtered=filtered) for p in posts]
    parts.append(fmt('<table class="posts"><thead><tr><th>Author</th><th>Message</th></tr>'
                     '</thead><tbody>{}</tbody></table>', join(rows)))
    parts.append(nav)
    fdb.add_view(db, thread_id)
    if user is not None:
        fdb.mark_thread_read(db, user.id, thread_id, ctx.now)
    return render(ctx, "Thread '%s'" % title_text(thread["title"]), join(parts))


# ---------------------------------------------------------------------------
# forum_user_posts.php

def forum_user_posts(ctx):
    userid = required_id(ctx, "userid")
    db = ctx.rdb
    user = ctx.logged_in_user()
    owner = db.query_one("SELECT id, name FROM user WHERE id = %s", (userid,))
    if owner is None:
        raise PageError("No such user", "404 Not Found", "Not found")
    start = ctx.int_arg("start", 0, minimum=0, maximum=10 ** 7)
    total = db.query_one("SELECT COUNT(*) AS n FROM post WHERE user = %s AND hidden = 0",
                         (userid,))["n"]
    posts = db.query("SELECT * FROM post WHERE user = %s AND hidden = 0 "
                     "ORDER BY id DESC LIMIT %s, %s", (userid, start, USER_POSTS_PER_PAGE))
    tids = sorted({p["thread"] for p in posts})
    threads = {}
    if tids:
        threads = {t["id"]: t for t in db.query(
            "SELECT t.*, f.parent_type, f.category AS fcat, f.is_dev_blog FROM thread t "
            "JOIN forum f ON f.id = t.forum WHERE t.id IN (%s)"
            % ", ".join(["%s"] * len(tids)), tids)}
    rprefs = prefs_of(ctx.db, user.id) if user else None
    rows = []
    for p in posts:
        t = threads.get(p["thread"])
        if t is None or t["hidden"]:
            continue
        if t["parent_type"] == 1 and ctx.cfg.team_forums_members_only and (
                user is None or user.teamid != t["fcat"]):
            continue
        rows.append(fmt('<tr><td>{}<br><span class="small muted">{}</span></td><td>{}</td>'
                        '</tr>', link(url("forum_thread.php", id=t["id"], postid=p["id"])
                                      + "#%d" % p["id"], title_text(t["title"])),
                        time_str(p["timestamp"]),
                        bbcode.render(p["content"], images=not (
                            rprefs and rprefs["images_as_links"]))))
    parts = [_header(ctx, user), fmt('<table class="posts"><thead><tr><th>Thread</th>'
                                     '<th>Message</th></tr></thead><tbody>{}</tbody></table>',
                                     join(rows) if rows else Markup(
                                         '<tr><td colspan="2">No posts</td></tr>')),
             paging("forum_user_posts.php", {"userid": userid}, start, len(posts), total,
                    USER_POSTS_PER_PAGE)]
    return render(ctx, "Posts by %s" % owner["name"], join(parts))


# ---------------------------------------------------------------------------
# forum_search.php, forum_search_action.php

SEARCH_TIMES = ((1, "last day"), (7, "last week"), (30, "last month"), (90, "last 3 months"),
                (180, "last 6 months"), (360, "last year"), (0, "all time"))
SEARCH_SORTS = ((MODIFIED_NEW, "Newest post first"), (CREATE_TIME_NEW, "Newest first"),
                (VIEWS_MOST, "Most read first"), (REPLIES_MOST, "Most posts first"))


def forum_search(ctx):
    user = ctx.logged_in_user()
    db = ctx.rdb
    forums = db.query("SELECT f.id, f.title FROM forum f JOIN category c ON c.id = f.category "
                      "WHERE f.parent_type = 0 ORDER BY c.orderID, f.orderID, f.id")
    form = fmt(
        '<form class="filters" method="post" action="forum_search_action.php">'
        '<label for="search_keywords">Search words (at least 4 letters each)</label><div>{}</div>'
        '<label for="search_author">Written by (user ID)</label><div>{}</div>'
        '<label for="search_max_time">Search posts from the</label><div>{}</div>'
        '<label for="search_forum">Search in forum</label><div>{}</div>'
        '<label for="search_sort">Sort by</label><div>{}</div>'
        '<span></span><div><button type="submit" id="search">Search</button></div></form>',
        Markup('<input type="text" name="search_keywords" id="search_keywords" size="40">'),
        Markup('<input type="text" name="search_author" id="search_author" size="10">'),
        select("search_max_time", SEARCH_TIMES, 30),
        select("search_forum", [(-1, "All forums")] + [(f["id"], f["title"]) for f in forums],
               -1),
        select("search_sort", SEARCH_SORTS, MODIFIED_NEW))
    return render(ctx, "Message board search", join([_header(ctx, user), form]))


def forum_search_action(ctx):
    """Threads whose titles match, then posts whose text matches (FULLTEXT,
    natural language; SEARCH_LIMIT each), in visible threads of visible forums."""
    user = ctx.logged_in_user()
    db = ctx.rdb
    words = (ctx.req.post("search_keywords") or ctx.req.get("search_keywords")).strip()[:200]
    posted = ctx.req.method == "POST"         # the form's POST, or a link's GET
    author = ctx.int_arg("search_author", 0, posted, 0, ID_MAX)
    max_days = ctx.int_arg("search_max_time", 0, posted, 0, 100000)
    forum_id = ctx.int_arg("search_forum", -1, posted, -1, ID_MAX)
    sort = ctx.int_arg("search_sort", MODIFIED_NEW, posted, -ID_MAX, ID_MAX)
    if not words and not author:
        raise PageError("Give search words (search_keywords) or an author (search_author).")
    since = ctx.now - max_days * 86400 if max_days > 0 else 0
    order = dict((k, v[1]) for k, v in FORUM_SORTS.items()).get(sort, "timestamp DESC")
    def conditions(table, author_column):
        """The search's filters on threads (t) or posts (p) of visible forums."""
        where = ["t.hidden = 0", "f.parent_type = 0", "%s.hidden = 0" % table,
                 "%s.timestamp >= %%s" % table]
        params = [since]
        for column, value in (("t.forum", forum_id if forum_id > 0 else 0),
                              (author_column, author)):
            if value:
                where.append("%s = %%s" % column)
                params.append(value)
        return " AND ".join(where), params
    threads = []
    if words:
        where, params = conditions("t", "t.owner")
        threads = db.query(
            "SELECT t.* FROM thread t JOIN forum f ON f.id = t.forum WHERE "
            "MATCH (t.title) AGAINST (%%s) AND %s ORDER BY t.%s LIMIT %d"
            % (where, order, SEARCH_LIMIT), [words] + params)
    where, params = conditions("p", "p.user")
    match = "MATCH (p.content) AGAINST (%s) AND " if words else ""
    posts = db.query(
        "SELECT p.*, t.title FROM post p JOIN thread t ON t.id = p.thread JOIN forum f ON "
        "f.id = t.forum WHERE %s%s ORDER BY p.timestamp DESC LIMIT %d"
        % (match, where, SEARCH_LIMIT), ([words] if words else []) + params)
    names = user_names(db, [t["owner"] for t in threads] + [p["user"] for p in posts])
    parts = [_header(ctx, user)]
    if words:
        parts.append(fmt("<h2>Thread titles matching '{}'</h2>", words))
        parts.append(table(("Thread", "Posts", "Author", "Views", "Last post"), [
            (link(url("forum_thread.php", id=t["id"]), title_text(t["title"])),
             num(max(t["replies"], 0) + 1), user_link(t["owner"], names.get(t["owner"])),
             num(t["views"]), time_diff(t["timestamp"], ctx.now)) for t in threads],
            empty="No thread found"))
    parts.append(fmt("<h2>Messages matching '{}'</h2>", words or "(any)"))
    parts.append(table(("Thread", "Author", "Posted", "Message"), [
        (link(url("forum_thread.php", id=p["thread"], postid=p["id"]) + "#%d" % p["id"],
              title_text(p["title"])), user_link(p["user"], names.get(p["user"])),
         time_str(p["timestamp"]), bbcode.summary(p["content"], EXCERPT_LENGTH)) for p in posts],
        empty="No message found"))
    if len(posts) >= SEARCH_LIMIT or len(threads) >= SEARCH_LIMIT:
        parts.append(notice("warn", "Only the first %d matches are shown; narrow the search."
                            % SEARCH_LIMIT))
    return render(ctx, "Message board search results", join(parts))


PAGES = {
    "forum_index.php": forum_index,
    "forum_help_desk.php": forum_help_desk,
    "forum_forum.php": forum_forum,
    "forum_thread.php": forum_thread,
    "forum_user_posts.php": forum_user_posts,
    "forum_search.php": forum_search,
    "forum_search_action.php": forum_search_action,
}
