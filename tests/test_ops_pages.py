"""The ops pages in-process against a real database: content, escaping,
and every action's effect (and its refusal without a valid form token)."""

import os
import re
import subprocess
import sys
import time

import MySQLdb
import pytest

from boincpy.config import DaemonSpec, load_config, short_hostname, write_config
from boincpy.files import log_path
from boincpy.web import csrf
from boincpy.web.ops.main import PAGES
from ops_fixtures import ADMIN, XSS, call, db_rows, ops_project  # noqa: F401
from conftest import altered

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def token_of(body):
    m = re.search(r'name="csrf_token" value="([^"]+)"', body)
    assert m, "no form token in the page"
    return m.group(1)


def rows(project, db_root_params, sql, params=()):
    return db_rows(db_root_params, load_config(str(project)).db_name, sql, params)


def assert_ok(resp):
    assert resp.status.startswith("200"), resp.body[-2000:]
    return resp.body


# ---------------------------------------------------------------------------
# Entry points and protection

def test_every_ops_file_is_a_thin_cgi_of_a_page():
    ops = os.path.join(REPO, "html", "ops")
    # (directories hold data the tools read: remind_email/'s message templates)
    files = sorted(f for f in os.listdir(ops)
                   if not f.startswith(".") and not os.path.isdir(os.path.join(ops, f)))
    assert files == sorted(PAGES)
    for name in files:
        path = os.path.join(REPO, "html", "ops", name)
        text = open(path).read()
        assert text.startswith("#!/usr/bin/env python3\n")
        # its page, started from the ops pages' bundle (boincpy.hot_path)
        assert "run(__file__)" in text and len(text.splitlines()) <= 8
        assert 'cgi_start("ops")' in text
        assert os.access(path, os.X_OK)


def test_pages_refuse_without_an_authenticated_user(ops_project):
    resp = call(ops_project, "index.php", user="")
    assert resp.status.startswith("403")
    assert "not protected" in resp.body


def test_unknown_page_is_404(ops_project):
    assert call(ops_project, "nope.php").status.startswith("404")


def test_security_headers_and_no_scripts(ops_project):
    for page, query in (("index.php", {}), ("server_status.php", {}),
                        ("db_action.php", {"table": "result", "id": 2})):
        resp = call(ops_project, page, query=query)
        body = assert_ok(resp)
        headers = dict(resp.headers)
        assert "default-src 'none'" in headers["Content-Security-Policy"]
        assert "script-src" not in headers["Content-Security-Policy"]
        assert headers["X-Frame-Options"] == "DENY"
        assert "<script" not in body
        assert ' style="' not in body      # styles only from the hashed <style> block


# ---------------------------------------------------------------------------
# Index and status

def test_index_links_and_per_app_summaries(ops_project):
    body = assert_ok(call(ops_project, "index.php"))
    for href in ("db_form.php?table=result", "manage_apps.php", "cancel_wu_form.php",
                 "server_status.php", "add_user.php", "why_no_work.php"):
        assert 'href="%s"' % href in body
    assert "result_summary.php?appid=1&amp;nsecs=86400" in body
    assert "<code>example_app</code>" in body


def test_index_warns_about_trigger_files(ops_project):
    open(os.path.join(ops_project, "stop_daemons"), "w").close()
    body = assert_ok(call(ops_project, "index.php"))
    assert "stop_daemons is present" in body


@pytest.fixture
def daemon_project(ops_project):
    """Daemons in config.xml: feeder running (a live process with 'feeder'
    in its command line), transitioner with a stale pid file, file_deleter
    disabled, a validator on another host."""
    cfg = load_config(str(ops_project))
    daemons = [DaemonSpec("feeder -d 3"), DaemonSpec("transitioner -d 3"),
               DaemonSpec("file_deleter", disabled=True),
               DaemonSpec("sample_bitwise_validator --app example_app", host="otherhost")]
    options = dict(cfg.as_options(), host=short_hostname())   # daemons run on this host
    write_config(str(ops_project), options, daemons)
    cfg = load_config(str(ops_project))
    os.makedirs(cfg.pid_dir, exist_ok=True)
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", "feeder"])
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    with open(os.path.join(cfg.pid_dir, "feeder.pid"), "w") as f:
        f.write("%d\n" % proc.pid)
    with open(os.path.join(cfg.pid_dir, "transitioner.pid"), "w") as f:
        f.write("%d\n" % dead.pid)
    yield ops_project
    proc.kill()
    proc.wait()


def _row_of(body, first_cell):
    m = re.search(r"<tr><td>%s</td>(.*?)</tr>" % re.escape(first_cell), body, re.S)
    assert m, "no row for %s" % first_cell
    return m.group(1)


