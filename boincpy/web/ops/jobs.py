"""Job management: cancel workunits (by id range or by query), transition all,
clear a host's RPC time, revalidate jobs, list assigned (targeted) jobs,
list workunits that erred too often (errorwus.php, from the replica).

Every change goes through a confirmation page (GET: shows what would change,
changes nothing) and a POST carrying the admin's form token.

Cancelling does what BOINC's cancel_wus() (html/inc/util_ops.inc) does, in
one transaction: results not yet sent become OVER / DIDNT_NEED, the
workunit's error_mask gets CANCELLED (16) and its transition_time becomes
now, so the transitioner finishes it (assimilation, file deletion) and
clients holding its results are told to abort them (``send_result_abort``).
Results in progress are left to the transitioner and the scheduler, as in
BOINC.  Also: INACTIVE results are finished along with UNSENT ones (BOINC
leaves them to the transitioner, which does the same), and the "unsent
only" variant bumps transition_time too (BOINC's does not, leaving the
cancelled workunit unassimilated until something else touches it).
"""

from boincpy.db.host import clear_rpc_time
from boincpy.db.workunit import (cancel_workunits_by_id, revalidate_workunits,
                                 transition_all_workunits)
from boincpy.states import ClientState, FileDeleteState, Outcome, ServerState, ValidateState
from boincpy.web.markup import Markup, fmt, join, link, url
from boincpy.web.ops import names as N
from boincpy.web.ops.browse import TABLES, build_where, filter_inputs, list_workunits
from boincpy.web.ops.lookups import Catalog, names_by_id
from boincpy.web.page import (PageError, checkbox, hidden, notice, paging, render, select,
                                  sort_link, table, text_input)

MAX_LIST = 1000     # workunits one confirmation page lists (and one POST cancels)


def _range(ctx, post):
    wuid1 = ctx.int_arg("wuid1", None, post=post)
    wuid2 = ctx.int_arg("wuid2", None, post=post)
    if wuid1 is None or wuid2 is None or wuid1 < 1 or wuid2 < wuid1:
        raise PageError("Workunit IDs must satisfy 0 < first ID <= last ID (got %s and %s)."
                        % (wuid1, wuid2))
    return wuid1, wuid2


def cancel_wu_form(ctx):
    """``cancel_wu_form.php``: cancel jobs by id range (then a confirmation page)."""
    body = fmt(
        "<p>Cancelling a job marks its unsent results as not needed and its workunit as "
        "cancelled; nothing is deleted. Clients running its results are asked to abort them. "
        "Users get no credit for results they return after the cancel, so prefer "
        "cancelling jobs whose results are all unsent.</p>"
        '<form class="filters" method="get" action="cancel_wu_action.php">'
        '<label for="wuid1">First workunit ID</label><div>{}</div>'
        '<label for="wuid2">Last workunit ID</label><div>{}</div>'
        '<label for="unsent_only">Only if no result was sent</label><div>{}</div>'
        '<span></span><div><button type="submit">Continue to confirmation</button></div></form>'
        "<p>{} &middot; {}</p>",
        text_input("wuid1", ctx.req.get("wuid1"), 10), text_input("wuid2", ctx.req.get("wuid2"), 10),
        checkbox("unsent_only", ctx.req.get("unsent_only")),
        link("cancel_workunits.php", "Cancel jobs by query (app, batch, name, dates...)"),
        link("db_form.php?table=workunit", "Browse workunits"))
    return render(ctx, "Cancel jobs by ID", body)


