"""Shared fixtures: a real MariaDB/MySQL server, throwaway databases and projects.

Tests connect as root over the local socket (CI runs as the OS root) unless
BOINCPY_TEST_DB_HOST / _USER / _PASSWD / _SOCKET say otherwise.
"""

import os
import secrets
import sys
import time

import MySQLdb
import psutil
import pytest


def altered(value, n=1):
    """``value`` (str or bytes) with its last ``n`` characters each replaced by
    another: a wrong token, code or signature for a test, where a fixed
    suffix ("0000") would be the right one by chance once in 16**n runs."""
    tail = value[-n:]
    if isinstance(value, bytes):
        return value[:-n] + bytes(b ^ 1 for b in tail)
    return value[:-n] + "".join("1" if c == "0" else "0" for c in tail)


# The longest files, run first when the suite runs in parallel workers (make
# test: pytest-xdist, a file per worker at a time, --no-loadscope-reorder), so
# that none of them starts last and leaves the other workers idle; seconds
# each took in a serial run, on a 2-core machine.  The other files with tests
# marked slow come next, then the rest, each group in the usual order.  A
# name here that no longer exists is ignored.
LONGEST_FIRST = (
    "test_end_to_end.py",                   # 305
    "test_db_revision.py",                  # 232
    "test_readme.py",                       # 198
    "test_end_to_end_submit.py",            # 185
    "test_end_to_end_sched_features.py",    # 131
    "test_site_forged_posts.py",            # 100
    "test_persistent_stream.py",            # 98
    "test_upgrade.py",                      # 97
    "test_persistent.py",                   # 89
    "test_ops_browser.py",                  # 85
    "test_make_project.py",                 # 84
)


def pytest_collection_modifyitems(session, config, items):
    """Order the files as LONGEST_FIRST says (a stable sort: each file's
    tests stay together and in their order)."""
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    has_slow = {item.path.name for item in items if item.get_closest_marker("slow")}

    def key(item):
        name = item.path.name
        if name in rank:
            return (0, rank[name])
        return (1 if name in has_slow else 2, 0)
    items.sort(key=key)


def pytest_sessionstart(session):
    """Name what else keeps the machine busy as the run starts: the suite's
    timings (a client served again within seconds of a fault, a run within
    CI's limit) assume a quiet machine, and a leftover server or build
    eating a core is otherwise invisible in CI's output.  Only in the
    process that leads the run: the parallel workers (make test) would name
    each other."""
    if hasattr(session.config, "workerinput"):
        return
    procs = [p for p in psutil.process_iter(["pid", "name", "cmdline"])
             if p.pid != os.getpid()]
    for proc in procs:
        try:
            proc.cpu_percent(None)
        except psutil.Error:
            pass
    time.sleep(1.0)
    busy = []
    for proc in procs:
        try:
            busy.append((proc.cpu_percent(None), proc.pid,
                         " ".join(proc.info["cmdline"] or [proc.info["name"] or "?"])[:100]))
        except psutil.Error:
            pass
    busy = sorted((b for b in busy if b[0] >= 10.0), reverse=True)
    if busy:
        sys.stderr.write("busy before the tests (load %.1f): %s\n" % (
            os.getloadavg()[0], "; ".join("%d%% pid %d %s" % b for b in busy[:8])))
    # and what a run before this one left in the database server: its
    # connections and databases (tests drop their own)
    try:
        conn = MySQLdb.connect(connect_timeout=10, **root_db_params())
    except MySQLdb.Error as exc:
        sys.stderr.write("database server not reachable before the tests: %s\n" % (exc,))
        return
    try:
        cur = conn.cursor()
        cur.execute("SELECT COUNT(*) FROM information_schema.processlist WHERE id != "
                    "CONNECTION_ID() AND command != 'Daemon'")
        clients = cur.fetchone()[0]
        cur.execute("SELECT COUNT(*) FROM information_schema.schemata WHERE schema_name "
                    "LIKE 'bp%' OR schema_name LIKE 'boincpy%'")
        left = cur.fetchone()[0]
    finally:
        conn.close()
    if clients > 5 or left:
        sys.stderr.write("before the tests the database server has %d other connections and "
                         "%d test databases left\n" % (clients, left))


