"""The teams pages of the project's web site, at BOINC's paths and with its
form fields (html/user/team*.php, html/inc/team.inc).

==================================  ==============================================
``team.php``                        what teams are, the search form, create link
``team_search.php``                 keywords / country / type / active (``xml=1``:
                                    ``<teams>`` as team_lookup.php prints them)
``team_create_form.php`` ->         a new team (the row BOINC's make_team writes);
``team_create_action.php``          its founder joins it
``team_display.php?teamid=N``       the team's page: info, founder, admins, members
``team_members.php?teamid=N``       members by credit, 20 a page
``team_join_form.php?id=N`` ->      join (team_delta row as BOINC)
``team_join_action.php``
``team_quit_form.php`` ->           leave (team_delta row, admin rights and a
``team_quit_action.php``            foundership request end)
``team_manage.php?teamid=N``        the founder's and admins' tools (and, POST
                                    action=delete, removing an empty team)
``team_edit_form.php`` ->           name, HTML name, URL, description, type,
``team_edit_action.php``            country, joinable (founder and admins)
``team_remove_inactive_form.php``   the founder removes members
``-> team_remove_inactive_action.php``
``team_admins.php?teamid=N``        the founder adds (by e-mail address) and
                                    removes admins (POST action=add/remove)
``team_change_founder_form.php`` -> the founder hands the team over, or declines
``team_change_founder_action.php``  a member's request
``team_founder_transfer_form.php``  a member asks for the foundership (BOINC's
``-> team_founder_transfer_action.php`` 60/90-day rules), completes it
``team_delta.php?teamid=N``         who joined and quit when (founder and admins;
                                    ``xml=1``: BOINC's ``<actions>``)
``team_email_list.php?teamid=N``    ``xml=1``: the members' public records as
                                    BOINC prints them (no e-mail addresses);
                                    else the founder's member list, with the
                                    addresses of members who allow e-mail
==================================  ==============================================

Differences from BOINC, on purpose: every change is a POST carrying the
account's form token (BOINC's team creation and admin pages took GETs or no
token); names, descriptions and URLs are shown escaped (BOINC printed names
raw and descriptions through its HTML sanitizer); the founder-transfer request
and its refusal are e-mailed (boincpy.mail, when the project sends e-mail) but
not sent as private messages.  Who may use a
tool is checked against the database on every request, with the team's id in
the query, so another team's ids are refused.
"""

from boincpy import mail, passwords
from boincpy.cnum import php_truthy
from boincpy.db import forum as forum_table
from boincpy.db import team as team_table
from boincpy.errors import DatabaseError
from boincpy.web import accounts
from boincpy.web.http import BadRequest, Response, log_error
from boincpy.web.markup import Markup, fmt, join, link, url
from boincpy.web.page import (PageError, Redirect, hidden, kv_table, num, render, select,
                              table, text_input)
from boincpy.web.rpc import format_number, team_xml
from boincpy.web.rpc_xml import RpcError, error_response, xml_response
from boincpy.web.user.badges import team_badges_html
from boincpy.web.user.common import date_str, time_str, user_link
from boincpy.xml import xml_escape

MEMBERS_PER_PAGE = 20
MAX_MEMBER_OFFSET = 1000           # team_members.php: "can only display the first 1000"
SEARCH_LIMIT = 20                  # team_search.php's get_teams
# column limits (team.name is varchar(191) under utf8mb4)
LIMITS = {"name": 191, "name_html": 254, "url": 254, "country": 254, "description": 65000}
DESCRIPTION_BYTES = 65535          # team.description is a TEXT
# team.inc: a foundership request may be made 60 days after the last one, or
# 90 days after an unanswered one; the founder has 60 days to answer.
TRANSFER_WAIT = 60 * 86400
TRANSFER_REREQUEST = 90 * 86400
_ER_DUP_ENTRY = 1062


# ---------------------------------------------------------------------------
# Lookups and checks

def _refuse(message, status="403 Forbidden", title="Not allowed"):
    return PageError(message, status, title)


def _team(ctx, teamid):
    team = accounts.lookup_team_by_id(ctx.db, teamid) if teamid else None
    if team is None:
        raise PageError("No such team.", "404 Not Found", "No such team")
    return team


def _teamid(ctx, name="teamid", post=False):
    return ctx.int_arg(name, 0, post=post, minimum=1, maximum=2 ** 31 - 1)


def is_founder(user, team):
    return user is not None and team.userid == user.id


def is_team_admin(db, user, team):
    """The founder or an admin of the team (BOINC's is_team_admin), asked of
    the database."""
    if user is None:
        return False
    return bool(db.query_value(
        "SELECT (SELECT COUNT(*) FROM team WHERE id = %s AND userid = %s) + "
        "(SELECT COUNT(*) FROM team_admin WHERE teamid = %s AND userid = %s)",
        (team.id, user.id, team.id, user.id)))


def _require_admin(ctx, user, team):
    if not is_team_admin(ctx.db, user, team):
        raise _refuse("This page requires the rights of a team admin: only the founder "
                      "and the admins of %s may use it." % team.name)


def _require_founder(ctx, user, team):
    # read again with the user's id in the query: a stale row proves nothing
    if not ctx.db.query_value("SELECT COUNT(*) FROM team WHERE id = %s AND userid = %s",
                              (team.id, user.id)):
        raise _refuse("This page requires being the founder of %s." % team.name)


def _founder_post(ctx):
    """A founder's POST (form token, ``teamid`` in the form): (user, team)."""
    user = ctx.require_action()
    team = _team(ctx, _teamid(ctx, post=True))
    _require_founder(ctx, user, team)
    return user, team


def _locked_user(db, userid):
    """The user's row, locked for this transaction (None if gone)."""
    row = db.query_one("SELECT * FROM user WHERE id = %s FOR UPDATE", (userid,))
    return accounts._user(row) if row else None


def _locked_team(db, teamid):
    row = db.query_one("SELECT * FROM team WHERE id = %s FOR UPDATE", (teamid,))
    return accounts._team(row) if row else None


def _users(db, where, params):
    return [accounts._user(r) for r in db.query("SELECT * FROM user WHERE " + where, params)]


def team_link(team):
    return link(url("team_display.php", teamid=team.id), team.name)


def team_type_name(type_num):
    if 0 < type_num < len(accounts.TEAM_TYPES):
        return accounts.TEAM_TYPES[type_num]
    return "None"


def _type_select(selected, any_label=None):
    return select("type", [(i, name) for i, name in enumerate(accounts.TEAM_TYPES) if i],
                  selected or "", any_label)


def web_url(team_url):
    """The team's web site as a link target: http:// added as BOINC adds it."""
    if not team_url:
        return ""
    low = team_url.lower()
    if low.startswith("http://") or low.startswith("https://"):
        return team_url
    return "http://" + team_url


def _paragraphs(text):
    """Plain text (escaped) with its line breaks kept."""
    return join((fmt("{}", line) for line in (text or "").split("\n")), Markup("<br>"))


