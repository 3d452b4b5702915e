"""The message boards, write side (BOINC's html/user/forum_post.php,
forum_reply.php, forum_edit.php, forum_subscribe.php, forum_rate.php and
edit_forum_preferences_form/action.php); the read side and the shared rules
are :mod:`boincpy.web.user.forum`.

==================================  ==========================================
``forum_post.php?id=FORUM``         a new thread (title, content, add_signature,
                                    subscribe; ``preview``)
``forum_reply.php?thread=N``        a reply; ``&post=M`` quotes post M as BOINC's
                                    quote_text does (``no_quote=1``: not)
``forum_edit.php?id=POST``          the author edits within forum_max_edit_time
                                    (moderators any time); the thread's first
                                    post also edits the title
``forum_subscribe.php``             POST ``action`` subscribe/unsubscribe,
                                    ``thread``
``forum_rate.php?post=N``           POST ``choice`` p or n (help desk: "This
                                    answered my question" / "Off-topic")
``edit_forum_preferences_*.php``    forum_preferences: signature, sort orders,
                                    images, avatars and signatures shown, the
                                    ignore list, pm_notification
==================================  ==========================================

Posting follows forum.inc's check_post_access and check_reply_access: banned
users (banished_until) can't post or rate, locked threads take replies only
from moderators, the News forum (is_dev_blog) only from admins, a team's
forum only from its members; the forum's post_min_total_credit,
post_min_expavg_credit and post_min_interval (from forum_preferences.
last_post) and the project's forum_need_credit_to_post and
forum_post_max_links apply.  A new post notifies the thread's subscribers
(a notify row of type NOTIFY_SUBSCRIBED_THREAD; e-mail too if their
pm_notification is 1 and user.send_email), a new thread the forum's
(subscriptions.threadid = -forum id), as forum.inc's create_post/
create_thread.  Every change is a POST with the account's form token.
"""

import re
import sys
import time

from boincpy import mail
from boincpy.db import forum as fdb
from boincpy.db import messages as mdb
from boincpy.db.user import count_forum_post, set_forum_pref
from boincpy.web import accounts, bbcode
from boincpy.web.markup import Markup, fmt, join, link, url
from boincpy.web.page import PageError, Redirect, checkbox, render, select
from boincpy.web.user.common import ID_MAX, is_moderator, required_id, time_str
from boincpy.web.user.forum import (FORUM_SORTS, OFF_TOPIC, SOLUTION, THREAD_SORTS, board,
                                    forum_title, get_row, is_admin, prefs_of, privilege,
                                    S_MODERATOR, show_post, post_rows_of, title_text)

TITLE_MAX = 254                  # thread.title varchar(254)
SIGNATURE_MAX = 250              # edit_forum_preferences_action.php
IGNORELIST_MAX = 254             # forum_preferences.ignorelist varchar(254)
_TAGS = re.compile(r"<[^>]*>")


def _forbidden(message, title="Not allowed"):
    return PageError(message, "403 Forbidden", title)


def check_banished(prefs, now):
    if prefs["banished_until"] > now:
        raise _forbidden("You may not post or rate messages until %s."
                         % time.strftime("%b %d, %Y", time.gmtime(prefs["banished_until"])),
                         "Banished")


def check_post_access(ctx, user, prefs, forum, category):
    """forum.inc's check_post_access (a PageError when refused)."""
    check_banished(prefs, ctx.now)
    if is_admin(prefs):
        return
    if forum["is_dev_blog"]:
        raise _forbidden("Can't post to News")
    if forum["parent_type"] == 0:
        if privilege(prefs, S_MODERATOR):
            return
    elif user.teamid != forum["category"]:
        raise _forbidden("Only team members can post to the team message board")
    no_credit = _forbidden("To create a thread you must have computing credit.")
    if (user.total_credit < forum["post_min_total_credit"]
            or user.expavg_credit < forum["post_min_expavg_credit"]):
        raise no_credit
    if ctx.cfg.forum_need_credit_to_post and user.total_credit == 0 and not (
            category is not None and category["is_helpdesk"]):
        raise no_credit
    if ctx.now - prefs["last_post"] < forum["post_min_interval"]:
        raise _forbidden("You can't create a thread right now. Please try again later.")


