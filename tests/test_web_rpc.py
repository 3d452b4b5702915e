"""Account web RPCs in-process: boincpy.web.rpc against the mini_project database.

Every error case asserts BOINC's error number and message and that the
database is unchanged; replies are compared element by element with the
C++/PHP server's captured replies.
"""

import re
import time

import pytest

from boincpy import passwords
from boincpy.config import load_config
from boincpy.db import connect
from boincpy.web import rpc
from boincpy.web.http import Request, read_request
from webrpc_util import (HEX32, NUMBER, REF_EMAIL, REF_PASSWORD, WEAK_AUTH,
                         assert_same_elements, elements, error_of, fixture_response, text_of)

EMAIL = "Volunteer@Example.COM"
PASSWORD = "secret password"
HASH = passwords.client_passwd_hash(PASSWORD, EMAIL)


def call(project, name, get=None, post=None, addr="127.0.0.1", **overrides):
    """Serve one RPC in-process with these query (and form) parameters."""
    cfg = load_config(str(project))
    cfg.__dict__.update(overrides)
    req = Request.of(method="POST" if post else "GET", get=dict(get or {}),
                     post=dict(post or {}), environ={"REMOTE_ADDR": addr})
    return rpc.handle(name, cfg, req)


@pytest.fixture
def db(mini_project):
    database = connect(load_config(str(mini_project)))
    yield database
    database.close()


_TABLES = ("user", "team", "team_delta", "team_admin", "consent")


def snapshot(db):
    """Every row of the tables the account RPCs write (mod_time left out)."""
    out = {}
    for table in _TABLES:
        rows = db.query("SELECT * FROM %s" % table)
        out[table] = sorted(repr(sorted((k, v) for k, v in r.items() if k != "mod_time"))
                            for r in rows)
    return out


def assert_error(resp, num, msg=None):
    assert resp.status == ""
    assert resp.body.startswith('<?xml version="1.0" encoding="ISO-8859-1" ?>\n<error>\n')
    got = error_of(resp.body)
    assert got is not None, resp.body
    assert got[0] == num, resp.body
    if msg is not None:
        assert got[1] == msg, resp.body


def create(project, email=EMAIL, pw_hash=HASH, name="Volunteer", **extra):
    get = {"email_addr": email, "passwd_hash": pw_hash, "user_name": name}
    get.update(extra.pop("params", {}))
    return call(project, "create_account", get, **extra)


def authenticator(resp):
    auth = text_of(resp.body, "authenticator")
    assert auth and HEX32.match(auth), resp.body
    return auth


def add_app_version(db, platform="x86_64-pc-linux-gnu", plan_class="", deprecated=0,
                    version=100):
    pid = db.query_value("SELECT id FROM platform WHERE name = %s", (platform,))
    if pid is None:
        pid = db.insert("INSERT INTO platform (create_time, name, user_friendly_name) "
                        "VALUES (0, %s, %s)", (platform, platform + " friendly"))
    appid = db.query_value("SELECT id FROM app WHERE name = 'example_app'")
    db.execute("INSERT INTO app_version (create_time, appid, version_num, platformid, "
               "xml_doc, plan_class, deprecated) VALUES (0, %s, %s, %s, '', %s, %s)",
               (appid, version, pid, plan_class, deprecated))


# ---------------------------------------------------------------------------
# get_project_config.php

def test_get_project_config_matches_reference_server(mini_project, db):
    add_app_version(db)
    resp = call(mini_project, "get_project_config")
    assert resp.content_type == "text/xml;charset=UTF-8"
    _, _, ref = fixture_response("get_project_config.php")
    assert_same_elements(resp.body, ref, varying={
        "/project_config/name": "^Test project$",
        "/project_config/master_url": "^http://127.0.0.1/test/$",
        "/project_config/web_rpc_url_base": "^http://127.0.0.1/test/$",
        "/project_config/platforms/platform/user_friendly_name": "^Linux on x86_64$",
    })
    # the exact layout of the C++ reply's head
    assert resp.body.startswith(
        '<?xml version="1.0" encoding="ISO-8859-1" ?>\n<project_config>\n'
        "    <name>Test project</name>\n")
    assert resp.body.endswith("    </platforms>\n</project_config>")