def _post_form(ctx, action, fields, button, cls=""):
    """A small POST form carrying the token made for ``action``."""
    inner = join([ctx.token_field(action)] + [hidden(k, v) for k, v in fields])
    return fmt('<form class="inline" method="post" action="{}">{}<button type="submit"{}>{}'
               '</button></form>', action, inner,
               Markup(' class="danger"') if cls == "danger" else Markup(""), button)


# ---------------------------------------------------------------------------
# team.php, team_search.php

def _search_form(params=None):
    params = params or {}
    return fmt(
        '<form class="filters" method="get" action="team_search.php">'
        '<label for="keywords">Key words</label><div>{} <span class="muted small">in team '
        'names or descriptions</span></div>'
        '<label for="country">Country</label><div>{}</div>'
        '<label for="type">Type of team</label><div>{}</div>'
        '<label for="active">Show only active teams</label><div>{}</div>'
        '<span></span><div><button type="submit" name="submit" value="Search">Search</button>'
        '</div></form>',
        text_input("keywords", params.get("keywords", ""), 40),
        text_input("country", params.get("country", ""), 30),
        _type_select(params.get("type"), "---"),
        fmt('<input type="checkbox" name="active" id="active" value="on"{}>',
            Markup(" checked") if params.get("active") else Markup("")))


def team_page(ctx):
    """team.php: what teams are, the search form, the link to create one."""
    ctx.logged_in_user()
    body = fmt(
        '<p>Volunteers of {} can compute together as a team. An account is in one team at '
        'most, and may change teams whenever it likes; its credit stays its own.</p><p>The '
        "volunteer who founds a team looks after it: edits its page, names admins to help, "
        'removes members, and may close the team once nobody is in it. A team page has a '
        '<b>Join this team</b> link for everyone who is logged in.</p><h2>Find a team</h2>{}'
        '<h2>Create a new team</h2><p>No team that suits you? You can {}.</p>',
        ctx.cfg.long_name, _search_form(),
        link("team_create_form.php", "create a team"))
    return render(ctx, "Teams", body)


def _search(db, params):
    """team_search.php's search: weighted matches on name, keywords, country,
    type (BOINC's merge_lists weights 20, 5, 3, 1, 2)."""
    active = " AND expavg_credit > 0.1" if params["active"] else ""
    found = {}

    def add(where, args, weight):
        for row in db.query("SELECT * FROM team WHERE %s%s ORDER BY expavg_credit DESC "
                            "LIMIT %d" % (where, active, SEARCH_LIMIT), args):
            team = found.get(row["id"])
            if team is None:
                team = found[row["id"]] = [accounts._team(row), 0]
            team[1] += weight

    tried = False
    keywords = params["keywords"]
    if keywords:
        lowered = passwords.ascii_lower(keywords)
        add("name = %s", (lowered,), 20)
        pattern = (lowered.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
                   + "%")
        add("name LIKE %s", (pattern,), 5)
        add("MATCH (name, description) AGAINST (%s)", (keywords,), 3)
        tried = True
    if params["country"] and params["country"] != "None":
        add("country = %s", (params["country"],), 1)
        tried = True
    if params["type"] and params["type"] > 1:
        add("type = %s", (params["type"],), 2)
        tried = True
    if not tried:
        add("id > 0", (), 0)
    ranked = sorted(found.values(), key=lambda t: (-t[1], -t[0].expavg_credit, t[0].id))
    return [team for team, _ in ranked]


def team_search(ctx):
    """team_search.php: the search form, or (submit or xml) its results."""
    req = ctx.req
    ctx.logged_in_user()
    if not (req.get("submit") or req.get("xml")):
        return render(ctx, "Find a team", join([fmt(
            "<p>Look for teams by words in their names and descriptions, by country or by "
            "kind: schools, companies, clubs of a country or a region...</p>"),
            _search_form()]))
    params = {"keywords": req.get("keywords").strip()[:200],
              "country": req.get("country").strip()[:254],
              "type": ctx.int_arg("type", 0, minimum=0, maximum=len(accounts.TEAM_TYPES) - 1),
              "active": bool(req.get("active"))}
    teams = _search(ctx.rdb, params)
    if req.get("xml"):
        return xml_response("<teams>\n%s</teams>\n" % "".join(team_xml(t) for t in teams))
    if not teams:
        body = join([fmt("<p>No teams were found for this search. Search again, or {}.</p>",
                         link("team_create_form.php", "create a new team")),
                     _search_form(params)])
    else:
        rows = [(team_link(t), _paragraphs(t.description[:400]), num(t.expavg_credit),
                 team_type_name(t.type), t.country) for t in teams]
        body = join([fmt("<p>Teams matching your search, best matches first. A team's page "
                         "(click its name) has the <b>Join this team</b> link.</p>"),
                     table(("Team name", "Description", "Average credit", "Type", "Country"),
                           rows),
                     fmt("<h2>Change your search</h2>"), _search_form(params)])
    return render(ctx, "Team search results", body)


# ---------------------------------------------------------------------------
# team_create_form.php, team_create_action.php, team_edit_form.php, team_edit_action.php

def _team_form(ctx, team, action, label):
    fields = [ctx.token_field(action)]
    if team is not None:
        fields.append(hidden("teamid", team.id))
    t = team
    return fmt(
        '<p><b>Privacy</b>: the project preferences of a founder\'s account (resource '
        'share and the like) are shown publicly.</p>'
        '<form class="filters" method="post" action="{}">{}'
        '<label for="name">Team name, text version</label><div>{}</div>'
        '<label for="name_html">Team name, HTML version</label><div>{} '
        '<span class="muted small">leave blank if you don\'t know HTML</span></div>'
        '<label for="url">URL of team web page, if any</label><div>{} '
        '<span class="muted small">without "http://"</span></div>'
        '<label for="description">Description of team</label><div><textarea name="description" '
        'id="description" rows="8" cols="60">{}</textarea></div>'
        '<label for="type">Type of team</label><div>{}</div>'
        '<label for="country">Country</label><div>{}</div>'
        '<label for="joinable">Accept new members?</label><div>{}</div>'
        '<span></span><div><button type="submit" name="new" value="1">{}</button></div>'
        '</form>', action, join(fields),
        text_input("name", t.name if t else "", 50),
        text_input("name_html", t.name_html if t else "", 50),
        text_input("url", t.url if t else "", 60),
        t.description if t else "", _type_select(t.type if t else None),
        text_input("country", t.country if t else "International", 30),
        fmt('<input type="checkbox" name="joinable" id="joinable" value="on"{}>',
            Markup(" checked") if (t is None or t.joinable) else Markup("")), label)


def _form_values(ctx):
    """The team form's fields, checked; PageError naming a bad one."""
    req = ctx.req
    values = {"name": accounts.strip_tags(req.post("name").strip()),
              "name_html": req.post("name_html"),
              "url": accounts.strip_tags(req.post("url").strip()),
              "description": req.post("description"),
              "country": req.post("country").strip() or "International"}
    for key, limit in LIMITS.items():
        if len(values[key]) > limit:
            raise PageError("%s: at most %d characters, please." % (key, limit))
    if len(values["description"].encode("utf-8", "surrogatepass")) > DESCRIPTION_BYTES:
        raise PageError("description: at most %d bytes of UTF-8, please." % DESCRIPTION_BYTES)
    if not values["name"]:
        raise PageError("name: you must choose a non-blank team name.")
    type_num = ctx.int_arg("type", 0, post=True, minimum=0,
                           maximum=len(accounts.TEAM_TYPES) - 1)
    values["type"] = type_num
    if "http://" in values["url"]:
        values["url"] = values["url"][values["url"].find("http://") + 7:]
    if not accounts.is_valid_country(values["country"]):
        raise PageError("country: not a valid country name.")
    values["joinable"] = 1 if req.post("joinable") else 0
    return values


