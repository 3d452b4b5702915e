"""A project spread over emulated hosts on this machine, for
tests/test_multihost_cluster.py and bench/bench_multihost.py: a MariaDB
primary with a replica, a main host, two scheduler/data-server hosts with
their own Apache and feeder, a back-end host (see the test's docstring)."""

import base64
import os
import re
import sys
import threading
import time
import urllib.request

import MySQLdb

import mariadb_instance
from backend_util import REPO
from boincpy.config import DaemonSpec, write_config
from boincpy.testing import simclient as sc
from boincpy.tools.httpd import PrivateApache
from conftest import TEST_BASE, make_test_project, remove_test_project
from hosts_util import Host, write_ssh_exec
from tests.sched_env import install_script_app, run_tool

PRIMARY_PORT, REPLICA_PORT = 3330, 3331
WEB = {"web1": "127.0.0.2", "web2": "127.0.0.3"}
RO_USER, RO_PASSWD = "bpro", "ro-pw"


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

    def __init__(self, split_feeders, ports=(PRIMARY_PORT, REPLICA_PORT)):
        self.split = split_feeders
        os.makedirs(TEST_BASE, exist_ok=True)
        os.chmod(TEST_BASE, 0o755)
        self.primary = self.replica = self.p = None
        self.hosts, self.apaches = {}, {}
        self.primary, self.replica = mariadb_instance.primary_and_replica(
            TEST_BASE, ports[0], ports[1])
        root = {"user": "root", "passwd": "", "host": "127.0.0.1", "port": ports[0]}
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
                    daily_result_quota=10000, replica_db_host="127.0.0.1:%d" % ports[1],
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


def make_jobs(c, njobs):
    p = c.p
    install_script_app(p, "example_app")
    # one output template per data server
    template = open(p.path("templates", "example_app_out")).read()
    for host, address in WEB.items():
        url = "http://%s:%d/%s_cgi/file_upload_handler" % (address, c.port, p.short_name)
        with open(p.path("templates", "out_" + host), "w") as f:
            f.write(template.replace("<UPLOAD_URL/>", url))
    stage = p.path("job_inputs")
    os.makedirs(stage)
    expected, lines = {}, {h: [] for h in WEB}
    for i in range(njobs):
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


def make_hosts(c, n):
    """``n`` simulated volunteers (one account each), alternating between the
    schedulers the master page lists."""
    master = page(c, c.p.master_url, auth=False)
    listed = re.findall(r'<link rel="boinc_scheduler" href="([^"]+)">', master)
    hosts = []
    for k in range(n):
        user = "vol%d" % k
        auth = sc.create_account(c.p.master_url, user + "@example.com", "pw-" + user, user)
        hosts.append(sc.SimHost(listed[k % len(listed)], auth, name="%s-host" % user,
                                seed=k + 1, work_req_seconds=30.0, max_tasks=4,
                                delay_cap=0.5, idle_delay=0.5, timeout=60.0))
    return listed, hosts


def run_hosts(c, hosts, njobs, limit):
    """Run the hosts in threads until ``njobs`` workunits are assimilated or
    ``limit`` seconds pass; returns (assimilated, errors, seconds)."""
    stop = threading.Event()
    errors = []
    threads = [threading.Thread(target=sc.run_host, args=(h, stop, errors), daemon=True)
               for h in hosts]
    t0 = time.monotonic()
    for t in threads:
        t.start()
    db = c.p.connect()
    try:
        done = 0
        while time.monotonic() - t0 < limit and not errors:
            done = db.query_value("SELECT COUNT(*) FROM workunit WHERE assimilate_state = 2")
            if done == njobs:
                break
            time.sleep(1.0)
    finally:
        db.close()
        stop.set()
        for t in threads:
            t.join(120)
    return done, errors, time.monotonic() - t0


def sent_twice(hosts):
    """Result names more than one host received (should be none)."""
    received = {}
    for h in hosts:
        for name in h.received:
            received.setdefault(name, []).append(h.name)
    return {k: v for k, v in received.items() if len(v) > 1}, received
