"""Private messages, friends and notifications (BOINC's pm.php, friend.php,
notify_rss.php; html/inc/pm.inc, friend.inc, notify.inc), on BOINC's tables
private_messages, friend and notify (writes in :mod:`boincpy.db.messages`).

=========================  ======================================================
``pm.php``                 ``action=inbox`` (default): the messages, newest first,
                           each shown whole and marked read; ``new`` (``userid``
                           or ``replyto``: the reply quotes the message, subject
                           ``re: ...``); ``send`` (POST: ``to`` one user id, "ID
                           (name)" or name a line, ``subject``, ``content``,
                           ``preview``); ``delete`` (POST ``id``);
                           ``delete_selected`` (POST ``pm_select_ID``); ``block``
                           / ``confirmedblock`` (POST ``id``: the user goes on
                           forum_preferences.ignorelist, ids joined by ``|``);
                           ``new``/``send`` with ``teamid``: a team admin's message
                           to every member; boincpy adds ``read``, ``blocked`` and
                           ``unblock`` (POST ``id``), since the forum
                           preferences page is where BOINC unblocks
``friend.php``             ``add`` / ``add_confirm`` (POST ``userid``,
                           ``message``), ``query``, ``accept`` / ``ignore``
                           (POST: BOINC's were links), ``accepted``,
                           ``cancel_confirm`` / ``cancel`` (POST)
``notify_rss.php``         the user's notifications as RSS (``userid``, ``auth``:
                           md5(authenticator + passwd_hash + "notify_rss"))
``notifications.php``      boincpy: the notifications BOINC lists on home.php
=========================  ======================================================

Sending is refused to banished users, to anyone a recipient blocks (unless
the sender is a moderator, as BOINC), above BOINC's rate (2 a minute, 5 in 10
minutes, 15 an hour, 50 a day; checked for all recipients before any is
sent), and for a subject over 255 characters or a text over 64 KiB (the
columns).  Every change is a POST with the account's form token; a message
id reaches only the recipient's rows (the SQL names the recipient).

E-mail follows forum_preferences.pm_notification (0 none, 1 each event, 2
the daily digest of ``bin/notify``) and is never sent to a user whose
``send_email`` is 0.  Message texts are BBCode, shown through
:mod:`boincpy.web.bbcode` (escaped first, a whitelist of tags).

Other pages call :func:`unread_pm_count`, :func:`community_rows` (home.php),
:func:`friends_html` (show_user.php), :func:`notifications_html` and
:func:`notices_of` (the client's Notices feed).
"""

import sys
import time

from boincpy import mail, passwords
from boincpy.db import messages as mdb
from boincpy.web import accounts, bbcode
from boincpy.web.http import Response
from boincpy.web.markup import Markup, fmt, join, link, url
from boincpy.web.page import PageError, Redirect, hidden, notice, render
from boincpy.web.user.common import ID_MAX, is_moderator, required_id, time_str, user_link
from boincpy.xml import xml_escape

SUBJECT_MAX = 255                   # private_messages.subject varchar(255)
CONTENT_MAX = 65535                 # private_messages.content text (bytes)
FRIEND_MESSAGE_MAX = 250            # friend.php's text counter
IGNORELIST_MAX = 254                # forum_preferences.ignorelist varchar(254)
# pm.inc's check_pm_count: (seconds, most messages in them)
PM_RATE = ((60, 2), (600, 5), (3600, 15), (86400, 50))
MAX_RECIPIENTS = PM_RATE[-1][1]     # one message can't go to more than a day's allowance
TEAM_SUBJECT = "Message from team"  # team messages don't count against the rate
NOTIFY_KEEP_DAYS = 90               # notify.php deletes older notifications
NOTICE_DAYS = 30                    # notices.php: the last 30 days


def text_html(text):
    """A message's text: its BBCode as safe HTML (boincpy.web.bbcode; pictures
    shown as links)."""
    return bbcode.render(text or "")


# ---------------------------------------------------------------------------
# forum_preferences: notification choice, block list, moderators

def community_prefs(db, user_id):
    """The user's pm_notification, ignorelist (ids), display_wrap_postcount,
    special_user and banished_until (defaults without a row)."""
    rows = db.query_if_table("SELECT pm_notification, ignorelist, display_wrap_postcount, "
                             "special_user, banished_until FROM forum_preferences "
                             "WHERE userid = %s", (user_id,))
    row = rows[0] if rows else {}
    return {
        "pm_notification": int(row.get("pm_notification") or 0),
        "ignorelist": parse_ignorelist(row.get("ignorelist") or ""),
        "display_wrap_postcount": int(row.get("display_wrap_postcount", 75) or 0),
        "special_user": row.get("special_user") or "0",
        "banished_until": int(row.get("banished_until") or 0),
    }


def parse_ignorelist(text):
    """forum_preferences.ignorelist: user ids joined by ``|`` (forum.inc)."""
    return [int(x) for x in text.split("|") if x.strip().isdigit()]


def is_ignoring(db, user_id, other_id):
    """Does ``user_id`` block ``other_id``?"""
    return other_id in community_prefs(db, user_id)["ignorelist"]


def _set_ignorelist(db, user_id, ids):
    from boincpy.db.schema import ensure_table
    from boincpy.db.user import set_forum_pref
    ensure_table(db, "forum_preferences")
    set_forum_pref(db, user_id, "ignorelist", "|".join(str(i) for i in ids))


# ---------------------------------------------------------------------------
# What other pages show

def unread_pm_count(db, user_id):
    """How many of the user's private messages are unread."""
    rows = db.query_if_table("SELECT COUNT(*) AS n FROM private_messages WHERE userid = %s "
                             "AND opened = 0", (user_id,))
    return int(rows[0]["n"]) if rows else 0


def pm_links_html(db, user_id):
    """``Inbox (N unread) · Write`` (pm.inc's pm_notification)."""
    n = unread_pm_count(db, user_id)
    parts = [link("pm.php?action=inbox", "Inbox")]
    if n:
        parts.append(fmt(' <span class="inboxunread">({} unread)</span>', n))
    parts.append(fmt(" &middot; {}", link("pm.php?action=new", "Write")))
    return join(parts)