def team_create_form(ctx):
    """team_create_form.php: the new team's form (not while in a team)."""
    user = ctx.require_login()
    if ctx.cfg.disable_team_creation:
        raise _refuse("The project does not allow new teams.")
    team = accounts.lookup_team_by_id(ctx.db, user.teamid) if user.teamid else None
    if team is not None:
        body = fmt("<p>You belong to {}. You must {} before creating a new one.</p>",
                   team_link(team), link("team_quit_form.php", "quit this team"))
    else:
        body = _team_form(ctx, None, "team_create_action.php", "Create a team")
    return render(ctx, "Create a team", body)


def _duplicate(exc):
    return getattr(exc, "mysql_code", None) == _ER_DUP_ENTRY


def team_create_action(ctx):
    """team_create_action.php: make the team (BOINC's make_team), join its founder."""
    user = ctx.require_action()
    if ctx.cfg.disable_team_creation:
        raise _refuse("The project does not allow new teams.")
    if accounts.is_banished(ctx.db, user.id, ctx.now):
        raise _refuse("You are banned from posting: you can't create a team.")
    v = _form_values(ctx)
    db = ctx.db
    taken = "name: a team named %s already exists; try another name." % v["name"]
    with db.transaction():
        if accounts.lookup_team_by_name(db, v["name"]) is not None:
            raise PageError(taken)
        try:
            team = accounts.make_team(db, user.id, v["name"], v["url"], v["type"],
                                      v["name_html"], v["description"], v["country"],
                                      ctx.now)
        except DatabaseError as exc:
            if _duplicate(exc):
                raise PageError(taken) from None
            raise
        member = _locked_user(db, user.id)
        accounts.join_team(db, team, member, ctx.now)
    raise Redirect(url("team_display.php", teamid=team.id))


def team_edit_form(ctx):
    """team_edit_form.php?teamid=N (founder and admins)."""
    user = ctx.require_login()
    team = _team(ctx, _teamid(ctx))
    _require_admin(ctx, user, team)
    return render(ctx, "Edit %s" % team.name,
                  _team_form(ctx, team, "team_edit_action.php", "Update team info"))


def team_edit_action(ctx):
    """team_edit_action.php: store the edited fields (founder and admins)."""
    user = ctx.require_action()
    team = _team(ctx, _teamid(ctx, post=True))
    _require_admin(ctx, user, team)
    v = _form_values(ctx)
    db = ctx.db
    taken = "name: the name '%s' is being used by another team." % v["name"]
    with db.transaction():
        other = accounts.lookup_team_by_name(db, v["name"])
        if other is not None and other.id != team.id:
            raise PageError(taken)
        try:
            team_table.update_team_info(db, team.id, v["name"], passwords.ascii_lower(v["name"]),
                                        v["name_html"], v["url"], v["description"], v["type"],
                                        v["country"], v["joinable"])
        except DatabaseError as exc:
            if _duplicate(exc):
                raise PageError(taken) from None
            raise
    raise Redirect(url("team_display.php", teamid=team.id))


# ---------------------------------------------------------------------------
# team_display.php, team_members.php

def _counts(db, teamid):
    row = db.query_one(
        "SELECT COUNT(*) AS n, SUM(total_credit > 0) AS worked, "
        "SUM(expavg_credit > 0.1) AS active FROM user WHERE teamid = %s", (teamid,))
    return int(row["n"] or 0), int(row["worked"] or 0), int(row["active"] or 0)


def _admins(db, teamid):
    return _users(db, "id IN (SELECT userid FROM team_admin WHERE teamid = %s) ORDER BY id",
                  (teamid,))


def _new_members(db, teamid, now):
    """Members who joined in the last day and are still members (new_member_list)."""
    return _users(db, "teamid = %s AND id IN (SELECT userid FROM team_delta WHERE teamid = %s "
                      "AND timestamp > %s AND joining = 1) ORDER BY id",
                  (teamid, teamid, now - 86400))


def transfer_ok_time(team):
    return team.ping_time + TRANSFER_WAIT


def new_transfer_request_ok(team, now):
    """BOINC's rules: no open request and none in the last 60 days, or an
    open one older than 90 days."""
    if team.ping_user <= 0:
        return team.ping_time < now - TRANSFER_WAIT
    return team.ping_time < now - TRANSFER_REREQUEST


def _foundership_link(ctx, user, team):
    now = ctx.now
    form = "team_founder_transfer_form.php"
    if team.ping_user == user.id:
        if now > transfer_ok_time(team):
            return fmt("Requested by you, and the founder's response deadline has passed. "
                       "{}.", link(form, "Complete foundership transfer"))
        return fmt("{}; the founder's response deadline is {}", link(form, "Requested by you"),
                   date_str(transfer_ok_time(team)))
    if new_transfer_request_ok(team, now):
        return link(form, "Initiate request")
    return link(form, "Deferred")


def _member_table(ctx, db, team, offset, sort_by):
    order = "total_credit DESC" if sort_by == "total_credit" else "expavg_credit DESC"
    members = _users(db, "teamid = %%s ORDER BY %s, id LIMIT %%s, %%s" % order,
                     (team.id, offset, MEMBERS_PER_PAGE))
    admin_ids = {r["userid"] for r in db.query("SELECT userid FROM team_admin WHERE teamid = %s",
                                               (team.id,))}
    rows = []
    for i, m in enumerate(members):
        role = (" [Founder]" if m.id == team.userid else
                " [Admin]" if m.id in admin_ids else "")
        rows.append((fmt("{}) {}{}", offset + i + 1, user_link(m.id, m.name), role),
                     num(m.total_credit, 0), num(m.expavg_credit), m.country))

    def head(label):
        column = {"Total credit": "total_credit",
                  "Recent average credit": "expavg_credit"}.get(label)
        if column is None or column == sort_by:
            return label
        return link(url("team_members.php", teamid=team.id, sort_by=column, offset=offset),
                    label)
    nav = []
    if offset > 0:
        nav.append(link(url("team_members.php", teamid=team.id, sort_by=sort_by,
                            offset=max(0, offset - MEMBERS_PER_PAGE)),
                        "Previous %d" % MEMBERS_PER_PAGE))
    if len(members) == MEMBERS_PER_PAGE:
        nav.append(link(url("team_members.php", teamid=team.id, sort_by=sort_by,
                            offset=offset + MEMBERS_PER_PAGE), "Next %d" % MEMBERS_PER_PAGE))
    return join([table(("Name", "Total credit", "Recent average credit", "Country"), rows,
                       empty="no members", head=head),
                 fmt('<p class="paging">{}</p>', join(nav, " \u00b7 ")) if nav else ""])


