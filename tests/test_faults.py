"""Fault test of the back end: daemons and CGIs SIGKILLed or stalled at random
moments while a batch of jobs goes through simulated clients; every job must
end assimilated once, with its credit granted once and no file a live job
needs deleted.

The project is a real one: make_project, a private Apache (scheduler CGI,
upload handler, download directory), the example app registered with
xadd/update_versions (a shell script: the simulated clients don't run it),
jobs made with stage_file and create_work (quorum 1, quorum 2, and quorum 2
with 3 replicas; some share an input file, some are bigger than the 8 KiB
upload size-query threshold), and the daemons of config.xml started with
bin/start: feeder, transitioner, file_deleter, sample_bitwise_validator and
script_assimilator running bin/assimilate_test, which copies the canonical
output to sample_results/WUNAME and appends "done WUNAME PID" to
assimilated.log (PID: the assimilator's).

Six simulated hosts of four users, signed up through create_account.php
(``one_result_per_user_per_wu`` is on, and a quorum-2 job with a wrong or
failed replica needs a third user), run the jobs over HTTP
(boincpy.testing.simclient).  Some of their scheduler RPCs are abandoned
after the request was sent or half-way through it, some uploads are cut
off, and they give up on any transfer that takes over 5 s; some results are
wrong (quorum-2 jobs) or compute errors.  Meanwhile two fault threads act at
random moments: one SIGKILLs a random daemon -- then runs ``bin/start
--cron`` as BOINC's cron entry does -- or pauses it (SIGSTOP, 1-5 s,
SIGCONT: a stalled process that carries on with what it had read); the
other SIGKILLs a running scheduler or upload handler CGI, or pauses one for
3-10 s (mostly a scheduler caught with its database connection open), so
that its client tries again while it still holds what it read.  A monitor
thread checks, all along, that every workunit not yet due for deletion, and
every one with an unsent or in-progress result, still has its input files.

When every job is assimilated the faults stop and the run drains (the last
results reported, files deleted).  Then: every workunit DONE with a VALID
canonical result and its output, correct, in sample_results; the
assimilation handler re-run for a workunit only after the assimilator that
ran it before was killed; no result name twice, no result sent to two hosts;
host and user credit equal to the granted credit of their valid results, the
valid results of a job credited alike, nothing granted to others; every file
deleted that should be, none earlier; nothing left in upload/ but what
BOINC's design leaves there (outputs of results the server had given up on,
an upload a stalled handler finished after the deletion -- named in the
summary); no download answered 404; no reply the client could not use; no
daemon traceback and no scheduler failure in the logs.  A failed run's logs
are copied to /tmp/boincpy-fault-logs-SEED-TIME.

Randomness comes from one seed, fixed by default so that a failure can be
replayed, and printed (and in every failure message); ``BOINCPY_FAULT_SEED=N``
runs with another seed, or replays a run's choices (thread timing still
varies).  ``BOINCPY_FAULT_JOBS=N`` changes the batch size (default 300).
"""

import os
import random
import re
import signal
import subprocess
import threading
import time
import traceback
from collections import Counter, defaultdict

import psutil
import pytest

from boincpy.config import write_config
from boincpy.files import dir_hier_path
from boincpy.jobfiles import file_infos
from boincpy.testing import simclient as sc
from boincpy.tools.control import read_pid
from tests.sched_env import install_script_app, run_tool

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(os.geteuid() != 0, reason="Apache's children run as www-data")]

APP = "example_app"
DEFAULT_SEED = 1520
SEED = int(os.environ.get("BOINCPY_FAULT_SEED") or DEFAULT_SEED)
NJOBS = int(os.environ.get("BOINCPY_FAULT_JOBS") or 300)
FAULT_PHASE_LIMIT = 150.0    # seconds for every job to be assimilated, faults and all
DRAIN_LIMIT = 60.0           # then seconds for the last reports and file deletions

DAEMONS = (
    "feeder -d 3 --sleep_interval 1",
    "transitioner -d 3 --sleep_interval 1",
    "sample_bitwise_validator -d 3 --app %s --sleep_interval 1" % APP,
    'script_assimilator -d 3 --app %s --sleep_interval 1 --script "assimilate_test wu_name files"'
    % APP,
    "file_deleter -d 3 --sleep_interval 1",
)

