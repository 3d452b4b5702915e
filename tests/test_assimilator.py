"""The assimilator framework and stock assimilators against MariaDB and real files."""

import os
import subprocess
import sys
import time

import pytest

from backend_rows import (add_result, add_workunit, app_id, db_of, row, run_pass, upload_path)
from boincpy.daemons.base import run_daemon
from boincpy.daemons.sample_assimilators import (DummyAssimilator, SampleAssimilator,
                                                 ScriptAssimilator, SingleJobAssimilator)
from test_validator import write_script

INT_MAX = 2147483647


@pytest.fixture
def proj(mini_project):
    db = db_of(mini_project)
    yield dict(db=db, root=mini_project, appid=app_id(db))
    db.close()


def done_job(ctx, name, outputs, output_names=("out",), **wu_kw):
    """A validated workunit (assimilate_state READY) with a canonical result."""
    db = ctx["db"]
    wu = add_workunit(db, name, ctx["appid"], need_validate=0, assimilate_state=1,
                      transition_time=INT_MAX, **wu_kw)
    rid, paths = add_result(db, ctx["root"], wu, name + "_0", validate_state=1,
                            outputs=outputs, output_names=output_names, elapsed_time=42.5)
    db.execute("UPDATE workunit SET canonical_resultid = %s WHERE id = %s", (rid, wu))
    return wu, rid, paths


def failed_job(ctx, name, error_mask=2, batch=0):
    return add_workunit(ctx["db"], name, ctx["appid"], need_validate=0, assimilate_state=1,
                        error_mask=error_mask, batch=batch)


def test_sample_assimilator_copies_outputs_and_logs_errors(proj):
    db, root = proj["db"], proj["root"]
    w1, _, _ = done_job(proj, "job_one", [b"result one\n"])
    w2, _, _ = done_job(proj, "job_two", [b"A", b"B"], output_names=("a", "b"))
    w3, _, _ = done_job(proj, "job_gone", [None])          # output never uploaded
    w4 = failed_job(proj, "job_fail", error_mask=2)
    t0 = int(time.time())
    _, found = run_pass(SampleAssimilator, root, "--app", "example_app", "--one_pass")
    assert found
    out = os.path.join(str(root), "sample_results")
    assert open(os.path.join(out, "job_one"), "rb").read() == b"result one\n"
    assert open(os.path.join(out, "job_two_0"), "rb").read() == b"A"
    assert open(os.path.join(out, "job_two_1"), "rb").read() == b"B"
    assert os.path.exists(os.path.join(out, "job_gone_no_output_files"))
    assert open(os.path.join(out, "errors")).read() == "job_fail: 0x2\n"
    for w in (w1, w2, w3, w4):
        r = row(db, "workunit", w)
        assert r["assimilate_state"] == 2
        assert t0 <= r["transition_time"] <= int(time.time()) + 1


def test_sample_assimilator_is_idempotent(proj):
    """Running the handler twice for the same jobs (a crash before the state
    update) leaves the same files: nothing duplicated, nothing partial."""
    db, root = proj["db"], proj["root"]
    w1, _, _ = done_job(proj, "job_rep", [b"data\n"])
    w2 = failed_job(proj, "job_rep_fail", error_mask=8)
    for _ in range(2):
        run_pass(SampleAssimilator, root, "--app", "example_app", "--one_pass")
        db.execute("UPDATE workunit SET assimilate_state = 1 WHERE id IN (%s, %s)", (w1, w2))
    out = os.path.join(str(root), "sample_results")
    assert sorted(f for f in os.listdir(out)) == ["errors", "job_rep"]
    assert open(os.path.join(out, "errors")).read() == "job_rep_fail: 0x8\n"
    assert open(os.path.join(out, "job_rep"), "rb").read() == b"data\n"


