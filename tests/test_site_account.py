"""The volunteer's account pages (boincpy.web.user.account), in-process
through boincpy.web.user.main.handle against a project made by make_project,
with e-mail sent to a real SMTP server (aiosmtpd on 127.0.0.1): sign-up,
home.php, the account keys, editing name/URL/country, e-mail address and
password, the password reset by an e-mailed one-time link, deleting the
account, and what hostile input gets (escaped markup, missing or wrong form
tokens, another site's POST, odd values: a clear page, nothing changed).
The user row BOINC's own PHP sign-up wrote logs in here with its password."""

import re
import time
from urllib.parse import parse_qs, urlsplit

import pytest

from boincpy import mail, passwords
from boincpy.config import load_config
from boincpy.web.user.main import handle
from shared_fixtures import fixture_path
from site_util import execute, rows, set_options, token_of, user_row, wire_request

XSS = '<script>alert("x")</script>'
PASSWORD = "correct horse battery staple"


# ---------------------------------------------------------------------------
# The project; its e-mail goes to conftest's ``inbox`` (aiosmtpd on 127.0.0.1)

@pytest.fixture(scope="module")
def site(db_root_params, inbox):
    """One project for the module, its e-mail going to ``inbox``, account
    deletion on (wipe)."""
    from conftest import make_test_project, remove_test_project
    project = make_test_project(db_root_params, test_app=False, ops=False)
    set_options(project.root, smtp_host="127.0.0.1", smtp_port=inbox.port,
                enable_delete_account=2)
    yield project
    remove_test_project(project)


# ---------------------------------------------------------------------------
# A browser's side, in-process

class Web:
    """Cookies kept across calls, one client address, redirects not followed."""

    def __init__(self, site, addr="192.0.2.10"):
        self.site = site
        self.addr = addr
        self.cookies = {}

    def call(self, page, method="GET", query=None, form=None, headers=None, now=None):
        if "?" in page:
            page, qs = page.split("?", 1)
            query = dict(parse_qs(qs), **(query or {}))
        req = wire_request(page, method, query, form, "/proj/", self.addr, self.cookies, headers)
        resp = handle(page, req, self.site.root, now)
        assert "Traceback" not in resp.body, resp.body[-3000:]
        for name, value in resp.headers:
            if name.lower() == "set-cookie":
                key, rest = value.split("=", 1)
                val = rest.split(";", 1)[0]
                if "Max-Age=0" in value:
                    self.cookies.pop(key, None)
                else:
                    self.cookies[key] = val
        return resp

    def get(self, page, status="200", **kw):
        resp = self.call(page, **kw)
        assert resp.status.startswith(status), (resp.status, resp.body[-2500:])
        return resp.body

    def post(self, page, form, token_page=None, status="303", **kw):
        """POST ``form`` with the form token from ``token_page`` (the form's page)."""
        form = dict(form)
        if token_page:
            form["csrf_token"] = token_of(self.get(token_page))
        resp = self.call(page, "POST", form=form, **kw)
        assert resp.status.startswith(status), (resp.status, resp.body[-2500:])
        return resp

    def login(self, email_addr, passwd):
        resp = self.call("login_action.php", "POST",
                         form={"email_addr": email_addr, "passwd": passwd})
        assert resp.status.startswith("303") and "auth" in self.cookies, resp.body[-1500:]
        return self


def signup(site, name, email_addr, passwd=PASSWORD, **extra):
    web = Web(site)
    form = {"new_name": name, "new_email_addr": email_addr, "passwd": passwd,
            "passwd2": passwd, "country": "None", "next_url": ""}
    form.update(extra)
    resp = web.post("create_account_action.php", form)
    assert resp.header("Location") == "home.php"
    return web


def error_text(resp):
    """The page's text, without tags or the footer's time."""
    return re.sub(r"page made [0-9: -]+UTC", "", re.sub(r"<[^>]+>", " ", resp.body))


# ---------------------------------------------------------------------------
# Sign-up

def test_signup_form_has_boincs_fields(site):
    body = Web(site).get("create_account_form.php")
    for field in ("new_name", "new_email_addr", "passwd", "passwd2", "country", "next_url"):
        assert 'name="%s"' % field in body
    assert 'action="create_account_action.php"' in body
    assert "invite_code" not in body and "agree_to_terms_of_use" not in body