def test_get_project_config_lists_platforms_of_current_app_versions(mini_project, db):
    add_app_version(db)
    add_app_version(db, plan_class="mt", version=101)
    add_app_version(db, platform="windows_x86_64", deprecated=1)
    add_app_version(db, platform="arm64-apple-darwin")
    body = call(mini_project, "get_project_config").body
    names = [t for p, t in elements(body) if p.endswith("/platform_name")]
    assert names == ["arm64-apple-darwin", "x86_64-pc-linux-gnu", "x86_64-pc-linux-gnu"]
    assert [t for p, t in elements(body) if p.endswith("/plan_class")] == ["mt"]
    assert "windows_x86_64" not in body


def test_get_project_config_options_and_trigger_files(mini_project, db):
    (mini_project / "terms_of_use.txt").write_text("  Be nice, share.\n")
    (mini_project / "local.revision").write_text("4711\n")
    (mini_project / "stop_sched").write_text("")
    body = call(mini_project, "get_project_config", min_passwd_length=10,
                disable_account_creation=True, account_manager=True,
                secure_url_base="https://secure.example.org/test/").body
    tags = [p for p, _ in elements(body)]
    assert text_of(body, "min_passwd_length") == "10"
    assert "/project_config/account_creation_disabled" in tags
    assert "/project_config/account_manager" in tags
    assert text_of(body, "sched_stopped") == "1"
    assert text_of(body, "local_revision") == "4711"
    assert text_of(body, "web_rpc_url_base") == "https://secure.example.org/test/"
    assert "    <terms_of_use>\nBe nice, share.\n</terms_of_use>\n" in body
    assert body.index("</platforms>") < body.index("<terms_of_use>")
    assert "invite_code_required" not in body

    body = call(mini_project, "get_project_config", invite_codes="/^yellow$/").body
    tags = [p for p, _ in elements(body)]
    assert tags.index("/project_config/account_creation_disabled") < tags.index(
        "/project_config/invite_code_required")

    body = call(mini_project, "get_project_config", disable_account_creation_rpc=True).body
    assert "<client_account_creation_disabled/>" in body

    # the terms go out raw, as BOINC sends them: the client copies the text up
    # to the closing tag and shows it as HTML when it holds markup or entities
    (mini_project / "terms_of_use.txt").write_text("<p>Be nice &amp; share.</p>")
    body = call(mini_project, "get_project_config").body
    assert "    <terms_of_use>\n<p>Be nice &amp; share.</p>\n</terms_of_use>\n" in body

    (mini_project / "stop_web").write_text("")
    body = call(mini_project, "get_project_config").body
    assert text_of(body, "error_num") == "-183"
    assert text_of(body, "web_stopped") == "1"


def test_get_project_config_answers_with_the_database_down(mini_project, db):
    add_app_version(db)
    resp = call(mini_project, "get_project_config", db_name="bpt_no_such_db",
                replica_db_name="bpt_no_such_db")
    assert text_of(resp.body, "name") == "Test project"
    assert "<platform>" not in resp.body
    assert resp.body.endswith("</project_config>")


# ---------------------------------------------------------------------------
# create_account.php

def test_create_account_stores_the_user_as_boinc_does(mini_project, db):
    before = int(time.time())
    resp = create(mini_project)
    _, _, ref = fixture_response("create_account.php")
    assert_same_elements(resp.body, ref, varying={"/account_out/authenticator": HEX32.pattern})
    assert resp.body == ('<?xml version="1.0" encoding="ISO-8859-1" ?>\n'
                         + " <account_out>\n   <authenticator>%s</authenticator>\n"
                         "</account_out>\n" % authenticator(resp))
    row = db.query_one("SELECT * FROM user")
    assert row["authenticator"] == authenticator(resp)
    assert row["email_addr"] == "volunteer@example.com"
    assert row["name"] == "Volunteer"
    assert row["passwd_hash"].startswith("$2y$10$") and len(row["passwd_hash"]) == 60
    assert passwords.password_verify(HASH, row["passwd_hash"])
    assert HEX32.match(row["cross_project_id"])
    assert row["cross_project_id"] != row["authenticator"]
    assert before <= row["create_time"] <= time.time()
    assert row["expavg_time"] == row["create_time"]
    assert (row["country"], row["send_email"], row["show_hosts"], row["teamid"]) == (
        "International", 1, 1, 0)


