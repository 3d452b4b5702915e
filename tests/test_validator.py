"""The validator framework and stock validators against MariaDB and real files."""

import math
import os
import stat
import subprocess
import sys
import textwrap
import time

import pytest

from backend_rows import (add_app_version, add_hav, add_host, add_result, add_team, add_user,
                          add_workunit, app_id, db_of, hav, project_config, row, run_pass)
from boincpy.daemons.sample_validators import (BitwiseValidator, ScriptValidator,
                                               SubstrValidator, TrivialValidator)

INT_MAX = 2147483647
SCALE = 200 / 86400e9          # COBBLESTONE_SCALE, written out
NOW = 1795334800.0


@pytest.fixture
def proj(mini_project):
    db = db_of(mini_project)
    team = add_team(db)
    u1 = add_user(db, "alice", teamid=team)
    u2 = add_user(db, "bob")
    u3 = add_user(db, "carol", teamid=team)
    appid = app_id(db)
    av = add_app_version(db, appid)
    hosts = [add_host(db, u) for u in (u1, u2, u3)]
    ctx = dict(db=db, root=mini_project, team=team, users=[u1, u2, u3], hosts=hosts,
               appid=appid, av=av)
    yield ctx
    db.close()


def result(ctx, wuid, name, k, data, **kw):
    """A successful result of host k (0..2) with output ``data`` (bytes or None)."""
    kw.setdefault("app_version_id", ctx["av"])
    return add_result(ctx["db"], ctx["root"], wuid, name, hostid=ctx["hosts"][k],
                      userid=ctx["users"][k], outputs=[data], **kw)[0]


def test_quorum_1_matches_the_cxx_credit(proj):
    """One result, benchmarks failed (1e9 FLOPS): BOINC granted 0.3094076645833333
    for 31.084677 s (captured from the C++ server); host, user, team get it."""
    db = proj["db"]
    wu = add_workunit(db, "uc_init_1", proj["appid"])
    sent = int(NOW) - 3600
    rid = result(proj, wu, "uc_init_1_0", 0, b"HELLO\n", sent_time=sent, received_time=sent + 58)
    d, found = run_pass(BitwiseValidator, proj["root"], "--app", "example_app", "--one_pass",
                        now=NOW)
    assert found
    r = row(db, "result", rid)
    expected = 31.084677 * 4.3e9 * SCALE
    assert expected == pytest.approx(0.3094076645833333, rel=1e-12)
    assert r["validate_state"] == 1 and r["outcome"] == 1
    assert r["granted_credit"] == pytest.approx(expected, rel=1e-12)
    assert r["runtime_outlier"] == 1          # 1e9 FLOPS: not used for statistics
    w = row(db, "workunit", wu)
    assert (w["canonical_resultid"], w["need_validate"], w["assimilate_state"],
            w["transition_time"]) == (rid, 0, 1, INT_MAX)
    assert w["canonical_credit"] == pytest.approx(expected)
    host = row(db, "host", proj["hosts"][0])
    assert host["total_credit"] == pytest.approx(expected)
    # first sample: credit per day since the job was sent
    assert host["expavg_time"] == NOW
    assert host["expavg_credit"] == pytest.approx(expected / ((NOW - sent) / 86400))
    assert host["avg_turnaround"] == 58
    user = row(db, "user", proj["users"][0])
    assert user["total_credit"] == pytest.approx(expected)
    assert user["expavg_credit"] == pytest.approx(expected / ((NOW - sent) / 86400))
    team = row(db, "team", proj["team"])
    assert team["total_credit"] == pytest.approx(expected)
    # a host_app_version row is created; an outlier leaves its statistics alone
    h = hav(db, proj["hosts"][0], proj["av"])
    assert (h["max_jobs_per_day"], h["consecutive_valid"], h["pfc_n"]) == (1, 1, 0)
    assert "Valid; granted 0.309408 credit" in d.log_stream.getvalue()