def team_display(ctx):
    """team_display.php?teamid=N: the team's page."""
    team = _team(ctx, _teamid(ctx))
    user = ctx.logged_in_user()
    db = ctx.db
    nusers, worked, active = _counts(db, team.id)
    founder = accounts.lookup_user_by_id(db, team.userid) if team.userid else None
    admins = _admins(db, team.id)
    info = []
    if team.description:
        info.append(("Description", _paragraphs(team.description)))
    info.append(("Created", date_str(team.create_time)))
    if team.url:
        site = web_url(team.url)
        info.append(("Web site", link(site, site, rel="nofollow")))
    info += [("Total credit", num(team.total_credit, 0)),
             ("Recent average credit", num(team.expavg_credit, 0)),
             ("Country", team.country), ("Type", team_type_name(team.type))]
    actions = []
    if user is not None:
        if user.teamid != team.id:
            if team.joinable:
                actions.append(link(url("team_join_form.php", id=team.id), "Join this team"))
            else:
                actions.append("Not accepting new members")
        else:
            actions.append(link("team_quit_form.php", "Quit this team"))
            if user.id == team.userid:
                if team.ping_user > 0:
                    info.append(("Foundership change requested", link(
                        url("team_change_founder_form.php", teamid=team.id),
                        "Respond by %s" % date_str(transfer_ok_time(team)))))
            else:
                info.append(("Team foundership change", _foundership_link(ctx, user, team)))
        if is_team_admin(db, user, team):
            actions.append(link(url("team_manage.php", teamid=team.id), "Administer team"))
            actions.append(link(url("pm.php", action="new", teamid=team.id),
                                "Send message to team"))
    board = _team_forum(db, team.id)
    if board is not None and (not ctx.cfg.team_forums_members_only
                              or (user is not None and user.teamid == team.id)):
        info.append(("Message board", link(url("forum_forum.php", id=board["id"]),
                                           board["title"] or team.name)))
    held = team_badges_html(db, team.id)
    if held:
        info.append(("Badges", held))
    members_link = url("team_members.php", teamid=team.id, offset=0, sort_by="expavg_credit")
    people = [("Founder", user_link(founder.id, founder.name) if founder else "---")]
    if admins:
        people.append(("Admins", join((user_link(a.id, a.name) for a in admins), " \u00b7 ")))
    new = _new_members(db, team.id, ctx.now)
    people += [("New members in last day",
                join((user_link(u.id, u.name) for u in new), " \u00b7 ") if new else "0"),
               ("Total members", fmt("{} ({})", nusers, link(members_link, "view"))),
               ("Active members", fmt("{} ({})", active, link(members_link, "view"))),
               ("Members with credit", fmt("{} ({})", worked, link(url(
                   "team_members.php", teamid=team.id, offset=0, sort_by="total_credit"),
                   "view")))]
    body = [fmt("<h2>Team info</h2>"), kv_table(info)]
    if actions:
        body.append(fmt('<p class="actions">{}</p>', join(actions, " \u00b7 ")))
    body += [fmt("<h2>Members</h2>"), kv_table(people),
             _member_table(ctx, db, team, 0, "expavg_credit")]
    return render(ctx, team.name, join(body))


def team_members(ctx):
    """team_members.php?teamid=N[&offset=K&sort_by=total_credit|expavg_credit]."""
    team = _team(ctx, _teamid(ctx))
    ctx.logged_in_user()
    offset = ctx.int_arg("offset", 0, minimum=0)
    if offset > MAX_MEMBER_OFFSET:
        raise PageError("offset: can only display the first %d members." % MAX_MEMBER_OFFSET)
    sort_by = ctx.req.get("sort_by") or "expavg_credit"
    if sort_by not in ("expavg_credit", "total_credit"):
        raise PageError("sort_by: expavg_credit or total_credit.")
    return render(ctx, "Members of %s" % team.name, join([
        fmt("<p>{}</p>", team_link(team)), _member_table(ctx, ctx.rdb, team, offset, sort_by)]))


# ---------------------------------------------------------------------------
# team_join_form.php, team_join_action.php, team_quit_form.php, team_quit_action.php

def team_join_form(ctx):
    """team_join_form.php?id=N: what joining means, and the button."""
    user = ctx.require_login()
    team = _team(ctx, ctx.int_arg("id", 0, minimum=1, maximum=2 ** 31 - 1))
    if not team.joinable:
        raise _refuse("The team %s is not joinable." % team.name)
    body = fmt('<ul><li>If your account allows the project to e-mail you, the team\'s '
               'founder will see your e-mail address.</li><li>Your credit stays as it is: a '
               'team adds it up, it does not take it.</li></ul><p>{}</p>',
               _post_form(ctx, "team_join_action.php", [("teamid", team.id)], "Join team"))
    if user.teamid == team.id:
        body = fmt("<p>You are already a member of {}.</p>", team_link(team))
    return render(ctx, "Join %s" % team.name, body)


def team_join_action(ctx):
    """team_join_action.php: join (leaving the old team, as BOINC's user_join_team)."""
    user = ctx.require_action()
    db = ctx.db
    with db.transaction():
        team = _locked_team(db, _teamid(ctx, post=True))
        if team is None:
            raise PageError("No such team.", "404 Not Found", "No such team")
        if not team.joinable:
            raise _refuse("The team %s is not joinable." % team.name)
        member = _locked_user(db, user.id)
        if member.teamid == team.id:
            return render(ctx, "Already a member",
                          fmt("<p>You are already a member of {}.</p>", team_link(team)))
        accounts.join_team(db, team, member, ctx.now)
    return render(ctx, "Joined %s" % team.name,
                  fmt("<p>You have joined {}.</p>", team_link(team)))


def team_quit_form(ctx):
    """team_quit_form.php: leaving the user's team."""
    user = ctx.require_login()
    team = accounts.lookup_team_by_id(ctx.db, user.teamid) if user.teamid else None
    if team is None:
        raise PageError("You are not a member of a team.", "404 Not Found", "No such team")
    body = fmt('<ul><li>You can join this team again later, or any other team.</li><li>Your '
               "account keeps all of its credit.</li></ul><p>{}</p>", _post_form(ctx, "team_quit_action.php", [("id", team.id)],
                                       "Quit team"))
    return render(ctx, "Quit %s" % team.name, body)


def team_quit_action(ctx):
    """team_quit_action.php: leave the team ``id`` if the user belongs to it."""
    user = ctx.require_action()
    teamid = ctx.int_arg("id", 0, post=True, minimum=0, maximum=2 ** 31 - 1)
    db = ctx.db
    with db.transaction():
        member = _locked_user(db, user.id)
        if not teamid or member.teamid != teamid:
            raise PageError("Unable to quit team: the team doesn't exist, or you don't "
                            "belong to it.", "403 Forbidden", "Unable to quit team")
        accounts.quit_team(db, member, ctx.now)
    raise Redirect("home.php")


# ---------------------------------------------------------------------------
# team_manage.php