def cancel_wu_action(ctx):
    """``cancel_wu_action.php``: GET shows what an id range would cancel; POST cancels."""
    post = ctx.req.method == "POST"
    if post:
        ctx.require_action()
    wuid1, wuid2 = _range(ctx, post)
    unsent_only = bool((ctx.req.post if post else ctx.req.get)("unsent_only"))
    if post:
        ids = [r["id"] for r in ctx.db.query(
            "SELECT id FROM workunit WHERE id BETWEEN %s AND %s", (wuid1, wuid2))]
        nwu, nres = cancel_workunits_by_id(ctx.db, ids, ctx.now, unsent_only)
        body = fmt("{}<p>{}</p>",
                   notice("ok", "Cancelled %d workunit(s) with %d <= ID <= %d; %d unsent "
                          "result(s) marked not needed." % (nwu, wuid1, wuid2, nres)),
                   link(url("db_action.php", table="workunit", min_id=wuid1, max_id=wuid2),
                        "See these workunits"))
        return render(ctx, "Jobs cancelled", body)
    db = ctx.db
    nwu = db.query_value("SELECT COUNT(*) FROM workunit WHERE id BETWEEN %s AND %s",
                         (wuid1, wuid2), 0)
    counts = {r["server_state"]: r["n"] for r in db.query(
        "SELECT server_state, COUNT(*) AS n FROM result WHERE workunitid BETWEEN %s AND %s "
        "GROUP BY server_state", (wuid1, wuid2))}
    rows = db.query("SELECT id, name, appid, batch, canonical_resultid, error_mask, need_validate, "
                    "file_delete_state, assimilate_state, create_time, transition_time "
                    "FROM workunit WHERE id BETWEEN %s AND %s ORDER BY id LIMIT 50",
                    (wuid1, wuid2))
    if not nwu:
        return render(ctx, "Cancel jobs", notice("warn", "No workunit has an ID between %d and %d."
                                                 % (wuid1, wuid2)), "404 Not Found")
    summary = ("%d workunit(s) with %d <= ID <= %d; their results: %d unsent, %d in progress, "
               "%d over." % (nwu, wuid1, wuid2,
                             counts.get(ServerState.UNSENT, 0) + counts.get(ServerState.INACTIVE, 0),
                             counts.get(ServerState.IN_PROGRESS, 0), counts.get(ServerState.OVER, 0)))
    if unsent_only:
        summary += " Only workunits none of whose results was sent will be cancelled."
    form = fmt('<form method="post" action="cancel_wu_action.php">{}{}{}{}'
               '<button type="submit" class="danger" id="confirm">Cancel {} workunit(s)</button> '
               '{}</form>',
               ctx.token_field("cancel_wu_action.php"), hidden("wuid1", wuid1),
               hidden("wuid2", wuid2),
               hidden("unsent_only", "1") if unsent_only else Markup(""), nwu,
               link("cancel_wu_form.php", "Back"))
    more = fmt("<p class=\"muted\">Showing the first 50 of {}.</p>", nwu) if nwu > 50 else ""
    body = fmt("{}{}{}{}", notice("warn", summary), form,
               list_workunits(ctx, db, Catalog(db), rows), more)
    return render(ctx, "Confirm: cancel jobs", body)


def choose_workunits(ctx, page, button):
    """The query form of a page acting on workunits chosen by filters or an
    ID list; returns (form, condition, parameters, anything chosen?, limit)."""
    spec = TABLES["workunit"]
    where, params, active = build_where(ctx, spec)
    id_list = [x for x in ctx.req.get("ids").replace(",", " ").split()]
    try:
        id_list = [int(x) for x in id_list]
    except ValueError:
        raise PageError("ID list: write workunit IDs separated by commas or spaces") from None
    if id_list:
        where += " AND id IN (%s)" % ", ".join(["%s"] * len(id_list))
        params = params + id_list
    limit = ctx.int_arg("limit", 100, minimum=1, maximum=MAX_LIST)
    form = fmt('<form class="filters" method="get" action="{}">{}'
               '<label for="ids">ID list</label><div>{}</div>'
               '<label for="limit">Limit</label><div>{}</div>'
               '<span></span><div><button type="submit">{}</button></div></form>',
               page, filter_inputs(ctx, spec, Catalog(ctx.rdb)),
               text_input("ids", ctx.req.get("ids"), 40), text_input("limit", limit, 5, "number"),
               button)
    return form, where, params, bool(active or id_list), limit


