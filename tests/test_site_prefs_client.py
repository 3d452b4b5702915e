"""The preference pages under Apache, end to end: preferences changed on the
web (in Chromium through the pages' own links and forms, over HTTP when no
browser is installed) reach the stock 7.20.5 client at its next scheduler
request (global_prefs.xml, the project's resource share); and the same
pages, keywords and am_set_host_info.php in persistent mode."""

import os
import re
import urllib.parse
import urllib.request

import pytest

import webdriver
from site_util import Session, token_of
from site_util import form_fields as _form_fields
from test_stock_client_accounts import running_feeder

pytestmark = pytest.mark.slow

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# the README's picture, refreshed only when asked (BOINCPY_SCREENSHOTS=1)
SCREENSHOT = (os.path.join(REPO, "docs", "screenshots", "prefs.png")
              if os.environ.get("BOINCPY_SCREENSHOTS") else None)
EMAIL = "prefs.volunteer@example.org"
PASSWORD = "correct horse"


def _browser_login(b, base, page):
    """Open ``page``; the site sends us to its login form and back."""
    b.get(base + page)
    b.find('input[name="email_addr"]').send_keys(EMAIL)
    b.find('input[name="passwd"]').send_keys(PASSWORD)
    b.find('form[action="login_action.php"] button[type="submit"]').follow()
    assert "Log out" in b.body_text()


def _set_field(b, name, value):
    field = b.find('input[name="%s"]' % name)
    field.clear()
    field.send_keys(value)


def _edit_in_chromium(base, screenshot=None):
    with webdriver.Browser.start() as b:
        _browser_login(b, base, "prefs.php?subset=global")
        b.link("Edit preferences").follow()
        _set_field(b, "cpu_usage_limit", "67")
        b.find('button[name="action"]').follow()
        text = b.body_text()
        assert "67 % of CPU time" in text and "have been updated" in text, text
        # a venue of its own, through its link
        b.link("Add separate preferences for home").follow()
        _set_field(b, "cpu_usage_limit", "45")
        b.find('button[name="action"]').follow()
        assert "Separate preferences for home" in b.body_text()
        if screenshot:
            b.screenshot(screenshot)
        b.link("Project preferences").follow()
        b.link("Edit preferences").follow()
        _set_field(b, "resource_share", "250")
        b.find('button[name="action"]').follow()
        assert "250" in b.body_text()


def _edit_over_http(session, page, get, changes):
    text = session.page(page, get)
    fields = _form_fields(text, page)
    fields.update({k: [v] for k, v in changes.items()})
    code, head, body = session.request(page, form=fields)
    assert code == 303, (code, body[-2000:])
    return head["Location"]


def test_prefs_changed_on_the_web_reach_the_stock_client(apache, stock_client):
    url, client = apache.master_url, stock_client
    # the client's platform: the scheduler sends global preferences only to
    # hosts of a platform the project knows (as BOINC's)
    db = apache.project.connect()
    try:
        db.execute("INSERT INTO platform (create_time, name, user_friendly_name) "
                   "VALUES (1, 'x86_64-pc-linux-gnu', 'Linux on x86_64')")
    finally:
        db.close()
    with running_feeder(apache.project):
        created = client.create_account(url, EMAIL, PASSWORD, "Prefs Volunteer")
        assert created.authenticator, created.output
        client.project_attach(url, created.authenticator)
        client.wait_for(lambda: client.hostid(url), 120, "a host id from the scheduler")
        if webdriver.available():
            _edit_in_chromium(apache.master_url, SCREENSHOT)
        else:
            s = Session(apache.master_url)
            code, _, _ = s.request("login_action.php", form={
                "email_addr": EMAIL, "passwd": PASSWORD, "next_url": "prefs.php"})
            assert code == 303 and "auth" in s.cookies
            _edit_over_http(s, "prefs_edit.php", {"subset": "global"},
                            {"cpu_usage_limit": "67"})
            _edit_over_http(s, "prefs_edit.php", {"subset": "project"},
                            {"resource_share": "250"})
        db = apache.project.connect()
        try:
            stored = db.query_one("SELECT global_prefs, project_prefs FROM user WHERE id = %s",
                                  (int(db.query_value("SELECT id FROM user WHERE email_addr "
                                                      "= %s", (EMAIL,))),))
        finally:
            db.close()
        assert "<cpu_usage_limit>67</cpu_usage_limit>" in stored["global_prefs"]
        assert "<resource_share>250</resource_share>" in stored["project_prefs"]
        prefs_file = os.path.join(client.data_dir, "global_prefs.xml")

        def arrived():
            # the client drops an update asked while its own RPC is in flight
            client.project_op(url, "update")
            try:
                with open(prefs_file, encoding="utf-8", errors="replace") as f:
                    prefs = f.read()
            except OSError:
                return False
            share = [p.get("resource share") for p in client.project_status()]
            return ("<cpu_usage_limit>67</cpu_usage_limit>" in prefs
                    and share and float(share[0]) == 250)
        client.wait_for(arrived, 120, "the web's preferences in the client", interval=10)
        with open(prefs_file, encoding="utf-8") as f:
            prefs = f.read()
        assert re.search(r"<mod_time>\d+</mod_time>", prefs)
        # an account manager puts the host at home (am_set_host_info.php, a CGI
        # here); the client hears of its venue at its next request
        assert "<success/>" in _set_host_venue(url, created.authenticator,
                                               client.hostid(url), "home")

        def at_home():
            client.project_op(url, "update")
            return (client.project_state(url) or {}).get("host_venue") == "home"
        client.wait_for(at_home, 120, "the host's venue in the client", interval=10)


