"""The scheduler handler end to end, in-process, against a real database.

The stock client's captured requests (fixtures/client-7.20.5) are replayed
against a project with the client's account (tests/sched_env.sched_env);
each case checks the reply (parsed with a strict XML parser), the rows the
database holds afterwards, and scheduler.log.
"""

import io
import os
import pathlib
import re
import time
import xml.etree.ElementTree as ET

import pytest

from boincpy.log import SchedLog
from boincpy.sched.handler import handle_request
from boincpy.sched.hosts import md5_hex, weak_auth
from jobs_helpers import count_round_trips
from tests.sched_env import (CLIENT, code_sign_keys,  # noqa: F401
                             fixture_text, sched_env)

ENV = {"REMOTE_ADDR": "192.0.2.7", "REQUEST_METHOD": "POST"}
CPID = "1a2b3c4d5e6f708192a3b4c5d6e7f809"


def body(*parts, **subs):
    """A captured request with our code-signing key (if it carries one) and
    element texts replaced: subs name=value (value None removes the element)."""
    text = fixture_text(CLIENT, *parts).decode()
    if "<code_sign_key>" in text:
        start = text.index("<code_sign_key>") + len("<code_sign_key>")
        end = text.index("</code_sign_key>")
        text = text[:start] + "\n" + code_sign_keys()[1] + text[end:]
    for name, value in subs.items():
        pattern = re.compile(r"<%s>.*?</%s>\n?" % (name, name), re.S)
        assert pattern.search(text), name
        text = pattern.sub("" if value is None else "<%s>%s</%s>\n" % (name, value, name),
                           text, count=1)
    return text.encode()


class Reply:
    """A reply: raw text, strict parse, and the log lines it produced."""

    def __init__(self, raw, log):
        self.raw = raw.decode()
        self.log = log
        header, _, xml = self.raw.partition("\n\n")
        self.header = header
        self.root = ET.fromstring(xml)          # strict: must be well-formed XML
        assert self.root.tag == "scheduler_reply"

    def text(self, tag):
        el = self.root.find(tag)
        return None if el is None else (el.text or "")

    def messages(self):
        return [(m.get("priority"), (m.text or "").strip()) for m in self.root.findall("message")]

    def acks(self):
        return [a.findtext("name") for a in self.root.findall("result_ack")]

    def names(self, tag):
        return [a.findtext("name") for a in self.root.findall(tag)]


def call(env, data, environ=None, resident=None):
    """POST ``data`` to the handler, in-process, with the project's job array;
    with ``resident`` (boincpy.resident.Resident) as a persistent process
    handles it (its database connection, on _mysql)."""
    log = SchedLog(io.StringIO(), 3)
    out = handle_request(env.cfg, data, dict(environ or ENV), job_array=env.job_array(),
                         log=log, resident=resident)
    return Reply(out, log.stream.getvalue())


@pytest.fixture
def persistent(sched_env):
    """A persistent process's Resident for the project; its connection
    counts the COM_QUERYs (round trips) it sends in ``.sent``."""
    from boincpy.resident import Resident
    resident = Resident(str(sched_env.root), persistent=True)
    resident.sent = count_round_trips(resident.database(sched_env.cfg))
    yield resident
    resident.close()


def attach(env, **subs):
    """The client's first RPC (hostid 0): returns the reply."""
    subs.setdefault("host_cpid", CPID)
    return call(env, body("cycle", "02_sched_initial_hostid0.body.xml", **subs))


def workfetch(env, **subs):
    return call(env, body("no_work", "03_sched_workfetch_hostid1.body.xml", **subs))


# -- first contact, host records -------------------------------------------------

def test_first_rpc_creates_the_host_and_sends_the_key(sched_env):
    env = sched_env
    r = attach(env)
    assert r.header == "Content-type: text/xml"
    assert r.text("hostid") == "1"
    assert r.text("userid") == "1" and r.text("user_name") == "tester"
    assert r.text("email_hash") == md5_hex("tester@example.com")
    assert r.text("code_sign_key").strip() == code_sign_keys()[1].strip()
    assert r.text("project_name") == "Test project"
    assert r.text("master_url") == "http://127.0.0.1/test/"
    assert r.root.find("dont_use_dcf") is not None
    assert r.messages() == [("low", "Project has no tasks available")]
    assert r.text("request_delay") is None           # no delay configured
    host = env.row("SELECT * FROM host WHERE id = 1")
    assert host["userid"] == 1 and host["rpc_seqno"] == 0
    assert abs(host["create_time"] - time.time()) < 5 and host["rpc_time"] >= host["create_time"]
    assert host["host_cpid"] == md5_hex(CPID + "tester@example.com")
    assert host["last_ip_addr"] == "127.0.0.1" and host["external_ip_addr"] == "192.0.2.7"
    assert host["nsame_ip_addr"] == 1
    assert host["p_model"] == "AMD EPYC [Family 25 Model 1 Stepping 1]"
    assert host["m_nbytes"] == 25276063744.0
    assert host["os_version"] == "Debian GNU/Linux 12 (bookworm) [6.18.44-fc-v769|libc 2.36]"
    assert host["d_boinc_max"] > 0 and host["expavg_time"] > 0
    assert "Request: [USER#1] [HOST#1] [IP 192.0.2.7] client 7.20.5" in r.log
    assert "[HOST#1] No tasks sent: Project has no tasks available" in r.log
    assert re.search(r"Sending reply to \[HOST#1\]: 0 results, delay req 0.00", r.log)
    assert re.search(r"Scheduler ran \d+\.\d{3} seconds", r.log)


def test_known_host_gets_no_hostid_and_no_key(sched_env):
    env = sched_env
    attach(env)
    r = workfetch(env, rpc_seqno=1)
    assert r.text("hostid") is None and r.text("code_sign_key") is None
    assert r.text("host_create_time") == str(env.row("SELECT create_time FROM host")["create_time"])
    assert env.row("SELECT COUNT(*) AS n FROM host")["n"] == 1
    assert env.row("SELECT rpc_seqno FROM host WHERE id = 1")["rpc_seqno"] == 1


def test_reattach_finds_the_host_by_cpid_and_detaches_its_jobs(sched_env):
    env = sched_env
    attach(env)
    wuid, rid = env.add_job("lost", state=4, hostid=1, userid=1, sent_time=int(time.time()),
                            report_deadline=int(time.time()) + 1000)
    r = attach(env)                                  # same CPID, hostid 0, no other_results
    assert r.text("hostid") == "1"
    assert env.row("SELECT COUNT(*) AS n FROM host")["n"] == 1
    res = env.row("SELECT * FROM result WHERE id = %s", (rid,))
    assert (res["server_state"], res["outcome"]) == (5, 7)          # OVER, CLIENT_DETACHED
    assert abs(env.row("SELECT transition_time FROM workunit WHERE id = %s",
                       (wuid,))["transition_time"] - time.time()) < 5
    assert "marking in-progress result lost_0 as client error!" in r.log


