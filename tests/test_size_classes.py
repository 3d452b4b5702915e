"""Job size classes: create_work --size_class, INACTIVE results from the
transitioner, size_regulator, size_census, the feeder's census read and the
scheduler's +5/-2/-1 score, against MariaDB."""

import contextlib
import io
import re

import pytest

from backend_util import make_result, make_upload_keys, make_wu, results_of, run_daemon_once
from boincpy import shmem
from boincpy.daemons.base import run_daemon
from boincpy.daemons.size_census import SizeCensus, effective_speed
from boincpy.daemons.size_regulator import SizeRegulator
from boincpy.daemons.transitioner import Transitioner
from boincpy.db import connect
from boincpy.sched import choose, score, send as sched_send, version
from boincpy.sizeclass import (atof, census_quantiles, census_text, host_size_class, php_e,
                               read_census, CensusFileError)
from jobs_helpers import Feeding, add_app, add_app_version, add_jobs, make_ctx, make_feeder, \
    make_request, project_config
from test_create_work import _run as create_work_run, _stage

INACTIVE, UNSENT, IN_PROGRESS = 1, 2, 4


@pytest.fixture
def proj(mini_project):
    cfg = project_config(mini_project)
    db = connect(cfg)
    yield mini_project, cfg, db
    db.close()


# ---------------------------------------------------------------------------
# the file format


def test_census_numbers_print_as_php_e_does():
    # PHP's manual: printf("%e", 43951789) gives 4.395179e+7
    assert php_e(43951789) == "4.395179e+7"
    assert php_e(0) == "0.000000e+0"
    assert php_e(1.5e-5) == "1.500000e-5"
    assert php_e(2.5e12) == "2.500000e+12"
    assert census_text([1e9, 3.25e10]) == "1.000000e+9\n3.250000e+10\n"
    # the feeder reads them back as atof() does
    assert atof("4.395179e+7\n") == 43951790.0
    assert atof("  12abc") == 12.0 and atof("nonsense") == 0.0 and atof("") == 0.0


def test_quantiles_and_host_class():
    speeds = [5.0, 1.0, 4.0, 2.0, 3.0, 6.0]
    # sorted 1..6; n=6, 3 classes: elements int(6/3)=2 and int(12/3)=4
    assert census_quantiles(speeds, 3) == [3.0, 5.0]
    assert census_quantiles(speeds, 2) == [4.0]
    assert census_quantiles(speeds, 1) == []
    assert census_quantiles([], 3) == [0.0, 0.0]       # PHP: a missing element prints 0
    q = [3.0, 5.0]
    assert [host_size_class(q, 3, s) for s in (0.5, 2.99, 3.0, 4.9, 5.0, 99)] == \
        [0, 0, 1, 1, 2, 2]
    assert host_size_class([0.0, 0.0], 3, 1e9) == 2     # an all-zero census: largest


def test_read_census_errors_name_the_file(tmp_path):
    path = tmp_path / "size_census_a"
    with pytest.raises(CensusFileError, match="Missing size census file for app a .*size_census_a"):
        read_census(str(path), "a", 3)
    path.write_text("1e9\n")
    with pytest.raises(CensusFileError, match="Size census file for app a is too short .*"
                                              "1 line, need 2"):
        read_census(str(path), "a", 3)
    path.write_text("1e9\nbad\n7e9\n")
    assert read_census(str(path), "a", 3) == [1e9, 0.0]


# ---------------------------------------------------------------------------
# create_work and the transitioner


def test_create_work_size_class_then_inactive_results(proj, db_root_params):
    project, cfg, db = proj
    make_upload_keys(project)
    _stage(project, "in.txt", b"x\n")
    status, _, err = create_work_run(project, ["--appname", "example_app", "--wu_name",
                                               "sized", "--size_class", "2",
                                               "--target_nresults", "2", "src_in.txt"])
    assert status == 0, err
    status, _, err = create_work_run(project, ["--appname", "example_app", "--wu_name",
                                               "plain", "src_in.txt"])
    assert status == 0, err
    sized = db.query_one("SELECT * FROM workunit WHERE name = 'sized'")
    plain = db.query_one("SELECT * FROM workunit WHERE name = 'plain'")
    assert sized["size_class"] == 2 and plain["size_class"] == -1
    db.execute("UPDATE workunit SET transition_time = 0")     # due now, not next second
    status, log = run_daemon_once(Transitioner, project)
    assert status == 0, log
    rs = results_of(db, sized["id"])
    assert [(r["server_state"], r["size_class"]) for r in rs] == [(INACTIVE, 2)] * 2
    assert [(r["server_state"], r["size_class"]) for r in results_of(db, plain["id"])] == \
        [(UNSENT, -1)]
    # the feeder doesn't offer INACTIVE results
    feeder = make_feeder(cfg)
    try:
        feeder.one_pass()
        ja = shmem.attach(cfg, wait_ready=0)
        present = [ja.read_slot(i).resultid for i in range(ja.nslots)
                   if ja.slot_state(i) == shmem.PRESENT]
        assert present == [results_of(db, plain["id"])[0]["id"]]
        ja.close()
    finally:
        feeder.shutdown()