def check_reply_access(ctx, user, prefs, forum, category, thread):
    if thread["locked"] and not is_moderator(prefs, forum):
        raise _forbidden("This thread is locked.", "Thread locked")
    if thread["hidden"]:
        raise _forbidden("Can't post to a hidden thread.")
    check_post_access(ctx, user, prefs, forum, category)


def _check_links(ctx, prefs, forum, content):
    limit = ctx.cfg.forum_post_max_links
    if limit and content.lower().count("[url") > limit and not is_moderator(prefs, forum):
        raise PageError("Too many links: a post may hold at most %d." % limit)


def clean_title(text):
    """create_thread's title: trimmed, tags stripped (sanitize_tags), cut to fit."""
    return _TAGS.sub("", text or "").strip()[:TITLE_MAX]


def _content(ctx):
    text = ctx.req.post("content")
    if len(text.encode("utf-8", "surrogatepass")) > fdb.MAX_POST_CONTENT * 4:
        raise PageError("content: the message is too long (at most %d characters)."
                        % fdb.MAX_POST_CONTENT)
    return text


# ---------------------------------------------------------------------------
# notifications (forum.inc's notify_thread_subscribers / notify_forum_subscribers)

def _site(cfg):
    return cfg.secure_url_base or cfg.master_url


def notify_subscribers(ctx, key, poster_id, notify_type, opaque, subject, text):
    """A notify row for each subscriber of ``key`` (a thread id, or -forum id)
    but the poster; those with pm_notification 1 (and send_email) get an
    e-mail.  Returns the users notified."""
    db = ctx.db
    rows = db.query(
        "SELECT u.id, u.name, u.email_addr, u.send_email, fp.pm_notification FROM "
        "subscriptions s JOIN user u ON u.id = s.userid LEFT JOIN forum_preferences fp ON "
        "fp.userid = u.id WHERE s.threadid = %s AND s.userid <> %s", (key, poster_id))
    for r in rows:
        mdb.insert_notify(db, r["id"], ctx.now, notify_type, opaque)
    cfg = ctx.cfg
    for r in rows:
        if r["pm_notification"] != 1 or not r["send_email"] or not r["email_addr"] \
                or not mail.configured(cfg):
            continue
        body = ("%s\n\n%s\n\n--------------------------\nTo unsubscribe or change e-mail "
                "preferences, visit:\n%sedit_forum_preferences_form.php\n\nDo not reply to "
                "this message.\n" % (text, _site(cfg) + url_of(notify_type, opaque), _site(cfg)))
        try:
            mail.send(cfg, r["email_addr"], "[%s] %s" % (cfg.long_name, subject), body,
                      r["name"])
        except mail.MailError as exc:
            sys.stderr.write("forum notification to user %d not sent: %s\n"
                             % (r["id"], exc.message))
    return [r["id"] for r in rows]


def url_of(notify_type, opaque):
    if notify_type == mdb.NOTIFY_SUBSCRIBED_FORUM:
        return url("forum_forum.php", id=opaque)
    return url("forum_thread.php", id=opaque)


# ---------------------------------------------------------------------------
# forum_post.php

def _message_form(ctx, action, page, fields, content, signature_on, subscribe_label,
                  extra=Markup(""), button="Post"):
    return fmt(
        '<form method="post" action="{}" id="input">{}{}'
        '<p><label for="content">Message</label> <span class="small muted">(BBCode: [b], '
        '[i], [url=...], [quote], [code], [list], [img])</span><br>'
        '<textarea name="content" id="content" rows="14" cols="80">{}</textarea></p>{}'
        '<p><button type="submit" name="preview" value="Preview">Preview</button> '
        '<button type="submit" id="post" name="submit" value="1">{}</button> '
        '<label><input type="checkbox" name="add_signature" value="1"{}> Add my signature '
        'to this post</label> <label><input type="checkbox" name="subscribe" id="subscribe" '
        'value="1"> {}</label></p></form>',
        action, ctx.token_field(page), fields, content, extra, button,
        Markup(" checked") if signature_on else Markup(""), subscribe_label)


