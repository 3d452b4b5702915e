"""User and team records as BOINC's web code makes and changes them.

* ``email_addr`` is stored lower-cased (ASCII), so the unique index and
  ``lookup_user_by_email`` agree whatever case a client sends;
* ``authenticator`` and ``cross_project_id`` are 32 random hex characters;
* ``passwd_hash`` is stored as bcrypt of the client's md5 (boincpy.passwords);
* the columns a new row gets are those of BOINC's make_user(): create_time,
  expavg_time = now, send_email 1, show_hosts 1 (0 with
  enable_privacy_by_default), country 'International' for RPC accounts.

Joining and leaving teams writes the team_delta rows BOINC writes.
"""

import re
import time

from boincpy import passwords
from boincpy.cnum import php_numeric
from boincpy.db import team as team_table
from boincpy.db import user as user_table
from boincpy.db.forum import forum_delete_user
from boincpy.db.host import delete_hosts_of_user, record_hosts_deleted, update_host_columns
from boincpy.db.host_app_version import delete_host_app_versions
from boincpy.db.msg import delete_msgs_of_host
from boincpy.db.result import (UNFINISHED_OF_USER, cancel_user_results, unfinished_of_user_params,
                               unlink_user_results)
from boincpy.db.rows import Team, User
from boincpy.db.schema import ensure_table
from boincpy.db.submit import delete_submit_rights
from boincpy.db.workunit import set_transition_time
from boincpy.errors import MissingTableError

# user.email_addr and user.name are varchar(191) (unique indexes under utf8mb4).
MAX_EMAIL_LENGTH = 191
MAX_NAME_LENGTH = 191

# PHP's trim() character set.
_PHP_WS = " \t\n\r\0\x0b"

# Characters FILTER_SANITIZE_SPECIAL_CHARS would encode: '"<>& and ASCII < 32.
_SPECIAL_RE = re.compile(r"['\"<>&\x00-\x1f]")

# A practical reading of PHP's FILTER_VALIDATE_EMAIL: dot-atom local part of
# at most 64 characters; a domain of at least two DNS labels whose last
# starts with a letter (or is an IDN xn-- label), or an [IPv4] literal.
_ATOM = r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+"
_LOCAL_RE = re.compile(r"^%s(\.%s)*$" % (_ATOM, _ATOM))
_LABEL_RE = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?$")
_TLD_RE = re.compile(r"^([A-Za-z][A-Za-z0-9]*|xn--[A-Za-z0-9]+)(-+[A-Za-z0-9]+)*$")
_IPV4_LITERAL_RE = re.compile(r"^\[(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})\]$")

# html/inc/team_types.inc: team.type is the index in this list.
TEAM_TYPES = ("", "Other", "Company", "Primary school", "Secondary school",
              "Junior college", "University or department", "Government agency",
              "Non-profit organization", "National", "Local/regional", "Computer type",
              "Social/political/religious")

_TAG_RE = re.compile(r"<[^>]*>?")


def strip_tags(text):
    """Remove HTML tags (PHP's strip_tags, for names and URLs of teams)."""
    return _TAG_RE.sub("", text) if text else text


def is_valid_email_syntax(addr):
    """True for a syntactically valid e-mail address (see _LOCAL_RE above)."""
    if not addr or len(addr) > MAX_EMAIL_LENGTH or addr.count("@") != 1:
        return False
    local, domain = addr.split("@")
    if not local or len(local) > 64 or not _LOCAL_RE.match(local):
        return False
    m = _IPV4_LITERAL_RE.match(domain)
    if m:
        return all(int(part) <= 255 for part in m.groups())
    labels = domain.split(".")
    if len(labels) < 2 or len(domain) > 253:
        return False
    if not all(_LABEL_RE.match(label) for label in labels):
        return False
    return bool(_TLD_RE.match(labels[-1]))


def is_banned_email_addr(cfg, addr):
    """True if ``addr`` ends with a banned_email_domain (first occurrence at the end)."""
    for domain in cfg.banned_email_domain:
        if domain and addr.find(domain) == len(addr) - len(domain):
            return True
    return False


