"""Who is looking at the project's web site: BOINC's login cookie.

BOINC's web site knows its user by the cookie ``auth``, the account's
authenticator, which its login page sets.  Every page in ``html/user`` (the
volunteer's pages and the submitters' ``submit.php``) reads it here:

=====================  =======================================================
``login_form.php``     e-mail address and password ("stay logged in" keeps the
                       cookie a year, else it lasts the browser session)
``login_action.php``   checks them as ``lookup_account.php`` does (the
                       password, or the account key as BOINC also allows),
                       sets the cookie, sends the browser on to ``next_url``
                       ``?id=N&t=T&h=TOKEN``: the one-time login link
                       get_passwd.php e-mails (then edit_passwd_form.php)
``logout.php``         a form (with its token) that clears the cookie
=====================  =======================================================

The cookie is ``HttpOnly`` and ``SameSite=Lax``, ``Secure`` when the request
came over HTTPS, and its path is the master URL's (BOINC's send_cookie), so
the ops pages never see it.  A failed login says nothing of whether the
address has an account, and counts against the address and the account as
in lookup_account.php (boincpy.web.accounts): past the limit, logins are
refused before any password is checked, and nothing sleeps in a web worker.
Forms that change something carry a token made for the logged-in account
(:mod:`boincpy.web.csrf`, the project's form secret), which
:meth:`UserContext.require_action` checks.
"""

import re

from boincpy import passwords
from boincpy.cnum import int64, php_numeric
from boincpy.web import accounts, csrf
from boincpy.web.http import cookie_header, url_path
from boincpy.web.markup import fmt, join, link, url
from boincpy.web.page import (Context, PageError, Redirect, Site, hidden, notice, render,
                              text_input)
from boincpy.web.rpc import TOO_MANY_FAILURES

COOKIE = "auth"
STAY_LOGGED_IN = 365 * 86400

# The volunteer's navigation; its first entry is the site's main page.
USER_SITE = Site((("index.php", "Project"), ("home.php", "Your account"),
                  ("prefs.php?subset=global", "Preferences"), ("results.php", "Tasks"),
                  ("hosts_user.php", "Computers"), ("team.php", "Teams"),
                  ("top_users.php", "Statistics"), ("forum_index.php", "Message boards"),
                  ("old_news.php", "News")),
                 "BOINC project", show_tracebacks=False)
SUBMIT_SITE = Site((("submit.php", "Your batches"), ("submit.php?action=admin", "Manage apps"),
                    ("home.php", "Your account")),
                   "boincpy job submission", show_tracebacks=False)

# A next_url is one of these pages, with its query: never another site.
_LOCAL_URL = re.compile(r"^[A-Za-z0-9_]+\.php(\?[\x21-\x5b\x5d-\x7e]*)?$")
# What an authenticator may hold to be sent back in a cookie.
_COOKIE_VALUE = re.compile(r"^[A-Za-z0-9_.\-]+$")


class UserContext(Context):
    """A page's request, config and database, and the logged-in account
    (``account``, from the ``auth`` cookie) once :meth:`logged_in_user` ran."""

    site = USER_SITE

    def __init__(self, req, cfg, now=None, page="", site=None):
        super().__init__(req, cfg, now, page)
        self.user = ""              # whom form tokens are made for (set at login)
        self.account = None
        if site is not None:
            self.site = site

    def who(self):
        if self.account is None:
            return fmt('<span class="who">{}</span>', link("login_form.php", "Log in"))
        return fmt('<span class="who">{} &middot; {}</span>',
                   link("home.php", self.account.name), link("logout.php", "Log out"))

    def logged_in_user(self):
        """The account the ``auth`` cookie names (None: not logged in).  An
        account disabled by the project (its key starts with ``x``) is not
        logged in."""
        if self.account is None:
            user = accounts.lookup_user_by_auth(self.db, self.req.cookie(COOKIE) or "")
            if user is not None and not user.authenticator.startswith("x"):
                self.set_account(user)
        return self.account

    def set_account(self, user):
        self.account = user
        # tokens die with the account key: a new key ends every open form
        self.user = "user:%d:%s" % (user.id, user.authenticator)

    def require_login(self):
        """The logged-in account; not logged in: off to the login form, and
        back here afterwards."""
        if self.logged_in_user() is None:
            raise Redirect(url("login_form.php", next_url=self.req.this_url()))
        return self.account

    def require_action(self):
        """A logged-in account's same-site POST with its valid form token
        (the account, for the handler)."""
        user = self.require_login()
        super().require_action()
        return user


