#!/usr/bin/env python3
"""The fault soak: tests/test_faults.py's SIGKILL/SIGSTOP fault run scaled up
(10,000 jobs by default, many simulated hosts), with the database server
restarted mid-run and the upload disk full for a while.  Not run by CI.

Everything of the fault test goes on at once -- daemons SIGKILLed (then
``bin/start --cron``) or paused, scheduler and upload handler CGIs killed or
paused, simulated hosts abandoning RPCs and uploads, wrong and failed
replicas -- and besides:

* the project's database lives on a MariaDB server of the bench's own
  (mariadbd with its own data directory and socket, also on 127.0.0.1:3340;
  never the machine's server): once 40% of the jobs are assimilated it is
  shut down and started again, at 70% it is stopped (SIGSTOP) for a second,
  so that requests and daemons wait on it, then SIGKILLed (a crash) and
  started again; daemons that lose it exit and ``bin/start --cron`` (every
  5 s, as BOINC's cron entry) starts them again, and a request that lost it
  logs one line ("lost connection to database (...)"), never a traceback;
* the upload directory is a tmpfs of its own (1.25 GB: the upload handler
  wants 1 GB free, as BOINC's): once 25% of the jobs are assimilated it is
  filled to the last byte for 30 s (the upload handler answers "Server is
  out of disk space", a transient error), then freed.

It prints the jobs per hour (from the daemons' start to the last job
assimilated), the results lost (reported by a host and acknowledged by the
server, but not recorded), the double assimilations (a job's handler run
again without the assimilator that ran it having been killed), the peak
memory of each daemon (RSS, sampled every second, over every restart), and,
first, the fault test's verdict (check_outcome): "passed", or the assert that
failed (file, line, statement) with its message's first line -- the message
in full (the run's diagnosis) comes after the figures.  Run it niced, as root:

    nice -n 10 .venv/bin/python bench/bench_soak.py [--jobs 10000] [--users 10]
        [--hosts-per-user 4] [--minutes 120] [--seed N] [--persistent N]

``--persistent N`` runs the scheduler, the upload handler and the web RPCs in
persistent mode with N processes: the CGI faults then SIGKILL or pause one
of those processes instead.

If the jobs are not all assimilated within --minutes the run stops there and
says how far it got (the jobs per hour are then those assimilated so far).
"""

import argparse
import errno
import os
import signal
import subprocess
import sys
import threading
import time
import traceback
from collections import Counter, defaultdict

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

import psutil  # noqa: E402

from boincpy.tools.httpd import PrivateApache  # noqa: E402
from tests import test_faults as tf  # noqa: E402
from tests.conftest import (RunningApache, make_test_project,  # noqa: E402
                            remove_test_project)
from tests.mariadb_instance import MariaDB, available  # noqa: E402

DB_PORT = 3340
# The upload handler refuses uploads while its disk has under 1 GB free (BOINC's
# FUH_MIN_FREE_SPACE), so the tmpfs must hold that much more than the outputs.
UPLOAD_FS_MB = 1280
DISK_FULL_SECONDS = 30.0
CRON_PERIOD = 5.0
PAUSE_BEFORE_CRASH = 1.0        # seconds MariaDB is stopped before its SIGKILL
INPUT_CHECK_PERIOD = 30.0       # the live-input check reads every workunit: not every 0.5 s


