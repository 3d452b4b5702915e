"""Users: ``add_user.php``, ``manage_user.php`` (look up, ban, special-user
flags, job submission rights, delete a spammer), ``list_new_users.php``,
``manage_special_users.php``.

``add_user.php`` creates an account (as BOINC's add_user.php /
make_user_ldap), optionally with a password.

The row is written by :func:`boincpy.web.accounts.make_user`, as for an
account created through create_account.php; without a password the hash is
of a random string, so the account is usable only through its authenticator
(shown once, to attach a client).
"""

import os
import re
import time

from boincpy import passwords
from boincpy.submit import privileges
from boincpy.web import accounts
from boincpy.web.http import Response
from boincpy.web.markup import Markup, fmt, join, link, url
from boincpy.web.ops import names as N
from boincpy.web.ops.lookups import names_by_id
from boincpy.web.page import (PageError, hidden, kv_table, notice, num, paging, render, select,
                              sort_link, table, text_input)

EMAIL_RE = re.compile(r"[^@\s]+@[^@\s]+\.[^@\s]+")


def create_user(db, cfg, email_addr, name, passwd="", now=0):
    """Insert a user row; return (id, authenticator).  PageError if the email
    address or name is already taken."""
    email_addr = passwords.ascii_lower(email_addr.strip())
    if db.query_value("SELECT COUNT(*) FROM user WHERE email_addr = %s", (email_addr,)):
        raise PageError("A user with email address %s already exists." % email_addr,
                        "409 Conflict")
    if db.query_value("SELECT COUNT(*) FROM user WHERE name = %s", (name,)):
        raise PageError("A user named %s already exists." % name, "409 Conflict")
    client_hash = (passwords.client_passwd_hash(passwd, email_addr) if passwd
                   else passwords.random_string())
    user = accounts.make_user(db, cfg, email_addr, name, client_hash, country="", now=now)
    return user.id, user.authenticator


def add_user(ctx):
    """GET: the form; POST (with the form token): create the user."""
    parts = []
    if ctx.req.method == "POST":
        ctx.require_action()
        email = ctx.req.post("email").strip()
        name = ctx.req.post("name").strip()
        passwd = ctx.req.post("passwd")
        if not EMAIL_RE.fullmatch(email) or len(email) > 191:
            raise PageError("Email address %r is not valid." % email)
        if not name or len(name) > 191:
            raise PageError("Give a user name (at most 191 characters).")
        userid, auth = create_user(ctx.db, ctx.cfg, email, name, passwd, ctx.now)
        parts.append(notice("ok", fmt("User {} created with ID {}. Account key (authenticator): "
                                      "<code>{}</code>", name, userid, auth)))
        parts.append(fmt("<p>{}</p>", link(url("db_action.php", table="user", id=userid),
                                           "Show user %d" % userid)))
    parts.append(fmt(
        '<form class="filters" method="post" action="add_user.php">{}'
        '<label for="name">User name</label><div>{}</div>'
        '<label for="email">Email address</label><div>{}</div>'
        '<label for="passwd">Password (optional)</label><div>'
        '<input type="password" name="passwd" id="passwd" size="30" autocomplete="new-password">'
        '</div><span></span><div><button type="submit">Create user</button></div></form>',
        ctx.token_field(), text_input("name", "", 30), text_input("email", "", 30)))
    return render(ctx, "Add user", join(parts))


# ---------------------------------------------------------------------------
# manage_user.php

# BOINC's suspension choices (seconds, label), plus longer ones for spammers.
BAN_CHOICES = ((3600, "1 hour"), (7200, "2 hours"), (18000, "6 hours"), (36000, "12 hours"),
               (86400, "24 hours"), (172800, "48 hours"), (7 * 86400, "1 week"),
               (14 * 86400, "2 weeks"), (365 * 86400, "1 year"), (10 * 365 * 86400, "10 years"))

BAN_EFFECT = ("While banned, a user can't change their public name, URL or country "
              "(am_set_info.php) or create a team (create_team.php); BOINC's message "
              "boards, if you run them on this database, refuse their posts.")