def user_name_problem(name):
    """Why ``name`` is not a valid user name (BOINC's is_valid_user_name), or None."""
    if name.strip(_PHP_WS) != name:
        return "user name cannot have leading or trailing white space"
    if not name:
        return "user name must be nonempty"
    if _SPECIAL_RE.search(name):
        return "user name may not contain special characters"
    if php_numeric(name, finite=False) is not None:
        return "user name may not be a number"
    if len(name) > MAX_NAME_LENGTH:
        # user.name is varchar(191); MySQL in strict mode would refuse it
        return "user name may have at most %d characters" % MAX_NAME_LENGTH
    return None


def normalize_invite_regex(pattern):
    """A Python regex from BOINC's PHP form ``/re/flags`` (or a plain regex)."""
    if len(pattern) >= 2 and not pattern[0].isalnum() and pattern[0] not in "\\ (":
        delim = pattern[0]
        closing = {"(": ")", "{": "}", "[": "]", "<": ">"}.get(delim, delim)
        end = pattern.rfind(closing)
        if end > 0:
            body, flags = pattern[1:end], pattern[end + 1:]
            prefix = "".join(f for f in flags if f in "imsx")
            return "(?%s)%s" % (prefix, body) if prefix else body
    return pattern


def php_is_zero(text):
    """PHP 8's ``$text == 0`` for a request parameter: a numeric string equal to 0."""
    return php_numeric(text or "") == 0


def invite_code_ok(pattern, code):
    """preg_match(pattern, code): does the code match anywhere?"""
    return re.search(normalize_invite_regex(pattern), code or "") is not None


# -- lookups --------------------------------------------------------------------

def _user(row):
    return User.from_row(_clean(row))


def _team(row):
    return Team.from_row(_clean(row))


def _clean(row):
    """NULL columns as '', like PHP's string rows."""
    if row is None:
        return None
    out = {}
    for key, value in row.items():
        out[key] = "" if value is None else value
    return out


def lookup_user_by_email(db, email_addr):
    """The user with this e-mail address (compared lower-cased), or None."""
    return _user(db.query_one("SELECT * FROM user WHERE email_addr = %s",
                              (passwords.ascii_lower(email_addr),)))


def lookup_user_by_previous_email(db, email_addr, now=None):
    """A user who gave up this e-mail address less than 7 days ago, or None."""
    now = time.time() if now is None else now
    return _user(db.query_one(
        "SELECT * FROM user WHERE email_addr_change_time > %s AND previous_email_addr = %s "
        "LIMIT 1", (now - 604800, passwords.ascii_lower(email_addr))))


def lookup_user_by_auth(db, authenticator):
    """The user with this account key, or None (empty keys match nobody)."""
    if not authenticator:
        return None
    return _user(db.query_one("SELECT * FROM user WHERE authenticator = %s",
                              (authenticator,)))


def lookup_user_by_id(db, userid):
    """The user with this id, or None."""
    return _user(db.query_one("SELECT * FROM user WHERE id = %s", (userid,)))


def lookup_team_by_id(db, teamid):
    """The team with this id, or None."""
    return _team(db.query_one("SELECT * FROM team WHERE id = %s", (teamid,)))


def lookup_team_by_name(db, name):
    """The team with exactly this name, or None."""
    return _team(db.query_one("SELECT * FROM team WHERE name = %s", (name,)))


def search_teams(db, text, limit=100):
    """Teams whose name contains ``text`` (case-insensitive), best RAC first."""
    pattern = "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
    return [_team(r) for r in db.query(
        "SELECT * FROM team WHERE name LIKE %s ORDER BY expavg_credit DESC LIMIT %s",
        (pattern, limit))]


def hosts_of_user(db, userid):
    """The user's host rows (dicts), oldest first."""
    return [_clean(r) for r in db.query("SELECT * FROM host WHERE userid = %s ORDER BY id",
                                        (userid,))]


# -- changes ----------------------------------------------------------------------