def test_signup_makes_boincs_row_logs_in_and_lands_home(site):
    web = signup(site, "New Volunteer", "New.Volunteer@Example.ORG", country="Germany")
    row = user_row(site, "new.volunteer@example.org")
    assert row is not None and row["name"] == "New Volunteer" and row["country"] == "Germany"
    assert row["passwd_hash"].startswith("$2y$10$") and len(row["passwd_hash"]) == 60
    # BOINC's stored form: bcrypt of md5(password + lower-cased e-mail)
    assert passwords.password_verify(
        passwords.md5_hex(PASSWORD + "new.volunteer@example.org"), row["passwd_hash"])
    assert web.cookies["auth"] == row["authenticator"]
    assert row["send_email"] == 1 and row["show_hosts"] == 1 and row["teamid"] == 0
    body = web.get("home.php")
    assert "Welcome to" in body and "New Volunteer" in body
    assert "init" not in web.cookies
    assert "Welcome to" not in web.get("home.php")
    # and the password logs in afresh (lookup_account.php's check too)
    Web(site).login("NEW.volunteer@example.org", PASSWORD)


@pytest.mark.parametrize("change, expect", [
    ({"new_name": ""}, "user name must be nonempty"),
    ({"new_name": XSS}, "special characters"),
    ({"new_name": "12345"}, "may not be a number"),
    ({"new_name": "x" * 300}, "at most 191"),
    ({"new_email_addr": "not-an-address"}, "Invalid email address"),
    ({"new_email_addr": "a" * 300 + "@example.org"}, "Invalid email address"),
    ({"passwd": "short", "passwd2": "short"}, "too short"),
    ({"passwd2": "something else"}, "differ"),
    ({"passwd": "pässwörter", "passwd2": "pässwörter"}, "ASCII"),
    ({"country": "<b>Utopia</b>"}, "not a country"),
    ({"teamid": "99999999"}, "no team"),
    ({"teamid": "abc"}, "not an integer"),
])
def test_signup_refuses_bad_input_and_makes_nothing(site, change, expect):
    before = rows(site, "SELECT COUNT(*) AS n FROM user")[0]["n"]
    form = {"new_name": "Bad Input", "new_email_addr": "bad.input@example.org",
            "passwd": PASSWORD, "passwd2": PASSWORD, "country": "None"}
    form.update(change)
    resp = Web(site).call("create_account_action.php", "POST", form=form)
    assert resp.status[0] in "4", resp.status
    assert expect in error_text(resp)
    assert "<script>" not in resp.body
    assert rows(site, "SELECT COUNT(*) AS n FROM user")[0]["n"] == before


def test_signup_refuses_a_taken_address_or_name(site):
    signup(site, "Taken Name", "taken@example.org")
    form = {"new_name": "Other Name", "new_email_addr": "TAKEN@example.org",
            "passwd": PASSWORD, "passwd2": PASSWORD}
    resp = Web(site).call("create_account_action.php", "POST", form=form)
    assert resp.status.startswith("400") and "already an account" in resp.body
    form.update(new_name="Taken Name", new_email_addr="free@example.org")
    resp = Web(site).call("create_account_action.php", "POST", form=form)
    assert resp.status.startswith("409")
    assert user_row(site, "free@example.org") is None


def test_signup_from_another_site_or_by_get_is_refused(site):
    form = {"new_name": "Forged", "new_email_addr": "forged@example.org",
            "passwd": PASSWORD, "passwd2": PASSWORD}
    resp = Web(site).call("create_account_action.php", "POST", form=form,
                          headers={"HTTP_ORIGIN": "http://evil.example"})
    assert resp.status.startswith("403")
    resp = Web(site).call("create_account_action.php", query=form)
    assert resp.status.startswith("405")
    assert user_row(site, "forged@example.org") is None


def test_signup_honours_the_projects_switches(site, db_root_params):
    root = site.root
    try:
        set_options(root, disable_account_creation=True)
        for page in ("create_account_form.php", "create_account_action.php"):
            resp = Web(site).call(page, "POST" if "action" in page else "GET", form={
                "new_name": "Off", "new_email_addr": "off@example.org", "passwd": PASSWORD})
            assert resp.status.startswith("403") and "disabled account creation" in resp.body
        set_options(root, disable_account_creation=False, no_web_account_creation=True)
        resp = Web(site).call("create_account_form.php")
        assert resp.status.startswith("403") and "disabled Web account creation" in resp.body
        set_options(root, no_web_account_creation=False, invite_codes="/^yes[0-9]+$/")
        assert 'name="invite_code"' in Web(site).get("create_account_form.php")
        form = {"new_name": "Invited", "new_email_addr": "invited@example.org",
                "passwd": PASSWORD, "passwd2": PASSWORD}
        resp = Web(site).call("create_account_action.php", "POST", form=form)
        assert resp.status.startswith("400") and "invitation code" in resp.body
        resp = Web(site).call("create_account_action.php", "POST",
                              form=dict(form, invite_code="no1"))
        assert resp.status.startswith("403") and user_row(site, "invited@example.org") is None
        signup(site, "Invited", "invited@example.org", invite_code="yes42")
    finally:
        set_options(root, disable_account_creation=False, no_web_account_creation=False,
                    invite_codes="")


