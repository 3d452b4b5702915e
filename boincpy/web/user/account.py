"""The volunteer's own account, at BOINC's pages and form fields:

==============================  ====================================================
``create_account_form.php``     sign-up form (new_name, new_email_addr, passwd,
                                passwd2, country [, invite_code, agree_to_terms_of_use,
                                teamid, next_url])
``create_account_action.php``   makes the account as BOINC does, logs it in, home.php
``home.php``                    the logged-in account: info, credit, hosts, team, links
``weak_auth.php``               account key and weak account key (attaching hosts)
``edit_user_info_form.php``     name, URL, country (``edit_user_info_action.php``)
``edit_email_form.php``         new address + password (``edit_email_action.php``):
                                previous_email_addr kept, no other change for a week,
                                notices to both addresses, the old one with a
                                recover_email.php link (token 'E', a week)
``recover_email.php``           that link: the old address back, password cleared
``edit_passwd_form.php``        new password for the logged-in account
                                (``edit_passwd_action.php``)
``get_passwd.php``              "forgot password": an address (``mail_passwd.php``)
                                gets a one-time login link (session.login_via_link);
                                the answer is the same for every address
``delete_account_request.php``  with enable_delete_account: password, then an
                                e-mailed link (token 'D', a day) to
``delete_account_confirm.php``  password again; obfuscate (1) or wipe (2) the account
``opt_out.php``                 the reminder e-mails' link (userid, code: email.inc's
                                salted_key of the authenticator): a button, then
                                send_email = 0, without logging in
==============================  ====================================================

Every password check counts failures per account and address
(boincpy.web.accounts), as the login does; every form that changes
something posts a form token (ctx.require_action), except those a user who
is not logged in sends (sign-up, the e-mailed links' forms), which must come
from this site and carry their own secret.
"""

import time

from boincpy import mail, passwords
from boincpy.db import user as user_table
from boincpy.errors import DatabaseError
from boincpy.web import accounts, csrf, recaptcha, rpc
from boincpy.web.http import cookie_header, log_error, url_path
from boincpy.web.markup import Markup, fmt, join, link, url
from boincpy.web.page import PageError, Redirect, hidden, kv_table, notice, render, text_input
from boincpy.web.user import messages
from boincpy.web.user.common import date_str, required_id
from boincpy.web.user.session import safe_next_url, set_cookie

WEEK = 7 * 86400
DAY = 86400
# at most this many password-reset links a user is sent in RESET_WINDOW seconds
RESET_MAX = 3
RESET_WINDOW = 3600
_ER_DUP_ENTRY = 1062


# ---------------------------------------------------------------------------
# Shared checks

def _form_from_site(ctx):
    """A POST from this site (for the forms of users who are not logged in)."""
    req = ctx.req
    if req.method != "POST":
        raise PageError("This page only accepts its form's POST; nothing was changed.",
                        "405 Method Not Allowed", "Action refused")
    if not csrf.same_origin(req.environ):
        raise PageError("The form was posted from another site; nothing was changed.",
                        "403 Forbidden", "Action refused")


def min_passwd_length(cfg):
    return cfg.min_passwd_length or 6


def passwd_problem(cfg, passwd, passwd2=None):
    """Why a new password is refused (BOINC's checks), or None."""
    if any(ord(c) < 32 or ord(c) > 127 for c in passwd):
        return "Passwords may only include ASCII characters."
    if len(passwd) < min_passwd_length(cfg):
        return ("New password is too short: minimum password length is %d characters."
                % min_passwd_length(cfg))
    if passwd2 is not None and passwd2 != passwd:
        return "The two passwords you typed differ."
    return None


def check_password(ctx, user, passwd):
    """PageError unless ``passwd`` opens ``user``'s account; failures count
    against the account and the address as failed logins."""
    keys = accounts.login_failure_keys(ctx.req.remote_addr, user)
    if accounts.logins_refused(ctx.db, keys):
        raise PageError(rpc.TOO_MANY_FAILURES, "403 Forbidden", "Password incorrect")
    if not passwd or not accounts.check_passwd(
            ctx.db, user, passwords.client_passwd_hash(passwd, user.email_addr)):
        accounts.record_login_failure(ctx.db, keys)
        raise PageError("The password you entered is incorrect. Please go back and try "
                        "again; nothing was changed.", "403 Forbidden", "Password incorrect")


def _check_link_token(ctx, userid, token, token_type, message, title):
    """PageError unless an e-mailed link's token is the user's, of this type
    and unexpired; a wrong one counts as a failed login from the address."""
    keys = accounts.login_failure_keys(ctx.req.remote_addr)
    if accounts.logins_refused(ctx.db, keys):
        raise PageError(rpc.TOO_MANY_FAILURES, "403 Forbidden", title)
    if accounts.valid_token(ctx.db, userid, token, token_type, ctx.now) is None:
        accounts.record_login_failure(ctx.db, keys)
        raise PageError(message, "403 Forbidden", title)


