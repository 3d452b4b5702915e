"""Hostile input, hand-written: each defect class of issue 15 with a case that
failed before its fix, against the real parts (MariaDB, the in-process
scheduler with the feeder's real job array, the upload handler, the account
web RPCs, the ops pages).

The property everywhere: a well-formed reply or page, no traceback, nothing
changed that should not be, and the next normal request still served.
(tests/test_fuzz.py feeds the same entry points generated input.)
"""

import io
import os
import re
import time
import xml.etree.ElementTree as ET

import pytest

from boincpy import upload
from boincpy.config import load_config
from boincpy.log import MessageLog, SchedLog
from boincpy.sched.handler import handle_request
from boincpy.web import rpc
from boincpy.web.http import Request
from ops_fixtures import ADMIN, call as ops_call, db_rows, ops_project  # noqa: F401
from tests.sched_env import CLIENT, fixture_text, sched_env  # noqa: F401

ENV = {"REMOTE_ADDR": "192.0.2.7", "REQUEST_METHOD": "POST"}
INJECT = "x</name></result_ack><result_abort><name>victim_0</name></result_abort><result_ack><name>y"
# what the server may put at the top of a reply; anything else was injected
REPLY_TOP = {
    "scheduler_version", "dont_use_dcf", "master_url", "request_delay", "message", "project_name",
    "userid", "user_name", "user_total_credit", "user_expavg_credit", "user_create_time",
    "email_hash", "cross_project_id", "external_cpid", "hostid", "host_total_credit",
    "host_expavg_credit", "host_venue", "host_create_time", "team_name", "teamid",
    "result_ack", "result_abort", "result_abort_if_not_started", "code_sign_key",
    "code_sign_key_signature", "message_ack", "delete_file_info", "gui_urls", "no_rsc_apps",
    "global_preferences", "project_preferences", "app", "app_version", "file_info",
    "workunit", "result", "project_is_down", "nucleus_only", "send_time_stats_log",
    "next_rpc_delay", "ended"}


# -- the scheduler ------------------------------------------------------------------

def request(*parts, **subs):
    """A captured request with element texts replaced (name=value; None removes it)."""
    text = fixture_text(CLIENT, *parts).decode()
    if "<code_sign_key>" in text:
        start = text.index("<code_sign_key>")
        end = text.index("</code_sign_key>") + len("</code_sign_key>")
        text = text[:start] + text[end:]
    for name, value in subs.items():
        pattern = re.compile(r"<%s>.*?</%s>\n?" % (name, name), re.S)
        assert pattern.search(text), name
        text = pattern.sub(lambda m: "" if value is None else "<%s>%s</%s>\n"
                           % (name, value, name), text, count=1)
    return text.encode()


def sched(env, data, environ=None):
    """(root element, raw reply, log text) of one in-process scheduler request;
    the reply must be well-formed XML and the log free of tracebacks."""
    log = SchedLog(io.StringIO(), 3)
    out = handle_request(env.cfg, data, dict(environ or ENV), job_array=env.job_array(),
                         log=log)
    text = log.stream.getvalue()
    assert "Traceback" not in text and "Scheduler failed" not in text, text[-3000:]
    raw = out.decode()
    header, _, xml = raw.partition("\n\n")
    assert header == "Content-type: text/xml", raw[:200]
    root = ET.fromstring(xml)
    assert root.tag == "scheduler_reply"
    extra = {el.tag for el in root} - REPLY_TOP
    assert not extra, "elements the server never sends: %s" % extra
    return root, raw, text


def attach(env, **subs):
    return sched(env, request("cycle", "02_sched_initial_hostid0.body.xml", **subs))


def normal_request_served(env):
    root, _, _ = sched(env, request("no_work", "03_sched_workfetch_hostid1.body.xml",
                                    rpc_seqno=99))
    assert root.findtext("hostid") is None or root.findtext("hostid") == "1"
    assert "Server error" not in "".join(m.text or "" for m in root.findall("message"))
    return root


def result_block(name, stderr="ok\n", exit_status=0):
    return ("<result>\n    <name>%s</name>\n    <final_cpu_time>1.0</final_cpu_time>\n"
            "    <final_elapsed_time>2.0</final_elapsed_time>\n"
            "    <exit_status>%d</exit_status>\n    <state>5</state>\n"
            "    <app_version_num>100</app_version_num>\n"
            "<stderr_out>\n%s</stderr_out>\n</result>\n" % (name, exit_status, stderr))


def with_results(data, *blocks):
    text = data.decode()
    i = text.index("</scheduler_request>")
    return (text[:i] + "".join(blocks) + text[i:]).encode()