def root_db_params():
    """Connection keyword arguments for an administrative database account."""
    params = {
        "user": os.environ.get("BOINCPY_TEST_DB_USER", "root"),
        "passwd": os.environ.get("BOINCPY_TEST_DB_PASSWD", ""),
    }
    host = os.environ.get("BOINCPY_TEST_DB_HOST")
    if host:
        params["host"] = host
        params["port"] = int(os.environ.get("BOINCPY_TEST_DB_PORT", "3306"))
    else:
        params["unix_socket"] = os.environ.get(
            "BOINCPY_TEST_DB_SOCKET", "/run/mysqld/mysqld.sock")
    return params


@pytest.fixture(scope="session")
def db_root_params():
    """Root connection parameters; skips nothing: a missing server is a failure."""
    params = root_db_params()
    conn = MySQLdb.connect(**params)
    conn.close()
    return params


@pytest.fixture
def scratch_db_name(db_root_params):
    """A fresh, not yet created database name; dropped after the test."""
    name = "bpt_" + secrets.token_hex(4)
    yield name
    conn = MySQLdb.connect(**db_root_params)
    try:
        conn.cursor().execute("DROP DATABASE IF EXISTS `%s`" % name)
    finally:
        conn.close()


@pytest.fixture
def schema_db(db_root_params, scratch_db_name):
    """A function connecting to a fresh database with BOINC's schema loaded
    (as root, autocommit): one Database per call."""
    from boincpy.db import Database, schema
    root = MySQLdb.connect(**db_root_params)
    schema.create_database(root, scratch_db_name)
    schema.load_schema(root, scratch_db_name)
    root.close()
    opened = []

    def connect():
        conn = MySQLdb.connect(db=scratch_db_name, autocommit=True, charset="utf8mb4",
                               **db_root_params)
        opened.append(Database(conn, dict(db_root_params, db=scratch_db_name)))
        return opened[-1]
    yield connect
    for d in opened:
        d.close()


EXAMPLE_IN = """<input_template>
    <file_info>
        <number>0</number>
    </file_info>
    <workunit>
        <file_ref>
            <file_number>0</file_number>
            <open_name>in</open_name>
        </file_ref>
        <command_line>-cpu_time 30</command_line>
    </workunit>
</input_template>
"""

EXAMPLE_OUT = """<output_template>
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


@pytest.fixture
def mini_project(tmp_path, db_root_params, scratch_db_name):
    """A hand-built project (no make_project): config.xml, dirs, schema, one
    platform and the app 'example_app' with BOINC's example templates.

    The database is reached as the admin account, so tools can run in-process.
    """
    from boincpy.config import write_config
    from boincpy.db import schema

    root = tmp_path / "proj"
    for d in ("download", "upload", "templates", "keys", "apps", "cgi-bin", "log_test"):
        (root / d).mkdir(parents=True)
    (root / "templates" / "example_app_in").write_text(EXAMPLE_IN)
    (root / "templates" / "example_app_out").write_text(EXAMPLE_OUT)
    options = {
        "long_name": "Test project", "master_url": "http://127.0.0.1/test/",
        "download_url": "http://127.0.0.1/test/download",
        "upload_url": "http://127.0.0.1/test_cgi/file_upload_handler",
        "db_name": scratch_db_name, "db_user": db_root_params["user"],
        "db_passwd": db_root_params["passwd"],
        "db_host": ("%s:%d" % (db_root_params["host"], db_root_params["port"])
                    if "host" in db_root_params else ""),
        "db_socket": db_root_params.get("unix_socket", ""),
        "uldl_dir_fanout": 1024, "host": "localhost",
        "download_dir": str(root / "download"), "upload_dir": str(root / "upload"),
        "key_dir": str(root / "keys"), "app_dir": str(root / "apps"),
        "log_dir": str(root / "log_test"),
    }
    write_config(str(root), options)
    conn = MySQLdb.connect(**db_root_params)
    schema.create_database(conn, scratch_db_name)
    schema.load_schema(conn, scratch_db_name)
    cur = conn.cursor()
    cur.execute("INSERT INTO platform (create_time, name, user_friendly_name) "
                "VALUES (0, 'x86_64-pc-linux-gnu', 'Linux on x86_64')")
    cur.execute("INSERT INTO app (create_time, name, user_friendly_name) "
                "VALUES (0, 'example_app', 'Example app')")
    conn.commit()
    conn.close()
    return root


# ---------------------------------------------------------------------------
# Projects made by make_project, and a private Apache serving them.

TEST_BASE = "/tmp/boincpy-tests"     # www-data must traverse it (pytest's tmp_path is 0700)


class MadeProject:
    """A project created by make_project for one test.

    Attributes: root, base_dir (its parent, removed afterwards), short_name,
    long_name, cfg (load_config of it),
    url_base, master_url, cgi_url, scheduler_url, upload_url, download_url,
    ops_url, port (of the URLs; Apache is not started), db_name, db_user,
    db_passwd, ops_user, ops_passwd, db_root_params.
    """

    def __init__(self, spec, port, db_root_params):
        from boincpy.config import load_config
        self.spec = spec
        self.root = spec.project_root
        self.short_name = spec.short_name
        self.long_name = spec.long_name
        self.url_base = spec.url_base
        self.master_url = spec.master_url
        self.cgi_url = spec.cgi_url
        self.scheduler_url = spec.scheduler_url
        self.upload_url = spec.upload_url
        self.download_url = spec.download_url
        self.ops_url = spec.ops_url
        self.port = port
        self.db_name = spec.db_name
        self.db_user = spec.db_user
        self.db_passwd = spec.db_passwd
        self.ops_user = spec.ops_user
        self.ops_passwd = spec.ops_passwd
        self.db_root_params = db_root_params
        self.base_dir = os.path.dirname(self.root)
        self.cfg = load_config(self.root)

    def path(self, *parts):
        """A path under the project root."""
        return os.path.join(self.root, *parts)

    def bin(self, name):
        """Path of a program in the project's bin/."""
        return self.path("bin", name)

    def connect(self):
        """boincpy.db.connect as the project's own database user."""
        from boincpy.db import connect
        return connect(self.cfg)

    def reload(self):
        """Re-read config.xml into ``cfg`` (after a test edits it)."""
        from boincpy.config import load_config
        self.cfg = load_config(self.root)
        return self.cfg


