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

from boincpy.web.user import common
from site_util import call as site_call
from site_util import status, volunteer
from conftest import altered

EVIL = '<script>alert("x")</script>&'
NOW = int(time.time())


class _Cookie:
    """What site_util.call reads of a user: the auth cookie's value."""

    def __init__(self, authenticator):
        self.authenticator = authenticator


def call(project, page, get=None, post=None, auth=None):
    """One page in-process (site_util.call): (status code, body text, response)."""
    resp = site_call(project, page, _Cookie(auth) if auth else None, get, post)
    return status(resp), resp.text, resp


def ok(project, page, get=None, auth=None):
    code, text, _ = call(project, page, get, auth=auth)
    assert code == 200, text[-2000:]
    return text


def form_token(project, page, get, auth, action):
    text = ok(project, page, get, auth)
    m = re.search(r'<form[^>]*action="%s".*?name="csrf_token" value="([^"]+)"'
                  % re.escape(action), text, re.S)
    assert m, "no form posting to %s" % action
    return m.group(1)


def add_user(site, name, teamid=0):
    """A volunteer (site_util.volunteer) of exactly this name, with some
    credit: (id, authenticator)."""
    from boincpy.db.user import update_user_columns
    user, _, _ = volunteer(site.db, site.p.cfg, re.sub(r"\W", "", name)[:12], teamid=teamid,
                           total_credit=10, expavg_credit=1)
    update_user_columns(site.db, user.id, {"name": name})
    return user.id, user.authenticator


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
        s.alice, s.alice_auth = add_user(s, "Alice " + EVIL)
        s.bob, s.bob_auth = add_user(s, "Bob")
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


# ---------------------------------------------------------------------------
# common.py: BOINC's formats, one of each

def test_common_formats():
    # util_basic.inc: gmdate('j M Y') and gmdate('j M Y, G:i:s') . " UTC"
    t = 1796115903          # 2026-12-01 09:05:03 UTC
    assert common.date_str(t) == "1 Dec 2026"
    assert common.time_str(t) == "1 Dec 2026, 9:05:03 UTC"
    assert common.date_str(0) == common.time_str(0) == "---"
    assert str(common.user_link(3, EVIL)) == (
        '<a href="show_user.php?userid=3">&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;&amp;</a>')
    assert str(common.user_link(3, None)) == "(deleted user)"
    forum, team_forum = {"parent_type": 0}, {"parent_type": 1, "category": 5}
    moderator, admin = {"special_user": "1"}, {"special_user": "01"}
    assert common.is_moderator(moderator) and common.is_moderator(moderator, forum)
    assert not common.is_moderator(moderator, team_forum)
    assert common.is_moderator(admin, team_forum)
    assert common.is_moderator(None, team_forum, team_admin=True)
    assert common.is_moderator({"special_user": "", "team_admin_of": 5}, team_forum)
    assert not common.is_moderator({"special_user": "", "team_admin_of": 6}, team_forum)
    assert not common.is_moderator(None) and not common.is_moderator({"special_user": "0000"})
    # no family keeps its own copy
    import boincpy.web.user as pkg
    here = os.path.dirname(pkg.__file__)
    for name in sorted(os.listdir(here)):
        if name.endswith(".py") and name != "common.py":
            text = open(os.path.join(here, name)).read()
            for helper in ("time_str", "date_str", "user_link", "required_id", "is_moderator"):
                assert not re.search(r"^def _?%s\(" % helper, text, re.M) or (
                    name, helper) == ("moderation.py", "is_moderator"), (name, helper)


# ---------------------------------------------------------------------------
# show_user.php, team_display.php, home.php

def _badge(db, title, holder_table, column, holder, image=None):
    bid = db.insert("INSERT INTO badge (create_time, type, name, title, description, image_url,"
                    " level, tags, sql_rule) VALUES (0, 0, %s, %s, '', %s, '', '', '')",
                    (title, title, image or "img/%s.png" % title))
    db.execute("INSERT INTO %s (badge_id, %s, create_time, reassign_time) VALUES (%%s, %%s, 0, 0)"
               % (holder_table, column), (bid, holder))


