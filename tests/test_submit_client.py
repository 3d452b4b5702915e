"""boincpy.submit.client against BOINC's own PHP submission handlers, as
captured (tests/fixtures/remote_submit): a loopback server answers with the
captured replies; the requests the client sends are compared element by
element with what BOINC's Python binding and GAHP sent, and every captured
reply is read back and checked against an independent parse of it."""

import hashlib
import os
import re
import socket
import subprocess
import sys
import zipfile

import pytest
from lxml import etree

from boincpy.errors import BoincpyError, SubmitError
from boincpy.submit import client as sc
from boincpy.submit.client import (BatchDesc, FileDesc, JobDesc, JobParams, SubmitClient,
                                   job_file_name, multipart_body, parse_reply)
from submit_replay import Replay, fixture_bytes, fixture_text, parse_multipart
from submit_util import fixture_reply
from webrpc_util import elements

AUTH = "AUTHENTICATOR"          # the captures' placeholder serves as the key
OTHER = "OTHER_SUBMITTER_AUTHENTICATOR"


@pytest.fixture
def replay():
    server = Replay()
    yield server
    server.close()


def _same_text(a, b):
    if a == b:
        return True
    try:
        return float(a) == float(b)
    except ValueError:
        return False


def assert_same_request(sent, captured, ordered=True, ours_only=()):
    """Same elements with the same text (numbers compared as numbers: "%d"
    and "%f" spell one value); in the same order unless ``ordered`` is False
    (BOINC's two clients order some elements differently).  ``ours_only``:
    paths our client sends with a default value where the capture has none."""
    a, b = elements(sent), elements(captured)
    a = [e for e in a if e[0] not in ours_only]
    if not ordered:
        a, b = sorted(a), sorted(b)
    assert [p for p, _ in a] == [p for p, _ in b], "elements differ:\n%s\n%s" % (a, b)
    for (path, text), (_, ref) in zip(a, b):
        assert _same_text(text, ref), "%s: %r != captured %r" % (path, text, ref)


def reply_elements(name):
    """The captured reply read by lxml without PHP's notice lines: the
    independent reading the client's parse is checked against."""
    return elements(fixture_reply(*name.split("/", 1)))


def values(name, path):
    return [t for p, t in reply_elements(name) if p == path]


def handler_of(op):
    return "job_file.php" if op in ("query_files", "upload_files") else "submit_rpc_handler.php"


def exchange(replay, fixture, call, auth=AUTH, ordered=True, ours_only=()):
    """Answer with ``fixture``'s captured reply, run ``call(client)``, check
    the request sent against the captured one; return what call returned
    (or the SubmitError it raised)."""
    replay.queue(fixture + ".reply.xml")
    client = SubmitClient(replay.url, auth)
    try:
        result = call(client)
    except SubmitError as exc:
        result = exc
    sent = replay.requests[-1]
    captured = fixture_text(fixture + ".request.xml")
    op = etree.fromstring(captured.encode()).tag
    assert sent.method == "POST"
    assert sent.path == "/PROJECT/" + handler_of(op)
    assert_same_request(sent.form["request"], captured, ordered, ours_only)
    return result


def error_of(result, msg):
    assert isinstance(result, SubmitError), result
    assert isinstance(result, BoincpyError)
    assert (result.error_num, result.error_msg) == (-1, msg)
    return result


# ---------------------------------------------------------------------------
# Building the captured requests again from descriptions

def _template(captured, root):
    match = re.search(r"<%s>.*?</%s>" % (root, root), captured, re.S)
    return match.group(0) if match else None


def batch_from_capture(name):
    """The BatchDesc a submitter would write for a captured submit_batch /
    estimate_batch request (read with lxml)."""
    captured = fixture_text(name + ".request.xml")
    tree = etree.fromstring(captured.encode())
    b = tree.find("batch")

    def num(node, tag, cast):
        child = node.find(tag)
        return None if child is None else cast(float(child.text))

    jobs = []
    for j in b.findall("job"):
        files = []
        for f in j.findall("input_file"):
            mode = f.findtext("mode")
            if mode == "remote":
                files.append(FileDesc.remote(f.findtext("url"), float(f.findtext("nbytes")),
                                             f.findtext("md5")))
            else:
                files.append(FileDesc(source=f.findtext("source"), mode=mode))
        jobs.append(JobDesc(name=j.findtext("name").strip(), files=files,
                            rsc_fpops_est=num(j, "rsc_fpops_est", float),
                            command_line=j.findtext("command_line"),
                            input_template=_template(captured, "input_template"),
                            output_template=_template(captured, "output_template"),
                            priority=num(j, "priority", int)))
    params = b.find("job_params")
    return BatchDesc(
        app_name=b.findtext("app_name").strip(), jobs=jobs,
        batch_id=num(b, "batch_id", int),
        batch_name=None if b.find("batch_name") is None else b.findtext("batch_name"),
        app_version_num=num(b, "app_version_num", int),
        job_params=None if params is None else JobParams(
            **{c.tag: float(c.text) for c in params}))


