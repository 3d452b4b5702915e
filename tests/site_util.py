"""What the volunteer site's tests share (boincpy/web/user/ and the community
pages): the project's database as root (rows, execute, user_row), config.xml
options (set_options, add_config), a real SMTP server (Mailbox: aiosmtpd on
127.0.0.1) and its messages, a made project for a module (module_project;
mailing_project with its e-mail to a Mailbox), the in-process page call (a
Request for a page with a user's auth cookie, GET or POST, the form token
read from a page or made for the user, other headers such as Origin:
wire_request, call, Site.call, token_of, make_token, status, ok), volunteers
made in a project's database (volunteer, numbered_user, Site.user), a
page's forms as a browser submits them (forms_of, form_fields), a made
project under a private Apache for a browser module (served_project,
browser_site), the site over HTTP (Session) and Chromium's login and logout
(browser_login, login_as, browser_logout).

Plain functions and classes, imported by the tests; the fixtures over them
(``smtp``, ``inbox``) are in conftest.py.
"""

import email
import email.policy
import io
import os
import re
import secrets
import time
import urllib.error
import urllib.parse
import urllib.request
from contextlib import contextmanager
from html.parser import HTMLParser
from http.cookies import SimpleCookie

import MySQLdb

from boincpy.tools.httpd import free_port


# ---------------------------------------------------------------------------
# The project's database, as the root account (a MadeProject, or a
# RunningApache: its project)

def _project(site):
    return getattr(site, "project", site)


def db_rows(db_root_params, dbname, sql, params=()):
    """Rows (dicts) of a query in database ``dbname``, as root."""
    conn = MySQLdb.connect(db=dbname, **db_root_params)
    try:
        cur = conn.cursor(MySQLdb.cursors.DictCursor)
        cur.execute(sql, params)
        return list(cur.fetchall())
    finally:
        conn.close()


def rows(site, sql, params=()):
    """Rows (dicts) of a query in the project's database."""
    project = _project(site)
    return db_rows(project.db_root_params, project.db_name, sql, params)


def execute(site, sql, params=()):
    """Run one statement in the project's database and commit; the row id it inserted."""
    project = _project(site)
    conn = MySQLdb.connect(db=project.db_name, **project.db_root_params)
    try:
        cur = conn.cursor()
        cur.execute(sql, params)
        conn.commit()
        return cur.lastrowid
    finally:
        conn.close()


def user_row(site, email_addr):
    """The user row with this address (a dict), or None."""
    found = rows(site, "SELECT * FROM user WHERE email_addr = %s", (email_addr,))
    return found[0] if found else None


# ---------------------------------------------------------------------------
# config.xml

def set_options(site, **options):
    """Rewrite the project's config.xml with these options changed (its
    daemons and tasks kept); ``site`` is the project (or its root)."""
    from boincpy.config import load_config, write_config
    root = getattr(_project(site), "root", site)
    cfg = load_config(root)
    write_config(root, dict(cfg.as_options(), **options), cfg.daemons, cfg.tasks)


def add_config(project, extra):
    """Put the text ``extra`` (option lines) first in config.xml's <config>,
    and re-read it into ``project.cfg``."""
    from boincpy.config import load_config
    path = os.path.join(project.root, "config.xml")
    with open(path) as f:
        text = f.read()
    with open(path, "w") as f:
        f.write(text.replace("<config>", "<config>\n" + extra, 1))
    project.cfg = load_config(project.root)


def smtp_options(port):
    """config.xml's lines sending the site's e-mail to an SMTP server on 127.0.0.1."""
    return "    <smtp_host>127.0.0.1</smtp_host>\n    <smtp_port>%d</smtp_port>" % port


# ---------------------------------------------------------------------------
# A real SMTP server

class Mailbox:
    """aiosmtpd on 127.0.0.1 (``port``); ``messages`` are [(recipients,
    message)], parsed with ``policy`` (email's compat32 unless given)."""

    def __init__(self, policy=None):
        self.policy = policy
        self.messages = []
        self.port = None
        self.controller = None

    def start(self):
        from aiosmtpd.controller import Controller
        self.controller = Controller(self, hostname="127.0.0.1", port=free_port())
        self.controller.start()
        self.port = self.controller.port
        return self

    def stop(self):
        self.controller.stop()

    async def handle_DATA(self, server, session, envelope):
        if self.policy is None:
            msg = email.message_from_bytes(envelope.content)
        else:
            msg = email.message_from_bytes(envelope.content, policy=self.policy)
        self.messages.append((list(envelope.rcpt_tos), msg))
        return "250 OK"

    def to(self, addr):
        """Messages sent to ``addr``, oldest first."""
        return [m for rcpts, m in self.messages if addr in rcpts]

    def clear(self):
        self.messages.clear()

    def last_body(self, addr):
        """The body of the last message to ``addr`` (a Mailbox with email.policy.default)."""
        found = self.to(addr)
        assert found, "no e-mail to %s" % addr
        return found[-1].get_content()


