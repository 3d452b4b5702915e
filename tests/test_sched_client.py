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

import pytest

from boincpy.files import dir_hier_path
from boincpy.testing.client import StockClient
from tests.sched_env import CLIENT_AUTH, apache_site  # noqa: F401

BOINC = shutil.which("boinc") or "/usr/bin/boinc"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not os.path.exists(BOINC), reason="boinc-client is not installed"),
    pytest.mark.skipif(os.geteuid() != 0, reason="Apache's children run as www-data"),
    pytest.mark.parametrize("apache", ["cgi", "persistent"], indirect=True),
]


def test_stock_client_runs_a_job_from_attach_to_ack(apache_site):
    s = apache_site
    s.execute("UPDATE user SET cross_project_id = '' WHERE authenticator = %s", (CLIENT_AUTH,))
    wu = s.add_job("wu1")
    s.start_feeder()
    s.wait_present(1)
    # attached at start-up; one job per CPU, then exit once everything is acked
    client = StockClient(boinc=BOINC, extra_args=("--exit_when_idle", "--fetch_minimal_work"))
    failed = True
    try:
        client.start(attach=(s.apache.master_url, CLIENT_AUTH))
        client.wait_for(lambda: not client.running(), 240, "the client to exit when idle")
        status = client.process.returncode
        client_log = client.log_text()
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
        failed = False
    finally:
        s.stop_feeder()
        client.close(failed=failed)
    res = s.rows("SELECT * FROM result WHERE name = 'wu1_0'")[0]
    assert (res["server_state"], res["outcome"], res["client_state"], res["exit_status"]) \
        == (5, 1, 5, 0)
    out_name = re.search(r"<name>(wu1_0_r\d+_0)</name>", res["xml_doc_out"]).group(1)
    path = dir_hier_path(s.p.cfg.upload_dir, out_name, s.p.cfg.uldl_dir_fanout)
    with open(path) as f:
        assert f.read() == "HELLO FROM WU1\n"
    assert wu["id"] == res["workunitid"]