def forum_post(ctx):
    forum_id = required_id(ctx, "id")
    user = ctx.require_login()
    db = ctx.db
    _, _, forum, category, prefs = board(ctx, user, forum_id=forum_id)
    check_post_access(ctx, user, prefs, forum, category)
    req = ctx.req
    title = req.post("title") or req.get("title")
    content = _content(ctx) if req.method == "POST" else ""
    preview = req.post("preview")
    parts = [forum_title(category, forum)]
    if req.method == "POST" and not preview:
        ctx.require_action()
        if not clean_title(title):
            raise PageError("title: give the new thread a title.")
        if not content.strip():
            raise PageError("content: the message is empty.")
        _check_links(ctx, prefs, forum, content)
        news = forum["is_dev_blog"] and forum["title"] == fdb.NEWS_FORUM
        with db.transaction():
            thread_id = fdb.insert_thread(db, forum_id, user.id, clean_title(title), content,
                                          ctx.now, status=1 if news and not req.post("export")
                                          else 0, signature=bool(req.post("add_signature")))
            count_forum_post(db, user.id, ctx.now)
            if req.post("subscribe"):
                fdb.subscribe(db, user.id, thread_id)
        notify_subscribers(ctx, -forum_id, user.id, mdb.NOTIFY_SUBSCRIBED_FORUM, forum_id,
                           "new thread in subscribed forum",
                           "There are new threads in the forum '%s'" % forum["title"])
        raise Redirect(url("forum_thread.php", id=thread_id))
    if preview:
        parts.append(fmt('<div class="notice ok"><b>Preview</b>: {}<div>{}</div></div>',
                         clean_title(title), bbcode.render(content)))
    fields = fmt('<p><label for="title">Title</label><br><input type="text" name="title" '
                 'id="title" size="80" maxlength="{}" value="{}"></p>', TITLE_MAX, title)
    extra = Markup("")
    if forum["is_dev_blog"] and forum["title"] == fdb.NEWS_FORUM:
        extra = fmt('<p><label>{} Show this item as a Notice in the BOINC Manager</label> '
                    '<span class="small muted">(only for items likely to be of interest to '
                    'all volunteers)</span></p>', checkbox("export", req.post("export")))
    parts.append(_message_form(ctx, url("forum_post.php", id=forum_id), "forum_post.php", fields,
                               content, not prefs["no_signature_by_default"],
                               "Subscribe to the new thread", extra, button="OK"))
    return render(ctx, "Create new thread", join(parts))


# ---------------------------------------------------------------------------
# forum_reply.php

def quote_text(db, post):
    """forum_reply.php's quote_text: In reply to NAME's message of DATE: [quote]...[/quote]."""
    row = db.query_one("SELECT name FROM user WHERE id = %s", (post["user"],))
    return "In reply to %s's message of %s:\n[quote]%s[/quote]\n" % (
        row["name"] if row else "unknown user", time_str(post["timestamp"]), post["content"])


def forum_reply(ctx):
    thread_id = required_id(ctx, "thread")
    user = ctx.require_login()
    db = ctx.db
    _, thread, forum, category, prefs = board(ctx, user, thread_id=thread_id)
    parent_id = ctx.int_arg("post", 0, minimum=0, maximum=ID_MAX)
    parent = None
    if parent_id:
        parent = get_row(db, "post", parent_id)
        if parent["thread"] != thread_id:
            raise PageError("post: that post is in another thread.")
        if parent["hidden"] and not is_moderator(prefs, forum):
            raise PageError("No such post", "404 Not Found", "Not found")
    check_reply_access(ctx, user, prefs, forum, category, thread)
    req = ctx.req
    content = _content(ctx) if req.method == "POST" else ""
    preview = req.post("preview")
    if req.method == "POST" and not preview:
        ctx.require_action()
        if not content.strip():
            raise PageError("content: the message is empty.")
        _check_links(ctx, prefs, forum, content)
        with db.transaction():
            post_id = fdb.insert_post(db, thread_id, forum["id"], user.id, content, ctx.now,
                                      parent_post=parent_id,
                                      signature=bool(req.post("add_signature")))
            count_forum_post(db, user.id, ctx.now)
            if req.post("subscribe"):
                fdb.subscribe(db, user.id, thread_id)
        notify_subscribers(ctx, thread_id, user.id, mdb.NOTIFY_SUBSCRIBED_THREAD, thread_id,
                           "new post in subscribed thread",
                           "There are new posts in the thread '%s'" % thread["title"])
        raise Redirect(url("forum_thread.php", id=thread_id, postid=post_id))
    parts = [forum_title(category, forum, thread, link_thread=True)]
    if parent is not None:
        parts.append(fmt('<h2>Replying to message {}</h2>', parent["id"]))
    if preview:
        parts.append(fmt('<div class="notice ok"><b>Preview</b><div>{}</div></div>',
                         bbcode.render(content)))
    elif parent is not None and ctx.int_arg("no_quote", 0, minimum=0, maximum=1) != 1:
        content = quote_text(db, parent)
    parts.append(_message_form(ctx, url("forum_reply.php", thread=thread_id,
                                        post=parent_id or None), "forum_reply.php",
                               Markup(""), content, not prefs["no_signature_by_default"],
                               "Subscribe to this thread"))
    shown = [parent] if parent is not None else db.query(
        "SELECT * FROM post WHERE thread = %s AND hidden = 0 ORDER BY timestamp DESC, id DESC "
        "LIMIT 20", (thread_id,))
    authors = post_rows_of(db, shown)
    parts.append(fmt('<table class="posts"><tbody>{}</tbody></table>', join(
        show_post(ctx, p, thread, forum, category, None, user, prefs, authors, links=False)
        for p in shown)))
    return render(ctx, "Post to thread '%s'" % title_text(thread["title"]), join(parts))


