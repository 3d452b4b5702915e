"""The submission client and tools against boincpy's own handlers, over HTTP
through a private Apache: a submitter uploads inputs by content, submits,
follows and collects batches; simulated volunteers run the jobs through the
real scheduler and upload handler; the validator and transitioner finish them."""

import json
import os
import subprocess
import time
import zipfile

import pytest

from backend_util import bin_cmd, bin_env
from boincpy.errors import SubmitError
from boincpy.submit.client import BatchDesc, FileDesc, JobDesc, SubmitClient, job_file_name
from boincpy.testing import simclient as sc
from submit_util import run_named_jobs, submit_site  # noqa: F401  (a fixture)

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="Apache's children run as www-data")

APP = "uppercase"


@pytest.fixture
def site(submit_site):
    """submit_site (the uppercase app; submitters ``auth`` and ``other_auth``,
    ``noperm_auth`` without rights) and a volunteer to run the jobs."""
    s = submit_site
    s.volunteer = sc.create_account(s.url, "volunteer@example.com", "pw", "volunteer")
    return s


def write(path, text):
    with open(path, "w") as f:
        f.write(text)
    return str(path)


@needs_root
def test_client_against_boincpy(site, tmp_path):
    s = site
    url = s.url
    c = SubmitClient(url, s.auth, timeout=60)
    c.ping()
    t = c.get_templates(app_name=APP)
    assert (t.input_open_names, t.output_open_names) == (["in"], ["out"])
    for auth, msg in (("nonsense", "bad authenticator"), (s.noperm_auth, "no submit access")):
        with pytest.raises(SubmitError) as info:
            SubmitClient(url, auth).get_templates(app_name=APP)
        assert (info.value.error_num, info.value.error_msg) == (-1, msg)
    with pytest.raises(SubmitError, match="app not found: nope"):
        c.get_templates(app_name="nope")
    three = [JobDesc(name="e%d" % i, rsc_fpops_est=1e10, files=[FileDesc.inline("x")])
             for i in range(3)]
    assert c.estimate_batch(BatchDesc(APP, three)) > 0

    # inputs by content: uploaded once, known afterwards
    a = write(tmp_path / "a", "first input\n")
    b = write(tmp_path / "b", "second input\n")
    batch_id = c.create_batch(APP, "b1", expire_time=time.time() + 86400)
    names = c.stage_files([a, b], batch_id=batch_id)
    assert names == [job_file_name(a), job_file_name(b)]
    assert c.query_files(names, batch_id) == []
    assert c.upload_files([a], names[:1]) == []         # nothing sent again
    assert c.query_batch(batch_id).state_name == "uninitialized"

    out_template = t.output_template
    jobs = [JobDesc(name="j0", files=[FileDesc.staged(names[0])]),
            JobDesc(name="j1", files=[FileDesc.staged(names[1])], priority=5),
            JobDesc(name="j2", files=[FileDesc.inline("inline input & <more>\n")],
                    rsc_fpops_est=2e10),
            JobDesc(name="j3", files=[FileDesc.staged(names[0])], command_line="--x 1",
                    input_template=t.input_template, output_template=out_template)]
    assert c.submit_batch(BatchDesc(APP, jobs, batch_id=batch_id)) == batch_id
    b1 = c.query_batch(batch_id, get_job_details=True)
    assert (b1.name, b1.app_name, b1.njobs, b1.state_name) == ("b1", APP, 4, "in progress")
    assert [(j.name, j.status) for j in b1.jobs] == [("j%d" % i, "queued") for i in range(4)]
    assert c.query_batch("b1").id == batch_id
    assert [b.id for b in c.query_batches()] == [batch_id]
    qb2 = c.query_batch2(["b1"])
    assert [j.status for j in qb2.batches["b1"]] == ["UNSENT"] * 4

    run_named_jobs(s, ["j0", "j1", "j2", "j3"])
    b1 = c.query_batch(batch_id, get_cpu_time=True, get_job_details=True)
    assert b1.state_name == "completed" and b1.fraction_done == 1
    assert [j.status for j in b1.jobs] == ["done"] * 4 and b1.total_cpu_time is not None
    assert c.query_batch2("b1", min_mod_time=qb2.server_time).batches["b1"]
    j0 = b1.jobs[0]
    [inst] = c.query_job(j0.id)
    assert inst.id == j0.canonical_instance_id and inst.outfile_sizes == [len("FIRST INPUT\n")]
    done = c.query_completed_job("j0")
    assert done.canonical_resultid == j0.canonical_instance_id and done.exit_status == 0

    # outputs: one file, a job's zip, the batch's zip, get_output2
    out = tmp_path / "out"
    out.mkdir()
    path = c.get_job_output("j0", 0, str(out / "j0.out"))
    assert open(path).read() == "FIRST INPUT\n"
    assert open(c.get_output_file(inst.name, 0, str(out))).read() == "FIRST INPUT\n"
    with zipfile.ZipFile(c.get_job_outputs(b1.jobs[2].id, str(out / "j2.zip"))) as z:
        assert [z.read(n) for n in z.namelist()] == [b"INLINE INPUT & <MORE>\n"]
    with zipfile.ZipFile(c.get_batch_outputs(batch_id, str(out / "b1.zip"))) as z:
        contents = sorted(z.read(n) for n in z.namelist())
    assert contents == sorted([b"FIRST INPUT\n", b"SECOND INPUT\n", b"INLINE INPUT & <MORE>\n",
                               b"FIRST INPUT\n"])
    p2 = c.download(c.output2_url(result_id=inst.id), str(out))
    assert open(p2).read() == "FIRST INPUT\n"
    with zipfile.ZipFile(c.download(c.output2_url(batch_id=batch_id), str(out / "b.zip"))) as z:
        assert len(z.namelist()) == 4

    # another submitter sees and changes nothing of it
    o = SubmitClient(url, s.other_auth)
    for call in (lambda: o.query_batch(batch_id), lambda: o.abort_batch(batch_id),
                 lambda: o.retire_batch(batch_id), lambda: o.abort_jobs(["j1"]),
                 lambda: o.query_completed_job("j0")):
        with pytest.raises(SubmitError) as info:
            call()
        assert info.value.error_num == -1 and "not owner" in info.value.error_msg
    for fetch in (lambda: o.get_job_output("j0", 0, str(out / "x")),
                  lambda: o.get_batch_outputs(batch_id, str(out / "x"))):
        with pytest.raises(SubmitError):
            fetch()
    assert not os.path.exists(out / "x")

    # a batch made by submit_batch, part-aborted, then aborted
    b2 = c.submit_batch(BatchDesc(APP, [JobDesc(name="k%d" % i, files=[FileDesc.staged(
        names[1])]) for i in range(3)], batch_name="b2"))
    assert c.abort_jobs(["k0"]) == ["k0"]
    assert c.abort_batch(b2) is None
    b2s = c.query_batch(b2, get_job_details=True)
    assert b2s.state_name == "aborted"
    assert all("cancelled" in j.errors for j in b2s.jobs)

    c.set_expire_time("b1", 2000000000)
    assert c.query_batch(batch_id).expire_time == 2000000000
    c.retire_batch(batch_id)
    assert batch_id not in [b.id for b in c.query_batches()]
    assert c.query_batch(batch_id).state_name == "retired"

    # names that look like XML come back as they were sent
    evil = "b</name><x>&amp;"
    evil_id = c.create_batch(APP, evil)
    assert c.query_batch(evil_id).name == evil
    assert [b.name for b in c.query_batches() if b.id == evil_id] == [evil]