ASSIMILATE_SCRIPT = r"""#!/bin/sh
# script_assimilator --script "assimilate_test wu_name files": keep the canonical
# output as sample_results/WUNAME (atomically) and count the call.
proj="$(dirname "$0")/.."
if [ "$1" = "--error" ]; then
    echo "error $3 $2 $PPID" >> "$proj/assimilated.log"
    exit 0
fi
wu="$1"
mkdir -p "$proj/sample_results"
cp "$2" "$proj/sample_results/.$wu.$$" || exit 1
mv "$proj/sample_results/.$wu.$$" "$proj/sample_results/$wu" || exit 1
echo "done $wu $PPID" >> "$proj/assimilated.log"
"""

# (user, hosts): quorum-2 jobs with a bad replica need 3 users, and a replica
# lost in a detach burns one more
USERS = (("alice", 2), ("bob", 2), ("carol", 1), ("dave", 1))
CREDIT_TOLERANCE = 1e-6


def psutil_process(pid, name):
    """The live process ``pid`` if its command line names ``name``, else None."""
    try:
        proc = psutil.Process(pid)
        if name in " ".join(proc.cmdline()) and proc.status() != psutil.STATUS_ZOMBIE:
            return proc
    except (psutil.Error, ValueError):
        pass
    return None


def result_suffix(name):
    return int(name.rsplit("_", 1)[1])


def behaviour(task):
    """Which replicas go wrong, by name (so a resend goes the same way):
    first replicas of every 5th quorum-2 job are wrong (the validator then
    asks for a third), second replicas of some others fail, as do first
    replicas of some quorum-1 jobs.  Never two bad replicas of one job."""
    kind, i = task.wu.name.split("_")[:2]
    i, k = int(i), result_suffix(task.name)
    if kind == "q2" and i % 5 == 0 and k == 0:
        return sc.WRONG
    if kind == "q2" and i % 5 != 0 and i % 7 == 3 and k == 1:
        return sc.ERROR
    if kind == "q1" and i % 11 == 5 and k == 0:
        return sc.ERROR
    return sc.GOOD


