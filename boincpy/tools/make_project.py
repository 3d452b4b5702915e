"""make_project: create a BOINC project (directories, config.xml, keys, database,
web files and the Apache configuration), like BOINC's tools/make_project.

    make_project [options] SHORT_NAME ['Long Name']

BOINC's options (``-opt`` and ``--opt`` both work): --project_root,
--project_host, --url_base, --html_user_url, --html_ops_url, --key_dir,
--db_name, --db_user, --db_passwd, --db_host, --user_name, --no_db,
--drop_db_first, --delete_prev_inst, --test_app, --web_only, --no_query,
--srcdir, --verbose N / -v.  boincpy adds --cgi_url, --db_socket,
--db_root_user / --db_root_passwd (the account that creates the database and
the project's database user; default root over the local socket),
--httpd_user (the web server's user, default www-data) and
--ops_user / --ops_passwd (writes html/ops/.htpasswd for the ops pages).

Differences from the C++ make_project, all on the safe side:

* upload certificates are generated and checked, and
  ``one_result_per_user_per_wu`` is on;
* the project's database user gets a password (a random one unless
  --db_passwd is given; it is written to config.xml) because the CGIs run as
  the web server's user and cannot use the administrator's socket login; an
  existing database user is reused only if --db_passwd is its password;
* config.xml (it holds that password) is readable by the owner and the web
  server's group only; private keys by the owner only;
* nothing is half made: the project is built in a hidden sibling directory
  and moved into place at the end; on any failure everything this run created
  (directories, keys, database, database user) is removed again.

Layout and URLs (URL_BASE defaults to https://PROJECT_HOST/)::

    URL_BASE/SHORT/            html/user  (master page index.php; *.php are CGIs)
    URL_BASE/SHORT/download/   download/  (static files, byte ranges)
    URL_BASE/SHORT_cgi/cgi     cgi-bin/cgi  (scheduler)
    URL_BASE/SHORT_cgi/file_upload_handler
    URL_BASE/SHORT_ops/        html/ops   (HTTP basic auth, html/ops/.htpasswd)

upload/ and keys/ are never served.  The CGIs find the project through
BOINC_PROJECT_DIR, set by PROJECT/SHORT.httpd.conf.
"""

import compileall
import grp
import os
import pwd
import re
import secrets
import shutil
import socket
import stat
import subprocess
import sys
from dataclasses import dataclass
from types import SimpleNamespace
from urllib.parse import urlsplit

import click

from boincpy import crypto
from boincpy.cli import option
from boincpy.config import SAFE_NEW_PROJECT, write_config
from boincpy.daemons.db_dump import DEFAULT_SPEC
from boincpy.db import forum, schema
from boincpy.db.connection import Database, open_server, server_params
from boincpy.db.revision import LATEST, write_revision
from boincpy.db.schema import check_name
from boincpy.errors import BoincpyError, DatabaseError, ToolError
from boincpy.tools import cgi_bundles, server_mode
from boincpy.tools.server_mode import cgi_paths
from boincpy.web import csrf as ops_csrf
from boincpy.xml import xml_escape

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Repository directories copied file by file into the project.
COPIED_DIRS = ("bin", "cgi-bin", "html/user", "html/ops")
# ... of which the CGIs a client calls on every contact start without site's
# hooks (see cgi_paths)
FAST_START_DIRS = ("cgi-bin", "html/user")
_SKIPPED_NAMES = {".keep", ".gitignore", "__pycache__", ".DS_Store",
                  "make_project"}      # a source-tree tool, not a project one
_ENV_SHEBANG = re.compile(rb"^#!\s*/usr/bin/env\s+python3?\s*$")

KEY_PAIRS = ("upload", "code_sign")
FANOUT = 1024

# Standard BOINC platform names (tools/project.xml) with boincpy's descriptions.
PLATFORMS = (
    ("windows_intelx86", "Windows on 32-bit x86"),
    ("windows_x86_64", "Windows on x86-64"),
    ("windows_arm64", "Windows on 64-bit ARM"),
    ("i686-pc-linux-gnu", "Linux on 32-bit x86"),
    ("x86_64-pc-linux-gnu", "Linux on x86-64"),
    ("powerpc-apple-darwin", "macOS on PowerPC"),
    ("i686-apple-darwin", "macOS on 32-bit Intel"),
    ("x86_64-apple-darwin", "macOS on 64-bit Intel"),
    ("arm64-apple-darwin", "macOS on Apple silicon"),
    ("sparc-sun-solaris2.7", "Solaris 2.7 on SPARC"),
    ("sparc-sun-solaris", "Solaris 2.8 or later on SPARC"),
    ("sparc64-sun-solaris", "Solaris 2.8 or later on 64-bit SPARC"),
    ("powerpc64-ps3-linux-gnu", "Linux on the PlayStation 3"),
    ("arm-android-linux-gnu", "Android on 32-bit ARM"),
    ("aarch64-android-linux-gnu", "Android on 64-bit ARM"),
    ("x86_64-android-linux-gnu", "Android on x86-64"),
    ("x86-android-linux-gnu", "Android on 32-bit x86"),
    ("arm-unknown-linux-gnueabihf", "Linux on 32-bit ARM, hardware floating point"),
    ("aarch64-unknown-linux-gnu", "Linux on 64-bit ARM"),
    ("anonymous", "anonymous platform (app_info.xml)"),
)

TEST_APP = ("example_app", "Example Application")

# The test app is examples/example_app, which takes no command line by
# default (BOINC's template passes "-cpu_time 30" to its own uc2, which ours
# would ignore; --cpu_time N in a job's command line makes it spin).
TEST_APP_IN = """<input_template>
    <file_info>
        <number>0</number>
    </file_info>
    <workunit>
        <file_ref>
            <file_number>0</file_number>
            <open_name>in</open_name>
        </file_ref>
    </workunit>
</input_template>
"""

TEST_APP_OUT = """<output_template>
    <file_info>
        <name><OUTFILE_0/></name>
        <generated_locally/>
        <upload_when_present/>
        <max_nbytes>5000000</max_nbytes>
        <url><UPLOAD_URL/></url>
    </file_info>
    <result>
        <file_ref>
            <file_name><OUTFILE_0/></file_name>
            <open_name>out</open_name>
        </file_ref>
    </result>
</output_template>
"""

# Periodic tasks: those of BOINC's list that are back-end programs (its PHP
# web-site tasks -- forums, profiles, badges, e-mail -- have no counterpart).
TASKS = (
    ("antique_file_deleter -d 2", "24 hours", "antique_file_deleter.out", False),
    ("db_dump -d 2 --dump_spec ../db_dump_spec.xml", "24 hours", "db_dump.out", True),
    ("update_stats", "1 days", "update_stats.out", False),
    # remote job submission: batch leases, uploaded input files no batch uses
    ("expire_batches", "1 hours", "expire_batches.out", False),
    ("delete_job_files", "1 hours", "delete_job_files.out", False),
    ("delete_batches", "7 days", "delete_batches.out", False),
    # the volunteer site's, as BOINC lists them ("run_in_ops ./notify.php" there;
    # run_in_ops runs these programs for such a line too)
    ("notify", "24 hours", "notify.out", False),
    ("delete_expired_tokens", "24 hours", "delete_expired_tokens.out", False),
    ("delete_expired_users_and_hosts", "24 hours", "delete_expired_users_and_hosts.out", False),
    # the profiles' and badges' tasks (BOINC lists them as run_in_ops ./NAME.php)
    ("update_uotd", "1 days", "update_uotd.out", False),
    ("update_profile_pages", "24 hours", "update_profile_pages.out", False),
    ("badge_assign", "24 hours", "badge_assign.out", False),
    # the message boards' (BOINC: run_in_ops ./update_forum_activities.php, hourly)
    ("update_forum_activities", "1 hours", "update_forum_activities.out", False),
)

