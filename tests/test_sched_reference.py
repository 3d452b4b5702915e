"""Replies compared byte for byte with the C++ scheduler's, and the rows it left.

The reference server's captures (fixtures/reference-server/sched) are replayed
against a project set up as that server's was (tests/sched_env.ref_env):
same project name and URLs, code-signing key, gui_urls.xml, app version,
user 1 and host 1.  Only the notices-feed key differs (it hashes the user's
password hash, which the capture doesn't reveal).
"""

import io
import time

import pytest

from boincpy.log import SchedLog
from boincpy.sched import reply as replies
from boincpy.sched.context import SchedContext, SentJob
from boincpy.sched.handler import handle_request
from boincpy.sched.hosts import md5_hex, rss_auth
from boincpy.sched.request import parse_request
from tests.sched_env import (REFERENCE, add_reference_job, fixture_text,  # noqa: F401
                             reference_reply, ref_env)

ENV = {"REMOTE_ADDR": "127.0.0.1", "REQUEST_METHOD": "POST"}


def run(env, name):
    log = SchedLog(io.StringIO(), 3)
    body = fixture_text(REFERENCE, "sched", name)
    out = handle_request(env.cfg, body, dict(ENV), job_array=env.job_array(), log=log)
    return out.decode(), log.stream.getvalue()


def expected(env, name):
    user = env.row("SELECT * FROM user WHERE id = 1")
    return reference_reply(name, rss_auth(user))


def set_credit(env, user_total, user_avg, host_total, host_avg):
    env.execute("UPDATE user SET total_credit = %s, expavg_credit = %s WHERE id = 1",
                (user_total, user_avg))
    env.execute("UPDATE host SET total_credit = %s, expavg_credit = %s WHERE id = 1",
                (host_total, host_avg))


def test_work_fetch_with_no_work_is_byte_identical(ref_env):
    env = ref_env
    set_credit(env, 0.628620, 0.062245, 0.628620, 0.062246)
    for n in (3, 4, 5):     # the tasks its <other_results> lists are in progress here
        add_reference_job(env, n, "9", "aaf923f90ad6fa294d6dc851bb0e7510",
                          "uc_init_%d_0_r1_0" % n, state=4, hostid=1, userid=1,
                          sent_time=1795334754, report_deadline=1795939554)
    before = env.snapshot(("result", "workunit", "user", "host_app_version"))
    out, log = run(env, "04_work_fetch_no_work_available.request.xml")
    assert out == expected(env, "04_work_fetch_no_work_available.reply.xml")
    assert "[HOST#1] No tasks sent: Project has no tasks available" in log
    # a no-work RPC changes the host row only
    assert env.snapshot(("result", "workunit", "user", "host_app_version")) == before
    host = env.row("SELECT * FROM host WHERE id = 1")
    assert host["rpc_seqno"] == 4
    assert abs(host["rpc_time"] - time.time()) < 5
    assert host["host_cpid"] == md5_hex("afbb1cfa612e18dad38f8dbcb57f1971refuser@example.com")
    assert host["p_ncpus"] == 2 and host["os_name"] == "Linux Debian"
    assert host["d_boinc_max"] == pytest.approx(92519444992.0, rel=0.01)
    assert host["external_ip_addr"] == "127.0.0.1"
    assert host["misc"] == '{\n    "client_version": "7.20.5"\n}'


def _reported_jobs(env):
    add_reference_job(env, 3, "9", "x" * 32, "uc_init_3_0_r2044626421_0", state=4, hostid=1,
                      userid=1, sent_time=1795334754, report_deadline=1795939554)
    for n in (4, 5):
        add_reference_job(env, n, "9", "x" * 32, "uc_init_%d_0_r1_0" % n, state=4, hostid=1,
                          userid=1, sent_time=1795334766, report_deadline=1795939566)


def test_report_reply_and_rows_match_reference(ref_env):
    env = ref_env
    set_credit(env, 0.628620, 0.062245, 0.628620, 0.062246)
    _reported_jobs(env)
    # the workunit waits for its result's deadline: the reference run's, which
    # was ahead of it then and which the clock has passed since (2026-11-29
    # 07:25 UTC); ahead of now, as it was, so the report is what brings it on
    env.execute("UPDATE workunit SET transition_time = %s WHERE id = 3",
                (int(time.time()) + 7 * 86400,))
    env.execute("UPDATE host SET rpc_seqno = 4")
    out, log = run(env, "05_report1_no_work_available.request.xml")
    assert out == expected(env, "05_report1_no_work_available.reply.xml")
    r = env.row("SELECT * FROM result WHERE name = 'uc_init_3_0'")
    # the columns db_state_after_cycle.tsv shows for this result (before validation)
    assert (r["server_state"], r["outcome"], r["client_state"], r["hostid"], r["userid"],
            r["validate_state"]) == (5, 1, 5, 1, 1, 0)
    assert r["cpu_time"] == pytest.approx(28.58965)
    assert r["elapsed_time"] == pytest.approx(31.070408)
    assert abs(r["received_time"] - time.time()) < 5
    assert r["app_version_num"] == 100 and r["exit_status"] == 0
    assert r["stderr_out"].startswith("\n<core_client_version>7.20.5</core_client_version>\n"
                                      "<![CDATA[\n<stderr_txt>")
    assert r["xml_doc_out"].startswith("<file_info><name>uc_init_3_0_r2044626421_0</name>")
    wu = env.row("SELECT * FROM workunit WHERE id = 3")
    assert abs(wu["transition_time"] - time.time()) < 5
    # the others were not touched
    assert env.row("SELECT server_state FROM result WHERE id = 4")["server_state"] == 4
    assert env.row("SELECT transition_time FROM workunit WHERE id = 4")["transition_time"] \
        == 1795939566


