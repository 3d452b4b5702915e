"""Profiles (boincpy.web.user.profile), the ops pages that screen them
(boincpy.web.ops.community), the BBCode they are written in
(boincpy.web.bbcode) and the tasks update_uotd and update_profile_pages
(boincpy.tools.community), in-process against a project made by
make_project: pictures uploaded as multipart forms through the real request
reader, resized and stored under the account's number; hostile texts,
pictures, form tokens and ids; screening; the static lists; the user of the
day and its e-mail."""

import io
import os
import re
import secrets
import stat
import sys
import time
from html.parser import HTMLParser
from urllib.parse import urlencode

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from boincpy.config import load_config
from boincpy.log import MessageLog
from boincpy.web import bbcode
from boincpy.web.http import read_request
from boincpy.web.ops.main import handle as ops_handle
from boincpy.web.user.main import handle
from site_util import execute, module_project, rows, set_options, token_of

XSS = '<script>alert("x")</script>'


# ---------------------------------------------------------------------------
# The project and its people

@pytest.fixture(scope="module")
def site(db_root_params):
    with module_project(db_root_params, test_app=False) as project:
        project.users = {}
        for name, credit in (("alice", 100.0), ("bob", 50.0), ("mallory", 5.0), ("poor", 0.5)):
            project.users[name] = make_user(project, name, credit)
        yield project


class Person:
    def __init__(self, uid, name, auth):
        self.id, self.name, self.auth = uid, name, auth


def make_user(site, name, credit, country="", send_email=1):
    auth = secrets.token_hex(16)
    uid = execute(site, "INSERT INTO user (create_time, email_addr, name, authenticator, "
                        "passwd_hash, global_prefs, project_prefs, venue, cross_project_id, "
                        "country, expavg_credit, total_credit, send_email) VALUES "
                        "(1, %s, %s, %s, '', '', '', '', '', %s, %s, %s, %s)",
                  ("%s.%s@example.com" % (name, auth[:6]), name, auth, country, credit,
                   credit * 10, send_email))
    return Person(uid, name, auth)


@pytest.fixture
def screening(site):
    set_options(site, profile_screening=1)
    yield
    set_options(site, profile_screening=0)


def profile_row(site, uid):
    found = rows(site, "SELECT * FROM profile WHERE userid = %s", (uid,))
    return found[0] if found else None


def clear_profile(site, person):
    execute(site, "DELETE FROM profile WHERE userid = %s", (person.id,))
    execute(site, "UPDATE user SET has_profile = 0 WHERE id = %s", (person.id,))
    for suffix in ("", "_sm"):
        path = os.path.join(site.root, "html", "user_profile", "images",
                            "%d%s.jpg" % (person.id, suffix))
        if os.path.exists(path):
            os.unlink(path)


# ---------------------------------------------------------------------------
# A browser, in-process: cookies, multipart forms through the real reader

def multipart(fields, files):
    boundary = "bp" + secrets.token_hex(12)
    out = io.BytesIO()
    for name, value in fields.items():
        out.write(("--%s\r\nContent-Disposition: form-data; name=\"%s\"\r\n\r\n"
                   % (boundary, name)).encode())
        out.write(str(value).encode("utf-8") + b"\r\n")
    for name, (filename, data, ctype) in files.items():
        out.write(("--%s\r\nContent-Disposition: form-data; name=\"%s\"; filename=\"%s\"\r\n"
                   "Content-Type: %s\r\n\r\n" % (boundary, name, filename, ctype)).encode())
        out.write(data + b"\r\n")
    out.write(("--%s--\r\n" % boundary).encode())
    return "multipart/form-data; boundary=" + boundary, out.getvalue()


class Web:
    def __init__(self, site, person=None):
        self.site = site
        self.person = person

    def call(self, page, method="GET", query=None, form=None, files=None, headers=None,
             ops=False):
        if "?" in page:
            page, qs = page.split("?", 1)
        else:
            qs = urlencode(query or {})
        environ = {"REQUEST_METHOD": method, "QUERY_STRING": qs, "HTTP_HOST": "127.0.0.1",
                   "SCRIPT_NAME": "/p/" + page, "REMOTE_ADDR": "192.0.2.7"}
        if self.person is not None and not ops:
            environ["HTTP_COOKIE"] = "auth=" + self.person.auth
        if ops:
            environ["REMOTE_USER"] = "admin"
        body = b""
        if method == "POST":
            if files is not None:
                ctype, body = multipart(form or {}, files)
            else:
                ctype, body = ("application/x-www-form-urlencoded",
                               urlencode(form or {}, doseq=True).encode())
            environ["CONTENT_TYPE"] = ctype
            environ["CONTENT_LENGTH"] = str(len(body))
        environ.update(headers or {})
        cfg = load_config(self.site.root)
        upload_dir = cfg.tmp_dir if files is not None else None
        req = read_request(environ, io.BytesIO(body), upload_dir=upload_dir)
        try:
            if ops:
                resp = ops_handle(page, req, self.site.root)
            else:
                resp = handle(page, req, self.site.root)
        finally:
            req.remove_files()
        text = resp.body if isinstance(resp.body, str) else ""
        assert "Traceback" not in text, text[-3000:]
        return resp

    def get(self, page, status="200", **kw):
        resp = self.call(page, **kw)
        assert resp.status.startswith(status), (resp.status, resp.body[-2500:])
        return resp.body

    def token(self, page, ops=False):
        return token_of(self.get(page, ops=ops))