def test_signup_asks_consent_to_the_terms_of_use_and_records_it(site):
    terms = site.path("terms_of_use.txt")
    execute(site, "INSERT IGNORE INTO consent_type (shortname, description, enabled, "
                  "project_specific, privacypref) VALUES ('ENROLL', 'General terms-of-use "
                  "for this BOINC project.', 1, 0, 0)")
    with open(terms, "w") as f:
        f.write("Be nice to the <servers>.\n")
    try:
        body = Web(site).get("create_account_form.php")
        assert "Be nice to the &lt;servers&gt;." in body and "agree_to_terms_of_use" in body
        form = {"new_name": "Consenting", "new_email_addr": "consent@example.org",
                "passwd": PASSWORD, "passwd2": PASSWORD}
        resp = Web(site).call("create_account_action.php", "POST", form=form)
        assert resp.status.startswith("400") and "terms of use" in resp.body
        assert user_row(site, "consent@example.org") is None
        signup(site, "Consenting", "consent@example.org", agree_to_terms_of_use="1")
        uid = user_row(site, "consent@example.org")["id"]
        got = rows(site, "SELECT consent_flag, consent_not_required, source FROM consent "
                         "WHERE userid = %s", (uid,))
        assert got == [{"consent_flag": 1, "consent_not_required": 0, "source": "Webreg"}]
    finally:
        import os
        os.unlink(terms)


def test_signup_for_a_team_takes_its_founders_project_prefs(site):
    signup(site, "Founder", "founder@example.org")
    founder = user_row(site, "founder@example.org")
    execute(site, "UPDATE user SET project_prefs = %s WHERE id = %s",
            ("<project_preferences><resource_share>77</resource_share>"
             "</project_preferences>", founder["id"]))
    execute(site, "INSERT INTO team (userid, name, name_lc, create_time, joinable) "
                  "VALUES (%s, %s, %s, 1, 1)", (founder["id"], "Team " + XSS, "team x"))
    teamid = rows(site, "SELECT id FROM team WHERE userid = %s", (founder["id"],))[0]["id"]
    body = Web(site).get("create_account_form.php?teamid=%d" % teamid)
    assert "Team &lt;script&gt;" in body and '<script>' not in body
    web = signup(site, "Joiner", "joiner@example.org", teamid=str(teamid))
    row = user_row(site, "joiner@example.org")
    prefs = row["project_prefs"]
    prefs = prefs.decode() if isinstance(prefs, bytes) else prefs
    assert row["teamid"] == teamid and "<resource_share>77<" in prefs
    assert 'team_display.php?teamid=%d' % teamid in web.get("home.php")


# ---------------------------------------------------------------------------
# BOINC's PHP row and ours

def _fixture_row():
    with open(fixture_path("volunteer", "user_row_web_signup.tsv"), encoding="utf-8") as f:
        head, values = [line.rstrip("\n").split("\t") for line in f][:2]
    return {k: (None if v == "NULL" else v) for k, v in zip(head, values)}


def test_the_row_boincs_php_signup_wrote_logs_in_here(site):
    row = _fixture_row()
    cols = ("create_time", "email_addr", "name", "authenticator", "country", "postal_code",
            "cross_project_id", "passwd_hash", "send_email", "show_hosts")
    execute(site, "INSERT INTO user (%s, expavg_time, global_prefs, project_prefs, venue) "
                  "VALUES (%s, 0, '', '', '')" % (", ".join(cols), ", ".join(["%s"] * len(cols))),
            [row[c] for c in cols])
    web = Web(site, "192.0.2.77").login("Fixture.Volunteer@Example.org", PASSWORD)
    assert web.cookies["auth"] == "25f7c2ddfa5647def7c9640783f8c1aa"
    assert "Fixture Volunteer" in web.get("home.php")
    # a wrong password does not
    resp = Web(site, "192.0.2.78").call("login_action.php", "POST", form={
        "email_addr": "fixture.volunteer@example.org", "passwd": PASSWORD + "!"})
    assert resp.status.startswith("403")
    # the stored hash is still PHP's (bcrypt cost 10 needs no rehash)
    assert user_row(site, "fixture.volunteer@example.org")["passwd_hash"] == row["passwd_hash"]


