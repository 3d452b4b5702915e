"""Badges: bin/badge_assign's percentile rules (BOINC's sample
badge_assign.php) on a population of users and teams, the rows it writes
(badge, badge_user, badge_team as BOINC's util_ops.inc writes them), the
pictures on the user's and team's pages (boincpy.web.user.badges) and the
ops page badge_admin.php (add, edit, delete; form tokens; hostile values)."""

import io
import re
import secrets
import time
from urllib.parse import urlencode

import pytest

from boincpy.config import load_config
from boincpy.log import MessageLog
from boincpy.web.http import read_request
from boincpy.web.ops.main import handle as ops_handle
from site_util import execute, module_project, rows

XSS = '<script>alert("x")</script>'


@pytest.fixture(scope="module")
def site(db_root_params):
    with module_project(db_root_params, test_app=False) as project:
        yield project


def add_user(site, expavg, total=None):
    return execute(site, "INSERT INTO user (create_time, email_addr, name, authenticator, "
                         "passwd_hash, global_prefs, project_prefs, venue, cross_project_id, "
                         "expavg_credit, total_credit) VALUES (1, %s, %s, %s, '', '', '', '', "
                         "'', %s, %s)",
                   ("u%s@example.com" % secrets.token_hex(6), "user " + secrets.token_hex(6),
                    secrets.token_hex(16),
                    expavg, expavg * 10 if total is None else total))


def add_team(site, expavg, total=None):
    return execute(site, "INSERT INTO team (userid, name, name_lc, url, type, name_html, "
                         "description, nusers, country, create_time, expavg_credit, "
                         "total_credit) VALUES (1, %s, %s, '', 1, '', '', 0, '', 1, %s, %s)",
                   ("team " + secrets.token_hex(6), "t" + secrets.token_hex(6), expavg,
                    expavg * 10 if total is None else total))


def run_assign(site, kind, now, dry_run=False):
    from boincpy.db import connect
    from boincpy.tools import community
    db = connect(load_config(site.root))
    out = io.StringIO()
    try:
        counts = community.assign_badges(db, kind, MessageLog(out), now=now, dry_run=dry_run)
    finally:
        db.close()
    return counts, out.getvalue()


def holders(site, kind):
    """{holder id: badge name}."""
    table, column = ("badge_user", "user_id") if kind == "user" else ("badge_team", "team_id")
    return {r["holder"]: r["name"] for r in rows(
        site, "SELECT h.%s AS holder, b.name FROM %s h JOIN badge b ON b.id = h.badge_id"
        % (column, table))}


@pytest.fixture(scope="module")
def population(site):
    """100 users with recent credit 2..101, some without recent credit, one
    with no credit at all; 20 teams with 2..21."""
    users = {add_user(site, float(c)): c for c in range(2, 102)}
    idle = add_user(site, 0.5)
    never = add_user(site, 0.0, total=0.0)
    teams = {add_team(site, float(c)): c for c in range(2, 22)}
    return users, idle, never, teams


def test_badge_assign_percentiles_on_users(site, population):
    users, idle, never, _ = population
    now = int(time.time())
    counts, log = run_assign(site, "user", now, dry_run=True)
    assert counts == {0: 1, 1: 4, 2: 20, None: 76}
    assert not rows(site, "SELECT * FROM badge_user")
    assert not rows(site, "SELECT * FROM badge WHERE name LIKE 'user_pct_%%'")
    counts, log = run_assign(site, "user", now)
    assert counts == {0: 1, 1: 4, 2: 20, None: 76}
    assert "thresholds for user badges: 101.00 97.00 77.00" in log
    badges = {r["name"]: r for r in rows(site, "SELECT * FROM badge")}
    for i, (pct, image) in enumerate(((1, "pct_1.png"), (5, "pct_5.png"), (25, "pct_25.png"))):
        b = badges["user_pct_%d" % i]
        assert b["title"] == "Top %d%% in average credit" % pct
        assert b["image_url"] == "img/" + image and b["type"] == 0
        assert b["create_time"] == now
    held = holders(site, "user")
    expect = {uid: ("user_pct_0" if c >= 101 else "user_pct_1" if c >= 97 else "user_pct_2")
              for uid, c in users.items() if c >= 77}
    assert held == expect
    assert idle not in held and never not in held
    # one badge per user, with BOINC's times
    assert all(r["create_time"] == now and r["reassign_time"] == now
               for r in rows(site, "SELECT * FROM badge_user"))


