#!/usr/bin/env python3
"""Pages per second of the volunteer site's task and statistics lists, in-process.

Builds a throwaway project and database (root over the local socket, or
BOINCPY_TEST_DB_* as in the tests) with U users (default 100,000) and as
many hosts, and one volunteer with T tasks (default 1,000) in every state,
all inserted in bulk; then renders, through boincpy.web.user.main.handle
(what a persistent process runs, without Python's start-up), the pages
below for S seconds each and prints pages per second, the SQL statements
each page sends, and the plan MariaDB chooses for the top-users query (it
must walk the user_avg / user_tot index, not sort 100,000 rows).  The
message boards too: a forum of F threads (default 10,000) and a thread of P
posts (default 1,000), with the plans of the forum's and the thread's lists.

    python bench/bench_web_pages.py [--users U] [--tasks T] [--seconds S]
                                    [--threads F] [--posts P]
"""

import argparse
import os
import random
import secrets
import shutil
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)
sys.path.insert(0, os.path.join(REPO, "tests"))

import MySQLdb  # noqa: E402

from conftest import root_db_params  # noqa: E402
from boincpy.config import load_config, write_config  # noqa: E402
from boincpy.db import connect, schema  # noqa: E402
from boincpy.db.connection import Database  # noqa: E402
from boincpy.web.http import Request  # noqa: E402
from boincpy.web.user import main  # noqa: E402

AUTH = "benchvolunteerauthenticator00000"


def make_project(root, db_name, params, nusers, ntasks):
    for d in ("download", "upload", "log_bench", "keys"):   # keys/: the forms' token secret
        os.makedirs(os.path.join(root, d))
    write_config(root, {
        "long_name": "Bench", "master_url": "http://127.0.0.1/bench/",
        "db_name": db_name, "db_user": params["user"], "db_passwd": params.get("passwd", ""),
        "db_host": ("%s:%d" % (params["host"], params["port"])) if "host" in params else "",
        "db_socket": params.get("unix_socket", ""), "log_dir": os.path.join(root, "log_bench"),
        "show_results": True})
    conn = MySQLdb.connect(**params)
    schema.create_database(conn, db_name)
    schema.load_schema(conn, db_name)
    conn.close()
    db = connect(load_config(root))
    rng = random.Random(1)
    now = int(time.time())
    db.execute("INSERT INTO platform (create_time, name, user_friendly_name) "
               "VALUES (0, 'x86_64-pc-linux-gnu', 'Linux')")
    db.execute("INSERT INTO app (create_time, name, user_friendly_name) "
               "VALUES (0, 'example_app', 'Example')")
    db.execute("INSERT INTO app_version (create_time, appid, version_num, platformid, xml_doc) "
               "VALUES (0, 1, 100, 1, '')")
    db.insert_many("user", ("create_time", "email_addr", "name", "authenticator", "country",
                            "total_credit", "expavg_credit", "show_hosts", "global_prefs",
                            "project_prefs"),
                   [(now - rng.randrange(10 ** 8), "u%d@x" % i, "user %d" % i,
                     AUTH if i == 0 else "a%d" % i, "Germany", rng.random() * 1e6,
                     rng.random() * 1e3, i % 2, "", "")
                    for i in range(nusers)])
    db.insert_many("host", ("create_time", "userid", "domain_name", "rpc_time", "total_credit",
                            "expavg_credit", "p_ncpus", "os_name", "misc"),
                   [(now, 1 + i, "h%d" % i, now - rng.randrange(86400), rng.random() * 1e5,
                     rng.random() * 100, 4, "Linux", "") for i in range(nusers)])
    db.insert_many("workunit", ("create_time", "appid", "name", "xml_doc"),
                   [(now, 1, "wu_%d" % i, "") for i in range(ntasks)])
    kinds = [(4, 0, 0), (5, 1, 0), (5, 1, 1), (5, 1, 2), (5, 3, 0), (5, 1, 4)]
    db.insert_many("result", ("create_time", "workunitid", "server_state", "outcome",
                              "validate_state", "hostid", "userid", "name", "sent_time",
                              "received_time", "report_deadline", "appid", "app_version_id",
                              "xml_doc_in", "xml_doc_out", "stderr_out", "granted_credit"),
                   [(now, 1 + i, *kinds[i % len(kinds)], 1, 1, "task_%d" % i, now - i * 60,
                     now - i * 30, now + 86400, 1, 1, "", "", "", 1.5)
                    for i in range(ntasks)])
    db.close()


