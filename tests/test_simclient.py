"""The simulated client (boincpy.testing.simclient): its requests are the stock
client's byte for byte, its reply parsing is strict, and it runs jobs through
the real scheduler, file server and upload handler under Apache."""

import hashlib
import os
import re

import pytest

from boincpy.files import dir_hier_path
from boincpy.sched.request import parse_request
from boincpy.testing import simclient as sc
from tests.sched_env import CLIENT, REFERENCE, fixture_text


def _block(text, tag):
    m = re.search(r"<%s>\n(.*?)</%s>" % (tag, tag), text, re.S)
    return m.group(1) if m else ""


def _values(block, defaults):
    out = {}
    for tag, default in defaults:
        m = re.search(r"<%s>(.*?)</%s>" % (tag, tag), block, re.S)
        if m:
            out[tag] = type(default)(m.group(1)) if not isinstance(default, float) \
                else float(m.group(1))
    return out


def _scalar(text, tag, kind=str):
    m = re.search(r"<%s>(.*?)</%s>" % (tag, tag), text, re.S)
    return kind(m.group(1)) if m else kind()


def _reports(text):
    out = []
    for block in re.findall(r"\n<result>\n(.*?)\n</result>", text, re.S):
        files = [sc.UploadedFile(_scalar(f, "name"), _scalar(f, "nbytes", float),
                                 _scalar(f, "max_nbytes", float), _scalar(f, "md5_cksum"),
                                 _scalar(f, "upload_url"))
                 for f in re.findall(r"<file_info>(.*?)</file_info>", block, re.S)]
        stderr = re.search(r"<!\[CDATA\[\n(.*?)\]\]>", block, re.S)
        out.append(sc.ReportedResult(
            name=_scalar(block, "name"), final_cpu_time=_scalar(block, "final_cpu_time", float),
            final_elapsed_time=_scalar(block, "final_elapsed_time", float),
            exit_status=_scalar(block, "exit_status", int), state=_scalar(block, "state", int),
            platform=_scalar(block, "platform"), version_num=_scalar(block, "version_num", int),
            final_peak_working_set_size=_scalar(block, "final_peak_working_set_size", float),
            final_peak_swap_size=_scalar(block, "final_peak_swap_size", float),
            final_peak_disk_usage=_scalar(block, "final_peak_disk_usage", float),
            app_version_num=_scalar(block, "app_version_num", int),
            stderr_out=stderr.group(1) if stderr else "", files=files))
    return out


def request_like(text):
    """A SchedulerRequest holding the values of a captured request."""
    key = re.search(r"<code_sign_key>\n(.*?)</code_sign_key>", text, re.S)
    versions = [sc.ClientAppVersion(_scalar(b, "app_name"), _scalar(b, "version_num", int),
                                    _scalar(b, "platform"), _scalar(b, "plan_class"),
                                    _scalar(b, "avg_ncpus", float), _scalar(b, "flops", float),
                                    _scalar(b, "api_version"))
                for b in re.findall(r"<app_version>\n(.*?)</app_version>",
                                    _block(text, "app_versions"), re.S)]
    others = [(_scalar(b, "name"), _scalar(b, "app_version", int), _scalar(b, "plan_class"))
              for b in re.findall(r"<other_result>(.*?)</other_result>", text, re.S)]
    return sc.SchedulerRequest(
        authenticator=_scalar(text, "authenticator"), hostid=_scalar(text, "hostid", int),
        rpc_seqno=_scalar(text, "rpc_seqno", int),
        duration_correction_factor=_scalar(text, "duration_correction_factor", float),
        allow_multiple_clients=_scalar(text, "allow_multiple_clients", int),
        work_req_seconds=_scalar(text, "work_req_seconds", float),
        cpu_req_secs=_scalar(text, "cpu_req_secs", float),
        cpu_req_instances=_scalar(text, "cpu_req_instances", float),
        code_sign_key=key.group(1) if key else "",
        cross_project_id=_scalar(text, "cross_project_id"),
        prefs=_values(_block(text, "global_preferences"), sc.GLOBAL_PREFS),
        time_stats=_values(_block(text, "time_stats"), sc.TIME_STATS),
        net_stats=_values(_block(text, "net_stats"), sc.NET_STATS),
        host_info=_values(_block(text, "host_info"), sc.HOST_INFO),
        disk_usage=_values(_block(text, "disk_usage"), sc.DISK_USAGE),
        results=_reports(text), app_versions=versions, other_results=others)


@pytest.mark.parametrize("parts", [
    (CLIENT, "cycle", "02_sched_initial_hostid0.body.xml"),
    (CLIENT, "cycle", "05_sched_workfetch_task_in_progress.body.xml"),
    (CLIENT, "cycle", "08_sched_report_result.body.xml"),
    (CLIENT, "cycle", "09_sched_after_ack.body.xml"),
    (REFERENCE, "sched", "03_report2_and_fetch_job_sent.request.xml"),
    (REFERENCE, "sched", "06_report_last_result.request.xml"),
])
def test_requests_are_laid_out_as_the_stock_client_writes_them(parts):
    text = fixture_text(*parts).decode()
    built = request_like(text).xml()
    assert built == text
    req = parse_request(built.encode())
    assert req.unexpected == [] and req.platform_name == sc.PLATFORM


