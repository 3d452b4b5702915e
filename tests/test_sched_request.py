"""parse_request: the stock client's <scheduler_request>, read as BOINC reads it."""

import glob
import os

import pytest

from boincpy.sched.request import (
    ClientAppVersion, GlobalPrefs, RequestError, SchedulerRequest, c_strtol, parse_global_prefs,
    parse_request)
from boincpy.xml import xml_unescape
from tests.sched_env import CLIENT, REFERENCE, fixture_text

ALL_REQUESTS = sorted(
    p for p in glob.glob(os.path.join(CLIENT, "*", "*.body.xml"))
    + glob.glob(os.path.join(REFERENCE, "sched", "*.request.xml"))
    if b"<scheduler_request>" in open(p, "rb").read())

MINIMAL = b"""<scheduler_request>
    <authenticator>abc</authenticator>
    <hostid>7</hostid>
    %s
</scheduler_request>
"""


def req_with(inner):
    return parse_request(MINIMAL.replace(b"%s", inner))


@pytest.mark.parametrize("path", ALL_REQUESTS, ids=lambda p: "/".join(p.split("/")[-2:]))
def test_every_captured_request_parses(path):
    req = parse_request(fixture_text(path))
    assert req.authenticator in ("abcdef0123456789", "80b1ceedb8ec2b4333cf9040fb85d01a")
    assert req.core_client_version == 72005
    assert req.platform_name == "x86_64-pc-linux-gnu"
    assert req.host.p_ncpus == 2 and req.host.os_name == "Linux Debian"
    assert req.host.p_fpops == 1e9
    assert req.host.host_cpid and len(req.host.host_cpid) == 32
    assert req.unexpected == []          # everything a 7.20 client sends is known
    assert req.cpu().count == 2


def test_identity_and_work_request():
    req = parse_request(fixture_text(CLIENT, "cycle", "05_sched_workfetch_task_in_progress.body.xml"))
    assert (req.hostid, req.rpc_seqno) == (1, 0)
    assert req.work_req_seconds == pytest.approx(1727.420217)
    assert req.cpu().req_secs == pytest.approx(1727.420217)
    assert req.cpu().req_instances == 1.0
    assert req.client_cap_plan_class is True
    assert req.allow_multiple_clients is False
    assert req.code_sign_key.startswith("1024\n96e00cfc")
    assert req.code_sign_key.endswith("0000000000010001\n.")          # stripped
    assert req.host.domain_name == "vm" and req.host.ip_addr == "127.0.0.1"
    assert req.host.os_version == "Debian GNU/Linux 12 (bookworm) [6.18.44-fc-v769|libc 2.36]"
    assert req.host.d_boinc_used_total == 184320.0
    assert req.host.d_project_share == pytest.approx(92311136501.76001)
    assert req.host.n_bwup == pytest.approx(720132.743363)
    assert req.host.connected_frac == -1.0
    assert req.app_versions == [ClientAppVersion(
        app_name="testapp", version_num=100, platform="x86_64-pc-linux-gnu",
        avg_ncpus=1.0, flops=1e9, api_version="7.20.5")]
    assert req.have_other_results_list
    assert [(o.name, o.app_version) for o in req.other_results] == [("wu1_0", 0)]
    assert req.working_global_prefs_xml.startswith("<global_preferences>")
    assert req.global_prefs.mod_time == 0.0
    assert req.global_prefs.work_buf_min_days == pytest.approx(0.01)