def friends_of(db, user_id):
    """(id, name) of the user's confirmed friends, by name."""
    return [(r["id"], r["name"]) for r in db.query_if_table(
        "SELECT u.id, u.name FROM friend f JOIN user u ON u.id = f.user_dest "
        "WHERE f.user_src = %s AND f.reciprocated = 1 ORDER BY u.name, u.id", (user_id,))]


def friends_html(db, user_id, viewer=None):
    """The user's friends as links (show_user.php, home.php), "---" for none;
    with ``viewer`` (the logged-in user, another one) also BOINC's Contact
    and friendship links."""
    rows = []
    if viewer is not None and viewer.id != user_id:
        rows.append(fmt("<tr><th>Contact</th><td>{}</td></tr>",
                        link(url("pm.php", action="new", userid=user_id),
                             "Send private message")))
        mine = db.query_if_table("SELECT reciprocated FROM friend WHERE user_src = %s AND "
                                 "user_dest = %s", (viewer.id, user_id))
        if mine and mine[0]["reciprocated"]:
            rows.append(fmt("<tr><th>This person is a friend</th><td>{}</td></tr>",
                            link(url("friend.php", action="cancel_confirm", userid=user_id),
                                 "Cancel friendship")))
        else:
            rows.append(fmt("<tr><th>Friends</th><td>{}</td></tr>",
                            link(url("friend.php", action="add", userid=user_id),
                                 "Request pending" if mine else "Add as friend")))
    rows.append(fmt("<tr><th>Friends</th><td>{}</td></tr>", friends_cell(db, user_id)))
    return fmt('<table class="kv">{}</table>', join(rows))


def friends_cell(db, user_id):
    """The user's friends as links, one a line ("---" for none)."""
    friends = friends_of(db, user_id)
    if not friends:
        return "---"
    return join((user_link(i, n) for i, n in friends), Markup("<br>"))


def community_rows(db, user):
    """home.php's rows of the community (user.inc's show_community_private):
    private messages, notifications, friends; (label, HTML) pairs."""
    notes = notifications_html(db, user)
    return [("Private messages", pm_links_html(db, user.id)),
            ("Notifications", join([notes, Markup(" &middot; "),
                                    link("notifications.php", "All notifications")])
             if notes else link("notifications.php", "None")),
            ("Friends", friends_cell(db, user.id))]


def _user_names(db, ids):
    ids = sorted({int(i) for i in ids})
    if not ids:
        return {}
    return {r["id"]: r["name"] for r in db.query(
        "SELECT id, name FROM user WHERE id IN (%s)" % ", ".join(["%s"] * len(ids)), ids)}


def _notifies(db, user_id, since=None):
    where, params = "userid = %s", [user_id]
    if since is not None:
        where += " AND create_time > %s"
        params.append(since)
    return db.query_if_table("SELECT * FROM notify WHERE " + where
                             + " ORDER BY create_time DESC, id DESC", params)


def describe_notifies(db, notifies):
    """For each notification: (notify row, dict of what it is about), or None
    for one whose user or message is gone (BOINC deletes those)."""
    users = _user_names(db, [n["opaque"] for n in notifies
                             if n["type"] in (mdb.NOTIFY_FRIEND_REQ, mdb.NOTIFY_FRIEND_ACCEPT)])
    pm_ids = [n["opaque"] for n in notifies if n["type"] == mdb.NOTIFY_PM]
    pms = {}
    if pm_ids:
        pms = {r["id"]: r for r in db.query(
            "SELECT p.id, p.subject, p.senderid, u.name FROM private_messages p JOIN user u "
            "ON u.id = p.senderid WHERE p.id IN (%s)" % ", ".join(["%s"] * len(pm_ids)),
            pm_ids)}
    titles = {}
    for notify_type, table in ((mdb.NOTIFY_SUBSCRIBED_THREAD, "thread"),
                               (mdb.NOTIFY_SUBSCRIBED_FORUM, "forum")):
        ids = sorted({n["opaque"] for n in notifies if n["type"] == notify_type})
        if ids:
            titles[notify_type] = {r["id"]: r["title"] for r in db.query_if_table(
                "SELECT id, title FROM %s WHERE id IN (%s)"
                % (table, ", ".join(["%s"] * len(ids))), ids)}
    out = []
    for n in notifies:
        about = None
        if n["type"] in (mdb.NOTIFY_FRIEND_REQ, mdb.NOTIFY_FRIEND_ACCEPT) \
                and n["opaque"] in users:
            about = {"userid": n["opaque"], "name": users[n["opaque"]]}
        elif n["type"] == mdb.NOTIFY_PM and n["opaque"] in pms:
            pm = pms[n["opaque"]]
            about = {"userid": pm["senderid"], "name": pm["name"], "subject": pm["subject"],
                     "pm": pm["id"]}
        elif n["type"] in titles and n["opaque"] in titles[n["type"]]:
            about = {"id": n["opaque"], "title": titles[n["type"]][n["opaque"]]}
        elif n["type"] not in _KNOWN_TYPES:
            continue                # not ours to show or to delete
        out.append((n, about))
    return out


_KNOWN_TYPES = (mdb.NOTIFY_FRIEND_REQ, mdb.NOTIFY_FRIEND_ACCEPT, mdb.NOTIFY_PM,
                mdb.NOTIFY_SUBSCRIBED_THREAD, mdb.NOTIFY_SUBSCRIBED_FORUM)
# subscriptions (forum.inc's subscribed_thread_* and subscribed_forum_*):
# type -> (page, web line, e-mail line, feed title)
_SUBSCRIBED = {
    mdb.NOTIFY_SUBSCRIBED_THREAD: ("forum_thread.php", "New posts in the thread {}",
                                   "There are new posts in the thread '%s'",
                                   "New posts in subscribed thread"),
    mdb.NOTIFY_SUBSCRIBED_FORUM: ("forum_forum.php", "New threads in the forum {}",
                                  "There are new threads in the forum '%s'",
                                  "New posts in subscribed forum"),
}