def test_an_account_made_here_verifies_as_phps_password_verify_would(site):
    signup(site, "Portable", "portable@example.org")
    stored = user_row(site, "portable@example.org")["passwd_hash"]
    # PHP's password_verify reads $2y$ hashes: the same bcrypt over the same md5
    import bcrypt
    assert stored.startswith("$2y$10$")
    assert bcrypt.checkpw(passwords.md5_hex(PASSWORD + "portable@example.org").encode(),
                          ("$2b$" + stored[4:]).encode())


# ---------------------------------------------------------------------------
# home.php, weak_auth.php

def test_home_needs_a_login(site):
    resp = Web(site).call("home.php")
    assert resp.status.startswith("303") and "login_form.php" in resp.header("Location")


def test_home_shows_the_account_and_escapes_every_value(site):
    web = signup(site, "Homely", "homely@example.org")
    row = user_row(site, "homely@example.org")
    execute(site, "UPDATE user SET name = %s, country = %s, url = %s, total_credit = 1234.5, "
                  "expavg_credit = 12.25 WHERE id = %s",
            (XSS, XSS, 'javascript:alert(1)"', row["id"]))
    execute(site, "INSERT INTO host (userid, create_time, domain_name, serialnum, "
                  "last_ip_addr, external_ip_addr, host_cpid, venue, os_name, os_version, "
                  "p_vendor, p_model, misc) "
                  "VALUES (%s, 1, 'h', '', '', '', '', '', '', '', '', '', '')",
            (row["id"],))
    body = web.get("home.php")
    assert "<script>" not in body and "&lt;script&gt;" in body
    assert "Invalid URL" in body and "javascript:" not in body
    for href in ("prefs.php?subset=global", "prefs.php?subset=project", "hosts_user.php",
                 "results.php?userid=%d" % row["id"], "weak_auth.php", "edit_email_form.php",
                 "edit_passwd_form.php", "edit_user_info_form.php",
                 "delete_account_request.php"):
        assert 'href="%s"' % href in body, href
    assert "1,234" in body and "12.25" in body
    assert re.search(r"Computers on this account</th><td>1 ", body)
    assert time.strftime("%d %b %Y", time.gmtime(row["create_time"])) in body


def test_weak_auth_page_shows_both_keys_and_the_account_file(site):
    web = signup(site, "Keyholder", "keyholder@example.org")
    row = user_row(site, "keyholder@example.org")
    body = web.get("weak_auth.php")
    weak = passwords.weak_auth(row["id"], row["authenticator"], row["passwd_hash"])
    assert weak in body and row["authenticator"] in body
    master = load_config(site.root).master_url
    name = "account_" + re.sub(r"[^A-Za-z0-9._-]", "_", master.split("://", 1)[1]).rstrip("_")
    assert name + ".xml" in body
    assert "&lt;master_url&gt;%s&lt;/master_url&gt;" % master in body


# ---------------------------------------------------------------------------
# edit_user_info

def test_edit_user_info_changes_name_url_country(site):
    web = signup(site, "Editor", "editor@example.org")
    body = web.get("edit_user_info_form.php")
    assert 'value="Editor"' in body and 'action="edit_user_info_action.php"' in body
    resp = web.post("edit_user_info_action.php", {
        "user_name": "Edited Name", "url": "https://example.org/me", "country": "France"},
        token_page="edit_user_info_form.php")
    assert resp.header("Location") == "home.php"
    row = user_row(site, "editor@example.org")
    assert (row["name"], row["url"], row["country"]) == (
        "Edited Name", "https://example.org/me", "France")
    assert 'href="https://example.org/me"' in web.get("home.php")


@pytest.mark.parametrize("change, expect", [
    ({"user_name": XSS}, "special characters"),
    ({"user_name": " padded"}, "white space"),
    ({"url": "javascript:alert(1)"}, "URL: invalid"),
    ({"url": "http://x/" + "a" * 300}, "URL: invalid"),
    ({"url": 'http://x/"onmouseover=1'}, "URL: invalid"),
    ({"country": "x" * 300}, "not a country"),
])
def test_edit_user_info_refuses_bad_values(site, change, expect):
    web = signup(site, "Stubborn %d" % (len(str(change)) + len(expect)),
                 "stubborn%d@example.org" % (len(str(change)) + len(expect)))
    before = rows(site, "SELECT name, url, country FROM user WHERE authenticator = %s",
                  (web.cookies["auth"],))
    form = dict({"user_name": "Still Fine", "url": "", "country": "None"}, **change)
    resp = web.post("edit_user_info_action.php", form, token_page="edit_user_info_form.php",
                    status="4")
    assert expect in error_text(resp) and "<script>" not in resp.body
    assert rows(site, "SELECT name, url, country FROM user WHERE authenticator = %s",
                (web.cookies["auth"],)) == before


