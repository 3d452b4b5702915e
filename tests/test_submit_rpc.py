"""Remote job submission over HTTP, exchange by exchange as BOINC's own Python
client made them against the C++/PHP reference server (tests/fixtures/
remote_submit/python_client): each request is sent as the client sent it, and
each reply is compared element by element with the reference's.  Jobs run on
simulated 7.20.5 hosts (the real scheduler, data server and daemons)."""

import hashlib
import io
import os
import re
import zipfile

from boincpy.testing import simclient as sc
from submit_util import (assert_like, fixture, fixture_reply, http, md5, post, run_bin,
                         run_jobs, start_feeder, submit_site, transition)

PY = "python_client"
NUM = r"^-?[0-9]+(\.[0-9]+)?(E[-+][0-9]+)?$"
TIME = r"^1[0-9]{9}(\.[0-9]+)?$"

# fields that differ by nature between two runs
BATCH_TIMES = {"/%s/create_time": TIME, "/%s/expire_time": r"^(0|1[0-9]{9})$",
               "/%s/completion_time": r"^(0|1[0-9]{9})$",
               "/%s/est_completion_time": r"^(0|1[0-9]{9})$",
               "/%s/credit_estimate": NUM, "/%s/credit_canonical": NUM,
               "/%s/total_cpu_time": NUM, "/%s/job/cpu_time": NUM}

__all__ = ["submit_site"]


def batch_varying(prefix):
    return {k % prefix: v for k, v in BATCH_TIMES.items()}


def exchange(site, name, page="submit_rpc_handler.php", files=(), varying=None, drop=(),
             request_edit=None):
    """Send python_client/NAME.request.xml, compare the reply with NAME.reply.xml."""
    xml = fixture(PY, name + ".request.xml")
    if request_edit:
        xml = request_edit(xml)
    xml = _subst(site, xml)
    ours = post(site.url, xml, page, files=files)
    ref = fixture_reply(PY, name + ".reply.xml", site.subst)
    assert_like(ours, ref, varying, drop)
    return ours


def _subst(site, text):
    from submit_util import substitute
    return substitute(text, site.subst)


