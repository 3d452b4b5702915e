"""Data and helpers for the ops page tests: a small project with every kind of
row the pages show, including hostile text (HTML in a host name and in a
stderr_out), and a way to call a page in-process as Apache would run it.
"""

import time

import MySQLdb
import pytest

from boincpy.web.ops.main import handle
from site_util import db_rows  # noqa: F401  (the ops tests import it from here)
from site_util import wire_request

XSS = "<script>alert(1)</script>"
ADMIN = "admin"

STDERR_FAIL = """<core_client_version>7.20.5</core_client_version>
<![CDATA[
<message>
process exited with code 1 (0x1, -255)</message>
<stderr_txt>
%s
</stderr_txt>
]]>""" % XSS


def _conn(params, db):
    return MySQLdb.connect(db=db, **params)


def populate(db_root_params, dbname, now=None):
    """Rows for the pages: 1 platform, 1 app + 1 version, 2 users, 2 hosts
    (one named with HTML), 6 workunits and their results in every state."""
    now = int(now or time.time())
    conn = _conn(db_root_params, dbname)
    cur = conn.cursor()
    # The platform and app may exist already (mini_project); ids are then 1.
    cur.execute("INSERT IGNORE INTO platform (create_time, name, user_friendly_name) "
                "VALUES (0, 'x86_64-pc-linux-gnu', 'Linux on x86_64')")
    cur.execute("INSERT IGNORE INTO app (create_time, name, user_friendly_name) "
                "VALUES (0, 'example_app', 'Example app')")
    cur.execute("SELECT COUNT(*) FROM app")
    assert cur.fetchone()[0] == 1, "populate() expects a project with only example_app"
    cur.execute("INSERT INTO app_version (create_time, appid, version_num, platformid, xml_doc, "
                "plan_class) VALUES (%s, 1, 100, 1, '<app_version/>', '')", (now - 5000,))
    cur.execute("INSERT INTO user (create_time, email_addr, name, authenticator, "
                "cross_project_id, passwd_hash) VALUES (%s, 'alice@example.org', 'alice', "
                "'auth1', 'x', 'y')", (now - 9000,))
    cur.execute("INSERT INTO user (create_time, email_addr, name, authenticator, "
                "cross_project_id, passwd_hash) VALUES (%s, 'bob@example.org', 'bob', "
                "'auth2', 'x', 'y')", (now - 8000,))
    cur.execute("INSERT INTO host (create_time, userid, domain_name, last_ip_addr, os_name, "
                "os_version, p_model, p_ncpus, rpc_time, rpc_seqno, misc) VALUES "
                "(%s, 1, 'goodhost', '10.0.0.1', 'Linux Debian', '12', 'EPYC', 2, %s, 5, '')",
                (now - 7000, now - 100))
    cur.execute("INSERT INTO host (create_time, userid, domain_name, last_ip_addr, os_name, "
                "os_version, p_model, p_ncpus, rpc_time, rpc_seqno, misc) VALUES "
                "(%s, 2, %s, '10.0.0.2', 'Linux Debian', '12', 'Xeon', 4, %s, 9, '')",
                (now - 6000, XSS, now - 200))
    # wu 1: done, valid; wu 2: failed result (client error) + one in progress;
    # wu 3-5: unsent only (cancel candidates); wu 6: one sent, one unsent.
    for i in range(1, 7):
        cur.execute("INSERT INTO workunit (create_time, appid, name, xml_doc, batch, "
                    "rsc_fpops_est, rsc_fpops_bound, rsc_memory_bound, rsc_disk_bound, "
                    "transition_time, delay_bound, min_quorum, target_nresults, "
                    "max_error_results, max_total_results, max_success_results, "
                    "result_template_file) VALUES (%s, 1, %s, '<workunit/>', %s, 1e12, 1e13, "
                    "1e8, 1e9, %s, 604800, 1, 1, 3, 5, 3, 'templates/example_app_out')",
                    (now - 5000 + i, "wu_%d" % i, 7 if i >= 3 else 0, 2147483647))
    results = [
        # (wu, state, outcome, client_state, validate, host, user, exit, stderr)
        (1, 5, 1, 5, 1, 1, 1, 0, "<stderr_txt>ok</stderr_txt>"),
        (2, 5, 3, 3, 0, 2, 2, -186, STDERR_FAIL),
        (2, 4, 0, 0, 0, 1, 1, 0, ""),
        (3, 2, 0, 0, 0, 0, 0, 0, ""),
        (4, 2, 0, 0, 0, 0, 0, 0, ""),
        (5, 2, 0, 0, 0, 0, 0, 0, ""),
        (6, 4, 0, 0, 0, 1, 1, 0, ""),
        (6, 2, 0, 0, 0, 0, 0, 0, ""),
    ]
    for n, (wu, state, outcome, cstate, vstate, host, user, exit_status, stderr) in \
            enumerate(results):
        sent = now - 3000 if state >= 4 else 0
        received = now - 1000 if state == 5 else 0
        cur.execute("INSERT INTO result (create_time, workunitid, server_state, outcome, "
                    "client_state, validate_state, hostid, userid, sent_time, received_time, "
                    "report_deadline, name, xml_doc_in, stderr_out, appid, exit_status, "
                    "app_version_id, cpu_time, elapsed_time, granted_credit) VALUES "
                    "(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, '<result/>', %s, 1, %s, "
                    "%s, 100, 120, %s)",
                    (now - 4000, wu, state, outcome, cstate, vstate, host, user, sent, received,
                     sent + 604800 if sent else 0, "wu_%d_%d" % (wu, n), stderr, exit_status,
                     1 if host else 0, 5.0 if vstate == 1 else 0))
    cur.execute("UPDATE workunit SET canonical_resultid = 1, assimilate_state = 2 WHERE id = 1")
    conn.commit()
    conn.close()
    return now


@pytest.fixture
def ops_project(mini_project, db_root_params):
    """mini_project with the rows above; returns (project dir, db name)."""
    from boincpy.config import load_config
    cfg = load_config(str(mini_project))
    populate(db_root_params, cfg.db_name)
    return mini_project


def call(project, page, method="GET", query=None, form=None, user=ADMIN, headers=None,
         now=None):
    """Run an ops page in-process; returns the Response."""
    auth = {"REMOTE_USER": user, "AUTH_TYPE": "Basic"} if user else {}
    req = wire_request(page, method, query, form, "/test_ops/", None,
                       headers=dict(auth, **(headers or {})))
    return handle(page, req, str(project), now)