def pegged(values, anchor):
    weights = [1 / (0.1 * anchor + abs(anchor - x)) for x in values]
    return sum(w * x for w, x in zip(weights, values)) / sum(weights)


def test_quorum_2_agreeing_pegged_average_and_statistics(proj):
    db = proj["db"]
    wu = add_workunit(db, "wu_q2", proj["appid"], min_quorum=2, target_nresults=2)
    sent = int(NOW) - 7200
    r1 = result(proj, wu, "wu_q2_0", 0, b"same\n", elapsed_time=1000.0, flops_estimate=3e9,
                sent_time=sent, received_time=sent + 1200)
    r2 = result(proj, wu, "wu_q2_1", 1, b"same\n", elapsed_time=2000.0, flops_estimate=2e9,
                sent_time=sent, received_time=sent + 2400)
    unsent = add_result(db, proj["root"], wu, "wu_q2_2", server_state=2, outcome=0)[0]
    add_hav(db, proj["hosts"][0], proj["av"], max_jobs_per_day=5, consecutive_valid=3)
    run_pass(BitwiseValidator, proj["root"], "--app", "example_app", "--one_pass", now=NOW)
    # PFCs 3e12 and 4e12 around the estimate 3.6e12 (min_avg_pfc 1)
    expected = pegged([3e12, 4e12], 3.6e12) * SCALE
    for rid in (r1, r2):
        r = row(db, "result", rid)
        assert r["validate_state"] == 1
        assert r["granted_credit"] == pytest.approx(expected, rel=1e-12)
        assert r["runtime_outlier"] == 0
    w = row(db, "workunit", wu)
    assert w["canonical_resultid"] == r1
    u = row(db, "result", unsent)
    assert (u["server_state"], u["outcome"]) == (5, 5)       # OVER / DIDNT_NEED
    h = hav(db, proj["hosts"][0], proj["av"])
    assert (h["max_jobs_per_day"], h["consecutive_valid"]) == (6, 4)
    # AVERAGE with one sample: the sample itself
    assert h["pfc_n"] == 1 and h["pfc_avg"] == pytest.approx(3e12 / 3.6e12)
    assert h["et_n"] == 1 and h["et_avg"] == pytest.approx(1000 / 3.6e12)
    assert h["turnaround_avg"] == pytest.approx(1200)
    # the app version's statistics are written at the end of the pass
    av = row(db, "app_version", proj["av"])
    assert av["pfc_n"] == 2
    assert av["pfc_avg"] == pytest.approx((3e12 / 3.6e12 + 4e12 / 3.6e12) / 2)
    # two credit samples (3e12 and 4e12 PFC) folded into expavg: first is
    # c1 per day since sent; the second is added at the same instant
    c1, c2 = 3e12 * SCALE, 4e12 * SCALE
    first = c1 / ((NOW - sent) / 86400)
    assert av["expavg_credit"] == pytest.approx(first + math.log(2) * c2 * 86400 / (7 * 86400))


def test_quorum_2_disagreeing_asks_for_another_result(proj):
    db = proj["db"]
    wu = add_workunit(db, "wu_dis", proj["appid"], min_quorum=2, target_nresults=2)
    r1 = result(proj, wu, "wu_dis_0", 0, b"one\n")
    r2 = result(proj, wu, "wu_dis_1", 1, b"two\n")
    t0 = int(time.time())
    run_pass(BitwiseValidator, proj["root"], "--app", "example_app", "--one_pass")
    assert [row(db, "result", r)["validate_state"] for r in (r1, r2)] == [4, 4]
    w = row(db, "workunit", wu)
    assert (w["canonical_resultid"], w["target_nresults"], w["need_validate"]) == (0, 3, 0)
    assert t0 <= w["transition_time"] <= int(time.time()) + 1
    assert row(db, "host", proj["hosts"][0])["total_credit"] == 0
    # a third result agreeing with the first settles it: 2 of 3 is a quorum
    r3 = result(proj, wu, "wu_dis_2", 2, b"one\n")
    db.execute("UPDATE workunit SET need_validate = 1 WHERE id = %s", (wu,))
    run_pass(BitwiseValidator, proj["root"], "--app", "example_app", "--one_pass")
    assert [row(db, "result", r)["validate_state"] for r in (r1, r2, r3)] == [1, 2, 1]
    assert row(db, "workunit", wu)["canonical_resultid"] == r1
    assert row(db, "host", proj["hosts"][1])["total_credit"] == 0
    assert row(db, "host", proj["hosts"][2])["total_credit"] > 0