def test_reported_result_is_kept_raw_as_boinc_stores_it():
    req = parse_request(fixture_text(REFERENCE, "sched", "03_report2_and_fetch_job_sent.request.xml"))
    assert [r.name for r in req.results] == ["uc_init_1_0", "uc_init_2_0"]
    r = req.results[0]
    assert (r.state, r.exit_status, r.app_version_num) == (5, 0, 100)
    assert r.final_cpu_time == pytest.approx(29.87437)
    assert r.final_elapsed_time == pytest.approx(31.084677)
    assert r.final_peak_working_set_size == 2666496
    assert r.final_peak_disk_usage == 14513
    # copy_element_contents: everything between the tags, CDATA markers included
    assert r.stderr_out == (
        "\n<core_client_version>7.20.5</core_client_version>\n<![CDATA[\n<stderr_txt>\n"
        "2026-11-22 08:05:35 (2733): app started; CPU time 30.000000, flags:\n"
        "2026-11-22 08:06:05 (2733): called boinc_finish(0)\n\n</stderr_txt>\n]]>\n")
    # copy_element: start tag + stripped contents + end tag
    assert r.file_info_xml == (
        "<file_info><name>uc_init_1_0_r1835291539_0</name>\n"
        "    <nbytes>75.000000</nbytes>\n"
        "    <max_nbytes>5000000.000000</max_nbytes>\n"
        "    <md5_cksum>8dc388b468905f99ad234e406283a250</md5_cksum>\n"
        "    <upload_url>http://127.0.0.1:8800/refproj_cgi/file_upload_handler</upload_url>"
        "</file_info>")


def test_failed_task_reports():
    req = parse_request(fixture_text(CLIENT, "errors", "report_missing_signature.body.xml"))
    r = req.results[0]
    assert (r.name, r.state, r.exit_status) == ("wu1_0", 1, -186)
    assert "<error_code>-123 (no signature)</error_code>" in r.stderr_out
    assert r.file_info_xml == ""
    req = parse_request(fixture_text(CLIENT, "errors", "report_too_many_exit0.body.xml"))
    assert req.results[0].exit_status == -226
    assert req.results[0].file_info_xml.startswith("<file_info><name>")


def test_client_dialect_text():
    # unescaped & in names, BOINC entities, per-byte numeric references (UTF-8)
    req = req_with(b"<host_info><domain_name>a&b</domain_name>"
                   b"<p_model>x &lt;y&gt; &amp; &#195;&#169;</p_model>"
                   b"<os_name><![CDATA[raw <b> &amp;]]></os_name></host_info>")
    assert req.host.domain_name == "a&b"
    assert req.host.p_model == "x <y> & \u00e9"
    assert req.host.os_name == "raw <b> &amp;"      # CDATA is not unescaped
    assert xml_unescape(b"&#x41;&#300;&#;") == b"&#x41;&#300;&#;"


def test_numbers_and_booleans_as_boinc_reads_them():
    req = req_with(b"<rpc_seqno>010</rpc_seqno><core_client_major_version>0x7"
                   b"</core_client_major_version><core_client_release></core_client_release>"
                   b"<dont_send_work/><sandbox>true</sandbox><client_cap_plan_class>1"
                   b"</client_cap_plan_class><work_req_seconds>1e3</work_req_seconds>"
                   b"<cpu_req_secs>nan</cpu_req_secs>")
    assert req.rpc_seqno == 8                        # leading 0: octal
    assert req.core_client_major_version == 7
    assert req.core_client_release == 0
    assert req.dont_send_work is True                # <x/> is true
    assert req.sandbox is False                      # "true" is not a BOINC boolean
    assert req.client_cap_plan_class is True
    assert req.work_req_seconds == 1000.0
    assert req.cpu().req_secs == 0.0                 # non-finite -> 0
    assert c_strtol("089") is None and c_strtol("-12") == -12


def test_unknown_elements_comments_and_attributes_are_skipped():
    req = req_with(b"<!-- a comment with <tags> -->\n<future_thing a=\"1\"><hostid>99</hostid>"
                   b"<deep><x>1</x></deep></future_thing>\n"
                   b"<platform_name lang=\"en\">x86_64-pc-linux-gnu</platform_name>")
    assert req.hostid == 7                           # the nested <hostid> was skipped
    assert req.platform_name == "x86_64-pc-linux-gnu"
    assert req.unexpected == [("future_thing", 5)]


def test_bad_value_is_ignored_not_fatal():
    req = req_with(b"<rpc_seqno>12abc</rpc_seqno><p_fpops>fast</p_fpops>")
    assert req.rpc_seqno == 0 and req.hostid == 7


