"""The account pages as a volunteer uses them, in headless Chromium against a
project made by make_project under a private Apache (CGIs as www-data, and
once more with the pages in persistent processes): sign up through the
form, log out, log in, change the name, reset the password through the
link e-mailed to a real SMTP server (aiosmtpd), which works once.  The
screenshot of home.php is kept for the README (docs/screenshots/home.png)."""

import os
import re

import pytest

import webdriver
from site_util import fill, served_project, set_options, user_row
from webdriver import Browser

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not webdriver.available(),
                                 reason="chromium and chromedriver are not installed")]

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# the README's picture, refreshed only when asked (BOINCPY_SCREENSHOTS=1): a test
# run must not change tracked files
HOME_SHOT = (os.path.join(REPO, "docs", "screenshots", "home.png")
             if os.environ.get("BOINCPY_SCREENSHOTS") else None)
SCREENS = os.path.join(REPO, "tests", "artifacts", "account-screens")


@pytest.fixture(scope="module", params=["cgi", "persistent"])
def site(request, db_root_params, inbox):
    """A project (its e-mail to conftest's ``inbox``) served by Apache in one mode."""
    def mail_to_inbox(project):
        set_options(project.root, smtp_host="127.0.0.1", smtp_port=inbox.port)
    with served_project(db_root_params, request.param, mail_to_inbox, test_app=False,
                        ops=False) as running:
        yield running


def test_volunteer_account_in_chromium(site, inbox):
    base = site.master_url
    addr = "browser.%s@example.org" % site.mode
    name = "Browser Volunteer %s" % site.mode
    with Browser.start() as b:
        # sign up through the form
        b.get(base + "create_account_form.php")
        fill(b, {"#new_name": name, "#new_email_addr": addr.upper(),
                 "#passwd": "first password", "#passwd2": "first password",
                 "#country": "Norway"})
        b.find("#create").follow()
        assert b.url.endswith("/home.php")
        text = b.body_text()
        assert "Welcome to" in text and name in text and "Norway" in text
        row = user_row(site, addr)
        assert row is not None and row["passwd_hash"].startswith("$2y$10$")
        if site.mode == "cgi" and HOME_SHOT:
            b.screenshot(HOME_SHOT)
        else:
            b.screenshot(os.path.join(SCREENS, "home-persistent.png"))

        # log out, log in
        b.link("Log out").follow()
        b.find("form[action='logout.php'] button").follow()
        assert "You are logged out" in b.body_text()
        b.link("Log in again").follow()
        fill(b, {"#email_addr": addr, "#passwd": "first password"})
        b.find("form[action='login_action.php'] button").follow()
        assert b.url.endswith("/home.php") and name in b.body_text()

        # change the name
        b.link("other account info").follow()
        fill(b, {"#user_name": "Renamed " + site.mode})
        b.find("#update").follow()
        assert b.url.endswith("/home.php") and "Renamed " + site.mode in b.body_text()
        assert user_row(site, addr)["name"] == "Renamed " + site.mode

        # the account keys
        b.get(base + "weak_auth.php")
        assert "%d_" % row["id"] in b.find("#weak_auth").text

        # forget the password: the e-mailed link logs in once
        b.link("Log out").follow()
        b.find("form[action='logout.php'] button").follow()
        b.link("Log in again").follow()
        b.link("Forgot your password?").follow()
        fill(b, {"#email_addr": addr})
        b.find("#send_reset").follow()
        assert "instructions for resetting" in b.body_text()
        body = inbox.to(addr)[-1].get_content()
        link = re.search(r"(http\S*login_action\.php\?\S+)", body).group(1)
        assert link.startswith(base)
        b.get(link)
        b.find("#use_link").follow()
        assert b.url.endswith("/edit_passwd_form.php")
        fill(b, {"#passwd": "second password", "#passwd2": "second password"})
        b.find("#change_passwd").follow()
        assert "Your password has been changed" in b.body_text()
        b.link("Log out").follow()
        b.find("form[action='logout.php'] button").follow()
        b.get(link)
        b.find("#use_link").follow()
        assert "not valid" in b.body_text() and "edit_passwd" not in b.url
        b.get(base + "login_form.php")
        fill(b, {"#email_addr": addr, "#passwd": "second password"})
        b.find("form[action='login_action.php'] button").follow()
        assert b.url.endswith("/home.php") and "Renamed " + site.mode in b.body_text()