def test_quorum_3_majority_and_invalid_penalty(proj):
    db = proj["db"]
    project_config(proj["root"], daily_result_quota=4)
    wu = add_workunit(db, "wu_q3", proj["appid"], min_quorum=3, target_nresults=3)
    r1 = result(proj, wu, "wu_q3_0", 0, b"bad\n")
    r2 = result(proj, wu, "wu_q3_1", 1, b"good\n")
    r3 = result(proj, wu, "wu_q3_2", 2, b"good\n")
    add_hav(db, proj["hosts"][0], proj["av"], max_jobs_per_day=7, consecutive_valid=12)
    run_pass(BitwiseValidator, proj["root"], "--app", "example_app", "--one_pass")
    assert [row(db, "result", r)["validate_state"] for r in (r1, r2, r3)] == [2, 1, 1]
    assert row(db, "workunit", wu)["canonical_resultid"] == r2
    h = hav(db, proj["hosts"][0], proj["av"])
    # invalid: consecutive_valid reset, quota above daily_result_quota reduced
    assert (h["consecutive_valid"], h["max_jobs_per_day"]) == (0, 6)
    assert row(db, "result", r1)["granted_credit"] == 0


def test_late_results_valid_and_invalid(proj):
    db = proj["db"]
    wu = add_workunit(db, "wu_late", proj["appid"], min_quorum=1, need_validate=1)
    canon = result(proj, wu, "wu_late_0", 0, b"answer\n", validate_state=1,
                   granted_credit=12.5)
    db.execute("UPDATE workunit SET canonical_resultid = %s, assimilate_state = 2"
               " WHERE id = %s", (canon, wu))
    good = result(proj, wu, "wu_late_1", 1, b"answer\n")
    bad = result(proj, wu, "wu_late_2", 2, b"wrong\n", validate_state=4)
    t0 = int(time.time())
    run_pass(BitwiseValidator, proj["root"], "--app", "example_app", "--one_pass")
    g, b = row(db, "result", good), row(db, "result", bad)
    assert (g["validate_state"], g["granted_credit"]) == (1, 12.5)
    assert (b["validate_state"], b["granted_credit"]) == (2, 0)
    assert row(db, "host", proj["hosts"][1])["total_credit"] == 12.5
    assert row(db, "user", proj["users"][1])["total_credit"] == 12.5
    assert row(db, "host", proj["hosts"][2])["total_credit"] == 0
    w = row(db, "workunit", wu)
    assert w["need_validate"] == 0 and w["canonical_resultid"] == canon
    assert w["transition_time"] >= t0        # IMMEDIATE: the transitioner looks again


def test_missing_output_is_a_validate_error(proj):
    db = proj["db"]
    wu = add_workunit(db, "wu_missing", proj["appid"])
    rid = result(proj, wu, "wu_missing_0", 0, None)       # no file uploaded
    run_pass(BitwiseValidator, proj["root"], "--app", "example_app", "--one_pass")
    r = row(db, "result", rid)
    assert (r["outcome"], r["validate_state"], r["granted_credit"]) == (6, 2, 0)
    w = row(db, "workunit", wu)
    assert (w["canonical_resultid"], w["need_validate"]) == (0, 0)
    assert w["transition_time"] <= int(time.time()) + 1   # IMMEDIATE