def test_edit_user_info_refuses_a_taken_name(site):
    signup(site, "Occupied", "occupied@example.org")
    web = signup(site, "Wannabe", "wannabe@example.org")
    resp = web.post("edit_user_info_action.php", {"user_name": "Occupied"},
                    token_page="edit_user_info_form.php", status="409")
    assert "in use" in resp.body
    assert user_row(site, "wannabe@example.org")["name"] == "Wannabe"


def test_actions_without_a_valid_token_change_nothing(site):
    web = signup(site, "Guarded", "guarded@example.org")
    row = user_row(site, "guarded@example.org")
    forms = {
        "edit_user_info_action.php": {"user_name": "Hijacked"},
        "edit_passwd_action.php": {"passwd": "hijacked-pw", "passwd2": "hijacked-pw"},
        "edit_email_action.php": {"email_addr": "hijack@example.org", "passwd": PASSWORD},
    }
    other = signup(site, "Other Guard", "otherguard@example.org")
    for page, form in forms.items():
        form_page = page.replace("_action", "_form")
        for token in ("", "123.abc", token_of(other.get(form_page)),
                      token_of(web.get("edit_user_info_form.php"))
                      if page != "edit_user_info_action.php" else "0.x"):
            resp = web.call(page, "POST", form=dict(form, csrf_token=token))
            assert resp.status.startswith("403"), (page, token, resp.status)
        # a good token from another site's page
        resp = web.call(page, "POST", form=dict(form, csrf_token=token_of(web.get(form_page))),
                        headers={"HTTP_ORIGIN": "http://evil.example"})
        assert resp.status.startswith("403")
        resp = web.call(page, query=form)
        assert resp.status.startswith("405")
    assert user_row(site, "guarded@example.org") == row
    assert user_row(site, "hijack@example.org") is None


def test_pages_of_the_logged_in_user_redirect_to_login(site):
    for page in ("weak_auth.php", "edit_user_info_form.php", "edit_email_form.php",
                 "edit_passwd_form.php", "delete_account_request.php"):
        resp = Web(site).call(page)
        assert resp.status.startswith("303"), page
        assert resp.header("Location").startswith("login_form.php?next_url=" + page)


# ---------------------------------------------------------------------------
# edit_email

def test_edit_email_needs_the_password_keeps_the_old_one_and_mails_both(site, inbox):
    web = signup(site, "Mover", "mover@example.org")
    resp = web.post("edit_email_action.php", {"email_addr": "moved@example.org",
                                              "passwd": "wrong password"},
                    token_page="edit_email_form.php", status="403")
    assert "incorrect" in resp.body and user_row(site, "moved@example.org") is None
    resp = web.post("edit_email_action.php", {"email_addr": "Moved@Example.org",
                                              "passwd": PASSWORD},
                    token_page="edit_email_form.php", status="200")
    assert "now moved@example.org" in resp.body
    row = user_row(site, "moved@example.org")
    assert row["previous_email_addr"] == "mover@example.org"
    assert abs(row["email_addr_change_time"] - time.time()) < 60
    # the stored hash is salted with the new address: the password still logs in
    Web(site).login("moved@example.org", PASSWORD)
    assert "You will not be able to change your email address again" in \
        inbox.last_body("moved@example.org")
    old_body = inbox.last_body("mover@example.org")
    link = re.search(r"(\S*recover_email\.php\?\S+)", old_body).group(1)
    query = parse_qs(urlsplit(link).query)
    assert rows(site, "SELECT type FROM token WHERE token = %s",
                (query["token"][0],)) == [{"type": "E"}]
    # a second change within the week is refused
    assert "changed within the past 7 days" in web.get("edit_email_form.php")
    resp = web.post("edit_email_action.php", {"email_addr": "again@example.org",
                                              "passwd": PASSWORD},
                    token_page="edit_user_info_form.php", status="403")
    # (a token of another form is refused too; with the right one, the week rule)
    resp = web.call("edit_email_action.php", "POST", form={
        "email_addr": "again@example.org", "passwd": PASSWORD,
        "csrf_token": token_of(web.get("edit_passwd_form.php").replace(
            "edit_passwd_action", "x"))})
    assert resp.status.startswith("403") and user_row(site, "again@example.org") is None
    # the old address's link gives it back (and clears the password)
    anon = Web(site)
    assert "Recover email address" in anon.get("recover_email.php", query={
        "id": query["id"][0], "token": query["token"][0]})
    resp = anon.post("recover_email.php", {"id": query["id"][0], "token": query["token"][0]},
                     status="200")
    assert "has been reverted" in resp.body
    back = user_row(site, "mover@example.org")
    assert back["id"] == row["id"] and back["previous_email_addr"] == ""
    assert Web(site).call("login_action.php", "POST", form={
        "email_addr": "mover@example.org", "passwd": PASSWORD}).status.startswith("403")
    resp = anon.call("recover_email.php", "POST",
                     form={"id": query["id"][0], "token": query["token"][0]})
    assert resp.status.startswith("403")