# ---------------------------------------------------------------------------
# forum_edit.php

def forum_edit(ctx):
    post_id = required_id(ctx, "id")
    user = ctx.require_login()
    db = ctx.db
    post, thread, forum, category, prefs = board(ctx, user, post_id=post_id)
    moderator = is_moderator(prefs, forum)
    limit = ctx.cfg.forum_max_edit_time
    if not moderator and ctx.now > post["timestamp"] + limit:
        raise _forbidden("You can no longer edit this post. Posts can only be edited at most "
                         "%d minutes after they have been created." % (limit // 60),
                         "Too late to edit")
    if post["user"] != user.id or (thread["locked"] and not moderator):
        raise _forbidden("You are not authorized to edit this post.")
    first = db.query_one("SELECT MIN(id) AS id FROM post WHERE thread = %s",
                         (thread["id"],))["id"]
    can_edit_title = (post_id == first and thread["owner"] == user.id
                      and prefs["banished_until"] <= ctx.now)
    req = ctx.req
    preview = req.post("preview")
    content = _content(ctx) if req.method == "POST" else post["content"]
    title = req.post("title") if req.method == "POST" else thread["title"]
    if req.method == "POST" and not preview:
        ctx.require_action()
        content = content.strip()
        if not content:
            raise PageError("content: the message is empty (a moderator can hide a post).")
        _check_links(ctx, prefs, forum, content)
        if can_edit_title and not clean_title(title):
            raise PageError("title: the thread needs a title.")
        with db.transaction():
            fdb.edit_post(db, post_id, content, ctx.now)
            fdb.set_post_signature(db, post_id, req.post("add_signature") == "1")
            if can_edit_title:
                fdb.set_thread_title(db, thread["id"], clean_title(title))
        raise Redirect(url("forum_thread.php", id=thread["id"], postid=post_id))
    parts = [forum_title(category, forum, thread, link_thread=True)]
    if preview:
        parts.append(fmt('<div class="notice ok"><b>Preview</b><div>{}</div></div>',
                         bbcode.render(content)))
    fields = Markup("")
    if can_edit_title:
        fields = fmt('<p><label for="title">Title</label><br><input type="text" name="title" '
                     'id="title" size="80" maxlength="{}" value="{}"></p>', TITLE_MAX, title)
    parts.append(fmt(
        '<form method="post" action="{}">{}{}<p><textarea name="content" id="content" '
        'rows="14" cols="80">{}</textarea></p><p><label>{} Add my signature to this post'
        '</label></p><p><button type="submit" name="preview" value="Preview">Preview</button> '
        '<button type="submit" id="post" name="submit" value="1">OK</button></p></form>',
        url("forum_edit.php", id=post_id), ctx.token_field("forum_edit.php"), fields, content,
        checkbox("add_signature", post["signature"])))
    return render(ctx, "Edit post", join(parts))


# ---------------------------------------------------------------------------
# forum_subscribe.php, forum_rate.php

def forum_subscribe(ctx):
    user = ctx.require_action()
    action = ctx.req.post("action")
    if action not in ("subscribe", "unsubscribe"):
        raise PageError("action: subscribe or unsubscribe")
    thread_id = required_id(ctx, "thread", post=True)
    db = ctx.db
    _, thread, forum, _, prefs = board(ctx, user, thread_id=thread_id)
    if thread["hidden"] and not is_moderator(prefs, forum):
        raise PageError("No such thread", "404 Not Found", "Not found")
    if action == "subscribe":
        fdb.subscribe(db, user.id, thread_id)
        text = ("You are now subscribed to {}. You will be notified whenever there is a new "
                "post.")
        title = "Subscription successful"
    else:
        with db.transaction():
            fdb.unsubscribe(db, user.id, thread_id)
            mdb.delete_notify(db, user.id, mdb.NOTIFY_SUBSCRIBED_THREAD, thread_id)
        text = ("You are no longer subscribed to {}. You will no longer receive notifications "
                "for this thread.")
        title = "Unsubscription successful"
    body = fmt("<p>" + text + "</p><p>{}</p>", Markup(fmt("<b>{}</b>", title_text(
        thread["title"]))), link(url("forum_thread.php", id=thread_id), "Return to thread"))
    return render(ctx, title, body)


def forum_rate(ctx):
    if ctx.cfg.no_forum_rating:
        raise _forbidden("Rating posts is disabled on this project.")
    post_id = required_id(ctx, "post")
    user = ctx.require_action()
    choice = ctx.req.post("choice") or ctx.req.post("submit")
    if choice in ("p", SOLUTION):
        rating = 1
    elif choice in ("n", OFF_TOPIC):
        rating = -1
    else:
        raise PageError("choice: p (positive) or n (negative)")
    db = ctx.db
    post, thread, forum, _, prefs = board(ctx, user, post_id=post_id)
    check_banished(prefs, ctx.now)
    if (post["hidden"] or thread["hidden"]) and not is_moderator(prefs, forum):
        raise PageError("No such post", "404 Not Found", "Not found")
    if (user.total_credit < forum["rate_min_total_credit"]
            or user.expavg_credit < forum["rate_min_expavg_credit"]):
        raise _forbidden("You need more average or total credit to rate a post.")
    back = link(url("forum_thread.php", id=thread["id"], postid=post_id) + "#%d" % post_id,
                "Return to thread")
    if db.query_one("SELECT rating FROM post_ratings WHERE post = %s AND user = %s",
                    (post_id, user.id)):
        raise PageError(fmt("You have already rated this post. {}", back), "409 Conflict",
                        "Already rated")
    fdb.rate_post(db, user.id, post_id, rating)
    return render(ctx, "Vote Registered",
                  fmt("<p>Your rating has been recorded. Thanks for your input.</p><p>{}</p>",
                      back))


# ---------------------------------------------------------------------------
# edit_forum_preferences_form.php, edit_forum_preferences_action.php

_FLAGS = (("forum_images_as_links", "images_as_links", "Show images as links"),
          ("forum_link_popup", "link_popup", "Open links in new window/tab"),
          ("forum_hide_avatars", "hide_avatars", "Hide avatar images"),
          ("forum_hide_signatures", "hide_signatures", "Hide signatures"),
          ("forum_highlight_special", "highlight_special",
           "Highlight special users' posts"),
          ("forum_jump_to_unread", "jump_to_unread", "Jump to first new post in thread"),
          ("forum_ignore_sticky_posts", "ignore_sticky_posts", "Don't show sticky threads first"))
PM_NOTIFICATION = ((0, "Never"), (1, "Immediately, by email"), (2, "In a single daily email"))


def edit_forum_preferences_form(ctx):
    user = ctx.require_login()
    db = ctx.db
    prefs = prefs_of(db, user.id)
    names = {}
    if prefs["ignored"]:
        names = {r["id"]: r["name"] for r in db.query(
            "SELECT id, name FROM user WHERE id IN (%s)"
            % ", ".join(["%s"] * len(prefs["ignored"])), prefs["ignored"])}
    ignored = join(fmt('<label>{} {} ({})</label><br>', checkbox("remove%d" % i, False),
                       names.get(i, "(deleted user)"), i) for i in prefs["ignored"])
    flags = join(fmt('<label>{} {}</label><br>', checkbox(field, prefs[col]), label)
                 for field, col, label in _FLAGS)
    body = fmt(
        '<form class="filters" method="post" action="edit_forum_preferences_action.php">{}'
        '<label for="pm_notification">Notification of private messages, friends and '
        'subscribed threads</label><div>{}</div>'
        '<label>Display</label><div>{}</div>'
        '<label for="forum_sort">Sort threads in a forum</label><div>{}</div>'
        '<label for="thread_sort">Sort posts in a thread</label><div>{}</div>'
        '<label for="forum_display_wrap_postcount">Posts per page of a thread</label>'
        '<div><input type="number" name="forum_display_wrap_postcount" '
        'id="forum_display_wrap_postcount" value="{}" min="1"></div>'
        '<label for="signature">Signature (at most {} characters)</label><div><textarea '
        'name="signature" id="signature" rows="3" cols="50">{}</textarea><br><label>{} Attach '
        'signature by default</label></div>'
        '<label>Ignored users (check to remove)</label><div>{}</div>'
        '<label for="forum_filter_user">Add a user to ignore (user ID)</label><div>'
        '<input type="text" name="forum_filter_user" id="forum_filter_user" size="10"></div>'
        '<span></span><div><button type="submit" id="save">Save</button></div></form>',
        ctx.token_field("edit_forum_preferences_action.php"),
        select("pm_notification", PM_NOTIFICATION, prefs["pm_notification"]), flags,
        select("forum_sort", [(k, v[0]) for k, v in FORUM_SORTS.items()],
               prefs["forum_sorting"]),
        select("thread_sort", [(k, v[0]) for k, v in THREAD_SORTS.items()],
               prefs["thread_sorting"]),
        prefs["display_wrap_postcount"], SIGNATURE_MAX, prefs["signature"],
        checkbox("signature_by_default", not prefs["no_signature_by_default"]),
        ignored or Markup('<span class="muted">none</span>'))
    return render(ctx, "Community preferences", body)


def _post_int(ctx, name, choices=None, minimum=None):
    text = ctx.req.post(name).strip()
    try:
        value = int(text)
    except ValueError:
        raise PageError("%s: %r is not an integer" % (name, text)) from None
    if choices is not None and value not in choices:
        raise PageError("%s: %d is not one of the choices" % (name, value))
    if minimum is not None:
        value = max(minimum, min(value, 10 ** 6))
    return value


def edit_forum_preferences_action(ctx):
    user = ctx.require_action()
    db = ctx.db
    prefs = prefs_of(db, user.id)
    req = ctx.req
    signature = req.post("signature")
    if len(signature) > SIGNATURE_MAX:
        raise PageError("Your signature was too long, please keep it less than %d characters."
                        % SIGNATURE_MAX)
    changes = {
        "pm_notification": _post_int(ctx, "pm_notification", (0, 1, 2)),
        "forum_sorting": _post_int(ctx, "forum_sort", FORUM_SORTS),
        "thread_sorting": _post_int(ctx, "thread_sort", THREAD_SORTS),
        "display_wrap_postcount": _post_int(ctx, "forum_display_wrap_postcount", minimum=1),
        "no_signature_by_default": 0 if req.post("signature_by_default") else 1,
        "signature": signature,
    }
    for field, col, _ in _FLAGS:
        changes[col] = 1 if req.post(field) else 0
    ignored = [i for i in prefs["ignored"] if not req.post("remove%d" % i)]
    other = req.post("forum_filter_user").strip()
    if other:
        if not other.isdigit() or int(other) > ID_MAX or \
                accounts.lookup_user_by_id(db, int(other)) is None:
            raise PageError("forum_filter_user: no user with ID %r" % other[:40])
        if int(other) == user.id:
            raise PageError("forum_filter_user: you can't ignore yourself")
        if int(other) not in ignored:
            ignored.append(int(other))
    changes["ignorelist"] = "|".join(str(i) for i in ignored)
    if len(changes["ignorelist"]) > IGNORELIST_MAX:
        raise PageError("forum_filter_user: the ignore list is full")
    with db.transaction():
        for column, value in changes.items():
            set_forum_pref(db, user.id, column, value)
    raise Redirect("edit_forum_preferences_form.php")


PAGES = {
    "forum_post.php": forum_post,
    "forum_reply.php": forum_reply,
    "forum_edit.php": forum_edit,
    "forum_subscribe.php": forum_subscribe,
    "forum_rate.php": forum_rate,
    "edit_forum_preferences_form.php": edit_forum_preferences_form,
    "edit_forum_preferences_action.php": edit_forum_preferences_action,
}
