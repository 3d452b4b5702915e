"""Remote job submission in-process: the batch's life, privileges, files by
content and their deleter, hostile requests (each answered with BOINC's
error and no change), and the back-end options that act on batches."""

import hashlib
import io
import os
import subprocess
import sys
import time

import pytest
from lxml import etree

from boincpy.config import load_config
from boincpy.db import connect
from boincpy.states import BatchState, Outcome, ServerState
from boincpy.web import job_file, submit_rpc
from boincpy.web.http import Request, read_request
from boincpy.web.multipart import UploadedFile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class Proj:
    """mini_project with submitters: alice (submit all), bob (submit all),
    carol (manages every app), dave (no rights)."""

    def __init__(self, root):
        self.root = str(root)
        self.cfg = load_config(self.root)
        self.db = connect(self.cfg)
        self.app_id = self.db.query_value("SELECT id FROM app WHERE name = 'example_app'")
        self.auth = {}
        self.uid = {}
        for name, submit_all, manage_all in (("alice", 1, 0), ("bob", 1, 0), ("carol", 0, 1),
                                             ("dave", None, None)):
            self.uid[name] = self.db.insert(
                "INSERT INTO user (create_time, email_addr, name, authenticator, passwd_hash, "
                "global_prefs, project_prefs, venue, cross_project_id) VALUES "
                "(1, %s, %s, %s, 'x', '', '', '', '')",
                (name + "@example.com", name, name + "_auth"))
            self.auth[name] = name + "_auth"
            if submit_all is not None:
                self.db.execute("INSERT INTO user_submit (user_id, quota, logical_start_time, "
                                "submit_all, manage_all, max_jobs_in_progress) VALUES "
                                "(%s, 1, 0, %s, %s, 0)", (self.uid[name], submit_all, manage_all))

    def rpc(self, xml, handler=submit_rpc.handle, files=()):
        """Call a page in-process; (reply text, parsed root)."""
        req = Request.of(method="POST", post={"request": xml}, files=list(files))
        text = handler(self.cfg, req).body
        return text, etree.fromstring(text.encode())

    def error(self, xml, handler=submit_rpc.handle, files=()):
        """The <error_msg> of a reply (None if there is none)."""
        _, root = self.rpc(xml, handler, files)
        return root.findtext(".//error_msg")

    def count(self, table, where="1", params=()):
        return self.db.query_value("SELECT COUNT(*) FROM %s WHERE %s" % (table, where), params)

    def submit(self, who, jobs, batch="", extra=""):
        """submit_batch of inline jobs [(name, content)]; the reply root."""
        body = "".join("<job><name>%s</name><input_file><mode>inline</mode><source>%s</source>"
                       "</input_file></job>" % (n, c) for n, c in jobs)
        xml = ("<submit_batch><authenticator>%s</authenticator><batch><app_name>example_app"
               "</app_name>%s%s%s</batch></submit_batch>"
               % (self.auth[who], "<batch_name>%s</batch_name>" % batch if batch else "",
                  extra, body))
        return self.rpc(xml)[1]

    def transition(self):
        from boincpy.daemons.transitioner import Transitioner
        from backend_util import run_daemon_once
        time.sleep(1.05 - time.time() % 1)
        return run_daemon_once(Transitioner, self.root)


@pytest.fixture
def proj(mini_project):
    from backend_util import make_upload_keys
    make_upload_keys(mini_project)
    p = Proj(mini_project)
    yield p
    p.db.close()


