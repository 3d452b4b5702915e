#!/usr/bin/env python3
"""How many jobs per second bin/create_work --stdin makes.

Builds a throwaway project and database (root over the local socket, or
BOINCPY_TEST_DB_* as in the tests), stages 100 input files, then runs
bin/create_work --stdin as a subprocess for N jobs (default 10,000), three
times, and prints jobs/s and the ratio to the C++ create_work measured on
this kind of machine (12,600 jobs/s, ../shared/fixtures/reference-server).

    python bench/bench_create_work.py [--jobs N] [--runs R]

``--md5-cache`` instead measures what <cache_md5_info/> saves: one 100 MB
input file shared by 100 jobs, each made by its own create_work run (as a
job-submission script does), once with the FILE.md5 cache and once without.
A single --stdin run hashes a shared file once either way, so the cache pays
off across runs.  Measured on the 2-core helper machine (2026-11-23):

    cache off: 100 jobs in 35.1 s (351 ms/job); cache on: 100 jobs in 14.9 s
    (149 ms/job); speed-up 2.35x.  What remains is interpreter start-up and
    the database; the saving grows with the file (about 2 ms per MB hashed).

    python bench/bench_create_work.py --md5-cache [--jobs 100] [--mb 100]
"""

import argparse
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)
sys.path.insert(0, os.path.join(REPO, "tests"))

import MySQLdb  # noqa: E402

from conftest import EXAMPLE_IN, EXAMPLE_OUT, root_db_params  # noqa: E402
from boincpy.config import write_config  # noqa: E402
from boincpy.db import schema  # noqa: E402

CXX_JOBS_PER_SEC = 12600.0
TARGET = CXX_JOBS_PER_SEC / 2


def make_project(root, db_name, params):
    for d in ("download", "upload", "templates", "keys", "cgi-bin"):
        os.makedirs(os.path.join(root, d))
    with open(os.path.join(root, "templates", "example_app_in"), "w") as f:
        f.write(EXAMPLE_IN)
    with open(os.path.join(root, "templates", "example_app_out"), "w") as f:
        f.write(EXAMPLE_OUT)
    write_config(root, {
        "master_url": "http://127.0.0.1/bench/",
        "download_url": "http://127.0.0.1/bench/download",
        "upload_url": "http://127.0.0.1/bench_cgi/file_upload_handler",
        "db_name": db_name, "db_user": params["user"], "db_passwd": params["passwd"],
        "db_host": ("%s:%d" % (params["host"], params["port"])) if "host" in params else "",
        "db_socket": params.get("unix_socket", ""), "uldl_dir_fanout": 1024,
        "cache_md5_info": True})
    conn = MySQLdb.connect(**params)
    schema.create_database(conn, db_name)
    schema.load_schema(conn, db_name)
    cur = conn.cursor()
    cur.execute("INSERT INTO app (create_time, name) VALUES (0, 'example_app')")
    conn.commit()
    conn.close()
    for k in range(100):
        path = os.path.join(root, "in_%d.txt" % k)
        with open(path, "w") as f:
            f.write("input %d\n" % k)
        subprocess.run([sys.executable, os.path.join(REPO, "bin", "stage_file"), path],
                       cwd=root, check=True, stdout=subprocess.DEVNULL)


def _set_md5_cache(root, on):
    from boincpy.config import load_config
    options = load_config(root).as_options()
    options["cache_md5_info"] = on
    write_config(root, options)


def bench_md5_cache(root, jobs, mb):
    """Seconds for JOBS one-job create_work runs sharing an MB-megabyte input,
    with and without <cache_md5_info/>; prints both and the ratio."""
    from boincpy.files import dir_hier_path
    path = dir_hier_path(os.path.join(root, "download"), "big_input", 1024, create=True)
    block = os.urandom(1 << 20)
    with open(path, "wb") as f:
        for _ in range(mb):
            f.write(block)
    times = {}
    for on in (False, True):
        _set_md5_cache(root, on)
        if os.path.exists(path + ".md5"):
            os.unlink(path + ".md5")
        t0 = time.perf_counter()
        for j in range(jobs):
            subprocess.run([sys.executable, os.path.join(REPO, "bin", "create_work"),
                            "--appname", "example_app", "--wu_name",
                            "md5_%s_%d" % ("on" if on else "off", j), "big_input"],
                           cwd=root, check=True)
        times[on] = time.perf_counter() - t0
        print("cache_md5_info %s: %d jobs on a %d MB input in %.1f s (%.0f ms/job)"
              % ("on " if on else "off", jobs, mb, times[on], 1000 * times[on] / jobs))
    assert os.path.exists(path + ".md5")
    print("speed-up with the .md5 cache: %.2fx" % (times[False] / times[True]))
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--jobs", type=int, default=None,
                    help="jobs per run (default 10,000; with --md5-cache 100)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--md5-cache", action="store_true",
                    help="measure <cache_md5_info/> on a shared large input instead")
    ap.add_argument("--mb", type=int, default=100, help="input size for --md5-cache")
    args = ap.parse_args()
    if args.jobs is None:
        args.jobs = 100 if args.md5_cache else 10000
    params = root_db_params()
    db_name = "bpbench_" + secrets.token_hex(4)
    root = tempfile.mkdtemp(prefix="boincpy-bench-")
    try:
        make_project(root, db_name, params)
        if args.md5_cache:
            return bench_md5_cache(root, args.jobs, args.mb)
        best = 0.0
        for run in range(args.runs):
            lines = "".join("--wu_name r%d_job_%d in_%d.txt\n" % (run, j, j % 100)
                            for j in range(args.jobs))
            t0 = time.perf_counter()
            subprocess.run([sys.executable, os.path.join(REPO, "bin", "create_work"),
                            "--appname", "example_app", "--stdin"],
                           input=lines, text=True, cwd=root, check=True)
            dt = time.perf_counter() - t0
            rate = args.jobs / dt
            best = max(best, rate)
            print("run %d: %d jobs in %.2f s = %.0f jobs/s" % (run + 1, args.jobs, dt, rate))
        conn = MySQLdb.connect(db=db_name, **params)
        cur = conn.cursor()
        cur.execute("SELECT COUNT(*) FROM workunit")
        count = cur.fetchone()[0]
        conn.close()
        assert count == args.jobs * args.runs, count
        print("best: %.0f jobs/s; C++ create_work: %.0f jobs/s; ratio %.2f "
              "(target >= 0.50, i.e. %.0f jobs/s)"
              % (best, CXX_JOBS_PER_SEC, best / CXX_JOBS_PER_SEC, TARGET))
        return 0 if best >= TARGET else 1
    finally:
        shutil.rmtree(root, ignore_errors=True)
        conn = MySQLdb.connect(**params)
        conn.cursor().execute("DROP DATABASE IF EXISTS `%s`" % db_name)
        conn.close()


if __name__ == "__main__":
    sys.exit(main())