def test_other_cpid_but_same_machine_reuses_the_similar_host(sched_env):
    env = sched_env
    attach(env)
    r = attach(env, host_cpid="ffffffffffffffffffffffffffffffff")
    assert r.text("hostid") == "1"
    assert "Found similar existing host for this user - assigned." in r.log
    r = attach(env, host_cpid="eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee", allow_multiple_clients=1)
    assert r.text("hostid") == "2"                   # its own record, as BOINC gives it


def test_lower_rpc_seqno_means_a_copied_client(sched_env):
    env = sched_env
    attach(env)
    env.execute("UPDATE host SET rpc_seqno = 9")
    r = workfetch(env, rpc_seqno=3, allow_multiple_clients=1)
    assert r.text("hostid") == "2"
    assert "RPC seqno 3 less than expected 9; creating new host" in r.log
    assert env.row("SELECT rpc_seqno FROM host WHERE id = 2")["rpc_seqno"] == 0


def test_host_of_another_account_is_not_taken_over(sched_env):
    env = sched_env
    other = env.add_user("other-key", name="other", email="other@example.com")
    env.add_host(other, domain_name="elsewhere")
    r = workfetch(env, hostid=1, allow_multiple_clients=1)
    assert r.text("hostid") == "2"
    assert env.row("SELECT userid FROM host WHERE id = 2")["userid"] == 1
    assert "inconsistent host ID; creating new host" in r.log


def test_merged_host_forwards_to_its_successor(sched_env):
    env = sched_env
    attach(env)
    env.add_host(0, rpc_seqno=1)                     # host 2: a zombie merged into host 1
    r = workfetch(env, hostid=2)
    assert r.text("hostid") == "1"
    assert "[HOST#2] forwarding to new host ID 1" in r.log


def test_unknown_hostid_gets_a_new_record(sched_env):
    env = sched_env
    r = workfetch(env, hostid=77)
    assert r.text("hostid") == "1"
    assert ("low", "Can't find host record") in r.messages()


def test_weak_authenticator_is_accepted_but_changes_no_account_data(sched_env):
    env = sched_env
    user = env.row("SELECT * FROM user WHERE id = 1")
    r = attach(env, authenticator=weak_auth(user), cross_project_id="00ff")
    assert r.text("userid") == "1"
    assert env.row("SELECT cross_project_id FROM user WHERE id = 1")["cross_project_id"] \
        == user["cross_project_id"]
    r = attach(env, cross_project_id="00ff")
    assert env.row("SELECT cross_project_id FROM user WHERE id = 1")["cross_project_id"] == "00ff"
    assert r.text("cross_project_id") == "00ff"
    assert r.text("external_cpid") == md5_hex("00fftester@example.com")


# -- refusals ----------------------------------------------------------------------

def test_wrong_authenticator_on_first_contact(sched_env):
    env = sched_env
    before = env.snapshot()
    r = attach(env, authenticator="0123456789abcdef")
    assert r.messages() == [("low", "Invalid or missing account key.  To fix, remove and add "
                                    "this project .")]
    assert r.text("request_delay") == "3600.000000"
    assert r.text("userid") is None and r.text("hostid") is None
    assert env.snapshot() == before
    assert "[HOST#<none>] Bad authenticator '0123456789abcdef'" in r.log


def test_wrong_authenticator_for_a_known_host(sched_env):
    env = sched_env
    attach(env)
    before = env.snapshot()
    r = workfetch(env, authenticator="0123456789abcdef")
    assert r.messages() == [("notice", "Invalid or missing account key.  To fix, remove and "
                                       "add this project.")]
    assert r.text("request_delay") == "3600.000000"
    assert r.text("host_total_credit") is None
    assert env.snapshot() == before


def test_unknown_platform(sched_env):
    env = sched_env
    attach(env)
    before = env.snapshot()
    r = workfetch(env, platform_name="sparc-sun-solaris")
    assert ("notice", "This project doesn't support computers of type sparc-sun-solaris") \
        in r.messages()
    assert r.text("request_delay") == "86400.000000"
    assert env.snapshot() == before                  # BOINC leaves even the host row alone
    assert "platform 'sparc-sun-solaris' not found" in r.log


def test_stop_sched_shuts_the_scheduler_down(sched_env):
    env = sched_env
    (env.root / "stop_sched").write_text("")
    before = env.snapshot()
    log = SchedLog(io.StringIO(), 3)
    out = handle_request(env.cfg, body("no_work", "03_sched_workfetch_hostid1.body.xml"),
                         dict(ENV), job_array=env.job_array(), log=log)
    assert out == (b"Content-type: text/plain\n\n<scheduler_reply>\n"
                   b"    <message priority=\"low\">Project is temporarily shut down for "
                   b"maintenance</message>\n    <request_delay>3600</request_delay>\n"
                   b"    <project_is_down/>\n</scheduler_reply>\n")
    assert env.snapshot() == before


def test_feeder_not_running(sched_env):
    env = sched_env
    env.set_options(shmem_key=0x7e570001)
    log = SchedLog(io.StringIO(), 3)
    out = handle_request(env.cfg, body("no_work", "03_sched_workfetch_hostid1.body.xml"),
                         dict(ENV), log=log).decode()
    assert "<message priority=\"low\">Server error: feeder not running</message>" in out
    assert "<project_is_down/>" in out and "<request_delay>3600</request_delay>" in out
    assert "[CRITICAL]" in log.stream.getvalue()
    assert "feeder not running?" in log.stream.getvalue()


def test_min_sendwork_interval(sched_env):
    env = sched_env
    attach(env)
    env.set_options(min_sendwork_interval=60)
    last = int(time.time()) - 10
    env.execute("UPDATE host SET rpc_time = %s", (last,))
    env.add_job("waiting")
    env.job_array(refill=True)
    r = workfetch(env, rpc_seqno=1)
    asked = time.time()
    (prio, text), = r.messages()
    assert prio == "low"
    m = re.fullmatch(r"Not sending work\. Last request too recent\. Please wait (\d+) "
                     r"seconds\.", text)
    # 60 s less the time since the last request (10 s, and what the request
    # took to arrive on a slow machine)
    assert m and 60 - (int(asked) + 1 - last) <= int(m.group(1)) <= 50, text
    assert r.text("request_delay") == "61.000000"    # max(1.01 x 60, 60 + 1)
    assert "No tasks sent: last request too recent" in r.log