def png(width, height, color=(200, 30, 30)):
    from PIL import Image
    out = io.BytesIO()
    Image.new("RGB", (width, height), color).save(out, "PNG")
    return out.getvalue()


def save_profile(web, response1="", response2="", picture=None, status="200", **extra):
    form = {"response1": response1, "response2": response2, "language": "English",
            "submit": "1", "csrf_token": web.token("create_profile.php")}
    form.update(extra)
    files = {"picture": picture or ("", b"", "application/octet-stream")}
    resp = web.call("create_profile.php", "POST", form=form, files=files)
    assert resp.status.startswith(status), (resp.status, resp.body[-2500:])
    return resp


def images_dir(site):
    return os.path.join(site.root, "html", "user_profile", "images")


# ---------------------------------------------------------------------------
# Creating, viewing, deleting

def test_create_profile_form_has_boincs_fields(site):
    body = Web(site, site.users["alice"]).get("create_profile.php")
    for field in ("response1", "response2", "language", "picture", "submit", "csrf_token"):
        assert 'name="%s"' % field in body
    assert 'enctype="multipart/form-data"' in body
    assert 'action="create_profile.php"' in body


def test_create_profile_needs_login(site):
    resp = Web(site).call("create_profile.php")
    assert resp.status.startswith("303")
    assert "login_form.php" in dict(resp.headers)["Location"]


def test_profile_with_picture_is_stored_as_boinc_stores_it(site):
    from PIL import Image
    alice = site.users["alice"]
    clear_profile(site, alice)
    web = Web(site, alice)
    before = set(os.listdir(images_dir(site)))
    save_profile(web, "I am [b]Alice[/b].", "Science!",
                 picture=("../../html/user/evil.php", png(1280, 960), "image/png"))
    row = profile_row(site, alice.id)
    assert row["response1"] == "I am [b]Alice[/b]." and row["response2"] == "Science!"
    assert row["language"] == "English" and row["has_picture"] == 1
    assert (row["verification"], row["recommend"], row["reject"], row["posts"],
            row["uotd_time"]) == (0, 0, 0, 0, 0)
    assert rows(site, "SELECT has_profile FROM user WHERE id = %s",
                (alice.id,))[0]["has_profile"] == 1
    added = set(os.listdir(images_dir(site))) - before
    assert added == {"%d.jpg" % alice.id, "%d_sm.jpg" % alice.id}
    assert not os.path.exists(os.path.join(site.root, "html", "user", "evil.php"))
    with Image.open(os.path.join(images_dir(site), "%d.jpg" % alice.id)) as big:
        assert big.format == "JPEG" and big.size == (640, 480)
    with Image.open(os.path.join(images_dir(site), "%d_sm.jpg" % alice.id)) as small:
        assert small.format == "JPEG" and small.size == (64, 48)
    # the picture is shown on the profile, by the numeric name
    body = Web(site).get("view_profile.php?userid=%d" % alice.id)
    assert 'src="user_profile/images/%d.jpg"' % alice.id in body
    assert "<b>Alice</b>" in body


def test_small_picture_is_kept_at_its_size_and_gif_accepted(site):
    from PIL import Image
    bob = site.users["bob"]
    clear_profile(site, bob)
    out = io.BytesIO()
    Image.new("P", (40, 30)).save(out, "GIF")
    save_profile(Web(site, bob), "gif", picture=("me.gif", out.getvalue(), "image/gif"))
    with Image.open(os.path.join(images_dir(site), "%d.jpg" % bob.id)) as big:
        assert big.size == (40, 30) and big.format == "JPEG"