_SHORT_NAME_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_-]*$")
_MASTER_LINE_MAX = 255        # the client reads the master page in 256-byte chunks


@dataclass
class ProjectSpec:
    """Everything make_project decided before touching anything."""

    short_name: str
    long_name: str
    project_root: str
    project_host: str          # short host name, written as <host>
    url_base: str
    master_url: str            # = --html_user_url
    ops_url: str               # = --html_ops_url
    cgi_url: str
    key_dir: str
    db_name: str
    db_user: str
    db_passwd: str
    db_host: str
    db_socket: str
    db_root_user: str
    db_root_passwd: str
    user_name: str
    httpd_user: str
    httpd_gid: int
    srcdir: str
    no_db: bool = False
    drop_db_first: bool = False
    delete_prev_inst: bool = False
    test_app: bool = False
    web_only: bool = False
    no_query: bool = False
    verbose: int = 1
    ops_user: str = ""
    ops_passwd: str = ""
    db_passwd_generated: bool = False
    persistent: bool = False   # scheduler, upload handler, web RPCs in FastCGI workers
    processes: int = server_mode.DEFAULT_PROCESSES

    @property
    def scheduler_url(self):
        return self.cgi_url + "cgi"

    @property
    def upload_url(self):
        return self.cgi_url + "file_upload_handler"

    @property
    def download_url(self):
        return self.master_url + "download"

    @property
    def host_dirs(self):
        return ("log_" + self.project_host, "pid_" + self.project_host,
                "tmp_" + self.project_host)

    def path(self, *parts):
        return os.path.join(self.project_root, *parts)


# ---------------------------------------------------------------------------
# Options

def _command():
    """make_project's options, as click parameters (``-opt`` and ``--opt``)."""


    def a(name, **kwargs):
        kwargs.setdefault("default", None)
        params.append(option(name, **kwargs))
    params = [
        click.Argument(["short_name"], metavar="SHORT_NAME"),
        click.Argument(["long_name"], metavar="LONG_NAME", required=False),
    ]
    a("project_root", help="default: $HOME/projects/SHORT_NAME")
    a("project_host", help="default: this host's name; its first label is <host>")
    a("url_base", help="default: https://PROJECT_HOST/")
    a("html_user_url", help="master URL, default: URL_BASE/SHORT_NAME/")
    a("html_ops_url", help="default: URL_BASE/SHORT_NAME_ops/")
    a("cgi_url", help="default: URL_BASE/SHORT_NAME_cgi/ (scheduler: CGI_URL/cgi)")
    a("key_dir", help="default: PROJECT_ROOT/keys")
    a("db_name", help="default: SHORT_NAME")
    a("db_user", help="the project's database account, used by the CGIs and daemons "
                      "(default: --user_name, or SHORT_NAME if that is root)")
    a("db_passwd", help="its password (default: a random one, written to config.xml)")
    a("db_host", default="", help="database server host[:port] (default: local socket)")
    a("db_socket", default="", help="database server's Unix socket (default: the client "
                                    "library's)")
    a("db_root_user", default="root",
      help="account that creates the database and grants --db_user (default: root)")
    a("db_root_passwd", default="", help="its password (default: none, socket login)")
    a("user_name", help="default: $USER")
    a("httpd_user", default="www-data",
      help="user the web server runs as; its group may read config.xml and write "
           "upload/ and the log directory (default: www-data)")
    a("ops_user", default="", help="create html/ops/.htpasswd with this user ...")
    a("ops_passwd", default="", help="... and this password")
    a("no_db", is_flag=True, default=False, help="don't create the database")
    a("drop_db_first", is_flag=True, default=False, help="drop an existing database first")
    a("delete_prev_inst", is_flag=True, default=False, help="replace an existing project root")
    a("test_app", is_flag=True, default=False,
      help="set up example_app: templates, project.xml entry, validator and assimilator")
    a("web_only", is_flag=True, default=False, help="web files only: no keys, bin/ or cgi-bin/")
    a("persistent", is_flag=True, default=False,
      help="serve the scheduler, upload handler and web RPCs with long-lived processes "
           "(FastCGI processes bin/start runs, behind Apache's mod_proxy_fcgi) instead of CGIs; "
           "bin/server_mode switches later")
    a("processes", type=int, default=server_mode.DEFAULT_PROCESSES,
      help="with --persistent: how many processes (default: one per CPU, at least 2; %d here)"
      % server_mode.DEFAULT_PROCESSES)
    a("no_query", is_flag=True, default=False, help="don't ask for confirmation")
    a("srcdir", help="boincpy source tree holding bin/, cgi-bin/, html/ "
                     "(default: the one this module is in)")
    a("verbose", type=int, default=1, help="0 quiet, 1 steps (default), 2 details")
    params.append(click.Option(["-v", "verbose_2"], is_flag=True, help="same as --verbose 2"))

    def parsed(**values):
        if values.pop("verbose_2"):
            values["verbose"] = 2
        return SimpleNamespace(**values)
    return click.Command("make_project", params=params, callback=parsed,
                         help="Create a BOINC project on this server: directories, "
                              "config.xml, keys, database, web files and "
                              "PROJECT/SHORT.httpd.conf.",
                         context_settings={"help_option_names": ["-h", "--help"]})


def _with_slash(url):
    return url if url.endswith("/") else url + "/"


def _check_url(name, url):
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ToolError("%s %r is not an http:// or https:// URL" % (name, url))
    if re.search(r"[\s\"'<>]", url):
        raise ToolError("%s %r contains a space, quote or angle bracket" % (name, url))


def default_project_host():
    """This host's fully qualified name, unless the resolver only knows it as
    'localhost' (then its own name): <host> must match what bin/start sees."""
    node = os.uname().nodename
    try:
        fqdn = socket.getfqdn()
    except OSError:
        fqdn = node
    if fqdn.split(".")[0] != node.split(".")[0]:
        return node
    return fqdn


