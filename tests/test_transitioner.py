"""The transitioner, one pass at a time, over database states made for the purpose."""

import os
import re
import signal
import subprocess
import time

import pytest

from backend_util import (bin_cmd, bin_env, make_result, make_upload_keys, make_wu,
                          project_db, results_of, run_daemon_once, set_options, wait_for,
                          wu_row)
from boincpy import crypto
from boincpy.daemons import transitioner as tr
from boincpy.daemons.transitioner import Transitioner
from boincpy.states import INT_MAX

OVER, UNSENT, IN_PROGRESS, INACTIVE = 5, 2, 4, 1
SUCCESS, COULDNT_SEND, CLIENT_ERROR, NO_REPLY, DIDNT_NEED, VALIDATE_ERROR = 1, 2, 3, 4, 5, 6
V_INIT, V_VALID, V_INVALID, V_NO_CHECK, V_INCONCLUSIVE, V_TOO_LATE = 0, 1, 2, 3, 4, 5
TEN_DAYS = 864000


@pytest.fixture
def proj(mini_project):
    make_upload_keys(mini_project)
    set_options(mini_project, daily_result_quota=10)
    cfg, db = project_db(mini_project)
    yield mini_project, db
    db.close()


def one_pass(project, *args):
    status, log = run_daemon_once(Transitioner, project, *args)
    assert status == 0, log
    return log


def names(rows):
    return [r["name"] for r in rows]


# -- creating results ----------------------------------------------------------------

def test_new_workunit_gets_target_nresults_results(proj):
    project, db = proj
    wuid = make_wu(db, "wu_a", target_nresults=3, max_total_results=6, max_success_results=3,
                   priority=7, batch=42, delay_bound=1000000)
    before = int(time.time())
    log = one_pass(project)
    rows = results_of(db, wuid)
    assert names(rows) == ["wu_a_0", "wu_a_1", "wu_a_2"]
    for r in rows:
        assert (r["server_state"], r["outcome"], r["validate_state"]) == (UNSENT, 0, 0)
        assert (r["priority"], r["batch"], r["appid"], r["size_class"]) == (7, 42, 1, -1)
        assert r["create_time"] >= before
    assert len({r["random"] for r in rows}) == 3
    wu = wu_row(db, wuid)
    # safety net: max(1.5 x delay_bound, 10 days) from now
    assert before + 1500000 <= wu["transition_time"] <= int(time.time()) + 1500000
    assert "[WU#%d wu_a] Generating 3 more results (3 target - 0 unsent - 0 in progress - "\
        "0 success)" % wuid in log


def test_result_xml_has_outfile_names_and_valid_upload_certificates(proj):
    project, db = proj
    wuid = make_wu(db, "wu_cert")
    one_pass(project)
    xml = results_of(db, wuid)[0]["xml_doc_in"]
    name = re.search(r"<name>(wu_cert_0_r\d+_0)</name>", xml).group(1)
    assert "<file_name>%s</file_name>" % name in xml
    assert "<url>http://127.0.0.1/test_cgi/file_upload_handler</url>" in xml
    sig = re.search(r"<xml_signature>\n(.*?)</xml_signature>", xml, re.S).group(1)
    public = crypto.read_key(str(project / "keys" / "upload_public"))
    assert crypto.verify_upload_certificate(name, 5000000, sig, public)
    assert not crypto.verify_upload_certificate(name + "x", 5000000, sig, public)
    assert not xml.startswith("<output_template>")


def test_no_certificates_when_disabled_and_no_key_needed(proj):
    project, db = proj
    set_options(project, dont_generate_upload_certificates=True)
    os.unlink(project / "keys" / "upload_private")
    wuid = make_wu(db, "wu_nocert")
    one_pass(project)
    xml = results_of(db, wuid)[0]["xml_doc_in"]
    assert "<xml_signature>" not in xml and "wu_nocert_0_r" in xml


def test_missing_upload_key_is_a_clear_error_when_certificates_are_on(proj):
    project, db = proj
    os.unlink(project / "keys" / "upload_private")
    make_wu(db, "wu_nokey")
    status, log = run_daemon_once(Transitioner, project)
    assert status == 1 and "upload_private" in log


def test_missing_result_template_stops_with_a_message_and_writes_nothing(proj):
    project, db = proj
    good = make_wu(db, "wu_good")
    bad = make_wu(db, "wu_bad", result_template_file="templates/nonesuch_out")
    status, log = run_daemon_once(Transitioner, project)
    assert status == 1
    assert "[WU#%d wu_bad] can't read result template file" % bad in log
    assert results_of(db, bad) == []
    assert wu_row(db, bad)["transition_time"] == 0