@pytest.mark.parametrize("what, data, message", [
    ("not an image", b"<?php system($_GET['x']); ?>" * 10, "not a JPEG, PNG or GIF"),
    ("too large", b"\xff\xd8" + os.urandom(60 * 1024), "at most 50 KB"),
    ("bmp", None, "use a JPEG, PNG or GIF"),
    ("png bomb", None, "pixels"),
])
def test_bad_pictures_are_refused_and_nothing_changes(site, what, data, message):
    from PIL import Image
    mallory = site.users["mallory"]
    clear_profile(site, mallory)
    if what == "bmp":
        out = io.BytesIO()
        Image.new("RGB", (10, 10)).save(out, "BMP")
        data = out.getvalue()
    elif what == "png bomb":
        out = io.BytesIO()
        Image.new("1", (20000, 20000)).save(out, "PNG", optimize=True)
        data = out.getvalue()
        assert len(data) < 50 * 1024
    before = set(os.listdir(images_dir(site)))
    resp = save_profile(Web(site, mallory), "text", picture=("x.jpg", data, "image/jpeg"),
                        status="400")
    assert message in resp.body
    assert profile_row(site, mallory.id) is None
    assert set(os.listdir(images_dir(site))) == before


def test_hostile_texts_are_escaped_and_bbcode_restricted(site):
    mallory = site.users["mallory"]
    clear_profile(site, mallory)
    text = (XSS + ' [url=javascript:alert(1)]click[/url] [url=http://x.org/"onmouseover='
            'alert(1)]y[/url] [b]bold [i]both[/b] <img src=x onerror=alert(1)> '
            '[img]javascript:alert(1)[/img] [quote=<i>me</i>]q[/quote]')
    save_profile(Web(site, mallory), text, XSS, language="English")
    body = Web(site, site.users["bob"]).get("view_profile.php?userid=%d" % mallory.id)
    assert "<script" not in body and "&lt;script&gt;" in body
    assert "javascript:" not in body.replace("[url=javascript:alert(1)]", "").replace(
        "[img]javascript:alert(1)[/img]", "")
    assert "onerror=" not in body.replace("onerror=alert(1)&gt;", "")
    assert "<img src=x" not in body
    assert "<b>bold <i>both</i></b>" in body
    assert 'href="http://x.org/' not in body
    assert "&lt;i&gt;me&lt;/i&gt; wrote:" in body
    # the owner's form shows the texts back escaped too
    form = Web(site, mallory).get("create_profile.php")
    assert "<script" not in form and "&lt;script&gt;" in form


def test_missing_wrong_or_foreign_token_changes_nothing(site):
    bob = site.users["bob"]
    clear_profile(site, bob)
    web = Web(site, bob)
    files = {"picture": ("p.png", png(10, 10), "image/png")}
    form = {"response1": "hello", "submit": "1"}
    for extra, headers in (({}, None), ({"csrf_token": "bogus"}, None),
                           ({"csrf_token": Web(site, site.users["alice"]).token(
                               "create_profile.php")}, None),
                           ({"csrf_token": web.token("create_profile.php")},
                            {"HTTP_ORIGIN": "http://evil.example"})):
        resp = web.call("create_profile.php", "POST", form=dict(form, **extra), files=files,
                        headers=headers)
        assert resp.status.startswith("403"), resp.status
        assert profile_row(site, bob.id) is None
        assert not os.path.exists(os.path.join(images_dir(site), "%d.jpg" % bob.id))


def test_edit_keeps_picture_and_delete_pic_removes_it(site):
    alice = site.users["alice"]
    clear_profile(site, alice)
    web = Web(site, alice)
    save_profile(web, "one", picture=("a.png", png(100, 100), "image/png"))
    save_profile(web, "two")
    row = profile_row(site, alice.id)
    assert row["response1"] == "two" and row["has_picture"] == 1
    # another user's id in the form changes nothing of theirs
    bob = site.users["bob"]
    clear_profile(site, bob)
    save_profile(web, "three", userid=str(bob.id), delete_pic="on")
    assert profile_row(site, bob.id) is None
    row = profile_row(site, alice.id)
    assert row["response1"] == "three" and row["has_picture"] == 0
    assert not os.path.exists(os.path.join(images_dir(site), "%d.jpg" % alice.id))


def test_empty_and_odd_submissions_get_clear_errors(site):
    alice = site.users["alice"]
    web = Web(site, alice)
    assert "empty" in save_profile(web, "", "", status="400").body
    assert "response1" in save_profile(web, "x" * 30000, status="400").body
    assert "language" in save_profile(web, "x", language=XSS, status="400").body
    for query in ("userid=abc", "userid=", "userid=99999999999999999999", "userid=-3"):
        resp = Web(site).call("view_profile.php?" + query)
        assert resp.status[:3] in ("400", "404"), (query, resp.status)
    assert Web(site).call("view_profile.php?userid=%d" % site.users["poor"].id
                          ).status.startswith("404")


