#!/usr/bin/env python3
"""Jobs per day through the whole pipeline: create_work to the assimilator.

For each server measured, a fresh project is made with bin/make_project
(--test_app: its own daemons and settings: feeder, transitioner,
file_deleter, sample_trivial_validator, sample_dummy_assimilator), the
example app is installed (bin/xadd, bin/update_versions), N jobs of quorum 2
are created (bin/stage_file, bin/create_work; inputs of 76 B to 12 kB, so
every fifth output is past 8 kB), and the daemons are started with bin/start.
H emulated 7.20.5 hosts (boincpy.testing.simclient.SimHost, one thread
each) then do what the client does over HTTP: scheduler RPCs reporting their
finished results with <other_results>, downloads, uploads with the signed
<file_info> echoed back (a get_file_size first for outputs of 8 kB and
more), reports on the next RPC.  They ignore <request_delay> and retry an
empty work request after ``--idle`` seconds, since H hosts stand for
thousands.  Nothing else is tuned except ``min_sendwork_interval`` 0.

Three private Apaches (prefork, mod_cgi, children as www-data) serve the
project: one the scheduler, one the upload handler, one the downloads, so
the CPU of each kind of request is the CPU of its Apache (CGI children are
waited for by Apache's children, so their time is in those processes'
children times).  Daemons are found through bin/start's pid files.

Printed per run: jobs/s and M jobs/day (N over the time from the first RPC
to the last assimilation), RPCs/s, uploads/s, the share of work requests
answered with no job, CPU seconds by process kind, the bottleneck; then the
checks: every workunit has one valid canonical result, was assimilated once
(sample_dummy_assimilator's log), its files are deleted (workunit and
results DONE, upload directory empty), no result was lost (2N results, all
reported successes, every report acknowledged).

``--cxx_dir DIR`` (a tree of BOINC's source where make built sched/cgi,
sched/file_upload_handler, sched/feeder and the daemons) adds the C++ server
on the same kind of project (its binaries in place of boincpy's in bin/
and cgi-bin/): at make_project's settings, and with its feeder at
``--sleep_interval 1``; the runs alternate (``--rounds``) and the ratios
are computed in the same run.  ``--restart N`` stops and starts the daemons
(bin/stop, bin/start) N times during each run.  ``--mode persistent`` makes
the boincpy project with make_project --persistent.

    python bench/bench_pipeline.py [--jobs 1000] [--hosts 8] [--mode cgi|persistent]
                                   [--cxx_dir DIR] [--rounds 1] [--restart N]
                                   [--servers boincpy,cxx,cxx1] [--keep]

Needs root (Apache's children run as www-data), Debian's apache2 and
MariaDB reachable as in the tests; run it niced on a shared machine.
"""

import argparse
import os
import re
import resource
import secrets
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from urllib.parse import urlsplit, urlunsplit

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)
sys.path.insert(0, os.path.join(REPO, "tests"))

import psutil  # noqa: E402

from conftest import root_db_params  # noqa: E402
from boincpy.tools import demo as demo_module  # noqa: E402
from boincpy.tools.demo import Demo, Settings, rewrite_config  # noqa: E402
from boincpy.testing.simclient import SimHost  # noqa: E402

SERVERS = {
    "boincpy": "boincpy",
    "persistent": "boincpy, persistent mode",
    "cxx": "C++, make_project settings",
    "cxx1": "C++, feeder --sleep_interval 1",
}
# make_project --test_app's daemons, and the C++ programs that replace them
DAEMONS = ("feeder", "transitioner", "file_deleter", "sample_trivial_validator",
           "sample_dummy_assimilator")
CGIS = ("cgi", "file_upload_handler")
ASSIMILATE_DONE, FILE_DELETE_DONE, VALID, OVER, SUCCESS = 2, 2, 1, 5, 1
# seconds an emulated host waits after a "project is down" reply (bin/stop
# during --restart): the hosts ignore <request_delay>, but thousands of real
# ones would not all come back within the second
DOWN_BACKOFF = 0.5


# ---------------------------------------------------------------------------
# one project