def test_duplicates_transfers_and_max_results_accepted():
    body = MINIMAL.replace(b"%s", b"".join(
        b"<result><name>%s</name><state>5</state></result>" % n
        for n in (b"a_0", b"a_0", b"b_0", b"x_upload_1", b"c_0")))
    req = parse_request(body)
    assert [r.name for r in req.results] == ["a_0", "b_0", "c_0"]
    assert [r.name for r in req.file_xfer_results] == ["x_upload_1"]
    req = parse_request(body, max_results_accepted=2)
    assert [r.name for r in req.results] == ["a_0", "b_0"]
    assert req.results_truncated


def test_thousands_of_results_keep_their_lines_and_lose_only_repeats():
    """A client reporting 20,000 results (a hostile one, or one back after
    months): each keeps its line, a name reported again is dropped (the
    check is a set, and each line is counted from the last one: both made
    such a request take seconds when each scanned from the start), and an
    element left open early is still named at its own line."""
    results = b"".join(b"<result>\n<name>r_%d</name>\n<state>5</state>\n</result>\n" % i
                       for i in range(20000))
    body = (b"<scheduler_request>\n<authenticator>k</authenticator>\n" + results
            + b"<result>\n<name>r_7</name>\n</result>\n</scheduler_request>\n")
    req = parse_request(body)
    assert len(req.results) == 20000 and req.results[7].name == "r_7"
    assert [r.line for r in req.results[:2]] == [3, 7]
    assert req.results[-1].line == 3 + 4 * 19999
    # an element opened on line 2 and never closed, after all of them
    body = b"<scheduler_request>\n<host_info>\n" + results + b"\n"
    with pytest.raises(RequestError) as info:
        parse_request(body)
    assert "opened at line 2" in str(info.value)


def test_gpu_resources_and_alt_platforms():
    req = req_with(b"<alt_platform><name>i686-pc-linux-gnu</name></alt_platform>"
                   b"<platform_name>x86_64-pc-linux-gnu</platform_name>"
                   b"<coprocs><coproc_cuda><count>2</count><name>GTX</name>"
                   b"<peak_flops>5e12</peak_flops><req_secs>100</req_secs>"
                   b"<req_instances>1</req_instances><coproc_opencl><name>x</name>"
                   b"</coproc_opencl></coproc_cuda></coprocs>")
    assert req.platforms == ["x86_64-pc-linux-gnu", "i686-pc-linux-gnu"]
    gpu = req.resources[1]
    assert (gpu.proc_type, gpu.count, gpu.name, gpu.req_secs) == (1, 2, "GTX", 100.0)
    assert gpu.estimated_delay == -1.0               # absent: BOINC uses the CPU's
    assert gpu.xml.startswith("<coproc_cuda>") and gpu.xml.endswith("</coproc_cuda>")


def test_master_prefs_and_trickles():
    req = req_with(b"<global_preferences>\n<mod_time>5</mod_time>\n"
                   b"<venue name=\"home\"><max_ncpus_pct>50</max_ncpus_pct></venue>\n"
                   b"<max_ncpus_pct>100</max_ncpus_pct>\n</global_preferences>\n"
                   b"<global_prefs_source_email_hash>ff</global_prefs_source_email_hash>\n"
                   b"<msg_from_host>\n<result_name>r_0</result_name>\n<time>12</time>\n"
                   b"<variety>v1</variety>\nbody text\n</msg_from_host>")
    assert req.global_prefs_xml.startswith("<global_preferences>\n<mod_time>5")
    assert req.global_prefs_xml.endswith("\n</global_preferences>\n")
    assert req.global_prefs_source_email_hash == "ff"
    assert parse_global_prefs(req.global_prefs_xml, "home").max_ncpus_pct == 50
    assert parse_global_prefs(req.global_prefs_xml, "").max_ncpus_pct == 100
    m = req.msgs_from_host[0]
    assert (m.result_name, m.time, m.variety) == ("r_0", 12, "v1")
    assert m.xml == "\n<result_name>r_0</result_name>\n<time>12</time>\nbody text\n"