# ---------------------------------------------------------------------------
# size_regulator


def _results(db, appid, size_class, n, state, prefix, priority=0):
    wuid = make_wu(db, "%s_wu" % prefix, appid=appid, size_class=size_class,
                   transition_time=2**31 - 1)
    return [make_result(db, wuid, "%s_%d" % (prefix, k), appid=appid, server_state=state,
                        size_class=size_class, priority=priority + k)
            for k in range(n)]


def _states(db, appid):
    """{size_class: (unsent, inactive)}"""
    out = {}
    for r in db.query("SELECT size_class, server_state, COUNT(*) AS n FROM result "
                      "WHERE appid = %s GROUP BY size_class, server_state", (appid,)):
        u, i = out.get(r["size_class"], (0, 0))
        if r["server_state"] == UNSENT:
            u = r["n"]
        elif r["server_state"] == INACTIVE:
            i = r["n"]
        out[r["size_class"]] = (u, i)
    return out


def test_size_regulator_keeps_lo_to_hi_unsent_per_class(proj):
    project, cfg, db = proj
    appid = add_app(db, "sized", n_size_classes=4)
    _results(db, appid, 0, 6, INACTIVE, "c0")
    _results(db, appid, 1, 1, UNSENT, "c1u")
    _results(db, appid, 1, 5, INACTIVE, "c1i")
    _results(db, appid, 2, 3, UNSENT, "c2u")
    _results(db, appid, 2, 2, INACTIVE, "c2i")
    _results(db, appid, 3, 1, INACTIVE, "c3")         # fewer than it asks for
    _results(db, 1, 0, 4, INACTIVE, "other")          # another app: left alone
    args = ["--app_name", "sized", "--lo", "2", "--hi", "4", "--sleep_time", "5"]
    status, log = run_daemon_once(SizeRegulator, project, *args)
    assert status == 0, log
    assert _states(db, appid) == {0: (4, 2), 1: (4, 2), 2: (3, 2), 3: (1, 0)}
    assert _states(db, 1) == {0: (0, 4)}
    lines = [line.split("] ", 1)[1] for line in log.splitlines() if "[normal]" in line]
    assert lines[1:] == [
        "0 unsent for class 0", "releasing 4 jobs of size class 0", "4 jobs released",
        "1 unsent for class 1", "releasing 3 jobs of size class 1", "3 jobs released",
        "3 unsent for class 2",
        "0 unsent for class 3", "releasing 4 jobs of size class 3", "1 jobs released"]
    # nothing below lo now except class 3, which has nothing left to release
    status, log = run_daemon_once(SizeRegulator, project, *args)
    assert _states(db, appid) == {0: (4, 2), 1: (4, 2), 2: (3, 2), 3: (1, 0)}
    assert "releasing 3 jobs of size class 3" in log and "0 jobs released" in log
    # a pass that got all it asked for says so (the daemon then passes again at once)
    d = SizeRegulator(_parse(args), cfg, _quiet_log())
    d.initialise()
    try:
        assert d.one_pass() is False
        db.execute("UPDATE result SET server_state = 4 WHERE appid = %s AND size_class = 0 "
                   "AND server_state = %s", (appid, UNSENT))
        assert d.one_pass() is False                   # asked 4, 2 inactive left
        assert _states(db, appid)[0] == (2, 0)
        db.execute("UPDATE result SET server_state = 4 WHERE appid = %s AND size_class = 0 "
                   "AND server_state = %s", (appid, UNSENT))
        _results(db, appid, 0, 5, INACTIVE, "more")
        assert d.one_pass() is True                    # asked 4, got 4
        assert _states(db, appid)[0] == (4, 1)
    finally:
        d.shutdown()