def make_user(db, cfg, email_addr, name, passwd_hash, country="International",
              postal_code="", project_prefs="", teamid=0, now=None):
    """Insert a new user as BOINC's make_user() does; return the User.

    Raises the driver's duplicate-key error (as DatabaseError with
    mysql_code 1062) if the e-mail address or name is taken.
    """
    now = int(time.time() if now is None else now)
    user = User(
        create_time=now, email_addr=passwords.ascii_lower(email_addr),
        name=strip_tags(name), authenticator=passwords.random_string(),
        country=country or "", postal_code=strip_tags(postal_code or ""),
        expavg_time=float(now), project_prefs=project_prefs or "", teamid=teamid,
        send_email=1, show_hosts=0 if cfg.enable_privacy_by_default else 1,
        cross_project_id=passwords.random_string(),
        passwd_hash=passwords.password_hash(passwd_hash))
    user.id = user_table.insert_user(db, user)
    return user


def set_passwd_hash(db, user, stored):
    """Store a new passwd_hash value (already in its stored form)."""
    user_table.set_passwd_hash(db, user.id, stored)
    user.passwd_hash = stored


def check_passwd(db, user, passwd_hash):
    """Does a client's ``passwd_hash`` (md5 of password + e-mail) open the
    account?  As lookup_account.php checks it: the stored hash (a legacy or
    outdated one is rewritten as bcrypt on success), or md5(authenticator +
    e-mail); an account without a password first gets the latter's hash."""
    auth_hash = passwords.md5_hex(user.authenticator + user.email_addr)
    with db.transaction():
        if not user.passwd_hash:
            set_passwd_hash(db, user, passwords.password_hash(auth_hash))
        ok, upgraded = passwords.check_passwd_hash(passwd_hash, user.passwd_hash)
        if ok and upgraded:
            set_passwd_hash(db, user, upgraded)
    return ok or passwd_hash == auth_hash


def quit_team(db, user, now=None):
    """Leave the user's team (BOINC's user_quit_team)."""
    if not user.teamid:
        return
    now = int(time.time() if now is None else now)
    old = user.teamid
    user_table.set_teamid(db, user.id, 0)
    team_table.unping_founder(db, old, user.id)
    team_table.delete_team_admin(db, old, user.id)
    team_table.record_team_delta(db, user.id, old, now, 0, user.total_credit)
    user.teamid = 0


def join_team(db, team, user, now=None):
    """Make the user a member of ``team`` (BOINC's user_join_team)."""
    now = int(time.time() if now is None else now)
    quit_team(db, user, now)
    user_table.set_teamid(db, user.id, team.id)
    team_table.record_team_delta(db, user.id, team.id, now, 1, user.total_credit)
    user.teamid = team.id


def make_team(db, userid, name, url, type_num, name_html, description, country, now=None):
    """Insert a team as BOINC's make_team() does; return it (None for an empty name).

    A taken name raises the driver's duplicate-key error.
    """
    now = int(time.time() if now is None else now)
    name = strip_tags(name or "")
    if not name:
        return None
    url = strip_tags(url or "")
    if "http://" in url:
        url = url[7:]
    team = Team(userid=userid, create_time=now, name=name,
                name_lc=passwords.ascii_lower(name), url=url, type=type_num,
                name_html=name_html or "", description=description or "",
                country=country or "None", expavg_time=float(now))
    team.id = team_table.insert_team(db, team)
    return team


def team_type_num(name):
    """team.type for a textual type name (0 if unknown)."""
    try:
        return TEAM_TYPES.index(name)
    except ValueError:
        return 0


def is_valid_country(country):
    """BOINC checks countries against its list in html/inc/countries.inc; boincpy
    does not carry that list and accepts any short plain-text name."""
    if country == "":
        return True
    return (len(country) <= 254 and not _SPECIAL_RE.search(country.replace("'", ""))
            and country.strip() == country)


# ---------------------------------------------------------------------------
# Failed logins: counted in the database instead of slept on

# At most this many failed logins per account, and per client address, in a
# window of LOGIN_FAIL_WINDOW seconds; then every login of that account or
# from that address is refused, right or wrong password, until the window ends.
LOGIN_FAIL_WINDOW = 600
LOGIN_FAIL_MAX_ACCOUNT = 10
LOGIN_FAIL_MAX_ADDR = 50