def test_reported_result_names_cannot_inject_reply_elements(sched_env):
    env = sched_env
    attach(env)
    data = with_results(request("no_work", "03_sched_workfetch_hostid1.body.xml", rpc_seqno=1),
                        result_block(INJECT.replace("<", "&lt;")))
    root, raw, _ = sched(env, data)
    assert [a.findtext("name") for a in root.findall("result_ack")] == [INJECT]
    assert root.find("result_abort") is None
    normal_request_served(env)


def test_other_results_names_are_escaped_in_aborts(sched_env):
    env = sched_env
    env.set_options(send_result_abort=1)
    attach(env)
    evil = "a</name></result_abort><result_ack><name>z"
    data = request("no_work", "03_sched_workfetch_hostid1.body.xml", rpc_seqno=1).decode()
    data = data.replace("</scheduler_request>",
                        "<other_results>\n<other_result>\n<name>%s</name>\n</other_result>\n"
                        "</other_results>\n</scheduler_request>" % evil.replace("<", "&lt;"))
    root, _, _ = sched(env, data.encode())
    assert [a.findtext("name") for a in root.findall("result_abort")] == [evil]
    assert root.find("result_ack") is None


def test_volunteer_fields_cannot_inject_reply_elements(sched_env):
    """User name (in gui_urls.xml), host venue, team name, sticky file names."""
    env = sched_env
    evil = "</user_name><project_is_down/><x>"
    (env.root / "gui_urls.xml").write_text(
        "<gui_urls>\n<gui_url>\n<name>Hello <user_name/> of <team_name/></name>\n"
        "<url><master_url/>home.php</url>\n</gui_url>\n</gui_urls>\n")
    (env.root / "file_delete_regex").write_text(".*\n")
    team = env.execute("INSERT INTO team (userid, name, name_lc) VALUES (1, %s, 'evil')",
                       ("</team_name><ended>1</ended>",))
    env.execute("UPDATE user SET name = %s, teamid = %s WHERE id = 1", (evil, team))
    attach(env)
    env.execute("UPDATE host SET venue = %s", ("</host_venue><project_is_down/>",))
    data = request("no_work", "03_sched_workfetch_hostid1.body.xml", rpc_seqno=1).decode()
    data = data.replace("</scheduler_request>",
                        "<file_info>\n<name>f&lt;/delete_file_info&gt;&lt;ended/&gt;</name>\n"
                        "<sticky/>\n</file_info>\n</scheduler_request>")
    root, _, _ = sched(env, data.encode())
    assert root.find("project_is_down") is None and root.find("ended") is None
    assert root.findtext("user_name") == evil
    assert root.findtext("host_venue") == "</host_venue><project_is_down/>"
    assert root.findtext("team_name") == "</team_name><ended>1</ended>"
    assert root.find("gui_urls/gui_url/name").text == \
        "Hello %s of </team_name><ended>1</ended>" % evil
    assert [e.text for e in root.findall("delete_file_info")] == ["f</delete_file_info><ended/>"]


def test_host_fields_too_big_for_their_columns_are_cut_and_the_rpc_goes_on(sched_env):
    env = sched_env
    long_name = "h" * 300
    root, _, log = attach(env, domain_name=long_name, p_ncpus="99999999999",
                          m_nbytes="1e999", p_fpops="nan")
    assert root.findtext("hostid") == "1"
    host = env.row("SELECT * FROM host WHERE id = 1")
    assert host["domain_name"] == long_name[:254]
    assert host["p_ncpus"] <= 1 and host["m_nbytes"] == 0 and host["p_fpops"] == 0
    assert "host.domain_name cut to 254 characters" in log
    # a proxy's address longer than the column
    root, _, _ = sched(env, request("no_work", "03_sched_workfetch_hostid1.body.xml",
                                    rpc_seqno=1),
                       dict(ENV, HTTP_X_FORWARDED_FOR="10.0.0.1, " * 60))
    assert len(env.row("SELECT external_ip_addr FROM host")["external_ip_addr"]) == 254
    normal_request_served(env)


def test_stderr_larger_than_its_column_is_cut_and_the_result_acknowledged(sched_env):
    env = sched_env
    attach(env)
    now = int(time.time())
    env.add_job("big", state=4, hostid=1, userid=1, sent_time=now - 100,
                report_deadline=now + 86400)
    stderr = ("line of stderr \u00e9\n" * 8000)           # ~136 kB of UTF-8
    data = with_results(request("no_work", "03_sched_workfetch_hostid1.body.xml", rpc_seqno=1),
                        result_block("big_0", stderr=stderr))
    root, _, log = sched(env, data)
    assert [a.findtext("name") for a in root.findall("result_ack")] == ["big_0"]
    row = env.row("SELECT server_state, outcome, stderr_out FROM result WHERE name = 'big_0'")
    assert row["server_state"] == 5 and row["outcome"] == 1
    # cut at a character boundary, within the column's bytes
    assert len(row["stderr_out"].encode()) <= 65535
    assert len(row["stderr_out"]) > 30000
    assert ("\n" + stderr).startswith(row["stderr_out"])
    assert "result.stderr_out cut to 65535 bytes" in log
    # reported again (the client missed the ack): acknowledged, not written twice
    root, _, _ = sched(env, with_results(
        request("no_work", "03_sched_workfetch_hostid1.body.xml", rpc_seqno=2),
        result_block("big_0", stderr=stderr)))
    assert [a.findtext("name") for a in root.findall("result_ack")] == ["big_0"]


