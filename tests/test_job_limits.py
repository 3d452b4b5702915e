"""config_aux.xml's <max_jobs_in_progress> (BOINC's sched_limit.cpp): parsed
by the config layer, enforced through the real request handler against the
client's <other_results>."""

import io
import os
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from boincpy.config import load_config
from boincpy.errors import ConfigError
from boincpy.log import SchedLog
from boincpy.sched.limits import Limits
from boincpy.sched.handler import handle_request
from boincpy.testing.simclient import ClientAppVersion, ReportedResult, SchedulerRequest
import test_sched_work
from tests import sched_env as _sched_env
from tests.sched_env import CLIENT_AUTH, REPO

# fixtures shared with the other scheduler tests
sched_env = _sched_env.sched_env
feeder_for = test_sched_work.feeder_for

ENV = {"REMOTE_ADDR": "127.0.0.1", "REQUEST_METHOD": "POST"}
AUX_APP = """<config>
  <max_jobs_in_progress>
    <app>
      <app_name>example_app</app_name>
      <cpu_limit>
        <jobs>1</jobs>
        <per_proc/>
      </cpu_limit>
    </app>
  </max_jobs_in_progress>
</config>
"""
AUX_TOTAL = """<config>
  <max_jobs_in_progress>
    <project>
      <total_limit><jobs>3</jobs></total_limit>
    </project>
  </max_jobs_in_progress>
</config>
"""
CAV = ClientAppVersion("example_app", 100)


def rpc(env, array, seqno, hostid, held=(), reported=()):
    """One scheduler RPC from a 2-CPU host asking for plenty of CPU work while
    holding ``held`` jobs; returns (names sent, reply text, log)."""
    req = SchedulerRequest(CLIENT_AUTH, hostid=hostid, rpc_seqno=seqno,
                           work_req_seconds=864000.0, cpu_req_instances=2,
                           host_info={"p_ncpus": 2},
                           results=[ReportedResult(name, final_cpu_time=10.0,
                                                   final_elapsed_time=10.0, version_num=100)
                                    for name in reported],
                           app_versions=[CAV], other_results=[(n, 0, "") for n in held])
    log = SchedLog(io.StringIO(), 4)
    out = handle_request(env.cfg, req.xml().encode(), dict(ENV), job_array=array.array,
                         log=log).decode()
    root = ET.fromstring(out.partition("\n\n")[2])
    return [r.findtext("name") for r in root.findall("result")], out, log.stream.getvalue()


def write_aux(env, text):
    (env.root / "config_aux.xml").write_text(text)
    return env.reload()


def test_per_app_limit_per_proc_through_the_handler(sched_env, feeder_for):
    env = sched_env
    cfg = write_aux(env, AUX_APP)
    assert cfg.max_jobs_in_progress.apps["example_app"].cpu_limit.jobs == 1
    for i in range(6):
        env.add_job("wu%d" % i)
    array = feeder_for(env.cfg)
    sent, text, log = rpc(env, array, 1, 0)
    assert len(sent) == 2                       # 1 per CPU, 2 CPUs
    hostid = env.row("SELECT id FROM host")["id"]
    # holding both: nothing more; per-app limits say only "No tasks sent", as in BOINC
    sent2, text, log = rpc(env, array, 2, hostid, held=sent)
    assert sent2 == []
    assert "No tasks sent" in text
    assert "No tasks sent: in_progress_limit: config_aux.xml's limit of 2 CPU tasks in progress for app example_app" in log
    assert "reached a limit on tasks in progress" not in text
    # the held jobs stay in progress (not resent, not lost)
    states = {r["name"]: r["server_state"] for r in env.rows("SELECT * FROM result")}
    assert all(states[n] == 4 for n in sent)
    # reporting one (it leaves <other_results>) frees one slot
    array.refill()
    sent3, text, log = rpc(env, array, 3, hostid, held=sent[1:], reported=sent[:1])
    assert len(sent3) == 1 and sent3[0] not in sent
    assert env.row("SELECT server_state FROM result WHERE name = %s", (sent[0],))[
        "server_state"] == 5


