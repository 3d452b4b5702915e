"""bin/upgrade on a real BOINC C++ project, with work in flight.

BOINC's own tools/make_project (from a source tree where ``make`` built the
C++ server: BOINC_CXX_DIR) makes the project; a private Apache runs its
scheduler and upload handler as CGIs and BOINC's bin/start its C++ daemons
(feeder, transitioner, file_deleter, sample_bitwise_validator,
sample_dummy_assimilator).  Two stock 7.20.5 clients attach and finish jobs
with the C++ server; then they take jobs that wait on a gate file, and while
those run the operator runs boincpy's ``bin/upgrade --yes``, reloads Apache
and runs ``bin/start``.  The gate opens: the same clients upload to and report
to boincpy's handler and scheduler, and every job ends validated, credited and
assimilated by boincpy's daemons, the hosts keeping their ids and the
accounts their passwords.  Then the way back: ``bin/upgrade --for_boinc``
and BOINC's own tools/upgrade put BOINC's programs in place again, and BOINC's
scheduler and daemons take a new job through to the same hosts.

What stands in for parts this machine lacks: there is no PHP here, so the
steps of make_project that run PHP are done as they would be -- db_revision
holds the newest revision of the tree's html/ops/db_update.php (what
db_schemaversion.php prints), the app is registered with boincpy's xadd and
update_versions (BOINC's are PHP scripts; they write the same rows and files),
accounts are inserted as BOINC's create_account.php stores them (bcrypt of
the client's md5 hash, and the bare md5 hash of older projects), the clients
attach with their authenticators (as an account manager does), and the master
page is schedulers.txt saved as index.html.  The project's groups are set as
BOINC's guide asks (upload/ and the log directory writable by www-data).

Skipped without BOINC_CXX_DIR (CI has no C++ tree).  It takes about 160 s
(100 s to the end of the take-over, most of it the clients' first jobs with
the C++ server).  Not checked, for want of PHP: BOINC's PHP pages after the
way back.
"""

import hashlib
import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import time

import MySQLdb
import MySQLdb.cursors
import pytest

from conftest import TEST_BASE, drop_db_and_user, root_db_params

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CXX_DIR = os.environ.get("BOINC_CXX_DIR", "")
_CXX_NEEDS = ("sched/cgi", "sched/file_upload_handler", "sched/feeder", "sched/transitioner",
              "sched/sample_bitwise_validator", "sched/sample_dummy_assimilator",
              "tools/make_project", "tools/create_work", "tools/dir_hier_path")
_MISSING = [p for p in _CXX_NEEDS if not os.path.exists(os.path.join(CXX_DIR, p))] \
    if CXX_DIR else list(_CXX_NEEDS)

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not CXX_DIR, reason="BOINC_CXX_DIR is not set: no BOINC source tree "
                       "with the C++ server built to make the project to take over"),
    pytest.mark.skipif(bool(CXX_DIR and _MISSING), reason="BOINC_CXX_DIR=%s lacks %s (run "
                       "make there)" % (CXX_DIR, ", ".join(_MISSING))),
    pytest.mark.skipif(not shutil.which("boinc"), reason="boinc-client is not installed"),
    pytest.mark.skipif(os.geteuid() != 0, reason="Apache's children run as www-data"),
]

PLATFORM = "x86_64-pc-linux-gnu"
APP = "example_app"
# The app: upper-cases its input, as BOINC's example app does; an input that
# names a gate file waits until that file exists.  The second's sleep gives
# the job an elapsed time (credit is granted for time, none for none).
GATED_APP = r"""#!/bin/sh
link() { sed -n 's:.*<soft_link>\(.*\)</soft_link>.*:\1:p' "$1"; }
input="$(link in)"
gate="$(sed -n 's/^gate //p' "$input")"
n=0
while [ -n "$gate" ] && [ ! -e "$gate" ] && [ $n -lt 1200 ]; do sleep 0.5; n=$((n+1)); done
sleep 1
tr a-z A-Z < "$input" > "$(link out)"
echo 0 > boinc_finish_called
exit 0
"""
USERS = (  # name, e-mail, password, how BOINC's site stored it
    ("alice", "alice@example.com", "alice-pw", "bcrypt"),
    ("bob", "bob@example.com", "bob-pw", "md5"),
)
# Lines of a client's event log that mean a server broke the protocol.
CLIENT_LOG_PROBLEMS = ("Signature verification", "missing signature", "No close tag",
                       "Unrecognized XML", "[unparsed_xml]", "Permanently failed",
                       "Computation error", "Server error")