def find_users(db, text, limit=50):
    """Users matching an ID, a name or an e-mail address exactly, else those
    whose name or address contains ``text``."""
    if text.isdigit():
        rows = db.query("SELECT id, name, email_addr, create_time FROM user WHERE id = %s",
                        (int(text),))
        if rows:
            return rows
    rows = db.query("SELECT id, name, email_addr, create_time FROM user "
                    "WHERE name = %s OR email_addr = %s", (text, passwords.ascii_lower(text)))
    if rows:
        return rows
    pattern = "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
    return db.query("SELECT id, name, email_addr, create_time FROM user "
                    "WHERE name LIKE %s OR email_addr LIKE %s ORDER BY id DESC LIMIT %s",
                    (pattern, pattern, limit))


def _lookup_form(value=""):
    return fmt('<form class="inline" method="get" action="manage_user.php">'
               '<label for="user">User ID, name or e-mail address</label> {} '
               '<button type="submit">Look up</button></form>', text_input("user", value, 30))


def manage_user(ctx):
    """``manage_user.php``: look a user up; ``?userid=N``: ban, special-user
    flags, job submission rights, delete (a spammer)."""
    post = ctx.req.method == "POST"
    userid = ctx.int_arg("userid", None, post=post, minimum=1)
    if post and userid is None:
        raise PageError("userid: which user? Nothing was changed.")
    if userid is None:
        text = ctx.req.get("user")
        parts = [_lookup_form(text)]
        if text:
            found = find_users(ctx.db, text)
            if len(found) == 1:
                return _manage_page(ctx, found[0]["id"])
            parts.append(table(("ID", "Name", "E-mail", "Created"), [
                (r["id"], link(url("manage_user.php", userid=r["id"]), r["name"]),
                 r["email_addr"], N.time_text(r["create_time"])) for r in found],
                empty="no user matches %s" % text))
        parts.append(fmt("<p>{} &middot; {}</p>", link("list_new_users.php", "Newest users"),
                         link("manage_special_users.php", "Special users")))
        return render(ctx, "Manage user", join(parts))
    message = Markup("")
    if post:
        ctx.require_action()
        message = _manage_post(ctx, userid)
        if isinstance(message, Response):
            return message
    elif ctx.req.get("delete"):
        return _delete_confirm(ctx, userid)
    return _manage_page(ctx, userid, message)


def _user_or_404(db, userid):
    user = accounts.lookup_user_by_id(db, userid)
    if user is None:
        raise PageError("no user with ID %d" % userid, "404 Not Found", "Not found")
    return user


def _manage_post(ctx, userid):
    """Do the POSTed action; the notice to show (or the page saying the user
    was deleted)."""
    db = ctx.db
    user = _user_or_404(db, userid)
    action = ctx.req.post("action")
    if action == "ban":
        seconds = ctx.int_arg("ban_for", None, post=True)
        reason = ctx.req.post("reason")
        if seconds is None:
            raise PageError("Choose how long the ban lasts; nothing was changed.")
        if seconds > 0 and not reason:
            raise PageError("Give the reason for the ban; nothing was changed.")
        if seconds == -1:
            accounts.set_banished_until(db, userid, 0)
            log_action(ctx, "unbanned user %d (%s): %s" % (userid, user.name, reason))
            return notice("ok", "User %s may post again." % user.name)
        if seconds not in dict(BAN_CHOICES):
            raise PageError("ban_for: %d is not one of the offered durations" % seconds)
        until = ctx.now + seconds
        accounts.set_banished_until(db, userid, until)
        log_action(ctx, "banned user %d (%s) until %s: %s"
                   % (userid, user.name, N.time_text(until), reason))
        return notice("ok", "User %s is banned until %s." % (user.name, N.time_text(until)))
    if action == "special":
        flags = set()
        for text in ctx.req.post_all("flag"):
            if not text.isdigit() or int(text) >= len(accounts.SPECIAL_USER_FLAGS):
                raise PageError("flag: %r is not a special-user flag" % text)
            flags.add(int(text))
        bits = accounts.set_special_user(db, userid, flags)
        log_action(ctx, "special-user flags of user %d (%s): %s" % (userid, user.name, bits))
        return notice("ok", "Special-user flags of %s: %s." % (
            user.name, ", ".join(accounts.special_flags(bits)) or "none"))
    if action in ("grant_submit", "revoke_submit"):
        return _submit_rights_post(ctx, user, action)
    if action == "delete":
        refusal = _delete_refusal(db, user)
        if refusal:
            raise PageError(refusal + " Nothing was deleted.", "409 Conflict")
        done = accounts.delete_account(db, user, ctx.now)
        log_action(ctx, "deleted user %d (%s <%s>): %s" % (
            userid, user.name, user.email_addr,
            ", ".join("%s %d" % kv for kv in done.items() if kv[1])))
        return _deleted_page(ctx, user, done)
    raise PageError("unknown action %r; nothing was changed" % action)