def country_problem(country):
    if not accounts.is_valid_country(country) or len(country) > 254:
        return "Country: %r is not a country name." % country[:60]
    return None


def _send(ctx, user, to, subject, body):
    """Send one e-mail; on failure, log it and return the reason (None: sent)."""
    try:
        mail.send(ctx.cfg, to, subject, body, user.name)
    except mail.MailError as exc:
        log_error("e-mail to user %d (%s) failed: %s" % (user.id, subject, exc.message))
        return exc.message
    return None


def _site_url(ctx, page=""):
    return (ctx.cfg.secure_url_base or ctx.cfg.master_url).rstrip("/") + "/" + page


def _project(ctx):
    return ctx.cfg.long_name or "the project"


def _form(action, ctx_token, fields, button, button_id, danger=False):
    """A POST form laid out as label/field rows."""
    rows = join(fmt('<label for="{}">{}</label><div>{}</div>', name, label, field)
                for name, label, field in fields)
    return fmt('<form class="filters" method="post" action="{}">{}{}<span></span><div>'
               '<button type="submit" id="{}"{}>{}</button></div></form>',
               action, ctx_token, rows, button_id,
               Markup(' class="danger"') if danger else Markup(""), button)


def _password_input(name, autocomplete="current-password"):
    return fmt('<input type="password" name="{}" id="{}" size="30" autocomplete="{}">',
               name, name, autocomplete)


# ---------------------------------------------------------------------------
# create_account_form.php, create_account_action.php

def _creation_refused(cfg):
    if cfg.disable_account_creation:
        return "This project has disabled account creation"
    if cfg.no_web_account_creation:
        return "This project has disabled Web account creation"
    return None


def _signup_team(ctx, teamid):
    """(team, founder) of a teamid a sign-up names; PageError if it is not a team."""
    team = accounts.lookup_team_by_id(ctx.db, teamid)
    founder = accounts.lookup_user_by_id(ctx.db, team.userid) if team else None
    if team is None or founder is None:
        raise PageError("teamid: no team %d with a founder" % teamid, "404 Not Found")
    return team, founder


def create_account_form(ctx):
    """The sign-up form."""
    refused = _creation_refused(ctx.cfg)
    if refused:
        raise PageError(refused, "403 Forbidden", "Can't create account")
    teamid = ctx.int_arg("teamid", 0, minimum=0, maximum=2 ** 31 - 1)
    next_url = safe_next_url(ctx.req.get("next_url"), "")
    parts = []
    if ctx.logged_in_user() is not None:
        parts.append(notice("warn", fmt("You are logged in as {}. {}", ctx.account.name,
                                        link("home.php", "Your account"))))
    fields = []
    keep = [hidden("next_url", next_url)]
    if teamid:
        team, _ = _signup_team(ctx, teamid)
        keep.append(hidden("teamid", teamid))
        parts.append(fmt("<p><b>This account will belong to the team {} and will have the "
                         "project preferences of its founder.</b></p>",
                         link(url("team_display.php", teamid=team.id), team.name)))
    if ctx.cfg.invite_codes:
        fields.append(("invite_code", "Invitation code", text_input("invite_code", "", 30)))
    fields += [
        ("new_name", "Screen name", text_input("new_name", "", 30)),
        ("new_email_addr", "Email address", text_input("new_email_addr", "", 30)),
        ("passwd", fmt("Password <span class=\"muted small\">(at least {} characters)</span>",
                       min_passwd_length(ctx.cfg)), _password_input("passwd", "new-password")),
        ("passwd2", "Password again", _password_input("passwd2", "new-password")),
    ]
    if ctx.cfg.user_country:
        fields.append(("country", "Country", text_input("country", "None", 30)))
    terms = rpc.terms_of_use(ctx.cfg) if rpc.enroll_consent_id(ctx.db, ctx.cfg) else ""
    if terms:
        parts.append(fmt("<h2>Terms of use</h2><pre>{}</pre>", terms))
        fields.append(("agree_to_terms_of_use", "I agree to the terms of use above",
                       Markup('<input type="checkbox" name="agree_to_terms_of_use" '
                              'id="agree_to_terms_of_use" value="1">')))
    if recaptcha.enabled(ctx.cfg):
        fields.append(("recaptcha", "", recaptcha.recaptcha_html(ctx.cfg)))
    parts.append(_form("create_account_action.php", join(keep), fields, "Create account",
                       "create"))
    parts.append(fmt("<p>Already have an account? {}</p>", link("login_form.php", "Log in")))
    return render(ctx, "Create account", join(parts),
                  scripts=recaptcha.SCRIPTS if recaptcha.enabled(ctx.cfg) else ())


