"""The submitters' pages (html/user/submit.php, login) and the ops pages of
remote submission (the batch table, a batch, the privileges page), over HTTP
against a project made by make_project under a private Apache, with batches
submitted through the web RPC and run by a simulated 7.20.5 host (the real
scheduler, data server, transitioner and validator).

One project serves the whole module; each test acts on batches (and users)
of its own, so the tests don't depend on their order.  The last test walks
the pages in Chromium."""

import io
import os
import re
import time
import urllib.error
import urllib.parse
import urllib.request
import zipfile

import pytest

from boincpy import passwords
from boincpy.states import BatchState, Outcome, ServerState, WuError
from site_util import Session, token_of
from submit_util import make_submit_site, post, run_bin, run_jobs, transition
from webdriver import Browser
from conftest import altered

SCREENS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "artifacts",
                       "submit-screens")
MARKUP = "<b>bold</b><script>alert(1)</script>"

# batch name -> (submitter, inputs); FINISHED ones are run to completion
FINISHED = {
    "done": ("submitter", ["alpha one\n", "beta two\n", "gamma three\n"]),
    "to_retire": ("submitter", ["retire me\n", "retire me too\n"]),
    "browser": ("submitter", ["browser one\n", "browser two\n"]),
    MARKUP: ("submitter", ["markup\n"]),
    "other": ("second", ["not yours\n"]),
    "ops_retire": ("second", ["ops retire\n"]),
}
UNSENT = {
    "running": ("submitter", ["wait 1\n", "wait 2\n"]),
    "to_abort": ("submitter", ["abort 1\n", "abort 2\n"]),
    "ops_abort": ("second", ["ops abort\n"]),
}


@pytest.fixture(scope="module")
def site(db_root_params):
    """The project, its submitters (with passwords), a manager of the app, and
    the batches of FINISHED (done) and UNSENT (in progress, nothing sent)."""
    from conftest import RunningApache, make_test_project, remove_test_project
    from boincpy.submit import privileges
    from boincpy.tools.httpd import PrivateApache
    project = make_test_project(db_root_params)
    server = PrivateApache(project.root, project.port)
    try:
        server.start()
        s = make_submit_site(RunningApache(project, server))
        p = s.p
        db = p.connect()
        s.passwd = {}
        s.uids = {"submitter": s.uid, "second": s.other_uid, "nobody": s.noperm_uid}
        for name in ("manager", "newcomer"):
            s.uids[name] = db.insert(
                "INSERT INTO user (create_time, email_addr, name, authenticator, passwd_hash, "
                "global_prefs, project_prefs, venue, cross_project_id) VALUES "
                "(1, %s, %s, %s, '', '', '', '', '')",
                (name + "@example.com", name, passwords.random_string()))
        for name, uid in s.uids.items():
            s.passwd[name] = "pw-of-" + name
            db.execute("UPDATE user SET passwd_hash = %s WHERE id = %s", (
                passwords.password_hash(passwords.client_passwd_hash(
                    s.passwd[name], name + "@example.com")), uid))
        s.app_id = db.query_value("SELECT id FROM app WHERE name = 'uppercase'")
        privileges.grant_manage(db, s.uids["manager"], s.app_id)
        s.auths = {"submitter": s.auth, "second": s.other_auth}
        s.batch = {}
        _submit(s, FINISHED)
        transition(p)
        # every job runs on a simulated host; the validator and the
        # transitioner complete the batches
        run_jobs(s, sum(len(v[1]) for v in FINISHED.values()))
        transition(p)
        run_bin(p, "sample_trivial_validator", "--app", "uppercase", "--one_pass")
        transition(p)
        _submit(s, UNSENT)
        transition(p)
        s.ops = Session(project.ops_url, (project.ops_user, project.ops_passwd))
        db.close()
        yield s
    finally:
        server.stop(graceful=False)
        remove_test_project(project)


