"""Remote job submission end to end, with stock BOINC 7.20.5 clients.

A scientist, from a directory that is not the project and over HTTP only,
submits with boincpy's Python client and with the HTCondor GAHP
(bin/boinc_gahp); Debian's boinc-client runs the jobs (the native example
app); the project runs its daemons (bin/start).  The project is built by
boincpy.tools.demo's steps, as the other end-to-end tests build theirs.
"""

import hashlib
import os
import time
import zipfile

import pytest

from boincpy.states import BatchState, ClientState, Outcome, ServerState
from boincpy.submit.client import BatchDesc, FileDesc, JobDesc, SubmitClient
from boincpy.testing import simclient as sc
from boincpy.tools.demo import APP

from test_end_to_end import _check_client_logs, fullrun  # noqa: F401  (a fixture)
from test_gahp import Gahp

pytestmark = [pytest.mark.slow]


def _project(fullrun, volunteers=2):
    """A project with the example app, its daemons running, and a submitter
    (an account made over the web RPC, given the right to submit by the
    operator's bin/manage_privileges); (demo, submitter's authenticator)."""
    demo = fullrun(njobs=0, min_quorum=1, volunteers=volunteers, until="assimilated")
    demo.make_project()
    demo.start_apache()
    demo.install_app()
    demo.configure_daemons()
    demo.start_project()
    auth = sc.create_account(demo.cfg.master_url, "scientist@example.org", "secret",
                             "A scientist")
    uid = demo.userid("scientist@example.org")
    demo.run_tool([demo.bin("manage_privileges"), "grant_submit", str(uid), APP],
                  cwd=demo.root)
    return demo, auth


def _wait(what, predicate, demo, timeout=600, interval=2.0):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting for %s" % what)
        demo.poke_idle()
        time.sleep(interval)


def _text(i, name):
    return ("%s: job input %d, the quick brown fox jumps over the lazy dog\n" % (name, i)) * 3