def test_batch_life_counts_abort_retire(proj):
    root = proj.submit("alice", [("j%d" % i, "input %d" % i) for i in range(4)], "b1")
    bid = int(root.findtext("batch_id"))
    b = proj.db.query_one("SELECT * FROM batch WHERE id = %s", (bid,))
    assert (b["state"], b["njobs"], b["user_id"], b["name"]) == (1, 4, proj.uid["alice"], "b1")
    assert b["credit_estimate"] == pytest.approx(4 * 3.6e12 * 200 / 86400e9)
    proj.transition()
    # two jobs finish (one canonical, one failed); one is sent; one waits
    wus = proj.db.query("SELECT id FROM workunit WHERE batch = %s ORDER BY id", (bid,))
    proj.db.execute("UPDATE workunit SET canonical_resultid = 99, canonical_credit = 2.5 "
                    "WHERE id = %s", (wus[0]["id"],))
    proj.db.execute("UPDATE workunit SET error_mask = 2 WHERE id = %s", (wus[1]["id"],))
    proj.db.execute("UPDATE result SET server_state = %s, sent_time = 5, hostid = 1 "
                    "WHERE workunitid = %s", (int(ServerState.IN_PROGRESS), wus[2]["id"]))
    _, r = proj.rpc("<query_batch><authenticator>alice_auth</authenticator><batch_id>%d"
                    "</batch_id><get_job_details>1</get_job_details></query_batch>" % bid)
    assert [j.findtext("status") for j in r.findall("job")] == [
        "done", "error", "in_progress", "queued"]
    assert r.findall("job")[1].findtext("error") == "too_many_error_results"
    assert (r.findtext("fraction_done"), r.findtext("nerror_jobs"), r.findtext("state"),
            r.findtext("credit_canonical")) == ("0.5", "1", "1", "2.5")
    assert float(r.findtext("est_completion_time")) >= float(r.findtext("create_time"))
    _, r = proj.rpc("<query_batch2><authenticator>alice_auth</authenticator>"
                    "<batch_name>b1</batch_name></query_batch2>")
    assert [j.findtext("status") for j in r.findall("job")] == [
        "DONE", "ERROR", "IN_PROGRESS", "UNSENT"]

    # abort: the unsent result is not needed any more, every job cancelled
    text, r = proj.rpc("<abort_batch><authenticator>alice_auth</authenticator>"
                       "<batch_name>b1</batch_name></abort_batch>")
    assert r.findtext("success") == "1", text
    rows = proj.db.query("SELECT workunit.error_mask, result.server_state, result.outcome "
                         "FROM workunit JOIN result ON result.workunitid = workunit.id "
                         "WHERE workunit.batch = %s ORDER BY workunit.id", (bid,))
    assert all(r["error_mask"] & 16 for r in rows)
    assert (rows[2]["server_state"], rows[3]["server_state"], rows[3]["outcome"]) == (
        ServerState.IN_PROGRESS, ServerState.OVER, Outcome.DIDNT_NEED)
    assert proj.db.query_value("SELECT state FROM batch WHERE id = %s", (bid,)) == \
        BatchState.ABORTED
    # retire: the batch leaves query_batches but still answers query_batch
    proj.rpc("<retire_batch><authenticator>alice_auth</authenticator><batch_id>%d</batch_id>"
             "</retire_batch>" % bid)
    _, r = proj.rpc("<query_batches><authenticator>alice_auth</authenticator></query_batches>")
    assert r.findall("batch") == []
    _, r = proj.rpc("<query_batch><authenticator>alice_auth</authenticator><batch_id>%d"
                    "</batch_id></query_batch>" % bid)
    assert r.findtext("state") == "4"


def test_submitters_see_only_their_batches_unless_they_manage(proj):
    bid = int(proj.submit("alice", [("a0", "x")], "ab").findtext("batch_id"))
    q = ("<query_batch><authenticator>%s</authenticator><batch_id>%d</batch_id></query_batch>")
    assert proj.error(q % ("bob_auth", bid)) == "not owner of batch"
    assert proj.error(q % ("dave_auth", bid)) == "no file access"
    assert proj.error(q % ("nobody", bid)) == "bad authenticator"
    assert proj.error(q % ("", bid)) == "no authenticator"
    # carol manages every app: she may query, abort and retire alice's batch
    _, r = proj.rpc(q % ("carol_auth", bid))
    assert r.findtext("name") == "ab"
    assert proj.error("<abort_jobs><authenticator>bob_auth</authenticator><job_name>a0"
                      "</job_name></abort_jobs>") == "not owner of batch"
    assert proj.count("workunit", "error_mask <> 0") == 0
    _, r = proj.rpc("<abort_jobs><authenticator>carol_auth</authenticator><job_name>a0"
                    "</job_name></abort_jobs>")
    assert r.findtext("aborted") == "a0"
    assert proj.count("workunit", "error_mask = 16") == 1
    # carol may not submit (manage_all without submit_all), as in BOINC
    assert proj.error("<submit_batch><authenticator>carol_auth</authenticator><batch>"
                      "<app_name>example_app</app_name></batch></submit_batch>") == \
        "no submit access"