def test_edit_email_refuses_taken_invalid_and_same_addresses(site):
    signup(site, "Holder", "holder@example.org")
    web = signup(site, "Changer", "changer@example.org")
    for addr, expect in (("holder@example.org", "already an account"),
                         ("no address", "Invalid email address"),
                         ("changer@example.org", "same as existing"),
                         (XSS + "@x.org", "Invalid email address")):
        resp = web.post("edit_email_action.php", {"email_addr": addr, "passwd": PASSWORD},
                        token_page="edit_email_form.php", status="4")
        assert expect in resp.body and "<script>" not in resp.body
    assert user_row(site, "changer@example.org")["previous_email_addr"] == ""


# ---------------------------------------------------------------------------
# edit_passwd, and the password reset by e-mail

def test_edit_passwd_changes_the_password(site):
    web = signup(site, "Rotator", "rotator@example.org")
    resp = web.post("edit_passwd_action.php", {"passwd": "abc", "passwd2": "abc"},
                    token_page="edit_passwd_form.php", status="400")
    assert "too short" in resp.body
    web.post("edit_passwd_action.php", {"passwd": "new password 1", "passwd2": "new password 1"},
             token_page="edit_passwd_form.php", status="200")
    Web(site).login("rotator@example.org", "new password 1")
    resp = Web(site).call("login_action.php", "POST", form={
        "email_addr": "rotator@example.org", "passwd": PASSWORD})
    assert resp.status.startswith("403")


def _reset_link(inbox, addr):
    body = inbox.last_body(addr)
    return re.search(r"(\S*login_action\.php\?\S+)", body).group(1)


def test_password_reset_link_logs_in_once(site, inbox):
    signup(site, "Forgetful", "forgetful@example.org")
    row = user_row(site, "forgetful@example.org")
    assert 'action="mail_passwd.php"' in Web(site).get("get_passwd.php")
    anon = Web(site, "192.0.2.50")
    resp = anon.post("mail_passwd.php", {"email_addr": "Forgetful@Example.org"}, status="200")
    assert "Forgetful" not in resp.body
    known = error_text(resp).replace("forgetful@example.org", "ADDR")
    link = _reset_link(inbox, "forgetful@example.org")
    query = parse_qs(urlsplit(link).query)
    assert query["id"] == [str(row["id"])] and query["t"][0].isdigit()
    token = rows(site, "SELECT * FROM token WHERE token = %s", (query["h"][0],))
    assert token and token[0]["type"] == "P" and token[0]["userid"] == row["id"]
    assert 86000 < token[0]["expire_time"] - token[0]["create_time"] <= 86400
    # the GET only shows a button; the POST logs in and goes to the password form
    page = anon.get("login_action.php", query=query)
    assert 'action="login_action.php"' in page and "auth" not in anon.cookies
    form = {k: v[0] for k, v in query.items()}
    resp = anon.post("login_action.php", form)
    assert resp.header("Location") == "edit_passwd_form.php"
    assert anon.cookies["auth"] == row["authenticator"]
    anon.post("edit_passwd_action.php", {"passwd": "remembered now", "passwd2": "remembered now"},
              token_page="edit_passwd_form.php", status="200")
    Web(site).login("forgetful@example.org", "remembered now")
    # used: refused the second time
    again = Web(site, "192.0.2.51")
    resp = again.call("login_action.php", "POST", form=form)
    assert resp.status.startswith("403") and "auth" not in again.cookies
    # the answer for an address without an account is the same page
    resp = Web(site, "192.0.2.50").post("mail_passwd.php",
                                        {"email_addr": "nobody.here@example.org"}, status="200")
    assert error_text(resp).replace("nobody.here@example.org", "ADDR") == known
    assert inbox.to("nobody.here@example.org") == []


