"""The ops pages as an admin uses them: a project made by make_project,
served by a private Apache (basic auth, CGIs as www-data), driven in
headless Chromium over WebDriver.  Screenshots of every page visited are
kept in tests/artifacts/ops-screens/.

Also over plain HTTP: no credentials -> 401; a cancel POST without (or with
a wrong) form token is refused and changes nothing; a GET to an action URL
changes nothing.
"""

import base64
import os
import re
import urllib.error
import urllib.parse
import urllib.request

import MySQLdb
import pytest

from ops_fixtures import XSS, populate
from site_util import rows as db_query
from site_util import with_credentials
from webdriver import Browser
from conftest import altered

pytestmark = pytest.mark.slow

SCREENS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "artifacts", "ops-screens")

SCHED_LOG = (
    "{t} UTC [PID=4100 ] [normal] Request: [USER#2] [HOST#2] [IP 127.0.0.1] client 7.20.5\n"
    "{t} UTC [PID=4100 ] [normal] [HOST#2] No tasks sent: daily quota of [AV#1] reached "
    "(10 of 10 jobs today)\n"
    "{t} UTC [PID=4100 ] [normal] Sending reply to [HOST#2]: 0 results, delay req 7.00\n"
    "{t} UTC [PID=4100 ] [normal] Scheduler ran 0.004 seconds\n")


@pytest.fixture
def site(apache, db_root_params):
    """The running project with the ops test rows and a scheduler log."""
    project = apache.project
    populate(db_root_params, project.db_name)
    log_dir = project.cfg.host_log_dir
    with open(os.path.join(log_dir, "scheduler.log"), "a") as f:
        f.write(SCHED_LOG.format(t="2026-11-22 08:08:00.0001"))
    return apache


def state(site):
    """Everything a cancel could change."""
    return (db_query(site, "SELECT id, error_mask, transition_time FROM workunit ORDER BY id"),
            db_query(site, "SELECT id, server_state, outcome FROM result ORDER BY id"))


def http(site, page, data=None, auth=True, query=None, headers=None):
    """(status, body) of a request to an ops page over plain HTTP."""
    url = site.ops_url + page + ("?" + urllib.parse.urlencode(query, doseq=True) if query else "")
    body = urllib.parse.urlencode(data, doseq=True).encode() if data is not None else None
    req = urllib.request.Request(url, data=body, headers=dict(headers or {}))
    if auth:
        cred = base64.b64encode(("%s:%s" % (site.ops_user, site.ops_passwd)).encode()).decode()
        req.add_header("Authorization", "Basic " + cred)
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            return resp.status, resp.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode("utf-8", "replace")


def authed_url(site, page=""):
    return with_credentials(site.ops_url + page, site.ops_user, site.ops_passwd)


def shot(browser, name):
    return browser.screenshot(os.path.join(SCREENS, name + ".png"))


# ---------------------------------------------------------------------------

def test_no_credentials_is_401(site):
    status, _ = http(site, "index.php", auth=False)
    assert status == 401
    status, _ = http(site, "cancel_wu_action.php", data={"wuid1": 3, "wuid2": 5}, auth=False)
    assert status == 401
    status, body = http(site, "index.php")
    assert status == 200 and "Project Management" in body


def test_actions_refused_without_valid_token_over_http(site):
    before = state(site)
    # GET of the action: a confirmation page only.
    status, body = http(site, "cancel_wu_action.php", query={"wuid1": 3, "wuid2": 5})
    assert status == 200 and "Confirm" in body
    token = re.search(r'name="csrf_token" value="([^"]+)"', body).group(1)
    status, _ = http(site, "cancel_workunits_action.php",
                     query={"wuid": [3, 4], "csrf_token": token})
    assert status == 405
    # POST without a token, with a wrong one, with the right one from another site.
    status, body = http(site, "cancel_wu_action.php", data={"wuid1": 3, "wuid2": 5})
    assert status == 403 and "nothing was changed" in body
    status, _ = http(site, "cancel_wu_action.php",
                     data={"wuid1": 3, "wuid2": 5, "csrf_token": altered(token, 3)})
    assert status == 403
    status, _ = http(site, "cancel_wu_action.php",
                     data={"wuid1": 3, "wuid2": 5, "csrf_token": token},
                     headers={"Origin": "http://evil.example"})
    assert status == 403
    assert state(site) == before
    # The same POST with the token does cancel (the refusals above were the token's doing).
    status, body = http(site, "cancel_wu_action.php",
                        data={"wuid1": 3, "wuid2": 5, "csrf_token": token})
    assert status == 200 and "Cancelled 3 workunit(s)" in body