def test_a_scientist_submits_follows_collects_and_retires(fullrun, tmp_path):
    run = fullrun
    demo, auth = _project(run)
    url = demo.cfg.master_url
    work = tmp_path / "scientist"            # not the project: only HTTP reaches it
    work.mkdir()
    paths = []
    for name in ("a", "b"):
        path = work / ("input_%s.txt" % name)
        path.write_text(_text(0, name))
        paths.append(str(path))
    client = SubmitClient(url, auth)
    client.ping()

    # batch 1: two files uploaded by content, twenty jobs
    bid = client.create_batch(APP, "e2e_first", int(time.time()) + 86400)
    names = ["jf_" + hashlib.md5(open(p, "rb").read()).hexdigest() for p in paths]
    assert client.upload_files(paths, names, bid) == names          # both were missing
    jobs = [JobDesc(name="e2e_j%d" % i, files=[FileDesc.staged(names[i % 2])])
            for i in range(20)]
    assert client.submit_batch(BatchDesc(APP, jobs, batch_id=bid)) == bid
    demo.batch, demo.s.njobs = bid, 20
    demo.make_volunteers()
    demo.start_volunteers()

    # the scientist polls until the batch is complete
    def complete():
        status = client.query_batch(bid)
        return status if status.state == BatchState.COMPLETE else None
    status = _wait("batch 1 to complete", complete, demo)
    assert status.njobs == 20 and status.nerror_jobs == 0 and status.fraction_done == 1.0
    detail = client.query_batch(bid, get_cpu_time=True, get_job_details=True)
    assert [j.status for j in detail.jobs] == ["done"] * 20
    # outputs: one job, then the whole batch as a zip
    out = work / "out"
    out.mkdir()
    path = client.download(client.workunit_file_url("e2e_j3", 0), str(out / "e2e_j3"))
    assert open(path).read() == _text(0, "b").upper()
    path = client.download(client.output_files_url(bid), str(out / "batch.zip"))
    with zipfile.ZipFile(path) as z:
        contents = sorted(z.read(n).decode() for n in z.namelist())
    assert contents == sorted([_text(0, "a").upper()] * 10 + [_text(0, "b").upper()] * 10)
    done = client.query_completed_job("e2e_j0")
    assert done.canonical_resultid and done.exit_status == 0
    assert "example_app: copied" in done.stderr_out
    client.retire_batch(bid)

    # batch 2 reuses file a: only the new file c is uploaded; its jobs run for a while
    c = work / "input_c.txt"
    c.write_text(_text(1, "c"))
    c_name = "jf_" + hashlib.md5(c.read_bytes()).hexdigest()
    bid2 = client.create_batch(APP, "e2e_second")
    assert client.upload_files([paths[0], str(c)], [names[0], c_name], bid2) == [c_name]
    long_jobs = [JobDesc(name="e2e_k%d" % i, command_line="--cpu_time 120",
                         files=[FileDesc.staged(names[0] if i % 2 else c_name)])
                 for i in range(12)]
    client.submit_batch(BatchDesc(APP, long_jobs, batch_id=bid2))

    # batch 1 is retired: its files are deleted once the file deleter gets to them,
    # and b, held by no live batch, goes with delete_job_files; a and c are kept
    db = demo.connect()
    try:
        _wait("batch 1's files deleted", lambda: db.query_value(
            "SELECT COUNT(*) FROM result WHERE batch = %s AND file_delete_state <> 2",
            (bid,)) == 0, demo, timeout=120)
        demo.run_tool([demo.bin("delete_job_files"), "--grace", "0"], cwd=demo.root)
        left = {r["name"] for r in db.query("SELECT name FROM job_file")}
        assert left == {names[0], c_name}
        from boincpy.files import dir_hier_path
        assert not os.path.exists(dir_hier_path(demo.cfg.download_dir, names[1],
                                                demo.cfg.uldl_dir_fanout))
        # and its jobs are purged
        demo.run_tool([demo.bin("db_purge"), "--batch", "--min_age_days", "0", "--one_pass",
                       "--no_archive"], cwd=demo.root)
        assert db.query_value("SELECT COUNT(*) FROM workunit WHERE batch = %s", (bid,)) == 0
        assert db.query_value("SELECT COUNT(*) FROM workunit WHERE batch = %s", (bid2,)) == 12

        # batch 2, aborted half-way: some of its jobs run on the clients, others wait
        def running():
            rows = db.query("SELECT name FROM result WHERE batch = %s AND server_state = %s",
                            (bid2, int(ServerState.IN_PROGRESS)))
            executing = [t["name"] for v in demo.volunteers for t in v.client.tasks()
                         if t.get("active_task_state") == "EXECUTING"]
            return rows and executing
        _wait("batch 2's jobs to run", running, demo, timeout=300, interval=1.0)
        unsent = {r["name"] for r in db.query(
            "SELECT name FROM result WHERE batch = %s AND server_state = %s",
            (bid2, int(ServerState.UNSENT)))}
        assert unsent, "every job of batch 2 was sent before the abort"
        sent = {r["name"] for r in db.query(
            "SELECT name FROM result WHERE batch = %s AND server_state = %s",
            (bid2, int(ServerState.IN_PROGRESS)))}
        client.abort_batch(bid2)
        # a client may have fetched some of ``unsent`` between that read and the
        # abort: those were sent, and end aborted on the client like the others
        late = {r["name"] for r in db.query(
            "SELECT name FROM result WHERE name IN (%s) AND sent_time > 0"
            % ", ".join(["%s"] * len(unsent)), sorted(unsent))}
        sent |= late
        unsent -= late
        assert unsent, "every job of batch 2 was sent before the abort took effect"
        # the clients are told at their next request: the running jobs end aborted.
        # An update asked for while the client's own RPC is in flight is lost (the
        # client clears its pending request when that reply comes), so ask again.
        asked = [0.0]

        def aborted():
            if time.monotonic() - asked[0] > 10:
                for v in demo.volunteers:
                    v.client.project_op(url, "update")
                asked[0] = time.monotonic()
            rows = db.query("SELECT name, outcome, client_state FROM result WHERE batch = %s "
                            "AND name IN (%s)" % ("%s", ", ".join(["%s"] * len(sent))),
                            [bid2] + sorted(sent))
            return all(r["outcome"] == Outcome.CLIENT_ERROR
                       and r["client_state"] == ClientState.ABORTED for r in rows)
        _wait("the running jobs to be aborted on the clients", aborted, demo, timeout=300)
        never = db.query("SELECT name, server_state, outcome, sent_time FROM result "
                         "WHERE name IN (%s)" % ", ".join(["%s"] * len(unsent)), sorted(unsent))
        assert all(r["sent_time"] == 0 and r["outcome"] == Outcome.DIDNT_NEED
                   for r in never), never
        logs = "".join(v.client.log_text() for v in demo.volunteers)
        # a running task is aborted by abort_task, one not yet started by abort_inactive
        assert all(any("result state=ABORTED for %s from %s" % (name, where) in logs
                       for where in ("abort_task", "RESULT::abort_inactive"))
                   for name in sent), logs[-3000:]
        status = client.query_batch(bid2)
        assert status.state == BatchState.ABORTED
    finally:
        db.close()
    _check_client_logs(run)