def test_missing_optional_and_no_validate_files(proj):
    db = proj["db"]
    wu = add_workunit(db, "wu_opt", proj["appid"], min_quorum=2, target_nresults=2)
    ids = []
    for k, log_data in enumerate((b"log A", b"log B")):
        rid, paths = add_result(db, proj["root"], wu, "wu_opt_%d" % k,
                                hostid=proj["hosts"][k], userid=proj["users"][k],
                                app_version_id=proj["av"], output_names=("out", "extra", "log"),
                                outputs=[b"same", None, log_data], optional=("extra",),
                                no_validate=("log",))
        ids.append(rid)
    run_pass(BitwiseValidator, proj["root"], "--app", "example_app", "--one_pass")
    assert [row(db, "result", r)["validate_state"] for r in ids] == [1, 1]


def test_unreadable_upload_dir_is_transient(proj):
    """An unmounted upload directory must not turn good results into errors."""
    db = proj["db"]
    wu = add_workunit(db, "wu_nfs", proj["appid"])
    rid = result(proj, wu, "wu_nfs_0", 0, b"x")
    before = row(db, "workunit", wu)["transition_time"]
    upload = os.path.join(str(proj["root"]), "upload")
    os.rename(upload, upload + ".away")
    try:
        run_pass(BitwiseValidator, proj["root"], "--app", "example_app", "--one_pass")
    finally:
        os.rename(upload + ".away", upload)
    r = row(db, "result", rid)
    assert (r["outcome"], r["validate_state"]) == (1, 0)      # untouched, still INIT
    w = row(db, "workunit", wu)
    assert w["need_validate"] == 0 and w["canonical_resultid"] == 0
    assert w["transition_time"] <= min(before, int(time.time()) + 6 * 3600 + 1)


def test_gzip_header_is_ignored(proj):
    import gzip
    db = proj["db"]
    wu = add_workunit(db, "wu_gz", proj["appid"], min_quorum=2, target_nresults=2)
    a = gzip.compress(b"payload" * 10, mtime=1)
    b = gzip.compress(b"payload" * 10, mtime=99999)
    assert a != b
    r1 = result(proj, wu, "wu_gz_0", 0, a)
    r2 = result(proj, wu, "wu_gz_1", 1, b)
    run_pass(BitwiseValidator, proj["root"], "--app", "example_app", "--one_pass", "--is_gzip")
    assert [row(db, "result", r)["validate_state"] for r in (r1, r2)] == [1, 1]


def test_substr_validator(proj):
    db = proj["db"]
    ok_wu = add_workunit(db, "wu_s1", proj["appid"])
    ok = result(proj, ok_wu, "wu_s1_0", 0, None, stderr_out="<stderr_txt>\nall done: OK\n")
    bad_wu = add_workunit(db, "wu_s2", proj["appid"])
    bad = result(proj, bad_wu, "wu_s2_0", 1, None, stderr_out="<stderr_txt>\ncrashed\n")
    run_pass(SubstrValidator, proj["root"], "--app", "example_app", "--one_pass",
             "--stderr_string", "done: OK")
    assert row(db, "result", ok)["validate_state"] == 1
    assert (row(db, "result", bad)["validate_state"], row(db, "result", bad)["outcome"]) == (2, 6)
    # --reject_if_present inverts it
    wu3 = add_workunit(db, "wu_s3", proj["appid"])
    r3 = result(proj, wu3, "wu_s3_0", 2, None, stderr_out="done: OK")
    run_pass(SubstrValidator, proj["root"], "--app", "example_app", "--one_pass",
             "--stderr_string", "done: OK", "--reject_if_present")
    assert row(db, "result", r3)["validate_state"] == 2


def test_substr_validator_needs_a_string(proj):
    from boincpy.daemons.base import run_daemon
    rc = run_daemon(SubstrValidator, ["--app", "example_app", "--one_pass",
                                      "--project_dir", str(proj["root"])])
    assert rc == 1


def write_script(root, name, body):
    path = os.path.join(str(root), "bin", name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write("#!/bin/sh\n" + textwrap.dedent(body))
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)
    return path


