"""The submission tools (boincpy.tools.submit, bin/submit_job ...) driven with
click's CliRunner against the loopback server answering with BOINC's PHP
server's captured replies: the requests they make, what they print."""

import hashlib
import json
import os
import subprocess
import zipfile

import pytest
from click.testing import CliRunner
from lxml import etree

from backend_util import bin_cmd, bin_env
from boincpy.tools import submit
from submit_replay import Replay, fixture_bytes

PY = "python_client/"
TOOLS = ("submit_batch", "submit_job", "query_batch", "query_job", "get_output", "abort_batch",
         "retire_batch")


@pytest.fixture
def replay():
    server = Replay()
    yield server
    server.close()


def run(replay, name, *args, auth="AUTHENTICATOR"):
    """Run tool ``name`` with the project in the environment, as a user would."""
    env = {"BOINC_PROJECT_URL": replay.url, "BOINC_AUTHENTICATOR": auth}
    return CliRunner().invoke(submit.cli, [name] + list(args), env=env)


def requests_of(replay):
    """[(root tag, parsed request)] of the RPCs made so far."""
    out = []
    for r in replay.requests:
        if r.method == "POST":
            tree = etree.fromstring(r.form["request"].encode("utf-8"))
            out.append((tree.tag, tree))
        else:
            out.append(("GET", r))
    return out


def absent(*indices):
    return ("<query_files>\n<absent_files>\n%s</absent_files>\n</query_files>\n"
            % "".join("<file>%d</file>\n" % i for i in indices)).encode()