def test_server_status_daemons_triggers_counts_charts(daemon_project):
    open(os.path.join(daemon_project, "stop_sched"), "w").close()
    body = assert_ok(call(daemon_project, "server_status.php"))
    assert 'class="ok">Running' in _row_of(body, "feeder")
    assert "pid " in _row_of(body, "feeder")
    transitioner = _row_of(body, "transitioner")
    assert 'class="bad">Not running' in transitioner and "stale pid file" in transitioner
    assert 'class="warn">Disabled' in _row_of(body, "file_deleter")
    assert "Remote" in _row_of(body, "sample_bitwise_validator")
    assert 'class="warn">Disabled' in _row_of(body, "scheduler (cgi)")
    assert "<td>stop_sched</td>" in body
    # 4 unsent results (wu 3, 4, 5, 6), 2 in progress.
    assert re.search(r"Results ready to send</th><td><a [^>]*>4</a>", body)
    assert re.search(r"Results in progress</th><td><a [^>]*>2</a>", body)
    assert "Oldest unsent result" in body and "result <a" in body
    # 1 success + 1 client error reported in the past hour: 50 %.
    assert "50.0 % (1 of 2; 0 invalid)" in body
    assert body.count("<svg") == 3 and "Queue depth" in body


def test_queue_depth_rebuilt_from_timestamps(ops_project):
    from boincpy.db import connect
    from boincpy.web.ops.status import queue_depth
    db = connect(load_config(str(ops_project)))
    try:
        labels, unsent, progress = queue_depth(db, int(time.time()))
    finally:
        db.close()
    assert labels[-1] == "now"
    assert unsent[-1] == 4 and progress[-1] == 2
    assert unsent[0] == 0 and progress[0] == 0      # 48 h ago nothing existed


# ---------------------------------------------------------------------------
# Browsing

def test_result_query_filters_and_paging(ops_project):
    body = assert_ok(call(ops_project, "db_action.php",
                          query={"table": "result", "outcome": 3, "server_state": 5}))
    assert "1 rows match" in body
    assert "Computation error [3]" in body and "ERR_RESULT_DOWNLOAD" in body
    body = assert_ok(call(ops_project, "db_action.php",
                          query={"table": "result", "server_state": 2, "nresults": 3}))
    assert "4 rows match" in body and "Showing 1 to 3." in body
    assert "Next 3" in body
    body = assert_ok(call(ops_project, "db_action.php",
                          query={"table": "result", "server_state": 2, "nresults": 3,
                                 "start": 3}))
    assert "Showing 4 to 4." in body and "Previous 3" in body
    body = assert_ok(call(ops_project, "db_action.php",
                          query={"table": "result", "hostid": 2, "appid": 1}))
    assert "1 rows match" in body
    body = assert_ok(call(ops_project, "db_action.php",
                          query={"table": "workunit", "batch": 7, "sort": "id", "order": "asc"}))
    assert "4 rows match" in body


def test_time_range_filter(ops_project):
    now = int(time.time())
    # the fixture's jobs were sent 3000 s before it ran: just after midnight
    # that is yesterday
    day = time.strftime("%Y-%m-%d", time.gmtime(now - 3010))
    body = assert_ok(call(ops_project, "db_action.php",
                          query={"table": "result", "tfield": "received_time",
                                 "after": now - 3600}))
    assert "2 rows match" in body
    body = assert_ok(call(ops_project, "db_action.php",
                          query={"table": "result", "tfield": "sent_time", "after": day,
                                 "before": day}))
    assert "4 rows match" in body


@pytest.mark.parametrize("query", [
    {"table": "result", "sort": "id; DROP TABLE result"},
    {"table": "result", "hostid": "1 OR 1=1"},
    {"table": "result", "tfield": "name", "after": "2026-01-01"},
    {"table": "result", "tfield": "sent_time", "after": "yesterday"},
    {"table": "nosuch"},
])
def test_bad_query_parameters_are_refused(ops_project, query, db_root_params):
    resp = call(ops_project, "db_action.php", query=query)
    assert resp.status[0] == "4"
    assert rows(ops_project, db_root_params, "SELECT COUNT(*) AS n FROM result")[0]["n"] == 8


def test_like_filter_is_literal(ops_project):
    body = assert_ok(call(ops_project, "db_action.php", query={"table": "host",
                                                               "domain_name": "%"}))
    assert "0 rows match" in body
    body = assert_ok(call(ops_project, "db_action.php", query={"table": "host",
                                                               "domain_name": "<script"}))
    assert "1 rows match" in body


def test_result_detail_names_states_and_escapes_stderr(ops_project):
    body = assert_ok(call(ops_project, "db_action.php", query={"table": "result", "id": 2}))
    assert "Over [5]" in body and "Computation error [3]" in body
    assert "Compute error [3]" in body
    assert "-186 (0xffffff46) ERR_RESULT_DOWNLOAD" in body
    assert "process exited with code 1 (0x1, -255)" in body
    assert XSS not in body
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in body
    assert 'href="db_action.php?table=workunit&amp;id=2"' in body
    assert 'href="db_action.php?table=host&amp;id=2"' in body
    assert 'href="why_no_work.php?hostid=2"' in body