def test_script_validator_arguments_and_decisions(proj):
    db = proj["db"]
    root = proj["root"]
    log = os.path.join(str(root), "calls.log")
    write_script(root, "check_out", """\
        echo "init $@" >> %s
        grep -q ok "$1"
        """ % log)
    write_script(root, "cmp_out", """\
        echo "cmp $@" >> %s
        cmp -s "$1" "$4"
        """ % log)
    wu = add_workunit(db, "wu_sc", proj["appid"], min_quorum=2, target_nresults=2)
    r1 = result(proj, wu, "wu_sc_0", 0, b"ok 1\n", elapsed_time=12.5)
    r2 = result(proj, wu, "wu_sc_1", 1, b"ok 1\n", elapsed_time=13.0)
    r3 = result(proj, wu, "wu_sc_2", 2, b"bad\n")
    run_pass(ScriptValidator, root, "--app", "example_app", "--one_pass",
             "--init_script", "check_out files result_id runtime",
             "--compare_script", "cmp_out files result_id runtime files2 result_id2")
    states = [row(db, "result", r)["validate_state"] for r in (r1, r2, r3)]
    assert states == [1, 1, 2]
    assert row(db, "result", r3)["outcome"] == 6          # init script said invalid
    from boincpy.jobfiles import output_file_paths
    p1 = output_file_paths(row(db, "result", r1)["xml_doc_in"], str(root / "upload"), 1024)[0]
    p2 = output_file_paths(row(db, "result", r2)["xml_doc_in"], str(root / "upload"), 1024)[0]
    calls = open(log).read().splitlines()
    assert "init %s %d 12.500000" % (p1, r1) in calls
    assert "cmp %s %d 12.500000 %s %d" % (p1, r1, p2, r2) in calls


def test_script_validator_transient_exit_code(proj):
    db = proj["db"]
    write_script(proj["root"], "flaky", "exit 3\n")
    wu = add_workunit(db, "wu_fl", proj["appid"])
    rid = result(proj, wu, "wu_fl_0", 0, b"x")
    run_pass(ScriptValidator, proj["root"], "--app", "example_app", "--one_pass",
             "--init_script", "flaky")
    r = row(db, "result", rid)
    assert (r["outcome"], r["validate_state"]) == (1, 0)
    assert row(db, "workunit", wu)["need_validate"] == 0


def test_credit_options(proj):
    db = proj["db"]
    root = proj["root"]
    w1 = add_workunit(db, "wu_cw", proj["appid"], canonical_credit=5.0)
    r1 = result(proj, w1, "wu_cw_0", 0, b"x")
    run_pass(TrivialValidator, root, "--app", "example_app", "--one_pass", "--credit_from_wu")
    assert row(db, "result", r1)["granted_credit"] == 5.0
    w2 = add_workunit(db, "wu_nc", proj["appid"])
    r2 = result(proj, w2, "wu_nc_0", 1, b"x")
    run_pass(TrivialValidator, root, "--app", "example_app", "--one_pass", "--no_credit")
    assert (row(db, "result", r2)["validate_state"], row(db, "result", r2)["granted_credit"]) \
        == (1, 0)
    assert row(db, "host", proj["hosts"][1])["total_credit"] == 0
    w3 = add_workunit(db, "wu_cap", proj["appid"], canonical_credit=500.0)
    r3 = result(proj, w3, "wu_cap_0", 2, b"x")
    run_pass(TrivialValidator, root, "--app", "example_app", "--one_pass", "--credit_from_wu",
             "--max_granted_credit", "100")
    assert row(db, "result", r3)["granted_credit"] == 100
    # credit from runtime: low average of elapsed x FLOPS (1e9 counts as 4.3e9)
    w4 = add_workunit(db, "wu_rt", proj["appid"], min_quorum=2, target_nresults=2)
    r4 = result(proj, w4, "wu_rt_0", 0, b"x", elapsed_time=100.0, flops_estimate=1e9)
    r5 = result(proj, w4, "wu_rt_1", 1, b"x", elapsed_time=300.0, flops_estimate=2e9)
    run_pass(TrivialValidator, root, "--app", "example_app", "--one_pass",
             "--credit_from_runtime")
    c = [100 * 4.3e9 * SCALE, 300 * 2e9 * SCALE]
    low = (c[0] * c[1] + c[1] * c[0]) / (1 * (c[0] + c[1]))
    assert row(db, "result", r4)["granted_credit"] == pytest.approx(low)
    assert row(db, "result", r5)["granted_credit"] == pytest.approx(low)