def test_every_tool_has_help():
    for name in TOOLS:
        result = CliRunner().invoke(submit.cli, [name, "--help"])
        assert result.exit_code == 0, result.output
        assert result.output.startswith("Usage: cli %s [OPTIONS]" % name)
        assert "--url" in result.output and "BOINC_AUTHENTICATOR" in result.output
    out = subprocess.run(bin_cmd("submit_job", "--help"), env=bin_env(), capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0
    assert out.stdout.startswith("Usage: submit_job [OPTIONS] APPNAME [INFILE]...")
    assert "--templates IN OUT" in out.stdout and "--target_user ID" in out.stdout


def test_the_project_url_is_required():
    result = CliRunner().invoke(submit.cli, ["query_batch"], env={"BOINC_PROJECT_URL": None,
                                                                  "BOINC_AUTHENTICATOR": "x"})
    assert result.exit_code == 2 and "Missing option '--url'" in result.output


def test_bin_tool_over_http(replay):
    replay.queue(PY + "26_query_batches.reply.xml")
    env = bin_env()
    env.update(BOINC_PROJECT_URL=replay.url, BOINC_AUTHENTICATOR="AUTHENTICATOR")
    out = subprocess.run(bin_cmd("query_batch", "--json"), env=env, capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stderr == ""
    [batch] = json.loads(out.stdout)
    assert (batch["id"], batch["name"], batch["state_name"]) == (1, "py_b1", "completed")


def test_query_batch_lists_and_shows(replay):
    replay.queue(PY + "51_query_batches.reply.xml")
    result = run(replay, "query_batch")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].split() == ["id", "name", "app", "state", "jobs", "failed", "done"]
    assert lines[1].split() == ["2", "py_b2", "uppercase", "aborted", "3", "0", "0%"]
    assert lines[2].split() == ["3", "py_b3", "uppercase", "in", "progress", "1", "0", "0%"]
    replay.queue(PY + "24_query_batch.reply.xml")
    result = run(replay, "query_batch", "1")
    assert result.exit_code == 0, result.output
    assert "Batch 1 (py_b1), app uppercase\n   state: completed\n   jobs: 6, 0 failed, " \
           "100% done\n" in result.output
    assert result.output.count(" done ") == 6
    [(_, req)] = requests_of(replay)[1:]
    assert (req.findtext("batch_id"), req.findtext("get_job_details")) == ("1", "1")
    replay.queue(PY + "24_query_batch.reply.xml")
    data = json.loads(run(replay, "query_batch", "--name", "123", "--json").output)
    assert requests_of(replay)[-1][1].findtext("batch_name") == "123"
    assert [j["status"] for j in data["jobs"]] == ["done"] * 6
    assert data["credit_canonical"] == 0.070402516435185


def test_query_job_by_name_and_id(replay):
    replay.queue(PY + "28_query_completed_job.reply.xml")
    result = run(replay, "query_job", "py_j0", "--stderr")
    assert result.exit_code == 0, result.output
    assert result.output.startswith("Job py_j0: completed (canonical instance 1)\n"
                                    "   exit status: 0\n")
    assert "<stderr_txt>\nuppercase: done" in result.output
    replay.queue(PY + "27_query_job.reply.xml")
    result = run(replay, "query_job", "--id", "1")
    assert result.output.splitlines()[1].split() == ["py_j0_0", "1", "Completed", "and",
                                                     "validated", "93"]
    assert requests_of(replay)[-1][1].findtext("job_id") == "1"
    # digits are a batch, as for BOINC's query_job
    replay.queue(PY + "21_query_batch.reply.xml")
    lines = run(replay, "query_job", "1").output.splitlines()
    assert requests_of(replay)[-1][1].findtext("batch_id") == "1"
    assert [line.split()[:3] for line in lines[1:]] == [
        ["py_j0", "1", "done"], ["py_j1", "2", "done"], ["py_j2", "3", "in_progress"],
        ["py_j3", "4", "done"], ["py_j4", "5", "in_progress"], ["py_j5", "6", "done"]]


def test_abort_and_retire(replay):
    replay.queue(PY + "40_abort_batch.reply.xml")
    result = run(replay, "abort_batch", "2")
    assert (result.exit_code, result.output) == (0, "Batch 2 aborted.\n")
    replay.queue(PY + "42_abort_batch-other_users_batch_abort.reply.xml")
    result = run(replay, "abort_batch", "1", auth="OTHER_SUBMITTER_AUTHENTICATOR")
    assert result.exit_code == 1
    assert result.output == "Error: abort_batch: not owner (error -1)\n"
    replay.queue(PY + "50_retire_batch.reply.xml")
    result = run(replay, "retire_batch", "py_b1")
    assert (result.exit_code, result.output) == (0, "Batch py_b1 retired.\n")
    assert requests_of(replay)[-1][1].findtext("batch_name") == "py_b1"


def _input(tmp_path, name, fixture):
    path = tmp_path / name
    path.write_bytes(fixture_bytes(fixture))
    return str(path)


def test_submit_job(replay, tmp_path):
    infile = _input(tmp_path, "a.txt", PY + "13_upload_files.request.file_0.txt")
    phys = "jf_" + hashlib.md5(open(infile, "rb").read()).hexdigest()
    for reply in (PY + "08_get_templates.reply.xml", PY + "10_create_batch.reply.xml",
                  absent(0), PY + "13_upload_files.reply.xml", PY + "16_submit_batch.reply.xml"):
        replay.queue(reply)
    result = run(replay, "submit_job", "uppercase", infile, "--name", "myjob",
                 "--command_line", '--say "hi"', "--target_user", "7", "--verbose")
    assert result.exit_code == 0, result.output
    assert result.output.endswith("Job name: myjob\nBatch ID: 1\n")
    assert "uploaded %s as %s" % (infile, phys) in result.output
    reqs = requests_of(replay)
    assert [t for t, _ in reqs] == ["get_templates", "create_batch", "query_files",
                                    "upload_files", "submit_batch"]
    assert reqs[1][1].findtext("batch_name") == "myjob"
    assert reqs[2][1].findtext("batch_id") == "1"
    assert replay.requests[3].parts[1].data == open(infile, "rb").read()
    job = reqs[4][1].find("batch/job")
    assert reqs[4][1].findtext("batch/batch_id") == "1"
    assert (job.findtext("name"), job.findtext("command_line"), job.findtext("target_user"),
            job.findtext("input_file/mode"), job.findtext("input_file/source")) == (
        "myjob", '--say "hi"', "7", "local_staged", phys)


def test_submit_job_checks_the_number_of_files(replay, tmp_path):
    replay.queue(PY + "08_get_templates.reply.xml")
    result = run(replay, "submit_job", "uppercase")
    assert result.exit_code == 1
    assert "wrong number of input files; expected 1" in result.output
    assert [t for t, _ in requests_of(replay)] == ["get_templates"]     # no batch made


def test_submit_job_with_templates_and_json(replay, tmp_path):
    infile = _input(tmp_path, "a.txt", PY + "13_upload_files.request.file_0.txt")
    request = fixture_bytes(PY + "16_submit_batch.request.xml").decode()
    tin, tout = tmp_path / "in.xml", tmp_path / "out.xml"
    tin.write_text(request[request.index("<input_template>"):
                           request.index("</input_template>") + 17])
    tout.write_text(request[request.index("<output_template>"):
                            request.index("</output_template>") + 18])
    for reply in (PY + "10_create_batch.reply.xml", PY + "14_query_files.reply.xml",
                  PY + "16_submit_batch.reply.xml"):
        replay.queue(reply)
    result = run(replay, "submit_job", "uppercase", infile, "--templates", str(tin), str(tout),
                 "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["batch_id"] == 1 and data["job_name"].startswith("uppercase_")
    reqs = requests_of(replay)
    assert [t for t, _ in reqs] == ["create_batch", "query_files", "submit_batch"]
    job = reqs[2][1].find("batch/job")
    assert job.find("input_template/workunit/delay_bound").text == "3600"
    assert job.find("output_template/file_info/max_nbytes").text == "65536"


def test_submit_batch_one_job_per_file(replay, tmp_path):
    d = tmp_path / "inputs"
    d.mkdir()
    for i, text in enumerate([b"one\n", b"two\n", b"one\n"]):
        (d / ("f%d" % i)).write_bytes(text)
    (d / ".hidden").write_bytes(b"not an input")
    for reply in (PY + "08_get_templates.reply.xml", PY + "36_create_batch.reply.xml",
                  absent(0, 1), PY + "13_upload_files.reply.xml",
                  PY + "38_submit_batch.reply.xml"):
        replay.queue(reply)
    result = run(replay, "submit_batch", "uppercase", str(d), "--batch_name", "b",
                 "--rsc_fpops_est", "1e10", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["batch_id"] == 3
    assert [j["name"] for j in data["jobs"]] == ["b_0", "b_1", "b_2"]
    one, two = ("jf_" + hashlib.md5(t).hexdigest() for t in (b"one\n", b"two\n"))
    assert [j["phys_name"] for j in data["jobs"]] == [one, two, one]
    reqs = requests_of(replay)
    # the same content is asked about and uploaded once
    assert [p.text for p in reqs[2][1].findall("phys_name")] == [one, two]
    assert [p.data for p in replay.requests[3].parts[1:]] == [b"one\n", b"two\n"]
    jobs = reqs[4][1].findall("batch/job")
    assert [(j.findtext("name"), j.findtext("input_file/source"), j.findtext("rsc_fpops_est"))
            for j in jobs] == [("b_0", one, "10000000000.000000"),
                               ("b_1", two, "10000000000.000000"),
                               ("b_2", one, "10000000000.000000")]
    replay.queue(PY + "08_get_templates.reply.xml")
    for reply in (PY + "36_create_batch.reply.xml", absent(), PY + "38_submit_batch.reply.xml"):
        replay.queue(reply)
    result = run(replay, "submit_batch", "uppercase", str(d))
    assert result.output.endswith("3 jobs submitted.  Batch ID 3\n")


def test_a_failed_submission_retires_its_empty_batch(replay, tmp_path):
    d = tmp_path / "inputs"
    d.mkdir()
    (d / "f").write_bytes(b"x\n")
    for reply in (PY + "08_get_templates.reply.xml", PY + "36_create_batch.reply.xml",
                  absent(), PY + "04_submit_batch-unknown_app.reply.xml",
                  PY + "50_retire_batch.reply.xml"):
        replay.queue(reply)
    result = run(replay, "submit_batch", "uppercase", str(d))
    assert result.exit_code == 1
    assert "submit_batch: app not found: no_such_app (error -1)" in result.output
    tag, req = requests_of(replay)[-1]
    assert (tag, req.findtext("batch_id")) == ("retire_batch", "3")


def test_get_output_of_a_job_and_a_batch(replay, tmp_path):
    replay.queue(PY + "08_get_templates.reply.xml")
    replay.queue_file(PY + "31_get_output.workunit_file.reply.txt", "py_j1_0_r490973746_0")
    result = run(replay, "get_output", "py_j1", "-d", str(tmp_path))
    assert result.exit_code == 0, result.output
    path = tmp_path / "py_j1__out"
    assert result.output == "%s\n" % path
    assert path.read_bytes() == fixture_bytes(PY + "31_get_output.workunit_file.reply.txt")
    get = replay.requests[1]
    assert get.path == "/PROJECT/get_output.php"
    assert get.query == [("cmd", "workunit_file"), ("auth_str", "AUTHENTICATOR"),
                         ("wu_name", "py_j1"), ("file_num", "0")]
    replay.queue(PY + "24_query_batch.reply.xml")
    replay.queue_file(PY + "30_get_output.batch_files.reply.zip", "boinc_batch_upvrs2.zip")
    result = run(replay, "get_output", "--batch", "py_b1", "-d", str(tmp_path))
    assert result.exit_code == 0, result.output
    with zipfile.ZipFile(tmp_path / "batch_1.zip") as z:
        assert len(z.namelist()) == 6
    assert requests_of(replay)[2][1].findtext("batch_name") == "py_b1"
    assert dict(replay.requests[3].query)["auth_str"] == hashlib.md5(
        b"AUTHENTICATOR1").hexdigest()
    replay.queue(PY + "45_get_output.result_file-other_users_output.reply.txt",
                 "text/html; charset=UTF-8")
    result = run(replay, "get_output", "--batch", "1", "-o", str(tmp_path / "x.zip"))
    assert result.exit_code == 1 and "ERROR: bad authenticator" in result.output
    assert not os.path.exists(tmp_path / "x.zip")
    assert run(replay, "get_output").exit_code == 2


def test_progress_bars_only_on_a_terminal(replay, tmp_path):
    """On a terminal the uploads show click's progress bar (on stderr); in a
    script (stderr a pipe) nothing but the result is printed."""
    import pty
    d = tmp_path / "inputs"
    d.mkdir()
    (d / "f").write_bytes(b"x" * 200000)
    env = bin_env()
    env.update(BOINC_PROJECT_URL=replay.url, BOINC_AUTHENTICATOR="AUTHENTICATOR")
    outputs = []
    for tty in (True, False):
        for reply in (PY + "08_get_templates.reply.xml", PY + "36_create_batch.reply.xml",
                      absent(0), PY + "13_upload_files.reply.xml",
                      PY + "38_submit_batch.reply.xml"):
            replay.queue(reply)
        if tty:
            leader, follower = pty.openpty()
            proc = subprocess.Popen(bin_cmd("submit_batch", "uppercase", str(d)), env=env,
                                    stdout=subprocess.PIPE, stderr=follower)
            os.close(follower)
            err = b""
            while True:
                try:
                    chunk = os.read(leader, 4096)
                except OSError:         # the terminal's other side closed
                    break
                if not chunk:
                    break
                err += chunk
            os.close(leader)
            out = proc.stdout.read()
            proc.wait(60)
        else:
            done = subprocess.run(bin_cmd("submit_batch", "uppercase", str(d)), env=env,
                                  capture_output=True, timeout=60)
            out, err = done.stdout, done.stderr
        outputs.append((out, err))
    (tty_out, tty_err), (pipe_out, pipe_err) = outputs
    assert tty_out == pipe_out == b"1 jobs submitted.  Batch ID 3\n"
    assert b"Uploading input files" in tty_err and b"100%" in tty_err
    assert pipe_err == b""
