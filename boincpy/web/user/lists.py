"""The project's public lists: top users, computers and teams, and its apps.

======================  =====================================================
``top_users.php``       users by ``sort_by`` (expavg_credit, the default, or
                        total_credit), ``offset`` paged (users_per_page)
``top_hosts.php``       computers likewise (hosts_per_page); owners named only
                        if they show their computers
``top_teams.php``       teams likewise (teams_per_page), ``type`` filter
``apps.php``            the apps and their current versions per platform;
                        ``app_id``, ``avid`` detail; ``xml=1`` BOINC's XML
======================  =====================================================

As BOINC's pages: from the read replica, ordered on the credit indexes
(user_avg/user_tot, host_avg/host_tot, team_avg/team_tot), the first 10,000
only, an offset that is not a multiple of the page size starting over.
"""

from boincpy.web import accounts
from boincpy.web.markup import Markup, fmt, join, link, url
from boincpy.web.page import PageError, kv_table, render, table
from boincpy.web.rpc_xml import xml_response
from boincpy.web.user.common import time_str, user_link
from boincpy.web.user.tasks import (boinc_version_text, cpu_text, credit, credit_large,
                                    gpu_text, host_misc, id_arg, os_text)
from boincpy.xml import xml_escape

ITEM_LIMIT = 10000
SORTS = {"expavg_credit": "expavg_credit DESC", "total_credit": "total_credit DESC"}


def _list_args(ctx, per_page, extra=()):
    """(sort_by, offset) as BOINC's top pages read them."""
    ctx.req.check_args(("sort_by", "offset") + tuple(extra))
    sort_by = ctx.req.get("sort_by") or "expavg_credit"
    if sort_by not in SORTS:
        raise PageError("bad sort_by")
    offset = ctx.int_arg("offset", 0, minimum=0, maximum=1 << 40)
    if offset % per_page:
        offset = 0
    if offset >= ITEM_LIMIT:
        raise PageError("Limit exceeded - Sorry, first %d items only" % ITEM_LIMIT)
    return sort_by, offset


def top_rows(db, table, columns, sort_by, offset, n, where="", params=()):
    """One page of ``table`` in credit order.  The page's ids come first from
    the credit index alone (a covering walk: the index holds the id), and
    only those rows are read whole, so a deep offset does not read every row
    it skips."""
    return db.query(
        "SELECT %s FROM %s JOIN (SELECT id AS page_id FROM %s %s ORDER BY %s LIMIT %d, %d) "
        "AS page ON page.page_id = %s.id ORDER BY %s" % (
            columns, table, table, where, SORTS[sort_by], offset, n, table,
            SORTS[sort_by].replace(" DESC", " DESC, %s.id" % table)), params)


def _credit_heads(page, sort_by, params, first="Recent average credit"):
    """The two credit column heads: the one not sorted on links to sorting by it."""
    if sort_by == "total_credit":
        return [link(url(page, **dict(params, sort_by="expavg_credit")), first),
                "Total credit"]
    return [first, link(url(page, **dict(params, sort_by="total_credit")), "Total credit")]


def _pager(page, params, offset, shown, per_page):
    nav = []
    if offset > 0:
        nav.append(link(url(page, **dict(params, offset=offset - per_page)),
                        "Previous %d" % per_page))
    if shown == per_page:
        nav.append(link(url(page, **dict(params, offset=offset + per_page)),
                        "Next %d" % per_page))
    return fmt('<p class="paging">{}</p>', join(nav, Markup(" &middot; "))) if nav else ""


def _num_cells(headers):
    return lambda i, j, cell: "num" if "credit" in str(headers[j]).lower() else ""


def top_users(ctx):
    """top_users.php."""
    per_page = ctx.cfg.users_per_page
    sort_by, offset = _list_args(ctx, per_page)
    users = top_rows(ctx.rdb, "user", "id, name, country, create_time, total_credit, "
                     "expavg_credit", sort_by, offset, per_page)
    headers = ["Rank", "Name"] + _credit_heads("top_users.php", sort_by, {}) + [
        "Country", "Participant since"]
    rows = [[offset + i, user_link(u["id"], u["name"]), credit_large(u["expavg_credit"]),
             credit_large(u["total_credit"]), u["country"], time_str(u["create_time"])]
            for i, u in enumerate(users, 1)]
    body = join([table(headers, rows, _num_cells(headers), empty="No users"),
                 _pager("top_users.php", {"sort_by": sort_by}, offset, len(users), per_page)])
    return render(ctx, "Top participants", body)