class SoakRun(tf.Run):
    """A fault run with the database restarts, the full disk and the
    memory sampling of the soak."""

    def __init__(self, apache, seed, db, args):
        super().__init__(apache, seed)
        self.HOST_PARAMS = dict(tf.Run.HOST_PARAMS, work_req_seconds=120.0,
                                max_tasks=args.max_tasks, timeout=10.0)
        self.private_db = db
        self.args = args
        self.t_start = None
        self.t_assimilated = None
        self.peak_rss = defaultdict(int)      # daemon name -> bytes
        self.events = []                      # (seconds since start, text)
        self._last_input_check = 0.0
        self._cron_lock = threading.Lock()     # bin/start refuses to run twice at once

    def _running_cgi(self, rng, in_database=False):
        if not self.args.persistent:
            return super()._running_cgi(rng, in_database)
        # persistent mode: one of the processes serving the requests
        from boincpy.tools.server_mode import persistent_pids
        self.cgi_hunts += 1
        pids = persistent_pids(self.p.root)
        if not pids:
            return None
        try:
            return psutil.Process(rng.choice(pids))
        except psutil.Error:
            return None

    def event(self, text):
        self.events.append((time.monotonic() - (self.t_start or self.t0), text))
        self.say(text)

    def live_inputs_check(self):
        now = time.monotonic()
        if now - self._last_input_check >= INPUT_CHECK_PERIOD:
            self._last_input_check = now
            try:
                super().live_inputs_check()
            except Exception as exc:          # the database may be restarting
                self.say("live-input check skipped: %r" % exc)

    def progress(self):
        while True:
            try:
                return super().progress()
            except Exception:                  # the database is restarting
                time.sleep(1.0)

    def all_assimilated(self):
        done = super().all_assimilated()
        if done and self.t_assimilated is None:
            self.t_assimilated = time.monotonic()
        return done

    def start_daemons(self):
        super().start_daemons()
        self.t_start = time.monotonic()

    # -- the soak's own threads ---------------------------------------------------------

    def cron(self):
        with self._cron_lock:
            super().cron()

    def cron_loop(self):
        while not self.stop_clients.wait(CRON_PERIOD):
            self.cron()

    def assimilated_fraction(self):
        return int(self.progress()["assimilated"] or 0) / float(tf.NJOBS)

    def wait_for_fraction(self, fraction):
        while not self.stop_faults.wait(2.0):
            if self.assimilated_fraction() >= fraction:
                return True
        return False

    def database_faults(self):
        if not self.wait_for_fraction(0.4):
            return
        away = self.private_db.restart(signal.SIGTERM)
        self.event("MariaDB shut down and started again (away %.1f s)" % away)
        if not self.wait_for_fraction(0.7):
            return
        self.private_db.proc.send_signal(signal.SIGSTOP)
        self.stop_faults.wait(PAUSE_BEFORE_CRASH)
        away = self.private_db.restart(signal.SIGKILL)
        self.event("MariaDB stopped %.0f s, SIGKILLed and started again (away %.1f s)"
                   % (PAUSE_BEFORE_CRASH, away))

    def disk_full(self):
        if not self.wait_for_fraction(0.25):
            return
        upload = self.p.cfg.upload_dir
        filler = os.path.join(upload, ".soak_filler")
        st = os.statvfs(upload)
        size = st.f_bavail * st.f_frsize
        with open(filler, "wb") as f:
            while size > 0:                 # uploads still land meanwhile
                try:
                    os.posix_fallocate(f.fileno(), 0, size)
                    break
                except OSError as exc:
                    if exc.errno != errno.ENOSPC:
                        raise
                    size -= 1 << 20
        st = os.statvfs(upload)
        self.event("upload disk full (%d MB filler, %d bytes left) for %.0f s"
                   % (size >> 20, st.f_bavail * st.f_frsize, DISK_FULL_SECONDS))
        self.stop_faults.wait(DISK_FULL_SECONDS)
        os.unlink(filler)
        self.event("upload disk freed")

    def sample_memory(self):
        bin_dir = self.p.bin("")
        while not self.stop_clients.wait(1.0):
            for proc in psutil.process_iter(["cmdline", "memory_info"]):
                cmd = proc.info["cmdline"] or []
                if len(cmd) < 2 or not cmd[1].startswith(bin_dir):
                    continue
                name = os.path.basename(cmd[1])
                mem = proc.info["memory_info"]
                if mem is not None and mem.rss > self.peak_rss[name]:
                    self.peak_rss[name] = mem.rss

    def run(self):
        extra = [self._guard("cron", self.cron_loop),
                 self._guard("memory", self.sample_memory)]
        self._extra_faults = [self._guard("database faults", self.database_faults),
                              self._guard("disk full", self.disk_full)]
        ok = super().run()
        for t in extra + self._extra_faults:
            t.join(60)
        return ok


