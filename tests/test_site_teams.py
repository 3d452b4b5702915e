"""The teams pages of the volunteer site (boincpy.web.user.teams), in-process
through boincpy.web.user.main.handle against a project made by make_project:
every page, the founder's and admins' checks, another team's ids refused,
form tokens, hostile names and descriptions shown escaped, the team row as
BOINC's team_create_action.php writes it, team_email_list.php's XML and
team_lookup.php against replies captured from BOINC's PHP site.

One project serves the module; each test makes teams and users of its own."""

import os
import re
import secrets
import time

import pytest

from boincpy import passwords
from boincpy.web import accounts
from boincpy.web.rpc import format_number
from site_util import Site, fixture, module_project, status

HOSTILE = '<script>alert("x")</script><b>&bold'


@pytest.fixture(scope="module")
def site(db_root_params):
    with module_project(db_root_params) as project:
        yield Site(project)


# ---------------------------------------------------------------------------

def test_created_team_row_is_boincs(site):
    """team_create_action.php writes the row BOINC's does (captured), and
    its founder joins it (team_delta as BOINC)."""
    founder = site.user()
    before = int(time.time())
    team = site.create_team(founder, "Acc Team %s" % secrets.token_hex(2), type="1",
                            description="A team made by the acceptance test.")
    header, row = fixture("team_row_web_created.tsv").splitlines()[:2]
    ref = dict(zip(header.split("\t"), row.split("\t")))
    got = site.db.query_one("SELECT * FROM team WHERE id = %s", (team.id,))
    assert set(got) == set(ref)
    same = ("url", "type", "name_html", "description", "nusers", "country", "total_credit",
            "expavg_credit", "seti_id", "ping_user", "ping_time", "joinable")
    assert {k: format_number(got[k] if got[k] is not None else "") for k in same} == \
        {k: ref[k] for k in same}
    assert got["userid"] == founder.id
    assert got["name_lc"] == got["name"].lower()
    assert got["create_time"] >= before and got["expavg_time"] == got["create_time"]
    assert site.teamid_of(founder) == team.id
    delta = site.db.query("SELECT * FROM team_delta WHERE userid = %s", (founder.id,))
    assert [(d["teamid"], d["joining"]) for d in delta] == [(team.id, 1)]
    page = site.ok("team_display.php", founder, get={"teamid": team.id})
    assert "A team made by the acceptance test." in page and "Administer team" in page


def test_create_needs_login_token_and_a_name(site):
    user = site.user()
    name = "tokenless " + secrets.token_hex(3)
    form = {"name": name, "type": "1", "country": "None"}
    assert status(site.call("team_create_action.php", user, post=form, token=False)) == 403
    other_form_token = site.token(user, "team_edit_action.php")
    assert status(site.call("team_create_action.php", user, post=form,
                            token=other_form_token)) == 403
    stranger = site.user()
    assert status(site.call("team_create_action.php", user, post=form,
                            token=site.token(stranger, "team_create_action.php"))) == 403
    for header in ({"HTTP_ORIGIN": "http://evil.example"}, {"HTTP_SEC_FETCH_SITE": "cross-site"}):
        assert status(site.call("team_create_action.php", user, post=form, headers=header)) == 403
    assert status(site.call("team_create_action.php", user, get=form)) == 405
    assert status(site.call("team_create_action.php", None, post=form)) == 303   # to login
    assert accounts.lookup_team_by_name(site.db, name) is None
    blank = site.call("team_create_action.php", user, post=dict(form, name="  "))
    assert status(blank) == 400 and "name" in blank.text
    long = site.call("team_create_action.php", user, post=dict(form, name="x" * 300))
    assert status(long) == 400 and "name" in long.text
    wide = site.call("team_create_action.php", user,
                     post=dict(form, description="\U0001f600" * 20000))
    assert status(wide) == 400 and "description" in wide.text
    bad_type = site.call("team_create_action.php", user, post=dict(form, type="nine"))
    assert status(bad_type) == 400 and "type" in bad_type.text
    taken = site.create_team(site.user())
    dup = site.call("team_create_action.php", user, post=dict(form, name=taken.name))
    assert status(dup) == 400 and "already exists" in dup.text
    assert site.teamid_of(user) == 0
    assert "/team_create_form.php" not in site.ok("team_create_form.php", user)  # the form
    assert 'action="team_create_action.php"' in site.ok("team_create_form.php", user)