def top_hosts(ctx):
    """top_hosts.php: owners are named only if they show their computers."""
    per_page = ctx.cfg.hosts_per_page
    sort_by, offset = _list_args(ctx, per_page)
    db = ctx.rdb
    hosts = top_rows(db, "host", "id, userid, total_credit, expavg_credit, p_vendor, p_model, "
                     "p_ncpus, os_name, os_version, misc", sort_by, offset, per_page)
    owner_ids = sorted({h["userid"] for h in hosts if h["userid"]})
    owners = {}
    if owner_ids:
        owners = {u["id"]: u for u in db.query(
            "SELECT id, name FROM user WHERE show_hosts <> 0 AND id IN (%s)"
            % ", ".join(["%s"] * len(owner_ids)), owner_ids)}
    headers = ["Info", "Rank", "Owner"] + _credit_heads(
        "top_hosts.php", sort_by, {}, "Avg. credit") + [
        "BOINC version", "CPU", "GPU", "Operating system"]
    rows = []
    for i, h in enumerate(hosts, 1):
        owner = owners.get(h["userid"])
        misc = host_misc(h)
        rows.append([
            join([fmt("ID: {}", h["id"]), Markup("<br>"), link(url(
                "show_host_detail.php", hostid=h["id"]), "Details"), " | ",
                link(url("results.php", hostid=h["id"]), "Tasks")]),
            offset + i, user_link(owner["id"], owner["name"]) if owner else "Anonymous",
            credit(h["expavg_credit"]), credit_large(h["total_credit"]),
            boinc_version_text(misc), cpu_text(h), gpu_text(misc), os_text(h)])
    body = join([table(headers, rows, _num_cells(headers), empty="No computers"),
                 _pager("top_hosts.php", {"sort_by": sort_by}, offset, len(hosts), per_page)])
    return render(ctx, "Top computers", body)


def top_teams(ctx):
    """top_teams.php (``type``: one of team_types.inc's kinds)."""
    per_page = ctx.cfg.teams_per_page
    sort_by, offset = _list_args(ctx, per_page, ("type",))
    kind = ctx.int_arg("type", 0)
    if kind < 0 or kind >= len(accounts.TEAM_TYPES):
        kind = 0
    db = ctx.rdb
    where, params = ("WHERE type = %s", (kind,)) if kind else ("", ())
    teams = top_rows(db, "team", "id, name, country, type, total_credit, expavg_credit",
                     sort_by, offset, per_page, where, params)
    members = {}
    if teams:
        ids = [t["id"] for t in teams]
        members = {r["teamid"]: r["n"] for r in db.query(
            "SELECT teamid, COUNT(*) AS n FROM user WHERE teamid IN (%s) GROUP BY teamid"
            % ", ".join(["%s"] * len(ids)), ids)}
    type_name = accounts.TEAM_TYPES[kind] if kind else ""
    page_params = {"type": kind or None}
    headers = ["Rank", "Name", "Members"] + _credit_heads(
        "top_teams.php", sort_by, page_params) + ["Country", "Type"]
    rows = [[offset + i, link(url("team_display.php", teamid=t["id"]), t["name"]),
             members.get(t["id"], 0), credit_large(t["expavg_credit"]),
             credit_large(t["total_credit"]), t["country"],
             accounts.TEAM_TYPES[t["type"]] if 0 < t["type"] < len(accounts.TEAM_TYPES)
             else "None"]
            for i, t in enumerate(teams, 1)]
    title = "Top %s teams" % type_name if type_name else "Top teams"
    if not teams:
        return render(ctx, title, fmt("<p>There are no {}teams</p>",
                                      type_name + " " if type_name else ""))
    body = join([table(headers, rows, _num_cells(headers)),
                 _pager("top_teams.php", dict(page_params, sort_by=sort_by), offset,
                        len(teams), per_page)])
    return render(ctx, title, body)


# ---------------------------------------------------------------------------
# apps.php

def latest_versions(db, app_ids=None):
    """{(appid, platformid): [app_version rows]}: boinc_db.inc's
    latest_avs_app_platform (the highest version of each plan class and beta
    flag, deprecated ones left out) for non-deprecated platforms."""
    where = "app_version.deprecated = 0 AND platform.deprecated = 0"
    params = []
    if app_ids is not None:
        where += " AND app_version.appid IN (%s)" % ", ".join(["%s"] * len(app_ids))
        params = list(app_ids)
    rows = db.query(
        "SELECT app_version.*, platform.name AS platform_name, platform.user_friendly_name "
        "AS platform_long FROM app_version JOIN platform ON platform.id = "
        "app_version.platformid WHERE %s ORDER BY platform.id, app_version.id" % where, params)
    best = {}
    for av in rows:
        key = (av["appid"], av["platformid"], av["plan_class"], av["beta"])
        if key not in best or av["version_num"] > best[key]["version_num"]:
            best[key] = av
    out = {}
    for av in rows:
        if best[(av["appid"], av["platformid"], av["plan_class"], av["beta"])] is av:
            out.setdefault((av["appid"], av["platformid"]), []).append(av)
    return out


def _versions_by_app(db, apps):
    latest = latest_versions(db, [a["id"] for a in apps]) if apps else {}
    by_app = {}
    for (appid, _), avs in latest.items():
        by_app.setdefault(appid, []).extend(avs)
    return by_app