def _submit_rights_post(ctx, user, action):
    db = ctx.db
    app_text = ctx.req.post("app")
    if app_text in ("", "all"):
        app_id, app_name = 0, "all applications"
    else:
        app = db.query_one("SELECT id, name FROM app WHERE id = %s",
                           (ctx.int_arg("app", None, post=True, minimum=1),))
        if app is None:
            raise PageError("no application with ID %s; nothing was changed" % app_text)
        app_id, app_name = app["id"], app["name"]
    if action == "revoke_submit":
        if not privileges.revoke_submit(db, user.id, app_id):
            raise PageError("%s has no job submission rights for %s; nothing was changed."
                            % (user.name, app_name))
        log_action(ctx, "revoked job submission of user %d for %s" % (user.id, app_name))
        return notice("ok", "%s may no longer submit jobs of %s." % (user.name, app_name))
    quota = _float_arg(ctx, "quota", "Quota")
    limit = ctx.int_arg("max_jobs_in_progress", None, post=True, minimum=0)
    privileges.grant_submit(db, user.id, app_id, quota, limit)
    log_action(ctx, "granted job submission to user %d for %s" % (user.id, app_name))
    return notice("ok", "%s may submit jobs of %s." % (user.name, app_name))


def _float_arg(ctx, name, label):
    text = ctx.req.post(name)
    if text == "":
        return None
    try:
        value = float(text)
    except ValueError:
        raise PageError("%s: %r is not a number; nothing was changed" % (label, text)) from None
    if not value >= 0:
        raise PageError("%s: must be 0 or more; nothing was changed" % label)
    return value


def log_action(ctx, text):
    """One line in the ops log (log_HOST/ops.log): who did what, when."""
    path = os.path.join(ctx.cfg.log_dir, "ops.log")
    stamp = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(ctx.now))
    try:
        with open(path, "a", encoding="utf-8") as f:
            f.write("%s [normal] [%s] %s\n" % (stamp, ctx.user, text.replace("\n", " ")))
    except OSError:
        pass        # the action is done; the log line is a courtesy


def _counts(db, user):
    return {
        "hosts": db.query_value("SELECT COUNT(*) FROM host WHERE userid = %s", (user.id,), 0),
        "results": db.query_value("SELECT COUNT(*) FROM result WHERE userid = %s",
                                  (user.id,), 0),
        "teams founded": db.query_value("SELECT COUNT(*) FROM team WHERE userid = %s",
                                        (user.id,), 0),
    }


def _delete_refusal(db, user):
    """Why this account must not be deleted from here, or ""."""
    if user.total_credit > 0:
        return ("%s has %.2f credit: a volunteer who computed for the project, not a "
                "spammer." % (user.name, user.total_credit))
    return ""


