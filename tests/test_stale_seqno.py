"""A scheduler request whose rpc_seqno is lower than the host's (a client
restored from a backup, or a delayed duplicate request) handled as BOINC's
authenticate_user does: no new host when a similar one exists (the same
one), the client told its host id again (so it restarts its sequence), and
the host's in-progress jobs left alone when the client lists jobs it holds."""

import io
import xml.etree.ElementTree as ET

from boincpy.log import SchedLog
from boincpy.sched.handler import handle_request
from boincpy.testing.simclient import ClientAppVersion, SchedulerRequest
import test_sched_work
from tests import sched_env as _sched_env
from tests.sched_env import CLIENT_AUTH

sched_env = _sched_env.sched_env
feeder_for = test_sched_work.feeder_for
ENV = {"REMOTE_ADDR": "127.0.0.1", "REQUEST_METHOD": "POST"}


def rpc(env, array, seqno, hostid, held=(), work=0.0, ip="127.0.0.1"):
    req = SchedulerRequest(CLIENT_AUTH, hostid=hostid, rpc_seqno=seqno, work_req_seconds=work,
                           cpu_req_instances=2 if work else 0, host_info={"ip_addr": ip},
                           app_versions=[ClientAppVersion("example_app", 100)],
                           other_results=[(n, 0, "") for n in held])
    log = SchedLog(io.StringIO(), 4)
    out = handle_request(env.cfg, req.xml().encode(), dict(ENV), job_array=array.array,
                         log=log).decode()
    root = ET.fromstring(out.partition("\n\n")[2])
    return root, log.stream.getvalue()


def start(env, feeder_for):
    """A host holding two jobs whose last RPC had seqno 5."""
    env.add_job("wu1")
    env.add_job("wu2")
    array = feeder_for(env.cfg)
    root, _ = rpc(env, array, 0, 0, work=864000.0)
    sent = sorted(r.findtext("name") for r in root.findall("result"))
    assert sent == ["wu1_0", "wu2_0"]
    hostid = int(root.findtext("hostid"))
    root, log = rpc(env, array, 5, hostid, held=sent)
    assert root.findtext("hostid") is None
    assert env.row("SELECT rpc_seqno FROM host WHERE id = %s", (hostid,))["rpc_seqno"] == 5
    return array, hostid, sent


def states(env):
    return {r["name"]: (r["server_state"], r["outcome"], r["hostid"])
            for r in env.rows("SELECT * FROM result")}


def test_lower_seqno_holding_jobs_keeps_host_and_jobs(sched_env, feeder_for):
    env = sched_env
    array, hostid, sent = start(env, feeder_for)
    before = states(env)
    root, log = rpc(env, array, 4, hostid, held=sent)
    assert "RPC seqno 4 less than expected 5; creating new host" in log
    assert "Found similar existing host for this user - assigned." in log
    # the same host record, re-announced so that the client restarts at seqno 0
    assert root.findtext("hostid") == str(hostid)
    assert env.rows("SELECT id FROM host") == [{"id": hostid}]
    assert env.row("SELECT rpc_seqno FROM host")["rpc_seqno"] == 0
    assert states(env) == before == {n: (4, 0, hostid) for n in sent}
    assert root.find("result_abort") is None
    assert "changed CPID" not in log
    # the client goes on from seqno 1 as the same host
    root, log = rpc(env, array, 1, hostid, held=sent)
    assert root.findtext("hostid") is None and "less than expected" not in log
    assert states(env) == before


def test_lower_seqno_holding_nothing_marks_jobs_detached(sched_env, feeder_for):
    # BOINC: a similar host found and no <other_results> -> its jobs are over
    env = sched_env
    array, hostid, sent = start(env, feeder_for)
    root, log = rpc(env, array, 4, hostid)
    assert root.findtext("hostid") == str(hostid)
    assert states(env) == {n: (5, 7, hostid) for n in sent}      # OVER, CLIENT_DETACHED
    assert "changed CPID: marking in-progress result wu1_0 as client error!" in log


def test_lower_seqno_from_elsewhere_gets_a_new_host(sched_env, feeder_for):
    # not similar (another IP address): a copied state file -> a host of its own
    env = sched_env
    array, hostid, sent = start(env, feeder_for)
    before = states(env)
    root, log = rpc(env, array, 4, hostid, held=sent, ip="10.1.2.3")
    new = int(root.findtext("hostid"))
    assert new != hostid
    assert [r["id"] for r in env.rows("SELECT id FROM host ORDER BY id")] == [hostid, new]
    assert states(env) == before