def test_hostile_requests_are_refused_and_change_nothing(proj, tmp_path):
    before = {t: proj.count(t) for t in ("batch", "workunit", "job_file")}

    def unchanged():
        return {t: proj.count(t) for t in before} == before
    # a job name that would leave the XML, or the download tree
    for bad in ("a</name><x>", "../../x", ".htaccess", "a b", "x" * 200):
        root = proj.submit("alice", [("ok0", "fine"), (bad.replace("<", "&lt;"), "bad")])
        assert root.findtext(".//error_msg").startswith("bad job name"), bad
        assert unchanged()
    # input files: traversal, server-side paths and fetches
    for mode, source in (("local_staged", "../../config.xml"), ("local", "/etc/passwd"),
                         ("semilocal", "http://127.0.0.1/x"), ("sandbox", "x"), ("ftp", "x")):
        xml = ("<submit_batch><authenticator>alice_auth</authenticator><batch><app_name>"
               "example_app</app_name><job><input_file><mode>%s</mode><source>%s</source>"
               "</input_file></job></batch></submit_batch>" % (mode, source))
        assert proj.error(xml), (mode, source)
        assert unchanged()
    # numbers out of range
    for params in ("<delay_bound>-5</delay_bound>", "<rsc_fpops_est>1e400</rsc_fpops_est>",
                   "<rsc_memory_bound>-1</rsc_memory_bound>"):
        root = proj.submit("alice", [("n0", "x")], extra="<job_params>%s</job_params>" % params)
        assert root.findtext(".//error_msg"), params
        assert unchanged()
    assert proj.error("<create_batch><authenticator>alice_auth</authenticator><app_name>"
                      "example_app</app_name><expire_time>1e400</expire_time></create_batch>")
    # a name that breaks the XML: not parseable, nothing done
    assert proj.error("<retire_batch><authenticator>alice_auth</authenticator><batch_name>"
                      "b</batch_name><x></batch_name></retire_batch>").startswith(
        "can't parse request message")
    # entities are not expanded
    text, _ = proj.rpc('<?xml version="1.0"?><!DOCTYPE r [<!ENTITY e SYSTEM "file:///etc/passwd">'
                       ']><ping>&e;</ping>')
    assert "root:" not in text
    assert unchanged()
    # a batch name with markup is stored as text and comes back escaped
    root = proj.submit("alice", [("m0", "x")], batch="evil&lt;/name&gt;&lt;x&gt;]]&gt;&amp;")
    bid = int(root.findtext("batch_id"))
    text, r = proj.rpc("<query_batches><authenticator>alice_auth</authenticator>"
                       "</query_batches>")
    assert r.find("batch").findtext("name") == "evil</name><x>]]>&"
    assert proj.db.query_value("SELECT name FROM batch WHERE id = %s", (bid,)) == \
        "evil</name><x>]]>&"


def test_max_jobs_in_progress(proj):
    proj.db.execute("UPDATE user_submit SET max_jobs_in_progress = 3 WHERE user_id = %s",
                    (proj.uid["alice"],))
    assert proj.submit("alice", [("q%d" % i, "x%d" % i) for i in range(2)]).findtext("batch_id")
    root = proj.submit("alice", [("r%d" % i, "y%d" % i) for i in range(2)])
    assert root.findtext(".//error_msg") == "limit on jobs in progress exceeded"
    assert proj.count("workunit") == 2 and proj.count("batch") == 1
    assert proj.submit("alice", [("s0", "z")]).findtext("batch_id")