def test_hostile_text_is_escaped(site):
    founder = site.user()
    team = site.create_team(founder, "esc " + secrets.token_hex(3),
                            description=HOSTILE, url='javascript:alert(1)"><script>')
    # a name as BOINC's PHP could store it (its forms refuse these characters)
    site.db.execute("UPDATE team SET name = %s, name_html = %s, country = %s WHERE id = %s",
                    (HOSTILE + team.name, HOSTILE, HOSTILE, team.id))
    evil = site.member(team)
    site.db.execute("UPDATE user SET name = %s, country = %s WHERE id = %s",
                    (HOSTILE + secrets.token_hex(2), HOSTILE, evil.id))
    pages = [site.ok("team_display.php", founder, get={"teamid": team.id}),
             site.ok("team_display.php", None, get={"teamid": team.id}),
             site.ok("team_members.php", None, get={"teamid": team.id}),
             site.ok("team_edit_form.php", founder, get={"teamid": team.id}),
             site.ok("team_email_list.php", founder, get={"teamid": team.id}),
             site.ok("team_remove_inactive_form.php", founder, get={"teamid": team.id}),
             site.ok("team_change_founder_form.php", founder, get={"teamid": team.id}),
             site.ok("team_search.php", None, get={"keywords": HOSTILE, "submit": "Search"}),
             site.ok("team_search.php", None, get={"keywords": "esc", "submit": "Search"})]
    for page in pages:
        assert "<script>" not in page and "<b>&bold" not in page
    assert "&lt;script&gt;" in pages[0]
    assert 'href="http://javascript:alert(1)&#34;&gt;"' in pages[0]
    xml = site.call("team_email_list.php", None, get={"teamid": team.id, "xml": 1}).text
    assert "<script>" not in xml and "&lt;script&gt;" in xml


def test_join_and_quit(site):
    founder = site.user()
    team = site.create_team(founder)
    user = site.user(total_credit=12.5)
    page = site.ok("team_display.php", user, get={"teamid": team.id})
    assert "team_join_form.php?id=%d" % team.id in page
    form = site.ok("team_join_form.php", user, get={"id": team.id})
    assert 'action="team_join_action.php"' in form and 'name="csrf_token"' in form
    assert status(site.call("team_join_action.php", user, post={"teamid": team.id},
                            token=False)) == 403
    assert site.teamid_of(user) == 0
    assert "You have joined" in site.ok("team_join_action.php", user,
                                        post={"teamid": team.id})
    assert site.teamid_of(user) == team.id
    assert "already a member" in site.ok("team_join_action.php", user,
                                         post={"teamid": team.id})
    # joining another team leaves this one (BOINC's user_join_team)
    other = site.create_team(site.user())
    site.ok("team_join_action.php", user, post={"teamid": other.id})
    deltas = [(d["teamid"], d["joining"], d["total_credit"]) for d in site.db.query(
        "SELECT * FROM team_delta WHERE userid = %s ORDER BY timestamp, joining DESC",
        (user.id,))]
    assert sorted(deltas) == sorted([(team.id, 1, 12.5), (team.id, 0, 12.5),
                                     (other.id, 1, 12.5)])
    assert "Quit" in site.ok("team_quit_form.php", user)
    # quitting a team one isn't in is refused
    bad = site.call("team_quit_action.php", user, post={"id": team.id})
    assert status(bad) == 403 and site.teamid_of(user) == other.id
    resp = site.call("team_quit_action.php", user, post={"id": other.id})
    assert status(resp) == 303 and site.teamid_of(user) == 0
    # a team that doesn't take members
    site.db.execute("UPDATE team SET joinable = 0 WHERE id = %s", (team.id,))
    assert status(site.call("team_join_action.php", user, post={"teamid": team.id})) == 403
    assert "Not accepting new members" in site.ok("team_display.php", user,
                                                  get={"teamid": team.id})
    assert site.teamid_of(user) == 0