def test_badge_assign_moves_badges_when_credit_changes(site, population):
    users, _, _, _ = population
    first = int(time.time())
    run_assign(site, "user", first)
    top = next(uid for uid, c in users.items() if c == 101)
    low = next(uid for uid, c in users.items() if c == 10)
    execute(site, "UPDATE user SET expavg_credit = 1000 WHERE id = %s", (low,))
    execute(site, "UPDATE user SET expavg_credit = 3 WHERE id = %s", (top,))
    later = first + 86400
    run_assign(site, "user", later)
    held = holders(site, "user")
    assert held[low] == "user_pct_0"
    assert top not in held
    # a badge kept is reassigned (new reassign_time), its create_time kept
    kept = next(uid for uid, c in users.items() if c == 80)
    row = rows(site, "SELECT * FROM badge_user WHERE user_id = %s", (kept,))[0]
    assert row["reassign_time"] == later and row["create_time"] <= first
    assert len(rows(site, "SELECT * FROM badge WHERE name LIKE 'user_pct_%%'")) == 3
    execute(site, "UPDATE user SET expavg_credit = 10 WHERE id = %s", (low,))
    execute(site, "UPDATE user SET expavg_credit = 101 WHERE id = %s", (top,))
    run_assign(site, "user", later + 1)


def test_badge_assign_on_teams(site, population):
    _, _, _, teams = population
    counts, log = run_assign(site, "team", int(time.time()))
    # 20 teams: 1% -> index 19 (21), 5% -> 19 (21), 25% -> 15 (17)
    assert counts == {0: 1, 2: 4, None: 15}
    held = holders(site, "team")
    assert {tid for tid, name in held.items() if name == "team_pct_0"} == {
        tid for tid, c in teams.items() if c == 21}
    assert rows(site, "SELECT type FROM badge WHERE name = 'team_pct_0'")[0]["type"] == 1


def test_badge_assign_with_nobody_changes_nothing(db_root_params):
    from conftest import make_test_project, remove_test_project
    project = make_test_project(db_root_params, test_app=False, ops=False)
    try:
        counts, log = run_assign(project, "user", int(time.time()))
        assert counts == {} and "no user has recent average credit above 1" in log
    finally:
        remove_test_project(project)


# ---------------------------------------------------------------------------
# Pictures on pages

def test_badges_html_escapes_and_refuses_odd_urls(site):
    from boincpy.db import connect
    from boincpy.web.user.badges import badges_html, team_badges_html
    uid = add_user(site, 0.0, total=0.0)
    now = time.time()
    for title, image in ((XSS, "img/pct_1.png"), ("js", "javascript:alert(1)"),
                         ("proto", "//evil.example/x.png"), ("up", "../../keys/x"),
                         ("quote", 'img/a.png" onerror="x'), ("far", "https://e.org/b.png")):
        bid = execute(site, "INSERT INTO badge (create_time, type, name, title, description, "
                            "image_url, level, tags, sql_rule) VALUES (%s, 0, %s, %s, '', %s, "
                            "'', '', '')", (now, "t_" + secrets.token_hex(4), title, image))
        execute(site, "INSERT INTO badge_user (badge_id, user_id, create_time, reassign_time) "
                      "VALUES (%s, %s, %s, %s)", (bid, uid, now, now))
    db = connect(load_config(site.root))
    try:
        html = str(badges_html(db, uid))
        assert str(badges_html(db, 999999)) == "" and str(team_badges_html(db, 999999)) == ""
    finally:
        db.close()
    assert html.count("<img") == 2
    assert 'src="img/pct_1.png"' in html and 'src="https://e.org/b.png"' in html
    assert "<script" not in html and "&lt;script&gt;" in html
    assert "javascript:" not in html and "evil.example" not in html and "onerror" not in html


# ---------------------------------------------------------------------------
# badge_admin.php

def ops_call(site, page, method="GET", form=None, headers=None):
    body = urlencode(form or {}).encode()
    environ = {"REQUEST_METHOD": method, "QUERY_STRING": "", "HTTP_HOST": "127.0.0.1",
               "SCRIPT_NAME": "/p_ops/" + page, "REMOTE_USER": "admin"}
    if method == "POST":
        environ["CONTENT_TYPE"] = "application/x-www-form-urlencoded"
        environ["CONTENT_LENGTH"] = str(len(body))
    environ.update(headers or {})
    resp = ops_handle(page, read_request(environ, io.BytesIO(body)), site.root)
    assert "Traceback" not in resp.body, resp.body[-3000:]
    return resp