def test_show_user_badges_friends_profile(site):
    db = site.db
    carol, carol_auth = add_user(site, "Carol")
    _badge(db, "gold" + EVIL, "badge_user", "user_id", carol, "img/gold.png")
    db.execute("INSERT INTO friend (user_src, user_dest, message, create_time, reciprocated) "
               "VALUES (%s, %s, '', 0, 1), (%s, %s, '', 0, 1)",
               (carol, site.alice, site.alice, carol))
    page = ok(site.p, "show_user.php", {"userid": carol})
    assert 'class="badge" src="img/gold.png" title="gold&lt;script&gt;' in page
    assert "Friends" in page and "Alice &lt;script&gt;" in page and "<script>" not in page
    assert 'href="show_user.php?userid=%d"' % site.alice in page
    assert "Send private message" not in page           # nobody logged in
    # a viewer gets BOINC's contact and friendship links
    page = ok(site.p, "show_user.php", {"userid": carol}, auth=site.bob_auth)
    assert 'href="pm.php?action=new&amp;userid=%d"' % carol in page
    assert 'href="friend.php?action=add&amp;userid=%d"' % carol in page
    # a plain badge address is shown
    _badge(db, "silver", "badge_user", "user_id", carol)
    assert 'src="img/silver.png"' in ok(site.p, "show_user.php", {"userid": carol})
    # a profile: linked once visible; under screening only to its owner
    db.execute("UPDATE user SET has_profile = 1 WHERE id = %s", (carol,))
    db.execute("INSERT INTO profile (userid, language, response1, response2, verification) "
               "VALUES (%s, 'en', 'hi', '', 0)", (carol,))
    link = 'href="view_profile.php?userid=%d"' % carol
    assert link in ok(site.p, "show_user.php", {"userid": carol})
    cfg_path = os.path.join(site.p.root, "config.xml")
    text = open(cfg_path).read()
    open(cfg_path, "w").write(text.replace("<config>", "<config>\n<profile_screening>1"
                                                       "</profile_screening>", 1))
    try:
        assert link not in ok(site.p, "show_user.php", {"userid": carol}, auth=site.bob_auth)
        assert link in ok(site.p, "show_user.php", {"userid": carol}, auth=carol_auth)
    finally:
        open(cfg_path, "w").write(text)


def test_team_display_badges_and_message_link(site):
    _badge(site.db, "teamstar", "badge_team", "team_id", site.team)
    page = ok(site.p, "team_display.php", {"teamid": site.team})
    assert 'src="img/teamstar.png"' in page
    send = 'href="pm.php?action=new&amp;teamid=%d"' % site.team
    assert send not in page
    assert send not in ok(site.p, "team_display.php", {"teamid": site.team}, auth=site.bob_auth)
    page = ok(site.p, "team_display.php", {"teamid": site.team}, auth=site.alice_auth)
    assert send in page
    # the link leads to the team message form
    assert "csrf_token" in ok(site.p, "pm.php", {"action": "new", "teamid": site.team},
                              auth=site.alice_auth)


def test_home_links_profile_and_forum_prefs(site):
    page = ok(site.p, "home.php", auth=site.bob_auth)
    assert 'href="create_profile.php"' in page
    assert 'href="edit_forum_preferences_form.php"' in page
    site.db.execute("UPDATE user SET has_profile = 1 WHERE id = %s", (site.bob,))
    try:
        page = ok(site.p, "home.php", auth=site.bob_auth)
        assert 'href="view_profile.php?userid=%d"' % site.bob in page
    finally:
        site.db.execute("UPDATE user SET has_profile = 0 WHERE id = %s", (site.bob,))
    ok(site.p, "edit_forum_preferences_form.php", auth=site.bob_auth)


# ---------------------------------------------------------------------------
# opt_out.php: the reminder e-mails' link