def test_host_pages_escape_the_host_name(ops_project):
    for query in ({"table": "host"}, {"table": "host", "id": 2},
                  {"table": "result", "hostid": 2}):
        body = assert_ok(call(ops_project, "db_action.php", query=query))
        assert XSS not in body
    body = assert_ok(call(ops_project, "db_action.php", query={"table": "host", "id": 2}))
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in body
    assert "Clear RPC time" in body


def test_workunit_detail_summary_and_results(ops_project):
    body = assert_ok(call(ops_project, "db_action.php", query={"table": "workunit", "id": 2}))
    assert ">2 results</a>" in body
    assert "Computation error" in body and "In progress [4]" in body
    assert "604800 = 7 days 0 hours 0 min 0 sec" in body
    assert 'href="cancel_wu_action.php?wuid1=2&amp;wuid2=2"' in body
    # not found is an error page with a 404 status
    resp = call(ops_project, "db_action.php", query={"table": "workunit", "id": 99})
    assert resp.status.startswith("404")


def test_other_tables(ops_project):
    assert "example_app" in assert_ok(call(ops_project, "db_action.php",
                                           query={"table": "app", "id": 1}))
    assert "x86_64-pc-linux-gnu" in assert_ok(call(ops_project, "db_action.php",
                                                   query={"table": "platform"}))
    body = assert_ok(call(ops_project, "db_action.php", query={"table": "user", "id": 2}))
    assert "bob@example.org" in body and "auth2" not in body
    body = assert_ok(call(ops_project, "db_form.php", query={"table": "result"}))
    assert '<option value="3">[3] Computation error</option>' in body
    assert "stderr_out" in body


def test_result_list_summary_panels(ops_project):
    body = assert_ok(call(ops_project, "db_action.php",
                          query={"table": "result", "appid": 1, "summary": 1}))
    assert "'Client error' results" in body
    assert re.search(r"Computation error</th><td class=\"num\"><a href=\"db_action.php\?"
                     r"[^\"]*outcome=3[^\"]*\">1</a>", body)


# ---------------------------------------------------------------------------
# Failures

def test_failures_by_platform_host_and_error(ops_project):
    body = assert_ok(call(ops_project, "failure_result_summary_by_platform.php",
                          query={"appid": 1, "nsecs": 86400}))
    assert "-186 (0xffffff46) ERR_RESULT_DOWNLOAD" in body
    assert "example_app 1.00 x86_64-pc-linux-gnu" in body
    assert "50.0 %" in body
    assert "exit_status=-186" in body
    body = assert_ok(call(ops_project, "failure_result_summary_by_host.php",
                          query={"appid": 1, "nsecs": 86400}))
    assert "&lt;script&gt;" in body and XSS not in body
    assert "hostid=2" in body
    body = assert_ok(call(ops_project, "error_summary.php", query={"nsecs": 0}))
    assert "<td>ERR_RESULT_DOWNLOAD</td><td>-186</td><td>0xffffff46</td>" in body
    body = assert_ok(call(ops_project, "result_summary.php", query={"appid": 1, "nsecs": 86400}))
    assert ">8 results</a>" in body


def test_failures_outside_the_window_are_not_counted(ops_project, db_root_params):
    from ops_fixtures import _conn
    conn = _conn(db_root_params, load_config(str(ops_project)).db_name)
    conn.cursor().execute("UPDATE result SET received_time = received_time - 7200")
    conn.commit()
    conn.close()
    body = assert_ok(call(ops_project, "failure_result_summary_by_platform.php",
                          query={"appid": 1, "nsecs": 3600}))
    assert "ERR_RESULT_DOWNLOAD" not in body


# ---------------------------------------------------------------------------
# Cancelling

def _wu(project, db_root_params):
    return {r["id"]: r for r in rows(project, db_root_params,
                                     "SELECT id, error_mask, transition_time FROM workunit")}


def _results(project, db_root_params):
    return {r["id"]: (r["workunitid"], r["server_state"], r["outcome"]) for r in rows(
        project, db_root_params, "SELECT id, workunitid, server_state, outcome FROM result")}


def test_cancel_confirmation_get_changes_nothing(ops_project, db_root_params):
    before = (_wu(ops_project, db_root_params), _results(ops_project, db_root_params))
    body = assert_ok(call(ops_project, "cancel_wu_action.php",
                          query={"wuid1": 3, "wuid2": 5}))
    assert "3 workunit(s) with 3 &lt;= ID &lt;= 5" in body
    assert "3 unsent" in body and 'method="post"' in body
    assert (_wu(ops_project, db_root_params), _results(ops_project, db_root_params)) == before