def set_cookie(ctx, value, max_age=None):
    """The Set-Cookie header pair of the login cookie (max_age 0: delete it),
    on the master URL's path (BOINC's send_cookie): one login per project."""
    return cookie_header(COOKIE, value, url_path(ctx.cfg.master_url), max_age,
                         secure=ctx.req.is_https)


def safe_next_url(text, default="home.php"):
    """A next_url that stays on this site (BOINC's sanitize_local_url), else ``default``."""
    text = (text or "").strip()
    return text if _LOCAL_URL.match(text) else default


# ---------------------------------------------------------------------------
# login_form.php, login_action.php, logout.php

def login_form(ctx):
    """The login form (and who is logged in already)."""
    next_url = safe_next_url(ctx.req.get("next_url"))
    parts = []
    user = ctx.logged_in_user()
    if user is not None:
        parts.append(notice("ok", fmt("You are logged in as {}. {} or log in as someone else:",
                                      user.name, link(next_url, "Continue"))))
    parts.append(fmt(
        '<form class="filters" method="post" action="login_action.php">{}'
        '<label for="email_addr">Email address</label><div>{}</div>'
        '<label for="passwd">Password</label><div><input type="password" name="passwd" '
        'id="passwd" size="30" autocomplete="current-password"></div>'
        '<label for="stay_logged_in">Stay logged in</label><div><input type="checkbox" '
        'name="stay_logged_in" id="stay_logged_in" value="1"></div>'
        '<span></span><div><button type="submit">Log in</button></div></form>'
        '<p class="muted small">The password of your account on this project (your account '
        'key works too). Logging in sets a cookie that identifies you to these pages.</p>',
        hidden("next_url", next_url), text_input("email_addr", "", 30)))
    parts.append(fmt("<p>{} &middot; {}</p>", link("get_passwd.php", "Forgot your password?"),
                     link("create_account_form.php", "Create an account")))
    return render(ctx, "Log in", join(parts))


def _login_failed(ctx, message, keys):
    accounts.record_login_failure(ctx.db, keys)
    raise PageError(message, "403 Forbidden", "Login failed")


def login_action(ctx):
    """Check the form's e-mail address and password; set the cookie.  With
    ``h``: the login link get_passwd.php e-mails (:func:`login_via_link`)."""
    req = ctx.req
    if req.get("h") or req.post("h"):
        return login_via_link(ctx)
    if req.method != "POST":
        raise PageError("Log in through the login form.", "405 Method Not Allowed",
                        "Login failed")
    if not csrf.same_origin(req.environ):
        raise PageError("The login form was posted from another site.", "403 Forbidden",
                        "Login failed")
    email_addr = passwords.ascii_lower(req.post("email_addr"))
    passwd = req.post("passwd")
    if not email_addr or not passwd:
        raise PageError("Give your email address and your password.")
    keys = accounts.login_failure_keys(req.remote_addr)
    if accounts.logins_refused(ctx.db, keys):
        raise PageError(TOO_MANY_FAILURES, "403 Forbidden", "Login failed")
    user = accounts.lookup_user_by_email(ctx.db, email_addr)
    wrong = "Wrong email address or password: go back and try again."
    if user is None:
        _login_failed(ctx, wrong, keys)
    keys = accounts.login_failure_keys(req.remote_addr, user)
    if accounts.logins_refused(ctx.db, keys):
        raise PageError(TOO_MANY_FAILURES, "403 Forbidden", "Login failed")
    if user.authenticator.startswith("x"):
        _login_failed(ctx, "This account has been disabled by the project.", keys)
    # BOINC allows the account key as the password
    if passwd != user.authenticator and not accounts.check_passwd(
            ctx.db, user, passwords.client_passwd_hash(passwd, email_addr)):
        _login_failed(ctx, wrong, keys)
    if not _COOKIE_VALUE.match(user.authenticator):
        raise PageError("This account's key can't be sent as a cookie; ask the project "
                        "to give it a new one.", "500 Internal Server Error", "Login failed")
    max_age = STAY_LOGGED_IN if req.post("stay_logged_in") else None
    raise Redirect(safe_next_url(req.post("next_url")),
                   [set_cookie(ctx, user.authenticator, max_age)])