def cancel_workunits(ctx):
    """``cancel_workunits.php``: choose workunits by query, tick, confirm (POST)."""
    db = ctx.rdb
    catalog = Catalog(db)
    form, where, params, chosen, limit = choose_workunits(ctx, "cancel_workunits.php",
                                                          "Find workunits")
    parts = [Markup("<p>Choose workunits; you will see the list and tick the ones to cancel "
                    "before anything changes.</p>"), form]
    if chosen:
        rows = db.query("SELECT id, name, appid, batch, error_mask, create_time FROM workunit "
                        "WHERE %s AND (error_mask & 16) = 0 ORDER BY id LIMIT %%s" % where,
                        params + [limit])
        if rows:
            items = join(fmt("<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                             checkbox("wuid", True, r["id"]),
                             link(url("db_action.php", table="workunit", id=r["id"]), r["id"]),
                             r["name"], catalog.app_name(r["appid"]), r["batch"])
                         for r in rows)
            parts.append(fmt(
                '<h2>{} workunit(s) not yet cancelled match</h2>'
                '<form method="post" action="cancel_workunits_action.php">{}'
                '<table><thead><tr><th>Cancel?</th><th>ID</th><th>Name</th><th>App</th>'
                '<th>Batch</th></tr></thead><tbody>{}</tbody></table>'
                '<button type="submit" class="danger" id="confirm">Cancel the ticked workunits'
                '</button></form>', len(rows), ctx.token_field("cancel_workunits_action.php"),
                items))
        else:
            parts.append(notice("warn", "No workunit that is not already cancelled matches."))
    return render(ctx, "Cancel jobs by query", join(parts))


def cancel_workunits_action(ctx):
    """``cancel_workunits_action.php``: POST the ticked workunit ids; cancels them."""
    ctx.require_action()
    try:
        ids = [int(x) for x in ctx.req.post_all("wuid")]
    except ValueError:
        raise PageError("wuid: workunit IDs must be integers") from None
    if not ids:
        raise PageError("No workunit was ticked; nothing was cancelled.")
    if len(ids) > MAX_LIST:
        raise PageError("At most %d workunits at a time." % MAX_LIST)
    nwu, nres = cancel_workunits_by_id(ctx.db, ids, ctx.now)
    body = notice("ok", "Cancelled %d workunit(s); %d unsent result(s) marked not needed."
                  % (nwu, nres))
    return render(ctx, "Jobs cancelled", body)


def transition_all(ctx):
    """``transition_all.php``: make the transitioner look at every workunit again."""
    if ctx.req.method == "POST":
        ctx.require_action()
        n = transition_all_workunits(ctx.db, ctx.now)
        return render(ctx, "Transition jobs",
                      notice("ok", "transition_time set to now for %d workunit(s)." % n))
    n = ctx.db.query_value("SELECT COUNT(*) FROM workunit", None, 0)
    body = fmt("<p>Sets transition_time to now for all {} workunits, so the transitioner "
               "re-examines each one (e.g. after a change of templates or configuration, "
               "or to unstick old jobs). On a large project this is a lot of work for the "
               "transitioner.</p>"
               '<form method="post" action="transition_all.php">{}'
               '<button type="submit" class="danger">Transition all workunits</button></form>',
               n, ctx.token_field())
    return render(ctx, "Transition jobs", body)


def clear_host(ctx):
    """``clear_host.php``: set a host's rpc_time to 0 (POST)."""
    if ctx.req.method != "POST":
        hostid = ctx.req.get("hostid")
        body = fmt("<p>Clears the time of a host's last scheduler RPC, so a host told its "
                   "last request was too recent may contact the scheduler at once.</p>"
                   '<form method="post" action="clear_host.php">{}<label for="hostid">Host ID '
                   '</label>{} <button type="submit">Clear RPC time</button></form>',
                   ctx.token_field(), text_input("hostid", hostid, 8))
        return render(ctx, "Clear a host's RPC time", body)
    ctx.require_action()
    hostid = ctx.int_arg("hostid", None, post=True, minimum=1)
    if hostid is None:
        raise PageError("hostid: give a host ID")
    n = clear_rpc_time(ctx.db, hostid)
    if not n and not ctx.db.query_value("SELECT COUNT(*) FROM host WHERE id = %s", (hostid,)):
        raise PageError("no host with ID %d" % hostid, "404 Not Found")
    return render(ctx, "Clear a host's RPC time",
                  fmt("{}<p>{}</p>", notice("ok", "Host %d's RPC time cleared." % hostid),
                      link(url("db_action.php", table="host", id=hostid), "Host %d" % hostid)))


# ---------------------------------------------------------------------------
# revalidate.php