@pytest.mark.parametrize("how", ["no token", "wrong token", "other user", "expired",
                                 "cross site", "get with token", "token of another form"])
def test_cancel_refused_without_a_valid_token(ops_project, db_root_params, how):
    before = (_wu(ops_project, db_root_params), _results(ops_project, db_root_params))
    good = token_of(call(ops_project, "cancel_wu_action.php",
                         query={"wuid1": 3, "wuid2": 5}).body)
    form = {"wuid1": 3, "wuid2": 5}
    headers, method, user = {}, "POST", ADMIN
    if how == "wrong token":
        form["csrf_token"] = altered(good, 4)
    elif how == "other user":
        form["csrf_token"] = good
        user = "mallory"
    elif how == "expired":
        secret = csrf.load_secret(load_config(str(ops_project)))
        form["csrf_token"] = csrf.make_token(secret, ADMIN, "cancel_wu_action.php",
                                             time.time() - csrf.MAX_AGE - 10)
    elif how == "token of another form":
        # a token from a harmless form (clear a host's RPC time) is no use here
        form["csrf_token"] = token_of(call(ops_project, "clear_host.php").body)
    elif how == "cross site":
        form["csrf_token"] = good
        headers = {"HTTP_ORIGIN": "http://evil.example", "HTTP_SEC_FETCH_SITE": "cross-site"}
    elif how == "get with token":
        method = "GET"
    if method == "GET":
        resp = call(ops_project, "cancel_wu_action.php", "GET",
                    query=dict(form, csrf_token=good, confirm=1))
        assert resp.status.startswith("200")      # only the confirmation page
    else:
        resp = call(ops_project, "cancel_wu_action.php", "POST", form=form, user=user,
                    headers=headers)
        assert resp.status.startswith("403") or resp.status.startswith("405"), resp.status
        assert "nothing was changed" in resp.body
    assert (_wu(ops_project, db_root_params), _results(ops_project, db_root_params)) == before


def test_cancel_range_sets_error_mask_transition_and_results(ops_project, db_root_params):
    before_results = _results(ops_project, db_root_params)
    token = token_of(call(ops_project, "cancel_wu_action.php",
                          query={"wuid1": 3, "wuid2": 5}).body)
    now = int(time.time())
    body = assert_ok(call(ops_project, "cancel_wu_action.php", "POST",
                          form={"wuid1": 3, "wuid2": 5, "csrf_token": token},
                          headers={"HTTP_ORIGIN": "http://127.0.0.1"}))
    assert "Cancelled 3 workunit(s)" in body and "3 unsent result(s)" in body
    wus = _wu(ops_project, db_root_params)
    for i in (3, 4, 5):
        assert wus[i]["error_mask"] & 16
        assert abs(wus[i]["transition_time"] - now) < 30
    for i in (1, 2, 6):
        assert wus[i]["error_mask"] == 0 and wus[i]["transition_time"] == 2147483647
    after = _results(ops_project, db_root_params)
    for rid, (wuid, state, outcome) in after.items():
        if wuid in (3, 4, 5):
            assert (state, outcome) == (5, 5)       # OVER, DIDNT_NEED
        else:
            assert after[rid] == before_results[rid]


def test_cancel_unsent_only_skips_workunits_with_sent_results(ops_project, db_root_params):
    token = token_of(call(ops_project, "cancel_wu_action.php",
                          query={"wuid1": 2, "wuid2": 6, "unsent_only": 1}).body)
    body = assert_ok(call(ops_project, "cancel_wu_action.php", "POST",
                          form={"wuid1": 2, "wuid2": 6, "unsent_only": 1,
                                "csrf_token": token}))
    assert "Cancelled 3 workunit(s)" in body
    wus = _wu(ops_project, db_root_params)
    assert [i for i in wus if wus[i]["error_mask"] & 16] == [3, 4, 5]


def test_cancel_bad_range(ops_project):
    resp = call(ops_project, "cancel_wu_action.php", query={"wuid1": 5, "wuid2": 3})
    assert resp.status.startswith("400") and "0 &lt; first ID" in resp.body


def test_cancel_by_query_lists_then_cancels_ticked(ops_project, db_root_params):
    body = assert_ok(call(ops_project, "cancel_workunits.php", query={"batch": 7}))
    assert "4 workunit(s) not yet cancelled match" in body
    assert body.count('name="wuid"') == 4
    token = token_of(body)
    # A GET to the action changes nothing.
    resp = call(ops_project, "cancel_workunits_action.php", query={"wuid": [3, 4],
                                                                   "csrf_token": token})
    assert resp.status.startswith("405")
    assert not any(w["error_mask"] for w in _wu(ops_project, db_root_params).values())
    body = assert_ok(call(ops_project, "cancel_workunits_action.php", "POST",
                          form={"wuid": [3, 4], "csrf_token": token}))
    assert "Cancelled 2 workunit(s)" in body
    wus = _wu(ops_project, db_root_params)
    assert [i for i in wus if wus[i]["error_mask"] & 16] == [3, 4]