def web_line(n, about):
    """A notification on the account page (user.inc's notify_description)."""
    t = n["type"]
    if t in _SUBSCRIBED:
        page, line = _SUBSCRIBED[t][:2]
        return fmt(line, link(url(page, id=about["id"]), about["title"]))
    if t == mdb.NOTIFY_FRIEND_REQ:
        return fmt("{} from {}", link(url("friend.php", action="query", userid=about["userid"]),
                                      "Friendship request"),
                   user_link(about["userid"], about["name"]))
    if t == mdb.NOTIFY_FRIEND_ACCEPT:
        return fmt("{} from {}", link(url("friend.php", action="accepted",
                                          userid=about["userid"]), "Friendship confirmation"),
                   about["name"])
    return fmt("{} from {}, subject: {}", link("pm.php", "Private message"), about["name"],
               about["subject"])


def email_line(n, about):
    """A notification in the daily digest (friend.inc, pm.inc's *_email_line)."""
    t = n["type"]
    if t in _SUBSCRIBED:
        return _SUBSCRIBED[t][2] % about["title"]
    if t == mdb.NOTIFY_FRIEND_REQ:
        return "%s has requested friendship with you. Please accept or decline." % about["name"]
    if t == mdb.NOTIFY_FRIEND_ACCEPT:
        return "%s has confirmed you as a friend" % about["name"]
    return '%s sent you a private message; subject: "%s"' % (about["name"], about["subject"])


def notice_item(n, about, base_url):
    """A notification as a feed item (friend.inc's friend_*_rss, pm_rss):
    {title, link, time, description (HTML), guid}."""
    t = n["type"]
    if t in _SUBSCRIBED:
        page, _, line, title = _SUBSCRIBED[t]
        desc = str(fmt("{}", line % about["title"]))
        where = base_url + url(page, id=about["id"])
    elif t == mdb.NOTIFY_FRIEND_REQ:
        title = "Friend request"
        desc = str(fmt("{} has requested friendship with you. Please accept or decline.",
                       about["name"]))
        where = base_url + url("friend.php", action="query", target_userid=n["userid"],
                               userid=n["opaque"])
    elif t == mdb.NOTIFY_FRIEND_ACCEPT:
        title = "Friendship confirmation"
        desc = str(fmt("{} has confirmed you as a friend", about["name"]))
        where = base_url + "home.php"
    else:
        title = "Private message"
        desc = str(fmt('You have received a <a href="{}">private message</a>.',
                       base_url + "pm.php"))
        where = base_url + "pm.php"
    return {"title": title, "link": where, "time": int(n["create_time"]),
            "description": desc, "guid": "%s_notify_%d" % (base_url, n["id"])}


def notices_of(db, user_id, base_url="", since=None, now=None):
    """The user's notifications of the last 30 days as Notices feed items
    (title, link, time, description, guid), newest first; ``base_url``
    (the site's, with a trailing /) makes the links absolute."""
    now = time.time() if now is None else now
    since = now - NOTICE_DAYS * 86400 if since is None else since
    return [notice_item(n, about, base_url)
            for n, about in describe_notifies(db, _notifies(db, user_id, since))
            if about is not None]


def notifications_html(db, user):
    """The Notifications row of the account page: one line each, and the
    RSS link; "" when there are none."""
    lines = []
    for n, about in describe_notifies(db, _notifies(db, user.id)):
        if about is None:
            mdb.delete_notify_id(db, n["id"])
        else:
            lines.append(fmt("&bull; {}<br>", web_line(n, about)))
    if not lines:
        return Markup("")
    lines.append(link(notify_rss_url(user), "RSS"))
    return join(lines)


def notify_rss_auth(user):
    """notify.inc's notify_rss_auth: md5(authenticator + passwd_hash + "notify_rss")."""
    return passwords.md5_hex(user.authenticator + user.passwd_hash + "notify_rss")


def notify_rss_url(user, base_url=""):
    return base_url + url("notify_rss.php", userid=user.id, auth=notify_rss_auth(user))


# ---------------------------------------------------------------------------
# E-mail of one event (pm_notification 1)

def _email_wanted(db, user):
    return user.send_email and community_prefs(db, user.id)["pm_notification"] == 1


def _site(cfg):
    return cfg.secure_url_base or cfg.master_url


def _send(cfg, user, subject, body):
    """Send, or say in the web server's log why not (the action stands)."""
    if not mail.configured(cfg) or not user.email_addr:
        return
    try:
        mail.send(cfg, user.email_addr, subject, body, user.name)
    except mail.MailError as exc:
        sys.stderr.write("notification e-mail to user %d not sent: %s\n" % (user.id, exc.message))


def send_pm_email(cfg, sender, to_user, subject, content):
    base = _site(cfg)
    _send(cfg, to_user, "[%s] - private message" % cfg.long_name,
          "You have received a new private message at %s.\n\nFrom: %s (ID %d)\n"
          "Subject: %s\nMessage:\n%s\n\n--------------------------\n"
          "To delete or respond to this message, visit:\n%spm.php\n\n"
          "To change email preferences, visit:\n%sedit_forum_preferences_form.php\n\n"
          "Do not reply to this message.\n"
          % (cfg.long_name, sender.name, sender.id, subject, content, base, base))


def send_friend_email(cfg, from_user, to_user, message, accepted):
    base = _site(cfg)
    if accepted:
        text = "%s has confirmed you as a friend at %s.\n" % (from_user.name, cfg.long_name)
        subject, visit = "friend confirmed", "Visit your Account page at"
    else:
        text = "%s has added you as a friend at %s.\n" % (from_user.name, cfg.long_name)
        subject, visit = "friend request", "Please accept or decline by visiting"
    if message:
        text += "\n%s says: %s\n" % (from_user.name, message)
    text += ("\n%s\n%shome.php\n\n--------------------------\n"
             "To change email preferences, visit:\n%sedit_forum_preferences_form.php\n"
             "Do not reply to this message.\n" % (visit, base, base))
    _send(cfg, to_user, "[%s] %s" % (cfg.long_name, subject), text)


# ---------------------------------------------------------------------------
# pm.php

def _pm_header():
    return fmt("<p>{} &middot; {} &middot; {}</p>", link("pm.php?action=inbox", "Inbox"),
               link("pm.php?action=new", "Write"), link("pm.php?action=blocked", "Blocked users"))