# ---------------------------------------------------------------------------
# BOINC's Python binding's exchanges (python_client/)

PY = "python_client/"


def test_bad_submissions_become_errors(replay):
    for fixture, auth, msg in (
            ("01_submit_batch-no_submit_permission", "NO_PERMISSION_AUTHENTICATOR",
             "no submit access"),
            ("03_submit_batch-wrong_authenticator", "WRONG_AUTHENTICATOR", "bad authenticator"),
            ("04_submit_batch-unknown_app", AUTH, "app not found: no_such_app")):
        batch = batch_from_capture(PY + fixture)
        exc = error_of(exchange(replay, PY + fixture, lambda c: c.submit_batch(batch), auth),
                       msg)
        assert exc.op == "submit_batch"
        assert msg in str(exc)
    error_of(exchange(replay, PY + "02_query_files-no_file_permission",
                      lambda c: c.query_files(["jf_9dd4e461268c8034f5c8564e155c67a6"]),
                      "NO_PERMISSION_AUTHENTICATOR"), "no file access")
    # our client refuses "../../escape_RUNID" itself; the server's answer reads as:
    with pytest.raises(SubmitError) as info:
        parse_reply(fixture_bytes(PY + "55_query_files-bad_filename.reply.xml"), "query_files")
    error_of(info.value, "bad filename")
    with pytest.raises(SubmitError, match="bad physical file name"):
        SubmitClient(replay.url, AUTH).query_files(["../../escape_RUNID"])


def test_error_at_top_level_after_php_warnings():
    """A request PHP could not parse: warnings, then an <error> outside any
    RPC element (and for job_file.php, <file> and <line> too)."""
    for name, op in ((PY + "05_submit_batch-malformed_xml", "submit_batch"),
                     (PY + "06_query_files-malformed_xml_job_file", "query_files"),
                     ("gahp/31_retire_batch-malformed_xml", "retire_batch")):
        with pytest.raises(SubmitError) as info:
            parse_reply(fixture_bytes(name + ".reply.xml"), op)
        assert info.value.error_num == -1
        assert info.value.error_msg == values(name + ".reply.xml", "/error/error_msg")[0]
        assert info.value.error_msg.startswith("can't parse request message: <%s>" % op)


def test_ping_templates_estimate(replay):
    assert exchange(replay, PY + "07_ping", lambda c: c.ping()) is None
    t = exchange(replay, PY + "08_get_templates", lambda c: c.get_templates(app_name="uppercase"))
    assert t.input_open_names == ["in"] and t.output_open_names == ["out"]
    # the templates come back as the XML the server sent
    ref = reply_elements(PY + "08_get_templates.reply.xml")
    for root in ("input_template", "output_template"):
        part = [(p.split("/templates", 1)[1], x) for p, x in ref if "/templates/" + root in p]
        assert [(p, x) for p, x in elements(getattr(t, root))] == part
    batch = batch_from_capture(PY + "09_estimate_batch")
    seconds = exchange(replay, PY + "09_estimate_batch", lambda c: c.estimate_batch(batch))
    assert seconds == float(values(PY + "09_estimate_batch.reply.xml",
                                   "/estimate_batch/seconds")[0]) == 60


def test_batch_and_files_before_submission(replay):
    assert exchange(replay, PY + "10_create_batch",
                    lambda c: c.create_batch("uppercase", "py_b1", 1796250771)) == 1
    names = ["jf_6dae974535b82a418c7ed534a3e2399b", "jf_527af75ae52887e6d75150eda120e3ed"]
    assert exchange(replay, PY + "11_query_files", lambda c: c.query_files(names, 1)) == [0, 1]
    assert exchange(replay, PY + "14_query_files", lambda c: c.query_files(names)) == []
    assert exchange(replay, PY + "15_query_files-same_batch_again",
                    lambda c: c.query_files(names, 1)) == []
    assert exchange(replay, PY + "37_query_files", lambda c: c.query_files(names[:1], 3)) == []


def test_submit_batches(replay):
    for name in ("16_submit_batch", "35_submit_batch", "38_submit_batch"):
        batch = batch_from_capture(PY + name)
        got = exchange(replay, PY + name, lambda c: c.submit_batch(batch))
        assert got == int(values(PY + name + ".reply.xml", "/submit_batch/batch_id")[0])
    # the six jobs of 16 use every mode the binding has
    modes = [f.mode for j in batch_from_capture(PY + "16_submit_batch").jobs for f in j.files]
    assert modes == ["local_staged"] * 4 + ["inline", "remote"]
    assert exchange(replay, PY + "36_create_batch", lambda c: c.create_batch("uppercase",
                                                                             "py_b3")) == 3


