#!/usr/bin/env python3
"""How fast the back-end daemons get through a big backlog of jobs.

Builds a throwaway project and database (root over the local socket, or
BOINCPY_TEST_DB_* as in the tests), stages 100 input files, creates N jobs
(default 100,000) with ``bin/create_work --stdin``, then times the daemons as
subprocesses, each with ``--one_pass -d 3`` (logs to a file, as under
bin/start):

* transitioner, first pass (WU -> first result), twice: without upload
  certificates (``dont_generate_upload_certificates``, as the C++ reference
  server was configured) and with them (boincpy's default); between the two
  runs the results are deleted and the workunits made due again.

Prints WUs/s and the ratio to the C++ transitioner measured on this kind of
machine (3000 WUs in 1.68 s, ~1,800/s: ../shared/fixtures/reference-server).
More stages (validator, assimilator ...) are added to ``STAGES``.

    python bench/bench_backend.py [--jobs N] [--only NAME ...] [--keep]
"""

import argparse
import contextlib
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
from boincpy import crypto  # noqa: E402
from boincpy.config import write_config  # noqa: E402
from boincpy.db import schema  # noqa: E402

CXX_TRANSITIONER_WUS_PER_SEC = 1800.0


class Bench:
    """A throwaway project with N jobs, and helpers to time daemons on it."""

    def __init__(self, root, db_name, params, jobs):
        self.root = root
        self.db_name = db_name
        self.params = params
        self.jobs = jobs
        self.options = None

    # -- setup ------------------------------------------------------------------

    def make_project(self):
        root, params = self.root, self.params
        for d in ("download", "upload", "templates", "keys", "cgi-bin", "log_bench"):
            os.makedirs(os.path.join(root, d))
        with open(os.path.join(root, "templates", "example_app_in"), "w") as f:
            f.write(EXAMPLE_IN)
        with open(os.path.join(root, "templates", "example_app_out"), "w") as f:
            f.write(EXAMPLE_OUT)
        keys = os.path.join(root, "keys")
        crypto.generate_key_pair(os.path.join(keys, "upload_private"),
                                 os.path.join(keys, "upload_public"))
        self.options = {
            "master_url": "http://127.0.0.1/bench/",
            "download_url": "http://127.0.0.1/bench/download",
            "upload_url": "http://127.0.0.1/bench_cgi/file_upload_handler",
            "db_name": self.db_name, "db_user": params["user"], "db_passwd": params["passwd"],
            "db_host": ("%s:%d" % (params["host"], params["port"])) if "host" in params else "",
            "db_socket": params.get("unix_socket", ""), "uldl_dir_fanout": 1024,
            "cache_md5_info": True, "daily_result_quota": 500,
            "log_dir": os.path.join(root, "log_bench")}
        self.set_options()
        conn = MySQLdb.connect(**params)
        schema.create_database(conn, self.db_name)
        schema.load_schema(conn, self.db_name)
        cur = conn.cursor()
        cur.execute("INSERT INTO platform (create_time, name, user_friendly_name) "
                    "VALUES (0, 'x86_64-pc-linux-gnu', 'Linux on x86_64')")
        cur.execute("INSERT INTO app (create_time, name) VALUES (0, 'example_app')")
        conn.commit()
        conn.close()
        from boincpy.tools import stage_file
        with _cwd(root):
            for k in range(100):
                path = os.path.join(root, "in_%d.txt" % k)
                with open(path, "w") as f:
                    f.write("input %d\n" % k)
                with contextlib.redirect_stdout(open(os.devnull, "w")):
                    try:
                        stage_file.stage_main([path])
                    except SystemExit as exc:
                        if exc.code not in (0, None):
                            raise

    def set_options(self, **changes):
        """Rewrite config.xml with the base options plus ``changes``."""
        options = dict(self.options)
        options.update(changes)
        write_config(self.root, options)

    def create_jobs(self):
        lines = "".join("--wu_name job_%d in_%d.txt\n" % (j, j % 100) for j in range(self.jobs))
        t0 = time.perf_counter()
        subprocess.run([sys.executable, os.path.join(REPO, "bin", "create_work"),
                        "--appname", "example_app", "--stdin"],
                       input=lines, text=True, cwd=self.root, check=True, env=_env())
        dt = time.perf_counter() - t0
        print("create_work --stdin: %d jobs in %.1f s (%.0f jobs/s)" % (self.jobs, dt,
                                                                         self.jobs / dt))

    # -- helpers --------------------------------------------------------------

    def sql(self, query, params=()):
        conn = MySQLdb.connect(db=self.db_name, **self.params)
        try:
            cur = conn.cursor()
            cur.execute(query, params)
            conn.commit()
            return cur.fetchall()
        finally:
            conn.close()

    def run_daemon(self, program, *args):
        """Run bin/PROGRAM --one_pass -d 3 with its log appended to log_bench/PROGRAM.log;
        return the wall-clock seconds."""
        log = os.path.join(self.root, "log_bench", program + ".log")
        with open(log, "a") as out:
            t0 = time.perf_counter()
            proc = subprocess.run([sys.executable, os.path.join(REPO, "bin", program),
                                   "--one_pass", "-d", "3"] + list(args),
                                  cwd=self.root, stdout=out, stderr=out, env=_env())
            dt = time.perf_counter() - t0
        if proc.returncode:
            sys.exit("%s failed (exit %d); see %s" % (program, proc.returncode, log))
        return dt


