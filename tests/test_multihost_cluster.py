"""A project spread over several hosts, all on this machine (slow).

The layout of the operator guide's "When one server is not enough":

* a MariaDB primary writing a binary log and a replica following it, both
  started by the test (tests/mariadb_instance: their own data directories,
  127.0.0.1 ports 3330 and 3331, general query logs on);
* ``main``: the main host (config.xml's <host>), serving the master page,
  downloads and the ops pages on 127.0.0.1; its bin/start starts the other
  hosts' daemons through <ssh_exec>;
* ``web1`` and ``web2``: scheduler and data-server hosts on 127.0.0.2 and
  127.0.0.3, each with its own Apache, its own /dev/shm and so its own
  feeder and job array;
* ``back1``: the back end (transitioner and assimilator split with
  ``--mod 2 I``, validator, file_deleter).

Each host is a UTS + mount namespace (tests/hosts_util.Host) sharing the
project directory, as hosts share it over NFS.  The master page lists both
schedulers from schedulers.txt; simulated volunteers use one or the other;
half the jobs upload to web1's data server, half to web2's.  Then: every
job done and assimilated exactly once, by the assimilator its id's --mod
share names; no result sent twice; each feeder sent only its share (with
``--mod``), or both feeders enumerated every job and the scheduler's claim
of the result row kept each from being sent twice (without); each host's
logs in its own log_<host>; the ops pages' list queries on the replica and
the ops index on the primary (from the servers' general logs); and once
the replica stops replicating, its pages still answer and say their data
may be stale.
"""

import base64
import os
import re
import subprocess
import sys
import threading
import time
import urllib.request

import MySQLdb
import pytest

import mariadb_instance
from backend_util import REPO
from boincpy.config import DaemonSpec, write_config
from boincpy.testing import simclient as sc
from boincpy.tools.httpd import PrivateApache
from conftest import TEST_BASE, make_test_project, remove_test_project
from hosts_util import Host, can_unshare, write_ssh_exec
from tests.sched_env import APP_FILE, PLATFORM, SCRIPT_APP, run_tool

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not (mariadb_instance.available() and can_unshare()),
                                 reason="needs root, namespaces and mariadbd")]

NJOBS = int(os.environ.get("BOINCPY_MULTIHOST_JOBS") or 40)
PRIMARY_PORT, REPLICA_PORT = 3330, 3331
WEB = {"web1": "127.0.0.2", "web2": "127.0.0.3"}
RO_USER, RO_PASSWD = "bpro", "ro-pw"
FINISH_LIMIT = 300.0


def daemons(split_feeders):
    """config.xml's <daemons>: a feeder per scheduler host, the back end on back1."""
    feeders = [DaemonSpec("feeder -d 3 --sleep_interval 1" + (" --mod 2 %d" % i
                                                             if split_feeders else ""),
                          host=host) for i, host in enumerate(WEB)]
    back = []
    for prog in ("transitioner -d 3 --sleep_interval 1",
                 "sample_dummy_assimilator -d 3 --app example_app --sleep_interval 1"):
        name = prog.split()[0]
        for i in range(2):
            back.append(DaemonSpec("%s --mod 2 %d" % (prog, i), host="back1",
                                   output="%s_%d.log" % (name, i),
                                   pid_file="%s_%d.pid" % (name, i)))
    back += [DaemonSpec("sample_trivial_validator -d 3 --app example_app --sleep_interval 1",
                        host="back1"),
             DaemonSpec("file_deleter -d 3 --sleep_interval 1", host="back1")]
    return feeders + back


