"""Single jobs (single_job_setup, boinc_submit, single_job_assimilator) on a
hand-built project: the app and app version layout, the job's files and rows,
refusals that change nothing, and the job's outputs delivered to its
directory through the transitioner, validator and assimilator."""

import os
import re

import pytest
from click.testing import CliRunner

from backend_rows import db_of, run_pass
from backend_util import make_upload_keys
from boincpy.daemons.sample_assimilators import SingleJobAssimilator
from boincpy.daemons.sample_validators import TrivialValidator
from boincpy.daemons.transitioner import Transitioner
from boincpy.files import dir_hier_path
from boincpy.states import Outcome, ServerState
from boincpy.tools.single_job import setup_cmd, submit_cmd

PLATFORM = "x86_64-pc-linux-gnu"
APP = "single_job_" + PLATFORM


@pytest.fixture
def sj(mini_project, tmp_path, monkeypatch):
    """The project, set up for single jobs with a stand-in wrapper binary, and
    a job directory (the current directory) holding a program and inputs."""
    tree = tmp_path / "samples"
    (tree / "wrapper").mkdir(parents=True)
    (tree / "wrapper" / "wrapper").write_bytes(b"\x7fELF wrapper v1")
    job_dir = tmp_path / "job"
    job_dir.mkdir()
    (job_dir / "prog.sh").write_text("#!/bin/sh\ntr a-z A-Z < in.txt > out.txt\n")
    (job_dir / "in.txt").write_text("hello\n")
    (job_dir / "stdin.txt").write_text("from stdin\n")
    monkeypatch.chdir(job_dir)
    monkeypatch.setenv("BOINC_PROJECT_DIR", str(mini_project))
    make_upload_keys(mini_project)
    db = db_of(mini_project)
    yield dict(root=mini_project, tree=tree, job_dir=job_dir, db=db)
    db.close()


def _setup(sj, *extra):
    return CliRunner().invoke(setup_cmd, [str(sj["tree"]), "--platform", PLATFORM,
                                          "--project_dir", str(sj["root"])] + list(extra))


def _submit(*args):
    return CliRunner().invoke(submit_cmd, ["--no_wait", "--platform", PLATFORM] + list(args))


def _transition(root, db, wuid):
    # the transitioner takes workunits whose transition_time has passed (not
    # this second's)
    db.execute("UPDATE workunit SET transition_time = 0 WHERE id = %s", (wuid,))
    run_pass(Transitioner, str(root), "--one_pass")


def _counts(db):
    return (db.query_value("SELECT COUNT(*) FROM workunit"),
            db.query_value("SELECT COUNT(*) FROM result"))


def _files(root):
    found = set()
    for d, _, names in os.walk(root):
        if "log_test" not in d:
            found.update(os.path.join(d, n) for n in names)
    return found


def test_setup_makes_the_app_and_one_version_per_wrapper(sj):
    r = _setup(sj)
    assert r.exit_code == 0, r.output
    db, root = sj["db"], str(sj["root"])
    app = db.query_one("SELECT * FROM app WHERE name = %s", (APP,))
    assert app["user_friendly_name"] == "Jobs for " + PLATFORM
    v0 = os.path.join(root, "apps", APP, "1.0", PLATFORM, APP + "_1.0")
    assert open(v0, "rb").read() == b"\x7fELF wrapper v1"
    assert os.access(v0, os.X_OK)
    assert "bin/update_versions" in r.output
    assert "single_job_assimilator --app " + APP in r.output     # config.xml lacks it
    # again with the same wrapper: nothing new
    r = _setup(sj)
    assert r.exit_code == 0 and "Current wrapper already installed" in r.output
    assert not os.path.exists(os.path.join(root, "apps", APP, "1.1"))
    assert db.query_value("SELECT COUNT(*) FROM app WHERE name = %s", (APP,)) == 1
    # a new wrapper: a new version directory
    (sj["tree"] / "wrapper" / "wrapper").write_bytes(b"\x7fELF wrapper v2")
    assert _setup(sj).exit_code == 0
    v1 = os.path.join(root, "apps", APP, "1.1", PLATFORM, APP + "_1.1")
    assert open(v1, "rb").read() == b"\x7fELF wrapper v2"


