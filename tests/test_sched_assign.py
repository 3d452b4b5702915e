"""Targeted and broadcast jobs (enable_assignment, enable_assignment_multi):
jobs made by create_work --target_* / --broadcast*, sent by job choice to the
hosts of their target only, with the rows BOINC leaves."""

import io
import os
import time

import pytest

from boincpy.db import connect
from boincpy.sched import assign, send as sched_send
from boincpy.states import INT_MAX
from boincpy.tools import create_work
from jobs_helpers import Feeding, add_app_version, add_jobs, make_ctx, make_request, \
    project_config
from test_create_work import _stage

from tests import sched_env as sched_env_module

sched_env = sched_env_module.sched_env          # the fixture, for the end-to-end test
UNSENT, IN_PROGRESS, OVER = 2, 4, 5


@pytest.fixture
def proj(mini_project):
    """(cfg, db, feed, make_job): assignment on, an app version, a staged input."""
    root = mini_project
    cfg = project_config(root, enable_assignment=True, daily_result_quota=500,
                         report_grace_period=3600, dont_generate_upload_certificates=True,
                         debug_assignment=True, debug_send=True)
    db = connect(cfg)
    add_app_version(db)
    _stage(root, "in", b"input\n")                    # staged as src_in
    state = {"n": 0}
    feed = Feeding(cfg)

    def make_job(*args):
        """create_work (in-process) with these extra arguments; the workunit row."""
        state["n"] += 1
        name = "job%d" % state["n"]
        err = io.StringIO()
        old = os.getcwd()
        os.chdir(root)
        try:
            status = create_work.run(["--appname", "example_app", "--wu_name", name]
                                     + list(args) + ["src_in"], stdin=io.StringIO(),
                                     stdout=io.StringIO(), stderr=err)
        finally:
            os.chdir(old)
        assert status == 0, err.getvalue()
        return db.query_one("SELECT * FROM workunit WHERE name = %s", (name,))

    yield cfg, db, feed, make_job
    feed.close()
    db.close()


def send(cfg, db, ja, hostid, userid, teamid=0):
    log = io.StringIO()
    ctx = make_ctx(cfg, db, make_request(), hostid=hostid, userid=userid, log_stream=log)
    if teamid:
        ctx.team = {"id": teamid, "name": "team%d" % teamid}
    sched_send.send_work(ctx, ja)
    return ctx, log.getvalue()


def sent_names(ctx):
    return [j.result["name"] for j in ctx.reply.jobs]


def results(db, wuid):
    return db.query("SELECT * FROM result WHERE workunitid = %s ORDER BY id", (wuid,))


def test_create_work_rows_for_targeted_and_broadcast_jobs(proj):
    cfg, db, feed, make_job = proj
    cases = [(("--target_host", "7"), 2, 1, 7, 0), (("--target_user", "3"), 2, 2, 3, 0),
             (("--target_team", "5"), 2, 3, 5, 0), (("--broadcast",), 1, 0, 0, 1),
             (("--broadcast_user", "3"), 1, 2, 3, 1), (("--broadcast_team", "5"), 1, 3, 5, 1)]
    for args, flags, ttype, tid, multi in cases:
        wu = make_job(*args)
        # no results until a scheduler sends one; the transitioner leaves it alone
        assert (wu["transitioner_flags"], wu["transition_time"]) == (flags, INT_MAX)
        assert results(db, wu["id"]) == []
        asg = db.query_one("SELECT * FROM assignment WHERE workunitid = %s", (wu["id"],))
        assert (asg["target_type"], asg["target_id"], asg["multi"]) == (ttype, tid, multi)
    ja = feed()
    assert ja.n_present == 0                          # the feeder never caches them
    assert [(a["target_type"], a["multi"]) for a in ja.tables()["assignments"]] == [
        (0, 1), (2, 1), (3, 1)]                       # only broadcasts are in the tables