class Cluster:
    """The databases, the hosts, their Apaches; ``close()`` stops everything."""

    def __init__(self, split_feeders):
        os.makedirs(TEST_BASE, exist_ok=True)
        os.chmod(TEST_BASE, 0o755)
        self.primary = self.replica = self.p = None
        self.hosts, self.apaches = {}, {}
        self.primary, self.replica = mariadb_instance.primary_and_replica(
            TEST_BASE, PRIMARY_PORT, REPLICA_PORT)
        root = {"user": "root", "passwd": "", "host": "127.0.0.1", "port": PRIMARY_PORT}
        self.p = p = make_test_project(root)
        # the pages' read-only account, made on the primary (so on the replica too)
        conn = MySQLdb.connect(**self.primary.params)
        cur = conn.cursor()
        for host in ("localhost", "127.0.0.1"):
            cur.execute("CREATE USER %s@%s IDENTIFIED BY %s", (RO_USER, host, RO_PASSWD))
            cur.execute("GRANT SELECT ON `%s`.* TO %%s@%%s" % p.db_name, (RO_USER, host))
            cur.execute("GRANT SLAVE MONITOR ON *.* TO %s@%s", (RO_USER, host))
        conn.close()
        ns_dir = p.path("hosts_ns")
        os.makedirs(ns_dir)
        ssh = write_ssh_exec(p.path("hosts_ns", "ssh_exec"), ns_dir)
        for name in ("main", "web1", "web2", "back1"):
            self.hosts[name] = Host(name, os.path.join(ns_dir, name + ".pid"))
        opts = p.cfg.as_options()
        opts.update(host="main", ssh_exec=ssh, min_sendwork_interval=0, max_wus_to_send=4,
                    daily_result_quota=10000, replica_db_host="127.0.0.1:%d" % REPLICA_PORT,
                    replica_db_name=p.db_name, replica_db_user=RO_USER,
                    replica_db_passwd=RO_PASSWD)
        write_config(p.root, opts, daemons(split_feeders), p.cfg.tasks)
        p.reload()
        self.port = p.port
        self.sched_urls = {h: "http://%s:%d/%s_cgi/cgi" % (a, p.port, p.short_name)
                           for h, a in WEB.items()}
        with open(p.path("html", "user", "schedulers.txt"), "w") as f:
            for url in self.sched_urls.values():
                f.write('<!-- <scheduler>%s</scheduler> -->\n'
                        '<link rel="boinc_scheduler" href="%s">\n' % (url, url))
        for name, address in [("main", "127.0.0.1")] + list(WEB.items()):
            self.start_apache(name, address)

    def start_apache(self, host, address):
        run_dir = self.p.path("httpd_" + host)
        env = dict(os.environ, PYTHONPATH=REPO)
        r = self.hosts[host].run([sys.executable, "-m", "boincpy.tools.httpd", "start", self.p.root,
                                  "--port", str(self.port), "--address", address,
                                  "--run_dir", run_dir], env=env, capture_output=True,
                                 text=True, timeout=60)
        assert r.returncode == 0, r.stdout + r.stderr
        self.apaches[host] = PrivateApache(self.p.root, self.port, run_dir, address=address)

    def on(self, host, *argv, check=True):
        r = self.hosts[host].run(list(argv), cwd=self.p.root, capture_output=True, text=True,
                                 timeout=120)
        if check:
            assert r.returncode == 0, r.stdout + r.stderr
        return r.stdout + r.stderr

    def close(self):
        if self.p is not None and "main" in self.hosts:
            self.on("main", self.p.bin("stop"), check=False)
        for server in self.apaches.values():
            server.stop(graceful=False)
        for host in self.hosts.values():
            host.close()
        if self.p is not None:
            remove_test_project(self.p)
        for server in (self.primary, self.replica):
            if server is not None:
                server.remove()


@pytest.fixture(params=["mod", "overlap"])
def cluster(request):
    c = None
    try:
        c = Cluster(split_feeders=request.param == "mod")
        c.split = request.param == "mod"
        yield c
    finally:
        if c is not None:
            c.close()