def test_create_account_with_privacy_by_default_hides_computers(mini_project, db):
    # user_util.inc default_show_hosts(): 0 with <enable_privacy_by_default/>
    authenticator(create(mini_project, enable_privacy_by_default=True))
    assert db.query_one("SELECT show_hosts FROM user")["show_hosts"] == 0
    authenticator(create(mini_project, email="other@example.com", name="Other",
                         pw_hash=passwords.client_passwd_hash("pw", "other@example.com")))
    row = db.query_one("SELECT show_hosts FROM user WHERE email_addr = 'other@example.com'")
    assert row["show_hosts"] == 1


def test_create_account_repeat_returns_the_same_authenticator(mini_project, db):
    first = authenticator(create(mini_project))
    # same e-mail (any case) and passwd_hash: the same account
    again = create(mini_project, email=EMAIL.upper())
    _, _, ref = fixture_response("create_account_duplicate.php")
    assert_same_elements(again.body, ref, varying={"/account_out/authenticator": HEX32.pattern})
    assert authenticator(again) == first
    assert db.query_value("SELECT COUNT(*) FROM user") == 1


def test_create_account_existing_email_other_password(mini_project, db):
    create(mini_project)
    before = snapshot(db)
    other = passwords.client_passwd_hash("another one", EMAIL)
    assert_error(create(mini_project, pw_hash=other), -137, "Name or email address is not unique")
    assert snapshot(db) == before


def test_create_account_accepts_a_legacy_md5_stored_hash(mini_project, db):
    auth = authenticator(create(mini_project))
    db.execute("UPDATE user SET passwd_hash = %s", (HASH,))
    assert authenticator(create(mini_project)) == auth


@pytest.mark.parametrize("params,num,msg", [
    ({"email_addr": None}, -1, "missing or bad parameter: email_addr"),
    ({"passwd_hash": None}, -1, "missing or bad parameter: passwd_hash"),
    ({"user_name": None}, -1, "missing or bad parameter: user_name"),
    ({"email_addr": "not-an-address"}, -205, "Email address has invalid syntax"),
    ({"email_addr": "a@localhost"}, -205, "Email address has invalid syntax"),
    ({"email_addr": "a..b@example.com"}, -205, "Email address has invalid syntax"),
    ({"user_name": " Padded"}, -188, "user name cannot have leading or trailing white space"),
    ({"user_name": ""}, -188, "user name must be nonempty"),
    ({"user_name": "<b>bold</b>"}, -188, "user name may not contain special characters"),
    ({"user_name": "Tom & Jerry"}, -188, "user name may not contain special characters"),
    ({"user_name": "1234"}, -188, "user name may not be a number"),
    ({"user_name": "-1.5e3"}, -188, "user name may not be a number"),
    ({"user_name": "n" * 192}, -188, "user name may have at most 191 characters"),
    ({"email_addr": "a" * 64 + "@" + "b" * 61 + "." + "c" * 61 + ".org"}, -205,
     "Email address has invalid syntax"),
    # the server sees md5(password + e-mail) only: a short password cannot be
    # seen, a hash that is not 32 characters can
    ({"passwd_hash": "abc"}, -1, "password hash length not 32"),
])
def test_create_account_bad_input(mini_project, db, params, num, msg):
    get = {"email_addr": EMAIL, "passwd_hash": HASH, "user_name": "Volunteer"}
    get.update(params)
    get = {k: v for k, v in get.items() if v is not None}
    before = snapshot(db)
    assert_error(call(mini_project, "create_account", get), num, msg)
    assert snapshot(db) == before


def test_create_account_disabled(mini_project, db):
    before = snapshot(db)
    assert_error(create(mini_project, disable_account_creation=True), -1,
                 "The project is not accepting new accounts.")
    assert_error(create(mini_project, disable_account_creation_rpc=True), -1,
                 "Please visit the project web site to create an account, then try again.")
    assert_error(create(mini_project, disable_account_creation_rpc=True,
                        no_web_account_creation=True), -1,
                 "The project is not accepting new accounts.")
    assert snapshot(db) == before