def login_failure_keys(remote_addr, user=None):
    """The login_failure rows a login attempt counts against."""
    keys = {"addr:%s" % (remote_addr or "?")[:150]: LOGIN_FAIL_MAX_ADDR}
    if user is not None:
        keys["user:%d" % user.id] = LOGIN_FAIL_MAX_ACCOUNT
    return keys


def _create_login_failure_table(db):
    """Projects made before the table existed get it on first use."""
    ensure_table(db, "login_failure")


def logins_refused(db, keys, now=None):
    """True if any of ``keys`` (from :func:`login_failure_keys`) reached its
    limit of failed logins in the current window."""
    now = int(time.time() if now is None else now)
    names = list(keys)
    try:
        rows = db.query("SELECT name, nfail FROM login_failure WHERE first_time > %%s "
                        "AND name IN (%s)" % ", ".join(["%s"] * len(names)),
                        [now - LOGIN_FAIL_WINDOW] + names)
    except MissingTableError:
        return False
    return any(row["nfail"] >= keys[row["name"]] for row in rows)


def record_login_failure(db, keys, now=None):
    """Count one failed login against each of ``keys`` (a new window starts
    when the last one has ended)."""
    now = int(time.time() if now is None else now)
    for attempt in (1, 2):
        try:
            for name in keys:
                user_table.count_login_failure(db, name, now, now - LOGIN_FAIL_WINDOW)
            return
        except MissingTableError:
            if attempt == 2:
                raise
            _create_login_failure_table(db)


# -- special users and bans (BOINC's forum_preferences) ---------------------------

# html/inc/forum.inc: special_user is a string of '0'/'1', one character per flag.
SPECIAL_USER_FLAGS = ("Volunteer moderator", "Project administrator", "Project developer",
                      "Project tester", "Volunteer developer", "Volunteer tester",
                      "Project scientist", "Help desk expert")

def _forum_rows(db, sql, params):
    # A project made before boincpy had the table has no forum preferences.
    return db.query_if_table(sql, params)


def forum_prefs_of(db, userids):
    """userid -> {"special_user": str, "banished_until": int} for the users
    that have forum preferences (one query)."""
    ids = sorted({int(i) for i in userids})
    if not ids:
        return {}
    rows = _forum_rows(db, "SELECT userid, special_user, banished_until FROM forum_preferences "
                           "WHERE userid IN (%s)" % ", ".join(["%s"] * len(ids)), ids)
    return {r["userid"]: {"special_user": r["special_user"] or "0",
                          "banished_until": int(r["banished_until"] or 0)} for r in rows}


def forum_prefs(db, userid):
    """A user's special-user flags and ban (defaults if they have none)."""
    return forum_prefs_of(db, [userid]).get(userid, {"special_user": "0", "banished_until": 0})


def special_user_ids(db):
    """Ids of the users with at least one special-user flag."""
    return [r["userid"] for r in _forum_rows(
        db, "SELECT userid FROM forum_preferences WHERE special_user LIKE %s ORDER BY userid",
        ("%1%",))]


def special_flags(bits):
    """The names of the flags set in a special_user string."""
    return [name for i, name in enumerate(SPECIAL_USER_FLAGS) if bits[i:i + 1] == "1"]


def _set_forum_pref(db, userid, column, value):
    ensure_table(db, "forum_preferences")
    user_table.set_forum_pref(db, userid, column, value)


def set_special_user(db, userid, flags):
    """Store the special-user flags (indexes into SPECIAL_USER_FLAGS) of a user."""
    bits = "".join("1" if i in flags else "0" for i in range(len(SPECIAL_USER_FLAGS)))
    _set_forum_pref(db, userid, "special_user", bits)
    return bits


def set_banished_until(db, userid, until):
    """Ban a user until the Unix time ``until`` (0 lifts the ban)."""
    _set_forum_pref(db, userid, "banished_until", int(until))


def is_banished(db, userid, now=None):
    """Is the user banned now?"""
    now = time.time() if now is None else now
    return forum_prefs(db, userid)["banished_until"] > now