def _parse(args):
    from boincpy.daemons.base import parse_args
    return parse_args(SizeRegulator, args)


def _quiet_log():
    from boincpy.log import MessageLog
    return MessageLog(io.StringIO(), 3)


def test_size_regulator_priority_order(proj):
    project, cfg, db = proj
    appid = add_app(db, "sized", n_size_classes=2)
    ids = _results(db, appid, 0, 5, INACTIVE, "p", priority=10)   # priorities 10..14
    status, log = run_daemon_once(SizeRegulator, project, "--app_name", "sized", "--lo", "1",
                                  "--hi", "2", "--sleep_time", "1", "--priority_order")
    assert status == 0, log
    released = [r["id"] for r in db.query("SELECT id FROM result WHERE server_state = %s "
                                          "ORDER BY id", (UNSENT,))]
    assert released == ids[3:]                         # the two highest priorities
    status, log = run_daemon_once(SizeRegulator, project, "--app_name", "sized", "--lo", "3",
                                  "--hi", "3", "--sleep_time", "1", "--priority_asc")
    released = [r["id"] for r in db.query("SELECT id FROM result WHERE server_state = %s "
                                          "ORDER BY id", (UNSENT,))]
    assert released == [ids[0]] + ids[3:]


@pytest.mark.parametrize("args, message", [
    (["--app_name", "nonesuch", "--lo", "1", "--hi", "2", "--sleep_time", "5"],
     "[CRITICAL] no such app: nonesuch"),
    (["--app_name", "example_app", "--lo", "1", "--hi", "2", "--sleep_time", "5"],
     "[CRITICAL] app 'example_app' is not multi-size"),
    (["--app_name", "sized", "--hi", "2", "--sleep_time", "5"],
     "[CRITICAL] usage: size_regulator --app_name x --lo x --hi x --sleep_time x"),
    (["--app_name", "sized", "--lo", "1", "--hi", "2", "--sleep_time", "0"],
     "[CRITICAL] usage: size_regulator"),
    (["--app_name", "sized", "--lo", "3", "--hi", "2", "--sleep_time", "5"],
     "[CRITICAL] --lo 3 is above --hi 2"),
    (["--app_name", "sized", "--lo", "-1", "--hi", "2", "--sleep_time", "5"],
     "[CRITICAL] --lo and --hi must be positive"),
])
def test_size_regulator_bad_input_changes_nothing(proj, args, message):
    project, cfg, db = proj
    appid = add_app(db, "sized", n_size_classes=2)
    db.execute("UPDATE app SET n_size_classes = 1 WHERE name = 'example_app'")
    _results(db, appid, 0, 3, INACTIVE, "b")
    _results(db, 1, 0, 3, INACTIVE, "e")
    status, log = run_daemon_once(SizeRegulator, project, *args)
    assert status == 1
    assert message in log
    assert db.query_value("SELECT COUNT(*) FROM result WHERE server_state = %s",
                          (UNSENT,)) == 0


# ---------------------------------------------------------------------------
# size_census


def _host(db, hid, expavg_credit=100.0, on_frac=1.0, active_frac=1.0, gpu_active_frac=0.0):
    db.execute("INSERT INTO host (id, create_time, userid, expavg_credit, on_frac, "
               "active_frac, gpu_active_frac, misc) VALUES (%s, 0, 1, %s, %s, %s, %s, '')",
               (hid, expavg_credit, on_frac, active_frac, gpu_active_frac))


def _hav(db, hid, avid, et_avg, et_n=5):
    db.execute("INSERT INTO host_app_version (host_id, app_version_id, et_n, et_avg) "
               "VALUES (%s, %s, %s, %s)", (hid, avid, et_n, et_avg))


def run_census(project, *args):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = run_daemon(SizeCensus, ["--project_dir", str(project)] + list(args))
    return status, out.getvalue(), err.getvalue()