def test_python_client_session_replayed(submit_site, tmp_path):
    s = submit_site
    p = s.p
    # 01-06: refusals before any batch
    exchange(s, "01_submit_batch-no_submit_permission")
    exchange(s, "02_query_files-no_file_permission", "job_file.php")
    exchange(s, "03_submit_batch-wrong_authenticator")
    exchange(s, "04_submit_batch-unknown_app")
    # malformed XML: a root-level <error> quoting the request; BOINC's job_file.php
    # adds its source file and line, which we leave out
    quoted = {"/error/error_msg": r"^can't parse request message: <"}
    exchange(s, "05_submit_batch-malformed_xml", varying=quoted)
    exchange(s, "06_query_files-malformed_xml_job_file", "job_file.php", varying=quoted,
             drop=("/error/file", "/error/line"))
    # 07-09
    exchange(s, "07_ping")
    exchange(s, "08_get_templates")
    exchange(s, "09_estimate_batch")
    # 10-15: a batch, and its two files uploaded by content
    exchange(s, "10_create_batch")
    exchange(s, "11_query_files", "job_file.php")
    exchange(s, "12_query_files", "job_file.php")
    files = [("file_%d" % n, "jf", fixture(PY, "13_upload_files.request.file_%d.txt" % n).encode())
             for n in (0, 1)]
    exchange(s, "13_upload_files", "job_file.php", files=files)
    exchange(s, "14_query_files", "job_file.php")
    exchange(s, "15_query_files-same_batch_again", "job_file.php")
    db = p.connect()
    assert db.query_value("SELECT COUNT(*) FROM job_file") == 2
    assert db.query_value("SELECT COUNT(*) FROM batch_file_assoc WHERE batch_id = 1") == 2

    # 16: six jobs: four on the uploaded files, one inline, one remote (here
    # a file served by the same Apache)
    remote = b"remote input: the quick brown fox jumps over the lazy dog\n"
    with open(p.path("download", "remote_input.txt"), "wb") as f:
        f.write(remote)
    remote_url = p.download_url.rstrip("/") + "/remote_input.txt"

    def use_remote(xml):
        xml = xml.replace("http://OTHER_HOST/remote_input.txt", remote_url)
        xml = re.sub(r"<nbytes>[^<]*</nbytes>", "<nbytes>%d.000000</nbytes>" % len(remote), xml)
        return re.sub(r"<md5>[^<]*</md5>", "<md5>%s</md5>" % hashlib.md5(remote).hexdigest(),
                      xml)
    exchange(s, "16_submit_batch", request_edit=use_remote)
    wus = db.query("SELECT * FROM workunit WHERE batch = 1 ORDER BY id")
    assert [w["name"] for w in wus] == ["py_j%d" % i for i in range(6)]
    assert all(w["delay_bound"] == 3600 and w["rsc_fpops_bound"] == 1e13 for w in wus)
    docs = [w["xml_doc"] for w in wus]
    assert "<copy_file/>" in docs[0] and "<no_delete/>" in docs[0]
    assert remote_url in docs[5]
    transition(p)
    exchange(s, "17_query_batches", varying=batch_varying("query_batches/batch"))
    exchange(s, "18_query_batch", varying=batch_varying("query_batch"))

    # the jobs run on a simulated volunteer's host
    host = run_jobs(s, 6)
    assert sorted(host.acked) == ["py_j%d_0" % i for i in range(6)]
    assert host.protocol_errors == [] and host.download_errors == []
    transition(p)
    run_bin(p, "sample_trivial_validator", "--app", "uppercase", "--one_pass")
    transition(p)
    run_bin(p, "sample_dummy_assimilator", "--app", "uppercase", "--one_pass")

    # 24-28: the finished batch
    exchange(s, "24_query_batch", varying=batch_varying("query_batch"))
    exchange(s, "25_query_batch2", varying={"/query_batch2/server_time": TIME})
    exchange(s, "26_query_batches", varying=batch_varying("query_batches/batch"))
    exchange(s, "27_query_job", varying={"/query_job/instance/outfile/size": r"^\d+$"})
    exchange(s, "28_query_completed_job", varying={
        "/query_completed_job/completed_job/elapsed_time": NUM,
        "/query_completed_job/completed_job/cpu_time": NUM,
        "/query_completed_job/completed_job/stderr_out": r".*"})

    # 29-34: outputs
    inputs = {"py_j0": fixture(PY, "13_upload_files.request.file_0.txt").encode(),
              "py_j2": fixture(PY, "13_upload_files.request.file_1.txt").encode(),
              "py_j5": remote}
    status, headers, body = _get(s, "29_get_output.result_file.request.txt")
    assert status == 200 and headers["Content-Type"] == "application/octet-stream"
    assert re.match(r"attachment; filename=py_j0_0_r\d+_0$", headers["Content-Disposition"])
    assert body == inputs["py_j0"].upper()
    status, headers, body = _get(s, "30_get_output.batch_files.request.txt")
    with zipfile.ZipFile(io.BytesIO(body)) as z:
        names = z.namelist()
        assert [re.sub(r"_r\d+_0$", "", n) for n in names] == ["py_j%d_0" % i for i in range(6)]
        assert z.read(names[5]) == remote.upper()
    status, headers, body = _get(s, "31_get_output.workunit_file.request.txt")
    assert status == 200 and body == _wu_output(s, "py_j1")
    status, headers, body = _get(s, "32_get_output.workunit_files.request.txt")
    with zipfile.ZipFile(io.BytesIO(body)) as z:
        assert len(z.namelist()) == 1 and z.read(z.namelist()[0]) == inputs["py_j2"].upper()
    status, headers, body = _get(s, "33_get_output2.result.request.txt")
    assert headers["Content-Disposition"] == "attachment; filename=py_j3_0__out"
    # 34: BOINC's get_output2.php dies here; ours sends the batch
    status, headers, body = _get(s, "34_get_output2.batch.request.txt")
    assert headers["Content-Disposition"] == "attachment; filename=batch_1.zip"
    with zipfile.ZipFile(io.BytesIO(body)) as z:
        assert sorted(z.namelist()) == ["py_j%d_0__out" % i for i in range(6)]

    # 35-40: batch 2 (aborted before anything is sent), batch 3 (one job)
    exchange(s, "35_submit_batch")
    exchange(s, "36_create_batch")
    exchange(s, "37_query_files", "job_file.php")
    exchange(s, "38_submit_batch")
    exchange(s, "39_abort_jobs")
    exchange(s, "40_abort_batch")
    transition(p)
    assert db.query_value("SELECT COUNT(*) FROM result WHERE batch = 2 AND server_state = 2") == 0
    feeder = start_feeder(p)
    try:
        host.cycle()
    finally:
        feeder.terminate()
        feeder.wait(20)
    sent = {r["name"] for r in db.query("SELECT name FROM result WHERE sent_time > 0 "
                                        "AND batch IN (2, 3)")}
    assert sent == {"py_b3j0_0"}

    # 41-48: the second submitter may not touch the first one's batch
    for name in ("41_query_batch-other_users_batch_query",
                 "42_abort_batch-other_users_batch_abort",
                 "43_retire_batch-other_users_batch_retire",
                 "44_abort_jobs-other_users_job_abort"):
        exchange(s, name)
    assert db.query_value("SELECT state FROM batch WHERE id = 1") == 2
    for name in ("45_get_output.result_file-other_users_output",
                 "46_get_output.batch_files-other_users_batch_zip",
                 "47_get_output2.workunit-other_users_output2_workunit"):
        status, headers, body = _get(s, name + ".request.txt")
        assert body.decode() == fixture(PY, name + ".reply.txt")
    status, headers, body = _get(s, "48_get_output2.batch-other_users_output2_batch.request.txt")
    assert body == b"bad auth"          # BOINC: a fatal error before any check

    # 49-53: lease, retirement; outputs stay readable
    exchange(s, "49_set_expire_time")
    assert db.query_value("SELECT expire_time FROM batch WHERE id = 1") == 1795905236
    exchange(s, "50_retire_batch")
    exchange(s, "51_query_batches", varying=batch_varying("query_batches/batch"))
    status, headers, body = _get(s, "52_get_output.result_file-after_retire.request.txt")
    assert body == inputs["py_j0"].upper()
    exchange(s, "53_query_batch", varying=batch_varying("query_batch"))

    # 54-56: files
    files = [("file_0", "x", fixture(PY, "54_upload_files-upload_wrong_content.request.file_0.txt")
              .encode())]
    exchange(s, "54_upload_files-upload_wrong_content", "job_file.php", files=files)
    exchange(s, "55_query_files-bad_filename", "job_file.php")
    # BOINC stores bytes under a content name they don't match; we refuse
    data = fixture(PY, "56_upload_files-new_name_wrong_md5.request.file_0.txt").encode()
    ours = post(s.url, _subst(s, fixture(PY, "56_upload_files-new_name_wrong_md5.request.xml")),
                "job_file.php", files=[("file_0", "x", data)])
    assert "does not match the MD5 in its name (its MD5 is %s)" % hashlib.md5(data).hexdigest() \
        in ours
    assert db.query_value("SELECT COUNT(*) FROM job_file WHERE name = "
                          "'jf_91b0279d1a6a2aa6d8f91c2544778d03'") == 0
    db.close()