def team_manage(ctx):
    """team_manage.php?teamid=N: the admins' tools; POST action=delete: the
    founder removes a team without members."""
    req = ctx.req
    if req.method == "POST":
        user = ctx.require_action()
        team = _team(ctx, _teamid(ctx, post=True))
        if req.post("action") != "delete":
            raise PageError("action: only 'delete' is posted here.")
        _require_founder(ctx, user, team)
        db = ctx.db
        with db.transaction():
            if _locked_team(db, team.id) is None or db.query_value(
                    "SELECT COUNT(*) FROM user WHERE teamid = %s", (team.id,)):
                raise _refuse("Can't delete a team that has members.")
            team_table.delete_team(db, team.id)
        return render(ctx, "Team %s deleted" % team.name,
                      fmt("<p>The team {} is deleted.</p>", team.name))
    user = ctx.require_login()
    team = _team(ctx, _teamid(ctx))
    _require_admin(ctx, user, team)
    items = [fmt("<li>{}<br><small>Name, web site, description, kind of team, country"
                 "</small></li>", link(url("team_edit_form.php", teamid=team.id),
                                       "Edit team info")),
             fmt("<li>Member list: {} \u00b7 {} \u00b7 {}</li>",
                 link(url("team_email_list.php", teamid=team.id), "HTML"),
                 link(url("team_email_list.php", teamid=team.id, plain=1), "text"),
                 link(url("team_email_list.php", teamid=team.id, xml=1), "XML")),
             fmt("<li>Change history: {} \u00b7 {}<br><small>Who joined and who left, and "
                 "when</small></li>", link(url("team_delta.php", teamid=team.id), "HTML"),
                 link(url("team_delta.php", teamid=team.id, xml=1), "XML"))]
    if is_founder(user, team):
        if team.ping_user > 0:
            items.append(fmt("<li>{}</li>", link(
                url("team_change_founder_form.php", teamid=team.id),
                "Respond to foundership request")))
        items += [
            fmt("<li>{}<br><small>Take members off the team</small></li>", link(url("team_remove_inactive_form.php", teamid=team.id),
                              "Remove members")),
            fmt("<li>{}<br><small>Hand the team over to another member</small></li>",
                link(url("team_change_founder_form.php", teamid=team.id), "Change founder")),
            fmt("<li>{}<br><small>Create or edit the team's message board</small></li>",
                link(url("team_forum.php", teamid=team.id, cmd="manage"), "Team message board")),
            fmt("<li>{}<br><small>Members who may edit the team with you</small></li>", link(url("team_admins.php", teamid=team.id),
                              "Add/remove Team Admins")),
            fmt("<li>{} <small>(allowed only if the team has no members)</small></li>",
                _post_form(ctx, "team_manage.php", [("teamid", team.id), ("action", "delete")],
                           "Remove team", "danger"))]
    return render(ctx, "Team administration for %s" % team.name,
                  fmt("<ul>{}</ul>", join(items)))


# ---------------------------------------------------------------------------
# team_remove_inactive_form.php, team_remove_inactive_action.php

def team_remove_inactive_form(ctx):
    """team_remove_inactive_form.php?teamid=N: the members the founder may remove."""
    user = ctx.require_login()
    team = _team(ctx, _teamid(ctx))
    _require_founder(ctx, user, team)
    members = [m for m in _users(ctx.db, "teamid = %s ORDER BY id", (team.id,))
               if m.id not in (user.id, team.userid)]
    rows = [(fmt('<input type="checkbox" name="remove_{}" id="remove_{}" value="{}">', i, i,
                 m.id), fmt("{} ({})", user_link(m.id, m.name), m.id), num(m.total_credit),
             num(m.expavg_credit)) for i, m in enumerate(members)]
    body = [fmt('<form method="post" action="team_remove_inactive_action.php">{}{}{}',
                ctx.token_field("team_remove_inactive_action.php"), hidden("id", team.id),
                hidden("ninactive_users", len(members))),
            table(("Remove?", "Name (ID)", "Total credit", "Recent average credit"), rows,
                  empty="No members are eligible for removal.")]
    if members:
        body.append(fmt('<button type="submit" class="danger">Remove users</button>'))
    body.append(Markup("</form>"))
    return render(ctx, "Remove members from %s" % team.name, join(body))


def team_remove_inactive_action(ctx):
    """team_remove_inactive_action.php: the founder removes the checked members."""
    user = ctx.require_action()
    team = _team(ctx, _teamid(ctx, "id", post=True))
    count = ctx.int_arg("ninactive_users", 0, post=True, minimum=0, maximum=100000)
    ids = []
    for i in range(count):
        uid = ctx.int_arg("remove_%d" % i, 0, post=True, minimum=0, maximum=2 ** 31 - 1)
        if uid:
            ids.append(uid)
    db = ctx.db
    lines = []
    with db.transaction():
        if _locked_team(db, team.id) is None:
            raise PageError("No such team.", "404 Not Found", "No such team")
        _require_founder(ctx, user, team)
        for uid in ids:
            member = _locked_user(db, uid)
            if member is None:
                continue
            if member.teamid != team.id:
                lines.append(fmt("<li>{} is not a member of {}</li>", member.name, team.name))
            elif member.id == team.userid:
                lines.append(fmt("<li>{} founds the team and stays</li>", member.name))
            else:
                accounts.quit_team(db, member, ctx.now)
                lines.append(fmt("<li>{} has been removed</li>", member.name))
    return render(ctx, "Removing users from %s" % team.name,
                  join([fmt("<ul>{}</ul>", join(lines)) if lines else
                        fmt("<p>Nobody was removed.</p>"),
                        fmt("<p>{}</p>", team_link(team))]))


# ---------------------------------------------------------------------------
# team_admins.php

def team_admins(ctx):
    """team_admins.php?teamid=N: the list; POST action=add (email_addr) or
    remove (userid), founder only (BOINC took these as GETs)."""
    req = ctx.req
    db = ctx.db
    if req.method == "POST":
        _, team = _founder_post(ctx)
        action = req.post("action")
        with db.transaction():
            if action == "remove":
                uid = ctx.int_arg("userid", 0, post=True, minimum=1, maximum=2 ** 31 - 1)
                if not team_table.delete_team_admin(db, team.id, uid):
                    raise PageError("userid: that user is not an admin of %s." % team.name)
            elif action == "add":
                email = passwords.ascii_lower(req.post("email_addr").strip())
                member = accounts.lookup_user_by_email(db, email) if email else None
                if member is None:
                    raise PageError("email_addr: no such user.")
                if member.teamid != team.id:
                    raise PageError("email_addr: that user is not a member of the team.")
                if is_team_admin(db, member, team):
                    raise PageError("email_addr: %s is already an admin of %s."
                                    % (email, team.name))
                team_table.insert_team_admin(db, team.id, member.id, ctx.now)
            else:
                raise PageError("action: add or remove.")
        raise Redirect(url("team_admins.php", teamid=team.id))
    user = ctx.require_login()
    team = _team(ctx, _teamid(ctx))
    _require_founder(ctx, user, team)
    rows = []
    for r in db.query("SELECT u.id, u.name, a.create_time FROM team_admin a JOIN user u "
                      "ON u.id = a.userid WHERE a.teamid = %s ORDER BY a.create_time, u.id",
                      (team.id,)):
        rows.append((link(url("show_user.php", userid=r["id"]), r["name"]),
                     date_str(r["create_time"]),
                     _post_form(ctx, "team_admins.php", [("teamid", team.id),
                                                         ("action", "remove"),
                                                         ("userid", r["id"])], "Remove")))
    body = fmt(
        "<p>Admins help the founder: they edit the team's page and see its history; only "
        "the founder removes members, names admins or hands the team over. An admin who "
        "leaves the team is no admin any more.</p>{}<h2>Add Team Admin</h2>"
        '<form class="filters" method="post" action="team_admins.php">{}{}{}'
        '<label for="email_addr">Email address of team member</label><div>{}</div>'
        '<span></span><div><button type="submit">Add</button></div></form>',
        table(("Name", "Became Team Admin on", ""), rows,
              empty="There are currently no Team Admins"),
        ctx.token_field("team_admins.php"), hidden("teamid", team.id), hidden("action", "add"),
        text_input("email_addr", "", 40))
    return render(ctx, "Add or remove Team Admins", body)