def create_account_action(ctx):
    """Check the sign-up form as BOINC's validate_post_make_user does, make
    the account, log it in."""
    _form_from_site(ctx)
    cfg, req, db = ctx.cfg, ctx.req, ctx.db
    refused = _creation_refused(cfg)
    if refused:
        raise PageError(refused, "403 Forbidden", "Can't create account")
    if not recaptcha.recaptcha_check(cfg, req):
        raise PageError(recaptcha.REFUSED, "403 Forbidden", "Can't create account")
    ctid = rpc.enroll_consent_id(db, cfg)
    if ctid is not None and not req.post("agree_to_terms_of_use"):
        raise PageError("You have not agreed to our terms of use. Please go back, agree to "
                        "the terms of use and submit the form again.")
    teamid = ctx.int_arg("teamid", 0, post=True, minimum=0, maximum=2 ** 31 - 1)
    project_prefs = ""
    if teamid:
        _, founder = _signup_team(ctx, teamid)
        project_prefs = founder.project_prefs
    invite_code = None
    if cfg.invite_codes:
        invite_code = req.post("invite_code")
        if not invite_code:
            raise PageError("You must supply an invitation code to create an account.")
        if not accounts.invite_code_ok(cfg.invite_codes, invite_code):
            raise PageError("The invitation code you gave is not valid.", "403 Forbidden")
    name = req.post("new_name")
    problem = accounts.user_name_problem(name)
    if problem:
        raise PageError("Screen name: %s." % problem)
    email_addr = passwords.ascii_lower(req.post("new_email_addr").strip())
    problem = accounts.new_email_problem(db, cfg, email_addr, ctx.now)
    if problem:
        raise PageError("Email address: %s" % problem)
    passwd = req.post("passwd")
    problem = passwd_problem(cfg, passwd, req.post("passwd2") if "passwd2" in req.form else None)
    if problem:
        raise PageError(problem)
    country = req.post("country") if cfg.user_country else ""
    if country:
        problem = country_problem(country)
        if problem:
            raise PageError(problem)
    try:
        with db.transaction():
            user = accounts.make_user(db, cfg, email_addr, name,
                                      passwords.client_passwd_hash(passwd, email_addr),
                                      country=country or ("None" if cfg.user_country else ""),
                                      project_prefs=project_prefs,
                                      teamid=teamid, now=ctx.now)
            if ctid is not None:
                rpc.record_enroll_consent(db, user.id, ctid, True, "Webreg", ctx.now)
    except DatabaseError as exc:
        if getattr(exc, "mysql_code", None) == _ER_DUP_ENTRY:
            raise PageError("That name or email address is in use: go back and choose "
                            "another.", "409 Conflict", "Can't create account") from None
        raise
    if invite_code is not None:
        log_error("Account '%s' created using invitation code '%s'" % (email_addr, invite_code))
    ctx.set_account(user)
    next_url = safe_next_url(req.post("next_url"), "")
    headers = [set_cookie(ctx, user.authenticator, 365 * DAY)]
    if not next_url:
        headers.append(cookie_header("init", "1", url_path(cfg.master_url),
                                     secure=req.is_https))
    raise Redirect(next_url or "home.php", headers)


# ---------------------------------------------------------------------------
# home.php, weak_auth.php

