"""Moderation of the message boards (BOINC's forum_moderate_post.php,
forum_moderate_post_action.php, forum_moderate_thread.php,
forum_moderate_thread_action.php, forum_banishment_vote.php and
forum_banishment_vote_action.php; html/inc/forum.inc, forum_email.inc,
forum_banishment_vote.inc), on BOINC's post, thread, forum,
forum_preferences, banishment_vote and banishment_votes tables (writes in
:mod:`boincpy.db.forum` and :mod:`boincpy.db.user`).

Who moderates is BOINC's forum_preferences.special_user: in the project's
forums a volunteer moderator, administrator, developer or scientist; in a
team's forum a project administrator or the team's founder and admins
(forum.inc's is_moderator).  Deleting posts and threads is the
administrators' (administrator, developer, scientist); banishing an author
the project administrators' (and the moderators' with
``<moderators_allowed_to_ban>``); votes to banish the volunteer moderators'
(with ``<moderators_vote_to_ban>``).  Everyone else gets 403.

=====================================  ===============================================
``forum_moderate_post.php``            ``id``, ``action`` hide (BOINC's reason
                                       categories), move (destination thread id),
                                       banish_user (``userid``, a duration),
                                       delete, unhide: the form
``forum_moderate_post_action.php``     POST ``id``, ``action``, ``category``,
                                       ``reason``, ``threadid``, ``userid``,
                                       ``duration``; a GET (BOINC's links) shows a
                                       button that posts it
``forum_moderate_thread.php``          ``thread``, ``action`` hide, lock, move
                                       (``forumid``), title (``newtitle``), delete,
                                       unhide, sticky, desticky, unlock: the form
``forum_moderate_thread_action.php``   POST ``thread``, ``action``, ``category``,
                                       ``reason`` ...; a GET shows the button
``forum_banishment_vote.php``          ``userid``, ``action`` start (the form), yes /
                                       no (a button: BOINC counted a GET)
``forum_banishment_vote_action.php``   POST ``userid``, ``action`` start / yes / no
``forum_report_post.php``              ``post``: a volunteer's report (the form; POST
                                       ``post``, ``reason``) e-mailed to the moderators
=====================================  ===============================================

Each action notifies as forum_email.inc does: the author gets the moderation
notice as a private message from themselves (with its notification) and by
e-mail unless they opted out of e-mail (user.send_email 0); the report goes
to ``<post_report_emails>`` (project forums) or to the team's founder and
admins (team forums).  BOINC keeps no moderation log in its tables (its
forum_logging is the read marks of threads); these reports are the record.

A banishment vote (forum_banishment_vote.inc): the author is banished for the
vote's six hours; each moderator votes once.  BOINC stops there.  boincpy
resolves it as BOINC's notice to the author says: when more than half of the
project's volunteer moderators voted one way the vote ends then; a vote that
ends with more ayes than nays banishes the author for two weeks from its
start, otherwise the ban ends with the vote.  Votes are settled whenever a
moderation page runs (:func:`settle_votes`).
"""

import sys
import time as _time

from boincpy import mail
from boincpy.db import forum as forum_db
from boincpy.db import messages as mdb
from boincpy.db.schema import ensure_table
from boincpy.errors import MissingTableError
from boincpy.web import accounts
from boincpy.web.markup import Markup, fmt, join, link, url
from boincpy.web.page import PageError, Redirect, hidden, kv_table, notice, render, select
from boincpy.web.user import common
from boincpy.web.user.common import S_ADMIN, S_DEV, S_MODERATOR, S_SCIENTIST, has_privilege

ADMIN_FLAGS = (S_ADMIN, S_DEV, S_SCIENTIST)

# forum_moderate_post.php's hide reasons (value -> label) and the action
# page's words for them in the e-mail (hide_explanation)
POST_HIDE_REASONS = ((0, ""), (1, "Obscene"), (2, "Flame/Hate mail"), (3, "Commercial spam"),
                     (4, "Doublepost"), (5, "User Request"), (6, "Other"))
POST_HIDE_WORDS = {1: "Obscene", 2: "Flame/Hate mail", 3: "Commercial spam", 4: "Double post",
                   5: "User Request"}
# forum_moderate_thread.php's categories and their words in the e-mail
THREAD_REASONS = ((1, "Obscene"), (2, "Flame/Hate mail"), (3, "Commercial spam"), (4, "Other"))
THREAD_WORDS = {1: "obscene", 2: "flame/hate mail", 3: "commercial spam", 4: "other"}
# forum_banishment_vote.php's categories
VOTE_REASONS = ((1, "Obscene"), (2, "Flame/Hate mail"), (3, "User Request"), (4, "Other"))
# forum_moderate_post.php's ban durations (seconds; -1 forever)
BAN_DURATIONS = ((21600, "6 hours"), (43200, "12 hours"), (86400, "1 day"),
                 (604800, "1 week"), (1209600, "2 weeks"), (2592000, "1 month"),
                 (-1, "Forever"))
FOREVER = 2147483647
VOTE_LENGTH = 21600             # forum_banishment_vote.inc: a vote lasts 6 hours
VOTE_BAN = 86400 * 14           # ... and asks for two weeks
REASON_MAX = 65535
TITLE_MAX = 254                 # thread.title varchar(254)

# ---------------------------------------------------------------------------
# who may do what (forum.inc)

def _flags(db, user):
    return accounts.forum_prefs(db, user.id)