def test_founder_tools_refused_to_others(site):
    founder = site.user()
    team = site.create_team(founder, description="original")
    member = site.member(team)
    stranger_founder = site.user()
    other = site.create_team(stranger_founder)
    victim = site.member(team)
    gets = ["team_edit_form.php", "team_remove_inactive_form.php", "team_admins.php",
            "team_change_founder_form.php", "team_email_list.php", "team_manage.php"]
    for who in (member, stranger_founder):
        for page in gets:
            resp = site.call(page, who, get={"teamid": team.id})
            assert status(resp) == 403, (page, resp.text[-500:])
            assert "requires" in resp.text
        posts = [
            ("team_edit_action.php", {"teamid": team.id, "name": "stolen", "type": "1"}),
            ("team_remove_inactive_action.php", {"id": team.id, "ninactive_users": "1",
                                                 "remove_0": victim.id}),
            ("team_admins.php", {"teamid": team.id, "action": "add",
                                 "email_addr": member.email_addr}),
            ("team_change_founder_action.php", {"teamid": team.id, "userid": who.id}),
            ("team_manage.php", {"teamid": team.id, "action": "delete"}),
            ("team_founder_transfer_action.php", {"teamid": team.id, "action": "decline"}),
        ]
        for page, form in posts:
            resp = site.call(page, who, post=form)
            assert status(resp) == 403, (page, resp.text[-500:])
    row = site.team(team.id)
    assert (row.name, row.userid, row.description) == (team.name, founder.id, "original")
    assert site.teamid_of(victim) == team.id
    assert not site.db.query_value("SELECT COUNT(*) FROM team_admin WHERE teamid = %s",
                                   (team.id,))
    # and the other team's founder's tools don't reach this team through its ids
    assert status(site.call("team_remove_inactive_action.php", stranger_founder, post={
        "id": other.id, "ninactive_users": "1", "remove_0": victim.id})) == 200
    assert site.teamid_of(victim) == team.id
    # missing, odd and huge ids: a clear page
    for value in ("abc", "", "99999999", "1e400", "-1", "9" * 40):
        resp = site.call("team_display.php", None, get={"teamid": value})
        assert status(resp) in (400, 404), (value, resp.status)
        assert "teamid" in resp.text or "No such team" in resp.text


def test_admins_edit_but_dont_remove(site):
    founder = site.user()
    team = site.create_team(founder)
    admin = site.member(team)
    plain = site.member(team)
    page = site.ok("team_admins.php", founder, get={"teamid": team.id})
    assert "There are currently no Team Admins" in page
    assert status(site.call("team_admins.php", founder, get={
        "teamid": team.id, "action": "add", "email_addr": admin.email_addr})) == 200
    assert not site.db.query_value("SELECT COUNT(*) FROM team_admin WHERE teamid = %s",
                                   (team.id,))     # a GET changes nothing
    resp = site.call("team_admins.php", founder, post={"teamid": team.id, "action": "add",
                                                      "email_addr": admin.email_addr})
    assert status(resp) == 303
    rows = site.db.query("SELECT * FROM team_admin WHERE teamid = %s", (team.id,))
    assert [(r["userid"], r["rights"]) for r in rows] == [(admin.id, 0)]
    outsider = site.user()
    bad = site.call("team_admins.php", founder, post={"teamid": team.id, "action": "add",
                                                     "email_addr": outsider.email_addr})
    assert status(bad) == 400 and "not a member" in bad.text
    assert admin.name in site.ok("team_admins.php", founder, get={"teamid": team.id})
    # the admin edits the team ...
    assert "Edit" in site.ok("team_edit_form.php", admin, get={"teamid": team.id})
    new_name = "renamed " + secrets.token_hex(3)
    resp = site.call("team_edit_action.php", admin, post={
        "teamid": team.id, "name": new_name, "url": "http://example.org/t", "type": "3",
        "description": "edited", "country": "Germany", "name_html": ""})
    assert status(resp) == 303
    row = site.team(team.id)
    assert (row.name, row.name_lc, row.url, row.type, row.country, row.joinable) == \
        (new_name, new_name.lower(), "example.org/t", 3, "Germany", 0)
    # ... sees the manage page without the founder's tools, and can't remove anyone
    manage = site.ok("team_manage.php", admin, get={"teamid": team.id})
    assert "team_edit_form.php" in manage and "team_remove_inactive_form.php" not in manage
    assert status(site.call("team_remove_inactive_form.php", admin,
                            get={"teamid": team.id})) == 403
    assert status(site.call("team_remove_inactive_action.php", admin, post={
        "id": team.id, "ninactive_users": "1", "remove_0": plain.id})) == 403
    assert status(site.call("team_email_list.php", admin, get={"teamid": team.id})) == 403
    assert site.teamid_of(plain) == team.id
    # the founder removes the admin's rights; an admin who quits loses them too
    site.ok("team_admins.php", founder, get={"teamid": team.id})
    assert status(site.call("team_admins.php", founder, post={
        "teamid": team.id, "action": "remove", "userid": admin.id})) == 303
    assert status(site.call("team_edit_form.php", admin, get={"teamid": team.id})) == 403