class Site:
    """A project made for one run, served by three private Apaches."""

    def __init__(self, server, args, out):
        self.server = server
        self.args = args
        self.out = out
        token = secrets.token_hex(4)
        self.base = tempfile.mkdtemp(prefix="bench_pipeline_", dir="/var/tmp")
        os.chmod(self.base, 0o755)
        p = root_db_params()
        db = {"db_root_user": p["user"], "db_root_passwd": p.get("passwd", "")}
        if "host" in p:
            db["db_host"] = "%s:%d" % (p["host"], p.get("port", 3306))
        elif p.get("unix_socket"):
            db["db_socket"] = p["unix_socket"]
        self.settings = Settings(
            project_root=os.path.join(self.base, "bp" + token), short_name="bp" + token,
            db_name="bpp_" + token, db_user="bpp_" + token, njobs=args.jobs, min_quorum=2,
            volunteers=0, persistent=(server == "persistent" or (
                server == "boincpy" and args.mode == "persistent")),
            **db)
        self.demo = Demo(self.settings, out=out, tty=False)
        self.root = self.settings.project_root
        self.apaches = {}

    def build(self):
        from boincpy.config import load_config
        from boincpy.tools.httpd import free_port
        demo = self.demo
        cfg = demo.make_project()
        ports = {"scheduler": urlsplit(cfg.master_url).port, "upload": free_port(),
                 "download": free_port()}
        self.ports = ports
        rewrite_config(cfg, options={
            "min_sendwork_interval": 0,
            "upload_url": _with_port(cfg.upload_url, ports["upload"]),
            "download_url": _with_port(cfg.download_url, ports["download"]),
            # BOINC's C++ programs need these written out
            "key_dir": cfg.key_dir, "download_dir": cfg.download_dir,
            "upload_dir": cfg.upload_dir})
        if self.server in ("cxx", "cxx1"):
            self._install_cxx()
        self.cfg = demo.cfg = load_config(self.root)
        self._install_app()
        demo.create_jobs()
        self.scheduler_url = "%s/cgi" % self.cfg.master_url.rstrip("/").replace(
            "/%s" % self.settings.short_name, "/%s_cgi" % self.settings.short_name)
        self.users = self._make_users(self.args.hosts)

    def _install_cxx(self):
        cxx = self.args.cxx_dir
        for name in DAEMONS:
            shutil.copy(os.path.join(cxx, "sched", name), os.path.join(self.root, "bin", name))
        for name in CGIS:
            shutil.copy(os.path.join(cxx, "sched", name),
                        os.path.join(self.root, "cgi-bin", name))
        if self.server == "cxx1":
            from boincpy.config import load_config
            cfg = load_config(self.root)
            rewrite_config(cfg, daemons=[
                {"cmd": d.cmd + (" --sleep_interval 1" if d.cmd.startswith("feeder") else "")}
                for d in cfg.daemons])

    def _install_app(self):
        """The example app's version (any file will do: the emulated hosts
        compute themselves), signed and registered by update_versions."""
        demo = self.demo
        demo.run_tool([demo.bin("xadd")], cwd=self.root)
        vdir = demo.version_dir()
        os.makedirs(vdir, exist_ok=True)
        with open(os.path.join(vdir, demo_module.APP_FILE), "w") as f:
            f.write("#!/bin/sh\n# the emulated hosts compute without it\n")
        os.chmod(os.path.join(vdir, demo_module.APP_FILE), 0o755)
        with open(os.path.join(vdir, "version.xml"), "w") as f:
            f.write(demo_module.version_xml())
        demo.run_tool([demo.bin("update_versions"), "--noconfirm"], cwd=self.root)

    def _make_users(self, n):
        db = self.demo.connect()
        users = []
        try:
            for k in range(n):
                auth = secrets.token_hex(16)
                db.execute("INSERT INTO user (create_time, email_addr, name, authenticator, "
                           "passwd_hash, cross_project_id, global_prefs, project_prefs, venue) "
                           "VALUES (%s, %s, %s, %s, 'x', %s, '', '', '')",
                           (int(time.time()), "bench%d@example.com" % k, "bench%d" % k, auth,
                            secrets.token_hex(16)))
                users.append(auth)
        finally:
            db.close()
        return users

    def start(self):
        from boincpy.tools.httpd import PrivateApache
        for kind, port in self.ports.items():
            run_dir = os.path.join(self.root, "httpd_" + kind)
            a = PrivateApache(self.root, port=port, run_dir=run_dir)
            a.start()
            self.apaches[kind] = a
        self.start_daemons()

    def start_daemons(self):
        self.demo.run_tool([self.demo.bin("start")], cwd=self.root)

    def stop_daemons(self):
        self.demo.run_tool([self.demo.bin("stop")], cwd=self.root)

    def stop(self):
        try:
            self.stop_daemons()
        except Exception as exc:            # keep tearing down
            self.out.write("bin/stop: %s\n" % exc)
        for a in self.apaches.values():
            a.stop()

    def destroy(self):
        import MySQLdb
        conn = MySQLdb.connect(**root_db_params())
        cur = conn.cursor()
        cur.execute("DROP DATABASE IF EXISTS `%s`" % self.settings.db_name)
        for host in ("localhost", "127.0.0.1", "%"):
            cur.execute("DROP USER IF EXISTS %s@%s", (self.settings.db_user, host))
        conn.close()
        shutil.rmtree(self.base, ignore_errors=True)

    def query(self, sql, params=()):
        db = self.demo.connect()
        try:
            return db.query(sql, params)
        finally:
            db.close()

    def value(self, sql, params=()):
        rows = self.query(sql, params)
        return list(rows[0].values())[0] if rows else None


