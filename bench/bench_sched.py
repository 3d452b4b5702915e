#!/usr/bin/env python3
"""Scheduler throughput under Apache: boincpy's CGI, boincpy's persistent
mode (FastCGI workers behind mod_proxy_fcgi), BOINC's C++ CGI and BOINC's
C++ FastCGI build (sched/fcgi under mod_fcgid), side by side.

Builds a throwaway project (under /var/tmp, readable by www-data) with its own
database and database account, a private Apache (prefork + mod_cgi, children
running as www-data, no keep-alive: a new TCP connection per RPC; plus the
project's four FastCGI workers, boincpy.fcgi_pool, for the persistent mode) on
a free loopback port;
then replays the reference server's captured work-fetch request
(other_results stripped) from many simulated hosts (authenticator, hostid,
rpc_seqno and host CPID varied per host) and prints requests/s and
p50/p95/p99 latency per scenario, concurrency and server, with the ratio to
the C++ CGI measured in the same run (the servers alternate, in reverse order
every other round, each with its own feeder: bin/feeder, or the C++ feeder
for the C++ servers), the CPU each kind of process spent per RPC (steadier
than requests/s on a loaded machine) and the load average.  Each
server's measurement lasts at least ``--min_seconds``: a run of ``--requests``
that was shorter is taken as a warm-up and followed by a longer one.  The C++
server is the one built from BOINC's source outside this repository
(``--cxx_dir``, a tree where ``make`` has built sched/cgi and sched/feeder);
without it only boincpy's two modes are measured.  Where that tree also has
sched/fcgi (BOINC configured with libfcgi), it is measured as ``cxx_fcgi``:
as many processes as boincpy's workers (``--processes``, by default boincpy's
own default: one per CPU, at least 2) under
the same Apache's mod_fcgid, all started before each measurement (after its feeder, whose new job array a running process
would not see), and the summary gives the persistent mode's ratio to it
as well.  ``floor`` is the least any scheduler CGI in Python costs (started
as cgi-bin/cgi is, ``posix`` imported (not ``os``: neither does the scheduler's path), the request read, a fixed reply written:
FLOOR_BODY); its ratio to the C++ CGI is the most boincpy's classic CGI
could reach on the machine.

    no work requested            work_req_seconds 0
    work requested, none left    the array is empty
    one result reported          no work requested
    work sent, 100 slots         one job per reply, shmem_work_items 100
    work sent, 2000 slots        shmem_work_items 2000

``--profile`` prints where one CGI request's time goes instead (interpreter
start-up, imports, configuration, parsing, database, reply), what a
persistent request costs with no work and none available (round trips,
statements, CPU microseconds, in process) and the profile of persistent
requests (cProfile, no work requested and work sent); ``--memory N`` serves N
requests in one persistent process and prints its resident set size;
``--restart`` restarts Apache and prints the p95 latency of the first 100
no-work requests after it against that of the next ones (the persistent
mode's workers are up before the first: no stall), for each server.

    python bench/bench_sched.py [--requests N] [--min_seconds S] [--hosts H] [--conc 1,2,4]
                                [--scenarios a,b,...] [--servers cxx,cxx_fcgi,cgi,persistent,floor]
                                [--cxx_dir DIR] [--processes N] [--profile] [--memory N]
                                [--restart] [--keep]

Needs root (it creates the Apache config, a database account and files
owned by www-data), Debian's apache2, and MariaDB reachable as in the tests.
"""

import argparse
import os
import pwd
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)
sys.path.insert(0, os.path.join(REPO, "tests"))

import MySQLdb  # noqa: E402

from conftest import EXAMPLE_IN, EXAMPLE_OUT, root_db_params  # noqa: E402
from sched_env import FIXTURES, reference_app_version_xml  # noqa: E402
from boincpy import fcgi_pool  # noqa: E402
from boincpy.config import short_hostname, write_config  # noqa: E402
from boincpy.db import schema  # noqa: E402
from boincpy.testing.simclient import ReportedResult, UploadedFile  # noqa: E402
from boincpy.tools.server_mode import DEFAULT_PROCESSES  # noqa: E402

TITLES = {
    "no_work": "no work requested",
    "none_available": "work requested, none available",
    "report": "one result reported (no work requested)",
    "sent_100": "work sent, 1 job/reply, 100-slot array",
    "sent_2000": "work sent, 1 job/reply, 2000-slot array",
}
SCENARIOS = ("no_work", "none_available", "report", "sent_100", "sent_2000")
SERVERS = ("cxx", "cxx_fcgi", "cgi", "persistent", "floor")
CXX_SERVERS = ("cxx", "cxx_fcgi")
# the URL path of each server's scheduler
PATHS = {"cxx": "/bench_cgi/cgi_cxx", "cxx_fcgi": "/bench_cxx_fcgi/fcgi",
         "cgi": "/bench_cgi/cgi", "persistent": "/bench_fcgi/cgi",
         "floor": "/bench_cgi/cgi_floor"}

# The least any scheduler CGI in Python costs, as a server to measure: the
# interpreter started as make_project starts cgi-bin/cgi, os imported (every
# module needs it), the request read, a fixed reply written, os._exit.  No
# configuration, database or parse: its ratio to the C++ CGI bounds what
# boincpy's classic CGI can reach on this machine.
FLOOR_BODY = b"""import posix
length = int(posix.environ.get(b"CONTENT_LENGTH") or 0)
while length > 0:
    chunk = posix.read(0, length)
    if not chunk:
        break
    length -= len(chunk)
posix.write(1, b"Content-type: text/xml\\n\\n<scheduler_reply>\\n<request_delay>7</request_delay>\\n"
               b"</scheduler_reply>\\n")
posix._exit(0)
"""
# where the C++ FastCGI scheduler is copied in the project (a directory of
# the project's, as BOINC's scheduler finds config.xml in its parent)
CXX_FCGI_DIR = "cgi-cxx-fcgi"
PLATFORM = "x86_64-pc-linux-gnu"


# ---------------------------------------------------------------------------
# the project