def _post_form(ctx, page, action, fields, button, cls="inline", danger=False):
    """A small POST form of ``page`` with its token, hidden fields and one button."""
    return fmt('<form class="{}" method="post" action="{}">{}{}{}<button type="submit"{}>{}'
               '</button></form>', cls, page, ctx.token_field(page), hidden("action", action),
               join(hidden(k, v) for k, v in fields), Markup(' class="danger"') if danger
               else Markup(""), button)


def _user_or_error(ctx, user_id, what="No such user"):
    user = accounts.lookup_user_by_id(ctx.db, user_id)
    if user is None:
        raise PageError(what, "404 Not Found", "Not found")
    return user


def _check_banished(ctx, user):
    until = community_prefs(ctx.db, user.id)["banished_until"]
    if until > ctx.now:
        raise PageError("You may not post or send messages until %s."
                        % time.strftime("%b %d, %Y", time.gmtime(until)), "403 Forbidden",
                        "Banished")


def pm_inbox(ctx, user):
    db = ctx.db
    prefs = community_prefs(db, user.id)
    mdb.delete_notify(db, user.id, mdb.NOTIFY_PM)
    total = db.query_value("SELECT COUNT(*) FROM private_messages WHERE userid = %s",
                           (user.id,), 0)
    nshow = prefs["display_wrap_postcount"]
    if nshow < 1:
        nshow = 20
    offset = ctx.int_arg("offset", 0, minimum=0, maximum=10 ** 9)
    if offset >= total:
        offset = 0
    parts = [_pm_header()]
    if ctx.req.get("sent") == "1":
        parts.append(notice("ok", "Your message has been sent."))
    if ctx.req.get("deleted") == "1":
        parts.append(notice("ok", "The selected messages have been deleted."))
    if not total:
        parts.append(fmt("<p>You have no private messages.</p>"))
        return render(ctx, "Private messages: Inbox", join(parts))
    msgs = db.query("SELECT p.*, u.name AS sender_name FROM private_messages p LEFT JOIN user u "
                    "ON u.id = p.senderid WHERE p.userid = %s ORDER BY p.date DESC, p.id DESC "
                    "LIMIT %s, %s", (user.id, offset, nshow))
    gone = [m["senderid"] for m in msgs if m["sender_name"] is None]
    if gone:
        mdb.delete_pms_from(db, user.id, gone)
    msgs = [m for m in msgs if m["sender_name"] is not None]
    mdb.mark_opened(db, user.id, [m["id"] for m in msgs if not m["opened"]])
    if total > nshow:
        nav = [fmt("Showing messages {} to {} of {}", offset + 1, min(offset + nshow, total),
                   total)]
        if offset:
            nav.append(link(url("pm.php", action="inbox", offset=max(0, offset - nshow)),
                            "Previous %d" % nshow))
        if offset + nshow < total:
            nav.append(link(url("pm.php", action="inbox", offset=offset + nshow),
                            "Next %d" % nshow))
        parts.append(fmt("<p>{}</p>", join(nav, Markup(" &middot; "))))
    rows = []
    for m in msgs:
        rows.append(fmt(
            '<tr id="pm_{}"><td><input type="checkbox" name="pm_select_{}" form="msg_list" '
            'value="on"> {}{}</td><td>{} {}<br>{}</td><td>{}<p>{} {}</p></td></tr>',
            m["id"], m["id"], m["subject"],
            Markup("") if m["opened"] else Markup(' <span class="notice warn">new</span>'),
            user_link(m["senderid"], m["sender_name"]),
            link(url("pm.php", action="block", id=m["senderid"]), "Block", class_="small"),
            time_str(m["date"]), text_html(m["content"]),
            link(url("pm.php", action="new", replyto=m["id"]), "Reply"),
            _post_form(ctx, "pm.php", "delete", [("id", m["id"])], "Delete")))
    parts.append(fmt('<table><thead><tr><th>Subject</th><th>Sender and date</th>'
                     '<th>Message</th></tr></thead><tbody>{}</tbody></table>', join(rows)))
    parts.append(fmt('<form id="msg_list" name="msg_list" method="post" action="pm.php">{}{}'
                     '<button type="submit" class="danger">Delete selected messages</button>'
                     '</form>', ctx.token_field("pm.php"), hidden("action", "delete_selected")))
    return render(ctx, "Private messages: Inbox", join(parts))


def pm_read(ctx, user):
    """One message of the user's (boincpy; BOINC shows them all in the inbox)."""
    db = ctx.db
    pm_id = required_id(ctx, "id")
    m = db.query_one("SELECT p.*, u.name AS sender_name FROM private_messages p LEFT JOIN user u "
                     "ON u.id = p.senderid WHERE p.id = %s AND p.userid = %s", (pm_id, user.id))
    if m is None:
        raise PageError("No such message", "404 Not Found", "Not found")
    if not m["opened"]:
        mdb.mark_opened(db, user.id, [pm_id])
    mdb.delete_notify(db, user.id, mdb.NOTIFY_PM, pm_id)
    body = fmt('{}<table class="kv"><tr><th>From</th><td>{}</td></tr><tr><th>Date</th><td>{}'
               '</td></tr><tr><th>Subject</th><td>{}</td></tr></table><div class="pm">{}</div>'
               '<p>{} {}</p>', _pm_header(),
               link(url("show_user.php", userid=m["senderid"]), m["sender_name"] or "(deleted)"),
               time_str(m["date"]), m["subject"], text_html(m["content"]),
               link(url("pm.php", action="new", replyto=pm_id), "Reply"),
               _post_form(ctx, "pm.php", "delete", [("id", pm_id)], "Delete"))
    return render(ctx, "Private message", body)


