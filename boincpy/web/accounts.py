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
from boincpy.db.rows import Team, User
from boincpy.errors import DatabaseError

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
    """NULL text columns as '' and blobs as str, like PHP's string rows."""
    if row is None:
        return None
    out = {}
    for key, value in row.items():
        if value is None:
            value = ""
        elif isinstance(value, (bytes, bytearray)):
            value = value.decode("utf-8", "replace")
        out[key] = value
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
    cols = ("create_time", "email_addr", "name", "authenticator", "country", "postal_code",
            "total_credit", "expavg_credit", "expavg_time", "project_prefs", "teamid",
            "venue", "send_email", "show_hosts", "posts", "seti_id", "seti_nresults",
            "seti_last_result_time", "seti_total_cpu", "has_profile", "cross_project_id",
            "passwd_hash", "email_validated", "donated")
    user.id = db.insert(
        "INSERT INTO user (%s) VALUES (%s)" % (", ".join(cols), ", ".join(["%s"] * len(cols))),
        tuple(getattr(user, c) for c in cols))
    return user


def set_passwd_hash(db, user, stored):
    """Store a new passwd_hash value (already in its stored form)."""
    db.execute("UPDATE user SET passwd_hash = %s WHERE id = %s", (stored, user.id))
    user.passwd_hash = stored


def quit_team(db, user, now=None):
    """Leave the user's team (BOINC's user_quit_team)."""
    if not user.teamid:
        return
    now = int(time.time() if now is None else now)
    old = user.teamid
    db.execute("UPDATE user SET teamid = 0 WHERE id = %s", (user.id,))
    db.execute("UPDATE team SET ping_user = -ping_user WHERE id = %s AND ping_user = %s",
               (old, user.id))
    db.execute("DELETE FROM team_admin WHERE teamid = %s AND userid = %s", (old, user.id))
    db.execute("INSERT INTO team_delta (userid, teamid, timestamp, joining, total_credit) "
               "VALUES (%s, %s, %s, 0, %s)", (user.id, old, now, user.total_credit))
    user.teamid = 0


def join_team(db, team, user, now=None):
    """Make the user a member of ``team`` (BOINC's user_join_team)."""
    now = int(time.time() if now is None else now)
    quit_team(db, user, now)
    db.execute("UPDATE user SET teamid = %s WHERE id = %s", (team.id, user.id))
    db.execute("INSERT INTO team_delta (userid, teamid, timestamp, joining, total_credit) "
               "VALUES (%s, %s, %s, 1, %s)", (user.id, team.id, now, user.total_credit))
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
    team.id = db.insert(
        "INSERT INTO team (userid, create_time, name, name_lc, url, type, name_html, "
        "description, country, nusers, expavg_time) "
        "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, 0, %s)",
        (team.userid, team.create_time, team.name, team.name_lc, team.url, team.type,
         team.name_html, team.description, team.country, team.expavg_time))
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

_ER_NO_SUCH_TABLE = 1146


def login_failure_keys(remote_addr, user=None):
    """The login_failure rows a login attempt counts against."""
    keys = {"addr:%s" % (remote_addr or "?")[:150]: LOGIN_FAIL_MAX_ADDR}
    if user is not None:
        keys["user:%d" % user.id] = LOGIN_FAIL_MAX_ACCOUNT
    return keys


def _create_login_failure_table(db):
    """Projects made before the table existed get it on first use."""
    from boincpy.db.schema import schema_statements
    for stmt in schema_statements():
        if stmt.startswith("create table login_failure "):
            db.execute(stmt.replace("create table", "create table if not exists", 1))


def logins_refused(db, keys, now=None):
    """True if any of ``keys`` (from :func:`login_failure_keys`) reached its
    limit of failed logins in the current window."""
    now = int(time.time() if now is None else now)
    names = list(keys)
    try:
        rows = db.query("SELECT name, nfail FROM login_failure WHERE first_time > %%s "
                        "AND name IN (%s)" % ", ".join(["%s"] * len(names)),
                        [now - LOGIN_FAIL_WINDOW] + names)
    except DatabaseError as exc:
        if getattr(exc, "mysql_code", None) == _ER_NO_SUCH_TABLE:
            return False
        raise
    return any(row["nfail"] >= keys[row["name"]] for row in rows)


def record_login_failure(db, keys, now=None):
    """Count one failed login against each of ``keys`` (a new window starts
    when the last one has ended)."""
    now = int(time.time() if now is None else now)
    sql = ("INSERT INTO login_failure (name, nfail, first_time) VALUES (%s, 1, %s) "
           "ON DUPLICATE KEY UPDATE nfail = IF(first_time > %s, nfail + 1, 1), "
           "first_time = IF(first_time > %s, first_time, %s)")
    for attempt in (1, 2):
        try:
            for name in keys:
                db.execute(sql, (name, now, now - LOGIN_FAIL_WINDOW, now - LOGIN_FAIL_WINDOW,
                                 now))
            return
        except DatabaseError as exc:
            if getattr(exc, "mysql_code", None) != _ER_NO_SUCH_TABLE or attempt == 2:
                raise
            _create_login_failure_table(db)