def _env():
    env = dict(os.environ)
    env["PYTHONPATH"] = REPO + os.pathsep + env.get("PYTHONPATH", "")
    return env


@contextlib.contextmanager
def _cwd(path):
    old = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(old)


# -- stages ------------------------------------------------------------------------

def bench_transitioner(b):
    """First pass of the transitioner over every job, without and with upload
    certificates."""
    figures = []
    for certificates in (False, True):
        b.set_options(dont_generate_upload_certificates=not certificates)
        b.sql("DELETE FROM result")
        b.sql("UPDATE workunit SET transition_time = 0")       # all due, even this second
        dt = b.run_daemon("transitioner")
        n = b.sql("SELECT COUNT(*) FROM result")[0][0]
        due = b.sql("SELECT COUNT(*) FROM workunit WHERE transition_time < UNIX_TIMESTAMP()")[0][0]
        assert n == b.jobs and due == 0, (n, due)
        rate = b.jobs / dt
        what = "with upload certificates" if certificates else "no upload certificates"
        print("transitioner, %s: %d WUs in %.1f s = %.0f WUs/s; ratio to C++ (%.0f/s) %.2f"
              % (what, b.jobs, dt, rate, CXX_TRANSITIONER_WUS_PER_SEC,
                 rate / CXX_TRANSITIONER_WUS_PER_SEC))
        figures.append(rate)
    b.set_options()
    return figures


STAGES = [("transitioner", bench_transitioner)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--jobs", type=int, default=100000)
    ap.add_argument("--only", action="append", choices=[n for n, _ in STAGES],
                    help="run only this stage (repeatable)")
    ap.add_argument("--keep", action="store_true",
                    help="keep the project directory and database (their names are printed)")
    args = ap.parse_args()
    params = root_db_params()
    db_name = "bpbench_" + secrets.token_hex(4)
    root = tempfile.mkdtemp(prefix="boincpy-bench-backend-")
    b = Bench(root, db_name, params, args.jobs)
    try:
        b.make_project()
        b.create_jobs()
        for name, stage in STAGES:
            if args.only and name not in args.only:
                continue
            stage(b)
        return 0
    finally:
        if args.keep:
            print("kept project %s, database %s" % (root, db_name))
        else:
            shutil.rmtree(root, ignore_errors=True)
            conn = MySQLdb.connect(**params)
            conn.cursor().execute("DROP DATABASE IF EXISTS `%s`" % db_name)
            conn.close()


if __name__ == "__main__":
    sys.exit(main())