def _submit(s, batches):
    for name, (who, inputs) in batches.items():
        jobs = "".join("<job><input_file><mode>inline</mode><source>%s</source></input_file>"
                       "</job>" % text for text in inputs)
        xml = ("<submit_batch><authenticator>%s</authenticator><batch><app_name>uppercase"
               "</app_name><batch_name>%s</batch_name>%s</batch></submit_batch>"
               % (s.auths[who], name.replace("&", "&amp;").replace("<", "&lt;")
                  .replace(">", "&gt;"), jobs))
        reply = post(s.url, xml)
        m = re.search(r"<batch_id>(\d+)</batch_id>", reply)
        assert m, reply
        s.batch[name] = int(m.group(1))


def rows(s, sql, params=()):
    db = s.p.connect()
    try:
        return db.query(sql, params)
    finally:
        db.close()


def batch_row(s, name):
    return rows(s, "SELECT * FROM batch WHERE id = %s", (s.batch[name],))[0]


def jobs_state(s, name):
    """Everything an action could change about a batch and its jobs."""
    bid = s.batch[name]
    return (batch_row(s, name)["state"],
            rows(s, "SELECT id, error_mask, transition_time FROM workunit WHERE batch = %s "
                 "ORDER BY id", (bid,)),
            rows(s, "SELECT id, server_state, outcome FROM result WHERE batch = %s ORDER BY id",
                 (bid,)))


def user(s, name):
    return Session(s.url).login(name + "@example.com", s.passwd[name])


# ---------------------------------------------------------------------------
# Logging in and out

def test_login_sets_the_cookie_and_logout_clears_it(site):
    s = site
    web = Session(s.url)
    code, head, _ = web.request("submit.php", {"action": "query_batch", "batch_id": 5})
    assert code == 303
    assert head["Location"] == "login_form.php?next_url=submit.php%3Faction%3Dquery_batch" \
                               "%26batch_id%3D5"
    text = web.page("login_form.php", {"next_url": "submit.php?action=admin"})
    assert 'name="next_url" value="submit.php?action=admin"' in text
    assert 'action="login_action.php"' in text and 'type="password"' in text

    code, head, _ = web.request("login_action.php", form={
        "email_addr": "SUBMITTER@example.com", "passwd": s.passwd["submitter"],
        "next_url": "submit.php?action=admin"})
    assert code == 303 and head["Location"] == "submit.php?action=admin"
    path = urllib.parse.urlsplit(s.url).path
    assert sorted(head["Set-Cookie"].split("; ")) == sorted(
        ["auth=%s" % s.auth, "Path=%s" % path, "HttpOnly", "SameSite=Lax"])
    assert "Your batches" in web.page("submit.php")

    # stay logged in: a year; the account key as the password (BOINC's);
    # a next_url elsewhere is not followed
    other = Session(s.url)
    code, head, _ = other.request("login_action.php", form={
        "email_addr": "second@example.com", "passwd": s.other_auth, "stay_logged_in": "1",
        "next_url": "http://evil.example/submit.php"})
    assert code == 303 and head["Location"] == "home.php"
    assert "Max-Age=31536000" in head["Set-Cookie"] and other.cookies["auth"] == s.other_auth

    # only a POST from this site logs in
    code, head, _ = Session(s.url).request("login_action.php", form={
        "email_addr": "second@example.com", "passwd": s.passwd["second"]},
        headers={"Origin": "http://evil.example"})
    assert code == 403 and head["Set-Cookie"] is None
    assert Session(s.url).request("login_action.php", {"email_addr": "x"})[0] == 405

    # logging out: a form; without its token nothing happens
    text = web.page("logout.php")
    token = token_of(text)
    code, head, _ = web.request("logout.php", form={})
    assert code == 403 and "auth" in web.cookies
    code, head, body = web.request("logout.php", form={"csrf_token": token})
    assert code == 200 and b"You are logged out" in body
    assert {'auth=""', "Path=%s" % path, "HttpOnly", "SameSite=Lax", "Max-Age=0"} <= set(
        head["Set-Cookie"].split("; "))
    assert "auth" not in web.cookies
    assert web.request("submit.php")[0] == 303