def _with_port(url, port):
    u = urlsplit(url)
    return urlunsplit((u.scheme, "%s:%d" % (u.hostname, port), u.path, u.query, u.fragment))


# ---------------------------------------------------------------------------
# CPU by process kind

class CpuMonitor:
    """Samples the CPU times of the project's processes twice a second."""

    def __init__(self, site):
        self.site = site
        self.first = {}          # (kind, pid, create_time) -> cpu seconds at first sight
        self.last = {}
        self.stop_event = threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.self_start = self._self_cpu()
        self.self_cpu = 0.0

    @staticmethod
    def _self_cpu():
        r = resource.getrusage(resource.RUSAGE_SELF)
        return r.ru_utime + r.ru_stime

    def _procs(self):
        """[(kind, psutil.Process)] of what runs the project now."""
        out = []
        for kind, a in self.site.apaches.items():
            pid = a.pid()
            if not pid:
                continue
            try:
                parent = psutil.Process(pid)
                out.append((kind, parent))
                out += [(kind, c) for c in parent.children(recursive=True)]
            except psutil.Error:
                pass
        pid_dir = self.site.cfg.pid_dir
        try:
            names = os.listdir(pid_dir)
        except OSError:
            names = []
        for name in names:
            if not name.endswith(".pid"):
                continue
            try:
                with open(os.path.join(pid_dir, name)) as f:
                    out.append((name[:-4].split()[0], psutil.Process(int(f.read().split()[0]))))
            except (OSError, ValueError, IndexError, psutil.Error):
                pass
        for p in psutil.process_iter(["name"]):
            if p.info["name"] in ("mariadbd", "mysqld"):
                out.append(("MariaDB", p))
        return out

    def sample(self):
        for kind, p in self._procs():
            try:
                with p.oneshot():
                    t = p.cpu_times()
                    key = (kind, p.pid, p.create_time())
            except psutil.Error:
                continue
            cpu = t.user + t.system + t.children_user + t.children_system
            # a process running when the run starts counts from then; one
            # started later (a CGI's Apache child, a restarted daemon) from zero
            self.first.setdefault(key, 0.0 if self._started else cpu)
            self.last[key] = cpu

    _started = False

    def start(self):
        self.sample()
        self._started = True
        self.self_start = self._self_cpu()
        self.machine_start = psutil.cpu_times()
        self.thread.start()

    def _loop(self):
        while not self.stop_event.wait(0.5):
            self.sample()

    def stop(self):
        self.stop_event.set()
        self.thread.join()
        self.sample()
        self.self_cpu = self._self_cpu() - self.self_start
        t0, t1 = self.machine_start, psutil.cpu_times()
        total = sum(t1) - sum(t0)
        idle = (t1.idle + t1.iowait) - (t0.idle + t0.iowait)
        self.machine_busy = 1.0 - idle / total if total > 0 else 0.0

    def by_kind(self):
        out = {}
        for key, cpu in self.last.items():
            out[key[0]] = out.get(key[0], 0.0) + cpu - self.first[key]
        out["emulated hosts"] = self.self_cpu
        return out


# ---------------------------------------------------------------------------
# the emulated hosts