class _WatchingAssimilator(DummyAssimilator):
    """Records, when each handler runs, which earlier jobs are already DONE."""

    seen = []

    def assimilate_handler(self, wu, results, canonical_result):
        db = db_of(self.cfg.project_dir)
        try:
            done = db.query_value("SELECT COUNT(*) FROM workunit WHERE assimilate_state = 2")
        finally:
            db.close()
        type(self).seen.append((wu.name, done))
        return super().assimilate_handler(wu, results, canonical_result)


def test_each_job_is_recorded_before_the_next_handler_runs(proj):
    """As BOINC: a kill between two handlers repeats at most one handler call;
    --record_interval trades that for fewer writes."""
    for k in range(3):
        done_job(proj, "job_rec_%d" % k, [b"x"])
    _WatchingAssimilator.seen = []
    run_pass(_WatchingAssimilator, proj["root"], "--app", "example_app", "--one_pass")
    assert [n for _, n in _WatchingAssimilator.seen] == [0, 1, 2]
    proj["db"].execute("UPDATE workunit SET assimilate_state = 1")
    _WatchingAssimilator.seen = []
    run_pass(_WatchingAssimilator, proj["root"], "--app", "example_app", "--one_pass",
             "--record_interval", "60")
    assert [n for _, n in _WatchingAssimilator.seen] == [0, 0, 0]
    assert proj["db"].query_value("SELECT COUNT(*) FROM workunit WHERE assimilate_state = 2") == 3


def test_script_assimilator_arguments(proj):
    db, root = proj["db"], proj["root"]
    log = os.path.join(str(root), "assim.log")
    write_script(root, "assim", 'echo "$@" >> %s\n' % log)
    w1, r1, paths = done_job(proj, "job_s", [b"x", b"y"], output_names=("o1", "o2"), batch=7)
    w2 = failed_job(proj, "job_sf", error_mask=8, batch=3)
    run_pass(ScriptAssimilator, root, "--app", "example_app", "--one_pass", "--script",
             "assim files files2 wu_id wu_name result_id runtime batch_id")
    lines = open(log).read().splitlines()
    assert lines[0] == " ".join([paths[0], paths[1], paths[0], "o1", paths[1], "o2", str(w1),
                                 "job_s", str(r1), "42.500000", "7"])
    assert lines[1] == "--error 8 job_sf %d 3" % w2
    assert row(db, "workunit", w1)["assimilate_state"] == 2
    assert row(db, "workunit", w2)["assimilate_state"] == 2
    # default tokens: wu_id files
    os.unlink(log)
    w3, _, p3 = done_job(proj, "job_d", [b"z"])
    run_pass(ScriptAssimilator, root, "--app", "example_app", "--one_pass", "--script", "assim")
    assert open(log).read() == "%d %s\n" % (w3, p3[0])


def test_failing_handler_leaves_ready_and_a_later_pass_completes(proj):
    db, root = proj["db"], proj["root"]
    flag = os.path.join(str(root), "broken")
    open(flag, "w").close()
    write_script(root, "picky", 'test -e %s && exit 5\nexit 0\n' % flag)
    w1, _, _ = done_job(proj, "job_f1", [b"1"])
    w2, _, _ = done_job(proj, "job_f2", [b"2"])
    rc = run_daemon(ScriptAssimilator, ["--app", "example_app", "--one_pass", "--script",
                                        "picky", "--project_dir", str(root)])
    assert rc == 5                      # BOINC's assimilator exits with the handler's code
    assert row(db, "workunit", w1)["assimilate_state"] == 1
    assert row(db, "workunit", w2)["assimilate_state"] == 1
    os.unlink(flag)
    assert run_daemon(ScriptAssimilator, ["--app", "example_app", "--one_pass", "--script",
                                          "picky", "--project_dir", str(root)]) == 0
    assert row(db, "workunit", w1)["assimilate_state"] == 2
    assert row(db, "workunit", w2)["assimilate_state"] == 2