@needs_root
def test_tools_against_boincpy(site, tmp_path):
    s = site
    env = bin_env()
    env.update(BOINC_PROJECT_URL=s.url, BOINC_AUTHENTICATOR=s.auth)

    def tool(*args, ok=True):
        proc = subprocess.run(bin_cmd(*args), env=env, capture_output=True, text=True,
                              timeout=120)
        assert (proc.returncode == 0) == ok, proc.stdout + proc.stderr
        return proc.stdout if ok else proc.stdout + proc.stderr

    infile = write(tmp_path / "one", "single job\n")
    out = tool("submit_job", APP, infile, "--name", "solo", "--verbose")
    assert "uploaded %s as %s" % (infile, job_file_name(infile)) in out
    assert out.endswith("Job name: solo\nBatch ID: 1\n")
    inputs = tmp_path / "inputs"
    inputs.mkdir()
    for i in range(3):
        write(inputs / ("f%d" % i), "batch input %d\n" % i)
    sub = json.loads(tool("submit_batch", APP, str(inputs), "--batch_name", "many", "--json"))
    assert [j["name"] for j in sub["jobs"]] == ["many_0", "many_1", "many_2"]
    listing = tool("query_batch")
    assert [line.split()[1] for line in listing.splitlines()[1:]] == ["solo", "many"]
    assert "state: in progress" in tool("query_batch", "many", "--name")
    assert tool("query_job", "solo") == "Job solo: not completed yet\n"

    run_named_jobs(s, ["solo", "many_0", "many_1", "many_2"])
    assert tool("query_job", "solo").startswith("Job solo: completed (canonical instance ")
    db = s.p.connect()
    try:
        wu = db.query_value("SELECT id FROM workunit WHERE name = 'solo'")
    finally:
        db.close()
    assert "Completed and validated" in tool("query_job", "--id", str(wu))
    assert tool("query_job", "1").splitlines()[1].split()[:3] == ["solo", str(wu), "done"]
    got = tmp_path / "got"
    assert tool("get_output", "solo", "-d", str(got)) == "%s\n" % (got / "solo__out")
    assert (got / "solo__out").read_text() == "SINGLE JOB\n"
    tool("get_output", "--batch", str(sub["batch_id"]), "-d", str(got))
    with zipfile.ZipFile(got / ("batch_%d.zip" % sub["batch_id"])) as z:
        assert sorted(z.read(n) for n in z.namelist()) == [
            b"BATCH INPUT %d\n" % i for i in range(3)]
    assert tool("retire_batch", "many") == "Batch many retired.\n"

    # a batch aborted before it runs; errors are said, with status 1
    (inputs / "f3").write_text("more\n")
    sub2 = json.loads(tool("submit_batch", APP, str(inputs), "--json"))
    assert tool("abort_batch", str(sub2["batch_id"])) == "Batch %d aborted.\n" % sub2["batch_id"]
    env["BOINC_AUTHENTICATOR"] = s.other_auth
    err = tool("retire_batch", "1", ok=False)
    assert "Error: retire_batch: not owner of batch (error -1)" in err
    env["BOINC_AUTHENTICATOR"] = s.noperm_auth
    assert "no submit access" in tool("submit_job", APP, infile, ok=False)
