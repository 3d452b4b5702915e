"""Work sent end to end in-process: rows -> the feeder's array -> job choice ->
the handler's reply, and the rows the claim leaves; the reference server's
job replies reproduced with the real feeder and job choice."""

import io
import re
import time
import xml.etree.ElementTree as ET

import pytest

from boincpy import shmem
from boincpy.log import SchedLog
from boincpy.sched import send
from boincpy.sched.handler import handle_request
from boincpy.sched.hosts import rss_auth
from jobs_helpers import make_feeder
from tests.sched_env import (CLIENT, PLATFORM, REFERENCE, add_reference_job,  # noqa: F401
                             check_client_needs, code_sign_keys, fixture_text, ref_env,
                             reference_reply, sched_env, with_code_sign_key)

ENV = {"REMOTE_ADDR": "127.0.0.1", "REQUEST_METHOD": "POST"}


class Array:
    """The feeder initialised and one pass made; the scheduler's attached array."""

    def __init__(self, cfg):
        self.feeder = make_feeder(cfg)
        self.feeder.one_pass()
        self.array = shmem.attach(cfg, wait_ready=1)

    def refill(self):
        self.feeder.one_pass()

    def close(self):
        self.array.close()
        self.feeder.shutdown()


@pytest.fixture
def feeder_for():
    made = []

    def make(cfg):
        a = Array(cfg)
        made.append(a)
        return a
    yield make
    for a in made:
        a.close()


def post(env, data, array, environ=ENV):
    log = SchedLog(io.StringIO(), 3)
    out = handle_request(env.cfg, data, dict(environ), job_array=array.array, log=log)
    return out.decode(), log.stream.getvalue()


def with_key(data):
    return with_code_sign_key(data, code_sign_keys()[1])


def test_a_job_goes_out_and_comes_back(sched_env, feeder_for):
    env = sched_env
    env.set_options(report_grace_period=3600)
    wuid, rid = env.add_job("wu1")
    array = feeder_for(env.cfg)
    assert array.array.n_present == 1
    before = int(time.time())
    text, log = post(env, fixture_text(CLIENT, "cycle", "02_sched_initial_hostid0.body.xml"),
                     array)
    root = ET.fromstring(text.partition("\n\n")[2])
    assert check_client_needs(root, [PLATFORM], expect_key=True) == ["wu1_0"]
    assert root.findtext("hostid") == "1"
    res = env.row("SELECT * FROM result WHERE id = %s", (rid,))
    assert (res["server_state"], res["hostid"], res["userid"]) == (4, 1, 1)
    assert before <= res["sent_time"] <= time.time()
    # the client is told sent + delay_bound; the row holds the grace period too
    told = int(root.find("result").findtext("report_deadline"))
    assert told == res["sent_time"] + 604800
    assert res["report_deadline"] == told + 3600
    assert res["app_version_id"] == env.app_version()["id"]
    assert res["flops_estimate"] == 1e9
    wu = env.row("SELECT transition_time FROM workunit WHERE id = %s", (wuid,))
    assert wu["transition_time"] == res["report_deadline"]
    assert "Sending reply to [HOST#1]: 1 results" in log
    assert array.array.n_present == 0
    # the job comes back as the client reports it
    text, log = post(env, with_key(fixture_text(CLIENT, "cycle",
                                                "08_sched_report_result.body.xml")), array)
    assert "<result_ack>\n    <name>wu1_0</name>\n</result_ack>" in text
    res = env.row("SELECT * FROM result WHERE id = %s", (rid,))
    assert (res["server_state"], res["outcome"], res["client_state"]) == (5, 1, 5)


def test_empty_array_says_why(sched_env, feeder_for):
    env = sched_env
    array = feeder_for(env.cfg)
    text, log = post(env, fixture_text(CLIENT, "cycle", "02_sched_initial_hostid0.body.xml"),
                     array)
    assert '<message priority="low">Project has no tasks available</message>' in text
    assert "No tasks sent: Project has no tasks available" in log
    assert "<wu_name>" not in text


def _deadline_free(text):
    return re.sub(r"<report_deadline>\d+</report_deadline>", "<report_deadline/>", text)