def test_password_reset_link_expires_and_wrong_tokens_count_as_failures(site, inbox):
    signup(site, "Late", "late@example.org")
    anon = Web(site, "192.0.2.60")
    anon.post("mail_passwd.php", {"email_addr": "late@example.org"}, status="200")
    form = {k: v[0] for k, v in parse_qs(urlsplit(_reset_link(inbox, "late@example.org"))
                                         .query).items()}
    resp = anon.call("login_action.php", "POST", form=form, now=time.time() + 86400 + 5)
    assert resp.status.startswith("403") and "auth" not in anon.cookies
    uid = int(form["id"])
    fails = rows(site, "SELECT nfail FROM login_failure WHERE name = %s", ("user:%d" % uid,))
    assert fails and fails[0]["nfail"] >= 1
    for i in range(12):
        anon.call("login_action.php", "POST", form=dict(form, h="%032x" % i))
    resp = anon.call("login_action.php", "POST", form=form)
    assert resp.status.startswith("403") and "Too many failed logins" in resp.body


def test_password_reset_sends_at_most_three_links_an_hour(site, inbox):
    signup(site, "Flooded", "flooded@example.org")
    for _ in range(5):
        Web(site, "192.0.2.70").post("mail_passwd.php", {"email_addr": "flooded@example.org"},
                                     status="200")
    assert len(inbox.to("flooded@example.org")) == 3


def test_mail_passwd_refuses_bad_input_and_other_sites(site):
    anon = Web(site)
    for addr, expect in (("", "no address"), ("x" * 500, "not an address"),
                         (XSS, "not an address")):
        resp = anon.call("mail_passwd.php", "POST", form={"email_addr": addr})
        assert resp.status.startswith("400") and expect in resp.body
    resp = anon.call("mail_passwd.php", "POST", form={"email_addr": "a@example.org"},
                     headers={"HTTP_ORIGIN": "http://evil.example"})
    assert resp.status.startswith("403")


def test_a_mail_server_failure_is_a_page_not_a_traceback(site, inbox):
    from boincpy.tools.httpd import free_port
    web = signup(site, "Unlucky", "unlucky@example.org")
    try:
        set_options(site.root, smtp_port=free_port())       # nobody listens there
        resp = web.post("edit_email_action.php", {"email_addr": "unlucky2@example.org",
                                                  "passwd": PASSWORD},
                        token_page="edit_email_form.php", status="200")
        assert "could not be e-mailed" in resp.body and "SMTP server" in resp.body
        # the reset page answers as always (the failure is in the error log)
        resp = Web(site).post("mail_passwd.php", {"email_addr": "unlucky2@example.org"},
                              status="200")
        set_options(site.root, smtp_host="", smtp_port=0)
        resp = Web(site).call("mail_passwd.php", "POST", form={
            "email_addr": "unlucky2@example.org"})
        assert resp.status.startswith("503") and "send e-mail" in resp.body
    finally:
        set_options(site.root, smtp_host="127.0.0.1", smtp_port=inbox.port)


def test_mail_send_through_smtp_and_a_command(site, inbox, tmp_path):
    cfg = load_config(site.root)
    mail.send(cfg, "direct@example.org", "Subject\nInjected: header", "Hello\n", "Name\r\nX: y")
    msg = inbox.to("direct@example.org")[-1]
    assert msg["Subject"] == "Subject Injected: header" and msg["Injected"] is None
    assert msg["X"] is None and msg.get_content().strip() == "Hello"
    script = tmp_path / "sendmail"
    out = tmp_path / "out.eml"
    script.write_text("#!/bin/sh\ncat > %s\n" % out)
    script.chmod(0o755)
    set_options(site.root, smtp_host="", email_command=str(script))
    try:
        mail.send(load_config(site.root), "cmd@example.org", "Via command", "Body\n")
        assert "To: cmd@example.org" in out.read_text()
        set_options(site.root, email_command="/bin/false")
        with pytest.raises(mail.MailError, match="exited with 1"):
            mail.send(load_config(site.root), "cmd@example.org", "S", "B")
        set_options(site.root, smtp_host="127.0.0.1", smtp_port=inbox.port, email_command="",
                    smtp_starttls=True)
        with pytest.raises(mail.MailError, match="STARTTLS"):
            mail.send(load_config(site.root), "tls@example.org", "S", "B")
    finally:
        set_options(site.root, smtp_host="127.0.0.1", smtp_port=inbox.port, email_command="",
                    smtp_starttls=False)


# ---------------------------------------------------------------------------
# Deleting the account