def _db_revision(cxx_dir):
    """What BOINC's html/ops/db_schemaversion.php prints: the newest revision
    of db_update.php's $db_updates."""
    with open(os.path.join(cxx_dir, "html", "ops", "db_update.php"),
              encoding="utf-8", errors="replace") as f:
        text = f.read()
    updates = text[text.index("$db_updates"):]
    return max(int(n) for n in re.findall(r"array\(\s*(\d+)\s*,", updates))


def _bcrypt_php(secret):
    # PHP's password_hash(): bcrypt, "$2y$" prefix
    import bcrypt
    return bcrypt.hashpw(secret.encode(), bcrypt.gensalt(10)).decode().replace("$2b$", "$2y$", 1)


class CxxProject:
    """A project made by BOINC's tools/make_project in a fresh directory under
    TEST_BASE, with its own database and database user."""

    def __init__(self):
        from boincpy.tools.httpd import free_port
        token = secrets.token_hex(4)
        os.makedirs(TEST_BASE, exist_ok=True)
        os.chmod(TEST_BASE, 0o755)
        self.base = tempfile.mkdtemp(prefix="cxx-" + token + "-", dir=TEST_BASE)
        os.chmod(self.base, 0o755)
        self.short = "cx" + token
        self.root = os.path.join(self.base, self.short)
        self.port = free_port()
        self.url = "http://127.0.0.1:%d/%s/" % (self.port, self.short)
        self.db_name, self.db_user = "cxt_" + token, "cxu_" + token
        self.db_passwd = secrets.token_hex(8)
        self.host = None
        self.gate = os.path.join(self.base, "gate")
        self.apache = None
        # BOINC's Python scripts start with "#!/usr/bin/env python" and need
        # MySQLdb: this interpreter answers to "python"
        shim = os.path.join(self.base, "pybin")
        os.makedirs(shim)
        with open(os.path.join(shim, "python"), "w") as f:
            f.write('#!/bin/sh\nexec "%s" "$@"\n' % sys.executable)
        os.chmod(os.path.join(shim, "python"), 0o755)
        self.env = dict(os.environ, PATH=shim + os.pathsep + os.environ.get("PATH", ""),
                        USER="root", PYTHONPATH=os.path.join(CXX_DIR, "py"))

    # -- making it ------------------------------------------------------------

    def root_db(self, db=None):
        params = dict(root_db_params(), autocommit=True, charset="utf8mb4")
        if db:
            params["db"] = db
        return MySQLdb.connect(cursorclass=MySQLdb.cursors.DictCursor, **params)

    def rows(self, sql, args=()):
        conn = self.root_db(self.db_name)
        try:
            cur = conn.cursor()
            cur.execute(sql, args)
            return list(cur.fetchall())
        finally:
            conn.close()

    def run(self, *cmd, check=True, cwd=None):
        proc = subprocess.run(list(cmd), cwd=cwd or self.root, env=self.env,
                              capture_output=True, text=True, timeout=300)
        if check:
            assert proc.returncode == 0, "%s: %s%s" % (cmd, proc.stdout[-3000:],
                                                       proc.stderr[-3000:])
        return proc

    def make(self):
        conn = self.root_db()
        try:
            cur = conn.cursor()
            cur.execute("CREATE USER %s@'localhost' IDENTIFIED BY %s",
                        (self.db_user, self.db_passwd))
            cur.execute("GRANT ALL ON `%s`.* TO %%s@'localhost'" % self.db_name,
                        (self.db_user,))
        finally:
            conn.close()
        self.run(sys.executable, "make_project", "--no_query", "--srcdir", CXX_DIR,
                 "--project_root", self.root, "--url_base",
                 "http://127.0.0.1:%d/" % self.port, "--db_name", self.db_name,
                 "--db_user", self.db_user, "--db_passwd", self.db_passwd,
                 # the C++ programs' log_HOST is the host name's (getfqdn may say localhost)
                 "--project_host", os.uname().nodename.split(".")[0],
                 self.short, "C++ project %s" % self.short, cwd=os.path.join(CXX_DIR, "tools"))
        from boincpy.config import load_config
        self.host = load_config(self.root).host
        # make_project runs html/ops/db_schemaversion.php for this (no PHP here)
        with open(os.path.join(self.root, "db_revision"), "w") as f:
            f.write("%d\n" % _db_revision(CXX_DIR))
        # BOINC's guide: the web server's group may write upload/ and the logs
        for d in ("upload", "log_" + self.host, "html/cache"):
            path = os.path.join(self.root, d)
            shutil.chown(path, group="www-data")
            os.chmod(path, os.stat(path).st_mode | 0o2070)
        # what make_project --test_app does, with this app instead of uc2
        for name in ("example_app_in", "example_app_out"):
            shutil.copy(os.path.join(CXX_DIR, "tools", name), os.path.join(self.root, "templates"))
        self._edit("project.xml", "</boinc>", "    <app>\n        <name>%s</name>\n"
                   "        <user_friendly_name>Example Application</user_friendly_name>\n"
                   "    </app>\n</boinc>" % APP)
        self._edit("config.xml", "    </daemons>",
                   "        <daemon>\n            <cmd>sample_bitwise_validator -d 3 --app %s"
                   "</cmd>\n        </daemon>\n        <daemon>\n            <cmd>"
                   "sample_dummy_assimilator -d 3 --app %s</cmd>\n        </daemon>\n"
                   "    </daemons>" % (APP, APP))
        app_dir = os.path.join(self.root, "apps", APP, "1.0", PLATFORM)
        os.makedirs(app_dir)
        program = os.path.join(app_dir, "%s_1.0_%s" % (APP, PLATFORM))
        with open(program, "w") as f:
            f.write(GATED_APP)
        os.chmod(program, 0o755)
        # BOINC's xadd and update_versions are PHP: boincpy's write the same rows
        for tool in ("xadd", "update_versions"):
            self.run(sys.executable, os.path.join(REPO, "bin", tool), "--project_dir",
                     self.root, *(["--noconfirm"] if tool == "update_versions" else []))
        shutil.copy(os.path.join(self.root, "html", "user", "schedulers.txt"),
                    os.path.join(self.root, "html", "user", "index.html"))
        self.add_users()

    def _edit(self, rel, old, new):
        path = os.path.join(self.root, rel)
        with open(path) as f:
            text = f.read()
        assert old in text, (rel, old)
        with open(path, "w") as f:
            f.write(text.replace(old, new, 1))

    def add_users(self):
        """The accounts as BOINC's create_account.php left them."""
        self.auth = {}
        conn = self.root_db(self.db_name)
        try:
            cur = conn.cursor()
            cur.execute("SET SESSION sql_mode = ''")    # BOINC's columns have no defaults
            for name, email, password, how in USERS:
                md5 = hashlib.md5((password + email.lower()).encode()).hexdigest()
                stored = _bcrypt_php(md5) if how == "bcrypt" else md5
                auth = secrets.token_hex(16)
                cur.execute("INSERT INTO user (create_time, email_addr, name, authenticator, "
                            "passwd_hash, cross_project_id, global_prefs, project_prefs, venue, "
                            "send_email, show_hosts) VALUES (%s, %s, %s, %s, %s, %s, '', '', '', "
                            "1, 1)", (int(time.time()), email, name, auth, stored,
                                      secrets.token_hex(16)))
                self.auth[name] = auth
        finally:
            conn.close()

    def add_job(self, name, gated=False):
        """Stage the input where BOINC's dir_hier_path puts it and create_work."""
        path = self.run(os.path.join(self.root, "bin", "dir_hier_path"),
                        "in_" + name).stdout.strip()
        with open(path, "w") as f:
            f.write(("gate %s\n" % self.gate if gated else "") + "input of %s\n" % name)
        self.run(os.path.join(self.root, "bin", "create_work"), "--appname", APP,
                 "--wu_name", name, "in_" + name)

    def add_boincpy_job(self, name):
        """A job made the operator's way once boincpy runs the project."""
        src = os.path.join(self.base, "in_" + name)
        with open(src, "w") as f:
            f.write("input of %s\n" % name)
        self.run(os.path.join(self.root, "bin", "stage_file"), "--copy", src)
        self.run(os.path.join(self.root, "bin", "create_work"), "--appname", APP,
                 "--wu_name", name, "in_" + name)

    # -- running it --------------------------------------------------------------

    def start_apache(self):
        from boincpy.tools.httpd import PrivateApache
        self.apache = PrivateApache(self.root, self.port)
        self.apache.start()

    def daemon_pids(self):
        pid_dir = os.path.join(self.root, "pid_" + self.host)
        pids = {}
        for name in sorted(os.listdir(pid_dir)) if os.path.isdir(pid_dir) else ():
            if name.endswith(".pid"):
                with open(os.path.join(pid_dir, name)) as f:
                    text = f.read().strip()
                if text.isdigit():
                    pids[name[:-4]] = int(text)
        return pids

    def status(self):
        return self.run(os.path.join(self.root, "bin", "status"), "-v").stdout

    def remove(self, keep):
        stop = os.path.join(self.root, "bin", "stop")
        if os.path.exists(stop):
            self.run(stop, check=False)
        if self.apache is not None:
            self.apache.stop(graceful=False)
        try:
            from boincpy.config import load_config
            key = load_config(self.root).shmem_key
            subprocess.run(["ipcrm", "-M", str(key)], capture_output=True)
        except Exception:
            pass
        drop_db_and_user(root_db_params(), self.db_name, self.db_user)
        if keep:
            sys.stderr.write("C++-made project kept in %s\n" % self.root)
        else:
            shutil.rmtree(self.base, ignore_errors=True)