def test_job_targeted_at_a_host_goes_only_to_that_host(proj):
    cfg, db, feed, make_job = proj
    wu = make_job("--target_host", "2", "--delay_bound", "7200")
    (plain_wu, (plain_rid,)), = add_jobs(db, 1)
    ja = feed()
    assert ja.n_present == 1
    # host 1 (same user): the targeted job isn't for it; it gets the ordinary job
    ctx, log = send(cfg, db, ja, hostid=1, userid=1)
    assert [j.result["id"] for j in ctx.reply.jobs] == [plain_rid]
    assert results(db, wu["id"]) == []
    assert "checking for targeted jobs" in log
    # host 2 gets a new instance of it, and nothing else in that reply
    (plain2, (plain2_rid,)), = add_jobs(db, 1)
    ja = feed()
    before = int(time.time())
    ctx, log = send(cfg, db, ja, hostid=2, userid=1)
    rows = results(db, wu["id"])
    assert len(rows) == 1
    r = rows[0]
    assert sent_names(ctx) == [r["name"]] and r["name"].startswith("job1_%d_" % os.getpid())
    assert (r["server_state"], r["hostid"], r["userid"], r["outcome"]) == (IN_PROGRESS, 2, 1, 0)
    assert before <= r["sent_time"] <= time.time()
    assert r["report_deadline"] == r["sent_time"] + 7200 + 3600
    assert r["app_version_id"] == 1 and r["xml_doc_in"].startswith("<file_info>")
    assert ctx.reply.jobs[0].workunit["name"] == "job1"
    assert "[assign] [HOST#2] sent assigned jobs" in log
    assert "sending targeted job: job1" in log
    assert "[assign] [WU#%d] [RESULT#%d] [HOST#2] send assignment" % (wu["id"], r["id"]) in log
    row = db.query_one("SELECT * FROM workunit WHERE id = %s", (wu["id"],))
    # timed out by the transitioner at sent + delay_bound if it doesn't come back
    assert before + 7200 <= row["transition_time"] <= r["sent_time"] + 7200
    assert row["transitioner_flags"] == 2
    assert db.query_value("SELECT server_state FROM result WHERE id = %s", (plain2_rid,)) == \
        UNSENT
    assert db.query_value("SELECT COUNT(*) FROM assignment", default=0) == 1
    # asking again: the host has its instance, so it gets ordinary work
    ctx, log = send(cfg, db, ja, hostid=2, userid=1)
    assert [j.result["id"] for j in ctx.reply.jobs] == [plain2_rid]
    assert len(results(db, wu["id"])) == 1
    assert "not sending targeted job job1: this host already has an instance" in log


def test_user_targeted_job_goes_to_hosts_of_that_user(proj):
    cfg, db, feed, make_job = proj
    wu = make_job("--target_user", "1", "--min_quorum", "2", "--target_nresults", "2")
    ja = feed()
    ctx, log = send(cfg, db, ja, hostid=4, userid=2)
    assert ctx.reply.jobs == [] and results(db, wu["id"]) == []
    assert "No tasks sent" in [t for _, t in ctx.reply.messages]
    for hostid in (1, 2):
        ctx, _ = send(cfg, db, ja, hostid=hostid, userid=1)
        assert len(ctx.reply.jobs) == 1
    # both instances are out: a third host of the user gets none
    ctx, log = send(cfg, db, ja, hostid=3, userid=1)
    assert ctx.reply.jobs == []
    assert "it has all the instances it needs (0 unsent, 2 in progress, 0 done)" in log
    rows = results(db, wu["id"])
    assert [(r["hostid"], r["userid"], r["server_state"]) for r in rows] == [
        (1, 1, IN_PROGRESS), (2, 1, IN_PROGRESS)]


def test_user_targeted_job_and_one_result_per_user_per_wu(proj):
    """boincpy's safe default: with one_result_per_user_per_wu a user-targeted
    job never gets two instances from one user (C++ checks the host only)."""
    cfg, db, feed, make_job = proj
    cfg.one_result_per_user_per_wu = True
    wu = make_job("--target_user", "1", "--min_quorum", "2", "--target_nresults", "2")
    ja = feed()
    ctx, _ = send(cfg, db, ja, hostid=1, userid=1)
    assert len(ctx.reply.jobs) == 1
    ctx, log = send(cfg, db, ja, hostid=2, userid=1)
    assert ctx.reply.jobs == []
    assert "this user already has an instance of it (one_result_per_user_per_wu)" in log
    assert [r["hostid"] for r in results(db, wu["id"])] == [1]