def test_size_census_writes_boundaries_from_the_host_table(proj):
    project, cfg, db = proj
    appid = add_app(db, "sized", n_size_classes=3)
    cpu = add_app_version(db, appid=appid, version_num=100)
    gpu = add_app_version(db, appid=appid, version_num=100, plan_class="cuda_fermi")
    # CPU host app versions: speed = 1/et_avg x on_frac x active_frac
    _host(db, 1, on_frac=0.5, active_frac=0.8)
    _hav(db, 1, cpu, 1e-9)                         # 0.4e9
    _host(db, 2)
    _hav(db, 2, cpu, 1e-9)                         # 1e9
    _host(db, 3, on_frac=1.0, active_frac=0.5, gpu_active_frac=0.25)
    _hav(db, 3, cpu, 2e-10)                        # 2.5e9 (CPU: active_frac)
    _hav(db, 3, gpu, 1e-11)                        # 1e11 x 0.25 = 2.5e10 (GPU)
    _host(db, 4, active_frac=0.5)
    _hav(db, 4, gpu, 1e-10)                        # 1e10 x 0.5: gpu_active_frac 0
    _host(db, 5)
    _hav(db, 5, cpu, 1e-12)                        # 1e12
    # not counted: low credit, no samples, et_avg 0
    _host(db, 6, expavg_credit=10.0)
    _hav(db, 6, cpu, 1e-15)
    _host(db, 7)
    _hav(db, 7, cpu, 1e-15, et_n=0)
    _hav(db, 2, gpu, 0.0)
    # speeds sorted: 0.4e9 1e9 2.5e9 5e9 2.5e10 1e12 -> elements 2 and 4
    status, out, err = run_census(project)
    assert status == 0, err
    assert (project / "size_census_sized").read_text() == "2.500000e+9\n2.500000e+10\n"
    assert re.match(r"Starting: \d+ \w{3} \d{4}, \d+:\d\d:\d\d UTC\n"
                    r"Finished: \d+ \w{3} \d{4}, \d+:\d\d:\d\d UTC\n$", out), out
    assert "size_census_sized: 6 host app versions; 3 size classes" in err
    assert not (project / "size_census_example_app").exists()     # one size class
    assert effective_speed({"plan_class": "ati14", "et_avg": 0.5, "on_frac": 0.5,
                            "active_frac": 1.0, "gpu_active_frac": 0.5}) == 0.5
    # --all_apps: every app, the single-size one gets an empty file
    status, out, err = run_census(project, "--all_apps")
    assert status == 0, err
    assert (project / "size_census_example_app").read_text() == ""
    assert (project / "size_census_sized").read_text() == "2.500000e+9\n2.500000e+10\n"


def test_size_census_without_hosts_writes_zeros(proj):
    project, cfg, db = proj
    add_app(db, "sized", n_size_classes=3)
    add_app(db, "old", n_size_classes=3, deprecated=1)
    status, out, err = run_census(project)
    assert status == 0, err
    assert (project / "size_census_sized").read_text() == "0.000000e+0\n0.000000e+0\n"
    assert "[warning] size_census_sized: app sized has no host app versions" in err
    assert not (project / "size_census_old").exists()


# ---------------------------------------------------------------------------
# the feeder reads the census; the scheduler scores by it


@pytest.fixture
def sched(mini_project):
    cfg = project_config(mini_project, size_classes=True, debug_send_job=True,
                         dont_generate_upload_certificates=True, daily_result_quota=500)
    db = connect(cfg)
    feeding = Feeding(cfg)

    def feed():
        return feeding(), feeding.log.getvalue()

    yield mini_project, cfg, db, feed
    feeding.close()
    db.close()


def _sized_jobs(db):
    """example_app with 3 size classes; one job of each class (same priority)."""
    db.execute("UPDATE app SET n_size_classes = 3")
    add_app_version(db)
    jobs = add_jobs(db, 3)
    by_class = {}
    for k, (wuid, (rid,)) in enumerate(jobs):
        db.execute("UPDATE workunit SET size_class = %s WHERE id = %s", (k, wuid))
        db.execute("UPDATE result SET size_class = %s WHERE id = %s", (k, rid))
        by_class[k] = rid
    return by_class


def send(cfg, db, ja, hostid=1, req_secs=1.0):
    log = io.StringIO()
    ctx = make_ctx(cfg, db, make_request(req_secs=req_secs), hostid=hostid, userid=1,
                   log_stream=log)
    sched_send.send_work(ctx, ja)
    return [j.result["id"] for j in ctx.reply.jobs], log.getvalue()


def test_missing_census_file_leaves_the_feeder_without_apps(sched):
    project, cfg, db, feed = sched
    _sized_jobs(db)
    ja, log = feed()
    assert "[CRITICAL] Missing size census file for app example_app" in log
    assert str(project / "size_census_example_app") in log
    assert ja.apps == [] and ja.app_versions == []
    assert ja.n_present == 0
    sent, _ = send(cfg, db, ja)
    assert sent == []
    ja.close()
    # a short file is refused the same way
    (project / "size_census_example_app").write_text("1e9\n")
    ja, log = feed()
    assert "Size census file for app example_app is too short" in log
    assert ja.apps == []
    ja.close()