def is_admin(db, user):
    """forum.inc's is_admin: administrator, developer or scientist."""
    return user is not None and has_privilege(_flags(db, user), ADMIN_FLAGS)


def is_moderator(db, user, forum=None):
    """common.is_moderator for a user row and a forum row (None: the
    project's forums), a team's founder and admins on its board."""
    if user is None:
        return False
    team_admin = forum is not None and forum["parent_type"] == 1 and is_team_admin(
        db, user.id, forum["category"])
    return common.is_moderator(_flags(db, user), forum, team_admin)


def is_team_admin(db, user_id, team_id):
    """The team's founder or one of its admins (is_team_admin)."""
    return bool(db.query_value(
        "SELECT COUNT(*) FROM team t WHERE t.id = %s AND (t.userid = %s OR EXISTS "
        "(SELECT 1 FROM team_admin a WHERE a.teamid = t.id AND a.userid = %s))",
        (team_id, user_id, user_id)))


def may_banish(ctx, user):
    """forum_moderate_post_action.php: administrators; moderators too with
    <moderators_allowed_to_ban>."""
    bits = _flags(ctx.db, user)
    if has_privilege(bits, (S_ADMIN,)):
        return True
    return bool(ctx.cfg.moderators_allowed_to_ban) and has_privilege(bits, (S_MODERATOR,))


def moderation_links(ctx, user, post, forum):
    """The moderator's buttons under a post (forum.inc's
    show_post_moderation_links) for the message boards' pages; empty for
    everyone else."""
    db = ctx.db
    if not is_moderator(db, user, forum):
        return Markup("")
    pid = post["id"]
    items = []
    if post["hidden"]:
        items.append(link(url("forum_moderate_post_action.php", action="unhide", id=pid),
                          "Unhide"))
    else:
        items.append(link(url("forum_moderate_post.php", action="hide", id=pid), "Hide"))
    items.append(link(url("forum_moderate_post.php", action="move", id=pid), "Move"))
    if forum["parent_type"] == 0:
        if may_banish(ctx, user):
            items.append(link(url("forum_moderate_post.php", action="banish_user", id=pid,
                                  userid=post["user"]), "Banish author"))
        if ctx.cfg.moderators_vote_to_ban:
            if vote_in_progress(db, post["user"], ctx.now):
                items.append(link(url("forum_banishment_vote.php", action="yes",
                                      userid=post["user"]), "Vote to banish author"))
                items.append(link(url("forum_banishment_vote.php", action="no",
                                      userid=post["user"]), "Vote not to banish author"))
            else:
                items.append(link(url("forum_banishment_vote.php", action="start",
                                      userid=post["user"]), "Start vote to banish author"))
        if is_admin(db, user):
            items.append(link(url("forum_moderate_post.php", action="delete", id=pid),
                              "Delete"))
    return fmt('<span class="moderation">{}</span>', join(items, " | "))


def thread_moderation_links(ctx, user, thread, forum):
    """The moderator's buttons of a thread (forum_thread.php's)."""
    db = ctx.db
    if not is_moderator(db, user, forum):
        return Markup("")
    tid = thread["id"]
    act = "forum_moderate_thread_action.php"
    form = "forum_moderate_thread.php"
    items = [
        link(url(act, action="unhide", thread=tid), "Unhide") if thread["hidden"]
        else link(url(form, action="hide", thread=tid), "Hide"),
        link(url(act, action="desticky", thread=tid), "Make unsticky") if thread["sticky"]
        else link(url(act, action="sticky", thread=tid), "Make sticky"),
        link(url(act, action="unlock", thread=tid), "Unlock") if thread["locked"]
        else link(url(form, action="lock", thread=tid), "Lock"),
    ]
    if forum["parent_type"] == 0:
        items.append(link(url(form, action="move", thread=tid), "Move"))
    items.append(link(url(form, action="title", thread=tid), "Edit title"))
    if is_admin(db, user):
        items.append(link(url(form, action="delete", thread=tid), "Delete thread"))
    return fmt('<span class="moderation">{}</span>', join(items, " | "))


# ---------------------------------------------------------------------------
# rows

def _row(db, sql, ident):
    rows = db.query_if_table(sql, (ident,))
    return rows[0] if rows else None


def _post(ctx, post_id):
    post = _row(ctx.db, "SELECT * FROM post WHERE id = %s", post_id)
    if post is None:
        raise PageError("No such post", "404 Not Found", "No such post")
    return post


def _thread(ctx, thread_id):
    thread = _row(ctx.db, "SELECT * FROM thread WHERE id = %s", thread_id)
    if thread is None:
        raise PageError("No such thread", "404 Not Found", "No such thread")
    return thread


def _forum(ctx, forum_id):
    forum = _row(ctx.db, "SELECT * FROM forum WHERE id = %s", forum_id)
    if forum is None:
        raise PageError("No such forum", "404 Not Found", "No such forum")
    return forum


def _id(ctx, name, post=False):
    """A required id: from the form (``post``) or else the query string."""
    value = None
    if post:
        value = ctx.int_arg(name, None, post=True, minimum=1, maximum=2 ** 31 - 1)
    if value is None:
        value = ctx.int_arg(name, None, minimum=1, maximum=2 ** 31 - 1)
    if value is None:
        raise PageError("parameter %s is missing" % name)
    return value


def _action(ctx, choices):
    action = ctx.req.post("action") or ctx.req.get("action")
    if not action:
        raise PageError("No action specified")
    if action not in choices:
        raise PageError("Unknown action")
    return action