def test_team_history_for_admins(site):
    founder = site.user()
    team = site.create_team(founder)
    member = site.member(team, total_credit=7.5)
    site.call("team_quit_action.php", member, post={"id": team.id})
    page = site.ok("team_delta.php", founder, get={"teamid": team.id})
    assert page.count("joined") == 2 and "quit" in page and member.name in page
    xml = site.call("team_delta.php", founder, get={"teamid": team.id, "xml": "1"}).text
    assert xml.count("<action>joined</action>") == 2 and "<action>quit</action>" in xml
    assert "<total_credit>7.5</total_credit>" in xml
    outsider = site.user()
    assert status(site.call("team_delta.php", outsider, get={"teamid": team.id})) == 403
    refused = site.call("team_delta.php", outsider, get={"teamid": team.id, "xml": "1"})
    assert "<error_msg>Not founder or admin</error_msg>" in refused.text
    assert "team_delta.php?teamid=%d" % team.id in site.ok("team_manage.php", founder,
                                                           get={"teamid": team.id})


def test_founder_removes_members(site):
    founder = site.user()
    team = site.create_team(founder)
    a, b = site.member(team), site.member(team)
    outsider = site.user()
    page = site.ok("team_remove_inactive_form.php", founder, get={"teamid": team.id})
    assert a.name in page and b.name in page and 'name="ninactive_users" value="2"' in page
    assert founder.name not in page.split("<h1>")[1].split("</form>")[0].split("<tbody>")[1]
    page = site.ok("team_remove_inactive_action.php", founder, post={
        "id": team.id, "ninactive_users": "3", "remove_0": a.id, "remove_2": outsider.id})
    assert "has been removed" in page and "is not a member" in page
    assert site.teamid_of(a) == 0 and site.teamid_of(b) == team.id
    assert site.db.query_value("SELECT joining FROM team_delta WHERE userid = %s ORDER BY "
                               "timestamp DESC, joining LIMIT 1", (a.id,)) == 0
    # the founder can't be removed by the form's ids
    site.ok("team_remove_inactive_action.php", founder, post={
        "id": team.id, "ninactive_users": "1", "remove_0": founder.id})
    assert site.teamid_of(founder) == team.id
    bad = site.call("team_remove_inactive_action.php", founder, post={
        "id": team.id, "ninactive_users": "1", "remove_0": "x"})
    assert status(bad) == 400 and "remove_0" in bad.text


def test_change_founder_and_transfer_request(site):
    founder = site.user()
    team = site.create_team(founder)
    member = site.member(team)
    outsider = site.user()
    # a non-member can't be made founder
    resp = site.call("team_change_founder_action.php", founder,
                     post={"teamid": team.id, "userid": outsider.id})
    assert status(resp) == 400 and site.team(team.id).userid == founder.id
    # the member asks for the foundership
    form = site.ok("team_founder_transfer_form.php", member)
    assert "Request foundership" in form
    now = int(time.time())
    site.ok("team_founder_transfer_action.php", member,
            post={"action": "initiate_transfer"}, now=now)
    row = site.team(team.id)
    assert (row.ping_user, row.ping_time) == (member.id, now)
    assert "Respond by" in site.ok("team_display.php", founder, get={"teamid": team.id})
    # too early to take it over
    early = site.call("team_founder_transfer_action.php", member,
                      post={"action": "finalize_transfer"}, now=now + 86400)
    assert status(early) == 403 and site.team(team.id).userid == founder.id
    # the founder declines
    site.ok("team_founder_transfer_action.php", founder,
            post={"action": "decline", "teamid": team.id}, now=now + 10)
    assert site.team(team.id).ping_user == 0
    # a new request only after 60 days; then, unanswered for 60 days, it is granted
    refused = site.call("team_founder_transfer_action.php", member,
                        post={"action": "initiate_transfer"}, now=now + 100)
    assert status(refused) == 403
    later = now + 61 * 86400
    site.ok("team_founder_transfer_action.php", member,
            post={"action": "initiate_transfer"}, now=later)
    done = later + 61 * 86400
    page = site.ok("team_founder_transfer_form.php", member, now=done)
    assert "Assume foundership" in page
    site.ok("team_founder_transfer_action.php", member, post={"action": "finalize_transfer"},
            now=done)
    row = site.team(team.id)
    assert (row.userid, row.ping_user, row.ping_time) == (member.id, 0, 0)
    # the new founder hands it back through the form
    page = site.ok("team_change_founder_form.php", member, get={"teamid": team.id})
    assert 'name="userid" value="%d"' % founder.id in page
    site.ok("team_change_founder_action.php", member,
            post={"teamid": team.id, "userid": founder.id})
    assert site.team(team.id).userid == founder.id