def _db_root_args(params):
    args = ["--db_root_user", params["user"], "--db_root_passwd", params.get("passwd", "")]
    if "host" in params:
        args += ["--db_host", "%s:%d" % (params["host"], params.get("port", 3306))]
    elif params.get("unix_socket"):
        args += ["--db_socket", params["unix_socket"]]
    return args


def drop_db_and_user(db_root_params, db_name, db_user):
    """Drop a test database and a test database user (both hosts make_project grants)."""
    conn = MySQLdb.connect(**db_root_params)
    try:
        cur = conn.cursor()
        if db_name:
            cur.execute("DROP DATABASE IF EXISTS `%s`" % db_name)
        if db_user:
            for host in ("localhost", "127.0.0.1"):
                cur.execute("DROP USER IF EXISTS %s@%s", (db_user, host))
    finally:
        conn.close()


def make_test_project(db_root_params, extra_args=(), test_app=True, ops=True, port=None):
    """Run make_project (in-process) into a fresh directory under /tmp/boincpy-tests
    with a unique database, a unique database user with a random password, an
    ops password and URLs on a free loopback port (``--url_base
    http://127.0.0.1:PORT/``); return a MadeProject.  ``extra_args`` are
    appended to make_project's arguments.  remove_test_project() undoes it.
    """
    import io
    import tempfile
    from boincpy.tools import make_project
    from boincpy.tools.httpd import free_port

    os.makedirs(TEST_BASE, exist_ok=True)
    os.chmod(TEST_BASE, 0o755)
    token = secrets.token_hex(4)
    short = "bp" + token
    base = tempfile.mkdtemp(prefix=short + "-", dir=TEST_BASE)
    os.chmod(base, 0o755)
    db_name, db_user = "bpt_" + token, "bpu_" + token
    port = port or free_port()
    argv = ["--project_root", os.path.join(base, short),
            "--url_base", "http://127.0.0.1:%d/" % port,
            "--db_name", db_name, "--db_user", db_user,
            "--db_passwd", secrets.token_urlsafe(12), "--no_query"]
    argv += _db_root_args(db_root_params)
    if test_app:
        argv.append("--test_app")
    if ops:
        argv += ["--ops_user", "admin", "--ops_passwd", secrets.token_urlsafe(9)]
    argv += list(extra_args) + [short, "Test project %s" % token]
    try:
        spec = make_project.plan(argv)
        make_project.make_project(spec, out=io.StringIO())
    except BaseException:
        _remove(db_root_params, base, db_name, db_user)
        raise
    return MadeProject(spec, port, db_root_params)


def _remove(db_root_params, base, db_name, db_user):
    import shutil
    drop_db_and_user(db_root_params, db_name, db_user)
    shutil.rmtree(base, ignore_errors=True)


def remove_test_project(project):
    """Drop a MadeProject's database and database user, remove its directory."""
    _remove(project.db_root_params, project.base_dir, project.db_name, project.db_user)