class BenchHost(SimHost):
    """A SimHost that counts its RPCs, empty work replies and uploads."""

    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        self.n_rpcs = 0
        self.empty_times = []
        self.n_down = 0
        self.n_uploads = 0

    def rpc(self, want_work=True, abort=None):
        asked = sum(1 for t in self.tasks.values() if not t.ready_to_report) < self.max_tasks
        reply = super().rpc(want_work, abort)
        self.n_rpcs += 1
        if reply is not None and reply.project_is_down:
            # bin/stop disables the scheduler while the daemons restart; a
            # host that ignored this reply's delay would ask again at once
            self.n_down += 1
            self.next_rpc_time = time.time() + DOWN_BACKOFF
        elif reply is not None and want_work and asked and not reply.jobs:
            self.empty_times.append(time.time())
        return reply

    def _upload(self, out):
        result = super()._upload(out)
        self.n_uploads += 1
        return result


def drive(site, args, done_event):
    """Start the hosts' threads; returns them and their hosts."""
    hosts = [BenchHost(site.scheduler_url, auth, name="bench%d" % k, seed=k,
                       delay_cap=0.0, idle_delay=args.idle, max_tasks=args.max_tasks,
                       timeout=300)
             for k, auth in enumerate(site.users)]

    def loop(host):
        while not done_event.is_set():
            if host.due():
                host.cycle()
            else:
                time.sleep(0.02)
        # report what is left (acknowledgements)
        for _ in range(3):
            if not any(t.ready_to_report for t in host.tasks.values()):
                break
            host.rpc(want_work=False)

    threads = [threading.Thread(target=loop, args=(h,), daemon=True) for h in hosts]
    for t in threads:
        t.start()
    return hosts, threads


# ---------------------------------------------------------------------------
# one run

