"""End to end: the whole project on this machine with stock BOINC clients.

Each test drives boincpy.tools.demo (the same orchestration `make demo` runs):
bin/make_project, a private Apache, the example app built and installed with
xadd/update_versions, bin/start, create_work, and Debian's boinc-client
7.20.5 as volunteers (accounts made by boinccmd --create_account).  The
clients' data directories (client.log is the evidence) and the project's logs
are kept when a test fails; their paths are printed.
"""

import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile

import MySQLdb
import MySQLdb.cursors
import pytest

from boincpy.db import Database
from boincpy.files import dir_hier_path
from boincpy.states import (AssimilateState, ClientState, FileDeleteState, Outcome,
                            ServerState, ValidateState)
from boincpy.tools import demo as demo_module
from boincpy.tools.demo import Demo, Settings, expected_output, job_name

from conftest import TEST_BASE, root_db_params

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not shutil.which("boinc"), reason="boinc-client is not installed"),
    pytest.mark.skipif(os.geteuid() != 0, reason="Apache's children run as www-data"),
]

# Lines of a client's event log that mean something went wrong on our side.
CLIENT_LOG_PROBLEMS = ("Signature verification", "missing signature", "No close tag",
                       "Unrecognized XML", "[unparsed_xml]", "Scheduler request failed",
                       "Project communication failed", "Permanently failed",
                       "Temporarily failed", "error in download", "Computation error",
                       "exceeded elapsed time limit", "Server error")


def _db_settings():
    p = root_db_params()
    settings = {"db_root_user": p["user"], "db_root_passwd": p.get("passwd", "")}
    if "host" in p:
        settings["db_host"] = "%s:%d" % (p["host"], p.get("port", 3306))
    elif p.get("unix_socket"):
        settings["db_socket"] = p["unix_socket"]
    return settings


def _new_root(prefix):
    os.makedirs(TEST_BASE, exist_ok=True)
    os.chmod(TEST_BASE, 0o755)
    base = tempfile.mkdtemp(prefix=prefix + "-", dir=TEST_BASE)
    os.chmod(base, 0o755)
    return base


class FullRun:
    """A Demo over a fresh project with unique names, its clients' directories
    kept for inspection; everything is torn down afterwards."""

    def __init__(self, request):
        self.request = request
        self.demo = None
        self.base = None
        self.clients_dir = None

    def __call__(self, **settings):
        token = secrets.token_hex(4)
        self.base = _new_root("e2e")
        self.clients_dir = tempfile.mkdtemp(prefix="boincpy-e2e-clients-")
        options = dict(project_root=os.path.join(self.base, "bp" + token),
                       short_name="bp" + token, db_name="bpt_" + token,
                       db_user="bpu_" + token, clients_dir=self.clients_dir,
                       daemon_sleep=1, timeout=300, **_db_settings())
        options.update(settings)
        self.demo = Demo(Settings(**options), out=sys.stdout, tty=False)
        return self.demo

    def db(self):
        params = dict(root_db_params(), db=self.demo.cfg.db_name, autocommit=True)
        return MySQLdb.connect(cursorclass=MySQLdb.cursors.DictCursor, **params)

    def rows(self, sql, args=()):
        """Rows as boincpy reads them (text and BLOB columns as str)."""
        with Database(self.db()) as db:
            return db.query(sql, args)

    def client_logs(self):
        """{volunteer number: event log text}"""
        return {v.number: v.client.log_text() for v in self.demo.volunteers}

    def finish(self, failed):
        if self.demo is None:
            return
        if failed and not self.demo.failed:
            self.demo.failed = True
            sys.stderr.write("logs copied to %s\n" % self.demo.save_evidence())
        problems = self.demo.teardown()
        if failed:
            sys.stderr.write("client data directories kept in %s\n" % self.clients_dir)
        else:
            shutil.rmtree(self.clients_dir, ignore_errors=True)
        shutil.rmtree(self.base, ignore_errors=True)
        assert not problems, problems


@pytest.fixture
def fullrun(request):
    """fullrun(**Settings fields) -> Demo over a new project (not yet run)."""
    failed_before = request.session.testsfailed
    run = FullRun(request)
    yield run
    run.finish(failed=request.session.testsfailed > failed_before)


def _batch_results(run, batch):
    return run.rows("SELECT r.*, w.name AS wu_name FROM result r JOIN workunit w "
                    "ON w.id = r.workunitid WHERE w.batch = %s ORDER BY r.id", (batch,))


def _output_name(result):
    return re.search(r"<file_name>([^<]+)</file_name>", result["xml_doc_in"]).group(1)