def test_size_class_makes_inactive_results(proj):
    project, db = proj
    wuid = make_wu(db, "wu_sized", size_class=1)
    one_pass(project)
    r = results_of(db, wuid)[0]
    assert (r["server_state"], r["size_class"]) == (INACTIVE, 1)


def test_names_continue_after_the_highest_suffix(proj):
    project, db = proj
    wuid = make_wu(db, "wu_s", target_nresults=2, max_total_results=10)
    make_result(db, wuid, "wu_s_4", server_state=OVER, outcome=CLIENT_ERROR)
    make_result(db, wuid, "wu_s_1", server_state=OVER, outcome=NO_REPLY)
    one_pass(project)
    assert names(results_of(db, wuid)) == ["wu_s_4", "wu_s_1", "wu_s_5", "wu_s_6"]


def test_no_new_results_flag_and_transition_none(proj):
    project, db = proj
    a = make_wu(db, "wu_nonew", transitioner_flags=2)
    b = make_wu(db, "wu_none", transitioner_flags=1)
    one_pass(project)
    assert results_of(db, a) == [] and results_of(db, b) == []
    assert wu_row(db, a)["transition_time"] > time.time()
    assert wu_row(db, b)["transition_time"] == 0      # never looked at


def test_retry_priority_boost(proj):
    project, db = proj
    set_options(project, reliable_priority_on_over=5)
    wuid = make_wu(db, "wu_p", priority=1)
    make_result(db, wuid, "wu_p_0", server_state=OVER, outcome=CLIENT_ERROR)
    one_pass(project)
    assert results_of(db, wuid)[1]["priority"] == 6


def test_retry_priority_except_error(proj):
    project, db = proj
    set_options(project, reliable_priority_on_over_except_error=3)
    a = make_wu(db, "wu_pe_a", priority=1)
    make_result(db, a, "wu_pe_a_0", server_state=OVER, outcome=NO_REPLY)
    b = make_wu(db, "wu_pe_b", priority=1)
    make_result(db, b, "wu_pe_b_0", server_state=OVER, outcome=CLIENT_ERROR)
    one_pass(project)
    assert results_of(db, a)[1]["priority"] == 4
    assert results_of(db, b)[1]["priority"] == 1


# -- timeouts ---------------------------------------------------------------------------

def test_overdue_result_times_out_penalises_host_and_is_replaced(proj):
    project, db = proj
    now = int(time.time())
    wuid = make_wu(db, "wu_t", delay_bound=5000)
    rid = make_result(db, wuid, "wu_t_0", server_state=IN_PROGRESS, hostid=9,
                      app_version_id=3, sent_time=now - 6000, report_deadline=now - 10)
    db.execute("INSERT INTO host_app_version (host_id, app_version_id, max_jobs_per_day, "
               "consecutive_valid) VALUES (9, 3, 0, 7)")
    log = one_pass(project)
    rows = results_of(db, wuid)
    assert (rows[0]["server_state"], rows[0]["outcome"]) == (OVER, NO_REPLY)
    assert names(rows) == ["wu_t_0", "wu_t_1"] and rows[1]["server_state"] == UNSENT
    hav = db.query_one("SELECT * FROM host_app_version WHERE host_id = 9")
    assert hav["turnaround_n"] == 1 and hav["turnaround_avg"] == 5000
    assert hav["max_jobs_per_day"] == 9          # quota 10, minus one
    assert hav["consecutive_valid"] == 0
    assert ("[RESULT#%d wu_t_0] result timed out (%d < " % (rid, now - 10)) in log
    assert "server_state:IN_PROGRESS=>OVER; outcome:NO_REPLY" in log


def test_timeout_of_anonymous_platform_result_uses_generalized_id(proj):
    project, db = proj
    now = int(time.time())
    wuid = make_wu(db, "wu_anon")
    make_result(db, wuid, "wu_anon_0", server_state=IN_PROGRESS, hostid=4,
                app_version_id=-2, report_deadline=now - 1)
    db.execute("INSERT INTO host_app_version (host_id, app_version_id, max_jobs_per_day) "
               "VALUES (4, 1000002, 5)")
    one_pass(project)
    assert db.query_value("SELECT max_jobs_per_day FROM host_app_version") == 4