def test_no_work_requested_says_nothing_about_work(sched_env):
    env = sched_env
    attach(env)
    r = workfetch(env, rpc_seqno=1, work_req_seconds="0.000000", cpu_req_secs="0.000000")
    assert r.messages() == []
    assert "No tasks sent" not in r.log


def test_client_set_no_new_tasks(sched_env):
    env = sched_env
    attach(env)
    r = workfetch(env, rpc_seqno=1, dont_send_work=1)
    assert r.messages() == [] and r.text("code_sign_key") is None


def test_dont_send_jobs(sched_env):
    env = sched_env
    attach(env)
    env.set_options(dont_send_jobs=1)
    before = env.snapshot()
    r = workfetch(env, rpc_seqno=1)
    assert ("low", "No tasks sent") in r.messages()
    assert env.snapshot() == before                  # BOINC doesn't even open the database
    assert "No tasks sent: dont_send_jobs" in r.log


def test_banned_os_and_old_clients(sched_env):
    env = sched_env
    attach(env)
    env.set_options(ban_os=["Linux.*bookworm"])
    before = env.snapshot()
    r = workfetch(env, rpc_seqno=1)
    assert r.messages() == [("notice", "This project doesn't support operating system Linux "
                                       "Debian Debian GNU/Linux 12 (bookworm) "
                                       "[6.18.44-fc-v769|libc 2.36]")]
    assert r.text("request_delay") == "86400.000000"
    assert env.snapshot() == before
    env.set_options(ban_os=[], min_core_client_version=80000)
    r = workfetch(env, rpc_seqno=1)
    assert r.messages() == [("notice", "Your BOINC client software is too old.  Please "
                                       "install the current version.")]


def test_blacklisted_host(sched_env):
    env = sched_env
    attach(env)
    env.execute("UPDATE host SET max_results_day = -1")
    before = env.snapshot()
    r = workfetch(env, rpc_seqno=1)
    assert r.messages() == [("low", "Not accepting requests from this host")]
    assert r.text("request_delay") == "86400.000000"
    assert env.snapshot() == before


def test_malformed_request(sched_env):
    env = sched_env
    before = env.snapshot()
    data = body("no_work", "03_sched_workfetch_hostid1.body.xml")
    r = call(env, data[:data.index(b"<host_info>") + 40])
    (prio, text), = r.messages()
    assert prio == "low"
    assert text.startswith("Error in request message: no end tag for <host_info> (opened "
                           "at line ")
    assert r.text("userid") is None
    assert env.snapshot() == before
    assert "Incomplete request received from IP 192.0.2.7" in r.log


def test_database_down(sched_env):
    env = sched_env
    env.job_array()                      # the feeder still runs
    env.set_options(db_passwd="wrong", db_user="nobody_%s" % os.getpid())
    r = call(env, body("no_work", "03_sched_workfetch_hostid1.body.xml"))
    assert r.messages() == [("low", "Server can't open database")]
    assert r.root.find("project_is_down") is not None
    assert r.text("request_delay") == "3600.000000"
    assert "can't open database" in r.log


def test_unexpected_failure_still_gives_a_reply(sched_env):
    env = sched_env
    env.job_array()
    env.execute("DROP TABLE host")
    r = workfetch(env)
    assert r.text("request_delay") == "3600.000000"
    assert r.messages()[0][1].startswith("Server error")
    assert "[CRITICAL]" in r.log and "Traceback" in r.log


# -- code-signing key ------------------------------------------------------------

def test_code_sign_key_rotation(sched_env):
    env = sched_env
    attach(env)
    old_private, old_public = code_sign_keys()
    from boincpy.crypto import generate_key_pair, parse_key, sign_string
    new_private, new_public = generate_key_pair()
    keys = env.root / "keys"
    (keys / "old_key_0").write_text(old_public)
    (keys / "code_sign_public").write_text(new_public)
    signature = sign_string(new_public.strip(), parse_key(old_private))
    (keys / "signature_stripped_0").write_text(signature)
    r = workfetch(env, rpc_seqno=1)                  # the client still has the old key
    assert r.text("code_sign_key").strip() == new_public.strip()
    assert r.text("code_sign_key_signature") == "\n" + signature
    assert "sending new code sign key and signature" in r.log
    (keys / "old_key_0").unlink()
    r = workfetch(env, rpc_seqno=2)
    assert ("notice", "The project has changed its security key.  Please remove and add "
                      "this project.") in r.messages()
    assert r.text("code_sign_key") is None


# -- reported results -------------------------------------------------------------

def _reporting_host(env, name="wu1", hav_quota=0):
    attach(env)
    now = int(time.time())
    wuid, rid = env.add_job(name, state=4, hostid=1, userid=1, sent_time=now - 100,
                            report_deadline=now + 600000)
    av = env.app_version()
    env.execute("INSERT INTO host_app_version (host_id, app_version_id, max_jobs_per_day) "
                "VALUES (1, %s, %s)", (av["id"], hav_quota))
    return wuid, rid


def test_successful_report(sched_env):
    env = sched_env
    wuid, rid = _reporting_host(env, hav_quota=100)
    env.execute("UPDATE user SET teamid = 0")
    r = call(env, body("cycle", "08_sched_report_result.body.xml"))
    assert r.acks() == ["wu1_0"], r.log
    res = env.row("SELECT * FROM result WHERE id = %s", (rid,))
    assert (res["server_state"], res["outcome"], res["client_state"], res["validate_state"],
            res["exit_status"]) == (5, 1, 5, 0, 0)
    assert abs(res["received_time"] - time.time()) < 5
    assert res["elapsed_time"] == pytest.approx(4.014778)
    assert res["cpu_time"] == pytest.approx(0.007259)
    assert res["stderr_out"].startswith("\n<core_client_version>7.20.5</core_client_version>")
    assert res["xml_doc_out"].startswith("<file_info><name>wu1_0_")
    assert res["peak_working_set_size"] > 0
    assert abs(env.row("SELECT transition_time FROM workunit WHERE id = %s",
                       (wuid,))["transition_time"] - time.time()) < 5
    hav = env.row("SELECT * FROM host_app_version")
    assert hav["max_jobs_per_day"] == 200            # doubled on success


def test_a_request_writes_all_or_nothing(sched_env, monkeypatch):
    # The request's writes are one transaction: if the last one (the host
    # row) fails, the reports recorded before it are undone and none is
    # acknowledged, so the client reports them again and nothing is half done.
    env = sched_env
    wuid, rid = _reporting_host(env, hav_quota=100)
    snap = env.snapshot(("result", "workunit", "host_app_version", "host"))
    from boincpy.errors import DatabaseError
    from boincpy.sched import hosts

    def fail(ctx, orig):
        raise DatabaseError("database error 1205: Lock wait timeout exceeded")
    monkeypatch.setattr(hosts, "write_host", fail)
    r = call(env, body("cycle", "08_sched_report_result.body.xml"))
    assert r.acks() == []
    assert r.messages()[0][1].startswith("Server error")
    assert env.snapshot(("result", "workunit", "host_app_version", "host")) == snap
    monkeypatch.undo()
    assert call(env, body("cycle", "08_sched_report_result.body.xml")).acks() == ["wu1_0"]
    assert env.row("SELECT server_state FROM result WHERE id = %s", (rid,)) == \
        {"server_state": 5}