def revalidate(ctx):
    """``revalidate.php``: choose workunits (filters or IDs); the list shows
    which results would be validated again; the ticked ones are (POST)."""
    if ctx.req.method == "POST":
        ctx.require_action()
        try:
            ids = [int(x) for x in ctx.req.post_all("wuid")]
        except ValueError:
            raise PageError("wuid: workunit IDs must be integers; nothing was changed") from None
        if not ids:
            raise PageError("No workunit was ticked; nothing was changed.")
        if len(ids) > MAX_LIST:
            raise PageError("At most %d workunits at a time; nothing was changed." % MAX_LIST)
        nwu, nres = revalidate_workunits(ctx.db, ids)
        return render(ctx, "Jobs marked for revalidation", fmt(
            "{}<p>{}</p>",
            notice("ok", "%d job(s) and %d result(s) were marked for revalidation: the "
                   "validator looks at them at its next pass." % (nwu, nres)),
            link(url("db_action.php", table="workunit", need_validate=1),
                 "Workunits waiting for validation")))
    db = ctx.db
    catalog = Catalog(db)
    form, where, params, chosen, limit = choose_workunits(ctx, "revalidate.php",
                                                          "Find workunits")
    parts = [Markup(
        "<p>Runs the validator again on jobs: use it after making the validator more "
        "permissive, to grant credit to results it rejected. Their successful results "
        "go back to 'not validated' and the workunit waits for the validator. Results "
        "whose output files were deleted can't be validated again and are left "
        "alone.</p>"), form]
    if chosen:
        rows = db.query("SELECT id, name, appid, canonical_resultid, file_delete_state "
                        "FROM workunit WHERE %s ORDER BY id LIMIT %%s" % where, params + [limit])
        counts = {}
        if rows:
            marks = ", ".join(["%s"] * len(rows))
            for r in db.query(
                    "SELECT workunitid, validate_state, file_delete_state IN (%%s, %%s) AS gone, "
                    "COUNT(*) AS n FROM result WHERE workunitid IN (%s) AND server_state = %%s "
                    "AND outcome = %%s GROUP BY workunitid, validate_state, gone" % marks,
                    [int(FileDeleteState.DONE), int(FileDeleteState.ERROR)]
                    + [r["id"] for r in rows] + [int(ServerState.OVER), int(Outcome.SUCCESS)]):
                c = counts.setdefault(r["workunitid"], {"again": 0, "gone": 0, "words": []})
                if r["gone"]:
                    c["gone"] += int(r["n"])
                elif r["validate_state"] != ValidateState.INIT:
                    c["again"] += int(r["n"])
                    c["words"].append("%d %s" % (r["n"], N.word("validate_state",
                                                                r["validate_state"])))
        items = []
        for r in rows:
            c = counts.get(r["id"], {"again": 0, "gone": 0, "words": []})
            items.append(fmt(
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                checkbox("wuid", c["again"] > 0, r["id"]),
                link(url("db_action.php", table="workunit", id=r["id"]), r["id"]), r["name"],
                catalog.app_name(r["appid"]), ", ".join(c["words"]) or "none",
                "%d (files deleted)" % c["gone"] if c["gone"] else ""))
        if items:
            parts.append(fmt(
                "<h2>{} workunit(s) match</h2>"
                '<form method="post" action="revalidate.php">{}'
                "<table><thead><tr><th>Revalidate?</th><th>ID</th><th>Name</th><th>App</th>"
                "<th>Results validated again</th><th>Left alone</th></tr></thead><tbody>{}"
                "</tbody></table>"
                '<button type="submit" class="danger" id="confirm">Revalidate the ticked '
                "workunits</button></form>", len(rows), ctx.token_field(), join(items)))
        else:
            parts.append(notice("warn", "No workunit matches."))
    return render(ctx, "Revalidate jobs", join(parts))


# ---------------------------------------------------------------------------
# assign.php

# assignment.target_type (sched/sched_assign.cpp: ASSIGN_NONE, HOST, USER, TEAM)
TARGET_TYPES = ((0, "All hosts"), (1, "Host"), (2, "User"), (3, "Team"))
ASSIGN_SORTS = (("id", "Assignment"), ("create_time", "Created"), ("workunitid", "Workunit"),
                ("target_type", "Target"))