def mount_upload_tmpfs(cfg):
    """Put a tmpfs of its own on the upload directory, keeping its owner and
    mode and the hierarchy's directories make_project created (the file
    deleter takes a missing one for an error, as BOINC's); returns the mount
    point."""
    path = cfg.upload_dir
    st = os.stat(path)
    subdirs = [(e.name, os.stat(e.path)) for e in os.scandir(path) if e.is_dir()]
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=%dm,mode=%o,uid=%d,gid=%d"
                    % (UPLOAD_FS_MB, st.st_mode & 0o7777, st.st_uid, st.st_gid),
                    "tmpfs", path], check=True)
    for name, sub in subdirs:
        d = os.path.join(path, name)
        os.mkdir(d)
        os.chown(d, sub.st_uid, sub.st_gid)
        os.chmod(d, sub.st_mode & 0o7777)
    return path


def lost_results(run):
    """Results a host reported and the server acknowledged, whose row does not
    show the report."""
    acked = {name for h in run.hosts for name in h.acked}
    rows = {r["name"]: r for r in run.rows(
        "SELECT name, server_state, outcome, received_time FROM result")}
    return sorted(n for n in acked
                  if n not in rows or rows[n]["server_state"] != 5 or not rows[n]["outcome"])


def double_assimilations(run):
    killed = tf.killed_assimilators(run)
    runs = tf.assimilations(run)
    doubles = {n: pids for n, pids in runs.items()
               if len(pids) > 1 and not set(pids[:-1]) <= killed}
    reruns = sum(len(p) - 1 for p in runs.values())
    return doubles, reruns


def failed_assertion(exc):
    """The verdict of a failed check_outcome: the assert statement that
    failed (file:line: source) first, then the first line of its message;
    the rest of the message (the run's diagnosis) is printed after the
    report by :func:`main`."""
    frame = traceback.extract_tb(exc.__traceback__)[-1]
    where = "%s:%d: %s" % (os.path.relpath(frame.filename, REPO), frame.lineno,
                           (frame.line or "").strip())
    first = str(exc).split("\n", 1)[0]
    return "FAILED at %s\n    %s" % (where, first[:500] + (" ..." if len(first) > 500 else ""))


def lost_database_lines(run):
    """The lines of the project's logs and Apache's error log saying a
    request or a daemon lost the database."""
    paths = [os.path.join(run.p.cfg.host_log_dir, name)
             for name in sorted(os.listdir(run.p.cfg.host_log_dir))]
    paths.append(run.apache.error_log)
    lines = []
    for path in paths:
        if os.path.isfile(path):
            with open(path, errors="replace") as f:
                lines += [line for line in f if "lost connection to database (" in line
                          or "can't open database" in line]
    return lines


def check_apache_log(run):
    """No traceback in Apache's error log either (the CGIs' stderr; the
    fault test's check_outcome reads the project's logs)."""
    with open(run.apache.error_log, errors="replace") as f:
        text = f.read()
    assert "Traceback" not in text, text[text.find("Traceback") - 300:][:3000]