def run(server, args, out):
    say = out.write
    site = Site(server, args, open(os.devnull, "w") if not args.verbose else out)
    say("\n== %s: %d jobs, quorum 2, %d hosts (project %s)\n"
        % (SERVERS[server] + (" (%s mode)" % args.mode if server == "boincpy" else ""),
           args.jobs, args.hosts, site.root))
    result = {"server": server}
    try:
        t0 = time.monotonic()
        site.build()
        say("  project made, %d jobs created in %.0f s\n" % (args.jobs, time.monotonic() - t0))
        site.start()
        monitor = CpuMonitor(site)
        monitor.start()
        done = threading.Event()
        start = time.monotonic()
        hosts, threads = drive(site, args, done)
        restarts = [(k + 1) * args.jobs // (args.restart + 1) for k in range(args.restart)]
        n = args.jobs
        assimilated = 0
        last_change = time.monotonic()
        end = None
        while True:
            time.sleep(0.2)
            a = site.value("SELECT COUNT(*) FROM workunit WHERE assimilate_state = %s",
                           (ASSIMILATE_DONE,))
            if a != assimilated:
                assimilated, last_change = a, time.monotonic()
            if restarts and assimilated >= restarts[0]:
                restarts.pop(0)
                say("  restarting the daemons at %d assimilated\n" % assimilated)
                site.stop_daemons()
                site.start_daemons()
            if assimilated >= n:
                end = time.monotonic()
                break
            if time.monotonic() - last_change > args.stall:
                say("  STALLED: %d of %d assimilated, nothing for %d s\n"
                    % (assimilated, n, args.stall))
                break
        wall = (end or time.monotonic()) - start
        monitor.stop()
        done.set()
        for t in threads:
            t.join(60)
        # the file deleter's last passes: the workunits' files, then (once the
        # transitioner has seen each workunit deleted) the results'
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and (
                site.value("SELECT COUNT(*) FROM workunit WHERE file_delete_state <> %s",
                           (FILE_DELETE_DONE,))
                or site.value("SELECT COUNT(*) FROM result WHERE outcome = %s AND "
                              "file_delete_state <> %s", (SUCCESS, FILE_DELETE_DONE))):
            time.sleep(0.5)
        result.update(measure(site, hosts, monitor, wall, end is not None))
        result["checks"] = check(site, hosts, args.jobs)
        report(result, say)
    finally:
        site.stop()
        if args.keep:
            say("  kept: %s (database %s)\n" % (site.base, site.settings.db_name))
        else:
            site.destroy()
    return result


def measure(site, hosts, monitor, wall, finished):
    n = site.args.jobs
    rpcs = sum(h.n_rpcs for h in hosts)
    # work requests that got nothing although jobs were still to be sent
    last_sent = site.value("SELECT MAX(sent_time) FROM result") or 0
    empty = sum(1 for h in hosts for t in h.empty_times if t < last_sent)
    uploads = sum(h.n_uploads for h in hosts)
    down = sum(h.n_down for h in hosts)
    cpu = monitor.by_kind()
    # an unfinished run counts what it assimilated, not the jobs it was given
    done = n if finished else site.value(
        "SELECT COUNT(*) FROM workunit WHERE assimilate_state = %s", (ASSIMILATE_DONE,))
    return {"machine_busy": monitor.machine_busy, "finished": finished, "wall": wall,
            "jobs_per_s": done / wall if wall else 0.0,
            "rpcs": rpcs, "empty": empty, "down": down, "uploads": uploads, "cpu": cpu}


def bottleneck(r):
    """The process kind that limits the run, in words."""
    cpu = r["cpu"]
    total = sum(cpu.values())
    ncpu = os.cpu_count() or 1
    ours = total / r["wall"] / ncpu if r["wall"] else 0.0
    machine = r["machine_busy"]
    kind, secs = max(cpu.items(), key=lambda kv: kv[1])
    where = "machine %.0f%% busy, this project %.0f%%" % (100 * machine, 100 * ours)
    if machine >= 0.85:
        return ("CPU-bound (%s); the largest consumer is %s (%.0f%% of this project's CPU)"
                % (where, kind, 100 * secs / total))
    if r["rpcs"] and r["empty"] / r["rpcs"] > 0.3:
        return ("not CPU-bound (%s): %.0f%% of the RPCs got no job while jobs were unsent: "
                "the scheduler's job cache (the feeder)" % (where, 100 * r["empty"] / r["rpcs"]))
    return ("not CPU-bound (%s): latency (daemons' sleeps, request round trips); the "
            "largest consumer is %s" % (where, kind))


def check(site, hosts, n):
    """[(what, ok, detail)]"""
    out = []
    bad = site.value(
        "SELECT COUNT(*) FROM workunit w LEFT JOIN result r ON r.id = w.canonical_resultid "
        "WHERE w.canonical_resultid = 0 OR w.error_mask <> 0 OR r.id IS NULL "
        "OR r.validate_state <> %s", (VALID,))
    out.append(("every workunit has one valid canonical result", bad == 0,
                "%d without" % bad))
    log = os.path.join(site.cfg.log_dir, "sample_dummy_assimilator.log")
    counts = {}
    try:
        with open(log, errors="replace") as f:
            for m in re.finditer(r"Assimilating (\S+)", f.read()):
                counts[m.group(1)] = counts.get(m.group(1), 0) + 1
    except OSError:
        pass
    names = {r["name"] for r in site.query("SELECT name FROM workunit")}
    once = sum(1 for nm in names if counts.get(nm) == 1)
    notdone = site.value("SELECT COUNT(*) FROM workunit WHERE assimilate_state <> %s",
                         (ASSIMILATE_DONE,))
    out.append(("assimilated once each", once == n and notdone == 0,
                "%d of %d once, %d more than once, %d not assimilated"
                % (once, n, sum(1 for nm in names if counts.get(nm, 0) > 1), notdone)))
    wu_left = site.value("SELECT COUNT(*) FROM workunit WHERE file_delete_state <> %s",
                         (FILE_DELETE_DONE,))
    res_left = site.value("SELECT COUNT(*) FROM result WHERE outcome = %s AND "
                          "file_delete_state <> %s", (SUCCESS, FILE_DELETE_DONE))
    files_left = sum(len(fs) for _, _, fs in os.walk(site.cfg.upload_dir))
    out.append(("files deleted", wu_left == 0 and res_left == 0 and files_left == 0,
                "%d workunits, %d results not DONE; %d files in upload/"
                % (wu_left, res_left, files_left)))
    total = site.value("SELECT COUNT(*) FROM result")
    good = site.value("SELECT COUNT(*) FROM result WHERE server_state = %s AND outcome = %s",
                      (OVER, SUCCESS))
    reported = set()
    acked = set()
    for h in hosts:
        reported.update(h.reported)
        acked.update(h.acked)
    errors = sum(len(h.rpc_errors) + len(h.protocol_errors) + len(h.download_errors)
                 for h in hosts)
    out.append(("no result lost", total == 2 * n and good == 2 * n and reported <= acked,
                "%d results (%d expected), %d successes, %d reports not acknowledged, "
                "%d host errors" % (total, 2 * n, good, len(reported - acked), errors)))
    return out


def report(r, say):
    wall = r["wall"]
    say("  %s in %.1f s: %.1f jobs/s = %.2f M jobs/day\n"
        % ("done" if r["finished"] else "NOT DONE", wall, r["jobs_per_s"],
           r["jobs_per_s"] * 86400 / 1e6))
    say("  %.1f RPCs/s (%d; %.0f%% of them asked for work and got none while jobs were "
        "unsent%s), %.1f uploads/s\n"
        % (r["rpcs"] / wall, r["rpcs"], 100.0 * r["empty"] / max(1, r["rpcs"]),
           "; %d answered 'down' while bin/stop had stopped the project" % r["down"]
           if r.get("down") else "", r["uploads"] / wall))
    cpu = r["cpu"]
    say("  CPU seconds: %s; total %.1f\n"
        % (", ".join("%s %.1f" % kv for kv in sorted(cpu.items(), key=lambda kv: -kv[1])),
           sum(cpu.values())))
    say("  CPU per scheduler RPC %.0f ms, per upload %.0f ms (with their Apache children)\n"
        % (1000 * cpu.get("scheduler", 0) / max(1, r["rpcs"]),
           1000 * cpu.get("upload", 0) / max(1, r["uploads"])))
    say("  bottleneck: %s\n" % bottleneck(r))
    for what, ok, detail in r["checks"]:
        say("  check %-50s %s (%s)\n" % (what, "ok" if ok else "FAILED", detail))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--jobs", type=int, default=1000)
    ap.add_argument("--hosts", type=int, default=8)
    ap.add_argument("--mode", choices=("cgi", "persistent"), default="cgi")
    ap.add_argument("--cxx_dir", help="BOINC source tree with the C++ server built")
    ap.add_argument("--servers", default=None,
                    help="comma-separated, of boincpy (in --mode), persistent (boincpy in "
                         "persistent mode whatever --mode says), cxx, cxx1 (default: "
                         "boincpy, and cxx,cxx1 with --cxx_dir)")
    ap.add_argument("--rounds", type=int, default=1, help="alternations of the servers")
    ap.add_argument("--restart", type=int, default=0,
                    help="bin/stop + bin/start the daemons N times during each run")
    ap.add_argument("--idle", type=float, default=1.0,
                    help="seconds a host waits after a work request that got nothing")
    ap.add_argument("--max_tasks", type=int, default=8, help="jobs a host holds at most")
    ap.add_argument("--stall", type=float, default=120.0,
                    help="give up after this many seconds without an assimilation")
    ap.add_argument("--keep", action="store_true", help="keep the projects and databases")
    ap.add_argument("--verbose", action="store_true", help="show the tools' output")
    args = ap.parse_args(argv)
    if os.geteuid() != 0:
        ap.error("run as root (Apache's children run as www-data)")
    servers = (args.servers.split(",") if args.servers
               else ["boincpy"] + (["cxx", "cxx1"] if args.cxx_dir else []))
    for s in servers:
        if s not in SERVERS:
            ap.error("unknown server %r" % s)
        if s in ("cxx", "cxx1") and not args.cxx_dir:
            ap.error("%s needs --cxx_dir" % s)
    out = sys.stdout
    results = []
    for _ in range(args.rounds):
        for s in servers:
            results.append(run(s, args, out))
            out.flush()
    summary(results, out.write)
    ok = all(c[1] for r in results for c in r.get("checks", ()))
    return 0 if ok else 1


def summary(results, say):
    """Each server's runs; ratios from the finished runs only (a run that
    stalled or failed its checks says nothing about a server's rate)."""
    best = {}
    shown = {}
    for r in results:
        ok = r.get("finished") and all(c[1] for c in r.get("checks", ()))
        shown.setdefault(r["server"], []).append(
            "%.1f" % r.get("jobs_per_s", 0.0) + ("" if ok else " (NOT DONE or FAILED)"))
        if ok:
            best.setdefault(r["server"], []).append(r["jobs_per_s"])
    say("\n== summary (jobs/s, each run)\n")
    for s, v in shown.items():
        say("  %-34s %s\n" % (SERVERS[s], ", ".join(v)))
    for ours in ("boincpy", "persistent"):
        if ours not in best:
            continue
        mine = sum(best[ours]) / len(best[ours])
        for s in ("cxx", "cxx1"):
            if s in best and sum(best[s]):
                say("  %s / %s: %.2fx\n"
                    % (SERVERS[ours], SERVERS[s], mine / (sum(best[s]) / len(best[s]))))


if __name__ == "__main__":
    sys.exit(main())