# -- deleting an account ------------------------------------------------------------

def delete_account(db, user, now=None):
    """Delete a user's account and everything hanging on it, in one
    transaction (BOINC's wipe_account); return {what: number of rows}.

    * user_deleted / host_deleted rows are written first, so db_dump tells
      statistics sites the account and its hosts are gone;
    * results: the ones in progress or waiting for validation become OVER /
      CLIENT_DETACHED / INVALID and their workunits are transitioned (so new
      copies are sent); every result keeps its place but loses its user and
      host;
    * removed: hosts (with their host_app_version rows and messages),
      job-submission rights, team membership and team admin rights, credit
      by app, credited jobs, consent, tokens, profile, special-user flags and
      ban, sent-e-mail records; teams the user founded that have no other
      member and no credit (a spammer's teams) are deleted, the others lose
      their founder;
    * private messages to and from the user, friendships both ways and
      notifications (BOINC's pm_delete_user, delete_friends) go too;
    * BOINC's message boards and badges are left to their own pages.
    """
    now = int(time.time() if now is None else now)
    uid = user.id
    done = {}

    with db.transaction():
        # Lock the row: a scheduler request of this user waits or fails.
        db.query_one("SELECT id FROM user WHERE id = %s FOR UPDATE", (uid,))
        user_table.record_user_deleted(db, uid, user.cross_project_id, user.email_addr, now)
        record_hosts_deleted(db, uid, now)
        hosts = [r["id"] for r in db.query("SELECT id FROM host WHERE userid = %s", (uid,))]

        founded = db.query("SELECT id, nusers, total_credit FROM team WHERE userid = %s",
                           (uid,))
        quit_team(db, user, now)
        spam_teams = [t["id"] for t in founded
                      if not t["total_credit"] and not db.query_value(
                          "SELECT COUNT(*) FROM user WHERE teamid = %s", (t["id"],))]
        for tid in spam_teams:
            done["teams deleted"] = done.get("teams deleted", 0) + team_table.delete_team(db, tid)
        done["teams left without founder"] = team_table.clear_founder(db, uid)
        done["team admin rights"] = team_table.delete_admin_rights_of_user(db, uid)
        done["team history rows"] = team_table.delete_team_deltas_of_user(db, uid)

        # Results: unfinished work goes back to the transitioner.
        wus = [r["workunitid"] for r in db.query(
            "SELECT workunitid FROM result WHERE " + UNFINISHED_OF_USER + " FOR UPDATE",
            unfinished_of_user_params(uid))]
        done["results cancelled"] = cancel_user_results(db, uid)
        done["results unlinked"] = unlink_user_results(db, uid)
        for wuid in sorted(set(wus)):
            set_transition_time(db, wuid, now)

        for hid in hosts:
            done["host app versions"] = (done.get("host app versions", 0)
                                         + delete_host_app_versions(db, hid))
            done["messages to and from hosts"] = (done.get("messages to and from hosts", 0)
                                                  + delete_msgs_of_host(db, hid))
        done["hosts"] = delete_hosts_of_user(db, uid)
        done["job submission rights"] = delete_submit_rights(db, uid)
        for what, table in (("credit by app", "credit_user"), ("credited jobs", "credited_job"),
                            ("consent records", "consent"), ("tokens", "token"),
                            ("profile", "profile"), ("sent e-mail records", "sent_email")):
            done[what] = user_table.delete_rows_of_user(db, table, uid)
        try:
            done["special-user flags and ban"] = user_table.delete_rows_of_user(
                db, "forum_preferences", uid)
        except MissingTableError:
            pass
        try:
            from boincpy.db.messages import delete_community_rows_of_user
            for table, n in delete_community_rows_of_user(db, uid).items():
                done[table] = n
        except MissingTableError:
            pass
        _forum_delete_user(db, uid, done)
        done["user"] = user_table.delete_user(db, uid)
    return done