def _reason(ctx):
    reason = ctx.req.post("reason")
    if len(reason) > REASON_MAX:
        raise PageError("parameter reason: at most %d characters" % REASON_MAX,
                        "413 Payload Too Large")
    return reason.strip()


def _category(ctx, allowed):
    value = ctx.int_arg("category", 0, post=True)
    if value and value not in allowed:
        raise PageError("parameter category: %d is not a reason category" % value)
    return value


def _forbidden(message="You are not authorized to moderate this post."):
    return PageError(message, "403 Forbidden", "Not authorized")


def _user(ctx, user_id):
    user = accounts.lookup_user_by_id(ctx.db, user_id)
    if user is None:
        raise PageError("No such user", "404 Not Found", "No such user")
    return user


def _page(ctx, title, parts):
    return render(ctx, title, join(parts))


def _form(ctx, action_page, params, fields, button="OK"):
    """A POST form to ``action_page`` carrying its token."""
    return fmt('<form method="post" action="{}">{}{}{}<p><button type="submit">{}</button>'
               '</p></form>', url(action_page, **params), ctx.token_field(action_page),
               join(fields), Markup(""), button)


def _reason_box(label="Optional explanation (included in the e-mail to the author)"):
    return fmt('<p><label for="reason">{}</label><br>'
               '<textarea name="reason" id="reason" rows="8" cols="60"></textarea></p>', label)


# ---------------------------------------------------------------------------
# notices (forum_email.inc)

def _site(cfg):
    return cfg.secure_url_base or cfg.master_url


def _send(cfg, to_addr, to_name, subject, body):
    """E-mail one message; a failure is logged and the action stands."""
    if not to_addr or not mail.configured(cfg):
        return False
    try:
        mail.send(cfg, to_addr, subject, body, to_name)
        return True
    except mail.MailError as exc:
        sys.stderr.write("moderation e-mail to %s not sent: %s\n" % (to_addr, exc.message))
        return False


def notify_user(ctx, user, subject, body):
    """The author's notice: a private message from themselves (pm_send_msg
    without e-mail, with its notification) and the e-mail unless they opted
    out (user.send_email 0)."""
    db = ctx.db
    now = int(ctx.now)
    try:
        with db.transaction():
            mid = mdb.insert_pm(db, user.id, user.id, now, subject[:255], body)
            mdb.insert_notify(db, user.id, now, mdb.NOTIFY_PM, mid)
    except MissingTableError:
        mdb.ensure_tables(db)
        return notify_user(ctx, user, subject, body)
    if user.send_email:
        _send(ctx.cfg, user.email_addr, user.name, subject, body)


def report(ctx, forum, subject, body):
    """forum_email.inc's mail_report_list: the project's forums report to
    <post_report_emails> (addresses separated by |), a team's forum to the
    team's founder and admins.  True if every e-mail went (False: none to
    send to, or one failed)."""
    cfg, db = ctx.cfg, ctx.db
    if forum is None or forum["parent_type"] == 0:
        addrs = [a.strip() for a in (cfg.post_report_emails or "").split("|") if a.strip()]
        sent = [_send(cfg, addr, "Admin", subject, body) for addr in addrs]
        return bool(sent) and all(sent)
    if forum["parent_type"] == 1:
        rows = db.query("SELECT u.email_addr, u.name FROM user u JOIN team t ON t.userid = u.id "
                        "WHERE t.id = %s UNION SELECT u.email_addr, u.name FROM user u "
                        "JOIN team_admin a ON a.userid = u.id WHERE a.teamid = %s",
                        (forum["category"], forum["category"]))
        sent = [_send(cfg, row["email_addr"], row["name"], subject, body) for row in rows]
        return bool(sent) and all(sent)
    return False


def post_moderation_notice(ctx, moderator, forum, post, thread, explanation, action_name):
    """send_moderation_email: the author's notice and the moderators' report."""
    cfg = ctx.cfg
    author = accounts.lookup_user_by_id(ctx.db, post["user"])
    base = _site(cfg)
    subject = "%s moderation notice" % cfg.long_name
    body = ("Your post [ID %d] in thread '%s'\n%sforum_thread.php?id=%d#%d\n"
            "has been %s by moderator %s (ID %d).\n%s\n\nThe content of your post:\n%s\n\n"
            "For assistance with %s go to %s"
            % (post["id"], thread["title"], base, thread["id"], post["id"], action_name,
               moderator.name, moderator.id, explanation, post["content"], cfg.long_name,
               cfg.master_url))
    if author is not None:
        notify_user(ctx, author, subject, body)
        report(ctx, forum, "%s: post %s in '%s'" % (cfg.long_name, action_name, thread["title"]),
               "Because of moderation by %s (ID %d),\nThe following email was sent to %s "
               "(ID %d)\n%sforum_user_posts.php?userid=%d\n------------------------------\n"
               "Subject: %s\n\n%s\n" % (moderator.name, moderator.id, author.name, author.id,
                                        base, author.id, subject, body))