def _wu_output(s, wu_name):
    db = s.p.connect()
    try:
        row = db.query_one("SELECT result.xml_doc_in FROM result JOIN workunit ON "
                           "workunit.canonical_resultid = result.id WHERE workunit.name = %s",
                           (wu_name,))
    finally:
        db.close()
    from boincpy.files import dir_hier_path
    from boincpy.jobfiles import output_file_paths
    path = output_file_paths(row["xml_doc_in"], s.p.cfg.upload_dir, s.p.cfg.uldl_dir_fanout)[0]
    assert os.path.isfile(path) and os.path.basename(path) == os.path.basename(
        dir_hier_path(s.p.cfg.upload_dir, os.path.basename(path), s.p.cfg.uldl_dir_fanout))
    with open(path, "rb") as f:
        return f.read()


def _get(s, request_file):
    """A captured GET, with its placeholders (md5(AUTHENTICATOR+x) computed)."""
    line = fixture(PY, request_file).split()[1]
    auths = {"AUTHENTICATOR": s.auth, "OTHER_SUBMITTER_AUTHENTICATOR": s.other_auth}

    def auth_str(m):
        who, what = m.group(1), m.group(2)
        query = dict(kv.split("=", 1) for kv in line.split("?", 1)[1].split("&"))
        return md5(auths[who] + query[what])
    line = re.sub(r"md5\(([A-Z_]+)\+([a-z_]+)\)", auth_str, line)
    line = line.replace("OTHER_SUBMITTER_AUTHENTICATOR", s.other_auth)
    line = line.replace("AUTHENTICATOR", s.auth)
    url = s.url + line.split("/PROJECT/", 1)[1]
    return http(url)