def test_setup_without_a_wrapper_changes_nothing(sj, tmp_path):
    r = CliRunner().invoke(setup_cmd, [str(tmp_path / "nowhere"), "--project_dir",
                                       str(sj["root"])])
    assert r.exit_code != 0 and "doesn't exist" in str(r.exception or r.output)
    assert sj["db"].query_value("SELECT COUNT(*) FROM app WHERE name LIKE 'single_job%%'") == 0


def test_submit_refusals_change_nothing(sj):
    db, root = sj["db"], str(sj["root"])
    before, files = _counts(db), _files(root)
    r = _submit("prog.sh")                          # the project is not set up
    assert r.exit_code != 0 and "isn't configured to run single jobs" in str(r.exception)
    assert _setup(sj).exit_code == 0
    files = _files(root)
    for args, message in ((["--infile", "missing.txt", "prog.sh"], "Missing input file"),
                          (["noprog"], "Missing input file noprog"),
                          (["--infile", "../in.txt", "prog.sh"], "not a path"),
                          (["--outfile", "a/b", "prog.sh"], "not a path")):
        r = _submit(*args)
        assert r.exit_code != 0 and message in str(r.exception), (args, r.output)
    assert _counts(db) == before and _files(root) == files
    r = _submit("--rsc_fpops_est", "-1", "prog.sh")
    assert r.exit_code != 0 and "rsc_fpops_est" in r.output
    assert _counts(db) == before and _files(root) == files


def test_a_failure_after_the_files_are_written_undoes_them(sj, monkeypatch):
    from boincpy import backend_lib
    from boincpy.errors import DatabaseError
    assert _setup(sj).exit_code == 0
    db, root = sj["db"], str(sj["root"])
    before, files = _counts(db), _files(root)

    def failing(*args, **kwargs):
        raise DatabaseError("the database went away")
    monkeypatch.setattr(backend_lib, "insert_jobs", failing)
    r = _submit("--infile", "in.txt", "--outfile", "out.txt", "prog.sh")
    assert r.exit_code != 0 and "went away" in str(r.exception)
    assert _counts(db) == before and _files(root) == files