@contextmanager
def running_mailbox(policy=None):
    """A started Mailbox, stopped afterwards."""
    box = Mailbox(policy).start()
    try:
        yield box
    finally:
        box.stop()


INBOX_POLICY = email.policy.default


# ---------------------------------------------------------------------------
# Pages in-process

def token_of(text):
    """The form token (csrf_token) of the first form in a page."""
    m = re.search(r'name="csrf_token" value="([^"]+)"', text)
    assert m, "no form token in the page"
    return m.group(1)


def action_token(text, action):
    """The form token of the page's form posting to ``action``."""
    m = re.search(r'<form[^>]*action="%s".*?name="csrf_token" value="([^"]+)"'
                  % re.escape(action), text, re.S)
    assert m, "no form posting to %s" % action
    return m.group(1)


def make_token(cfg, user, page, now=None):
    """A form token for ``user`` (a User row) and ``page``, as the site makes it."""
    from boincpy.web import csrf
    return csrf.make_token(csrf.load_secret(cfg), "user:%d:%s" % (user.id, user.authenticator),
                           page, now)


def status(resp):
    """A Response's status code (200 when it names none)."""
    return int((resp.status or "200").split()[0])


def ok(resp, status="200"):
    """A Response's body, asserted to have this status."""
    assert resp.status.startswith(status), (resp.status, resp.body[-2000:])
    return resp.body


def wire_request(page, method="GET", query=None, form=None, script="/test/", addr="127.0.0.1",
                 cookies=None, headers=None):
    """A Request for ``page`` as Apache hands one over, through the real
    reader: ``query`` and ``form`` (a POST's body) URL-encoded, the
    ``cookies`` {name: value}, REMOTE_ADDR ``addr`` (none if None), then
    ``headers`` (CGI names: HTTP_ORIGIN, REMOTE_USER ...) over them."""
    from boincpy.web.http import read_request
    body = urllib.parse.urlencode(form or {}, doseq=True).encode()
    environ = {"REQUEST_METHOD": method,
               "QUERY_STRING": urllib.parse.urlencode(query or {}, doseq=True),
               "HTTP_HOST": "127.0.0.1", "SCRIPT_NAME": script + page}
    if addr is not None:
        environ["REMOTE_ADDR"] = addr
    if cookies:
        environ["HTTP_COOKIE"] = "; ".join("%s=%s" % kv for kv in cookies.items())
    if method == "POST":
        environ["CONTENT_TYPE"] = "application/x-www-form-urlencoded"
        environ["CONTENT_LENGTH"] = str(len(body))
    environ.update(headers or {})
    return read_request(environ, io.BytesIO(body))


def call(site, page, user=None, get=None, post=None, now=None, environ=None):
    """A page of ``site`` (a project) in-process: GET, or POST of ``post``,
    with ``user``'s auth cookie; the Response (no traceback in it)."""
    from boincpy.web.http import Request
    from boincpy.web.user.main import handle
    env = {"HTTP_HOST": "127.0.0.1", "REMOTE_ADDR": "127.0.0.1"}
    if user is not None:
        env["HTTP_COOKIE"] = "auth=" + user.authenticator
    env.update(environ or {})
    req = Request.of("POST" if post is not None else "GET", get, post, env)
    resp = handle(page, req, site.root, now=now)
    assert "Traceback" not in resp.body, resp.body
    return resp


# ---------------------------------------------------------------------------
# Volunteers

def volunteer(db, cfg, name, **columns):
    """A new account named "NAME XXXX" with the password "pw of NAME" (the
    columns set afterwards); (User, e-mail address, password)."""
    from boincpy import passwords
    from boincpy.web import accounts
    email_addr = "%s-%s@example.org" % (name, secrets.token_hex(3))
    passwd = "pw of %s" % name
    user = accounts.make_user(db, cfg, email_addr, "%s %s" % (
        name.title(), secrets.token_hex(2)), passwords.client_passwd_hash(passwd, email_addr))
    if columns:
        from boincpy.db.user import update_user_columns
        update_user_columns(db, user.id, columns)
    return user, email_addr, passwd