def test_reports_lost_with_the_transaction_are_not_acknowledged(sched_env, monkeypatch):
    # A deadlock makes the server roll back the whole transaction, reports
    # included, even when it strikes a part that may fail alone (storing a
    # trickle).  The request must then fail as a whole: acknowledging the
    # reports would make the client forget results that were never written.
    env = sched_env
    wuid, rid = _reporting_host(env, hav_quota=100)
    snap = env.snapshot(("result", "workunit", "host_app_version", "host", "msg_from_host"))
    data = body("cycle", "08_sched_report_result.body.xml").decode().replace(
        "</scheduler_request>", "<msg_from_host>\n<result_name>wu1_0</result_name>\n"
        "<time>1795335270</time>\n<variety>progress</variety>\n</msg_from_host>\n"
        "</scheduler_request>").encode()
    from boincpy.db import msg
    from boincpy.errors import DatabaseError

    def deadlock(db, *args):
        db._run_plain(b"ROLLBACK")              # what the server does to the victim
        raise DatabaseError("database error 1213: Deadlock found when trying to get lock")
    monkeypatch.setattr(msg, "insert_msg_from_host", deadlock)
    r = call(env, data)
    assert r.acks() == [] and r.root.find("message_ack") is None
    assert r.messages()[0][1].startswith("Server error")
    assert env.snapshot(("result", "workunit", "host_app_version", "host",
                         "msg_from_host")) == snap
    monkeypatch.undo()
    assert call(env, data).acks() == ["wu1_0"]


def test_a_request_caught_in_a_deadlock_is_handled_once_more(sched_env, monkeypatch):
    # InnoDB picks one of two deadlocked transactions and rolls it back whole;
    # the scheduler handles that request again (nothing of it was written)
    # instead of making the client wait out an error reply's delay.
    env = sched_env
    wuid, rid = _reporting_host(env, hav_quota=100)
    from boincpy.errors import DatabaseError
    from boincpy.sched import hosts
    write_host = hosts.write_host
    victims = []

    def deadlock_once(ctx, orig, times=1):
        if len(victims) < times:
            victims.append(ctx.host["id"])
            ctx.db._run_plain(b"ROLLBACK")        # what the server does to the victim
            err = DatabaseError("database error 1213: Deadlock found when trying to get lock")
            err.mysql_code = 1213
            raise err
        return write_host(ctx, orig)
    monkeypatch.setattr(hosts, "write_host", deadlock_once)
    r = call(env, body("cycle", "08_sched_report_result.body.xml"))
    assert victims == [1]
    assert r.acks() == ["wu1_0"]
    assert "handling it again" in r.log
    res = env.row("SELECT server_state, outcome FROM result WHERE id = %s", (rid,))
    assert (res["server_state"], res["outcome"]) == (5, 1)
    assert env.row("SELECT max_jobs_per_day FROM host_app_version")["max_jobs_per_day"] == 200
    # every try in a row (TRIES): the client gets an error reply, and
    # nothing is written
    from boincpy.sched.handler import TRIES
    assert TRIES >= 2
    wuid2, rid2 = env.add_job("wu2", state=4, hostid=1, userid=1, sent_time=int(time.time()),
                              report_deadline=int(time.time()) + 600000)
    del victims[:]
    monkeypatch.setattr(hosts, "write_host",
                        lambda ctx, orig: deadlock_once(ctx, orig, TRIES))
    r = call(env, body("cycle", "08_sched_report_result.body.xml").replace(b"wu1_0", b"wu2_0"))
    assert victims == [1] * TRIES and r.acks() == []
    assert r.messages()[0][1].startswith("Server error")
    assert env.row("SELECT server_state FROM result WHERE id = %s", (rid2,)) == \
        {"server_state": 4}


@pytest.mark.parametrize("mode", ["cgi", "persistent"])
def test_jobs_claimed_by_a_request_the_database_gave_up_go_back_to_the_array(
        sched_env, persistent, monkeypatch, mode):
    # The claim's slot stays reserved until the commit; the transaction was
    # undone every time, so the job is in the array again, unsent.
    from boincpy import shmem
    from boincpy.errors import DatabaseError
    from boincpy.sched import hosts
    from boincpy.sched.handler import TRIES
    env = sched_env
    _reporting_host(env, hav_quota=100)
    wuid2, rid2 = env.add_job("wu2")
    ja = env.job_array(refill=True)
    slot = [i for i in range(ja.nslots) if ja.slot_head(i)[4] == rid2][0]
    tries = []

    def deadlock(ctx, orig):
        tries.append(ctx.work.pending_slots if ctx.work else None)
        ctx.db._run_plain(b"ROLLBACK")
        err = DatabaseError("database error 1213: Deadlock found when trying to get lock")
        err.mysql_code = 1213
        raise err
    monkeypatch.setattr(hosts, "write_host", deadlock)
    r = call(env, body("cycle", "08_sched_report_result.body.xml"),
             resident=persistent if mode == "persistent" else None)
    assert r.acks() == [] and r.names("result") == []
    assert tries == [{slot}] * TRIES               # claimed each time, then undone
    assert ja.slot_head(slot)[0] == shmem.PRESENT and ja.slot_head(slot)[4] == rid2
    assert env.row("SELECT server_state FROM result WHERE id = %s", (rid2,)) == \
        {"server_state": 2}


def test_reports_of_one_request_are_written_all_or_none_when_a_row_changed(sched_env,
                                                                          monkeypatch):
    """Two reports in one request (one UPDATE joined with a derived table):
    one of the rows changed between the request's read and its write, so
    neither is written nor acknowledged; the next report of both is
    judged against the rows as they are then."""
    import re
    from boincpy.sched import reports
    env = sched_env
    wuid, rid = _reporting_host(env, hav_quota=100)
    now = int(time.time())
    wuid2, rid2 = env.add_job("wu2", state=4, hostid=1, userid=1, sent_time=now - 100,
                              report_deadline=now + 600000)
    data = body("cycle", "08_sched_report_result.body.xml")
    block = re.search(rb"<result>.*?</result>\s*", data, re.S).group(0)
    data = data.replace(block, block + block.replace(b"wu1_0", b"wu2_0"), 1)
    accept = reports._accept
    changed = []

    def meanwhile(ctx, row, r, *more):
        if not changed:                     # the validator, between read and write
            env.execute("UPDATE result SET validate_state = 1 WHERE id = %s", (rid2,))
            changed.append(1)
        return accept(ctx, row, r, *more)
    monkeypatch.setattr(reports, "_accept", meanwhile)
    r = call(env, data)
    assert changed == [1] and r.acks() == []
    assert "1 of 2 result rows changed meanwhile" in r.log
    rows = {x["id"]: x for x in env.rows("SELECT id, server_state, received_time FROM result")}
    assert [(rows[i]["server_state"], rows[i]["received_time"]) for i in (rid, rid2)] == \
        [(4, 0), (4, 0)]
    r = call(env, data)
    assert sorted(r.acks()) == ["wu1_0", "wu2_0"]
    assert [env.row("SELECT server_state FROM result WHERE id = %s", (i,))["server_state"]
            for i in (rid, rid2)] == [5, 5]