def pm_form(ctx, user, replyto=None, userid=None, error=None, preview=False):
    """The compose form (pm.inc's pm_form_page)."""
    db = ctx.db
    parts = [_pm_header()]
    to = subject = content = ""
    if preview:
        parts.append(fmt('<h2>Preview</h2><div class="preview">{}</div>',
                         text_html(ctx.req.post("content"))))
    if replyto:
        m = db.query_one("SELECT * FROM private_messages WHERE id = %s AND userid = %s",
                         (replyto, user.id))
        if m is None:
            raise PageError("no such message", "404 Not Found", "Not found")
        sender = _user_or_error(ctx, m["senderid"], "Sender no longer exists")
        to = "%d (%s)" % (sender.id, sender.name)
        content = "[quote]%s[/quote]\n" % m["content"]
        subject = m["subject"]
        if not subject.startswith("re:"):
            subject = "re: " + subject
    elif userid:
        other = _user_or_error(ctx, userid, "No such user")
        until = community_prefs(db, other.id)["banished_until"]
        if until > ctx.now:
            parts.append(notice("warn", "This user is banished until %s. You can send them a "
                                        "message, but they can't reply until then."
                                % time_str(until)))
        to = "%d (%s)" % (other.id, other.name)
    else:
        to = accounts.strip_tags(ctx.req.post("to"))
        subject = ctx.req.post("subject")
        content = ctx.req.post("content")
    if error:
        parts.append(notice("bad", error))
    parts.append(fmt(
        '<form class="filters" method="post" action="pm.php">{}{}'
        '<label for="to">To<br><small>User IDs or unique usernames, one per line</small></label>'
        '<div><textarea rows="2" cols="50" name="to" id="to">{}</textarea></div>'
        '<label for="subject">Subject</label><div><input type="text" name="subject" '
        'id="subject" size="60" maxlength="{}" value="{}"></div>'
        '<label for="content">Message<br><small>No obscene, hateful, commercial or harassing '
        'messages; violators lose their privileges.</small></label>'
        '<div><textarea name="content" id="content" rows="18" cols="70">{}</textarea></div>'
        '<span></span><div><button type="submit" name="preview" value="Preview">Preview'
        '</button> <button type="submit">Send message</button></div></form>',
        ctx.token_field("pm.php"), hidden("action", "send"), to, SUBJECT_MAX, subject,
        content))
    return render(ctx, "Send private message", join(parts))


def _resolve_recipients(db, to):
    """The users the "to" lines name (an id, "ID (name)" or a name); the
    message of the first line that names nobody."""
    users, seen = [], set()
    lines = [line.strip() for line in to.replace("\r", "").split("\n") if line.strip()]
    if len(lines) > MAX_RECIPIENTS:
        return None, ("You named %d recipients; at most %d can get one message (the rate "
                      "limit allows no more)." % (len(lines), MAX_RECIPIENTS))
    for line in lines:
        first = line.split(" ")[0]
        if first.isdigit():
            uid = int(first)
            found = accounts.lookup_user_by_id(db, uid) if uid <= ID_MAX else None
            if found is None:
                return None, "Could not find user with id %s" % first
        else:
            rows = db.query("SELECT * FROM user WHERE name = %s LIMIT 2", (line,))
            if not rows:
                return None, "Could not find user with username %s" % line
            if len(rows) > 1:
                return None, "%s is not a unique username; you will have to use user ID" % line
            found = accounts._user(rows[0])
        if found.id not in seen:
            seen.add(found.id)
            users.append(found)
    return users, None


def pm_count(db, sender_id, seconds, now):
    """Messages the user sent in the last ``seconds`` (not team messages)."""
    return db.query_value("SELECT COUNT(*) FROM private_messages WHERE senderid = %s AND "
                          "date > %s AND subject NOT LIKE %s",
                          (sender_id, now - seconds, TEAM_SUBJECT + "%"), 0)


def pm_send(ctx):
    user = ctx.require_action()
    db = ctx.db
    req = ctx.req
    _check_banished(ctx, user)
    to = accounts.strip_tags(req.post("to"))
    subject = req.post("subject")
    content = req.post("content")
    if req.post("preview") == "Preview":
        return pm_form(ctx, user, preview=True)
    if not to.strip() or not subject.strip() or not content.strip():
        return pm_form(ctx, user, error="You need to fill all fields to send a private message")
    _check_sizes(subject, content)
    recipients, problem = _resolve_recipients(db, to)
    if problem:
        return pm_form(ctx, user, error=problem)
    moderator = is_moderator(community_prefs(db, user.id))
    for other in recipients:
        if not moderator and is_ignoring(db, other.id, user.id):
            return pm_form(ctx, user, error="User %s (ID: %d) is not accepting private "
                                            "messages from you." % (other.name, other.id))
    if not moderator:
        for seconds, most in PM_RATE:
            if pm_count(db, user.id, seconds, ctx.now) + len(recipients) > most:
                raise PageError("You are not allowed to send private messages so often (at "
                                "most %d in %s). Please wait some time before sending more "
                                "messages; nothing was sent."
                                % (most, _duration(seconds)), "429 Too Many Requests",
                                "Too many messages")
    mdb.ensure_tables(db)
    for other in recipients:
        send_pm(ctx.cfg, db, user, other, subject, content, ctx.now)
    raise Redirect("pm.php?action=inbox&sent=1")


def _check_sizes(subject, content):
    """Refuse what the columns can't hold (nothing is sent)."""
    if len(subject) > SUBJECT_MAX:
        raise PageError("The subject is %d characters long; at most %d are allowed. Nothing "
                        "was sent." % (len(subject), SUBJECT_MAX), "413 Payload Too Large",
                        "Message too long")
    size = len(content.encode("utf-8"))
    if size > CONTENT_MAX:
        raise PageError("The message is %d bytes long; at most %d are allowed. Nothing was "
                        "sent." % (size, CONTENT_MAX), "413 Payload Too Large",
                        "Message too long")


def _duration(seconds):
    return {60: "a minute", 600: "10 minutes", 3600: "an hour", 86400: "a day"}[seconds]


def send_pm(cfg, db, sender, to_user, subject, content, now):
    """pm.inc's pm_send_msg: the message, its notification, and the e-mail
    if the recipient wants one per event; return the message id."""
    with db.transaction():
        mid = mdb.insert_pm(db, to_user.id, sender.id, now, subject, content)
        mdb.insert_notify(db, to_user.id, now, mdb.NOTIFY_PM, mid)
    if _email_wanted(db, to_user):
        send_pm_email(cfg, sender, to_user, subject, content)
    return mid


def pm_delete(ctx):
    user = ctx.require_action()
    pm_id = required_id(ctx, "id", post=True)
    if not mdb.delete_pms(ctx.db, user.id, [pm_id]):
        raise PageError("No such message", "404 Not Found", "Not found")
    raise Redirect("pm.php")