def check_batch(status, reply, outer):
    """A BatchStatus against the captured reply's elements under ``outer``."""
    def one(tag):
        return values(reply, "%s/%s" % (outer, tag))
    assert status.id == int(one("id")[0])
    assert status.name == one("name")[0] and status.app_name == one("app_name")[0]
    for tag in ("state", "njobs", "nerror_jobs"):
        assert getattr(status, tag) == int(one(tag)[0])
    for tag in ("fraction_done", "create_time", "expire_time", "est_completion_time",
                "completion_time", "credit_estimate", "credit_canonical"):
        assert getattr(status, tag) == float(one(tag)[0])
    cpu = one("total_cpu_time")
    assert status.total_cpu_time == (float(cpu[0]) if cpu else None)


def test_query_batch_through_a_run(replay):
    """Polls of query_batch while a stock client ran the jobs: the batch
    and each job's status as the reply says, PHP notices read past."""
    for name in ("18", "19", "20", "21", "22", "23", "24"):
        fixture = PY + name + "_query_batch"
        reply = fixture + ".reply.xml"
        b = exchange(replay, fixture, lambda c: c.query_batch(1, get_cpu_time=True,
                                                              get_job_details=True))
        check_batch(b, reply, "/query_batch")
        assert [j.id for j in b.jobs] == [int(x) for x in values(reply, "/query_batch/job/id")]
        assert [j.name for j in b.jobs] == values(reply, "/query_batch/job/name")
        assert [j.status for j in b.jobs] == values(reply, "/query_batch/job/status")
        assert [j.canonical_instance_id for j in b.jobs] == [
            int(x) for x in values(reply, "/query_batch/job/canonical_instance_id")]
        cpu = [j.cpu_time for j in b.jobs if j.cpu_time is not None]
        assert cpu == [float(x) for x in values(reply, "/query_batch/job/cpu_time")]
    assert b.state_name == "completed" and b.fraction_done == 1.0
    assert b.credit_canonical == 0.070402516435185
    first = exchange(replay, PY + "18_query_batch", lambda c: c.query_batch(1, True, True))
    assert {j.status for j in first.jobs} == {"queued"} and first.state_name == "in progress"
    retired = exchange(replay, PY + "53_query_batch", lambda c: c.query_batch(1))
    assert retired.state_name == "retired" and retired.jobs[0].status is None
    check_batch(retired, PY + "53_query_batch.reply.xml", "/query_batch")


def test_query_batches(replay):
    for name in ("17", "26", "51"):
        fixture = PY + name + "_query_batches"
        get_cpu = "<get_cpu_time>1" in fixture_text(fixture + ".request.xml")
        batches = exchange(replay, fixture, lambda c: c.query_batches(get_cpu_time=get_cpu))
        reply = fixture + ".reply.xml"
        assert [b.id for b in batches] == [int(x) for x in values(reply,
                                                                   "/query_batches/batch/id")]
        if len(batches) == 1:
            check_batch(batches[0], reply, "/query_batches/batch")
    assert [(b.id, b.state_name) for b in batches] == [(2, "aborted"), (3, "in progress")]


def test_query_batch2_job_and_completed_job(replay):
    got = exchange(replay, PY + "25_query_batch2", lambda c: c.query_batch2(["py_b1"]))
    reply = PY + "25_query_batch2.reply.xml"
    assert got.server_time == float(values(reply, "/query_batch2/server_time")[0])
    assert [(j.name, j.status) for j in got.batches["py_b1"]] == list(zip(
        values(reply, "/query_batch2/job/job_name"), values(reply, "/query_batch2/job/status")))
    instances = exchange(replay, PY + "27_query_job", lambda c: c.query_job(1))
    assert [(i.name, i.id, i.state, i.outfile_sizes) for i in instances] == [
        ("py_j0_0", 1, "Completed and validated", [93])]
    done = exchange(replay, PY + "28_query_completed_job",
                    lambda c: c.query_completed_job("py_j0"))
    assert (done.error_mask, done.canonical_resultid, done.exit_status) == (0, 1, 0)
    assert done.elapsed_time == 1.012097 and done.cpu_time == 0
    # the handler's htmlspecialchars() inside the CDATA is undone, as the GAHP does
    assert done.stderr_out.startswith("\n\n<core_client_version>7.20.5</core_client_version>")
    assert "<![CDATA[\n<stderr_txt>\nuppercase: done\n\n</stderr_txt>\n]]>" in done.stderr_out


def test_abort_retire_expire(replay):
    assert exchange(replay, PY + "39_abort_jobs", lambda c: c.abort_jobs(["py_b2j0"])) == [
        "py_b2j0"]
    assert exchange(replay, PY + "40_abort_batch", lambda c: c.abort_batch(2)) is None
    assert exchange(replay, PY + "49_set_expire_time",
                    lambda c: c.set_expire_time("py_b1", 1795905236)) is None
    assert exchange(replay, PY + "50_retire_batch", lambda c: c.retire_batch(1)) is None