def test_result_in_progress_sets_transition_time_to_its_deadline(proj):
    project, db = proj
    deadline = int(time.time()) + 500
    wuid = make_wu(db, "wu_ip")
    make_result(db, wuid, "wu_ip_0", server_state=IN_PROGRESS, report_deadline=deadline)
    one_pass(project)
    assert wu_row(db, wuid)["transition_time"] == deadline
    assert len(results_of(db, wuid)) == 1


def test_user_abort_counts_as_no_reply_not_error(proj):
    project, db = proj
    wuid = make_wu(db, "wu_ab", max_error_results=1)
    make_result(db, wuid, "wu_ab_0", server_state=OVER, outcome=CLIENT_ERROR, exit_status=203)
    make_result(db, wuid, "wu_ab_1", server_state=OVER, outcome=CLIENT_ERROR, exit_status=203)
    one_pass(project)
    assert wu_row(db, wuid)["error_mask"] == 0
    assert len(results_of(db, wuid)) == 3


# -- error mask -----------------------------------------------------------------------

def test_too_many_errors(proj):
    project, db = proj
    wuid = make_wu(db, "wu_e", max_error_results=1, target_nresults=2, min_quorum=2)
    make_result(db, wuid, "wu_e_0", server_state=OVER, outcome=CLIENT_ERROR)
    make_result(db, wuid, "wu_e_1", server_state=OVER, outcome=VALIDATE_ERROR)
    unsent = make_result(db, wuid, "wu_e_2", server_state=UNSENT)
    ok = make_result(db, wuid, "wu_e_3", server_state=OVER, outcome=SUCCESS)
    log = one_pass(project)
    wu = wu_row(db, wuid)
    assert wu["error_mask"] == 2 and wu["assimilate_state"] == 1
    assert wu["transition_time"] == INT_MAX
    rows = {r["id"]: r for r in results_of(db, wuid)}
    assert len(rows) == 4
    assert (rows[unsent]["server_state"], rows[unsent]["outcome"]) == (OVER, DIDNT_NEED)
    assert rows[ok]["validate_state"] == V_NO_CHECK
    assert "WU has too many errors (2 errors for 4 results)" in log
    assert "error_mask:2 assimilate_state:INIT=>READY" in log


def test_too_many_total_results(proj):
    project, db = proj
    wuid = make_wu(db, "wu_tot", max_error_results=5, max_total_results=2)
    make_result(db, wuid, "wu_tot_0", server_state=OVER, outcome=CLIENT_ERROR)
    make_result(db, wuid, "wu_tot_1", server_state=OVER, outcome=NO_REPLY)
    log = one_pass(project)
    wu = wu_row(db, wuid)
    assert wu["error_mask"] == 8 and wu["assimilate_state"] == 1
    assert len(results_of(db, wuid)) == 2
    assert "WU has too many total results (2)" in log


def test_new_results_capped_by_max_total_results(proj):
    project, db = proj
    wuid = make_wu(db, "wu_cap", target_nresults=3, max_total_results=2,
                   max_success_results=3)
    one_pass(project)
    assert len(results_of(db, wuid)) == 2 and wu_row(db, wuid)["error_mask"] == 0


def test_couldnt_send(proj):
    project, db = proj
    wuid = make_wu(db, "wu_cs")
    make_result(db, wuid, "wu_cs_0", server_state=OVER, outcome=COULDNT_SEND)
    log = one_pass(project)
    assert wu_row(db, wuid)["error_mask"] == 1
    assert len(results_of(db, wuid)) == 1
    assert "result couldn't be sent" in log


def test_cancelled_workunit(proj):
    project, db = proj
    wuid = make_wu(db, "wu_x", error_mask=16, target_nresults=3)
    unsent = make_result(db, wuid, "wu_x_0", server_state=UNSENT)
    inactive = make_result(db, wuid, "wu_x_1", server_state=INACTIVE)
    inconclusive = make_result(db, wuid, "wu_x_2", server_state=OVER, outcome=SUCCESS,
                               validate_state=V_INCONCLUSIVE)
    valid = make_result(db, wuid, "wu_x_3", server_state=OVER, outcome=SUCCESS,
                        validate_state=V_VALID)
    one_pass(project)
    rows = {r["id"]: r for r in results_of(db, wuid)}
    assert len(rows) == 4
    for rid in (unsent, inactive):
        assert (rows[rid]["server_state"], rows[rid]["outcome"]) == (OVER, DIDNT_NEED)
    assert rows[inconclusive]["validate_state"] == V_NO_CHECK
    assert rows[valid]["validate_state"] == V_VALID
    wu = wu_row(db, wuid)
    assert (wu["error_mask"], wu["assimilate_state"], wu["transition_time"]) == (16, 1, INT_MAX)