def test_a_bad_job_in_a_batch_leaves_nothing(proj):
    root = proj.submit("alice", [("g0", "x"), ("g0", "y")], "dup")
    assert root.findtext(".//error_msg") == "duplicate workunit name g0"
    assert proj.count("batch") == 0 and proj.count("workunit") == 0
    # a batch made by create_batch stays INIT after a refused submit_batch
    _, r = proj.rpc("<create_batch><authenticator>alice_auth</authenticator><app_name>"
                    "example_app</app_name><batch_name>cb</batch_name></create_batch>")
    bid = int(r.findtext("batch_id"))
    root = proj.submit("alice", [("h0", "x"), ("h1", "y")],
                       extra="<batch_id>%d</batch_id><job_params><delay_bound>-1</delay_bound>"
                       "</job_params>" % bid)
    assert root.findtext(".//error_msg")
    assert proj.db.query_value("SELECT state FROM batch WHERE id = %s", (bid,)) == 0
    # and a second batch may not take the name
    assert proj.error("<create_batch><authenticator>bob_auth</authenticator><app_name>"
                      "example_app</app_name><batch_name>cb</batch_name></create_batch>") == \
        "batch name cb is already in use"


def _upload(proj, tmp_path, name, data, batch_id=0, who="alice"):
    path = tmp_path / ("up_%s" % hashlib.md5(data).hexdigest())
    path.write_bytes(data)
    xml = ("<upload_files><authenticator>%s_auth</authenticator><batch_id>%d</batch_id>"
           "<phys_name>%s</phys_name></upload_files>" % (who, batch_id, name))
    return proj.rpc(xml, job_file.handle, [UploadedFile("file_0", name, str(path), len(data))])[1]


def test_files_by_content(proj, tmp_path):
    data = b"shared input\n"
    name = "jf_" + hashlib.md5(data).hexdigest()
    assert _upload(proj, tmp_path, name, data).find("success") is not None
    # a name whose MD5 the bytes don't match, a name outside the tree, a dot file
    assert _upload(proj, tmp_path, "jf_" + "0" * 32, data).findtext(".//error_msg") \
        .startswith("file jf_%s: its content does not match" % ("0" * 32))
    for bad in ("../x", ".htaccess", "a/b", ""):
        assert _upload(proj, tmp_path, bad, data).findtext(".//error_msg") == "bad filename"
    # the same name with other bytes
    other = b"other bytes\n"
    assert _upload(proj, tmp_path, "plain_name", data).find("success") is not None
    assert _upload(proj, tmp_path, "plain_name", other).findtext(".//error_msg") == \
        "file immutability violation for plain_name"
    assert proj.count("job_file") == 2
    # another submitter's batch can't be tied to a file
    bid = int(proj.submit("bob", [("bb0", "x")], "bobs").findtext("batch_id"))
    assert _upload(proj, tmp_path, name, data, bid).findtext(".//error_msg") == \
        "not owner of batch"
    _, r = proj.rpc("<query_files><authenticator>alice_auth</authenticator><batch_id>%d"
                    "</batch_id><phys_name>%s</phys_name></query_files>" % (bid, name),
                    job_file.handle)
    assert r.findtext(".//error_msg") == "not owner of batch"
    assert proj.count("batch_file_assoc JOIN job_file ON job_file.id = job_file_id",
                      "batch_id = %s AND name = %s", (bid, name)) == 0
    # count of files and names must agree
    text, r = proj.rpc("<upload_files><authenticator>alice_auth</authenticator>"
                       "<phys_name>a</phys_name><phys_name>b</phys_name></upload_files>",
                       job_file.handle)
    assert r.findtext(".//error_msg") == "# of uploaded files (0) doesn't agree with request (2)"