def _http_status(url, user, password):
    import base64
    import urllib.error
    import urllib.request
    req = urllib.request.Request(url, headers={"Authorization": "Basic " + base64.b64encode(
        ("%s:%s" % (user, password)).encode()).decode()})
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(req, timeout=30) as resp:
            return resp.status
    except urllib.error.HTTPError as exc:
        return exc.code


def _check_client_logs(run):
    for number, text in run.client_logs().items():
        for bad in CLIENT_LOG_PROBLEMS:
            assert bad not in text, "volunteer %d's client log has %r" % (number, bad)


@pytest.mark.parametrize("persistent", [False, True], ids=["cgi", "persistent"])
def test_scheduler_five_jobs_through_one_stock_client(fullrun, persistent):
    """The scheduler issue: jobs sent, run, uploaded and reported by one stock
    client (app signatures checked as the client always does; upload
    certificates checked by the data server), with the scheduler and upload
    handler as CGIs and as persistent processes (FastCGI workers)."""
    run = fullrun
    demo = run(njobs=5, min_quorum=1, volunteers=1, until="reported",
               daemons=("feeder -d 3", "transitioner -d 3"), persistent=persistent)
    demo.run()
    cfg = demo.cfg
    (v,) = demo.volunteers
    hostid = v.client.hostid(cfg.master_url)
    hosts = run.rows("SELECT * FROM host WHERE userid = %s", (v.userid,))
    assert [h["id"] for h in hosts] == [hostid] and hostid > 0
    info = v.client.host_info()
    assert hosts[0]["host_cpid"] and hosts[0]["p_ncpus"] == int(info["p_ncpus"])

    results = _batch_results(run, demo.batch)
    assert sorted(r["wu_name"] for r in results) == [job_name(demo.batch, i) for i in range(5)]
    for r in results:
        assert r["server_state"] == ServerState.OVER, r["name"]
        assert r["outcome"] == Outcome.SUCCESS, r["name"]
        assert r["client_state"] == ClientState.FILES_UPLOADED, r["name"]
        assert r["exit_status"] == 0, r["name"]
        assert r["received_time"] >= r["sent_time"] > 0, r["name"]
        assert r["cpu_time"] > 0 and r["elapsed_time"] > 0, (r["name"], r["cpu_time"],
                                                             r["elapsed_time"])
        assert (r["hostid"], r["userid"]) == (hostid, v.userid), r["name"]
        assert r["app_version_id"] > 0 and r["validate_state"] == ValidateState.INIT
        assert "<stderr_txt>" in r["stderr_out"]
        # the uploaded output, in upload/ under its fan-out directory
        name = _output_name(r)
        path = dir_hier_path(cfg.upload_dir, name, cfg.uldl_dir_fanout)
        assert os.path.dirname(os.path.dirname(path)) == cfg.upload_dir
        i = int(r["wu_name"].rsplit("_", 1)[1])
        with open(path) as f:
            assert f.read() == expected_output(demo.batch, i)
        # what the client reported of it
        out_xml = r["xml_doc_out"]
        assert "<name>%s</name>" % name in out_xml
        nbytes = float(re.search(r"<nbytes>([^<]+)</nbytes>", out_xml).group(1))
        assert nbytes == len(expected_output(demo.batch, i)) == os.path.getsize(path)
    _check_client_logs(run)
    log = v.client.log_text()
    assert "unsigned" not in open(os.path.join(v.client.data_dir, "cc_config.xml")).read()
    assert re.search(r"Finished download of example_app_1\.0_x86_64-pc-linux-gnu", log)
    for r in results:
        assert re.search(r"got ack for task %s\b" % r["name"], log), r["name"]
    # CGIs: a process per request; persistent: the daemons' few processes
    # served them all (the log lines are the same otherwise)
    with open(os.path.join(cfg.host_log_dir, "scheduler.log")) as f:
        pids = re.findall(r"\[PID=(\d+)\s*\]\s+Request: ", f.read())
    assert len(pids) >= 3
    if persistent:
        assert len(set(pids)) <= 2, pids
    else:
        assert len(set(pids)) == len(pids), pids


