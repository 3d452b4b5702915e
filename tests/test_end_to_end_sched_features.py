"""End to end with stock 7.20.5 clients: locality scheduling and trickle messages.

A project made and run as in tests/test_end_to_end.py (boincpy.tools.demo's
steps: make_project, a private Apache, the native example app built from
libboinc-app-dev, bin/start) with jobs of its own:

* locality: one 50 MB sticky data file and ten jobs FILE__N that read it
  (the example app's --read), two volunteers.  Each host downloads the file
  once; after its first jobs a host gets the file's jobs because it lists
  the file in its requests.
* trickles: one job whose app sends trickle-ups (boinc_send_trickle_up) and
  waits for a trickle-down; trickle_credit grants credit while the job runs,
  trickle_echo answers, and the scheduler (msg_to_host) delivers the answer
  to the running app, which writes it to its output.
"""

import os
import re

import pytest

from boincpy.files import dir_hier_path
from boincpy.states import Outcome, ServerState
from boincpy.testing.client import project_dir_name
from boincpy.tools.demo import APP, RSC_FPOPS_BOUND, rewrite_config
from tests.test_end_to_end import _check_client_logs, fullrun  # noqa: F401
from tests.test_end_to_end import pytestmark  # noqa: F401  (stock client, root)

DATA = "bigdata"
DATA_SIZE = 50 * 1024 * 1024
NJOBS = 10

LOCALITY_TEMPLATE = """<input_template>
    <file_info>
        <number>0</number>
    </file_info>
    <file_info>
        <number>1</number>
        <sticky/>
        <no_delete/>
    </file_info>
    <workunit>
        <file_ref>
            <file_number>0</file_number>
            <open_name>in</open_name>
        </file_ref>
        <file_ref>
            <file_number>1</file_number>
            <open_name>data</open_name>
        </file_ref>
        <command_line>--read data</command_line>
        <rsc_fpops_est>%g</rsc_fpops_est>
        <rsc_fpops_bound>%g</rsc_fpops_bound>
        <rsc_memory_bound>1e8</rsc_memory_bound>
        <rsc_disk_bound>2e8</rsc_disk_bound>
        <delay_bound>86400</delay_bound>
    </workunit>
</input_template>
"""


def _setup(demo, options):
    """The project up to bin/start, with ``options`` in config.xml."""
    from boincpy.config import load_config
    demo.make_project()
    demo.start_apache()
    demo.install_app()
    demo.configure_daemons()
    rewrite_config(demo.cfg, options=options)
    demo.cfg = load_config(demo.root)
    demo.start_project()
    demo.batch = 1


def _tool(demo, *argv, input=None):
    return demo.run_tool([demo.bin(argv[0])] + list(argv[1:]), cwd=demo.root, input=input)


def _stderr(r):
    return r["stderr_out"] or ""


def _volunteers(demo):
    demo.make_volunteers()
    demo.start_volunteers()


def test_locality_job_set_downloads_its_file_once_per_host(fullrun):
    run = fullrun
    demo = run(njobs=NJOBS, min_quorum=1, volunteers=2, until="reported",
               daemons=("feeder -d 3", "transitioner -d 3"), daemon_sleep=1)
    _setup(demo, {"locality_scheduling": 1, "debug_locality": 1, "debug_send": 1})
    cfg = demo.cfg
    staging = os.path.join(cfg.tmp_dir, "locality_staging")
    os.makedirs(staging)
    with open(os.path.join(staging, DATA), "wb") as f:
        f.truncate(DATA_SIZE)                       # sparse: no time spent writing it
    lines = []
    for i in range(NJOBS):
        name = "%s__%d" % (DATA, i)
        with open(os.path.join(staging, name + ".in"), "w") as f:
            f.write("locality job %d\n" % i)
        lines.append("--wu_name %s %s.in %s" % (name, name, DATA))
    with open(os.path.join(demo.root, "templates", "locality_in"), "w") as f:
        # an hour a job for the client (1e12 FLOPs): it asks for two at a time
        f.write(LOCALITY_TEMPLATE % (1e12, RSC_FPOPS_BOUND * 100))
    _tool(demo, "stage_file", staging)
    _tool(demo, "create_work", "--appname", APP, "--batch", "1", "--wu_template",
          "templates/locality_in", "--stdin", input="\n".join(lines) + "\n")
    _volunteers(demo)
    demo.wait_for_jobs()
    demo.settle_clients()

    results = run.rows("SELECT r.* FROM result r JOIN workunit w ON w.id = r.workunitid "
                       "WHERE w.batch = 1 ORDER BY r.id")
    assert len(results) == NJOBS
    for r in results:
        assert (r["server_state"], r["outcome"]) == (ServerState.OVER, Outcome.SUCCESS), r
        assert "read %d bytes of data" % DATA_SIZE in _stderr(r), r["name"]
    hosts = sorted({r["hostid"] for r in results})
    # scheduler.log, one block per request (a request's lines are written together)
    with open(os.path.join(cfg.host_log_dir, "scheduler.log")) as f:
        blocks = re.split(r"(?m)^(?=.*Request: \[USER#)", f.read())[1:]
    by_file = by_search = 0
    for block in blocks:
        hostid = int(re.search(r"Request: \[USER#\d+\] \[HOST#(\d+)\]", block).group(1))
        sends = [m.start() for m in re.finditer(r"\[send\] \[HOST#%d\] sending \[RESULT#"
                                                % hostid, block)]
        if not sends:
            continue
        if "[locality] [HOST#%d] has file %s" % (hostid, DATA) in block:
            # the host holds the file: its jobs come by the file, before any
            # search for a new one
            found = block.index("send_results_for_file(%s)" % DATA)
            new = block.find("send_new_file_work")
            assert found < sends[0] and (new < 0 or sends[-1] < new), block
            by_file += len(sends)
        else:
            # no file yet: found by searching the result names
            assert "send_new_file_work_deterministic will try filename %s" % DATA in block
            by_search += len(sends)
    assert by_file + by_search == NJOBS
    # later jobs went to hosts for the file they held
    assert by_file > 0, (by_file, by_search)
    # each host downloaded the file once, and keeps it (sticky)
    for v in demo.volunteers:
        hostid = v.client.hostid(cfg.master_url)
        if hostid not in hosts:
            continue
        log = v.client.log_text()
        assert len(re.findall(r"Started download of %s\b" % DATA, log)) == 1, log
        assert len(re.findall(r"Finished download of %s\b" % DATA, log)) == 1
        kept = os.path.join(v.client.data_dir, "projects", project_dir_name(cfg.master_url),
                            DATA)
        assert os.path.getsize(kept) == DATA_SIZE
    _check_client_logs(run)


