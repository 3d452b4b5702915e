"""The volunteer site's tasks, computers and lists pages (boincpy.web.user.tasks
and lists), in-process through boincpy.web.user.main.handle against a project
made by make_project, with users, hosts, workunits and results in every
state written straight into its database.

Privacy: a user's task list only for that user; another user's computer
without its address, domain name, location or forms, its owner named only if
shown; delete and merge refused for someone else's computer (nothing
changed) and without the form token.  Hostile names in users, hosts, apps
and stderr are shown escaped."""

import re
import time

import pytest

from backend_rows import add_result, add_workunit, wu_xml
from boincpy import passwords
from boincpy.web import rpc
from boincpy.web.http import Request
from boincpy.web.user import main
from site_util import action_token, module_project
from site_util import status as status_code

EVIL = '<script>alert("x")</script>&'
NOW = int(time.time())
DAY = 86400


def call(project, page, get=None, post=None, auth=None, **environ):
    """One page in-process: (status code, body text, response)."""
    env = {"REMOTE_ADDR": "127.0.0.1", "SCRIPT_NAME": "/p/" + page, "HTTP_HOST": "127.0.0.1"}
    if auth:
        env["HTTP_COOKIE"] = "auth=" + auth
    env.update(environ)
    query = "&".join("%s=%s" % kv for kv in (get or {}).items())
    env["QUERY_STRING"] = query
    req = Request.of(method="POST" if post is not None else "GET", get=get or {},
                     post=post or {}, environ=env)
    resp = main.handle(page, req, project.root)
    return status_code(resp), resp.text, resp


def ok(project, page, get=None, auth=None):
    code, text, _ = call(project, page, get, auth=auth)
    assert code == 200, text[-2000:]
    assert "Traceback" not in text
    return text


def token(project, page, get, auth, action):
    return action_token(ok(project, page, get, auth), action)


class Site:
    pass


def _user(db, name, show_hosts=0, teamid=0, total=0.0, avg=0.0, create_time=None):
    auth = passwords.random_string()
    email = re.sub(r"[^a-z0-9]", "", name.lower())[:20] + "%d@example.com" % len(name)
    uid = db.insert(
        "INSERT INTO user (create_time, email_addr, name, authenticator, country, postal_code,"
        " total_credit, expavg_credit, global_prefs, project_prefs, teamid, venue, url,"
        " signature, cross_project_id, passwd_hash, show_hosts) VALUES (%s, %s, %s, %s,"
        " 'Germany', '', %s, %s, '', '', %s, '', '', '', '0', %s, %s)",
        (create_time or NOW - 100 * DAY, email, name, auth, total, avg, teamid,
         passwords.password_hash(passwords.client_passwd_hash("pw-" + auth[:6], email)),
         show_hosts))
    return uid, auth, email


def _host(db, userid, domain, create_time, rpc_time, total=0.0, avg=0.0, **cols):
    values = {"create_time": create_time, "userid": userid, "rpc_time": rpc_time,
              "total_credit": total, "expavg_credit": avg, "expavg_time": NOW - DAY,
              "domain_name": domain, "p_ncpus": 4, "p_vendor": "GenuineIntel",
              "p_model": "Intel(R) Core(TM) i5 CPU @ 3.30GHz [Family 6 Model 42 Stepping 7]",
              "os_name": "Linux Debian", "os_version": "6.1", "last_ip_addr": "10.1.2.3",
              "external_ip_addr": "198.51.100.7", "venue": "", "misc": ""}
    values.update(cols)
    names = list(values)
    return db.insert("INSERT INTO host (%s) VALUES (%s)" % (", ".join(names), ", ".join(
        ["%s"] * len(names))), [values[n] for n in names])


# (label, server_state, outcome, validate_state, client_state, filter number)
KINDS = [("progress", 4, 0, 0, 0, 1), ("pending", 5, 1, 0, 5, 2), ("inconcl", 5, 1, 4, 5, 3),
         ("valid", 5, 1, 1, 5, 4), ("invalid", 5, 1, 2, 5, 5), ("error", 5, 3, 0, 3, 6)]


