"""Homogeneous redundancy slot allocation (hr_allocate_slots): the census
task's hr_info.txt, the feeder's share of the job array per HR class, and
what a host then gets when jobs are committed to a rare class."""

import io
import os

import pytest

from backend_util import run_daemon_once
from boincpy import shmem
from boincpy.daemons.census import Census
from boincpy.db import connect
from boincpy.errors import ToolError
from boincpy.hrclass import HR_INFO_FILE, HR_NCLASSES, HrInfo, HrInfoError, class_name
from boincpy.sched import send as sched_send
from jobs_helpers import Feeding, add_app_version, add_jobs, make_ctx, make_request, \
    project_config

LINUX_CORE2 = 256 + 21          # Linux, Intel Core2 (fine)
WINDOWS_CORE2 = 384 + 21        # the rare class
LINUX_CORE = dict(os_name="Linux Ubuntu", p_vendor="GenuineIntel",
                  p_model="Intel(R) Core(TM) i7-8700 CPU @ 3.20GHz")


def census_text(rac):
    """hr_info.txt with these {class: RAC} for type 1 (fine), none for type 2."""
    info = HrInfo()
    for c, x in rac.items():
        info.rac_per_class[1][c] = x
    return info.text()


def test_allocation_shares_slots_by_weight_and_rac():
    info = HrInfo.parse(census_text({LINUX_CORE2: 900.0, WINDOWS_CORE2: 100.0, 300: 0.5}))
    info.type_weights[1] = 3
    info.type_weights[2] = 1
    info.allocate(100)
    assert info.slots_per_type[1:] == [75, 25]
    assert info.max_slots[1][0] == 37                   # uncommitted: half
    # 38 committed slots in proportion to RAC; every class at least one
    assert info.max_slots[1][LINUX_CORE2] == int(38 * 900 / 1000.5)
    assert info.max_slots[1][WINDOWS_CORE2] == int(38 * 100 / 1000.5)
    assert info.max_slots[1][300] == 1 and info.max_slots[1][WINDOWS_CORE2 + 1] == 1
    # type 2: no RAC at all -- still one slot a class
    assert info.max_slots[2][0] == 12 and info.max_slots[2][LINUX_CORE2] == 1
    assert [info.accept(1, WINDOWS_CORE2) for _ in range(4)] == [True, True, True, False]
    lines = info.lines()
    assert lines[0] == "HR type fine: weight 3.000000 nslots 75"
    assert "  class 405: rac 100.000000 max_slots 3 cur_slots 3" in lines
    assert not any(ln.startswith("  class 406:") for ln in lines)     # no RAC: not shown


def test_census_file_round_trip_and_errors():
    text = census_text({LINUX_CORE2: 12.5})
    lines = text.splitlines()
    assert lines[0] == "--------- fine ----------"
    assert lines[1 + LINUX_CORE2] == "277 12.500000"
    assert len(lines) == 2 * (1 + HR_NCLASSES[1])
    assert HrInfo.parse(text).rac_per_class[1][LINUX_CORE2] == 12.5
    with pytest.raises(HrInfoError, match="unexpected EOF"):
        HrInfo.parse("\n".join(lines[:100]))
    bad = list(lines)
    bad[5] = "7 1.0"
    with pytest.raises(HrInfoError, match="expected class 4"):
        HrInfo.parse("\n".join(bad))
    assert class_name(LINUX_CORE2) == "Linux, Intel Core2"