def report(run, ok, verdict):
    t_end = run.t_assimilated or time.monotonic()
    seconds = t_end - run.t_start
    progress = run.progress()
    done = int(progress["assimilated"] or 0)
    doubles, reruns = double_assimilations(run)
    lost = lost_results(run)
    print()
    print("soak: %d jobs, %d hosts of %d users, seed %d" % (
        tf.NJOBS, len(run.hosts), len(run.users), run.seed))
    print("  fault test verdict (check_outcome): %s" % verdict)
    print("  %s: %d of %d jobs assimilated in %.0f s%s" % (
        "finished" if run.t_assimilated else "STOPPED AT THE TIME LIMIT", done, tf.NJOBS,
        seconds, "" if ok else " (run did not drain)"))
    print("  jobs per hour: %.0f" % (done * 3600.0 / seconds if seconds > 0 else 0))
    print("  results lost: %d %s" % (len(lost), lost[:5]))
    print("  double assimilations: %d %s (re-runs after an assimilator was killed: %d)"
          % (len(doubles), list(doubles.items())[:3], reruns))
    lost_db = lost_database_lines(run)
    print("  lines saying the database was lost (requests, daemons): %d, e.g. %s"
          % (len(lost_db), sorted({line.split("]")[-1].strip()[:100] for line in lost_db})[:4]))
    print("  faults: %s; events: %s" % (dict(Counter(k[1] for k in run.kills)),
                                        ["%.0f s %s" % e for e in run.events]))
    print("  peak memory (RSS) by daemon:")
    for name, rss in sorted(run.peak_rss.items()):
        print("    %-28s %6.1f MB" % (name, rss / 1048576.0))
    for error in run.thread_errors:
        print("  thread error: %s" % error)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jobs", type=int, default=10000)
    ap.add_argument("--users", type=int, default=10)
    ap.add_argument("--hosts-per-user", type=int, default=4)
    ap.add_argument("--max-tasks", type=int, default=12, help="tasks a host holds at most")
    ap.add_argument("--minutes", type=float, default=120.0,
                    help="time limit for every job to be assimilated")
    ap.add_argument("--seed", type=int, default=tf.DEFAULT_SEED)
    ap.add_argument("--persistent", type=int, default=0, metavar="N",
                    help="persistent mode with N processes (default: classic CGIs)")
    args = ap.parse_args()
    if not available():
        sys.exit("needs root and mariadbd / mariadb-install-db")
    tf.NJOBS = args.jobs
    tf.USERS = tuple(("user%d" % i, args.hosts_per_user) for i in range(args.users))
    tf.FAULT_PHASE_LIMIT = args.minutes * 60.0
    tf.DRAIN_LIMIT = 300.0
    base = "/tmp/boincpy-soak"
    os.makedirs(base, exist_ok=True)
    os.chmod(base, 0o755)
    db = MariaDB(base, port=DB_PORT)
    db.start()
    project = server = run = mounted = None
    try:
        project = make_test_project(db.params)
        if args.persistent:
            from boincpy.tools import server_mode
            server_mode.set_mode(project.root, "persistent", processes=args.persistent)
        mounted = mount_upload_tmpfs(project.cfg)
        server = PrivateApache(project.root, project.port)
        server.start()
        run = SoakRun(RunningApache(project, server), args.seed, db, args)
        print("soak seed %d: %d jobs, %s; database on %s (port %d); upload dir a %d MB tmpfs"
              % (args.seed, args.jobs, "persistent mode, %d processes" % args.persistent
                 if args.persistent else "classic CGIs", db.socket, DB_PORT, UPLOAD_FS_MB),
              flush=True)
        run.setup()
        ok = run.run()
        run.stop_daemons()
        diagnosis = None
        try:
            tf.check_outcome(run)
            check_apache_log(run)
            verdict = "passed"
        except AssertionError as exc:
            verdict = failed_assertion(exc)
            diagnosis = str(exc)
            tf.keep_logs(run)
        report(run, ok, verdict)
        if diagnosis is not None:
            print("  the failed assertion's message in full:\n" + diagnosis[:20000])
    finally:
        if run is not None:
            tf._cleanup(run)
        if server is not None:
            server.stop(graceful=False)
        if mounted:
            subprocess.run(["umount", "-l", mounted])
        if project is not None:
            remove_test_project(project)
        db.remove()


if __name__ == "__main__":
    main()
