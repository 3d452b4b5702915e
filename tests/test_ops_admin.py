"""The ops pages that run a project day to day without SQL, in-process
against a real database: finding things (newest jobs, find by id or name,
sortable lists, teams, host app versions, dbinfo), people (manage_user's
ban, special flags, job submission rights and spammer deletion,
list_new_users, mass_email), jobs (revalidate, assign, job_times,
app_details, pass_percentage_by_platform, host_stats, size_census), every
page on an empty project, and the public server_status.php."""

import html
import mailbox
import os
import re
import stat
import time
import xml.etree.ElementTree as ET

import pytest

from boincpy.config import load_config, write_config
from boincpy.web.ops.main import PAGES
from ops_fixtures import ADMIN, XSS, call, db_rows, ops_project  # noqa: F401

SEND = "send"       # marks a POST that must carry the page's form token


def token_of(body):
    m = re.search(r'name="csrf_token" value="([^"]+)"', body)
    assert m, "no form token in the page"
    return m.group(1)


def ok(resp):
    assert resp.status.startswith("200"), resp.status + resp.body[-2500:]
    return resp.body


def rows(project, sql, params=()):
    from conftest import root_db_params
    return db_rows(root_db_params(), load_config(str(project)).db_name, sql, params)


def db(project):
    from boincpy.db import connect
    return connect(load_config(str(project)))


def post(project, page, form, token_page=None, query=None):
    """POST ``form`` with a token taken from ``token_page`` (default: the page)."""
    body = ok(call(project, token_page or page, query=query))
    return call(project, page, "POST", form=dict(form, csrf_token=token_of(body)))


def set_options(project, **options):
    cfg = load_config(str(project))
    write_config(str(project), dict(cfg.as_options(), **options))


# ---------------------------------------------------------------------------
# Finding things

def test_index_has_one_click_to_the_newest_jobs(ops_project):
    body = ok(call(ops_project, "index.php"))
    today = time.strftime("%Y-%m-%d", time.gmtime())
    yesterday = time.strftime("%Y-%m-%d", time.gmtime(time.time() - 86400))
    assert 'href="db_action.php?table=workunit"' in body
    assert ("db_action.php?table=workunit&amp;tfield=create_time&amp;after=%s&amp;before=%s"
            "&amp;sort=create_time&amp;order=desc" % (yesterday, yesterday)) in body
    assert "after=%s" % today in body
    for page in ("list_new_users.php", "dbinfo.php", "revalidate.php", "assign.php",
                 "job_times.php", "host_stats.php", "size_census.php", "manage_user.php",
                 "mass_email.php", "db_form.php?table=team",
                 "db_form.php?table=host_app_version", "pass_percentage_by_platform.php?appid=1",
                 "app_details.php?appid=1"):
        assert 'href="%s' % page in body, page
    assert body.count('name="find"') == 5