def test_admin_session_in_chromium(site):
    now_state = state(site)
    with Browser.start() as b:
        b.get(authed_url(site))
        assert "Project Management" in b.title
        shot(b, "01-index")

        b.get(site.ops_url + "server_status.php")
        text = b.body_text()
        assert "Results ready to send" in text and "feeder" in text
        shot(b, "02-server-status")

        # Find a failed result through the query page.
        b.link("Results").follow()
        assert "Query result table" in b.body_text()
        b.find('select[name="server_state"]').select("5")
        b.find('select[name="outcome"]').select("3")
        shot(b, "03-db-form-result")
        b.find("form.filters button[type=submit]").follow()
        text = b.body_text()
        assert "1 rows match" in text and "Computation error [3]" in text
        shot(b, "04-result-list-failed")
        b.find("table tbody tr td a").follow()
        text = b.body_text()
        assert "Result 2" in b.title
        assert "ERR_RESULT_DOWNLOAD" in text
        assert XSS in text                 # shown as text: the script did not run
        assert "<script>alert" not in b.source.split("</style>", 1)[1]
        shot(b, "05-result-detail")

        b.link("wu_2").follow()
        assert "Workunit 2" in b.title
        shot(b, "06-workunit-detail")
        b.get(site.ops_url + "db_action.php?table=host&id=2")
        assert XSS in b.body_text()
        shot(b, "07-host-detail")
        b.get(site.ops_url + "db_action.php?table=host")
        shot(b, "08-host-list")

        # Cancel workunits 3..5 through the confirmation step.
        b.get(site.ops_url + "cancel_wu_form.php")
        b.find("#wuid1").send_keys("3")
        b.find("#wuid2").send_keys("5")
        shot(b, "09-cancel-form")
        b.find("form.filters button[type=submit]").follow()
        assert "3 workunit(s) with 3 <= ID <= 5" in b.body_text()
        shot(b, "10-cancel-confirm")
        assert state(site) == now_state         # the confirmation page changed nothing
        b.find("#confirm").follow()
        assert "Cancelled 3 workunit(s)" in b.body_text()
        shot(b, "11-cancel-done")
        wus = {r["id"]: r for r in db_query(site, "SELECT * FROM workunit")}
        assert [i for i in sorted(wus) if wus[i]["error_mask"] & 16] == [3, 4, 5]
        res = db_query(site, "SELECT workunitid, server_state, outcome FROM result "
                             "WHERE workunitid BETWEEN 3 AND 5")
        assert res and all((r["server_state"], r["outcome"]) == (5, 5) for r in res)
        b.link("See these workunits").follow()
        assert "Cancelled" in b.body_text()
        shot(b, "12-cancelled-workunits")

        # The other pages an admin opens.
        for name, page in (
                ("13-manage-apps", "manage_apps.php"),
                ("14-manage-app-versions", "manage_app_versions.php"),
                ("15-failures-by-platform", "failure_result_summary_by_platform.php?appid=1"),
                ("16-failures-by-host", "failure_result_summary_by_host.php?appid=1"),
                ("17-error-summary", "error_summary.php"),
                ("18-result-summary", "result_summary.php?appid=1&nsecs=604800"),
                ("19-why-no-work", "why_no_work.php?hostid=2"),
                ("20-show-log", "show_log.php?s=HOST%232"),
                ("21-cancel-by-query", "cancel_workunits.php?batch=7"),
                ("22-add-user", "add_user.php"),
                ("23-workunit-list", "db_action.php?table=workunit")):
            b.get(site.ops_url + page)
            assert "Internal error" not in b.title, page
            shot(b, name)
        b.get(site.ops_url + "why_no_work.php?hostid=2")
        assert "daily quota of [AV#1] reached" in b.body_text()

        # Edit an app through its row form: the change reaches the database.
        b.get(site.ops_url + "manage_apps.php")
        weight = b.find('input[name="weight"]')
        weight.clear()
        weight.send_keys("3.5")
        b.find('form#app1 button').follow()
        assert "Application example_app updated" in b.body_text()
        assert db_query(site, "SELECT weight FROM app WHERE id = 1")[0]["weight"] == 3.5


