"""BOINC's account web RPCs, the way clients and account managers call them.

The stock client, the BOINC Manager's "Add project" wizard and account
managers fetch these fixed URLs under the master URL:

==========================  =================================================
``get_project_config.php``  project name, URLs, account-creation policy,
                            minimum password length, platforms, terms of use
``create_account.php``      email_addr, passwd_hash, user_name [, team_name,
                            invite_code, consent_flag, source] -> authenticator
``lookup_account.php``      email_addr [, passwd_hash] -> authenticator (or
                            ``<success/>``: the account exists)
``am_get_info.php``         account_key -> the account's attributes
``am_set_info.php``         account_key + attributes (off unless
                            ``enable_am_set_info_rpc``, as BOINC disabled it)
``show_user.php``           format=xml with userid or auth -> ``<user>``
``team_lookup.php``         team_id, team_ids or team_name -> ``<team>`` records
``create_team.php``         account_key, name, ... (off unless
                            ``enable_create_team_rpc``, as BOINC disabled it)
==========================  =================================================

Each handler takes an :class:`RpcContext` and returns a
:class:`~boincpy.web.http.Response`; bad input raises
:class:`~boincpy.web.rpc_xml.RpcError` with BOINC's error number and message, and
changes nothing (each change runs in one transaction).  Replies keep the
element order and layout of BOINC's PHP pages; every value is XML-escaped.
``html/user/NAME.php`` is a three-line entry point calling :func:`cgi_main`.
"""

import os
import re
import time
from urllib.parse import quote_plus

from boincpy import passwords
from boincpy.cnum import INT_MAX, INT_MIN, int64, php_numeric
from boincpy.db import host as host_table
from boincpy.db import user as user_table
from boincpy.errors import BoincpyError, DatabaseError
from boincpy.record import Record
from boincpy.log import failure_text
from boincpy.web import accounts
from boincpy.web.http import HTML_CONTENT_TYPE, BadRequest, Response, log_error, run_cgi
from boincpy.web.markup import esc
from boincpy.web.rpc_xml import (ERR_ACCT_REQUIRE_CONSENT, ERR_BAD_EMAIL_ADDR, ERR_BAD_PASSWD,
                                 ERR_BAD_USER_NAME, ERR_DB_CANT_CONNECT, ERR_DB_NOT_FOUND,
                                 ERR_DB_NOT_UNIQUE, ERR_PROJECT_DOWN, ERR_XML_PARSE, RpcError,
                                 error_response, error_xml, xml_response)
from boincpy.web.user.badges import badges_html
from boincpy.xml import xml_escape

# lookup_account.php's answer once an address or account had too many failed
# logins (boincpy.web.accounts.LOGIN_FAIL_*).
TOO_MANY_FAILURES = "Too many failed logins: try again in a few minutes"

# html/inc/server_version.inc: the web RPC interface level the replies follow.
SERVER_VERSION = "1.1.0"

CONSENT_TYPE_ENROLL = "ENROLL"
TERMS_OF_USE_FILE = "terms_of_use.txt"
ACCOUNT_OWNERSHIP_PUBLIC_KEY = "account_ownership_public.pem"

_ER_DUP_ENTRY = 1062


class RpcContext(Record):
    """What a handler needs: the project's configuration, the request and a
    database connection opened on first use."""

    FIELDS = (("cfg", None), ("request", None), ("_db", None), ("_shared", False))

    def db(self):
        """The project database (BOINC's db_init_xml): -183 if stop_web, -138 if unreachable.

        Always the main database, even where BOINC's page first calls
        BoincDb::get(true): its db_init_xml() and the BoincUser/BoincTeam
        lookups call BoincDb::get(), which since 2024 (da1727c64f) closes a
        replica connection and reopens the main one, so no account RPC reads
        the replica (show_user.php never asked for it)."""
        if self._db is None:
            if self.web_stopped():
                raise RpcError(ERR_PROJECT_DOWN)
            try:
                self._db, self._shared = self.request.database(self.cfg)
            except DatabaseError as exc:
                log_error("database: %s" % exc)
                raise RpcError(ERR_DB_CANT_CONNECT) from None
        return self._db

    def web_stopped(self):
        """True while PROJECT/stop_web exists."""
        return os.path.exists(self.cfg.project_path("stop_web"))

    def sched_stopped(self):
        """True while PROJECT/stop_sched exists."""
        return os.path.exists(self.cfg.project_path("stop_sched"))

    def close(self):
        if self._db is not None and not self._shared:
            self._db.close()
        self._db = None


def format_number(value):
    """A number as MariaDB prints it (PHP echoes the text of the column)."""
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 1e15:
            return "%d" % value
        return repr(value).replace("e+", "e")
    return str(value)


def _duplicate(exc):
    return getattr(exc, "mysql_code", None) == _ER_DUP_ENTRY