# ---------------------------------------------------------------------------
# team_change_founder_form.php, team_change_founder_action.php,
# team_founder_transfer_form.php, team_founder_transfer_action.php

def team_change_founder_form(ctx):
    """team_change_founder_form.php?teamid=N: the founder picks a new founder
    (or declines a member's request)."""
    user = ctx.require_login()
    team = _team(ctx, _teamid(ctx))
    _require_founder(ctx, user, team)
    db = ctx.db
    parts = []
    if team.ping_user < 0:
        asker = accounts.lookup_user_by_id(db, -team.ping_user)
        parts.append(fmt("<p>{} asked to become this team's founder on {}, then left the "
                         "team: the request ended with that.</p>",
                         asker.name if asker else "(deleted)", date_str(team.ping_time)))
        # (BOINC's page also clears the lapsed request here, in a GET; it changes
        # nothing anyone sees: new_transfer_request_ok reads a negative ping_user
        # as no request)
    elif team.ping_user > 0:
        asker = accounts.lookup_user_by_id(db, team.ping_user)
        parts.append(fmt(
            "<p>{}, a member, asks to become this team's founder.</p>{}<p>Unless you decline "
            "by {}, they may then take the team over. To agree now, choose them below.</p>",
            asker.name if asker else "(deleted)",
            _post_form(ctx, "team_founder_transfer_action.php",
                       [("action", "decline"), ("teamid", team.id)], "Decline request"),
            date_str(transfer_ok_time(team))))
    else:
        parts.append(fmt("<p>Nobody asks to become this team's founder.</p>"))
    members = [m for m in _users(db, "teamid = %s ORDER BY id", (team.id,))
               if m.id != team.userid]
    rows = [(fmt('<input type="radio" name="userid" value="{}">', m.id), m.name,
             num(m.total_credit), num(m.expavg_credit)) for m in members]
    parts.append(fmt(
        '<p>Choose the member who is to found the team from now on.</p><form method="post" action="team_change_founder_action.php">'
        '{}{}{}{}</form>', ctx.token_field("team_change_founder_action.php"),
        hidden("teamid", team.id),
        table(("New founder?", "Name", "Total credit", "Recent average credit"), rows,
              empty="The team has no other member."),
        fmt('<button type="submit">Change founder</button>') if members else ""))
    return render(ctx, "Change founder of %s" % team.name, join(parts))


def team_change_founder_action(ctx):
    """team_change_founder_action.php: the founder hands the team to a member."""
    user = ctx.require_action()
    team = _team(ctx, _teamid(ctx, post=True))
    uid = ctx.int_arg("userid", 0, post=True, minimum=0, maximum=2 ** 31 - 1)
    db = ctx.db
    with db.transaction():
        if _locked_team(db, team.id) is None:
            raise PageError("No such team.", "404 Not Found", "No such team")
        _require_founder(ctx, user, team)
        new = _locked_user(db, uid) if uid else None
        if new is None or new.teamid != team.id:
            raise PageError("userid: not a member of %s." % team.name)
        team_table.set_founder(db, team.id, new.id)
    return render(ctx, "Changing founder of %s" % team.name,
                  fmt("<p>{} is now founder of {}.</p>", new.name, team_link(team)))


def team_founder_transfer_form(ctx):
    """team_founder_transfer_form.php: a member asks for (or completes) the
    foundership of their team."""
    user = ctx.require_login()
    team = accounts.lookup_team_by_id(ctx.db, user.teamid) if user.teamid else None
    if team is None:
        raise PageError("You need to be a member of a team to access this page.",
                        "403 Forbidden", "Not a member")
    now = ctx.now
    action = "team_founder_transfer_action.php"
    if user.id == team.userid:
        body = fmt("<p>You are the founder of {}.</p>", team_link(team))
    elif not team.userid:
        body = join([fmt("<p>{} has no founder: you may become it.</p>", team_link(team)),
                     _post_form(ctx, action, [("action", "initiate_transfer")],
                                "Become founder")])
    elif user.id == team.ping_user:
        body = fmt("<p>You requested the foundership of {} on {}.</p>", team.name,
                   date_str(team.ping_time))
        if now > transfer_ok_time(team):
            body = join([body, fmt("<p>The founder has not answered in 60 days: the team can be "
                                   "yours.</p>"),
                         _post_form(ctx, action, [("action", "finalize_transfer")],
                                    "Assume foundership")])
        else:
            body = join([body, fmt("<p>Without an answer by {}, you may take the team over "
                                   "then.</p>",
                                   date_str(transfer_ok_time(team)))])
    elif new_transfer_request_ok(team, now):
        body = join([fmt(
            "<p>Has the founder gone quiet? Ask to take the team over: the founder can hand "
            "it to you or decline, and without an answer in 60 days it may become yours.</p>"),
            _post_form(ctx, action, [("action", "initiate_transfer")], "Request foundership")])
    elif team.ping_user:
        asker = accounts.lookup_user_by_id(ctx.db, abs(team.ping_user))
        body = fmt("<p>{} asked to become the founder on {} already.</p>",
                   asker.name if asker else "(deleted)", date_str(team.ping_time))
    else:
        body = fmt("<p>Someone asked to become the founder less than 90 days ago; a new "
                   "request can be made later.</p>")
    body = join([body, fmt("<p>{}</p>", link(url("team_display.php", teamid=team.id),
                                             "Return to team page"))])
    return render(ctx, "Request foundership of %s" % team.name, body)


def _mail(ctx, to, subject, body):
    """E-mail a user about their team if the project sends e-mail; True if it went
    (a failure is logged: the request stands, as in BOINC, whose mail may bounce)."""
    if not mail.configured(ctx.cfg) or not to.email_addr:
        return False
    try:
        mail.send(ctx.cfg, to.email_addr, subject, body, to.name)
    except mail.MailError as exc:
        log_error("team e-mail not sent: %s" % exc)
        return False
    return True


def _site_url(ctx, page, **params):
    return (ctx.cfg.secure_url_base or ctx.cfg.master_url) + url(page, **params)