def test_trickle_up_credit_while_running_and_trickle_down_to_the_app(fullrun):
    run = fullrun
    demo = run(njobs=1, min_quorum=1, volunteers=1, until="reported", daemon_sleep=1,
               daemons=("feeder -d 3", "transitioner -d 3",
                        "trickle_credit -d 3 --variety runtime --max_runtime 3600",
                        "trickle_echo -d 3 --variety echo"))
    _setup(demo, {"msg_to_host": 1})
    cfg = demo.cfg
    staging = os.path.join(cfg.tmp_dir, "trickle_staging")
    os.makedirs(staging)
    with open(os.path.join(staging, "trickler.txt"), "w") as f:
        f.write("trickle job\n")
    _tool(demo, "stage_file", staging)
    _tool(demo, "create_work", "--appname", APP, "--batch", "1", "--wu_name", "trickler",
          "--command_line", "--trickle 300", "trickler.txt")
    _volunteers(demo)
    (v,) = demo.volunteers
    url = cfg.master_url

    def rows(sql, args=()):
        return run.rows(sql, args)

    # the app's trickle-ups reach the project (the client sends them by itself)
    v.client.wait_for(lambda: len(rows("SELECT id FROM msg_from_host")) == 2, 120,
                      "two trickle-ups stored")
    ups = {r["variety"]: r for r in rows("SELECT * FROM msg_from_host")}
    assert set(ups) == {"runtime", "echo"}
    assert "<result_name>trickler_0</result_name>" in ups["runtime"]["xml"]
    assert "<runtime>" in ups["runtime"]["xml"]
    # trickle_credit grants credit while the job is still running
    v.client.wait_for(lambda: rows("SELECT total_credit FROM host")[0]["total_credit"] > 0,
                      60, "credit from the trickle")
    (result,) = rows("SELECT * FROM result WHERE name = 'trickler_0'")
    assert result["server_state"] == ServerState.IN_PROGRESS
    (host,) = rows("SELECT * FROM host")
    (user,) = rows("SELECT * FROM user WHERE id = %s", (host["userid"],))
    assert user["total_credit"] == pytest.approx(host["total_credit"])
    # trickle_echo's answer goes down in the next reply
    v.client.wait_for(lambda: rows("SELECT id FROM msg_to_host"), 60, "the echo trickle-down")
    v.client.project_op(url, "update")
    demo.wait_for_jobs()
    demo.settle_clients()
    (result,) = rows("SELECT * FROM result WHERE name = 'trickler_0'")
    assert (result["server_state"], result["outcome"]) == (ServerState.OVER, Outcome.SUCCESS)
    stderr = _stderr(result)
    assert "trickle-up runtime sent (0)" in stderr and "trickle-up echo sent (0)" in stderr
    assert re.search(r"trickle-down trickle_down_\d+: .*hello from example_app", stderr, re.S), \
        stderr
    assert [r["handled"] for r in rows("SELECT handled FROM msg_to_host")] == [1]
    assert sorted(r["handled"] for r in rows("SELECT handled FROM msg_from_host")) == [1, 1]
    # the output holds the trickle-down the app received
    out = re.search(r"<name>([^<]+)</name>", result["xml_doc_in"])
    with open(dir_hier_path(cfg.upload_dir, out.group(1), cfg.uldl_dir_fanout)) as f:
        assert "<echo_text>hello from example_app</echo_text>" in f.read()
    _check_client_logs(run)