def token_of(text):
    return re.search(r'name="csrf_token" value="([^"]+)"', text).group(1)


def badge_form(**values):
    form = {"name": "", "title": "", "image_url": "", "type": "0", "description": "",
            "level": "", "tags": "", "sql_rule": ""}
    form.update(values)
    return form


def test_badge_admin_add_update_delete(site):
    page = ops_call(site, "badge_admin.php")
    assert page.status.startswith("200") and 'name="add_badge"' in page.body
    token = token_of(page.body)
    # without or with a wrong token, or from another site: refused, nothing added
    for extra, headers in (({}, None), ({"csrf_token": "x"}, None),
                           ({"csrf_token": token}, {"HTTP_ORIGIN": "http://evil.example"})):
        resp = ops_call(site, "badge_admin.php", "POST",
                        dict(badge_form(name="sneaky", add_badge="1"), **extra), headers)
        assert resp.status.startswith("403")
    assert not rows(site, "SELECT * FROM badge WHERE name = 'sneaky'")
    resp = ops_call(site, "badge_admin.php", "POST", dict(badge_form(
        name="helper", title=XSS, image_url="img/helper.png", type="1", description="d",
        level="gold", tags="t", sql_rule="r", add_badge="1"), csrf_token=token))
    assert resp.status.startswith("200")
    assert "<script" not in resp.body and "&lt;script&gt;" in resp.body
    row = rows(site, "SELECT * FROM badge WHERE name = 'helper'")[0]
    assert (row["title"], row["image_url"], row["type"], row["description"], row["level"],
            row["tags"], row["sql_rule"]) == (XSS, "img/helper.png", 1, "d", "gold", "t", "r")
    bid = row["id"]
    uid = add_user(site, 0.0, total=0.0)
    execute(site, "INSERT INTO badge_user (badge_id, user_id, create_time, reassign_time) "
                  "VALUES (%s, %s, 1, 1)", (bid, uid))
    resp = ops_call(site, "badge_admin.php", "POST", dict(badge_form(
        id=str(bid), name="helper", title="Helper", image_url="img/h2.png", update="1"),
        csrf_token=token))
    assert resp.status.startswith("200")
    row = rows(site, "SELECT * FROM badge WHERE id = %s", (bid,))[0]
    assert row["title"] == "Helper" and row["type"] == 0 and row["image_url"] == "img/h2.png"
    # odd values: a clear page, nothing changed
    for bad in (dict(badge_form(id=str(bid), name="helper", type="7", update="1")),
                dict(badge_form(id=str(bid), name="", update="1")),
                dict(badge_form(id="abc", name="x", update="1")),
                dict(badge_form(id="99999999", name="x", delete="1")),
                dict(badge_form(id=str(bid), name="x" * 300, update="1")),
                dict(badge_form(name="x"))):
        resp = ops_call(site, "badge_admin.php", "POST", dict(bad, csrf_token=token))
        assert resp.status.startswith("400"), (bad, resp.status)
    assert rows(site, "SELECT title FROM badge WHERE id = %s", (bid,))[0]["title"] == "Helper"
    resp = ops_call(site, "badge_admin.php", "POST",
                    dict(id=str(bid), delete="1", csrf_token=token))
    assert resp.status.startswith("200")
    assert not rows(site, "SELECT * FROM badge WHERE id = %s", (bid,))
    assert not rows(site, "SELECT * FROM badge_user WHERE badge_id = %s", (bid,))


def test_show_user_page_shows_the_users_badges(site, population):
    from boincpy.web import rpc
    from boincpy.web.http import Request
    users, idle, _, _ = population
    run_assign(site, "user", int(time.time()))
    top = next(uid for uid, c in users.items() if c == 101)
    cfg = load_config(site.root)
    body = rpc.handle("show_user", cfg, Request.of(get={"userid": str(top)})).body
    assert 'src="img/pct_1.png"' in body and 'title="Top 1% in average credit"' in body
    body = rpc.handle("show_user", cfg, Request.of(get={"userid": str(idle)})).body
    assert "<img" not in body


def test_ops_index_links_the_community_pages(site):
    body = ops_call(site, "index.php").body
    assert 'href="profile_screen_form.php"' in body and 'href="badge_admin.php"' in body