def test_recent_average_decays_with_seven_day_half_life(proj):
    db = proj["db"]
    earlier = NOW - 7 * 86400           # exactly one half-life ago
    db.execute("UPDATE user SET total_credit = 100, expavg_credit = 40, expavg_time = %s"
               " WHERE id = %s", (earlier, proj["users"][1]))
    wu = add_workunit(db, "wu_rac", proj["appid"], canonical_credit=14.0)
    result(proj, wu, "wu_rac_0", 1, b"x")
    run_pass(TrivialValidator, proj["root"], "--app", "example_app", "--one_pass",
             "--credit_from_wu", now=NOW)
    u = row(db, "user", proj["users"][1])
    assert u["total_credit"] == 114
    # avg*1/2 + (1-1/2) * 14 credits / 7 days
    assert u["expavg_credit"] == pytest.approx(40 * 0.5 + 0.5 * 14 / 7)
    assert u["expavg_time"] == NOW


def test_credit_by_app_and_credited_job(proj):
    db = proj["db"]
    project_config(proj["root"], credit_by_app=True)
    wu = add_workunit(db, "wu_cba", proj["appid"], canonical_credit=3.0, opaque=77)
    result(proj, wu, "wu_cba_0", 0, b"x", teamid=proj["team"])
    wu2 = add_workunit(db, "wu_cba2", proj["appid"], canonical_credit=4.0, opaque=78)
    result(proj, wu2, "wu_cba2_0", 0, b"x", teamid=proj["team"])
    run_pass(TrivialValidator, proj["root"], "--app", "example_app", "--one_pass",
             "--credit_from_wu", "--update_credited_job", now=NOW)
    cu = db.query_one("SELECT * FROM credit_user WHERE userid = %s", (proj["users"][0],))
    assert (cu["njobs"], cu["total"], cu["appid"]) == (2, 7.0, proj["appid"])
    # a new row starts with expavg_time = now, so both grants use the dt -> 0 limit
    assert cu["expavg"] == pytest.approx(math.log(2) * 7.0 * 86400 / (7 * 86400))
    ct = db.query_one("SELECT * FROM credit_team WHERE teamid = %s", (proj["team"],))
    assert (ct["njobs"], ct["total"]) == (2, 7.0)
    # a later pass adds to the existing rows: one day after, half-life 7 days
    wu3 = add_workunit(db, "wu_cba3", proj["appid"], canonical_credit=1.0, opaque=79)
    result(proj, wu3, "wu_cba3_0", 0, b"x", teamid=proj["team"])
    run_pass(TrivialValidator, proj["root"], "--app", "example_app", "--one_pass",
             "--credit_from_wu", "--update_credited_job", now=NOW + 86400)
    cu2 = db.query_one("SELECT * FROM credit_user WHERE userid = %s", (proj["users"][0],))
    w = math.exp(-86400 * math.log(2) / (7 * 86400))
    assert (cu2["njobs"], cu2["total"]) == (3, 8.0)
    assert cu2["expavg"] == pytest.approx(cu["expavg"] * w + (1 - w) * 1.0 / 1.0)
    assert db.query_value("SELECT COUNT(*) FROM credit_user") == 1
    cj = db.query("SELECT userid, workunitid FROM credited_job ORDER BY workunitid")
    assert [(r["userid"], r["workunitid"]) for r in cj] == [(proj["users"][0], 77),
                                                            (proj["users"][0], 78),
                                                            (proj["users"][0], 79)]


