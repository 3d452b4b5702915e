"""Account web RPCs over HTTP: html/user/*.php as CGIs, and persistently, under
a private Apache (children run as www-data), requests spelled as the stock client spells them,
replies compared element by element with the C++/PHP server's."""

import time
import urllib.request
from urllib.parse import quote

import pytest

from boincpy import passwords
from webrpc_util import (HEX32, NUMBER, WEAK_AUTH, assert_same_elements, error_of,
                         fixture_response, text_of)

# every test with the pages as CGIs and in persistent processes (FastCGI workers)
pytestmark = pytest.mark.parametrize("apache", ["cgi", "persistent"], indirect=True)

EMAIL = "Tester@Example.com"
PASSWORD = "right password"

pytestmark = pytest.mark.slow      # Apache end to end


def client_escape(value):
    """The client's escape_url: everything but letters and digits as %XX."""
    return quote(value, safe="").replace(".", "%2E").replace("-", "%2D").replace(
        "_", "%5F").replace("~", "%7E")


def fetch(url, **params):
    """GET url?params as the client does; (status, headers, body text)."""
    if params:
        url += "?" + "&".join("%s=%s" % (k, client_escape(v)) for k, v in params.items())
    req = urllib.request.Request(url, headers={
        "User-Agent": "BOINC client (x86_64-pc-linux-gnu 7.20.5)", "Accept": "*/*"})
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(req, timeout=60) as resp:
            return resp.status, resp.headers, resp.read().decode("utf-8")
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers, exc.read().decode("utf-8", "replace")


def add_app_version(project):
    db = project.connect()
    try:
        pid = db.query_value("SELECT id FROM platform WHERE name = 'x86_64-pc-linux-gnu'")
        if pid is None:
            pid = db.insert("INSERT INTO platform (create_time, name, user_friendly_name) "
                            "VALUES (0, 'x86_64-pc-linux-gnu', 'Linux running on an AMD "
                            "x86_64 or Intel EM64T CPU')")
        appid = db.query_value("SELECT id FROM app LIMIT 1")
        if appid is None:
            appid = db.insert("INSERT INTO app (create_time, name) VALUES (0, 'example_app')")
        db.execute("INSERT INTO app_version (create_time, appid, version_num, platformid, "
                   "xml_doc, plan_class) VALUES (0, %s, 100, %s, '', '')", (appid, pid))
    finally:
        db.close()


def users(project):
    db = project.connect()
    try:
        return db.query("SELECT * FROM user ORDER BY id")
    finally:
        db.close()


def test_get_project_config_over_http(apache):
    add_app_version(apache.project)
    status, headers, body = fetch(apache.master_url + "get_project_config.php")
    assert status == 200
    _, ref_headers, ref = fixture_response("get_project_config.php")
    assert headers["Content-Type"] == ref_headers["Content-Type"] == "text/xml;charset=UTF-8"
    assert_same_elements(body, ref, varying={
        "/project_config/name": "^%s$" % apache.project.long_name,
        "/project_config/master_url": "^%s$" % apache.master_url,
        "/project_config/web_rpc_url_base": "^%s$" % apache.master_url,
        "/project_config/platforms/platform/user_friendly_name": ".",
    })