def _read_project_file(cfg, name):
    """Contents of PROJECT/name, or None if missing/unreadable."""
    try:
        with open(cfg.project_path(name), encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return None


# ---------------------------------------------------------------------------
# get_project_config.php

def _platforms_xml(ctx):
    """``<platforms>``: platforms (and plan classes) of the current app versions.

    Like BOINC it must answer while the database is down; then the list is empty.
    """
    rows = []
    try:
        db = ctx.db()
        rows = db.query(
            "SELECT platform.name AS name, platform.user_friendly_name AS user_friendly_name, "
            "app_version.plan_class AS plan_class "
            "FROM platform, app_version, app "
            "WHERE app_version.platformid = platform.id AND app_version.appid = app.id "
            "AND app_version.deprecated = 0 AND app.deprecated = 0 "
            "GROUP BY platform.name, platform.user_friendly_name, app_version.plan_class "
            "ORDER BY platform.name, app_version.plan_class")
    except (RpcError, DatabaseError) as exc:
        log_error("get_project_config: no platform list: %s" % exc)
    out = ["    <platforms>"]
    for row in rows:
        out.append("\n            <platform>\n"
                   "                <platform_name>%s</platform_name>\n"
                   "                <user_friendly_name>%s</user_friendly_name>"
                   % (xml_escape(row["name"]), xml_escape(row["user_friendly_name"] or "")))
        if row["plan_class"]:
            out.append("\n                <plan_class>%s</plan_class>\n"
                       % xml_escape(row["plan_class"]))
        out.append("\n            </platform>")
    out.append("\n    </platforms>\n")
    return "".join(out)


def get_project_config(ctx):
    """get_project_config.php: what the Manager's wizard shows before attaching."""
    cfg = ctx.cfg
    rpc_base = cfg.secure_url_base or cfg.master_url
    out = ["<project_config>\n"
           "    <name>%s</name>\n"
           "    <master_url>%s</master_url>\n"
           "    <web_rpc_url_base>%s</web_rpc_url_base>\n"
           % (xml_escape(cfg.long_name), xml_escape(cfg.master_url), xml_escape(rpc_base)),
           "<server_version>%s</server_version>\n" % SERVER_VERSION]
    if cfg.account_manager:
        out.append("    <account_manager/>\n")
    revision = (_read_project_file(cfg, "local.revision") or "").strip()
    if revision:
        out.append("<local_revision>%s</local_revision>\n" % xml_escape(revision))
    if ctx.web_stopped():
        out.append("\n        <error_num>%d</error_num>\n        <web_stopped>1</web_stopped>\n    "
                   % ERR_PROJECT_DOWN)
    else:
        out.append("    <web_stopped>0</web_stopped>\n")
    if cfg.disable_account_creation or cfg.invite_codes:
        out.append("    <account_creation_disabled/>\n")
    elif cfg.disable_account_creation_rpc:
        # Not sent by BOINC's page; the client understands it as "create the
        # account on the web site", which is what create_account.php will say.
        out.append("    <client_account_creation_disabled/>\n")
    if cfg.invite_codes:
        out.append("    <invite_code_required/>\n")
    out.append("    <min_passwd_length>%d</min_passwd_length>\n" % (cfg.min_passwd_length or 6))
    out.append("    <sched_stopped>%d</sched_stopped>\n" % (1 if ctx.sched_stopped() else 0))
    min_version = cfg.raw.get("min_core_client_version")
    if min_version:
        out.append("<min_client_version>%s</min_client_version>\n" % min_version)
    if not ctx.web_stopped():
        out.append(_platforms_xml(ctx))
    else:
        out.append("    <platforms>\n    </platforms>\n")
    terms = terms_of_use(cfg)
    if terms:
        # Sent raw, as BOINC does: the client copies it up to the closing tag
        # and treats it as HTML if it holds entities.
        terms = terms.replace("</terms_of_use>", "&lt;/terms_of_use>")
        out.append("    <terms_of_use>\n%s\n</terms_of_use>\n" % terms)
    keywords = _read_project_file(cfg, "project_keywords.xml")
    if keywords:
        out.append(keywords)
    key_path = os.path.join(cfg.key_dir, ACCOUNT_OWNERSHIP_PUBLIC_KEY)
    if os.access(key_path, os.R_OK):
        import base64
        with open(key_path, "rb") as f:
            out.append("    <account_ownership_public_key>%s</account_ownership_public_key>\n"
                       % base64.b64encode(f.read()).decode("ascii"))
    out.append("</project_config>")
    return xml_response("".join(out))


# ---------------------------------------------------------------------------
# create_account.php

def _consent_type_id(db, name):
    """The id of an enabled consent type, or None (BOINC's check_consent_type)."""
    row = db.query_one("SELECT id, enabled FROM consent_type WHERE shortname = %s", (name,))
    if row and row["enabled"]:
        return row["id"]
    return None


def _terms_of_use_exist(cfg):
    return os.path.exists(cfg.project_path(TERMS_OF_USE_FILE))


def terms_of_use(cfg):
    """The project's terms of use (PROJECT/terms_of_use.txt, stripped), or ""."""
    return (_read_project_file(cfg, TERMS_OF_USE_FILE) or "").strip()


def enroll_consent_id(db, cfg):
    """The enabled ENROLL consent type's id when the project has terms of use
    to agree to (BOINC's check_consent_type and check_termsofuse), else None."""
    if not _terms_of_use_exist(cfg):
        return None
    return _consent_type_id(db, CONSENT_TYPE_ENROLL)


def record_enroll_consent(db, userid, ctid, given, source, when):
    """A new account's consent row: agreed to the terms (``given``), or an
    anonymous account's "not required"."""
    user_table.insert_consent(db, userid, ctid, int(when), 1 if given else 0,
                              0 if given else 1, source)


def create_account(ctx):
    """create_account.php: make an account (or return the existing one's key)."""
    cfg, req = ctx.cfg, ctx.request
    db = ctx.db()
    if cfg.disable_account_creation:
        raise RpcError(-1, "The project is not accepting new accounts.")
    if cfg.disable_account_creation_rpc:
        if cfg.no_web_account_creation:
            raise RpcError(-1, "The project is not accepting new accounts.")
        raise RpcError(-1, "Please visit the project web site to create an account, "
                           "then try again.")
    invite_code = None
    pattern = cfg.invite_codes_rpc or cfg.invite_codes
    if pattern:
        invite_code = req.get_str("invite_code")
        if not accounts.invite_code_ok(pattern, invite_code):
            raise RpcError(-1, "Invalid invitation code")

    email_addr = passwords.ascii_lower(req.get_str("email_addr"))
    passwd_hash = req.get_str("passwd_hash")
    user_name = req.get_str("user_name")
    team_name = req.get_str("team_name", True)
    consent_flag = req.get_str("consent_flag", True)
    source = req.get_str("source", True)

    problem = accounts.user_name_problem(user_name)
    if problem:
        raise RpcError(ERR_BAD_USER_NAME, problem)
    if not accounts.is_valid_email_syntax(email_addr):
        raise RpcError(ERR_BAD_EMAIL_ADDR)
    if accounts.is_banned_email_addr(cfg, email_addr):
        raise RpcError(ERR_BAD_EMAIL_ADDR)
    # The server sees only md5(password + e-mail): min_passwd_length can only
    # be enforced by the client, which reads it from get_project_config.php.
    if len(passwd_hash) != 32:
        raise RpcError(-1, "password hash length not 32")
    if accounts.lookup_user_by_previous_email(db, email_addr):
        raise RpcError(ERR_DB_NOT_UNIQUE)

    with db.transaction():
        user = accounts.lookup_user_by_email(db, email_addr)
        if user:
            if not passwords.matches_stored(passwd_hash, user.passwd_hash):
                raise RpcError(ERR_DB_NOT_UNIQUE)
        else:
            ctid = _consent_type_id(db, CONSENT_TYPE_ENROLL)
            terms = _terms_of_use_exist(cfg)
            if cfg.account_creation_rpc_require_consent:
                if not terms:
                    log_error("Project configuration error! Terms of use undefined while "
                              "'account_creation_rpc_require_consent' enabled!")
                if ctid is None:
                    log_error("Project configuration error! 'CONSENT_TYPE_ENROLL' disabled "
                              "while 'account_creation_rpc_require_consent' enabled!")
                if consent_flag is None or not source:
                    raise RpcError(
                        ERR_ACCT_REQUIRE_CONSENT,
                        "This project requires you to consent to its terms of use. "
                        "Please update your BOINC software or register via the project's "
                        "website or contact your account manager's provider.")
            try:
                user = accounts.make_user(db, cfg, email_addr, user_name, passwd_hash)
            except DatabaseError as exc:
                if _duplicate(exc):
                    raise RpcError(ERR_DB_NOT_UNIQUE) from None
                raise
            if cfg.invite_codes_rpc:
                user_table.set_signature(db, user.id, invite_code)
            elif cfg.invite_codes:
                log_error("Account for '%s' created using invitation code '%s'"
                          % (email_addr, invite_code))
            if ctid is not None and terms and consent_flag is not None and source:
                # consent_flag 0: an anonymous account, consent not required
                record_enroll_consent(db, user.id, ctid,
                                      not accounts.php_is_zero(consent_flag), source,
                                      user.create_time)
        if team_name:
            team = accounts.lookup_team_by_name(db, team_name)
            if team and team.joinable:
                accounts.join_team(db, team, user)
    return xml_response(" <account_out>\n   <authenticator>%s</authenticator>\n</account_out>\n"
                        % xml_escape(user.authenticator))


# ---------------------------------------------------------------------------
# lookup_account.php

def lookup_account(ctx):
    """lookup_account.php: the account key for an e-mail address and passwd_hash."""
    req = ctx.request
    db = ctx.db()
    email_addr = req.get_str("email_addr")
    passwd_hash = req.get_str("passwd_hash", True)
    # Password guessing is slowed by counting failures (BOINC sleeps
    # LOGIN_FAIL_SLEEP_SEC in the page instead, which holds a web worker):
    # past the limit, this address or account is refused before any check.
    keys = accounts.login_failure_keys(req.remote_addr)
    if accounts.logins_refused(db, keys):
        raise RpcError(ERR_BAD_PASSWD, TOO_MANY_FAILURES)
    user = accounts.lookup_user_by_email(db, email_addr)
    if not user:
        accounts.record_login_failure(db, keys)
        raise RpcError(ERR_DB_NOT_FOUND)
    keys = accounts.login_failure_keys(req.remote_addr, user)
    if passwd_hash and accounts.logins_refused(db, keys):
        raise RpcError(ERR_BAD_PASSWD, TOO_MANY_FAILURES)
    if not passwd_hash:
        # the caller only asks whether an account with this address exists
        return xml_response("<account_out>\n   <success/>\n</account_out>\n")
    if not accounts.check_passwd(db, user, passwd_hash):
        accounts.record_login_failure(db, keys)
        raise RpcError(ERR_BAD_PASSWD)
    return xml_response("<account_out>\n<authenticator>%s</authenticator>\n</account_out>\n"
                        % xml_escape(user.authenticator))


# ---------------------------------------------------------------------------
# am_get_info.php / am_set_info.php

def _urlencode(text):
    """PHP's urlencode: '+' for spaces, %XX for everything but letters, digits and -_."""
    return quote_plus(text or "", safe="").replace("~", "%7E")


def am_get_info(ctx):
    """am_get_info.php: an account's attributes, for account managers."""
    req = ctx.request
    db = ctx.db()
    req.check_args(("account_key",))
    user = accounts.lookup_user_by_auth(db, req.get_str("account_key"))
    if not user:
        raise RpcError(ERR_DB_NOT_FOUND)
    weak = passwords.weak_auth(user.id, user.authenticator, user.passwd_hash)
    cpid = passwords.external_cpid(user.cross_project_id, user.email_addr)
    ret = ("<id>%d</id>\n<name>%s</name>\n<country>%s</country>\n<weak_auth>%s</weak_auth>\n"
           "<cpid>%s</cpid>\n<has_profile>%d</has_profile>\n<create_time>%d</create_time>\n"
           "<global_prefs>\n%s\n</global_prefs>\n<project_prefs>\n%s\n</project_prefs>\n"
           "<url>%s</url>\n<send_email>%d</send_email>\n<show_hosts>%d</show_hosts>\n"
           "<teamid>%d</teamid>\n<venue>%s</venue>"
           % (user.id, _urlencode(user.name), _urlencode(user.country), weak, cpid,
              user.has_profile, user.create_time, _prefs_text(user.global_prefs),
              _prefs_text(user.project_prefs), _urlencode(user.url), user.send_email,
              user.show_hosts, user.teamid, xml_escape(user.venue)))
    if user.teamid:
        team = accounts.lookup_team_by_id(db, user.teamid)
        if team and team.userid == user.id:
            ret += "<teamfounder/>\n"
    return xml_response("<am_get_info_reply>\n    <success/>\n    %s\n</am_get_info_reply>\n"
                        % ret)


def _prefs_text(prefs):
    """Stored preferences are XML documents: sent as they are, minus any
    close tag of the element that carries them."""
    return (prefs or "").replace("</global_prefs>", "").replace("</project_prefs>", "")


def _bad_xml(text, start, end):
    """BOINC's cursory check of preferences XML: why it is bad, or ''."""
    text = text.strip()
    if not text.startswith(start):
        return "No start tag"
    if text.find(end) != len(text) - len(end) or not text.endswith(end):
        return "No end tag"
    if "\n" not in text:
        return "No CR"
    return ""


def _keep_project_specific(new_prefs, old_prefs):
    """Account managers don't know project-specific prefs: keep the old ones."""
    if "<project_specific>" in new_prefs.lower():
        return new_prefs
    low = old_prefs.lower()
    start = low.find("<project_specific>")
    kept = ""
    if start >= 0:
        end = low.find("</project_specific>", start)
        kept = old_prefs[start:end + len("</project_specific>")] if end >= 0 else ""
    out, low_new, tag, pos = [], new_prefs.lower(), "<project_preferences>", 0
    while True:
        i = low_new.find(tag, pos)
        if i < 0:
            out.append(new_prefs[pos:])
            return "".join(out)
        out.append(new_prefs[pos:i] + new_prefs[i:i + len(tag)] + "\n" + kept + "\n")
        pos = i + len(tag)


def am_set_info(ctx):
    """am_set_info.php: account managers change an account's attributes.

    BOINC answers "not supported" (it disabled the RPC); boincpy does the same
    unless ``enable_am_set_info_rpc`` is set, then it does what the RPC did.
    """
    cfg, req = ctx.cfg, ctx.request
    if not cfg.enable_am_set_info_rpc:
        return error_response(RpcError(-1, "not supported"), header=False)
    db = ctx.db()
    # the account key in the body means every parameter is there (POST)
    source = req.post if req.post("account_key") else req.get
    auth = source("account_key", None)
    if auth is None:
        raise RpcError(-1, "missing or bad parameter: account_key")

    def arg(name):
        return source(name, None)
    user = accounts.lookup_user_by_auth(db, auth)
    if not user:
        raise RpcError(ERR_DB_NOT_FOUND)

    name = arg("name") or ""
    country = (arg("country") or "") if cfg.user_country else ""
    if not accounts.is_valid_country(country):
        raise RpcError(-1, "invalid country")
    global_prefs = (arg("global_prefs") or "").replace("\r\n", "\n")
    project_prefs = (arg("project_prefs") or "").replace("\r\n", "\n")
    if project_prefs:
        project_prefs = _keep_project_specific(project_prefs, user.project_prefs)
    url = (arg("url") or "") if cfg.user_url else ""
    venue = arg("venue") or ""
    password_hash = arg("password_hash") or ""
    email_addr = passwords.ascii_lower(arg("email_addr") or "")
    teamid_text = arg("teamid")
    teamid = None
    if teamid_text not in (None, ""):
        teamid = req_number(teamid_text, "teamid")
    flags = {}
    for key in ("send_email", "show_hosts"):
        if arg(key) not in (None, ""):
            flags[key] = req_number(arg(key), key, -32768, 32767)     # smallint

    now = time.time()
    public = [what for what, value in (("name", name and name != user.name),
                                       ("URL", url and url != user.url),
                                       ("country", country and country != user.country))
              if value]
    if public and accounts.is_banished(db, user.id, now):
        # boincpy's counterpart of BOINC's forum ban (manage_user.php)
        raise RpcError(-1, "you are banned from posting: your %s can't be changed"
                       % " and ".join(public))
    new_email = email_addr and email_addr != user.email_addr
    if new_email:
        if accounts.lookup_user_by_email(db, email_addr):
            raise RpcError(ERR_DB_NOT_UNIQUE, "There's already an account with that email "
                                              "address.")
        if accounts.lookup_user_by_previous_email(db, email_addr, now):
            raise RpcError(ERR_DB_NOT_UNIQUE, "Email address is already in use")
        if user.email_addr_change_time + 604800 > now:
            raise RpcError(ERR_BAD_EMAIL_ADDR,
                           "Email address was changed within the past 7 days, please look "
                           "for an email to %s if this email change is incorrect."
                           % user.previous_email_addr)
        if (not accounts.is_valid_email_syntax(email_addr)
                or accounts.is_banned_email_addr(cfg, email_addr)):
            raise RpcError(ERR_BAD_EMAIL_ADDR, "Invalid email address")
    if global_prefs:
        why = _bad_xml(global_prefs, "<global_preferences>", "</global_preferences>")
        if why:
            raise RpcError(ERR_XML_PARSE, "Invalid global preferences: %s" % why)
    if project_prefs:
        why = _bad_xml(project_prefs, "<project_preferences>", "</project_preferences>")
        if why:
            raise RpcError(ERR_XML_PARSE, "Invalid project preferences: %s" % why)

    changes = {}

    def put(column, value):
        changes[column] = value

    if name:
        problem = accounts.user_name_problem(name)
        if problem:
            raise RpcError(ERR_BAD_USER_NAME, problem)
        put("name", accounts.strip_tags(name))
    if country:
        put("country", country)
    if global_prefs:
        put("global_prefs", global_prefs)
    if project_prefs:
        put("project_prefs", project_prefs)
    if url:
        put("url", url)
    for key, value in flags.items():
        put(key, value)
    if venue:
        put("venue", venue)
    if new_email:
        put("email_addr", email_addr)
        put("previous_email_addr", user.email_addr)
        put("email_addr_change_time", now)
    if password_hash:
        put("passwd_hash", passwords.password_hash(password_hash))

    consent = [arg(k) for k in ("consent_name", "consent_flag", "consent_not_required",
                                "consent_source")]
    with db.transaction():
        if teamid is not None:
            if teamid == 0:
                accounts.quit_team(db, user)
            else:
                team = accounts.lookup_team_by_id(db, teamid)
                if team and team.joinable:
                    accounts.join_team(db, team, user)
        if changes:
            try:
                user_table.update_user_columns(db, user.id, changes)
            except DatabaseError as exc:
                if _duplicate(exc):
                    raise RpcError(ERR_DB_NOT_UNIQUE) from None
                raise RpcError(-1, "database error: %s" % exc) from None
        if all(v is not None for v in consent):
            ctid = _consent_type_id(db, consent[0])
            if ctid is not None:
                flag = 0 if accounts.php_is_zero(consent[1]) else 1
                latest = db.query_one(
                    "SELECT consent_flag FROM consent WHERE userid = %s AND consent_type_id = %s "
                    "ORDER BY consent_time DESC, id DESC LIMIT 1", (user.id, ctid))
                if latest is None or latest["consent_flag"] != flag:
                    _record_consent(db, user.id, ctid, flag,
                                    0 if accounts.php_is_zero(consent[2]) else 1,
                                    consent[3], now)
    return xml_response("<am_set_info_reply>\n    <success/>\n    \n</am_set_info_reply>\n")


def am_set_host_info(ctx):
    """am_set_host_info.php: account_key, hostid, venue -> the host's venue
    (account managers).  Another user's host is not found (-136), as in
    BOINC; the venue must be one BOINC's pages know ("", home, work, school)."""
    req = ctx.request
    db = ctx.db()
    req.check_args(("hostid", "account_key", "venue"))
    user = accounts.lookup_user_by_auth(db, req.get_str("account_key"))
    if not user:
        raise RpcError(ERR_DB_NOT_FOUND)
    hostid = req.get_int("hostid")
    owner = db.query_value("SELECT userid FROM host WHERE id = %s", (hostid,), default=None)
    if owner is None or int(owner) != user.id:
        raise RpcError(ERR_DB_NOT_FOUND)
    venue = req.get_str("venue")
    if venue not in ("", "home", "work", "school"):
        raise RpcError(-1, "bad venue")
    host_table.set_host_venue(db, hostid, user.id, venue)
    return xml_response("<am_set_host_info_reply>\n    <success/>\n</am_set_host_info_reply>\n")


def req_number(text, name, lo=INT_MIN, hi=INT_MAX):
    """A numeric parameter as an int (truncated as PHP's (int) does), or
    BOINC's error for a bad one or one outside [lo, hi] (its column's range)."""
    number = int64(php_numeric(text))
    if number is None or not lo <= number <= hi:
        raise RpcError(-1, "missing or bad parameter: %s" % name)
    return number


# ---------------------------------------------------------------------------
# show_user.php

def sanitize_user_url(url):
    """BOINC's sanitize_user_url: ``url`` if it has no scheme or http(s) and
    otherwise only letters, digits and -_./#?&= ; else ""."""
    parts = url.split("//")
    if len(parts) == 1:
        rest = url
    elif len(parts) == 2 and parts[0].lower() in ("http:", "https:"):
        rest = parts[1]
    else:
        return ""
    if not re.match(r"^[-_./#?&=a-zA-Z0-9]*$", rest):
        return ""
    return url


def normalize_user_url(url):
    """BOINC's normalize_user_url: only http(s) URLs of plain characters, with a scheme."""
    url = sanitize_user_url(url)
    if not url:
        return ""
    low = url.lower()
    if low.startswith("http://"):
        return "http://" + url[7:]
    if low.startswith("https://"):
        return "https://" + url[8:]
    return "http://" + url


def _host_xml(host):
    fields = ("id", "create_time", "rpc_seqno", "rpc_time", "host_cpid", "total_credit",
              "expavg_credit", "expavg_time", "domain_name", "p_ncpus", "p_vendor", "p_model",
              "p_fpops", "p_iops", "os_name", "os_version", "m_nbytes", "d_free", "d_total",
              "venue")
    lines = ["    <host>"]
    for name in fields:
        lines.append("        <%s>%s</%s>" % (name, xml_escape(format_number(host[name])), name))
    lines.append("    </host>\n")
    return "\n".join(lines)


def user_xml(cfg, db, user, show_hosts):
    """BOINC's show_user_xml: a user's public record (and hosts, for the owner)."""
    out = ["<user>\n"
           "    <id>%d</id>\n    <cpid>%s</cpid>\n    <create_time>%d</create_time>\n"
           "    <name>%s</name>\n    <total_credit>%s</total_credit>\n"
           "    <expavg_credit>%s</expavg_credit>\n    <expavg_time>%s</expavg_time>\n"
           "    <teamid>%d</teamid>\n    <has_profile>%d</has_profile>\n"
           % (user.id, passwords.external_cpid(user.cross_project_id, user.email_addr),
              user.create_time, xml_escape(user.name, quote=True),
              format_number(user.total_credit),
              format_number(user.expavg_credit), format_number(user.expavg_time),
              user.teamid, user.has_profile)]
    if show_hosts:
        out.append("   <venue>%s</venue>\n" % xml_escape(user.venue))
        for host in accounts.hosts_of_user(db, user.id):
            out.append(_host_xml(host))
    if cfg.user_country:
        out.append("     <country>%s</country>\n" % xml_escape(user.country))
    if cfg.user_url and user.url:
        out.append("    <url>%s</url>\n" % xml_escape(normalize_user_url(user.url), quote=True))
    out.append("</user>\n")
    return "".join(out)


def show_user(ctx):
    """show_user.php: format=xml with ``auth`` (with hosts) or ``userid``; else an HTML page."""
    req = ctx.request
    auth = req.get_str("auth", True)
    xml = req.get_str("format", True) == "xml"
    userid = None
    try:
        userid = None if auth else req.get_int("userid")
        db = ctx.db()
        user = (accounts.lookup_user_by_auth(db, auth) if auth
                else accounts.lookup_user_by_id(db, userid))
        if not user or (not xml and "deleted" in user.authenticator):
            raise RpcError(ERR_DB_NOT_FOUND)
    except BadRequest as exc:
        if xml:
            raise
        text = ("No such user %s" % (userid or "") if exc.num == ERR_DB_NOT_FOUND
                else exc.message)
        return html_page("Unable to handle request", "<p>%s</p>\n" % esc(text))
    if xml:
        return xml_response(user_xml(ctx.cfg, db, user, bool(auth)))
    rows = [("Name", esc(user.name)), ("Member since",
            time.strftime("%d %b %Y", time.gmtime(user.create_time))),
            ("Total credit", "%.0f" % user.total_credit),
            ("Recent average credit", "%.2f" % user.expavg_credit)]
    if ctx.cfg.user_country:
        rows.append(("Country", esc(user.country)))
    if user.teamid:
        team = accounts.lookup_team_by_id(db, user.teamid)
        if team:
            rows.append(("Team", esc(team.name)))
    badges = badges_html(db, user.id)           # BOINC's show_badges_row
    if badges:
        rows.append(("Badges", str(badges)))
    body = "<table>\n%s</table>\n" % "".join(
        "<tr><td>%s</td><td>%s</td></tr>\n" % row for row in rows)
    return html_page(user.name, body)


def html_page(title, body):
    """A plain HTML page (the non-XML forms of show_user and team_lookup)."""
    return Response("<!DOCTYPE html>\n<html>\n<head><meta charset=\"utf-8\"><title>%s</title>"
                    "</head>\n<body>\n<h2>%s</h2>\n%s</body>\n</html>\n"
                    % (esc(title), esc(title), body),
                    content_type=HTML_CONTENT_TYPE)


# ---------------------------------------------------------------------------
# team_lookup.php / create_team.php

def team_xml(team):
    """BOINC's show_team_xml."""
    return ("<team>\n    <id>%d</id>\n    <create_time>%d</create_time>\n"
            "    <userid>%d</userid>\n    <name>%s</name>\n    <url>%s</url>\n"
            "    <type>%d</type>\n    <country>%s</country>\n"
            "    <total_credit>%s</total_credit>\n    <expavg_credit>%s</expavg_credit>\n"
            "    <expavg_time>%s</expavg_time>\n</team>\n"
            % (team.id, team.create_time, team.userid, xml_escape(team.name, quote=True),
               xml_escape(team.url, quote=True), team.type, xml_escape(team.country),
               format_number(team.total_credit), format_number(team.expavg_credit),
               format_number(team.expavg_time)))


def team_lookup(ctx):
    """team_lookup.php: by team_id, a comma list team_ids (at most 100), or a name search."""
    req = ctx.request
    req.check_args(("format", "team_id", "team_ids", "team_name"))
    xml = req.get_str("format", True) == "xml"
    team_id = req.get_int("team_id", True)
    team_ids = req.get_str("team_ids", True)
    db = ctx.db()
    if team_id:
        team = accounts.lookup_team_by_id(db, team_id)
        if not team:
            raise RpcError(ERR_DB_NOT_FOUND)
        return xml_response(team_xml(team))
    if team_ids:
        out, found = ["<teams>\n"], 0
        for item in team_ids.split(","):
            number = _team_id_item(item)
            if number is None:
                continue
            team = accounts.lookup_team_by_id(db, number)
            if team:
                out.append(team_xml(team))
                found += 1
                if found == 100:
                    break
        out.append("</teams>\n")
        return xml_response("".join(out))
    team_name = req.get_str("team_name")
    teams = accounts.search_teams(db, passwords.ascii_lower(team_name))
    if xml:
        return xml_response("<teams>\n%s</teams>\n" % "".join(team_xml(t) for t in teams))
    items = "".join("<li>%s</li>\n" % esc(t.name) for t in teams)
    return html_page("Search Results", "<ul>\n%s</ul>\n" % items if items else
                     "<p>No teams match '%s'.</p>\n" % esc(team_name))


def _team_id_item(item):
    return int64(php_numeric(item))


def create_team(ctx):
    """create_team.php: BOINC answers "Nope" (disabled against spammers); boincpy
    does the same unless ``enable_create_team_rpc`` is set."""
    cfg, req = ctx.cfg, ctx.request
    if not cfg.enable_create_team_rpc:
        return error_response(RpcError(-1, "Nope"), header=False)
    db = ctx.db()
    if cfg.disable_team_creation:
        raise RpcError(-1, "team creation disabled")
    user = accounts.lookup_user_by_auth(db, req.get_str("account_key"))
    if not user:
        raise RpcError(ERR_DB_NOT_FOUND)
    if accounts.is_banished(db, user.id):
        raise RpcError(-1, "you are banned from posting: you can't create a team")
    name = req.get("name")
    if not name:
        raise RpcError(-1, "must set team name")
    url = accounts.strip_tags(req.get_str("url"))
    type_num = accounts.team_type_num(accounts.strip_tags(req.get_str("type")))
    name_html = req.get_str("name_html")
    description = req.get_str("description")
    country = req.get_str("country") or "International"
    if not accounts.is_valid_country(country):
        country = "None"
    for what, value, limit in (("team name", name, 191), ("url", url, 254),
                               ("name_html", name_html, 254)):
        if len(value) > limit:
            raise RpcError(-1, "%s may have at most %d characters" % (what, limit))
    with db.transaction():
        try:
            team = accounts.make_team(db, user.id, name, url, type_num, name_html,
                                      description, country)
        except DatabaseError as exc:
            if _duplicate(exc):
                raise RpcError(ERR_DB_NOT_UNIQUE, "could not create team") from None
            raise
        if team is None:
            raise RpcError(ERR_DB_NOT_UNIQUE, "could not create team")
        accounts.join_team(db, team, user)
    return xml_response("<create_team_reply>\n    <success/>\n    <team_id>%d</team_id>\n"
                        "</create_team_reply>\n" % team.id)


# ---------------------------------------------------------------------------
# login_token_lookup.php

LOGIN_TOKEN_LIFETIME = 86400


def _login_token_error(what):
    """login_token_lookup.php's failures: BOINC passes its message as
    xml_error's *number*, so the client reads ``<error_num>bad token</error_num>``
    and the default message; no XML declaration before it."""
    return Response("<error>\n    <error_num>%s</error_num>\n    <error_msg>Unknown error"
                    "</error_msg>\n</error>\n" % xml_escape(what), content_type=HTML_CONTENT_TYPE)


def login_token_lookup(ctx):
    """login_token_lookup.php?user_id=N&token=T: the account key for a login
    token (user.login_token, made by the web site's software download page;
    valid a day), as the client's attach-by-token asks."""
    req = ctx.request
    user_id = req.get_str("user_id")
    token = req.get_str("token")
    number = int64(php_numeric(user_id))
    db = ctx.db()
    user = accounts.lookup_user_by_id(db, number) if number and number > 0 else None
    if user is None:
        return _login_token_error("user not found")
    if not user.login_token or not passwords.compare_digest(user.login_token.encode(),
                                                       token.encode("utf-8", "replace")):
        return _login_token_error("bad token")
    if time.time() - user.login_token_time > LOGIN_TOKEN_LIFETIME:
        return _login_token_error("token timed out")
    name = esc(user.name)
    out = ["<login_token_reply>\n"]
    if ctx.cfg.account_manager:
        out.append("   <user_name>%s</user_name>\n   <login_name>%s</login_name>\n"
                   "   <passwd_hash>%s</passwd_hash>\n   <authenticator>%s</authenticator>\n"
                   % (name, xml_escape(user.email_addr), xml_escape(user.passwd_hash),
                      xml_escape(user.authenticator)))
    else:
        out.append("   <authenticator>%s</authenticator>\n   <user_name>%s</user_name>\n"
                   % (xml_escape(user.authenticator), name))
    if user.teamid:
        team = accounts.lookup_team_by_id(db, user.teamid)
        if team:
            out.append("    <team_name>%s</team_name>\n" % esc(team.name))
    out.append("</login_token_reply>\n")
    return Response("".join(out), content_type=HTML_CONTENT_TYPE)


# ---------------------------------------------------------------------------

RPCS = {
    "get_project_config": get_project_config,
    "create_account": create_account,
    "lookup_account": lookup_account,
    "am_get_info": am_get_info,
    "am_set_info": am_set_info,
    "am_set_host_info": am_set_host_info,
    "show_user": show_user,
    "team_lookup": team_lookup,
    "create_team": create_team,
    "login_token_lookup": login_token_lookup,
}


def handle(name, cfg, request):
    """Serve one RPC in-process; return its Response.

    Errors become BOINC's ``<error>`` reply; nothing sleeps (failed logins
    are counted in the database, see :func:`lookup_account`).
    """
    ctx = RpcContext(cfg, request)
    try:
        return RPCS[name](ctx)
    except BadRequest as exc:
        return error_response(exc)
    except Exception as exc:      # reported as an XML error, never a traceback page
        log_error(failure_text(exc, "%s.php failed" % name, "%s.php" % name))
        resp = xml_response(error_xml(-1, "server error: %s" % (
            exc.message if isinstance(exc, BoincpyError) else "see the web server's error log")))
        resp.status = "500 Internal Server Error"
        return resp
    finally:
        ctx.close()


def cgi_main(name):
    """Entry point of html/user/NAME.php: read the CGI request, answer it.

    The project is found as BOINC's programs find it: $BOINC_PROJECT_DIR (set
    by the Apache configuration make_project writes), else config.xml in the
    current directory or up to two levels above (html/user -> PROJECT).
    """

    def handler(cfg, request):
        return handle(name, cfg, request)
    run_cgi(handler, name + ".php")