def _manage_page(ctx, userid, message=Markup("")):
    db = ctx.db
    user = _user_or_404(db, userid)
    prefs = accounts.forum_prefs(db, userid)
    counts = _counts(db, user)
    team = accounts.lookup_team_by_id(db, user.teamid) if user.teamid else None
    banned = prefs["banished_until"]
    ban_text = ("banned until %s (%s from now)" % (N.time_text(banned),
                                                   N.age_text(banned - ctx.now))
                if banned > ctx.now else
                "not banned (last ban ended %s)" % N.time_text(banned) if banned
                else "not banned")
    pairs = [
        ("ID", user.id), ("Name", user.name),
        ("E-mail", "%s (%s)" % (user.email_addr,
                                "validated" if user.email_validated else "not validated")),
        ("Created", N.time_text(user.create_time)), ("Country", user.country),
        ("URL", user.url), ("Team", link(url("db_action.php", table="team", id=team.id), team.name)
                            if team else "none"),
        ("Total credit", num(user.total_credit)), ("Recent average credit", num(user.expavg_credit)),
        ("Hosts", link(url("db_action.php", table="host", userid=user.id), counts["hosts"])),
        ("Results", link(url("db_action.php", table="result", userid=user.id), counts["results"])),
        ("Teams founded", link(url("db_action.php", table="team", userid=user.id),
                               counts["teams founded"])),
        ("Ban", ban_text),
        ("Special user", ", ".join(accounts.special_flags(prefs["special_user"])) or "no"),
        ("Details", link(url("db_action.php", table="user", id=user.id), "all columns")),
    ]
    token = ctx.token_field()
    choices = list(BAN_CHOICES) + ([(-1, "lift the ban")] if banned > ctx.now else [])
    ban_form = fmt(
        '<form method="post" action="manage_user.php">{}{}{}'
        '<p>Ban for: {}</p><p><label for="reason">Reason (required)</label><br>'
        '<textarea name="reason" id="reason" rows="3" cols="50"></textarea></p>'
        '<button type="submit" id="ban">Update ban</button></form>'
        '<p class="muted small">{}</p>',
        token, hidden("userid", user.id), hidden("action", "ban"),
        join(fmt('<label><input type="radio" name="ban_for" value="{}"{}> {}</label>',
                 s, Markup(' id="ban_%d"' % s) if s > 0 else Markup(' id="unban"'), label)
             for s, label in choices), BAN_EFFECT)
    special_form = fmt(
        '<form method="post" action="manage_user.php">{}{}{}{}'
        '<button type="submit" id="special">Update flags</button></form>',
        token, hidden("userid", user.id), hidden("action", "special"),
        join(fmt('<label><input type="checkbox" name="flag" value="{}"{}> {}</label><br>', i,
                 Markup(" checked") if prefs["special_user"][i:i + 1] == "1" else Markup(""),
                 name) for i, name in enumerate(accounts.SPECIAL_USER_FLAGS)))

    us = privileges.user_submit(db, user.id)
    rights = []
    if us is not None:
        if us.submit_all:
            rights.append(("all applications", "submit", ""))
        if us.manage_all:
            rights.append(("all applications", "manage", ""))
        for r in db.query("SELECT usa.app_id, usa.manage, app.name FROM user_submit_app usa "
                          "LEFT JOIN app ON app.id = usa.app_id WHERE usa.user_id = %s "
                          "ORDER BY usa.app_id", (user.id,)):
            rights.append((r["name"] or "app %d" % r["app_id"],
                           "submit and manage" if r["manage"] else "submit", r["app_id"]))
    right_rows = [(name, what, fmt(
        '<form class="inline" method="post" action="manage_user.php">{}{}{}{}'
        '<button type="submit">Revoke</button></form>', token, hidden("userid", user.id),
        hidden("action", "revoke_submit"), hidden("app", app_id or "all")))
        for name, what, app_id in rights]
    apps = [(a["id"], a["name"]) for a in db.query("SELECT id, name FROM app WHERE deprecated = 0 "
                                                   "ORDER BY name")]
    submit_part = fmt(
        "{}{}<form method=\"post\" action=\"manage_user.php\">{}{}{}"
        '<label for="app">Application</label> {} '
        '<label for="quota">Quota</label> {} '
        '<label for="max_jobs_in_progress">Max jobs in progress</label> {} '
        '<button type="submit" id="grant_submit">Grant job submission</button></form>'
        '<p class="muted small">Quota: the submitter\'s share of the project against the other '
        "submitters' quotas (empty: 1, or unchanged); max jobs in progress: 0 or empty, no "
        "limit. All submitters, and the manage privilege: {}; from a shell: "
        "bin/manage_privileges.</p>",
        Markup("") if us else Markup("<p>No job submission rights.</p>"),
        table(("Application", "Rights", ""), right_rows) if rights else Markup(""),
        token, hidden("userid", user.id), hidden("action", "grant_submit"),
        select("app", [("all", "all applications")] + apps, "all"),
        text_input("quota", "", 6), text_input("max_jobs_in_progress", "", 6),
        link("manage_privileges.php", "job submission privileges"))
    delete_part = fmt(
        "<p>Deleting removes the account with its hosts, teams it founded that nobody "
        "joined, and everything else that is the user's; results stay, without the user. "
        "boincpy has no message boards: there are no posts to delete.</p><p>{}</p>",
        link(url("manage_user.php", userid=user.id, delete=1), "Delete this account..."))
    body = fmt('{}<p>{}</p>{}<div class="cols"><div><h2>Ban</h2>{}</div>'
               "<div><h2>Special user flags</h2>{}</div></div>"
               "<h2>Job submission</h2>{}<h2>Delete (a spammer)</h2>{}",
               message, _lookup_form(), kv_table(pairs), ban_form, special_form,
               submit_part, delete_part)
    return render(ctx, "Manage user %s" % user.name, body)