def home(ctx):
    """The logged-in account's page."""
    user = ctx.require_login()
    cfg, db = ctx.cfg, ctx.db
    parts = []
    headers = []
    title = "Your account"
    if ctx.req.cookie("init"):
        title = "Welcome"
        parts.append(fmt("<p>Welcome to {}! View and edit your account and preferences "
                         "using the links below; to compute for the project, {} and "
                         "attach it to this project.</p>", _project(ctx),
                         link("https://boinc.berkeley.edu/download.php", "install BOINC")))
        headers.append(cookie_header("init", "", url_path(cfg.master_url), 0,
                                     secure=ctx.req.is_https))
    info = [("Name", user.name), ("Email address", user.email_addr)]
    if cfg.user_url and user.url:
        target = rpc.normalize_user_url(user.url)
        info.append(("URL", link(target, target) if target else "Invalid URL"))
    if cfg.user_country:
        info.append(("Country", user.country))
    info.append(("%s member since" % _project(ctx), date_str(user.create_time)))
    changes = [link("edit_email_form.php", "email address"),
               link("edit_passwd_form.php", "password"),
               link("edit_user_info_form.php", "other account info")]
    if cfg.enable_delete_account:
        changes.append(link("delete_account_request.php", "delete account"))
    info.append(("Change", join(changes, Markup(" &middot; "))))
    info.append(("User ID", user.id))
    info.append(("Account keys", link("weak_auth.php", "View")))
    nhosts = db.query_value("SELECT COUNT(*) FROM host WHERE userid = %s", (user.id,))
    cpid = passwords.external_cpid(user.cross_project_id, user.email_addr)
    computing = [("Total credit", "{:,.0f}".format(user.total_credit or 0)),
                 ("Recent average credit", "{:,.2f}".format(user.expavg_credit or 0)),
                 ("Computers on this account",
                  fmt("{} &middot; {}", nhosts, link("hosts_user.php", "View"))),
                 ("Tasks", link(url("results.php", userid=user.id), "View")),
                 ("Cross-project ID", cpid)]
    team = accounts.lookup_team_by_id(db, user.teamid) if user.teamid else None
    if team is not None:
        team_cell = fmt("{} &middot; {}", link(url("team_display.php", teamid=team.id),
                                               team.name),
                        link(url("team_quit_form.php"), "quit team"))
    else:
        team_cell = fmt("None &middot; {}", link("team_search.php", "find a team"))
    prefs = [("Computing", link("prefs.php?subset=global", "View and edit")),
             ("Project", link("prefs.php?subset=project", "View and edit")),
             ("Message boards", link("edit_forum_preferences_form.php", "View and edit"))]
    profile = (link(url("view_profile.php", userid=user.id), "View") if user.has_profile
               else link("create_profile.php", "Create"))
    parts.append(fmt('<div class="cols"><div><h2>Account information</h2>{}'
                     '<h2>Computing</h2>{}</div><div><h2>Community</h2>{}'
                     '<h2>Preferences</h2>{}</div></div>',
                     kv_table(info), kv_table(computing),
                     kv_table([("Profile", profile), ("Team", team_cell)]
                              + messages.community_rows(db, user)),
                     kv_table(prefs)))
    response = render(ctx, title, join(parts))
    response.headers.extend(headers)
    return response


def account_file_name(master_url):
    """The client's account file for this project (BOINC's weak_auth.php):
    account_ + the master URL without scheme, other characters as _."""
    rest = master_url.split("://", 1)[1] if "://" in master_url else master_url
    rest = "".join(c if (c.isascii() and c.isalnum()) or c in ".-_" else "_" for c in rest)
    return "account_%s.xml" % rest.rstrip("_")


def weak_auth(ctx):
    """The account key and the weak account key, and how to attach with them."""
    user = ctx.require_login()
    weak = passwords.weak_auth(user.id, user.authenticator, user.passwd_hash)
    master = ctx.cfg.master_url
    account_xml = ("<account>\n    <master_url>%s</master_url>\n    <authenticator>%s"
                   "</authenticator>\n</account>" % (master, weak))
    body = fmt(
        "<p>You can access your account either by using your email address and password, "
        "or by using your account key:</p><pre id=\"auth\">{}</pre>"
        "<p>Keep it secret: it logs in to your account and changes it.</p>"
        "<h2>Weak account key</h2>"
        "<p>Your weak account key attaches computers to your account but can't be used to "
        "log in or change anything, so use it on computers you don't fully trust:</p>"
        "<pre id=\"weak_auth\">{}</pre>"
        "<p>To attach a computer without the BOINC Manager, install BOINC and create a file "
        "named <b>{}</b> in its data directory, containing:</p><pre>{}</pre>"
        "<p class=\"muted\">The weak key depends on your email address and password: "
        "changing either changes it.</p>",
        user.authenticator, weak, account_file_name(master), account_xml)
    return render(ctx, "Account keys", body)


# ---------------------------------------------------------------------------
# edit_user_info_form.php, edit_user_info_action.php

def edit_user_info_form(ctx):
    user = ctx.require_login()
    fields = [("user_name", "Screen name", text_input("user_name", user.name, 30))]
    if ctx.cfg.user_url:
        fields.append(("url", "URL of your web page (optional)", text_input("url", user.url, 40)))
    if ctx.cfg.user_country:
        fields.append(("country", "Country", text_input("country", user.country, 30)))
    return render(ctx, "Edit account information", _form(
        "edit_user_info_action.php", ctx.token_field("edit_user_info_action.php"), fields,
        "Update info", "update"))