def make_forum(root, nusers, nthreads, nposts):
    """A forum of ``nthreads`` threads (one post each, by random users) and
    one more thread of ``nposts`` posts, as BOINC's create_thread/post
    leave them; return (forum id, the long thread's id)."""
    db = connect(load_config(root))
    rng = random.Random(2)
    now = int(time.time())
    cat = db.insert("INSERT INTO category (orderID, lang, name, is_helpdesk) "
                    "VALUES (0, 1, 'Bench', 0)")
    fid = db.insert("INSERT INTO forum (category, orderID, title, description) "
                    "VALUES (%s, 0, 'Bench forum', 'threads')", (cat,))
    db.insert_many("thread", ("forum", "owner", "title", "timestamp", "views", "replies",
                              "create_time", "sticky"),
                   [(fid, 1 + rng.randrange(nusers), "Thread %d" % i, now - i * 60,
                     rng.randrange(1000), 0, now - i * 60, 1 if i % 2000 == 0 else 0)
                    for i in range(nthreads)])
    first = db.query_value("SELECT MIN(id) FROM thread WHERE forum = %s", (fid,))
    db.insert_many("post", ("thread", "user", "timestamp", "content"),
                   [(first + i, 1 + rng.randrange(nusers), now - i * 60,
                     "[b]Post[/b] of thread %d" % i) for i in range(nthreads)])
    long_id = db.insert("INSERT INTO thread (forum, owner, title, timestamp, replies, "
                        "create_time) VALUES (%s, 1, 'The long thread', %s, %s, %s)",
                        (fid, now, nposts - 1, now - nposts * 60))
    db.insert_many("post", ("thread", "user", "timestamp", "content"),
                   [(long_id, 1 + rng.randrange(nusers), now - (nposts - i) * 60,
                     "Reply %d with [quote]a quote[/quote] and some text." % i)
                    for i in range(nposts)])
    db.execute("UPDATE forum SET threads = %s, posts = %s, timestamp = %s WHERE id = %s",
               (nthreads + 1, nthreads + nposts, now, fid))
    db.close()
    return fid, long_id


class Counter:
    """Counts the statements boincpy.db.connection.Database sends."""

    def __init__(self):
        self.n = 0
        self.saved = {}

    def install(self):
        for name in ("execute", "insert", "query", "stream", "_run_plain"):
            original = getattr(Database, name)
            self.saved[name] = original

            def counted(db, *args, _original=original, **kwargs):
                self.n += 1
                return _original(db, *args, **kwargs)
            setattr(Database, name, counted)

    def remove(self):
        for name, original in self.saved.items():
            setattr(Database, name, original)


def render(root, page, query, auth=None):
    environ = {"REQUEST_METHOD": "GET", "QUERY_STRING": query, "HTTP_HOST": "127.0.0.1",
               "SCRIPT_NAME": "/bench/" + page, "REMOTE_ADDR": "127.0.0.1"}
    if auth:
        environ["HTTP_COOKIE"] = "auth=" + auth
    get = dict(pair.split("=", 1) for pair in query.split("&") if pair)
    resp = main.handle(page, Request.of(get=get, environ=environ), root)
    if not (resp.status or "200").startswith("200"):
        raise SystemExit("%s?%s: %s\n%s" % (page, query, resp.status, resp.text[-1500:]))
    return resp