def team_founder_transfer_action(ctx):
    """team_founder_transfer_action.php: action initiate_transfer,
    finalize_transfer (the asking member) or decline (the founder, teamid)."""
    user = ctx.require_action()
    action = ctx.req.post("action")
    db = ctx.db
    now = ctx.now
    if action == "decline":
        team = _team(ctx, _teamid(ctx, post=True))
        with db.transaction():
            _require_founder(ctx, user, team)
            locked = _locked_team(db, team.id)
            asker = None
            if locked.ping_user:
                team_table.clear_ping_user(db, team.id)
                text = fmt("<p>The foundership request has been declined.</p>")
                if locked.ping_user > 0:
                    asker = accounts.lookup_user_by_id(db, locked.ping_user)
            else:
                text = fmt("<p>There were no foundership requests.</p>")
        if asker is not None:
            _mail(ctx, asker, "%s: team founder transfer declined" % ctx.cfg.long_name,
                  "The founder of the team %s on %s declined your request to become its "
                  "founder.\nYou may ask again 90 days after your first request.\n"
                  % (team.name, ctx.cfg.long_name))
        return render(ctx, "Decline founder change request",
                      join([text, fmt("<p>{}</p>", team_link(team))]))
    if action not in ("initiate_transfer", "finalize_transfer"):
        raise PageError("action: initiate_transfer, finalize_transfer or decline.")
    with db.transaction():
        member = _locked_user(db, user.id)
        team = _locked_team(db, member.teamid) if member.teamid else None
        if team is None:
            raise PageError("You must be a member of a team to access this page.",
                            "403 Forbidden", "Not a member")
        if action == "initiate_transfer":
            if not team.userid or accounts.lookup_user_by_id(db, team.userid) is None:
                team_table.set_founder(db, team.id, member.id, clear_ping_time=True)
                title, text = "Team founder request granted", fmt(
                    "<p>You are now the founder of {}.</p>", team_link(team))
            elif team.userid == member.id:
                raise PageError("You are the founder of this team already.")
            elif new_transfer_request_ok(team, now):
                team_table.set_ping(db, team.id, member.id, now)
                founder = accounts.lookup_user_by_id(db, team.userid)
                title, text = "Requesting foundership of %s" % team.name, fmt(
                    "<p>Your request is noted: the founder sees it on the team's pages. With "
                    "no answer in 60 days, you may take the team over.</p>")
            else:
                raise _refuse("Foundership request not allowed now.")
        else:
            if member.id != team.ping_user or not now > transfer_ok_time(team):
                raise _refuse("Foundership request not allowed now.")
            team_table.set_founder(db, team.id, member.id, clear_ping_time=True)
            title, text = "Assumed foundership of %s" % team.name, fmt(
                "<p>You founded {} now.</p>", team_link(team))
    if action == "initiate_transfer" and title.startswith("Requesting"):
        if _mail(ctx, founder, "%s: team founder transfer" % ctx.cfg.long_name,
                 "%s, a member of your team %s on %s, asks you to hand the team's "
                 "foundership over to them.\nTo accept or decline, visit\n%s\nIf you don't "
                 "answer within 60 days, %s may become the team's founder.\n"
                 % (member.name, team.name, ctx.cfg.long_name,
                    _site_url(ctx, "team_change_founder_form.php", teamid=team.id),
                    member.name)):
            text = join([text, fmt("<p>The founder was told by e-mail.</p>")])
    return render(ctx, title, text)


# ---------------------------------------------------------------------------
# team_email_list.php

def member_xml(user, creditonly=False):
    """BOINC's show_team_member (no e-mail address: the list is public)."""
    if creditonly and not user.total_credit:
        return ""
    out = ["<user>\n    <id>%d</id>\n    <cpid>%s</cpid>\n    <total_credit>%s</total_credit>"
           % (user.id, passwords.external_cpid(user.cross_project_id, user.email_addr),
              format_number(user.total_credit))]
    if not creditonly:
        out.append("    <create_time>%d</create_time>\n    <name>%s</name>\n"
                   "    <expavg_credit>%s</expavg_credit>\n    <expavg_time>%s</expavg_time>\n"
                   "    <has_profile>%d</has_profile>\n"
                   % (user.create_time, xml_escape(user.name, quote=True),
                      format_number(user.expavg_credit), format_number(user.expavg_time),
                      user.has_profile))
        out.append("     <country>%s</country>\n" % xml_escape(user.country))
    out.append("</user>\n")
    return "".join(out)


def team_email_list(ctx):
    """team_email_list.php?teamid=N: xml=1 -> the members' public records
    (anyone, as BOINC); else the founder's list (plain=1: text)."""
    req = ctx.req
    if php_truthy(req.get("xml")):
        try:
            team = accounts.lookup_team_by_id(ctx.rdb, req.get_int("teamid"))
            if team is None:
                raise RpcError(-136)
        except BadRequest as exc:       # no such team, a bad teamid: BOINC's <error>
            return error_response(exc)
        creditonly = php_truthy(req.get("creditonly"))
        members = _users(ctx.rdb, "teamid = %s ORDER BY id", (team.id,))
        return xml_response("<users>\n%s</users>\n"
                            % "".join(member_xml(m, creditonly) for m in members))
    user = ctx.require_login()
    team = _team(ctx, _teamid(ctx))
    _require_founder(ctx, user, team)
    members = _users(ctx.db, "teamid = %s ORDER BY id", (team.id,))
    if php_truthy(req.get("plain")):
        text = "".join("%s %d%s\n" % (m.name, m.id, (" " + m.email_addr) if m.send_email else "")
                       for m in members)
        return Response(text, "text/plain; charset=utf-8")
    rows = [(user_link(m.id, m.name), m.id, m.email_addr if m.send_email else "",
             num(m.total_credit), num(m.expavg_credit), m.country) for m in members]
    body = join([table(("Name", "ID", "Email address", "Total credit", "Recent average credit",
                        "Country"), rows, empty="no members"),
                 fmt('<p class="muted small">Addresses are shown for the members who allow '
                     'the project to e-mail them. {}</p>',
                     link(url("team_email_list.php", teamid=team.id, plain=1),
                          "Show as plain text"))])
    return render(ctx, "Members of %s" % team.name, body)


# ---------------------------------------------------------------------------
# team_delta.php

def team_delta(ctx):
    """team_delta.php?teamid=N[&xml=1]: who joined and quit when (founder and admins)."""
    xml = php_truthy(ctx.req.get("xml"))
    user = ctx.require_login()
    teamid = _teamid(ctx)
    team = accounts.lookup_team_by_id(ctx.db, teamid) if teamid else None
    if team is None or not is_team_admin(ctx.db, user, team):
        if xml:
            return error_response(RpcError(-1, "Not founder or admin"))
        raise _refuse("Not founder or admin.")
    rows = ctx.rdb.query("SELECT d.*, u.name FROM team_delta d LEFT JOIN user u ON u.id = "
                         "d.userid WHERE d.teamid = %s ORDER BY d.timestamp, d.joining DESC",
                         (team.id,))
    if xml:
        return xml_response("<actions>\n%s</actions>\n" % "".join(
            "    <action>\n        <id>%d</id>\n        <name>%s</name>\n"
            "        <action>%s</action>\n        <total_credit>%s</total_credit>\n"
            "        <when>%s</when>\n    </action>\n"
            % (r["userid"], xml_escape(r["name"] or "", quote=True),
               "joined" if r["joining"] else "quit", format_number(r["total_credit"]),
               time_str(r["timestamp"])) for r in rows))
    table_rows = [(time_str(r["timestamp"]),
                   fmt("{} (ID {})", link(url("show_user.php", userid=r["userid"]),
                                          r["name"] or "(deleted)"), r["userid"]),
                   "joined" if r["joining"] else "quit", num(r["total_credit"]))
                  for r in rows]
    return render(ctx, "Team history for %s" % team.name, table(
        ("When", "User", "Action", "Total credit at time of action"), table_rows,
        empty="no history"))