def test_min_credit_for_creating_and_anonymous_viewing(site):
    poor = site.users["poor"]
    alice = site.users["alice"]
    clear_profile(site, poor)
    execute(site, "INSERT INTO profile (userid, language, response1, response2, has_picture, "
                  "verification) VALUES (%s, 'English', 'poor text', '', 0, 0)", (poor.id,))
    set_options(site, profile_min_credit=10)
    try:
        resp = Web(site, poor).call("create_profile.php")
        assert resp.status.startswith("403") and "average credit of 10" in resp.body
        resp = Web(site).call("view_profile.php?userid=%d" % poor.id)
        assert resp.status.startswith("403")
        assert "poor text" in Web(site, alice).get("view_profile.php?userid=%d" % poor.id)
    finally:
        set_options(site, profile_min_credit=0)
    clear_profile(site, poor)


def test_delete_profile_needs_its_form(site):
    alice = site.users["alice"]
    clear_profile(site, alice)
    web = Web(site, alice)
    save_profile(web, "to delete", picture=("a.png", png(20, 20), "image/png"))
    body = web.get("delete_profile.php")
    assert 'action="delete_profile.php"' in body
    for token in ("", "bogus"):
        assert web.call("delete_profile.php", "POST", form={"cmd": "delete",
                                                             "csrf_token": token}
                        ).status.startswith("403")
        assert profile_row(site, alice.id) is not None
    # bob's token cannot delete alice's profile, and bob's own POST deletes only his
    bob_web = Web(site, site.users["bob"])
    clear_profile(site, site.users["bob"])
    save_profile(bob_web, "bob's")
    resp = bob_web.call("delete_profile.php", "POST",
                        form={"cmd": "delete", "csrf_token": bob_web.token("delete_profile.php"),
                              "userid": str(alice.id)})
    assert resp.status.startswith("200")
    assert profile_row(site, alice.id) is not None
    assert profile_row(site, site.users["bob"].id) is None
    resp = web.call("delete_profile.php", "POST",
                    form={"cmd": "delete", "csrf_token": web.token("delete_profile.php")})
    assert resp.status.startswith("200")
    assert profile_row(site, alice.id) is None
    assert rows(site, "SELECT has_profile FROM user WHERE id = %s",
                (alice.id,))[0]["has_profile"] == 0
    assert not os.path.exists(os.path.join(images_dir(site), "%d.jpg" % alice.id))
    assert not os.path.exists(os.path.join(images_dir(site), "%d_sm.jpg" % alice.id))


def test_profile_menu_random_and_bad_args(site):
    alice = site.users["alice"]
    clear_profile(site, alice)
    save_profile(Web(site, alice), "random me", picture=("a.png", png(20, 20), "image/png"))
    body = Web(site).get("profile_menu.php")
    assert "create_profile.php" in body and "user_profile/profile_country.html" in body
    resp = Web(site).call("profile_menu.php?cmd=rand&pic=1")
    assert resp.status.startswith("303")
    assert re.match(r"view_profile\.php\?userid=\d+$", dict(resp.headers)["Location"])
    for query in ("cmd=rand&pic=7", "cmd=rand&pic=x", "cmd=" + XSS):
        resp = Web(site).call("profile_menu.php?" + urlencode(dict(
            p.split("=", 1) for p in query.split("&"))))
        assert resp.status.startswith("400"), (query, resp.status)
        assert "<script" not in resp.body


# ---------------------------------------------------------------------------
# Screening