def test_jobs_before_a_failure_are_recorded(proj):
    db, root = proj["db"], proj["root"]
    write_script(root, "fail_on_b", 'case "$1" in *job_b*) exit 2;; esac\nexit 0\n')
    wa, _, _ = done_job(proj, "job_a", [b"1"])
    wb, _, _ = done_job(proj, "job_b", [b"2"])
    rc = run_daemon(ScriptAssimilator, ["--app", "example_app", "--one_pass", "--script",
                                        "fail_on_b wu_name", "--project_dir", str(root)])
    assert rc == 2
    assert row(db, "workunit", wa)["assimilate_state"] == 2
    assert row(db, "workunit", wb)["assimilate_state"] == 1


def test_missing_canonical_result_sets_error_bit(proj):
    db = proj["db"]
    wu = add_workunit(db, "job_lost", proj["appid"], need_validate=0, assimilate_state=1)
    db.execute("UPDATE workunit SET canonical_resultid = 999999 WHERE id = %s", (wu,))
    d, _ = run_pass(DummyAssimilator, proj["root"], "--app", "example_app", "--one_pass")
    r = row(db, "workunit", wu)
    assert (r["error_mask"], r["assimilate_state"]) == (32, 2)
    assert "[job_lost] no canonical result" in d.log_stream.getvalue()


def test_defer_and_dont_update_db(proj):
    from boincpy.daemons.assimilator import DEFER_ASSIMILATION

    class Deferring(DummyAssimilator):
        def assimilate_handler(self, wu, results, canonical_result):
            return DEFER_ASSIMILATION

    db = proj["db"]
    w, _, _ = done_job(proj, "job_defer", [b"1"])
    run_pass(DummyAssimilator, proj["root"], "--app", "example_app", "--one_pass",
             "--dont_update_db")
    assert row(db, "workunit", w)["assimilate_state"] == 1
    t0 = int(time.time())
    run_pass(Deferring, proj["root"], "--app", "example_app", "--one_pass")
    r = row(db, "workunit", w)
    assert r["assimilate_state"] == 0 and r["transition_time"] >= t0


def test_single_job_assimilator(proj, tmp_path):
    db, root = proj["db"], proj["root"]
    job_dir = tmp_path / "myjob"
    job_dir.mkdir()
    w, r, _ = done_job(proj, "sj_job", [b"answer"], output_names=("result.txt",))
    jf = upload_path(root, "sj_%d" % w)
    with open(jf, "w") as f:
        f.write("<job_dir>%s</job_dir>\n" % job_dir)
    tmpl = os.path.join(str(root), "templates", "sj_wu_template_%d" % w)
    open(tmpl, "w").close()
    run_pass(SingleJobAssimilator, root, "--app", "example_app", "--one_pass")
    assert (job_dir / "result.txt").read_bytes() == b"answer"
    assert "Job was completed by host" in (job_dir / ("job_summary_%d" % w)).read_text()
    assert not os.path.exists(jf) and not os.path.exists(tmpl)
    assert row(db, "workunit", w)["assimilate_state"] == 2


KILL_SCRIPT = """
import os, signal, sys
from boincpy.daemons import assimilator
from boincpy.daemons.base import run_daemon
from boincpy.daemons.sample_assimilators import SampleAssimilator
def die(self, new_states):      # handlers ran, states not yet written
    os.kill(os.getpid(), signal.SIGKILL)
assimilator.Assimilator._record = die
sys.exit(run_daemon(SampleAssimilator, sys.argv[1:]))
"""


def test_kill_between_handler_and_update_repeats_the_handler(proj):
    db, root = proj["db"], proj["root"]
    w, _, _ = done_job(proj, "job_k", [b"kept\n"])
    proc = subprocess.run([sys.executable, "-c", KILL_SCRIPT, "--app", "example_app",
                           "--one_pass", "--project_dir", str(root)], capture_output=True)
    assert proc.returncode == -9
    out = os.path.join(str(root), "sample_results", "job_k")
    assert open(out, "rb").read() == b"kept\n"
    assert row(db, "workunit", w)["assimilate_state"] == 1       # not marked done
    run_pass(SampleAssimilator, root, "--app", "example_app", "--one_pass")
    assert open(out, "rb").read() == b"kept\n"
    assert row(db, "workunit", w)["assimilate_state"] == 2
    assert os.listdir(os.path.dirname(out)) == ["job_k"]