def test_make_project_writes_the_form_secret(made_project):
    """The ops pages' CSRF secret: made once, outside the web tree, readable
    by the web server's group only, never replaced by a second run."""
    import grp
    import stat
    path = os.path.join(made_project.cfg.key_dir, "ops_form_secret")
    st = os.stat(path)
    assert stat.S_IMODE(st.st_mode) == 0o640
    assert grp.getgrgid(st.st_gid).gr_name == grp.getgrgid(
        __import__("pwd").getpwnam("www-data").pw_gid).gr_name
    with open(path) as f:
        assert re.fullmatch(r"[0-9a-f]{64}\n", f.read())
    assert not path.startswith(os.path.join(made_project.root, "html"))


def _status_row(body, name):
    m = re.search(r"<tr><td>%s</td>(.*?)</tr>" % re.escape(name), body, re.S)
    assert m, "no status row for %s" % name
    return m.group(1)


def test_server_status_with_the_daemons_started_by_bin_start(site):
    """bin/start runs the feeder and the transitioner: the status page sees
    them running (pid, uptime) and the feeder's job array; after bin/stop it
    sees them stopped and the trigger files."""
    import subprocess
    import time
    p = site.project
    subprocess.run([p.bin("start")], cwd=p.root, check=True, timeout=180,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 60
        while True:
            status, body = http(site, "server_status.php")
            assert status == 200
            if "slots hold a job" in body or time.time() > deadline:
                break
            time.sleep(1)
        assert "Project enabled (bin/start)." in body
        for name in ("feeder", "transitioner"):
            row = _status_row(body, name)
            assert 'class="ok">Running' in row and ", up " in row, row
        assert re.search(r"Feeder job array: <b>\d+</b> of \d+ slots hold a job", body)
        with Browser.start() as b:
            b.get(authed_url(site, "server_status.php"))
            assert "Running" in b.body_text()
            shot(b, "24-server-status-daemons-running")
    finally:
        subprocess.run([p.bin("stop")], cwd=p.root, timeout=180,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    status, body = http(site, "server_status.php")
    assert "Project DISABLED (bin/stop)." in body
    assert 'class="bad">Not running' in _status_row(body, "feeder")
    assert "<td>stop_daemons</td>" in body and "<td>stop_sched</td>" in body
    assert 'class="warn">Disabled' in _status_row(body, "scheduler (cgi)")


def test_admin_day_to_day_in_chromium(site):
    """An admin, clicking from the index: finds yesterday's newest job and
    asks the validator to look at it again, bans a spammer, and lets a
    scientist submit jobs.  Every step checked in the database."""
    import time
    now = int(time.time())
    noon = (now // 86400 - 1) * 86400 + 43200           # yesterday, 12:00 UTC
    db = MySQLdb.connect(db=site.project.db_name, **site.project.db_root_params)
    cur = db.cursor()
    cur.execute("UPDATE workunit SET create_time = %s", (now,))
    for i, t in enumerate((noon - 7200, noon + 3600, noon)):
        cur.execute("INSERT INTO workunit (create_time, appid, name, xml_doc, canonical_resultid, "
                    "transition_time) VALUES (%s, 1, %s, '<workunit/>', 0, 2147483647)",
                    (t, "yesterday_%d" % i))
        wuid = cur.lastrowid
        # one valid and one invalid result each
        for k, state in enumerate((1, 2)):
            cur.execute("INSERT INTO result (create_time, workunitid, server_state, outcome, "
                        "validate_state, hostid, userid, name, appid, received_time) VALUES "
                        "(%s, %s, 5, 1, %s, 1, 1, %s, 1, %s)",
                        (t, wuid, state, "yesterday_%d_%d" % (i, k), t + 600))
    cur.execute("INSERT INTO user (create_time, email_addr, name, authenticator, url) "
                "VALUES (%s, 'pills@spam.example', 'cheap_pills', 'spam_auth', "
                "'http://spam.example')", (now - 60,))
    spammer = cur.lastrowid
    db.commit()
    db.close()
    newest = db_query(site, "SELECT id FROM workunit WHERE name = 'yesterday_1'")[0]["id"]

    with Browser.start() as b:
        b.get(authed_url(site))
        b.link("created yesterday").follow()
        text = b.body_text()
        assert "3 rows match" in text
        shot(b, "30-jobs-created-yesterday")
        b.find("table tbody tr td a").follow()             # the first row: the newest
        assert "Workunit %d" % newest in b.title
        assert "yesterday_1" in b.body_text()
        shot(b, "31-yesterdays-newest-job")

        # the validator is to look at it again
        b.link("Revalidate...").follow()
        assert "1 Valid, 1 Invalid" in b.body_text()
        shot(b, "32-revalidate-confirm")
        b.find("#confirm").follow()
        assert "1 job(s) and 2 result(s) were marked for revalidation" in b.body_text()
        shot(b, "33-revalidated")
        assert db_query(site, "SELECT need_validate FROM workunit WHERE id = %s",
                        (newest,))[0]["need_validate"] == 1
        assert [r["validate_state"] for r in db_query(
            site, "SELECT validate_state FROM result WHERE workunitid = %s", (newest,))] == [0, 0]

        # a spammer registered a minute ago
        b.get(authed_url(site))
        b.link("Newest users").follow()
        shot(b, "34-newest-users")
        b.link("cheap_pills").follow()
        assert "Manage user cheap_pills" in b.title
        b.find("#ban_%d" % (14 * 86400)).click()
        b.find("#reason").send_keys("advertises pills in his URL")
        shot(b, "35-ban-form")
        b.find("#ban").follow()
        assert "User cheap_pills is banned until" in b.body_text()
        shot(b, "36-banned")
        until = db_query(site, "SELECT banished_until FROM forum_preferences WHERE userid = %s",
                         (spammer,))[0]["banished_until"]
        assert now + 14 * 86400 - 60 < until < now + 14 * 86400 + 600

        # a scientist may submit jobs of example_app
        b.get(authed_url(site, "manage_user.php"))
        b.find("#user").send_keys("alice")
        b.find("form button[type=submit]").follow()
        assert "Manage user alice" in b.title
        b.find('select[name="app"]').select("1")
        b.find("#quota").send_keys("2")
        b.find("#max_jobs_in_progress").send_keys("500")
        shot(b, "37-grant-submit-form")
        b.find("#grant_submit").follow()
        assert "alice may submit jobs of example_app" in b.body_text()
        shot(b, "38-submitter")
        assert db_query(site, "SELECT quota, max_jobs_in_progress FROM user_submit "
                              "WHERE user_id = 1") == [{"quota": 2.0, "max_jobs_in_progress": 500}]
        assert db_query(site, "SELECT app_id, manage FROM user_submit_app WHERE user_id = 1") \
            == [{"app_id": 1, "manage": 0}]

        # and the spammer goes, with what is his
        b.get(authed_url(site, "manage_user.php?userid=%d" % spammer))
        b.link("Delete this account...").follow()
        shot(b, "39-delete-confirm")
        b.find("#confirm_delete").follow()
        assert "User cheap_pills (ID %d) deleted." % spammer in b.body_text()
        shot(b, "40-spammer-deleted")
        assert not db_query(site, "SELECT id FROM user WHERE id = %s", (spammer,))

        # the other new pages open without error
        for name, page in (("41-dbinfo", "dbinfo.php"), ("42-host-stats", "host_stats.php"),
                           ("43-job-times", "job_times.php?appid=1"),
                           ("44-app-details", "app_details.php?appid=1"),
                           ("45-pass-percentage", "pass_percentage_by_platform.php?appid=1"),
                           ("46-assign", "assign.php"), ("47-size-census", "size_census.php"),
                           ("48-mass-email", "mass_email.php"),
                           ("49-teams", "db_action.php?table=team"),
                           ("50-special-users", "manage_special_users.php")):
            b.get(site.ops_url + page)
            assert "Internal error" not in b.title and "Unable" not in b.title, page
            shot(b, name)


def test_public_server_status_over_http(site):
    """html/user/server_status.php through Apache: HTML, ?xml=1 (cached in
    html/cache, which www-data may write), ?counts=1."""
    import xml.etree.ElementTree as ET
    url = site.master_url + "server_status.php"
    with urllib.request.urlopen(url, timeout=60) as resp:
        assert resp.status == 200 and "text/html" in resp.headers["Content-Type"]
        assert "Tasks ready to send" in resp.read().decode()
    with urllib.request.urlopen(url + "?xml=1", timeout=60) as resp:
        root = ET.fromstring(resp.read().split(b"\n", 1)[1])
    assert root.tag == "server_status"
    assert root.findtext("database_file_states/results_ready_to_send") == "4"
    cached = [f for d, _, fs in os.walk(os.path.join(site.project.root, "html", "cache"))
              for f in fs if f == "server_status.php_job_status"]
    assert cached
    with urllib.request.urlopen(url + "?counts=1", timeout=60) as resp:
        assert b"<wus_need_validate>0</wus_need_validate>" in resp.read()