def _delete_confirm(ctx, userid):
    db = ctx.db
    user = _user_or_404(db, userid)
    refusal = _delete_refusal(db, user)
    if refusal:
        return render(ctx, "Delete user %s" % user.name, fmt(
            "{}<p>{}</p>", notice("bad", refusal + " This page deletes spammers' accounts only."),
            link(url("manage_user.php", userid=user.id), "Back")), "409 Conflict")
    counts = _counts(db, user)
    body = fmt(
        "{}<ul><li>the account {} &lt;{}&gt; (ID {}), created {}</li>"
        "<li>its {} host(s), with their per-app-version statistics and messages</li>"
        "<li>{} result(s) lose their user and host; those in progress or not yet validated "
        "are marked abandoned, so their jobs are sent again</li>"
        "<li>teams it founded that have no other member and no credit ({} founded in all)</li>"
        "<li>its team membership, job submission rights, credit by application, consent "
        "records, tokens, profile, special-user flags and ban</li></ul>"
        "<p>Statistics sites learn of the deletion through db_dump's deleted-user and "
        "deleted-host lists. boincpy has no message boards: there are no posts.</p>"
        '<form method="post" action="manage_user.php">{}{}{}'
        '<button type="submit" class="danger" id="confirm_delete">Delete {}</button> {}</form>',
        notice("warn", "This deletes, and can't be undone:"), user.name, user.email_addr,
        user.id, N.time_text(user.create_time), counts["hosts"], counts["results"],
        counts["teams founded"], ctx.token_field(), hidden("userid", user.id),
        hidden("action", "delete"), user.name,
        link(url("manage_user.php", userid=user.id), "Back"))
    return render(ctx, "Confirm: delete user %s" % user.name, body)


def _deleted_page(ctx, user, done):
    rows = [(what, n) for what, n in done.items() if n]
    return render(ctx, "User deleted", fmt(
        "{}{}<p>{}</p>", notice("ok", "User %s (ID %d) deleted." % (user.name, user.id)),
        table(("Deleted or changed", "Rows"), rows), link("list_new_users.php", "Newest users")))


# ---------------------------------------------------------------------------
# list_new_users.php, manage_special_users.php

NEW_USER_SORTS = (("create_time", "Joined"), ("id", "ID"), ("name", "Name"),
                  ("total_credit", "Credit"))


def _roles(prefs, now):
    """Special-user flags and ban state of a user, for a list cell."""
    out = accounts.special_flags(prefs["special_user"])
    if prefs["banished_until"] > now:
        out.append("banned until %s" % N.time_text(prefs["banished_until"]))
    elif prefs["banished_until"]:
        out.append("previously banned")
    return ", ".join(out)