@pytest.fixture
def project_factory(db_root_params):
    """make(extra_args=(), test_app=True, ops=True, port=None) -> MadeProject
    (see make_test_project); every project made is removed after the test."""
    made = []

    def make(extra_args=(), test_app=True, ops=True, port=None):
        project = make_test_project(db_root_params, extra_args, test_app, ops, port)
        made.append(project)
        return project

    yield make
    for project in made:
        remove_test_project(project)


@pytest.fixture
def made_project(project_factory):
    """A project made by make_project for this test (--test_app, ops password
    set, URLs on a free loopback port); see MadeProject."""
    return project_factory()


@pytest.fixture(scope="module")
def fresh_bundles():
    """The CGIs' bundles in the repository's package, written anew as
    make_project writes them (boincpy.tools.cgi_bundles.write_bundles), once
    per test file; each is replaced atomically, so CGIs of tests running in
    other workers meanwhile read whole ones."""
    from boincpy.tools import cgi_bundles
    cgi_bundles.write_bundles()


@pytest.fixture(scope="session")
def shared_project(db_root_params):
    """One made project for the whole session (like made_project): for tests
    that only read it, or add rows and files under names of their own."""
    project = make_test_project(db_root_params)
    yield project
    remove_test_project(project)


class RunningApache:
    """A private Apache serving a MadeProject on its port.

    Attributes: project (the MadeProject), server (boincpy.tools.httpd.PrivateApache),
    port, base_url (= url_base, 'http://127.0.0.1:PORT/'), master_url,
    scheduler_url, upload_url, download_url, ops_url, ops_user, ops_passwd,
    error_log, access_log; stop().
    """

    def __init__(self, project, server):
        self.project = project
        self.server = server
        self.port = project.port
        self.base_url = project.url_base
        self.master_url = project.master_url
        self.scheduler_url = project.scheduler_url
        self.upload_url = project.upload_url
        self.download_url = project.download_url
        self.ops_url = project.ops_url
        self.ops_user = project.ops_user
        self.ops_passwd = project.ops_passwd
        self.error_log = server.error_log
        self.access_log = server.access_log

    def stop(self, graceful=False):
        """Stop Apache (immediately unless ``graceful``); safe to call twice."""
        return self.server.stop(graceful=graceful)


@pytest.fixture
def apache(made_project, request):
    """A running private Apache serving ``made_project`` (children run as www-data).

    Parametrize it indirectly with "cgi" (the default) or "persistent" (the
    scheduler, upload handler and web RPCs in two FastCGI workers,
    bin/server_mode) to run a test in either mode."""
    from boincpy.tools.httpd import PrivateApache
    mode = getattr(request, "param", "cgi")
    if mode != "cgi":
        from boincpy.tools import server_mode
        server_mode.set_mode(made_project.root, mode, processes=2)
    server = PrivateApache(made_project.root, made_project.port)
    server.start()
    running = RunningApache(made_project, server)
    yield running
    server.stop(graceful=False)


@pytest.fixture(scope="session")
def shared_apache(shared_project):
    """A private Apache serving shared_project for the whole session (tests
    must not stop it)."""
    from boincpy.tools.httpd import PrivateApache
    server = PrivateApache(shared_project.root, shared_project.port)
    server.start()
    yield RunningApache(shared_project, server)
    server.stop(graceful=False)


# ---------------------------------------------------------------------------
# The stock BOINC client (boincpy.testing.client).

@pytest.fixture
def stock_client(request):
    """A started stock client (boinc + boinccmd) in a throwaway data directory
    on a free port; stopped afterwards, its directory kept (path printed) if
    the test failed."""
    from boincpy.testing.client import StockClient
    failed_before = request.session.testsfailed
    client = StockClient().start()
    yield client
    client.close(failed=request.session.testsfailed > failed_before)


# ---------------------------------------------------------------------------
# A real SMTP server for the site's e-mail (tests/site_util.Mailbox).

@pytest.fixture(scope="module")
def smtp():
    """aiosmtpd on 127.0.0.1 for the module (``port``, ``messages``, ``to(addr)``),
    messages parsed as email's compat32 Message."""
    from site_util import running_mailbox
    with running_mailbox() as box:
        yield box


@pytest.fixture(scope="module")
def inbox():
    """The same, messages parsed with email.policy.default (``last_body(addr)``)."""
    from site_util import INBOX_POLICY, running_mailbox
    with running_mailbox(INBOX_POLICY) as box:
        yield box
