"""Fault test of the persistent mode: the processes (FastCGI workers) serving
the scheduler and the upload handler are SIGKILLed while simulated clients
fetch jobs, upload outputs and report results, and the database server is
restarted under that load (once shut down cleanly, once killed outright:
paused first, so that requests are in flight, their statements waiting,
when it dies).  The database faults are run in classic CGI mode too.

The project is a real one (make_project, ``server_mode persistent`` with two
processes, a private Apache, bin/start running the feeder and the
transitioner, and ``bin/start --cron`` every second, since BOINC's daemons
exit when they lose the database and its cron entry starts them again) on a MariaDB server of the test's own (tests/mariadb_instance:
its own data directory and socket, so no other test's database is touched).
Four simulated hosts of three users (boincpy.testing.simclient, signed up
through create_account.php) run quorum-1 jobs over HTTP until every job's
result is reported.

Then: every job has its result reported as a success with its output, correct,
in upload/; every result a host was acknowledged is in the database as
reported, by that host (no result lost); no complete reply a client could not
use, and no HTTP failure beyond one per killed process; after each fault a
client is served again (a reply with no ``project_is_down``) within seconds,
and so is a web RPC (lookup_account.php, asked all along: every answer
well-formed XML).  A request that lost its database logged one line naming
it ("lost connection to database (...)", CRITICAL in scheduler.log): no log
of the project's and no line of Apache's error log holds a traceback.
"""

import os
import random
import signal
import subprocess
import threading
import time

import pytest

from boincpy.config import write_config
from boincpy.files import dir_hier_path
from boincpy.states import ClientState, Outcome, ServerState
from boincpy.testing import simclient as sc
from boincpy.tools.server_mode import persistent_pids
from boincpy.xml import tree
import mariadb_instance
from conftest import TEST_BASE, make_test_project, remove_test_project
from tests.sched_env import install_script_app, run_tool

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not mariadb_instance.available(),
                                 reason="needs root and mariadbd / mariadb-install-db")]

NJOBS = int(os.environ.get("BOINCPY_PERSISTENT_FAULT_JOBS") or 160)
SEED = int(os.environ.get("BOINCPY_FAULT_SEED") or 1717)
WORKER_KILLS = 5
BACK_WITHIN = 10.0           # seconds from a fault's end to a client served again
FINISH_LIMIT = 240.0
USERS = (("alice", 2), ("bob", 1), ("carol", 1))
DAEMONS = ("feeder -d 3 --sleep_interval 1", "transitioner -d 3 --sleep_interval 1")
PAUSE_BEFORE_CRASH = 1.0     # seconds MariaDB is stopped (SIGSTOP) before its SIGKILL


@pytest.fixture
def private_db():
    os.makedirs(TEST_BASE, exist_ok=True)
    os.chmod(TEST_BASE, 0o755)
    db = mariadb_instance.MariaDB(TEST_BASE)
    try:
        db.start()
        yield db
    finally:
        db.remove()


@pytest.fixture(params=["persistent", "classic"])
def persistent_site(private_db, request):
    """A made project on the private server, persistent (or classic CGIs),
    served by a private Apache."""
    from boincpy.tools import server_mode
    from boincpy.tools.httpd import PrivateApache
    p = make_test_project(private_db.params)
    p.mode = request.param
    server = None
    try:
        if p.mode == "persistent":
            server_mode.set_mode(p.root, "persistent", processes=2)
        opts = p.cfg.as_options()
        opts.update(min_sendwork_interval=0, resend_lost_results=1, max_wus_to_send=4,
                    daily_result_quota=10000, maintenance_delay=5)
        write_config(p.root, opts, [{"cmd": c} for c in DAEMONS], p.cfg.tasks)
        p.reload()
        server = PrivateApache(p.root, p.port)
        server.start()
        yield p, server
    finally:
        if server is not None:
            server.stop(graceful=False)
        subprocess.run([p.bin("stop")], cwd=p.root, capture_output=True, timeout=60)
        remove_test_project(p)