def test_errors_only_reset_hr_class_unless_static(proj):
    project, db = proj
    a = make_wu(db, "wu_hr", hr_class=3, app_version_id=7)
    make_result(db, a, "wu_hr_0", server_state=OVER, outcome=CLIENT_ERROR)
    one_pass(project)
    assert (wu_row(db, a)["hr_class"], wu_row(db, a)["app_version_id"]) == (0, 0)
    set_options(project, hr_class_static=True)
    b = make_wu(db, "wu_hr2", hr_class=3, app_version_id=7)
    make_result(db, b, "wu_hr2_0", server_state=OVER, outcome=CLIENT_ERROR)
    one_pass(project)
    assert (wu_row(db, b)["hr_class"], wu_row(db, b)["app_version_id"]) == (3, 7)


# -- validation and quorum --------------------------------------------------------------

def test_quorum_waits_then_need_validate(proj):
    project, db = proj
    deadline = int(time.time()) + 1000
    wuid = make_wu(db, "wu_q", min_quorum=2, target_nresults=2)
    r0 = make_result(db, wuid, "wu_q_0", server_state=OVER, outcome=SUCCESS)
    r1 = make_result(db, wuid, "wu_q_1", server_state=IN_PROGRESS, report_deadline=deadline)
    one_pass(project)
    wu = wu_row(db, wuid)
    assert wu["need_validate"] == 0 and wu["transition_time"] == deadline
    assert len(results_of(db, wuid)) == 2
    # the second result is reported: the scheduler sets transition_time = now
    db.execute("UPDATE result SET server_state = 5, outcome = 1, received_time = %s "
               "WHERE id = %s", (int(time.time()), r1))
    db.execute("UPDATE workunit SET transition_time = 0 WHERE id = %s", (wuid,))
    log = one_pass(project)
    wu = wu_row(db, wuid)
    assert wu["need_validate"] == 1 and "need_validate:=>true" in log
    assert len(results_of(db, wuid)) == 2
    assert r0


def test_invalid_result_is_not_a_success(proj):
    project, db = proj
    wuid = make_wu(db, "wu_inv")
    make_result(db, wuid, "wu_inv_0", server_state=OVER, outcome=SUCCESS,
                validate_state=V_INVALID)
    one_pass(project)
    assert names(results_of(db, wuid)) == ["wu_inv_0", "wu_inv_1"]
    assert wu_row(db, wuid)["need_validate"] == 0


def test_success_after_canonical_files_deleted_is_too_late(proj):
    project, db = proj
    wuid = make_wu(db, "wu_late", assimilate_state=2, file_delete_state=2)
    canon = make_result(db, wuid, "wu_late_0", server_state=OVER, outcome=SUCCESS,
                        validate_state=V_VALID, file_delete_state=2)
    db.execute("UPDATE workunit SET canonical_resultid = %s WHERE id = %s", (canon, wuid))
    late = make_result(db, wuid, "wu_late_1", server_state=OVER, outcome=SUCCESS)
    log = one_pass(project)
    rows = {r["id"]: r for r in results_of(db, wuid)}
    assert rows[late]["validate_state"] == V_TOO_LATE
    assert rows[late]["file_delete_state"] == 1       # validated now: outputs may go
    assert wu_row(db, wuid)["need_validate"] == 0
    assert "validate_state:INIT=>TOO_LATE" in log


def test_canonical_result_with_all_over_triggers_deferred_assimilation(proj):
    project, db = proj
    wuid = make_wu(db, "wu_def", target_nresults=2, min_quorum=2)
    canon = make_result(db, wuid, "wu_def_0", server_state=OVER, outcome=SUCCESS,
                        validate_state=V_VALID)
    make_result(db, wuid, "wu_def_1", server_state=OVER, outcome=SUCCESS,
                validate_state=V_VALID)
    db.execute("UPDATE workunit SET canonical_resultid = %s WHERE id = %s", (canon, wuid))
    log = one_pass(project)
    wu = wu_row(db, wuid)
    assert wu["assimilate_state"] == 1 and wu["transition_time"] == INT_MAX
    assert "Deferred assimilation now set to ASSIMILATE_STATE_READY" in log
    assert len(results_of(db, wuid)) == 2