@pytest.fixture(scope="module")
def site(db_root_params):
    with module_project(db_root_params) as project:
        s = Site()
        s.p = project
        db = project.connect()
        s.db = db
        team = db.insert("INSERT INTO team (create_time, userid, name, name_lc, url, type, "
                         "name_html, description, nusers, country, total_credit, "
                         "expavg_credit) VALUES (0, 0, %s, 'x', '', 2, '', '', 0, 'None', "
                         "500, 50)", ("Team " + EVIL,))
        s.team = team
        s.alice, s.alice_auth, s.alice_email = _user(db, "Alice", total=300, avg=30)
        s.bob, s.bob_auth, _ = _user(db, "Bob " + EVIL, show_hosts=1, teamid=team,
                                     total=900, avg=90)
        s.carol, s.carol_auth, _ = _user(db, "Carol", total=100, avg=10)
        platform = db.insert("INSERT INTO platform (create_time, name, user_friendly_name) "
                             "VALUES (0, 'evil_platform', %s)", ("Platform " + EVIL,))
        s.app = db.insert("INSERT INTO app (create_time, name, user_friendly_name, "
                          "target_nresults) VALUES (%s, 'evilapp', %s, 0)", (NOW, "App " + EVIL))
        s.av = db.insert("INSERT INTO app_version (create_time, appid, version_num, platformid,"
                         " xml_doc, plan_class, expavg_credit) VALUES (%s, %s, 712, %s, '', "
                         "%s, 400)", (NOW, s.app, platform, "cuda" + EVIL))
        s.old_av = db.insert("INSERT INTO app_version (create_time, appid, version_num, "
                             "platformid, xml_doc, plan_class) VALUES (%s, %s, 700, %s, '', "
                             "%s)", (NOW, s.app, platform, "cuda" + EVIL))
        # alice: an old record and a newer one of one machine, and one with no tasks
        s.a_old = _host(db, s.alice, "box" + EVIL, NOW - 90 * DAY, NOW - 60 * DAY, 100, 5)
        s.a_new = _host(db, s.alice, "box" + EVIL, NOW - 50 * DAY, NOW - 3600, 200, 20,
                        venue="work", product_name="Model " + EVIL)
        s.a_empty = _host(db, s.alice, "spare", NOW - 40 * DAY, NOW - 2 * DAY)
        s.a_other_os = _host(db, s.alice, "mac", NOW - 100 * DAY, NOW - 95 * DAY, 5, 1,
                             os_name="Darwin")
        s.b_host = _host(db, s.bob, "bob-secret-domain", NOW - 30 * DAY, NOW - 3600, 900, 90,
                         misc='{"client_version": "8.0.2", "gpus": [{"count": 1, '
                              '"model": "GPU<b>x</b>"}]}')
        s.c_host = _host(db, s.carol, "carol-secret-domain", NOW - 20 * DAY, NOW - 3600, 100,
                         10)
        s.c_host2 = _host(db, s.carol, "carol-secret-domain", NOW - 10 * DAY, NOW - 60)
        s.results = {}
        n = 0
        for label, state, outcome, vstate, cstate, _ in KINDS:
            count = 22 if label == "valid" else 1
            for i in range(count):
                n += 1
                wu = add_workunit(db, "wu_%s_%d" % (label, i), s.app)
                rid, _ = add_result(
                    db, project.root, wu, "task_%s_%d" % (label, i), hostid=s.a_old,
                    userid=s.alice, server_state=state, outcome=outcome,
                    validate_state=vstate, client_state=cstate, output_names=(),
                    sent_time=NOW - 1000 * n, app_version_id=s.av,
                    granted_credit=10.0 if label == "valid" else 0.0,
                    stderr_out="<stderr_txt>" + EVIL + "</stderr_txt>")
                s.results.setdefault(label, []).append(rid)
        s.wu_bob = add_workunit(db, "wu_bob", s.app, xml_doc=wu_xml(
            ["in&lt;1&gt;", "evil"]).replace("http://x/evil", "javascript:alert(1)"))
        s.r_bob, _ = add_result(db, project.root, s.wu_bob, "task_bob", hostid=s.b_host,
                                userid=s.bob, output_names=(), validate_state=1,
                                app_version_id=s.av)
        s.r_carol, _ = add_result(db, project.root, s.wu_bob, "task_carol", hostid=s.c_host,
                                  userid=s.carol, output_names=(), validate_state=1,
                                  app_version_id=-3)
        db.execute("INSERT INTO host_app_version (host_id, app_version_id, et_n, et_avg, "
                   "max_jobs_per_day, n_jobs_today, consecutive_valid, turnaround_avg) "
                   "VALUES (%s, %s, 12, 1e-10, 50, 3, 7, 172800)", (s.a_new, s.av))
        yield s
        db.close()


