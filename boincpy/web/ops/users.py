"""``add_user.php``: create an account from the ops area (as BOINC's
add_user.php / make_user_ldap), optionally with a password.

A password is stored in BOINC's original form, MD5(password + lowercase
email) in hex, which BOINC's web code and clients accept (and the PHP code
re-hashes on first login); without one the hash is random, so the account
is usable only through its authenticator (shown once, to attach a client).
"""

import hashlib
import re
import secrets

from boincpy.web.markup import fmt, join, link, url
from boincpy.web.ops.page import PageError, notice, render, text_input

EMAIL_RE = re.compile(r"[^@\s]+@[^@\s]+\.[^@\s]+")


def passwd_hash(passwd, email_addr):
    """BOINC's client-side password hash: md5(password + lowercase email)."""
    return hashlib.md5((passwd + email_addr.lower()).encode("utf-8")).hexdigest()


def create_user(db, email_addr, name, passwd="", now=0, show_hosts=1):
    """Insert a user row; return (id, authenticator).  PageError if the email
    address or name is already taken."""
    email_addr = email_addr.strip().lower()
    if db.query_value("SELECT COUNT(*) FROM user WHERE email_addr = %s", (email_addr,)):
        raise PageError("A user with email address %s already exists." % email_addr,
                        "409 Conflict")
    if db.query_value("SELECT COUNT(*) FROM user WHERE name = %s", (name,)):
        raise PageError("A user named %s already exists." % name, "409 Conflict")
    authenticator = secrets.token_hex(16)
    stored = passwd_hash(passwd, email_addr) if passwd else secrets.token_hex(16)
    userid = db.insert(
        "INSERT INTO user (create_time, email_addr, name, authenticator, country, postal_code, "
        "total_credit, expavg_credit, expavg_time, project_prefs, teamid, send_email, "
        "show_hosts, cross_project_id, passwd_hash) "
        "VALUES (%s, %s, %s, %s, '', '', 0, 0, %s, '', 0, 1, %s, %s, %s)",
        (now, email_addr, name, authenticator, now, show_hosts, secrets.token_hex(16), stored))
    return userid, authenticator


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
        privacy = ctx.cfg.get("enable_privacy_by_default")
        userid, auth = create_user(ctx.db, email, name, passwd, ctx.now,
                                   0 if privacy not in (None, "", "0") else 1)
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