def test_account_rpcs_over_http(apache):
    base = apache.master_url
    pw_hash = passwords.client_passwd_hash(PASSWORD, EMAIL)

    status, headers, body = fetch(base + "create_account.php", email_addr=EMAIL.lower(),
                                  passwd_hash=pw_hash, user_name="Web Tester")
    assert status == 200, body
    _, _, ref = fixture_response("create_account.php")
    assert_same_elements(body, ref, varying={"/account_out/authenticator": HEX32.pattern})
    auth = text_of(body, "authenticator")
    [row] = users(apache.project)
    assert (row["authenticator"], row["email_addr"], row["name"]) == (
        auth, EMAIL.lower(), "Web Tester")
    assert passwords.password_verify(pw_hash, row["passwd_hash"])

    # the repeat gives the same key
    _, _, body = fetch(base + "create_account.php", email_addr=EMAIL.lower(),
                       passwd_hash=pw_hash, user_name="Web Tester")
    _, _, ref = fixture_response("create_account_duplicate.php")
    assert_same_elements(body, ref, varying={"/account_out/authenticator": "^%s$" % auth})

    _, _, body = fetch(base + "lookup_account.php", email_addr=EMAIL.lower(),
                       passwd_hash=pw_hash)
    _, _, ref = fixture_response("lookup_account.php")
    assert_same_elements(body, ref, varying={"/account_out/authenticator": "^%s$" % auth})

    _, _, body = fetch(base + "am_get_info.php", account_key=auth)
    _, _, ref = fixture_response("am_get_info.php")
    assert_same_elements(body, ref, varying={
        "/am_get_info_reply/id": "^%d$" % row["id"],
        "/am_get_info_reply/name": r"^Web\+Tester$",
        "/am_get_info_reply/weak_auth": WEAK_AUTH.pattern,
        "/am_get_info_reply/cpid": HEX32.pattern,
        "/am_get_info_reply/create_time": "^%d$" % row["create_time"]})

    _, _, body = fetch(base + "show_user.php", userid=str(row["id"]), format="xml")
    _, _, ref = fixture_response("show_user_xml.php")
    assert_same_elements(body, ref, varying={
        "/user/id": "^%d$" % row["id"], "/user/cpid": HEX32.pattern,
        "/user/create_time": NUMBER.pattern, "/user/name": "^Web Tester$",
        "/user/total_credit": NUMBER.pattern, "/user/expavg_credit": NUMBER.pattern,
        "/user/expavg_time": NUMBER.pattern})


def test_account_rpc_errors_over_http(apache):
    base = apache.master_url
    pw_hash = passwords.client_passwd_hash(PASSWORD, EMAIL)
    _, _, body = fetch(base + "create_account.php", email_addr=EMAIL, passwd_hash=pw_hash,
                       user_name="Tester")
    before = users(apache.project)

    _, _, body = fetch(base + "lookup_account.php", email_addr=EMAIL,
                       passwd_hash=passwords.client_passwd_hash("wrong", EMAIL))
    _, _, ref = fixture_response("lookup_account_badpw.php")
    assert body == ref

    for params, expect in [
            ({"email_addr": "broken", "passwd_hash": pw_hash, "user_name": "X"},
             (-205, "Email address has invalid syntax")),
            ({"email_addr": EMAIL, "passwd_hash": "0" * 32, "user_name": "X"},
             (-137, "Name or email address is not unique")),
            ({"email_addr": "new@example.com", "passwd_hash": pw_hash, "user_name": "42"},
             (-188, "user name may not be a number")),
            ({"email_addr": "new@example.com", "user_name": "X"},
             (-1, "missing or bad parameter: passwd_hash"))]:
        status, _, body = fetch(base + "create_account.php", **params)
        assert status == 200 and error_of(body) == expect, body
    _, _, body = fetch(base + "am_get_info.php", account_key="f" * 32)
    assert error_of(body) == (-136, "Not found")
    assert users(apache.project) == before


def test_web_stopped_over_http(apache):
    stop = apache.project.path("stop_web")
    open(stop, "w").close()
    try:
        _, _, body = fetch(apache.master_url + "create_account.php", email_addr=EMAIL,
                           passwd_hash="0" * 32, user_name="X")
        assert error_of(body) == (-183, "Project is temporarily offline")
        _, _, body = fetch(apache.master_url + "get_project_config.php")
        assert text_of(body, "web_stopped") == "1" and text_of(body, "error_num") == "-183"
    finally:
        import os
        os.unlink(stop)
    assert users(apache.project) == []


def test_disabled_rpcs_over_http(apache):
    for page, message in (("am_set_info.php", "not supported"), ("create_team.php", "Nope")):
        status, headers, body = fetch(apache.master_url + page, account_key="x")
        assert status == 200
        assert error_of(body) == (-1, message)
        assert not body.startswith("<?xml")