def host(s, hostid):
    return s.db.query_one("SELECT * FROM host WHERE id = %s", (hostid,))


def escaped(text):
    """No raw markup from the database, and the escaped form is there."""
    assert "<script>" not in text
    assert "&lt;script&gt;" in text


# ---------------------------------------------------------------------------
# results.php, result.php, workunit.php

def task_ids(text):
    return [int(x) for x in re.findall(r'href="result\.php\?resultid=(\d+)"', text)]


def test_a_users_tasks_states_and_paging(site):
    s = site
    text = ok(s.p, "results.php", {"userid": s.alice}, s.alice_auth)
    assert "All tasks for Alice" in text
    # BOINC's filter with each state's count
    for label, number in (("All", 27), ("In progress", 1), ("Validation pending", 1),
                          ("Validation inconclusive", 1), ("Valid", 22), ("Invalid", 1),
                          ("Error", 1)):
        assert "%s (%d)" % (label, number) in text, label
    first = task_ids(text)
    assert len(first) == 20
    # newest sent first; the computer column links the host
    assert first[0] == s.results["progress"][0]
    assert 'href="show_host_detail.php?hostid=%d"' % s.a_old in text
    assert "Next" in text and "Previous" not in text
    second = task_ids(ok(s.p, "results.php", {"userid": s.alice, "offset": 20}, s.alice_auth))
    assert len(second) == 7 and not set(first) & set(second)
    assert set(first) | set(second) == {r for ids in s.results.values() for r in ids}
    # each filter shows exactly its tasks
    for label, *_, number in KINDS:
        page = ok(s.p, "results.php", {"userid": s.alice, "state": number}, s.alice_auth)
        assert set(task_ids(page)) == set(s.results[label][:20]), label
    valid = ok(s.p, "results.php", {"userid": s.alice, "state": 4, "offset": 20}, s.alice_auth)
    assert set(task_ids(valid)) == set(s.results["valid"][20:])
    # columns: status, credit, times, the app version (escaped)
    pending = ok(s.p, "results.php", {"userid": s.alice, "state": 2}, s.alice_auth)
    assert "Completed, waiting for validation" in pending and ">pending<" in pending
    assert "v7.12" in pending
    escaped(pending)
    assert "Error while computing" in ok(s.p, "results.php",
                                         {"userid": s.alice, "state": 6}, s.alice_auth)
    names = ok(s.p, "results.php", {"userid": s.alice, "show_names": 1, "state": 1},
               s.alice_auth)
    assert ">task_progress_0<" in names
    # the site's "Tasks" link (no id): one's own
    code, _, resp = call(s.p, "results.php", auth=s.alice_auth)
    assert code == 303 and resp.header("Location") == "results.php?userid=%d" % s.alice


