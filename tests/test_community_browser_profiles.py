"""Profiles as a volunteer and an operator use them, in headless Chromium
against a project made by make_project under a private Apache (the pages as
CGIs run by www-data, and once more in persistent processes, where the
picture's multipart upload must reach create_profile.php too): the volunteer
logs in, writes a profile with a picture through the form; with screening on,
nobody else sees it until the operator accepts it on the ops pages; then it
is public, its picture served from html/user_profile/images, and the lists
of bin/update_profile_pages show it."""

import os
import re
import secrets
import subprocess
import sys
import urllib.error
import urllib.request

import MySQLdb
import pytest

import webdriver
from site_util import served_project, set_options, with_credentials
from webdriver import Browser

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not webdriver.available(),
                                 reason="chromium and chromedriver are not installed")]

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCREENS = os.path.join(REPO, "tests", "artifacts", "profile-screens")


@pytest.fixture(scope="module", params=["cgi", "persistent"])
def site(request, db_root_params):
    def screening_on(project):
        set_options(project.root, profile_screening=1)
    with served_project(db_root_params, request.param, screening_on,
                        test_app=False) as running:
        yield running


def fetch(url):
    """(status, content type, body bytes) of a GET without cookies."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(url, timeout=60) as resp:
            return resp.status, resp.headers.get("Content-Type", ""), resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers.get("Content-Type", ""), exc.read()


def authed(url, site):
    return with_credentials(url, site.ops_user, site.ops_passwd)


def test_profile_with_picture_screened_and_shown(site, tmp_path):
    from PIL import Image
    project = site.project
    auth = secrets.token_hex(16)
    email_addr = "pic.%s@example.org" % site.mode
    conn = MySQLdb.connect(db=project.db_name, **project.db_root_params)
    try:
        cur = conn.cursor()
        cur.execute("INSERT INTO user (create_time, email_addr, name, authenticator, "
                    "passwd_hash, global_prefs, project_prefs, venue, cross_project_id, "
                    "country, expavg_credit, total_credit) VALUES (1, %s, %s, %s, '', '', '', "
                    "'', '', 'Norway', 20, 200)", (email_addr, "Picture Person", auth))
        conn.commit()
        uid = cur.lastrowid
    finally:
        conn.close()
    picture = tmp_path / "me.png"
    img = Image.new("RGB", (900, 600), (30, 120, 200))
    for x in range(0, 900, 60):
        img.paste((250, 200, 40), (x, 0, x + 30, 600))
    img.save(picture, "PNG")
    assert picture.stat().st_size < 50 * 1024
    base = site.master_url
    profile_url = base + "view_profile.php?userid=%d" % uid
    with Browser.start() as b:
        b.get(base + "login_form.php?next_url=create_profile.php")
        b.find("#email_addr").send_keys(email_addr)
        b.find("#passwd").send_keys(auth)
        b.find("button[type=submit]").follow()
        assert "Create a profile" in b.title
        b.find("#response1").send_keys("I watch [b]clouds[/b] <script>alert(1)</script>")
        b.find("#response2").send_keys("Computing for science.")
        b.find("#picture").send_keys(str(picture))
        b.find("#submit_profile").follow()
        assert "Profile saved" in b.title, b.body_text()
        images = project.path("html", "user_profile", "images")
        assert sorted(os.listdir(images)) == ["%d.jpg" % uid, "%d_sm.jpg" % uid]
        with Image.open(os.path.join(images, "%d.jpg" % uid)) as big:
            assert big.size == (640, 427)
        # the owner sees it, with the note; nobody else does yet
        b.get(profile_url)
        assert "once the project has approved it" in b.body_text()
        assert "<script>" not in b.source and "clouds" in b.body_text()
        assert fetch(profile_url)[0] == 404

        # the operator accepts it on the ops pages
        b.get(authed(site.ops_url + "profile_screen_form.php", site))
        assert "I watch" in b.body_text()
        os.makedirs(SCREENS, exist_ok=True)
        b.screenshot(os.path.join(SCREENS, "screen-form-%s.png" % site.mode))
        b.find("#screen_ok").follow()
        assert "%d is accepted" % uid in b.body_text()

        # now public, its picture served as a JPEG
        status, _, body = fetch(profile_url)
        assert status == 200 and b"clouds" in body
        assert ('src="user_profile/images/%d.jpg"' % uid).encode() in body
        status, ctype, data = fetch(base + "user_profile/images/%d.jpg" % uid)
        assert status == 200 and ctype == "image/jpeg" and data[:2] == b"\xff\xd8"
        b.get(profile_url)
        b.screenshot(os.path.join(SCREENS, "profile-%s.png" % site.mode))

    # the daily lists show it
    proc = subprocess.run([sys.executable, project.bin("update_profile_pages"), "--project_dir",
                           project.root], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    status, _, body = fetch(base + "user_profile/profile_country.html")
    assert status == 200 and b"Norway" in body
    status, _, body = fetch(base + "user_profile/user_gallery_1.html")
    assert status == 200 and ("images/%d_sm.jpg" % uid).encode() in body
    status, _, body = fetch(base + "profile_menu.php")
    assert status == 200 and re.search(rb'profile_P_1\.html', body)