class Run:
    """One fault run: the project, its hosts, what was done to it and what was seen."""

    #: how the simulated hosts ask for work, hold jobs and misbehave
    HOST_PARAMS = dict(work_req_seconds=40.0, max_tasks=6, abort_rpc_prob=0.08,
                       abort_upload_prob=0.05, delay_cap=1.0, idle_delay=1.0, timeout=5.0)

    def __init__(self, apache, seed):
        self.apache = apache
        self.p = apache.project
        self.seed = seed
        self.rng = random.Random(seed)
        self.t0 = time.monotonic()
        self.stop_faults = threading.Event()
        self.stop_clients = threading.Event()
        self.kills = []               # (seconds, "[pause ]NAME" or "[pause ]cgi", pid, cmdline)
        self.violations = []          # input files missing while still needed
        self.thread_errors = []
        self.cgi_hunts = 0
        self.inputs = {}              # workunit name -> expected output bytes
        self.hosts = []
        self.timeline = []

    def elapsed(self):
        return time.monotonic() - self.t0

    def say(self, text):
        line = "[%6.1f s] %s" % (self.elapsed(), text)
        self.timeline.append(line)
        print(line, flush=True)

    def db(self):
        return self.p.connect()

    def rows(self, sql, params=()):
        db = self.db()
        try:
            return db.query(sql, params)
        finally:
            db.close()

    # -- setup ---------------------------------------------------------------------

    def setup(self):
        p = self.p
        cfg = p.cfg
        opts = cfg.as_options()
        opts.update(min_sendwork_interval=0, resend_lost_results=1, max_wus_to_send=10,
                    daily_result_quota=10000, debug_handle_results=1, debug_resend=1)
        write_config(p.root, opts, [{"cmd": c} for c in DAEMONS], cfg.tasks)
        p.reload()
        with open(p.bin("assimilate_test"), "w") as f:
            f.write(ASSIMILATE_SCRIPT)
        os.chmod(p.bin("assimilate_test"), 0o755)
        install_script_app(p, APP)
        # the volunteers sign up through the web RPC, as the stock client does
        self.users = [(name, sc.create_account(self.apache.master_url, name + "@example.com",
                                               "pw-" + name, name), nhosts)
                      for name, nhosts in USERS]
        self.make_jobs()

    def make_jobs(self):
        """NJOBS workunits: half quorum 1, a third quorum 2, the rest quorum 2 with
        three replicas; every 10th quorum-1 job shares the input of the one
        before, every 6th input is bigger than 8 KiB."""
        n1 = NJOBS // 2
        n2 = NJOBS // 3
        n3 = NJOBS - n1 - n2
        stage = os.path.join(self.p.root, "fault_inputs")
        os.makedirs(stage)
        lines = {"q1": [], "q2": [], "q3": []}
        for kind, n in (("q1", n1), ("q2", n2), ("q3", n3)):
            for i in range(n):
                wu = "%s_%d" % (kind, i)
                src = "in_%s" % wu
                if kind == "q1" and i % 10 == 1:
                    src = "in_q1_%d" % (i - 1)          # shared with the job before
                else:
                    reps = 400 if i % 6 == 0 else 3
                    text = "".join("job %s line %d of %d\n" % (wu, j, reps) for j in range(reps))
                    with open(os.path.join(stage, src), "w") as f:
                        f.write(text)
                with open(os.path.join(stage, src), "rb") as f:
                    self.inputs[wu] = f.read().upper()
                lines[kind].append("--wu_name %s %s" % (wu, src))
        run_tool(self.p, "stage_file", stage)
        common = ["--appname", APP, "--stdin", "--rsc_fpops_est", "1e10",
                  "--rsc_fpops_bound", "1e12", "--delay_bound", "86400",
                  "--max_error_results", "3", "--max_total_results", "8",
                  "--max_success_results", "6"]
        for kind, quorum, target in (("q1", 1, 1), ("q2", 2, 2), ("q3", 2, 3)):
            run_tool(self.p, "create_work", *common, "--min_quorum", str(quorum),
                     "--target_nresults", str(target), input="\n".join(lines[kind]) + "\n")
        self.say("seed %d: %d jobs (%d quorum 1, %d quorum 2, %d quorum 2 of 3), %d users"
                 % (self.seed, NJOBS, n1, n2, n3, len(USERS)))

    def start_daemons(self):
        proc = subprocess.run([self.p.bin("start")], cwd=self.p.root, capture_output=True,
                              text=True, timeout=60)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        self.say("bin/start: daemons started")

    def cron(self):
        proc = subprocess.run([self.p.bin("start"), "--cron"], cwd=self.p.root,
                              capture_output=True, text=True, timeout=60)
        if proc.returncode:
            self.thread_errors.append("bin/start --cron failed: %s" % (proc.stdout + proc.stderr))

    # -- the threads ---------------------------------------------------------------------

    def _guard(self, name, fn):
        def run():
            try:
                fn()
            except Exception:
                self.thread_errors.append("%s: %s" % (name, traceback.format_exc()))
                self.stop_faults.set()
                self.stop_clients.set()
        t = threading.Thread(target=run, name=name, daemon=True)
        t.start()
        return t

    def make_hosts(self):
        n = 0
        for name, auth, nhosts in self.users:
            for _ in range(nhosts):
                n += 1
                self.hosts.append(sc.SimHost(
                    self.apache.scheduler_url, auth, name="%s-host%d" % (name, n),
                    seed=self.rng.getrandbits(32), behaviour=behaviour, **self.HOST_PARAMS))

    def client_loop(self, host):
        while not self.stop_clients.is_set():
            if host.due():
                host.cycle()
            else:
                time.sleep(0.05)

    def daemon_faults(self):
        """At random moments a random daemon is SIGKILLed (then bin/start --cron
        restarts it, as BOINC's cron entry does) or paused (SIGSTOP for 1-5 s,
        then SIGCONT: a stalled process carrying on with what it read before)."""
        rng = random.Random(self.rng.getrandbits(32))
        names = [c.split()[0] for c in DAEMONS]
        while not self.stop_faults.wait(rng.uniform(0.1, 0.8)):
            name = rng.choice(names)
            proc = psutil_process(read_pid(os.path.join(self.p.cfg.pid_dir, name + ".pid")),
                                  name)
            if rng.random() < 0.8:
                if self._signal(proc, name, signal.SIGKILL):
                    self.stop_faults.wait(rng.uniform(0.0, 1.0))
                    self.cron()
            else:
                self._pause(proc, name, rng.uniform(1.0, 5.0))

    def cgi_faults(self):
        """At random moments a running scheduler or upload handler CGI is SIGKILLed,
        or one is paused (3-10 s: mostly longer than the clients wait, so they try
        again while it holds what it read) -- mostly a scheduler caught talking
        to the database, where reports are read and written."""
        rng = random.Random(self.rng.getrandbits(32))
        while not self.stop_faults.wait(rng.uniform(0.1, 0.6)):
            if rng.random() < 0.5:
                proc = self._running_cgi(rng)
                if proc is not None:
                    time.sleep(rng.uniform(0.0, 0.03))
                    self._signal(proc, "cgi", signal.SIGKILL)
            else:
                proc = self._running_cgi(rng, in_database=rng.random() < 0.7)
                if proc is not None:
                    self._pause(proc, "cgi", rng.uniform(3.0, 10.0))

    def _signal(self, proc, name, sig):
        if proc is None:
            return False
        try:
            cmdline = " ".join(proc.cmdline())
            proc.send_signal(sig)
        except psutil.Error:
            return False
        what = name if sig == signal.SIGKILL else "pause " + name
        self.kills.append((self.elapsed(), what, proc.pid, cmdline))
        return True

    def _pause(self, proc, name, seconds):
        if self._signal(proc, name, signal.SIGSTOP):
            self.stop_faults.wait(seconds)
            try:
                proc.send_signal(signal.SIGCONT)
            except psutil.Error:
                pass

    def _running_cgi(self, rng, in_database=False):
        """A scheduler or upload handler CGI process caught running (within ~1 s);
        ``in_database``: a scheduler with a database connection open."""
        marker = os.path.join(self.p.root, "cgi-bin") + os.sep
        self.cgi_hunts += 1
        deadline = time.monotonic() + 1.0
        while time.monotonic() < deadline and not self.stop_faults.is_set():
            running = []
            for proc in psutil.process_iter(["pid", "cmdline"]):
                cmdline = " ".join(proc.info["cmdline"] or [])
                if marker not in cmdline:
                    continue
                if in_database:
                    try:
                        if not (cmdline.endswith("/cgi") and proc.net_connections("all")):
                            continue
                    except psutil.Error:
                        continue
                running.append(proc)
            if running:
                return rng.choice(running)
            time.sleep(0.005)
        return None

    def live_inputs_check(self):
        """Every workunit whose files are not to be deleted yet (file_delete_state
        INIT), and every one with an unsent or in-progress result, has its input
        files; a missing one is checked again against the rows, read again."""
        cfg = self.p.cfg
        rows = self.rows("SELECT id, name, xml_doc FROM workunit WHERE file_delete_state = 0 "
                         "OR id IN (SELECT workunitid FROM result WHERE server_state IN (2, 4))")
        for w in rows:
            for fi in file_infos(w["xml_doc"]):
                path = dir_hier_path(cfg.download_dir, fi.name, cfg.uldl_dir_fanout)
                if os.path.exists(path):
                    continue
                wu = self.rows("SELECT file_delete_state FROM workunit WHERE id = %s",
                               (w["id"],))[0]
                live = self.rows("SELECT name, server_state FROM result WHERE workunitid = %s "
                                 "AND server_state IN (2, 4)", (w["id"],))
                if live or wu["file_delete_state"] == 0:
                    self.violations.append(
                        "%.1f s: %s of %s missing (file_delete_state %d, live results %s)"
                        % (self.elapsed(), fi.name, w["name"], wu["file_delete_state"], live))

    def progress(self):
        return self.rows("SELECT SUM(assimilate_state = 2) AS assimilated, "
                         "SUM(file_delete_state = 2) AS deleted, COUNT(*) AS n FROM workunit")[0]

    def monitor_until(self, done, limit):
        """Check the live-input invariant every half second until ``done()``; False on timeout."""
        deadline = time.monotonic() + limit
        last_print = 0.0
        while time.monotonic() < deadline:
            self.live_inputs_check()
            if self.thread_errors:
                return False
            if done():
                return True
            if time.monotonic() - last_print > 10:
                last_print = time.monotonic()
                prog = self.progress()
                self.say("assimilated %s/%s, files deleted %s; %d kills so far"
                         % (prog["assimilated"], prog["n"], prog["deleted"], len(self.kills)))
            time.sleep(0.5)
        return False

    def all_assimilated(self):
        return self.progress()["assimilated"] == NJOBS

    def drained(self):
        r = self.rows(
            "SELECT (SELECT COUNT(*) FROM workunit WHERE file_delete_state <> 2) AS wus, "
            "(SELECT COUNT(*) FROM result WHERE server_state <> 5) AS live, "
            "(SELECT COUNT(*) FROM result WHERE outcome IN (1, 3) AND file_delete_state <> 2)"
            " AS outputs")[0]
        return not (r["wus"] or r["live"] or r["outputs"])

    # -- the run -----------------------------------------------------------------------

    def run(self):
        self.make_hosts()
        self.start_daemons()
        clients = [self._guard(h.name, lambda h=h: self.client_loop(h)) for h in self.hosts]
        faults = [self._guard("daemon faults", self.daemon_faults),
                  self._guard("CGI faults", self.cgi_faults)]
        ok = self.monitor_until(self.all_assimilated, FAULT_PHASE_LIMIT)
        self.stop_faults.set()
        for t in faults:
            t.join(30)
        self.cron()                   # whatever was killed last runs again
        self.say("fault phase %s: %s" % ("over" if ok else "TIMED OUT",
                                          dict(Counter(k[1] for k in self.kills))))
        if ok:
            ok = self.monitor_until(self.drained, DRAIN_LIMIT)
            self.say("drained" if ok else "drain TIMED OUT")
        self.stop_clients.set()
        for t in clients:
            t.join(90)
        return ok

    def stop_daemons(self):
        subprocess.run([self.p.bin("stop"), "--stop-timeout=10"], cwd=self.p.root,
                       capture_output=True, timeout=120)

    # -- the verdict ----------------------------------------------------------------

    def diagnosis(self):
        """What state things are in, for a failure message."""
        out = ["seed %d (replay: BOINCPY_FAULT_SEED=%d), %d jobs, %.0f s"
               % (self.seed, self.seed, NJOBS, self.elapsed())]
        out += self.timeline[-12:]
        out.append("workunits by (assimilate, file_delete, need_validate, error_mask): %s"
                   % Counter((w["assimilate_state"], w["file_delete_state"], w["need_validate"],
                              w["error_mask"])
                             for w in self.rows("SELECT * FROM workunit")).most_common())
        out.append("results by (server_state, outcome, validate_state, file_delete): %s"
                   % Counter((r["server_state"], r["outcome"], r["validate_state"],
                              r["file_delete_state"])
                             for r in self.rows("SELECT * FROM result")).most_common())
        for w in self.rows("SELECT * FROM workunit WHERE assimilate_state <> 2 OR "
                           "file_delete_state <> 2 LIMIT 8"):
            rs = self.rows("SELECT name, server_state, outcome, validate_state, hostid, userid, "
                           "file_delete_state FROM result WHERE workunitid = %s", (w["id"],))
            out.append("  %s: assimilate %d, fd %d, need_validate %d, canonical %d, target %d,"
                       " transition in %d s; results %s"
                       % (w["name"], w["assimilate_state"], w["file_delete_state"],
                          w["need_validate"], w["canonical_resultid"], w["target_nresults"],
                          w["transition_time"] - time.time(), [tuple(r.values()) for r in rs]))
        for h in self.hosts:
            out.append("  %s (host %d): %d tasks held, %d received, %d acked, %d aborted RPCs,"
                       " %d RPC errors %s" % (h.name, h.hostid, len(h.tasks), len(h.received),
                                              len(h.acked), h.aborted_rpcs, len(h.rpc_errors),
                                              h.rpc_errors[-2:]))
        out.append("kills: %s" % Counter(k[1] for k in self.kills))
        out += self.thread_errors
        out += self.violations[:10]
        out += self.log_problems()[:20]
        return "\n".join(str(x) for x in out)

    def log_problems(self):
        """Tracebacks in daemon logs, scheduler failures, CGI errors."""
        problems = []
        log_dir = self.p.cfg.host_log_dir
        for name in sorted(os.listdir(log_dir)):
            path = os.path.join(log_dir, name)
            if not os.path.isfile(path):
                continue
            with open(path, errors="replace") as f:
                text = f.read()
            for m in re.finditer(r"Traceback \(most recent call last\).*?(?=\n\S|\Z)", text,
                                 re.S):
                problems.append("%s: %s" % (name, m.group(0)[-1500:]))
            for line in text.splitlines():
                if "Scheduler failed" in line or "handler error" in line:
                    problems.append("%s: %s" % (name, line))
        return problems