def plan(argv):
    """Parse and check make_project's arguments; return a ProjectSpec.

    Raises ToolError naming the bad option.  Touches nothing.
    """
    command = _command()
    try:
        args = command.main(args=list(argv), prog_name="make_project", standalone_mode=False)
    except click.UsageError as exc:
        raise ToolError("%s (see make_project --help)" % exc.format_message(),
                        exit_code=2) from None
    if not hasattr(args, "short_name"):
        raise SystemExit(args or 0)         # --help: click printed it
    short = args.short_name
    if not _SHORT_NAME_RE.match(short):
        raise ToolError("project short name %r: use letters, digits, '_' and '-' only" % short)
    long_name = args.long_name or short
    if "\n" in long_name or not long_name.strip():
        raise ToolError("project long name %r must be one non-empty line" % long_name)

    user_name = args.user_name or os.environ.get("USER") or pwd.getpwuid(os.getuid()).pw_name
    host = args.project_host or default_project_host()
    url_base = _with_slash(args.url_base or "https://%s/" % host)
    _check_url("--url_base", url_base)
    master_url = _with_slash(args.html_user_url or url_base + short + "/")
    _check_url("--html_user_url", master_url)
    ops_url = _with_slash(args.html_ops_url or url_base + short + "_ops/")
    _check_url("--html_ops_url", ops_url)
    cgi_url = _with_slash(args.cgi_url or url_base + short + "_cgi/")
    _check_url("--cgi_url", cgi_url)
    scheduler_line = '<link rel="boinc_scheduler" href="%scgi">' % cgi_url
    if len(scheduler_line) > _MASTER_LINE_MAX:
        raise ToolError("--cgi_url %r is too long: the client reads the master page in "
                        "256-byte lines" % cgi_url)

    home = os.path.expanduser("~")
    root = os.path.abspath(args.project_root or os.path.join(home, "projects", short))
    if root == os.path.dirname(root):
        raise ToolError("--project_root %r: refusing to use the file system root" % root)
    key_dir = os.path.abspath(args.key_dir or os.path.join(root, "keys"))
    for name, path in (("--project_root", root), ("--key_dir", key_dir)):
        if re.search(r'["\n\\]', path):
            raise ToolError("%s %r: no quotes, backslashes or newlines (it goes into the "
                            "Apache configuration)" % (name, path))

    db_name = args.db_name or short
    db_user = args.db_user or (user_name if user_name != "root" else short)
    db_passwd_generated = False
    db_passwd = args.db_passwd
    if not args.no_db:
        try:
            check_name(db_name)
            check_name(db_user, "database user")
        except DatabaseError as exc:
            raise ToolError("%s (--db_name/--db_user)" % exc.message) from None
        if db_user in ("root", args.db_root_user):
            raise ToolError("--db_user %s: the project's database account must not be the "
                            "administrative account; choose another name" % db_user)
    if not db_passwd:
        db_passwd = secrets.token_urlsafe(18)
        db_passwd_generated = True

    try:
        httpd_gid = pwd.getpwnam(args.httpd_user).pw_gid
    except KeyError:
        raise ToolError("--httpd_user %s: no such user on this machine (the web server's "
                        "user: www-data on Debian, apache on Red Hat)" % args.httpd_user) from None

    if bool(args.ops_user) != bool(args.ops_passwd):
        raise ToolError("--ops_user and --ops_passwd go together")
    if args.ops_user:
        if ":" in args.ops_user or not args.ops_user.strip():
            raise ToolError("--ops_user %r: must be non-empty, without ':'" % args.ops_user)
        if not shutil.which("htpasswd"):
            raise ToolError("--ops_user needs the htpasswd program (Debian: apache2-utils)")

    if args.processes < 1:
        raise ToolError("--processes %d: at least 1" % args.processes)
    if args.persistent and args.web_only:
        raise ToolError("--persistent serves the scheduler: not with --web_only")

    srcdir = os.path.abspath(args.srcdir or REPO_ROOT)
    if not os.path.isdir(os.path.join(srcdir, "cgi-bin")) or \
            not os.path.isdir(os.path.join(srcdir, "bin")):
        raise ToolError("--srcdir %s: not a boincpy source tree (no bin/ and cgi-bin/)" % srcdir)

    return ProjectSpec(
        short_name=short, long_name=long_name, project_root=root,
        project_host=host.split(".")[0], url_base=url_base, master_url=master_url,
        ops_url=ops_url, cgi_url=cgi_url, key_dir=key_dir, db_name=db_name,
        db_user=db_user, db_passwd=db_passwd, db_host=args.db_host or "",
        db_socket=args.db_socket or "", db_root_user=args.db_root_user,
        db_root_passwd=args.db_root_passwd or "", user_name=user_name,
        httpd_user=args.httpd_user, httpd_gid=httpd_gid, srcdir=srcdir,
        no_db=args.no_db, drop_db_first=args.drop_db_first,
        delete_prev_inst=args.delete_prev_inst, test_app=args.test_app,
        web_only=args.web_only, no_query=args.no_query, verbose=args.verbose,
        ops_user=args.ops_user, ops_passwd=args.ops_passwd,
        db_passwd_generated=db_passwd_generated, persistent=args.persistent,
        processes=args.processes)


# ---------------------------------------------------------------------------
# Database

def _server_params(spec, user, passwd):
    return server_params(spec.db_host, spec.db_socket, user, passwd)


def _connect(params, who):
    return open_server(params, who)


def root_connection(spec):
    """An administrative connection (--db_root_user) to the database server."""
    return _connect(_server_params(spec, spec.db_root_user, spec.db_root_passwd),
                    "%s (--db_root_user/--db_root_passwd)" % spec.db_root_user)


def database_exists(conn, name):
    cur = conn.cursor()
    try:
        cur.execute("SHOW DATABASES LIKE %s", (name,))
        return cur.fetchone() is not None
    finally:
        cur.close()


def db_user_hosts(conn, user):
    """Hosts for which the database account ``user`` exists."""
    cur = conn.cursor()
    try:
        cur.execute("SELECT Host FROM mysql.user WHERE User = %s", (user,))
        return [row[0] for row in cur.fetchall()]
    finally:
        cur.close()


def _check_database(spec, conn):
    """Refuse what make_project must not clobber; return whether --db_user exists."""
    if database_exists(conn, spec.db_name) and not spec.drop_db_first:
        raise ToolError("database %s already exists; use --drop_db_first to replace it "
                        "(or --db_name)" % spec.db_name)
    hosts = db_user_hosts(conn, spec.db_user)
    if not hosts:
        return False
    # Another project may use this account: never change its password.
    if spec.db_passwd_generated:
        raise ToolError("database user %s already exists: give its password with "
                        "--db_passwd, or choose another --db_user" % spec.db_user)
    try:
        _connect(_server_params(spec, spec.db_user, spec.db_passwd), spec.db_user).close()
    except DatabaseError:
        raise ToolError("database user %s already exists with another password than "
                        "--db_passwd; give its password or choose another --db_user"
                        % spec.db_user) from None
    return True


class _Undo:
    """What this run created, removed again in reverse order on failure."""

    def __init__(self):
        self.steps = []

    def add(self, what, fn):
        self.steps.append((what, fn))

    def run(self, say):
        errors = []
        for what, fn in reversed(self.steps):
            try:
                fn()
                say(2, "  removed %s" % what)
            except Exception as exc:       # keep undoing the rest
                errors.append("%s: %s" % (what, exc))
        self.steps = []
        return errors


def _sql(conn, sql, params=None):
    cur = conn.cursor()
    try:
        cur.execute(sql, params)
    finally:
        cur.close()


def setup_database(spec, conn, user_existed, undo, say):
    """Create the database with BOINC's schema and grant the project's account."""
    say(1, "Setting up database %s" % spec.db_name)
    schema.create_database(conn, spec.db_name, drop_first=spec.drop_db_first)
    undo.add("database %s" % spec.db_name,
             lambda: _sql(conn, "DROP DATABASE IF EXISTS `%s`" % spec.db_name))
    schema.load_schema(conn, spec.db_name)
    # the message boards of BOINC's create_forums.php (the news are the "News" forum's)
    forum.create_forums(Database(conn))
    hosts = ("localhost", "127.0.0.1")
    if user_existed:
        undo.add("grants of %s" % spec.db_user, lambda: [
            _sql(conn, "REVOKE ALL PRIVILEGES ON `%s`.* FROM %%s@%%s" % spec.db_name,
                 (spec.db_user, h)) for h in hosts if h in db_user_hosts(conn, spec.db_user)])
    else:
        undo.add("database user %s" % spec.db_user, lambda: [
            _sql(conn, "DROP USER IF EXISTS %s@%s", (spec.db_user, h)) for h in hosts])
    schema.grant_user(conn, spec.db_name, spec.db_user, spec.db_passwd, hosts=hosts)
    conn.commit()


# ---------------------------------------------------------------------------
# Files

def _mkdir(path, mode):
    os.mkdir(path)
    os.chmod(path, mode)       # mkdir's mode is filtered by the umask