def test_transfer_request_and_refusal_are_mailed(site):
    from boincpy.config import load_config, write_config
    outbox = os.path.join(site.project.root, "tmp_mail_%s" % secrets.token_hex(3))
    cfg = load_config(site.project.root)
    options = cfg.as_options()
    write_config(site.project.root, dict(options, email_command="sh -c 'cat >> %s'" % outbox),
                 cfg.daemons, cfg.tasks, mode=0o640)
    try:
        founder = site.user()
        team = site.create_team(founder)
        member = site.member(team)
        page = site.ok("team_founder_transfer_action.php", member,
                       post={"action": "initiate_transfer"})
        assert "told by e-mail" in page
        site.ok("team_founder_transfer_action.php", founder,
                post={"action": "decline", "teamid": team.id})
        import quopri
        with open(outbox, "rb") as f:
            sent = quopri.decodestring(f.read()).decode()
    finally:
        write_config(site.project.root, options, cfg.daemons, cfg.tasks, mode=0o640)
    assert "To: %s <%s>" % (founder.name, founder.email_addr) in sent
    assert "team_change_founder_form.php?teamid=%d" % team.id in sent
    assert "To: %s <%s>" % (member.name, member.email_addr) in sent and "declined" in sent


def test_request_lapses_when_the_asker_leaves(site):
    founder = site.user()
    team = site.create_team(founder)
    member = site.member(team)
    site.ok("team_founder_transfer_action.php", member, post={"action": "initiate_transfer"})
    site.call("team_quit_action.php", member, post={"id": team.id})
    assert site.team(team.id).ping_user == -member.id
    page = site.ok("team_change_founder_form.php", founder, get={"teamid": team.id})
    assert "then left the team" in page and member.name in page
    assert site.team(team.id).ping_user == -member.id          # a GET changes nothing
    assert "Respond by" not in site.ok("team_display.php", founder, get={"teamid": team.id})


def test_delete_empty_team_only(site):
    founder = site.user()
    team = site.create_team(founder)
    member = site.member(team)
    resp = site.call("team_manage.php", founder, post={"teamid": team.id, "action": "delete"})
    assert status(resp) == 403 and site.team(team.id) is not None
    for user in (member, founder):
        site.call("team_quit_action.php", user, post={"id": team.id})
    site.ok("team_manage.php", founder, post={"teamid": team.id, "action": "delete"})
    assert site.team(team.id) is None


def _normalized(xml):
    return re.sub(r"<(id|cpid|userid|create_time|expavg_time)>[^<]*</\1>", r"<\1>*</\1>", xml)