def test_task_lists_of_others_are_refused_or_public_as_boinc(site):
    s = site
    code, text, _ = call(s.p, "results.php", {"userid": s.alice}, auth=s.bob_auth)
    assert code == 403 and "No access" in text and "task_" not in text
    code, _, resp = call(s.p, "results.php", {"userid": s.alice})
    assert code == 303 and resp.header("Location").startswith("login_form.php")
    # a computer's tasks are public (BOINC's top_hosts links them), without
    # the computer column
    text = ok(s.p, "results.php", {"hostid": s.b_host})
    assert task_ids(text) == [s.r_bob] and "tasks for computer %d" % s.b_host in text
    assert "Computer</th>" not in text
    text = ok(s.p, "results.php", {"workunitid": s.wu_bob}, s.carol_auth)
    assert set(task_ids(text)) == {s.r_bob, s.r_carol}
    for params, status in (({"userid": s.alice, "state": 9}, 400),
                           ({"userid": s.alice, "offset": "-1"}, 400),
                           ({"userid": "x"}, 400), ({"hostid": "99999999999"}, 400),
                           ({"hostid": 999999}, 404), ({"userid": s.alice, "evil": 1}, 400)):
        code, text, _ = call(s.p, "results.php", params, auth=s.alice_auth)
        assert code == status, (params, text[-500:])
        assert "Traceback" not in text


def test_a_task_and_its_workunit(site):
    s = site
    rid = s.results["error"][0]
    text = ok(s.p, "result.php", {"resultid": rid})
    assert "<pre>&lt;stderr_txt&gt;&lt;script&gt;" in text
    escaped(text)
    assert "Computation error" in text and "Error while computing" not in text
    assert 'href="show_host_detail.php?hostid=%d"' % s.a_old in text
    assert "task_error_0" in ok(s.p, "result.php", {"result_name": "task_error_0"})
    code, text, _ = call(s.p, "result.php", {"result_name": EVIL})
    assert code == 404 and "<script>" not in text
    wu = s.db.query_value("SELECT workunitid FROM result WHERE id = %s", (rid,))
    text = ok(s.p, "workunit.php", {"wuid": wu})
    assert task_ids(text) == [rid] and "Job instances" in text
    escaped(text)
    text = ok(s.p, "workunit.php", {"wuid": s.wu_bob})
    assert set(task_ids(text)) == {s.r_bob, s.r_carol}
    assert '<a href="http://x/in&lt;1&gt;">in0</a>' in text and "javascript" not in text
    assert ">in1<" in text
    assert "Anonymous platform (NVIDIA GPU)" in text
    assert call(s.p, "workunit.php", {"wuid": 987654})[0] == 404
    # adaptive replication: the tasks stay hidden until there is a canonical result
    s.db.execute("UPDATE app SET target_nresults = 2 WHERE id = %s", (s.app,))
    try:
        text = ok(s.p, "workunit.php", {"wuid": s.wu_bob})
        assert "suppressed pending completion" in text and not task_ids(text)
    finally:
        s.db.execute("UPDATE app SET target_nresults = 0 WHERE id = %s", (s.app,))


# ---------------------------------------------------------------------------
# hosts_user.php, show_host_detail.php, host_app_versions.php

def test_computer_lists(site):
    s = site
    text = ok(s.p, "hosts_user.php", {"show_all": 1}, s.alice_auth)
    assert "Your computers" in text and "spare" in text and "merge_by_name.php" in text
    escaped(text)
    assert "Model &lt;script&gt;" in text and ">work<" in text
    # default: active in the past 30 days only
    text = ok(s.p, "hosts_user.php", auth=s.alice_auth)
    assert "hostid=%d" % s.a_new in text and "hostid=%d\"" % s.a_old not in text
    # sorted by name, both ways
    ids = lambda t: [int(x) for x in re.findall(r"ID: (\d+)", t)]
    asc = ids(ok(s.p, "hosts_user.php", {"sort": "name", "show_all": 1}, s.alice_auth))
    desc = ids(ok(s.p, "hosts_user.php", {"sort": "name", "show_all": 1, "rev": 1},
                  s.alice_auth))
    assert asc[2:] == [s.a_other_os, s.a_empty] and desc[:2] == [s.a_empty, s.a_other_os]
    assert set(asc[:2]) == set(desc[2:]) == {s.a_old, s.a_new}
    # another user's computers: only if shown, and then without domain or location
    text = ok(s.p, "hosts_user.php", {"userid": s.bob}, s.alice_auth)
    assert "Computers belonging to Bob &lt;script&gt;" in text
    assert "bob-secret-domain" not in text and "hostid=%d" % s.b_host in text
    assert "8.0.2" in text and "GPU&lt;b&gt;x" in text and "merge_by_name" not in text
    text = ok(s.p, "hosts_user.php", {"userid": s.carol}, s.alice_auth)
    assert "Computers hidden" in text and "carol-secret" not in text
    assert "hostid=%d" % s.c_host not in text
    code, _, resp = call(s.p, "hosts_user.php")
    assert code == 303 and "login_form.php" in resp.header("Location")
    assert call(s.p, "hosts_user.php", {"userid": 123456})[0] == 404


