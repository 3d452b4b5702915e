"""``add_user.php``: create an account from the ops area (as BOINC's
add_user.php / make_user_ldap), optionally with a password.

The row is written by :func:`boincpy.web.accounts.make_user`, as for an
account created through create_account.php; without a password the hash is
of a random string, so the account is usable only through its authenticator
(shown once, to attach a client).
"""

import re

from boincpy import passwords
from boincpy.web import accounts
from boincpy.web.markup import fmt, join, link, url
from boincpy.web.ops.page import PageError, notice, render, text_input

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