def _write(path, text, mode=0o644):
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    os.chmod(path, mode)


def copy_tree_files(src_dir, dest_dir, python, paths=None):
    """Copy every file under ``src_dir`` to ``dest_dir`` (sub-directories too),
    pointing ``#!/usr/bin/env python3`` scripts at ``python``.

    With ``paths`` (:func:`cgi_paths`), those scripts run ``python -S`` and
    their third line puts ``paths`` on ``sys.path``.  Scripts (a ``#!``
    line) and files executable in the source get mode 0755, others 0644.
    Returns the relative paths copied.
    """
    copied = []
    if not os.path.isdir(src_dir):
        return copied
    for dirpath, dirnames, filenames in os.walk(src_dir):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIPPED_NAMES)
        rel_dir = os.path.relpath(dirpath, src_dir)
        target_dir = dest_dir if rel_dir == "." else os.path.join(dest_dir, rel_dir)
        os.makedirs(target_dir, exist_ok=True)
        for name in sorted(filenames):
            if name in _SKIPPED_NAMES or name.endswith((".pyc", "~")):
                continue
            src = os.path.join(dirpath, name)
            with open(src, "rb") as f:
                data = f.read()
            first, sep, rest = data.partition(b"\n")
            script = data.startswith(b"#!")
            if _ENV_SHEBANG.match(first) and paths is not None:
                data = (b"#!%s -S\n# make_project: site's paths, without site's start-up\n"
                        b"import sys; sys.path += %s\n" % (python.encode(),
                                                            repr(paths).encode())) + rest
            elif _ENV_SHEBANG.match(first):
                data = b"#!" + python.encode() + sep + rest
            executable = script or os.access(src, os.X_OK)
            dest = os.path.join(target_dir, name)
            with open(dest, "wb") as f:
                f.write(data)
            os.chmod(dest, 0o755 if executable else 0o644)
            copied.append(os.path.normpath(os.path.join(rel_dir, name)))
    return copied


# gui_urls.xml (BOINC's tools/gui_urls.xml, with this site's pages): the
# scheduler sends it with <master_url/>, <userid/>, <teamid/>, <rss_auth/> ...
# filled in (boincpy.sched.reply.gui_urls_text); <ifteam> only to team members.
GUI_URLS_XML = """<gui_urls>
    <gui_url>
        <name>Message boards</name>
        <description>Talk with the other volunteers of <project_name/></description>
        <url><master_url/>forum_index.php</url>
    </gui_url>
    <gui_url>
        <name>Your account</name>
        <description>Your account on <project_name/></description>
        <url><master_url/>home.php</url>
    </gui_url>
    <gui_url>
        <name>Computing preferences</name>
        <description>How your computers work for <project_name/></description>
        <url><master_url/>prefs.php?subset=global</url>
    </gui_url>
    <gui_url>
        <name>Your tasks</name>
        <description>The tasks your computers ran lately</description>
        <url><master_url/>results.php?userid=<userid/></url>
    </gui_url>
    <gui_url>
        <name>Your computers</name>
        <description>The computers attached to your account</description>
        <url><master_url/>hosts_user.php</url>
    </gui_url>
    <gui_url>
        <name>News</name>
        <description>News of <project_name/></description>
        <url><master_url/>old_news.php</url>
    </gui_url>
    <gui_url>
        <name>Teams</name>
        <description>Find, join or create a team</description>
        <url><master_url/>team.php</url>
    </gui_url>
    <ifteam>
        <gui_url>
            <name>Your team</name>
            <description>The page of <team_name/></description>
            <url><master_url/>team_display.php?teamid=<teamid/></url>
        </gui_url>
    </ifteam>
</gui_urls>
<rss_feeds>
    <rss_feed>
        <url><master_url/>notices.php?userid=<userid/>&amp;auth=<rss_auth/></url>
        <poll_interval>86400</poll_interval>
    </rss_feed>
</rss_feeds>
"""


def schedulers_txt(spec):
    """html/user/schedulers.txt: both scheduler declarations, as BOINC writes them."""
    return ("<!-- <scheduler>%s</scheduler> -->\n"
            '<link rel="boinc_scheduler" href="%s">\n' % (spec.scheduler_url, spec.scheduler_url))


def project_xml(spec):
    """project.xml: platforms and apps for bin/xadd, in BOINC's format."""
    lines = ["<boinc>"]
    for name, friendly in PLATFORMS:
        lines += ["    <platform>", "        <name>%s</name>" % name,
                  "        <user_friendly_name>%s</user_friendly_name>"
                  % xml_escape(friendly, quote=True),
                  "    </platform>"]
    if spec.test_app:
        lines += ["    <app>", "        <name>%s</name>" % TEST_APP[0],
                  "        <user_friendly_name>%s</user_friendly_name>" % TEST_APP[1],
                  "    </app>"]
    lines.append("</boinc>")
    return "\n".join(lines) + "\n"


def config_options(spec):
    """config.xml's <config> options, in the order BOINC's make_project writes them."""
    opts = {
        "long_name": spec.long_name,
        "master_url": spec.master_url,
        "host": spec.project_host,
        "db_name": spec.db_name,
        "db_user": spec.db_user,
        "db_passwd": spec.db_passwd,
        "db_host": spec.db_host,
    }
    if spec.db_socket:
        opts["db_socket"] = spec.db_socket
    opts.update({
        "shmem_key": 0x11110000 | secrets.randbelow(0xffff) + 1,
        "uldl_dir_fanout": FANOUT,
        "min_sendwork_interval": 6,
        "max_wus_to_send": 50,
        "daily_result_quota": 500,
        "disable_account_creation": False,
        "disable_account_creation_rpc": False,
        "account_creation_rpc_require_consent": False,
        "disable_web_account_creation": False,
        "enable_login_mustagree_termsofuse": False,
        "enable_privacy_by_default": False,
        "show_results": True,
        "cache_md5_info": True,
        "sched_debug_level": 3,
        "fuh_debug_level": 3,
        **SAFE_NEW_PROJECT,
        "enable_delete_account": 0,
    })
    if spec.web_only:
        opts["no_computing"] = True
    opts.update({
        "download_url": spec.download_url,
        "upload_url": spec.upload_url,
        "cgi_url": spec.cgi_url,
        "download_dir": spec.path("download"),
        "upload_dir": spec.path("upload"),
        "key_dir": spec.key_dir,
        "app_dir": spec.path("apps"),
        "log_dir": spec.path(spec.host_dirs[0]),
        "httpd_user": spec.httpd_user,
    })
    return opts


def config_daemons(spec):
    """The <daemons> make_project installs."""
    cmds = ["feeder -d 3", "transitioner -d 3", "file_deleter -d 3"]
    if spec.test_app:
        cmds += ["sample_trivial_validator -d 3 --app %s" % TEST_APP[0],
                 "sample_dummy_assimilator -d 3 --app %s" % TEST_APP[0]]
    return [{"cmd": c} for c in cmds]


def config_tasks(spec):
    """The <tasks> make_project installs."""
    return [{"cmd": cmd, "period_text": period, "output": output, "disabled": disabled}
            for cmd, period, output, disabled in TASKS]


def _path_dirs(path):
    """``path`` and its parents, deepest first, up to the first that exists."""
    made = []
    while not os.path.exists(path):
        made.append(path)
        parent = os.path.dirname(path)
        if parent == path:
            break
        path = parent
    return made