def test_targeted_job_is_locked_while_another_request_sends_it(proj, monkeypatch):
    """Two requests deciding at once whether a targeted job needs an instance:
    the second waits for the first's named lock, and gives up if it is held."""
    cfg, db, feed, make_job = proj
    wu = make_job("--target_user", "1")
    ja = feed()
    monkeypatch.setattr(assign, "ASSIGN_LOCK_WAIT", 0)
    other = connect(cfg)
    name = "boincpy.assign.%s.%d" % (cfg.db_name[:40], wu["id"])
    try:
        assert other.query_value("SELECT GET_LOCK(%s, 0)", (name,)) == 1
        ctx, _ = send(cfg, db, ja, hostid=1, userid=1)
        assert ctx.reply.jobs == [] and results(db, wu["id"]) == []
        assert any("is being sent by another request" in text
                   for text in ctx.reply.no_work_reasons), ctx.reply.no_work_reasons
        other.query_value("SELECT RELEASE_LOCK(%s)", (name,))
        ctx, _ = send(cfg, db, ja, hostid=1, userid=1)
        assert len(ctx.reply.jobs) == 1
        # the lock is released after sending: another connection can take it
        assert other.query_value("SELECT GET_LOCK(%s, 0)", (name,)) == 1
    finally:
        other.close()


def test_team_targeted_job_goes_to_team_members(proj):
    cfg, db, feed, make_job = proj
    wu = make_job("--target_team", "7")
    ja = feed()
    ctx, _ = send(cfg, db, ja, hostid=1, userid=1)                 # no team
    assert ctx.reply.jobs == []
    ctx, _ = send(cfg, db, ja, hostid=2, userid=2, teamid=8)       # another team
    assert ctx.reply.jobs == []
    ctx, _ = send(cfg, db, ja, hostid=3, userid=3, teamid=7)
    assert len(ctx.reply.jobs) == 1
    assert [(r["hostid"], r["userid"]) for r in results(db, wu["id"])] == [(3, 3)]


def test_targeted_job_that_is_done_or_cancelled_is_not_sent(proj):
    cfg, db, feed, make_job = proj
    wu = make_job("--target_host", "1")
    ja = feed()
    db.execute("UPDATE workunit SET error_mask = 16 WHERE id = %s", (wu["id"],))
    ctx, log = send(cfg, db, ja, hostid=1, userid=1)
    assert ctx.reply.jobs == [] and results(db, wu["id"]) == []
    assert "it has an error or was cancelled" in log
    db.execute("UPDATE workunit SET error_mask = 0, canonical_resultid = 99 WHERE id = %s",
               (wu["id"],))
    ctx, log = send(cfg, db, ja, hostid=1, userid=1)
    assert ctx.reply.jobs == [] and "it is complete" in log
    # an assignment whose workunit is gone is deleted
    db.execute("DELETE FROM workunit WHERE id = %s", (wu["id"],))
    send(cfg, db, ja, hostid=1, userid=1)
    assert db.query_value("SELECT COUNT(*) FROM assignment", default=0) == 0


def test_without_enable_assignment_targeted_jobs_are_never_sent(proj):
    cfg, db, feed, make_job = proj
    cfg.enable_assignment = False
    wu = make_job("--target_host", "1")
    ja = feed()
    ctx, _ = send(cfg, db, ja, hostid=1, userid=1)
    assert ctx.reply.jobs == []
    assert [t for _, t in ctx.reply.messages] == ["Project has no tasks available"]
    assert results(db, wu["id"]) == []
    # ordinary jobs still go out
    (_, (rid,)), = add_jobs(db, 1)
    ja = feed()
    ctx, _ = send(cfg, db, ja, hostid=1, userid=1)
    assert [j.result["id"] for j in ctx.reply.jobs] == [rid]
    assert results(db, wu["id"]) == []


def test_broadcast_job_goes_once_to_every_host(proj):
    cfg, db, feed, make_job = proj
    cfg.enable_assignment = False
    cfg.enable_assignment_multi = True
    wu = make_job("--broadcast")
    add_jobs(db, 9)                 # a request of 1000 s takes 3 of these
    ja = feed()
    for hostid, userid in ((1, 1), (2, 1), (3, 2)):
        ctx, log = send(cfg, db, ja, hostid=hostid, userid=userid)
        # the broadcast instance only: BOINC sends nothing else with it
        assert [j.workunit["name"] for j in ctx.reply.jobs] == ["job1"]
        assert "[assign] processing broadcast type 0" in log
    # asked again, each host gets ordinary jobs, never a second instance
    for hostid, userid in ((1, 1), (2, 1), (3, 2)):
        ctx, _ = send(cfg, db, ja, hostid=hostid, userid=userid)
        assert ctx.reply.jobs and "job1" not in [j.workunit["name"] for j in ctx.reply.jobs]
    rows = results(db, wu["id"])
    assert sorted((r["hostid"], r["userid"]) for r in rows) == [(1, 1), (2, 1), (3, 2)]
    assert {r["server_state"] for r in rows} == {IN_PROGRESS}
    assert len({r["name"] for r in rows}) == 3
    row = db.query_one("SELECT * FROM workunit WHERE id = %s", (wu["id"],))
    assert row["transitioner_flags"] == 1 and row["transition_time"] < INT_MAX