def test_job_file_deleter_keeps_what_live_batches_use(proj, tmp_path):
    from boincpy.submit import job_files
    data = {k: ("file %s\n" % k).encode() for k in "abc"}
    names = {k: "jf_" + hashlib.md5(v).hexdigest() for k, v in data.items()}
    for k in "ab":
        _upload(proj, tmp_path, names[k], data[k])
    # b: used by a live batch; a: by none; c: uploaded with a lease in the future
    xml = ("<submit_batch><authenticator>alice_auth</authenticator><batch><app_name>"
           "example_app</app_name><batch_name>live</batch_name><job><name>l0</name><input_file>"
           "<mode>local_staged</mode><source>%s</source></input_file></job></batch>"
           "</submit_batch>" % names["b"])
    assert proj.rpc(xml)[1].findtext("batch_id")
    path = tmp_path / "c"
    path.write_bytes(data["c"])
    proj.rpc("<upload_files><authenticator>alice_auth</authenticator><delete_time>%d"
             "</delete_time><phys_name>%s</phys_name></upload_files>"
             % (time.time() + 3600, names["c"]), job_file.handle,
             [UploadedFile("file_0", "c", str(path), 3)])
    assert job_files.delete_unused(proj.db, proj.cfg, grace=86400) == []
    deleted = job_files.delete_unused(proj.db, proj.cfg, now=time.time() + 2 * 86400, grace=86400)
    assert deleted == [names["a"], names["c"]]
    assert not os.path.exists(job_files.path_of(proj.cfg, names["a"]))
    assert os.path.exists(job_files.path_of(proj.cfg, names["b"]))
    # retiring the batch releases b
    proj.rpc("<retire_batch><authenticator>alice_auth</authenticator><batch_name>live"
             "</batch_name></retire_batch>")
    assert job_files.delete_unused(proj.db, proj.cfg, now=time.time() + 2 * 86400) == \
        [names["b"]]
    assert proj.count("job_file") == 0 and proj.count("batch_file_assoc") == 0
    # query_files sees them gone
    _, r = proj.rpc("<query_files><authenticator>alice_auth</authenticator><phys_name>%s"
                    "</phys_name></query_files>" % names["b"], job_file.handle)
    assert r.findtext("absent_files/file") == "0"


def test_multipart_bodies(tmp_path):
    body = (b"--XyZ\r\nContent-Disposition: form-data; name=\"request\"\r\n\r\n<ping/>\r\n"
            b"--XyZ\r\nContent-Disposition: form-data; name=\"file_0\"; filename=\"a.txt\"\r\n"
            b"Content-Type: text/plain\r\n\r\n" + b"\r\n--X" * 5000 + b"\r\n--XyZ--\r\n")
    env = {"REQUEST_METHOD": "POST", "CONTENT_TYPE": "multipart/form-data; boundary=XyZ",
           "CONTENT_LENGTH": str(len(body))}
    req = read_request(env, io.BytesIO(body), upload_dir=str(tmp_path))
    assert req.form == {"request": ["<ping/>"]} and req.body_error == ""
    assert open(req.files[0].path, "rb").read() == b"\r\n--X" * 5000
    req.remove_files()
    assert os.listdir(tmp_path) == []
    # cut short: an error, no file left
    env["CONTENT_LENGTH"] = str(len(body) - 40)
    req = read_request(env, io.BytesIO(body[:-40]), upload_dir=str(tmp_path))
    assert "truncated upload" in req.body_error and req.files == []
    assert os.listdir(tmp_path) == []


def test_allocation_priority_serves_the_lighter_user_first(proj):
    # recent credit gives the project a speed; quotas 1 : 3
    proj.db.execute("UPDATE app_version SET expavg_credit = 0")
    proj.db.execute("INSERT INTO app_version (create_time, appid, version_num, platformid, "
                    "xml_doc, plan_class, expavg_credit, expavg_time) VALUES "
                    "(1, %s, 100, 1, '', '', 1000, %s)", (proj.app_id, time.time()))
    proj.db.execute("UPDATE user_submit SET quota = 3 WHERE user_id = %s", (proj.uid["bob"],))
    prio = {}
    for who in ("alice", "bob"):
        root = proj.submit(who, [("%s%d" % (who, i), "x%d" % i) for i in range(2)],
                           extra="<allocation_priority/>")
        bid = int(root.findtext("batch_id"))
        prio[who] = proj.db.query_value("SELECT priority FROM workunit WHERE batch = %s LIMIT 1",
                                        (bid,))
        b = proj.db.query_one("SELECT * FROM batch WHERE id = %s", (bid,))
        assert b["logical_end_time"] > b["logical_start_time"] > 0
    # bob's share is three times alice's: the same work moves his clock a third as far
    assert prio["bob"] > prio["alice"]
    lst = {r["user_id"]: r["logical_start_time"]
           for r in proj.db.query("SELECT * FROM user_submit")}
    assert lst[proj.uid["alice"]] > lst[proj.uid["bob"]]