def test_backend_quorum_credit_assimilation_deletion_and_a_wrong_host(fullrun):
    """The back-end issue: min_quorum 2 with two good volunteers and one whose
    app (anonymous platform, app_info.xml) writes the wrong output: every job
    is validated, credited, assimilated and its files deleted; the wrong
    host's results are invalid and earn nothing."""
    run = fullrun
    demo = run(njobs=3, min_quorum=2, volunteers=2, wrong_host=True, until="deleted")
    summary = demo.run()
    cfg = demo.cfg
    wrong = [v for v in demo.volunteers if v.wrong][0]
    good = [v for v in demo.volunteers if not v.wrong]
    assert len(good) == 2

    wus = run.rows("SELECT * FROM workunit WHERE batch = %s ORDER BY id", (demo.batch,))
    results = _batch_results(run, demo.batch)
    by_wu = {}
    for r in results:
        by_wu.setdefault(r["workunitid"], []).append(r)
    assert len(wus) == 3
    for wu in wus:
        rs = by_wu[wu["id"]]
        assert wu["error_mask"] == 0, wu
        assert wu["canonical_resultid"] in [r["id"] for r in rs]
        assert wu["assimilate_state"] == AssimilateState.DONE
        assert wu["file_delete_state"] == FileDeleteState.DONE
        assert wu["need_validate"] == 0
        valid = [r for r in rs if r["validate_state"] == ValidateState.VALID]
        assert len(valid) == 2 and {r["userid"] for r in valid} == {v.userid for v in good}
        assert all(r["granted_credit"] > 0 for r in valid)
        assert len({r["granted_credit"] for r in valid}) == 1       # the quorum's credit
        assert wu["canonical_credit"] == pytest.approx(valid[0]["granted_credit"])
        for r in rs:
            assert r["server_state"] == ServerState.OVER and r["outcome"] == Outcome.SUCCESS
            assert r["file_delete_state"] == FileDeleteState.DONE, r["name"]
            assert not os.path.exists(dir_hier_path(cfg.upload_dir, _output_name(r),
                                                    cfg.uldl_dir_fanout, create=False))
        # the input file is gone from download/
        i = int(wu["name"].rsplit("_", 1)[1])
        assert not os.path.exists(dir_hier_path(cfg.download_dir, wu["name"] + ".txt",
                                                cfg.uldl_dir_fanout, create=False))
        # sample_assimilator's copy of the canonical output
        with open(os.path.join(demo.root, "sample_results", wu["name"])) as f:
            assert f.read() == expected_output(demo.batch, i)

    # the wrong host: anonymous platform, its results invalid and uncredited
    bad = [r for r in results if r["userid"] == wrong.userid]
    assert bad, "the wrong host got no replica"
    for r in bad:
        assert r["validate_state"] == ValidateState.INVALID, r["name"]
        assert r["granted_credit"] == 0 and r["app_version_id"] < 0, r["name"]
    # ... so those jobs needed a third replica, which went to the other good host
    for wu in wus:
        if any(r["workunitid"] == wu["id"] for r in bad):
            assert wu["target_nresults"] == 3 and len(by_wu[wu["id"]]) == 3

    # credit: the users' and hosts' totals are the sums of what their results got
    for v in good + [wrong]:
        (user,) = run.rows("SELECT * FROM user WHERE id = %s", (v.userid,))
        (host,) = run.rows("SELECT * FROM host WHERE userid = %s", (v.userid,))
        granted = sum(r["granted_credit"] for r in results if r["userid"] == v.userid)
        assert user["total_credit"] == pytest.approx(granted)
        assert host["total_credit"] == pytest.approx(granted)
        if v.wrong:
            assert granted == 0 and user["expavg_credit"] == 0
        else:
            assert granted > 0
            assert user["expavg_credit"] > 0 and user["expavg_time"] > 0
            assert host["expavg_credit"] > 0 and host["expavg_time"] > 0
    assert (summary.done, summary.failed, summary.invalid) == (3, 0, len(bad))
    assert summary.valid == 6
    # the ops pages the summary points at, with the user and password it prints
    assert _http_status(summary.ops_url, summary.ops_user, summary.ops_passwd) == 200
    assert _http_status(summary.ops_url, summary.ops_user, "wrong") == 401
    _check_client_logs(run)
    wrong_log = wrong.client.log_text()
    assert "Found app_info.xml; using anonymous platform" in wrong_log
    assert "Syntax error in app_info.xml" not in wrong_log
    assert "does not exist" not in wrong_log
    # the app ran with app_info.xml's --wrong there, and only there (its stderr)
    for r in results:
        stderr = r["stderr_out"]
        assert ("(wrong mode)" in stderr) == (r["userid"] == wrong.userid), r["name"]