def test_stock_abort_jobs_reply_is_mended():
    """BOINC's unfixed handler prints "<aborted NAME>", which is not XML."""
    stock = fixture_text(PY + "39_abort_jobs.reply.xml").replace(
        "<aborted>py_b2j0</aborted>", "<aborted py_b2j0>")
    assert "<aborted py_b2j0>" in stock
    reply = parse_reply(stock.encode(), "abort_jobs")
    assert [a.text for a in reply.findall("aborted")] == ["py_b2j0"]


def test_another_submitters_batch(replay):
    error_of(exchange(replay, PY + "41_query_batch-other_users_batch_query",
                      lambda c: c.query_batch(1, get_job_details=True), OTHER),
             "not owner of batch")
    error_of(exchange(replay, PY + "42_abort_batch-other_users_batch_abort",
                      lambda c: c.abort_batch(1), OTHER), "not owner")
    error_of(exchange(replay, PY + "43_retire_batch-other_users_batch_retire",
                      lambda c: c.retire_batch(1), OTHER), "not owner of batch")
    error_of(exchange(replay, PY + "44_abort_jobs-other_users_job_abort",
                      lambda c: c.abort_jobs("py_j0"), OTHER), "not owner of batch")


# ---------------------------------------------------------------------------
# Uploads: query first, then the absent files as multipart/form-data

def _local_copies(tmp_path, names):
    paths = []
    for name in names:
        path = tmp_path / os.path.basename(name)
        path.write_bytes(fixture_bytes(name))
        paths.append(str(path))
    return paths


def test_stage_files_uploads_what_the_server_lacks(replay, tmp_path):
    paths = _local_copies(tmp_path, [PY + "13_upload_files.request.file_0.txt",
                                     PY + "13_upload_files.request.file_1.txt"])
    replay.queue(PY + "12_query_files.reply.xml")
    replay.queue(PY + "13_upload_files.reply.xml")
    names = SubmitClient(replay.url, AUTH).stage_files(paths, batch_id=1)
    # content names: the digests in the captured names are the files' MD5s
    assert names == ["jf_" + hashlib.md5(open(p, "rb").read()).hexdigest() for p in paths]
    query, upload = replay.requests
    assert_same_request(query.form["request"], fixture_text(PY + "12_query_files.request.xml"))
    assert upload.path == "/PROJECT/job_file.php"
    assert upload.headers["Content-Type"].startswith("multipart/form-data; boundary=")
    assert int(upload.headers["Content-Length"]) == len(upload.body)
    assert [p.name for p in upload.parts] == ["request", "file_0", "file_1"]
    assert_same_request(upload.form["request"], fixture_text(PY + "13_upload_files.request.xml"))
    for i, part in enumerate(upload.parts[1:]):
        assert part.filename == names[i]
        assert part.data == fixture_bytes(PY + "13_upload_files.request.file_%d.txt" % i)


def test_nothing_uploaded_when_the_server_has_every_file(replay, tmp_path):
    paths = _local_copies(tmp_path, [PY + "13_upload_files.request.file_0.txt"])
    replay.queue(PY + "37_query_files.reply.xml")
    assert SubmitClient(replay.url, AUTH).upload_files(paths, [job_file_name(paths[0])], 3) == []
    assert len(replay.requests) == 1
    assert_same_request(replay.requests[0].form["request"],
                        fixture_text(PY + "37_query_files.request.xml"))


def test_an_answer_about_files_not_asked_about_uploads_nothing(replay, tmp_path):
    path = _local_copies(tmp_path, [PY + "54_upload_files-upload_wrong_content."
                                    "request.file_0.txt"])
    replay.queue(PY + "11_query_files.reply.xml")      # "absent": files 0 and 1 of one
    with pytest.raises(SubmitError, match="not asked about"):
        SubmitClient(replay.url, AUTH).upload_files(
            path, ["jf_6dae974535b82a418c7ed534a3e2399b"])
    assert len(replay.requests) == 1


def test_upload_error_reply(replay, tmp_path):
    path = _local_copies(tmp_path, [PY + "54_upload_files-upload_wrong_content."
                                    "request.file_0.txt"])
    replay.queue(b'<?xml version="1.0" encoding="ISO-8859-1" ?>\n<query_files>\n'
                 b'<absent_files>\n<file>0</file>\n</absent_files>\n</query_files>\n')
    replay.queue(PY + "54_upload_files-upload_wrong_content.reply.xml")
    with pytest.raises(SubmitError) as info:
        SubmitClient(replay.url, AUTH).upload_files(
            path, ["jf_6dae974535b82a418c7ed534a3e2399b"])
    assert info.value.error_msg == ("file immutability violation for "
                                    "jf_6dae974535b82a418c7ed534a3e2399b")
    upload = replay.requests[1]
    assert_same_request(upload.form["request"], fixture_text(
        PY + "54_upload_files-upload_wrong_content.request.xml"))
    assert upload.parts[1].data == fixture_bytes(
        PY + "54_upload_files-upload_wrong_content.request.file_0.txt")