def test_failed_logins_https_and_stop_web(site):
    """In-process: failed logins are counted (nothing sleeps), and refused past the limit."""
    from boincpy.web.http import read_request
    from boincpy.web.user.main import handle
    s = site

    def call(page, form=None, environ=None):
        body = urllib.parse.urlencode(form or {}).encode()
        env = {"REQUEST_METHOD": "POST" if form is not None else "GET",
               "CONTENT_TYPE": "application/x-www-form-urlencoded",
               "CONTENT_LENGTH": str(len(body)), "HTTP_HOST": "127.0.0.1",
               "SCRIPT_NAME": "/x/" + page}
        env.update(environ or {})
        return handle(page, read_request(env, io.BytesIO(body)), s.p.root)

    from boincpy.web import accounts
    db = s.p.connect()
    before = db.query_value("SELECT COALESCE(SUM(nfail), 0) FROM login_failure") or 0
    start = time.time()
    for email, passwd in (("submitter@example.com", "wrong"), ("nobody@example.net", "pw")):
        resp = call("login_action.php", {"email_addr": email, "passwd": passwd})
        assert resp.status.startswith("403") and "Wrong email address or password" in resp.body
        assert not [h for h in resp.headers if h[0] == "Set-Cookie"]
    assert time.time() - start < 3                      # nothing slept
    after = db.query_value("SELECT SUM(nfail) FROM login_failure")
    assert after > before
    # past the account's limit the right password is refused too
    uid = db.query_value("SELECT id FROM user WHERE email_addr = 'submitter@example.com'")
    db.execute("UPDATE login_failure SET nfail = %s WHERE name = %s",
               (accounts.LOGIN_FAIL_MAX_ACCOUNT, "user:%d" % uid))
    resp = call("login_action.php", {"email_addr": "submitter@example.com",
                                     "passwd": s.passwd["submitter"]})
    assert resp.status.startswith("403") and "Too many failed logins" in resp.body
    db.execute("DELETE FROM login_failure")
    db.close()
    resp = call("login_action.php", {"email_addr": "submitter@example.com",
                                     "passwd": s.passwd["submitter"]}, {"HTTPS": "on"})
    assert resp.status.startswith("303")
    assert {"HttpOnly", "SameSite=Lax", "Secure"} <= set(dict(resp.headers)["Set-Cookie"].split("; "))
    stop = s.p.path("stop_web")
    open(stop, "w").close()
    try:
        resp = call("submit.php", environ={"HTTP_COOKIE": "auth=" + s.auth})
        assert resp.status.startswith("503") and "down for maintenance" in resp.body
    finally:
        os.unlink(stop)


def test_a_user_without_rights_is_told_so(site):
    web = user(site, "nobody")
    text = web.page("submit.php", status=403)
    assert "You are not allowed to submit jobs to this project" in text
    assert "manage_privileges" in text


# ---------------------------------------------------------------------------
# Batches, jobs, outputs

def test_batches_page_shows_progress(site):
    s = site
    text = user(s, "submitter").page("submit.php")
    assert "You may submit jobs to every application." in text
    inprog = text.split("<h2>Batches in progress")[1].split("<h2>")[0]
    done = text.split("<h2>Completed batches")[1].split("<h2>")[0]
    assert ">running</a>" in inprog and ">done</a>" not in inprog
    row = re.search(r">running</a>.*?</tr>", inprog, re.S).group(0)
    assert "0%" in row and "0 completed" in row and "2 unsent" in row
    row = re.search(r">done</a>.*?</tr>", done, re.S).group(0)
    cells = re.findall(r"<td>(.*?)</td>", row)
    assert cells[2:4] == ["3", "0"]                     # jobs, failed
    credit = batch_row(s, "done")["credit_canonical"]
    assert credit > 0 and "{:,.2f}".format(credit) in row
    assert 'name="retire_%d"' % s.batch["done"] in done
    # other submitters' batches are not listed; a name with markup is text
    assert ">other</a>" not in text and ">ops_abort</a>" not in text
    assert "<script>alert(1)" not in text
    assert "&lt;b&gt;bold&lt;/b&gt;&lt;script&gt;alert(1)&lt;/script&gt;</a>" in done
    # the database agrees with the page
    b = batch_row(s, "done")
    assert (b["state"], b["njobs"], b["fraction_done"]) == (int(BatchState.COMPLETE), 3, 1.0)