def test_deep_and_entity_laden_requests_get_a_clear_error(sched_env):
    env = sched_env
    attach(env)
    before = env.snapshot()
    deep = b"<scheduler_request>\n" + b"<a>" * 5000 + b"</a>" * 5000 + b"</scheduler_request>\n"
    root, _, _ = sched(env, deep)
    assert "nested more than" in root.findtext("message")
    # an entity declaration is text to this parser, not an expansion bomb
    bomb = (b'<?xml version="1.0"?>\n<!DOCTYPE x [<!ENTITY a "' + b"A" * 1000 + b'">]>\n'
            + request("no_work", "03_sched_workfetch_hostid1.body.xml", rpc_seqno=1))
    sched(env, bomb.replace(b"<domain_name>", b"<domain_name>&a;&a;&a;"))
    assert env.snapshot()["result"] == before["result"]
    normal_request_served(env)


def test_another_users_host_id_gets_a_host_of_its_own(sched_env):
    """Naming another account's host id with one's own key neither reads nor
    changes that host (BOINC: inconsistent host ID; creating new host)."""
    env = sched_env
    attach(env)                                          # host 1, user 1 (the client's key)
    victim = env.add_user("f" * 32, name="victim", email="victim@example.com")
    vhost = env.add_host(victim, domain_name="victim-host")
    before = env.row("SELECT * FROM host WHERE id = %s", (vhost,))
    root, _, _ = sched(env, request("no_work", "03_sched_workfetch_hostid1.body.xml",
                                    hostid=vhost, rpc_seqno=5))
    assert root.findtext("hostid") not in (None, str(vhost))
    after = env.row("SELECT * FROM host WHERE id = %s", (vhost,))
    before.pop("mod_time", None)
    after.pop("mod_time", None)
    assert after == before


# -- the upload handler ---------------------------------------------------------------

def _upload_body(name, data, nbytes, offset="0", max_nbytes="5000000"):
    return ("<data_server_request>\n<core_client_major_version>7</core_client_major_version>\n"
            "<file_upload>\n<file_info>\n<name>%s</name>\n<max_nbytes>%s</max_nbytes>\n"
            "</file_info>\n<nbytes>%s</nbytes>\n<md5_cksum>0</md5_cksum>\n<offset>%s</offset>\n"
            "<data>\n" % (name, max_nbytes, nbytes, offset)).encode() + data


def _serve_upload(cfg, body):
    log = MessageLog(io.StringIO(), 3)
    reply = upload.handle_request(cfg, io.BytesIO(body), len(body), log)
    assert "Traceback" not in log.stream.getvalue()
    assert reply.startswith("Content-type: text/plain\n\n")
    root = ET.fromstring(reply.split("\n\n", 1)[1])
    assert root.tag == "data_server_reply"
    return int(root.findtext("status")), root.findtext("message"), reply


def _upload_files(cfg):
    out = []
    for dirpath, _, files in os.walk(cfg.upload_dir):
        out += [os.path.join(dirpath, f) for f in files]
    return sorted(out)


@pytest.fixture
def upload_cfg(mini_project):
    cfg = load_config(str(mini_project))
    cfg.__dict__.update(ignore_upload_certificates=True)
    return cfg


@pytest.mark.parametrize("field,value", [("nbytes", "inf"), ("nbytes", "nan"),
                                         ("nbytes", "1e999"), ("offset", "nan"),
                                         ("offset", "-inf"), ("max_nbytes", "inf")])
def test_upload_with_non_finite_numbers_is_refused_and_leaves_nothing(upload_cfg, field, value):
    cfg = upload_cfg
    cfg.__dict__.update(ignore_upload_certificates=(field != "max_nbytes"))
    args = {"nbytes": "10", "offset": "0", "max_nbytes": "5000000", field: value}
    status, message, _ = _serve_upload(cfg, _upload_body("out_1", b"0123456789", **args))
    assert status == -1 and ("bad %s" % field in message or "signature" in message)
    assert _upload_files(cfg) == []
    cfg.__dict__.update(ignore_upload_certificates=True)
    assert _serve_upload(cfg, _upload_body("out_1", b"0123456789", "10"))[0] == 0