def test_create_work_batch_is_counted_like_a_submitted_one(proj):
    from boincpy.tools import create_work
    _, r = proj.rpc("<create_batch><authenticator>alice_auth</authenticator><app_name>"
                    "example_app</app_name><batch_name>byhand</batch_name></create_batch>")
    bid = int(r.findtext("batch_id"))
    from boincpy.files import dir_hier_path
    with open(dir_hier_path(proj.cfg.download_dir, "hand_in", 1024, create=True), "w") as f:
        f.write("x")
    lines = io.StringIO("--wu_name hand0 hand_in\n--wu_name hand1 hand_in\n")
    assert create_work.run(["--appname", "example_app", "--batch", str(bid), "--stdin",
                            "--project_dir", proj.root], stdin=lines, stdout=io.StringIO(),
                           stderr=io.StringIO()) == 0
    _, r = proj.rpc("<query_batch><authenticator>alice_auth</authenticator><batch_id>%d"
                    "</batch_id></query_batch>" % bid)
    assert (r.findtext("state"), r.findtext("njobs")) == ("1", "2")
    assert [j.findtext("name") for j in r.findall("job")] == ["hand0", "hand1"]


def run_task(task_class, root):
    """A one-shot task in-process: (status, log text)."""
    import contextlib
    from boincpy.daemons.base import run_daemon
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        status = run_daemon(task_class, ["--project_dir", str(root)])
    return status, err.getvalue()


def test_expire_and_delete_batches_tasks(proj):
    run_daemon_once = run_task
    from boincpy.daemons.submit_tasks import DeleteBatches, ExpireBatches
    bid = int(proj.submit("alice", [("e0", "x")], "exp").findtext("batch_id"))
    proj.rpc("<set_expire_time><authenticator>alice_auth</authenticator><batch_id>%d</batch_id>"
             "<expire_time>%d</expire_time></set_expire_time>" % (bid, time.time() - 5))
    status, log = run_daemon_once(ExpireBatches, proj.root)
    assert status == 0 and "[BATCH#%d exp] expired: aborted and retired" % bid in log
    assert proj.db.query_value("SELECT state FROM batch WHERE id = %s", (bid,)) == 4
    assert proj.db.query_value("SELECT error_mask FROM workunit WHERE batch = %s", (bid,)) == 16
    status, log = run_daemon_once(DeleteBatches, proj.root)
    assert proj.count("batch") == 1              # its job is not purged yet
    proj.db.execute("DELETE FROM workunit WHERE batch = %s", (bid,))
    status, log = run_daemon_once(DeleteBatches, proj.root)
    assert proj.count("batch") == 0 and "[BATCH#%d] deleted" % bid in log


def test_manage_privileges_tool(proj):
    from click.testing import CliRunner
    from boincpy.tools import submitters
    run = CliRunner().invoke
    dave = str(proj.uid["dave"])
    r = run(submitters.cli, ["grant_submit", dave, "example_app", "--quota", "2",
                             "--project_dir", proj.root])
    assert r.exit_code == 0, r.output
    assert proj.submit("dave", [("d0", "x")]).findtext("batch_id")
    r = run(submitters.cli, ["grant", dave, "all", "--project_dir", proj.root])
    assert r.exit_code == 0 and "Done." in r.output
    r = run(submitters.cli, ["grant", dave, "all", "--project_dir", proj.root])
    assert isinstance(r.exception, Exception) and "already has global manage access" in \
        str(r.exception)
    r = run(submitters.cli, ["list", "--project_dir", proj.root])
    assert "dave" in r.output and "manage: all apps" in r.output and "quota 2" in r.output
    r = run(submitters.cli, ["grant", dave, "no_such_app", "--project_dir", proj.root])
    assert "no such app: no_such_app" in str(r.exception)
    r = run(submitters.cli, ["revoke_submit", dave, "all", "--project_dir", proj.root])
    assert r.exit_code == 0
    assert proj.error("<query_batches><authenticator>dave_auth</authenticator>"
                      "</query_batches>") == "no file access"
    # the bin/ entry point: a refused request says why, status 1
    proc = subprocess.run([sys.executable, os.path.join(REPO, "bin", "manage_privileges"),
                           "revoke", "999999", "all", "--project_dir", proj.root],
                          capture_output=True, text=True)
    assert proc.returncode == 1 and "no such user: 999999" in proc.stderr


