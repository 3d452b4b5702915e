"""Homogeneous redundancy and homogeneous app version: hosts of other classes
don't get a job once it is committed; hosts of the same class do."""

import io

import pytest

from backend_util import run_daemon_once, set_options
from boincpy import shmem
from boincpy.daemons.transitioner import Transitioner
from boincpy.db import connect
from boincpy.sched import choose, hr, send as sched_send, version
from jobs_helpers import Feeding, add_app, add_app_version, add_jobs, add_platform, make_ctx, \
    make_feeder, make_request, project_config

UNSENT, IN_PROGRESS, OVER = 2, 4, 5

LINUX_CORE = dict(os_name="Linux Ubuntu", p_vendor="GenuineIntel",
                  p_model="Intel(R) Core(TM) i7-8700 CPU @ 3.20GHz")
LINUX_CORE_I5 = dict(os_name="Linux Debian", p_vendor="GenuineIntel",
                     p_model="Intel(R) Core(TM) i5-4590 CPU @ 3.30GHz")
WINDOWS_CORE = dict(os_name="Microsoft Windows 10", p_vendor="GenuineIntel",
                    p_model="Intel(R) Core(TM) i7-8700 CPU @ 3.20GHz")
LINUX_EPYC = dict(os_name="Linux Debian", p_vendor="AuthenticAMD",
                  p_model="AMD EPYC 7B13 64-Core Processor")
PLAN9 = dict(os_name="Plan 9", p_vendor="GenuineIntel", p_model="Intel(R) Core(TM) i7")


def test_hr_classes_are_boincs():
    cases = [
        # (os_name, p_vendor, p_model), fine class, coarse class (None: unknown)
        (LINUX_CORE, 256 + 21, 256 + 2),
        (WINDOWS_CORE, 384 + 21, 384 + 2),
        (LINUX_EPYC, 256 + 3, 256 + 2),                  # coarse: AMD counts as Intel
        (dict(os_name="Linux", p_vendor="AuthenticAMD", p_model="AMD Athlon(tm) 64 X2"),
         256 + 9, 256 + 2),
        (dict(os_name="Microsoft Windows XP", p_vendor="GenuineIntel",
              p_model="x86 Family 6 Model 10 Stepping 1"), 384 + 11, 384 + 2),
        (dict(os_name="Linux", p_vendor="GenuineIntel", p_model="Intel(R) Pentium(R) 4 CPU"),
         256 + 16, 256 + 2),
        (dict(os_name="Linux", p_vendor="", p_model="ARMv7 Processor rev 4"), None, 256 + 22),
        (dict(os_name="Darwin", p_vendor="GenuineIntel", p_model="Intel(R) Core(TM) i5"),
         512 + 21, 512 + 2),
        (dict(os_name="Darwin", p_vendor="Apple", p_model="Apple M1"), None, None),
        (PLAN9, None, None),
    ]
    for h, fine, coarse in cases:
        f = (h["os_name"], h["p_vendor"], h["p_model"])
        for hr_type, want in ((1, fine), (2, coarse)):
            if want is None:
                assert hr.hr_unknown_class(*f, hr_type), (f, hr_type)
            else:
                assert not hr.hr_unknown_class(*f, hr_type), (f, hr_type)
                assert hr.hr_class(*f, hr_type) == want, (f, hr_type)
        assert hr.hr_class(*f, 0) == 0 and not hr.hr_unknown_class(*f, 0)


@pytest.fixture
def proj(mini_project):
    cfg = project_config(mini_project, one_result_per_user_per_wu=True,
                         daily_result_quota=500, dont_generate_upload_certificates=True,
                         debug_send_job=True)
    db = connect(cfg)
    feed = Feeding(cfg)
    yield cfg, db, feed
    feed.close()
    db.close()


def send(cfg, db, ja, host, hostid, userid=None, **kw):
    log = io.StringIO()
    ctx = make_ctx(cfg, db, make_request(**dict(host, **kw)), hostid=hostid,
                   userid=userid or hostid, log_stream=log)
    sched_send.send_work(ctx, ja)
    return ctx, log.getvalue()


def messages(ctx):
    return [t for _, t in ctx.reply.messages]


def wu_row(db, wuid):
    return db.query_one("SELECT * FROM workunit WHERE id = %s", (wuid,))