def test_screening_hides_a_profile_until_approved(site, screening):
    alice, bob = site.users["alice"], site.users["bob"]
    clear_profile(site, alice)
    save_profile(Web(site, alice), "screen me " + XSS,
                 picture=("a.png", png(50, 50), "image/png"))
    page = "view_profile.php?userid=%d" % alice.id
    assert Web(site).call(page).status.startswith("404")
    assert Web(site, bob).call(page).status.startswith("404")
    own = Web(site, alice).get(page)
    assert "once the project has approved it" in own
    # the ops form lists it; a POST without the token changes nothing
    ops = Web(site)
    form = ops.get("profile_screen_form.php", ops=True)
    assert "screen me" in form and "<script" not in form
    m = re.search(r'name="userid(\d+)" value="%d"' % alice.id, form)
    assert m
    i = m.group(1)
    verdict = {"n": re.search(r'name="n" value="(\d+)"', form).group(1),
               "userid" + i: str(alice.id), "user" + i: "1"}
    for j in range(int(verdict["n"])):
        verdict.setdefault("userid%d" % j, re.search(r'name="userid%d" value="(\d+)"' % j,
                                                     form).group(1))
        verdict.setdefault("user%d" % j, "0")
    resp = ops.call("profile_screen_action.php", "POST", form=verdict, ops=True)
    assert resp.status.startswith("403")
    assert profile_row(site, alice.id)["verification"] == 0
    resp = ops.call("profile_screen_action.php", "POST", ops=True,
                    form=dict(verdict, csrf_token=token_of(form)))
    assert resp.status.startswith("200") and "%d is accepted" % alice.id in resp.body
    assert profile_row(site, alice.id)["verification"] == 1
    assert "screen me" in Web(site, bob).get(page)
    # an edit goes back to screening
    save_profile(Web(site, alice), "edited")
    assert profile_row(site, alice.id)["verification"] == 0
    assert Web(site, bob).call(page).status.startswith("404")
    # a rejection: the owner is told
    form = ops.get("profile_screen_form.php", ops=True)
    n = int(re.search(r'name="n" value="(\d+)"', form).group(1))
    verdict = {"n": str(n), "csrf_token": token_of(form)}
    for j in range(n):
        uid = re.search(r'name="userid%d" value="(\d+)"' % j, form).group(1)
        verdict["userid%d" % j] = uid
        verdict["user%d" % j] = "-1" if uid == str(alice.id) else "0"
    ops.call("profile_screen_action.php", "POST", form=verdict, ops=True)
    assert profile_row(site, alice.id)["verification"] == -1
    assert "marked as unacceptable" in Web(site, alice).get(page)


def ops_token(site, action):
    from boincpy.web import csrf
    secret = csrf.load_secret(load_config(site.root))
    return csrf.make_token(secret, "admin", action, int(time.time()))


def test_screen_action_refuses_odd_values(site):
    ops = Web(site)
    token = ops_token(site, "profile_screen_action.php")
    for bad in ({"n": "abc"}, {"n": "1", "userid0": "x", "user0": "1"},
                {"n": "1", "userid0": "5", "user0": "7"}, {"n": "1", "user0": "1"},
                {"n": "99999"}):
        resp = ops.call("profile_screen_action.php", "POST", ops=True,
                        form=dict(bad, csrf_token=token))
        assert resp.status.startswith("400"), (bad, resp.status)
    assert ops.call("profile_screen_action.php", ops=True).status.startswith("405")


# ---------------------------------------------------------------------------
# Uploads reach the page in both modes

def test_create_profile_takes_uploads_in_both_modes():
    from boincpy import persistent
    from boincpy.web.user import main
    assert main.takes_uploads("create_profile.php")
    assert not main.takes_uploads("view_profile.php")
    assert persistent.page_handler(persistent.WEB_PAGES["create_profile.php"]).uploads
    assert not getattr(persistent.page_handler(persistent.WEB_PAGES["view_profile.php"]),
                       "uploads", False)


# ---------------------------------------------------------------------------
# BBCode

ALLOWED = {"b": set(), "i": set(), "u": set(), "s": set(), "a": {"href", "rel"},
           "blockquote": {"class"}, "div": {"class"}, "pre": {"class"}, "ul": set(),
           "ol": {"type"}, "li": set(), "br": set(), "img": {"src", "alt", "class"}}
VOID = {"br", "img"}


class Checker(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack = []
        self.problems = []

    def handle_starttag(self, tag, attrs):
        if tag not in ALLOWED:
            self.problems.append("tag %s" % tag)
        for name, value in attrs:
            if name not in ALLOWED.get(tag, ()):
                self.problems.append("attribute %s on %s" % (name, tag))
            if name in ("href", "src") and not re.match(r"^https?://", value or "", re.I):
                self.problems.append("%s=%r" % (name, value))
        if tag not in VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag):
        if not self.stack or self.stack[-1] != tag:
            self.problems.append("unbalanced </%s> (open: %s)" % (tag, self.stack))
        else:
            self.stack.pop()


TAGS = st.sampled_from(["[b]", "[/b]", "[i]", "[/i]", "[u]", "[/u]", "[s]", "[/s]",
                        "[url=http://a.b/c]", "[url=javascript:alert(1)]", "[url]", "[/url]",
                        "[img]", "[/img]", "[quote]", "[quote=", "[/quote]", "[code]",
                        "[/code]", "[list]", "[list=1]", "[*]", "[/list]", "<", ">", '"',
                        "'", "&", "]", "[", "=", "http://x.y/", "javascript:", "\n",
                        "<script>", "onerror=", "[pre]", "[/pre]", "&#34;"])