def test_report_of_a_compute_error_matches_the_stock_client():
    text = fixture_text(CLIENT, "errors", "report_exit_status_3.body.xml").decode()
    assert request_like(text).xml() == text
    r = parse_request(text.encode()).results[0]
    assert (r.exit_status, r.state) == (3, 3)


def test_upload_header_and_size_query_are_the_clients():
    body = fixture_text(CLIENT, "cycle", "07_upload_file_upload.body.xml")
    header, data = body.split(b"<data>\n", 1)
    name = re.search(rb"<name>(.*?)</name>", header).group(1).decode()
    built = sc.upload_header(name, "fake-not-checked\n.", 1000000, len(data),
                             hashlib.md5(data).hexdigest(), 0)
    assert built == header + b"<data>\n"
    assert sc.size_query(name) == fixture_text(CLIENT, "cycle", "06_upload_get_file_size.body.xml")
    assert sc.parse_data_server_reply(
        fixture_text(CLIENT, "cycle", "06_upload_get_file_size.reply200.xml")) == (0, 0, "")
    assert sc.parse_data_server_reply(
        b"Content-type: text/plain\n\n<data_server_reply>\n    <status>-1</status>\n"
        b"    <message>invalid signature</message>\n</data_server_reply>\n") \
        == (-1, None, "invalid signature")


def test_reply_parsing_takes_a_good_reply_and_refuses_unusable_ones():
    good = fixture_text(CLIENT, "cycle", "02_sched_initial_hostid0.reply200.xml")
    r = sc.parse_reply(good)
    assert r.hostid == 1 and r.code_sign_key.startswith("1024\n")
    assert [j.name for j in r.jobs] == ["wu1_0"]
    assert r.workunits["wu1"].inputs == [("job1_in", "in")]
    assert r.jobs[0].outputs == [("wu1_0_r0_out", "out")]
    assert r.file_infos["wu1_0_r0_out"].is_upload
    assert r.app_versions[0].key == ("testapp", 100, sc.PLATFORM, "")
    ack = sc.parse_reply(fixture_text(CLIENT, "cycle", "08_sched_report_result.reply200.xml"))
    assert ack.result_acks == ["wu1_0"] and ack.messages == [("low", "No tasks are available")]

    text = good.decode()
    broken = {
        "truncated": text[:len(text) // 2],
        "no workunit": re.sub(r"<workunit>.*?</workunit>", "", text, flags=re.S),
        "no MD5": text.replace("<md5_cksum>09d52dee1f1ea52dc696a81dfdcd332a</md5_cksum>", ""),
        "no max_nbytes": text.replace("<max_nbytes>1000000</max_nbytes>", ""),
        "no upload URL": text.replace("boinc_cgi/file_upload_handler", "boinc_cgi/elsewhere"),
        "unsigned app": re.sub(r"<file_signature>.*?</file_signature>", "", text, flags=re.S),
        "no output file_info": re.sub(r"<file_info>\s*<name>wu1_0_r0_out.*?</file_info>", "",
                                      text, flags=re.S),
        "unescaped": text.replace("Fake Project", "Fake & Project"),
    }
    for why, doc in broken.items():
        with pytest.raises(sc.ProtocolError):
            sc.parse_reply(doc.encode())
            pytest.fail("accepted a reply with " + why)


# -- against the real server ---------------------------------------------------------

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="Apache's children run as www-data")


@pytest.fixture
def site(apache):
    """A made project under Apache with the example app (a script), two users,
    resend_lost_results, min_sendwork_interval 0, and the feeder running."""
    from boincpy.config import write_config
    from tests.sched_env import Site
    s = Site(apache)
    p = s.p
    opts = p.cfg.as_options()
    opts.update(min_sendwork_interval=0, resend_lost_results=1)
    write_config(p.root, opts, p.cfg.daemons, p.cfg.tasks)
    p.reload()
    s.install_script_app()
    # two volunteers, signed up through the web RPC as the stock client does it
    s.auths = [sc.create_account(apache.master_url, "u%d@example.com" % n, "pw%d" % n,
                                 "user%d" % n) for n in (1, 2)]
    assert sc.lookup_account(apache.master_url, "u2@example.com", "pw2") == s.auths[1]
    with pytest.raises(sc.ProtocolError, match="error -206"):
        sc.lookup_account(apache.master_url, "u2@example.com", "wrong")
    yield s
    s.stop_feeder()