def _remind_link(site, user_id):
    """The <opt_out_url/> the remind task writes into its e-mail for this user."""
    from types import SimpleNamespace
    from boincpy.config import load_config
    from boincpy.daemons.community import Remind
    from boincpy.web import accounts
    user = accounts.lookup_user_by_id(site.db, user_id)
    task = SimpleNamespace(cfg=load_config(site.p.root), last_rpc_time=lambda uid: 0)
    return Remind.fill(task, user, "<opt_out_url/>", NOW)


def _query(link):
    from urllib.parse import parse_qsl, urlsplit
    parts = urlsplit(link)
    assert parts.path.endswith("/opt_out.php"), link
    return dict(parse_qsl(parts.query))


def _send_email(site, uid):
    return site.db.query_value("SELECT send_email FROM user WHERE id = %s", (uid,))


def test_opt_out_link_of_the_reminder(site):
    dave, dave_auth = add_user(site, "Dave")
    erin, _ = add_user(site, "Erin")
    args = _query(_remind_link(site, dave))
    assert set(args) == {"userid", "code"} and args["userid"] == str(dave)
    # BOINC's code (email.inc salted_key): links its PHP sent work here too
    from boincpy.passwords import md5_hex
    assert args["code"] == md5_hex(dave_auth + "oogabooga")
    # the link shows a button; fetching it changes nothing
    page = ok(site.p, "opt_out.php", args)
    assert 'action="opt_out.php"' in page and _send_email(site, dave) == 1
    # another user's id with this code, a wrong or missing code: refused, nothing changed
    for bad in ({"userid": str(erin), "code": args["code"]},
                {"userid": str(dave), "code": altered(args["code"])},
                {"userid": str(dave), "code": ""}, {"userid": str(dave), "code": EVIL}):
        for post in (None, bad):
            code, text, _ = call(site.p, "opt_out.php", None if post else bad, post)
            assert code == 403 and "invalid code" in text and "<script>" not in text, bad
    for bad in ({"userid": "99999999", "code": "x"}, {"userid": "x", "code": "x"}, {}):
        code, text, _ = call(site.p, "opt_out.php", bad)
        assert code in (400, 404) and "Traceback" not in text, bad
    assert _send_email(site, dave) == 1 and _send_email(site, erin) == 1
    # the button's POST (no login needed) turns the e-mails off, only Dave's
    code, text, _ = call(site.p, "opt_out.php", post=args)
    dave_addr = site.db.query_value("SELECT email_addr FROM user WHERE id = %s", (dave,))
    assert code == 200 and "No further emails will be sent to %s." % dave_addr in text
    assert 'href="prefs.php?subset=project"' in text
    assert _send_email(site, dave) == 0 and _send_email(site, erin) == 1


# ---------------------------------------------------------------------------
# show_host_detail.php: the owner sets the computer's venue

def _venue(site, hostid):
    return site.db.query_value("SELECT venue FROM host WHERE id = %s", (hostid,))