def pm_delete_selected(ctx):
    user = ctx.require_action()
    ids = []
    for name in ctx.req.form:
        if name.startswith("pm_select_") and name[10:].isdigit() and ctx.req.post(name):
            ids.append(int(name[10:]))
    ids = [i for i in ids if i <= ID_MAX]
    for start in range(0, len(ids), 500):
        mdb.delete_pms(ctx.db, user.id, ids[start:start + 500])
    raise Redirect("pm.php?action=inbox&deleted=1")


def pm_block(ctx, user):
    other = _user_or_error(ctx, required_id(ctx, "id"))
    body = fmt('<p>Are you really sure you want to block user {} from sending you private '
               'messages? You can only block a limited number of users.</p>'
               '<p>Once blocked, you can unblock them on the {} page.</p>{} {}',
               other.name, link("pm.php?action=blocked", "blocked users"),
               _post_form(ctx, "pm.php", "confirmedblock", [("id", other.id)],
                          "Add user to filter"),
               link("pm.php?action=inbox", "No, cancel"))
    return render(ctx, "Really block %s?" % other.name, body)


def pm_confirmedblock(ctx):
    user = ctx.require_action()
    db = ctx.db
    other = _user_or_error(ctx, required_id(ctx, "id", post=True))
    if other.id == user.id:
        raise PageError("You can't block yourself.")
    if is_moderator(community_prefs(db, other.id)):
        raise PageError("%s is a moderator, and can't be blocked" % other.name,
                        "403 Forbidden", "Can't block")
    ids = community_prefs(db, user.id)["ignorelist"]
    if other.id not in ids:
        ids.append(other.id)
        if len("|".join(str(i) for i in ids)) > IGNORELIST_MAX:
            raise PageError("Your block list is full (it holds %d characters of user ids); "
                            "unblock someone first. Nothing was changed." % IGNORELIST_MAX,
                            "400 Bad Request", "Block list full")
        _set_ignorelist(db, user.id, ids)
    body = fmt("<p>User {} has been blocked from sending you private messages. To unblock, "
               "visit the {} page.</p>", other.name,
               link("pm.php?action=blocked", "blocked users"))
    return render(ctx, "User %s blocked" % other.name, body)


def pm_blocked(ctx, user):
    ids = community_prefs(ctx.db, user.id)["ignorelist"]
    names = _user_names(ctx.db, ids)
    rows = [fmt("<tr><td>{}</td><td>{}</td></tr>",
                link(url("show_user.php", userid=i), names.get(i, "(deleted user %d)" % i)),
                _post_form(ctx, "pm.php", "unblock", [("id", i)], "Unblock")) for i in ids]
    body = [_pm_header()]
    if rows:
        body.append(fmt("<table><thead><tr><th>User</th><th></th></tr></thead><tbody>{}"
                        "</tbody></table>", join(rows)))
    else:
        body.append(fmt("<p>You block nobody.</p>"))
    return render(ctx, "Blocked users", join(body))


def pm_unblock(ctx):
    user = ctx.require_action()
    other_id = required_id(ctx, "id", post=True)
    ids = community_prefs(ctx.db, user.id)["ignorelist"]
    if other_id in ids:
        _set_ignorelist(ctx.db, user.id, [i for i in ids if i != other_id])
    raise Redirect("pm.php?action=blocked")


_PM_GET = {"inbox": pm_inbox, "read": pm_read, "block": pm_block, "blocked": pm_blocked}
_PM_POST = {"send": pm_send, "delete": pm_delete, "delete_selected": pm_delete_selected,
            "confirmedblock": pm_confirmedblock, "unblock": pm_unblock}


def _admin_team(ctx, user, teamid):
    from boincpy.web.user.teams import is_team_admin
    team = accounts.lookup_team_by_id(ctx.db, teamid)
    if team is None:
        raise PageError("no such team", "404 Not Found", "Not found")
    if not is_team_admin(ctx.db, user, team):
        raise PageError("Only the team's founder and admins can write to the whole team.",
                        "403 Forbidden", "Not an admin")
    return team


def pm_team_form(ctx, user, teamid, error=None, preview=False):
    """pm.inc's pm_team_form: a message to every member of a team one administers."""
    team = _admin_team(ctx, user, teamid)
    parts = [_pm_header()]
    if preview:
        parts.append(fmt('<h2>Preview</h2><div class="preview">{}</div>',
                         text_html(ctx.req.post("content"))))
    if error:
        parts.append(notice("bad", error))
    parts.append(fmt(
        '<form class="filters" method="post" action="pm.php">{}{}{}'
        '<label>To</label><div>every member of {}</div>'
        '<label for="subject">Subject</label><div><input type="text" name="subject" '
        'id="subject" size="60" maxlength="{}" value="{}"></div>'
        '<label for="content">Message</label><div><textarea name="content" id="content" '
        'rows="18" cols="70">{}</textarea></div>'
        '<span></span><div><button type="submit" name="preview" value="Preview">Preview'
        '</button> <button type="submit">Send message</button></div></form>',
        ctx.token_field("pm.php"), hidden("action", "send"), hidden("teamid", team.id),
        team.name, SUBJECT_MAX, ctx.req.post("subject"), ctx.req.post("content")))
    return render(ctx, "Send message to team", join(parts))


def pm_send_team(ctx, teamid):
    """pm.php's do_send_team: "Message from team NAME: SUBJECT" to each member."""
    user = ctx.require_action()
    db = ctx.db
    team = _admin_team(ctx, user, teamid)
    subject, content = ctx.req.post("subject"), ctx.req.post("content")
    if ctx.req.post("preview") == "Preview":
        return pm_team_form(ctx, user, teamid, preview=True)
    if not subject.strip() or not content.strip():
        return pm_team_form(ctx, user, teamid,
                            error="You need to fill all fields to send a private message")
    subject = "%s %s: %s" % (TEAM_SUBJECT, team.name, subject)
    _check_sizes(subject, content)
    members = [accounts._user(r) for r in db.query("SELECT * FROM user WHERE teamid = %s "
                                                   "ORDER BY id", (team.id,))]
    mdb.ensure_tables(db)
    for member in members:
        send_pm(ctx.cfg, db, user, member, subject, content, ctx.now)
    return render(ctx, "Message sent", fmt("<p>Your message was sent to {} team members.</p>",
                                           len(members)))