def _target(a, names):
    kind = a["target_type"]
    if kind == 0:
        return "All hosts"
    tname, word = {1: ("host", "Host"), 2: ("user", "User"), 3: ("team", "Team")}.get(
        kind, (None, "type %d" % kind))
    if tname is None:
        return "%s %d" % (word, a["target_id"])
    target = link(url("db_action.php", table=tname, id=a["target_id"]), "%s %d %s" % (
        word, a["target_id"], names.get((tname, a["target_id"]), "")))
    if kind == 1:
        return target
    return fmt("{} {}", "All hosts of" if a["multi"] else "One host of", target)


def assign(ctx):
    """``assign.php``: the assignments of targeted and broadcast jobs (made by
    create_work --target_host/--target_user/--target_team/--broadcast);
    filters, sortable, paged."""
    db = ctx.db
    kind = ctx.int_arg("target_type", None, minimum=0, maximum=3)
    wuid = ctx.int_arg("workunitid", None, minimum=1)
    start = ctx.int_arg("start", 0, minimum=0)
    n = ctx.int_arg("nresults", 50, minimum=1, maximum=1000)
    sort = ctx.req.get("sort") or "id"
    order = ctx.req.get("order") or "desc"
    if sort not in dict(ASSIGN_SORTS) or order not in ("asc", "desc"):
        raise PageError("sort: one of %s; order: asc or desc"
                        % ", ".join(c for c, _ in ASSIGN_SORTS))
    clauses, params = [], []
    if kind is not None:
        clauses.append("target_type = %s")
        params.append(kind)
    if wuid is not None:
        clauses.append("workunitid = %s")
        params.append(wuid)
    where = " AND ".join(clauses) or "1"
    total = db.query_value("SELECT COUNT(*) FROM assignment WHERE %s" % where, params, 0)
    rows = db.query("SELECT * FROM assignment WHERE %s ORDER BY %s %s LIMIT %%s OFFSET %%s"
                    % (where, sort, order.upper()), params + [n, start])
    names = {}
    for tname, kind_num, column in (("host", 1, "domain_name"), ("user", 2, "name"),
                                    ("team", 3, "name")):
        for k, v in names_by_id(db, tname, column, (a["target_id"] for a in rows
                                                   if a["target_type"] == kind_num)).items():
            names[(tname, k)] = v
    wus = names_by_id(db, "workunit", "name", (a["workunitid"] for a in rows))
    out = [(a["id"], N.time_text(a["create_time"]), _target(a, names),
            link(url("db_action.php", table="workunit", id=a["workunitid"]),
                 wus.get(a["workunitid"], a["workunitid"])),
            link(url("db_action.php", table="result", id=a["resultid"]), a["resultid"])
            if a["resultid"] else "---")
           for a in rows]
    params_in_use = {"target_type": kind, "workunitid": wuid, "nresults": n if n != 50 else None}
    by_label = {label: col for col, label in ASSIGN_SORTS}

    def head(label):
        if label not in by_label:
            return label
        return sort_link("assign.php", params_in_use, by_label[label], label, sort, order)

    form = fmt('<form class="inline" method="get" action="assign.php">'
               '<label for="target_type">Target</label> {} '
               '<label for="workunitid">Workunit ID</label> {} '
               '<button type="submit">Show</button></form>',
               select("target_type", TARGET_TYPES, "" if kind is None else kind, "Any"),
               text_input("workunitid", wuid or "", 8))
    body = fmt("<p>Jobs sent only to chosen hosts, users or teams, or to every host. "
               "create_work makes them (--target_host, --target_user, --target_team, "
               "--broadcast); the scheduler needs &lt;enable_assignment/&gt; in "
               "config.xml{}.</p>{}<p>{:,} assignment(s).</p>{}{}",
               "" if ctx.cfg.enable_assignment else " (not set on this project)", form, total,
               table(("Assignment", "Created", "Target", "Workunit", "Result"), out,
                     empty="No assignments", head=head),
               paging("assign.php", dict(params_in_use, sort=sort, order=order), start,
                      len(rows), total, n))
    return render(ctx, "Assigned jobs", body)