def test_host_venue_form(site):
    from boincpy.db.host import insert_host
    hostid = insert_host(site.db, {"userid": site.bob, "rpc_time": NOW, "create_time": NOW,
                                   "domain_name": "bobs", "misc": ""})
    detail = {"hostid": hostid}
    assert "host_venue_action.php" not in ok(site.p, "show_host_detail.php", detail,
                                             auth=site.alice_auth)
    tok = form_token(site.p, "show_host_detail.php", detail, site.bob_auth,
                     "host_venue_action.php")
    # without the token, with another user's account or token, a bad venue: nothing changed
    for auth, post in ((site.bob_auth, {"hostid": hostid, "venue": "work"}),
                       (site.alice_auth, {"hostid": hostid, "venue": "work", "csrf_token": tok})):
        code, text, _ = call(site.p, "host_venue_action.php", post=post, auth=auth)
        assert code == 403, text[-500:]
    # Alice's own valid token on Bob's computer: refused
    alice_host = insert_host(site.db, {"userid": site.alice, "rpc_time": NOW, "create_time": NOW,
                                       "domain_name": "alices", "misc": ""})
    alice_tok = form_token(site.p, "show_host_detail.php", {"hostid": alice_host},
                           site.alice_auth, "host_venue_action.php")
    code, text, _ = call(site.p, "host_venue_action.php", auth=site.alice_auth,
                         post={"hostid": hostid, "venue": "work", "csrf_token": alice_tok})
    assert code == 404 and _venue(site, hostid) == ""
    code, text, _ = call(site.p, "host_venue_action.php", auth=site.bob_auth,
                         post={"hostid": hostid, "venue": EVIL, "csrf_token": tok})
    assert code == 400 and "bad venue" in text and "<script>" not in text
    assert _venue(site, hostid) == ""
    code, text, _ = call(site.p, "host_venue_action.php", auth=site.bob_auth,
                         post={"hostid": hostid, "venue": "school", "csrf_token": tok})
    assert code == 200 and "<b>school</b>" in text
    assert _venue(site, hostid) == "school"
    page = ok(site.p, "show_host_detail.php", detail, auth=site.bob_auth)
    assert '<option value="school" selected>' in page
    code, text, _ = call(site.p, "host_venue_action.php", auth=site.bob_auth,
                         post={"hostid": hostid, "venue": "", "csrf_token": tok})
    assert code == 200 and _venue(site, hostid) == ""


# ---------------------------------------------------------------------------
# page.STYLE: forum quotes are set off; the CSP's style hash still matches

def test_quote_style_and_csp_hash(site):
    import base64
    import hashlib
    from boincpy.web import bbcode
    assert '<blockquote class="quote">' in bbcode.render("[quote=Al]hi[/quote]")
    _, text, resp = call(site.p, "apps.php")
    style = re.search(r"<style>(.*?)</style>", text, re.S).group(1)
    assert re.search(r"blockquote\.quote\{[^}]*border-left:[^}]*\}", style)
    assert re.search(r"blockquote\.quote \.quote-by\{", style)
    csp = dict(resp.headers)["Content-Security-Policy"]
    digest = base64.b64encode(hashlib.sha256(style.encode()).digest()).decode()
    assert "style-src 'sha256-%s'" % digest in csp


# ---------------------------------------------------------------------------
# team_forum.php: the founder makes the team's message board, members use it

def _board(site):
    return site.db.query_one("SELECT * FROM forum WHERE parent_type = 1 AND category = %s",
                             (site.team,))