def test_create_account_invite_codes(mini_project, db):
    before = snapshot(db)
    assert_error(create(mini_project, invite_codes="/^(yellow|green)$/i"), -1,
                 "missing or bad parameter: invite_code")
    assert_error(create(mini_project, invite_codes="/^(yellow|green)$/i",
                        params={"invite_code": "blue"}), -1, "Invalid invitation code")
    assert snapshot(db) == before
    authenticator(create(mini_project, invite_codes="/^(yellow|green)$/i",
                         params={"invite_code": "GREEN"}))
    # INVITE_CODES_RPC: the code is recorded in user.signature
    authenticator(create(mini_project, email="second@example.com", name="Second",
                         pw_hash=passwords.client_passwd_hash("pw", "second@example.com"),
                         invite_codes_rpc="^rpc-[0-9]+$", params={"invite_code": "rpc-42"}))
    assert db.query_value("SELECT signature FROM user WHERE name = 'Second'") == "rpc-42"


def test_create_account_duplicate_user_name(mini_project, db):
    create(mini_project)
    before = snapshot(db)
    resp = create(mini_project, email="other@example.com",
                  pw_hash=passwords.client_passwd_hash("x", "other@example.com"))
    assert_error(resp, -137, "Name or email address is not unique")
    assert snapshot(db) == before


def test_create_account_banned_domain_and_recently_given_up_address(mini_project, db):
    before = snapshot(db)
    assert_error(create(mini_project, email="x@spam.example.com", banned_email_domain=[
        "spam.example.com"]), -205, "Email address has invalid syntax")
    assert snapshot(db) == before
    # an address another account gave up less than 7 days ago is refused
    db.execute("INSERT INTO user (create_time, email_addr, name, authenticator, "
               "previous_email_addr, email_addr_change_time) VALUES (0, 'new@example.com', "
               "'Mover', 'moverauth', 'volunteer@example.com', %s)", (time.time() - 3600,))
    before = snapshot(db)
    assert_error(create(mini_project), -137, "Name or email address is not unique")
    assert snapshot(db) == before


def test_create_account_consent(mini_project, db):
    (mini_project / "terms_of_use.txt").write_text("terms")
    ctid = db.insert("INSERT INTO consent_type (shortname, description, enabled) "
                     "VALUES ('ENROLL', 'General terms-of-use', 1)")
    before = snapshot(db)
    resp = create(mini_project, account_creation_rpc_require_consent=True)
    assert_error(resp, -242)
    assert "consent to its terms of use" in error_of(resp.body)[1]
    assert snapshot(db) == before
    create(mini_project, account_creation_rpc_require_consent=True,
           params={"consent_flag": "1", "source": "boinccmd"})
    row = db.query_one("SELECT * FROM consent")
    user = db.query_one("SELECT id, create_time FROM user")
    assert (row["userid"], row["consent_type_id"], row["consent_flag"],
            row["consent_not_required"], row["source"], row["consent_time"]) == (
        user["id"], ctid, 1, 0, "boinccmd", user["create_time"])


def test_create_account_joins_a_joinable_team(mini_project, db):
    db.execute("INSERT INTO team (name, name_lc, joinable) VALUES ('Crunchers', 'crunchers', 1), "
               "('Closed', 'closed', 0)")
    create(mini_project, params={"team_name": "Crunchers"})
    user = db.query_one("SELECT id, teamid FROM user")
    team = db.query_value("SELECT id FROM team WHERE name = 'Crunchers'")
    assert user["teamid"] == team
    delta = db.query_one("SELECT * FROM team_delta")
    assert (delta["userid"], delta["teamid"], delta["joining"]) == (user["id"], team, 1)
    create(mini_project, email="b@example.com", name="B", params={"team_name": "Closed"},
           pw_hash=passwords.client_passwd_hash("x", "b@example.com"))
    assert db.query_value("SELECT teamid FROM user WHERE name = 'B'") == 0


def test_create_account_web_stopped_and_database_unreachable(mini_project, db):
    (mini_project / "stop_web").write_text("")
    assert_error(create(mini_project), -183, "Project is temporarily offline")
    (mini_project / "stop_web").unlink()
    assert_error(create(mini_project, db_passwd="wrong", db_user="bpt_nobody"), -138,
                 "Can't access database")
    assert db.query_value("SELECT COUNT(*) FROM user") == 0


# ---------------------------------------------------------------------------
# lookup_account.php