def thread_moderation_notice(ctx, moderator, forum, thread, action, action_name, explanation):
    """send_thread_moderation_email."""
    cfg = ctx.cfg
    owner = accounts.lookup_user_by_id(ctx.db, thread["owner"])
    body = ("Your thread '%s'\n%sforum_thread.php?id=%d\nhas been %s by moderator %s (ID %d)."
            "\n%s\n\nFor assistance with %s go to %s"
            % (thread["title"], _site(cfg), thread["id"], action_name, moderator.name,
               moderator.id, explanation, cfg.long_name, cfg.master_url))
    subject = "THREAD %s REPORT: %s" % (action, thread["title"])
    report(ctx, forum, subject, body)
    if owner is not None:
        notify_user(ctx, owner, subject, body)


def _date(t):
    return _time.strftime("%b %d, %Y %H:%M", _time.gmtime(t)) + " UTC"


def banish_notice(ctx, forum, user, until, reason):
    """send_banish_email."""
    cfg = ctx.cfg
    body = ("\nYou will not be able to post to the %s message boards\nuntil %s,\n"
            "because your postings have not followed our guidelines.\n"
            % (cfg.long_name, "forever" if until >= FOREVER else _date(until)))
    if reason:
        body += ("\n\nThe moderator gave the following explanation about your suspension:\n"
                 + reason)
    report(ctx, forum, "%s (ID %d) has been banished." % (user.name, user.id), body)
    notify_user(ctx, user, "%s posting privileges suspended" % cfg.long_name, body)


def vote_notice(ctx, user, reason, end_time):
    """send_banish_vote_email."""
    cfg = ctx.cfg
    body = ("\nA vote has been started to banish you\nfrom the %s message boards until %s,\n"
            "because your postings have not followed our guidelines.\n\n"
            "This vote will last until %s or until a majority\ndecision has been reached.  "
            "If the vote does not result in banishment, you will be\nable to resume posting "
            "at that time.\n" % (cfg.long_name, _date(ctx.now + VOTE_BAN), _date(end_time)))
    if reason:
        body += "\n\nThe moderator gave the following reason for your pending suspension:\n"
        body += reason
    notify_user(ctx, user, "%s banishment vote underway" % cfg.long_name, body)
    vote_url = cfg.master_url + "forum_banishment_vote.php"
    body += ("\n\n[vote to banish author] %s?action=yes&userid=%d\n\n"
             "[vote not to banish author] %s?action=no&userid=%d\n"
             % (vote_url, user.id, vote_url, user.id))
    report(ctx, None, "A banishment vote for %s has been started." % user.name, body)


# ---------------------------------------------------------------------------
# banishment votes (forum_banishment_vote.inc)

def _ensure_vote_tables(db):
    ensure_table(db, "banishment_vote")
    ensure_table(db, "banishment_votes")


def current_vote(db, userid, now):
    """The vote in progress about ``userid`` (a banishment_vote row) or None."""
    rows = db.query_if_table("SELECT * FROM banishment_vote WHERE userid = %s AND end_time > %s "
                          "ORDER BY id DESC LIMIT 1", (userid, int(now)))
    return rows[0] if rows else None


def vote_in_progress(db, userid, now):
    return current_vote(db, userid, now) is not None


def tally(db, voteid):
    """(ayes, nays) of a vote (current_tally)."""
    rows = db.query_if_table("SELECT COALESCE(SUM(yes), 0) AS ayes, COUNT(id) - COALESCE(SUM(yes), 0)"
                          " AS nays FROM banishment_votes WHERE voteid = %s", (voteid,))
    return (int(rows[0]["ayes"]), int(rows[0]["nays"])) if rows else (0, 0)


def moderator_count(db):
    """How many volunteer moderators the project has (special_user bit 0)."""
    return int(db.query_value("SELECT COUNT(*) FROM forum_preferences WHERE special_user LIKE "
                              "%s", ("1%",), default=0) or 0)


def resolve_vote(db, vote, now):
    """Settle one vote: a majority of the moderators, or the vote's end,
    decides.  Return "banished", "cleared" or None (still open)."""
    now = int(now)
    ayes, nays = tally(db, vote["id"])
    half = moderator_count(db) / 2.0
    ended = vote["end_time"] <= now
    if not ended and ayes <= half and nays <= half:
        return None
    prefs = accounts.forum_prefs(db, vote["userid"])
    with db.transaction():
        if not ended:
            forum_db.end_banishment_vote(db, vote["id"], now)
        if ayes > nays:
            until = vote["start_time"] + VOTE_BAN
            if prefs["banished_until"] < until:
                accounts.set_banished_until(db, vote["userid"], until)
            return "banished"
        # the interim ban of the vote ends with it
        if prefs["banished_until"] == vote["end_time"] and not ended:
            accounts.set_banished_until(db, vote["userid"], now)
        return "cleared"


def settle_votes(db, now):
    """Votes that ran out since the last look: one with more ayes than nays
    banishes for two weeks from its start (once: the interim ban, which
    equals the vote's end, is still in place)."""
    rows = db.query_if_table("SELECT v.* FROM banishment_vote v JOIN forum_preferences p "
                          "ON p.userid = v.userid WHERE v.end_time <= %s AND "
                          "p.banished_until = v.end_time", (int(now),))
    for vote in rows:
        resolve_vote(db, vote, now)


def start_vote(ctx, moderator, user, reason):
    db = ctx.db
    now = int(ctx.now)
    if vote_in_progress(db, user.id, now):
        return "A banishment vote is already underway for this user."
    _ensure_vote_tables(db)
    end = now + VOTE_LENGTH
    with db.transaction():
        vid = forum_db.insert_banishment_vote(db, user.id, moderator.id, now, end)
        forum_db.insert_banishment_ballot(db, vid, moderator.id, now, True)
        accounts.set_banished_until(db, user.id, end)
    vote_notice(ctx, user, reason, end)
    vote = current_vote(db, user.id, now)
    outcome = resolve_vote(db, vote, now) if vote else None
    return "Banishment vote started." + _outcome_text(outcome)