def _make_keys(key_dir, external, undo, say):
    """Both key pairs in ``key_dir`` unless present (BOINC keeps existing keys).

    ``external``: key_dir is outside the project, so what is created there is
    undone separately.
    """
    for d in reversed(_path_dirs(key_dir)):
        os.mkdir(d)
        if external:
            undo.add(d, lambda d=d: shutil.rmtree(d))
    for pair in KEY_PAIRS:
        private = os.path.join(key_dir, pair + "_private")
        public = os.path.join(key_dir, pair + "_public")
        if os.path.exists(private) and os.path.exists(public):
            say(1, "Using the existing key pair %s" % private)
            continue
        say(1, "Generating key pair %s_private/_public" % pair)
        for p in (private, public):
            if external and not os.path.exists(p):
                undo.add(p, lambda p=p: os.path.exists(p) and os.unlink(p))
        crypto.generate_key_pair(private, public)


class _Perms:
    """chgrp to the web server's group; remember what failed (not root)."""

    def __init__(self, gid):
        self.gid = gid
        self.failed = []

    def group(self, path, mode):
        try:
            os.chown(path, -1, self.gid)
        except PermissionError:
            self.failed.append(path)
        os.chmod(path, mode)


def project_dirs(spec):
    """The project's directories, parents first, as (relative path, mode,
    given to the web server's group)."""
    log_dir, pid_dir, tmp_dir = spec.host_dirs
    dirs = [(d, 0o755, False) for d in (
        "bin", "cgi-bin", "templates", "apps", "html", "html/user", "html/ops",
        "html/stats", "html/project", "sample_results", pid_dir)]
    # Written by the CGIs (Apache's group; time_stats_log by the scheduler) and
    # by the operator's daemons: setgid so files keep the group, group-writable.
    # tmp_HOST spools the files submitters upload (job_file.php); mail/ gets
    # mass_email.php's messages when no <email_command> is set.
    # kw_prefs/ holds the volunteers' keyword choices (kw_prefs.php).
    dirs += [(d, 0o2770, True) for d in (
        "upload", "html/cache", "time_stats_log", log_dir, tmp_dir, "mail", "kw_prefs")]
    # Remote job submission writes input files into download/ and job-level
    # output templates into templates/tmp/ (readable by all: Apache serves
    # download/).
    dirs += [(d, 0o2775, True) for d in ("download", "templates/tmp")]
    # Profiles (BOINC's html/user_profile): the static lists update_profile_pages
    # writes, and images/ where create_profile.php (Apache) stores pictures.
    dirs += [("html/user_profile", 0o755, False), ("html/user_profile/images", 0o2775, True)]
    return dirs


# html/project/: the project's own PHP settings.  boincpy reads none of them
# (config.xml holds its settings), but BOINC's PHP code requires them: its
# tools/upgrade runs html/ops/upgrade_db.php and update_translations.php,
# which include html/inc/util_ops.inc -> ../project/project.inc, and its pages
# include cache_parameters.inc and project_specific_prefs.inc.  Written so a
# boincpy project can be handed to BOINC's tools/upgrade (docs: "Moving a
# BOINC project to boincpy, and back"); the operator edits them there.
_PROJECT_INC = """<?php
// The project's settings for BOINC's PHP web code, written by boincpy's
// make_project (or bin/upgrade).  boincpy's own pages read config.xml, not
// this file; BOINC's pages and ops scripts read it once they serve the project.
require_once("../inc/util.inc");

define("PROJECT", %(long)s);
define("COPYRIGHT_HOLDER", %(long)s);
$master_url = project_config_val("master_url");
define("URL_BASE", $master_url);
define("IMAGE_PATH", "../user_profile/images/");
define("IMAGE_URL", "user_profile/images/");
define("PROFILE_PATH", "../user_profile/");
define("PROFILE_URL", "user_profile/");
define("LANGUAGE_FILE", "languages.txt");
define("SYS_ADMIN_EMAIL", "admin@" . parse_url($master_url, PHP_URL_HOST));
define("UOTD_ADMIN_EMAIL", SYS_ADMIN_EMAIL);
define("POST_REPORT_EMAILS", SYS_ADMIN_EMAIL);
define("TERMSOFUSE_FILE", "../../terms_of_use.txt");
define("DISABLE_PROFILES", true);
define("UNIQUE_USER_NAME", true);

function project_banner($title, $prefix, $is_main) {
    sample_navbar(secure_url_base(), get_logged_in_user(false), false);
    if ($title) {
        echo "<h2>$title</h2>\n";
    }
}

function project_footer($show_return, $show_date, $prefix) {
    echo "<p><center>&copy; " . gmdate("Y ") . COPYRIGHT_HOLDER . "</center>\n";
}

function show_profile_heading1() { return tra("Your personal background."); }
function show_profile_question1() { return tra("Tell us about yourself."); }
function show_profile_heading2() { return tra("Your opinions about %%1", PROJECT); }
function show_profile_question2() { return tra("Tell us your thoughts about %%1", PROJECT); }
function project_workunit($wu) {}
function project_user_summary($user) {}
function project_user_page_private($user) {}
function project_forum_post_rules() { return ""; }
?>
"""

_CACHE_PARAMETERS_INC = """<?php
// How long BOINC's PHP pages keep their cached copies (seconds), written by
// boincpy's make_project for BOINC's html/inc/cache.inc.
require_once("../inc/util_basic.inc");

define("TEAM_PAGE_TTL", 3600);
define("USER_PAGE_TTL", 3600);
define("USER_PROFILE_TTL", 3600);
define("TOP_PAGES_TTL", 0);
define("INDEX_PAGE_TTL", 3600);
define("STATUS_PAGE_TTL", 3600);
define("REMOTE_PROJECTS_TTL", 86400);
define("MAX_CACHE_USAGE", 10*MEGA);
define("CACHE_SIZE_CHECK_FREQ", 1000);
?>
"""

_PROJECT_SPECIFIC_PREFS_INC = """<?php
// No project-specific preferences (what BOINC's html/inc/prefs_project.inc
// calls), written by boincpy's make_project.
define("COLOR_PREFS", false);
define("GFX_CPU_PREFS", false);
define("APP_SELECT_PREFS", false);
define("NON_GRAPHICAL_PREF", false);
define("MAX_JOBS_PREF", false);
define("MAX_CPUS_PREF", false);

function project_specific_prefs_default() { return ""; }
function project_specific_prefs_parse($xml) { return new StdClass; }
function project_specific_prefs_show($prefs, $columns=false) {}
function project_specific_prefs_edit($prefs, $error=false) {}
function project_specific_prefs_parse_form(&$error) { return ""; }
?>
"""


def boinc_php_settings(long_name):
    """{path under the project: text} of html/project/'s files for BOINC's PHP
    code (see _PROJECT_INC)."""
    quoted = "'%s'" % long_name.replace("\\", "\\\\").replace("'", "\\'")
    return {"html/project/project.inc": _PROJECT_INC % {"long": quoted},
            "html/project/cache_parameters.inc": _CACHE_PARAMETERS_INC,
            "html/project/project_specific_prefs.inc": _PROJECT_SPECIFIC_PREFS_INC}