def test_lookup_account_good_password(mini_project, db):
    auth = authenticator(create(mini_project))
    resp = call(mini_project, "lookup_account",
                {"email_addr": EMAIL.lower(), "passwd_hash": HASH})
    _, _, ref = fixture_response("lookup_account.php")
    assert_same_elements(resp.body, ref, varying={"/account_out/authenticator": HEX32.pattern})
    assert authenticator(resp) == auth
    # e-mail addresses compare without case
    resp = call(mini_project, "lookup_account", {"email_addr": EMAIL.upper(), "passwd_hash": HASH})
    assert authenticator(resp) == auth


def test_lookup_account_wrong_password(mini_project, db):
    create(mini_project)
    before = snapshot(db)
    resp = call(mini_project, "lookup_account",
                {"email_addr": EMAIL, "passwd_hash": passwords.md5_hex("wrong")})
    assert_error(resp, -206, "Invalid password")
    _, _, ref = fixture_response("lookup_account_badpw.php")
    assert resp.body == ref
    assert snapshot(db) == before
    # the failure is counted against the address and the account, not slept on
    rows = {r["name"]: r["nfail"] for r in db.query("SELECT * FROM login_failure")}
    user = db.query_one("SELECT id FROM user")
    assert rows == {"addr:127.0.0.1": 1, "user:%d" % user["id"]: 1}


def test_password_guessing_is_refused_without_sleeping(mini_project, db, monkeypatch):
    """Past LOGIN_FAIL_MAX_ACCOUNT failures in a window, the account refuses
    every login, the right password too, from any address; other accounts
    and, after the window, this one log in again.  No request sleeps."""
    import boincpy.web.rpc
    from boincpy.web import accounts
    slept = []
    monkeypatch.setattr(boincpy.web.rpc.time, "sleep", slept.append)
    create(mini_project)
    other = call(mini_project, "create_account", {
        "email_addr": "other@example.com", "user_name": "Other",
        "passwd_hash": passwords.client_passwd_hash("pw", "other@example.com")})
    assert "<authenticator>" in other.body
    wrong = {"email_addr": EMAIL, "passwd_hash": passwords.md5_hex("wrong")}
    for n in range(accounts.LOGIN_FAIL_MAX_ACCOUNT):
        assert_error(call(mini_project, "lookup_account", wrong, addr="192.0.2.%d" % n), -206,
                     "Invalid password")
    right = {"email_addr": EMAIL, "passwd_hash": HASH}
    resp = call(mini_project, "lookup_account", right, addr="198.51.100.1")
    assert_error(resp, -206, boincpy.web.rpc.TOO_MANY_FAILURES)
    resp = call(mini_project, "lookup_account", {
        "email_addr": "other@example.com",
        "passwd_hash": passwords.client_passwd_hash("pw", "other@example.com")})
    assert "<authenticator>" in resp.body
    db.execute("UPDATE login_failure SET first_time = first_time - %s",
               (accounts.LOGIN_FAIL_WINDOW + 1,))
    assert "<authenticator>" in call(mini_project, "lookup_account", right).body
    assert slept == []


def test_login_failures_per_address(mini_project, db):
    create(mini_project)
    from boincpy.web import accounts
    for n in range(accounts.LOGIN_FAIL_MAX_ADDR):
        assert_error(call(mini_project, "lookup_account",
                          {"email_addr": "nobody%d@example.com" % n}, addr="203.0.113.9"), -136)
    resp = call(mini_project, "lookup_account", {"email_addr": EMAIL, "passwd_hash": HASH},
                addr="203.0.113.9")
    assert_error(resp, -206, "Too many failed logins: try again in a few minutes")
    assert "<authenticator>" in call(mini_project, "lookup_account",
                                     {"email_addr": EMAIL, "passwd_hash": HASH}).body


def test_login_failure_table_is_created_on_first_use(mini_project, db):
    """A project made before the table existed gets it with its first failed login."""
    create(mini_project)
    db.execute("DROP TABLE login_failure")
    resp = call(mini_project, "lookup_account",
                {"email_addr": EMAIL, "passwd_hash": passwords.md5_hex("wrong")})
    assert_error(resp, -206, "Invalid password")
    assert db.query_one("SELECT nfail FROM login_failure WHERE name = 'addr:127.0.0.1'") \
        == {"nfail": 1}