def _outcome_text(outcome):
    if outcome == "banished":
        return " A majority of the moderators voted to banish: the user is banished."
    if outcome == "cleared":
        return " A majority of the moderators voted not to banish: the vote is over."
    return ""


def cast_vote(ctx, moderator, user, yes):
    db = ctx.db
    now = int(ctx.now)
    vote = current_vote(db, user.id, now)
    if vote is None:
        return "No banishment vote is underway for this user.", None
    if db.query_value("SELECT COUNT(*) FROM banishment_votes WHERE voteid = %s AND modid = %s",
                      (vote["id"], moderator.id)):
        return "You have already voted in this election.", vote
    forum_db.insert_banishment_ballot(db, vote["id"], moderator.id, now, yes)
    outcome = resolve_vote(db, vote, now)
    return "Vote recorded: %s.%s" % ("Aye" if yes else "Nay", _outcome_text(outcome)), vote


# ---------------------------------------------------------------------------
# posts

def _post_context(ctx, post_id):
    post = _post(ctx, post_id)
    thread = _thread(ctx, post["thread"])
    forum = _forum(ctx, thread["forum"])
    return post, thread, forum


def _moderator(ctx, forum, action=False):
    user = ctx.require_action() if action else ctx.require_login()
    if not is_moderator(ctx.db, user, forum):
        raise _forbidden()
    settle_votes(ctx.db, ctx.now)
    return user


def _post_summary(post, thread):
    return kv_table([("Post", "%d in thread '%s'" % (post["id"], thread["title"])),
                     ("Content", fmt('<div class="post">{}</div>', post["content"][:2000]))])


def forum_moderate_post(ctx):
    """The form where a moderator decides what to do to a post."""
    post_id = _id(ctx, "id")
    if not (ctx.req.post("action") or ctx.req.get("action")):
        # the boards' "Moderate post" link: the moderator's choices
        post, thread, forum = _post_context(ctx, post_id)
        user = _moderator(ctx, forum)
        return _page(ctx, "Moderate post", [_post_summary(post, thread), fmt(
            "<p>{}</p>", moderation_links(ctx, user, post, forum))])
    action = _action(ctx, ("hide", "unhide", "move", "banish_user", "delete"))
    post, thread, forum = _post_context(ctx, post_id)
    user = _moderator(ctx, forum)
    page = "forum_moderate_post_action.php"
    params = {"id": post["id"]}
    fields = [hidden("action", action)]
    title = "Moderate post"
    if action == "hide":
        fields += [fmt('<p><label for="category">{}</label> {}</p>', "Reason",
                       select("category", POST_HIDE_REASONS)), _reason_box()]
    elif action == "unhide":
        fields.append(_reason_box())
    elif action == "move":
        fields += [fmt('<p><label for="threadid">{}</label> '
                       '<input name="threadid" id="threadid" size="10"></p>',
                       "Destination thread ID:"), _reason_box()]
    elif action == "banish_user":
        if not may_banish(ctx, user):
            raise _forbidden("Not authorized to banish users")
        bad = _user(ctx, ctx.int_arg("userid", post["user"], minimum=1, maximum=2 ** 31 - 1))
        if accounts.forum_prefs(ctx.db, bad.id)["banished_until"] > ctx.now:
            raise PageError("User is already banished")
        title = "Banish user"
        fields += [fmt("<p>Are you sure you want to banish {}?  This will prevent {} from posting "
                       "for the chosen time.  It should be done only if {} has consistently "
                       "exhibited trollish behavior.</p>", bad.name, bad.name, bad.name),
                   fmt('<p><label for="duration">{}</label> {}</p>', "Ban duration",
                       select("duration", BAN_DURATIONS, 1209600)),
                   hidden("userid", bad.id), hidden("confirmed", "yes"), _reason_box()]
    else:
        if not is_admin(ctx.db, user):
            raise _forbidden("Only administrators may delete posts.")
        fields.append(fmt("<p>{}</p>", "Are you sure you want to delete this post?  This cannot "
                                       "be undone."))
    return _page(ctx, title, [_post_summary(post, thread), _form(ctx, page, params, fields)])