def edit_user_info_action(ctx):
    user = ctx.require_action()
    req, db = ctx.req, ctx.db
    name = req.post("user_name")
    problem = accounts.user_name_problem(name)
    if problem:
        raise PageError("Screen name: %s." % problem)
    other = db.query_one("SELECT id FROM user WHERE name = %s AND id <> %s", (name, user.id))
    if other:
        raise PageError("That name is in use - go back and try another.", "409 Conflict")
    changes = {"name": name}
    if ctx.cfg.user_url:
        link_text = req.post("url")
        if len(link_text) > 254 or rpc.sanitize_user_url(link_text) != link_text:
            raise PageError("URL: invalid (http:// or https:// and letters, digits and "
                            "-_./#?&= only); nothing was changed.")
        changes["url"] = link_text
    if ctx.cfg.user_country:
        country = req.post("country")
        problem = country_problem(country) if country else None
        if problem:
            raise PageError(problem)
        changes["country"] = country
    try:
        user_table.update_user_columns(db, user.id, changes)
    except DatabaseError as exc:
        if getattr(exc, "mysql_code", None) == _ER_DUP_ENTRY:
            raise PageError("That name is in use - go back and try another.",
                            "409 Conflict") from None
        raise
    raise Redirect("home.php")


# ---------------------------------------------------------------------------
# edit_email_form.php, edit_email_action.php, recover_email.php

def _email_locked(ctx, user):
    return user.email_addr_change_time + WEEK > ctx.now


def edit_email_form(ctx):
    user = ctx.require_login()
    parts = [fmt("<p>Note: if you change your email address, your {} will change.</p>",
                 link("weak_auth.php", "weak account key"))]
    if _email_locked(ctx, user):
        parts.append(notice("warn", fmt(
            "Email address was changed within the past 7 days. Please look for an email to "
            "{} if you need to revert this change.", user.previous_email_addr)))
    else:
        shown = user.email_addr if accounts.is_valid_email_syntax(user.email_addr) else ""
        parts.append(_form("edit_email_action.php", ctx.token_field("edit_email_action.php"), [
            ("email_addr", "New email address", text_input("email_addr", shown, 30)),
            ("passwd", "Password", _password_input("passwd"))], "Change email address",
            "change_email"))
    return render(ctx, "Change email address", join(parts))


def edit_email_action(ctx):
    """BOINC's edit_email_action.php: the password (the stored hash is salted
    with the address), a week between changes, notices to both addresses."""
    user = ctx.require_action()
    cfg, req, db = ctx.cfg, ctx.req, ctx.db
    email_addr = passwords.ascii_lower(req.post("email_addr").strip())
    passwd = req.post("passwd")
    if email_addr == user.email_addr:
        raise PageError("New email address is same as existing address. Nothing is changed.")
    if _email_locked(ctx, user):
        raise PageError("Email address was changed within the past 7 days, please look for "
                        "an email to %s if this email change is incorrect."
                        % user.previous_email_addr, "403 Forbidden")
    problem = accounts.new_email_problem(db, cfg, email_addr, ctx.now)
    if problem:
        raise PageError("New email address: %s" % problem)
    check_password(ctx, user, passwd)
    old = user.email_addr
    stored = passwords.password_hash(passwords.client_passwd_hash(passwd, email_addr))
    try:
        with db.transaction():
            user_table.update_user_columns(db, user.id, {
                "email_addr": email_addr, "previous_email_addr": old,
                "email_addr_change_time": ctx.now, "passwd_hash": stored,
                "email_validated": 0})
            token = accounts.create_token(db, user.id, accounts.TOKEN_CHANGE_EMAIL, WEEK,
                                          ctx.now)
    except DatabaseError as exc:
        if getattr(exc, "mysql_code", None) == _ER_DUP_ENTRY:
            raise PageError("There's already an account with that email address.",
                            "409 Conflict") from None
        raise
    subject = "%s email address change." % _project(ctx)
    until = time.strftime("%d %B at %H:%M UTC", time.gmtime(ctx.now + WEEK))
    when = time.strftime("%d %B at %H:%M UTC", time.gmtime(ctx.now))
    body_new = ("Your email address was changed from %s to %s on %s. You will not be able to "
                "change your email address again until %s. If you need to undo this "
                "immediately, please look for an email from us at your %s address.\n"
                % (old, email_addr, when, until, old))
    body_old = ("Your email address has been changed. If you did not take this action, "
                "then please click on the link below to reverse this process and change "
                "your password.\n\n%s\n\nNote: Your password will need to be recovered "
                "after clicking this link.\n"
                % (_site_url(ctx, url("recover_email.php", id=user.id, token=token))))
    failed = [why for why in (_send(ctx, user, email_addr, subject, body_new),
                              _send(ctx, user, old, subject, body_old)) if why]
    parts = [notice("ok", fmt("The email address of your account is now {}.", email_addr))]
    if failed:
        parts.append(notice("warn", fmt(
            "The notice of this change could not be e-mailed ({}); the project's "
            "administrators have been told.", "; ".join(failed))))
    return render(ctx, "Change email address of account", join(parts))