def test_team_forum(site):
    team = {"teamid": site.team}
    manage = {"teamid": site.team, "cmd": "manage"}
    code, text, _ = call(site.p, "team_forum.php", team)
    assert code == 404 and "Team has no forum" in text
    assert call(site.p, "team_forum.php", manage, auth=site.bob_auth)[0] == 403
    tok = form_token(site.p, "team_forum.php", manage, site.alice_auth, "team_forum.php")
    # without the token, or not the founder: nothing made
    assert call(site.p, "team_forum.php", post={"teamid": site.team, "cmd": "create"},
                auth=site.alice_auth)[0] == 403
    assert call(site.p, "team_forum.php", post={"teamid": site.team, "cmd": "create",
                                                "csrf_token": tok}, auth=site.bob_auth)[0] == 403
    assert _board(site) is None
    code, _, resp = call(site.p, "team_forum.php", post={"teamid": site.team, "cmd": "create",
                                                          "csrf_token": tok}, auth=site.alice_auth)
    assert code == 303 and "cmd=manage" in dict(resp.headers)["Location"]
    board = _board(site)
    assert board is not None
    assert call(site.p, "team_forum.php", post={"teamid": site.team, "cmd": "create",
                                                "csrf_token": tok}, auth=site.alice_auth)[0] == 409
    # the edit form: the team's name by default (escaped), the posting limits
    page = ok(site.p, "team_forum.php", manage, auth=site.alice_auth)
    assert 'value="Team &lt;script&gt;' in page and "<script>" not in page
    edit = {"teamid": site.team, "cmd": "edit_action", "csrf_token": tok,
            "title": "Our <b>board</b>", "description": "talk " + EVIL,
            "post_min_interval": "0", "post_min_total_credit": "0",
            "post_min_expavg_credit": "0"}
    for field, bad in (("post_min_interval", "soon"), ("title", ""), ("title", "x" * 200),
                       ("post_min_total_credit", "-1")):
        code, text, _ = call(site.p, "team_forum.php", post=dict(edit, **{field: bad}),
                             auth=site.alice_auth)
        assert code == 400 and field in text, (field, bad)
    code, text, _ = call(site.p, "team_forum.php", post=edit, auth=site.alice_auth)
    assert code == 200 and "Update successful" in text
    board = _board(site)
    assert board["title"] == "Our board" and board["description"].startswith("talk alert")
    # the team's page links the board; team_forum.php leads there
    link = 'href="forum_forum.php?id=%d"' % board["id"]
    assert link in ok(site.p, "team_display.php", team, auth=site.bob_auth)
    code, _, resp = call(site.p, "team_forum.php", team)
    assert code == 303 and dict(resp.headers)["Location"].endswith("forum_forum.php?id=%d"
                                                                    % board["id"])
    # a member posts a thread; someone outside the team may not
    fid = {"id": board["id"]}
    page = ok(site.p, "forum_post.php", fid, auth=site.bob_auth)
    ptok = re.search(r'name="csrf_token" value="([^"]+)"', page).group(1)
    code, _, resp = call(site.p, "forum_post.php", fid, auth=site.bob_auth,
                         post={"title": "hello team", "content": "first", "csrf_token": ptok})
    assert code == 303, resp.text[-500:]
    assert site.db.query_value("SELECT COUNT(*) FROM thread WHERE forum = %s",
                               (board["id"],)) == 1
    outsider, outsider_auth = add_user(site, "Outsider")
    assert call(site.p, "forum_post.php", fid, auth=outsider_auth)[0] == 403
    assert "hello team" in ok(site.p, "forum_forum.php", fid, auth=site.bob_auth)
    # the founder removes it: threads and posts go too
    assert call(site.p, "team_forum.php", post={"teamid": site.team, "cmd": "remove",
                                                "csrf_token": tok}, auth=site.bob_auth)[0] == 403
    code, text, _ = call(site.p, "team_forum.php", post={"teamid": site.team, "cmd": "remove",
                                                          "csrf_token": tok},
                         auth=site.alice_auth)
    assert code == 200 and "has been removed" in text
    assert _board(site) is None
    assert not site.db.query_value("SELECT COUNT(*) FROM thread WHERE forum = %s",
                                   (board["id"],))
    assert not site.db.query_value("SELECT COUNT(*) FROM post p JOIN thread t ON t.id = p.thread"
                                   " WHERE t.forum = %s", (board["id"],))


def test_team_board_founder_moderates_on_the_boards_pages(site):
    from boincpy.db import forum as forum_db
    team2 = site.db.insert("INSERT INTO team (create_time, userid, name, name_lc, url, type, "
                           "name_html, description, nusers, country, total_credit, "
                           "expavg_credit) VALUES (0, %s, 'Team two', 'team two', '', 2, '', '',"
                           " 1, 'None', 0, 0)", (site.bob,))
    frank, frank_auth = add_user(site, "Frank", teamid=team2)
    with site.db.transaction():
        fid = forum_db.insert_team_forum(site.db, team2)
        tid = forum_db.insert_thread(site.db, fid, frank, "team talk", "hello", NOW - 10)
    # Bob founded team two: its board's pages give him the moderator's links
    founder = ok(site.p, "forum_thread.php", {"id": tid}, auth=site.bob_auth)
    assert "forum_moderate_post.php" in founder
    member = ok(site.p, "forum_thread.php", {"id": tid}, auth=frank_auth)
    assert "forum_moderate_post.php" not in member
    # Alice founded another team: no say here
    assert "forum_moderate_post.php" not in ok(site.p, "forum_thread.php", {"id": tid},
                                               auth=site.alice_auth)
