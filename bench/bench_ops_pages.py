#!/usr/bin/env python3
"""How long the ops pages take on a project with many results.

Builds a throwaway project and database (root over the local socket, or
BOINCPY_TEST_DB_* as in the tests) with N workunits and 2 results each
(default 50,000 workunits, 100,000 results) spread over the past 3 days in
every state, then renders each page in-process (as the CGI does, without
Python's start-up) R times and prints the best time.  Also prints the time
to start a CGI process that imports the ops pages.

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
from boincpy.web.ops.request import read_request  # noqa: E402

PAGES = (
    ("index.php", ""),
    ("server_status.php", ""),
    ("db_action.php", "table=result"),
    ("db_action.php", "table=result&outcome=3&server_state=5&appid=1"),
    ("db_action.php", "table=result&summary=1&appid=1"),
    ("db_action.php", "table=result&id=777"),
    ("db_action.php", "table=workunit&id=777"),
    ("db_action.php", "table=host"),
    ("result_summary.php", "appid=1&nsecs=86400"),
    ("failure_result_summary_by_platform.php", "appid=1&nsecs=86400"),
    ("failure_result_summary_by_host.php", "appid=1&nsecs=86400"),
    ("error_summary.php", "nsecs=604800"),
    ("cancel_wu_action.php", "wuid1=1000&wuid2=2000"),
)


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
    db.close()
    return len(rows)


def render(root, page, query):
    environ = {"REQUEST_METHOD": "GET", "QUERY_STRING": query, "REMOTE_USER": "admin",
               "HTTP_HOST": "127.0.0.1"}
    t0 = time.perf_counter()
    resp = handle(page, read_request(environ, io.BytesIO()), root)
    elapsed = time.perf_counter() - t0
    if not resp.status.startswith("200"):
        raise SystemExit("%s?%s: %s\n%s" % (page, query, resp.status, resp.body[-1500:]))
    return elapsed, len(resp.body)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--wus", type=int, default=50000)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    params = root_db_params()
    db_name = "bpbench_" + secrets.token_hex(4)
    root = tempfile.mkdtemp(prefix="boincpy-bench-")
    try:
        t0 = time.perf_counter()
        n = make_project(root, db_name, params, args.wus)
        print("%d workunits, %d results loaded in %.1f s" % (args.wus, n, time.perf_counter() - t0))
        for page, query in PAGES:
            best = min(render(root, page, query)[0] for _ in range(args.runs))
            print("%8.0f ms  %s%s" % (best * 1000, page, "?" + query if query else ""))
        t0 = time.perf_counter()
        for _ in range(5):
            subprocess.run([sys.executable, "-c", "import boincpy.web.ops.main"], check=True)
        print("%8.0f ms  python start-up + import of the ops pages (a CGI's fixed cost)"
              % ((time.perf_counter() - t0) / 5 * 1000))
    finally:
        conn = MySQLdb.connect(**params)
        conn.cursor().execute("DROP DATABASE IF EXISTS `%s`" % db_name)
        conn.close()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
