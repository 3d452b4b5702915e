#!/usr/bin/env python3
"""How long the ops pages take, on an empty project and on a busy one.

Builds two throwaway projects and databases (root over the local socket, or
BOINCPY_TEST_DB_* as in the tests): one empty, one with N workunits and 2
results each (default 10,000 jobs, 20,000 results) spread over the past 3
days in every state, 1,000 users, 2,000 hosts with their host app versions,
teams and assignments.  Renders every ops page (and the public
server_status.php, fresh and from its cache) in-process, as the CGI does
without Python's start-up, R times and prints the best time on each
project; any answer but 200 stops the run.  Also prints the time to start a
CGI process that imports the ops pages.

    python bench/bench_ops_pages.py [--wus N] [--runs R]
"""

import argparse
import io
import os
import random
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
from boincpy.db import connect, schema  # noqa: E402
from boincpy.config import load_config  # noqa: E402
from boincpy.web.ops.main import handle  # noqa: E402
from boincpy.web.http import read_request  # noqa: E402

PAGES = (
    ("index.php", ""),
    ("server_status.php", ""),
    ("db_form.php", "table=result"),
    ("db_action.php", "table=result"),
    ("db_action.php", "table=result&outcome=3&server_state=5&appid=1"),
    ("db_action.php", "table=result&summary=1&appid=1"),
    ("db_action.php", "table=result&sort=exit_status&order=asc&start=1000"),
    ("db_action.php", "table=result&id=77"),
    ("db_action.php", "table=workunit&id=77"),
    ("db_action.php", "table=workunit&tfield=create_time&after=%(yesterday)s"
                      "&before=%(yesterday)s&sort=create_time&order=desc"),
    ("db_action.php", "table=workunit&find=wu_50"),
    ("db_action.php", "table=workunit&find=wu_7"),
    ("db_action.php", "table=host"),
    ("db_action.php", "table=host&id=17"),
    ("db_action.php", "table=user&id=17"),
    ("db_action.php", "table=team"),
    ("db_action.php", "table=host_app_version&sort=et_avg"),
    ("db_action.php", "table=app&id=1"),
    ("db_action.php", "table=app_version"),
    ("db_action.php", "table=platform"),
    ("dbinfo.php", ""),
    ("result_summary.php", "appid=1&nsecs=86400"),
    ("pass_percentage_by_platform.php", "appid=1&nsecs=86400"),
    ("failure_result_summary_by_platform.php", "appid=1&nsecs=86400"),
    ("failure_result_summary_by_host.php", "appid=1&nsecs=86400"),
    ("error_summary.php", "nsecs=604800"),
    ("cancel_wu_form.php", ""),
    ("cancel_wu_action.php", "wuid1=10&wuid2=60"),
    ("cancel_workunits.php", "batch=3"),
    ("transition_all.php", ""),
    ("revalidate.php", "batch=3"),
    ("assign.php", ""),
    ("job_times.php", "appid=1"),
    ("app_details.php", "appid=1"),
    ("host_stats.php", ""),
    ("size_census.php", "all=1"),
    ("manage_apps.php", ""),
    ("manage_app_versions.php", ""),
    ("manage_user.php", "userid=17"),
    ("manage_user.php", "user=u17"),
    ("manage_user.php", "userid=17&delete=1"),
    ("list_new_users.php", ""),
    ("manage_special_users.php", ""),
    ("mass_email.php", ""),
    ("add_user.php", ""),
    ("clear_host.php", ""),
    ("why_no_work.php", "hostid=17"),
    ("show_log.php", "s=HOST"),
)

# Pages that need rows an empty project has not: a clear 4xx is their answer.
NEEDS_ROWS = {"table=result&id=77", "table=workunit&id=77", "table=host&id=17",
              "table=user&id=17", "table=app&id=1", "appid=1", "userid=17",
              "userid=17&delete=1", "hostid=17", "wuid1=10&wuid2=60"}