def add_job(s, name, content):
    """A job the operator's way (stage_file, create_work, one transitioner pass)."""
    from tests.sched_env import run_tool
    src = os.path.join(s.p.root, "in_" + name)
    with open(src, "w") as f:
        f.write(content)
    run_tool(s.p, "stage_file", "--copy", src)
    run_tool(s.p, "create_work", "--appname", "example_app", "--wu_name", name, "in_" + name)
    wu = s.rows("SELECT id FROM workunit WHERE name = %s", (name,))[0]
    run_tool(s.p, "transitioner", "--wu_id", str(wu["id"]))


def output_text(s, result_name):
    r = s.rows("SELECT xml_doc_in FROM result WHERE name = %s", (result_name,))[0]
    out = re.search(r"<name>(.*?)</name>", r["xml_doc_in"]).group(1)
    with open(dir_hier_path(s.p.cfg.upload_dir, out, s.p.cfg.uldl_dir_fanout)) as f:
        return f.read()


def run_until(host, done, rounds=20):
    for _ in range(rounds):
        host.cycle()
        if done():
            return
    raise AssertionError("not done after %d rounds: errors %s" % (rounds, host.rpc_errors))


@needs_root
def test_a_simulated_host_runs_jobs_end_to_end(site):
    s = site
    url = sc.discover_scheduler(s.apache.master_url)
    assert url == s.apache.scheduler_url
    add_job(s, "small", "hello from small\n")
    big = "".join("line %d of a big input\n" % i for i in range(1000))
    assert len(big) > sc.FILE_SIZE_CHECK_THRESHOLD
    add_job(s, "big", big)
    s.start_feeder()
    s.wait_present(2)
    host = sc.SimHost(url, s.auths[0], name="h1", seed=1, delay_cap=0, work_req_seconds=1e6)
    reply = host.cycle()
    assert reply is not None and host.hostid > 0
    assert reply.code_sign_key == open(s.p.path("keys", "code_sign_public")).read().strip()
    run_until(host, lambda: not host.busy)
    assert sorted(host.acked) == ["big_0", "small_0"]
    assert host.protocol_errors == [] and host.download_errors == []
    rows = s.rows("SELECT name, server_state, outcome, client_state, hostid, userid "
                  "FROM result ORDER BY name")
    assert [tuple(r.values()) for r in rows] == [
        ("big_0", 5, 1, 5, host.hostid, 1), ("small_0", 5, 1, 5, host.hostid, 1)]
    assert output_text(s, "small_0") == "HELLO FROM SMALL\n"
    assert output_text(s, "big_0") == big.upper()
    log = open(s.p.path("log_" + s.p.cfg.host, "file_upload_handler.log")).read()
    assert "get_file_size: big_0_" in log


@needs_root
def test_lost_replies_cut_uploads_wrong_outputs_and_404s(site):
    s = site
    for n in range(3):
        add_job(s, "lost%d" % n, "x" * 9000 + "lost %d\n" % n)
    s.start_feeder()
    s.wait_present(3)
    url = s.apache.scheduler_url
    host = sc.SimHost(url, s.auths[0], name="h1", seed=2, delay_cap=0, work_req_seconds=1e6,
                      abort_upload_prob=0.5,
                      behaviour=lambda t: sc.WRONG if t.name == "lost1_0" else sc.GOOD)
    host.cycle()                        # attach: one job
    assert len(host.tasks) == 1
    # the next request reaches the server; its reply never reaches the client
    assert host.rpc(abort="reply") is None
    sent = {r["name"] for r in s.rows("SELECT name FROM result WHERE server_state = 4")}
    lost = sent - set(host.tasks)
    assert lost, sent
    # the server resends what the client never got (resend_lost_results)
    run_until(host, lambda: not host.busy)
    assert sorted(set(host.acked)) == ["lost0_0", "lost1_0", "lost2_0"]
    assert lost <= set(host.received) and host.aborted_rpcs == 1
    assert host.aborted_uploads > 0
    assert output_text(s, "lost0_0") == ("x" * 9000 + "lost 0\n").upper()
    assert output_text(s, "lost1_0") == ("X" * 9000 + "LOST 1\nwrong answer from lost1_0\n")

    # an input file gone from the download directory: recorded, reported as an error
    add_job(s, "gone", "gone\n")
    os.unlink(dir_hier_path(s.p.cfg.download_dir, "in_gone", s.p.cfg.uldl_dir_fanout))
    s.wait_present(1)
    other = sc.SimHost(url, s.auths[1], name="h2", seed=3, delay_cap=0)
    run_until(other, lambda: "gone_0" in other.acked)
    assert [(e["file"], e["status"], e["result"]) for e in other.download_errors] == \
        [("in_gone", 404, "gone_0")]
    row = s.rows("SELECT outcome, client_state, exit_status, stderr_out FROM result "
                 "WHERE name = 'gone_0'")[0]
    assert (row["outcome"], row["client_state"], row["exit_status"]) == (3, 1, -186)
    assert "<file_name>in_gone</file_name>" in row["stderr_out"]
