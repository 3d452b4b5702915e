"""The stock BOINC client (Debian's boinc-client 7.20.5) against the project.

Attach, first scheduler RPC, app and input downloads (signature checked),
the task run, the upload (certificate checked), the report and its ack, with
nothing but the real client, Apache, the scheduler CGI, the upload handler
and the feeder.  The client runs headless in a throwaway directory and exits
when idle (stock-client.md §2-§3); its event log is the evidence.
"""

import os
import re
import shutil
import socket
import subprocess
import tempfile

import pytest

from boincpy.files import dir_hier_path
from tests.sched_env import CLIENT_AUTH, apache_site  # noqa: F401

BOINC = shutil.which("boinc") or "/usr/bin/boinc"

pytestmark = [
    pytest.mark.skipif(not os.path.exists(BOINC), reason="boinc-client is not installed"),
    pytest.mark.skipif(os.geteuid() != 0, reason="Apache's children run as www-data"),
]

CC_CONFIG = """<cc_config>
  <log_flags>
    <task>1</task><file_xfer>1</file_xfer><sched_ops>1</sched_ops>
    <sched_op_debug>1</sched_op_debug><task_debug>1</task_debug>
    <file_xfer_debug>1</file_xfer_debug><unparsed_xml>1</unparsed_xml>
  </log_flags>
  <options>
    <skip_cpu_benchmarks>1</skip_cpu_benchmarks>
    <no_info_fetch>1</no_info_fetch>
    <no_gpus>1</no_gpus>
    <report_results_immediately>1</report_results_immediately>
    <no_priority_change>1</no_priority_change>
  </options>
</cc_config>
"""

PREFS = """<global_preferences>
  <run_if_user_active>1</run_if_user_active>
  <idle_time_to_run>0</idle_time_to_run>
  <suspend_cpu_usage>0</suspend_cpu_usage>
  <cpu_usage_limit>100</cpu_usage_limit>
  <max_ncpus_pct>100</max_ncpus_pct>
  <work_buf_min_days>0.01</work_buf_min_days>
  <work_buf_additional_days>0</work_buf_additional_days>
</global_preferences>
"""


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def test_stock_client_runs_a_job_from_attach_to_ack(apache_site):
    s = apache_site
    s.execute("UPDATE user SET cross_project_id = '' WHERE authenticator = %s", (CLIENT_AUTH,))
    wu = s.add_job("wu1")
    s.start_feeder()
    s.wait_present(1)
    d = tempfile.mkdtemp(prefix="boincpy-client-")
    try:
        with open(os.path.join(d, "cc_config.xml"), "w") as f:
            f.write(CC_CONFIG)
        with open(os.path.join(d, "global_prefs_override.xml"), "w") as f:
            f.write(PREFS)
        with open(os.path.join(d, "gui_rpc_auth.cfg"), "w") as f:
            f.write("testpw")
        env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
        with open(os.path.join(d, "client.log"), "w") as log:
            proc = subprocess.Popen(
                [BOINC, "--dir", d, "--gui_rpc_port", str(free_port()), "--exit_when_idle",
                 "--fetch_minimal_work", "--sched_retry_delay_min", "1",
                 "--sched_retry_delay_max", "10", "--pers_retry_delay_min", "1",
                 "--pers_retry_delay_max", "10", "--attach_project", s.apache.master_url,
                 CLIENT_AUTH], cwd=d, stdout=log, stderr=subprocess.STDOUT, env=env)
            try:
                status = proc.wait(240)
            except subprocess.TimeoutExpired:
                proc.terminate()
                proc.wait(30)
                status = None
        with open(os.path.join(d, "client.log")) as f:
            client_log = f.read()
        assert status == 0, client_log[-4000:]
        # what the client says, step by step
        assert re.search(r"Scheduler request completed: got 1 new tasks", client_log), \
            client_log[-4000:]
        assert "Finished download of example_app_1.0_x86_64-pc-linux-gnu" in client_log
        assert "Finished download of in_wu1" in client_log
        assert re.search(r"Computation for task wu1_0 finished", client_log)
        assert re.search(r"Finished upload of wu1_0_r\d+_0", client_log)
        assert re.search(r"\[sched_op\] handle_scheduler_reply\(\): got ack for task wu1_0",
                         client_log), client_log[-4000:]
        for bad in ("Signature verification", "missing signature", "No close tag",
                    "Unrecognized XML", "[unparsed_xml]", "Project communication failed",
                    "Scheduler request failed", "error"):
            assert bad not in client_log, (bad, client_log[-4000:])
    finally:
        s.stop_feeder()
        shutil.rmtree(d, ignore_errors=True)
    res = s.rows("SELECT * FROM result WHERE name = 'wu1_0'")[0]
    assert (res["server_state"], res["outcome"], res["client_state"], res["exit_status"]) \
        == (5, 1, 5, 0)
    out_name = re.search(rb"<name>(wu1_0_r\d+_0)</name>", res["xml_doc_out"]).group(1).decode()
    path = dir_hier_path(s.p.cfg.upload_dir, out_name, s.p.cfg.uldl_dir_fanout)
    with open(path) as f:
        assert f.read() == "HELLO FROM WU1\n"
    assert wu["id"] == res["workunitid"]