def test_last_report_matches_reference(ref_env):
    env = ref_env
    set_credit(env, 1.257108, 0.124475, 1.257108, 0.124475)
    add_reference_job(env, 5, "9", "x" * 32, "uc_init_5_0_r1_0", state=4, hostid=1, userid=1,
                      sent_time=1795334788, report_deadline=1795939588)
    env.execute("UPDATE host SET rpc_seqno = 6")
    out, _ = run(env, "06_report_last_result.request.xml")
    assert out == expected(env, "06_report_last_result.reply.xml")
    r = env.row("SELECT * FROM result WHERE id = 5")
    assert (r["server_state"], r["outcome"], r["client_state"]) == (5, 1, 5)
    assert r["cpu_time"] == pytest.approx(30.0621)
    assert r["elapsed_time"] == pytest.approx(32.070517)


def _job(env, n, bucket, md5, out, deadline):
    """A SentJob as job choice hands it over, from the rows the project holds."""
    add_reference_job(env, n, bucket, md5, out, state=4, hostid=1, userid=1,
                      sent_time=deadline - 604800, report_deadline=deadline)
    return SentJob(app=env.app(), workunit=env.row("SELECT * FROM workunit WHERE id = %s", (n,)),
                   result=env.row("SELECT * FROM result WHERE id = %s", (n,)),
                   app_version=env.app_version(), report_deadline=deadline,
                   avg_ncpus=1.0, flops=1e9)


def _ctx(env, request_name):
    from boincpy.sched.handler import read_code_sign_key
    user = env.row("SELECT * FROM user WHERE id = 1")
    host = env.row("SELECT * FROM host WHERE id = 1")
    return SchedContext(cfg=env.cfg, log=None, now=int(time.time()),
                        request=parse_request(fixture_text(REFERENCE, "sched", request_name)),
                        user=user, host=host, email_hash=md5_hex(user["email_addr"]),
                        platforms=[env.platform()], code_sign_key=read_code_sign_key(env.cfg))


def test_reply_with_a_job_is_byte_identical(ref_env):
    env = ref_env
    ctx = _ctx(env, "02_work_fetch_job_sent.request.xml")
    ctx.reply.nucleus_only = False
    ctx.reply.jobs.append(_job(env, 2, "6f", "cd3892bbecab6a838f4ff7b7b9a163ad",
                               "uc_init_2_0_r90516764_0", 1795939542))
    text = "Content-type: text/xml\n\n" + replies.write_reply(ctx)
    assert text == expected(env, "02_work_fetch_job_sent.reply.xml")


def test_first_reply_with_hostid_key_and_job_is_byte_identical(ref_env):
    env = ref_env
    ctx = _ctx(env, "01_attach_first_rpc.request.xml")
    ctx.reply.nucleus_only = False
    ctx.reply.hostid = 1
    ctx.reply.send_code_sign_key = True
    ctx.reply.jobs.append(_job(env, 1, "314", "ed3bc8e71d247133e1b956b921bbc579",
                               "uc_init_1_0_r1835291539_0", 1795939530))
    text = "Content-type: text/xml\n\n" + replies.write_reply(ctx)
    assert text == expected(env, "01_attach_first_rpc.reply.xml")


def test_reply_with_acks_and_a_job_is_byte_identical(ref_env):
    env = ref_env
    ctx = _ctx(env, "03_report2_and_fetch_job_sent.request.xml")
    ctx.reply.nucleus_only = False
    ctx.reply.result_acks[:] = ["uc_init_1_0", "uc_init_2_0"]
    ctx.reply.jobs.append(_job(env, 5, "9", "aaf923f90ad6fa294d6dc851bb0e7510",
                               "uc_init_5_0_r1624315879_0", 1795939588))
    text = "Content-type: text/xml\n\n" + replies.write_reply(ctx)
    assert text == expected(env, "03_report2_and_fetch_job_sent.reply.xml")