def recover_email(ctx):
    """recover_email.php?id=N&token=T, the link e-mailed to the old address:
    the old address comes back and the password is cleared (reset it with
    get_passwd.php).  GET asks; the POST does it."""
    req = ctx.req
    args = req.form if req.method == "POST" else req.query
    userid = ctx.int_arg("id", 0, post=req.method == "POST", minimum=0,
                         maximum=2 ** 31 - 1)
    token = (args.get("token") or [""])[-1]
    _check_link_token(ctx, userid, token, accounts.TOKEN_CHANGE_EMAIL, "Invalid token.",
                      "Recover email address")
    if req.method != "POST":
        return render(ctx, "Recover email address", fmt(
            '<form method="post" action="recover_email.php">{}{}<p>Give your account its '
            'previous email address back (you will then need to reset your password)? '
            '<button type="submit" id="recover">Recover email address</button></p></form>',
            hidden("id", userid), hidden("token", token)))
    _form_from_site(ctx)
    db = ctx.db
    user = accounts.lookup_user_by_id(db, userid)
    if user is None or not user.previous_email_addr:
        raise PageError("Invalid token.", "403 Forbidden", "Recover email address")
    if accounts.lookup_user_by_email(db, user.previous_email_addr) is not None:
        raise PageError("There is already an account with that email address. Please "
                        "contact the admin: the previous email address could not be "
                        "restored as another account uses it.", "409 Conflict")
    with db.transaction():
        if not accounts.use_token(db, userid, token, accounts.TOKEN_CHANGE_EMAIL, ctx.now):
            raise PageError("Invalid token.", "403 Forbidden", "Recover email address")
        user_table.update_user_columns(db, userid, {
            "email_addr": user.previous_email_addr, "previous_email_addr": "",
            "email_addr_change_time": 0, "email_validated": 0,
            "passwd_hash": passwords.password_hash(passwords.random_string())})
    response = render(ctx, "Recover email address", fmt(
        "{}<p>You need to reset your password: {}</p>",
        notice("ok", "Email address has been reverted."),
        link("get_passwd.php", "reset password")))
    response.headers.append(set_cookie(ctx, "", 0))
    return response


# ---------------------------------------------------------------------------
# edit_passwd_form.php, edit_passwd_action.php

def edit_passwd_form(ctx):
    ctx.require_login()
    body = join([
        fmt("<p>Note: if you change your password, your {} will change.</p>",
            link("weak_auth.php", "weak account key")),
        _form("edit_passwd_action.php", ctx.token_field("edit_passwd_action.php"), [
            ("passwd", fmt("New password <span class=\"muted small\">(at least {} "
                           "characters)</span>", min_passwd_length(ctx.cfg)),
             _password_input("passwd", "new-password")),
            ("passwd2", "New password again", _password_input("passwd2", "new-password"))],
            "Change password", "change_passwd")])
    return render(ctx, "Change password", body)


def edit_passwd_action(ctx):
    """The logged-in account's new password (BOINC asks only for the login
    and its form token: the e-mailed reset link ends here)."""
    user = ctx.require_action()
    req = ctx.req
    passwd = req.post("passwd")
    problem = passwd_problem(ctx.cfg, passwd, req.post("passwd2") if "passwd2" in req.form
                             else None)
    if problem:
        raise PageError(problem + " Nothing was changed.")
    stored = passwords.password_hash(passwords.client_passwd_hash(passwd, user.email_addr))
    with ctx.db.transaction():
        accounts.set_passwd_hash(ctx.db, user, stored)
        user_table.delete_tokens_of_type(ctx.db, user.id, accounts.TOKEN_LOGIN_LINK)
    return render(ctx, "Change password", notice("ok", "Your password has been changed."))


# ---------------------------------------------------------------------------
# get_passwd.php, mail_passwd.php

def get_passwd(ctx):
    body = fmt(
        "<p>Enter your account's email address below, and click OK. You will be sent email "
        "instructions for resetting your password.</p>"
        '<form class="filters" method="post" action="mail_passwd.php">'
        '<label for="email_addr">Email address</label><div>{}</div>'
        '<span></span><div><button type="submit" id="send_reset">OK</button></div></form>',
        text_input("email_addr", "", 30))
    return render(ctx, "Reset password", body)