def forum_moderate_post_action(ctx):
    """Hide, unhide, move, delete a post; banish its author."""
    if ctx.req.method != "POST":
        return _confirm(ctx, "forum_moderate_post_action.php", "id",
                        ("unhide",), "Moderate post")
    post_id = _id(ctx, "id", post=True)
    post, thread, forum = _post_context(ctx, post_id)
    user = _moderator(ctx, forum, action=True)
    action = _action(ctx, ("hide", "unhide", "move", "banish_user", "delete"))
    reason = _reason(ctx)
    comment = "\nModerator comment: %s\n" % reason if reason else ""
    db = ctx.db
    explanation = ""
    if action == "hide":
        category = _category(ctx, dict(POST_HIDE_REASONS))
        explanation = ("\nYour post was categorized as %s"
                       % POST_HIDE_WORDS.get(category, "Other")) + comment
        with db.transaction():
            done = forum_db.hide_post(db, post["id"], thread["id"], forum["id"])
        action_name = "hidden"
    elif action == "unhide":
        with db.transaction():
            done = forum_db.unhide_post(db, post["id"], thread["id"], forum["id"])
        action_name = "unhidden"
        explanation = comment
    elif action == "delete":
        if not is_admin(db, user):
            raise _forbidden("Only administrators may delete posts.")
        with db.transaction():
            forum_db.delete_post(db, post["id"], thread["id"], forum["id"])
        if _row(db, "SELECT id FROM thread WHERE id = %s", thread["id"]):
            body = fmt("<p>Post successfully deleted.</p><p>{}</p>",
                       link(url("forum_thread.php", id=thread["id"]), "Return to thread"))
        else:
            body = fmt("<p>Post and thread successfully deleted.</p><p>{}</p>",
                       link(url("forum_forum.php", id=forum["id"]), "Return to forum"))
        return render(ctx, "Post deleted", body)
    elif action == "move":
        dest_id = ctx.int_arg("threadid", None, post=True, minimum=1, maximum=2 ** 31 - 1)
        if dest_id is None:
            raise PageError("parameter threadid is missing")
        dest = _thread(ctx, dest_id)
        dest_forum = _forum(ctx, dest["forum"])
        if forum["parent_type"] != dest_forum["parent_type"]:
            raise PageError("Can't move to different category type")
        if forum["parent_type"] != 0 and forum["category"] != dest_forum["category"]:
            raise PageError("Can't move to different category")
        if dest["id"] == thread["id"]:
            raise PageError("parameter threadid: the post is in that thread already")
        with db.transaction():
            done = forum_db.move_post(db, post["id"], thread["id"], forum["id"], dest["id"],
                                      dest_forum["id"])
        base = _site(ctx.cfg)
        explanation = ("Old thread: %s\n%sforum_thread.php?id=%d\nNew thread: %s\n"
                       "%sforum_thread.php?id=%d&postid=%d\n"
                       % (thread["title"], base, thread["id"], dest["title"], base, dest["id"],
                          post["id"])) + comment
        action_name = "moved to another thread"
    else:
        return _banish(ctx, user, post, forum, reason)
    if not done:
        raise PageError("The post was %s already; nothing was changed." % action_name,
                        "409 Conflict", "Nothing to do")
    post_moderation_notice(ctx, user, forum, post, thread, explanation, action_name)
    raise Redirect(url("forum_thread.php", id=thread["id"]))


def _banish(ctx, user, post, forum, reason):
    if not may_banish(ctx, user):
        raise _forbidden("Not authorized to banish users")
    bad = _user(ctx, _id(ctx, "userid", post=True))
    duration = ctx.int_arg("duration", None, post=True)
    if duration not in dict(BAN_DURATIONS):
        raise PageError("parameter duration: one of %s"
                        % ", ".join(str(d) for d, _ in BAN_DURATIONS))
    until = FOREVER if duration == -1 else int(ctx.now) + duration
    accounts.set_banished_until(ctx.db, bad.id, until)
    banish_notice(ctx, forum, bad, until, reason)
    return render(ctx, "Banishment", fmt("<p>User {} has been banished.</p><p>{}</p>", bad.name,
                                         link(url("forum_thread.php", id=post["thread"]),
                                              "Return to thread")))


def _confirm(ctx, page, id_name, actions, title):
    """A GET of an action page (BOINC's links carried the token in the URL):
    a button that posts the same action with the form token."""
    ident = _id(ctx, id_name)
    action = _action(ctx, actions)
    if id_name == "id":
        forum = _post_context(ctx, ident)[2]
    else:
        forum = _forum(ctx, _thread(ctx, ident)["forum"])
    _moderator(ctx, forum)
    return _page(ctx, title, [_form(ctx, page, {id_name: ident},
                                    [hidden("action", action)], action.capitalize())])


# ---------------------------------------------------------------------------
# threads

THREAD_ACTIONS = ("hide", "unhide", "sticky", "desticky", "lock", "unlock", "move", "title",
                  "delete")


def forum_moderate_thread(ctx):
    """The form where a moderator decides what to do to a thread."""
    thread = _thread(ctx, _id(ctx, "thread"))
    action = _action(ctx, THREAD_ACTIONS)
    forum = _forum(ctx, thread["forum"])
    user = _moderator(ctx, forum)
    fields = [hidden("action", action)]
    if action in ("hide", "lock"):
        fields += [fmt("<p>{}</p>", "Select the reason category, or write a longer "
                                     "description of why you're hiding or locking the "
                                     "thread; then press OK."),
                   fmt('<p><label for="category">{}</label> {}</p>', "Category",
                       select("category", THREAD_REASONS))]
    elif action == "move":
        if forum["parent_type"] != 0:
            raise PageError("Threads of a team's forum stay there.")
        forums = ctx.db.query("SELECT f.id, f.title FROM forum f JOIN category c ON "
                              "c.id = f.category WHERE f.parent_type = 0 "
                              "ORDER BY c.orderID, f.orderID, f.id")
        fields += [kv_table([("Current forum", forum["title"]),
                             ("Destination forum", select("forumid", [
                                 (f["id"], f["title"]) for f in forums], forum["id"]))])]
    elif action == "title":
        fields.append(fmt('<p><label for="newtitle">{}</label> <input size="80" name="newtitle" '
                          'id="newtitle" value="{}"></p>', "New title:", thread["title"]))
    elif action == "delete":
        if not is_admin(ctx.db, user):
            raise _forbidden("Only administrators may delete threads.")
        fields.append(fmt("<p>{}</p>", "Are you sure you want to delete this thread and all its "
                                       "posts?  This action cannot be undone."))
    if action != "delete":
        fields.append(_reason_box("Reason (mailed if nonempty)"))
    return _page(ctx, "Moderate thread '%s'" % thread["title"],
                 [_form(ctx, "forum_moderate_thread_action.php", {"thread": thread["id"]},
                        fields)])