def test_many_files_go_in_several_uploads(replay, tmp_path):
    """PHP drops the files past max_file_uploads (20): no request has more."""
    paths = []
    for i in range(45):
        p = tmp_path / ("in%02d" % i)
        p.write_bytes(b"input %d\n" % i)
        paths.append(str(p))
    replay.queue(("<query_files>\n<absent_files>\n%s</absent_files>\n</query_files>\n"
                  % "".join("<file>%d</file>\n" % i for i in range(45))).encode())
    for _ in range(3):
        replay.queue(PY + "13_upload_files.reply.xml")
    seen = []
    names = SubmitClient(replay.url, AUTH).stage_files(
        paths, progress=lambda n, total: seen.append((n, total)))
    uploads = replay.requests[1:]
    assert [len(u.parts) - 1 for u in uploads] == [20, 20, 5]
    sent = {}
    for u in uploads:
        phys = [t for p, t in elements(u.form["request"]) if p.endswith("/phys_name")]
        assert phys == [part.filename for part in u.parts[1:]]
        sent.update((part.filename, part.data) for part in u.parts[1:])
    assert sent == {n: open(p, "rb").read() for n, p in zip(names, paths)}
    # progress: every byte sent, against one total
    assert sum(n for n, _ in seen) == sum(len(u.body) for u in uploads)
    assert {t for _, t in seen} == {sum(len(u.body) for u in uploads)}


def test_multipart_body_read_back_by_the_email_parser(tmp_path):
    binary = tmp_path / "data.bin"
    binary.write_bytes(bytes(range(256)) * 300 + b"\r\n--boincpy-x\r\n")
    body = multipart_body([("request", "<upload_files>\u00e9</upload_files>\n")],
                          [("file_0", 'we"ird\r\nname', str(binary))])
    data = body.getvalue()
    assert len(data) == body.length
    parts = parse_multipart(body.content_type, data)
    assert [(p.name, p.filename) for p in parts] == [("request", None),
                                                      ("file_0", "we%22irdname")]
    assert parts[0].data.decode("utf-8") == "<upload_files>\u00e9</upload_files>\n"
    assert parts[1].data == binary.read_bytes()
    assert parts[1].content_type == "application/octet-stream"
    # read in small blocks, as http.client sends it: the same bytes
    again = multipart_body([("request", "<upload_files>\u00e9</upload_files>\n")],
                           [("file_0", 'we"ird\r\nname', str(binary))],
                           boundary=body.content_type.split("boundary=")[1])
    blocks = iter(lambda: again.read(1000), b"")
    assert b"".join(blocks) == data


def test_a_file_that_changes_while_sent_is_an_error(tmp_path):
    path = tmp_path / "f"
    path.write_bytes(b"x" * 5000)
    body = multipart_body([("request", "r")], [("file_0", "f", str(path))])
    body.read(100)
    path.write_bytes(b"short")
    with pytest.raises(SubmitError, match="changed while"):
        body.read()


# ---------------------------------------------------------------------------
# Outputs

def _query(captured_line, auth=AUTH):
    """(path, [(name, value)]) of a captured GET line, with its placeholders
    md5(AUTH+name) replaced by the digest."""
    target = captured_line.split()[1]
    path, query = target.split("?", 1)
    params = []
    for pair in query.split("&"):
        name, value = pair.split("=", 1)
        params.append((name, value))
    digests = {}
    for name, value in params:
        m = re.match(r"md5\((\w+)\+(\w+)\)", value)
        if m:
            digests[name] = m.group(2)
    fields = dict(params)
    out = []
    for name, value in params:
        if name in digests:
            value = hashlib.md5((auth + fields[digests[name]]).encode()).hexdigest()
        out.append((name, value.replace("%5F", "_")))
    return path, out


def test_output_urls_as_the_handlers_expect(replay):
    c = SubmitClient(replay.url, AUTH)
    for fixture, url in (("29_get_output.result_file", c.output_file_url("py_j0_0", 0)),
                         ("30_get_output.batch_files", c.output_files_url(1)),
                         ("31_get_output.workunit_file", c.workunit_file_url("py_j1", 0)),
                         ("32_get_output.workunit_files", c.workunit_files_url(3)),
                         ("33_get_output2.result", c.output2_url(result_id=4))):
        path, params = _query(fixture_text(PY + fixture + ".request.txt"))
        assert url.split("?")[0] == replay.url.rstrip("/") + path[len("/PROJECT"):]
        got = [tuple(p.split("=", 1)) for p in url.split("?", 1)[1].split("&")]
        assert got == params, fixture
    # and the GAHP's (job name URL-escaped)
    path, params = _query(fixture_text("gahp/13_get_output.workunit_file.request.txt"))
    assert c.workunit_file_url("condor_j0", 0).endswith("?" + "&".join(
        "%s=%s" % p for p in params))


