#!/usr/bin/env python3
"""Pages per second of the volunteer site's task and statistics lists.

Builds a throwaway project and database (root over the local socket, or
BOINCPY_TEST_DB_* as in the tests) with U users (default 100,000) and as
many hosts, and one volunteer with T tasks (default 1,000) in every state,
all inserted in bulk; then renders, through boincpy.web.user.main.handle
(what a persistent process runs, without Python's start-up), the pages
below for S seconds each and prints pages per second, the SQL statements
each page sends, and the plan MariaDB chooses for the top-users query (it
must walk the user_avg / user_tot index, not sort 100,000 rows).  The
message boards too: a forum of F threads (default 10,000) and a thread of P
posts (default 1,000), with the plans of the forum's and the thread's lists,
and a team of M members (default 1,000).

With --apache, the same rows go into a project made by make_project (as
tests/conftest.make_test_project makes one, on a free loopback port), served
by a private Apache as classic CGIs and then in persistent mode (--processes
N FastCGI workers, all up before measuring: the private Apache starts them); a load client on
127.0.0.1 (bare sockets, one connection a request, each concurrent stream its
own process; the volunteer's ``auth`` cookie for home.php and results.php)
sends --warmup requests, then GETs each page for S seconds (at most
--max_requests) at concurrency 1 and 2, and prints pages per second, p50 and
p95 latency and the ratio persistent / CGI for home.php, results.php (T
tasks), team_display.php (M members), top_users.php (U users),
forum_forum.php (F threads) and forum_thread.php (P posts).
tests/test_site_queries.py EXPLAINs these pages' statements.

    python bench/bench_web_pages.py [--users U] [--tasks T] [--seconds S]
                                    [--threads F] [--posts P] [--members M]
                                    [--other_tasks K]
    sudo python bench/bench_web_pages.py --apache [--processes N] [sizes]
"""

import argparse
import os
import random
import secrets
import shutil
import socket
import sys
import tempfile
import time
from urllib.parse import urlsplit

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)
sys.path.insert(0, os.path.join(REPO, "tests"))

import MySQLdb  # noqa: E402

from conftest import root_db_params  # noqa: E402
from bench_sched import _read_reply, in_processes  # noqa: E402
from boincpy.config import load_config, write_config  # noqa: E402
from boincpy.db import connect, schema  # noqa: E402
from boincpy.db.connection import Database  # noqa: E402
from boincpy.web.http import Request  # noqa: E402
from boincpy.web.user import main  # noqa: E402

AUTH = "benchvolunteerauthenticator00000"


def make_project(root, db_name, params):
    """A throwaway project: config.xml and an empty database (fill_rows fills it)."""
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