def test_workunit_list_links_to_cancel_by_the_same_query(ops_project):
    body = assert_ok(call(ops_project, "db_action.php", query={"table": "workunit", "batch": 7}))
    assert 'href="cancel_workunits.php?batch=7"' in body


# ---------------------------------------------------------------------------
# Apps and versions

def test_manage_apps_update_and_reread_db(ops_project, db_root_params):
    body = assert_ok(call(ops_project, "manage_apps.php"))
    token = token_of(body)
    # GET with the form's fields changes nothing.
    call(ops_project, "manage_apps.php", query={"action": "update", "id": 1, "weight": 5,
                                                "beta": 1, "csrf_token": token})
    assert rows(ops_project, db_root_params, "SELECT weight FROM app")[0]["weight"] == 1
    body = assert_ok(call(ops_project, "manage_apps.php", "POST",
                          form={"action": "update", "id": 1, "weight": "2.5",
                                "homogeneous_redundancy": "1", "target_nresults": "3",
                                "beta": "1", "deprecated": "1", "csrf_token": token}))
    assert "Application example_app updated" in body
    app = rows(ops_project, db_root_params, "SELECT * FROM app WHERE id = 1")[0]
    assert (app["weight"], app["homogeneous_redundancy"], app["target_nresults"], app["beta"],
            app["deprecated"], app["non_cpu_intensive"]) == (2.5, 1, 3, 1, 1, 0)
    assert os.path.exists(os.path.join(ops_project, "reread_db"))
    # Deprecated apps are hidden unless all=1.
    assert "example_app" not in assert_ok(call(ops_project, "manage_apps.php")).split(
        "<tbody>")[1].split("</tbody>")[0]
    assert "example_app" in assert_ok(call(ops_project, "manage_apps.php", query={"all": 1}))


def test_manage_apps_refuses_bad_input_and_no_token(ops_project, db_root_params):
    token = token_of(call(ops_project, "manage_apps.php").body)
    resp = call(ops_project, "manage_apps.php", "POST",
                form={"action": "update", "id": 1, "weight": "heavy", "csrf_token": token})
    assert resp.status.startswith("400") and "Weight" in resp.body
    resp = call(ops_project, "manage_apps.php", "POST",
                form={"action": "update", "id": 1, "weight": "3"})
    assert resp.status.startswith("403")
    assert rows(ops_project, db_root_params, "SELECT weight FROM app")[0]["weight"] == 1
    assert not os.path.exists(os.path.join(ops_project, "reread_db"))


def test_manage_apps_add(ops_project, db_root_params):
    token = token_of(call(ops_project, "manage_apps.php").body)
    body = assert_ok(call(ops_project, "manage_apps.php", "POST",
                          form={"action": "add", "name": "second_app",
                                "user_friendly_name": "Second <b>app</b>", "csrf_token": token}))
    assert "second_app added" in body and "Second &lt;b&gt;app&lt;/b&gt;" in body
    resp = call(ops_project, "manage_apps.php", "POST",
                form={"action": "add", "name": "second_app", "user_friendly_name": "x",
                      "csrf_token": token})
    assert resp.status.startswith("409")
    resp = call(ops_project, "manage_apps.php", "POST",
                form={"action": "add", "name": "bad name", "user_friendly_name": "x",
                      "csrf_token": token})
    assert resp.status.startswith("400")
    assert [r["name"] for r in rows(ops_project, db_root_params,
                                    "SELECT name FROM app ORDER BY id")] == \
        ["example_app", "second_app"]


def test_manage_app_versions_edit(ops_project, db_root_params):
    body = assert_ok(call(ops_project, "manage_app_versions.php"))
    assert "x86_64-pc-linux-gnu" in body and "<h2>Platforms</h2>" in body
    token = token_of(body)
    body = assert_ok(call(ops_project, "manage_app_versions.php", "POST",
                          form={"id": 1, "plan_class": "mt", "min_core_version": "7.20.5",
                                "max_core_version": "80000", "beta": "1",
                                "csrf_token": token}))
    assert "App version 1 updated" in body
    av = rows(ops_project, db_root_params, "SELECT * FROM app_version WHERE id = 1")[0]
    assert (av["plan_class"], av["min_core_version"], av["max_core_version"], av["beta"],
            av["deprecated"]) == ("mt", 72005, 80000, 1, 0)
    resp = call(ops_project, "manage_app_versions.php", "POST",
                form={"id": 1, "plan_class": "x'; --", "min_core_version": "0",
                      "max_core_version": "0", "csrf_token": token})
    assert resp.status.startswith("400")
    resp = call(ops_project, "manage_app_versions.php", "POST",
                form={"id": 1, "plan_class": "", "min_core_version": "8.0.0",
                      "max_core_version": "7.0.0", "csrf_token": token})
    assert resp.status.startswith("400")
    assert rows(ops_project, db_root_params,
                "SELECT plan_class FROM app_version")[0]["plan_class"] == "mt"
    body = assert_ok(call(ops_project, "manage_app_versions.php", "POST",
                          form={"id": 1, "plan_class": "mt", "min_core_version": "0",
                                "max_core_version": "0", "deprecated": "1",
                                "csrf_token": token}))
    assert rows(ops_project, db_root_params,
                "SELECT deprecated FROM app_version")[0]["deprecated"] == 1