def test_missing_canonical_result_is_logged(proj):
    project, db = proj
    wuid = make_wu(db, "wu_nocanon", canonical_resultid=999)
    log = one_pass(project)
    assert "[WU#%d wu_nocanon] can't find canonical result" % wuid in log
    assert wu_row(db, wuid)["transition_time"] == INT_MAX


# -- file deletion --------------------------------------------------------------------

def _assimilated(db, name, **cols):
    wuid = make_wu(db, name, assimilate_state=2, target_nresults=2, min_quorum=2, **cols)
    return wuid


def test_assimilated_workunit_files_become_ready(proj):
    project, db = proj
    wuid = _assimilated(db, "wu_fd")
    canon = make_result(db, wuid, "wu_fd_0", server_state=OVER, outcome=SUCCESS,
                        validate_state=V_VALID, received_time=100)
    invalid = make_result(db, wuid, "wu_fd_1", server_state=OVER, outcome=SUCCESS,
                          validate_state=V_INVALID, received_time=200)
    error = make_result(db, wuid, "wu_fd_2", server_state=OVER, outcome=CLIENT_ERROR)
    noreply = make_result(db, wuid, "wu_fd_3", server_state=OVER, outcome=NO_REPLY,
                          report_deadline=1)
    db.execute("UPDATE workunit SET canonical_resultid = %s WHERE id = %s", (canon, wuid))
    log = one_pass(project)
    rows = {r["id"]: r for r in results_of(db, wuid)}
    assert [rows[i]["file_delete_state"] for i in (canon, invalid, error, noreply)] == [1, 1, 1, 0]
    wu = wu_row(db, wuid)
    assert wu["file_delete_state"] == 1 and wu["transition_time"] == INT_MAX
    assert "[RESULT#%d wu_fd_2] file_delete_state:=>READY" % error in log
    # a second pass changes nothing
    one_pass(project, "--wu_id", str(wuid))
    assert [r["file_delete_state"] for r in results_of(db, wuid)] == [1, 1, 1, 0]


def test_assimilated_with_result_in_progress_keeps_canonical_and_input_files(proj):
    project, db = proj
    deadline = int(time.time()) + 3000
    wuid = _assimilated(db, "wu_fd2")
    canon = make_result(db, wuid, "wu_fd2_0", server_state=OVER, outcome=SUCCESS,
                        validate_state=V_VALID)
    error = make_result(db, wuid, "wu_fd2_1", server_state=OVER, outcome=CLIENT_ERROR)
    make_result(db, wuid, "wu_fd2_2", server_state=IN_PROGRESS, report_deadline=deadline)
    db.execute("UPDATE workunit SET canonical_resultid = %s WHERE id = %s", (canon, wuid))
    one_pass(project)
    rows = {r["id"]: r for r in results_of(db, wuid)}
    assert rows[canon]["file_delete_state"] == 0 and rows[error]["file_delete_state"] == 1
    wu = wu_row(db, wuid)
    assert wu["file_delete_state"] == 0
    assert wu["transition_time"] == deadline      # canonical, but a result is still out


def test_noreply_with_future_deadline_blocks_input_deletion(proj):
    project, db = proj
    wuid = _assimilated(db, "wu_fd3")
    canon = make_result(db, wuid, "wu_fd3_0", server_state=OVER, outcome=SUCCESS,
                        validate_state=V_VALID)
    make_result(db, wuid, "wu_fd3_1", server_state=OVER, outcome=NO_REPLY,
                report_deadline=int(time.time()) + 3000)
    db.execute("UPDATE workunit SET canonical_resultid = %s WHERE id = %s", (canon, wuid))
    one_pass(project)
    assert wu_row(db, wuid)["file_delete_state"] == 0
    assert results_of(db, wuid)[0]["file_delete_state"] == 0


def test_delete_delay_defers_file_deletion(proj):
    project, db = proj
    set_options(project, delete_delay_hours=2)
    received = int(time.time()) - 600
    wuid = _assimilated(db, "wu_dd", error_mask=2)
    make_result(db, wuid, "wu_dd_0", server_state=OVER, outcome=CLIENT_ERROR,
                received_time=received)
    log = one_pass(project)
    wu = wu_row(db, wuid)
    assert wu["file_delete_state"] == 0
    assert wu["transition_time"] == received + 7200
    assert results_of(db, wuid)[0]["file_delete_state"] == 0
    # two hours later
    db.execute("UPDATE result SET received_time = received_time - 7200")
    db.execute("UPDATE workunit SET transition_time = 0")
    one_pass(project)
    assert wu_row(db, wuid)["file_delete_state"] == 1
    assert results_of(db, wuid)[0]["file_delete_state"] == 1
    assert log