def build_tree(spec, stage, undo, say):
    """Create the project's files in ``stage`` (moved to the project root later).

    Every path written into a file is the final one (``spec.project_root``).
    Returns the paths whose group could not be set.
    """
    perms = _Perms(spec.httpd_gid)
    python = sys.executable
    S = lambda *p: os.path.join(stage, *p)

    say(1, "Creating directories")
    os.chmod(stage, 0o755)
    for d, mode, group in project_dirs(spec):
        _mkdir(S(d), mode)
        if group:
            perms.group(S(d), mode)
    # The buckets too, so uploads work whatever Apache's umask is.
    for i in range(FANOUT):
        for top, mode in (("upload", 0o2770), ("download", 0o2775)):
            d = S(top, format(i, "x"))
            os.mkdir(d)
            perms.group(d, mode)

    if not spec.web_only:
        inside = spec.key_dir == spec.path("keys") or \
            spec.key_dir.startswith(spec.project_root + os.sep)
        key_dir = S(os.path.relpath(spec.key_dir, spec.project_root)) if inside else spec.key_dir
        created = not os.path.exists(key_dir)
        _make_keys(key_dir, not inside, undo, say)
        if created:
            # The web server reads the public keys; private keys stay 0600.
            perms.group(key_dir, 0o750)
        # The ops pages' form-token secret (boincpy.web.csrf): the web
        # server reads it, Apache never serves keys/.
        secret = os.path.join(key_dir, ops_csrf.SECRET_FILE)
        if not os.path.exists(secret):
            if not inside:
                undo.add(secret, lambda p=secret: os.path.exists(p) and os.unlink(p))
            ops_csrf.create_secret(secret)
            perms.group(secret, 0o640)

    say(1, "Copying files")
    paths = cgi_paths(python)
    for d in COPIED_DIRS:
        if spec.web_only and d in ("bin", "cgi-bin"):
            continue
        copied = copy_tree_files(os.path.join(spec.srcdir, d), S(d), python,
                                 paths if d in FAST_START_DIRS else None)
        say(2, "  %s: %s" % (d, ", ".join(copied) or "(nothing)"))

    say(1, "Writing the scheduler list, project.xml and Apache configuration")
    # the master page (html/user/index.php) reads schedulers.txt on each
    # request; a web-only project has no scheduler to list
    if not spec.web_only:
        _write(S("html", "user", "schedulers.txt"), schedulers_txt(spec))
    _write(S("project.xml"), project_xml(spec))
    for rel, text in boinc_php_settings(spec.long_name).items():
        _write(S(rel), text)
    # the schema's revision, as BOINC's make_project records it (upgrades and
    # server_status.php read it)
    write_revision(stage, LATEST)
    # the Manager's project menu and the notices feed, sent in scheduler replies
    _write(S("gui_urls.xml"), GUI_URLS_XML)
    # the db_dump task's spec (its command names ../db_dump_spec.xml from tmp_HOST)
    _write(S("db_dump_spec.xml"), DEFAULT_SPEC)
    if spec.test_app:
        _write(S("templates", TEST_APP[0] + "_in"), TEST_APP_IN)
        _write(S("templates", TEST_APP[0] + "_out"), TEST_APP_OUT)
    _write(S(spec.short_name + ".httpd.conf"), httpd_conf(spec))
    if spec.persistent:
        _mkdir(S(server_mode.FCGI_DIR), 0o755)
        _write(S(server_mode.FCGI_DIR, server_mode.FCGI_SCRIPT),
               server_mode.fcgi_script_text(spec.project_root, spec.processes, python, paths), 0o755)
    _write(S(spec.short_name + ".cronjob"),
           "0,5,10,15,20,25,30,35,40,45,50,55 * * * * cd %s ; %s/bin/start --cron\n"
           % (spec.project_root, spec.project_root))
    _write(S(spec.short_name + ".readme"), readme(spec))
    if spec.ops_user:
        write_htpasswd(S("html", "ops", ".htpasswd"), spec.ops_user, spec.ops_passwd)
        perms.group(S("html", "ops", ".htpasswd"), 0o640)

    say(1, "Writing config.xml")
    write_config(S("config.xml"), config_options(spec), config_daemons(spec),
                 config_tasks(spec), mode=0o640)
    perms.group(S("config.xml"), 0o640)
    return [os.path.join(spec.project_root, os.path.relpath(p, stage))
            if p.startswith(stage + os.sep) else p for p in perms.failed]


def write_htpasswd(path, user, passwd):
    """Add or replace ``user`` in the htpasswd file ``path`` (bcrypt, via htpasswd -B).

    The password goes through htpasswd's stdin, never its command line.
    """
    if not shutil.which("htpasswd"):
        raise ToolError("htpasswd not found (Debian: apt-get install apache2-utils)")
    proc = subprocess.run(["htpasswd", "-n", "-i", "-B", user], input=passwd + "\n",
                          capture_output=True, text=True)
    line = proc.stdout.strip().splitlines()[0] if proc.stdout.strip() else ""
    if proc.returncode != 0 or not line.startswith(user + ":"):
        raise ToolError("htpasswd failed: %s" % (proc.stderr.strip() or proc.returncode))
    lines = []
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            lines = [ln.rstrip("\n") for ln in f if not ln.startswith(user + ":")]
    lines.append(line)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o640)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write("\n".join(ln for ln in lines if ln) + "\n")
    return path


def _url_path(url):
    """The path of ``url`` as an Apache Alias wants it: no trailing slash, '/' for the root."""
    path = urlsplit(url).path.rstrip("/")
    return path or "/"


def _refused_php(names):
    """The block refusing every PHP file of a directory but boincpy's pages
    ``names`` (text to append inside its <Directory>); none where ``names``
    is None (every .php there is boincpy's CGI)."""
    if names is None:
        return ""
    pattern = "^(?!%s).*\\.(php[0-9]?|phtml|phar|inc)$" % _any_of(names) if names \
        else "\\.(php[0-9]?|phtml|phar|inc)$"
    return ('\n    <FilesMatch "%s">\n        Require all denied\n    </FilesMatch>' % pattern)


def _any_of(names):
    """A regular expression matching exactly one of the file ``names``."""
    return "(?:%s)$" % "|".join(re.escape(n) for n in sorted(names))


def _cgi_files(names, default):
    """The FilesMatch pattern of the pages Apache runs as CGIs: ``default``
    (every .php), or with ``names`` only those (the other .php files keep
    the server's PHP handler)."""
    if names is None:
        return default
    return "^" + _any_of(names)


def httpd_base(spec, deny=()):
    """What every SHORT.httpd.conf of a project starts with, boincpy's or the
    one bin/upgrade --for_boinc writes for BOINC's programs: the project's
    URLs mapped to its directories, then nothing under the root served
    unless a later block grants it, and keys/, upload/ and ``deny``
    (absolute directories) never."""
    root = spec.project_root
    user_path = _url_path(spec.master_url)
    aliases = (("Alias", _url_path(spec.download_url), "download"),
               ("Alias", user_path.rstrip("/") + "/stats", "html/stats"),
               ("Alias", user_path.rstrip("/") + "/user_profile", "html/user_profile"),
               ("Alias", _url_path(spec.ops_url), "html/ops"),
               ("ScriptAlias", _url_path(spec.cgi_url), "cgi-bin"),
               ("Alias", user_path, "html/user"))
    lines = ['%s "%s" "%s/%s"' % (kind, url, root, rel) for kind, url, rel in aliases]
    lines += ["", "# Nothing of the project is served unless granted below: not keys/,",
              "# upload/, config.xml, logs.",
              '<Directory "%s">' % root, "    Options None", "    AllowOverride None",
              "    Require all denied", "</Directory>"]
    for path in [os.path.join(root, "keys"), os.path.join(root, "upload")] + list(deny):
        lines += ['<Directory "%s">' % path, "    Require all denied", "</Directory>"]
    return "\n".join(lines) + "\n"