def test_delete_account_two_steps_with_the_password(site, inbox):
    web = signup(site, "Leaver", "leaver@example.org")
    row = user_row(site, "leaver@example.org")
    assert 'name="passwd"' in web.get("delete_account_request.php")
    resp = web.post("delete_account_request.php", {"passwd": "wrong"},
                    token_page="delete_account_request.php", status="403")
    resp = web.post("delete_account_request.php", {"passwd": PASSWORD},
                    token_page="delete_account_request.php", status="200")
    link = re.search(r"(\S*delete_account_confirm\.php\?\S+)",
                     inbox.last_body("leaver@example.org")).group(1)
    query = {k: v[0] for k, v in parse_qs(urlsplit(link).query).items()}
    anon = Web(site, "192.0.2.90")
    assert 'name="passwd"' in anon.get("delete_account_confirm.php", query=query)
    resp = anon.post("delete_account_confirm.php", dict(query, passwd="wrong"), status="403")
    assert user_row(site, "leaver@example.org") is not None
    resp = anon.call("delete_account_confirm.php", "POST", form=dict(
        query, passwd=PASSWORD), headers={"HTTP_ORIGIN": "http://evil.example"})
    assert resp.status.startswith("403") and user_row(site, "leaver@example.org") is not None
    resp = anon.post("delete_account_confirm.php", dict(query, passwd=PASSWORD), status="200")
    assert "has been deleted" in resp.body
    assert user_row(site, "leaver@example.org") is None
    assert rows(site, "SELECT userid FROM user_deleted WHERE userid = %s", (row["id"],))
    assert rows(site, "SELECT * FROM token WHERE userid = %s", (row["id"],)) == []
    resp = anon.call("delete_account_confirm.php", query=query)
    assert resp.status.startswith("403")


def test_delete_account_obfuscate_mode_and_off(site, inbox):
    web = signup(site, "Hider", "hider@example.org")
    row = user_row(site, "hider@example.org")
    try:
        set_options(site.root, enable_delete_account=1)
        web.post("delete_account_request.php", {"passwd": PASSWORD},
                 token_page="delete_account_request.php", status="200")
        link = re.search(r"(\S*delete_account_confirm\.php\?\S+)",
                         inbox.last_body("hider@example.org")).group(1)
        query = {k: v[0] for k, v in parse_qs(urlsplit(link).query).items()}
        Web(site).post("delete_account_confirm.php", dict(query, passwd=PASSWORD),
                       status="200")
        kept = rows(site, "SELECT * FROM user WHERE id = %s", (row["id"],))[0]
        assert kept["name"] == "deleted" and kept["email_addr"].startswith("deleted_")
        assert kept["authenticator"] == kept["email_addr"]
        assert "auth" not in web.cookies or web.call("home.php").status.startswith("303")
        set_options(site.root, enable_delete_account=0)
        other = signup(site, "Stayer", "stayer@example.org")
        resp = other.call("delete_account_request.php")
        assert resp.status.startswith("403") and "disabled" in resp.body
        assert "delete_account_request.php" not in other.get("home.php")
    finally:
        set_options(site.root, enable_delete_account=2)


def test_delete_account_refused_within_a_week_of_an_email_change(site):
    web = signup(site, "Hasty", "hasty@example.org")
    execute(site, "UPDATE user SET email_addr_change_time = %s WHERE email_addr = %s",
            (time.time() - 3600, "hasty@example.org"))
    resp = web.call("delete_account_request.php")
    assert resp.status.startswith("403") and "7 days" in resp.body


@pytest.mark.parametrize("query", [{"id": "1", "token": "nope"}, {"id": "x", "token": "a"},
                                   {"id": "99999999999999999999", "token": "a"},
                                   {"id": "1", "token": "a" * 5000}])
def test_delete_confirm_and_recover_refuse_odd_links(site, query):
    addr = "192.0.2.%d" % (100 + len(str(query)) % 100)
    for page in ("delete_account_confirm.php", "recover_email.php"):
        resp = Web(site, addr).call(page, query=query)
        assert resp.status[0] == "4", (page, resp.status)


def test_guessing_link_tokens_counts_as_failed_logins(site):
    web = Web(site, "198.51.100.7")
    for i in range(50):
        page = ("recover_email.php", "delete_account_confirm.php")[i % 2]
        assert web.call(page, query={"id": "1", "token": "%032x" % i}).status[:3] == "403"
    resp = web.call("login_action.php", "POST", form={"email_addr": "founder@example.org",
                                                      "passwd": PASSWORD})
    assert resp.status.startswith("403") and "Too many failed logins" in resp.body