def test_computer_details_owner_and_others(site):
    s = site
    mine = ok(s.p, "show_host_detail.php", {"hostid": s.a_new}, s.alice_auth)
    assert "box&lt;script&gt;" in mine and "Show IP address" in mine
    assert 'action="host_edit_form.php' in mine or "host_edit_form.php?hostid=%d" % s.a_new \
        in mine
    assert ">work<" in mine and "Free Disk Space" in mine
    assert "10.1.2.3" in ok(s.p, "show_host_detail.php", {"hostid": s.a_new, "ipprivate": 1},
                            s.alice_auth)
    # tasks: no delete button; no tasks: one
    assert "host_delete.php" not in ok(s.p, "show_host_detail.php", {"hostid": s.a_old},
                                       s.alice_auth)
    assert 'action="host_delete.php"' in ok(s.p, "show_host_detail.php",
                                            {"hostid": s.a_empty}, s.alice_auth)
    # another's computer, even with ipprivate: public fields only
    for who in (s.bob_auth, None):
        text = ok(s.p, "show_host_detail.php", {"hostid": s.a_new, "ipprivate": 1}, who)
        for secret in ("box", "10.1.2.3", "198.51.100", "Model &lt;", ">work<", "host_delete",
                       "host_edit_form", "Free Disk", "csrf_token"):
            assert secret not in text, secret
        assert "Anonymous" in text and "Alice" not in text.split("<header>")[1].split(
            "</header>")[1]
    text = ok(s.p, "show_host_detail.php", {"hostid": s.b_host}, s.alice_auth)
    assert "Bob &lt;script&gt;" in text and "bob-secret" not in text
    assert 'href="show_user.php?userid=%d"' % s.bob in text
    assert call(s.p, "show_host_detail.php", {"hostid": 999999})[0] == 404
    assert call(s.p, "show_host_detail.php", {"hostid": "1<x>"})[0] == 400


def test_host_app_versions(site):
    s = site
    text = ok(s.p, "host_app_versions.php", {"hostid": s.a_new})
    escaped(text)
    assert "7.12" in text and "(ID %d)" % s.av in text
    assert "Consecutive valid tasks" in text and "10.00 GFLOPS" in text
    assert "2.00 days" in text
    assert "No application versions" in ok(s.p, "host_app_versions.php",
                                           {"hostid": s.a_empty})


# ---------------------------------------------------------------------------
# deleting and merging

def test_host_delete(site):
    s = site
    tok = token(s.p, "show_host_detail.php", {"hostid": s.a_empty}, s.alice_auth,
                "host_delete.php")
    before = host(s, s.c_host2)
    # another user's computer, with alice's valid token: refused, nothing changed
    code, text, _ = call(s.p, "host_delete.php", post={"hostid": s.c_host2, "csrf_token": tok},
                         auth=s.alice_auth)
    assert code == 404 and host(s, s.c_host2) == before
    # no token, a GET, another site: refused
    assert call(s.p, "host_delete.php", post={"hostid": s.a_empty}, auth=s.alice_auth)[0] == 403
    assert call(s.p, "host_delete.php", {"hostid": s.a_empty}, auth=s.alice_auth)[0] == 405
    assert call(s.p, "host_delete.php", post={"hostid": s.a_empty, "csrf_token": tok},
                auth=s.alice_auth, HTTP_ORIGIN="http://evil.example")[0] == 403
    # a token made for another form, or for another account
    other_form = token(s.p, "host_edit_form.php", {"hostid": s.a_new}, s.alice_auth,
                       "host_edit_action.php")
    bobs = token(s.p, "merge_by_name.php", None, s.bob_auth, "merge_by_name.php")
    for wrong in (other_form, bobs):
        assert call(s.p, "host_delete.php", post={"hostid": s.a_empty, "csrf_token": wrong},
                    auth=s.alice_auth)[0] == 403
    assert host(s, s.a_empty) is not None
    # a computer with tasks stays
    code, text, _ = call(s.p, "host_delete.php", post={"hostid": s.a_old, "csrf_token": tok},
                         auth=s.alice_auth)
    assert code == 409 and "still contains work" in text and host(s, s.a_old) is not None
    code, text, _ = call(s.p, "host_delete.php", post={"hostid": s.a_empty, "csrf_token": tok},
                         auth=s.alice_auth)
    assert code == 200 and "Record deleted" in text and host(s, s.a_empty) is None