def httpd_conf(spec, cgi_pages=None, refuse_other_php=False):
    """PROJECT/SHORT.httpd.conf for Apache 2.4 (Include it in the server config).

    ``cgi_pages`` ({"html/user": names, "html/ops": names}): a project taken
    over by bin/upgrade keeps its other PHP pages, so only boincpy's own
    pages are CGIs there and PHP's handler serves the rest; with
    ``refuse_other_php`` (the web server has no PHP) those are refused,
    since Apache would send them as their source."""
    root = spec.project_root
    user_path = _url_path(spec.master_url)
    cgi_pages = cgi_pages or {}
    user_cgis = _cgi_files(cgi_pages.get("html/user"), "\\.php$")
    ops_cgis = _cgi_files(cgi_pages.get("html/ops"), "\\.(php|cgi)$")
    php_note = user_refused = ops_refused = ""
    if cgi_pages and refuse_other_php:
        php_note = ("\n# The project's other .php pages are refused: this web server has no\n"
                    "# PHP (bin/upgrade found neither mod_php nor php-fpm) and would send\n"
                    "# them as their source.  Once PHP runs, bin/upgrade --web_only again.")
        user_refused = _refused_php(cgi_pages.get("html/user"))
        ops_refused = _refused_php(cgi_pages.get("html/ops"))
    elif cgi_pages:
        php_note = ("\n# The project's other .php pages are PHP's: its handler (mod_php or\n"
                    "# php-fpm, configured outside this file) serves them.")
    deny = () if spec.key_dir.startswith(root + os.sep) else (spec.key_dir,)
    return """\
## Apache 2.4 configuration of the BOINC project "{long}" ({short}),
## written by boincpy's make_project.  Include it in the server configuration:
##     Include {root}/{short}.httpd.conf
## Modules: alias, cgi (or cgid), env, mime, dir, auth_basic, authn_file,
## authz_core, authz_user.
##
##   {master_url}  html/user (master page; *.php files are Python CGIs)
##   {download_url}/  download/ (static files; byte ranges)
##   {master_url}stats/  html/stats (db_dump's statistics export)
##   {cgi_url}cgi  the scheduler, {cgi_url}file_upload_handler
##   {ops_url}  html/ops (HTTP basic auth: html/ops/.htpasswd)

{base}
# Downloads: static files only, never a script, never a listing, never
# compressed on the fly (the client resumes with Range requests).
<Directory "{root}/download">
    Options FollowSymLinks
    SetHandler none
    SetEnv no-gzip 1
    SetEnv no-brotli 1
    Require all granted
</Directory>

# Statistics export (the db_dump task): static files only.
<Directory "{root}/html/stats">
    Options None
    SetHandler none
    Require all granted
</Directory>

# Profiles: the lists update_profile_pages writes and the pictures
# (static files only).
<Directory "{root}/html/user_profile">
    Options None
    SetHandler none
    Require all granted
</Directory>

# Master page and the account web RPCs (get_project_config.php, ...): the
# .php names are fixed by the client; here they are Python CGIs.{php_note}
<Directory "{root}/html/user">
    Options ExecCGI FollowSymLinks
    DirectoryIndex index.php index.html
    SetEnv BOINC_PROJECT_DIR "{root}"
    <FilesMatch "{user_cgis}">
        SetHandler cgi-script
    </FilesMatch>
    Require all granted{user_refused}
</Directory>

# Project administration pages.
<Directory "{root}/html/ops">
    Options ExecCGI FollowSymLinks
    DirectoryIndex index.php index.cgi index.html
    SetEnv BOINC_PROJECT_DIR "{root}"
    <FilesMatch "{ops_cgis}">
        SetHandler cgi-script
    </FilesMatch>
    AuthType Basic
    AuthName "{short} administration"
    AuthUserFile "{root}/html/ops/.htpasswd"
    Require valid-user{ops_refused}
</Directory>

# Scheduler (cgi) and data server (file_upload_handler).
<Directory "{root}/cgi-bin">
    Options ExecCGI
    SetHandler cgi-script
    SetEnv BOINC_PROJECT_DIR "{root}"
    Require all granted
</Directory>

<Directory "{root}/html/cache">
    Require all denied
</Directory>
<FilesMatch "^\\.ht">
    Require all denied
</FilesMatch>
""".format(long=spec.long_name, short=spec.short_name, root=root,
           master_url=spec.master_url, download_url=spec.download_url,
           cgi_url=spec.cgi_url, ops_url=spec.ops_url, user_path=user_path,
           user_cgis=user_cgis, ops_cgis=ops_cgis, php_note=php_note,
           user_refused=user_refused, ops_refused=ops_refused,
           base=httpd_base(spec, deny)) + (
        "\n" + server_mode.persistent_block(spec.short_name, root, spec.processes)
        if spec.persistent else "")


def readme(spec):
    """PROJECT/SHORT.readme: what the operator does next."""
    root = spec.project_root
    steps = ["Steps to complete the installation of %s (%s):" % (spec.long_name, spec.short_name),
             "",
             "- Web server (Apache 2.4, as root): include the project's configuration,",
             "      echo 'Include %s/%s.httpd.conf' > /etc/apache2/conf-available/%s.conf"
             % (root, spec.short_name, spec.short_name),
             "      a2enmod cgi%s; a2enconf %s; apache2ctl graceful"
             % (" proxy_fcgi" if spec.persistent else "", spec.short_name),
             "  Apache runs as %s: its group reads config.xml and the public keys and"
             % spec.httpd_user,
             "  writes upload/ and %s/." % spec.host_dirs[0],
             "  Or, for a private test server on a loopback port:",
             "      python -m boincpy.tools.httpd start %s --port PORT" % root,
             "",
             "- Password for the administration pages (%s):" % spec.ops_url,
             "      htpasswd -B -c %s/html/ops/.htpasswd USERNAME" % root,
             "      chgrp %s %s/html/ops/.htpasswd; chmod 640 %s/html/ops/.htpasswd"
             % (spec.httpd_user, root, root),
             "",
             "- Crontab of %s (crontab -e):" % spec.user_name,
             "      0,5,10,15,20,25,30,35,40,45,50,55 * * * * cd %s ; %s/bin/start --cron"
             % (root, root),
             ""]
    if not spec.web_only:
        steps += ["- Platforms and applications (project.xml), in %s:" % root,
                  "      bin/xadd",
                  "  then put application files in apps/APP/VERSION/PLATFORM/ and run",
                  "      bin/update_versions",
                  ""]
    steps += ["Start, check and stop the project: bin/start, bin/status, bin/stop",
              "The cron line runs the daily tasks of config.xml (update_stats,",
              "antique_file_deleter; db_dump, the statistics export to",
              "%sstats/ described by db_dump_spec.xml, is disabled until you set" % spec.master_url,
              "its <disabled> to 0).",
              "",
              "Master URL (home page): %s" % spec.master_url,
              "Scheduler:              %s" % spec.scheduler_url,
              "Administration pages:   %s" % spec.ops_url,
              ""]
    return "\n".join(steps)


# ---------------------------------------------------------------------------
# The whole run

def _ask(question):
    try:
        answer = input("%s [y/N] " % question)
    except EOFError:
        return False
    return answer.strip().lower() in ("y", "yes")