def test_repeated_pass_never_grants_twice(proj):
    db = proj["db"]
    wu = add_workunit(db, "wu_rep", proj["appid"], canonical_credit=2.0)
    result(proj, wu, "wu_rep_0", 0, b"x")
    for _ in range(3):
        run_pass(TrivialValidator, proj["root"], "--app", "example_app", "--one_pass",
                 "--credit_from_wu")
        # as if the transitioner flagged the workunit again
        db.execute("UPDATE workunit SET need_validate = 1 WHERE id = %s", (wu,))
    assert row(db, "host", proj["hosts"][0])["total_credit"] == 2.0
    assert row(db, "user", proj["users"][0])["total_credit"] == 2.0
    assert row(db, "team", proj["team"])["total_credit"] == 2.0


KILL_SCRIPT = """
import os, signal, sys
from boincpy.daemons import validator
from boincpy.daemons.base import run_daemon
from boincpy.daemons.sample_validators import TrivialValidator
original = validator.Validator._write
def write_then_die(self, batch):
    original(self, batch)       # every row written, nothing committed
    os.kill(os.getpid(), signal.SIGKILL)
validator.Validator._write = write_then_die
sys.exit(run_daemon(TrivialValidator, sys.argv[1:]))
"""


def test_kill_before_commit_changes_nothing(proj):
    db = proj["db"]
    wus = [add_workunit(db, "wu_kill_%d" % i, proj["appid"], canonical_credit=1.0)
           for i in range(5)]
    rids = [result(proj, w, "wu_kill_%d_0" % i, i % 3, b"x") for i, w in enumerate(wus)]
    proc = subprocess.run([sys.executable, "-c", KILL_SCRIPT, "--app", "example_app",
                           "--one_pass", "--credit_from_wu", "--project_dir", str(proj["root"])],
                          capture_output=True, text=True)
    assert proc.returncode == -9, proc.stderr
    assert all(row(db, "result", r)["validate_state"] == 0 for r in rids)
    assert all(row(db, "workunit", w)["need_validate"] == 1 for w in wus)
    assert sum(row(db, "host", h)["total_credit"] for h in proj["hosts"]) == 0
    run_pass(TrivialValidator, proj["root"], "--app", "example_app", "--one_pass",
             "--credit_from_wu")
    assert all(row(db, "result", r)["validate_state"] == 1 for r in rids)
    assert sum(row(db, "host", h)["total_credit"] for h in proj["hosts"]) == 5.0
    assert sum(row(db, "user", u)["total_credit"] for u in proj["users"]) == 5.0


def test_mod_and_other_apps_are_left_alone(proj):
    db = proj["db"]
    other = db.insert("INSERT INTO app (create_time, name) VALUES (0, 'other_app')")
    w_other = add_workunit(db, "wu_other", other)
    result(proj, w_other, "wu_other_0", 0, b"x")
    ws = [add_workunit(db, "wu_mod_%d" % i, proj["appid"]) for i in range(4)]
    for i, w in enumerate(ws):
        result(proj, w, "wu_mod_%d_0" % i, 0, b"x")
    run_pass(TrivialValidator, proj["root"], "--app", "example_app", "--one_pass",
             "--mod", "2", "0")
    for w in ws:
        assert row(db, "workunit", w)["need_validate"] == (0 if w % 2 == 0 else 1)
    assert row(db, "workunit", w_other)["need_validate"] == 1


def test_dry_run_writes_nothing(proj):
    db = proj["db"]
    wu = add_workunit(db, "wu_dry", proj["appid"])
    rid = result(proj, wu, "wu_dry_0", 0, b"x")
    run_pass(TrivialValidator, proj["root"], "--app", "example_app", "--one_pass", "--dry_run")
    assert row(db, "result", rid)["validate_state"] == 0
    assert row(db, "workunit", wu)["need_validate"] == 1


def test_unknown_app_is_an_error(proj):
    from boincpy.daemons.base import run_daemon
    assert run_daemon(TrivialValidator, ["--app", "nope", "--one_pass",
                                         "--project_dir", str(proj["root"])]) == 1