def obfuscate_account(db, user, now=None):
    """BOINC's obfuscate_account (enable_delete_account 1): the row stays for
    the database's sake, but its e-mail address and keys become
    ``deleted_TIME_RANDOM``, its name ``deleted``, country and postal code
    empty; it leaves its team, its hosts lose their names and addresses,
    its profile and special-user flags go; db_dump is told (user_deleted,
    host_deleted)."""
    now = int(time.time() if now is None else now)
    gone = "deleted_%d_%s" % (now, passwords.random_string())
    with db.transaction():
        db.query_one("SELECT id FROM user WHERE id = %s FOR UPDATE", (user.id,))
        user_table.record_user_deleted(db, user.id, user.cross_project_id, user.email_addr, now)
        record_hosts_deleted(db, user.id, now)
        user_table.update_user_columns(db, user.id, {
            "email_addr": gone, "authenticator": gone, "name": "deleted", "country": "",
            "postal_code": "", "has_profile": 0})
        quit_team(db, user, now)
        for row in db.query("SELECT id FROM host WHERE userid = %s", (user.id,)):
            update_host_columns(db, row["id"], {"domain_name": "deleted", "last_ip_addr": ""})
        user_table.delete_rows_of_user(db, "profile", user.id)
        user_table.delete_rows_of_user(db, "token", user.id)
        try:
            user_table.delete_rows_of_user(db, "forum_preferences", user.id)
        except MissingTableError:
            pass
        _forum_delete_user(db, user.id, {})


def _forum_delete_user(db, uid, done):
    """The account's posts, subscriptions and ratings (BOINC's forum_delete_user,
    which both obfuscate_account and wipe_account call)."""
    try:
        done.update(forum_delete_user(db, uid))
    except MissingTableError:
        pass


# -- tokens e-mailed to a user (BOINC's html/inc/token.inc) ----------------------------

TOKEN_DELETE_ACCOUNT = "D"      # BOINC's TOKEN_TYPE_DELETE_ACCOUNT (a day)
TOKEN_CHANGE_EMAIL = "E"        # BOINC's TOKEN_TYPE_CHANGE_EMAIL (a week)
TOKEN_LOGIN_LINK = "P"          # boincpy: the password-reset login link (a day)


def create_token(db, userid, token_type, duration, now=None):
    """A new token row of the user, valid ``duration`` seconds; return the
    token (32 random hex characters, as BOINC's create_token)."""
    now = int(time.time() if now is None else now)
    token = passwords.random_string()
    user_table.insert_token(db, token, userid, token_type, now, now + duration)
    return token


def valid_token(db, userid, token, token_type, now=None):
    """The token's row (dict) if the user has it, of this type and not
    expired (BOINC's is_valid_token), else None."""
    now = int(time.time() if now is None else now)
    if not token or len(token) > 64:
        return None
    return db.query_one("SELECT * FROM token WHERE userid = %s AND token = %s AND type = %s "
                        "AND expire_time > %s", (userid, token, token_type, now))


def use_token(db, userid, token, token_type, now=None):
    """Spend a one-time token: True if it was valid and is now deleted (two
    requests racing for it: only one gets True)."""
    if valid_token(db, userid, token, token_type, now) is None:
        return False
    return user_table.delete_token(db, token, userid, token_type) == 1


def recent_tokens(db, userid, token_type, since):
    """How many tokens of this type the user was given since ``since``."""
    return db.query_value("SELECT COUNT(*) FROM token WHERE userid = %s AND type = %s "
                          "AND create_time >= %s", (userid, token_type, since))


def new_email_problem(db, cfg, email_addr, now=None):
    """Why ``email_addr`` (lower-cased) can't be a new address of an
    account, or None: not an address, a banned domain, or another account
    has it or gave it up less than a week ago (BOINC's sign-up and
    edit_email_action.php checks)."""
    if not is_valid_email_syntax(email_addr):
        return ("Invalid email address: please enter a valid address of the form "
                "name@xxx.yyy")
    if is_banned_email_addr(cfg, email_addr):
        return "The email address %s is banned." % email_addr
    if (lookup_user_by_email(db, email_addr) is not None
            or lookup_user_by_previous_email(db, email_addr, now) is not None):
        return "There's already an account with that email address."
    return None