def pm_page(ctx):
    """pm.php"""
    action = accounts.strip_tags(ctx.req.get("action") or ctx.req.post("action")) or "inbox"
    teamid = ctx.int_arg("teamid", None, minimum=1, maximum=ID_MAX) or ctx.int_arg(
        "teamid", None, post=True, minimum=1, maximum=ID_MAX)
    if teamid and action == "send":
        return pm_send_team(ctx, teamid)
    if teamid and action == "new":
        return pm_team_form(ctx, ctx.require_login(), teamid)
    if action in _PM_POST:
        return _PM_POST[action](ctx)
    user = ctx.require_login()
    mdb.ensure_tables(ctx.db)
    if action == "new":
        _check_banished(ctx, user)
        replyto = ctx.int_arg("replyto", None, minimum=1, maximum=ID_MAX)
        userid = ctx.int_arg("userid", None, minimum=1, maximum=ID_MAX)
        return pm_form(ctx, user, replyto, userid)
    if action in _PM_GET:
        return _PM_GET[action](ctx, user)
    raise PageError("Unknown action")


# ---------------------------------------------------------------------------
# friend.php

def _friend_row(db, src, dest):
    rows = db.query_if_table("SELECT * FROM friend WHERE user_src = %s AND user_dest = %s",
                             (src, dest))
    return rows[0] if rows else None


def _notify_row(db, userid, notify_type, opaque):
    rows = db.query_if_table("SELECT * FROM notify WHERE userid = %s AND type = %s "
                             "AND opaque = %s", (userid, notify_type, opaque))
    return rows[0] if rows else None


def _check_pending(ctx, user, dest):
    """friend.php's check_pending: already friends, or a request waiting."""
    db = ctx.db
    row = _friend_row(db, user.id, dest.id)
    if row is None:
        return None
    if row["reciprocated"]:
        raise PageError("Already friends", "409 Conflict", "Already friends")
    if _notify_row(db, dest.id, mdb.NOTIFY_FRIEND_REQ, user.id):
        body = fmt("<p>You requested friendship with {} on {}.</p><p>This request is still "
                   "pending confirmation.</p>", dest.name, time_str(row["create_time"]))
        return render(ctx, "Request pending", body)
    # a request that was declined may be made again: add_confirm's REPLACE
    # writes over its row (BOINC deleted it here, on the form's GET too)
    return None


def _check_ignoring(ctx, src, dest):
    if is_ignoring(ctx.db, dest.id, src.id):
        raise PageError("%s is not accepting friendship requests from you" % dest.name,
                        "403 Forbidden", "Request refused")


def friend_add(ctx, user):
    dest_id = required_id(ctx, "userid")
    if dest_id == user.id:
        raise PageError("You can't be friends with yourself")
    dest = _user_or_error(ctx, dest_id)
    pending = _check_pending(ctx, user, dest)
    if pending is not None:
        return pending
    _check_ignoring(ctx, user, dest)
    body = fmt('<form method="post" action="friend.php">{}{}{}<p>You have asked to add <b>{}'
               '</b> as a friend. We will notify {} and will ask them to confirm that you are '
               'friends.</p><p><label for="message">Add an optional message here:</label><br>'
               '<textarea name="message" id="message" rows="4" cols="50" maxlength="{}">'
               '</textarea></p><button type="submit">OK</button></form>',
               ctx.token_field("friend.php"), hidden("action", "add_confirm"),
               hidden("userid", dest.id), dest.name, dest.name, FRIEND_MESSAGE_MAX)
    return render(ctx, "Add friend", body)


def friend_add_confirm(ctx):
    user = ctx.require_action()
    db = ctx.db
    dest_id = required_id(ctx, "userid", post=True)
    if dest_id == user.id:
        raise PageError("You can't be friends with yourself")
    dest = _user_or_error(ctx, dest_id)
    mdb.ensure_tables(db)
    pending = _check_pending(ctx, user, dest)
    if pending is not None:
        return pending
    _check_ignoring(ctx, user, dest)
    msg = accounts.strip_tags(ctx.req.post("message")).strip()
    if len(msg) > FRIEND_MESSAGE_MAX:
        raise PageError("The message is %d characters long; at most %d are allowed. Nothing "
                        "was sent." % (len(msg), FRIEND_MESSAGE_MAX), "413 Payload Too Large",
                        "Message too long")
    with db.transaction():
        mdb.replace_friend(db, user.id, dest.id, msg, ctx.now, False)
        mdb.insert_notify(db, dest.id, ctx.now, mdb.NOTIFY_FRIEND_REQ, user.id)
    if _email_wanted(db, dest):
        send_friend_email(ctx.cfg, user, dest, msg, accepted=False)
    return render(ctx, "Friend request sent",
                  fmt("<p>We have notified <b>{}</b> of your request.</p>", dest.name))


def friend_query(ctx, user):
    target = ctx.int_arg("target_userid", None, minimum=1, maximum=ID_MAX)
    if target and target != user.id:
        other = _user_or_error(ctx, target)
        return render(ctx, "Please log in as %s" % other.name,
                      fmt("<p>You must log in as {} to view this friend request.</p>",
                          other.name))
    src = _user_or_error(ctx, required_id(ctx, "userid"))
    row = _friend_row(ctx.db, src.id, user.id)
    if row is None:
        raise PageError("Request not found", "404 Not Found", "Not found")
    parts = [fmt("<p>{}</p><p>{} has requested friendship with you.</p>",
                 time_str(row["create_time"]),
                 user_link(src.id, src.name))]
    if row["message"]:
        parts.append(fmt("<p>{} says: {}</p>", src.name, row["message"]))
    parts.append(fmt("<p>{} {}</p>",
                     _post_form(ctx, "friend.php", "accept", [("userid", src.id)],
                                "Accept friendship"),
                     _post_form(ctx, "friend.php", "ignore", [("userid", src.id)], "Decline")))
    return render(ctx, "Friend request", join(parts))