def test_result_reported_twice_is_acked_twice_and_processed_once(sched_env):
    env = sched_env
    wuid, rid = _reporting_host(env)
    data = body("cycle", "08_sched_report_result.body.xml")
    assert call(env, data).acks() == ["wu1_0"]
    env.execute("UPDATE workunit SET transition_time = 12345")
    snap = env.snapshot(("result", "workunit", "host_app_version"))
    r = call(env, data)
    assert r.acks() == ["wu1_0"]
    assert env.snapshot(("result", "workunit", "host_app_version")) == snap


def test_stale_report_does_not_undo_a_validation(sched_env, monkeypatch):
    """Bug found by the fault test: a client gave up on a stalled RPC and
    reported again; both requests read the result IN_PROGRESS, the retry
    wrote it, the validator validated and credited it, and then the stalled
    request wrote its stale row (validate_state INIT) over it -- so the
    transitioner asked for validation again and the credit was granted twice.
    The report's UPDATE must only apply to the row as it was read; a report
    that finds the row changed is not acknowledged (the client sends it again
    and it is then handled against the row as it is)."""
    from boincpy.sched import reports
    env = sched_env
    wuid, rid = _reporting_host(env, hav_quota=100)
    data = body("cycle", "08_sched_report_result.body.xml")
    accept = reports._accept
    retried = []

    def meanwhile(ctx, row, r, *more):
        if not retried:
            retried.append(None)
            retried[0] = call(env, data)              # the retry, handled in full
            env.execute("UPDATE result SET validate_state = 1, granted_credit = 25 "
                        "WHERE id = %s", (rid,))     # ... and then the validator
        return accept(ctx, row, r, *more)

    monkeypatch.setattr(reports, "_accept", meanwhile)
    stalled = call(env, data)
    assert retried[0].acks() == ["wu1_0"], retried[0].log
    res = env.row("SELECT * FROM result WHERE id = %s", (rid,))
    assert (res["server_state"], res["outcome"], res["validate_state"],
            res["granted_credit"]) == (5, 1, 1, 25)
    assert stalled.acks() == []
    assert "1 of 1 result rows changed meanwhile" in stalled.log
    # the quota was doubled once, by the report that was written
    assert env.row("SELECT max_jobs_per_day FROM host_app_version")["max_jobs_per_day"] == 200
    monkeypatch.setattr(reports, "_accept", accept)
    again = call(env, data)                          # the client reports it once more
    assert again.acks() == ["wu1_0"]
    assert env.row("SELECT validate_state FROM result WHERE id = %s", (rid,))["validate_state"] == 1


@pytest.mark.parametrize("fixture,state,exit_status", [
    ("report_exit_status_3.body.xml", 3, 3),
    ("report_missing_signature.body.xml", 1, -186),
    ("report_too_many_exit0.body.xml", 3, -226),
])
def test_failed_tasks_are_client_errors_and_cut_the_quota(sched_env, fixture, state,
                                                           exit_status):
    env = sched_env
    wuid, rid = _reporting_host(env)
    r = call(env, body("errors", fixture))
    assert r.acks() == ["wu1_0"]
    res = env.row("SELECT * FROM result WHERE id = %s", (rid,))
    assert (res["server_state"], res["outcome"], res["validate_state"], res["client_state"],
            res["exit_status"]) == (5, 3, 2, state, exit_status)
    hav = env.row("SELECT * FROM host_app_version")
    assert hav["max_jobs_per_day"] == 499            # quota initialised to 500, then -1
    assert hav["consecutive_valid"] == 0


def test_reports_that_are_not_ours_to_take(sched_env):
    env = sched_env
    attach(env)
    now = int(time.time())
    other = env.add_user("other-key", name="other", email="other@example.com")
    other_host = env.add_host(other)
    env.add_job("theirs", state=4, hostid=other_host, userid=other, sent_time=now - 100)
    env.add_job("unsent", state=2)
    mine2 = env.add_host(1, domain_name="second")
    env.add_job("mine", state=4, hostid=mine2, userid=1, sent_time=now - 100)
    data = body("cycle", "08_sched_report_result.body.xml").decode()
    start, end = data.index("<result>"), data.index("</result>") + len("</result>\n")
    block = data[start:end]
    results = "".join(block.replace("<name>wu1_0</name>", "<name>%s</name>" % n)
                      for n in ("theirs_0", "unsent_0", "nowhere_0", "f_upload_0", "mine_0"))
    before = env.snapshot(("workunit",))
    r = call(env, (data[:start] + results + data[end:]).encode())
    # every one is acknowledged, the refused ones first (BOINC's order)
    assert r.acks() == ["f_upload_0", "theirs_0", "unsent_0", "nowhere_0", "mine_0"]
    assert env.row("SELECT server_state FROM result WHERE name = 'theirs_0'")["server_state"] == 4
    assert env.row("SELECT server_state FROM result WHERE name = 'unsent_0'")["server_state"] == 2
    mine = env.row("SELECT * FROM result WHERE name = 'mine_0'")
    assert (mine["server_state"], mine["hostid"]) == (5, 1)   # same user: taken
    assert "Not even the same user" in r.log and "reported result not in DB" in r.log
    assert "completed file xfer f_upload_0" in r.log
    changed = [w["name"] for w, b in zip(env.snapshot(("workunit",))["workunit"],
                                          before["workunit"]) if w != b]
    assert changed == ["mine"]


def test_max_results_accepted(sched_env):
    env = sched_env
    attach(env)
    now = int(time.time())
    for n in ("a", "b"):
        env.add_job(n, state=4, hostid=1, userid=1, sent_time=now - 100)
    env.set_options(max_results_accepted=1)
    data = body("cycle", "08_sched_report_result.body.xml").decode()
    start, end = data.index("<result>"), data.index("</result>") + len("</result>\n")
    block = data[start:end]
    results = "".join(block.replace("<name>wu1_0</name>", "<name>%s_0</name>" % n)
                      for n in ("a", "b"))
    r = call(env, (data[:start] + results + data[end:]).encode())
    assert r.acks() == ["a_0"]                       # b_0 stays with the client for next time
    assert env.row("SELECT server_state FROM result WHERE name = 'b_0'")["server_state"] == 4