def forum_moderate_thread_action(ctx):
    """Hide/unhide, sticky, lock, move, retitle, delete a thread."""
    if ctx.req.method != "POST":
        return _confirm(ctx, "forum_moderate_thread_action.php", "thread",
                        ("unhide", "sticky", "desticky", "unlock"), "Moderate thread")
    thread = _thread(ctx, _id(ctx, "thread", post=True))
    forum = _forum(ctx, thread["forum"])
    user = _moderator(ctx, forum, action=True)
    action = _action(ctx, THREAD_ACTIONS)
    db = ctx.db
    explanation = ""
    cat = _category(ctx, THREAD_WORDS)
    if cat:
        explanation += "Reason: %s\n" % THREAD_WORDS[cat]
    reason = _reason(ctx)
    if reason:
        explanation += "Moderator comment: %s\n" % reason
    with db.transaction():
        if action == "hide":
            done = forum_db.hide_thread(db, thread["id"], forum["id"])
            action_name = "hidden"
        elif action == "unhide":
            done = forum_db.unhide_thread(db, thread["id"], forum["id"])
            action_name = "unhidden"
        elif action in ("sticky", "desticky"):
            done = forum_db.set_thread_flag(db, thread["id"], "sticky", action == "sticky")
            action_name = "made sticky" if action == "sticky" else "made non-sticky"
        elif action in ("lock", "unlock"):
            done = forum_db.set_thread_flag(db, thread["id"], "locked", action == "lock")
            action_name = "locked" if action == "lock" else "unlocked"
        elif action == "move":
            if forum["parent_type"] != 0:
                raise PageError("Threads of a team's forum stay there.")
            new_forum = _forum(ctx, _id(ctx, "forumid", post=True))
            if new_forum["parent_type"] != 0:
                raise PageError("parameter forumid: not a forum of the project")
            done = forum_db.move_thread(db, thread["id"], forum["id"], new_forum["id"],
                                        int(ctx.now))
            action_name = "moved from %s to %s" % (forum["title"], new_forum["title"])
        elif action == "title":
            new_title = accounts.strip_tags(ctx.req.post("newtitle")).strip()
            if not new_title:
                raise PageError("parameter newtitle: the title is empty")
            if len(new_title) > TITLE_MAX:
                raise PageError("parameter newtitle: at most %d characters" % TITLE_MAX)
            done = forum_db.set_thread_title(db, thread["id"], new_title)
            action_name = "renamed from '%s' to '%s'" % (thread["title"], new_title)
        else:
            if not is_admin(db, user):
                raise _forbidden("Only administrators may delete threads.")
            forum_db.delete_thread(db, thread["id"], forum["id"])
            done = -1
    if done == -1:
        return render(ctx, "Thread deleted", fmt(
            "<p>Thread successfully deleted.</p><p>{}</p>",
            link(url("forum_forum.php", id=forum["id"]), "Return to forum")))
    if not done:
        raise PageError("The thread was %s already; nothing was changed." % action_name,
                        "409 Conflict", "Nothing to do")
    thread_moderation_notice(ctx, user, forum, thread, action, action_name, explanation)
    raise Redirect(url("forum_thread.php", id=thread["id"]))


# ---------------------------------------------------------------------------
# banishment votes

def _vote_moderator(ctx, action=False):
    user = ctx.require_action() if action else ctx.require_login()
    if not has_privilege(_flags(ctx.db, user), (S_MODERATOR,)):
        raise _forbidden("You are not authorized to banish users.")
    if not ctx.cfg.moderators_vote_to_ban:
        raise _forbidden("This project does not hold banishment votes "
                         "(config.xml's moderators_vote_to_ban).")
    settle_votes(ctx.db, ctx.now)
    return user


def _tally_html(db, vote):
    if vote is None:
        return Markup("")
    ayes, nays = tally(db, vote["id"])
    return fmt("<p><b>Current Tally</b> Ayes: {} Nays: {}</p>", ayes, nays)


def forum_banishment_vote(ctx):
    action = _action(ctx, ("start", "yes", "no"))
    _vote_moderator(ctx)
    user = _user(ctx, _id(ctx, "userid"))
    page = "forum_banishment_vote_action.php"
    if action == "start":
        if accounts.forum_prefs(ctx.db, user.id)["banished_until"] > ctx.now:
            raise PageError("User is already banished")
        fields = [hidden("action", "start"), hidden("userid", user.id),
                  fmt("<p>Are you sure you want to banish {}?  This will prevent {} from "
                      "posting for the chosen time.  It should be done only if {} has "
                      "repeatedly violated forum rules.</p>", user.name, user.name, user.name),
                  fmt('<p><label for="category">{}</label> {}</p>', "Category",
                      select("category", VOTE_REASONS)),
                  _reason_box("Reason (mailed if nonempty)")]
        return _page(ctx, "Banishment Vote", [_form(ctx, page, {}, fields,
                                                    "Proceed with vote")])
    vote = current_vote(ctx.db, user.id, ctx.now)
    if vote is None:
        return _page(ctx, "Banishment Vote", [notice("warn", "No banishment vote is underway "
                                                             "for this user.")])
    fields = [hidden("action", action), hidden("userid", user.id),
              fmt("<p>{} {}?</p>", "Vote to banish" if action == "yes" else "Vote not to banish",
                  user.name)]
    return _page(ctx, "Banishment Vote", [_tally_html(ctx.db, vote),
                                          _form(ctx, page, {}, fields, "Vote")])