# ---------------------------------------------------------------------------
# Other actions

def test_transition_all_and_clear_host(ops_project, db_root_params):
    body = assert_ok(call(ops_project, "transition_all.php"))
    assert rows(ops_project, db_root_params,
                "SELECT MIN(transition_time) AS t FROM workunit")[0]["t"] == 2147483647
    now = int(time.time())
    assert_ok(call(ops_project, "transition_all.php", "POST",
                   form={"csrf_token": token_of(body)}))
    assert rows(ops_project, db_root_params,
                "SELECT MAX(transition_time) AS t FROM workunit")[0]["t"] <= now + 30
    body = assert_ok(call(ops_project, "clear_host.php"))
    assert_ok(call(ops_project, "clear_host.php", "POST",
                   form={"hostid": 2, "csrf_token": token_of(body)}))
    times = {r["id"]: r["rpc_time"] for r in rows(ops_project, db_root_params,
                                                  "SELECT id, rpc_time FROM host")}
    assert times[2] == 0 and times[1] > 0


def test_add_user(ops_project, db_root_params):
    body = assert_ok(call(ops_project, "add_user.php"))
    token = token_of(body)
    body = assert_ok(call(ops_project, "add_user.php", "POST",
                          form={"name": "carol", "email": "Carol@Example.org",
                                "passwd": "secret", "csrf_token": token}))
    user = rows(ops_project, db_root_params, "SELECT * FROM user WHERE name = 'carol'")[0]
    import hashlib
    assert user["email_addr"] == "carol@example.org"
    # stored as create_account.php stores it: bcrypt of md5(password + e-mail)
    from boincpy import passwords
    assert passwords.matches_stored(hashlib.md5(b"secretcarol@example.org").hexdigest(),
                                    user["passwd_hash"])
    assert not passwords.matches_stored(hashlib.md5(b"wrongcarol@example.org").hexdigest(),
                                        user["passwd_hash"])
    assert len(user["authenticator"]) == 32 and user["authenticator"] in body
    resp = call(ops_project, "add_user.php", "POST",
                form={"name": "carol2", "email": "carol@example.org", "csrf_token": token})
    assert resp.status.startswith("409")
    resp = call(ops_project, "add_user.php", "POST",
                form={"name": "dave", "email": "not-an-address", "csrf_token": token})
    assert resp.status.startswith("400")
    resp = call(ops_project, "add_user.php", "POST", form={"name": "eve",
                                                           "email": "eve@example.org"})
    assert resp.status.startswith("403")
    assert len(rows(ops_project, db_root_params, "SELECT id FROM user")) == 3


# ---------------------------------------------------------------------------
# Logs

SCHED_LOG = """\
2026-11-22 08:05:30.3392 UTC [PID=2298 ]   Request: [USER#1] [HOST#1] [IP 127.0.0.1] client 7.20.5
2026-11-22 08:05:30.3428 UTC [PID=2298 ]    Sending reply to [HOST#1]: 1 results, delay req 7.00
2026-11-22 08:05:30.3429 UTC [PID=2298 ]    Scheduler ran 0.007 seconds
2026-11-22 08:06:40.5150 UTC [PID=3165 ]   Request: [USER#2] [HOST#2] [IP 127.0.0.1] client 7.20.5
2026-11-22 08:06:40.5151 UTC [PID=3166 ]   Request: [USER#1] [HOST#1] [IP 127.0.0.1] client 7.20.5
2026-11-22 08:06:40.5160 UTC [PID=3165 ]    [HOST#2] no work sent: daily quota exceeded (10 of 10)
2026-11-22 08:06:40.5170 UTC [PID=3166 ]    [HOST#1] no work sent: <b>last RPC too recent</b>
2026-11-22 08:06:40.5178 UTC [PID=3165 ]    Sending reply to [HOST#2]: 0 results, delay req 7.00
2026-11-22 08:06:40.5179 UTC [PID=3165 ]    Scheduler ran 0.005 seconds
2026-11-22 08:06:40.5180 UTC [PID=3166 ]    Sending reply to [HOST#1]: 0 results, delay req 7.00
2026-11-22 08:06:40.5181 UTC [PID=3166 ]    Scheduler ran 0.005 seconds
2026-11-22 08:07:40.5150 UTC [PID=3170 ]   Request: [USER#2] [HOST#2] [IP 127.0.0.1] client 7.20.5
2026-11-22 08:07:40.5160 UTC [PID=3170 ]    [HOST#2] no work sent: daily quota exceeded (11 of 10)
2026-11-22 08:07:40.5178 UTC [PID=3170 ]    Sending reply to [HOST#2]: 0 results, delay req 7.00
2026-11-22 08:08:00.0001 UTC [PID=3180 ] [normal] Request: [USER#2] [HOST#2] [IP 127.0.0.1] client 7.20.5
2026-11-22 08:08:00.0002 UTC [PID=3180 ] [normal] [send] CPU: req 8640.00 sec, 2.00 instances
2026-11-22 08:08:00.0003 UTC [PID=3180 ] [normal] [HOST#2] No tasks sent: daily quota of [AV#1] reached (10 of 10 jobs today); no version of app example_app for platform(s) x86_64-pc-linux-gnu
2026-11-22 08:08:00.0004 UTC [PID=3180 ] [normal] Scheduler ran 0.004 seconds
"""


