"""The gaps the site's and community's families left between each other,
in-process through boincpy.web.user.main.handle against one made project:
show_user.php's badges, friends and profile link, team_display.php's badges
and team message link, home.php's profile and forum-preferences links;
boincpy.web.user.common's formats; the XML pages' answer while stop_web
exists; opt_out.php; a host's venue; forum_report_post.php."""

import os
import re
import time

import pytest

from boincpy import passwords
from boincpy.web.http import Request
from boincpy.web.user import common, main

EVIL = '<script>alert("x")</script>&'
NOW = int(time.time())


def call(project, page, get=None, post=None, auth=None):
    """One page in-process: (status code, body text, response)."""
    env = {"REMOTE_ADDR": "127.0.0.1", "SCRIPT_NAME": "/p/" + page, "HTTP_HOST": "127.0.0.1",
           "QUERY_STRING": "&".join("%s=%s" % kv for kv in (get or {}).items())}
    if auth:
        env["HTTP_COOKIE"] = "auth=" + auth
    req = Request.of(method="POST" if post is not None else "GET", get=get or {},
                     post=post or {}, environ=env)
    resp = main.handle(page, req, project.root)
    return int((resp.status or "200").split()[0]), resp.text, resp


def ok(project, page, get=None, auth=None):
    code, text, _ = call(project, page, get, auth=auth)
    assert code == 200, text[-2000:]
    assert "Traceback" not in text
    return text


def form_token(project, page, get, auth, action):
    text = ok(project, page, get, auth)
    m = re.search(r'<form[^>]*action="%s".*?name="csrf_token" value="([^"]+)"'
                  % re.escape(action), text, re.S)
    assert m, "no form posting to %s" % action
    return m.group(1)


def add_user(db, name, teamid=0):
    auth = passwords.random_string()
    email = re.sub(r"[^a-z0-9]", "", name.lower())[:20] + "%d@example.com" % len(name)
    uid = db.insert(
        "INSERT INTO user (create_time, email_addr, name, authenticator, country, postal_code,"
        " total_credit, expavg_credit, global_prefs, project_prefs, teamid, venue, url,"
        " signature, cross_project_id, passwd_hash, send_email, show_hosts) VALUES (%s, %s,"
        " %s, %s, 'Germany', '', 10, 1, '', '', %s, '', '', '', '0', '', 1, 0)",
        (NOW - 86400, email, name, auth, teamid))
    return uid, auth


class Site:
    pass


@pytest.fixture(scope="module")
def site(db_root_params):
    from conftest import make_test_project, remove_test_project
    project = make_test_project(db_root_params)
    try:
        s = Site()
        s.p = project
        s.db = db = project.connect()
        s.alice, s.alice_auth = add_user(db, "Alice " + EVIL)
        s.bob, s.bob_auth = add_user(db, "Bob")
        s.team = db.insert("INSERT INTO team (create_time, userid, name, name_lc, url, type, "
                           "name_html, description, nusers, country, total_credit, "
                           "expavg_credit) VALUES (0, %s, %s, 'x', '', 2, '', '', 2, 'None', "
                           "500, 50)", (s.alice, "Team " + EVIL))
        db.execute("UPDATE user SET teamid = %s WHERE id IN (%s, %s)",
                   (s.team, s.alice, s.bob))
        yield s
    finally:
        remove_test_project(project)


# ---------------------------------------------------------------------------
# stop_web

XML_REQUESTS = [("show_user.php", {"userid": "1", "format": "xml"}),
                ("team_email_list.php", {"teamid": "1", "xml": "1"}),
                ("apps.php", {"xml": "1"}),
                ("team_search.php", {"xml": "1"}),
                ("team_delta.php", {"teamid": "1", "xml": "1"})]


def test_stop_web_xml_pages_answer_boincs_error(site):
    stop = os.path.join(site.p.root, "stop_web")
    open(stop, "w").close()
    try:
        for page, get in XML_REQUESTS:
            code, text, resp = call(site.p, page, get)
            assert code == 200, page
            assert resp.content_type.startswith("text/xml"), page
            assert text == ('<?xml version="1.0" encoding="ISO-8859-1" ?>\n<error>\n'
                            '    <error_num>-183</error_num>\n'
                            '    <error_msg>Project is temporarily offline</error_msg>\n'
                            '</error>\n'), page
        # the same pages' HTML forms, the other pages and the feeds: the 503 page
        for page, get in [("show_user.php", {"userid": "1"}), ("apps.php", {}),
                          ("team_search.php", {}), ("home.php", {}), ("rss_main.php", {}),
                          ("notices.php", {})]:
            code, text, resp = call(site.p, page, get)
            assert code == 503, page
            assert "down for maintenance" in text and "<error_num>" not in text, page
    finally:
        os.remove(stop)
    code, text, _ = call(site.p, "apps.php", {"xml": "1"})
    assert code == 200 and "<app_versions>" in text or "<error" not in text