def test_downloads(replay, tmp_path):
    c = SubmitClient(replay.url, AUTH)
    replay.queue_file(PY + "29_get_output.result_file.reply.txt", "py_j0_0_r1666484537_0")
    path = c.get_output_file("py_j0_0", 0, str(tmp_path))
    assert path == str(tmp_path / "py_j0_0_r1666484537_0")
    assert open(path, "rb").read() == fixture_bytes(PY + "29_get_output.result_file.reply.txt")
    replay.queue_file(PY + "30_get_output.batch_files.reply.zip", "boinc_batch_upvrs2.zip")
    seen = []
    zpath = c.get_batch_outputs(1, str(tmp_path / "b1.zip"), lambda n, t: seen.append((n, t)))
    with zipfile.ZipFile(zpath) as z:
        assert len(z.namelist()) == 6 and z.testzip() is None
    size = len(fixture_bytes(PY + "30_get_output.batch_files.reply.zip"))
    assert sum(n for n, _ in seen) == size and {t for _, t in seen} == {size}
    # a server can't choose where the file goes
    replay.queue_file(PY + "31_get_output.workunit_file.reply.txt", "../../evil")
    assert c.get_job_output("py_j1", 0, str(tmp_path)) == str(tmp_path / "evil")
    replay.queue_file(PY + "31_get_output.workunit_file.reply.txt", ".bashrc")
    assert os.path.basename(c.get_job_output("py_j1", 0, str(tmp_path))) == (
        "get_output_workunit_file.out")
    replay.queue_file(PY + "32_get_output.workunit_files.reply.zip", "x.zip")
    assert zipfile.is_zipfile(c.get_job_outputs(3, str(tmp_path / "j.zip")))
    replay.queue_file(PY + "33_get_output2.result.reply.txt", "py_j3_0__out")
    p = c.download(c.output2_url(result_id=4), str(tmp_path))
    assert open(p, "rb").read() == fixture_bytes(PY + "33_get_output2.result.reply.txt")


def test_output_errors_leave_no_file(replay, tmp_path):
    c = SubmitClient(replay.url, OTHER)
    for fixture, expected in (("45_get_output.result_file-other_users_output",
                               "ERROR: bad authenticator"),
                              ("46_get_output.batch_files-other_users_batch_zip",
                               "ERROR: bad auth str"),
                              ("47_get_output2.workunit-other_users_output2_workunit",
                               "bad auth"),
                              ("48_get_output2.batch-other_users_output2_batch",
                               "Uncaught DivisionByZeroError")):
        replay.queue(PY + fixture + ".reply.txt", "text/html; charset=UTF-8")
        with pytest.raises(SubmitError) as info:
            c.download(c.output_file_url("py_j0_0"), str(tmp_path / "out"))
        assert expected in str(info.value)
        assert info.value.error_num is None
    assert os.listdir(tmp_path) == []


# ---------------------------------------------------------------------------
# The GAHP's exchanges (gahp/): other element orders, the same meaning

G = "gahp/"


def test_gahp_requests(replay, tmp_path):
    assert exchange(replay, G + "01_ping", lambda c: c.ping()) is None
    t = exchange(replay, G + "02_get_templates", lambda c: c.get_templates("uppercase"))
    assert t.output_open_names == ["out"]
    assert exchange(replay, G + "03_create_batch",
                    lambda c: c.create_batch("uppercase", "condor_b1", 1795649637),
                    ordered=False) == 4
    names = ["be2aaf6c9d3b4c007736c94951b68a7f.txt", "4199178f37d76fc8d98f9dac2ac489ad.txt"]
    assert exchange(replay, G + "04_query_files", lambda c: c.query_files(names, 4),
                    ours_only=("/query_files/delete_time",)) == [0, 1]
    batch = batch_from_capture(G + "06_submit_batch")
    assert batch.job_params.delay_bound == 3600
    assert exchange(replay, G + "06_submit_batch", lambda c: c.submit_batch(batch),
                    ordered=False) == 4
    for n in ("07", "08", "09", "10", "20"):
        fixture = G + n + "_query_batch2"
        since = float(etree.fromstring(fixture_bytes(fixture + ".request.xml"))
                      .findtext("min_mod_time"))
        got = exchange(replay, fixture, lambda c: c.query_batch2("condor_b1", since))
        reply = fixture + ".reply.xml"
        assert got.server_time == float(values(reply, "/query_batch2/server_time")[0])
        assert [j.status for j in got.batches["condor_b1"]] == values(
            reply, "/query_batch2/job/status")
    assert got.batches == {"condor_b1": []}
    t = exchange(replay, G + "11_get_templates", lambda c: c.get_templates(job_name="condor_j0"))
    done = exchange(replay, G + "12_query_completed_job",
                    lambda c: c.query_completed_job("condor_j0"))
    assert done.canonical_resultid == 11 and done.elapsed_time == 2.011456
    assert exchange(replay, G + "21_set_expire_time",
                    lambda c: c.set_expire_time("condor_b1", 1795818872)) is None
    assert exchange(replay, G + "37_abort_jobs", lambda c: c.abort_jobs(["condor_b2j0"])) == [
        "condor_b2j0"]
    for n in ("38", "39"):
        name = etree.fromstring(fixture_bytes(G + n + "_retire_batch.request.xml")).findtext(
            "batch_name")
        assert exchange(replay, G + n + "_retire_batch", lambda c: c.retire_batch(name)) is None