LINK_EXPIRED = ("This login link is not valid: it is incomplete (your e-mail program may "
                "have split it across lines), expired or already used. Get a new one from "
                "the password reset page (get_passwd.php).")


def login_via_link(ctx):
    """login_action.php?id=N&t=T&h=TOKEN, BOINC's e-mailed login link, here
    one-time: the token is a row of the ``token`` table (type
    accounts.TOKEN_LOGIN_LINK, a day) that the login spends.  The GET shows
    a button (mail scanners that fetch links don't spend it); its POST logs
    in and goes on to edit_passwd_form.php.  A wrong token counts as a
    failed login."""
    req = ctx.req
    args = req.form if req.method == "POST" else req.query
    userid = int64(php_numeric((args.get("id") or [""])[-1]))
    token = (args.get("h") or [""])[-1]
    stamp = (args.get("t") or [""])[-1]
    if not userid or userid <= 0:
        raise PageError(LINK_EXPIRED, "403 Forbidden", "Login failed")
    if req.method != "POST":
        return render(ctx, "Log in", fmt(
            '<form method="post" action="login_action.php">{}{}{}'
            '<p>This link logs you in once; then choose a new password. '
            '<button type="submit" id="use_link">Log in</button></p></form>',
            hidden("id", userid), hidden("t", stamp), hidden("h", token)))
    if not csrf.same_origin(req.environ):
        raise PageError("The login form was posted from another site.", "403 Forbidden",
                        "Login failed")
    keys = accounts.login_failure_keys(req.remote_addr)
    if accounts.logins_refused(ctx.db, keys):
        raise PageError(TOO_MANY_FAILURES, "403 Forbidden", "Login failed")
    user = accounts.lookup_user_by_id(ctx.db, userid)
    if user is not None:
        keys = accounts.login_failure_keys(req.remote_addr, user)
        if accounts.logins_refused(ctx.db, keys):
            raise PageError(TOO_MANY_FAILURES, "403 Forbidden", "Login failed")
    if (user is None or user.authenticator.startswith("x")
            or not _COOKIE_VALUE.match(user.authenticator)
            or not accounts.use_token(ctx.db, userid, token, accounts.TOKEN_LOGIN_LINK,
                                      ctx.now)):
        _login_failed(ctx, LINK_EXPIRED, keys)
    raise Redirect("edit_passwd_form.php", [set_cookie(ctx, user.authenticator)])


def logout(ctx):
    """GET: a form to log out; POST (with its token): clear the cookie."""
    user = ctx.logged_in_user()
    if ctx.req.method == "POST":
        if user is not None:
            ctx.require_action()
        ctx.account, ctx.user = None, ""
        response = render(ctx, "Logged out", fmt("<p>You are logged out. {}</p>",
                                                 link("login_form.php", "Log in again")))
        response.headers.append(set_cookie(ctx, "", 0))
        return response
    if user is None:
        return render(ctx, "Log out", fmt("<p>You are not logged in. {}</p>",
                                          link("login_form.php", "Log in")))
    return render(ctx, "Log out", fmt(
        '<form method="post" action="logout.php">{}<p>Log out {}? '
        '<button type="submit">Log out</button></p></form>', ctx.token_field(), user.name))


PAGES = {
    "login_form.php": login_form,
    "login_action.php": login_action,
    "logout.php": logout,
}