def forum_banishment_vote_action(ctx):
    moderator = _vote_moderator(ctx, action=True)
    action = _action(ctx, ("start", "yes", "no"))
    user = _user(ctx, _id(ctx, "userid", post=True))
    if action == "start":
        cat = _category(ctx, dict(VOTE_REASONS))
        reason = _reason(ctx) or "None given"
        if cat:
            reason = "%s\n%s" % (dict(VOTE_REASONS)[cat], reason)
        message = start_vote(ctx, moderator, user, reason)
        vote = current_vote(ctx.db, user.id, ctx.now)
    else:
        message, vote = cast_vote(ctx, moderator, user, action == "yes")
    return _page(ctx, "Banishment Vote", [fmt("<p>{}</p>", message), _tally_html(ctx.db, vote)])


# ---------------------------------------------------------------------------
# forum_report_post.php

def forum_report_post(ctx):
    """forum_report_post.php?post=N: a volunteer reports a post to the
    moderators (send_report_post_email: to <post_report_emails>; a team's
    board to its founder and admins and to the project's list too).  The
    form, then its POST (form token, ``post``, ``reason``); the reporter
    needs the forum's rating credit (rate_min_total_credit and
    rate_min_expavg_credit) and must not be banished."""
    posted = ctx.req.method == "POST"
    user = ctx.require_action() if posted else ctx.require_login()
    post, thread, forum = _post_context(ctx, _id(ctx, "post", post=posted))
    common.check_visible(ctx, forum, user)
    if (post["hidden"] or thread["hidden"]) and not is_moderator(ctx.db, user, forum):
        raise PageError("No such post", "404 Not Found", "No such post")
    if accounts.forum_prefs(ctx.db, user.id)["banished_until"] > ctx.now:
        raise PageError("You may not post or report posts while banished.", "403 Forbidden",
                        "Banished")
    if (user.total_credit < forum["rate_min_total_credit"]
            or user.expavg_credit < forum["rate_min_expavg_credit"]):
        raise PageError("You need more average or total credit to report a post.",
                        "403 Forbidden", "Report a forum post")
    back = link(url("forum_thread.php", id=thread["id"], postid=post["id"]), "Return to thread")
    if not posted:
        parts = []
        if not ctx.cfg.no_forum_rating:
            parts.append(fmt("<p>Before reporting this post, consider using the +/- rating "
                             "system instead. If enough users rate a post negatively it will "
                             "eventually be hidden.</p>"))
        parts += [_post_summary(post, thread), _form(ctx, "forum_report_post.php",
                                                     {"post": post["id"]}, [
            hidden("post", post["id"]),
            _reason_box("Why do you find the post offensive? Please include enough "
                        "information so that a person who has not yet read the thread will "
                        "quickly be able to identify the issue.")])]
        return _page(ctx, "Report a forum post", parts)
    reason = _reason(ctx)
    if not reason:
        raise PageError("parameter reason: say why you report the post")
    cfg = ctx.cfg
    owner = accounts.lookup_user_by_id(ctx.db, post["user"])
    subject = "%s post in '%s' reported as offensive" % (cfg.long_name, thread["title"])
    body = ("%s notification:\n\nA post in the %s forums was reported as offensive.\n"
            "    Thread:         %s\n    Post:           %d by %s (%s)\n"
            "    Reporting User: %d (%s)\n    Link:           %sforum_thread.php?id=%d#%d\n\n"
            "Comments from reporting user:\n%s\n\nContents of the post:\n%s\n\n"
            "For assistance with %s go to %s"
            % (cfg.long_name, cfg.long_name, thread["title"], post["id"],
               owner.id if owner else post["user"], owner.name if owner else "deleted user",
               user.id, user.name, _site(cfg), thread["id"], post["id"], reason,
               post["content"], cfg.long_name, cfg.master_url))
    sent = report(ctx, forum, subject, body)
    if forum["parent_type"] != 0:       # a team's board: the project's moderators too
        sent = report(ctx, None, subject, body) and sent
    if not sent:
        raise PageError(fmt("Your report could not be recorded. Please wait a while and try "
                            "again; if this is not a temporary error, please report it to the "
                            "project. {}", back), "503 Service Unavailable",
                        "Report not registered")
    return _page(ctx, "Report registered", [fmt(
        "<p>Your report has been recorded. Thanks for your input.</p><p>A moderator will now "
        "look at your report and decide what will happen - this may take a little while, so "
        "please be patient.</p><p>{}</p>", back)])


PAGES = {
    "forum_report_post.php": forum_report_post,
    "forum_moderate_post.php": forum_moderate_post,
    "forum_moderate_post_action.php": forum_moderate_post_action,
    "forum_moderate_thread.php": forum_moderate_thread,
    "forum_moderate_thread_action.php": forum_moderate_thread_action,
    "forum_banishment_vote.php": forum_banishment_vote,
    "forum_banishment_vote_action.php": forum_banishment_vote_action,
}