def test_committed_workunit_goes_only_to_its_class(proj):
    cfg, db, feed = proj
    db.execute("UPDATE app SET homogeneous_redundancy = 1")
    add_app_version(db)
    (wuid, rids), = add_jobs(db, 1, results_per_wu=2, target_nresults=2)
    ja = feed()
    ctx, _ = send(cfg, db, ja, LINUX_CORE, 1)
    assert len(ctx.reply.jobs) == 1
    assert wu_row(db, wuid)["hr_class"] == 256 + 21
    # the array still holds the other result with hr_class 0: the slow check
    # reads the commitment, refuses and marks the slot infeasible once more
    slot = next(i for i in range(ja.nslots) if ja.slot_state(i) == shmem.PRESENT)
    assert ja.read_slot(slot).infeasible_count == 0
    ctx, log = send(cfg, db, ja, WINDOWS_CORE, 2)
    assert ctx.reply.jobs == []
    assert "Tasks are committed to other platforms" in messages(ctx)
    assert "is assigned to different HR class" in log
    assert [r.split(":")[0] for r in ctx.reply.no_work_reasons] == ["hr_committed"]
    assert ja.read_slot(slot).infeasible_count == 1
    assert db.query_value("SELECT COUNT(*) FROM result WHERE server_state = %s",
                          (UNSENT,)) == 1
    # another host of the same class (another CPU model of the same family) gets it
    ctx, _ = send(cfg, db, ja, LINUX_CORE_I5, 3)
    assert len(ctx.reply.jobs) == 1
    rows = db.query("SELECT hostid, server_state FROM result WHERE workunitid = %s "
                    "ORDER BY hostid", (wuid,))
    assert [(r["hostid"], r["server_state"]) for r in rows] == [(1, IN_PROGRESS),
                                                              (3, IN_PROGRESS)]
    assert wu_row(db, wuid)["hr_class"] == 256 + 21


def test_commitment_seen_by_the_feeder_is_refused_fast(proj):
    cfg, db, feed = proj
    db.execute("UPDATE app SET homogeneous_redundancy = 1")
    add_app_version(db)
    (wuid, _), = add_jobs(db, 1, results_per_wu=1)
    db.execute("UPDATE workunit SET hr_class = %s", (384 + 21,))
    ja = feed()
    assert ja.read_slot(0).infeasible_count == 1       # committed jobs go first
    ctx, log = send(cfg, db, ja, LINUX_CORE, 1)
    assert ctx.reply.jobs == []
    assert "failed quick HR check: WU is class 405, host is class 277" in log
    assert "Tasks are committed to other platforms" in messages(ctx)
    ctx, _ = send(cfg, db, ja, WINDOWS_CORE, 2)
    assert len(ctx.reply.jobs) == 1


def test_global_coarse_hr_groups_cpu_vendors(proj):
    cfg, db, feed = proj
    cfg.homogeneous_redundancy = 2
    add_app_version(db)
    (wuid, _), = add_jobs(db, 1, results_per_wu=3, target_nresults=3)
    ja = feed()
    ctx, _ = send(cfg, db, ja, LINUX_EPYC, 1)
    assert len(ctx.reply.jobs) == 1 and wu_row(db, wuid)["hr_class"] == 256 + 2
    ctx, _ = send(cfg, db, ja, WINDOWS_CORE, 2)
    assert ctx.reply.jobs == []
    ctx, _ = send(cfg, db, ja, LINUX_CORE, 3)
    assert len(ctx.reply.jobs) == 1


def test_host_of_unknown_class(proj):
    cfg, db, feed = proj
    db.execute("UPDATE app SET homogeneous_redundancy = 1")
    add_app_version(db)
    add_jobs(db, 1)
    ja = feed()
    # every app uses HR and this host has no class: BOINC returns at once,
    # without any message
    ctx, log = send(cfg, db, ja, PLAN9, 1)
    assert ctx.reply.jobs == [] and ctx.reply.messages == []
    assert "Not sending work because unknown HR class" in log
    # with an app without HR the host gets that app's jobs only
    other = add_app(db, "plain_app")
    add_app_version(db, appid=other)
    (plain_wu, (plain_rid,)), = add_jobs(db, 1, appid=other)
    ja = feed(["--allapps"])          # apps of different HR types need it
    ctx, log = send(cfg, db, ja, PLAN9, 1)
    assert [j.result["id"] for j in ctx.reply.jobs] == [plain_rid]


def test_commit_is_conditional(proj):
    """Another request committed the workunit after this one read it: the
    conditional UPDATE matches nothing and the result stays unsent."""
    cfg, db, feed = proj
    db.execute("UPDATE app SET homogeneous_redundancy = 1")
    add_app_version(db)
    (wuid, (rid,)), = add_jobs(db, 1)
    ja = feed()
    log = io.StringIO()
    ctx = make_ctx(cfg, db, make_request(**LINUX_CORE), hostid=1, userid=1, log_stream=log)
    work = choose.setup_work(ctx, ja)
    wu = wu_row(db, wuid)
    result = db.query_one("SELECT * FROM result WHERE id = %s", (rid,))
    app = ja.lookup_app(wu["appid"])
    bav = version.get_app_version(work, wu, app)
    db.execute("UPDATE workunit SET hr_class = 405 WHERE id = %s", (wuid,))
    assert choose.add_result_to_reply(work, result, wu, app, bav) is None
    assert "WU already sent to other HR class or app version" in log.getvalue()
    assert db.query_value("SELECT server_state FROM result WHERE id = %s", (rid,)) == UNSENT
    assert wu_row(db, wuid)["hr_class"] == 405
    # the transitioner reset it meanwhile: now it commits
    db.execute("UPDATE workunit SET hr_class = 0 WHERE id = %s", (wuid,))
    assert choose.add_result_to_reply(work, result, wu, app, bav) is not None
    assert wu_row(db, wuid)["hr_class"] == 277
    assert db.query_value("SELECT server_state FROM result WHERE id = %s", (rid,)) == \
        IN_PROGRESS