def numbered_user(site, n, prefix, passwd_prefix, name, create_time=None, columns=None,
                  forum_prefs=None, keep_name=False):
    """User number ``n`` of a test module (``site.db``, ``site.cfg``): named
    ``name``, address PREFIXn_TIME@example.com, password hash
    md5(PASSWD_PREFIXn + address), made at ``create_time`` (now if None);
    then ``columns`` set (update_user_columns; with ``keep_name`` the name
    too where make_user changed it, as BOINC's PHP may have stored it) and
    ``forum_prefs`` {column: value} (set_forum_pref); the User read back."""
    from boincpy import passwords
    from boincpy.db.user import set_forum_pref, update_user_columns
    from boincpy.web import accounts
    addr = "%s%d_%d@example.com" % (prefix, n, int(time.time()))
    user = accounts.make_user(site.db, site.cfg, addr, name,
                              passwords.md5_hex("%s%d" % (passwd_prefix, n) + addr),
                              now=create_time)
    if keep_name and name != user.name:
        columns = dict(columns or {}, name=name)
    if columns:
        update_user_columns(site.db, user.id, columns)
    for column, value in (forum_prefs or {}).items():
        set_forum_pref(site.db, user.id, column, value)
    return accounts.lookup_user_by_id(site.db, user.id)


# ---------------------------------------------------------------------------
# A made project under a private Apache, for a browser module

@contextmanager
def served_project(db_root_params, mode="cgi", before_start=None, **make_args):
    """A project made by make_project (``make_args``: test_app, ops),
    ``before_start(project)`` run on it, switched to ``mode`` ("cgi" or
    "persistent", one process), served by a private Apache: the
    RunningApache (``mode`` set).  Whatever ``running.server`` is at the end
    is stopped, then the project removed."""
    from conftest import RunningApache
    from boincpy.tools.httpd import PrivateApache
    with module_project(db_root_params, **make_args) as project:
        if before_start:
            before_start(project)
        if mode != "cgi":
            from boincpy.tools import server_mode
            server_mode.set_mode(project.root, mode, processes=1)
        running = RunningApache(project, PrivateApache(project.root, project.port))
        running.mode = mode
        try:
            running.server.start()
            yield running
        finally:
            running.server.stop(graceful=False)


@contextmanager
def browser_site(db_root_params, names, **columns):
    """A browser module's project: skipped without Chromium; made by
    make_project, served as CGIs, ``running.db`` open and ``running.users``
    {name: (User, e-mail address, password)} of volunteer(NAME, **columns)."""
    import pytest
    import webdriver
    if not webdriver.available():
        pytest.skip("chromium and chromedriver are not installed (webdriver.available())")
    with served_project(db_root_params) as running:
        running.db = running.project.connect()
        running.users = {name: volunteer(running.db, running.project.cfg, name, **columns)
                         for name in names}
        yield running


def with_credentials(url, user, passwd):
    """``url`` with user:password@ in it (the ops area's basic auth)."""
    parts = urllib.parse.urlsplit(url)
    netloc = "%s:%s@%s" % (urllib.parse.quote(user, safe=""),
                           urllib.parse.quote(passwd, safe=""), parts.netloc)
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, parts.query, ""))


# ---------------------------------------------------------------------------
# Chromium (tests/webdriver.py)

def browser_login(b, master_url, email_addr, passwd, next_url=None):
    """Log in through login_form.php (then to ``next_url``)."""
    b.get(master_url + "login_form.php" + ("?next_url=" + next_url if next_url else ""))
    b.find("#email_addr").send_keys(email_addr)
    b.find("#passwd").send_keys(passwd)
    b.find('form[action="login_action.php"] button').follow()


def login_as(b, web, who, next_url):
    """Log in as ``web.users[who]`` (see browser_site); the User."""
    user, email_addr, passwd = web.users[who]
    browser_login(b, web.master_url, email_addr, passwd, next_url)
    return user


def browser_logout(b, master_url):
    """Log out through logout.php's button."""
    b.get(master_url + "logout.php")
    b.find('form[action="logout.php"] button').follow()


def fill(b, values):
    """Type into fields: {CSS selector: text}, each cleared first."""
    for css, text in values.items():
        field = b.find(css)
        field.clear()
        field.send_keys(text)