def apps_xml(db):
    """apps.php?xml=1: BOINC's <app_versions> document (values escaped)."""
    apps = db.query("SELECT * FROM app WHERE deprecated = 0 ORDER BY id")
    by_app = _versions_by_app(db, apps)
    out = ["<app_versions>\n"]
    for app in apps:
        out.append("<application>\n    <user_friendly_name>%s</user_friendly_name>\n"
                   "    <name>%s</name>\n    <id>%d</id>\n"
                   % (xml_escape(app["user_friendly_name"] or ""), xml_escape(app["name"]),
                      app["id"]))
        if app["beta"]:
            out.append("        <beta/>\n")
        for av in by_app.get(app["id"], ()):
            out.append("    <version>\n        <platform_short>%s</platform_short>\n"
                       "        <platform_long>%s</platform_long>\n"
                       "        <version_num>%d</version_num>\n"
                       "        <plan_class>%s</plan_class>\n        <date>%s</date>\n"
                       "        <date_unix>%d</date_unix>\n"
                       % (xml_escape(av["platform_name"]), xml_escape(av["platform_long"] or ""),
                          av["version_num"], xml_escape(av["plan_class"]),
                          time_str(av["create_time"]), av["create_time"]))
            if av["beta"]:
                out.append("        <beta/>\n")
            out.append("    </version>\n")
        out.append("    </application>\n")
    out.append("</app_versions>\n")
    return "".join(out)


def apps_page(ctx):
    """apps.php: the apps; ``app_id`` an app's versions; ``avid`` one version."""
    req = ctx.req
    db = ctx.rdb
    if req.get("xml"):
        return xml_response(apps_xml(db))
    avid = id_arg(ctx, "avid", 0)
    if avid:
        av = db.query_one(
            "SELECT app_version.*, app.user_friendly_name AS app, platform.user_friendly_name "
            "AS platform FROM app_version LEFT JOIN app ON app.id = app_version.appid "
            "LEFT JOIN platform ON platform.id = app_version.platformid "
            "WHERE app_version.id = %s", (avid,))
        if av is None:
            raise PageError("no app version", "404 Not Found")
        return render(ctx, "App version %d" % avid, kv_table([
            ("App", av["app"]), ("Version", av["version_num"]), ("Platform", av["platform"]),
            ("Plan class", av["plan_class"]), ("Created", time_str(av["create_time"])),
            ("pfc_n", "%g" % av["pfc_n"]), ("pfc_avg", "%.3f" % av["pfc_avg"]),
            ("pfc_scale", "%.3f" % av["pfc_scale"]),
            ("expavg_credit", "%.3f" % av["expavg_credit"]),
            ("expavg_time", time_str(av["expavg_time"]))]))
    app_id = id_arg(ctx, "app_id", 0)
    if app_id:
        app = db.query_one("SELECT * FROM app WHERE id = %s", (app_id,))
        if app is None:
            raise PageError("no app", "404 Not Found")
        rows, total = [], 0.0
        for av in _versions_by_app(db, [app]).get(app_id, ()):
            gflops = av["expavg_credit"] / 200
            total += gflops
            rows.append([link(url("apps.php", avid=av["id"]), av["id"]), av["platform_long"],
                         "%.2f%s" % (av["version_num"] / 100.0,
                                     " (beta test)" if av["beta"] else ""),
                         av["plan_class"], time_str(av["create_time"]), credit(gflops)])
        return render(ctx, app["user_friendly_name"] or app["name"], join([
            fmt("<h2>Versions</h2>"),
            table(["ID", "Platform", "Version", "Plan class", "Created",
                   "Recent average GFLOPS"], rows, empty="No versions"),
            fmt("<p>Total average computing: {} GigaFLOPS</p>", credit(total))]))
    apps = db.query("SELECT id, name, user_friendly_name, create_time, beta FROM app "
                    "WHERE deprecated = 0 ORDER BY id")
    gflops = {r["appid"]: r["c"] or 0 for r in db.query(
        "SELECT appid, SUM(expavg_credit) AS c FROM app_version GROUP BY appid")}
    rows = [[link(url("apps.php", app_id=a["id"]), "%s%s" % (
        a["user_friendly_name"] or a["name"], " (beta test)" if a["beta"] else "")),
        time_str(a["create_time"]), credit(gflops.get(a["id"], 0) / 200)] for a in apps]
    body = join([
        fmt("<p>{} currently has the following applications. When you participate in {}, "
            "tasks for one or more of these applications will be assigned to your computer. "
            "The current version of the application will be downloaded to your computer. "
            "This happens automatically; you don't have to do anything.</p>",
            ctx.cfg.long_name, ctx.cfg.long_name),
        table(["Name", "Created", "Recent average GFLOPS"], rows, empty="No applications")])
    return render(ctx, "Applications", body)


# pages answering XML to programs (main.down_reply while the site is stopped)
apps_page.xml_reply = lambda req: bool(req.get("xml"))

PAGES = {
    "top_users.php": top_users,
    "top_hosts.php": top_hosts,
    "top_teams.php": top_teams,
    "apps.php": apps_page,
}