TEXTS = st.lists(st.one_of(TAGS, st.text(max_size=8)), max_size=40).map("".join)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(TEXTS, st.booleans())
def test_bbcode_output_is_whitelisted_and_balanced(text, images):
    html = str(bbcode.render(text, images))
    checker = Checker()
    checker.feed(html)
    checker.close()
    assert not checker.problems, (text, html, checker.problems)
    assert not checker.stack, (text, html)
    assert "<script" not in html.lower()


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=60))
def test_bbcode_without_tags_is_the_escaped_text(text):
    from markupsafe import escape
    if "[" in text:
        return
    assert str(bbcode.render(text)) == str(escape(text)).replace("\r\n", "\n").replace(
        "\r", "\n").replace("\n", "<br>\n")


def test_bbcode_examples():
    r = lambda t, images=False: str(bbcode.render(t, images))
    assert r("[b]x[/b]") == "<b>x</b>"
    assert r("[url=https://e.org/a?b=1&c=2]e[/url]") == (
        '<a href="https://e.org/a?b=1&amp;c=2" rel="nofollow">e</a>')
    assert r("[url]http://e.org[/url]") == (
        '<a href="http://e.org" rel="nofollow">http://e.org</a>')
    assert r("[img]http://e.org/p.png[/img]", True) == (
        '<img src="http://e.org/p.png" alt="" class="bbcode">')
    assert r("[img]http://e.org/p.png[/img]") == (
        '<a href="http://e.org/p.png" rel="nofollow">http://e.org/p.png</a>')
    assert r("[list][*]a[*]b[/list]") == "<ul><li>a</li><li>b</li></ul>"
    assert r("[code][b]x[/b][/code]") == '<pre class="code">[b]x[/b]</pre>'
    assert r("[url=javascript:alert(1)]x[/url]") == "[url=javascript:alert(1)]x[/url]"
    assert r("[/b]") == "[/b]"
    assert r("[b]open") == "<b>open</b>"
    assert bbcode.summary("[b]one two[/b] three four", 9) == "one two..."


# ---------------------------------------------------------------------------
# update_profile_pages

def test_update_profile_pages_writes_boincs_pages(site, tmp_path):
    from boincpy.tools import community
    carol = make_user(site, XSS + "carol", 20.0, country="../../Fr ance, x")
    dave = make_user(site, "Dave", 20.0, country="Germany")
    for person in (carol, dave):
        execute(site, "INSERT INTO profile (userid, language, response1, response2, "
                      "has_picture, verification) VALUES (%s, 'English', %s, '', 0, 0)",
                (person.id, "hi [b]" + XSS))
        execute(site, "UPDATE user SET has_profile = 1 WHERE id = %s", (person.id,))
    folder = os.path.join(site.root, "html", "user_profile")
    cfg = load_config(site.root)
    from boincpy.db import connect
    db = connect(cfg)
    try:
        out = io.StringIO()
        names = community.build_profile_pages(cfg, db, MessageLog(out), dry_run=True)
        assert "profile_country.html" in names and "user_gallery_1.html" in names
        assert not os.path.exists(os.path.join(folder, "profile_country.html"))
        names = community.build_profile_pages(cfg, db, MessageLog(out))
    finally:
        db.close()
    for name in names:
        assert os.path.dirname(name) == "" and os.path.exists(os.path.join(folder, name))
    assert "profile_country_Germany_1.html" in names
    assert "profile_D_1.html" in names and "profile_other_1.html" in names
    assert "profile_country_.._.._France_x_1.html" not in names
    assert all(not n.startswith("..") and "/" not in n for n in names)
    country = open(os.path.join(folder, "profile_country.html")).read()
    assert "Germany" in country and "<script" not in country
    other = open(os.path.join(folder, "profile_other_1.html")).read()
    assert "&lt;/script&gt;carol" in other and "<script" not in other
    assert "view_profile.php?userid=%d" % carol.id in other
    alpha = open(os.path.join(folder, "profile_alpha.html")).read()
    assert "profile_D_1.html" in alpha
    # profile_menu links the letters written
    assert "profile_D_1.html" in Web(site).get("profile_menu.php")
    for person in (carol, dave):
        clear_profile(site, person)


def test_tools_help_and_bad_options(capsys):
    from boincpy.tools import community
    for main, name in ((community.update_uotd_main, "update_uotd"),
                       (community.update_profile_pages_main, "update_profile_pages"),
                       (community.badge_assign_main, "badge_assign")):
        assert main(["--help"]) == 0
        assert "Usage: %s" % name in capsys.readouterr().out
        assert main(["--no_such_option"]) == 1
        assert "Usage: %s" % name in capsys.readouterr().err