def screenshot(b, directory, name):
    """Save a screenshot as DIRECTORY/NAME.png; its path."""
    os.makedirs(directory, exist_ok=True)
    return b.screenshot(os.path.join(directory, name + ".png"))


# ---------------------------------------------------------------------------
# A project whose e-mail goes to a Mailbox, its database open

@contextmanager
def mailing_project(db_root_params, smtp, extra=""):
    """A project made by make_project whose e-mail goes to ``smtp`` (a
    Mailbox), with ``extra`` config.xml lines after the SMTP ones;
    ``project.cfg`` re-read, ``project.db`` open (closed afterwards)."""
    from boincpy.db import connect
    with module_project(db_root_params) as project:
        add_config(project, smtp_options(smtp.port) + extra)
        project.db = connect(project.cfg)
        try:
            yield project
        finally:
            project.db.close()


def q(site, sql, params=()):
    """Rows of a query on ``site.db``."""
    return site.db.query(sql, params)


def one(site, sql, params=()):
    """The first row of a query on ``site.db``."""
    return site.db.query_one(sql, params)


# ---------------------------------------------------------------------------
# A made project for a module, and its pages called in-process

VOLUNTEER_FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures",
                                  "volunteer")


def fixture(name):
    """A captured file of BOINC's PHP site, tests/fixtures/volunteer/NAME, as text."""
    with open(os.path.join(VOLUNTEER_FIXTURES, name), encoding="utf-8") as f:
        return f.read()


@contextmanager
def module_project(db_root_params, **make_args):
    """A project made by make_project (``make_args``: test_app, ops),
    removed afterwards."""
    from conftest import make_test_project, remove_test_project
    project = make_test_project(db_root_params, **make_args)
    try:
        yield project
    finally:
        remove_test_project(project)


class Site:
    """A made project and in-process calls of its pages."""

    def __init__(self, project):
        from boincpy.web import csrf
        self.project = project
        self.db = project.connect()
        self.cfg = project.cfg
        self.secret = csrf.load_secret(self.cfg)

    def user(self, name=None, **columns):
        """A new account (User), columns set afterwards as given."""
        from boincpy import passwords
        from boincpy.web import accounts
        name = name or "vol " + secrets.token_hex(4)
        email = "%s@example.org" % secrets.token_hex(6)
        user = accounts.make_user(self.db, self.cfg, email, name,
                                  passwords.client_passwd_hash("pw", email))
        if columns:
            self.db.execute("UPDATE user SET %s WHERE id = %%s" % ", ".join(
                "%s = %%s" % k for k in columns), list(columns.values()) + [user.id])
        return accounts.lookup_user_by_id(self.db, user.id)

    def token(self, user, page, now=None):
        from boincpy.web import csrf
        return csrf.make_token(self.secret, "user:%d:%s" % (user.id, user.authenticator), page,
                               now)

    def call(self, page, user=None, get=None, post=None, token=True, now=None, headers=None):
        """Run a page; a POST carries ``user``'s token for ``page`` unless
        ``token`` is False or a string (that token)."""
        from boincpy.web import csrf
        from boincpy.web.user.main import handle
        method = "POST" if post is not None else "GET"
        form = dict(post or {})
        if method == "POST" and user is not None and token:
            form[csrf.FIELD] = token if isinstance(token, str) else self.token(user, page, now)
        req = wire_request(page, method, get, form,
                           cookies={"auth": user.authenticator} if user is not None else None,
                           headers=headers)
        resp = handle(page, req, self.project.root, now)
        assert "Traceback" not in resp.text, resp.text[-3000:]
        return resp

    def ok(self, page, user=None, **kw):
        resp = self.call(page, user, **kw)
        assert status(resp) == 200, (resp.status, resp.text[-2000:])
        return resp.text

    def team(self, teamid):
        from boincpy.web import accounts
        return accounts.lookup_team_by_id(self.db, teamid)

    def create_team(self, founder, name=None, **fields):
        form = {"name": name or "team " + secrets.token_hex(4), "url": "", "type": "1",
                "name_html": "", "description": "", "country": "None", "joinable": "on"}
        form.update(fields)
        resp = self.call("team_create_action.php", founder, post=form)
        assert resp.status.startswith("303"), (resp.status, resp.text[-2000:])
        teamid = int(dict(resp.headers)["Location"].split("teamid=")[1])
        return self.team(teamid)

    def member(self, team, **columns):
        from boincpy.web import accounts
        user = self.user(**columns)
        resp = self.call("team_join_action.php", user, post={"teamid": team.id})
        assert resp.status.startswith("200"), resp.text[-2000:]
        return accounts.lookup_user_by_id(self.db, user.id)

    def teamid_of(self, user):
        return self.db.query_value("SELECT teamid FROM user WHERE id = %s", (user.id,))