def mail_passwd(ctx):
    """E-mail a one-time login link to the account with this address.  The
    page answers the same whether or not there is one (and says nothing of
    a disabled account or a failed send, which go to the error log)."""
    _form_from_site(ctx)
    cfg, db = ctx.cfg, ctx.db
    email_addr = passwords.ascii_lower(ctx.req.post("email_addr").strip())
    if not email_addr:
        raise PageError("no address given")
    if len(email_addr) > accounts.MAX_EMAIL_LENGTH or not accounts.is_valid_email_syntax(
            email_addr):
        raise PageError("Email address: not an address of the form name@domain.")
    if not mail.configured(cfg):
        raise PageError("This project can't send e-mail, so it can't send password reset "
                        "links; please ask its administrators.", "503 Service Unavailable",
                        "Email failed")
    user = accounts.lookup_user_by_email(db, email_addr)
    if user is not None and not user.authenticator.startswith("x"):
        if accounts.recent_tokens(db, user.id, accounts.TOKEN_LOGIN_LINK,
                                  ctx.now - RESET_WINDOW) >= RESET_MAX:
            log_error("password reset for user %d: %d links sent in the last hour already"
                      % (user.id, RESET_MAX))
        else:
            token = accounts.create_token(db, user.id, accounts.TOKEN_LOGIN_LINK, DAY, ctx.now)
            link_url = _site_url(ctx, url("login_action.php", id=user.id, t=ctx.now, h=token))
            body = ("This email was sent in response to a request on the %s web site.\n\n"
                    "To log in to your %s account and choose a new password, visit:\n%s\n"
                    "(This link works once, for 1 day.)\n\nIf you did not ask for this, "
                    "ignore this email: your password is unchanged.\n\nFor further "
                    "information and assistance with %s, visit\n%s\n"
                    % (_project(ctx), _project(ctx), link_url, _project(ctx),
                       _site_url(ctx)))
            _send(ctx, user, user.email_addr, "%s account information" % _project(ctx), body)
    return render(ctx, "Email sent", fmt(
        "<p>If {} is the email address of an account here, instructions for resetting its "
        "password have been emailed to it.</p><p>If the email doesn't arrive in a few "
        "minutes, check your spam folder.</p>", email_addr))


# ---------------------------------------------------------------------------
# delete_account_request.php, delete_account_confirm.php

def _deletion_enabled(ctx):
    if not ctx.cfg.enable_delete_account:
        raise PageError("This feature is disabled.  Please contact the project administrator.",
                        "403 Forbidden", "Delete account")


def delete_account_request(ctx):
    """Password, then an e-mailed link to delete_account_confirm.php."""
    _deletion_enabled(ctx)
    user = ctx.require_login()
    if user.email_addr_change_time + WEEK > ctx.now:
        raise PageError("You are not allowed to delete your account until after 7 days from "
                        "when you last changed your email address.", "403 Forbidden",
                        "Delete account")
    if ctx.req.method != "POST":
        return render(ctx, "Delete account", join([
            fmt("<p>You can delete your account. This <b>cannot be undone</b>.</p><ol>"
                "<li>Enter your password below and click \"Send confirmation email\".</li>"
                "<li>You will receive an email with a link; click on it.</li>"
                "<li>On that page, enter your password again and click \"Delete account\": "
                "your account is deleted at once.</li></ol>"),
            _form("delete_account_request.php", ctx.token_field(),
                  [("passwd", "Password", _password_input("passwd"))],
                  "Send confirmation email", "send_confirm")]))
    ctx.require_action()
    check_password(ctx, user, ctx.req.post("passwd"))
    if not mail.configured(ctx.cfg):
        raise PageError("This project can't send e-mail, so it can't confirm the deletion; "
                        "please ask its administrators.", "503 Service Unavailable",
                        "Email failed")
    token = accounts.create_token(ctx.db, user.id, accounts.TOKEN_DELETE_ACCOUNT, DAY, ctx.now)
    body = ("This email was sent in response to a request on the %s web site.\n\n"
            "You have asked to delete your account at %s. To confirm, use the link below; "
            "it takes you to a page where you enter your password again to delete the "
            "account.\n\n%s\n\nThis link is valid for 1 day. If you did not ask for this, "
            "ignore this email.\n"
            % (_project(ctx), _project(ctx),
               _site_url(ctx, url("delete_account_confirm.php", id=user.id, token=token))))
    why = _send(ctx, user, user.email_addr,
                "Confirm your request to delete your account at %s" % _project(ctx), body)
    if why:
        raise PageError("The confirmation email could not be sent (%s); please try again "
                        "later." % why, "502 Bad Gateway", "Email failed")
    return render(ctx, "Confirmation email sent", notice(
        "ok", "The email to confirm your request to delete your account has been sent."))