def assimilations(run):
    """workunit name -> [assimilator pid, ...] from assimilated.log."""
    runs = defaultdict(list)
    path = run.p.path("assimilated.log")
    with open(path) as f:
        for line in f:
            words = line.split()
            if words[0] == "done":
                runs[words[1]].append(int(words[2]))
            else:
                runs[words[2]].append(int(words[3]))
    return runs


def killed_assimilators(run):
    """Pids of the script_assimilators the run killed.  A handler script whose
    assimilator was killed between fork and the script's start finds itself
    an orphan: its $PPID is 1 (init took it over), so 1 stands for "killed"."""
    return {k[2] for k in run.kills if k[1] == "script_assimilator"} | {1}


def log_lines(run, *names):
    """Lines of the daemon and scheduler logs naming any of these results."""
    out = []
    for log in sorted(os.listdir(run.p.cfg.host_log_dir)):
        path = os.path.join(run.p.cfg.host_log_dir, log)
        if not log.endswith(".log") or not os.path.isfile(path):
            continue
        with open(path, errors="replace") as f:
            for line in f:
                if any(re.search(r"\b%s\b" % re.escape(n), line) for n in names):
                    out.append("%s: %s" % (log, line.rstrip()))
    return sorted(out, key=lambda l: l.split(": ", 1)[1][:28])