# ---------------------------------------------------------------------------
# A page's forms, as a browser would submit them

class FormReader(HTMLParser):
    """The fields a browser would submit from each form of a page."""

    def __init__(self):
        super().__init__()
        self.forms, self._select, self._first = [], None, None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "form":
            self.forms.append({"action": a.get("action"), "fields": [], "names": set()})
        if not self.forms:
            return
        form = self.forms[-1]
        if tag in ("input", "select") and a.get("name"):
            form["names"].add(a["name"])
        if tag == "input" and a.get("name"):
            kind = a.get("type", "text")
            if kind in ("checkbox", "radio"):
                if "checked" in a:
                    form["fields"].append((a["name"], a.get("value", "on")))
            else:
                form["fields"].append((a["name"], a.get("value", "")))
        elif tag == "select":
            self._select, self._first = a.get("name"), None
        elif tag == "option" and self._select:
            if self._first is None:
                self._first = a.get("value", "")
            if "selected" in a:
                form["fields"].append((self._select, a.get("value", "")))
                self._select = None
        elif tag == "button" and a.get("name"):
            form["fields"].append((a["name"], a.get("value", "")))

    def handle_endtag(self, tag):
        if tag == "select" and self._select:
            self.forms[-1]["fields"].append((self._select, self._first or ""))
            self._select = None


def forms_of(text, action=None):
    """The forms of a page (posting to ``action`` if given; one at least)."""
    reader = FormReader()
    reader.feed(text)
    found = [f for f in reader.forms if action is None or f["action"] == action]
    assert found, "no form posting to %s" % action
    return found


# ---------------------------------------------------------------------------
# The site over HTTP (a private Apache), without a browser

class Session:
    """A browser's side of HTTP: cookies kept, redirects not followed."""

    class _NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args, **kwargs):
            return None

    def __init__(self, base, basic_auth=None):
        self.base = base
        self.cookies = {}
        self.basic_auth = basic_auth
        self.opener = urllib.request.build_opener(urllib.request.ProxyHandler({}),
                                                  self._NoRedirect())

    def request(self, page, query=None, form=None, headers=None):
        """(status, headers, body bytes); Set-Cookie headers update the cookies."""
        target = self.base + page
        if query:
            target += ("&" if "?" in page else "?") + urllib.parse.urlencode(query)
        data = urllib.parse.urlencode(form, doseq=True).encode() if form is not None else None
        req = urllib.request.Request(target, data=data, headers=dict(headers or {}))
        if self.cookies:
            req.add_header("Cookie", "; ".join("%s=%s" % kv for kv in self.cookies.items()))
        if self.basic_auth:
            import base64
            req.add_header("Authorization", "Basic " + base64.b64encode(
                ("%s:%s" % self.basic_auth).encode()).decode())
        try:
            with self.opener.open(req, timeout=120) as resp:
                status, head, body = resp.status, resp.headers, resp.read()
        except urllib.error.HTTPError as exc:
            status, head, body = exc.code, exc.headers, exc.read()
        for line in head.get_all("Set-Cookie") or []:
            jar = SimpleCookie()
            jar.load(line)
            for name, morsel in jar.items():
                if morsel["max-age"] == "0":
                    self.cookies.pop(name, None)
                else:
                    self.cookies[name] = morsel.value
        return status, head, body

    def page(self, page, query=None, form=None, headers=None, status=200):
        """The body text of a page that must answer ``status``."""
        code, _, body = self.request(page, query, form, headers)
        text = body.decode("utf-8", "replace")
        assert code == status, (code, text[-3000:])
        return text

    def login(self, email, passwd):
        code, head, _ = self.request("login_action.php", form={
            "email_addr": email, "passwd": passwd, "next_url": "submit.php"})
        assert code == 303 and "auth" in self.cookies, code
        return self


def form_fields(text, action):
    """The fields a browser submits from the form posting to ``action``:
    {name: [values]}."""
    fields = {}
    for name, value in forms_of(text, action)[0]["fields"]:
        fields.setdefault(name, []).append(value)
    return fields