def test_census_task(mini_project):
    cfg = project_config(mini_project)
    db = connect(cfg)
    try:
        hosts = [("Linux Debian", "GenuineIntel", "Intel(R) Core(TM) i5", 100.0),
                 ("Linux Ubuntu", "GenuineIntel", "Intel(R) Core(TM) i7", 50.0),
                 ("Microsoft Windows 11", "AuthenticAMD", "AMD Ryzen 7", 30.0),
                 ("Plan 9", "GenuineIntel", "Intel(R) Core(TM) i7", 1000.0),   # no class
                 ("Linux Debian", "GenuineIntel", "Intel(R) Core(TM) i7", 0.5)]  # idle
        for os_name, vendor, model, rac in hosts:
            db.execute("INSERT INTO host (create_time, userid, os_name, p_vendor, p_model, "
                       "expavg_credit, domain_name, last_ip_addr, misc, venue) "
                       "VALUES (0, 1, %s, %s, %s, %s, '', '', '', '')",
                       (os_name, vendor, model, rac))
    finally:
        db.close()
    status, log = run_daemon_once(Census, mini_project)
    assert status == 0, log
    assert "4 hosts; hr_info.txt written" in log
    with open(os.path.join(str(mini_project), HR_INFO_FILE)) as f:
        info = HrInfo.parse(f.read())
    assert info.rac_per_class[1][LINUX_CORE2] == 150.0
    assert info.rac_per_class[1][384 + 3] == 30.0        # Windows, AMD (fine)
    assert info.rac_per_class[2][256 + 2] == 150.0        # coarse: Linux, Intel
    assert info.rac_per_class[2][384 + 2] == 30.0         # AMD counts as Intel
    assert sum(info.rac_per_class[1]) == 180.0


@pytest.fixture
def proj(mini_project):
    cfg = project_config(mini_project, one_result_per_user_per_wu=True,
                         daily_result_quota=500, dont_generate_upload_certificates=True,
                         shmem_work_items=20)
    db = connect(cfg)
    db.execute("UPDATE app SET homogeneous_redundancy = 1")
    add_app_version(db)
    feed = Feeding(cfg)
    yield cfg, db, feed
    feed.close()
    db.close()


def _rare_backlog(db):
    """30 jobs committed to the rare class (first in the feeder's order), then
    10 committed to Linux Core2 and 10 not yet committed."""
    rare = add_jobs(db, 30, prefix="rare", priority=5)
    db.execute("UPDATE workunit SET hr_class = %s WHERE name LIKE 'rare%%'", (WINDOWS_CORE2,))
    linux = add_jobs(db, 10, prefix="linux")
    db.execute("UPDATE workunit SET hr_class = %s WHERE name LIKE 'linux%%'", (LINUX_CORE2,))
    add_jobs(db, 10, prefix="free")
    return rare, linux


def _slot_classes(ja):
    return sorted(ja.slot_hr_class(i) for i in range(ja.nslots)
                  if ja.slot_state(i) == shmem.PRESENT)


def _send(cfg, db, ja, hostid):
    ctx = make_ctx(cfg, db, make_request(req_secs=1e6, ncpus=4, **LINUX_CORE),
                   hostid=hostid, userid=hostid)
    sched_send.send_work(ctx, ja)
    return ctx


def test_without_allocation_a_rare_class_fills_the_array(proj):
    cfg, db, feed = proj
    _rare_backlog(db)
    ja = feed()
    assert _slot_classes(ja) == [WINDOWS_CORE2] * 20
    ctx = _send(cfg, db, ja, 1)
    assert ctx.reply.jobs == []


def test_allocation_keeps_rare_jobs_to_their_share(proj):
    cfg, db, feed = proj
    cfg.hr_allocate_slots = True
    with open(cfg.project_path(HR_INFO_FILE), "w") as f:
        f.write(census_text({LINUX_CORE2: 1000.0, WINDOWS_CORE2: 0.0}))
    _rare_backlog(db)
    ja = feed()
    log = feed.log.getvalue()
    assert "HR type fine: weight 1.000000 nslots 20" in log
    assert "  class 277: rac 1000.000000 max_slots 10 cur_slots 0" in log
    assert "rejecting [RESULT#" in log and "because HR class 1/405 over quota" in log
    # a pass reads one enumeration of rows (2 x 20, in id order, as C++'s
    # enumerate_all): the uncommitted jobs come in on the next pass
    assert _slot_classes(ja) == [LINUX_CORE2] * 10 + [WINDOWS_CORE2]
    feed.feeder.one_pass()
    classes = _slot_classes(ja)
    # half for uncommitted jobs, the rest by RAC: one slot for the rare class
    assert classes.count(WINDOWS_CORE2) == 1
    assert classes.count(LINUX_CORE2) == 10 and classes.count(0) == 9     # array full
    # a Linux host gets work: everything but the rare job suits it
    ctx = _send(cfg, db, ja, 1)
    assert len(ctx.reply.jobs) == 19
    # passes after that still give the rare class one slot only
    for _ in range(3):
        feed.feeder.one_pass()
    classes = _slot_classes(ja)
    assert classes.count(WINDOWS_CORE2) == 1
    assert 0 < len(classes) < 20            # the rest wait for jobs of their classes