def make_project(spec, out=None):
    """Create the project described by ``spec``; return the chgrp failures.

    On any error everything this run created is removed again and the error
    is raised (BoincpyError with the reason).
    """
    out = out or sys.stdout

    def say(level, text):
        if spec.verbose >= level:
            out.write(text + "\n")
            out.flush()

    say(1, "Creating project '%s' (short name '%s'):" % (spec.long_name, spec.short_name))
    for key in ("project_root", "project_host", "url_base", "master_url", "ops_url",
                "cgi_url", "key_dir", "db_name", "db_user", "db_host"):
        say(1, "%15s = %s" % (key.upper(), getattr(spec, key)))

    root = spec.project_root
    exists = os.path.lexists(root)
    if exists and not spec.delete_prev_inst:
        raise ToolError("project root %s already exists; use --delete_prev_inst (and "
                        "--drop_db_first) to replace it" % root)
    conn = None
    user_existed = False
    if not spec.no_db:
        conn = root_connection(spec)
    undo = _Undo()
    try:
        if conn is not None:
            user_existed = _check_database(spec, conn)
        if not spec.no_query and sys.stdin.isatty() and out.isatty():
            if exists and not _ask("Delete %s?" % root):
                raise ToolError("aborted")
            if not _ask("Continue?"):
                raise ToolError("aborted")

        parent = os.path.dirname(root)
        for d in reversed(_path_dirs(parent)):
            os.mkdir(d)
            undo.add(d, lambda d=d: os.rmdir(d))
        stage = os.path.join(parent, ".%s.make_project-%s" % (os.path.basename(root),
                                                              secrets.token_hex(4)))
        os.mkdir(stage)
        undo.add(stage, lambda: shutil.rmtree(stage, ignore_errors=True))

        if conn is not None:
            setup_database(spec, conn, user_existed, undo, say)
        else:
            say(1, "Not setting up the database (--no_db)")
        failed = build_tree(spec, stage, undo, say)

        if exists:
            say(1, "Replacing the previous installation in %s" % root)
            old = os.path.join(parent, ".%s.old-%s" % (os.path.basename(root),
                                                       secrets.token_hex(4)))
            os.rename(root, old)
            try:
                os.rename(stage, root)
            except OSError:
                os.rename(old, root)
                raise
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.rename(stage, root)
    except BaseException as exc:
        errors = undo.run(say)
        if errors:
            sys.stderr.write("make_project: could not remove: %s\n" % "; ".join(errors))
        if isinstance(exc, OSError):
            raise ToolError("can't create %s: %s" % (exc.filename or "the project",
                                                      exc.strerror or exc)) from None
        raise
    finally:
        if conn is not None:
            conn.close()

    compile_package(say)
    if failed:
        say(0, "\nNOTE: could not give these to group %s (the web server's group: it must\n"
               "read config.xml and the public keys, and write upload/ and the log\n"
               "directory).  As root, run\n"
               "    chgrp -R %s %s\n"
               "or add yourself to group %s and run make_project again.\n"
               % (spec.httpd_user, spec.httpd_user, " ".join(_collapse(failed)), spec.httpd_user))
    if spec.db_passwd_generated and not spec.no_db:
        say(1, "Database user %s has a generated password (in config.xml)." % spec.db_user)
    say(1, "\nDone creating project. Please view\n%s\nfor important additional "
           "instructions." % os.path.join(root, spec.short_name + ".readme"))
    warning = traversal_warning(spec.httpd_user, root, PACKAGE_DIR)
    if warning:
        say(0, warning)
    return failed


PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def untraversable_dirs(path, user):
    """The directories on the way to ``path`` (itself included, symbolic links
    followed) that ``user`` may not enter, as (directory, mode, chmod argument)
    from the top down.  Judged by the mode bits as the kernel does (owner,
    else group, else others); ACLs are not read."""
    pw = pwd.getpwnam(user)
    if pw.pw_uid == 0:
        return []
    groups = {pw.pw_gid} | {g.gr_gid for g in grp.getgrall() if user in g.gr_mem}
    chain = []
    for start in (os.path.abspath(path), os.path.realpath(path)):
        d = start
        while True:
            if d not in chain:
                chain.append(d)
            parent = os.path.dirname(d)
            if parent == d:
                break
            d = parent
    blocked = []
    for d in sorted(chain, key=lambda d: (d.count(os.sep), d)):
        try:
            st = os.stat(d)
        except OSError:
            continue
        if st.st_uid == pw.pw_uid:
            bit, who = stat.S_IXUSR, "u+x"
        elif st.st_gid in groups:
            bit, who = stat.S_IXGRP, "g+x"
        else:
            bit, who = stat.S_IXOTH, "o+x"
        if not st.st_mode & bit:
            blocked.append((d, stat.S_IMODE(st.st_mode), who))
    return blocked


def traversal_warning(user, root, package_dir):
    """The warning make_project ends with when the web server's ``user`` can't
    reach the project root or the boincpy package its CGIs import (Apache then
    fails with errors that don't say why), naming each directory and the
    chmod that fixes it; "" when all is well."""
    try:
        blocked = {"the project": untraversable_dirs(root, user),
                   "the boincpy package the CGIs run": untraversable_dirs(package_dir, user)}
    except KeyError:
        return ""               # no such user: plan() has said so already
    lines = []
    seen = set()
    for what, dirs in blocked.items():
        dirs = [b for b in dirs if b[0] not in seen]
        if not dirs:
            continue
        seen.update(b[0] for b in dirs)
        target = root if what == "the project" else package_dir
        lines.append("\nWARNING: the web server's user %s can't reach %s (%s):"
                     % (user, what, target))
        for d, mode, _ in dirs:
            lines.append("    %s (mode %04o) is not searchable by %s" % (d, mode, user))
        lines.append("Apache's scheduler, upload handler and pages will fail (errors such as "
                     "'Permission denied',\n'Server can't parse configuration file', 403 or "
                     "500).  To fix, run (as the directories' owner or root):")
        for who in ("u+x", "g+x", "o+x"):
            paths = [d for d, _, w in dirs if w == who]
            if paths:
                lines.append("    chmod %s %s" % (who, " ".join(paths)))
    return "\n".join(lines)


def compile_package(say=None):
    """Byte-compile the boincpy package the project's scripts run from, and
    write the classic CGIs' bundles (:mod:`boincpy.tools.cgi_bundles`).

    The CGIs run as the web server's user, which can't write __pycache__ next
    to the package: without compiled files every scheduler request would
    compile each module it imports again (tens of milliseconds).  Cheap when
    the files are up to date; a package the operator can't write is left alone.
    """
    package_dir = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if not os.access(package_dir, os.W_OK):
        if say:
            say(1, "Not byte-compiling %s (not writable): run python -m compileall on it "
                   "and python -m boincpy.tools.cgi_bundles so the CGIs start fast" % package_dir)
        return False
    compiled = compileall.compile_dir(package_dir, quiet=2)
    try:
        cgi_bundles.write_bundles()
    except OSError as exc:      # a __pycache__ another user made: the CGIs import as usual
        if say:
            say(1, "Not writing the CGIs' bundles (%s): run python -m boincpy.tools.cgi_bundles as "
                   "the package's owner so the CGIs start fast" % exc)
        return False
    return compiled


def _collapse(paths):
    """Drop paths inside another listed directory (chgrp -R covers them)."""
    dirs = [p for p in paths if os.path.isdir(p)]
    return [p for p in paths
            if not any(p != d and p.startswith(d + os.sep) for d in dirs)]


def run(argv):
    """Parse ``argv`` and create the project; returns the ProjectSpec."""
    spec = plan(argv)
    make_project(spec)
    return spec


def main(argv=None):
    """Entry point of bin/make_project."""
    argv = sys.argv[1:] if argv is None else argv
    try:
        run(argv)
        status = 0
    except BoincpyError as exc:
        sys.stdout.flush()
        sys.stderr.write("make_project: ERROR: %s\n" % exc.message)
        status = exc.exit_code or 1
    except KeyboardInterrupt:
        status = 130
    sys.stdout.flush()
    sys.exit(status)


if __name__ == "__main__":
    main()