@pytest.fixture
def cxx_project(request):
    failed_before = request.session.testsfailed
    project = CxxProject()
    yield project
    project.remove(keep=request.session.testsfailed > failed_before)


@pytest.fixture
def clients(request):
    from boincpy.testing.client import StockClient
    failed_before = request.session.testsfailed
    made = {}

    def make(name):
        # one CPU each: a client holds one job (est. 1000 s) at a time
        made[name] = StockClient(options={"ncpus": 1}).start()
        return made[name]
    yield make
    for client in made.values():
        client.close(failed=request.session.testsfailed > failed_before)


def _running(pid):
    """True while process ``pid`` runs (a zombie has exited)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def _tasks(client, prefix):
    return [t for t in client.tasks() if t.get("name", "").startswith(prefix)]


def _executing(client, prefix):
    return [t for t in _tasks(client, prefix)
            if t.get("active_task_state") == "EXECUTING"]


def _wait(what, predicate, timeout, nudge=None, every=8.0):
    """Poll ``predicate``; every ``every`` s call ``nudge`` (a user-requested
    project update: the client's next scheduler RPC without its back-off)."""
    deadline = time.monotonic() + timeout
    last = time.monotonic()
    while True:
        value = predicate()
        if value:
            return value
        now = time.monotonic()
        if now > deadline:
            raise AssertionError("timed out after %ds waiting for %s" % (timeout, what))
        if nudge and now - last > every:
            nudge()
            last = now
        time.sleep(0.5)


def test_take_over_a_real_cxx_project_with_jobs_in_flight(cxx_project, clients):
    p = cxx_project
    timings = {}
    t0 = time.monotonic()
    p.make()
    p.start_apache()
    p.run(os.path.join(p.root, "bin", "start"))
    timings["make_project, Apache, C++ daemons"] = time.monotonic() - t0

    # -- with BOINC's C++ server: two jobs done, three in flight or unsent --------
    t1 = time.monotonic()
    for n in range(2):
        p.add_job("fast_%d" % n)
    a, b = clients("a"), clients("b")
    a.project_attach(p.url, p.auth["alice"])
    b.project_attach(p.url, p.auth["bob"])
    hostids = {c: c.wait_for(lambda c=c: c.hostid(p.url), 90, "a host id from the C++ "
                             "scheduler") for c in (a, b)}
    assert len(set(hostids.values())) == 2

    def nudge_all():
        for c in (a, b):
            c.project_op(p.url, "update")

    def fast_done():
        rows = p.rows("SELECT assimilate_state FROM workunit WHERE name LIKE 'fast%%'")
        return len(rows) == 2 and all(r["assimilate_state"] == 2 for r in rows)
    _wait("the C++ daemons to validate and assimilate fast_0 and fast_1", fast_done, 240,
          nudge_all)
    fast = p.rows("SELECT * FROM result WHERE name LIKE 'fast%%'")
    assert {(r["server_state"], r["outcome"], r["validate_state"]) for r in fast} == {(5, 1, 1)}

    for n in range(3):
        p.add_job("gated_%d" % n, gated=True)

    def each_runs_a_gated_job():
        waiting = [c for c in (a, b) if not _executing(c, "gated")]
        for c in waiting:
            if not _tasks(c, "gated") and time.monotonic() - last_nudge.get(c, 0) > 8:
                c.project_op(p.url, "update")
                last_nudge[c] = time.monotonic()
        return not waiting
    last_nudge = {}
    _wait("each client running a job from the C++ scheduler", each_runs_a_gated_job, 240)
    gated = {r["name"]: r for r in p.rows("SELECT * FROM result WHERE name LIKE 'gated%%'")}
    in_progress = [r for r in gated.values() if r["server_state"] == 4]
    assert {r["hostid"] for r in in_progress} == set(hostids.values())
    assert sum(r["server_state"] == 2 for r in gated.values()) == 1      # one not sent yet
    hosts_before = {h["id"]: h for h in p.rows("SELECT * FROM host")}
    users_before = {u["name"]: u for u in p.rows("SELECT * FROM user")}
    cxx_pids = p.daemon_pids()
    assert len(cxx_pids) == 5, cxx_pids
    timings["C++ server: 2 jobs done, 2 running, 1 unsent"] = time.monotonic() - t1

    # -- the take-over, as an operator runs it ----------------------------------------------
    t2 = time.monotonic()
    switched_at = int(time.time())
    proc = p.run(sys.executable, os.path.join(REPO, "bin", "upgrade"), "--yes", p.root)
    out = proc.stdout
    assert "a project made by BOINC C++" in out, out
    assert "says revision %d" % _db_revision(CXX_DIR) in out
    assert "Stopping the project (bin/stop)" in out
    # BOINC's tasks (run_in_ops ./NAME.php) are boincpy's programs but one
    # make_project leaves disabled; no daemon stays BOINC's
    assert "MISSING" not in out and "stay the project's own programs" not in out, out
    assert "run_in_ops can't run (" in out and ": team_import.php (disabled)\n" in out, out
    assert "Run `bin/start' to restart the project." in out
    # the database BOINC's make_project made is boincpy's schema now
    proc = p.run(sys.executable, os.path.join(REPO, "bin", "upgrade"), "--check_schema", p.root,
                 check=False)
    assert proc.returncode == 0 and "The database matches boincpy's schema" in proc.stdout, \
        proc.stdout + proc.stderr
    # BOINC's bin/stop stopped BOINC's daemons (it signals them; they exit soon after)
    _wait("BOINC's daemons to exit", lambda: not [pid for pid in cxx_pids.values()
                                                   if _running(pid)], 30)
    p.apache.stop()                           # Apache reloaded with boincpy's configuration
    p.start_apache()
    p.run(os.path.join(p.root, "bin", "start"))
    status = p.status()
    for cmd in ("feeder -d 3", "transitioner -d 3", "file_deleter -d 3",
                "sample_bitwise_validator -d 3 --app %s" % APP,
                "sample_dummy_assimilator -d 3 --app %s" % APP):
        line = [ln for ln in status.splitlines() if ln.rstrip().endswith(cmd)]
        assert line and " running " in line[0], status
    for name, pid in p.daemon_pids().items():  # boincpy's daemons, not BOINC's
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            assert os.path.join(p.root, "bin", name).encode() in f.read() and \
                pid not in cxx_pids.values(), name
    timings["bin/upgrade, Apache reload, bin/start"] = time.monotonic() - t2

    # -- the same clients carry on against boincpy ------------------------------------
    t3 = time.monotonic()
    p.add_boincpy_job("new_0")         # and a job made with boincpy's tools
    with open(p.gate, "w") as f:
        f.write("open\n")

    def all_done():
        rows = p.rows("SELECT assimilate_state FROM workunit")
        return len(rows) == 6 and all(r["assimilate_state"] == 2 for r in rows)
    _wait("every job validated and assimilated by boincpy's daemons", all_done, 300,
          nudge_all, every=10)
    timings["boincpy: 4 jobs sent or reported, validated, assimilated"] = time.monotonic() - t3

    results = {r["name"]: r for r in p.rows("SELECT * FROM result")}
    assert len(results) == 6
    for name, r in results.items():
        assert (r["server_state"], r["outcome"], r["validate_state"]) == (5, 1, 1), name
        assert r["hostid"] in hostids.values()
    for name in list(gated) + ["new_0_0"]:
        r = results[name]
        assert r["received_time"] >= switched_at, name      # reported to boincpy
        assert r["granted_credit"] > 0, name
    for name, r in gated.items():
        if r["server_state"] == 4:                           # sent by C++, same host
            assert results[name]["hostid"] == r["hostid"]
    for w in p.rows("SELECT * FROM workunit"):
        assert w["canonical_resultid"] and w["canonical_credit"] >= 0
    # the hosts keep their ids (no new host), their credit grew
    hosts = {h["id"]: h for h in p.rows("SELECT * FROM host")}
    assert set(hosts) == set(hosts_before) == set(hostids.values())
    for c, hostid in hostids.items():
        assert c.hostid(p.url) == hostid
        assert hosts[hostid]["rpc_seqno"] > hosts_before[hostid]["rpc_seqno"]
        assert hosts[hostid]["total_credit"] > hosts_before[hostid]["total_credit"]
    users = {u["name"]: u for u in p.rows("SELECT * FROM user")}
    for name in ("alice", "bob"):
        assert users[name]["total_credit"] > users_before[name]["total_credit"]
        assert users[name]["authenticator"] == p.auth[name]
    # the account RPC answers with the passwords BOINC's site stored
    for name, email, password, _ in USERS:
        reply = a.lookup_account(p.url, email, password)
        assert reply.authenticator == p.auth[name], reply.output
    assert a.lookup_account(p.url, "alice@example.com", "not-her-password").error
    assert a.get_project_config(p.url).get("name") == "C++ project %s" % p.short
    # the clients saw nothing wrong, before or after
    for c in (a, b):
        log = c.log_text()
        problems = [ln for ln in log.splitlines() if any(s in ln for s in CLIENT_LOG_PROBLEMS)]
        assert not problems, "\n".join(problems)

    # -- and back: bin/upgrade --for_boinc, then BOINC's own tools/upgrade -------------
    t4 = time.monotonic()
    proc = p.run(sys.executable, os.path.join(REPO, "bin", "upgrade"), "--for_boinc", "--yes",
                 p.root)
    assert "tools/upgrade %s" % p.root in proc.stdout, proc.stdout
    back = subprocess.run([sys.executable, "upgrade", p.root], cwd=os.path.join(CXX_DIR, "tools"),
                          env=p.env, input="y\n", capture_output=True, text=True, timeout=300)
    assert back.returncode == 0 and "Upgrading files... done" in back.stdout, \
        back.stdout[-3000:] + back.stderr[-3000:]
    from boincpy.tools.upgrade import is_elf
    for rel in ("cgi-bin/cgi", "cgi-bin/file_upload_handler", "bin/feeder", "bin/transitioner"):
        assert is_elf(os.path.join(p.root, rel)), rel
    p.apache.stop()
    p.start_apache()
    p.run(os.path.join(p.root, "bin", "start"))             # BOINC's, again
    boinc_pids = _wait("BOINC's daemons", lambda: len(p.daemon_pids()) == 5 and all(
        _running(pid) for pid in p.daemon_pids().values()) and p.daemon_pids(), 60)
    for name, pid in boinc_pids.items():
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            assert b"python" not in f.read().split(b"\0")[0], name
    p.add_job("back_0")

    def back_done():
        rows = p.rows("SELECT assimilate_state FROM workunit WHERE name = 'back_0'")
        return rows and rows[0]["assimilate_state"] == 2
    _wait("BOINC's programs to send, validate and assimilate back_0", back_done, 240,
          nudge_all, every=10)
    (r,) = p.rows("SELECT * FROM result WHERE name LIKE 'back_0%%'")
    assert (r["server_state"], r["outcome"], r["validate_state"]) == (5, 1, 1)
    assert r["hostid"] in hostids.values()
    assert {h["id"] for h in p.rows("SELECT id FROM host")} == set(hostids.values())
    for c, hostid in hostids.items():
        assert c.hostid(p.url) == hostid
    timings["back to BOINC: --for_boinc, tools/upgrade, a job done"] = time.monotonic() - t4
    timings["total"] = time.monotonic() - t0
    for what, secs in timings.items():
        sys.stdout.write("%-55s %6.1f s\n" % (what, secs))