def test_late_result_after_timeout_is_taken(sched_env):
    env = sched_env
    wuid, rid = _reporting_host(env)
    env.execute("UPDATE result SET server_state = 5, outcome = 4 WHERE id = %s", (rid,))
    r = call(env, body("cycle", "08_sched_report_result.body.xml"))
    assert r.acks() == ["wu1_0"]
    assert env.row("SELECT outcome FROM result WHERE id = %s", (rid,))["outcome"] == 1


# -- other results, trickles, preferences -----------------------------------------------

def test_result_aborts(sched_env):
    env = sched_env
    attach(env)
    now = int(time.time())
    env.add_job("keep", state=4, hostid=1, userid=1, sent_time=now)
    wu_c, _ = env.add_job("cancelled", state=4, hostid=1, userid=1, sent_time=now)
    env.execute("UPDATE workunit SET error_mask = 16 WHERE id = %s", (wu_c,))
    wu_a, _ = env.add_job("assimilated", state=4, hostid=1, userid=1, sent_time=now)
    env.execute("UPDATE workunit SET assimilate_state = 2 WHERE id = %s", (wu_a,))
    data = body("cycle", "05_sched_workfetch_task_in_progress.body.xml").decode()
    others = "".join("<other_result><name>%s</name><app_version>0</app_version></other_result>"
                     % n for n in ("keep_0", "cancelled_0", "assimilated_0", "ghost_0"))
    data = re.sub(r"<other_results>.*</other_results>",
                  "<other_results>%s</other_results>" % others, data, flags=re.S)
    r = call(env, data.encode())
    assert r.names("result_abort") == ["cancelled_0", "ghost_0"]
    assert r.names("result_abort_if_not_started") == ["assimilated_0"]
    assert ("low", "Result ghost_0 is no longer usable") in r.messages()


def test_trickles_up_and_down(sched_env):
    env = sched_env
    attach(env)
    env.set_options(msg_to_host=1)
    env.execute("INSERT INTO msg_to_host (create_time, hostid, variety, handled, xml) VALUES "
                "(1, 1, 'v', 0, '<trickle_down>\n<result_name>r</result_name>\n"
                "</trickle_down>')")
    data = body("no_work", "03_sched_workfetch_hostid1.body.xml").decode().replace(
        "</scheduler_request>", "<msg_from_host>\n<result_name>wu1_0</result_name>\n"
        "<time>1795335270</time>\n<variety>progress</variety>\n<p>42</p>\n</msg_from_host>\n"
        "</scheduler_request>")
    r = call(env, data.encode())
    assert r.root.find("message_ack") is not None
    assert r.root.find("trickle_down").findtext("result_name") == "r"
    row = env.row("SELECT * FROM msg_from_host")
    assert (row["hostid"], row["variety"], row["handled"]) == (1, "progress", 0)
    assert "<p>42</p>" in row["xml"]
    assert env.row("SELECT handled FROM msg_to_host")["handled"] == 1


def test_preferences(sched_env):
    env = sched_env
    newer = ("<global_preferences>\n<mod_time>%d</mod_time>\n<max_ncpus_pct>50</max_ncpus_pct>"
             "\n</global_preferences>\n" % (time.time() - 10))
    env.execute("UPDATE user SET global_prefs = %s, project_prefs = %s", (
        newer, "<project_preferences>\n<resource_share>77</resource_share>\n"
               "</project_preferences>"))
    r = attach(env)
    # the account's preferences are newer than the client's working ones: sent
    assert r.root.find("global_preferences").findtext("max_ncpus_pct") == "50"
    assert r.root.find("project_preferences").findtext("resource_share") == "77"
    # master preferences from this account's client, newer than ours: stored
    master = ("<global_preferences>\n<mod_time>%d</mod_time>\n<max_ncpus_pct>25"
              "</max_ncpus_pct>\n</global_preferences>" % (time.time() - 1))
    data = body("no_work", "03_sched_workfetch_hostid1.body.xml").decode().replace(
        "<cross_project_id>", master + "\n<global_prefs_source_email_hash>%s"
        "</global_prefs_source_email_hash>\n<cross_project_id>" % md5_hex("tester@example.com"))
    r = call(env, data.encode())
    assert "<max_ncpus_pct>25</max_ncpus_pct>" in env.row("SELECT global_prefs FROM user")[
        "global_prefs"]
    assert r.root.find("global_preferences") is None


def test_debug_req_reply_dir(sched_env):
    env = sched_env
    d = env.root / "req_reply"
    d.mkdir()
    env.set_options(debug_req_reply_dir=str(d))
    data = body("cycle", "02_sched_initial_hostid0.body.xml")
    log = SchedLog(io.StringIO(), 3)
    out = handle_request(env.cfg, data, dict(ENV), job_array=env.job_array(), log=log)
    pid = os.getpid()
    assert (d / ("%d_0_sched_request.xml" % pid)).read_bytes() == data
    assert (d / ("%d_0_sched_reply.xml" % pid)).read_bytes() == out
    assert (d / ("%d_0_sched.log" % pid)).read_text() == "PID: %d Client IP: 192.0.2.7\n" % pid


def test_log_lines_have_boincs_shape(sched_env):
    env = sched_env
    # BOINC's scheduler logs to log_<its host's name>, whatever <log_dir> says
    log_path = pathlib.Path(env.cfg.host_log_dir) / "scheduler.log"
    handle_request(env.cfg, body("cycle", "02_sched_initial_hostid0.body.xml"), dict(ENV),
                   job_array=env.job_array())
    lines = log_path.read_text().splitlines()
    pattern = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{4} UTC \[PID=%-5d\] "
                         % os.getpid())
    assert lines and all(pattern.match(line) for line in lines)
    assert any(line.endswith("]   Request: [USER#1] [HOST#1] [IP 192.0.2.7] client 7.20.5")
               for line in lines)


def test_project_wide_flags_reach_the_client(sched_env):
    env = sched_env
    attach(env)
    env.set_options(next_rpc_delay=3600, ended=1, non_cpu_intensive=1,
                    verify_files_on_app_start=1, strict_memory_bound=1)
    r = workfetch(env, rpc_seqno=1)
    assert r.text("next_rpc_delay") == "3600.000000"
    assert r.text("ended") == "1"
    for flag in ("non_cpu_intensive", "verify_files_on_app_start", "strict_memory_bound"):
        assert r.root.find(flag) is not None, flag