def credit_trail(run, table, rowid):
    """The validator's and scheduler's log lines about the valid results of a
    host or user whose credit is off (results validated twice show up here)."""
    column = "hostid" if table == "host" else "userid"
    names = {r["name"] for r in run.rows("SELECT name FROM result WHERE validate_state = 1 "
                                         "AND %s = %%s" % column, (rowid,))}
    lines = []
    for log in ("sample_bitwise_validator.log", "scheduler.log", "transitioner.log"):
        path = os.path.join(run.p.cfg.host_log_dir, log)
        if not os.path.exists(path):
            continue
        with open(path, errors="replace") as f:
            for line in f:
                found = re.findall(r"\[RESULT#\d+ (\S+?)\]|result (\S+)", line)
                if any(n in names for pair in found for n in pair):
                    lines.append("%s: %s" % (log, line.rstrip()))
    counts = Counter(re.search(r"\[RESULT#\d+ (\S+?)\]", l).group(1) for l in lines
                     if "sample_bitwise_validator" in l
                     and ("Valid; granted" in l or "pair_check() matched" in l))
    twice = [n for n, c in counts.items() if c > 1]
    return "results credited more than once by the validator's log: %s\n%s" % (
        twice, "\n".join(l for l in lines if any(n in l for n in twice))[-6000:])