def _user_rows(ctx, db, users):
    prefs = accounts.forum_prefs_of(db, (u["id"] for u in users))
    teams = names_by_id(db, "team", "name", (u["teamid"] for u in users))
    ids = [u["id"] for u in users]
    hosts = ({r["userid"]: r["n"] for r in db.query(
        "SELECT userid, COUNT(*) AS n FROM host WHERE userid IN (%s) GROUP BY userid"
        % ", ".join(["%s"] * len(ids)), ids)} if ids else {})
    default = {"special_user": "0", "banished_until": 0}
    return [(u["id"],
             fmt("{} {}", link(url("manage_user.php", userid=u["id"]), u["name"]),
                 fmt('<span class="small">[{}]</span>', roles) if roles else ""),
             fmt('<span class="{}">{}</span>', "" if u["email_validated"] else "muted",
                 u["email_addr"]),
             teams.get(u["teamid"], "") if u["teamid"] else "", u["country"],
             N.time_text(u["create_time"]), hosts.get(u["id"], 0), num(u["total_credit"]))
            for u in users
            for roles in [_roles(prefs.get(u["id"], default), ctx.now)]]


USER_HEADERS = ("ID", "Name", "E-mail", "Team", "Country", "Joined", "Hosts", "Credit")


def list_new_users(ctx):
    """``list_new_users.php?limit=N``: the newest accounts, with their roles and
    bans; sortable and paged."""
    limit = ctx.int_arg("limit", 30, minimum=1, maximum=1000)
    start = ctx.int_arg("start", 0, minimum=0)
    sort = ctx.req.get("sort") or "create_time"
    order = ctx.req.get("order") or "desc"
    if sort not in dict(NEW_USER_SORTS) or order not in ("asc", "desc"):
        raise PageError("sort: one of %s; order: asc or desc"
                        % ", ".join(c for c, _ in NEW_USER_SORTS))
    db = ctx.db
    total = db.query_value("SELECT COUNT(*) FROM user", None, 0)
    users = db.query("SELECT id, name, email_addr, email_validated, teamid, country, "
                     "create_time, total_credit FROM user ORDER BY %s %s, id DESC "
                     "LIMIT %%s OFFSET %%s" % (sort, order.upper()), (limit, start))
    params = {"limit": limit if limit != 30 else None}
    by_label = {"ID": "id", "Name": "name", "Joined": "create_time", "Credit": "total_credit"}

    def head(label):
        if label not in by_label:
            return label
        return sort_link("list_new_users.php", params, by_label[label], label, sort, order)

    body = fmt(
        '<form class="inline" method="get" action="list_new_users.php">'
        '<label for="limit">Users per page</label> {} <button type="submit">Show</button>'
        "</form><p>{:,} users. The name opens the user's management page (ban, special "
        "user flags, job submission, delete); e-mail addresses in grey are not "
        "validated.</p>{}{}",
        text_input("limit", limit, 5, "number"), total,
        table(USER_HEADERS, _user_rows(ctx, db, users), empty="There are no users.", head=head),
        paging("list_new_users.php", dict(params, sort=sort, order=order), start, len(users),
               total, limit))
    return render(ctx, "New users", body)


def manage_special_users(ctx):
    """``manage_special_users.php``: the users with special-user flags."""
    db = ctx.db
    ids = accounts.special_user_ids(db)
    users = (db.query("SELECT id, name, email_addr, email_validated, teamid, country, "
                      "create_time, total_credit FROM user WHERE id IN (%s) ORDER BY id"
                      % ", ".join(["%s"] * len(ids)), ids) if ids else [])
    body = fmt("<p>Users with special-user flags (project administrator, scientist, "
               "moderator...). Set them on a user's {} page.</p>{}{}",
               link("manage_user.php", "management"), _lookup_form(),
               table(USER_HEADERS, _user_rows(ctx, db, users), empty="no special users"))
    return render(ctx, "Special users", body)