def test_why_no_work_reads_the_scheduler_log(ops_project):
    cfg = load_config(str(ops_project))
    with open(log_path(cfg, "scheduler.log"), "w") as f:
        f.write(SCHED_LOG)
    body = assert_ok(call(ops_project, "why_no_work.php", query={"hostid": 2}))
    assert "3 request(s) of this host" in body and "3 got no work" in body
    assert re.search(r"no version of app example_app for platform\(s\) x86_64-pc-linux-gnu"
                     r"</td><td>1</td>", body)
    assert "daily quota exceeded (10 of 10)" in body
    assert re.search(r"daily quota exceeded \(10 of 10\)</td><td>2</td>", body)  # grouped
    assert "too recent" not in body           # host 1's reason is not host 2's
    body = assert_ok(call(ops_project, "why_no_work.php", query={"hostid": 1}))
    assert "&lt;b&gt;last RPC too recent&lt;/b&gt;" in body and "<b>last RPC" not in body
    assert "1 got no work" in body


def test_parse_requests_groups_by_pid():
    from boincpy.web.ops.logs import parse_requests
    reqs = parse_requests(SCHED_LOG.splitlines())
    assert [(r["host"], r["sent"]) for r in reqs] == [(1, 1), (2, 0), (1, 0), (2, 0), (2, 0)]
    assert reqs[4]["reasons"] == [
        "daily quota of [AV#1] reached (10 of 10 jobs today)",
        "no version of app example_app for platform(s) x86_64-pc-linux-gnu"]
    assert reqs[1]["reasons"] == ["[HOST#2] no work sent: daily quota exceeded (10 of 10)"]
    assert len(reqs[1]["lines"]) == 4      # its Request, reason, reply and "ran" lines


def test_show_log_searches_and_refuses_paths(ops_project):
    cfg = load_config(str(ops_project))
    with open(log_path(cfg, "scheduler.log"), "w") as f:
        f.write(SCHED_LOG)
    body = assert_ok(call(ops_project, "show_log.php", query={"s": "[HOST#2] no work"}))
    assert body.count("daily quota exceeded") == 2
    body = assert_ok(call(ops_project, "show_log.php", query={"s": r"quota.*\(11", "re": 1}))
    assert body.count("daily quota exceeded") == 1
    for bad in ("../config.xml", "/etc/passwd", ".htpasswd"):
        resp = call(ops_project, "show_log.php", query={"s": "x", "f": bad})
        assert resp.status.startswith("400")


def test_server_status_shows_the_feeder_array(ops_project):
    from boincpy import shmem
    cfg = load_config(str(ops_project))
    body = assert_ok(call(ops_project, "server_status.php"))
    assert "Feeder job array: no job array at" in body and "is the feeder running?" in body
    array, _ = shmem.JobArray.create(shmem.segment_path(cfg), 10, {
        "platforms": [], "apps": [], "app_versions": [], "assignments": []})
    try:
        with array._lock:
            for i in range(3):
                array.fill_slot(i, 100 + i, 0, 2, 0, {"id": 3 + i, "name": "wu_%d" % (3 + i)},
                                "<workunit/>")
        array.set_fill_time(time.time())
        array.set_ready()
        body = assert_ok(call(ops_project, "server_status.php"))
        assert "Feeder job array: <b>3</b> of 10 slots hold a job (30 %)" in body
        assert "NOT READY" not in body
    finally:
        array.destroy()
        array.close()