def test_workunit_changed_during_checks_is_left_for_next_pass(proj):
    """A result reported while the files are being checked: the batch's
    decision for that workunit is dropped, and the next pass sees both results."""
    db = proj["db"]
    wu = add_workunit(db, "wu_race", proj["appid"], min_quorum=1, target_nresults=2)
    r1 = result(proj, wu, "wu_race_0", 0, b"same")
    r2 = add_result(db, proj["root"], wu, "wu_race_1", hostid=proj["hosts"][1],
                    userid=proj["users"][1], server_state=4, outcome=0,
                    app_version_id=proj["av"], outputs=[b"same"])[0]

    class Racing(BitwiseValidator):
        def init_result(self, result):
            # the scheduler records the second report meanwhile
            self.db.execute("UPDATE result SET server_state = 5, outcome = 1 WHERE id = %s",
                            (r2,))
            return super().init_result(result)

    run_pass(Racing, proj["root"], "--app", "example_app", "--one_pass")
    assert row(db, "result", r1)["validate_state"] == 0
    assert row(db, "workunit", wu)["need_validate"] == 1
    run_pass(BitwiseValidator, proj["root"], "--app", "example_app", "--one_pass")
    assert [row(db, "result", r)["validate_state"] for r in (r1, r2)] == [1, 1]


def test_check_punitive_limits_failing_host(proj):
    db = proj["db"]
    wu = add_workunit(db, "wu_pun", proj["appid"], min_quorum=2, target_nresults=2)
    add_result(db, proj["root"], wu, "wu_pun_0", hostid=proj["hosts"][2],
               userid=proj["users"][2], outcome=3, app_version_id=proj["av"], outputs=[None])
    add_hav(db, proj["hosts"][2], proj["av"], max_jobs_per_day=50, n_jobs_today=7)
    run_pass(TrivialValidator, proj["root"], "--app", "example_app", "--one_pass",
             "--check_punitive")
    h = hav(db, proj["hosts"][2], proj["av"])
    assert (h["max_jobs_per_day"], h["n_jobs_today"]) == (1, 1)


def test_wu_id_validates_one_workunit(proj):
    db = proj["db"]
    w1 = add_workunit(db, "wu_one_a", proj["appid"])
    w2 = add_workunit(db, "wu_one_b", proj["appid"])
    result(proj, w1, "wu_one_a_0", 0, b"x")
    result(proj, w2, "wu_one_b_0", 1, b"x")
    run_pass(TrivialValidator, proj["root"], "--app", "example_app", "--wu_id", str(w2))
    assert row(db, "workunit", w1)["need_validate"] == 1
    assert row(db, "workunit", w2)["canonical_resultid"] > 0


def test_new_app_version_inherits_host_statistics(proj):
    """BOINC's hav_lookup: a host's row for the previous version of the same
    app/platform/plan class is taken over by the new version."""
    db = proj["db"]
    av2 = add_app_version(db, proj["appid"], version_num=101)
    add_hav(db, proj["hosts"][0], proj["av"], max_jobs_per_day=9, consecutive_valid=4)
    wu = add_workunit(db, "wu_newav", proj["appid"])
    result(proj, wu, "wu_newav_0", 0, b"x", app_version_id=av2)
    wu0 = add_workunit(db, "wu_noav", proj["appid"])
    result(proj, wu0, "wu_noav_0", 1, b"x", app_version_id=0)
    run_pass(TrivialValidator, proj["root"], "--app", "example_app", "--one_pass")
    assert hav(db, proj["hosts"][0], proj["av"]) is None
    h = hav(db, proj["hosts"][0], av2)
    assert (h["max_jobs_per_day"], h["consecutive_valid"]) == (10, 5)
    # an unknown version (0) gets no row, as in BOINC
    assert db.query_value("SELECT COUNT(*) FROM host_app_version WHERE host_id = %s",
                          (proj["hosts"][1],)) == 0