def make_jobs(c):
    p = c.p
    run_tool(p, "xadd")
    app_dir = p.path("apps", "example_app", "1.0", PLATFORM)
    os.makedirs(app_dir)
    with open(os.path.join(app_dir, APP_FILE), "w") as f:
        f.write(SCRIPT_APP)
    os.chmod(os.path.join(app_dir, APP_FILE), 0o755)
    run_tool(p, "update_versions", "--noconfirm")
    # one output template per data server
    template = open(p.path("templates", "example_app_out")).read()
    for host, address in WEB.items():
        url = "http://%s:%d/%s_cgi/file_upload_handler" % (address, c.port, p.short_name)
        with open(p.path("templates", "out_" + host), "w") as f:
            f.write(template.replace("<UPLOAD_URL/>", url))
    stage = p.path("job_inputs")
    os.makedirs(stage)
    expected, lines = {}, {h: [] for h in WEB}
    for i in range(NJOBS):
        wu = "mh_%d" % i
        text = "".join("job %s line %d\n" % (wu, j) for j in range(2 + i % 4))
        with open(os.path.join(stage, "in_" + wu), "w") as f:
            f.write(text)
        expected[wu] = text.upper().encode()
        lines["web1" if i % 2 else "web2"].append("--wu_name %s in_%s" % (wu, wu))
    run_tool(p, "stage_file", stage)
    for host in WEB:
        run_tool(p, "create_work", "--appname", "example_app", "--stdin", "--rsc_fpops_est",
                 "1e10", "--rsc_fpops_bound", "1e12", "--delay_bound", "86400",
                 "--result_template", "templates/out_" + host,
                 input="\n".join(lines[host]) + "\n")
    return expected


def page(c, url, auth=True):
    req = urllib.request.Request(url)
    if auth:
        token = base64.b64encode(("%s:%s" % (c.p.ops_user, c.p.ops_passwd)).encode()).decode()
        req.add_header("Authorization", "Basic " + token)
    with urllib.request.urlopen(req, timeout=60) as resp:
        assert resp.status == 200
        return resp.read().decode("utf-8", "replace")


def log_size(path):
    return os.path.getsize(path)


def log_since(path, offset):
    with open(path, errors="replace") as f:
        f.seek(offset)
        return f.read()