def test_queue_depth_matches_a_replay_of_the_rows(mini_project, db_root_params):
    """Random results over 3 days: the depths equal a direct count, per point,
    of the rows that were unsent / in progress at that time."""
    import random
    from boincpy.db import connect
    from boincpy.web.ops.status import queue_depth
    cfg = load_config(str(mini_project))
    now = int(time.time())
    rng = random.Random(7)
    db = connect(cfg)
    try:
        db.execute("INSERT INTO workunit (create_time, appid, name, xml_doc) "
                   "VALUES (0, 1, 'w', '')")
        rows = []
        for i in range(400):
            created = now - rng.randrange(3 * 86400)
            state, outcome, sent, received, deadline = 2, 0, 0, 0, 0
            mod = now
            kind = rng.random()
            if kind < 0.2:                      # never sent, cancelled
                state, outcome, mod = 5, 5, min(now, created + rng.randrange(7200))
            elif kind > 0.35:
                sent = min(now, created + rng.randrange(7200))
                deadline = sent + rng.randrange(1, 30000)
                state = 4
                if kind > 0.55:
                    state = 5
                    if kind > 0.85 and deadline <= now:
                        outcome = 4
                    else:
                        received = min(now, sent + rng.randrange(20000))
                        outcome = 1
            rows.append((created, 1, state, outcome, sent, received, deadline, "r%d" % i, mod))
        db.insert_many("result", ("create_time", "workunitid", "server_state", "outcome",
                                  "sent_time", "received_time", "report_deadline", "name",
                                  "mod_time"),
                       [r[:-1] + (time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(r[-1])),)
                        for r in rows])
        db.execute("SET time_zone = 'SYSTEM'")
        labels, unsent, progress = queue_depth(db, now)
    finally:
        db.close()
    points = [(now // 3600 - 48 + 1 + i) * 3600 for i in range(48)] + [now]

    def unsent_at(r, t):
        created, _, state, outcome, sent, received, deadline, _, mod = r
        end = sent if sent else (None if state in (1, 2) else mod)
        return created <= t and (end is None or end > t)

    def progress_at(r, t):
        created, _, state, outcome, sent, received, deadline, _, mod = r
        if not sent:
            return False
        end = (received if received else None if state == 4 else
               deadline if outcome == 4 else mod)
        return sent <= t and (end is None or end > t)

    assert unsent == [sum(unsent_at(r, t) for r in rows) for t in points]
    assert progress == [sum(progress_at(r, t) for r in rows) for t in points]
    assert max(unsent) > 0 and max(progress) > 0


def test_broken_config_aux_does_not_stop_the_web_pages(ops_project):
    """config_aux.xml is the scheduler's (BOINC's PHP never reads it): a broken
    one stops the scheduler with a message, not the ops pages or web RPCs."""
    from boincpy.errors import ConfigError
    (ops_project / "config_aux.xml").write_text("<config><max_jobs_in_progress>\n")
    with pytest.raises(ConfigError, match="config_aux.xml"):
        load_config(str(ops_project))
    assert "Project Management" in assert_ok(call(ops_project, "index.php"))
    env = dict(os.environ, BOINC_PROJECT_DIR=str(ops_project), REQUEST_METHOD="GET",
               QUERY_STRING="")
    out = subprocess.run([sys.executable, os.path.join(REPO, "html", "user",
                                                       "get_project_config.php")],
                         env=env, capture_output=True, text=True, timeout=60)
    assert "<project_config>" in out.stdout and "<error>" not in out.stdout, out.stdout


def test_errorwus_lists_workunits_whose_errors_exceed_the_quorum(ops_project, db_root_params):
    cfg = load_config(str(ops_project))
    conn = MySQLdb.connect(db=cfg.db_name, **db_root_params)
    cur = conn.cursor()
    # wu 3: three compute errors; wu 4: three download errors and cancelled
    for wu, cstate in ((3, 3), (3, 3), (3, 3), (4, 1), (4, 1), (4, 1)):
        cur.execute("INSERT INTO result (create_time, workunitid, server_state, outcome, "
                    "client_state, name, appid, xml_doc_in, stderr_out) VALUES "
                    "(0, %s, 5, 3, %s, CONCAT('err_', UUID()), 1, '', '')", (wu, cstate))
    cur.execute("UPDATE workunit SET error_mask = 16 WHERE id = 4")
    conn.commit()
    conn.close()
    body = assert_ok(call(ops_project, "errorwus.php"))
    rows = re.findall(r'name="wuid" value="(\d+)"', body)
    assert rows == ["3", "4"]          # wu 2's single error is within min_quorum + 1
    assert "2 entries (0 hidden)" in body
    assert 'action="cancel_workunits_action.php"' in body
    body = assert_ok(call(ops_project, "errorwus.php", query={"hide_canceled": "on"}))
    assert re.findall(r'name="wuid" value="(\d+)"', body) == ["3"]
    assert "1 entries (1 hidden)" in body
    body = assert_ok(call(ops_project, "errorwus.php", query={"level": 2}))
    assert re.findall(r'name="wuid" value="(\d+)"', body) == []
    assert call(ops_project, "errorwus.php", query={"level": "x"}).status.startswith("400")