class Project:
    """A throwaway project readable by www-data, with its own database account."""

    def __init__(self, hosts, cxx_dir=None, processes=DEFAULT_PROCESSES):
        self.cxx_dir = cxx_dir
        self.processes = processes
        self.cxx_fcgi = bool(cxx_dir) and os.path.exists(os.path.join(cxx_dir, "sched", "fcgi"))
        self.params = root_db_params()
        self.root = tempfile.mkdtemp(prefix="boincpy_bench_", dir="/var/tmp")
        os.chmod(self.root, 0o755)
        self.db_name = "bpb_" + secrets.token_hex(4)
        self.db_user = self.db_name
        self.db_passwd = secrets.token_hex(12)
        self.nhosts = hosts
        self.www = pwd.getpwnam("www-data")
        self.log_dir = os.path.join(self.root, "log_" + short_hostname())
        self._build()

    def _build(self):
        root = self.root
        for d in ("cgi-bin", "cgi-fcgi", "keys", "download", "upload", "templates", "html"):
            os.makedirs(os.path.join(root, d), mode=0o755)
        os.makedirs(self.log_dir, mode=0o775)
        os.chown(self.log_dir, self.www.pw_uid, self.www.pw_gid)
        # tmp_HOST as make_project makes it (the CGIs' config snapshot goes there)
        tmp_dir = os.path.join(root, "tmp_" + short_hostname())
        os.mkdir(tmp_dir)
        os.chown(tmp_dir, -1, self.www.pw_gid)
        os.chmod(tmp_dir, 0o2770)
        with open(os.path.join(root, "templates", "example_app_in"), "w") as f:
            f.write(EXAMPLE_IN)
        with open(os.path.join(root, "templates", "example_app_out"), "w") as f:
            f.write(EXAMPLE_OUT)
        from boincpy.crypto import generate_key_pair
        generate_key_pair(os.path.join(root, "keys", "code_sign_private"),
                          os.path.join(root, "keys", "code_sign_public"))
        # the scheduler CGI as make_project writes it
        from boincpy.tools.make_project import cgi_paths, compile_package, copy_tree_files
        copy_tree_files(os.path.join(REPO, "cgi-bin"), os.path.join(root, "cgi-bin"),
                        sys.executable, cgi_paths(sys.executable))
        compile_package()       # .pyc files and the CGIs' bundles, as make_project
        # the floor (FLOOR_BODY), started as the CGI is: its first three lines
        with open(os.path.join(root, "cgi-bin", "cgi"), "rb") as f:
            lines = f.readlines()
        head = b"".join(lines[:3] if lines[1].startswith(b"# make_project") else lines[:1])
        with open(os.path.join(root, "cgi-bin", "cgi_floor"), "wb") as f:
            f.write(head + FLOOR_BODY)
        os.chmod(os.path.join(root, "cgi-bin", "cgi_floor"), 0o755)
        # the persistent mode: a file named cgi handed to the workers
        with open(os.path.join(root, "cgi-fcgi", "cgi"), "w") as f:
            f.write("served by the FastCGI workers (boincpy.fcgi_pool)\n")
        from boincpy.tools.server_mode import write_fcgi_script
        self.fcgi_script = write_fcgi_script(root, self.processes)
        if self.cxx_dir:
            # BOINC's C++ scheduler, built from its source outside this repository
            shutil.copy(os.path.join(self.cxx_dir, "sched", "cgi"),
                        os.path.join(root, "cgi-bin", "cgi_cxx"))
        if self.cxx_fcgi:
            # and its FastCGI build, run by mod_fcgid
            os.makedirs(os.path.join(root, CXX_FCGI_DIR), mode=0o755)
            shutil.copy(os.path.join(self.cxx_dir, "sched", "fcgi"),
                        os.path.join(root, CXX_FCGI_DIR, "fcgi"))
        self.options = {
            "long_name": "Bench Project", "master_url": "http://127.0.0.1/bench/",
            "download_url": "http://127.0.0.1/bench/download",
            "upload_url": "http://127.0.0.1/bench_cgi/file_upload_handler",
            "db_name": self.db_name, "db_user": self.db_user, "db_passwd": self.db_passwd,
            "db_host": "", "db_socket": self.params.get("unix_socket", ""),
            "uldl_dir_fanout": 1024, "host": short_hostname(),
            "shmem_key": int(secrets.token_hex(4), 16),
            "min_sendwork_interval": 0, "daily_result_quota": 100000,
            "max_wus_to_send": 50, "send_result_abort": 1,
            "dont_generate_upload_certificates": 1, "ignore_upload_certificates": 1,
            "sched_debug_level": 3, "shmem_work_items": 100,
            # BOINC's C++ programs need these written out
            "key_dir": os.path.join(root, "keys"), "download_dir": os.path.join(root, "download"),
            "upload_dir": os.path.join(root, "upload"),
        }
        write_config(root, self.options)
        conn = MySQLdb.connect(**self.params)
        schema.create_database(conn, self.db_name)
        schema.load_schema(conn, self.db_name)
        schema.grant_user(conn, self.db_name, self.db_user, self.db_passwd)
        conn.close()
        db = self.connect()
        cur = db.cursor()
        cur.execute("INSERT INTO platform (create_time, name, user_friendly_name) VALUES "
                    "(0, %s, 'Linux on x86_64')", (PLATFORM,))
        cur.execute("INSERT INTO app (create_time, name, user_friendly_name) VALUES "
                    "(0, 'example_app', 'Example Application')")
        cur.execute("INSERT INTO app_version (create_time, appid, version_num, platformid, "
                    "xml_doc, plan_class) VALUES (0, 1, 100, 1, %s, '')",
                    (reference_app_version_xml(),))
        self.users = []
        nusers = max(1, self.nhosts // 10)
        for u in range(nusers):
            auth = secrets.token_hex(16)
            cur.execute("INSERT INTO user (create_time, email_addr, name, authenticator, "
                        "passwd_hash, cross_project_id, global_prefs, project_prefs, venue) "
                        "VALUES (1700000000, %s, %s, %s, 'x', %s, '', '', '')",
                        ("u%d@example.com" % u, "user%d" % u, auth, secrets.token_hex(16)))
            self.users.append((cur.lastrowid, auth))
        self.hosts = []
        for h in range(self.nhosts):
            userid, auth = self.users[h % nusers]
            cpid = secrets.token_hex(16)
            cur.execute("INSERT INTO host (create_time, userid, rpc_seqno, p_ncpus, "
                        "domain_name, misc, venue) VALUES (1700000000, %s, 0, 2, %s, '', '')",
                        (userid, "bench%d" % h))
            self.hosts.append([cur.lastrowid, auth, cpid, 1])
        db.commit()
        cur.execute("SELECT @@pid_file")
        pid_file = cur.fetchone()[0]
        db.close()
        # the database server's process, for its CPU per RPC
        try:
            with open(pid_file) as f:
                self.db_pid = int(f.read())
        except (OSError, ValueError):
            self.db_pid = None

    def connect(self):
        return MySQLdb.connect(db=self.db_name, autocommit=False, charset="utf8mb4",
                               **self.params)

    def set_option(self, **options):
        self.options.update(options)
        write_config(self.root, self.options)

    def add_jobs(self, n, state=2, hosts=None):
        """n workunits with one result each (UNSENT, or IN_PROGRESS on ``hosts``
        in turn); returns the result names."""
        db = self.connect()
        cur = db.cursor()
        cur.execute("SELECT COALESCE(MAX(id), 0) FROM workunit")
        base = cur.fetchone()[0] + 1
        now = int(time.time())
        wus, results, names = [], [], []
        for k in range(n):
            wid = base + k
            name = "bench_%d" % wid
            xml = ("<file_info>\n    <name>in_%d</name>\n    <url>http://127.0.0.1/bench/"
                   "download/1f/in_%d</url>\n    <md5_cksum>%s</md5_cksum>\n    <nbytes>75"
                   "</nbytes>\n</file_info>\n<workunit>\n<file_ref>\n    <file_name>in_%d"
                   "</file_name>\n    <open_name>in</open_name>\n</file_ref>\n</workunit>"
                   % (wid, wid, "0" * 32, wid))
            wus.append((wid, now, 1, name, xml, 3.6e12, 8.64e13, 5e8, 1e9, 604800, 1, 1, 3, 10,
                        6, "templates/example_app_out", 2147483647))
            out = "%s_0_r1_0" % name
            rxml = ("<file_info>\n    <name>%s</name>\n    <generated_locally/>\n"
                    "    <upload_when_present/>\n    <max_nbytes>5000000</max_nbytes>\n"
                    "    <url>http://127.0.0.1/bench_cgi/file_upload_handler</url>\n"
                    "</file_info>\n<result>\n    <file_ref>\n        <file_name>%s</file_name>"
                    "\n        <open_name>out</open_name>\n    </file_ref>\n</result>"
                    % (out, out))
            hostid, userid = 0, 0
            if hosts:
                hostid = hosts[k % len(hosts)]
                cur.execute("SELECT userid FROM host WHERE id = %s", (hostid,))
                userid = cur.fetchone()[0]
            results.append((now, wid, state, name + "_0", rxml, 1, hostid, userid,
                            now - 60 if hosts else 0, now + 604800 if hosts else 0,
                            1 if hosts else 0, k))
            names.append((hostid, name + "_0", out))
        cur.executemany(
            "INSERT INTO workunit (id, create_time, appid, name, xml_doc, rsc_fpops_est, "
            "rsc_fpops_bound, rsc_memory_bound, rsc_disk_bound, delay_bound, min_quorum, "
            "target_nresults, max_error_results, max_total_results, max_success_results, "
            "result_template_file, transition_time) VALUES "
            "(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)", wus)
        cur.executemany(
            "INSERT INTO result (create_time, workunitid, server_state, name, xml_doc_in, "
            "appid, hostid, userid, sent_time, report_deadline, app_version_id, random) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)", results)
        db.commit()
        db.close()
        return names

    def count(self, sql):
        db = self.connect()
        cur = db.cursor()
        cur.execute(sql)
        n = cur.fetchone()[0]
        db.close()
        return n

    def destroy(self):
        if self.cxx_dir:
            # the C++ feeder leaves its System V segment behind when stopped
            subprocess.run(["ipcrm", "-M", str(self.options["shmem_key"])],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        conn = MySQLdb.connect(**self.params)
        cur = conn.cursor()
        cur.execute("DROP DATABASE IF EXISTS `%s`" % self.db_name)
        for host in ("localhost", "127.0.0.1"):
            cur.execute("DROP USER IF EXISTS %s@%s", (self.db_user, host))
        conn.close()
        shutil.rmtree(self.root, ignore_errors=True)


# ---------------------------------------------------------------------------
# Apache and the feeder

def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Apache:
    """A private Apache: prefork, mod_cgi, children as www-data, no keep-alive."""

    MODULES = ("mpm_prefork", "authz_core", "alias", "mime", "cgi", "env", "proxy",
               "proxy_fcgi")

    def __init__(self, project, workers=8, processes=4):
        self.processes = processes
        self.pool_filled = False
        self.project = project
        self.workers = None
        self.dir = os.path.join(project.root, "apache")
        os.makedirs(self.dir)
        self.port = free_port()
        self.conf = os.path.join(self.dir, "httpd.conf")
        modules = self.MODULES + (("fcgid",) if project.cxx_fcgi else ())
        mods = "\n".join("LoadModule %s_module /usr/lib/apache2/modules/mod_%s.so" % (m, m)
                         for m in modules)
        with open(self.conf, "w") as f:
            f.write("""ServerRoot /etc/apache2
ServerName 127.0.0.1
Listen 127.0.0.1:%(port)d
PidFile %(dir)s/httpd.pid
Mutex file:%(dir)s default
DefaultRuntimeDir %(dir)s
User www-data
Group www-data
ErrorLog %(dir)s/error.log
LogLevel warn
%(mods)s
StartServers %(workers)d
MinSpareServers %(workers)d
MaxSpareServers %(max)d
MaxRequestWorkers 64
KeepAlive Off
Timeout 120
TypesConfig /etc/mime.types
ScriptAlias /bench_cgi/ %(root)s/cgi-bin/
Alias /bench_fcgi/ %(root)s/cgi-fcgi/
<Directory />
    Require all denied
</Directory>
<Directory %(root)s/cgi-bin>
    Options ExecCGI
    Require all granted
</Directory>
<Directory %(root)s/cgi-fcgi>
    SetHandler "proxy:unix:%(socket)s|fcgi://boincpy-bench/"
    ProxyFCGIBackendType GENERIC
    Require all granted
</Directory>
""" % {"port": self.port, "dir": self.dir, "mods": mods, "workers": workers,
                "max": workers * 2, "root": project.root,
                "socket": fcgi_pool.socket_path(project.root)})
            if project.cxx_fcgi:
                # BOINC's FastCGI scheduler: as many processes as boincpy's
                # workers, kept (no idle end, no request limit); spawning not
                # throttled, so that fill_cxx_fcgi starts them at once
                f.write("""FcgidIPCDir %(dir)s/fcgid
FcgidProcessTableFile %(dir)s/fcgid_shm
FcgidMaxProcessesPerClass %(processes)d
FcgidMinProcessesPerClass %(processes)d
FcgidMaxRequestsPerProcess 0
FcgidIdleTimeout 0
FcgidProcessLifeTime 0
FcgidSpawnScoreUpLimit 1000
FcgidInitialEnv BOINC_PROJECT_DIR %(root)s
Alias /bench_cxx_fcgi/ %(root)s/%(sub)s/
<Directory %(root)s/%(sub)s>
    SetHandler fcgid-script
    Options ExecCGI
    Require all granted
</Directory>
""" % {"dir": self.dir, "processes": processes, "root": project.root,
                    "sub": CXX_FCGI_DIR})
        self.start()

    def cxx_fcgi_pids(self):
        """Process ids of BOINC's FastCGI scheduler that mod_fcgid runs."""
        import psutil
        exe = os.path.join(self.project.root, CXX_FCGI_DIR, "fcgi")
        pids = []
        for proc in psutil.process_iter(["cmdline"]):
            if (proc.info["cmdline"] or [""])[0] == exe:
                pids.append(proc.pid)
        return pids

    def fill_cxx_fcgi(self, key):
        """All of mod_fcgid's processes of BOINC's FastCGI scheduler started,
        the old ones ended first: a process attaches the feeder's job array
        once, and a restarted C++ feeder makes a new one.  mod_fcgid starts
        one process at the first request and another only when a request
        found every process busy: bursts of no-work requests, many at once,
        until all are up (at most 30 s), so that no measurement waits for a
        start."""
        old = self.cxx_fcgi_pids()
        for pid in old:
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + 10
        while set(old) & set(self.cxx_fcgi_pids()) and time.monotonic() < deadline:
            time.sleep(0.05)
        reqs = Requests(self.project, key, want_work=False)
        deadline = time.monotonic() + 30
        while len(self.cxx_fcgi_pids()) < self.processes and time.monotonic() < deadline:
            run_load(self.port, reqs, 8 * self.processes, 4 * self.processes, warmup=0,
                     path=PATHS["cxx_fcgi"])
        n = len(self.cxx_fcgi_pids())
        if n < self.processes:
            print("(only %d of mod_fcgid's %d C++ FastCGI processes started)"
                  % (n, self.processes))

    def start_workers(self):
        """The persistent mode's workers, as bin/start runs them (its pid
        file included), all up before the first request."""
        os.makedirs(os.path.dirname(fcgi_pool.pid_path(self.project.root)), exist_ok=True)
        self.workers = subprocess.Popen([self.project.fcgi_script], start_new_session=True,
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        with open(fcgi_pool.pid_path(self.project.root), "w") as f:
            f.write("%d\n" % self.workers.pid)
        if not fcgi_pool.wait_ready(self.project.root, 60):
            raise RuntimeError("the FastCGI workers did not start")
        self.pool_filled = True

    def start(self):
        subprocess.run(["apache2", "-f", self.conf, "-k", "start"], check=True,
                       env={"PATH": os.environ.get("PATH", "/usr/sbin:/usr/bin")})
        self.pid = None
        for _ in range(100):
            try:
                with open(os.path.join(self.dir, "httpd.pid")) as f:
                    self.pid = int(f.read())
                socket.create_connection(("127.0.0.1", self.port), 1).close()
                break
            except (OSError, ValueError):
                time.sleep(0.05)

    def stop(self, workers=True):
        if self.pid:
            try:
                os.kill(self.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            for _ in range(100):
                try:
                    os.kill(self.pid, 0)
                except ProcessLookupError:
                    break
                time.sleep(0.05)
        if workers and self.workers is not None:
            self.workers.send_signal(signal.SIGHUP)
            self.workers.wait(60)
            self.workers = None


class Feeder:
    """bin/feeder for the project (None if this checkout has no feeder)."""

    def __init__(self, project):
        self.project = project
        self.proc = None

    def cpu_seconds(self):
        """CPU (user + system) the running feeder has used so far."""
        import psutil
        try:
            t = psutil.Process(self.proc.pid).cpu_times()
            return t.user + t.system
        except (psutil.Error, AttributeError):
            return 0.0

    @staticmethod
    def available():
        return os.path.exists(os.path.join(REPO, "bin", "feeder")) and \
            os.path.exists(os.path.join(REPO, "boincpy", "shmem.py"))

    def start(self, slots, cxx=False):
        self.stop()
        self.project.set_option(shmem_work_items=slots)
        log = open(os.path.join(self.project.log_dir, "feeder.log"), "a")
        if cxx:
            self.proc = subprocess.Popen(
                [os.path.join(self.project.cxx_dir, "sched", "feeder"), "-d", "2",
                 "--sleep_interval", "1"], cwd=self.project.root, stdout=log, stderr=log,
                env=dict(os.environ, BOINC_PROJECT_DIR=self.project.root))
            # its CGI waits up to 10 s for the ready flag: measure once it is set
            for _ in range(300):
                if self.proc.poll() is not None:
                    raise RuntimeError("the C++ feeder exited (see %s)" % log.name)
                if self.cxx_present() is not None:
                    return
                time.sleep(0.1)
            raise RuntimeError("the C++ feeder's array never got ready (see %s)" % log.name)
        self.proc = subprocess.Popen(
            [sys.executable, os.path.join(REPO, "bin", "feeder"), "-d", "2",
             "--sleep_interval", "1"], cwd=self.project.root, stdout=log, stderr=log,
            env=dict(os.environ, BOINC_PROJECT_DIR=self.project.root))
        sys.path.insert(0, REPO)
        from boincpy import shmem
        from boincpy.config import load_config
        cfg = load_config(self.project.root)
        for _ in range(200):
            try:
                shmem.attach(cfg, wait_ready=0.1).close()
                return
            except Exception:
                time.sleep(0.1)
        raise RuntimeError("the feeder did not make its job array (see %s)" % log.name)

    def cxx_present(self):
        """Jobs in the C++ feeder's array (its show_shmem), None until it is ready."""
        out = subprocess.run([os.path.join(self.project.cxx_dir, "sched", "show_shmem")],
                             cwd=self.project.root, capture_output=True, text=True,
                             env=dict(os.environ, BOINC_PROJECT_DIR=self.project.root)).stdout
        if "\nready: 1" not in out:
            return None
        # slot lines: "   N: ---" empty, "   N: PID ...", else a present job
        return sum(1 for line in out.split("\nready: 1", 1)[1].splitlines()
                   if re.match(r"\s*\d+ ", line))

    def wait_filled(self, n, cxx=False):
        if cxx:
            for _ in range(300):
                if (self.cxx_present() or 0) >= n:
                    return
                time.sleep(0.1)
            return
        from boincpy import shmem
        from boincpy.config import load_config
        cfg = load_config(self.project.root)
        for _ in range(300):
            array = shmem.attach(cfg)
            present = array.n_present
            array.close()
            if present >= n:
                return
            time.sleep(0.1)

    def stop(self):
        if self.proc is not None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.proc = None


# ---------------------------------------------------------------------------
# requests

def template():
    """The reference server's work-fetch request with its <other_results> removed."""
    with open(os.path.join(FIXTURES, "reference-server", "sched",
                           "02_work_fetch_job_sent.request.xml")) as f:
        text = f.read()
    return re.sub(r"<other_results>.*?</other_results>\n", "", text, flags=re.S)


def report_xml(name, out):
    """A reported success as the stock client writes it (boincpy.testing.simclient)."""
    return ReportedResult(
        name=name, final_cpu_time=29.87437, final_elapsed_time=31.084677, exit_status=0,
        state=5, version_num=100, final_peak_working_set_size=2666496,
        final_peak_swap_size=5115904, final_peak_disk_usage=14513, app_version_num=100,
        stderr_out="<stderr_txt>\napp started; called boinc_finish(0)\n</stderr_txt>\n",
        files=[UploadedFile(out, 75, 5000000, "8dc388b468905f99ad234e406283a250",
                            "http://127.0.0.1/bench_cgi/file_upload_handler")]).xml()


class Requests:
    """Request bodies from simulated hosts (round robin), each with its own
    authenticator, hostid, CPID and rising rpc_seqno."""

    def __init__(self, project, key, want_work):
        text = template()
        text = re.sub(r"<code_sign_key>.*?</code_sign_key>",
                      "<code_sign_key>\n%s</code_sign_key>" % key, text, flags=re.S)
        if not want_work:
            text = re.sub(r"<work_req_seconds>[^<]*<", "<work_req_seconds>0.000000<", text)
            text = re.sub(r"<cpu_req_secs>[^<]*<", "<cpu_req_secs>0.000000<", text)
        self.text = text
        self.hosts = project.hosts
        self.reports = {}
        self.lock = threading.Lock()
        self.i = 0

    def add_reports(self, names):
        for hostid, name, out in names:
            self.reports.setdefault(hostid, []).append((name, out))

    def next(self):
        with self.lock:
            host = self.hosts[self.i % len(self.hosts)]
            self.i += 1
            hostid, auth, cpid, seqno = host
            host[3] += 1
            report = ""
            pending = self.reports.get(hostid)
            if pending:
                name, out = pending.pop()
                report = report_xml(name, out)
        text = self.text
        text = text.replace("80b1ceedb8ec2b4333cf9040fb85d01a", auth, 1)
        text = text.replace("<hostid>1</hostid>", "<hostid>%d</hostid>" % hostid, 1)
        text = text.replace("<rpc_seqno>0</rpc_seqno>", "<rpc_seqno>%d</rpc_seqno>" % seqno, 1)
        text = re.sub(r"<host_cpid>[0-9a-f]*</host_cpid>", "<host_cpid>%s</host_cpid>" % cpid,
                      text, count=1)
        if report:
            text = text.replace("<app_versions>", report + "<app_versions>", 1)
        return text.encode()


HEADERS = ("User-Agent: BOINC client (x86_64-pc-linux-gnu 7.20.5)\r\nAccept: */*\r\n"
           "Content-Type: application/x-www-form-urlencoded\r\n")


def post(port, data, path="/bench_cgi/cgi"):
    """POST ``data``; return (status, body).  A bare socket rather than
    http.client, whose header parsing cost the client ~0.4 ms of CPU per
    request -- CPU taken from the servers on the same cores, so it counted
    against the faster one.  Request line, headers and body go in one send
    (sent apart, Nagle's algorithm would hold the body until the server's
    delayed ACK of the headers).  The reply ends where its length or its
    last chunk says, as for the stock client (libcurl), not at the close of
    the connection: Apache closes it only after its CGI child has exited,
    and waits ~47 ms (APR's kill-after-timeout poll) when the child was
    still ending."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=120)
    try:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.sendall(("POST %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n%sContent-Length: %d\r\n"
                      "Connection: close\r\n\r\n" % (path, port, HEADERS, len(data))).encode()
                     + data)
        try:
            return _read_reply(sock)
        except ValueError:      # a reply that is not HTTP: counted as an error
            return 0, b""
    finally:
        sock.close()


def _read_reply(sock):
    """(status, body) of the HTTP reply on ``sock``; ValueError if malformed."""
    buf = b""
    while b"\r\n\r\n" not in buf:
        chunk = sock.recv(262144)
        if not chunk:
            raise ValueError("connection closed before the reply's headers")
        buf += chunk
    head, _, buf = buf.partition(b"\r\n\r\n")
    head = head.lower()
    status = int(head[9:12])             # "HTTP/1.1 200 OK"
    length = _content_length(head)
    chunked = b"\r\ntransfer-encoding: chunked" in head
    while True:
        if chunked:
            body = _unchunk(buf)
            if body is not None:
                return status, body
        elif length is not None and len(buf) >= length:
            return status, buf[:length]
        chunk = sock.recv(262144)
        if not chunk:
            return status, buf
        buf += chunk


def _content_length(head):
    for line in head.split(b"\r\n"):
        if line.startswith(b"content-length:"):
            return int(line[15:])
    return None


def _unchunk(data):
    """The body of a chunked reply, or None while its last chunk has not come."""
    out, pos = [], 0
    while True:
        eol = data.find(b"\r\n", pos)
        if eol < 0:
            return None
        size = int(data[pos:eol].split(b";")[0], 16)
        if size == 0:
            return b"".join(out) if data.find(b"\r\n", eol + 2) >= 0 else None
        if len(data) < eol + 2 + size + 2:
            return None
        out.append(data[eol + 2:eol + 2 + size])
        pos = eol + 2 + size + 2


def run_load(port, requests, n, conc, warmup=5, path="/bench_cgi/cgi"):
    """Send ``n`` requests, ``conc`` at a time; returns the rate, latency
    percentiles and what the replies held.  The bodies are made first and
    each concurrent stream is its own process: threads of this one would
    share its interpreter lock, and wait for it between a reply and the next
    request -- a delay of the client's that would count against the faster
    server.  Stream k sends bodies k, k + conc, ...: with as many hosts as a
    multiple of ``conc`` (200 hosts; 1, 2 or 4 streams) a host's requests
    all go through one stream, in order."""
    for _ in range(warmup):
        post(port, requests.next(), path)
    bodies = [requests.next() for _ in range(n)]

    def stream(share):
        stats = {"errors": 0, "jobs": 0, "acks": 0, "down": 0, "lat": []}
        first = time.perf_counter()
        for data in share:
            t = time.perf_counter()
            try:
                status, body = post(port, data, path)
            except OSError:
                status, body = 0, b""
            stats["lat"].append(time.perf_counter() - t)
            if status != 200 or b"</scheduler_reply>" not in body:
                stats["errors"] += 1
            if b"<project_is_down/>" in body:
                stats["down"] += 1
            stats["jobs"] += body.count(b"<wu_name>")
            stats["acks"] += body.count(b"<result_ack>")
        stats["span"] = (first, time.perf_counter())
        return stats

    parts, figures = in_processes(stream, [bodies[k::conc] for k in range(conc)])
    stats = {k: sum(p[k] for p in parts) for k in ("errors", "jobs", "acks", "down")}
    return {**figures, **stats}


def in_processes(stream, shares):
    """Run ``stream(share)`` for each share in a process of its own, forked
    and then started together; each returns a dict with "lat" (latencies, s)
    and "span" (its first and last perf_counter).  Returns (those dicts,
    {"rps", "p50", "p95", "p99"} over them all, in ms)."""
    import multiprocessing
    fork = multiprocessing.get_context("fork")
    go = fork.Event()
    results = fork.Queue()

    def run(share):
        go.wait()
        results.put(stream(share))

    procs = [fork.Process(target=run, args=(share,)) for share in shares]
    for proc in procs:
        proc.start()
    go.set()
    parts = [results.get() for _ in procs]
    for proc in procs:
        proc.join()
    elapsed = max(p["span"][1] for p in parts) - min(p["span"][0] for p in parts)
    lat = sorted(x for p in parts for x in p["lat"])

    def pct(p):
        return lat[min(len(lat) - 1, int(p / 100.0 * len(lat)))] * 1000
    return parts, {"rps": len(lat) / elapsed, "p50": pct(50), "p95": pct(95), "p99": pct(99)}


def print_row(name, conc, server, r, cxx=None):
    ratio = "%5.2f" % (r["rps"] / cxx["rps"]) if cxx and server != "cxx" else "    -"
    print("%-40s %4d %-10s %7.1f %7.1f %7.1f %7.1f  %s   n %d jobs %d acks %d err %d "
          "down %d  feeder %.1f ms/RPC"
          % (TITLES[name], conc, server, r["rps"], r["p50"], r["p95"], r["p99"], ratio,
             r.get("requests", 0), r["jobs"], r["acks"], r["errors"], r["down"],
             r.get("feeder_cpu", 0.0)))
    if r.get("cpu"):
        print("%57s CPU ms/RPC: server side %.2f (%s); load %.1f" % (
            "", server_cpu(r), ", ".join("%s %.2f" % (k, v) for k, v in sorted(r["cpu"].items())
                                         if v > 0.005), r.get("load", 0.0)))
    sys.stdout.flush()


# ---------------------------------------------------------------------------
# profile of one request

def profile(project, key):
    """Where one no-work request's time goes (printed)."""
    env = dict(os.environ, CONTENT_LENGTH="0", REQUEST_METHOD="POST", REMOTE_ADDR="127.0.0.1")
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    req = Requests(project, key, want_work=True).next()
    env["CONTENT_LENGTH"] = str(len(req))
    cgi = os.path.join(project.root, "cgi-bin", "cgi")
    py = sys.executable

    import resource
    cpu = {}

    def best(cmd, stdin=b"", n=15, cwd=None):
        """Median wall time (ms); mean CPU time (user + system) in cpu[cmd]."""
        times = []
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        for _ in range(n):
            t = time.perf_counter()
            subprocess.run(cmd, input=stdin, stdout=subprocess.DEVNULL, env=env, cwd=cwd)
            times.append(time.perf_counter() - t)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu[tuple(cmd)] = ((after.ru_utime - before.ru_utime)
                           + (after.ru_stime - before.ru_stime)) / n * 1000
        times.sort()
        return times[len(times) // 2] * 1000

    # start-up as the CGI pays it: it leaves by os._exit (no interpreter shutdown)
    bare_cmd = [py, "-S", "-c", "import posix; posix._exit(0)"]
    t_bare = best(bare_cmd)
    t_site = best([py, "-c", "pass"])
    # what a CGI request imports: its database client is boincpy.db.wire
    # (lite loads MySQLdb._mysql only where wire can't connect)
    # (config.xml's snapshot, boincpy.parsed_config: the parse is not imported)
    # (not boincpy.sched.reports: a request that reports nothing does not load it)
    imports = ("import boincpy.sched.handler, boincpy.parsed_config, boincpy.log, boincpy.db.lite, "
               "boincpy.db.wire, boincpy.sched.hosts, boincpy.sched.reply, boincpy.resident")
    if Feeder.available():
        imports += ", boincpy.shmem"
    # as the CGI starts: python -S, site's paths added (make_project.cgi_paths)
    from boincpy.tools.make_project import cgi_paths
    # the CGI's first line: its modules from the bundle (boincpy.hot_path)
    imports_cmd = [py, "-S", "-c", "import sys; sys.path += %r; from boincpy.hot_path import "
                   "cgi_start; cgi_start('scheduler'); %s; import posix; posix._exit(0)"
                   % (cgi_paths(py) or [], imports)]     # and ends as the CGI does
    t_imports = best(imports_cmd)
    # the same imports timed inside the process (its CPU clock, which counts
    # the kernel's time for it too), median of many runs: the difference of
    # two processes' mean CPU above is noisy at this size (tick-sampled)
    clocked_cmd = [py, "-S", "-c", "import time; P = time.CLOCK_PROCESS_CPUTIME_ID; "
                   "c = time.clock_gettime(P); import sys; "
                   "sys.path += %r; from boincpy.hot_path import cgi_start; "
                   "cgi_start('scheduler'); %s; sys.stdout.write('%%d' %% "
                   "((time.clock_gettime(P) - c) * 1e6)); sys.stdout.flush(); "
                   "import posix; posix._exit(0)" % (cgi_paths(py) or [], imports)]
    in_process = sorted(int(subprocess.run(clocked_cmd, capture_output=True, env=env).stdout)
                        for _ in range(41))
    t_cgi = best([cgi], stdin=req, cwd=os.path.join(project.root, "cgi-bin"))
    out = subprocess.run(imports_cmd[:1] + ["-X", "importtime"] + imports_cmd[1:],
                         capture_output=True, text=True, env=env).stderr
    per_module = []
    for line in out.splitlines():
        m = re.match(r"import time:\s+(\d+) \|\s+(\d+) \|(\s*)(\S+)", line)
        if m and len(m.group(3)) <= 1:
            per_module.append((int(m.group(2)) / 1000.0, m.group(4)))
    per_module.sort(reverse=True)

    # in-process phases, timed around the real functions
    code = r"""
import io, os, sys, time
T = {}
def timed(owner, name, key):
    orig = getattr(owner, name)
    def wrap(*a, **k):
        s = time.perf_counter()
        try:
            return orig(*a, **k)
        finally:
            T[key] = T.get(key, 0.0) + time.perf_counter() - s
            T[key + '#'] = T.get(key + '#', 0) + 1
    setattr(owner, name, wrap)
from boincpy.resident import Resident
Resident(%(root)r).config()      # leaves the snapshot, if there was none
t0 = time.perf_counter()
cfg = Resident(%(root)r).config()
t1 = time.perf_counter()
from boincpy.sched import handler, request as rq, hosts, reports
from boincpy.sched import reply as rp
from boincpy.db import lite
from boincpy.log import SchedLog
data = open(%(req)r, 'rb').read()
t2 = time.perf_counter()
rq.parse_request(data)
t3 = time.perf_counter()
for name in ('execute', 'query', 'insert', 'query_value'):
    timed(lite.LiteDatabase, name, 'queries')
timed(lite, 'open_database', 'connect')
timed(handler, 'attach_job_array', 'attach')
timed(rp, 'write_reply', 'reply')
timed(handler, 'parse_request', 'parse')
timed(hosts, 'authenticate', 'auth')
timed(reports, 'handle_results', 'results')
timed(handler, '_choose_module', 'choose_import')
log = SchedLog(io.StringIO(), 3)
t4 = time.perf_counter()
out = handler.handle_request(cfg, data, {'REMOTE_ADDR': '127.0.0.1'}, log=log)
t5 = time.perf_counter()
ms = lambda x: '%%.2f' %% (x * 1000)
print(ms(t1 - t0), ms(t3 - t2), ms(t5 - t4), ms(T.get('connect', 0)), ms(T.get('queries', 0)),
      T.get('queries#', 0), ms(T.get('reply', 0)), ms(T.get('attach', 0)),
      ms(T.get('choose_import', 0)), ms(T.get('auth', 0)))
""" % {"root": project.root, "req": os.path.join(project.root, "profile_request.xml")}
    with open(os.path.join(project.root, "profile_request.xml"), "wb") as f:
        f.write(req)
    runs = []
    for _ in range(9):
        p = subprocess.run([py, "-c", code], capture_output=True, text=True, env=env)
        if p.returncode:
            print(p.stderr)
            return
        runs.append([float(x) for x in p.stdout.split()])
    runs.sort(key=lambda r: r[2])
    cfg_t, parse_t, handle_t, conn_t, q_t, nq, rep_t, attach_t, choose_t, auth_t = \
        runs[len(runs) // 2]
    c_cgi = cpu[(cgi,)]
    c_site = cpu[(py, "-c", "pass")]
    c_imports = cpu[tuple(imports_cmd)]
    c_bare = cpu[tuple(bare_cmd)]
    print("Profile of one request (work requested, none available; wall medians and "
          "mean CPU, ms):")
    print("                                                     wall    CPU")
    print("  whole CGI run (cgi-bin/cgi < request, its #!)    %6.1f %6.1f" % (t_cgi, c_cgi))
    print("  interpreter start-up and exit, as the CGI (-S)   %6.1f %6.1f" % (t_bare, c_bare))
    print("  (start-up with site and the venv's .pth hooks    %6.1f %6.1f)" % (t_site, c_site))
    print("  imports the request needs (beyond start-up)      %6.1f %6.1f"
          % (t_imports - t_bare, c_imports - c_bare))
    print("      the same, its CPU clock inside the process: median %.2f (quartiles "
          "%.2f-%.2f, %d runs)" % (in_process[len(in_process) // 2] / 1000.0,
                                   in_process[len(in_process) // 4] / 1000.0,
                                   in_process[3 * len(in_process) // 4] / 1000.0,
                                   len(in_process)))
    print("  the rest: configuration, database, request, reply       %6.1f"
          % (c_cgi - c_imports))
    for ms_, name in per_module[:8]:
        print("      %-40s %6.1f" % (name, ms_))
    print("  config.xml (its snapshot, as a CGI takes it)     %6.1f" % cfg_t)
    print("  parse the request (%5d bytes)                   %6.1f" % (len(req), parse_t))
    print("  handle_request, in process                       %6.1f" % handle_t)
    print("      attach the feeder's job array                %6.1f" % attach_t)
    print("      database connect (boincpy.db.wire)           %6.1f" % conn_t)
    print("      %2d queries (user/host lookups included)      %6.1f" % (nq, q_t))
    print("      importing job choice                         %6.1f" % choose_t)
    print("      reply                                        %6.1f" % rep_t)


# ---------------------------------------------------------------------------

def in_process_app(project):
    """boincpy.persistent's application for the project, in this process (as
    a persistent process runs it), and a function serving one request."""
    import io
    from boincpy.persistent import Application
    app = Application(project.root)

    def serve(data):
        environ = {"SCRIPT_NAME": "/bench_fcgi/cgi", "REQUEST_METHOD": "POST",
                   "CONTENT_LENGTH": str(len(data)), "REMOTE_ADDR": "127.0.0.1"}
        return app.respond(environ, io.BytesIO(data))
    return app, serve


def persistent_costs(project, key, n=1000, blocks=5):
    """What one persistent request costs, in process and warm, with no work
    requested and with work requested and none available (the feeder's
    array empty): round trips to MariaDB and the statements they carry, and
    CPU microseconds a request (median of ``blocks`` blocks of ``n / blocks``
    requests: the machine is shared).  Printed."""
    from jobs_helpers import count_round_trips
    app, serve = in_process_app(project)
    print("Persistent requests, in process and warm (CPU: median of %d blocks of %d):"
          % (blocks, n // blocks))
    for name in ("no_work", "none_available"):
        reqs = Requests(project, key, want_work=name == "none_available")
        # every host past its first request of the day (which reads its
        # host_app_version rows too)
        for _ in range(len(project.hosts) + 20):
            serve(reqs.next())
        db = app.resident.database(app.resident.config())
        inner = db.conn
        sent = count_round_trips(db)
        for _ in range(20):
            serve(reqs.next())
        db.conn = inner
        statements = sum(len(text.split(b";\n")) for text in sent) / 20.0
        cpu = []
        for _ in range(blocks):
            bodies = [reqs.next() for _ in range(n // blocks)]
            t = time.process_time()
            for data in bodies:
                serve(data)
            cpu.append((time.process_time() - t) / len(bodies) * 1e6)
        print("  %-40s %4.1f round trips, %4.1f statements, %5.0f us CPU a request"
              % (TITLES[name], len(sent) / 20.0, statements, sorted(cpu)[blocks // 2]))
        print("      round trips: %s" % " | ".join(
            text[:60].decode("utf-8", "replace").replace("\n", " ") for text in sent[:3]))
    app.resident.close()


def _print_profile(prof, title):
    import pstats
    print("\nProfile of persistent requests (%s; times below are totals over them):" % title)
    stats = pstats.Stats(prof)
    stats.sort_stats("cumulative").print_stats(25)
    stats.sort_stats("tottime").print_stats(15)


def persistent_profile(project, feeder, key, n=200):
    """cProfile of persistent requests in a warm process, with no work
    requested and getting a job, over ``n`` requests each so that one slow
    database round trip does not decide it."""
    import cProfile
    app, serve = in_process_app(project)
    reqs = Requests(project, key, want_work=False)
    for _ in range(len(project.hosts) + 20):     # warm, every host past its first RPC
        serve(reqs.next())
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(n):
        serve(reqs.next())
    prof.disable()
    _print_profile(prof, "no work requested; in-process, warm; %d requests profiled" % n)
    app.resident.close()

    project.add_jobs(2 * n + 100)
    feeder.start(100)
    feeder.wait_filled(50)
    app, serve = in_process_app(project)
    reqs = Requests(project, key, want_work=True)
    for _ in range(20):                     # warm: connection, array, caches
        serve(reqs.next())
    t, c = time.perf_counter(), time.process_time()
    for _ in range(n):
        serve(reqs.next())
    wall = (time.perf_counter() - t) / n * 1000
    cpu = (time.process_time() - c) / n * 1000
    prof = cProfile.Profile()
    prof.enable()
    jobs = 0
    for _ in range(n):
        jobs += serve(reqs.next()).count(b"<wu_name>")
    prof.disable()
    _print_profile(prof, "work sent, 1 job each, 100-slot array; in-process, warm; without "
                   "the profiler %.2f ms wall, %.2f ms CPU a request; %d requests profiled, "
                   "%d jobs sent" % (wall, cpu, n, jobs))
    app.resident.close()


def memory(project, feeder, key, n):
    """Serve n no-work requests in one persistent process; print RSS along the way."""
    import psutil
    feeder.start(100)
    app, serve = in_process_app(project)
    reqs = Requests(project, key, want_work=True)
    proc = psutil.Process()
    step = max(1, n // 10)
    print("Resident set size of one persistent process serving %d requests "
          "(work requested, none available):" % n)
    t = time.perf_counter()
    first = None
    for i in range(1, n + 1):
        out = serve(reqs.next())
        if b"</scheduler_reply>" not in out:
            raise RuntimeError(out[:300])
        if i == min(1000, step) or i % step == 0:
            rss = proc.memory_info().rss / 1048576
            if first is None:
                first = (i, rss)
            print("  after %7d requests: %7.1f MiB (%+.1f since request %d), %.0f req/s"
                  % (i, rss, rss - first[1], first[0], i / (time.perf_counter() - t)))
            sys.stdout.flush()
    app.resident.close()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=400,
                        help="measured requests per scenario and concurrency (default 400)")
    parser.add_argument("--min_seconds", type=float, default=3.0,
                        help="a measurement that took less is repeated with as many "
                             "requests as fill this long, the first run taken as a warm-up "
                             "(default 3)")
    parser.add_argument("--hosts", type=int, default=200, help="simulated hosts (default 200)")
    parser.add_argument("--conc", default="1,2,4", help="concurrency levels (default 1,2,4)")
    parser.add_argument("--scenarios", default=",".join(SCENARIOS),
                        help="comma-separated subset of: " + ", ".join(SCENARIOS))
    parser.add_argument("--servers", default=",".join(s for s in SERVERS if s != "floor"),
                        help="comma-separated subset of: " + ", ".join(SERVERS))
    parser.add_argument("--cxx_dir", default=os.environ.get("BOINC_CXX_DIR", ""),
                        help="BOINC source tree with sched/cgi and sched/feeder built, "
                             "and sched/fcgi for the FastCGI build's figures (default "
                             "$BOINC_CXX_DIR); without it, no C++ figures")
    parser.add_argument("--rounds", type=int, default=1,
                        help="alternate the servers this many times per row (default 1)")
    parser.add_argument("--processes", type=int, default=DEFAULT_PROCESSES,
                        help="FastCGI processes of each persistent server: boincpy's workers "
                             "and BOINC's FastCGI build under mod_fcgid (default: boincpy's, "
                             "one per CPU and at least 2, here %d)" % DEFAULT_PROCESSES)
    parser.add_argument("--profile", action="store_true", help="profile one request only")
    parser.add_argument("--memory", type=int, default=0, metavar="N",
                        help="RSS of one persistent process over N requests only")
    parser.add_argument("--restart", action="store_true",
                        help="p95 of the first 100 requests after an Apache restart vs the "
                             "next ones, only")
    parser.add_argument("--keep", action="store_true", help="keep the project and database")
    args = parser.parse_args(argv)
    if os.geteuid() != 0:
        parser.error("run as root (Apache config, database account, www-data files)")
    if not Feeder.available():
        print("This checkout has no feeder (bin/feeder, boincpy/shmem.py): the scheduler "
              "answers 'feeder not running' to everything; nothing to measure.")
        return 1
    servers = [x for x in args.servers.split(",") if x]
    cxx_dir = args.cxx_dir
    if cxx_dir and not os.path.exists(os.path.join(cxx_dir, "sched", "cgi")):
        parser.error("--cxx_dir %s: no sched/cgi built there" % cxx_dir)
    if not cxx_dir and "cxx" in servers:
        print("No C++ build (--cxx_dir): measuring boincpy only, without ratios.")
        servers.remove("cxx")
    if "cxx_fcgi" in servers and not (cxx_dir and os.path.exists(
            os.path.join(cxx_dir, "sched", "fcgi"))):
        if cxx_dir:
            print("No sched/fcgi in %s (BOINC configured without libfcgi): no C++ FastCGI "
                  "figures." % cxx_dir)
        servers.remove("cxx_fcgi")
    subprocess.run([sys.executable, "-m", "compileall", "-q", os.path.join(REPO, "boincpy")],
                   check=True, stdout=subprocess.DEVNULL)
    levels = [int(c) for c in args.conc.split(",")]
    wanted = [x for x in args.scenarios.split(",") if x]
    project = Project(args.hosts, cxx_dir or None, args.processes)
    with open(os.path.join(project.root, "keys", "code_sign_public")) as f:
        key = f.read()
    apache = feeder = None
    try:
        feeder = Feeder(project)
        if args.memory:
            memory(project, feeder, key, args.memory)
            return 0
        if args.profile:
            feeder.start(100)
            profile(project, key)
            persistent_costs(project, key)
            persistent_profile(project, feeder, key)
            return 0
        apache = Apache(project, workers=max(levels) + 2, processes=args.processes)
        if args.restart:
            if "cxx_fcgi" in servers:
                # its processes attach the C++ feeder's array, which --restart
                # does not run (it hung waiting for their replies)
                print("(--restart: BOINC's FastCGI build left out)")
                servers.remove("cxx_fcgi")
            restart_figures(project, feeder, apache, key, servers, max(levels),
                            max(3, args.rounds))
            return 0
        print("%-40s %4s %-10s %7s %7s %7s %7s  %5s" % (
            "scenario (new connection per RPC)", "conc", "server", "req/s", "p50", "p95",
            "p99", "/C++"))
        results = []
        for name in SCENARIOS:
            if name not in wanted:
                continue
            for conc in levels:
                for k in range(args.rounds):
                    row = {}
                    # alternated, in reverse order every other round: no
                    # server always measured right after the same one
                    for server in (servers if k % 2 == 0 else servers[::-1]):
                        row[server] = run_server(project, feeder, apache, key, name, conc,
                                                 server, args.requests, args.min_seconds)
                    for server in servers:
                        print_row(name, conc, server, row[server], row.get("cxx"))
                    results.append((name, conc, row))
        if "cxx" in servers or "cxx_fcgi" in servers:
            summary(results)
        errors = os.path.join(apache.dir, "error.log")
        if os.path.exists(errors) and os.path.getsize(errors):
            with open(errors) as f:
                tail = [ln for ln in f.read().splitlines() if "AH00" not in ln][-5:]
            if tail:
                print("Apache error.log (last lines):\n  " + "\n  ".join(tail))
    finally:
        if apache is not None:
            apache.stop()
        if feeder is not None:
            feeder.stop()
        if args.keep:
            print("kept %s (database %s)" % (project.root, project.db_name))
        else:
            project.destroy()
    return 0


def cpu_by_process(project, apache):
    """CPU seconds (user + system, reaped children included) used so far by
    each kind of process a request passes through: the project's database
    server, this benchmark's Apache (its children, and the CGIs they
    reaped), the project's persistent workers, BOINC's FastCGI scheduler
    (mod_fcgid's processes) and this benchmark.  Other helpers' Apaches,
    databases and workers on the same machine are not counted."""
    import psutil
    from boincpy.tools.server_mode import FCGI_DIR, FCGI_SCRIPT
    fcgi_script = os.path.join(project.root, FCGI_DIR, FCGI_SCRIPT)
    cxx_fcgi = os.path.join(project.root, CXX_FCGI_DIR, "fcgi")
    procs = {os.getpid(): "bench client"}
    if project.db_pid:
        procs[project.db_pid] = "database"
    try:
        web = psutil.Process(apache.pid)
        procs[web.pid] = "web server + CGIs"
        for child in web.children(recursive=True):
            procs[child.pid] = "web server + CGIs"
    except (psutil.Error, TypeError, ValueError):
        pass
    for proc in psutil.process_iter(["cmdline"]):
        cmd = proc.info["cmdline"] or []
        if fcgi_script in cmd:
            procs[proc.pid] = "persistent workers"
        elif cmd[:1] == [cxx_fcgi]:
            procs[proc.pid] = "C++ FastCGI"
    kinds = {}
    for pid, kind in procs.items():
        try:
            t = psutil.Process(pid).cpu_times()
        except psutil.Error:
            continue
        kinds[kind] = kinds.get(kind, 0.0) + t.user + t.system + t.children_user + \
            t.children_system
    return kinds


def server_cpu(r):
    """CPU ms per RPC of the server side: all but the load client."""
    return sum(v for k, v in r.get("cpu", {}).items() if k != "bench client")


def restart_figures(project, feeder, apache, key, servers, conc, rounds, later=400, first=100):
    """p95 of the first ``first`` no-work requests after an Apache restart
    against that of the ``later`` ones that follow, per server, ``rounds``
    restarts each (after a warm-up, so that every host has had its first
    RPC and the database its caches), with the median ratio, and the
    slowest of the first (p99 of 100: a stall waiting for a process to
    start would show there)."""
    print("%-12s %4s %12s %12s %7s %12s   (no work requested, after an Apache restart)"
          % ("server", "conc", "p95 first %d" % first, "p95 next %d" % later, "ratio",
             "slowest first"))
    feeder.start(100)
    try:
        for server in servers:
            if server == "persistent" and not apache.pool_filled:
                apache.start_workers()
            reqs = Requests(project, key, want_work=False)
            run_load(apache.port, reqs, 2 * project.nhosts, conc, warmup=0, path=PATHS[server])
            ratios = []
            for _ in range(rounds):
                apache.stop(workers=False)
                apache.start()
                head = run_load(apache.port, reqs, first, conc, warmup=0, path=PATHS[server])
                tail = run_load(apache.port, reqs, later, conc, warmup=0, path=PATHS[server])
                ratios.append(head["p95"] / tail["p95"])
                print("%-12s %4d %9.1f ms %9.1f ms %7.2f %9.1f ms   errors %d"
                      % (server, conc, head["p95"], tail["p95"], ratios[-1], head["p99"],
                         head["errors"] + tail["errors"]))
            print("%-12s median ratio %.2f over %d restarts" % (
                server, sorted(ratios)[len(ratios) // 2], len(ratios)))
    finally:
        feeder.stop()


def run_server(project, feeder, apache, key, name, conc, server, n, min_seconds=0.0):
    """One measurement: scenario ``name`` at ``conc`` against ``server``, with
    that server's feeder running (and stopped afterwards).  If the ``n``
    requests took less than ``min_seconds`` they were a warm-up, and as many
    as fill ``min_seconds`` at that rate are measured instead: a fast
    server's 400 requests last under a second, too short to be steady."""
    cxx = server in CXX_SERVERS
    slots = int(name.split("_")[1]) if name.startswith("sent_") else 100
    reqs = Requests(project, key, want_work=name.startswith("sent_")
                    or name == "none_available")

    def supply(count):
        """Jobs to send, or results to report, for ``count`` more requests."""
        if name.startswith("sent_"):
            project.add_jobs(count + 5)
        elif name == "report":
            reqs.add_reports(project.add_jobs(count + 10, state=4,
                                              hosts=[h[0] for h in project.hosts]))

    def measure(count, warmup):
        before = feeder.cpu_seconds()
        cpu_before = cpu_by_process(project, apache)
        stats = run_load(apache.port, reqs, count, conc, warmup=warmup, path=PATHS[server])
        stats["feeder_cpu"] = (feeder.cpu_seconds() - before) * 1000 / count
        cpu_after = cpu_by_process(project, apache)
        stats["cpu"] = {k: (v - cpu_before.get(k, 0.0)) * 1000 / (count + warmup)
                        for k, v in cpu_after.items()}
        stats["requests"] = count
        stats["load"] = os.getloadavg()[0]
        return stats

    if server == "persistent" and not apache.pool_filled:
        apache.start_workers()
    supply(n + slots + 50 if name.startswith("sent_") else n)
    feeder.start(slots, cxx=cxx)
    feeder.wait_filled(min(slots, 100) if name.startswith("sent_") else 0, cxx=cxx)
    try:
        if server == "cxx_fcgi":
            apache.fill_cxx_fcgi(key)
        stats = measure(n, 5)
        if min_seconds and n / stats["rps"] < min_seconds:
            count = int(stats["rps"] * min_seconds) + 1
            supply(count)
            stats = measure(count, 0)
        return stats
    finally:
        feeder.stop()
        if name.startswith("sent_"):
            db = project.connect()
            cur = db.cursor()
            cur.execute("UPDATE result SET server_state = 5, outcome = 5 WHERE server_state = 2")
            db.commit()
            db.close()


def summary(results):
    """Ratios to each C++ server measured (req/s, and jobs/s sending work;
    server-side CPU per RPC in parentheses, a figure steadier than req/s on a
    loaded machine), then the targets: persistent >= 2x the C++ CGI in every
    scenario at concurrency 2 (>= 5x sending from 2,000 slots), CGI >= 0.5x
    with no work (and the floor's ratio, the most a Python CGI reaches);
    persistent >= 1.2x the C++ FastCGI with no work and with work requested
    and none available, at concurrency 2."""
    for base, title in (("cxx", "the C++ CGI"), ("cxx_fcgi", "the C++ FastCGI build")):
        rows = [(name, conc, row) for name, conc, row in results if base in row]
        if not rows:
            continue
        print("\nRatios to %s (req/s; in parentheses, its server-side CPU per RPC over "
              "theirs), measured in the same run;\nsending work, also of jobs sent per second "
              "(a server whose array runs dry answers some requests without a job, which "
              "costs less):" % title)
        for name, conc, row in rows:
            others = [server for server in row if server != base]
            parts = ["%s %.2fx (%.2fx)" % (server, row[server]["rps"] / row[base]["rps"],
                                           _cpu_ratio(row[base], row[server]))
                     for server in others]
            if name.startswith("sent_") and row[base]["jobs"]:
                rate = _jobs_per_second(row[base])
                parts.append("| jobs/s: " + "  ".join(
                    "%s %.2fx" % (server, _jobs_per_second(row[server]) / rate)
                    for server in others))
            print("  %-40s c=%d  %s" % (TITLES[name], conc, "  ".join(parts)))
    print("\nTargets: persistent >= 2x the C++ CGI in every scenario at c=2 (>= 5x sending "
          "from 2,000 slots); CGI >= 0.5x with no work;\npersistent >= 1.2x the C++ FastCGI "
          "with no work and with work requested and none available, c=2.")
    for server, bound in (("cgi", "the target"), ("floor", "the most a Python CGI reaches")):
        got = [row[server]["rps"] / row["cxx"]["rps"] for n, conc, row in results
               if n == "no_work" and conc == 2 and server in row and "cxx" in row]
        if got:
            print("  %s / C++ CGI, no work requested, c=2: %s (median %.2fx; %s)" % (
                server, ", ".join("%.2fx" % x for x in got), sorted(got)[len(got) // 2],
                "met" if server == "cgi" and min(got) >= 0.5 else
                "not met" if server == "cgi" else bound))
    for name in ("no_work", "none_available"):
        got = [row["persistent"]["rps"] / row["cxx_fcgi"]["rps"] for n, conc, row in results
               if n == name and conc == 2 and "persistent" in row and "cxx_fcgi" in row]
        if got:
            print("  persistent / C++ FastCGI, %s, c=2: %s -> %s" % (
                TITLES[name], ", ".join("%.2fx" % x for x in got),
                "met" if min(got) >= 1.2 else "not met"))


def _cpu_ratio(base, other):
    """base's server-side CPU per RPC over other's (0 where not measured)."""
    return server_cpu(base) / server_cpu(other) if server_cpu(other) else 0.0


def _jobs_per_second(r):
    return r["rps"] * r["jobs"] / max(r.get("requests", 0), 1)


if __name__ == "__main__":
    sys.exit(main())