def left_in_upload(run):
    """Files in upload/ -> why they may be there, or None if nothing explains it.

    Two causes are BOINC's design, not a fault: outputs uploaded for results the
    server had given up on (NO_REPLY, CLIENT_DETACHED: the transitioner never
    marks them for deletion), and an upload that a stalled upload handler
    completed after the file deleter had removed the output (the handler
    doesn't look at the database).  bin/antique_file_deleter removes both
    kinds once they are old (32 days) and their result rows purged.
    """
    cfg = run.p.cfg
    outcome = {}
    for r in run.rows("SELECT outcome, xml_doc_in FROM result"):
        for fi in file_infos(r["xml_doc_in"]):
            outcome[fi.name] = r["outcome"]
    paused = {k[2] for k in run.kills if k[1] == "pause cgi"}
    out = {}
    for top, _, files in os.walk(cfg.upload_dir):
        for f in files:
            path = os.path.join(top, f)
            out[path] = None
            if outcome.get(f) in (4, 7):
                out[path] = "output of a result the server gave up on (outcome %d)" % outcome[f]
                continue
            lines = log_lines(run, f)
            unlinked = [l for l in lines if l.startswith("file_deleter.log") and "unlinked" in l]
            late = [l for l in lines if "Uploaded %s " % f in l
                    and int(re.search(r"\[PID=(\d+)\]", l).group(1)) in paused]
            if unlinked and late and max(late, key=_stamp) > min(unlinked, key=_stamp):
                out[path] = "re-created by a stalled upload handler after its deletion"
    return out


def _stamp(line):
    return line.split(": ", 1)[1][:24]