def test_errored_workunit_files_after_assimilation(proj):
    project, db = proj
    wuid = make_wu(db, "wu_ea", error_mask=2, assimilate_state=2)
    make_result(db, wuid, "wu_ea_0", server_state=OVER, outcome=CLIENT_ERROR)
    make_result(db, wuid, "wu_ea_1", server_state=OVER, outcome=DIDNT_NEED)
    one_pass(project)
    assert wu_row(db, wuid)["file_delete_state"] == 1
    assert [r["file_delete_state"] for r in results_of(db, wuid)] == [1, 0]


# -- passes, sharding, crashes ---------------------------------------------------------

def test_pass_is_idempotent(proj):
    project, db = proj
    ids = [make_wu(db, "wu_i%d" % k, target_nresults=2) for k in range(5)]
    one_pass(project)
    first = db.query("SELECT id, name, xml_doc_in FROM result ORDER BY id")
    one_pass(project)
    db.execute("UPDATE workunit SET transition_time = 0")       # all due again
    one_pass(project)
    assert db.query("SELECT id, name, xml_doc_in FROM result ORDER BY id") == first
    assert len(first) == 10 and len(ids) == 5


def test_mod_splits_workunits_between_two_instances(proj):
    project, db = proj
    ids = [make_wu(db, "wu_m%d" % k) for k in range(10)]
    one_pass(project, "--mod", "2", "0")
    have = {r["workunitid"] for r in db.query("SELECT workunitid FROM result")}
    assert have == {i for i in ids if i % 2 == 0}
    assert all(wu_row(db, i)["transition_time"] == 0 for i in ids if i % 2 == 1)
    one_pass(project, "--mod", "2", "1")
    assert db.query_value("SELECT COUNT(*) FROM result") == 10
    assert {r["workunitid"] for r in db.query("SELECT workunitid FROM result")} == set(ids)


def test_wu_id_transitions_one_workunit_even_if_not_due(proj):
    project, db = proj
    future = int(time.time()) + 99999
    a = make_wu(db, "wu_one", transition_time=future)
    b = make_wu(db, "wu_other")
    one_pass(project, "--wu_id", str(a))
    assert len(results_of(db, a)) == 1 and results_of(db, b) == []


def test_one_pass_ignores_stop_daemons(proj):
    project, db = proj
    (project / "stop_daemons").write_text("<stop/>\n")
    wuid = make_wu(db, "wu_stop")
    one_pass(project)
    assert len(results_of(db, wuid)) == 1


def test_failure_inside_a_transaction_leaves_nothing_half_done(proj, monkeypatch):
    project, db = proj
    ids = [make_wu(db, "wu_f%d" % k, target_nresults=2) for k in range(4)]
    real = tr.Transitioner._wu_set_clause
    calls = []

    def failing(self, plan):
        calls.append(plan.wu["id"])
        if len(calls) == 3:
            raise RuntimeError("simulated crash")
        return real(self, plan)
    monkeypatch.setattr(tr.Transitioner, "_wu_set_clause", failing)
    with pytest.raises(RuntimeError):
        run_daemon_once(Transitioner, project)
    assert db.query_value("SELECT COUNT(*) FROM result") == 0
    assert all(wu_row(db, i)["transition_time"] == 0 for i in ids)
    monkeypatch.setattr(tr.Transitioner, "_wu_set_clause", real)
    one_pass(project)
    assert sorted(names(db.query("SELECT name FROM result"))) == sorted(
        "wu_f%d_%d" % (k, j) for k in range(4) for j in range(2))