def test_gahp_upload_pairs_files_in_order(replay, tmp_path):
    paths = _local_copies(tmp_path, [G + "05_upload_files.request.file_0.txt",
                                     G + "05_upload_files.request.file_1.txt"])
    names = ["be2aaf6c9d3b4c007736c94951b68a7f.txt", "4199178f37d76fc8d98f9dac2ac489ad.txt"]
    replay.queue(G + "04_query_files.reply.xml")
    replay.queue(G + "05_upload_files.reply.xml")
    assert SubmitClient(replay.url, AUTH).upload_files(paths, names, 4) == names
    upload = replay.requests[1]
    assert_same_request(upload.form["request"], fixture_text(G + "05_upload_files.request.xml"),
                        ours_only=("/upload_files/delete_time",))
    assert [p.data for p in upload.parts[1:]] == [open(p, "rb").read() for p in paths]


def test_gahp_errors(replay):
    for fixture, auth, call, msg in (
            ("22_get_templates-wrong_authenticator", "WRONG_AUTHENTICATOR",
             lambda c: c.get_templates("uppercase"), "bad authenticator"),
            ("23_get_templates-no_submit_permission", "NO_PERMISSION_AUTHENTICATOR",
             lambda c: c.get_templates("uppercase"), "no submit access"),
            ("24_get_templates-unknown_app", AUTH, lambda c: c.get_templates("no_such_app"),
             "app not found: no_such_app"),
            ("25_retire_batch-other_users_batch_retire", OTHER,
             lambda c: c.retire_batch("condor_b1"), "not owner of batch"),
            ("26_set_expire_time-other_users_batch_lease", OTHER,
             lambda c: c.set_expire_time("condor_b1", 1795822472), "not owner of batch"),
            ("27_query_batch2-other_users_batch_query", OTHER,
             lambda c: c.query_batch2(["condor_b1"]), "not owner of condor_b1"),
            ("28_abort_jobs-other_users_job_abort", OTHER,
             lambda c: c.abort_jobs(["condor_j0"]), "not owner of batch"),
            ("30_query_completed_job-other_users_job_output", OTHER,
             lambda c: c.query_completed_job("condor_j0"), "not owner")):
        error_of(exchange(replay, G + fixture, call, auth), msg)


# ---------------------------------------------------------------------------
# Escaping, tolerance, bad input

def test_names_that_look_like_xml_stay_text(replay):
    """The GAHP's "condor_b1</batch_name><x>" broke its request (gahp/31);
    ours arrives as the name."""
    evil = "condor_b1</batch_name><x>"
    replay.queue(G + "38_retire_batch.reply.xml")
    SubmitClient(replay.url, AUTH).retire_batch(evil)
    sent = etree.fromstring(replay.requests[0].form["request"].encode())
    assert [e.tag for e in sent] == ["authenticator", "batch_name"]
    assert sent.findtext("batch_name") == evil
    job = "</name><x>& ]]> caf\u00e9"
    batch = BatchDesc("uppercase", [JobDesc(name=job, command_line="--a '<b>'",
                                            files=[FileDesc.inline("x < y\n\u00e9\n")])],
                      batch_name="b&<")
    replay.queue(PY + "35_submit_batch.reply.xml")
    SubmitClient(replay.url, "a<b").submit_batch(batch)
    sent = etree.fromstring(replay.requests[1].form["request"].encode("utf-8"))
    assert sent.findtext("authenticator") == "a<b"
    assert sent.findtext("batch/batch_name") == "b&<"
    assert sent.findtext("batch/job/name") == job
    assert sent.findtext("batch/job/command_line") == "--a '<b>'"
    assert sent.findtext("batch/job/input_file/source") == "x < y\n\u00e9\n"
    assert sent.find("batch/job/x") is None and sent.find("x") is None