def test_merge_hosts_through_the_forms(site):
    s = site
    form = ok(s.p, "host_edit_form.php", {"hostid": s.a_new}, s.alice_auth)
    # the older record is offered; the Darwin one and other users' hosts are not
    assert 'value="%d"' % s.a_old in form
    assert 'value="%d"' % s.a_other_os not in form and 'value="%d"' % s.c_host not in form
    escaped(form)
    detail = ok(s.p, "host_edit_form.php", {"hostid": s.a_new, "detail": 1}, s.alice_auth)
    assert "Host %d has an incompatible OS" % s.a_other_os in detail
    assert call(s.p, "host_edit_form.php", {"hostid": s.c_host}, auth=s.alice_auth)[0] == 404
    tok = token(s.p, "host_edit_form.php", {"hostid": s.a_new}, s.alice_auth,
                "host_edit_action.php")
    carol_before = (host(s, s.c_host), host(s, s.c_host2))
    alice_before = (host(s, s.a_old), host(s, s.a_new))
    # someone else's computer among the ids: refused, nothing changed
    for form_data in ({"id_0": s.a_new, "id_1": s.c_host, "nhosts": 2},
                      {"id_0": s.c_host2, "id_1": s.c_host, "nhosts": 2}):
        code, text, _ = call(s.p, "host_edit_action.php",
                             post=dict(form_data, csrf_token=tok), auth=s.alice_auth)
        assert code == 404, text[-500:]
    assert (host(s, s.c_host), host(s, s.c_host2)) == carol_before
    assert (host(s, s.a_old), host(s, s.a_new)) == alice_before
    # carol merging hers into alice's: refused
    ctok = token(s.p, "host_edit_form.php", {"hostid": s.c_host2}, s.carol_auth,
                 "host_edit_action.php")
    assert call(s.p, "host_edit_action.php", post={"id_0": s.c_host2, "id_1": s.a_old,
                                                   "nhosts": 2, "csrf_token": ctok},
                auth=s.carol_auth)[0] == 404
    # without the token; with a bad nhosts
    assert call(s.p, "host_edit_action.php", post={"id_0": s.a_new, "id_1": s.a_old,
                                                   "nhosts": 2}, auth=s.alice_auth)[0] == 403
    assert call(s.p, "host_edit_action.php", post={"id_0": s.a_new, "nhosts": "x",
                                                   "csrf_token": tok},
                auth=s.alice_auth)[0] == 400
    assert (host(s, s.a_old), host(s, s.a_new)) == alice_before
    ntasks = s.db.query_value("SELECT COUNT(*) FROM result WHERE hostid = %s", (s.a_old,))
    code, text, _ = call(s.p, "host_edit_action.php",
                         post={"id_0": s.a_new, "id_1": s.a_old, "nhosts": 2,
                               "csrf_token": tok}, auth=s.alice_auth)
    assert code == 200 and "Merged %d into %d" % (s.a_old, s.a_new) in text
    old, new = host(s, s.a_old), host(s, s.a_new)
    assert old["userid"] == 0 and old["rpc_seqno"] == s.a_new and old["total_credit"] == 0
    assert new["total_credit"] == 300 and 0 < new["expavg_credit"] < 25
    assert s.db.query_value("SELECT COUNT(*) FROM result WHERE hostid = %s", (s.a_old,)) == 0
    assert s.db.query_value("SELECT COUNT(*) FROM result WHERE hostid = %s",
                            (s.a_new,)) == ntasks
    # the merged record is no longer alice's
    assert call(s.p, "host_edit_form.php", {"hostid": s.a_old}, auth=s.alice_auth)[0] == 404