def test_team_email_list_xml_as_boinc(site):
    """team_email_list.php?xml=1 as BOINC's (captured with two members)."""
    ref = fixture("team_email_list.xml")
    values = re.findall(r"<name>([^<]*)</name>", ref)
    suffix = secrets.token_hex(2)
    founder = site.user(values[0] + suffix, total_credit=0.02009599027777777,
                        expavg_credit=0.001989906247174062, expavg_time=1795894076.892198,
                        country="None", create_time=1795894043)
    team = site.create_team(founder)
    second = site.user(values[1] + suffix, country="None", create_time=1795894095,
                       expavg_time=1795894095)
    site.ok("team_join_action.php", second, post={"teamid": team.id})
    resp = site.call("team_email_list.php", None, get={"teamid": team.id, "xml": "1"})
    assert status(resp) == 200 and resp.content_type.startswith("text/xml")
    # the names as captured (the suffix only where it was added: four random
    # hex digits can also occur in a number of the reply)
    got = resp.text
    for value in values[:2]:
        got = got.replace(value + suffix, value)
    assert _normalized(got) == _normalized(ref)
    for user in (founder, second):
        assert "<id>%d</id>" % user.id in got
        assert passwords.external_cpid(user.cross_project_id, user.email_addr) in got
    assert "<expavg_time>1795894076.892198</expavg_time>" in got
    assert "@" not in got                      # never an e-mail address in the public list
    credit_only = site.call("team_email_list.php", None,
                            get={"teamid": team.id, "xml": "1", "creditonly": "1"}).text
    assert credit_only.count("<user>") == 1 and "<name>" not in credit_only
    missing = site.call("team_email_list.php", None, get={"teamid": "99999999", "xml": "1"})
    assert "<error_num>-136</error_num>" in missing.text
    # the founder's HTML list shows the addresses of members who allow e-mail
    site.db.execute("UPDATE user SET send_email = 0 WHERE id = %s", (second.id,))
    page = site.ok("team_email_list.php", founder, get={"teamid": team.id})
    assert founder.email_addr in page and second.email_addr not in page
    plain = site.call("team_email_list.php", founder, get={"teamid": team.id, "plain": "1"})
    assert plain.content_type.startswith("text/plain") and founder.email_addr in plain.text
    assert status(site.call("team_email_list.php", second, get={"teamid": team.id})) == 403


def test_team_lookup_rpc_as_boinc(site):
    """team_lookup.php (boincpy.web.rpc) answers BOINC's captured reply for
    the captured team row."""
    from boincpy.web import rpc
    from boincpy.web.http import Request
    ref = fixture("team_lookup.xml")
    name = "Acc Team a188"
    if accounts.lookup_team_by_name(site.db, name) is None:
        team = site.create_team(site.user(), name, type="1")
        site.db.execute("UPDATE team SET create_time = 1795894095, expavg_time = 1795894095 "
                        "WHERE id = %s", (team.id,))
    resp = rpc.handle("team_lookup", site.cfg, Request.of(
        get={"team_name": "Acc Team a188", "format": "xml"}))
    assert _normalized(resp.body) == _normalized(ref)


def test_search_and_pages(site):
    founder = site.user()
    word = "zebra" + secrets.token_hex(3)
    team = site.create_team(founder, "Striped %s" % word, type="5", country="Norway",
                            description="we like %s a lot" % word)
    assert "team_search.php" in site.ok("team.php") and "team_create_form.php" in site.ok(
        "team.php")
    assert 'name="keywords"' in site.ok("team_search.php")
    for query in ({"keywords": word}, {"keywords": "striped"}, {"country": "Norway"},
                  {"type": "5"}):
        page = site.ok("team_search.php", None, get=dict(query, submit="Search"))
        assert "team_display.php?teamid=%d" % team.id in page, query
    xml = site.call("team_search.php", None, get={"keywords": word, "xml": "1"}).text
    assert "<teams>" in xml and "<id>%d</id>" % team.id in xml
    none = site.ok("team_search.php", None, get={"keywords": "nothing" + word,
                                                 "submit": "Search"})
    assert "No teams were found" in none
    assert status(site.call("team_search.php", None, get={"type": "99", "submit": "1"})) == 400
    members = site.ok("team_members.php", None, get={"teamid": team.id, "sort_by":
                                                     "total_credit"})
    assert founder.name in members and "[Founder]" in members
    assert status(site.call("team_members.php", None, get={"teamid": team.id,
                                                           "offset": "5000"})) == 400
    assert status(site.call("team_members.php", None, get={
        "teamid": team.id, "sort_by": "name; drop table user"})) == 400
    # pages needing a login send the visitor to it
    for page in ("team_create_form.php", "team_quit_form.php", "team_founder_transfer_form.php"):
        resp = site.call(page)
        assert status(resp) == 303 and "login_form.php" in dict(resp.headers)["Location"]