def test_tools_run_as_programs_with_dry_run(site):
    import subprocess
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for tool in ("update_uotd", "update_profile_pages", "badge_assign"):
        proc = subprocess.run([sys.executable, os.path.join(repo, "bin", tool), "--dry_run",
                               "--project_dir", site.root], capture_output=True, text=True,
                              timeout=120)
        assert proc.returncode == 0, proc.stderr
        assert re.search(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{4} UTC \[normal\] Starting$",
                         proc.stdout, re.M), proc.stdout


# ---------------------------------------------------------------------------
# update_uotd

@pytest.fixture
def mailbox(site, tmp_path):
    """config.xml's email_command writes each message into a file."""
    script = tmp_path / "sendmail"
    box = tmp_path / "box"
    box.mkdir()
    script.write_text("#!/bin/sh\ncat > %s/$(date +%%s%%N).eml\n" % box)
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    set_options(site, email_command=str(script))
    yield box
    set_options(site, email_command="")


def test_update_uotd_chooses_mails_and_keeps_the_day(site, mailbox, screening):
    from boincpy.db import connect
    from boincpy.tools import community
    execute(site, "DELETE FROM profile")
    eve = make_user(site, "Eve", 30.0)
    frank = make_user(site, "Frank", 30.0, send_email=0)
    low = make_user(site, "Low", 0.5)
    unscreened = make_user(site, "Unscreened", 30.0)
    for person, verification in ((eve, 1), (frank, 1), (low, 1), (unscreened, 0)):
        execute(site, "INSERT INTO profile (userid, language, response1, response2, "
                      "has_picture, verification) VALUES (%s, 'English', %s, '', 0, %s)",
                (person.id, "I am %s [b]" % person.name, verification))
    cfg = load_config(site.root)
    db = connect(cfg)
    out = io.StringIO()
    log = MessageLog(out)
    try:
        now = int(time.time())
        assert community.select_uotd(cfg, db, log, now=now, dry_run=True) in (eve.id, frank.id)
        assert not rows(site, "SELECT * FROM profile WHERE uotd_time > 0")
        first = community.select_uotd(cfg, db, log, now=now)
        assert first in (eve.id, frank.id)
        assert profile_row(site, first)["uotd_time"] == now
        # same day: kept
        assert community.select_uotd(cfg, db, log, now=now + 60) == first
        # forced: the other candidate
        second = community.select_uotd(cfg, db, log, now=now + 120, force=True)
        assert {first, second} == {eve.id, frank.id}
        # everybody shown: one of those shown longest ago
        third = community.select_uotd(cfg, db, log, now=now + 86400 * 2)
        assert third in (eve.id, frank.id)
    finally:
        db.close()
    assert "Chose user %d as UOTD" % first in out.getvalue()
    import email
    import email.policy
    mails = []
    for f in sorted(os.listdir(mailbox)):
        with open(os.path.join(mailbox, f), "rb") as fh:
            msg = email.message_from_binary_file(fh, policy=email.policy.default)
        mails.append("To: %s\nSubject: %s\n%s" % (msg["To"], msg["Subject"],
                                                   msg.get_content()))
    # Eve was mailed (each time she was chosen); Frank opted out
    assert mails and all("Eve" in m and "user of the day" in m for m in mails)
    assert "view_profile.php?userid=%d" % eve.id in mails[0]
    assert "does not want e-mail" in out.getvalue()
    # the profile menu shows the user of the day
    body = Web(site).get("profile_menu.php")
    assert "User of the day" in body
    # and so does the master page, one short line each, the text escaped
    from boincpy.resident import Resident
    from boincpy.web import master
    from boincpy.web.http import Request
    execute(site, "UPDATE profile SET response1 = %s WHERE userid = %s",
            (XSS + " <scheduler>http://evil/</scheduler>", third))
    resident = Resident(site.root)
    try:
        text = master.handle(load_config(site.root), Request.of(resident=resident)).text
    finally:
        resident.close()
    assert "User of the day" in text and "view_profile.php?userid=%d" % third in text
    assert "<script" not in text and "<scheduler>http://evil" not in text
    assert max(len(line.encode()) for line in text.splitlines()
               if "uotd" in line or "view_profile" in line) < 256


def test_make_project_makes_the_profile_folders_tasks_and_alias(site):
    images = images_dir(site)
    assert os.path.isdir(images) and os.stat(images).st_mode & 0o2070 == 0o2070
    conf = open(os.path.join(site.root, site.short_name + ".httpd.conf")).read()
    alias = 'Alias "/%s/user_profile" "%s/html/user_profile"' % (site.short_name, site.root)
    assert alias in conf
    assert conf.index(alias) < conf.index('Alias "/%s" ' % site.short_name)
    tasks = {t.cmd: t for t in load_config(site.root).tasks}
    for name in ("update_uotd", "update_profile_pages", "badge_assign"):
        assert name in tasks and tasks[name].output == name + ".out"