def _set_host_venue(base, key, hostid, venue):
    query = urllib.parse.urlencode({"account_key": key, "hostid": hostid, "venue": venue})
    with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(
            base + "am_set_host_info.php?" + query, timeout=60) as resp:
        return resp.read().decode()


@pytest.mark.parametrize("apache", ["persistent"], indirect=True)
def test_prefs_keywords_and_host_venue_in_persistent_mode(apache):
    from boincpy import passwords
    from boincpy.web import accounts
    project = apache.project
    db = project.connect()
    try:
        user = accounts.make_user(db, project.cfg, EMAIL, "Persistent Volunteer",
                                  passwords.client_passwd_hash(PASSWORD, EMAIL))
        other = accounts.make_user(db, project.cfg, "other@example.org", "Other",
                                   passwords.client_passwd_hash(PASSWORD, "other@example.org"))
        hostid = db.insert("INSERT INTO host (create_time, userid, venue, misc) "
                           "VALUES (1, %s, '', '')", (user.id,))
    finally:
        db.close()
    s = Session(apache.master_url)
    code, _, _ = s.request("login_action.php", form={
        "email_addr": EMAIL, "passwd": PASSWORD, "next_url": "prefs.php"})
    assert code == 303 and "auth" in s.cookies
    if webdriver.available():
        # the main flow in Chromium, served by the persistent processes
        _edit_in_chromium(apache.master_url)
        assert "Separate preferences for home" in s.page("prefs.php", {"subset": "global"})
        assert "250" in s.page("prefs.php", {"subset": "project"})
    else:
        assert _edit_over_http(s, "prefs_edit.php", {"subset": "global"},
                               {"cpu_usage_limit": "67"}).startswith("prefs.php?subset=global")
    _edit_over_http(s, "add_venue.php", {"subset": "global", "venue": "work"},
                    {"cpu_usage_limit": "20"})
    page = s.page("prefs.php", {"subset": "global"})
    assert "67 % of CPU time" in page and "Separate preferences for work" in page
    _edit_over_http(s, "prefs_remove.php", {"subset": "global", "venue": "work"}, {})
    assert "Separate preferences for work" not in s.page("prefs.php", {"subset": "global"})
    # no token: refused, nothing changed
    code, _, _ = s.request("prefs_edit.php", form={"subset": "global", "cpu_usage_limit": "1"})
    assert code == 403
    # keywords: written by the web server's user into PROJECT/kw_prefs
    text = s.page("kw_prefs.php")
    fields = _form_fields(text, "kw_prefs.php")
    fields.update({"radio9": ["1"], "radio2": ["-1"]})
    code, _, body = s.request("kw_prefs.php", form=fields)
    assert code == 200 and b"Preferences saved" in body
    with open(project.path("kw_prefs", str(user.id))) as f:
        assert f.read() == "9\n2\n"
    # am_set_host_info.php
    assert "<error_num>-136</error_num>" in _set_host_venue(
        apache.master_url, other.authenticator, hostid, "home")
    assert "<success/>" in _set_host_venue(apache.master_url, user.authenticator, hostid,
                                           "home")
    db = project.connect()
    try:
        assert db.query_value("SELECT venue FROM host WHERE id = %s", (hostid,)) == "home"
    finally:
        db.close()
    assert token_of(s.page("prefs_edit.php", {"subset": "project"}))