def fill_rows(root, nusers, ntasks, other_tasks=0):
    """``nusers`` users (the first is the volunteer whose authenticator is
    AUTH) with a host each, and ``ntasks`` tasks of that volunteer in every
    state, into the database of the project in ``root`` (this bench's or one
    made by make_project); ``other_tasks`` more of the other users."""
    db = connect(load_config(root))
    rng = random.Random(1)
    now = int(time.time())
    db.execute("INSERT IGNORE INTO platform (create_time, name, user_friendly_name) "
               "VALUES (0, 'x86_64-pc-linux-gnu', 'Linux')")
    db.execute("INSERT IGNORE INTO app (create_time, name, user_friendly_name) "
               "VALUES (0, 'example_app', 'Example')")
    platform = db.query_value("SELECT id FROM platform WHERE name = 'x86_64-pc-linux-gnu'")
    app = db.query_value("SELECT id FROM app WHERE name = 'example_app'")
    version = db.insert("INSERT INTO app_version (create_time, appid, version_num, platformid, "
                        "xml_doc, plan_class) VALUES (0, %s, 100, %s, '', 'bench')",
                        (app, platform))
    first_user = db.query_value("SELECT MAX(id) FROM user", default=0) + 1
    first_wu = db.query_value("SELECT MAX(id) FROM workunit", default=0) + 1
    db.insert_many("user", ("create_time", "email_addr", "name", "authenticator", "country",
                            "total_credit", "expavg_credit", "show_hosts", "global_prefs",
                            "project_prefs"),
                   [(now - rng.randrange(10 ** 8), "u%d@x" % i, "user %d" % i,
                     AUTH if i == 0 else "a%d" % i, "Germany", rng.random() * 1e6,
                     rng.random() * 1e3, i % 2, "", "")
                    for i in range(nusers)])
    db.insert_many("host", ("create_time", "userid", "domain_name", "rpc_time", "total_credit",
                            "expavg_credit", "p_ncpus", "os_name", "misc"),
                   [(now, first_user + i, "h%d" % i, now - rng.randrange(86400),
                     rng.random() * 1e5, rng.random() * 100, 4, "Linux", "")
                    for i in range(nusers)])
    host = db.query_value("SELECT id FROM host WHERE userid = %s", (first_user,))
    db.insert_many("workunit", ("create_time", "appid", "name", "xml_doc"),
                   [(now, app, "wu_%d" % i, "") for i in range(ntasks + other_tasks)])

    def owner(i):      # (host, user) of task i: the volunteer's, then the others' in turn
        k = 0 if i < ntasks else 1 + i % (nusers - 1)
        return host + k, first_user + k
    kinds = [(4, 0, 0), (5, 1, 0), (5, 1, 1), (5, 1, 2), (5, 3, 0), (5, 1, 4)]
    db.insert_many("result", ("create_time", "workunitid", "server_state", "outcome",
                              "validate_state", "hostid", "userid", "name", "sent_time",
                              "received_time", "report_deadline", "appid", "app_version_id",
                              "xml_doc_in", "xml_doc_out", "stderr_out", "granted_credit"),
                   [(now, first_wu + i, *kinds[i % len(kinds)], *owner(i), "task_%d" % i,
                     now - i * 60, now - i * 30, now + 86400, app, version, "", "", "", 1.5)
                    for i in range(ntasks + other_tasks)])
    db.close()


def make_team(root, nmembers):
    """A team founded by the volunteer (AUTH), whose ``nmembers`` members are
    the volunteer and the users after it; return its id."""
    db = connect(load_config(root))
    uid = db.query_value("SELECT id FROM user WHERE authenticator = %s", (AUTH,))
    now = int(time.time())
    teamid = db.insert("INSERT INTO team (create_time, userid, name, name_lc, url, type, "
                       "name_html, description, nusers, country, total_credit, expavg_credit, "
                       "joinable) VALUES (%s, %s, 'Bench team', 'bench team', '', 1, '', "
                       "'A team of the bench', %s, 'Germany', 1e6, 1e3, 1)",
                       (now, uid, nmembers))
    db.execute("UPDATE user SET teamid = %s WHERE id >= %s ORDER BY id LIMIT %s",
               (teamid, uid, nmembers))
    db.close()
    return teamid


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


def print_plans(root, fid, long_id):
    """The plans MariaDB chooses for the top-users, forum and thread lists."""
    db = connect(load_config(root))
    for sort in ("expavg_credit", "total_credit"):
        plan = db.query("EXPLAIN SELECT id FROM user ORDER BY %s DESC LIMIT 20, 20" % sort)
        print("top_users by %s: plan %s" % (sort, ", ".join(
            "%s on %s (key %s, rows %s)" % (p["type"], p["table"], p["key"], p["rows"])
            for p in plan)))
    for what, sql, qparams in (
            ("forum_forum", "SELECT id FROM thread WHERE forum = %s AND hidden = 0 ORDER BY "
             "sticky DESC, timestamp DESC, id DESC LIMIT 0, 50", (fid,)),
            ("forum_forum's page at 5000", "SELECT id, owner, title, timestamp, views, replies "
             "FROM thread WHERE forum = %s AND hidden = 0 ORDER BY sticky DESC, timestamp DESC, "
             "id DESC LIMIT 5000, 50", (fid,)),
            ("forum_thread", "SELECT * FROM post WHERE thread = %s AND hidden = 0 ORDER BY "
             "timestamp ASC, id ASC LIMIT 980, 20", (long_id,))):
        plan = db.query("EXPLAIN " + sql, qparams)
        print("%s: plan %s" % (what, ", ".join(
            "%s on %s (key %s, rows %s; %s)" % (p["type"], p["table"], p["key"], p["rows"],
                                                p["Extra"])
            for p in plan)))
    db.close()


