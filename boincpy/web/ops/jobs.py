"""Job management: cancel workunits (by id range or by query), transition all,
clear a host's RPC time.

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

from boincpy.db.queries import cancel_workunits_by_id
from boincpy.states import ServerState
from boincpy.web.markup import Markup, fmt, join, link, url
from boincpy.web.ops.browse import TABLES, build_where, filter_inputs, list_workunits
from boincpy.web.ops.lookups import Catalog
from boincpy.web.ops.page import (PageError, checkbox, hidden, notice, render, text_input)

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
    db = ctx.rdb
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


def cancel_workunits(ctx):
    """``cancel_workunits.php``: choose workunits by query, tick, confirm (POST)."""
    spec = TABLES["workunit"]
    db = ctx.rdb
    catalog = Catalog(db)
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
    form = fmt('<form class="filters" method="get" action="cancel_workunits.php">{}'
               '<label for="ids">ID list</label><div>{}</div>'
               '<label for="limit">Limit</label><div>{}</div>'
               '<span></span><div><button type="submit">Find workunits</button></div></form>',
               filter_inputs(ctx, spec, catalog),
               text_input("ids", ctx.req.get("ids"), 40), text_input("limit", limit, 5, "number"))
    parts = [Markup("<p>Choose workunits; you will see the list and tick the ones to cancel "
                    "before anything changes.</p>"), form]
    if active or id_list:
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
        n = ctx.db.execute("UPDATE workunit SET transition_time = %s", (ctx.now,))
        return render(ctx, "Transition jobs",
                      notice("ok", "transition_time set to now for %d workunit(s)." % n))
    n = ctx.rdb.query_value("SELECT COUNT(*) FROM workunit", None, 0)
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
    n = ctx.db.execute("UPDATE host SET rpc_time = 0 WHERE id = %s", (hostid,))
    if not n and not ctx.db.query_value("SELECT COUNT(*) FROM host WHERE id = %s", (hostid,)):
        raise PageError("no host with ID %d" % hostid, "404 Not Found")
    return render(ctx, "Clear a host's RPC time",
                  fmt("{}<p>{}</p>", notice("ok", "Host %d's RPC time cleared." % hostid),
                      link(url("db_action.php", table="host", id=hostid), "Host %d" % hostid)))