def test_nowork_skip_answers_without_the_database(sched_env):
    env = sched_env
    attach(env)
    env.set_options(nowork_skip=1)
    before = env.snapshot()
    r = workfetch(env, rpc_seqno=1)
    assert r.messages() == [("low", "No work available")]
    assert r.text("userid") is None
    assert env.snapshot() == before
    assert "No work - skipping DB access" in r.log


def test_sticky_files_matching_file_delete_regex_are_deleted(sched_env):
    env = sched_env
    attach(env)
    (env.root / "file_delete_regex").write_text("^old_.*\n\n[invalid\n")
    data = body("no_work", "03_sched_workfetch_hostid1.body.xml").decode().replace(
        "</scheduler_request>", "<file_info>\n<name>old_data_1</name>\n<nbytes>10</nbytes>\n"
        "<status>1</status>\n<sticky/>\n</file_info>\n<file_info>\n<name>keep_me</name>\n"
        "</file_info>\n</scheduler_request>")
    r = call(env, data.encode())
    assert [e.text for e in r.root.findall("delete_file_info")] == ["old_data_1"]
    assert "invalid regular expression in file_delete_regex: [invalid" in r.log


def test_many_reports_are_written_in_a_few_statements(sched_env, monkeypatch):
    """A request reporting many results does its SQL in a few statements
    (a read, a locking read, one UPDATE of the results, one of their
    workunits), not one or more per result; every report is written and
    acknowledged as when reported alone."""
    from boincpy.db.lite import LiteDatabase
    from boincpy.sched import reports
    env = sched_env
    attach(env)
    now = int(time.time())
    n = 30
    for k in range(1, n + 1):
        env.add_job("wu%d" % k, state=4, hostid=1, userid=1, sent_time=now - 100,
                    report_deadline=now + 600000)
    text = body("cycle", "08_sched_report_result.body.xml").decode()
    block = re.search(r"<result>.*?</result>\n?", text, re.S).group(0)
    text = text.replace(block, "".join(block.replace("wu1_0", "wu%d_0" % k)
                                       for k in range(1, n + 1)))
    statements = []
    counting = []
    for method in ("execute", "query", "executemany"):
        real = getattr(LiteDatabase, method)

        def counted(self, sql, *a, _real=real, **k):
            if counting:
                statements.append(sql.split(None, 1)[0].upper())
            return _real(self, sql, *a, **k)
        monkeypatch.setattr(LiteDatabase, method, counted)
    real_handle = reports.handle_results

    def handle(ctx):
        counting.append(True)
        try:
            return real_handle(ctx)
        finally:
            counting.clear()
    monkeypatch.setattr(reports, "handle_results", handle)
    r = call(env, text.encode())
    assert sorted(r.acks()) == sorted("wu%d_0" % k for k in range(1, n + 1)), r.log
    rows = env.rows("SELECT server_state, outcome, validate_state, cpu_time FROM result")
    assert len(rows) == n
    assert all((x["server_state"], x["outcome"], x["validate_state"]) == (5, 1, 0) for x in rows)
    assert all(x["cpu_time"] == pytest.approx(0.007259) for x in rows)
    assert env.row("SELECT COUNT(*) AS n FROM workunit WHERE transition_time >= %s",
                   (now,))["n"] == n
    data_statements = [s for s in statements if s in ("SELECT", "UPDATE", "INSERT")]
    assert len(data_statements) <= 4, statements


@pytest.mark.parametrize("mode", ["cgi", "persistent"])
@pytest.mark.parametrize("quota,sent", [(2, False), (3, True)])
def test_job_choice_sees_the_quota_the_reports_left(sched_env, persistent, mode, quota, sent):
    """A failed task cuts the host's daily quota before job choice looks at
    it: with one job sent today, a quota of 2 cut to 1 leaves no job for
    today, 3 cut to 2 leaves one."""
    env = sched_env
    _reporting_host(env, hav_quota=quota)
    env.execute("UPDATE host_app_version SET n_jobs_today = 1")
    env.add_job("wu2")
    env.job_array(refill=True)
    r = call(env, body("errors", "report_exit_status_3.body.xml"),
             resident=persistent if mode == "persistent" else None)
    assert r.acks() == ["wu1_0"], r.log
    assert (r.names("result") == ["wu2_0"]) is sent, r.log
    hav = env.row("SELECT max_jobs_per_day, n_jobs_today FROM host_app_version")
    assert (hav["max_jobs_per_day"], hav["n_jobs_today"]) == (quota - 1, 1 + sent)
    if not sent:
        assert "daily quota" in r.log


def test_a_persistent_request_reads_ahead_and_defers_its_writes(sched_env, persistent):
    """On a persistent connection the host's rows (host_app_version, the
    reported results) are read with the host row, the job's claim goes with
    the slow check's read, and the writes nobody reads back go with the
    COMMIT: a report with a new job makes five round trips to MariaDB, a
    report alone three; the rows are as the CGI writes them."""
    env = sched_env
    wuid, rid = _reporting_host(env, hav_quota=100)
    wuid2, rid2 = env.add_job("wu2")
    env.job_array(refill=True)
    before = int(time.time())
    persistent.sent.clear()
    r = call(env, body("cycle", "08_sched_report_result.body.xml"), resident=persistent)
    assert r.acks() == ["wu1_0"] and r.names("result") == ["wu2_0"], r.log
    assert len(persistent.sent) == 5, b" | ".join(s[:70].replace(b"\n", b" ") for s in persistent.sent)
    assert persistent.sent[0].count(b"SELECT") == 3       # host + user, its versions, reports
    assert b"UPDATE result SET server_state = 4" in persistent.sent[3]    # with the check
    res = env.row("SELECT server_state, outcome FROM result WHERE id = %s", (rid,))
    assert (res["server_state"], res["outcome"]) == (5, 1)
    assert env.row("SELECT transition_time FROM workunit WHERE id = %s",
                   (wuid,))["transition_time"] >= before
    assert env.row("SELECT server_state, hostid FROM result WHERE id = %s", (rid2,)) == \
        {"server_state": 4, "hostid": 1}
    hav = env.row("SELECT max_jobs_per_day, n_jobs_today FROM host_app_version")
    assert (hav["max_jobs_per_day"], hav["n_jobs_today"]) == (200, 1)
    assert env.row("SELECT rpc_seqno FROM host WHERE id = 1")["rpc_seqno"] == 1
    # a report and no work wanted: read, write the result, COMMIT with the rest
    wuid3, rid3 = env.add_job("wu3", state=4, hostid=1, userid=1, sent_time=before - 100,
                              report_deadline=before + 600000)
    data = re.sub(rb"<(work_req_seconds|cpu_req_secs)>[^<]*<", rb"<\1>0<",
                  body("cycle", "08_sched_report_result.body.xml")).replace(b"wu1_0", b"wu3_0")
    persistent.sent.clear()
    r = call(env, data.replace(b"<rpc_seqno>1<", b"<rpc_seqno>2<"), resident=persistent)
    assert r.acks() == ["wu3_0"] and r.names("result") == [], r.log
    assert len(persistent.sent) == 3, persistent.sent
    assert env.row("SELECT server_state FROM result WHERE id = %s", (rid3,)) == \
        {"server_state": 5}
    assert env.row("SELECT transition_time FROM workunit WHERE id = %s",
                   (wuid3,))["transition_time"] >= before