GAHP = "gahp"


def gahp_exchange(site, name, page="submit_rpc_handler.php", files=(), varying=None, drop=()):
    """Send gahp/NAME.request.xml as the GAHP does (multipart/form-data)."""
    from submit_util import substitute
    xml = substitute(fixture(GAHP, name + ".request.xml"), site.subst)
    ours = post(site.url, xml, page, form="multipart", files=files)
    assert_like(ours, fixture_reply(GAHP, name + ".reply.xml", site.subst), varying, drop)
    return ours


def test_gahp_session_replayed(submit_site):
    s = submit_site
    p = s.p
    db = p.connect()
    db.execute("ALTER TABLE batch AUTO_INCREMENT = 4")     # the reference's ids go on from 4
    # the GAHP's session ran with <no_delete/> in the app's file infos
    from submit_util import UPPERCASE_IN, UPPERCASE_OUT
    for name, text in (("uppercase_in", UPPERCASE_IN), ("uppercase_out", UPPERCASE_OUT)):
        with open(p.path("templates", name), "w") as f:
            f.write(re.sub(r"(\n\s*)</file_info>", r"\1    <no_delete/>\1</file_info>", text))
    gahp_exchange(s, "01_ping")
    gahp_exchange(s, "02_get_templates")
    gahp_exchange(s, "03_create_batch")
    gahp_exchange(s, "04_query_files", "job_file.php")
    # the GAHP names its parts by the local files' names; they are paired by order
    files = [("file_%d" % n, name, fixture(GAHP, "05_upload_files.request.file_%d.txt" % n)
              .encode()) for n, name in ((0, "alpha.txt"), (1, "beta.txt"))]
    gahp_exchange(s, "05_upload_files", "job_file.php", files=files)
    gahp_exchange(s, "06_submit_batch")
    transition(p)
    poll = {"/query_batch2/server_time": TIME}
    first = gahp_exchange(s, "07_query_batch2", varying=poll)
    server_time = re.search(r"<server_time>(.*?)</server_time>", first).group(1)
    wus = db.query("SELECT name, rsc_disk_bound, rsc_memory_bound, delay_bound FROM workunit "
                   "WHERE batch = 4 ORDER BY id")
    assert [(w["name"], w["rsc_disk_bound"], w["rsc_memory_bound"], w["delay_bound"])
            for w in wus] == [("condor_j%d" % i, 1e9, 5e8, 3600) for i in range(3)]

    volunteer = sc.create_account(s.url, "volunteer@example.com", "pw", "volunteer")
    feeder = start_feeder(p)
    try:
        host = sc.SimHost(sc.discover_scheduler(s.url), volunteer, name="h1", seed=2,
                          delay_cap=0, work_req_seconds=1e6)
        for _ in range(5):
            host.cycle()
            if len(set(host.received)) == 3:
                break
        gahp_exchange(s, "08_query_batch2", varying=poll)       # all IN_PROGRESS
        for _ in range(10):
            host.cycle()
            if len(host.acked) == 3:
                break
        assert sorted(host.acked) == ["condor_j%d_0" % i for i in range(3)], host.rpc_errors
    finally:
        feeder.terminate()
        feeder.wait(20)
    transition(p)
    # the batch is complete as soon as its last job is (BOINC: when a submitter looks)
    out = run_bin(p, "sample_trivial_validator", "--app", "uppercase", "--one_pass")
    assert "[BATCH#4 condor_b1] all 3 jobs done (0 failed): batch complete" in out.stderr
    assert db.query_value("SELECT state FROM batch WHERE id = 4") == 2
    gahp_exchange(s, "10_query_batch2", varying=poll)           # all DONE

    completed = {"/query_completed_job/completed_job/canonical_resultid": r"^\d+$",
                 "/query_completed_job/completed_job/elapsed_time": NUM,
                 "/query_completed_job/completed_job/cpu_time": NUM,
                 "/query_completed_job/completed_job/stderr_out": r".*"}
    for n, (templates, job, get) in enumerate(((11, 12, 13), (14, 15, 16), (17, 18, 19))):
        gahp_exchange(s, "%02d_get_templates" % templates)
        gahp_exchange(s, "%02d_query_completed_job" % job, varying=completed)
        line = fixture(GAHP, "%02d_get_output.workunit_file.request.txt" % get).split()[1]
        url = s.url + line.split("/PROJECT/", 1)[1].replace("AUTHENTICATOR", s.auth)
        status, headers, body = http(url, agent="BOINC remote job submission")
        assert status == 200 and body == fixture(GAHP, "05_upload_files.request.file_%d.txt"
                                                 % (1 if n == 2 else 0)).encode().upper()
        assert re.match(r"attachment; filename=condor_j%d_0_r\d+_0$" % n,
                        headers["Content-Disposition"])

    # nothing changed since the last poll: no jobs listed
    xml = fixture(GAHP, "20_query_batch2.request.xml").replace("1795646071.876900", server_time)
    import time
    time.sleep(1.1)
    xml = xml.replace(server_time, "%.6f" % time.time())
    ours = post(s.url, xml.replace("AUTHENTICATOR", s.auth), form="multipart")
    assert_like(ours, fixture_reply(GAHP, "20_query_batch2.reply.xml", s.subst), poll)
    gahp_exchange(s, "21_set_expire_time")
    assert db.query_value("SELECT expire_time FROM batch WHERE id = 4") == 1795818872

    for name in ("22_get_templates-wrong_authenticator", "23_get_templates-no_submit_permission",
                 "24_get_templates-unknown_app", "25_retire_batch-other_users_batch_retire",
                 "26_set_expire_time-other_users_batch_lease",
                 "27_query_batch2-other_users_batch_query", "28_abort_jobs-other_users_job_abort",
                 "29_get_templates-other_users_job_output",
                 "30_query_completed_job-other_users_job_output"):
        gahp_exchange(s, name)
    gahp_exchange(s, "31_retire_batch-malformed_xml",
                  varying={"/error/error_msg": r"^can't parse request message: <retire_batch>"})
    assert db.query_value("SELECT state FROM batch WHERE id = 4") == 2

    # a second batch reusing both files: nothing to upload, an empty upload_files
    gahp_exchange(s, "32_get_templates")
    gahp_exchange(s, "33_create_batch")
    gahp_exchange(s, "34_query_files", "job_file.php")
    gahp_exchange(s, "35_upload_files", "job_file.php")
    gahp_exchange(s, "36_submit_batch")
    assert db.query_value("SELECT COUNT(*) FROM batch_file_assoc WHERE batch_id = 5") == 2
    gahp_exchange(s, "37_abort_jobs")
    assert db.query_value("SELECT error_mask FROM workunit WHERE name = 'condor_b2j0'") == 16
    gahp_exchange(s, "38_retire_batch")
    gahp_exchange(s, "39_retire_batch")
    assert [r["state"] for r in db.query("SELECT state FROM batch ORDER BY id")] == [4, 4]
    db.close()