def test_merge_by_name(site):
    s = site
    text = ok(s.p, "merge_by_name.php", auth=s.carol_auth)
    tok = token(s.p, "merge_by_name.php", None, s.carol_auth, "merge_by_name.php")
    assert "Go ahead" in text
    alice = [host(s, h) for h in (s.a_new, s.a_other_os)]
    assert call(s.p, "merge_by_name.php", post={"confirmed": 1}, auth=s.carol_auth)[0] == 403
    code, text, _ = call(s.p, "merge_by_name.php", post={"confirmed": 1, "csrf_token": tok},
                         auth=s.carol_auth)
    assert code == 200 and "Merged %d into %d" % (s.c_host, s.c_host2) in text
    assert host(s, s.c_host)["userid"] == 0 and host(s, s.c_host2)["total_credit"] == 100
    assert s.db.query_value("SELECT hostid FROM result WHERE id = %s", (s.r_carol,)) \
        == s.c_host2
    assert [host(s, h) for h in (s.a_new, s.a_other_os)] == alice


# ---------------------------------------------------------------------------
# top_users.php, top_hosts.php, top_teams.php, apps.php

def test_top_lists(site, monkeypatch):
    s = site
    text = ok(s.p, "top_users.php")
    names = re.findall(r'href="show_user\.php\?userid=(\d+)"', text)
    assert [int(x) for x in names[:3]] == [s.bob, s.alice, s.carol]
    escaped(text)
    assert 'href="top_users.php?sort_by=total_credit"' in text
    assert "Top participants" in ok(s.p, "top_users.php", {"sort_by": "total_credit"})
    for params in ({"sort_by": EVIL}, {"offset": "x"}, {"offset": 10000}, {"evil": 1}):
        code, text, _ = call(s.p, "top_users.php", params)
        assert code == 400 and "Traceback" not in text and "<script>" not in text
    # paging by users_per_page (an offset off the grid starts over)
    from boincpy.config import load_config
    cfg = load_config(s.p.root)
    cfg.users_per_page = 2
    # (the pages read their config through a Resident in web/page.handle_in_project)
    monkeypatch.setattr("boincpy.resident.Resident.config", lambda self, aux=True: cfg)
    page1 = ok(s.p, "top_users.php")
    page2 = ok(s.p, "top_users.php", {"offset": 2})
    assert len(re.findall(r"show_user\.php\?userid=", page1)) == 2
    assert "Next 2" in page1 and "Previous 2" in page2
    ids = lambda t: re.findall(r'show_user\.php\?userid=(\d+)"', t)
    assert ids(ok(s.p, "top_users.php", {"offset": 3})) == ids(page1)
    assert not set(ids(page1)) & set(ids(page2))
    monkeypatch.undo()

    text = ok(s.p, "top_hosts.php")
    assert "Bob &lt;script&gt;" in text and "bob-secret" not in text
    assert "carol-secret" not in text and "Anonymous" in text and "Alice" not in \
        text.split("</header>")[1]
    text = ok(s.p, "top_teams.php")
    assert "Team &lt;script&gt;" in text and "Company" in text
    assert re.search(r'teamid=%d">[^<]*</a></td><td>1</td>' % s.team, text)
    assert "There are no Primary school teams" in ok(s.p, "top_teams.php", {"type": 3})