def test_authenticator_is_cut_at_a_quote():
    assert req_with(b"<authenticator>ab'c</authenticator>").authenticator == "ab"


@pytest.mark.parametrize("body,line,words", [
    (b"", 1, "no start tag"),
    (b"<?xml version='1.0'?>\n<scheduler_reply></scheduler_reply>", 2, "no start tag"),
    (b"<scheduler_request>\n<hostid>1</hostid>\n<host_info>\n<p_ncpus>2</p_ncpus>\n", 3,
     "no end tag for <host_info>"),
    (b"<scheduler_request>\n<hostid>1</hostid>\n", 3, "no end tag </scheduler_request>"),
    (b"<scheduler_request>\n\n<working_global_preferences>\n<x>1</x>\n", 3,
     "error copying working global prefs"),
    (b"<scheduler_request>\n<result>\n<name>a</name>\n<stderr_out>\nboom", 4,
     "no </stderr_out>"),
])
def test_malformed_requests_name_the_line(body, line, words):
    with pytest.raises(RequestError) as err:
        parse_request(body)
    assert err.value.line == line
    assert words in str(err.value)


def test_records_behave_like_dataclasses():
    a = SchedulerRequest(authenticator="x", hostid=3)
    b = SchedulerRequest(authenticator="x", hostid=3)
    assert a == b and a.results is not b.results and a.resources is not b.resources
    assert a.cpu().count == 0 and len(a.resources) == 1
    assert GlobalPrefs(1.0).mod_time == 1.0
    with pytest.raises(TypeError):
        SchedulerRequest(no_such_field=1)
    assert "hostid=3" in repr(a)


def test_state_values_match_boincpy_states():
    """reports.py / hosts.py use literal enum values (enum costs a CGI ~4 ms)."""
    from boincpy import states
    from boincpy.sched import hosts, reports
    assert reports.RESULT_UNSENT == states.ServerState.UNSENT
    assert reports.RESULT_IN_PROGRESS == hosts.RESULT_IN_PROGRESS == states.ServerState.IN_PROGRESS
    assert reports.RESULT_OVER == hosts.RESULT_OVER == states.ServerState.OVER
    for name in ("SUCCESS", "COULDNT_SEND", "CLIENT_ERROR", "NO_REPLY", "DIDNT_NEED",
                 "VALIDATE_ERROR", "CLIENT_DETACHED", "INIT"):
        assert getattr(reports, "OUTCOME_" + name) == getattr(states.Outcome, name)
    assert hosts.OUTCOME_CLIENT_DETACHED == states.Outcome.CLIENT_DETACHED
    assert reports.VALIDATE_INVALID == states.ValidateState.INVALID
    assert reports.CLIENT_FILES_UPLOADED == states.ClientState.FILES_UPLOADED
    assert reports.WU_ERROR_CANCELLED == states.WuError.CANCELLED
    assert reports.ASSIMILATE_DONE == states.AssimilateState.DONE


def test_db_write_values_match_boincpy_states():
    """boincpy.db.result / workunit use literal enum values too (the scheduler loads them)."""
    from boincpy import states
    from boincpy.db import result, workunit
    for name in ("INACTIVE", "UNSENT", "IN_PROGRESS", "OVER"):
        assert getattr(result, name) == getattr(states.ServerState, name)
    for name in ("SUCCESS", "COULDNT_SEND", "CLIENT_DETACHED"):
        assert getattr(result, "OUTCOME_" + name) == getattr(states.Outcome, name)
    for name in ("INIT", "INVALID", "INCONCLUSIVE"):
        assert getattr(result, "VALIDATE_" + name) == getattr(states.ValidateState, name)
    assert workunit.OUTCOME_DIDNT_NEED == states.Outcome.DIDNT_NEED
    assert workunit.FILE_DELETE_DONE == states.FileDeleteState.DONE
    assert workunit.FILE_DELETE_ERROR == states.FileDeleteState.ERROR
    assert workunit.ASSIMILATE_READY == states.AssimilateState.READY
    assert workunit.WU_ERROR_CANCELLED == states.WuError.CANCELLED