def main_():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--users", type=int, default=100000)
    ap.add_argument("--tasks", type=int, default=1000)
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--threads", type=int, default=10000)
    ap.add_argument("--posts", type=int, default=1000)
    args = ap.parse_args()
    params = root_db_params()
    db_name = "bpbench_" + secrets.token_hex(4)
    root = tempfile.mkdtemp(prefix="boincpy-bench-web-")
    try:
        t0 = time.perf_counter()
        make_project(root, db_name, params, args.users, args.tasks)
        print("project: %d users, %d hosts, one volunteer with %d tasks (loaded in %.1f s)"
              % (args.users, args.users, args.tasks, time.perf_counter() - t0))
        fid, long_id = make_forum(root, args.users, args.threads, args.posts)
        print("forum: %d threads, a thread of %d posts" % (args.threads, args.posts))
        db = connect(load_config(root))
        uid = db.query_value("SELECT id FROM user WHERE authenticator = %s", (AUTH,))
        for sort in ("expavg_credit", "total_credit"):
            plan = db.query("EXPLAIN SELECT id FROM user ORDER BY %s DESC LIMIT 20, 20" % sort)
            print("top_users by %s: plan %s" % (sort, ", ".join(
                "%s on %s (key %s, rows %s)" % (p["type"], p["table"], p["key"], p["rows"])
                for p in plan)))
        for what, sql, qparams in (
                ("forum_forum", "SELECT id FROM thread WHERE forum = %s AND hidden = 0 ORDER BY "
                 "sticky DESC, timestamp DESC, id DESC LIMIT 0, 50", (fid,)),
                ("forum_thread", "SELECT * FROM post WHERE thread = %s AND hidden = 0 ORDER BY "
                 "timestamp ASC, id ASC LIMIT 980, 20", (long_id,))):
            plan = db.query("EXPLAIN " + sql, qparams)
            print("%s: plan %s" % (what, ", ".join(
                "%s on %s (key %s, rows %s; %s)" % (p["type"], p["table"], p["key"], p["rows"],
                                                    p["Extra"])
                for p in plan)))
        db.close()
        pages = [("results.php", "userid=%d" % uid, AUTH),
                 ("results.php", "userid=%d&offset=500&state=4" % uid, AUTH),
                 ("results.php", "hostid=1", None),
                 ("top_users.php", "", None),
                 ("top_users.php", "sort_by=total_credit&offset=9980", None),
                 ("top_hosts.php", "", None),
                 ("hosts_user.php", "", AUTH),
                 ("show_host_detail.php", "hostid=1", AUTH),
                 ("show_user.php", "userid=%d" % uid, None),
                 ("forum_index.php", "", None),
                 ("forum_forum.php", "id=%d" % fid, AUTH),
                 ("forum_forum.php", "id=%d&sort=3&start=5000" % fid, None),
                 ("forum_thread.php", "id=%d" % long_id, AUTH),
                 ("forum_thread.php", "id=%d&start=980" % long_id, None),
                 ("forum_user_posts.php", "userid=%d" % uid, None)]
        counter = Counter()
        print("%10s %10s %12s  page" % ("pages/s", "ms/page", "statements"))
        for page, query, auth in pages:
            render(root, page, query, auth)              # warm
            counter.install()
            try:
                render(root, page, query, auth)
                statements = counter.n
            finally:
                counter.remove()
                counter.n = 0
            n, t0 = 0, time.perf_counter()
            while time.perf_counter() - t0 < args.seconds:
                render(root, page, query, auth)
                n += 1
            elapsed = time.perf_counter() - t0
            print("%10.1f %10.2f %12d  %s?%s" % (n / elapsed, elapsed / n * 1000, statements,
                                                 page, query))
        print("(each page opens its own database connection, as a CGI does; "
              "statements include the login lookup)")
    finally:
        conn = MySQLdb.connect(**params)
        conn.cursor().execute("DROP DATABASE IF EXISTS `%s`" % db_name)
        conn.close()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main_()