class Clock:
    """What the clients saw, by time: (time, "ok" | "down" | "failed")."""

    def __init__(self):
        self.lock = threading.Lock()
        self.events = []
        self.why = []               # (time, messages) of replies saying the project is down
        self.t0 = time.monotonic()

    def now(self):
        return time.monotonic() - self.t0

    def add(self, what):
        with self.lock:
            self.events.append((self.now(), what))

    def first_ok_after(self, t):
        with self.lock:
            return next((e for e, what in self.events if e >= t and what == "ok"), None)


def watched(host, clock):
    """host.rpc, recording each outcome in ``clock``."""
    rpc = host.rpc

    def wrapped(*args, **kwargs):
        reply = rpc(*args, **kwargs)
        if reply is None:
            clock.add("failed")
        elif reply.project_is_down:
            clock.add("down")
            clock.why.append((clock.now(), reply.messages))
        else:
            clock.add("ok")
        return reply
    host.rpc = wrapped


def worker_pids(p):
    """The project's persistent processes (its FastCGI workers)."""
    return persistent_pids(p.root)


def web_rpcs(master, email, password, clock, stop, unusable):
    """lookup_account.php (a web RPC that reads the database) every 0.1 s
    until ``stop``: "ok" in ``clock`` when it gives the authenticator, "down"
    for an <error> reply, "failed" for Apache's own error page (a process
    killed in the request); any other answer that is not well-formed XML
    goes to ``unusable``."""
    from boincpy.passwords import client_passwd_hash
    from urllib.parse import quote
    url = "%s/lookup_account.php?email_addr=%s&passwd_hash=%s" % (
        master.rstrip("/"), quote(email), client_passwd_hash(password, email))
    while not stop.wait(0.1):
        try:
            status, body = sc.http_get(url, timeout=30.0)
        except OSError:
            clock.add("failed")
            continue
        if status >= 500 and body.startswith(b"<!DOCTYPE HTML"):
            clock.add("failed")
            continue
        try:
            root = tree.parse(sc.cgi_body(body).decode("utf-8", "replace"))
        except tree.XmlError:
            unusable.append((status, body[:300]))
            continue
        if root.findtext("authenticator"):
            clock.add("ok")
        elif root.findtext("error_num") is not None:
            clock.add("down")
        else:
            unusable.append((status, body[:300]))


def log_texts(p, server):
    """{name: text} of the project's logs and Apache's error log."""
    texts = {}
    log_dir = p.cfg.host_log_dir
    for name in sorted(os.listdir(log_dir)):
        path = os.path.join(log_dir, name)
        if os.path.isfile(path):
            with open(path, errors="replace") as f:
                texts[name] = f.read()
    with open(server.error_log, errors="replace") as f:
        texts["apache error.log"] = f.read()
    return texts