def test_newest_jobs_of_a_day_newest_first(ops_project):
    d = db(ops_project)
    now = int(time.time())
    noon = (now // 86400 - 1) * 86400 + 43200          # yesterday, 12:00 UTC
    d.execute("UPDATE workunit SET create_time = %s", (now,))   # the fixture's: today
    for i, t in enumerate((noon - 3600, noon + 3600, noon)):
        d.execute("INSERT INTO workunit (create_time, appid, name, xml_doc) "
                  "VALUES (%s, 1, %s, '')", (t, "old_%d" % i))
    d.close()
    index = ok(call(ops_project, "index.php"))
    href = re.search(r'<a href="([^"]+)">created yesterday</a>', index).group(1)
    query = dict(kv.split("=") for kv in href.split("?")[1].split("&amp;"))
    body = ok(call(ops_project, "db_action.php", query=query))
    assert "3 rows match" in body
    names = re.findall(r"<td>(old_\d)</td>", body)
    assert names == ["old_1", "old_2", "old_0"]


def test_find_by_id_exact_name_or_part_of_it(ops_project):
    body = ok(call(ops_project, "db_action.php", query={"table": "workunit", "find": "wu_4"}))
    assert "<title>Test project: Workunit 4</title>" in body
    body = ok(call(ops_project, "db_action.php", query={"table": "workunit", "find": "3"}))
    assert "Workunit 3</title>" in body
    body = ok(call(ops_project, "db_action.php", query={"table": "result", "find": "wu_6"}))
    assert "2 rows match" in body and "find=wu_6" in body
    body = ok(call(ops_project, "db_action.php", query={"table": "user",
                                                       "find": "bob@example.org"}))
    assert "User 2</title>" in body
    body = ok(call(ops_project, "db_action.php", query={"table": "host", "find": "10.0.0."}))
    assert "2 rows match" in body
    body = ok(call(ops_project, "db_action.php", query={"table": "workunit", "find": "%"}))
    assert "0 rows match" in body          # wildcards are literal


def test_list_headers_sort_both_ways(ops_project):
    body = ok(call(ops_project, "db_action.php", query={"table": "result"}))
    assert "table=result&amp;sort=exit_status&amp;order=desc" in body
    assert re.search(r'sort=id&amp;order=asc">Result \u25bc</a>', body)
    body = ok(call(ops_project, "db_action.php", query={"table": "result",
                                                       "sort": "exit_status", "order": "asc"}))
    ids = [int(x) for x in re.findall(r'table=result&amp;id=(\d+)">\d+</a></td>', body)]
    assert ids[0] == 2                        # exit_status -186 sorts first
    assert "sort=exit_status&amp;order=desc" in body and "Exit status \u25b2" in body
    resp = call(ops_project, "db_action.php", query={"table": "user", "sort": "passwd_hash"})
    assert resp.status.startswith("400")


def test_team_and_host_app_version_tables(ops_project):
    d = db(ops_project)
    team = d.insert("INSERT INTO team (create_time, userid, name, url, description, nusers, "
                    "country) VALUES (%s, 2, %s, 'spam.example', %s, 1, 'None')",
                    (int(time.time()), "Team " + XSS, "buy <b>now</b>"))
    d.execute("UPDATE user SET teamid = %s WHERE id = 2", (team,))
    d.execute("INSERT INTO host_app_version (host_id, app_version_id, et_n, et_avg, pfc_n, "
              "pfc_avg, max_jobs_per_day, n_jobs_today, consecutive_valid) "
              "VALUES (1, 1, 5, 2e-10, 5, 1.5, 100, 3, 7), (2, 1, 1, 1e-9, 1, 1, 100, 0, 0)")
    d.close()
    body = ok(call(ops_project, "db_action.php", query={"table": "team"}))
    assert "1 rows match" in body and XSS not in body and "Team &lt;script&gt;" in body
    assert 'href="manage_user.php?userid=2">bob</a>' in body
    body = ok(call(ops_project, "db_action.php", query={"table": "team", "id": team}))
    assert "buy &lt;b&gt;now&lt;/b&gt;" in body
    body = ok(call(ops_project, "db_action.php", query={"table": "host_app_version",
                                                       "sort": "consecutive_valid"}))
    assert "2 rows match" in body
    assert "5.00 (5)" in body              # 1 / 2e-10 FLOPS = 5 GFLOPS, over 5 jobs
    assert body.index("table=host&amp;id=1") < body.index("table=host&amp;id=2")
    body = ok(call(ops_project, "db_action.php", query={"table": "host_app_version",
                                                       "min_consecutive_valid": 1}))
    assert "1 rows match" in body
    assert "Team" in ok(call(ops_project, "db_form.php", query={"table": "team"}))


def test_dbinfo_counts_rows_and_files(ops_project):
    cfg = load_config(str(ops_project))
    os.makedirs(os.path.join(cfg.download_dir, "1f"), exist_ok=True)
    for i in range(3):
        with open(os.path.join(cfg.download_dir, "1f", "in_%d" % i), "wb") as f:
            f.write(b"x" * 1000)
    body = ok(call(ops_project, "dbinfo.php"))
    assert re.search(r"<td>result</td><td[^>]*>8</td>", body)
    assert re.search(r"<td>workunit</td><td[^>]*>6</td>", body)
    assert re.search(r"<td>download/</td><td>[^<]*</td><td>3</td><td>2.93 KB</td>", body)
    body = ok(call(ops_project, "dbinfo.php", query={"sort": "rows", "order": "desc"}))
    names = re.findall(r"<tr><td>(\w+)</td><td", body)
    assert names.index("result") < names.index("workunit") < names.index("platform")
    assert call(ops_project, "dbinfo.php", query={"sort": "Rows;"}).status.startswith("400")


# ---------------------------------------------------------------------------
# People

def test_manage_user_looks_users_up(ops_project):
    body = ok(call(ops_project, "manage_user.php", query={"user": "bob@example.org"}))
    assert "Manage user bob" in body
    body = ok(call(ops_project, "manage_user.php", query={"user": "example.org"}))
    assert 'href="manage_user.php?userid=1">alice' in body and "userid=2" in body
    body = ok(call(ops_project, "manage_user.php", query={"user": "nobody"}))
    assert "no user matches nobody" in body
    assert call(ops_project, "manage_user.php", query={"userid": 99}).status.startswith("404")


def _ban(project, userid, seconds, reason="spam links"):
    return post(project, "manage_user.php", {"userid": userid, "action": "ban",
                                             "ban_for": seconds, "reason": reason},
                query={"userid": userid})


def test_ban_needs_a_reason_and_a_token_and_stops_public_changes(ops_project):
    from boincpy.web import rpc
    from boincpy.web.http import Request
    resp = _ban(ops_project, 2, 86400, reason="")
    assert resp.status.startswith("400") and "reason" in resp.body
    resp = call(ops_project, "manage_user.php", "POST",
                form={"userid": 2, "action": "ban", "ban_for": 86400, "reason": "x"})
    assert resp.status.startswith("403")
    # a project made before boincpy had forum_preferences: made on first use
    d = db(ops_project)
    d.execute("DROP TABLE forum_preferences")
    d.close()
    assert "not banned" in ok(call(ops_project, "manage_user.php", query={"userid": 2}))
    before = time.time()
    body = ok(_ban(ops_project, 2, 7 * 86400))
    assert "User bob is banned until" in body
    until = rows(ops_project, "SELECT banished_until FROM forum_preferences "
                              "WHERE userid = 2")[0]["banished_until"]
    assert before + 7 * 86400 - 5 < until < time.time() + 7 * 86400 + 5
    assert "banned until" in ok(call(ops_project, "list_new_users.php"))
    log = open(os.path.join(load_config(str(ops_project)).log_dir, "ops.log")).read()
    assert "[admin] banned user 2 (bob)" in log and "spam links" in log

    cfg = load_config(str(ops_project))
    cfg.enable_am_set_info_rpc = True
    cfg.enable_create_team_rpc = True
    resp = rpc.handle("am_set_info", cfg, Request.of(get={"account_key": "auth2",
                                                          "url": "spam.example"}))
    assert "banned" in resp.body and "<success/>" not in resp.body
    assert rows(ops_project, "SELECT url FROM user WHERE id = 2")[0]["url"] is None
    resp = rpc.handle("am_set_info", cfg, Request.of(get={"account_key": "auth2",
                                                          "send_email": "0"}))
    assert "<success/>" in resp.body          # private settings still change
    resp = rpc.handle("create_team", cfg, Request.of(get={
        "account_key": "auth2", "name": "Spam", "url": "", "type": "", "name_html": "",
        "description": "", "country": ""}))
    assert "banned" in resp.body and not rows(ops_project, "SELECT * FROM team")
    resp = rpc.handle("am_set_info", cfg, Request.of(get={"account_key": "auth1",
                                                          "url": "alice.example"}))
    assert "<success/>" in resp.body          # others are not affected

    body = ok(_ban(ops_project, 2, -1, reason=""))
    assert "may post again" in body
    resp = rpc.handle("am_set_info", cfg, Request.of(get={"account_key": "auth2",
                                                          "url": "bob.example"}))
    assert "<success/>" in resp.body
    assert _ban(ops_project, 2, 12345).status.startswith("400")      # not an offered length


def test_special_user_flags(ops_project):
    body = ok(post(ops_project, "manage_user.php", {"userid": 1, "action": "special",
                                                    "flag": ["1", "6"]},
                   query={"userid": 1}))
    assert "Project administrator, Project scientist" in body
    assert rows(ops_project, "SELECT special_user FROM forum_preferences "
                             "WHERE userid = 1")[0]["special_user"] == "01000010"
    body = ok(call(ops_project, "manage_special_users.php"))
    assert "alice" in body and "bob" not in body
    assert "[Project administrator, Project scientist]" in ok(call(ops_project,
                                                                   "list_new_users.php"))
    resp = post(ops_project, "manage_user.php", {"userid": 1, "action": "special",
                                                 "flag": ["9"]}, query={"userid": 1})
    assert resp.status.startswith("400")
    assert rows(ops_project, "SELECT special_user FROM forum_preferences")[0][
        "special_user"] == "01000010"


def test_job_submission_rights_from_manage_user(ops_project):
    body = ok(post(ops_project, "manage_user.php", {
        "userid": 1, "action": "grant_submit", "app": "1", "quota": "2.5",
        "max_jobs_in_progress": "40"}, query={"userid": 1}))
    assert "alice may submit jobs of example_app" in body
    us = rows(ops_project, "SELECT * FROM user_submit WHERE user_id = 1")[0]
    assert (us["quota"], us["max_jobs_in_progress"], us["submit_all"]) == (2.5, 40, 0)
    assert rows(ops_project, "SELECT app_id FROM user_submit_app WHERE user_id = 1") == [
        {"app_id": 1}]
    body = ok(call(ops_project, "manage_user.php", query={"userid": 1}))
    assert "<td>example_app</td><td>submit</td>" in body
    resp = post(ops_project, "manage_user.php", {"userid": 1, "action": "grant_submit",
                                                 "app": "1", "quota": "lots"},
                query={"userid": 1})
    assert resp.status.startswith("400")
    resp = post(ops_project, "manage_user.php", {"userid": 1, "action": "grant_submit",
                                                 "app": "77"}, query={"userid": 1})
    assert resp.status.startswith("400")
    body = ok(post(ops_project, "manage_user.php", {"userid": 1, "action": "revoke_submit",
                                                    "app": "1"}, query={"userid": 1}))
    assert not rows(ops_project, "SELECT * FROM user_submit_app")
    resp = post(ops_project, "manage_user.php", {"userid": 1, "action": "revoke_submit",
                                                 "app": "1"}, query={"userid": 1})
    assert resp.status.startswith("400") and "nothing was changed" in resp.body


def _snapshot(project):
    return {t: rows(project, "SELECT * FROM %s" % t)
            for t in ("user", "host", "result", "workunit", "team", "user_deleted")}


def test_delete_a_spammer_with_hosts_and_teams(ops_project):
    d = db(ops_project)
    # bob: host 2 (the XSS host), a failed result (wu 2), an in-progress one
    # made his (wu 6), a team only he is in, a host_app_version and a message
    d.execute("UPDATE result SET userid = 2, hostid = 2 WHERE workunitid = 6 AND "
              "server_state = 4")
    team = d.insert("INSERT INTO team (create_time, userid, name, nusers) "
                    "VALUES (0, 2, 'Cheap pills', 1)")
    d.execute("UPDATE user SET teamid = %s WHERE id = 2", (team,))
    d.execute("INSERT INTO host_app_version (host_id, app_version_id) VALUES (2, 1)")
    d.execute("INSERT INTO msg_to_host (create_time, hostid, variety, xml) "
              "VALUES (0, 2, 'x', '')")
    d.close()
    before = _snapshot(ops_project)
    body = ok(call(ops_project, "manage_user.php", query={"userid": 2, "delete": 1}))
    assert "Confirm: delete user bob" in body and "its 1 host(s)" in body
    assert _snapshot(ops_project) == before          # the confirmation changed nothing
    assert call(ops_project, "manage_user.php", "POST",
                form={"userid": 2, "action": "delete"}).status.startswith("403")
    now = time.time()
    body = ok(call(ops_project, "manage_user.php", "POST", form={
        "userid": 2, "action": "delete", "csrf_token": token_of(body)}))
    assert "User bob (ID 2) deleted." in body
    assert [u["id"] for u in rows(ops_project, "SELECT id FROM user")] == [1]
    assert [h["id"] for h in rows(ops_project, "SELECT id FROM host")] == [1]
    assert not rows(ops_project, "SELECT * FROM host_app_version WHERE host_id = 2")
    assert not rows(ops_project, "SELECT * FROM msg_to_host")
    assert not rows(ops_project, "SELECT * FROM team")
    assert rows(ops_project, "SELECT userid FROM user_deleted") == [{"userid": 2}]
    assert rows(ops_project, "SELECT hostid FROM host_deleted") == [{"hostid": 2}]
    res = {r["id"]: r for r in rows(ops_project, "SELECT * FROM result")}
    assert not [r for r in res.values() if r["userid"] == 2 or r["hostid"] == 2]
    moved = [r for r in res.values() if r["workunitid"] == 6 and r["server_state"] == 5]
    assert [(r["outcome"], r["validate_state"]) for r in moved] == [(7, 2)]
    wu6 = rows(ops_project, "SELECT transition_time FROM workunit WHERE id = 6")[0]
    assert abs(wu6["transition_time"] - now) < 30       # a new copy will be sent
    assert res[2]["server_state"] == 5 and res[2]["outcome"] == 3     # failed one kept
    assert len(res) == 8                                  # results stay


def test_a_user_with_credit_is_not_deleted(ops_project):
    d = db(ops_project)
    d.execute("UPDATE user SET total_credit = 12.5 WHERE id = 1")
    d.close()
    body = call(ops_project, "manage_user.php", query={"userid": 1, "delete": 1}).body
    assert "12.50 credit" in body and "confirm_delete" not in body
    resp = post(ops_project, "manage_user.php", {"userid": 1, "action": "delete"},
                query={"userid": 1})
    assert resp.status.startswith("409") and "Nothing was deleted" in resp.body
    assert len(rows(ops_project, "SELECT id FROM user")) == 2


def test_list_new_users_sorted_and_paged(ops_project):
    d = db(ops_project)
    for i in range(5):
        d.execute("INSERT INTO user (create_time, email_addr, name, authenticator) "
                  "VALUES (%s, %s, %s, %s)", (int(time.time()) - i, "n%d@x.org" % i,
                                              "new%d" % i, "a_new%d" % i))
    d.close()
    body = ok(call(ops_project, "list_new_users.php", query={"limit": 3}))
    assert re.findall(r'userid=\d+">(\w+)</a>', body) == ["new0", "new1", "new2"]
    assert "Next 3" in body and "7 users" in body
    body = ok(call(ops_project, "list_new_users.php", query={"limit": 3, "start": 6}))
    assert re.findall(r'userid=\d+">(\w+)</a>', body) == ["alice"]
    body = ok(call(ops_project, "list_new_users.php", query={"sort": "name", "order": "asc"}))
    assert re.findall(r'userid=\d+">(\w+)</a>', body)[:2] == ["alice", "bob"]
    assert call(ops_project, "list_new_users.php",
                query={"sort": "email_addr"}).status.startswith("400")


def _mail_form(**kw):
    form = {"action": "preview", "receiver": "1", "subject": "News",
            "body": "Hello USERNAME,\nwe have new work."}
    form.update(kw)
    return form


def test_mass_email_preview_then_mbox_file(ops_project):
    d = db(ops_project)
    d.execute("UPDATE user SET send_email = 1 WHERE id = 1")
    d.execute("UPDATE user SET send_email = 0 WHERE id = 2")
    d.close()
    body = ok(post(ops_project, "mass_email.php", _mail_form()))
    assert "1 user(s) will get this e-mail" in body and "Hello alice," in body
    assert not os.path.exists(os.path.join(ops_project, "mail"))     # preview sends nothing
    body = ok(call(ops_project, "mass_email.php", "POST", form=dict(
        _mail_form(action="send"), csrf_token=token_of(body))))
    assert "1 of 1 e-mail(s) delivered to the file" in body
    boxes = os.listdir(os.path.join(ops_project, "mail"))
    assert len(boxes) == 1
    msgs = list(mailbox.mbox(os.path.join(ops_project, "mail", boxes[0])))
    assert [m["To"] for m in msgs] == ["alice <alice@example.org>"]
    assert msgs[0]["Subject"] == "News" and "noreply@127.0.0.1" in msgs[0]["From"]
    assert "Hello alice,\nwe have new work." in msgs[0].get_payload(decode=True).decode()
    # a list of IDs reaches who is named, whatever send_email says (as BOINC)
    body = ok(post(ops_project, "mass_email.php", _mail_form(receiver="6", userids="2, 1")))
    assert "2 user(s)" in body


def test_mass_email_through_a_local_command(ops_project, tmp_path):
    spool = tmp_path / "spool"
    script = tmp_path / "fake_sendmail"
    script.write_text("#!/bin/sh\ncat >> %s\necho '--end--' >> %s\n" % (spool, spool))
    script.chmod(0o755)
    set_options(ops_project, email_command="%s -t -i" % script,
                email_from="Project <ops@example.org>")
    d = db(ops_project)
    d.execute("UPDATE user SET send_email = 1, total_credit = 3")
    d.close()
    form = _mail_form(receiver="3", subject="Thanks")
    body = ok(post(ops_project, "mass_email.php", form))
    body = ok(call(ops_project, "mass_email.php", "POST",
                   form=dict(form, action="send", csrf_token=token_of(body))))
    assert "2 of 2 e-mail(s) delivered to the command" in body
    text = spool.read_text()
    assert text.count("--end--") == 2 and "From: Project <ops@example.org>" in text
    assert "To: bob <bob@example.org>" in text and "Hello bob," in text


@pytest.mark.parametrize("bad", [{"subject": "News\nBcc: everyone@example.org"},
                                 {"body": "  "}, {"receiver": "9"},
                                 {"receiver": "6", "userids": "1; DROP TABLE user"}])
def test_mass_email_refuses_bad_input(ops_project, bad):
    resp = post(ops_project, "mass_email.php", _mail_form(action="send", **bad))
    assert resp.status.startswith("400") and "nothing was sent" in resp.body
    assert not os.path.exists(os.path.join(ops_project, "mail"))


# ---------------------------------------------------------------------------
# Jobs

def test_revalidate_lists_then_resets_the_ticked(ops_project):
    d = db(ops_project)
    d.execute("UPDATE result SET validate_state = 2 WHERE id = 1")       # wu 1: invalid
    d.close()
    body = ok(call(ops_project, "revalidate.php", query={"ids": "1 2"}))
    assert "1 Invalid" in body and 'name="wuid" value="1" checked' in body
    assert 'name="wuid" value="2">' in body          # nothing to redo there: not ticked
    assert rows(ops_project, "SELECT validate_state FROM result WHERE id = 1")[0][
        "validate_state"] == 2
    assert call(ops_project, "revalidate.php", "POST",
                form={"wuid": 1}).status.startswith("403")
    body = ok(call(ops_project, "revalidate.php", "POST",
                   form={"wuid": ["1", "2"], "csrf_token": token_of(body)}))
    assert "1 job(s) and 1 result(s) were marked" in body
    assert rows(ops_project, "SELECT validate_state FROM result WHERE id = 1")[0][
        "validate_state"] == 0
    assert [w["need_validate"] for w in rows(
        ops_project, "SELECT need_validate FROM workunit WHERE id IN (1, 2) ORDER BY id")] == [1, 0]


def test_revalidation_lets_a_more_permissive_validator_accept(mini_project):
    """A result the bitwise validator rejected is accepted after revalidation
    by a validator that accepts anything; results whose files are gone are
    left alone."""
    from backend_rows import add_host, add_result, add_user, add_workunit, run_pass
    from boincpy.daemons.sample_validators import BitwiseValidator, TrivialValidator
    from boincpy.db.workunit import revalidate_workunits
    d = db(mini_project)
    users = [add_user(d, n) for n in ("u1", "u2", "u3")]
    hosts = [add_host(d, u) for u in users]
    wu = add_workunit(d, "reval", 1, min_quorum=2, target_nresults=3)
    rids = [add_result(d, mini_project, wu, "reval_%d" % k, hostid=hosts[k], userid=users[k],
                       outputs=[data], claimed_credit=1.0)[0]
            for k, data in enumerate((b"42\n", b"42\n", b"41\n"))]
    run_pass(BitwiseValidator, mini_project, "--app", "example_app", "--one_pass")
    states = [d.query_value("SELECT validate_state FROM result WHERE id = %s", (r,))
              for r in rids]
    assert states == [1, 1, 2]
    gone = add_workunit(d, "gone", 1, need_validate=0)
    add_result(d, mini_project, gone, "gone_0", validate_state=2, file_delete_state=2)
    assert revalidate_workunits(d, [wu, gone]) == (1, 3)
    run_pass(TrivialValidator, mini_project, "--app", "example_app", "--one_pass")
    states = [d.query_value("SELECT validate_state FROM result WHERE id = %s", (r,))
              for r in rids]
    assert states == [1, 1, 1]
    assert d.query_value("SELECT granted_credit FROM result WHERE id = %s", (rids[2],)) > 0
    assert d.query_value("SELECT validate_state FROM result WHERE name = 'gone_0'") == 2
    d.close()


def test_assignments_listed_with_their_targets(ops_project):
    d = db(ops_project)
    now = int(time.time())
    d.execute("INSERT INTO assignment (create_time, target_id, target_type, multi, "
              "workunitid, resultid) VALUES (%s, 0, 0, 0, 3, 0), (%s, 2, 1, 0, 4, 5), "
              "(%s, 1, 2, 1, 5, 0)", (now, now, now))
    d.close()
    body = ok(call(ops_project, "assign.php"))
    assert "3 assignment(s)" in body and "All hosts" in body
    assert "Host 2 &lt;script&gt;" in body and XSS not in body
    assert "All hosts of" in body and "User 1 alice" in body
    assert "not set on this project" in body
    body = ok(call(ops_project, "assign.php", query={"target_type": 1}))
    assert "1 assignment(s)" in body
    body = ok(call(ops_project, "assign.php", query={"sort": "workunitid", "order": "asc"}))
    assert body.index("wu_3") < body.index("wu_4") < body.index("wu_5")
    assert call(ops_project, "assign.php", query={"sort": "x"}).status.startswith("400")


def test_job_times_compares_measured_flops_with_estimates(ops_project):
    d = db(ops_project)
    # two valid results of 1e12 FLOPs (1000 s at 1 GFLOPS), estimate 1e12 (fixture)
    d.execute("UPDATE result SET validate_state = 1, outcome = 1, server_state = 5, "
              "elapsed_time = 1000, flops_estimate = 1e9 WHERE id IN (1, 2)")
    d.execute("UPDATE result SET elapsed_time = 3000 WHERE id = 2")
    d.close()
    body = ok(call(ops_project, "job_times.php", query={"appid": 1}))
    assert "2.000000e+12" in body                 # mean of 1e12 and 3e12
    assert "1.414214e+12" in body                 # sample standard deviation
    assert "<td>2</td><td>2.0000e+12</td><td>1.0000e+12</td><td>2.00</td>" in body
    assert body.count("<rect") >= 2
    body = ok(call(ops_project, "job_times.php", query={"appid": 1, "quantum": "1e12"}))
    assert "<value>1.000000e+12</value>\n    <count>1</count>" in html.unescape(body)
    assert call(ops_project, "job_times.php",
                query={"appid": 1, "quantum": "1"}).status.startswith("400")
    assert call(ops_project, "job_times.php", query={"appid": 9}).status.startswith("404")
    assert "example_app" in ok(call(ops_project, "job_times.php"))


def test_app_details_and_pass_percentage(ops_project):
    d = db(ops_project)
    d.execute("UPDATE app_version SET pfc_n = 10, pfc_avg = 2, pfc_scale = 0.9")
    d.close()
    body = ok(call(ops_project, "app_details.php", query={"appid": 1}))
    assert "<td>10</td><td>0.5000</td><td>0.9000</td>" in body
    body = ok(call(ops_project, "pass_percentage_by_platform.php",
                   query={"appid": 1, "nsecs": 86400}))
    # results 1 (success, host 1) and 2 (client error at state 3, host 2): Linux both
    assert re.search(r"on Linux</td><td[^>]*>2</td><td[^>]*>50.00 %</td><td[^>]*>50.00 %"
                     r"</td>(<td[^>]*>0.00 %</td>){2}<td[^>]*>50.00 %</td>", body)


def test_host_stats_counts_platforms_cpus_gpus_libc_vbox(ops_project):
    d = db(ops_project)
    now = int(time.time())
    d.execute("DELETE FROM host")
    hosts = [("Linux Debian", "Debian 12 [6.1.0|libc 2.36 (Debian GLIBC 2.36-9)]",
              "AuthenticAMD", "[BOINC|7.20.5][CUDA|NVIDIA RTX|1|4GB|53504|300][vbox|6.1.38r1]"),
             ("Linux Ubuntu", "Ubuntu 22.04 [5.15|libc 2.35]", "GenuineIntel",
              "[BOINC|7.20.5]"),
             ("Microsoft Windows 11", "Professional x64", "GenuineIntel",
              "[BOINC|7.24.1][vbox|7.0.12]"),
             ("Darwin", "21.6.0", "Apple", "[BOINC|7.24.1]")]
    for os_name, os_version, vendor, serial in hosts:
        d.execute("INSERT INTO host (create_time, userid, rpc_time, os_name, os_version, "
                  "p_vendor, serialnum, misc) VALUES (0, 1, %s, %s, %s, %s, %s, '')",
                  (now - 60, os_name, os_version, vendor, serial))
    d.execute("INSERT INTO host (create_time, userid, rpc_time, os_name, misc) "
              "VALUES (0, 1, %s, 'Linux', '')", (now - 40 * 86400,))       # not active
    d.close()
    body = ok(call(ops_project, "host_stats.php"))
    assert "4 hosts contacted the scheduler" in body

    def count(title, key):
        part = body.split("<h2>%s</h2>" % title)[1].split("</table>")[0]
        m = re.search(r"<td>%s</td><td[^>]*>(\d+)</td>" % re.escape(key), part)
        return int(m.group(1)) if m else 0

    assert (count("Platforms", "Linux"), count("Platforms", "Windows"),
            count("Platforms", "macOS")) == (2, 1, 1)
    assert count("CPU vendors", "GenuineIntel") == 2
    assert count("GPUs", "NVIDIA (CUDA)") == 1 and count("GPUs", "none") == 3
    assert count("BOINC client versions", "7.20.5") == 2
    assert count("Linux libc versions", "2.36") == 1 and count("Linux libc versions",
                                                               "2.35") == 1
    assert count("VirtualBox versions", "6.1.38") == 1 and count("VirtualBox versions",
                                                                 "7.0.12") == 1
    assert count("libc of Linux hosts with VirtualBox", "2.36") == 1
    assert "5 hosts" in ok(call(ops_project, "host_stats.php", query={"days": 60}))


def test_size_census_page(ops_project):
    d = db(ops_project)
    d.execute("UPDATE app SET n_size_classes = 2")
    d.execute("UPDATE host SET expavg_credit = 100, on_frac = 1, active_frac = 1")
    d.execute("INSERT INTO host_app_version (host_id, app_version_id, et_n, et_avg) "
              "VALUES (1, 1, 3, 1e-9), (2, 1, 3, 1e-10)")         # 1 and 10 GFLOPS
    d.execute("UPDATE result SET size_class = 1 WHERE server_state = 2 LIMIT 3")
    d.close()
    body = ok(call(ops_project, "size_census.php"))
    assert "example_app (2 size classes)" in body and "Missing size census file" in body
    def cells(body):
        return [re.findall(r"<td[^>]*>([^<]*)</td>", r) for r in re.findall(
            r"<tr>(<td>.*?)</tr>", body.split("size classes)")[1])]

    # a census now puts the boundary at the faster host: one host in each class;
    # of the 4 unsent results 3 are of class 1, one has no class
    assert cells(body) == [["0", "---", "10 GFLOPS", "1", "0"],
                           ["1", "---", "---", "1", "3"], ["none (-1)", "", "", "", "1"]]
    with open(os.path.join(ops_project, "size_census_example_app"), "w") as f:
        f.write("5.000000e+9\n")
    body = ok(call(ops_project, "size_census.php"))
    assert cells(body)[0] == ["0", "5 GFLOPS", "10 GFLOPS", "1", "0"]
    assert call(ops_project, "size_census.php", query={"all": "x"}).status.startswith("400")


# ---------------------------------------------------------------------------
# Every page on an empty project

def test_every_page_answers_on_an_empty_project(mini_project):
    for page in sorted(PAGES):
        resp = call(mini_project, page)
        assert resp.status[0] in "24", (page, resp.status, resp.body[-1500:])
        assert "Internal error" not in resp.body, page
    for page, query in (("db_action.php", {"table": "team"}),
                        ("db_action.php", {"table": "host_app_version"}),
                        ("job_times.php", {"appid": 1}), ("app_details.php", {"appid": 1}),
                        ("pass_percentage_by_platform.php", {"appid": 1}),
                        ("size_census.php", {"all": 1}), ("revalidate.php", {"ids": "1"}),
                        ("manage_user.php", {"user": "x"})):
        resp = call(mini_project, page, query=query)
        assert resp.status.startswith("200"), (page, resp.body[-1500:])


# ---------------------------------------------------------------------------
# The public server_status.php

# The elements of BOINC's html/user/server_status.php ?xml=1 reply.
STATUS_ELEMENTS = [
    "results_ready_to_send", "results_in_progress", "workunits_waiting_for_validation",
    "workunits_waiting_for_assimilation", "workunits_waiting_for_deletion",
    "results_waiting_for_deletion", "transitioner_backlog_hours", "users_with_recent_credit",
    "users_with_credit", "users_registered_in_past_24_hours", "hosts_with_recent_credit",
    "hosts_with_credit", "hosts_registered_in_past_24_hours", "current_floating_point_speed"]
APP_ELEMENTS = ["id", "name", "unsent", "in_progress", "avg_runtime", "min_runtime",
                "max_runtime", "users"]


def _status(project, **get):
    from boincpy.web.http import Request
    from boincpy.web.server_status import handle
    return handle(load_config(str(project), aux=False), Request.of(get=get))


def test_public_status_xml_has_boincs_elements(ops_project):
    resp = _status(ops_project, xml="1")
    assert resp.content_type == "text/xml;charset=UTF-8"
    assert resp.body.startswith('<?xml version="1.0" encoding="ISO-8859-1" ?>\n<server_status>')
    root = ET.fromstring(resp.body.split("\n", 1)[1])
    assert [c.tag for c in root] == ["daemon_status", "database_file_states"]
    daemons = root.find("daemon_status")
    assert [[c.tag for c in d] for d in daemons] == [["host", "command", "status"]] * 3
    assert [d.findtext("command") for d in daemons] == ["Download server", "Upload server",
                                                       "Scheduler"]
    states = root.find("database_file_states")
    assert [c.tag for c in states] == STATUS_ELEMENTS + ["tasks_by_app"]
    assert states.findtext("results_ready_to_send") == "4"
    assert states.findtext("results_in_progress") == "2"
    app = states.find("tasks_by_app/app")
    assert [c.tag for c in app] == APP_ELEMENTS
    assert (app.findtext("name"), app.findtext("unsent"), app.findtext("avg_runtime")) == \
        ("example_app", "4", "0.04")                # 120 s rounded up to hundredths of hours
    assert "<job_counts>" in _status(ops_project, counts="1").body


def test_public_status_daemons_and_html(ops_project):
    cfg = load_config(str(ops_project))
    from boincpy.config import DaemonSpec
    write_config(str(ops_project), dict(cfg.as_options(), host=cfg.local_host),
                 [DaemonSpec("feeder -d 3"), DaemonSpec("file_deleter", disabled=True),
                  DaemonSpec("sample_bitwise_validator --app example_app", host="elsewhere")])
    open(os.path.join(ops_project, "stop_sched"), "w").close()
    root = ET.fromstring(_status(ops_project, xml="1").body.split("\n", 1)[1])
    states = {d.findtext("command"): d.findtext("status") for d in root.iter("daemon")}
    assert states == {"Download server": "running", "Upload server": "running",
                      "Scheduler": "not running", "feeder": "not running",
                      "file_deleter": "disabled"}
    d = db(ops_project)
    d.execute("UPDATE app SET user_friendly_name = %s", (XSS,))
    d.close()
    os.unlink(_cache(ops_project))
    body = _status(ops_project).body
    assert "Status of remote daemons is missing" in body
    assert XSS not in body and "&lt;script&gt;" in body
    assert "<td>Tasks ready to send</td><td>4</td>" in body


def _cache(project):
    from boincpy.web.server_status import cache_path
    return cache_path(load_config(str(project), aux=False))


def test_public_status_is_cached_an_hour(ops_project):
    first = _status(ops_project, xml="1").body
    path = _cache(ops_project)
    assert os.path.isfile(path)
    assert "/html/cache/" in path and path.endswith("/server_status.php_job_status")
    d = db(ops_project)
    d.execute("UPDATE result SET server_state = 4 WHERE server_state = 2")
    d.close()
    assert _status(ops_project, xml="1").body == first          # from the cache
    assert "<results_ready_to_send>0<" in _status(ops_project, counts="1").body   # never cached
    old = time.time() - 3601
    os.utime(path, (old, old))
    fresh = _status(ops_project, xml="1").body
    assert "<results_ready_to_send>0</results_ready_to_send>" in fresh
    assert time.time() - os.path.getmtime(path) < 60
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o660


def test_public_status_through_the_persistent_dispatch(ops_project):
    """The page as boincpy.persistent serves it in the persistent mode (WEB_PAGES)."""
    import io
    from boincpy.resident import Resident
    from boincpy.web.http import serve
    from boincpy.persistent import WEB_PAGES, page_handler
    resident = Resident(str(ops_project), persistent=True)
    try:
        out = serve(page_handler(WEB_PAGES["server_status.php"]),
                    {"REQUEST_METHOD": "GET", "QUERY_STRING": "counts=1"}, io.BytesIO(),
                    resident, "server_status.php")
    finally:
        resident.close()
    assert b"Content-Type: text/xml" in out
    assert b"<results_ready_to_send>4</results_ready_to_send>" in out