def test_htcondor_gahp_with_stock_clients(fullrun, tmp_path):
    """As HTCondor's gridmanager drives it: five jobs with local inputs (two
    share one file, uploaded once), RESULTS polled until the stock clients
    finished them, outputs fetched into per-job directories, one job of a
    second batch aborted, both batches retired."""
    run = fullrun
    demo, auth = _project(run)
    url = demo.cfg.master_url
    work = tmp_path / "condor"
    (work / "in").mkdir(parents=True)
    files = ["shared.txt", "shared.txt", "two.txt", "three.txt", "four.txt"]
    for i, name in enumerate(sorted(set(files))):
        (work / "in" / name).write_text(_text(i, name))
    g = Gahp()
    try:
        assert g.send("ASYNC_MODE_ON")[0] == "S"
        assert g.send("BOINC_SELECT_PROJECT %s %s" % (url, auth))[0] == "S"
        jobs = " ".join("cj%d 0 1 %s in" % (i, work / "in" / f) for i, f in enumerate(files))
        assert g.send("BOINC_SUBMIT 1 condor_one %s 5 %s" % (APP, jobs))[0] == "S"
        assert g.wait_result(1) == "NULL"
        db = demo.connect()
        try:
            assert db.query_value("SELECT COUNT(*) FROM job_file") == 4
            bid = db.query_value("SELECT id FROM batch WHERE name = 'condor_one'")
        finally:
            db.close()
        demo.batch, demo.s.njobs = bid, 5
        demo.make_volunteers()
        demo.start_volunteers()
        reqid = 10

        def all_done():
            nonlocal reqid
            reqid += 1
            assert g.send("BOINC_QUERY_BATCHES %d 0 1 condor_one" % reqid)[0] == "S"
            line = g.wait_result(reqid).split()
            return line if set(line[4::2]) == {"DONE"} else None
        line = _wait("the GAHP to see every job DONE", all_done, demo)
        assert line[2] == "5"
        for i, f in enumerate(files):
            out = work / "out" / ("cj%d" % i)
            out.mkdir(parents=True)
            reqid += 1
            assert g.send("BOINC_FETCH_OUTPUT %d cj%d %s stderr.txt ALL 1 out result.txt"
                          % (reqid, i, out))[0] == "S"
            result = g.wait_result(reqid).split()
            assert result[0] == "NULL" and result[1] == "0" and float(result[2]) > 0, result
            index = sorted(set(files)).index(f)
            assert (out / "result.txt").read_text() == _text(index, f).upper()
            assert "example_app: copied" in (out / "stderr.txt").read_text()
        # a second batch; one of its jobs aborted before it runs
        jobs = " ".join("ck%d 2 --cpu_time 60 1 %s in" % (i, work / "in" / "shared.txt")
                        for i in range(2))
        assert g.send("BOINC_SUBMIT 50 condor_two %s 2 %s" % (APP, jobs))[0] == "S"
        assert g.wait_result(50) == "NULL"
        assert g.send("BOINC_ABORT_JOBS 51 ck0")[0] == "S"
        assert g.wait_result(51) == "NULL"
        db = demo.connect()
        try:
            assert db.query_value("SELECT COUNT(*) FROM job_file") == 4      # nothing new
            assert db.query_value("SELECT error_mask FROM workunit WHERE name = 'ck0'") == 16
            for reqid, name in ((52, "condor_one"), (53, "condor_two")):
                assert g.send("BOINC_RETIRE_BATCH %d %s" % (reqid, name))[0] == "S"
                assert g.wait_result(reqid) == "NULL"
            assert {r["state"] for r in db.query("SELECT state FROM batch")} == \
                {BatchState.RETIRED}
        finally:
            db.close()
        assert g.send("QUIT")[0] == "S"
    finally:
        g.close()
    _check_client_logs(run)

