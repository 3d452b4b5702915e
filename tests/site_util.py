"""What the volunteer site's tests share (boincpy/web/user/ and the community
pages): the project's database as root, a real SMTP server (aiosmtpd on
127.0.0.1) and its messages, config.xml options, the in-process page call
(a Request for a page with a user's auth cookie, GET or POST, the form
token read from a page or made for the user), volunteers made in a
project's database, a made project under a private Apache for a browser
module, and Chromium's login and logout.

Plain functions and classes, imported by the tests; the fixtures over them
(``smtp``, ``inbox``) are in conftest.py.
"""

import email
import email.policy
import re
import secrets
import socket
import urllib.parse
from contextlib import contextmanager

import MySQLdb


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

def set_options(root, **options):
    """Rewrite the project's config.xml with these options changed (its
    daemons and tasks kept)."""
    from boincpy.config import load_config, write_config
    cfg = load_config(root)
    write_config(root, dict(cfg.as_options(), **options), cfg.daemons, cfg.tasks)


def add_config(project, extra):
    """Put the text ``extra`` (option lines) first in config.xml's <config>,
    and re-read it into ``project.cfg``."""
    import os
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

def free_port():
    """A TCP port on 127.0.0.1 nobody listens on (now)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


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


# ---------------------------------------------------------------------------
# A made project under a private Apache, for a browser module

@contextmanager
def served_project(db_root_params, mode="cgi", before_start=None, **make_args):
    """A project made by make_project (``make_args``: test_app, ops),
    ``before_start(project)`` run on it, switched to ``mode`` ("cgi" or
    "persistent", one process), served by a private Apache: the
    RunningApache (``mode`` set).  Whatever ``running.server`` is at the end
    is stopped, then the project removed."""
    from conftest import RunningApache, make_test_project, remove_test_project
    from boincpy.tools.httpd import PrivateApache
    project = make_test_project(db_root_params, **make_args)
    try:
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
    finally:
        remove_test_project(project)


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
    import os
    os.makedirs(directory, exist_ok=True)
    return b.screenshot(os.path.join(directory, name + ".png"))


# ---------------------------------------------------------------------------
# A project whose e-mail goes to a Mailbox, its database open

@contextmanager
def mailing_project(db_root_params, smtp, extra=""):
    """A project made by make_project whose e-mail goes to ``smtp`` (a
    Mailbox), with ``extra`` config.xml lines after the SMTP ones;
    ``project.cfg`` re-read, ``project.db`` open (closed afterwards)."""
    from conftest import make_test_project, remove_test_project
    from boincpy.db import connect
    project = make_test_project(db_root_params)
    try:
        add_config(project, smtp_options(smtp.port) + extra)
        project.db = connect(project.cfg)
        try:
            yield project
        finally:
            project.db.close()
    finally:
        remove_test_project(project)


def q(site, sql, params=()):
    """Rows of a query on ``site.db``."""
    return site.db.query(sql, params)


def one(site, sql, params=()):
    """The first row of a query on ``site.db``."""
    return site.db.query_one(sql, params)