@pytest.mark.parametrize("start_slot", [0, 1])
def test_reference_job_replies_with_the_real_feeder_and_job_choice(ref_env, feeder_for,
                                                                   start_slot, monkeypatch):
    """The reference server's replies 01-03, made by feeder + job choice + handler,
    equal the C++ ones byte for byte (deadlines aside: they depend on the clock).
    Job choice scans from a random slot: both orders are run."""
    monkeypatch.setattr(send.rand, "randrange", lambda n: start_slot % n)
    env = ref_env
    env.execute("DELETE FROM host")
    env.execute("ALTER TABLE host AUTO_INCREMENT = 1")
    jobs = [(1, "314", "ed3bc8e71d247133e1b956b921bbc579", "uc_init_1_0_r1835291539_0"),
            (2, "6f", "cd3892bbecab6a838f4ff7b7b9a163ad", "uc_init_2_0_r90516764_0")]
    for n, bucket, md5, out in jobs:
        add_reference_job(env, n, bucket, md5, out)
    array = feeder_for(env.cfg)
    user = env.row("SELECT * FROM user WHERE id = 1")
    expected01 = reference_reply("01_attach_first_rpc.reply.xml", rss_auth(user))
    text, _ = post(env, fixture_text(REFERENCE, "sched", "01_attach_first_rpc.request.xml"),
                   array)
    host = env.row("SELECT * FROM host WHERE id = 1")
    expected01 = expected01.replace("<host_create_time>1795334730<",
                                    "<host_create_time>%d<" % host["create_time"])
    got = env.row("SELECT name FROM result WHERE server_state = 4")["name"]
    if got != "uc_init_1_0":        # job choice starts at a random slot
        text = text.replace("uc_init_2", "uc_init_1").replace("in_2.txt", "in_1.txt")
        text = text.replace("/6f/", "/314/").replace("cd3892bbecab6a838f4ff7b7b9a163ad",
                                                     "ed3bc8e71d247133e1b956b921bbc579")
        text = text.replace("r90516764", "r1835291539")
    assert _deadline_free(text) == _deadline_free(expected01)
    # the second job, to the known host (its last RPC long enough ago)
    env.execute("UPDATE host SET rpc_time = rpc_time - 60, create_time = 1795334730")
    expected02 = reference_reply("02_work_fetch_job_sent.reply.xml", rss_auth(user))
    request02 = fixture_text(REFERENCE, "sched", "02_work_fetch_job_sent.request.xml")
    if got != "uc_init_1_0":
        # the client lists the job it was sent first among its <other_results>
        request02 = request02.replace(b"uc_init_1_0", b"uc_init_2_0")
    text, _ = post(env, request02, array)
    if got != "uc_init_1_0":
        text = text.replace("uc_init_1", "uc_init_2").replace("in_1.txt", "in_2.txt")
        text = text.replace("/314/", "/6f/").replace("ed3bc8e71d247133e1b956b921bbc579",
                                                     "cd3892bbecab6a838f4ff7b7b9a163ad")
        text = text.replace("r1835291539", "r90516764")
    assert _deadline_free(text) == _deadline_free(expected02)
    assert env.row("SELECT COUNT(*) AS n FROM result WHERE server_state = 4 AND hostid = 1 "
                   "AND userid = 1")["n"] == 2


def test_reports_and_a_new_job_in_one_request(ref_env, feeder_for):
    """Reference request 03: two results reported, one job sent, in C++'s bytes."""
    env = ref_env
    env.execute("UPDATE host SET rpc_seqno = 2, rpc_time = %s", (int(time.time()) - 60,))
    add_reference_job(env, 1, "314", "x" * 32, "uc_init_1_0_r1835291539_0", state=4, hostid=1,
                      userid=1, sent_time=1795334730, report_deadline=1795939530)
    add_reference_job(env, 2, "6f", "x" * 32, "uc_init_2_0_r90516764_0", state=4, hostid=1,
                      userid=1, sent_time=1795334742, report_deadline=1795939542)
    for n in (3, 4):
        add_reference_job(env, n, "9", "x" * 32, "uc_init_%d_0_r1_0" % n, state=4, hostid=1,
                          userid=1, sent_time=1795334754, report_deadline=1795939554)
    add_reference_job(env, 5, "9", "aaf923f90ad6fa294d6dc851bb0e7510",
                      "uc_init_5_0_r1624315879_0")
    array = feeder_for(env.cfg)
    user = env.row("SELECT * FROM user WHERE id = 1")
    text, log = post(env, fixture_text(REFERENCE, "sched",
                                       "03_report2_and_fetch_job_sent.request.xml"), array)
    expected = reference_reply("03_report2_and_fetch_job_sent.reply.xml", rss_auth(user))
    assert _deadline_free(text) == _deadline_free(expected)
    rows = env.rows("SELECT name, server_state, outcome, hostid FROM result ORDER BY id")
    assert [(r["name"], r["server_state"], r["outcome"]) for r in rows] == [
        ("uc_init_1_0", 5, 1), ("uc_init_2_0", 5, 1), ("uc_init_3_0", 4, 0),
        ("uc_init_4_0", 4, 0), ("uc_init_5_0", 4, 0)]