def _speed(cfg, db, ja):
    """The host's effective speed for the app: its version's projected FLOPS
    times the fraction of time it computes (what the score compares)."""
    ctx = make_ctx(cfg, db, make_request())
    work = choose.setup_work(ctx, ja)
    app = ja.lookup_app(1)
    bav = version.get_app_version(work, ja.read_slot(0).wu, app)
    return bav.usage.projected_flops * choose.available_frac(work, bav)


@pytest.mark.parametrize("host_class", [0, 1, 2])
def test_scheduler_prefers_the_hosts_size_class(sched, host_class):
    project, cfg, db, feed = sched
    by_class = _sized_jobs(db)
    census = project / "size_census_example_app"
    census.write_text("1e3\n1e4\n")        # every host is class 2 here
    ja, log = feed()
    assert ja.lookup_app(1)["size_class_quantiles"] == [1e3, 1e4]
    speed = _speed(cfg, db, ja)
    assert speed > 0
    bounds = {0: (speed * 2, speed * 4), 1: (speed / 2, speed * 2),
              2: (speed / 4, speed / 2)}[host_class]
    census.write_text(census_text(bounds))
    ja.close()
    ja, _ = feed()
    sent, log = send(cfg, db, ja)
    assert "[send_job] size: host %d job" % host_class in log
    assert sent == [by_class[host_class]], log
    ja.close()


def test_scores_are_boincs(sched):
    project, cfg, db, feed = sched
    _sized_jobs(db)
    (project / "size_census_example_app").write_text("1e3\n1e4\n")   # host class 2
    ja, _ = feed()
    log = io.StringIO()
    ctx = make_ctx(cfg, db, make_request(), log_stream=log)
    work = choose.setup_work(ctx, ja)
    app = ja.lookup_app(1)
    scores = {}
    for i in range(ja.nslots):
        if ja.slot_state(i) != shmem.PRESENT:
            continue
        slot = ja.read_slot(i)
        bav = version.get_app_version(work, slot.wu, app)
        scores[slot.wu["size_class"]] = score.job_score(work, slot, app, bav)
    assert scores == {0: -1.0, 1: -1.0, 2: 5.0}
    # host class 0: larger jobs -2
    app["size_class_quantiles"] = [1e30, 1e31]
    for i in range(ja.nslots):
        if ja.slot_state(i) == shmem.PRESENT:
            slot = ja.read_slot(i)
            bav = version.get_app_version(work, slot.wu, app)
            scores[slot.wu["size_class"]] = score.job_score(work, slot, app, bav)
    assert scores == {0: 5.0, 1: -2.0, 2: -2.0}
    # without <size_classes/> (or with one class) no size term at all
    cfg.size_classes = False
    assert {score.job_score(work, ja.read_slot(i), app,
                             version.get_app_version(work, ja.read_slot(i).wu, app))
            for i in range(ja.nslots) if ja.slot_state(i) == shmem.PRESENT} == {0.0}
    cfg.size_classes = True
    app["n_size_classes"] = 1
    assert score.size_class_score(work, ja.read_slot(0).wu, app, bav) == 0
    ja.close()


def test_reread_db_picks_up_a_new_census(sched):
    project, cfg, db, feed = sched
    by_class = _sized_jobs(db)
    log = io.StringIO()
    feeder = make_feeder(cfg, log_stream=log)
    try:
        feeder.one_pass()
        ja = shmem.attach(cfg, wait_ready=0)
        assert ja.apps == [] and ja.n_present == 0
        (project / "size_census_example_app").write_text("1e3\n1e4\n")
        (project / "reread_db").write_text("")
        feeder.one_pass()                 # re-reads at the end of the pass
        assert not (project / "reread_db").exists()
        assert ja.lookup_app(1)["size_class_quantiles"] == [1e3, 1e4]
        feeder.one_pass()
        assert ja.n_present == 3
        sent, out = send(cfg, db, ja)
        assert sent == [by_class[2]], out  # every host is in class 2 with these
        # a later census replaces the boundaries on the next reread
        (project / "size_census_example_app").write_text("1e30\n1e31\n")
        (project / "reread_db").write_text("")
        feeder.one_pass()
        assert ja.lookup_app(1)["size_class_quantiles"] == [1e30, 1e31]
        ja.close()
    finally:
        feeder.shutdown()
