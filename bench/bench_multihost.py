#!/usr/bin/env python3
"""The whole pipeline across emulated hosts: two scheduler hosts with their own
feeders, a back end, a database primary with a replica (all on this machine).

Builds the layout of tests/test_multihost_cluster.py (tests/cluster_util.py:
namespaces ``main``, ``web1`` (127.0.0.2), ``web2`` (127.0.0.3), ``back1``;
MariaDB on 127.0.0.1:3332 with a replica on 3333), creates N jobs (default
10,000; half upload to web1's data server, half to web2's), and lets simulated
volunteers, half on each scheduler, run them until every job is assimilated.

Prints, per host, what it did and what it spent (CPU seconds of its Apache
and CGIs, and of each of its daemons), then the checks: results sent twice
(must be 0), jobs lost (not assimilated, must be 0).  One machine's two cores
are shared by every host, so there is no speed-up to see: the figures say
where the work went.  Needs root (namespaces) and mariadbd.

    nice -n 10 python bench/bench_multihost.py [--jobs N] [--volunteers N] [--overlap]
"""

import argparse
import os
import re
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)
sys.path.insert(0, os.path.join(REPO, "tests"))

import psutil  # noqa: E402

from cluster_util import WEB, Cluster, make_hosts, make_jobs, run_hosts, sent_twice  # noqa: E402


def cpu(proc):
    """CPU seconds of a process and of its children it has waited for."""
    t = proc.cpu_times()
    return t.user + t.system + t.children_user + t.children_system


def apache_cpu(server):
    """CPU seconds of an Apache: its parent, its workers and their CGIs."""
    pid = server.pid()
    if not pid:
        return 0.0
    parent = psutil.Process(pid)
    return cpu(parent) + sum(cpu(p) for p in parent.children(recursive=True))


def daemon_cpu(root, host):
    """{daemon pid file name: CPU seconds} of a host's running daemons."""
    out = {}
    pid_dir = os.path.join(root, "pid_" + host)
    for name in sorted(os.listdir(pid_dir)) if os.path.isdir(pid_dir) else []:
        if not name.endswith(".pid"):
            continue
        try:
            with open(os.path.join(pid_dir, name)) as f:
                out[name[:-4]] = cpu(psutil.Process(int(f.read().strip())))
        except (OSError, ValueError, psutil.Error):
            pass
    return out


def count(path, pattern):
    try:
        with open(path, errors="replace") as f:
            return len(re.findall(pattern, f.read()))
    except FileNotFoundError:
        return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--jobs", type=int, default=10000)
    ap.add_argument("--volunteers", type=int, default=16)
    ap.add_argument("--overlap", action="store_true",
                    help="feeders without --mod: both enumerate every job")
    ap.add_argument("--limit", type=float, default=7200.0, help="seconds before giving up")
    args = ap.parse_args()
    # database ports 3332/3333: the tests' cluster uses 3330/3331
    c = Cluster(split_feeders=not args.overlap, ports=(3332, 3333))
    try:
        p = c.p
        t0 = time.monotonic()
        make_jobs(c, args.jobs)
        print("%d jobs made in %.1f s" % (args.jobs, time.monotonic() - t0), flush=True)
        c.on("main", p.bin("start"))
        listed, hosts = make_hosts(c, args.volunteers)
        done, errors, seconds = run_hosts(c, hosts, args.jobs, args.limit)
        twice, received = sent_twice(hosts)
        figures = {h: daemon_cpu(p.root, h) for h in ("main",) + tuple(WEB) + ("back1",)}
        apaches = {h: apache_cpu(s) for h, s in c.apaches.items()}
        print("\n%d jobs, %d volunteers, feeders %s: %.1f s, %.1f jobs/s"
              % (args.jobs, args.volunteers, "overlapping" if args.overlap else "--mod 2 I",
                 seconds, done / seconds if seconds else 0))
        for host in ("main",) + tuple(WEB) + ("back1",):
            logs = p.path("log_" + host)
            line = "%-6s Apache+CGIs %7.1f CPU s" % (host, apaches.get(host, 0.0))
            if host in WEB:
                url = c.sched_urls[host]
                sent = sum(len(h.received) for h in hosts if h.scheduler_url == url)
                line += ("; %d scheduler requests, %d results sent, %d uploads"
                         % (count(os.path.join(logs, "scheduler.log"), r"Request: \[USER#"),
                            sent, count(os.path.join(logs, "file_upload_handler.log"),
                                        r"\] Uploaded ")))
            print(line)
            for name, secs in figures[host].items():
                print("         %-28s %7.1f CPU s" % (name, secs))
        lost = args.jobs - done
        print("results sent twice: %d; jobs lost (not assimilated): %d; client errors: %d"
              % (len(twice), lost, len(errors)))
        return 0 if not twice and not lost and not errors else 1
    finally:
        c.close()


if __name__ == "__main__":
    sys.exit(main())
