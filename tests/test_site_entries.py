"""The site's entry files (html/user/NAME.php): each runs its page through
boincpy.web.user.main naming the family module that has it, so a classic CGI
imports that family only (every module a CGI imports is paid on every
request), and nothing a page only sometimes needs (e-mail, TLS) is imported
before it is needed."""

import glob
import os
import re
import subprocess
import sys

from boincpy import hot_path
from boincpy.tools import cgi_bundles
from boincpy.web.user import main

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
USER = os.path.join(REPO, "html", "user")
_RUN = re.compile(r'^run\(__file__, "([a-z_]+)"\)$', re.M)
_START = re.compile(r'^cgi_start\("([a-z_]+)"\)', re.M)
_IMPORT = re.compile(r"^from (boincpy\.web\.[\w.]+) import (?:run|cgi_main)$", re.M)


def test_every_site_page_has_an_entry_naming_its_family():
    families = {}
    for family in ("submitter",) + main.FAMILIES:
        for page in main.family_pages(family):
            families[page] = family
    assert set(families) == set(main.PAGES)
    for page, family in sorted(families.items()):
        path = os.path.join(USER, page)
        assert os.access(path, os.X_OK), page
        text = open(path).read()
        assert "from boincpy.web.user.main import run" in text, page
        m = _RUN.search(text)
        assert m and m.group(1) == family, (page, family)
        # and its modules come from its family's bundle (boincpy.hot_path)
        assert _bundle_named(text) == "site_" + family, page


def _bundle_named(text):
    """The bundle an entry file's cgi_start names, checked to come before the
    entry's imports of boincpy's pages (which it is there to speed up)."""
    m = _START.search(text)
    assert m, "no cgi_start"
    assert text.index("cgi_start(") < text.index("from boincpy.web"), "cgi_start too late"
    return m.group(1)


def test_every_entry_starts_from_the_bundle_of_what_it_imports():
    # html/user's RPCs and pages outside the families, and html/ops: the
    # bundle each names exists and holds the module the entry imports
    entries = sorted(glob.glob(os.path.join(USER, "*.php")) + glob.glob(
        os.path.join(REPO, "html", "ops", "*.php")))
    assert len(entries) > 150
    for path in entries:
        text = open(path).read()
        name = _bundle_named(text)
        module = _IMPORT.search(text).group(1)
        assert name in cgi_bundles.CGIS, path
        assert module in {e[0] for e in cgi_bundles.bundle_entries(name)}, path
    assert hot_path.SITE_FAMILIES == main.FAMILIES


def test_a_page_imports_its_family_only():
    code = ("import sys; from boincpy.web.user import main; "
            "pages = main.family_pages('account'); "
            "print(sorted(m for m in sys.modules if m.startswith('boincpy.web.user.')) ); "
            "print([m for m in ('smtplib', 'ssl', 'email.message', 'subprocess', "
            "'boincpy.web.user.forum', 'boincpy.web.user.teams') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=REPO, check=True).stdout.splitlines()
    assert "home.php" in main.family_pages("account")
    assert out[1] == "[]", out


def test_a_picture_page_spools_no_more_than_its_limit(tmp_path):
    import io
    from boincpy.web.http import read_request
    from boincpy.web.user import profile
    limit = main.takes_uploads("create_profile.php")
    assert limit == 20 * profile.MAX_PICTURE_BYTES
    assert main.takes_uploads("home.php") is False
    body = (b"--XyZ\r\nContent-Disposition: form-data; name=\"picture\"; filename=\"a.jpg\"\r\n"
            b"\r\n" + b"x" * 100 + b"\r\n--XyZ--\r\n")
    env = {"REQUEST_METHOD": "POST", "CONTENT_TYPE": "multipart/form-data; boundary=XyZ",
           "CONTENT_LENGTH": str(len(body))}
    req = read_request(env, io.BytesIO(body), upload_dir=str(tmp_path), max_file_bytes=50)
    assert "larger than 50 bytes" in req.body_error and req.files == []
    assert os.listdir(tmp_path) == []          # nothing left spooled
    req = read_request(env, io.BytesIO(body), upload_dir=str(tmp_path), max_file_bytes=100)
    assert req.body_error == "" and req.files[0].size == 100
    req.remove_files()


def test_a_failing_page_shows_visitors_no_traceback(capsys):
    # the public site tells a visitor only that the page failed (the
    # traceback goes to the web server's log); the admins' pages show it
    from boincpy.web import page
    from boincpy.web.user import session

    def broken(ctx):
        raise RuntimeError("secret detail of the failure")
    for site, shown in ((session.USER_SITE, False), (session.SUBMIT_SITE, False),
                        (page.OPS, True)):
        resp = page.serve({"broken.php": broken}, "broken.php", lambda: None, site)
        assert resp.status.startswith("500")
        assert ("secret detail" in resp.text) == shown
        assert ("Traceback" in resp.text) == shown
        assert "secret detail of the failure" in capsys.readouterr().err