def test_batch_page_jobs_and_outputs(site):
    s = site
    web = user(s, "submitter")
    text = web.page("submit.php", {"action": "query_batch", "batch_id": s.batch["done"]})
    assert "<td>completed</td>" in text and "3 completed" in text and "100% done" in text
    assert len(re.findall(r'<td class="ok">completed</td>', text)) == 3
    zip_link = 'href="get_output2.php?cmd=batch&amp;batch_id=%d"' % s.batch["done"]
    assert zip_link in text and "Retire batch..." in text and "Abort batch..." not in text
    assert "no failed jobs" in web.page("submit.php", {
        "action": "query_batch", "batch_id": s.batch["done"], "status": "failed"})
    # a job's page: its instance, the output file, the input file
    wuid = int(re.search(r'action=query_job&amp;wuid=(\d+)">', text).group(1))
    job = web.page("submit.php", {"action": "query_job", "wuid": wuid})
    assert "Completed and validated" in job
    href = re.search(r'href="(get_output2\.php\?cmd=file[^"]+)">out</a>', job).group(1)
    code, head, body = web.request(href.replace("&amp;", "&"))
    assert code == 200 and head["Content-Type"] == "application/octet-stream"
    assert body == FINISHED["done"][1][0].upper().encode()
    assert "<td>in</td>" in job or ">in</a>" in job
    # the job's outputs from the batch page
    href = re.search(r'href="(get_output2\.php\?cmd=workunit&amp;wu_id=%d)"' % wuid,
                     text).group(1)
    assert web.request(href.replace("&amp;", "&"))[2] == b"ALPHA ONE\n"


def test_the_batch_zip(site):
    s = site
    web = user(s, "submitter")
    text = web.page("submit.php", {"action": "query_batch", "batch_id": s.batch["done"]})
    href = re.search(r'href="(get_output2\.php\?cmd=batch[^"]+)"', text).group(1)
    code, head, body = web.request(href.replace("&amp;", "&"))
    assert code == 200
    assert head["Content-Disposition"] == "attachment; filename=batch_%d.zip" % s.batch["done"]
    names = {r["id"]: r["name"] for r in rows(
        s, "SELECT result.id, result.name FROM result JOIN workunit ON "
        "workunit.canonical_resultid = result.id WHERE workunit.batch = %s ORDER BY result.id",
        (s.batch["done"],))}
    with zipfile.ZipFile(io.BytesIO(body)) as z:
        assert sorted(z.namelist()) == sorted(n + "__out" for n in names.values())
        contents = sorted(z.read(n) for n in z.namelist())
    assert contents == sorted(t.upper().encode() for t in FINISHED["done"][1])


def test_abort_and_retire(site):
    s = site
    web = user(s, "submitter")
    before = jobs_state(s, "to_abort")
    text = web.page("submit.php", {"action": "abort_batch", "batch_id": s.batch["to_abort"]})
    assert "Are you sure?" in text and "Yes - abort batch" in text
    assert jobs_state(s, "to_abort") == before          # the confirmation changed nothing
    token = token_of(text)
    target = "submit.php?action=abort_batch&batch_id=%d" % s.batch["to_abort"]
    assert "Abort batch 1" not in web.page(target, form={"csrf_token": altered(token, 2)},
                                           status=403)
    assert jobs_state(s, "to_abort") == before
    text = web.page(target, form={"csrf_token": token})
    assert "aborted." in text
    state, wus, results = jobs_state(s, "to_abort")
    assert state == BatchState.ABORTED
    assert wus and all(w["error_mask"] & WuError.CANCELLED for w in wus)
    assert results and all((r["server_state"], r["outcome"]) ==
                           (ServerState.OVER, Outcome.DIDNT_NEED) for r in results)
    # an aborted batch can't be aborted again; a batch in progress can't be retired
    assert "it can&#39;t be aborted" in web.page(target, form={"csrf_token": token}, status=409)
    running = jobs_state(s, "running")
    web.page("submit.php?action=retire_batch&batch_id=%d" % s.batch["running"],
             form={"csrf_token": token}, status=409)
    assert jobs_state(s, "running") == running

    # retire the completed batch: its jobs stay as they were
    before = jobs_state(s, "to_retire")
    text = web.page("submit.php", {"action": "retire_batch", "batch_id": s.batch["to_retire"]})
    text = web.page("submit.php?action=retire_batch&batch_id=%d" % s.batch["to_retire"],
                    form={"csrf_token": token_of(text)})
    assert "retired." in text
    state, wus, results = jobs_state(s, "to_retire")
    assert state == BatchState.RETIRED and (wus, results) == before[1:]
    assert ">to_retire</a>" not in web.page("submit.php")