def friend_accept(ctx):
    user = ctx.require_action()
    db = ctx.db
    src = _user_or_error(ctx, required_id(ctx, "userid", post=True))
    if _friend_row(db, src.id, user.id) is None:
        raise PageError("No request", "404 Not Found", "Not found")
    msg = accounts.strip_tags(ctx.req.post("message")).strip()[:FRIEND_MESSAGE_MAX]
    with db.transaction():
        mdb.set_reciprocated(db, src.id, user.id)
        mdb.replace_friend(db, user.id, src.id, msg, ctx.now, True)
        mdb.insert_notify(db, src.id, ctx.now, mdb.NOTIFY_FRIEND_ACCEPT, user.id)
        mdb.delete_notify(db, user.id, mdb.NOTIFY_FRIEND_REQ, src.id)
    if _email_wanted(db, src):
        send_friend_email(ctx.cfg, user, src, msg, accepted=True)
    return render(ctx, "Friendship confirmed",
                  fmt("<p>Your friendship with <b>{}</b> has been confirmed.</p>", src.name))


def friend_ignore(ctx):
    user = ctx.require_action()
    src = _user_or_error(ctx, required_id(ctx, "userid", post=True))
    if _friend_row(ctx.db, src.id, user.id) is None:
        raise PageError("No request", "404 Not Found", "Not found")
    mdb.delete_notify(ctx.db, user.id, mdb.NOTIFY_FRIEND_REQ, src.id)
    return render(ctx, "Friendship declined",
                  fmt("<p>You have declined friendship with <b>{}</b>.</p>", src.name))


def friend_accepted(ctx, user):
    dest = _user_or_error(ctx, required_id(ctx, "userid"))
    mdb.delete_notify(ctx.db, user.id, mdb.NOTIFY_FRIEND_ACCEPT, dest.id)
    return render(ctx, "Friend confirmed",
                  fmt("<p>You are now friends with {}.</p>", dest.name))


def friend_cancel_confirm(ctx, user):
    dest = _user_or_error(ctx, required_id(ctx, "userid"))
    body = fmt("<p>Are you sure you want to cancel your friendship with {}?</p><p>{} {}</p>",
               dest.name, _post_form(ctx, "friend.php", "cancel", [("userid", dest.id)], "Yes",
                                     danger=True),
               link("home.php", "No, stay friends"))
    return render(ctx, "Cancel friendship?", body)


def friend_cancel(ctx):
    user = ctx.require_action()
    dest = _user_or_error(ctx, required_id(ctx, "userid", post=True))
    mdb.delete_friendship(ctx.db, user.id, dest.id)
    return render(ctx, "Friendship cancelled",
                  fmt("<p>Your friendship with {} has been cancelled.</p>", dest.name))


_FRIEND_GET = {"add": friend_add, "query": friend_query, "accepted": friend_accepted,
               "cancel_confirm": friend_cancel_confirm}
_FRIEND_POST = {"add_confirm": friend_add_confirm, "accept": friend_accept,
                "ignore": friend_ignore, "cancel": friend_cancel}


def friend_page(ctx):
    """friend.php"""
    action = ctx.req.get("action") or ctx.req.post("action")
    if action in _FRIEND_POST:
        return _FRIEND_POST[action](ctx)
    user = ctx.require_login()
    mdb.ensure_tables(ctx.db)
    if action in _FRIEND_GET:
        return _FRIEND_GET[action](ctx, user)
    raise PageError("Unknown action")


# ---------------------------------------------------------------------------
# notifications.php, notify_rss.php

def notifications_page(ctx):
    """The user's notifications, and where to change how they are e-mailed."""
    user = ctx.require_login()
    mdb.ensure_tables(ctx.db)
    lines = notifications_html(ctx.db, user)
    how = {0: "not e-mailed", 1: "e-mailed as they happen",
           2: "e-mailed once a day as a digest"}.get(
        community_prefs(ctx.db, user.id)["pm_notification"], "not e-mailed")
    body = fmt("<p>Private messages: {}</p>{}<p class=\"muted small\">Notifications are {} "
               "(your message board preferences say how).</p>",
               pm_links_html(ctx.db, user.id),
               lines or fmt('<p class="muted">No notifications.</p>'), how)
    return render(ctx, "Notifications", body)


def notify_rss(ctx):
    """notify_rss.php?userid=N&auth=A: the user's notifications as RSS 2.0."""
    cfg = ctx.cfg
    userid = ctx.int_arg("userid", 0, minimum=0, maximum=ID_MAX)
    user = accounts.lookup_user_by_id(ctx.db, userid) if userid else None
    if user is None or not passwords.compare_digest(
            ctx.req.get("auth").encode("utf-8", "replace"), notify_rss_auth(user).encode()):
        return Response("<error>\n    <error_num>-1</error_num>\n    <error_msg>Unknown "
                        "error</error_msg>\n</error>\n", "application/xml; charset=utf-8")
    base = _site(cfg)
    items = notices_of(ctx.db, user.id, base, since=0)
    built = items[0]["time"] if items else ctx.now
    stamp = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(built))
    out = ['<?xml version="1.0" encoding="UTF-8" ?>\n<rss version="2.0">\n<channel>\n'
           "<title>%s</title>\n<link>%s</link>\n<description>Community notifications"
           "</description>\n<lastBuildDate>%s</lastBuildDate>\n<language>en-us</language>\n"
           % (xml_escape(cfg.long_name), xml_escape(base), stamp)]
    for item in items:
        out.append(rss_item_xml(item))
    out.append("</channel>\n</rss>\n")
    return Response("".join(out), "application/xml; charset=utf-8", "200 OK",
                    [("Last-Modified", stamp)])


def rss_item_xml(item):
    """One notices_of item as an RSS <item>."""
    def cdata(text):
        return "<![CDATA[%s]]>" % text.replace("]]>", "]]]]><![CDATA[>")
    return ("<item>\n    <title>%s</title>\n    <guid>%s</guid>\n    <link>%s</link>\n"
            "    <description>%s</description>\n    <pubDate>%s</pubDate>\n</item>\n"
            % (cdata(item["title"]), xml_escape(item["guid"]), xml_escape(item["link"]),
               cdata(item["description"]),
               time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(item["time"]))))


PAGES = {
    "pm.php": pm_page,
    "friend.php": friend_page,
    "notifications.php": notifications_page,
    "notify_rss.php": notify_rss,
}