def test_file_deleter_leaves_job_files_to_their_deleter(proj, tmp_path):
    from backend_util import run_daemon_once
    from boincpy.daemons.file_deleter import FileDeleter
    from boincpy.submit import job_files
    data = b"shared by two batches\n"
    name = "jf_" + hashlib.md5(data).hexdigest()
    _upload(proj, tmp_path, name, data)
    for b in ("one", "two"):
        xml = ("<submit_batch><authenticator>alice_auth</authenticator><batch><app_name>"
               "example_app</app_name><batch_name>%s</batch_name><job><name>%s0</name>"
               "<input_file><mode>local_staged</mode><source>%s</source></input_file></job>"
               "</batch></submit_batch>" % (b, b, name))
        assert proj.rpc(xml)[1].findtext("batch_id")
    inline = proj.db.query_value("SELECT COUNT(*) FROM job_file")
    proj.db.execute("UPDATE workunit SET file_delete_state = 2 WHERE name = 'two0'")
    proj.db.execute("UPDATE workunit SET file_delete_state = 1 WHERE name = 'one0'")
    # the batch is not retired: its files wait
    status, log = run_daemon_once(FileDeleter, proj.root, "-d", "4")
    assert status == 0 and "deleting" not in log
    assert proj.db.query_value("SELECT file_delete_state FROM workunit WHERE name = 'one0'") == 1
    status, log = run_daemon_once(FileDeleter, proj.root, "-d", "4", "--delete_batch_files_early")
    assert status == 0 and "is a job file of remote submission" in log
    assert os.path.exists(job_files.path_of(proj.cfg, name))
    assert proj.db.query_value("SELECT COUNT(*) FROM job_file") == inline
    # --dont_delete_batches: the batch's rows stay READY
    proj.db.execute("UPDATE workunit SET file_delete_state = 1 WHERE name = 'two0'")
    proj.db.execute("UPDATE result SET file_delete_state = 1")
    run_daemon_once(FileDeleter, proj.root, "--dont_delete_batches")
    assert proj.db.query_value("SELECT file_delete_state FROM workunit WHERE name = 'two0'") == 1
    assert proj.count("result", "file_delete_state = 1") == proj.count("result")


def test_a_batchs_outputs_wait_for_its_retirement(proj, tmp_path):
    from backend_util import run_daemon_once
    from boincpy.daemons.file_deleter import FileDeleter
    from boincpy.files import dir_hier_path
    bid = int(proj.submit("alice", [("o0", "x")], "outs").findtext("batch_id"))
    proj.transition()
    out = dir_hier_path(proj.cfg.upload_dir, "o0_0_out", 1024, create=True)
    with open(out, "w") as f:
        f.write("OUTPUT")
    proj.db.execute("UPDATE result SET xml_doc_in = %s, file_delete_state = 1, server_state = 5 "
                    "WHERE batch = %s", ("<file_info>\n<name>o0_0_out</name>\n</file_info>", bid))
    run_daemon_once(FileDeleter, proj.root)
    assert os.path.exists(out)
    assert proj.db.query_value("SELECT file_delete_state FROM result WHERE batch = %s",
                               (bid,)) == 1
    proj.db.execute("UPDATE batch SET state = %s WHERE id = %s", (int(BatchState.RETIRED), bid))
    run_daemon_once(FileDeleter, proj.root)
    assert not os.path.exists(out)
    assert proj.db.query_value("SELECT file_delete_state FROM result WHERE batch = %s",
                               (bid,)) == 2


def test_a_new_batch_does_not_adopt_jobs_made_with_a_bare_batch_number(proj):
    from boincpy.tools import create_work
    from boincpy.files import dir_hier_path
    with open(dir_hier_path(proj.cfg.download_dir, "bare_in", 1024, create=True), "w") as f:
        f.write("x")
    assert create_work.run(["--appname", "example_app", "--batch", "3", "--wu_name", "bare",
                            "--project_dir", proj.root, "bare_in"], stdout=io.StringIO(),
                           stderr=io.StringIO()) == 0
    ids = [int(proj.submit("alice", [("n%d" % i, "x")], "new%d" % i).findtext("batch_id"))
           for i in range(2)]
    assert ids == [4, 5]
    _, r = proj.rpc("<query_batch><authenticator>alice_auth</authenticator><batch_id>4"
                    "</batch_id></query_batch>")
    assert [j.findtext("name") for j in r.findall("job")] == ["n0"]