def test_worker_killed_and_mariadb_restarted_under_load(persistent_site, private_db):
    p, server = persistent_site
    rng = random.Random(SEED)
    print("seed %d, %d jobs" % (SEED, NJOBS))
    # the app (a script: simulated hosts don't run it), the jobs, the volunteers
    install_script_app(p, "example_app")
    stage = p.path("fault_inputs")
    os.makedirs(stage)
    expected, lines = {}, []
    for i in range(NJOBS):
        wu = "pf_%d" % i
        text = "".join("job %s line %d\n" % (wu, j) for j in range(3 + i % 5))
        with open(os.path.join(stage, "in_" + wu), "w") as f:
            f.write(text)
        expected[wu] = text.upper().encode()
        lines.append("--wu_name %s in_%s" % (wu, wu))
    run_tool(p, "stage_file", stage)
    run_tool(p, "create_work", "--appname", "example_app", "--stdin", "--rsc_fpops_est",
             "1e10", "--rsc_fpops_bound", "1e12", "--delay_bound", "86400",
             input="\n".join(lines) + "\n")
    proc = subprocess.run([p.bin("start")], cwd=p.root, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    master = p.master_url
    clock = Clock()
    hosts = []
    for name, nhosts in USERS:
        auth = sc.create_account(master, name + "@example.com", "pw-" + name, name)
        for k in range(nhosts):
            host = sc.SimHost(p.scheduler_url, auth, name="%s-%d" % (name, k),
                              seed=rng.getrandbits(32), work_req_seconds=30.0, max_tasks=4,
                              delay_cap=0.5, idle_delay=0.5, timeout=30.0)
            watched(host, clock)
            hosts.append(host)
    web_clock = Clock()
    web_unusable = []

    stop = threading.Event()
    errors = []

    def cron():
        # BOINC's daemons exit when they lose the database; its cron entry
        # (bin/start --cron) starts them again: here every second
        while not stop.wait(1.0):
            subprocess.run([p.bin("start"), "--cron"], cwd=p.root, capture_output=True,
                           timeout=60)

    threads = [threading.Thread(target=sc.run_host, args=(h, stop, errors), daemon=True)
               for h in hosts]
    threads.append(threading.Thread(target=cron, daemon=True))
    threads.append(threading.Thread(target=web_rpcs, daemon=True, args=(
        master, "alice@example.com", "pw-alice", web_clock, stop, web_unusable)))
    for t in threads:
        t.start()

    def reported():
        db = p.connect()
        try:
            return db.query("SELECT COUNT(*) AS n FROM result WHERE server_state = %s",
                            (int(ServerState.OVER),))[0]["n"]
        finally:
            db.close()

    def wait_reported(n, limit=60.0):
        deadline = time.monotonic() + limit
        while reported() < n and time.monotonic() < deadline and not errors:
            time.sleep(0.2)

    # the faults, one after another, each once the clients are busy again
    faults = []             # (what, seconds at the fault's end)
    step = NJOBS // (WORKER_KILLS + 4)
    target = step
    plan = ["kill"] * 2 + ["mariadb TERM"] + ["kill"] * 2 + ["mariadb KILL"] + \
        ["kill"] * (WORKER_KILLS - 4)
    if p.mode == "classic":
        plan = [what for what in plan if what != "kill"]
    for what in plan:
        wait_reported(target)
        time.sleep(rng.uniform(0.0, 0.5))
        if what == "kill":
            # Apache starts the next daemon process a moment after a kill
            deadline = time.monotonic() + BACK_WITHIN
            while not worker_pids(p) and time.monotonic() < deadline:
                time.sleep(0.1)
            pids = worker_pids(p)
            assert pids, "no persistent process"
            os.kill(rng.choice(pids), signal.SIGKILL)
        else:
            sig = signal.SIGTERM if what.endswith("TERM") else signal.SIGKILL
            if sig == signal.SIGKILL:
                # a crash that catches requests in flight: their statements
                # wait on the stopped server, then its connections end
                private_db.proc.send_signal(signal.SIGSTOP)
                time.sleep(PAUSE_BEFORE_CRASH)
            away = private_db.restart(sig)
            what += " (away %.1f s)" % away
        faults.append((what, clock.now()))
        print("[%6.1f s] %s" % (clock.now(), what), flush=True)
        target += step

    deadline = time.monotonic() + FINISH_LIMIT
    while time.monotonic() < deadline and not errors:
        # done, and served once since the last fault (the run may end with
        # it, before the daemons cron starts again are back)
        if reported() >= NJOBS and not any(h.busy for h in hosts) \
                and clock.first_ok_after(faults[-1][1]) is not None:
            break
        time.sleep(1.0)
    stop.set()
    for t in threads:
        t.join(60)
    assert not errors, errors

    # service back within seconds of every fault
    for what, t in faults:
        back = clock.first_ok_after(t)
        if back is None or back - t >= BACK_WITHIN:
            seen = sorted({str(m) for e, m in clock.why if e >= t})
            print("after %s: %s" % (what, seen))
            with open(os.path.join(p.cfg.host_log_dir, "feeder.log")) as f:
                print("feeder.log:\n" + f.read()[-3000:])
        assert back is not None and back - t < BACK_WITHIN, (what, t, back)
        print("%-28s served again after %.1f s" % (what, back - t))
        web_back = web_clock.first_ok_after(t)
        assert web_back is not None and web_back - t < BACK_WITHIN, (what, t, web_back)
    assert not web_unusable, web_unusable[:3]
    web_failed = sum(1 for _, what in web_clock.events if what == "failed")
    assert web_failed <= WORKER_KILLS, web_failed

    # no reply a client could not use; HTTP failures only from the killed processes
    for h in hosts:
        assert not h.protocol_errors, (h.name, h.protocol_errors[:3])
    failures = [e for h in hosts for e in h.rpc_errors if not e.startswith("upload of")]
    print("failed RPCs (kills, lost connections): %d" % len(failures))
    assert len(failures) <= WORKER_KILLS + 2 * len(hosts), failures

    # no result lost: every job reported once as a success, its output stored
    db = p.connect()
    try:
        rows = db.query("SELECT r.name, r.server_state, r.outcome, r.client_state, r.hostid, "
                        "r.xml_doc_out, w.name AS wu_name FROM result r JOIN workunit w "
                        "ON w.id = r.workunitid")
    finally:
        db.close()
    by_wu = {}
    for r in rows:
        by_wu.setdefault(r["wu_name"], []).append(r)
    assert sorted(by_wu) == sorted(expected)
    hostid_of = {h.name: h.hostid for h in hosts}
    for wu, results in by_wu.items():
        done = [r for r in results if r["server_state"] == ServerState.OVER
                and r["outcome"] == Outcome.SUCCESS]
        assert len(done) == 1 and len(results) == 1, (wu, results)
        r = done[0]
        assert r["client_state"] == ClientState.FILES_UPLOADED, r
        out = r["xml_doc_out"]
        name = out.split("<name>", 1)[1].split("</name>", 1)[0]
        with open(dir_hier_path(p.cfg.upload_dir, name, p.cfg.uldl_dir_fanout), "rb") as f:
            assert f.read() == expected[wu], wu
    state = {r["name"]: r for r in rows}
    for h in hosts:
        for name in h.acked:
            assert state[name]["server_state"] == ServerState.OVER, name
            assert state[name]["hostid"] == hostid_of[h.name], (name, h.name)
    # a lost database is an expected event: one CRITICAL line, never a traceback
    texts = log_texts(p, server)
    for name, text in texts.items():
        assert "Traceback" not in text, (name, text[text.index("Traceback") - 400:][:3000])
        assert "Scheduler failed" not in text and ".php failed" not in text, name
    # (a request waiting on the stopped server lost it under a statement,
    # or while opening its connection)
    lost = [line for text in texts.values() for line in text.splitlines()
            if "lost connection to database (" in line
            or "cannot reach the database server" in line]
    print("lines of requests that lost the database: %d\n  %s"
          % (len(lost), "\n  ".join(sorted({line.split("]")[-1].strip()[:120]
                                           for line in lost}))))
    assert lost, "no request was in flight when MariaDB died"
    # the scheduler noticed the lost connections and carried on
    log = texts["scheduler.log"]
    # (whether a surviving worker met a broken connection depends on which
    # workers the kills took: test_persistent.py proves the reconnection)
    print("scheduler.log: %d reconnections, %d failed opens"
          % (log.count("lost connection to database - trying to reconnect"),
             log.count("can't open database")))
    critical = sorted({line.split("]", 1)[-1].strip()[:120] for line in log.splitlines()
                       if "CRITICAL" in line})
    print("scheduler.log CRITICAL lines:\n  " + "\n  ".join(critical))