def test_lookup_account_existence_check_and_unknown_address(mini_project, db):
    create(mini_project)
    resp = call(mini_project, "lookup_account", {"email_addr": EMAIL})
    assert resp.body.endswith("<account_out>\n   <success/>\n</account_out>\n")
    assert "authenticator" not in resp.body
    assert_error(call(mini_project, "lookup_account", {"email_addr": "nobody@example.com",
                                                       "passwd_hash": HASH}), -136, "Not found")
    assert_error(call(mini_project, "lookup_account", {}), -1,
                 "missing or bad parameter: email_addr")


def test_lookup_account_upgrades_a_legacy_md5_hash(mini_project, db):
    auth = authenticator(create(mini_project))
    db.execute("UPDATE user SET passwd_hash = %s", (HASH,))
    assert authenticator(call(mini_project, "lookup_account",
                              {"email_addr": EMAIL, "passwd_hash": HASH})) == auth
    stored = db.query_value("SELECT passwd_hash FROM user")
    assert stored.startswith("$2y$10$") and passwords.password_verify(HASH, stored)
    # and the upgraded value still logs in, without being rewritten again
    assert authenticator(call(mini_project, "lookup_account",
                              {"email_addr": EMAIL, "passwd_hash": HASH})) == auth
    assert db.query_value("SELECT passwd_hash FROM user") == stored


def test_lookup_account_accepts_the_account_key_hash(mini_project, db):
    auth = authenticator(create(mini_project))
    email = EMAIL.lower()
    resp = call(mini_project, "lookup_account",
                {"email_addr": email, "passwd_hash": passwords.md5_hex(auth + email)})
    assert authenticator(resp) == auth


# ---------------------------------------------------------------------------
# am_get_info.php, am_set_info.php

def test_am_get_info_matches_reference_server(mini_project, db):
    auth = authenticator(create(mini_project, name="Jane Doe"))
    resp = call(mini_project, "am_get_info", {"account_key": auth})
    _, _, ref = fixture_response("am_get_info.php")
    user = db.query_one("SELECT * FROM user")
    assert_same_elements(resp.body, ref, varying={
        "/am_get_info_reply/id": "^%d$" % user["id"],
        "/am_get_info_reply/name": r"^Jane\+Doe$",
        "/am_get_info_reply/weak_auth": WEAK_AUTH.pattern,
        "/am_get_info_reply/cpid": HEX32.pattern,
        "/am_get_info_reply/create_time": "^%d$" % user["create_time"],
    })
    assert text_of(resp.body, "weak_auth") == "%d_%s" % (
        user["id"], passwords.md5_hex(auth + user["passwd_hash"]))
    assert text_of(resp.body, "cpid") == passwords.md5_hex(
        user["cross_project_id"] + user["email_addr"])


def test_am_get_info_errors(mini_project, db):
    assert_error(call(mini_project, "am_get_info", {"account_key": "0" * 32}), -136, "Not found")
    assert_error(call(mini_project, "am_get_info", {}), -1,
                 "missing or bad parameter: account_key")
    auth = authenticator(create(mini_project))
    assert_error(call(mini_project, "am_get_info", {"account_key": auth, "x": "1"}), -1,
                 "unexpected parameter: x")


def test_am_get_info_team_founder(mini_project, db):
    auth = authenticator(create(mini_project))
    uid = db.query_value("SELECT id FROM user")
    tid = db.insert("INSERT INTO team (name, userid) VALUES ('Mine', %s)", (uid,))
    db.execute("UPDATE user SET teamid = %s", (tid,))
    body = call(mini_project, "am_get_info", {"account_key": auth}).body
    # BOINC appends it straight after </venue>
    assert "<venue></venue><teamfounder/>\n\n</am_get_info_reply>" in body


def test_am_set_info_is_not_supported_by_default(mini_project, db):
    auth = authenticator(create(mini_project))
    before = snapshot(db)
    resp = call(mini_project, "am_set_info", {"account_key": auth, "name": "Other"})
    # BOINC's page fails before its XML header: a bare error block as text/html
    assert resp.body == ("<error>\n    <error_num>-1</error_num>\n"
                         "    <error_msg>not supported</error_msg>\n</error>\n")
    assert resp.content_type.startswith("text/html")
    assert snapshot(db) == before