def test_another_submitters_batch_is_refused(site):
    s = site
    web = user(s, "second")
    token = token_of(web.page("submit.php"))        # a valid token of this user
    before = jobs_state(s, "running"), jobs_state(s, "done")
    for query in ({"action": "query_batch", "batch_id": s.batch["done"]},
                  {"action": "abort_batch", "batch_id": s.batch["running"]},
                  {"action": "retire_batch", "batch_id": s.batch["done"]}):
        assert "is not yours" in web.page("submit.php", query, status=403)
        web.page("submit.php", query, form={"csrf_token": token}, status=403)
    wuid = rows(s, "SELECT id FROM workunit WHERE batch = %s", (s.batch["done"],))[0]["id"]
    web.page("submit.php", {"action": "query_job", "wuid": wuid}, status=403)
    text = web.page("submit.php?action=retire_multi",
                    form={"csrf_token": token, "retire_%d" % s.batch["done"]: "on"})
    assert "Not retired (not yours, or not over): %d" % s.batch["done"] in text
    assert (jobs_state(s, "running"), jobs_state(s, "done")) == before
    # the outputs
    code, _, body = web.request("get_output2.php", {"cmd": "batch", "batch_id": s.batch["done"]})
    assert body == b"bad auth"
    # lists of other people's batches
    web.page("submit.php", {"action": "show_all_batches", "state": 2, "userid": s.uid},
             status=403)
    web.page("submit.php", {"action": "admin"}, status=403)
    web.page("submit.php", {"action": "admin_all"}, status=403)


def test_forged_forms_are_refused(site):
    s = site
    web = user(s, "submitter")
    other_token = token_of(user(s, "second").page("submit.php"))
    token = token_of(web.page("submit.php"))
    before = jobs_state(s, "running")
    target = "submit.php?action=abort_batch&batch_id=%d" % s.batch["running"]
    for form, headers in (({}, {}), ({"csrf_token": "123.abc"}, {}),
                          ({"csrf_token": other_token}, {}),
                          ({"csrf_token": token}, {"Origin": "http://evil.example"}),
                          ({"csrf_token": token}, {"Sec-Fetch-Site": "cross-site"})):
        text = web.page(target, form=form, headers=headers, status=403)
        assert "nothing was changed" in text
    # GET never acts, whatever it carries
    web.page(target + "&csrf_token=" + token + "&confirmed=1")
    web.page("submit.php", {"action": "retire_multi", "retire_%d" % s.batch["done"]: "on",
                            "csrf_token": token}, status=405)
    assert jobs_state(s, "running") == before
    assert batch_row(s, "done")["state"] == BatchState.COMPLETE


def test_a_manager_sees_the_batches_of_the_app(site):
    s = site
    web = user(s, "manager")
    text = web.page("submit.php")
    assert "You may submit jobs to uppercase. You manage uppercase" in text
    text = web.page("submit.php", {"action": "admin"})
    href = "submit.php?action=show_batches_admin_app&amp;app_id=%d" % s.app_id
    assert href in text and "admin_all" not in text
    text = web.page(href.replace("&amp;", "&"))
    assert "<th>Submitter</th>" in text
    assert ">done</a>" in text and ">other</a>" in text
    assert re.search(r">other</a></td><td>\d+</td><td>second</td>", text)
    assert "3 completed" in web.page("submit.php", {"action": "query_batch",
                                                    "batch_id": s.batch["done"]})
    web.page("submit.php", {"action": "admin_all"}, status=403)