def test_two_scheduler_hosts_a_back_end_and_a_replica(cluster):
    c = cluster
    p = c.p
    expected = make_jobs(c)
    # bin/start on the main host starts every host's daemons through ssh_exec
    out = c.on("main", p.bin("start"), "-v")
    assert "web1" in out and "back1" in out, out

    # the master page lists both schedulers, read from schedulers.txt
    master = page(c, p.master_url, auth=False)
    listed = re.findall(r'<link rel="boinc_scheduler" href="([^"]+)">', master)
    assert listed == list(c.sched_urls.values())

    hosts = []
    for k, user in enumerate(("alice", "bob", "carol", "dave")):
        auth = sc.create_account(p.master_url, user + "@example.com", "pw-" + user, user)
        url = listed[k % 2]
        hosts.append(sc.SimHost(url, auth, name="%s-host" % user, seed=k + 1,
                                work_req_seconds=30.0, max_tasks=4, delay_cap=0.5,
                                idle_delay=0.5, timeout=30.0))
    stop = threading.Event()
    errors = []

    def client(host):
        try:
            while not stop.is_set():
                if host.due():
                    host.cycle()
                else:
                    time.sleep(0.02)
        except Exception as exc:
            errors.append("%s: %r" % (host.name, exc))

    threads = [threading.Thread(target=client, args=(h,), daemon=True) for h in hosts]
    for t in threads:
        t.start()
    db = p.connect()
    try:
        deadline = time.monotonic() + FINISH_LIMIT
        while time.monotonic() < deadline and not errors:
            done = db.query_value("SELECT COUNT(*) FROM workunit WHERE assimilate_state = 2")
            if done == NJOBS:
                break
            time.sleep(1.0)
        stop.set()
        for t in threads:
            t.join(60)
        assert not errors, errors
        assert done == NJOBS, "%d of %d jobs assimilated" % (done, NJOBS)
        results = db.query("SELECT id, name, hostid, workunitid, outcome FROM result")
    finally:
        db.close()

    # every result sent once: to one simulated host, never to two
    received = {}
    for h in hosts:
        assert not h.protocol_errors, h.protocol_errors
        for name in h.received:
            received.setdefault(name, []).append(h.name)
    assert all(len(v) == 1 for v in received.values()), \
        {k: v for k, v in received.items() if len(v) > 1}
    by_name = {r["name"]: r for r in results}
    for name, who in received.items():
        assert by_name[name]["hostid"] and by_name[name]["outcome"] == 1

    # each scheduler host's log holds its own requests; with --mod each feeder
    # (so each scheduler) sent only its share of the results
    for host in WEB:
        log = open(p.path("log_" + host, "scheduler.log")).read()
        assert "Request: [USER#" in log
        if c.split:
            assert "already sent to another host" not in log
    for i, host in enumerate(WEB):
        ids = {r["id"] for r in results if r["name"] in received
               and any(hh.scheduler_url == c.sched_urls[host] for hh in hosts
                       if hh.name in received[r["name"]])}
        if c.split:
            assert ids and all(x % 2 == i for x in ids), (host, sorted(ids))
        else:
            # both feeders enumerated every job: each scheduler sent both shares
            assert {x % 2 for x in ids} == {0, 1}, (host, sorted(ids))

    # uploads reached both data servers, each logged on its own host
    for host in WEB:
        log = open(p.path("log_" + host, "file_upload_handler.log")).read()
        assert "mh_" in log, host
    # every job assimilated once, by the assimilator whose --mod share it is
    seen = {}
    for i in range(2):
        log = open(p.path("log_back1", "sample_dummy_assimilator_%d.log" % i)).read()
        for wu in re.findall(r"Assimilating (mh_\d+)", log):
            seen.setdefault(wu, []).append(i)
    assert sorted(seen) == sorted(expected)
    assert all(len(v) == 1 for v in seen.values()), {k: v for k, v in seen.items() if len(v) > 1}
    db = p.connect()
    try:
        ids = {r["name"]: r["id"] for r in db.query("SELECT id, name FROM workunit")}
    finally:
        db.close()
    assert all(seen[wu] == [ids[wu] % 2] for wu in seen)
    # each host's daemons logged and kept pid files in their own directories
    for host, names in (("web1", ["feeder.log"]), ("web2", ["feeder.log"]),
                        ("back1", ["transitioner_0.log", "transitioner_1.log",
                                   "file_deleter.log"])):
        for name in names:
            assert os.path.getsize(p.path("log_" + host, name)) > 0, (host, name)
    assert os.path.exists(p.path("pid_back1", "transitioner_1.pid"))
    status = c.on("main", p.bin("status"), "-v")
    assert "transitioner" in status and "feeder" in status, status

    # the replica's reads and the primary's, from their general logs
    mariadb_instance.wait_replicated(c.primary, c.replica)
    plog, rlog = c.primary.general_log_path, c.replica.general_log_path
    p0, r0 = log_size(plog), log_size(rlog)
    body = page(c, p.ops_url + "errorwus.php")
    assert "entries" in body and "stale" not in body
    page(c, p.ops_url + "db_form.php?table=result")
    on_replica, on_primary = log_since(rlog, r0), log_since(plog, p0)
    assert "AS download_errors" in on_replica and "AS download_errors" not in on_primary
    assert "FROM result" in on_replica
    p0, r0 = log_size(plog), log_size(rlog)
    page(c, p.ops_url + "index.php")
    assert RO_USER not in log_since(rlog, r0) and "FROM app" in log_since(plog, p0)

    # the replica stops replicating: its pages still answer, and say so
    conn = MySQLdb.connect(**c.replica.params)
    conn.cursor().execute("STOP SLAVE")
    conn.close()
    db = p.connect()
    try:
        db.execute("UPDATE workunit SET name = 'renamed_on_primary' WHERE id = 1")
    finally:
        db.close()
    body = page(c, p.ops_url + "db_form.php?table=workunit")
    assert "stopped replicating" in body and "may be stale" in body
    assert "renamed_on_primary" not in body
    assert "renamed_on_primary" in page(c, p.ops_url + "db_action.php?table=workunit&id=1")