def test_homogeneous_app_version_and_its_undoing(proj, mini_project):
    cfg, db, feed = proj
    db.execute("UPDATE app SET homogeneous_app_version = 1")
    win = add_platform(db, "windows_x86_64")
    av_linux = add_app_version(db, platformid=1, version_num=100)
    av_win = add_app_version(db, platformid=win, version_num=101)
    (wuid, rids), = add_jobs(db, 1, results_per_wu=2, target_nresults=2)
    ja = feed()
    ctx, _ = send(cfg, db, ja, LINUX_CORE, 1)
    assert [j.app_version["id"] for j in ctx.reply.jobs] == [av_linux]
    assert wu_row(db, wuid)["app_version_id"] == av_linux
    # a Windows-only host has no way to run that version
    ctx, _ = send(cfg, db, ja, WINDOWS_CORE, 2, platform="windows_x86_64")
    assert ctx.reply.jobs == []
    # a host that could run both gets the committed one, not its newest, once
    # the array's copy of the workunit shows the commitment (before that, its
    # version choice may pick the other and the slow check refuses, as in C++)
    ja = feed()
    ctx, dbg = send(cfg, db, ja, WINDOWS_CORE, 3, platform="windows_x86_64",
                  alt_platforms=["x86_64-pc-linux-gnu"])
    assert [j.app_version["id"] for j in ctx.reply.jobs] == [av_linux], dbg
    assert db.query_value("SELECT app_version_id FROM result WHERE hostid = 3") == av_linux
    # both instances fail: with nothing in progress the transitioner undoes the
    # commitment, and the new instance can go to the Windows host
    db.execute("UPDATE result SET server_state = %s, outcome = 3 WHERE workunitid = %s",
               (OVER, wuid))
    db.execute("UPDATE workunit SET transition_time = 0 WHERE id = %s", (wuid,))
    set_options(mini_project, dont_generate_upload_certificates=True)
    status, tlog = run_daemon_once(Transitioner, mini_project)
    assert status == 0, tlog
    wu = wu_row(db, wuid)
    assert (wu["app_version_id"], wu["hr_class"]) == (0, 0)
    ja = feed()
    ctx, _ = send(cfg, db, ja, WINDOWS_CORE, 2, platform="windows_x86_64")
    assert [j.app_version["id"] for j in ctx.reply.jobs] == [av_win]
    assert wu_row(db, wuid)["app_version_id"] == av_win


def test_feeder_checks_and_applies_hr_settings(proj):
    from boincpy.errors import ToolError
    cfg, db, feed = proj
    add_app_version(db)
    other = add_app(db, "plain_app", weight=3)
    cfg.homogeneous_redundancy = 2
    ja = feed(["--allapps"])
    assert [(a["homogeneous_redundancy"], a["weight"]) for a in ja.apps] == [(2, 1), (2, 1)]
    db.execute("UPDATE app SET homogeneous_redundancy = 1 WHERE id = %s", (other,))
    with pytest.raises(ToolError, match="global or app level, but not both"):
        feed()
    cfg.homogeneous_redundancy = 0
    with pytest.raises(ToolError, match="--allapps if apps have different HR"):
        feed()
    ja = feed(["--allapps"])
    assert [a["homogeneous_redundancy"] for a in ja.apps] == [0, 1]
    db.execute("UPDATE app SET homogeneous_redundancy = 3 WHERE id = %s", (other,))
    with pytest.raises(ToolError, match="HR type 3 out of range for app plain_app"):
        feed(["--allapps"])


def test_feeder_marks_cached_job_of_newly_committed_workunit(proj):
    """A cached job whose workunit got an HR class since (another instance was
    sent) is marked infeasible once, so committed jobs go out first."""
    cfg, db, feed = proj
    db.execute("UPDATE app SET homogeneous_redundancy = 1")
    add_app_version(db)
    add_jobs(db, 1, results_per_wu=2, target_nresults=2)
    feeder = make_feeder(cfg)
    feeder.one_pass()
    ja = shmem.attach(cfg, wait_ready=0)
    try:
        ctx, _ = send(cfg, db, ja, LINUX_CORE, 1)
        assert len(ctx.reply.jobs) == 1
        slot = next(i for i in range(ja.nslots) if ja.slot_state(i) == shmem.PRESENT)
        assert ja.read_slot(slot).infeasible_count == 0
        feeder.one_pass()
        assert ja.read_slot(slot).infeasible_count == 1
        feeder.one_pass()                     # once only
        assert ja.read_slot(slot).infeasible_count == 1
    finally:
        ja.close()
        feeder.shutdown()