def test_a_single_job_from_submission_to_its_directory(sj):
    db, root = sj["db"], str(sj["root"])
    assert _setup(sj).exit_code == 0
    r = _submit("--infile", "in.txt", "--stdin", "stdin.txt", "--outfile", "out.txt",
                "--stdout", "log.txt", "prog.sh", "-x", "a<b&c")
    assert r.exit_code == 0, r.output
    wuid = int(re.search(r"Job (\d+) submitted", r.output).group(1))
    wu = db.query_one("SELECT * FROM workunit WHERE id = %s", (wuid,))
    assert wu["name"] == "sj_%d" % wuid and wu["min_quorum"] == 1
    assert wu["target_nresults"] == 1
    assert wu["appid"] == db.query_value("SELECT id FROM app WHERE name = %s", (APP,))
    xml = wu["xml_doc"]
    prog = re.search(r"<name>(prog\.sh_%s_[0-9a-f]{8})</name>" % PLATFORM, xml).group(1)
    # the program: executable and sticky; the inputs under the job's id
    block = xml[xml.rindex("<file_info>", 0, xml.index(prog)):xml.index("</file_info>",
                                                                         xml.index(prog))]
    assert "<executable/>" in block and "<sticky/>" in block
    for name in ("in.txt_%d" % wuid, "stdin.txt_%d" % wuid, "sj_%d.xml" % wuid):
        assert "<name>%s</name>" % name in xml
    assert "<open_name>job.xml</open_name>" in xml and "<copy_file/>" in xml
    fanout = 1024
    job_xml = open(dir_hier_path(os.path.join(root, "download"), "sj_%d.xml" % wuid,
                                 fanout)).read()
    assert "<application>%s</application>" % prog in job_xml
    assert "<stdin_filename>stdin.txt</stdin_filename>" in job_xml
    assert "<stdout_filename>log.txt</stdout_filename>" in job_xml
    assert "<command_line>-x a&lt;b&amp;c</command_line>" in job_xml
    assert open(dir_hier_path(os.path.join(root, "download"), prog, fanout)).read() \
        .startswith("#!/bin/sh")
    assert open(dir_hier_path(os.path.join(root, "upload"), "sj_%d" % wuid, fanout)).read() \
        == "<job_dir>%s</job_dir>\n" % sj["job_dir"]

    # the pipeline: the transitioner makes the one instance ...
    _transition(root, db, wuid)
    (res,) = db.query("SELECT * FROM result WHERE workunitid = %s", (wuid,))
    doc = res["xml_doc_in"]
    names = re.findall(r"<file_name>([^<]+)</file_name>", doc)
    assert len(names) == 2 and re.findall(r"<open_name>([^<]+)</open_name>", doc) \
        == ["out.txt", "log.txt"]
    # ... a host runs it and uploads both outputs ...
    for name, data in zip(names, (b"HELLO\n", b"the program's stdout\n")):
        with open(dir_hier_path(os.path.join(root, "upload"), name, fanout, create=True),
                  "wb") as f:
            f.write(data)
    db.execute("UPDATE result SET server_state = %s, outcome = %s, client_state = 5, "
               "received_time = UNIX_TIMESTAMP(), hostid = 7, cpu_time = 3.5, "
               "xml_doc_out = %s WHERE id = %s",
               (int(ServerState.OVER), int(Outcome.SUCCESS), doc, res["id"]))
    # ... and the transitioner, validator and assimilator deliver it
    _transition(root, db, wuid)
    run_pass(TrivialValidator, root, "--app", APP, "--one_pass")
    _transition(root, db, wuid)
    run_pass(SingleJobAssimilator, root, "--app", APP, "--one_pass")
    assert (sj["job_dir"] / "out.txt").read_bytes() == b"HELLO\n"
    assert (sj["job_dir"] / "log.txt").read_bytes() == b"the program's stdout\n"
    summary = (sj["job_dir"] / ("job_summary_%d" % wuid)).read_text()
    assert "Job was completed by host 7" in summary
    assert not os.path.exists(os.path.join(root, "templates", "sj_wu_template_%d" % wuid))
    assert not os.path.exists(os.path.join(root, "templates", "sj_result_template_%d" % wuid))

    # --jobs and --wait see it completed
    r = CliRunner().invoke(submit_cmd, ["--jobs"])
    assert "Jobs for %s:" % PLATFORM in r.output and "Job %d: completed" % wuid in r.output
    r = CliRunner().invoke(submit_cmd, ["--wait", str(wuid)])
    assert r.exit_code == 0 and "job %d completed" % wuid in r.output


def test_abort_cancels_only_single_jobs(sj):
    db = sj["db"]
    assert _setup(sj).exit_code == 0
    r = _submit("prog.sh")
    wuid = int(re.search(r"Job (\d+) submitted", r.output).group(1))
    _transition(sj["root"], db, wuid)
    r = CliRunner().invoke(submit_cmd, ["--abort", str(wuid)])
    assert r.exit_code == 0 and "Job %d has been aborted." % wuid in r.output
    assert db.query_value("SELECT error_mask FROM workunit WHERE id = %s", (wuid,)) & 16
    (res,) = db.query("SELECT server_state, outcome FROM result WHERE workunitid = %s", (wuid,))
    assert (res["server_state"], res["outcome"]) == (ServerState.OVER, Outcome.DIDNT_NEED)
    r = CliRunner().invoke(submit_cmd, ["--abort", str(wuid)])
    assert "already been aborted" in r.output
    other = db.insert("INSERT INTO workunit (name, appid, xml_doc) VALUES ('other', "
                      "(SELECT id FROM app WHERE name = 'example_app'), '')")
    r = CliRunner().invoke(submit_cmd, ["--abort", str(other)])
    assert r.exit_code != 0 and "not a boinc_submit job" in str(r.exception)
    assert db.query_value("SELECT error_mask FROM workunit WHERE id = %s", (other,)) == 0