def test_cancelled_broadcast_job_is_not_sent(proj):
    cfg, db, feed, make_job = proj
    cfg.enable_assignment_multi = True
    wu = make_job("--broadcast")
    ja = feed()
    ctx, _ = send(cfg, db, ja, hostid=1, userid=1)
    assert len(ctx.reply.jobs) == 1
    db.execute("UPDATE workunit SET error_mask = 16 WHERE id = %s", (wu["id"],))
    ctx, _ = send(cfg, db, ja, hostid=2, userid=2)
    assert ctx.reply.jobs == []
    assert [r["hostid"] for r in results(db, wu["id"])] == [1]


def test_broadcast_to_a_user_or_team(proj):
    cfg, db, feed, make_job = proj
    cfg.enable_assignment_multi = True
    by_user = make_job("--broadcast_user", "2")
    by_team = make_job("--broadcast_team", "9")
    ja = feed()
    got = {}
    for hostid, userid, teamid in ((1, 1, 0), (2, 2, 0), (3, 2, 9), (4, 3, 9)):
        ctx, _ = send(cfg, db, ja, hostid=hostid, userid=userid, teamid=teamid)
        got[hostid] = sorted(j.workunit["name"] for j in ctx.reply.jobs)
    assert got == {1: [], 2: ["job1"], 3: ["job1", "job2"], 4: ["job2"]}
    assert sorted(r["hostid"] for r in results(db, by_user["id"])) == [2, 3]
    assert sorted(r["hostid"] for r in results(db, by_team["id"])) == [3, 4]


def test_broadcast_off_without_enable_assignment_multi(proj):
    cfg, db, feed, make_job = proj
    wu = make_job("--broadcast")
    ja = feed()
    ctx, _ = send(cfg, db, ja, hostid=1, userid=1)
    assert ctx.reply.jobs == [] and results(db, wu["id"]) == []


def test_targeted_job_reply_end_to_end(sched_env):
    """Through the handler with the stock client's captured first request: the
    job targeted at the host it is given (1) arrives complete, in an empty array."""
    import xml.etree.ElementTree as ET
    from boincpy.log import SchedLog
    from boincpy.sched.handler import handle_request
    from tests.sched_env import CLIENT, PLATFORM, check_client_needs, fixture_text
    env = sched_env
    env.set_options(enable_assignment=1)
    wuid, rid = env.add_job("tj")
    # as create_work --target_host 1 leaves it: no result, flags, INT_MAX, assignment
    env.execute("DELETE FROM result WHERE id = %s", (rid,))
    env.execute("UPDATE workunit SET transitioner_flags = 2, transition_time = %s "
                "WHERE id = %s", (INT_MAX, wuid))
    env.execute("INSERT INTO assignment (create_time, target_id, target_type, multi, "
                "workunitid, resultid) VALUES (%s, 1, 1, 0, %s, 0)", (int(time.time()), wuid))
    array = env.job_array()
    assert array.n_present == 0
    log = SchedLog(io.StringIO(), 3)
    out = handle_request(env.cfg, fixture_text(CLIENT, "cycle",
                                               "02_sched_initial_hostid0.body.xml"),
                         {"REMOTE_ADDR": "127.0.0.1", "REQUEST_METHOD": "POST"},
                         job_array=array, log=log)
    root = ET.fromstring(out.decode().partition("\n\n")[2])
    assert root.findtext("hostid") == "1"
    names = check_client_needs(root, [PLATFORM], expect_key=True)
    rows = env.rows("SELECT * FROM result WHERE workunitid = %s", (wuid,))
    assert names == [rows[0]["name"]] and rows[0]["name"].startswith("tj_")
    assert (rows[0]["hostid"], rows[0]["userid"], rows[0]["server_state"]) == (1, 1, 4)
    assert "Project has no tasks available" not in out.decode()
