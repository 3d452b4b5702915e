"""The scheduler CGI through a real Apache, as a client meets it.

A project made by make_project, served by a private Apache whose children run
as www-data; an app version installed with xadd/update_versions, a job made
with stage_file/create_work (its result as the transitioner makes it), the
feeder running as a daemon (bin/feeder).  The stock client's captured
requests are POSTed to PROJECT_cgi/cgi exactly as libcurl sends them.
"""

import http.client
import os
import pwd
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from urllib.parse import urlsplit

import pytest

from boincpy import shmem
from boincpy.templates import process_result_template
from tests.sched_env import (CLIENT, CLIENT_AUTH, PLATFORM, check_client_needs, fixture_text,
                             with_code_sign_key)

WWW_UID = pwd.getpwnam("www-data").pw_uid
APP_FILE = "example_app_1.0_" + PLATFORM

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="Apache's children run as www-data")


def run(p, tool, *args, input=""):
    proc = subprocess.run([p.bin(tool)] + list(args), cwd=p.root, input=input,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr + proc.stdout
    return proc


class Site:
    """The served project: POST to its scheduler, read its rows."""

    def __init__(self, apache):
        self.apache = apache
        self.p = apache.project
        self.feeder = None

    def post(self, data):
        url = urlsplit(self.apache.scheduler_url)
        conn = http.client.HTTPConnection(url.hostname, url.port, timeout=60)
        conn.request("POST", url.path, data, {
            "User-Agent": "BOINC client (x86_64-pc-linux-gnu 7.20.5)", "Accept": "*/*",
            "Accept-Encoding": "deflate, gzip, br, zstd",
            "Content-Type": "application/x-www-form-urlencoded"})
        resp = conn.getresponse()
        body = resp.read()
        headers = dict(resp.getheaders())
        conn.close()
        return resp.status, headers, body

    def rows(self, sql, params=()):
        db = self.p.connect()
        try:
            return db.query(sql, params)
        finally:
            db.close()

    def execute(self, sql, params=()):
        db = self.p.connect()
        try:
            return db.execute(sql, params)
        finally:
            db.close()

    def add_job(self, name):
        """A job as create_work and the transitioner make it: workunit + one UNSENT result."""
        src = os.path.join(self.p.root, "in_" + name)
        with open(src, "w") as f:
            f.write("hello from %s\n" % name)
        run(self.p, "stage_file", "--copy", src)
        run(self.p, "create_work", "--appname", "example_app", "--wu_name", name,
            "in_" + name)
        wu = self.rows("SELECT * FROM workunit WHERE name = %s", (name,))[0]
        with open(self.p.path("templates", "example_app_out")) as f:
            xml = process_result_template(f.read(), name + "_0", self.p.cfg)
        self.execute("INSERT INTO result (create_time, workunitid, server_state, name, "
                     "xml_doc_in, appid, random) VALUES (%s, %s, 2, %s, %s, %s, 1)",
                     (int(time.time()), wu["id"], name + "_0", xml, wu["appid"]))
        return wu

    def start_feeder(self):
        log = open(self.p.path("log_" + self.p.cfg.host, "feeder.log"), "a")
        self.feeder = subprocess.Popen([self.p.bin("feeder"), "-d", "3", "--sleep_interval",
                                        "1"], cwd=self.p.root, stdout=log, stderr=log)
        for _ in range(100):
            try:
                shmem.attach(self.p.cfg, wait_ready=0.2).close()
                return
            except Exception:
                time.sleep(0.1)
        raise AssertionError("the feeder made no job array")

    def wait_present(self, n):
        for _ in range(100):
            array = shmem.attach(self.p.cfg)
            try:
                if array.n_present >= n:
                    return
            finally:
                array.close()
            time.sleep(0.1)
        raise AssertionError("the feeder didn't cache %d jobs" % n)

    def stop_feeder(self):
        if self.feeder is not None:
            self.feeder.terminate()
            self.feeder.wait(20)
            self.feeder = None


@pytest.fixture
def site(apache):
    s = Site(apache)
    p = s.p
    run(p, "xadd")
    app_dir = p.path("apps", "example_app", "1.0", PLATFORM)
    os.makedirs(app_dir)
    with open(os.path.join(app_dir, APP_FILE), "w") as f:
        f.write("#!/bin/sh\ncp in out\necho 0 > boinc_finish_called\n")
    os.chmod(os.path.join(app_dir, APP_FILE), 0o755)
    run(p, "update_versions", "--noconfirm")
    s.execute("INSERT INTO user (create_time, email_addr, name, authenticator, passwd_hash, "
              "global_prefs, project_prefs, venue, cross_project_id) VALUES "
              "(1700000000, 'tester@example.com', 'tester', %s, 'x', '', '', '', '')",
              (CLIENT_AUTH,))
    yield s
    s.stop_feeder()


def scheduler_log(s):
    with open(s.p.path("log_" + s.p.cfg.host, "scheduler.log")) as f:
        return f.read()


def test_attach_gets_a_runnable_job_through_apache(site):
    s = site
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
    assert res["xml_doc_out"].startswith(b"<file_info><name>wu1_0_")


def test_no_work_wrong_key_and_feeder_down_through_apache(site):
    s = site
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


def test_garbage_and_empty_posts_get_a_reply(site):
    s = site
    s.start_feeder()
    for data in (b"", b"hello", b"<scheduler_request>\n<hostid>1"):
        status, _, body = s.post(data)
        assert status == 200
        root = ET.fromstring(body)
        assert root.findtext("message").startswith("Error in request message: ")
    assert "Incomplete request received from IP 127.0.0.1" in scheduler_log(s)