def test_php_notices_and_odd_replies_are_read_past():
    # notices inside the reply (as in query_batch), a notice at the end
    notice = ("<br />\n<b>Notice</b>:  Undefined index: x in <b>PROJECT_DIR/a.php</b> on line "
              "<b>3</b><br />\n")
    text = fixture_text(PY + "40_abort_batch.reply.xml").replace(
        "<success>", notice + "<success>") + notice
    assert parse_reply(text.encode(), "abort_batch").find("success") is not None
    # an <error> with error_num 0 is a notice for the GAHP, and for us
    text = fixture_text(PY + "40_abort_batch.reply.xml").replace(
        "<success>", "<error><error_num>0</error_num><error_msg>n</error_msg></error><success>")
    assert parse_reply(text.encode(), "abort_batch").find("success") is not None
    # a PHP fatal error cuts the reply: said as such
    with pytest.raises(SubmitError, match="the server failed: Uncaught DivisionByZeroError"):
        parse_reply(b"<query_batch>\n" + fixture_bytes(
            PY + "34_get_output2.batch.reply.txt"), "query_batch")
    # control characters in a job's stderr (not allowed in XML) and a bare "&"
    text = fixture_text(PY + "28_query_completed_job.reply.xml").replace(
        "uppercase: done", "\x1b[31mred\x1b[0m & more")
    el = parse_reply(text.encode(), "query_completed_job")
    assert "[31mred[0m & more" in el.findtext("completed_job/stderr_out")
    for junk in (b"", b"<html><body>Not Found</body></html>", b"\x00\x01garbage"):
        with pytest.raises(SubmitError) as info:
            parse_reply(junk, "ping")
        assert info.value.error_num is None
    with pytest.raises(SubmitError, match="not a number"):
        SubmitClient._batch_id(parse_reply(
            b"<create_batch><batch_id>x</batch_id></create_batch>", "create_batch"), "c")


def test_http_failures_are_submit_errors(replay, tmp_path):
    replay.queue(b"Internal error", "text/plain", status=500)
    with pytest.raises(SubmitError, match="HTTP 500"):
        SubmitClient(replay.url, AUTH).ping()
    with pytest.raises(SubmitError, match="HTTP 500"):     # nothing queued
        SubmitClient(replay.url, AUTH).ping()
    with socket.socket() as s:         # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        url = "http://127.0.0.1:%d/PROJECT/" % s.getsockname()[1]
    with pytest.raises(SubmitError, match="can't reach") as info:
        SubmitClient(url, "secret", timeout=5).get_job_output("j", 0, str(tmp_path))
    assert "secret" not in str(info.value)


def test_bad_descriptions_are_refused_before_sending():
    with pytest.raises(SubmitError, match="mode"):
        FileDesc("x", mode="sandbox")
    with pytest.raises(SubmitError, match="url, nbytes and md5"):
        FileDesc(mode="remote", url="http://x/")
    with pytest.raises(SubmitError, match="one of target_user"):
        JobDesc(name="j", target_user=1, target_host=2)
    with pytest.raises(SubmitError, match="not well-formed"):
        JobDesc(name="j", input_template="<file_info>").to_xml()
    c = SubmitClient("http://127.0.0.1:9/", AUTH)
    for bad in ("../x", ".htaccess", "a/b", "..", ""):
        with pytest.raises(SubmitError, match="bad physical file name"):
            c.query_files([bad])
    with pytest.raises(SubmitError, match="by its id"):
        c.abort_batch(1.5)
    with pytest.raises(SubmitError, match="app name or a job name"):
        c.get_templates()


def test_templates_with_or_without_their_root():
    bare = ("<file_info><number>0</number></file_info>\n<workunit><file_ref>"
            "<file_number>0</file_number><open_name>in</open_name></file_ref></workunit>")
    wrapped = sc.template_xml(bare, "input_template")
    assert wrapped.startswith("<input_template>") and bare in wrapped
    full = "<?xml version='1.0'?>\n<input_template>%s</input_template>\n" % bare
    assert sc.template_xml(full, "input_template") == "<input_template>%s</input_template>" % bare


def test_client_loads_without_the_server_packages():
    """A scientist installs boincpy for the client: it and its tools must load
    with no database driver, lxml, cryptography or psutil."""
    code = """
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] in ('MySQLdb', 'lxml', 'cryptography', 'psutil'):
            raise ImportError('blocked: ' + name)
sys.meta_path.insert(0, Block())
import boincpy.submit.client, boincpy.tools.submit
loaded = sorted(m for m in sys.modules if m.startswith('boincpy'))
print(' '.join(loaded))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    loaded = set(out.stdout.split())
    assert "boincpy.submit.client" in loaded
    assert not {m for m in loaded if m.startswith(("boincpy.db", "boincpy.config",
                                                   "boincpy.crypto", "boincpy.web"))}