def test_upload_refused_for_its_offset_leaves_no_part_file(upload_cfg):
    cfg = upload_cfg
    status, message, _ = _serve_upload(cfg, _upload_body("out_2", b"tail", "50", offset="46"))
    assert status == 1 and "offset" in message
    assert _upload_files(cfg) == []
    # an existing partial upload is kept when a resume asks for too much
    status, _, _ = _serve_upload(cfg, _upload_body("out_3", b"abc", "10"))
    assert status == 1                                   # EOF: 3 of 10 bytes, kept to resume
    kept = _upload_files(cfg)
    assert len(kept) == 1 and kept[0].endswith(".out_3.part")
    status, _, _ = _serve_upload(cfg, _upload_body("out_3", b"x", "10", offset="9"))
    assert status == 1 and _upload_files(cfg) == kept
    assert _serve_upload(cfg, _upload_body("out_3", b"defghij", "10", offset="3"))[0] == 0


def test_upload_reply_escapes_the_client_file_name(upload_cfg):
    status, message, reply = _serve_upload(
        upload_cfg, _upload_body("a/x&y]]>z", b"x", "1"))
    assert status == -1 and message == "file_upload_handler: invalid filename: a/x&y]]>z"


# -- the account web RPCs ---------------------------------------------------------------

def web(project, name, **params):
    cfg = load_config(str(project))
    resp = rpc.handle(name, cfg, Request.of(method="GET", get=params,
                                            environ={"REMOTE_ADDR": "192.0.2.9"}))
    assert not resp.status.startswith("5"), resp.body
    return resp


@pytest.mark.parametrize("name,params", [
    ("show_user", {"userid": "1e999", "format": "xml"}),
    ("show_user", {"userid": "1e300", "format": "xml"}),
    ("show_user", {"userid": "-9" * 30}),
    ("team_lookup", {"team_id": "1e999"}),
    ("team_lookup", {"team_ids": "1e999,1e300,nan,5"}),
])
def test_public_pages_answer_out_of_range_numbers_without_a_server_error(mini_project, name,
                                                                       params):
    resp = web(mini_project, name, **params)
    if resp.content_type.startswith("text/xml"):
        body = resp.body.split("?>", 1)[-1]
        ET.fromstring(body)


# -- the ops pages: CSRF on every state-changing form ------------------------------------

# (page, form fields) of every action; the token is added or not by the test
OPS_ACTIONS = [
    ("cancel_wu_action.php", {"wuid1": "1", "wuid2": "6"}),
    ("cancel_workunits_action.php", {"wuid": ["1", "2"]}),
    ("transition_all.php", {}),
    ("clear_host.php", {"hostid": "1"}),
    ("add_user.php", {"name": "Mallory", "email": "m@example.com", "password": "secret pw"}),
    ("manage_apps.php", {"action": "add", "name": "evil_app", "user_friendly_name": "Evil"}),
    ("manage_apps.php", {"action": "update", "id": "1", "deprecated": "1", "weight": "1"}),
    ("manage_app_versions.php", {"action": "update", "id": "1", "deprecated": "1"}),
]
_TABLES = ("app", "app_version", "user", "host", "workunit", "result")


def _ops_state(project, db_root_params):
    dbname = load_config(str(project)).db_name
    state = {}
    for table in _TABLES:
        rows = db_rows(db_root_params, dbname, "SELECT * FROM %s ORDER BY id" % table)
        state[table] = [{k: v for k, v in r.items() if k != "mod_time"} for r in rows]
    return state


@pytest.mark.parametrize("page,fields", OPS_ACTIONS, ids=lambda x: str(x)[:40])
@pytest.mark.parametrize("how", ["no token", "token of another form", "forged origin"])
def test_every_ops_action_refuses_a_forged_post(ops_project, db_root_params, page, fields, how):
    before = _ops_state(ops_project, db_root_params)
    form, headers = dict(fields), {}
    if how == "token of another form":
        m = re.search(r'name="csrf_token" value="([^"]+)"',
                      ops_call(ops_project, "transition_all.php" if page != "transition_all.php"
                               else "clear_host.php").body)
        form["csrf_token"] = m.group(1)
    elif how == "forged origin":
        page_body = ops_call(ops_project, page).body
        m = re.search(r'name="csrf_token" value="([^"]+)"', page_body)
        form["csrf_token"] = m.group(1) if m else ""
        headers = {"HTTP_ORIGIN": "http://evil.example"}
    resp = ops_call(ops_project, page, "POST", form=form, headers=headers, user=ADMIN)
    assert resp.status.startswith(("403", "405")), (resp.status, resp.body[-500:])
    assert _ops_state(ops_project, db_root_params) == before