def test_a_batch_named_with_markup(site):
    s = site
    text = user(s, "submitter").page("submit.php", {"action": "query_batch",
                                                    "batch_id": s.batch[MARKUP]})
    assert "<script>alert(1)" not in text and "<b>bold" not in text
    assert "<td>&lt;b&gt;bold&lt;/b&gt;&lt;script&gt;alert(1)&lt;/script&gt;</td>" in text
    ops = s.ops.page("db_action.php", {"table": "batch", "id": s.batch[MARKUP]})
    assert "<script>alert(1)" not in ops and "&lt;script&gt;alert(1)&lt;/script&gt;" in ops


# ---------------------------------------------------------------------------
# Ops pages

def test_ops_batch_browser_and_batch_page(site):
    s = site
    ops = s.ops
    index = ops.page("index.php")
    assert 'href="db_form.php?table=batch"' in index and 'href="manage_privileges.php"' in index
    form = ops.page("db_form.php", {"table": "batch"})
    for name in ("state", "user_id", "app_id", "name"):
        assert 'name="%s"' % name in form
    listing = ops.page("db_action.php", {"table": "batch", "state": int(BatchState.IN_PROGRESS)})
    shown = set(re.findall(r'table=batch&amp;id=(\d+)"', listing))
    inprog = {str(r["id"]) for r in rows(s, "SELECT id FROM batch WHERE state = 1")}
    assert shown == inprog and str(s.batch["running"]) in shown
    listing = ops.page("db_action.php", {"table": "batch", "user_id": s.other_uid,
                                         "app_id": s.app_id})
    shown = set(re.findall(r'table=batch&amp;id=(\d+)"', listing))
    assert shown == {str(r["id"]) for r in rows(s, "SELECT id FROM batch WHERE user_id = %s",
                                                (s.other_uid,))}
    ops.page("db_action.php", {"table": "batch", "state": "x"}, status=400)

    # a batch: counts, jobs; abort through its form
    text = ops.page("db_action.php", {"table": "batch", "id": s.batch["ops_abort"]})
    assert "1 unsent" in text and "in progress" in text
    assert "table=workunit&amp;id=" in text
    before = jobs_state(s, "ops_abort")
    ops.page("batch_action.php", form={"batch_id": s.batch["ops_abort"], "action": "abort"},
             status=403)
    assert jobs_state(s, "ops_abort") == before
    confirm = ops.page("batch_action.php", {"batch_id": s.batch["ops_abort"],
                                            "action": "abort"})
    assert jobs_state(s, "ops_abort") == before
    text = ops.page("batch_action.php", form={"batch_id": s.batch["ops_abort"],
                                              "action": "abort", "csrf_token": token_of(confirm)})
    assert "aborted" in text
    state, wus, _ = jobs_state(s, "ops_abort")
    assert state == BatchState.ABORTED and all(w["error_mask"] & WuError.CANCELLED for w in wus)
    text = ops.page("batch_action.php", form={"batch_id": s.batch["ops_retire"],
                                              "action": "retire",
                                              "csrf_token": token_of(confirm)})
    assert batch_row(s, "ops_retire")["state"] == BatchState.RETIRED
    ops.page("batch_action.php", form={"batch_id": s.batch["ops_retire"], "action": "abort",
                                       "csrf_token": token_of(confirm)}, status=409)