# ---------------------------------------------------------------------------
# team_forum.php

def _team_forum(db, team_id):
    return db.query_one("SELECT * FROM forum WHERE parent_type = 1 AND category = %s",
                        (team_id,))


def _team_forum_form(ctx, team, forum):
    """edit_form: title, description and the posting limits; remove."""
    title = forum["title"] or team.name
    description = forum["description"] or "Discussion among members of %s" % team.name
    rows = [("Title", fmt('<input name="title" id="title" size="50" maxlength="175" '
                          'value="{}">', title)),
            ("Description", fmt('<textarea name="description" id="description" rows="3" '
                                'cols="50">{}</textarea>', description))]
    for name, label in (("post_min_interval", "Minimum time between posts (seconds)"),
                        ("post_min_total_credit", "Minimum total credit to post"),
                        ("post_min_expavg_credit", "Minimum average credit to post")):
        rows.append((label, fmt('<input type="number" name="{}" id="{}" min="0" value="{}">',
                                name, name, forum[name])))
    return join([
        fmt('<form method="post" action="team_forum.php">{}{}{}{}<p><button type="submit">'
            'Submit</button></p></form>', ctx.token_field("team_forum.php"),
            hidden("teamid", team.id), hidden("cmd", "edit_action"), kv_table(rows)),
        fmt("<p>{} Remove your team's message board: all its threads and posts are "
            "permanently removed (you may create a new one later).</p>",
            _post_form(ctx, "team_forum.php", [("teamid", team.id), ("cmd", "remove")],
                       "Remove message board", "danger")),
        fmt("<p>{}</p>", link(url("forum_forum.php", id=forum["id"]), "Go to the board"))])


def team_forum(ctx):
    """team_forum.php?teamid=N: the team's message board (BOINC's forum with
    parent_type 1, its category the team's id; forum.py shows it, members
    post, the founder and admins moderate).  ``cmd=manage``: the founder's
    create button or edit form; POSTs (form token) ``cmd`` create,
    edit_action (title, description, post_min_interval,
    post_min_total_credit, post_min_expavg_credit) and remove."""
    req = ctx.req
    db = ctx.db
    if req.method == "POST":
        _, team = _founder_post(ctx)
        cmd = req.post("cmd")
        if cmd == "create":
            with db.transaction():
                created = forum_table.insert_team_forum(db, team.id)
            if created is None:
                raise PageError("Team already has a message board", "409 Conflict")
            raise Redirect(url("team_forum.php", teamid=team.id, cmd="manage"))
        if cmd == "edit_action":
            title = accounts.strip_tags(req.post("title")).strip()
            description = accounts.strip_tags(req.post("description")).strip()
            if not title or len(title) > 175:
                raise PageError("parameter title: 1 to 175 characters")
            if len(description) > 254:
                raise PageError("parameter description: at most 254 characters")
            limits = [ctx.int_arg(n, 0, post=True, minimum=0, maximum=2 ** 31 - 1)
                      for n in ("post_min_interval", "post_min_total_credit",
                                "post_min_expavg_credit")]
            forum = _team_forum(db, team.id)
            if forum is None:
                raise PageError("no such forum", "404 Not Found")
            if db.query_value("SELECT COUNT(*) FROM forum WHERE parent_type = 1 AND "
                              "category = %s AND title = %s AND id <> %s",
                              (team.id, title, forum["id"])):
                raise PageError("parameter title: the team has a board of that title")
            forum_table.update_team_forum(db, forum["id"], team.id, title, description, *limits)
            return render(ctx, "Team Message Board Updated", fmt(
                "<p>Update successful.</p><p>{}</p>",
                link(url("forum_forum.php", id=forum["id"]), "Go to the board")))
        if cmd == "remove":
            with db.transaction():
                removed = forum_table.delete_team_forum(db, team.id)
            if not removed:
                raise PageError("message board not found", "404 Not Found")
            return render(ctx, "Message board removed", fmt(
                "<p>Your team's message board has been removed. You may now {}.</p>",
                link(url("team_forum.php", teamid=team.id, cmd="manage"),
                     "create a new one")))
        raise PageError("parameter cmd: create, edit_action or remove")
    team = _team(ctx, _teamid(ctx))
    if req.get("cmd") == "manage":
        user = ctx.require_login()
        _require_founder(ctx, user, team)
        forum = _team_forum(db, team.id)
        if forum is None:
            return render(ctx, "Create Message Board", join([
                fmt("<p>You may create a message board for use by {}.</p><ul><li>Only team "
                    "members will be able to post.</li><li>At your option, only members will "
                    "be able to read.</li><li>You and your Team Admins will have moderator "
                    "privileges.</li></ul>", team.name),
                _post_form(ctx, "team_forum.php", [("teamid", team.id), ("cmd", "create")],
                           "Create Message Board")]))
        return render(ctx, "Team Message Board", _team_forum_form(ctx, team, forum))
    forum = _team_forum(db, team.id)
    if forum is None:
        raise PageError("Team has no forum", "404 Not Found")
    raise Redirect(url("forum_forum.php", id=forum["id"]))


# pages answering XML to programs (main.down_reply while the site is stopped)
team_search.xml_reply = lambda req: bool(req.get("xml"))
team_email_list.xml_reply = lambda req: php_truthy(req.get("xml"))
team_delta.xml_reply = team_email_list.xml_reply

PAGES = {
    "team.php": team_page,
    "team_search.php": team_search,
    "team_create_form.php": team_create_form,
    "team_create_action.php": team_create_action,
    "team_display.php": team_display,
    "team_members.php": team_members,
    "team_join_form.php": team_join_form,
    "team_join_action.php": team_join_action,
    "team_quit_form.php": team_quit_form,
    "team_quit_action.php": team_quit_action,
    "team_manage.php": team_manage,
    "team_edit_form.php": team_edit_form,
    "team_edit_action.php": team_edit_action,
    "team_remove_inactive_form.php": team_remove_inactive_form,
    "team_remove_inactive_action.php": team_remove_inactive_action,
    "team_admins.php": team_admins,
    "team_change_founder_form.php": team_change_founder_form,
    "team_change_founder_action.php": team_change_founder_action,
    "team_founder_transfer_form.php": team_founder_transfer_form,
    "team_founder_transfer_action.php": team_founder_transfer_action,
    "team_email_list.php": team_email_list,
    "team_delta.php": team_delta,
    "team_forum.php": team_forum,
}