def check_outcome(run):
    """Every assertion of the fault test (see the module docstring)."""
    why = run.diagnosis
    cfg = run.p.cfg
    wus = {w["name"]: w for w in run.rows("SELECT * FROM workunit")}
    results = run.rows("SELECT * FROM result")
    by_id = {r["id"]: r for r in results}

    # every job assimilated with a valid canonical result, its output kept once
    assert len(wus) == NJOBS, why()
    bad = [n for n, w in wus.items()
           if (w["assimilate_state"], w["error_mask"], w["file_delete_state"]) != (2, 0, 2)
           or w["canonical_resultid"] not in by_id
           or (by_id[w["canonical_resultid"]]["outcome"],
               by_id[w["canonical_resultid"]]["validate_state"]) != (1, 1)]
    assert not bad, "not finished right: %s\n%s" % (bad[:10], why())
    kept = set(n for n in os.listdir(run.p.path("sample_results")) if not n.startswith("."))
    assert kept == set(wus), (kept ^ set(wus), why())
    wrong = [n for n in wus
             if open(run.p.path("sample_results", n), "rb").read() != run.inputs[n]]
    assert not wrong, "wrong canonical output: %s\n%s" % (wrong[:10], why())
    leftovers = [n for n in os.listdir(run.p.path("sample_results")) if n.startswith(".")]
    assert not leftovers, leftovers

    # the handler ran again only where the assimilator that ran it was killed
    killed = killed_assimilators(run)
    runs = assimilations(run)
    assert set(runs) == set(wus), (set(wus) - set(runs), why())
    twice = {n: pids for n, pids in runs.items()
             if len(pids) > 1 and not set(pids[:-1]) <= killed}
    assert not twice, "assimilated twice without a crash: %s\n%s" % (twice, why())

    # results: unique names, each sent to one host, all over
    names = Counter(r["name"] for r in results)
    assert [n for n, c in names.items() if c > 1] == [], why()
    holder = {}
    for h in run.hosts:
        for name in set(h.received):
            assert holder.setdefault(name, h.name) == h.name, \
                "%s sent to %s and %s\n%s" % (name, holder[name], h.name, why())
    assert all(r["server_state"] == 5 for r in results), why()
    for r in results:
        if r["outcome"] == 1:           # reported success: by the host it was sent to
            assert r["name"] in holder, (r["name"], why())

    # credit: granted once, to valid results only, totals equal to the sum
    host_sum, user_sum = defaultdict(float), defaultdict(float)
    for r in results:
        if r["validate_state"] == 1:
            host_sum[r["hostid"]] += r["granted_credit"]
            user_sum[r["userid"]] += r["granted_credit"]
        else:
            assert r["granted_credit"] == 0, "%s: validate_state %d with credit %r\n%s\n%s" % (
                r["name"], r["validate_state"], r["granted_credit"],
                "\n".join(log_lines(run, r["name"])[-30:]), why())
    assert sum(host_sum.values()) > 0, why()
    per_wu = defaultdict(set)
    for r in results:
        if r["validate_state"] == 1:
            per_wu[r["workunitid"]].add(r["granted_credit"])
    uneven = {w: c for w, c in per_wu.items() if len(c) > 1}
    assert not uneven, "valid results of a job credited differently: %s\n%s" % (uneven, why())
    for table, sums in (("host", host_sum), ("user", user_sum)):
        for row in run.rows("SELECT id, total_credit FROM %s" % table):
            expected = sums.get(row["id"], 0.0)
            assert abs(row["total_credit"] - expected) <= CREDIT_TOLERANCE * max(1.0, expected), \
                "%s %d: total_credit %r, valid results %r\n%s\n%s" % (
                    table, row["id"], row["total_credit"], expected,
                    credit_trail(run, table, row["id"]), why())

    # files: inputs and outputs deleted (they are all DONE); nothing left over
    for w in wus.values():
        for fi in file_infos(w["xml_doc"]):
            path = dir_hier_path(cfg.download_dir, fi.name, cfg.uldl_dir_fanout)
            assert not os.path.exists(path) and not os.path.exists(path + ".md5"), (path, why())
    stray = [f for f, why_left in left_in_upload(run).items() if why_left is None]
    assert stray == [], "files left in upload/:\n%s\n%s" % (
        "\n".join("%s (written %s)\n    %s" % (
            f, time.strftime("%H:%M:%S", time.localtime(os.stat(f).st_mtime)),
            "\n    ".join(log_lines(run, os.path.basename(f).lstrip(".").replace(".part", ""))))
            for f in stray[:5]), why())
    for r in results:
        if r["outcome"] in (1, 3):
            assert r["file_delete_state"] == 2, (r["name"], why())

    # what the clients saw, what the monitor saw, what the logs say
    assert run.violations == [], "\n".join(run.violations[:20]) + "\n" + why()
    downloads_404 = [e for h in run.hosts for e in h.download_errors]
    assert downloads_404 == [], (downloads_404, why())
    unusable = [e for h in run.hosts for e in h.protocol_errors]
    assert unusable == [], (unusable[:3], why())
    assert run.thread_errors == [], why()
    assert run.log_problems() == [], why()


