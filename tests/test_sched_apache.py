"""The scheduler CGI through a real Apache, as a client meets it.

A project made by make_project, served by a private Apache whose children run
as www-data; an app version installed with xadd/update_versions, a job made
with stage_file/create_work (its result as the transitioner makes it), the
feeder running as a daemon (bin/feeder).  The stock client's captured
requests are POSTed to PROJECT_cgi/cgi exactly as libcurl sends them.
"""

import os
import pwd
import time
import xml.etree.ElementTree as ET

import pytest

from tests.sched_env import (APP_FILE, CLIENT, CLIENT_AUTH, PLATFORM,  # noqa: F401
                             apache_site, check_client_needs, fixture_text, with_code_sign_key)

WWW_UID = pwd.getpwnam("www-data").pw_uid

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(os.geteuid() != 0, reason="Apache's children run as www-data"),
    # every test as CGIs and as persistent processes (FastCGI workers)
    pytest.mark.parametrize("apache", ["cgi", "persistent"], indirect=True),
]


def scheduler_log(s):
    with open(s.p.path("log_" + s.p.cfg.host, "scheduler.log")) as f:
        return f.read()


def test_attach_gets_a_runnable_job_through_apache(apache_site):
    s = apache_site
    s.add_job("wu1")
    s.start_feeder()
    s.wait_present(1)
    status, headers, body = s.post(fixture_text(CLIENT, "cycle",
                                                "02_sched_initial_hostid0.body.xml"))
    assert status == 200, open(s.apache.error_log).read()
    assert headers["Content-Type"].startswith("text/xml")
    root = ET.fromstring(body)
    assert check_client_needs(root, [PLATFORM], expect_key=True) == ["wu1_0"]
    key = open(s.p.path("keys", "code_sign_public")).read().strip()
    assert root.findtext("code_sign_key").strip() == key
    # the app file is signed with that key, the output carries an upload certificate
    fi = [f for f in root.findall("file_info") if f.findtext("name") == APP_FILE][0]
    from boincpy import crypto
    assert crypto.verify_file(s.p.path("download", APP_FILE), fi.findtext("file_signature"),
                              crypto.read_key(s.p.path("keys", "code_sign_public")))
    out = [f for f in root.findall("file_info") if "file_upload_handler" in
           (f.findtext("url") or "")][0]
    assert out.findtext("xml_signature").strip().endswith(".")
    res = s.rows("SELECT * FROM result WHERE name = 'wu1_0'")[0]
    assert (res["server_state"], res["hostid"], res["userid"]) == (4, 1, 1)
    assert abs(res["sent_time"] - time.time()) < 30
    assert res["report_deadline"] == int(root.find("result").findtext("report_deadline"))
    log = scheduler_log(s)
    assert "Request: [USER#1] [HOST#1] [IP 127.0.0.1] client 7.20.5" in log
    assert "Sending reply to [HOST#1]: 1 results" in log
    assert os.stat(s.p.path("log_" + s.p.cfg.host, "scheduler.log")).st_uid == WWW_UID

    # the client reports it (7 s later, as the real one would after its request_delay)
    s.execute("UPDATE host SET rpc_time = rpc_time - 7")
    status, _, body = s.post(with_code_sign_key(
        fixture_text(CLIENT, "cycle", "08_sched_report_result.body.xml"), key))
    assert status == 200
    root = ET.fromstring(body)
    assert [m.text for m in root.findall("message")] == ["Project has no tasks available"]
    assert [a.findtext("name") for a in root.findall("result_ack")] == ["wu1_0"]
    res = s.rows("SELECT * FROM result WHERE name = 'wu1_0'")[0]
    assert (res["server_state"], res["outcome"], res["client_state"]) == (5, 1, 5)
    assert res["xml_doc_out"].startswith("<file_info><name>wu1_0_")


def test_no_work_wrong_key_and_feeder_down_through_apache(apache_site):
    s = apache_site
    s.start_feeder()
    status, _, body = s.post(fixture_text(CLIENT, "no_work", "02_sched_initial_hostid0.body.xml"))
    root = ET.fromstring(body)
    assert [m.text for m in root.findall("message")] == ["Project has no tasks available"]
    assert root.findtext("hostid") == "1"
    data = fixture_text(CLIENT, "no_work", "02_sched_initial_hostid0.body.xml").replace(
        CLIENT_AUTH.encode(), b"ffffffffffffffff")
    status, _, body = s.post(data)
    root = ET.fromstring(body)
    assert root.findtext("request_delay") == "3600.000000"
    assert "Invalid or missing account key" in root.findtext("message")
    s.stop_feeder()
    status, headers, body = s.post(data)
    assert status == 200
    assert b"<message priority=\"low\">Server error: feeder not running</message>" in body
    assert b"<project_is_down/>" in body
    assert "feeder not running?" in scheduler_log(s)


def test_garbage_and_empty_posts_get_a_reply(apache_site):
    s = apache_site
    s.start_feeder()
    for data in (b"", b"hello", b"<scheduler_request>\n<hostid>1"):
        status, _, body = s.post(data)
        assert status == 200
        root = ET.fromstring(body)
        assert root.findtext("message").startswith("Error in request message: ")
    assert "Incomplete request received from IP 127.0.0.1" in scheduler_log(s)