def test_boincs_task_lines_reach_the_tools(site):
    """config.xml written for BOINC says run_in_ops ./update_uotd.php."""
    from boincpy.tools.run_in_ops import run_in_ops
    for script in ("./update_uotd.php", "update_profile_pages.php", "./badge_assign.php"):
        assert run_in_ops(site.root, script, ["--dry_run"]) == 0, script


def test_profile_search_and_uotd_page(site):
    alice, bob = site.users["alice"], site.users["bob"]
    clear_profile(site, alice)
    clear_profile(site, bob)
    save_profile(Web(site, alice), "I love astronomy and telescopes", "stars")
    save_profile(Web(site, bob), "gardening " + XSS, "plants")
    body = Web(site).get("profile_search_action.php?search_string=telescopes")
    assert "view_profile.php?userid=%d" % alice.id in body
    assert "view_profile.php?userid=%d" % bob.id not in body
    body = Web(site).get("profile_search_action.php?" + urlencode({"search_string": XSS}))
    assert "<script" not in body
    for query in ("search_string=", "search_string=x&offset=-1", "search_string=x&offset=z",
                  "search_string=" + "x" * 300):
        resp = Web(site).call("profile_search_action.php?" + query)
        assert resp.status.startswith("400"), (query, resp.status)
    assert 'action="profile_search_action.php"' in Web(site).get("profile_menu.php")
    # uotd.php: the chosen user's whole profile
    execute(site, "UPDATE profile SET uotd_time = 0")
    assert "No user of the day" in Web(site).get("uotd.php")
    execute(site, "UPDATE profile SET uotd_time = %s WHERE userid = %s",
            (int(time.time()), alice.id))
    body = Web(site).get("uotd.php")
    assert "User of the day for" in body and "telescopes" in body


def test_bbcode_of_a_huge_hostile_post_is_quick():
    text = ("[b][url=http://a.b/][quote=x][list][*]" * 3000 + "[/b]" * 3000
            + "[url]" * 5000 + "[code]" * 2000)[:64000]
    started = time.time()
    html = str(bbcode.render(text, True))
    assert time.time() - started < 2
    checker = Checker()
    checker.feed(html)
    checker.close()
    assert not checker.problems[:3] and not checker.stack


def test_update_profile_pages_removes_pictures_of_deleted_profiles(site):
    from boincpy.db import connect
    from boincpy.tools import community
    alice = site.users["alice"]
    clear_profile(site, alice)
    save_profile(Web(site, alice), "kept", picture=("a.png", png(20, 20), "image/png"))
    folder = images_dir(site)
    old = time.time() - 2 * community.ORPHAN_GRACE
    for name in ("999001.jpg", "999001_sm.jpg", "999002.jpg", "notes.txt",
                 "%d.jpg" % alice.id):
        path = os.path.join(folder, name)
        if not os.path.exists(path):
            open(path, "wb").write(b"x")
        os.utime(path, (old, old))
    os.utime(os.path.join(folder, "999002.jpg"))          # just written: kept
    cfg = load_config(site.root)
    db = connect(cfg)
    try:
        now = int(time.time())
        out = io.StringIO()
        assert community.remove_orphan_pictures(cfg, db, MessageLog(out), now, dry_run=True) \
            == ["999001.jpg", "999001_sm.jpg"]
        assert os.path.exists(os.path.join(folder, "999001.jpg"))
        community.build_profile_pages(cfg, db, MessageLog(out), now=now)
    finally:
        db.close()
    left = set(os.listdir(folder))
    assert "999001.jpg" not in left and "999001_sm.jpg" not in left
    assert {"999002.jpg", "notes.txt", "%d.jpg" % alice.id} <= left
    for name in ("999002.jpg", "notes.txt"):
        os.unlink(os.path.join(folder, name))


def test_profile_page_names_from_countries_stay_in_their_folder():
    # a country is free text in boincpy's forms: its page's name passes the
    # one name check, whatever the text holds
    from boincpy.files import check_file_name
    from boincpy.tools.community import legal_filename
    for country in ("../../etc", "St. Lucia", "..", "a/b\\c", "x..y", "\x00", "Côte d'Ivoire"):
        name = "profile_country_%s_1.html" % legal_filename(country)
        assert check_file_name(name, "test") == name and "/" not in name