def test_apps(site):
    s = site
    text = ok(s.p, "apps.php")
    escaped(text)
    assert 'href="apps.php?app_id=%d"' % s.app in text
    text = ok(s.p, "apps.php", {"app_id": s.app})
    # only the latest version of a plan class
    assert "7.12" in text and "7.00" not in text and "2.00" in text
    assert "Total average computing: 2.00 GigaFLOPS" in text
    assert "pfc_scale" in ok(s.p, "apps.php", {"avid": s.av})
    assert call(s.p, "apps.php", {"app_id": 999999})[0] == 404
    code, xml, resp = call(s.p, "apps.php", {"xml": 1})
    assert code == 200 and resp.content_type.startswith("text/xml")
    assert xml.startswith('<?xml version="1.0" encoding="ISO-8859-1" ?>\n<app_versions>\n')
    block = xml.split("<name>evilapp</name>")[1].split("</application>")[0]
    assert block.startswith("\n    <id>%d</id>\n    <version>\n        <platform_short>" % s.app)
    assert "<version_num>712</version_num>" in block and "700<" not in block
    assert "<plan_class>cuda&lt;script&gt;" in block and "<script>" not in xml
    assert "<date_unix>%d</date_unix>" % NOW in block


# ---------------------------------------------------------------------------
# show_user.php

def test_show_user_page_and_its_xml(site):
    s = site
    text = ok(s.p, "show_user.php", {"userid": s.bob})
    escaped(text)
    assert "<title>" in text and "Account information" in text
    assert 'href="hosts_user.php?userid=%d"' % s.bob in text
    assert 'href="team_display.php?teamid=%d"' % s.team in text and "Germany" in text
    text = ok(s.p, "show_user.php", {"userid": s.carol}, s.bob_auth)
    assert "hidden" in text and "hosts_user.php?userid" not in text
    assert "results.php" not in text.split("</header>")[1]
    assert "results.php?userid=%d" % s.carol in ok(s.p, "show_user.php", {"userid": s.carol},
                                                   s.carol_auth)
    assert call(s.p, "show_user.php", {"userid": 999999})[0] == 404
    assert call(s.p, "show_user.php", {"userid": EVIL})[0] == 400
    # the XML branch is the RPC's reply, byte for byte
    from boincpy.config import load_config
    for params in ({"userid": s.bob, "format": "xml"}, {"auth": s.bob_auth, "format": "xml"},
                   {"userid": 999999, "format": "xml"}):
        code, xml, resp = call(s.p, "show_user.php", params)
        req = Request.of(get=params, environ={"REMOTE_ADDR": "127.0.0.1"})
        direct = rpc.handle("show_user", load_config(s.p.root, aux=False), req)
        assert resp.cgi_bytes() == direct.cgi_bytes()
    assert "<host>" in call(s.p, "show_user.php", {"auth": s.bob_auth, "format": "xml"})[1]


# ---------------------------------------------------------------------------
# odd input on every page of the family: a clear answer, never a server error

ODD = ["", "0", "-1", "1e999", "99999999999999999999", "x<script>", "1.5", " 7", "%00",
       "\u00e9"]
PARAMS = ("userid", "hostid", "workunitid", "resultid", "result_name", "wuid", "offset",
          "state", "appid", "show_names", "sort", "rev", "show_all", "ipprivate", "detail",
          "show_dep", "sort_by", "type", "app_id", "avid", "xml", "format", "auth")


@pytest.mark.parametrize("page", sorted(set(main.PAGES) & {
    "results.php", "result.php", "workunit.php", "hosts_user.php", "show_host_detail.php",
    "host_delete.php", "host_edit_form.php", "host_edit_action.php", "merge_by_name.php",
    "host_app_versions.php", "show_user.php", "top_users.php", "top_hosts.php",
    "top_teams.php", "apps.php"}))
def test_odd_parameters_never_fail_the_server(site, page):
    s = site
    for i, name in enumerate(PARAMS):
        for value in ODD:
            for auth in (None, s.carol_auth):
                code, text, _ = call(s.p, page, {name: value}, auth=auth)
                assert code < 500, (page, name, value, text[-800:])
                assert "<script>" not in text
        code, text, _ = call(s.p, page, post={name: ODD[i % len(ODD)], "nhosts": "2",
                                              "id_0": "1"}, auth=s.carol_auth)
        assert code < 500 and "<script>" not in text, (page, name, text[-800:])
