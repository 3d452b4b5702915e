#!/usr/bin/env python3
"""Validator and assimilator throughput (workunits per second).

Builds a throwaway project and database (root over the local socket, or
BOINCPY_TEST_DB_* as in the tests) holding N finished jobs (default 100,000)
as the transitioner leaves them after the clients reported: one workunit
with ``need_validate = 1`` and ``--quorum`` successful results each, spread
over 1,000 hosts of 500 users in 50 teams, with host_app_version rows, and
(with ``--files``) the output files in upload/.  Then it times, as
subprocesses with ``--one_pass``:

1. a validator (``sample_trivial_validator``, or ``sample_bitwise_validator``
   with ``--files``) -- every workunit gets a canonical result and credit;
2. ``sample_dummy_assimilator`` -- every workunit is marked assimilated;

and checks the database afterwards (all results VALID with credit, all
workunits DONE, host totals add up).

    python bench/bench_validate_assimilate.py [--jobs N] [--quorum Q] [--files] [-d N]
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
from boincpy.config import load_config, write_config  # noqa: E402
from boincpy.db import connect, schema  # noqa: E402
from boincpy.files import dir_hier_path  # noqa: E402

N_HOSTS, N_USERS, N_TEAMS = 1000, 500, 50


def make_project(root, db_name, params):
    for d in ("download", "upload", "templates", "keys", "cgi-bin", "bin"):
        os.makedirs(os.path.join(root, d))
    with open(os.path.join(root, "templates", "example_app_in"), "w") as f:
        f.write(EXAMPLE_IN)
    with open(os.path.join(root, "templates", "example_app_out"), "w") as f:
        f.write(EXAMPLE_OUT)
    write_config(root, {
        "master_url": "http://127.0.0.1/bench/",
        "upload_url": "http://127.0.0.1/bench_cgi/file_upload_handler",
        "db_name": db_name, "db_user": params["user"], "db_passwd": params["passwd"],
        "db_host": ("%s:%d" % (params["host"], params["port"])) if "host" in params else "",
        "db_socket": params.get("unix_socket", ""), "uldl_dir_fanout": 1024,
        "daily_result_quota": 500})
    conn = MySQLdb.connect(**params)
    schema.create_database(conn, db_name)
    schema.load_schema(conn, db_name)
    conn.close()


def fill(root, jobs, quorum, files):
    """Insert the rows (and output files) of ``jobs`` reported workunits."""
    cfg = load_config(root)
    db = connect(cfg)
    now = int(time.time())
    db.execute("INSERT INTO platform (create_time, name, user_friendly_name) VALUES"
               " (0, 'x86_64-pc-linux-gnu', 'Linux')")
    appid = db.insert("INSERT INTO app (create_time, name) VALUES (0, 'example_app')")
    avid = db.insert("INSERT INTO app_version (create_time, appid, version_num, platformid,"
                     " xml_doc, plan_class) VALUES (0, %s, 100, 1, '', '')", (appid,))
    db.insert_many("team", ("create_time", "userid", "name", "name_lc", "url", "type",
                            "name_html", "description", "nusers", "country"),
                   [(0, 0, "team%d" % i, "team%d" % i, "", 1, "", "", 0, "")
                    for i in range(N_TEAMS)])
    db.insert_many("user", ("create_time", "email_addr", "name", "authenticator", "country",
                            "postal_code", "global_prefs", "project_prefs", "teamid", "venue",
                            "url", "signature", "cross_project_id", "passwd_hash"),
                   [(0, "u%d@x" % i, "u%d" % i, "a%d" % i, "", "", "", "", 1 + i % N_TEAMS, "",
                     "", "", "", "") for i in range(N_USERS)])
    db.insert_many("host", ("create_time", "userid", "p_ncpus", "p_fpops", "misc"),
                   [(0, 1 + i % N_USERS, 4, 3e9, "") for i in range(N_HOSTS)])
    db.insert_many("host_app_version", ("host_id", "app_version_id", "max_jobs_per_day"),
                   [(1 + i, avid, 500) for i in range(N_HOSTS)])
    wus, results = [], []
    fanout = cfg.uldl_dir_fanout
    for j in range(jobs):
        name = "bench_%d" % j
        wus.append((now, appid, name, "<workunit>\n</workunit>\n", 3.6e12, 8.64e13, 5e8, 1e9, 1,
                    now + 86400, 604800, quorum, quorum, 1, 8, quorum + 3,
                    "templates/example_app_out"))
        for k in range(quorum):
            host = 1 + (j * quorum + k) % N_HOSTS
            rname = "%s_%d" % (name, k)
            phys = "%s_r%d_0" % (rname, j % 100000)
            xml = ("<file_info>\n    <name>%s</name>\n    <generated_locally/>\n"
                   "    <upload_when_present/>\n    <max_nbytes>5000000</max_nbytes>\n"
                   "    <url>http://127.0.0.1/bench_cgi/file_upload_handler</url>\n"
                   "</file_info>\n<result>\n    <file_ref>\n        <file_name>%s</file_name>\n"
                   "        <open_name>out</open_name>\n    </file_ref>\n</result>"
                   % (phys, phys))
            results.append((now, j + 1, 5, 1, 5, host, 1 + (host - 1) % N_USERS, now - 3600,
                            now - 60, rname, 100.0, xml, "", "<stderr_txt>\n</stderr_txt>\n",
                            appid, 120.0, 3e9, avid))
            if files:
                path = dir_hier_path(cfg.upload_dir, phys, fanout, create=True)
                with open(path, "w") as f:
                    f.write("OUTPUT OF JOB %d\n" % j)
    db.insert_many("workunit", ("create_time", "appid", "name", "xml_doc", "rsc_fpops_est",
                                "rsc_fpops_bound", "rsc_memory_bound", "rsc_disk_bound",
                                "need_validate", "transition_time", "delay_bound", "min_quorum",
                                "target_nresults", "max_error_results", "max_total_results",
                                "max_success_results", "result_template_file"), wus)
    db.insert_many("result", ("create_time", "workunitid", "server_state", "outcome",
                              "client_state", "hostid", "userid", "sent_time", "received_time",
                              "name", "cpu_time", "xml_doc_in", "xml_doc_out", "stderr_out",
                              "appid", "elapsed_time", "flops_estimate", "app_version_id"),
                   results)
    db.close()


def timed(root, argv, debug):
    t0 = time.perf_counter()
    with open(os.path.join(root, "bench.log"), "a") as log:
        subprocess.run([sys.executable, os.path.join(REPO, "bin", argv[0])] + argv[1:]
                       + ["--one_pass", "-d", str(debug), "--project_dir", root],
                       check=True, stderr=log, cwd=root)
    return time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--jobs", type=int, default=100000)
    ap.add_argument("--quorum", type=int, default=1)
    ap.add_argument("--files", action="store_true",
                    help="write output files and validate them with sample_bitwise_validator")
    ap.add_argument("-d", type=int, default=3, help="daemons' log level (default 3)")
    ap.add_argument("--keep", action="store_true", help="keep the project and database")
    args = ap.parse_args()
    params = root_db_params()
    db_name = "bpbench_" + secrets.token_hex(4)
    root = tempfile.mkdtemp(prefix="boincpy-bench-")
    try:
        make_project(root, db_name, params)
        t0 = time.perf_counter()
        fill(root, args.jobs, args.quorum, args.files)
        print("setup: %d workunits x %d results in %.1f s"
              % (args.jobs, args.quorum, time.perf_counter() - t0))
        validator = "sample_bitwise_validator" if args.files else "sample_trivial_validator"
        dt = timed(root, [validator, "--app", "example_app"], args.d)
        print("%s: %d workunits in %.1f s = %.0f workunits/s (%.0f results/s)"
              % (validator, args.jobs, dt, args.jobs / dt, args.jobs * args.quorum / dt))
        dt2 = timed(root, ["sample_dummy_assimilator", "--app", "example_app",
                                   "--record_interval", "2"], args.d)
        print("sample_dummy_assimilator: %d workunits in %.1f s = %.0f workunits/s"
              % (args.jobs, dt2, args.jobs / dt2))
        db = connect(load_config(root))
        valid = db.query_value("SELECT COUNT(*) FROM result WHERE validate_state = 1"
                               " AND granted_credit > 0")
        done = db.query_value("SELECT COUNT(*) FROM workunit WHERE assimilate_state = 2"
                              " AND canonical_resultid > 0")
        total = db.query_value("SELECT SUM(granted_credit) FROM result")
        hosts = db.query_value("SELECT SUM(total_credit) FROM host")
        users = db.query_value("SELECT SUM(total_credit) FROM user")
        db.close()
        assert valid == args.jobs * args.quorum, valid
        assert done == args.jobs, done
        assert abs(hosts - total) < 1e-6 * total and abs(users - total) < 1e-6 * total
        print("checked: %d results VALID, %d workunits assimilated, credit %.1f = host total"
              " %.1f = user total %.1f" % (valid, done, total, hosts, users))
        return 0
    finally:
        if args.keep:
            print("kept %s and database %s" % (root, db_name))
        else:
            shutil.rmtree(root, ignore_errors=True)
            conn = MySQLdb.connect(**params)
            conn.cursor().execute("DROP DATABASE IF EXISTS `%s`" % db_name)
            conn.close()


if __name__ == "__main__":
    sys.exit(main())