def test_project_total_limit_through_the_handler(sched_env, feeder_for):
    env = sched_env
    write_aux(env, AUX_TOTAL)
    env.set_options(debug_quota=1)
    for i in range(6):
        env.add_job("wu%d" % i)
    array = feeder_for(env.cfg)
    sent, text, log = rpc(env, array, 1, 0)
    assert len(sent) == 3                       # not one per CPU: 3 in total
    assert "[quota] total: base 3 scaled 3 njobs 0" in log
    hostid = env.row("SELECT id FROM host")["id"]
    sent2, text, log = rpc(env, array, 2, hostid, held=sent)
    assert sent2 == []
    assert ("<message priority=\"low\">This computer has reached a limit on tasks in "
            "progress</message>") in text
    assert "No tasks sent: in_progress_limit: project limit of 3 tasks in progress reached" in log
    assert "[quota] reached limit on CPU jobs in progress" in log


def test_aux_overlays_config_xml_as_boinc_does(tmp_path):
    class Cfg:
        max_wus_in_progress = 2
        max_wus_in_progress_gpu = 3
        max_jobs_in_progress = None
    ninst = [4, 2, 0, 0, 0]
    lim = Limits(Cfg, ninst)
    assert lim.project.scaled[:2] == [8, 6]       # config.xml: per processor
    from boincpy.config import parse_config_aux_text
    Cfg.max_jobs_in_progress = parse_config_aux_text(
        "<config><max_jobs_in_progress><project><cpu_limit><jobs>5</jobs></cpu_limit>"
        "<gpu_limit><per_proc/></gpu_limit></project></max_jobs_in_progress></config>")
    lim = Limits(Cfg, ninst)
    # a limit element resets per_proc; without <jobs> the number is kept
    assert lim.project.scaled[:3] == [5, 6, 0]
    for _ in range(5):
        lim.register(None, 0)
    assert lim.exceeded(None, 0) and not lim.exceeded(None, 1)


def test_no_file_no_limits(sched_env):
    assert sched_env.cfg.max_jobs_in_progress is None


@pytest.mark.parametrize("text,where", [
    ("<config>\n<max_jobs_in_progress>\n<app>\n</config>", "config_aux.xml line 4: malformed"),
    ("<config><max_jobs_in_progress><project>\n<cpu_limit>\n<jobs>two</jobs>"
     "</cpu_limit></project></max_jobs_in_progress></config>",
     "config_aux.xml line 3: <cpu_limit><jobs>: 'two' is not an integer"),
    ("<boinc/>", "config_aux.xml line 1: root element is <boinc>, expected <config>"),
])
def test_malformed_file_names_file_and_line(sched_env, text, where):
    (sched_env.root / "config_aux.xml").write_text(text)
    with pytest.raises(ConfigError) as exc:
        load_config(str(sched_env.root))
    assert where in str(exc.value)
    assert str(sched_env.root / "config_aux.xml") in str(exc.value)


def test_malformed_file_the_cgi_says_server_cant_parse(sched_env):
    (sched_env.root / "config_aux.xml").write_text("<config><oops></config>")
    body = SchedulerRequest(CLIENT_AUTH).xml().encode()
    env = dict(os.environ, BOINC_PROJECT_DIR=str(sched_env.root), REQUEST_METHOD="POST",
               CONTENT_LENGTH=str(len(body)), PYTHONPATH=REPO)
    proc = subprocess.run([sys.executable, os.path.join(REPO, "cgi-bin", "cgi")], input=body,
                          env=env, capture_output=True, timeout=60)
    assert b"Server can't parse configuration file" in proc.stdout
    assert b"<project_is_down/>" in proc.stdout
    assert b"config_aux.xml line 1: malformed XML" in proc.stderr