def test_request_path_imports_stay_light():
    """The modules a no-work request loads must not pull in dataclasses, re,
    enum or lxml (tens of ms per CGI start)."""
    import subprocess
    import sys
    code = ("import sys; import boincpy.sched.handler, boincpy.sched.request, boincpy.db.lite, "
            "boincpy.sched.hosts, boincpy.sched.reports, boincpy.sched.reply, "
            "boincpy.config, boincpy.db, boincpy.log, boincpy.db.result, boincpy.db.workunit, "
            "boincpy.db.host, boincpy.db.host_app_version, boincpy.db.user, boincpy.db.msg; "
            "print(' '.join(m for m in ('dataclasses', 're', 'enum', 'lxml', 'inspect', 'hashlib', "
            "'contextlib', 'decimal', 'datetime') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == ""


def test_quota_day_is_the_one_job_choice_uses():
    """hosts.is_new_day and choose's n_jobs_today rollover use one per-host offset."""
    import random
    from boincpy.sched.hosts import rpc_day_offset
    for hostid in (1, 7, 123456):
        assert rpc_day_offset(hostid) == random.Random(hostid).random() * 86400


# -- the leaf fast path (_fast_children) against the token path ---------------

def both_ways(data, **kw):
    """parse_request's outcome with and without the fast path: the request, or
    the error's message and line."""
    from boincpy.sched.request import _Parser
    out = []
    for fast in (True, False):
        try:
            out.append(_Parser(data, fast=fast, **kw).parse())
        except RequestError as err:
            out.append((str(err), err.line))
    return out


@pytest.mark.parametrize("path", ALL_REQUESTS, ids=lambda p: "/".join(p.split("/")[-2:]))
def test_fast_path_reads_captured_requests_as_tokens_do(path):
    data = fixture_text(path)
    fast, slow = both_ways(data)
    assert fast == slow
    fast, slow = both_ways(data, max_results_accepted=1)
    assert fast == slow


HEAD = MINIMAL.split(b"%s")[0]
FAST_PATH_EDGES = [MINIMAL.replace(b"%s", inner) for inner in (
    # what the fast path must hand back to the tokens, or read just as they do
    b"<host_info><p_model>a<!-- c -->b</p_model><p_ncpus>4</p_ncpus></host_info>",
    b"<host_info><p_model>x &lt;y&gt; &#195;&#169; a&b</p_model></host_info>",
    b"<host_info><p_model>  spaced \n </p_model><p_ncpus>\n 3 \n</p_ncpus></host_info>",
    b"<host_info><p_model>a > b</p_model><p_vendor>></p_vendor></host_info>",
    b"<host_info><os_name><![CDATA[raw <b> &amp;]]></os_name></host_info>",
    b"<host_info><p_ncpus a=\"1\">5</p_ncpus><p_fpops>2</p_fpops ><p_iops>3</p_iops\n></host_info>",
    b"<host_info><p_ncpus/><p_vm_extensions_disabled/><x/><y a='/'>1</y></host_info>",
    b"<host_info><p_ncpus>3<x>1</x></p_ncpus><p_fpops>7</p_fpops></host_info>",
    b"<host_info><p_ncpus></p_ncpus><p_fpops></p_fpops><p_vendor></p_vendor></host_info>",
    b"<host_info><unknown>1</unknown><deep><p_ncpus>9</p_ncpus></deep><u>a<!-- </u> -->"
    b"</u><p_ncpus>6</p_ncpus></host_info>",
    # children a container's on_child reads itself, shaped like leaves
    b"<host_info><opencl_cpu_prop>p</opencl_cpu_prop><p_ncpus>2</p_ncpus></host_info>",
    b"<result><name>r_1</name><file_info>f</file_info><stderr_out>e</stderr_out></result>",
    b"<app_versions><app_version><app_name>x</app_name><coproc>c</coproc></app_version>"
    b"</app_versions>",
    b"<host_info><p_ncpus>\xa07</p_ncpus><m_nbytes>1_0</m_nbytes><p_fpops>\xd9\xa1</p_fpops>"
    b"<timezone>-3600</timezone><p_calculated>1e999</p_calculated></host_info>",
    b"<time_stats><total_duration>1</total_duration><on_frac>0.5</on_frac>text"
    b"<!-- c --><active_frac>0.25</active_frac></time_stats >",
    b"<net_stats><bwup>1</bwup><bwdown>2</bwdown><avg_up>3</avg_up></net_stats>",
    b"<hostid>0x10</hostid><rpc_seqno>010</rpc_seqno><dont_send_work>1</dont_send_work>"
    b"<sandbox>true</sandbox><work_req_seconds>1e999</work_req_seconds>"
    b"<cpu_req_secs> 5 </cpu_req_secs><estimated_delay>1.5</estimated_delay>"
    b"<core_client_release>2147483648</core_client_release><rpc_seqno>08</rpc_seqno>",
    b"<project_name>x</project_name>\n<future>1</future>\n<host_venue>h</host_venue>"
    b"<?xml version='1.0'?><a b='c'>1</a>",
    b"<result><name>r_0</name><state>5</state><stderr_out>e</stderr_out>"
    b"<exit_status>-1</exit_status><extra>1</extra></result>",
    b"<other_results><other_result><name>a</name><plan_class>mt</plan_class>"
    b"<app_version>1</app_version></other_result><other_result><name>b</name>"
    b"<plan_class/></other_result></other_results>",
    b"<app_versions><app_version><app_name>x</app_name><coproc><type>NVIDIA</type>"
    b"<count>1</count></coproc><flops>-1</flops></app_version></app_versions>",
    b"<in_progress_results><ip_result><name>a</name><report_deadline>5</report_deadline>"
    b"</ip_result><ip_result></ip_result></in_progress_results>",
)] + [HEAD + inner for inner in (
    # cut short: the same error and line
    b"<host_info><p_ncpus>2</p_ncpus>",
    b"<host_info><p_ncpus>2</p_nc",
    b"<time_stats>\n<on_frac>1",
    b"<time_stats>\n<on_frac>1</on_frac>\n<total_duration>",
    b"<platform_name>x</platform_name>\n<hostid>",
    b"<result>\n<name>a</name>\n<state>5",
)]


@pytest.mark.parametrize("data", FAST_PATH_EDGES)
def test_fast_path_edge_cases_read_as_tokens_do(data):
    fast, slow = both_ways(data)
    assert fast == slow


@pytest.mark.parametrize("text", ["0", "00", "08", "010", "999999999", "2147483647",
                                  "2147483648", "1" * 41, "-5", "+5", "0x1f", "\u0661", ""])
def test_integer_fast_path_is_strtol(text):
    from boincpy.sched.request import _as_int
    assert _as_int(text.encode()) == (c_strtol(text) if text else 0)


@pytest.mark.parametrize("text", ["0.010000", "5.", ".5", ".", "1e3", " 7", "7 days", "9" * 320,
                                  "9" * 299, "\u0661", "1.2.3", "", "-1.5"])
def test_prefs_number_fast_path_is_atof(text):
    from boincpy.cnum import atof
    from boincpy.sched.request import _find_double
    assert _find_double("<x>%s</x>" % text, "x") == atof(text)


@pytest.mark.parametrize("value", [0.0, -0.0, 1.5, -1e308, 1e308, 5e-324, 7, -2 ** 80, 10 ** 400,
                                   float("inf"), float("-inf"), float("nan"), 1e308 * 10])
def test_is_finite_is_maths(value):
    """cnum.is_finite (the request path's, without importing math) answers as
    math.isfinite does, and takes ints too large for a double as finite."""
    import math
    from boincpy.cnum import is_finite
    try:
        expected = math.isfinite(value)
    except OverflowError:           # an int beyond a double: finite
        expected = True
    assert is_finite(value) is expected


@pytest.mark.parametrize("text,value", [("1e400", None), ("-1e400", None), ("inf", None),
                                        ("nan", None), ("1.5", 1.5), ("1e308", 1e308)])
def test_numbers_beyond_a_double_are_refused(text, value):
    from boincpy.cnum import strtod
    assert strtod(text) == value