def test_am_set_info_when_enabled(mini_project, db):
    auth = authenticator(create(mini_project))
    tid = db.insert("INSERT INTO team (name) VALUES ('Joinme')")
    db.execute("UPDATE user SET project_prefs = %s",
               ("<project_preferences>\n<project_specific>x=1</project_specific>\n"
                "</project_preferences>",))
    prefs = "<project_preferences>\n<resource_share>50</resource_share>\n</project_preferences>"
    new_hash = passwords.client_passwd_hash("new pw", "moved@example.com")
    resp = call(mini_project, "am_set_info", post={
        "account_key": auth, "name": "Renamed", "project_prefs": prefs, "teamid": str(tid),
        "send_email": "0", "venue": "work", "email_addr": "Moved@Example.com",
        "password_hash": new_hash}, enable_am_set_info_rpc=True)
    assert "<am_set_info_reply>\n    <success/>" in resp.body
    row = db.query_one("SELECT * FROM user")
    assert (row["name"], row["teamid"], row["send_email"], row["venue"], row["email_addr"],
            row["previous_email_addr"]) == ("Renamed", tid, 0, "work", "moved@example.com",
                                            "volunteer@example.com")
    assert "<project_specific>x=1</project_specific>" in row["project_prefs"]
    assert "<resource_share>50</resource_share>" in row["project_prefs"]
    assert passwords.password_verify(new_hash, row["passwd_hash"])

    before = snapshot(db)
    resp = call(mini_project, "am_set_info", {"account_key": auth, "name": "X",
                                              "global_prefs": "<global_preferences>"},
                enable_am_set_info_rpc=True)
    assert_error(resp, -112, "Invalid global preferences: No end tag")
    assert_error(call(mini_project, "am_set_info", {"account_key": "nope"},
                      enable_am_set_info_rpc=True), -136)
    assert snapshot(db) == before


# ---------------------------------------------------------------------------
# show_user.php, team_lookup.php, create_team.php

def test_show_user_xml_matches_reference_server(mini_project, db):
    create(mini_project)
    db.execute("UPDATE user SET total_credit = 0.3598643622685185, "
               "expavg_credit = 0.0356330947140254, expavg_time = 1795335787.13757")
    uid = db.query_value("SELECT id FROM user")
    resp = call(mini_project, "show_user", {"format": "xml", "userid": str(uid)})
    _, _, ref = fixture_response("show_user_xml.php")
    assert_same_elements(resp.body, ref, varying={
        "/user/id": "^%d$" % uid, "/user/cpid": HEX32.pattern, "/user/create_time": NUMBER.pattern,
        "/user/name": "^Volunteer$"})
    assert "<host>" not in resp.body and "<venue>" not in resp.body


def test_show_user_by_auth_lists_hosts(mini_project, db):
    auth = authenticator(create(mini_project))
    uid = db.query_value("SELECT id FROM user")
    db.execute("INSERT INTO host (userid, domain_name, p_ncpus, misc) VALUES (%s, 'box<1>', 4, '')",
               (uid,))
    body = call(mini_project, "show_user", {"format": "xml", "auth": auth}).body
    assert [p for p, _ in elements(body)][9:12] == ["/user/has_profile", "/user/venue", "/user/host"]
    assert text_of(body, "domain_name") == "box<1>"
    assert_error(call(mini_project, "show_user", {"format": "xml", "userid": "999"}), -136,
                 "Not found")
    assert_error(call(mini_project, "show_user", {"format": "xml"}), -1,
                 "missing or bad parameter: userid")
    page = call(mini_project, "show_user", {"userid": str(uid)})
    assert page.content_type.startswith("text/html") and "Volunteer" in page.body