def count_lines(run, log, text):
    path = os.path.join(run.p.cfg.host_log_dir, log)
    if not os.path.exists(path):
        return 0
    with open(path, errors="replace") as f:
        return sum(1 for line in f if text in line)


def summary(run):
    kills = Counter(k[1] for k in run.kills)
    reruns = sum(len(p) - 1 for p in assimilations(run).values())
    results = run.rows("SELECT outcome, validate_state, COUNT(*) AS n FROM result "
                       "GROUP BY outcome, validate_state")
    left = Counter(v for v in left_in_upload(run).values() if v)
    return ("seed %d: %d jobs in %.0f s; kills %s (CGI hunts %d); aborted RPCs %d, "
            "cut uploads %d, "
            "RPC errors %d; stale reports refused %d; uploads completed meanwhile %d; "
            "lost jobs found %d; assimilation re-runs after a kill %d; results %s; "
            "left in upload/: %s"
            % (run.seed, NJOBS, run.elapsed(), dict(kills), run.cgi_hunts,
               sum(h.aborted_rpcs for h in run.hosts),
               sum(h.aborted_uploads for h in run.hosts),
               sum(len(h.rpc_errors) for h in run.hosts),
               count_lines(run, "scheduler.log", "result rows changed meanwhile"),
               count_lines(run, "file_upload_handler.log", "completed by another upload"),
               count_lines(run, "scheduler.log", "found lost"), reruns,
               {(r["outcome"], r["validate_state"]): r["n"] for r in results}, dict(left)))


def _cleanup(run):
    """Stop whatever the run left: daemons (bin/stop), stray project processes,
    job array files."""
    run.stop_faults.set()
    run.stop_clients.set()
    run.stop_daemons()
    root = run.p.root
    for proc in psutil.process_iter(["pid", "cmdline", "cwd"]):
        try:
            if root in " ".join(proc.info["cmdline"] or []) or \
                    (proc.info["cwd"] or "").startswith(root + os.sep):
                proc.kill()
        except psutil.Error:
            pass
    from boincpy import shmem
    path = shmem.segment_path(run.p.cfg)
    for leftover in [path] + [os.path.join(os.path.dirname(path), n)
                              for n in os.listdir(os.path.dirname(path))
                              if n.startswith(os.path.basename(path) + ".new.")]:
        try:
            os.unlink(leftover)
        except OSError:
            pass


def test_daemons_and_cgis_killed_at_random_lose_nothing(apache):
    run = Run(apache, SEED)
    print("\nfault test seed %d (replay: BOINCPY_FAULT_SEED=%d)" % (SEED, SEED), flush=True)
    try:
        run.setup()
        ok = run.run()
        assert ok, "the run did not finish\n" + run.diagnosis()
        run.stop_daemons()
        check_outcome(run)
        print(summary(run), flush=True)
    except BaseException:
        keep_logs(run)
        raise
    finally:
        _cleanup(run)


def keep_logs(run):
    """Copy the project's logs somewhere that outlives the test (named in the output)."""
    import shutil
    dest = "/tmp/boincpy-fault-logs-%d-%d" % (run.seed, int(time.time()))
    try:
        shutil.copytree(run.p.cfg.host_log_dir, dest)
        for name in ("assimilated.log", "config.xml"):
            if os.path.exists(run.p.path(name)):
                shutil.copy(run.p.path(name), dest)
        print("logs of the failed run kept in %s" % dest, flush=True)
    except OSError as exc:
        print("could not keep the logs: %s" % exc, flush=True)
