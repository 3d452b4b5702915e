#!/usr/bin/env python3
"""Job choice cost per request against 100- and 2,000-slot job arrays, and the
feeder's fill time for 2,000 empty slots.

Builds a throwaway project and database (root over the local socket, or
BOINCPY_TEST_DB_* as in the tests), one app version, enough jobs for every
request, then for each array size: fills the array with the feeder (timed),
and times boincpy.sched.send.send_work for R requests of one job each
(distinct hosts, as a real load would be), refilling the array between
requests when it runs low (not timed).  The C++ scheduler scores every slot,
so its cost grows with the array (README.txt of the reference server: 88 ->
19 requests/s from 100 to 2,000 slots); this should not.

    python bench/bench_choose.py [--requests R] [--sizes 100,2000]
"""

import argparse
import io
import os
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)
sys.path.insert(0, os.path.join(REPO, "tests"))

import MySQLdb  # noqa: E402

from conftest import root_db_params  # noqa: E402
from boincpy import shmem  # noqa: E402
from boincpy.config import write_config  # noqa: E402
from boincpy.db import connect, schema  # noqa: E402
from boincpy.sched import send  # noqa: E402
from jobs_helpers import (add_app_version, add_jobs, make_ctx, make_feeder,  # noqa: E402
                          make_request, project_config)


def make_project(root, db_name, params):
    for d in ("download", "upload", "templates", "keys", "cgi-bin", "log"):
        os.makedirs(os.path.join(root, d))
    write_config(root, {
        "master_url": "http://127.0.0.1/bench/", "db_name": db_name,
        "db_user": params["user"], "db_passwd": params["passwd"],
        "db_host": ("%s:%d" % (params["host"], params["port"])) if "host" in params else "",
        "db_socket": params.get("unix_socket", ""), "log_dir": os.path.join(root, "log"),
        "shmem_key": 0x5eed0000 + os.getpid() % 0xffff})
    conn = MySQLdb.connect(**params)
    schema.create_database(conn, db_name)
    schema.load_schema(conn, db_name)
    cur = conn.cursor()
    cur.execute("INSERT INTO platform (create_time, name, user_friendly_name) "
                "VALUES (0, 'x86_64-pc-linux-gnu', 'Linux on x86_64')")
    cur.execute("INSERT INTO app (create_time, name, user_friendly_name) "
                "VALUES (0, 'example_app', 'Example app')")
    conn.commit()
    conn.close()


def bench_size(root, nslots, nrequests):
    cfg = project_config(root, shmem_work_items=nslots, one_result_per_user_per_wu=True,
                         daily_result_quota=100000)
    db = connect(cfg)
    db.execute("DELETE FROM result")
    db.execute("DELETE FROM workunit")
    db.execute("DELETE FROM host_app_version")
    add_jobs(db, nslots + nrequests + 10, prefix="s%d" % nslots)
    feeder = make_feeder(cfg, log_stream=io.StringIO())
    try:
        t0 = time.perf_counter()
        feeder.one_pass()
        fill = time.perf_counter() - t0
        ja = shmem.attach(cfg, wait_ready=0)
        assert ja.n_present == nslots, ja.n_present
        times, sent = [], 0
        for k in range(nrequests):
            if ja.n_present < nslots // 2:
                feeder.one_pass()
            ctx = make_ctx(cfg, db, make_request(req_secs=10, ncpus=4), hostid=k + 1,
                           userid=k + 1)
            t0 = time.perf_counter()
            send.send_work(ctx, ja)
            times.append(time.perf_counter() - t0)
            sent += len(ctx.reply.jobs)
        ja.close()
    finally:
        feeder.shutdown()
        db.close()
    times.sort()
    return fill, sent, times


def import_cost():
    """Extra ms `import boincpy.sched.send, boincpy.shmem` adds to a fresh
    interpreter that has imported the contract module (sched.context)."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)       # a CGI runs from compiled bytecode
    subprocess.run([sys.executable, "-m", "compileall", "-q", "boincpy"], check=True,
                   cwd=REPO, env=env)

    def run(code):
        best = 1e9
        for _ in range(7):
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO, env=env)
            best = min(best, time.perf_counter() - t0)
        return best
    base = run("import boincpy.sched.context")
    return 1000 * (run("import boincpy.sched.send, boincpy.shmem") - base)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--requests", type=int, default=300)
    ap.add_argument("--sizes", default="100,2000")
    args = ap.parse_args()
    params = root_db_params()
    db_name = "bpbench_" + secrets.token_hex(4)
    root = tempfile.mkdtemp(prefix="boincpy-bench-")
    try:
        make_project(root, db_name, params)
        add_app_version(connect(project_config(root)))
        results = {}
        for n in [int(s) for s in args.sizes.split(",")]:
            fill, sent, times = bench_size(root, n, args.requests)
            results[n] = times
            mean = statistics.mean(times) * 1000
            print("%5d slots: feeder filled %d empty slots in %.0f ms; send_work: %d requests, "
                  "%d jobs sent, mean %.2f ms, p50 %.2f ms, p95 %.2f ms, max %.2f ms"
                  % (n, n, fill * 1000, len(times), sent, mean,
                     times[len(times) // 2] * 1000, times[int(len(times) * 0.95)] * 1000,
                     times[-1] * 1000))
        sizes = sorted(results)
        if len(sizes) >= 2:
            a, b = (statistics.median(results[s]) for s in (sizes[0], sizes[-1]))
            print("median send_work %d -> %d slots: %.2f -> %.2f ms (x%.2f; C++ scheduler "
                  "run time ~12 -> ~86 ms)" % (sizes[0], sizes[-1], a * 1000, b * 1000, b / a))
        print("import boincpy.sched.send + boincpy.shmem (beyond sched.context): %.1f ms"
              % import_cost())
        return 0
    finally:
        try:
            path = shmem.segment_path(project_config(root))
            if os.path.exists(path):
                os.unlink(path)
        except Exception:
            pass
        shutil.rmtree(root, ignore_errors=True)
        conn = MySQLdb.connect(**params)
        conn.cursor().execute("DROP DATABASE IF EXISTS `%s`" % db_name)
        conn.close()


if __name__ == "__main__":
    sys.exit(main())