def test_team_lookup(mini_project, db):
    a = db.insert("INSERT INTO team (name, name_lc, url, country, expavg_credit) "
                  "VALUES ('Alpha & Co', 'alpha & co', 'alpha.org', 'International', 5)")
    b = db.insert("INSERT INTO team (name, name_lc, expavg_credit) VALUES ('alphabet', "
                  "'alphabet', 9)")
    body = call(mini_project, "team_lookup", {"team_id": str(a)}).body
    assert text_of(body, "name") == "Alpha & Co" and "&amp;" in body
    assert [p for p, _ in elements(body)] == [
        "/team", "/team/id", "/team/create_time", "/team/userid", "/team/name", "/team/url",
        "/team/type", "/team/country", "/team/total_credit", "/team/expavg_credit",
        "/team/expavg_time"]
    body = call(mini_project, "team_lookup", {"team_ids": "%d,x,%d,999" % (b, a)}).body
    assert [t for p, t in elements(body) if p == "/teams/team/id"] == [str(b), str(a)]
    body = call(mini_project, "team_lookup", {"team_name": "ALPHA", "format": "xml"}).body
    assert [t for p, t in elements(body) if p == "/teams/team/id"] == [str(b), str(a)]
    body = call(mini_project, "team_lookup", {"team_name": "%", "format": "xml"}).body
    assert "<team>" not in body          # LIKE wildcards are literal
    assert_error(call(mini_project, "team_lookup", {"team_id": "999"}), -136)
    assert_error(call(mini_project, "team_lookup", {"team_name": "a", "evil": "1"}), -1,
                 "unexpected parameter: evil")


def test_create_team(mini_project, db):
    auth = authenticator(create(mini_project))
    params = {"account_key": auth, "name": "New Team", "url": "http://team.example.org",
              "type": "Company", "name_html": "", "description": "we crunch", "country": ""}
    before = snapshot(db)
    resp = call(mini_project, "create_team", params)
    assert resp.body == "<error>\n    <error_num>-1</error_num>\n    <error_msg>Nope</error_msg>\n</error>\n"
    assert snapshot(db) == before
    resp = call(mini_project, "create_team", params, enable_create_team_rpc=True)
    tid = int(text_of(resp.body, "team_id"))
    team = db.query_one("SELECT * FROM team WHERE id = %s", (tid,))
    assert (team["name"], team["name_lc"], team["url"], team["type"], team["country"]) == (
        "New Team", "new team", "team.example.org", 2, "International")
    assert db.query_value("SELECT teamid FROM user") == tid
    before = snapshot(db)
    assert_error(call(mini_project, "create_team", params, enable_create_team_rpc=True), -137,
                 "could not create team")
    assert_error(call(mini_project, "create_team", dict(params, name=""),
                      enable_create_team_rpc=True), -1, "must set team name")
    assert_error(call(mini_project, "create_team", params, enable_create_team_rpc=True,
                      disable_team_creation=True), -1, "team creation disabled")
    assert snapshot(db) == before


# ---------------------------------------------------------------------------
# the CGI layer

def test_parse_request_reads_the_clients_escaped_query():
    # what boinccmd 7.20.5 sent (fixtures/client_create_account.request.http)
    req = read_request({"REQUEST_METHOD": "GET", "QUERY_STRING":
                         "email_addr=test%40example%2Ecom&passwd_hash=d614b90378c5443b20c65c0c"
                         "4d0dd939&user_name=Test+User%21"})
    assert req.query == {"email_addr": ["test@example.com"],
                         "passwd_hash": ["d614b90378c5443b20c65c0c4d0dd939"],
                         "user_name": ["Test User!"]}
    assert passwords.client_passwd_hash("testpw", "Test@Example.com") == \
        passwords.md5_hex("testpwtest@example.com")


def test_reference_account_hash_and_weak_auth_formula():
    # the reference server's throwaway account: passwd_hash as boinccmd computes it
    assert HEX32.match(passwords.client_passwd_hash(REF_PASSWORD, REF_EMAIL))
    stored = passwords.password_hash(passwords.client_passwd_hash(REF_PASSWORD, REF_EMAIL))
    assert passwords.check_passwd_hash(
        passwords.client_passwd_hash(REF_PASSWORD, REF_EMAIL), stored) == (True, None)
    assert passwords.check_passwd_hash("0" * 32, stored) == (False, None)
    assert re.match(r"^\$2y\$10\$[./A-Za-z0-9]{53}$", stored)


def test_an_unexpected_failure_is_a_500_with_an_xml_error(mini_project):
    resp = call(mini_project, "create_account", {"email_addr": "a@example.com",
                                                  "passwd_hash": HASH, "user_name": "A"},
                disable_account_creation=_Exploding())
    assert resp.status.startswith("500")
    assert error_of(resp.body)[0] == -1


class _Exploding:
    def __bool__(self):
        raise RuntimeError("boom")