def delete_account_confirm(ctx):
    """The e-mailed link: GET asks for the password; POST deletes the account
    as enable_delete_account says (1 obfuscate, 2 wipe)."""
    _deletion_enabled(ctx)
    req = ctx.req
    post = req.method == "POST"
    userid = ctx.int_arg("id", 0, post=post, minimum=0, maximum=2 ** 31 - 1)
    token = req.post("token") if post else req.get("token")
    expired = fmt("The token you used has expired or is otherwise not valid. Please request "
                  "a new one {}.", link("delete_account_request.php", "here"))
    _check_link_token(ctx, userid, token, accounts.TOKEN_DELETE_ACCOUNT, expired,
                      "Delete account")
    if not post:
        return render(ctx, "Delete account", join([
            fmt("<p>Thank you for verifying ownership of your account. Enter your password "
                "and click \"Delete account\" to delete it. It <b>cannot be recovered</b> "
                "once deleted.</p>"),
            _form("delete_account_confirm.php", join([hidden("id", userid),
                                                      hidden("token", token)]),
                  [("passwd", "Password", _password_input("passwd"))],
                  "Delete account", "delete", danger=True)]))
    _form_from_site(ctx)
    user = accounts.lookup_user_by_id(ctx.db, userid)
    if user is None:
        raise PageError(expired, "403 Forbidden", "Delete account")
    check_password(ctx, user, req.post("passwd"))
    method = ctx.cfg.enable_delete_account
    if method not in (1, 2):
        raise PageError("Failed to delete your account (this project's deletion method %d "
                        "is not available). Please contact the project administrator."
                        % method, "500 Internal Server Error", "Delete account")
    if not accounts.use_token(ctx.db, userid, token, accounts.TOKEN_DELETE_ACCOUNT, ctx.now):
        raise PageError(expired, "403 Forbidden", "Delete account")
    if method == 1:
        accounts.obfuscate_account(ctx.db, user, ctx.now)
    else:
        accounts.delete_account(ctx.db, user, ctx.now)
    ctx.account, ctx.user = None, ""
    response = render(ctx, "Account deleted", fmt(
        "<p>Your account has been deleted. If you want to contribute to {} in the future you "
        "will need to create a new account.</p>", _project(ctx)))
    response.headers.append(set_cookie(ctx, "", 0))
    return response


# ---------------------------------------------------------------------------
# opt_out.php

def opt_out(ctx):
    """opt_out.php?userid=N&code=C: the link of the project's e-mails (remind,
    mass e-mail) turns off user.send_email without logging in.  The code is
    BOINC's (passwords.opt_out_code: made from the account's secret
    authenticator, so nobody opts out someone else, and links BOINC's PHP
    sent work here).  BOINC changes the row on the GET; here the GET shows a
    button and its POST (from this site, with the same userid and code)
    changes it, so a mail scanner fetching the link changes nothing."""
    req = ctx.req
    posted = req.method == "POST"
    if posted:
        _form_from_site(ctx)
    userid = required_id(ctx, "userid", post=posted)
    code = req.post("code") if posted else req.get("code")
    user = accounts.lookup_user_by_id(ctx.db, userid)
    if user is None or "deleted" in (user.authenticator or ""):
        raise PageError("no such user", "404 Not Found", "Removed from mailing list")
    if not passwords.compare_digest(passwords.opt_out_code(user.authenticator).encode(),
                               code.encode("utf-8", "replace")):
        raise PageError("invalid code", "403 Forbidden", "Removed from mailing list")
    if not posted:
        return render(ctx, "Stop e-mails", join([
            fmt("<p>{} will send no further e-mails to {} once you click the button.</p>",
                _project(ctx), user.email_addr),
            _form("opt_out.php", join([hidden("userid", user.id), hidden("code", code)]), [],
                  "Stop e-mails", "opt_out")]))
    user_table.update_user_columns(ctx.db, user.id, {"send_email": 0})
    return render(ctx, "Removed from mailing list", fmt(
        "<p>No further emails will be sent to {}.</p><p>To resume getting emails, {}.</p>",
        user.email_addr, link(url("prefs.php", subset="project"),
                              "edit your project preferences")))


PAGES = {
    "opt_out.php": opt_out,
    "create_account_form.php": create_account_form,
    "create_account_action.php": create_account_action,
    "home.php": home,
    "weak_auth.php": weak_auth,
    "edit_user_info_form.php": edit_user_info_form,
    "edit_user_info_action.php": edit_user_info_action,
    "edit_email_form.php": edit_email_form,
    "edit_email_action.php": edit_email_action,
    "recover_email.php": recover_email,
    "edit_passwd_form.php": edit_passwd_form,
    "edit_passwd_action.php": edit_passwd_action,
    "get_passwd.php": get_passwd,
    "mail_passwd.php": mail_passwd,
    "delete_account_request.php": delete_account_request,
    "delete_account_confirm.php": delete_account_confirm,
}