def errorwus(ctx):
    """``errorwus.php``: workunits without a canonical result whose errors of
    one kind (download, compute, validate) exceed min_quorum + level, read
    from the replica as BOINC's page does (a scan of the two largest
    tables); tick some to cancel them."""
    level = ctx.int_arg("level", 1) or 1
    appid = ctx.int_arg("appid", 0, minimum=0)
    hide_canceled = ctx.req.get("hide_canceled") == "on"
    hide_dlerr = ctx.req.get("hide_dlerr") == "on"
    db = ctx.rdb
    catalog = Catalog(db)
    rows = db.query(
        "SELECT id, name, appid, unsent, in_progress, successes, compute_errors, "
        "download_errors, validate_errors, error_mask, min_quorum FROM ("
        " SELECT workunitid,"
        "  SUM(IF(outcome=%s,1,0)) AS successes,"
        "  SUM(IF(outcome=%s AND client_state=%s,1,0)) AS download_errors,"
        "  SUM(IF(outcome=%s AND client_state=%s,1,0)) AS compute_errors,"
        "  SUM(IF(outcome=%s,1,0)) AS validate_errors,"
        "  SUM(IF(server_state=%s,1,0)) AS unsent,"
        "  SUM(IF(server_state=%s,1,0)) AS in_progress"
        " FROM result WHERE server_state IN (%s, %s, %s) GROUP BY workunitid) AS t1"
        " JOIN workunit ON workunit.id = workunitid"
        " WHERE canonical_resultid = 0 AND (%s = 0 OR appid = %s)"
        " AND GREATEST(download_errors, compute_errors, validate_errors) > min_quorum + %s"
        " ORDER BY name",
        (int(Outcome.SUCCESS), int(Outcome.CLIENT_ERROR), int(ClientState.FILES_DOWNLOADING),
         int(Outcome.CLIENT_ERROR), int(ClientState.COMPUTE_ERROR), int(Outcome.VALIDATE_ERROR),
         int(ServerState.UNSENT), int(ServerState.IN_PROGRESS), int(ServerState.UNSENT),
         int(ServerState.IN_PROGRESS), int(ServerState.OVER), appid, appid, level))
    shown = [r for r in rows
             if not (hide_canceled and r["error_mask"] & 16)
             and not (hide_dlerr and r["download_errors"] and not r["compute_errors"]
                      and not r["validate_errors"])]

    def result_link(r, n, **filters):
        return link(url("db_action.php", table="result", workunitid=r["id"], detail="low",
                        **filters), n)

    cells = [(checkbox("wuid", False, r["id"]),
              link(url("db_action.php", table="workunit", id=r["id"], detail="high"), r["id"]),
              r["name"], catalog.app_name(r["appid"]), r["min_quorum"], r["unsent"],
              r["in_progress"],
              result_link(r, r["successes"], outcome=int(Outcome.SUCCESS)),
              result_link(r, r["download_errors"], outcome=int(Outcome.CLIENT_ERROR),
                          client_state=int(ClientState.FILES_DOWNLOADING)),
              result_link(r, r["compute_errors"], outcome=int(Outcome.CLIENT_ERROR),
                          client_state=int(ClientState.COMPUTE_ERROR)),
              result_link(r, r["validate_errors"], outcome=int(Outcome.VALIDATE_ERROR)),
              N.error_mask_text(r["error_mask"])) for r in shown]
    form = fmt('<form class="filters" method="get" action="errorwus.php">'
               '<label>Hide cancelled WUs</label><div>{}</div>'
               '<label>Hide WUs with only download errors</label><div>{}</div>'
               '<label for="level">Errors above quorum +</label><div>{}</div>{}'
               '<span></span><div><button type="submit">OK</button></div></form>',
               checkbox("hide_canceled", hide_canceled, "on"),
               checkbox("hide_dlerr", hide_dlerr, "on"), text_input("level", level, 3, "number"),
               hidden("appid", appid) if appid else Markup(""))
    title = "All-error workunits" + (" for %s" % catalog.app_name(appid) if appid else "")
    body = join([form, fmt(
        '<form method="post" action="cancel_workunits_action.php">{}{}'
        '<button type="submit" class="danger">Cancel checked WUs</button></form>'
        '<p>{} entries ({} hidden)</p>',
        ctx.token_field("cancel_workunits_action.php"),
        table(["Cancel?", "WU ID", "WU name", "App", "Quorum", "Unsent", "In progress",
               "Success", "Download errors", "Compute errors", "Validate errors",
               "Error mask"], cells),
        len(shown), len(rows) - len(shown))])
    return render(ctx, title, body)
