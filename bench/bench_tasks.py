#!/usr/bin/env python3
"""How fast the daily tasks get through a big project: update_stats and db_dump.

Builds a throwaway database (root over the local socket, or BOINCPY_TEST_DB_*
as in the tests) with N hosts (default 500,000) and N/5 users and N/50
teams, every one with credit last granted 8 days ago, then times as
subprocesses (``-d 2``, as under bin/start):

* ``update_stats`` decaying every row (the daily run after a week of quiet);
* ``db_dump`` with BOINC's default spec (user.gz, host.gz with detail,
  team.gz, tables.xml).

Prints rows/s for each.

    python bench/bench_tasks.py [--hosts N] [--keep]
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

from conftest import root_db_params  # noqa: E402
from boincpy.config import write_config  # noqa: E402
from boincpy.daemons.db_dump import DEFAULT_SPEC  # noqa: E402
from boincpy.db import schema  # noqa: E402


def _env(root):
    env = dict(os.environ)
    env["PYTHONPATH"] = REPO + os.pathsep + env.get("PYTHONPATH", "")
    env["BOINC_PROJECT_DIR"] = root
    return env


def fill(conn, nhosts):
    """Hosts, users and teams with credit granted 8 days ago."""
    cur = conn.cursor()
    then = time.time() - 8 * 86400
    nusers, nteams = max(nhosts // 5, 1), max(nhosts // 50, 1)
    chunk = 5000
    for table, n, row in (
            ("team", nteams, lambda i: "('team %d', %d, 1000, 50, %r)" % (i, i + 1, then)),
            ("user", nusers, lambda i: "('u%d@example.org', 'user %d', 'auth%d', %d, 500, 20,"
                                       " %r, 'xp%d')" % (i, i, i, i % nteams + 1, then, i)),
            ("host", nhosts, lambda i: "(%d, '', 'GenuineIntel', 'Xeon', 'Linux', '6.1', 8,"
                                       " 4e9, 100, 5, %r, 'cpid%d', 'h%d')"
                                       % (i % nusers + 1, then, i, i))):
        cols = {"team": "(name, userid, total_credit, expavg_credit, expavg_time)",
                "user": "(email_addr, name, authenticator, teamid, total_credit, expavg_credit,"
                        " expavg_time, cross_project_id)",
                "host": "(userid, misc, p_vendor, p_model, os_name, os_version, p_ncpus,"
                        " p_fpops, total_credit, expavg_credit, expavg_time, host_cpid,"
                        " domain_name)"}[table]
        for start in range(0, n, chunk):
            values = ",".join(row(i) for i in range(start, min(n, start + chunk)))
            cur.execute("INSERT INTO %s %s VALUES %s" % (table, cols, values))
        conn.commit()
    return nusers, nteams


def timed(root, argv):
    log = os.path.join(root, "log_bench", os.path.basename(argv[0]) + ".out")
    with open(log, "a") as out:
        t0 = time.perf_counter()
        proc = subprocess.run([sys.executable] + argv, cwd=os.path.join(root, "tmp_bench"),
                              stdout=out, stderr=out, env=_env(root))
        dt = time.perf_counter() - t0
    if proc.returncode:
        sys.exit("%s failed (exit %d); see %s" % (argv[0], proc.returncode, log))
    return dt


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--hosts", type=int, default=500000)
    ap.add_argument("--keep", action="store_true", help="keep the project and database")
    args = ap.parse_args()
    params = root_db_params()
    db_name = "bpbench_" + secrets.token_hex(4)
    root = tempfile.mkdtemp(prefix="bench_tasks-")
    conn = MySQLdb.connect(**params)
    try:
        for d in ("log_bench", "tmp_bench", "html", "upload"):
            os.makedirs(os.path.join(root, d))
        os.makedirs(os.path.join(root, "cgi-bin"))
        with open(os.path.join(root, "db_dump_spec.xml"), "w") as f:
            f.write(DEFAULT_SPEC)
        write_config(root, {
            "master_url": "http://127.0.0.1/bench/", "db_name": db_name,
            "db_user": params["user"], "db_passwd": params["passwd"],
            "db_host": ("%s:%d" % (params["host"], params["port"])) if "host" in params else "",
            "db_socket": params.get("unix_socket", ""), "host": "bench",
            "log_dir": os.path.join(root, "log_bench")})
        schema.create_database(conn, db_name)
        schema.load_schema(conn, db_name)
        conn.select_db(db_name)
        t0 = time.perf_counter()
        nusers, nteams = fill(conn, args.hosts)
        print("filled %d hosts, %d users, %d teams in %.1f s"
              % (args.hosts, nusers, nteams, time.perf_counter() - t0))
        total = args.hosts + nusers + nteams
        dt = timed(root, [os.path.join(REPO, "bin", "update_stats"), "-d", "2"])
        print("update_stats: %d rows decayed in %.1f s (%.0f rows/s)" % (total, dt, total / dt))
        cur = conn.cursor()
        cur.execute("SELECT COUNT(*) FROM host WHERE expavg_time < UNIX_TIMESTAMP() - 3600")
        assert cur.fetchone()[0] == 0, "update_stats left rows undecayed"
        dt = timed(root, [os.path.join(REPO, "bin", "db_dump"), "-d", "2",
                          "--dump_spec", "../db_dump_spec.xml"])
        size = sum(os.path.getsize(os.path.join(root, "html", "stats", f))
                   for f in os.listdir(os.path.join(root, "html", "stats")))
        print("db_dump: %d records in %.1f s (%.0f records/s), %.1f MB written"
              % (total, dt, total / dt, size / 1e6))
    finally:
        if args.keep:
            print("kept %s and database %s" % (root, db_name))
        else:
            conn.cursor().execute("DROP DATABASE IF EXISTS `%s`" % db_name)
            shutil.rmtree(root, ignore_errors=True)
        conn.close()


if __name__ == "__main__":
    main()
