"""Every statement the volunteer site's list pages send walks an index.

home.php, results.php (a volunteer's tasks), team_display.php (a team's
members), top_users.php, forum_forum.php (a forum's threads) and
forum_thread.php (a thread's posts) are rendered in-process on a small project
made by make_project, filled by bench/bench_web_pages.py's own row builders
(at sizes where MariaDB plans as it does at 100,000 users: the volunteer's
tasks, the long thread's posts and the team's members are a small part of
their tables), and each
SELECT they sent is EXPLAINed with its parameters: none may read all of
user, result, thread or post (a plan of type ALL, or a whole index).
bench_web_pages.py prints the same pages' figures at full size.
"""

import os
import sys
from types import SimpleNamespace

import pytest

from boincpy.db.connection import Database

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "bench"))
import bench_web_pages as bench  # noqa: E402

BIG_TABLES = ("user", "result", "thread", "post")
SIZES = SimpleNamespace(users=3000, tasks=300, other_tasks=3000, members=100, threads=2000,
                        posts=100)


class Recorder:
    """The SELECTs (statement, parameters) boincpy's Database sends while installed."""

    METHODS = ("query", "query_value", "stream")

    def __init__(self):
        self.statements = []
        self.saved = {}

    def __enter__(self):
        for name in self.METHODS:
            original = self.saved[name] = getattr(Database, name)

            def recorded(db, sql, params=None, _original=original):
                if sql.lstrip()[:6].upper() == "SELECT":
                    self.statements.append((sql, params))
                return _original(db, sql, params)
            setattr(Database, name, recorded)
        return self

    def __exit__(self, *exc):
        for name, original in self.saved.items():
            setattr(Database, name, original)


@pytest.fixture(scope="module")
def site(db_root_params):
    from conftest import make_test_project, remove_test_project
    project = make_test_project(db_root_params, test_app=False)
    try:
        uid, teamid, fid, long_id = bench.fill_project(project.root, SIZES)
        db = project.connect()
        for table in BIG_TABLES + ("host", "team"):
            db.query("ANALYZE TABLE `%s`" % table)
        db.close()
        yield SimpleNamespace(project=project, uid=uid, teamid=teamid, fid=fid,
                              long_id=long_id)
    finally:
        remove_test_project(project)


def pages(site):
    """(page, query, authenticator) of the pages issue 31 measures."""
    return [("home.php", "", bench.AUTH),
            ("results.php", "userid=%d" % site.uid, bench.AUTH),
            ("results.php", "userid=%d&offset=200&state=4" % site.uid, bench.AUTH),
            ("team_display.php", "teamid=%d" % site.teamid, bench.AUTH),
            ("top_users.php", "", None),
            ("top_users.php", "sort_by=total_credit&offset=2000", None),
            ("forum_forum.php", "id=%d" % site.fid, bench.AUTH),
            ("forum_forum.php", "id=%d&start=50" % site.fid, None),
            ("forum_thread.php", "id=%d" % site.long_id, bench.AUTH),
            ("forum_thread.php", "id=%d&start=80" % site.long_id, None)]


def full_scans(db, sql, params):
    """The plan's rows that read all of a big table: type ALL, or a whole
    index (type index) without a LIMIT that ends the walk early."""
    bad = []
    for row in db.query("EXPLAIN " + sql, params):
        if row["table"] not in BIG_TABLES:
            continue
        if row["type"] == "ALL" or (row["type"] == "index" and "LIMIT" not in sql.upper()):
            bad.append("%s on %s (key %s, rows %s; %s)" % (
                row["type"], row["table"], row["key"], row["rows"], row["Extra"]))
    return bad


@pytest.mark.parametrize("which", range(10))
def test_list_pages_use_indexes(site, which):
    page, query, auth = pages(site)[which]
    with Recorder() as rec:
        resp = bench.render(site.project.root, page, query, auth)
    assert resp.status is None or resp.status.startswith("200")
    assert rec.statements, "%s sent no SELECT through boincpy.db.connection" % page
    db = site.project.connect()
    try:
        problems = ["%s\n    %s" % (" ".join(sql.split()), ", ".join(bad))
                    for sql, params in rec.statements
                    for bad in [full_scans(db, sql, params)] if bad]
    finally:
        db.close()
    assert not problems, "%s?%s reads a whole table:\n%s" % (page, query, "\n".join(problems))


def test_the_check_sees_a_full_scan(site):
    """The check itself: a list of posts by a column without an index is one."""
    db = site.project.connect()
    try:
        assert full_scans(db, "SELECT id FROM post WHERE hidden = %s ORDER BY id DESC", (1,))
        assert not full_scans(db, "SELECT id FROM post WHERE thread = %s ORDER BY timestamp",
                              (site.long_id,))
    finally:
        db.close()