@pytest.mark.parametrize("replaced", ["another account's host", "a merged host"])
def test_rows_read_ahead_for_a_host_that_is_not_the_requests_are_dropped(sched_env,
                                                                        persistent, replaced):
    """The host's versions are read with the host row the request names;
    when that is not the request's host (another account's: a new host is
    made; a merged one: forwarded), its rows must not stand for the real
    host's.  Here the named host has used up its daily quota."""
    env = sched_env
    attach(env)
    av = env.app_version()
    if replaced == "another account's host":
        other = env.add_user("other-key", name="other", email="other@example.com")
        named = env.add_host(other, domain_name="elsewhere")
    else:
        named = env.add_host(0, rpc_seqno=1)        # merged into host 1
    env.execute("INSERT INTO host_app_version (host_id, app_version_id, max_jobs_per_day, "
                "n_jobs_today) VALUES (%s, %s, 1, 1)", (named, av["id"]))
    env.add_job("wu1")
    env.job_array(refill=True)
    r = call(env, body("no_work", "03_sched_workfetch_hostid1.body.xml", hostid=named,
                       allow_multiple_clients=1), resident=persistent)
    assert r.names("result") == ["wu1_0"], r.log
    assert "daily quota" not in r.log
    real = int(r.text("hostid"))
    assert real != named
    # the job is counted on the real host's own row, made now; the named one's is untouched
    assert env.rows("SELECT host_id, max_jobs_per_day, n_jobs_today FROM host_app_version "
                    "ORDER BY host_id = %s", (real,)) == [
        {"host_id": named, "max_jobs_per_day": 1, "n_jobs_today": 1},
        {"host_id": real, "max_jobs_per_day": 0, "n_jobs_today": 1}]


def test_a_persistent_request_that_fails_is_not_taken_for_a_missing_feeder(sched_env):
    """A persistent process attaches the job array itself; a failure while
    handling the request is a server error in the log, not "feeder not
    running"."""
    from boincpy.resident import Resident
    env = sched_env
    env.job_array()
    resident = Resident(str(env.root), persistent=True)
    try:
        env.execute("DROP TABLE host")
        log = SchedLog(io.StringIO(), 3)
        out = handle_request(env.cfg, body("no_work", "03_sched_workfetch_hostid1.body.xml"),
                             dict(ENV), log=log, resident=resident)
        r = Reply(out, log.stream.getvalue())
    finally:
        resident.close()
    assert r.messages()[0][1].startswith("Server error: the scheduler could not handle"), r.raw
    assert "Scheduler failed" in r.log and "Can't attach shmem" not in r.log


def test_a_persistent_process_keeps_its_scheduler_log_open(sched_env, persistent,
                                                           monkeypatch):
    """A persistent process opens scheduler.log once, as BOINC's FastCGI
    scheduler does, not once a request; each request's lines are in the file
    when it has been answered, start at indent 0 again, and when the log is
    rotated (renamed away) the next request writes a new scheduler.log."""
    env = sched_env
    attach(env)
    opened = []
    real_open = SchedLog.open

    def counting_open(path, *args, **kwargs):
        opened.append(path)
        return real_open(path, *args, **kwargs)
    monkeypatch.setattr(SchedLog, "open", counting_open)
    path = os.path.join(env.cfg.host_log_dir, "scheduler.log")

    def request(seqno):
        data = body("no_work", "03_sched_workfetch_hostid1.body.xml", rpc_seqno=seqno)
        out = handle_request(env.cfg, data, dict(ENV), job_array=env.job_array(),
                             resident=persistent)
        assert b"</scheduler_reply>" in out
        with open(path) as f:
            return f.read().count("Scheduler ran")

    ran = request(10)
    assert request(11) == ran + 1 and request(12) == ran + 2
    assert opened == [path]
    # a request starts at indent 0 whatever the last one left (BOINC's
    # set_indent_level(0)): seen on a line logged before the request is read
    persistent.kept_open(path, None).indent = 3
    key = os.path.join(env.cfg.key_dir, "code_sign_public")
    os.rename(key, key + ".away")
    try:
        handle_request(env.cfg, body("no_work", "03_sched_workfetch_hostid1.body.xml"),
                       dict(ENV), job_array=env.job_array(), resident=persistent)
    finally:
        os.rename(key + ".away", key)
    with open(path) as f:
        assert "] [CRITICAL] Can't read code sign key file" in f.read()
    os.rename(path, path + ".1")
    assert request(14) == 1
    assert len(opened) == 2
    with open(path + ".1") as f:
        assert f.read().count("Scheduler ran") == ran + 2


def test_a_persistent_process_reads_project_files_once(sched_env, persistent, monkeypatch):
    """gui_urls.xml and project_files.xml: read once by a persistent process
    (one stat a request after), again when changed; a CGI's process reads
    them on its one request."""
    from boincpy.sched import reply as reply_mod
    env = sched_env
    reads = []
    real = reply_mod._read_text
    monkeypatch.setattr(reply_mod, "_read_text", lambda path: reads.append(path) or real(path))
    path = os.path.join(str(env.root), "project_files.xml")
    with open(path, "w") as f:
        f.write("<project_files>\n<file_ref><file_name>a.png</file_name></file_ref>\n"
                "</project_files>")
    for _ in range(3):
        r = call(env, body("no_work", "03_sched_workfetch_hostid1.body.xml", host_cpid=CPID),
                 resident=persistent)
        assert [e.text for e in r.root.iterfind("project_files/file_ref/file_name")] == ["a.png"]
    assert reads.count(path) == 1
    os.replace(path, path + ".old")
    with open(path, "w") as f:
        f.write("<project_files>\n<file_ref><file_name>b.png</file_name></file_ref>\n"
                "</project_files>\n")
    r = call(env, body("no_work", "03_sched_workfetch_hostid1.body.xml", host_cpid=CPID),
             resident=persistent)
    assert [e.text for e in r.root.iterfind("project_files/file_ref/file_name")] == ["b.png"]
    assert reads.count(path) == 2
    r = call(env, body("no_work", "03_sched_workfetch_hostid1.body.xml", host_cpid=CPID))
    assert reads.count(path) == 3            # no resident: read on its request
