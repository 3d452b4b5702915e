"""Adaptive replication and host reliability per (host, app version), as BOINC
does them, with hosts that are right, wrong and flaky.

The app has target_nresults 2 and its jobs are created unreplicated
(target_nresults and min_quorum 1).  A job goes to one host at a time
through the real parts: requests laid out as the stock client writes them
(boincpy.testing.simclient) handled by the scheduler in-process, the
feeder's array, job choice (which replicates the
job when the host's version is not trusted), the transitioner (replicas,
timeouts), sample_bitwise_validator comparing the output files (which keeps
consecutive_valid per host app version).  A host is trusted once it has 10
valid replicated results in a row, then with probability 1 - 1/consecutive_valid
per request, so a trusted host is still checked now and then; its first
invalid result (or timeout) ends the trust.
"""

import hashlib
import io
import re
import time
import xml.etree.ElementTree as ET

import pytest

from backend_rows import add_user, add_workunit, hav, make_daemon, project_config, upload_path
from boincpy import shmem
from boincpy.daemons.sample_validators import BitwiseValidator
from boincpy.daemons.transitioner import Transitioner
from boincpy.db import connect
from boincpy.log import SchedLog
from boincpy.sched.handler import handle_request
from boincpy.testing import simclient as sc
from jobs_helpers import add_app_version, make_feeder
from tests.sched_env import code_sign_keys

UNSENT, IN_PROGRESS, OVER = 2, 4, 5


class Project:
    """The project and its four hosts (each a client talking to the scheduler
    in-process); one job at a time goes through it."""

    def __init__(self, root):
        self.root = root
        private, public = code_sign_keys()
        (root / "keys" / "code_sign_public").write_text(public)
        self.cfg = project_config(root, one_result_per_user_per_wu=1, daily_result_quota=500,
                                  dont_generate_upload_certificates=1, debug_send=1,
                                  min_sendwork_interval=0)
        self.db = connect(self.cfg)
        self.db.execute("UPDATE app SET target_nresults = 2")
        self.appid = self.db.query_value("SELECT id FROM app")
        self.av = add_app_version(self.db, self.appid)
        self.clients = {}
        for name in ("right", "partner1", "partner2", "flaky"):
            auth = hashlib.md5(name.encode()).hexdigest()       # no "_": not a weak key
            self.db.execute("UPDATE user SET authenticator = %s WHERE id = %s",
                            (auth, add_user(self.db, name)))
            self.clients[name] = {"auth": auth, "hostid": 0, "seqno": 0}
        self.transitioner = make_daemon(Transitioner, root, "--one_pass")
        self.validator = make_daemon(BitwiseValidator, root, "--one_pass", "--app", "example_app")
        for d in (self.transitioner, self.validator):
            d.initialise()
        self.feeder = make_feeder(self.cfg)
        self.feeder.one_pass()
        self.array = shmem.attach(self.cfg, wait_ready=0)
        self.njobs = 0
        self.sched_log = []
        for name in self.clients:               # attach: the host rows are made
            self.rpc(name)

    def close(self):
        self.transitioner.shutdown()
        self.validator.shutdown()
        self.array.close()
        self.feeder.shutdown()
        self.db.close()

    def rpc(self, host, work=0.0, report=()):
        """One scheduler request of ``host``: asking for ``work`` seconds,
        reporting the results named in ``report``; returns the names sent."""
        c = self.clients[host]
        c["seqno"] += 1
        req = sc.SchedulerRequest(
            authenticator=c["auth"], hostid=c["hostid"], rpc_seqno=c["seqno"],
            work_req_seconds=work, host_info={"host_cpid": hashlib.md5(host.encode()).hexdigest()},
            results=[sc.ReportedResult(name, final_cpu_time=10.0, final_elapsed_time=10.0)
                     for name in report])
        log = SchedLog(io.StringIO(), 3)
        out = handle_request(self.cfg, req.xml().encode(), {"REMOTE_ADDR": "127.0.0.1"},
                             job_array=self.array, log=log)
        self.sched_log.append(log.stream.getvalue())
        reply = ET.fromstring(out.decode().partition("\n\n")[2])
        if reply.findtext("hostid"):
            c["hostid"] = int(reply.findtext("hostid"))
        assert sorted(a.findtext("name") for a in reply.findall("result_ack")) == sorted(report)
        return [r.findtext("name") for r in reply.findall("result")]

    def cv(self, host):
        row = hav(self.db, self.clients[host]["hostid"], self.av)
        return row["consecutive_valid"] if row else 0

    def due_now(self):
        """A second passes: the transitioner takes workunits whose
        transition_time < now, so what is due this second waits for the next."""
        self.db.execute("UPDATE workunit SET transition_time = 0 WHERE transition_time <= %s",
                        (int(time.time()),))

    def passes(self):
        for daemon in (self.transitioner, self.validator, self.transitioner):
            self.due_now()
            daemon.one_pass()

    def new_job(self):
        """An unreplicated job and its first result (made by the transitioner)."""
        self.njobs += 1
        wuid = add_workunit(self.db, "ar_%d" % self.njobs, self.appid, need_validate=0,
                            transition_time=0, max_success_results=4, max_total_results=6)
        self.transitioner.one_pass()
        return wuid

    def send(self, host):
        """The host asks for a job (one fits its request); returns the result
        row it got (or None)."""
        self.feeder.one_pass()
        names = self.rpc(host, work=10.0)
        if not names:
            return None
        (name,) = names
        return self.db.query_one("SELECT * FROM result WHERE name = %s", (name,))

    def compute(self, result, host, wrong=False):
        """Upload the output (right or wrong), then report it."""
        name = re.search(r"<name>([^<]+)</name>", result["xml_doc_in"]).group(1)
        with open(upload_path(self.root, name), "w") as f:
            f.write("wrong\n" if wrong else "output of workunit %d\n" % result["workunitid"])
        self.rpc(host, report=[result["name"]])

    def time_out(self, result):
        """The host never reports: the deadline passes."""
        self.db.execute("UPDATE result SET report_deadline = %s WHERE id = %s",
                        (int(time.time()) - 10, result["id"]))
        self.db.execute("UPDATE workunit SET transition_time = 0 WHERE id = %s",
                        (result["workunitid"],))

    def run_job(self, first, behaviour=lambda replicated: "right"):
        """A new job sent first to ``first``, run to completion with the
        partners' help; returns whether it was replicated when sent to
        ``first``.  ``behaviour(replicated)`` -> "right", "wrong" or "timeout"."""
        wuid = self.new_job()
        r = self.send(first)
        assert r is not None and r["workunitid"] == wuid, self.sched_log[-1][-3000:]
        replicated = self.db.query_value("SELECT target_nresults FROM workunit WHERE id = %s",
                                         (wuid,)) > 1
        fate = behaviour(replicated)
        if fate == "timeout":
            self.time_out(r)
        else:
            self.compute(r, first, wrong=fate == "wrong")
        self.passes()
        for partner in ("partner1", "partner2"):
            wu = self.db.query_one("SELECT * FROM workunit WHERE id = %s", (wuid,))
            if wu["canonical_resultid"] or wu["error_mask"]:
                break
            p = self.send(partner)
            assert p is not None and p["workunitid"] == wuid, (partner, wu)
            self.compute(p, partner)
            self.passes()
        wu = self.db.query_one("SELECT * FROM workunit WHERE id = %s", (wuid,))
        assert wu["canonical_resultid"] and not wu["error_mask"], wu
        return replicated