class _LosingAssimilator(DummyAssimilator):
    """Its database connection is killed (as a server restart does) while
    the second job's handler runs; counts handler calls per job."""

    calls = []

    def assimilate_handler(self, wu, results, canonical_result):
        type(self).calls.append(wu.name)
        if wu.name == "job_lost_1":
            other = db_of(self.cfg.project_dir)
            try:
                other.execute("KILL CONNECTION %s", (self.db.query_value("SELECT CONNECTION_ID()"),))
            finally:
                other.close()
        return super().assimilate_handler(wu, results, canonical_result)


def test_database_lost_after_a_handler_never_runs_it_again(proj):
    """The handler ran, the database went away before its state was written:
    the job is kept in a journal and recorded at the next start, without a
    second handler call (a killed process still repeats it: see above)."""
    from boincpy.errors import DatabaseError
    db, root = proj["db"], proj["root"]
    w0, _, _ = done_job(proj, "job_lost_0", [b"x"])
    w1, _, _ = done_job(proj, "job_lost_1", [b"y"])
    w2, _, _ = done_job(proj, "job_lost_2", [b"z"])
    _LosingAssimilator.calls = []
    with pytest.raises(DatabaseError):
        run_pass(_LosingAssimilator, root, "--app", "example_app", "--one_pass")
    assert _LosingAssimilator.calls == ["job_lost_0", "job_lost_1"]
    assert [row(db, "workunit", w)["assimilate_state"] for w in (w0, w1, w2)] == [2, 1, 1]
    daemon, _ = run_pass(_LosingAssimilator, root, "--app", "example_app", "--one_pass")
    journal = daemon.journal_path()
    assert not os.path.exists(journal)
    # job_lost_1 recorded from the journal, its handler not called again
    assert _LosingAssimilator.calls == ["job_lost_0", "job_lost_1", "job_lost_2"]
    assert [row(db, "workunit", w)["assimilate_state"] for w in (w0, w1, w2)] == [2, 2, 2]


def test_a_broken_journal_is_named(proj):
    root = proj["root"]
    from backend_rows import make_daemon
    from boincpy.errors import ToolError
    d = make_daemon(DummyAssimilator, root, "--app", "example_app", "--one_pass")
    os.makedirs(os.path.dirname(d.journal_path()), exist_ok=True)
    with open(d.journal_path(), "w") as f:
        f.write("12 2\nnonsense\n")
    try:
        with pytest.raises(ToolError, match=r"\.handled line 2: expected 'WUID STATE'"):
            d.initialise()
    finally:
        d.shutdown()
        os.unlink(d.journal_path())


def test_dont_update_db_leaves_the_journal_for_a_real_run(proj):
    """--dont_update_db records nothing, so it must not consume the journal."""
    from backend_rows import make_daemon
    db, root = proj["db"], proj["root"]
    w, _, _ = done_job(proj, "job_journal_kept", [b"x"])
    d = make_daemon(DummyAssimilator, root, "--app", "example_app", "--one_pass")
    os.makedirs(os.path.dirname(d.journal_path()), exist_ok=True)
    with open(d.journal_path(), "w") as f:
        f.write("%d 2\n" % w)
    run_pass(DummyAssimilator, root, "--app", "example_app", "--one_pass", "--dont_update_db")
    assert os.path.exists(d.journal_path())
    assert row(db, "workunit", w)["assimilate_state"] == 1
    run_pass(DummyAssimilator, root, "--app", "example_app", "--one_pass")
    assert not os.path.exists(d.journal_path())
    assert row(db, "workunit", w)["assimilate_state"] == 2