def test_ops_privileges_page(site):
    s = site
    ops = s.ops
    uid = s.uids["newcomer"]

    def rights():
        return (rows(s, "SELECT submit_all, manage_all, quota, max_jobs_in_progress FROM "
                     "user_submit WHERE user_id = %s", (uid,)),
                rows(s, "SELECT app_id, manage FROM user_submit_app WHERE user_id = %s "
                     "ORDER BY app_id", (uid,)))
    text = ops.page("manage_privileges.php")
    assert "<td>submitter</td>" in text and "newcomer" not in text.split("<h2>")[1]
    token = token_of(text)
    assert rights() == ([], [])
    # refusals: no token, an unknown user, an unknown app, a bad quota
    ops.page("manage_privileges.php", form={"action": "grant_submit", "user_id": uid,
                                            "app_id": s.app_id}, status=403)
    for form in ({"user_id": 999999, "app_id": s.app_id}, {"user_id": uid, "app_id": 999},
                 {"user_id": uid, "app_id": s.app_id, "quota": "-1"},
                 {"user_id": "x", "app_id": s.app_id}):
        ops.page("manage_privileges.php", form=dict(form, action="grant_submit",
                                                    csrf_token=token), status=400)
    assert rights() == ([], [])
    text = ops.page("manage_privileges.php", form={
        "action": "grant_submit", "user_id": uid, "app_id": s.app_id, "quota": "2.5",
        "max_jobs_in_progress": "40", "csrf_token": token})
    assert "newcomer may submit jobs of uppercase" in text
    assert rights() == ([{"submit_all": 0, "manage_all": 0, "quota": 2.5,
                          "max_jobs_in_progress": 40}], [{"app_id": s.app_id, "manage": 0}])
    ops.page("manage_privileges.php", form={"action": "grant_manage", "user_id": uid,
                                            "app_id": 0, "csrf_token": token})
    assert rights()[0][0]["manage_all"] == 1
    text = ops.page("manage_privileges.php", form={"action": "grant_manage", "user_id": uid,
                                                   "app_id": 0, "csrf_token": token},
                    status=409)
    assert "already" in text
    ops.page("manage_privileges.php", form={"action": "revoke_manage", "user_id": uid,
                                            "app_id": 0, "csrf_token": token})
    assert rights()[0][0]["manage_all"] == 0
    # the user can now log in and see the submission page
    assert "You may submit jobs to uppercase." in user(s, "newcomer").page("submit.php")
    ops.page("manage_privileges.php", form={"action": "revoke_submit", "user_id": uid,
                                            "app_id": 0, "csrf_token": token})
    assert rights() == ([], [])
    ops.page("manage_privileges.php", form={"action": "revoke_submit", "user_id": uid,
                                            "app_id": 0, "csrf_token": token}, status=409)


# ---------------------------------------------------------------------------
# A submitter in Chromium

def test_a_submitter_in_chromium(site, tmp_path):
    s = site
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    with Browser.start(download_dir=str(downloads)) as b:
        b.get(s.url + "submit.php")
        assert "Log in" in b.title                      # sent to the login form
        b.find("#email_addr").send_keys("submitter@example.com")
        b.find("#passwd").send_keys(s.passwd["submitter"])
        b.find("form button[type=submit]").follow()
        assert "Your batches" in b.title
        b.screenshot(os.path.join(SCREENS, "01-batches.png"))
        b.link("browser").follow()
        assert "Batch %d" % s.batch["browser"] in b.title
        assert "2 completed" in b.body_text()
        b.screenshot(os.path.join(SCREENS, "02-batch.png"))
        b.link("Download the outputs").click()
        target = downloads / ("batch_%d.zip" % s.batch["browser"])
        deadline = time.time() + 30
        while not target.exists() and time.time() < deadline:
            time.sleep(0.2)
        with zipfile.ZipFile(target) as z:
            assert sorted(z.read(n) for n in z.namelist()) == sorted(
                t.upper().encode() for t in FINISHED["browser"][1])
        b.link("Retire batch").follow()
        assert "Are you sure?" in b.body_text()
        b.screenshot(os.path.join(SCREENS, "03-retire-confirm.png"))
        b.find("#confirm").follow()
        assert "retired." in b.body_text()
        b.screenshot(os.path.join(SCREENS, "04-retired.png"))
    assert batch_row(s, "browser")["state"] == BatchState.RETIRED