@pytest.fixture
def proj(mini_project):
    p = Project(mini_project)
    yield p
    p.close()


def test_replication_falls_for_a_right_host_and_rises_when_it_turns_wrong(proj):
    p = proj
    # untrusted: every job the host gets is replicated and checked
    for n in range(10):
        assert p.run_job("right"), n
    assert p.cv("right") == 10
    log = "".join(p.sched_log)
    assert "sending to untrusted host, replicating" in log
    # (the first job: no host_app_version row yet, so nothing to trust)
    assert "set_trust: cons valid 9 < 10, don't use single replication" in log
    # trusted: now most of its jobs go out alone (each is checked with
    # probability 1/consecutive_valid: 10 checks in 20 would be a 1-in-10^6 run)
    replicated = [p.run_job("right") for _ in range(20)]
    assert sum(replicated) <= 10, replicated
    assert any("using trusted app version, not replicating" in log for log in p.sched_log)
    # unreplicated results are not counted: only checked ones raise the count
    assert p.cv("right") == 10 + sum(replicated)
    # it turns wrong: the next job that is checked finds it out
    for n in range(200):
        if p.run_job("right", lambda replicated: "wrong" if replicated else "right"):
            break
    else:
        pytest.fail("no job of the trusted host was replicated in 200")
    assert p.cv("right") == 0
    bad = p.db.query("SELECT validate_state FROM result WHERE hostid = %s AND "
                     "validate_state = 2", (p.clients["right"]["hostid"],))
    assert len(bad) == 1                                  # its wrong result: INVALID
    # untrusted again: everything is replicated
    for n in range(5):
        assert p.run_job("right"), n


def test_a_flaky_host_never_gets_trusted(proj):
    p = proj
    # valid results, but every third job never comes back (timed out)
    fates, cvs = [], []
    for n in range(12):
        fate = "timeout" if n % 3 == 2 else "right"
        fates.append(p.run_job("flaky", lambda replicated, fate=fate: fate))
        cvs.append(p.cv("flaky"))
    assert all(fates)                                    # replicated every time
    assert cvs[:6] == [1, 2, 0, 1, 2, 0] and max(cvs) == 2
    timed_out = p.db.query_value("SELECT COUNT(*) FROM result WHERE hostid = %s AND "
                                 "outcome = 4", (p.clients["flaky"]["hostid"],))
    assert timed_out == 4
    # the partner, right every time, gets there meanwhile
    assert p.cv("partner1") >= 10