def test_demo_command_end_to_end_with_teardown():
    """`python -m boincpy.tools.demo` as `make demo` runs it (a few jobs),
    then --teardown: its summary, and nothing left behind."""
    base = _new_root("demo")
    short = "bpdemo_" + secrets.token_hex(4)
    root = os.path.join(base, short)
    db = _db_settings()
    argv = [sys.executable, "-m", "boincpy.tools.demo", "--project_root", root, "--jobs", "2",
            "--min_quorum", "2", "--teardown", "--timeout", "300",
            "--db_root_user", db["db_root_user"], "--db_root_passwd", db["db_root_passwd"]]
    if db.get("db_host"):
        argv += ["--db_host", db["db_host"]]
    if db.get("db_socket"):
        argv += ["--db_socket", db["db_socket"]]
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=600,
                              cwd=demo_module.REPO_ROOT)
        out = proc.stdout
        assert proc.returncode == 0, out + proc.stderr
        assert "$ bin/create_work --appname example_app --batch 1 --min_quorum 2" in out
        assert re.search(r"^Volunteer 1 \(volunteer1@demo\.example\.org\): client in .*, "
                         r"attached$", out, re.M)
        assert re.search(r"^Volunteer 2 ", out, re.M)
        assert "jobs: 0 unsent, 0 in progress, 0 validated, 2 assimilated (of 2)" in out
        assert "Summary of batch 1 (2 jobs, min_quorum 2):" in out
        assert "  jobs done: 2 of 2 (validated and assimilated), 0 failed" in out
        assert "  results: 4 valid, 0 invalid, 0 other" in out
        credit = re.findall(r"^    Volunteer (\d) <volunteer\d@demo\.example\.org> \(user \d+\): "
                            r"total ([0-9.e-]+), recent average ([0-9.e-]+)$", out, re.M)
        assert sorted(c[0] for c in credit) == ["1", "2"], out
        assert all(float(total) > 0 and float(avg) > 0 for _, total, avg in credit), credit
        hosts = re.findall(r"^      host \d+: total ([0-9.e-]+), recent average [0-9.e-]+; "
                           r"this batch: 2 valid, 0 invalid$", out, re.M)
        assert len(hosts) == 2 and all(float(t) > 0 for t in hosts), out
        assert "  outputs: %s/sample_results (2 files of this batch, e.g. demo_1_0)" % root in out
        m = re.search(r"^  ops pages: (http://127\.0\.0\.1:\d+/%s_ops/) \(user admin, "
                      r"password (\S+)\)$" % short, out, re.M)
        assert m, out
        assert "Dropped database %s and database user %s" % (short, short) in out
        assert "Removed %s" % root in out
    finally:
        if os.path.exists(os.path.join(root, "config.xml")):     # the demo failed: clean up
            Demo(Settings(project_root=root, njobs=0, teardown=True, **db),
                 out=sys.stderr, tty=False).run()
        shutil.rmtree(base, ignore_errors=True)
    # nothing left: directory, database, database user, processes
    assert not os.path.exists(root)
    conn = MySQLdb.connect(**root_db_params())
    try:
        cur = conn.cursor()
        cur.execute("SHOW DATABASES LIKE %s", (short,))
        assert cur.fetchall() == ()
        cur.execute("SELECT User FROM mysql.user WHERE User = %s", (short,))
        assert cur.fetchall() == ()
    finally:
        conn.close()
    import psutil
    for proc in psutil.process_iter(["cmdline"]):
        assert root not in " ".join(proc.info["cmdline"] or []), proc.info["cmdline"]


def test_mt_plan_class_version_runs_on_a_stock_client(fullrun):
    """The example app installed only as PLATFORM__mt: the scheduler's built-in
    mt plan class sends it with all the host's CPUs and --nthreads, and the
    stock client runs the jobs to the end."""
    if (os.cpu_count() or 1) < 2:
        pytest.skip("the mt plan class needs a host with 2 CPUs")
    run = fullrun
    demo = run(njobs=2, min_quorum=1, volunteers=1, until="reported", plan_class="mt",
               daemons=("feeder -d 3", "transitioner -d 3"))
    demo.run()
    (v,) = demo.volunteers
    ncpus = int(v.client.host_info()["p_ncpus"])
    avs = run.rows("SELECT * FROM app_version")
    assert [av["plan_class"] for av in avs] == ["mt"]
    results = _batch_results(run, demo.batch)
    assert len(results) == 2
    for r in results:
        assert r["server_state"] == ServerState.OVER, r["name"]
        assert r["outcome"] == Outcome.SUCCESS, r["name"]
        assert r["app_version_id"] == avs[0]["id"], r["name"]
    _check_client_logs(run)
    with open(os.path.join(v.client.data_dir, "client_state.xml")) as f:
        state = f.read()
    av = state[state.index("<app_version>"):state.index("</app_version>")]
    assert "<plan_class>mt</plan_class>" in av
    assert float(re.search(r"<avg_ncpus>([^<]+)</avg_ncpus>", av).group(1)) == ncpus
    assert "<cmdline>--nthreads %d</cmdline>" % ncpus in av