def make_project(root, db_name, params, nwus):
    for d in ("download", "upload", "templates", "keys", "cgi-bin", "log_bench"):
        os.makedirs(os.path.join(root, d))
    write_config(root, {
        "long_name": "Bench", "master_url": "http://127.0.0.1/bench/",
        "db_name": db_name, "db_user": params["user"], "db_passwd": params["passwd"],
        "db_host": ("%s:%d" % (params["host"], params["port"])) if "host" in params else "",
        "db_socket": params.get("unix_socket", ""), "log_dir": os.path.join(root, "log_bench")})
    conn = MySQLdb.connect(**params)
    schema.create_database(conn, db_name)
    schema.load_schema(conn, db_name)
    conn.close()
    if not nwus:
        return 0
    db = connect(load_config(root))
    now = int(time.time())
    rng = random.Random(1)
    db.execute("INSERT INTO platform (create_time, name) VALUES (0, 'x86_64-pc-linux-gnu')")
    db.execute("INSERT INTO app (create_time, name) VALUES (0, 'example_app')")
    db.execute("INSERT INTO app_version (create_time, appid, version_num, platformid, xml_doc) "
               "VALUES (0, 1, 100, 1, '')")
    db.insert_many("user", ("create_time", "email_addr", "name", "authenticator"),
                   [(now, "u%d@x" % i, "u%d" % i, "a%d" % i) for i in range(1000)])
    db.insert_many("host", ("create_time", "userid", "domain_name", "rpc_time", "misc"),
                   [(now, 1 + i % 1000, "h%d" % i, now - rng.randrange(86400), "")
                    for i in range(2000)])
    db.insert_many("workunit", ("create_time", "appid", "name", "xml_doc", "transition_time",
                                "delay_bound", "batch"),
                   [(now - 3 * 86400 + i * 3 * 86400 // nwus, 1, "wu_%d" % i, "<workunit/>",
                     2147483647, 86400, i // 1000) for i in range(nwus)])
    rows = []
    for i in range(nwus):
        created = now - 3 * 86400 + i * 3 * 86400 // nwus
        for k in range(2):
            kind = rng.random()
            sent = received = 0
            state, outcome, exit_status, host = 2, 0, 0, 0
            if kind > 0.1:
                host = 1 + rng.randrange(2000)
                sent = min(now, created + rng.randrange(3600))
                state = 4
                if kind > 0.3 and sent + 3600 < now:
                    state, received = 5, sent + rng.randrange(3600)
                    outcome = 1 if kind > 0.4 else 3
                    exit_status = 0 if outcome == 1 else rng.choice((-186, -187, 1, 197))
            rows.append((created, i + 1, state, outcome, host, 1 + host % 1000, sent, received,
                         sent + 86400 if sent else 0, "wu_%d_%d" % (i, k), 1, exit_status, 1,
                         "<stderr_txt>x</stderr_txt>"))
    db.insert_many("result", ("create_time", "workunitid", "server_state", "outcome", "hostid",
                              "userid", "sent_time", "received_time", "report_deadline", "name",
                              "appid", "exit_status", "app_version_id", "stderr_out"), rows)
    db.execute("UPDATE result SET validate_state = 1, elapsed_time = 3600 * RAND(), "
               "flops_estimate = 1e9 WHERE outcome = 1")
    db.execute("UPDATE app SET n_size_classes = 3")
    db.execute("UPDATE host SET expavg_credit = 50, on_frac = 1, active_frac = 1, "
               "os_name = 'Linux', os_version = '[6.1|libc 2.36]', p_vendor = 'AMD', "
               "serialnum = '[BOINC|7.20.5][vbox|7.0.12]' WHERE id % 2 = 0")
    db.insert_many("host_app_version", ("host_id", "app_version_id", "et_n", "et_avg"),
                   [(h, 1, 5, 1e-9 / (1 + h % 10)) for h in range(1, 2001)])
    db.insert_many("team", ("create_time", "userid", "name", "nusers"),
                   [(now, 1 + i, "team %d" % i, 3) for i in range(100)])
    db.insert_many("assignment", ("create_time", "target_id", "target_type", "workunitid"),
                   [(now, 1 + i, 1, 1 + i) for i in range(200)])
    db.close()
    return len(rows)


def render(root, page, query, empty):
    environ = {"REQUEST_METHOD": "GET", "QUERY_STRING": query, "REMOTE_USER": "admin",
               "HTTP_HOST": "127.0.0.1"}
    t0 = time.perf_counter()
    resp = handle(page, read_request(environ, io.BytesIO()), root)
    elapsed = time.perf_counter() - t0
    ok = resp.status.startswith("200") or (empty and query in NEEDS_ROWS
                                           and resp.status[0] == "4")
    if not ok:
        raise SystemExit("%s?%s: %s\n%s" % (page, query, resp.status, resp.body[-1500:]))
    return elapsed


def public_status(root, cached):
    from boincpy.config import load_config
    from boincpy.web.http import Request
    from boincpy.web import server_status
    cfg = load_config(root, aux=False)
    if not cached:
        try:
            os.unlink(server_status.cache_path(cfg))
        except OSError:
            pass
    t0 = time.perf_counter()
    server_status.handle(cfg, Request.of(get={"xml": "1"}))
    return time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--wus", type=int, default=10000)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    params = root_db_params()
    made = []
    try:
        roots = {}
        for label, nwus in (("empty", 0), ("busy", args.wus)):
            db_name = "bpbench_" + secrets.token_hex(4)
            root = tempfile.mkdtemp(prefix="boincpy-bench-")
            made.append((root, db_name))
            t0 = time.perf_counter()
            n = make_project(root, db_name, params, nwus)
            print("%s project: %d workunits, %d results (loaded in %.1f s)"
                  % (label, nwus, n, time.perf_counter() - t0))
            roots[label] = root
        yesterday = time.strftime("%Y-%m-%d", time.gmtime(time.time() - 86400))
        print("%9s %9s  page (best of %d)" % ("empty", "%d jobs" % args.wus, args.runs))
        worst = 0.0
        for page, query in PAGES:
            query = query % {"yesterday": yesterday}
            times = [min(render(roots[label], page, query, label == "empty")
                         for _ in range(args.runs)) for label in ("empty", "busy")]
            worst = max(worst, times[1])
            print("%7.0f ms %7.0f ms  %s%s" % (times[0] * 1000, times[1] * 1000, page,
                                               "?" + query if query else ""))
        for cached in (False, True):
            times = [min(public_status(roots[label], cached) for _ in range(args.runs))
                     for label in ("empty", "busy")]
            print("%7.0f ms %7.0f ms  html/user/server_status.php?xml=1 (%s)"
                  % (times[0] * 1000, times[1] * 1000, "cached" if cached else "computed"))
        print("slowest ops page on the busy project: %.0f ms (target: under 1000 ms)"
              % (worst * 1000))
        t0 = time.perf_counter()
        for _ in range(5):
            subprocess.run([sys.executable, "-c", "import boincpy.web.ops.main"], check=True)
        print("%8.0f ms  python start-up + import of the ops pages (a CGI's fixed cost)"
              % ((time.perf_counter() - t0) / 5 * 1000))
    finally:
        conn = MySQLdb.connect(**params)
        for root, db_name in made:
            conn.cursor().execute("DROP DATABASE IF EXISTS `%s`" % db_name)
            shutil.rmtree(root, ignore_errors=True)
        conn.close()


if __name__ == "__main__":
    main()