def test_killed_transitioner_then_next_pass_duplicates_nothing(proj):
    project, db = proj
    n = 6000
    lines = "".join("--wu_name kill_%d\n" % k for k in range(n))
    in_t = project / "templates" / "noinput_in"
    in_t.write_text("<input_template><workunit><target_nresults>2</target_nresults>"
                    "<min_quorum>2</min_quorum></workunit></input_template>\n")
    subprocess.run(bin_cmd("create_work", "--appname", "example_app", "--stdin",
                           "--wu_template", "templates/noinput_in"),
                   input=lines, text=True, cwd=project, check=True, env=bin_env(project))
    db.execute("UPDATE workunit SET transition_time = 0")   # due now, even within this second
    proc = subprocess.Popen(bin_cmd("transitioner", "--one_pass", "-d", "1"), cwd=project,
                            env=bin_env(project))
    try:
        wait_for(lambda: db.query_value("SELECT COUNT(*) FROM result") > 1000, timeout=60,
                 step=0.01)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait()
    done = db.query_value("SELECT COUNT(*) FROM result")
    assert 1000 < done < 2 * n, "the kill came too late to test anything"
    # every workunit has all of its results or none
    partial = db.query_value("SELECT COUNT(*) FROM (SELECT workunitid, COUNT(*) c FROM result "
                             "GROUP BY workunitid HAVING c <> 2) x")
    assert partial == 0
    one_pass(project)
    assert db.query_value("SELECT COUNT(*) FROM result") == 2 * n
    assert db.query_value("SELECT COUNT(DISTINCT workunitid) FROM result") == n
    bad = db.query_value("SELECT COUNT(*) FROM result r JOIN workunit w ON r.workunitid = w.id "
                         "WHERE r.name NOT IN (CONCAT(w.name, '_0'), CONCAT(w.name, '_1'))")
    assert bad == 0


def test_result_changed_between_read_and_write_is_not_clobbered(proj, monkeypatch):
    project, db = proj
    now = int(time.time())
    wuid = make_wu(db, "wu_race")
    rid = make_result(db, wuid, "wu_race_0", server_state=IN_PROGRESS, report_deadline=now - 5)
    other = make_wu(db, "wu_calm")
    real = tr.Transitioner.enumerate

    def enumerate_then_report(self, when):
        batch = real(self, when)
        if batch:   # the client reports just after the transitioner read the row
            self.db.execute("UPDATE result SET server_state = 5, outcome = 1, "
                            "received_time = %s WHERE id = %s", (now, rid))
        return batch
    monkeypatch.setattr(tr.Transitioner, "enumerate", enumerate_then_report)
    status, log = run_daemon_once(Transitioner, project, "--wu_id", str(wuid))
    assert status == 0
    r = results_of(db, wuid)
    assert len(r) == 1 and (r[0]["server_state"], r[0]["outcome"]) == (OVER, SUCCESS)
    assert wu_row(db, wuid)["transition_time"] <= int(time.time())   # due again
    assert "will transition again" in log
    monkeypatch.setattr(tr.Transitioner, "enumerate", real)
    time.sleep(1.1)
    one_pass(project)
    assert wu_row(db, wuid)["need_validate"] == 1 and len(results_of(db, wuid)) == 1
    assert len(results_of(db, other)) == 1


def test_report_meanwhile_is_not_lost_when_it_wrote_the_same_transition_time(proj, monkeypatch):
    """Bug found by the fault test: a result was reported while the transitioner
    held the workunit as read, and the report set transition_time to the very
    value the transitioner had read (the scheduler writes its request's start
    time: a stalled request, or two reports in one second).  The compare-and-set
    on transition_time then let the stale plan through -- transition_time =
    the result's deadline, a day ahead -- and the reported result waited that
    long to be validated.  A workunit whose results changed since they were
    read is transitioned again."""
    project, db = proj
    now = int(time.time())
    stamp = now - 3
    wuid = make_wu(db, "wu_same_tt", transition_time=stamp)
    rid = make_result(db, wuid, "wu_same_tt_0", server_state=IN_PROGRESS,
                      sent_time=now - 100, report_deadline=now + 86400)
    real = tr.Transitioner.enumerate

    def enumerate_then_report(self, when):
        batch = real(self, when)
        if batch:   # reported, with the transition_time the transitioner just read
            self.db.execute("UPDATE result SET server_state = 5, outcome = 1, "
                            "received_time = %s WHERE id = %s", (now, rid))
            self.db.execute("UPDATE workunit SET transition_time = %s WHERE id = %s",
                            (stamp, wuid))
        return batch
    monkeypatch.setattr(tr.Transitioner, "enumerate", enumerate_then_report)
    log = one_pass(project)
    assert wu_row(db, wuid)["transition_time"] <= int(time.time()), log   # due again
    assert "will transition again" in log
    monkeypatch.setattr(tr.Transitioner, "enumerate", real)
    time.sleep(1.1)
    one_pass(project)
    assert wu_row(db, wuid)["need_validate"] == 1