def test_allocation_needs_the_census(proj):
    cfg, db, feed = proj
    cfg.hr_allocate_slots = True
    with pytest.raises(ToolError, match="Can't read HR info file .*hr_info.txt.*census"):
        feed()


def test_census_read_again_on_reread_db(proj):
    cfg, db, feed = proj
    cfg.hr_allocate_slots = True
    path = cfg.project_path(HR_INFO_FILE)
    with open(path, "w") as f:
        f.write(census_text({LINUX_CORE2: 10.0}))
    feed()
    assert feed.feeder.hr_info.max_slots[1][WINDOWS_CORE2] == 1
    with open(path, "w") as f:
        f.write(census_text({LINUX_CORE2: 10.0, WINDOWS_CORE2: 10.0}))
    open(cfg.project_path("reread_db"), "w").close()
    feed.feeder.log = type(feed.feeder.log)(io.StringIO(), 4)
    feed.feeder.one_pass()
    assert feed.feeder.hr_info.max_slots[1][WINDOWS_CORE2] == 5


# -- the ops pages -----------------------------------------------------------------------

def test_hrclass_summary_and_reset_pages(mini_project, db_root_params):
    from ops_fixtures import call
    from test_ops_pages import assert_ok, token_of
    cfg = project_config(mini_project)
    db = connect(cfg)
    try:
        db.execute("UPDATE app SET homogeneous_redundancy = 1")
        add_app_version(db)
        add_jobs(db, 3, prefix="rare")
        db.execute("UPDATE workunit SET hr_class = %s", (WINDOWS_CORE2,))
        add_jobs(db, 2, prefix="free")
    finally:
        db.close()
    with open(cfg.project_path(HR_INFO_FILE), "w") as f:
        f.write(census_text({LINUX_CORE2: 42.0}))
    body = assert_ok(call(mini_project, "hrclass_summary.php"))
    assert "example_app (fine)" in body
    assert "<td>405</td><td>Windows, Intel Core2</td>" in body
    assert "<td>277</td><td>Linux, Intel Core2</td>" in body and "42.00" in body
    assert 'href="reset_hrclass.php?hr_class=405"' in body
    assert 'db_action.php?table=workunit&amp;hr_class=405' in body
    page = assert_ok(call(mini_project, "reset_hrclass.php", query={"hr_class": WINDOWS_CORE2}))
    assert "3 workunit(s) are committed to class 405" in page
    refused = call(mini_project, "reset_hrclass.php", "POST", form={"hr_class": WINDOWS_CORE2},
                   headers={"HTTP_ORIGIN": "http://127.0.0.1"})
    assert refused.status.startswith("403") and "nothing was changed" in refused.body
    done = assert_ok(call(mini_project, "reset_hrclass.php", "POST",
                          form={"hr_class": WINDOWS_CORE2, "csrf_token": token_of(page)},
                          headers={"HTTP_ORIGIN": "http://127.0.0.1"}))
    assert "3 workunit(s) of class 405 are uncommitted again" in done
    db = connect(cfg)
    try:
        assert db.query_value("SELECT COUNT(*) FROM workunit WHERE hr_class = 0") == 5
    finally:
        db.close()