def fill_project(root, args):
    """This bench's rows in the project in ``root``: users, hosts, the
    volunteer's tasks, the team, the forum; return (volunteer's id, team id,
    forum id, the long thread's id) after printing the plans."""
    t0 = time.perf_counter()
    fill_rows(root, args.users, args.tasks, args.other_tasks)
    print("project: %d users, %d hosts, one volunteer with %d tasks, %d tasks of others "
          "(loaded in %.1f s)" % (args.users, args.users, args.tasks, args.other_tasks,
                                 time.perf_counter() - t0))
    teamid = make_team(root, args.members)
    fid, long_id = make_forum(root, args.users, args.threads, args.posts)
    print("team of %d members; forum: %d threads, a thread of %d posts"
          % (args.members, args.threads, args.posts))
    print_plans(root, fid, long_id)
    db = connect(load_config(root))
    uid = db.query_value("SELECT id FROM user WHERE authenticator = %s", (AUTH,))
    db.close()
    return uid, teamid, fid, long_id


def in_process(args):
    params = root_db_params()
    db_name = "bpbench_" + secrets.token_hex(4)
    root = tempfile.mkdtemp(prefix="boincpy-bench-web-")
    try:
        make_project(root, db_name, params)
        uid, teamid, fid, long_id = fill_project(root, args)
        pages = [("home.php", "", AUTH),
                 ("results.php", "userid=%d" % uid, AUTH),
                 ("results.php", "userid=%d&offset=500&state=4" % uid, AUTH),
                 ("results.php", "hostid=1", None),
                 ("team_display.php", "teamid=%d" % teamid, None),
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


# ---------------------------------------------------------------------------
# --apache: a project made by make_project, served by a private Apache

def get(port, path, cookie=None):
    """GET ``path`` from 127.0.0.1:``port`` on a new connection; return
    (status, body).  A bare socket, read as bench_sched.post reads (to the
    reply's length or last chunk, not the connection's close)."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=120)
    try:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.sendall(("GET %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nUser-Agent: bench_web_pages\r\n"
                      "%sConnection: close\r\n\r\n"
                      % (path, port, "Cookie: auth=%s\r\n" % cookie if cookie else "")).encode())
        try:
            return _read_reply(sock)
        except ValueError:
            return 0, b""
    finally:
        sock.close()


def run_load(port, path, cookie, marker, conc, seconds, max_requests):
    """GET ``path`` from ``conc`` client processes (threads of one would share
    its interpreter lock) for ``seconds``, at most ``max_requests`` in all;
    a reply is an error unless it is a 200 holding ``marker``.  Returns
    pages/s, p50 and p95 latency (ms), the count and the errors."""

    def stream(share):
        lat, errors = [], 0
        first = time.perf_counter()
        deadline = first + seconds
        while time.perf_counter() < deadline and len(lat) < share:
            t = time.perf_counter()
            try:
                status, body = get(port, path, cookie)
            except OSError:
                status, body = 0, b""
            lat.append(time.perf_counter() - t)
            if status != 200 or marker not in body:
                errors += 1
        return {"lat": lat, "errors": errors, "span": (first, time.perf_counter())}

    parts, figures = in_processes(stream, [max(1, max_requests // conc)] * conc)
    return {**figures, "n": sum(len(p["lat"]) for p in parts),
            "errors": sum(p["errors"] for p in parts)}


def measure_mode(project, mode, pages, args):
    """Serve ``project`` in ``mode`` ("cgi" or "persistent") and load each
    page at concurrency 1 and 2; returns {(page label, conc): stats}."""
    from boincpy.tools import server_mode
    from boincpy.tools.httpd import PrivateApache
    server_mode.set_mode(project.root, mode, processes=args.processes)
    server = PrivateApache(project.root, project.port)
    server.start()
    figures = {}
    try:
        base = urlsplit(project.master_url).path
        if mode == "persistent":
            from boincpy.tools.server_mode import persistent_pids
            print("persistent mode: %d of %d processes running"
                  % (len(persistent_pids(project.root)), args.processes))
        for label, query, auth, marker in pages:
            path = base + label + ("?" + query if query else "")
            for _ in range(args.warmup):
                status, body = get(project.port, path, auth)
                if status != 200 or marker not in body:
                    raise SystemExit("%s (%s mode): %s\n%s\n(see %s)" % (
                        path, mode, status, body[-1500:].decode("utf-8", "replace"),
                        server.error_log))
            for conc in (1, 2):
                r = figures[label, conc] = run_load(project.port, path, auth, marker, conc,
                                                    args.seconds, args.max_requests)
                print("  %-10s %-18s c=%d %8.1f pages/s  p50 %7.1f ms  p95 %7.1f ms  (%d, %d "
                      "errors)" % (mode, label, conc, r["rps"], r["p50"], r["p95"], r["n"],
                                   r["errors"]), flush=True)
    finally:
        server.stop(graceful=False)
    return figures


def over_apache(args):
    from conftest import make_test_project, remove_test_project
    t0 = time.perf_counter()
    project = make_test_project(root_db_params(), test_app=False)
    try:
        print("project %s made by make_project in %.1f s, on 127.0.0.1:%d"
              % (project.short_name, time.perf_counter() - t0, project.port))
        uid, teamid, fid, long_id = fill_project(project.root, args)
        pages = [("home.php", "", AUTH, b"user 0"),
                 ("results.php", "userid=%d" % uid, AUTH, b"result.php?resultid="),
                 ("team_display.php", "teamid=%d" % teamid, None, b"Bench team"),
                 ("top_users.php", "", None, b"user "),
                 ("forum_forum.php", "id=%d" % fid, None, b"Thread "),
                 ("forum_thread.php", "id=%d" % long_id, None, b"Reply ")]
        figures = {mode: measure_mode(project, mode, pages, args)
                   for mode in ("cgi", "persistent")}
    finally:
        remove_test_project(project)
    print()
    print("Sizes: %d users, %d tasks, a team of %d, %d threads, a thread of %d posts; "
          "%d persistent processes; %g s a measurement; load average %s"
          % (args.users, args.tasks, args.members, args.threads, args.posts, args.processes,
             args.seconds, " ".join("%.2f" % x for x in os.getloadavg())))
    print("| Page | CGI pages/s c=1, c=2 | CGI p50 / p95 ms c=1; c=2 | persistent pages/s "
          "c=1, c=2 | persistent p50 / p95 ms c=1; c=2 | persistent / CGI c=1, c=2 |")
    print("|---|---|---|---|---|---|")
    for label, query, _auth, _marker in pages:
        row = ["%s%s" % (label, "?" + query if query else "")]
        for mode in ("cgi", "persistent"):
            one, two = figures[mode][label, 1], figures[mode][label, 2]
            row += ["%.1f, %.1f" % (one["rps"], two["rps"]),
                    "%.1f / %.1f; %.1f / %.1f" % (one["p50"], one["p95"], two["p50"], two["p95"])]
        row.append("%.1fx, %.1fx" % tuple(figures["persistent"][label, c]["rps"]
                                          / figures["cgi"][label, c]["rps"] for c in (1, 2)))
        print("| " + " | ".join(row) + " |")
    worst = max(figures["cgi"][label, conc]["p95"] for label, *_ in pages for conc in (1, 2))
    print("classic CGI p95, the worst page and concurrency: %.1f ms (target: under 100 ms)"
          % worst)


def main_():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--users", type=int, default=100000)
    ap.add_argument("--tasks", type=int, default=1000)
    ap.add_argument("--members", type=int, default=1000, help="the team's members")
    ap.add_argument("--other_tasks", type=int, default=0, help="tasks of the other users")
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--threads", type=int, default=10000)
    ap.add_argument("--posts", type=int, default=1000)
    ap.add_argument("--apache", action="store_true",
                    help="over HTTP: a project made by make_project, a private Apache in "
                         "classic CGI mode, then in persistent mode")
    ap.add_argument("--processes", type=int, default=2, help="persistent processes (--apache)")
    ap.add_argument("--warmup", type=int, default=3, help="requests before measuring (--apache)")
    ap.add_argument("--max_requests", type=int, default=20000,
                    help="at most this many requests a measurement (--apache)")
    args = ap.parse_args()
    if args.apache:
        over_apache(args)
    else:
        in_process(args)


if __name__ == "__main__":
    main_()