def test_assimilation_in_the_same_second_is_not_overwritten(proj, monkeypatch):
    """Bug found by the 10,000-job soak: the assimilator recorded a job
    (assimilate_state DONE, transition_time = now) in the second in which the
    transitioner had read it READY with transition_time = now; the
    compare-and-set on transition_time saw the same value and wrote "never"
    (INT_MAX), so the job's files were never deleted.  A workunit whose own
    row changed since it was read is transitioned again."""
    project, db = proj
    now = int(time.time())
    wuid = make_wu(db, "wu_same_second", target_nresults=2, min_quorum=2,
                   assimilate_state=1, transition_time=now)
    canon = make_result(db, wuid, "wu_same_second_0", server_state=OVER, outcome=SUCCESS,
                        validate_state=V_VALID)
    make_result(db, wuid, "wu_same_second_1", server_state=OVER, outcome=SUCCESS,
                validate_state=V_VALID)
    db.execute("UPDATE workunit SET canonical_resultid = %s WHERE id = %s", (canon, wuid))
    real = tr.Transitioner.enumerate

    def enumerate_then_assimilate(self, when):
        batch = real(self, when)
        if batch:   # the assimilator records it, in the very second read
            self.db.execute("UPDATE workunit SET assimilate_state = 2, transition_time = %s "
                            "WHERE id = %s", (now, wuid))
        return batch
    monkeypatch.setattr(tr.Transitioner, "enumerate", enumerate_then_assimilate)
    log = one_pass(project, "--wu_id", str(wuid))
    wu = wu_row(db, wuid)
    assert wu["assimilate_state"] == 2
    assert wu["transition_time"] <= int(time.time()), log       # due again, not "never"
    assert "will transition again" in log
    monkeypatch.setattr(tr.Transitioner, "enumerate", real)
    time.sleep(1.1)
    one_pass(project)
    assert wu_row(db, wuid)["file_delete_state"] == 1          # its files go


def test_transition_time_changed_meanwhile_makes_it_due_now(proj, monkeypatch):
    project, db = proj
    wuid = make_wu(db, "wu_cas")
    real = tr.Transitioner.enumerate

    def enumerate_then_touch(self, when):
        batch = real(self, when)
        if batch:
            self.db.execute("UPDATE workunit SET transition_time = 5 WHERE id = %s", (wuid,))
        return batch
    monkeypatch.setattr(tr.Transitioner, "enumerate", enumerate_then_touch)
    before = int(time.time())
    one_pass(project, "--wu_id", str(wuid))
    tt = wu_row(db, wuid)["transition_time"]
    assert before <= tt <= int(time.time())
    assert len(results_of(db, wuid)) == 1


def test_result_suffix_is_c_atoi():
    assert tr.result_suffix("a_b_12") == 12
    assert tr.result_suffix("nounderscore") == 0
    assert tr.result_suffix("x_12abc") == 12
    assert tr.result_suffix("x_abc") == 0
    assert tr.result_suffix("x_-3") == -3


def test_safety_net_is_ten_days_for_short_delay_bounds(proj):
    project, db = proj
    wuid = make_wu(db, "wu_net", delay_bound=3600)
    before = int(time.time())
    one_pass(project)
    assert before + TEN_DAYS <= wu_row(db, wuid)["transition_time"] <= time.time() + TEN_DAYS


def test_timeout_turnaround_sample_averages_with_earlier_ones(proj):
    project, db = proj
    now = int(time.time())
    wuid = make_wu(db, "wu_avg", delay_bound=5000)
    make_result(db, wuid, "wu_avg_0", server_state=IN_PROGRESS, hostid=2, app_version_id=8,
                report_deadline=now - 1)
    db.execute("INSERT INTO host_app_version (host_id, app_version_id, turnaround_n, "
               "turnaround_avg, max_jobs_per_day) VALUES (2, 8, 1, 1000, 50)")
    one_pass(project)
    hav = db.query_one("SELECT * FROM host_app_version WHERE host_id = 2")
    # AVERAGE_VAR: n 2, avg 1000 + 4000/2, q = 4000 * (5000 - 3000), var = q / n
    assert (hav["turnaround_n"], hav["turnaround_avg"]) == (2, 3000)
    assert (hav["turnaround_q"], hav["turnaround_var"]) == (8e6, 4e6)
    assert hav["max_jobs_per_day"] == 9          # capped at the quota (10), minus one
