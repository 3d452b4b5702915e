"""Browse and query the database: ``db_form.php`` (a query form per table) and
``db_action.php`` (the matching rows, paged, or one row in detail).

Tables: result, workunit, host, user, app, app_version, platform and batch
(remote submission's; its rows and page are :mod:`boincpy.web.ops.batches`).
Filters are named query parameters (``appid``, ``server_state``, ``batch``,
``hostid``, a time column with a date range ...), each turned into a
parameterised SQL condition; there is no free SQL clause as in BOINC's
db_form.php.  Lists read through the replica settings, a single row the
main database.
"""

import calendar
import re
import time
from dataclasses import dataclass

from boincpy.states import ClientState, Outcome, ServerState, ValidateState
from boincpy.web.markup import Markup, fmt, join, link, text_of, url
from boincpy.web.ops import batches
from boincpy.web.ops import names as N
from boincpy.web.ops.lookups import Catalog, names_by_id
from boincpy.web.ops.summary import state_counts, summary_panels
from boincpy.web.page import (PageError, hidden, kv_table, num, paging, render, select, sort_link,
                              table, text_input)
from boincpy.xml.scan import block

DEFAULT_ROWS = 20
MAX_ROWS = 1000


@dataclass(frozen=True)
class Filter:
    """One query parameter of a table's form.

    kind: ``int`` (column = value), ``enum`` (select from ``choices``),
    ``app``/``platform`` (select of those rows), ``like`` (column contains
    the text), ``min``/``max`` (column >= / <= value), ``errmask``
    (any/none/cancelled), ``yesno`` (column != 0 / = 0).
    """

    param: str
    label: str
    kind: str
    column: str = ""
    choices: tuple = ()

    @property
    def col(self):
        return self.column or self.param


@dataclass(frozen=True)
class TableSpec:
    name: str
    title: str
    filters: tuple
    time_columns: tuple = ()      # (column, label)
    sort_columns: tuple = ()      # (column, label); the first is the default
    header_sort: tuple = ()       # (list header, sort column): clickable headers


def _enum(param, label):
    return Filter(param, label, "enum", choices=tuple((int(v), "[%d] %s" % (int(v), w))
                                                       for v, w in N.ENUM_COLUMNS[param]))


TABLES = {
    "result": TableSpec("result", "Results", (
        Filter("id", "Result ID", "int"),
        Filter("workunitid", "Workunit ID", "int"),
        Filter("appid", "Application", "app"),
        Filter("hostid", "Host ID", "int"),
        Filter("userid", "User ID", "int"),
        Filter("batch", "Batch", "int"),
        _enum("server_state", "Server state"),
        _enum("outcome", "Outcome"),
        _enum("client_state", "Client state"),
        _enum("validate_state", "Validate state"),
        _enum("file_delete_state", "File delete state"),
        Filter("exit_status", "Exit status", "int"),
        Filter("app_version_id", "App version ID", "int"),
        Filter("name", "Name contains", "like"),
    ), (("create_time", "Created"), ("sent_time", "Sent"), ("received_time", "Received"),
        ("report_deadline", "Report deadline"), ("mod_time", "Last modified")),
        (("id", "ID"), ("sent_time", "Sent time"), ("received_time", "Received time"),
         ("exit_status", "Exit status"), ("hostid", "Host ID"), ("userid", "User ID"),
         ("cpu_time", "CPU time"), ("elapsed_time", "Elapsed time"),
         ("workunitid", "Workunit ID")),
        (("Result", "id"), ("WU", "workunitid"), ("Exit status", "exit_status"),
         ("Host (user)", "hostid"), ("CPU hours", "cpu_time"))),
    "workunit": TableSpec("workunit", "Workunits", (
        Filter("id", "Workunit ID", "int"),
        Filter("min_id", "ID at least", "min", "id"),
        Filter("max_id", "ID at most", "max", "id"),
        Filter("appid", "Application", "app"),
        Filter("batch", "Batch", "int"),
        Filter("hr_class", "HR class", "int"),
        Filter("name", "Name contains", "like"),
        Filter("error_mask", "Errors", "errmask"),
        Filter("need_validate", "Needs validation", "yesno"),
        _enum("assimilate_state", "Assimilate state"),
        _enum("file_delete_state", "File delete state"),
        Filter("canonical", "Has canonical result", "yesno", "canonical_resultid"),
    ), (("create_time", "Created"), ("transition_time", "Transition time")),
        (("id", "ID"), ("create_time", "Created"), ("transition_time", "Transition time"),
         ("priority", "Priority"), ("name", "Name")),
        (("ID", "id"), ("Name", "name"), ("Created", "create_time"))),
    "host": TableSpec("host", "Hosts", (
        Filter("id", "Host ID", "int"),
        Filter("userid", "User ID", "int"),
        Filter("domain_name", "Name contains", "like"),
        Filter("last_ip_addr", "IP address contains", "like"),
        Filter("os_name", "OS contains", "like"),
        Filter("p_model", "CPU model contains", "like"),
    ), (("create_time", "Created"), ("rpc_time", "Last RPC")),
        (("id", "ID"), ("rpc_time", "Last RPC"), ("expavg_credit", "Recent credit"),
         ("total_credit", "Total credit"), ("create_time", "Created")),
        (("Host", "id"), ("RAC", "expavg_credit"), ("Total credit", "total_credit"),
         ("Last RPC", "rpc_time"))),
    "user": TableSpec("user", "Users", (
        Filter("id", "User ID", "int"),
        Filter("name", "Name contains", "like"),
        Filter("email_addr", "Email contains", "like"),
        Filter("teamid", "Team ID", "int"),
    ), (("create_time", "Created"),),
        (("id", "ID"), ("create_time", "Created"), ("expavg_credit", "Recent credit"),
         ("total_credit", "Total credit"), ("name", "Name")),
        (("User", "id"), ("Name", "name"), ("Created", "create_time"),
         ("Total credit", "total_credit"), ("RAC", "expavg_credit"))),
    "app": TableSpec("app", "Applications", (
        Filter("id", "App ID", "int"),
        Filter("deprecated", "Deprecated", "yesno"),
    ), (), (("id", "ID"), ("name", "Name")), (("ID", "id"), ("Name", "name"))),
    "app_version": TableSpec("app_version", "Application versions", (
        Filter("id", "App version ID", "int"),
        Filter("appid", "Application", "app"),
        Filter("platformid", "Platform", "platform"),
        Filter("plan_class", "Plan class contains", "like"),
        Filter("deprecated", "Deprecated", "yesno"),
    ), (("create_time", "Created"),), (("id", "ID"), ("version_num", "Version")),
        (("ID", "id"), ("Version", "version_num"))),
    "platform": TableSpec("platform", "Platforms", (
        Filter("deprecated", "Deprecated", "yesno"),
    ), (), (("id", "ID"), ("name", "Name")), (("ID", "id"), ("Name", "name"))),
    "team": TableSpec("team", "Teams", (
        Filter("id", "Team ID", "int"),
        Filter("name", "Name contains", "like"),
        Filter("userid", "Founder (user ID)", "int"),
        Filter("country", "Country contains", "like"),
        Filter("url", "URL contains", "like"),
    ), (("create_time", "Created"),),
        (("id", "ID"), ("create_time", "Created"), ("nusers", "Members"),
         ("total_credit", "Total credit"), ("expavg_credit", "Recent credit"), ("name", "Name")),
        (("ID", "id"), ("Name", "name"), ("Members", "nusers"), ("Total credit", "total_credit"),
         ("RAC", "expavg_credit"), ("Created", "create_time"))),
    # No id column: rows are (host, app version) pairs, shown in lists only.
    "host_app_version": TableSpec("host_app_version", "Host app versions", (
        Filter("host_id", "Host ID", "int"),
        Filter("app_version_id", "App version ID", "int"),
        Filter("min_consecutive_valid", "Consecutive valid at least", "min",
               "consecutive_valid"),
    ), (), (("host_id", "Host ID"), ("app_version_id", "App version ID"),
            ("et_avg", "Elapsed per FLOP"), ("pfc_avg", "PFC average"),
            ("consecutive_valid", "Consecutive valid"), ("n_jobs_today", "Jobs today"),
            ("turnaround_avg", "Turnaround")),
        (("Host", "host_id"), ("App version", "app_version_id"),
         ("Jobs today / daily quota", "n_jobs_today"), ("Consecutive valid", "consecutive_valid"),
         ("PFC avg (n)", "pfc_avg"), ("Speed, GFLOPS (n)", "et_avg"),
         ("Turnaround (n)", "turnaround_avg"))),
    "batch": TableSpec("batch", "Batches", (
        Filter("id", "Batch ID", "int"),
        Filter("user_id", "Submitter (user ID)", "int"),
        Filter("app_id", "Application", "app"),
        Filter("state", "State", "enum", choices=batches.STATE_CHOICES),
        Filter("name", "Name contains", "like"),
    ), (("create_time", "Created"), ("completion_time", "Completed")),
        (("id", "ID"), ("create_time", "Created"), ("completion_time", "Completed"),
         ("njobs", "Jobs"), ("fraction_done", "Fraction done")),
        (("ID", "id"), ("Jobs", "njobs"), ("Done", "fraction_done"), ("Created", "create_time"),
         ("Completed", "completion_time"))),
}

# Columns a list query reads (blobs are only read for a detail page).
LIST_COLUMNS = {
    "result": "id, workunitid, server_state, outcome, client_state, validate_state, "
              "file_delete_state, exit_status, hostid, userid, app_version_id, appid, "
              "create_time, sent_time, received_time, report_deadline, cpu_time, "
              "elapsed_time, granted_credit, name",
    "workunit": "id, name, appid, batch, canonical_resultid, error_mask, need_validate, "
                "file_delete_state, assimilate_state, create_time, transition_time",
    "host": "id, userid, last_ip_addr, domain_name, expavg_credit, total_credit, "
            "p_model, os_name, os_version, rpc_time, p_ncpus",
    "user": "id, name, email_addr, create_time, total_credit, expavg_credit, teamid",
    "app": "*",
    "app_version": "id, create_time, appid, version_num, platformid, plan_class, "
                   "min_core_version, max_core_version, deprecated, beta",
    "platform": "*",
    "team": "id, name, userid, nusers, country, type, total_credit, expavg_credit, create_time",
    "host_app_version": "*",
    "batch": batches.LIST_COLUMNS,
}


def table_spec(ctx):
    name = ctx.req.get("table") or "result"
    spec = TABLES.get(name)
    if spec is None:
        raise PageError("unknown table %r: one of %s" % (name, ", ".join(TABLES)),
                        "404 Not Found")
    return spec


# ---------------------------------------------------------------------------
# Filters -> SQL

def parse_time(text, end=False):
    """A form date as a Unix time (UTC): ``YYYY-MM-DD``, with ``HH:MM[:SS]``
    after a space or T, or a plain Unix time.  ``end``: a bare date means
    the end of that day."""
    text = text.strip()
    if text.isdigit():
        return int(text)
    m = re.fullmatch(r"(\d{4})-(\d{1,2})-(\d{1,2})(?:[ T](\d{1,2}):(\d{2})(?::(\d{2}))?)?", text)
    if not m:
        raise PageError("date %r: write YYYY-MM-DD, YYYY-MM-DD HH:MM or a Unix time" % text)
    y, mo, d, hh, mm, ss = m.groups()
    try:
        base = calendar.timegm((int(y), int(mo), int(d), int(hh or 0), int(mm or 0),
                                int(ss or 0), 0, 0, 0))
        time.gmtime(base)
    except (ValueError, OverflowError):
        raise PageError("date %r is not a valid date" % text) from None
    if end and hh is None:
        base += 86399
    return base


def _like(text):
    """A LIKE pattern matching ``text`` anywhere, with its wildcards escaped."""
    return "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def build_where(ctx, spec, source=None):
    """(SQL condition, parameters, the filter values in effect) for a table.

    ``source``: a function name -> text (default: the query string).
    """
    get = source or ctx.req.get
    clauses, params, active = [], [], {}
    for f in spec.filters:
        text = get(f.param).strip() if get(f.param) else ""
        if text == "":
            continue
        active[f.param] = text
        col = f.col
        if f.kind in ("int", "enum", "app", "platform", "min", "max"):
            try:
                value = int(text)
            except ValueError:
                raise PageError("%s: %r is not a number" % (f.label, text)) from None
            op = {"min": ">=", "max": "<="}.get(f.kind, "=")
            clauses.append("%s %s %%s" % (col, op))
            params.append(value)
        elif f.kind == "like":
            clauses.append("%s LIKE %%s" % col)
            params.append(_like(text))
        elif f.kind == "yesno":
            if text not in ("0", "1"):
                raise PageError("%s: %r is not 0 or 1" % (f.label, text))
            clauses.append("%s %s 0" % (col, "<>" if text == "1" else "="))
        elif f.kind == "errmask":
            sql = {"any": "error_mask <> 0", "none": "error_mask = 0",
                   "cancelled": "(error_mask & 16) <> 0"}.get(text)
            if sql is None:
                raise PageError("%s: %r is not any, none or cancelled" % (f.label, text))
            clauses.append(sql)
    tcol = get("tfield").strip() if get("tfield") else ""
    if tcol:
        if tcol not in dict(spec.time_columns):
            raise PageError("time field %r: one of %s"
                            % (tcol, ", ".join(c for c, _ in spec.time_columns)))
        after = get("after").strip() if get("after") else ""
        before = get("before").strip() if get("before") else ""
        if after or before:
            active["tfield"] = tcol
        # mod_time is a TIMESTAMP, the others Unix times.
        mark = "FROM_UNIXTIME(%s)" if tcol == "mod_time" else "%s"
        if after:
            active["after"] = after
            clauses.append("%s >= %s" % (tcol, mark))
            params.append(parse_time(after))
        if before:
            active["before"] = before
            clauses.append("%s <= %s" % (tcol, mark))
            params.append(parse_time(before, end=True))
    return (" AND ".join(clauses) or "1"), params, active


def order_by(ctx, spec):
    """ORDER BY text from the whitelisted sort parameters (default: the
    table's first sort column, descending: newest first)."""
    sort = ctx.req.get("sort") or spec.sort_columns[0][0]
    if sort not in dict(spec.sort_columns):
        raise PageError("sort: %r is not one of %s"
                        % (sort, ", ".join(c for c, _ in spec.sort_columns)))
    order = ctx.req.get("order") or "desc"
    if order not in ("asc", "desc"):
        raise PageError("order: %r is not asc or desc" % order)
    return "%s %s" % (sort, order.upper()), {"sort": sort, "order": order}


# ---------------------------------------------------------------------------
# db_form.php

def filter_inputs(ctx, spec, catalog, values=None):
    """Label and input for each filter, and the time range (form grid cells)."""
    values = values if values is not None else {f.param: ctx.req.get(f.param) for f in spec.filters}
    cells = []
    for f in spec.filters:
        v = values.get(f.param, "")
        if f.kind == "enum":
            widget = select(f.param, f.choices, v, "Any")
        elif f.kind == "app":
            widget = select(f.param, catalog.app_choices(), v, "Any")
        elif f.kind == "platform":
            widget = select(f.param, [(p["id"], p["name"]) for p in catalog.platforms.values()],
                            v, "Any")
        elif f.kind == "yesno":
            widget = select(f.param, (("1", "yes"), ("0", "no")), v, "Any")
        elif f.kind == "errmask":
            widget = select(f.param, (("any", "with an error"), ("none", "without errors"),
                                      ("cancelled", "cancelled")), v, "Any")
        else:
            widget = text_input(f.param, v, 24 if f.kind == "like" else 10)
        cells.append(fmt('<label for="{}">{}</label><div>{}</div>', f.param, f.label, widget))
    if spec.time_columns:
        get = ctx.req.get
        cells.append(fmt(
            '<label for="tfield">Time</label><div>{} from {} to {} '
            '<span class="muted small">YYYY-MM-DD [HH:MM] UTC or Unix time; now is {}</span></div>',
            select("tfield", spec.time_columns, get("tfield")),
            text_input("after", get("after"), 16), text_input("before", get("before"), 16),
            ctx.now))
    return join(cells)


def db_form(ctx):
    """``db_form.php?table=T``: the query form, then the table's columns."""
    spec = table_spec(ctx)
    catalog = Catalog(ctx.rdb)
    get = ctx.req.get
    form = fmt(
        '<form class="filters" method="get" action="db_action.php">{}{}'
        '<label for="sort">Sort by</label><div>{} {}</div>'
        '<label for="nresults">Rows per page</label><div>{}</div>'
        '<span></span><div><button type="submit">Show</button></div></form>',
        hidden("table", spec.name), filter_inputs(ctx, spec, catalog),
        select("sort", spec.sort_columns, get("sort") or "id"),
        select("order", (("desc", "Descending"), ("asc", "Ascending")), get("order") or "desc"),
        text_input("nresults", get("nresults") or DEFAULT_ROWS, 5, "number"))
    cols = ctx.rdb.query("SHOW COLUMNS FROM %s" % spec.name)
    described = table(("Name", "Type", "Default"),
                      [(c["Field"], text_of(c["Type"]), text_of(c["Default"])) for c in cols])
    body = fmt("<h2>Query {} table</h2>{}<details><summary>Columns of the {} table</summary>"
               "{}</details>", spec.name, form, spec.name, described)
    return render(ctx, spec.title, body)


# ---------------------------------------------------------------------------
# db_action.php

# Columns the "find" box of a table searches (an id, or a name).
FIND_COLUMNS = {"result": ("name",), "workunit": ("name",), "user": ("name", "email_addr"),
                "host": ("domain_name", "last_ip_addr"), "team": ("name",), "app": ("name",),
                "platform": ("name",), "app_version": ("plan_class",)}


def db_action(ctx):
    """``db_action.php?table=T&...``: one row (``id=N`` alone) or a paged list;
    ``find=TEXT``: the row with that id or name, else the rows whose name
    contains it."""
    spec = table_spec(ctx)
    params = set(k for k, v in ctx.req.query.items() if v and v[0] != "")
    if ctx.req.get("id") and params <= {"table", "id", "detail"} and spec.name in DETAILS:
        return detail(ctx, spec, ctx.int_arg("id"))
    find = ctx.req.get("find")
    if find and spec.name in FIND_COLUMNS:
        return find_rows(ctx, spec, find)
    return listing(ctx, spec)


def find_rows(ctx, spec, text):
    """One match (the id, or exactly the name): its page; else the list of
    rows whose name contains ``text``."""
    db = ctx.db
    cols = FIND_COLUMNS[spec.name]
    if text.isdigit() and db.query_value("SELECT COUNT(*) FROM %s WHERE id = %%s"
                                         % spec.name, (int(text),)):
        return detail(ctx, spec, int(text))
    exact = db.query("SELECT id FROM %s WHERE %s LIMIT 2" % (
        spec.name, " OR ".join("%s = %%s" % c for c in cols)), [text] * len(cols))
    if len(exact) == 1:
        return detail(ctx, spec, exact[0]["id"])
    where = "(%s)" % " OR ".join("%s LIKE %%s" % c for c in cols)
    return listing(ctx, spec, (where, [_like(text)] * len(cols), {"find": text}))


def listing(ctx, spec, extra=None):
    """A paged list of the rows the query parameters select; ``extra``: one
    more (condition, parameters, parameters to keep in links)."""
    where, params, active = build_where(ctx, spec)
    if extra:
        where = "%s AND %s" % (where, extra[0])
        params = params + list(extra[1])
        active = dict(active, **extra[2])
    order, sort_params = order_by(ctx, spec)
    n = ctx.int_arg("nresults", DEFAULT_ROWS, minimum=1, maximum=MAX_ROWS)
    start = ctx.int_arg("start", 0, minimum=0)
    db = ctx.rdb
    total = db.query_value("SELECT COUNT(*) FROM %s WHERE %s" % (spec.name, where), params, 0)
    rows = db.query("SELECT %s FROM %s WHERE %s ORDER BY %s LIMIT %%s OFFSET %%s"
                    % (LIST_COLUMNS[spec.name], spec.name, where, order), params + [n, start])
    catalog = Catalog(db)
    base = dict(active, table=spec.name, **sort_params)
    if n != DEFAULT_ROWS:
        base["nresults"] = n
    parts = [fmt("<p>{} rows match. {}</p>", "{:,}".format(total),
                 "Showing %d to %d." % (start + 1, start + len(rows)) if rows else "")]
    tools = [link(url("db_form.php", **base), "Change query")]
    if spec.name == "result":
        if ctx.req.get("summary"):
            tools.append(link(url("db_action.php", **base), "Hide summary"))
        else:
            tools.append(link(url("db_action.php", summary=1, **base), "Summary"))
    if spec.name == "workunit" and total and "find" not in active:
        tools.append(link(url("cancel_workunits.php", **active), "Cancel these workunits..."))
        tools.append(link(url("revalidate.php", **active), "Revalidate these workunits..."))
    parts.append(fmt("<p>{}</p>", join(tools, " | ")))
    if spec.name == "result" and ctx.req.get("summary"):
        parts.append(summary_panels(state_counts(db, where, params), active))
    by_header = dict(spec.header_sort)
    unsorted = {k: v for k, v in base.items() if k not in ("sort", "order")}

    def head(label):
        column = by_header.get(label)
        if column is None:
            return label
        return sort_link("db_action.php", unsorted, column, label, sort_params["sort"],
                         sort_params["order"])

    parts.append(LISTS[spec.name](ctx, db, catalog, rows, head))
    parts.append(paging("db_action.php", base, start, len(rows), total, n))
    return render(ctx, spec.title, join(parts, Markup("\n")))


def _result_time(r):
    if r["received_time"]:
        return "received " + N.time_text(r["received_time"])
    if r["sent_time"]:
        return "deadline " + N.time_text(r["report_deadline"])
    return "created " + N.time_text(r["create_time"])


def list_results(ctx, db, catalog, rows, head=None):
    users = names_by_id(db, "user", "name", (r["userid"] for r in rows))
    out = []
    classes = {}
    for i, r in enumerate(rows):
        host = (fmt("{} ({})", link(url("db_action.php", table="host", id=r["hostid"]), r["hostid"]),
                    link(url("db_action.php", table="user", id=r["userid"]),
                         users.get(r["userid"], r["userid"])))
                if r["hostid"] else Markup("---"))
        if r["outcome"] == Outcome.SUCCESS:
            classes[(i, 3)] = "ok"
        elif r["server_state"] == ServerState.OVER and r["outcome"] in (
                Outcome.CLIENT_ERROR, Outcome.VALIDATE_ERROR, Outcome.COULDNT_SEND):
            classes[(i, 3)] = "bad"
        if r["validate_state"] == ValidateState.VALID:
            classes[(i, 5)] = "ok"
        elif r["validate_state"] == ValidateState.INVALID:
            classes[(i, 5)] = "bad"
        if r["exit_status"]:
            classes[(i, 7)] = "bad"
        out.append((
            link(url("db_action.php", table="result", id=r["id"]), r["id"]),
            link(url("db_action.php", table="workunit", id=r["workunitid"]), r["workunitid"]),
            N.state_text("server_state", r["server_state"]),
            N.state_text("outcome", r["outcome"]) if r["server_state"] == ServerState.OVER else "",
            N.state_text("client_state", r["client_state"]),
            N.state_text("validate_state", r["validate_state"]),
            N.word("file_delete_state", r["file_delete_state"]),
            N.exit_text(r["exit_status"]) if r["server_state"] == ServerState.OVER else "",
            host,
            catalog.version_link(r["app_version_id"]) if r["app_version_id"] else "---",
            _result_time(r),
            num(r["cpu_time"] / 3600.0, 2),
            num(r["granted_credit"], 2),
        ))
    return table(("Result", "WU", "Server state", "Outcome", "Client state",
                  "Validate state", "Delete state", "Exit status", "Host (user)",
                  "App version", "Time", "CPU hours", "Credit"), out,
                 lambda i, j, c: classes.get((i, j), ""), "no results match", head=head)


def list_workunits(ctx, db, catalog, rows, head=None):
    out = []
    for r in rows:
        canon = (link(url("db_action.php", table="result", id=r["canonical_resultid"]),
                      r["canonical_resultid"]) if r["canonical_resultid"] else "---")
        out.append((
            link(url("db_action.php", table="workunit", id=r["id"]), r["id"]),
            r["name"], catalog.app_name(r["appid"]), r["batch"],
            fmt("{} {}", canon, link(url("db_action.php", table="result", workunitid=r["id"]),
                                     "all results")),
            N.error_mask_text(r["error_mask"]),
            N.word("file_delete_state", r["file_delete_state"]),
            N.word("assimilate_state", r["assimilate_state"]),
            N.time_text(r["create_time"]),
        ))
    return table(("ID", "Name", "App", "Batch", "Canonical result", "Error mask",
                  "File delete", "Assimilate", "Created"), out,
                 lambda i, j, c: "bad" if j == 5 and c else "", "no workunits match", head=head)


def list_hosts(ctx, db, catalog, rows, head=None):
    out = [(link(url("db_action.php", table="host", id=r["id"]), r["id"]),
            link(url("db_action.php", table="user", id=r["userid"]), r["userid"]),
            r["last_ip_addr"], r["domain_name"], num(r["expavg_credit"]),
            num(r["total_credit"]), r["p_ncpus"], r["p_model"],
            "%s %s" % (text_of(r["os_name"]), text_of(r["os_version"])),
            N.time_text(r["rpc_time"], "never"),
            link(url("why_no_work.php", hostid=r["id"]), "why no work?"))
           for r in rows]
    return table(("Host", "User", "IP address", "Name", "RAC", "Total credit", "CPUs",
                  "CPU", "OS", "Last RPC", ""), out, empty="no hosts match", head=head)


def list_users(ctx, db, catalog, rows, head=None):
    teams = names_by_id(db, "team", "name", (r["teamid"] for r in rows))
    out = [(link(url("db_action.php", table="user", id=r["id"]), r["id"]),
            link(url("manage_user.php", userid=r["id"]), r["name"]),
            r["email_addr"], N.time_text(r["create_time"]), num(r["total_credit"]),
            num(r["expavg_credit"]),
            link(url("db_action.php", table="team", id=r["teamid"]),
                 teams.get(r["teamid"], r["teamid"])) if r["teamid"] else "",
            link(url("db_action.php", table="host", userid=r["id"]), "hosts"))
           for r in rows]
    return table(("User", "Name", "Email", "Created", "Total credit", "RAC", "Team", ""),
                 out, empty="no users match", head=head)


def list_apps(ctx, db, catalog, rows, head=None):
    out = [(link(url("db_action.php", table="app", id=r["id"]), r["id"]), r["name"],
            r["user_friendly_name"], "yes" if r["deprecated"] else "no", r["weight"],
            "yes" if r["beta"] else "no", N.time_text(r["create_time"]))
           for r in rows]
    return table(("ID", "Name", "Description", "Deprecated", "Weight", "Beta", "Created"),
                 out, empty="no applications", head=head)


def list_app_versions(ctx, db, catalog, rows, head=None):
    out = [(link(url("db_action.php", table="app_version", id=r["id"]), r["id"]),
            catalog.app_name(r["appid"]), N.version_text(r["version_num"]),
            catalog.platform_name(r["platformid"]), r["plan_class"],
            N.client_version_text(r["min_core_version"]),
            N.client_version_text(r["max_core_version"]),
            "yes" if r["deprecated"] else "no", "yes" if r["beta"] else "no",
            N.time_text(r["create_time"]))
           for r in rows]
    return table(("ID", "App", "Version", "Platform", "Plan class", "Min client",
                  "Max client", "Deprecated", "Beta", "Created"), out,
                 empty="no app versions", head=head)


def list_platforms(ctx, db, catalog, rows, head=None):
    out = [(r["id"], r["name"], r["user_friendly_name"], "yes" if r["deprecated"] else "no",
            N.time_text(r["create_time"]),
            link(url("db_action.php", table="app_version", platformid=r["id"]), "versions"))
           for r in rows]
    return table(("ID", "Name", "Description", "Deprecated", "Created", ""), out,
                 empty="no platforms", head=head)


def list_teams(ctx, db, catalog, rows, head=None):
    founders = names_by_id(db, "user", "name", (r["userid"] for r in rows))
    out = [(link(url("db_action.php", table="team", id=r["id"]), r["id"]), r["name"],
            link(url("manage_user.php", userid=r["userid"]),
                 founders.get(r["userid"], r["userid"])) if r["userid"] else "---",
            link(url("db_action.php", table="user", teamid=r["id"]), r["nusers"]),
            r["country"], num(r["total_credit"]), num(r["expavg_credit"]),
            N.time_text(r["create_time"]))
           for r in rows]
    return table(("ID", "Name", "Founder", "Members", "Country", "Total credit", "RAC",
                  "Created"), out, empty="no teams match", head=head)


def _hav_cells(catalog, v):
    """A host_app_version row's statistics, as the host page shows them."""
    avid = v["app_version_id"]
    return (catalog.version_link(avid) if avid < 1000000
            else "anonymous platform %d" % avid,
            "%d / %d" % (v["n_jobs_today"], v["max_jobs_per_day"]),
            v["consecutive_valid"],
            "%s (%d)" % (num(v["pfc_avg"], 3), v["pfc_n"]),
            # et_avg is seconds per FLOP: its inverse is the version's speed there
            "%s (%d)" % (num(1e-9 / v["et_avg"], 2) if v["et_avg"] > 0 else "---", v["et_n"]),
            "%s days (%d)" % (num(v["turnaround_avg"] / 86400), v["turnaround_n"]))


HAV_HEADERS = ("App version", "Jobs today / daily quota", "Consecutive valid", "PFC avg (n)",
               "Speed, GFLOPS (n)", "Turnaround (n)")


def list_host_app_versions(ctx, db, catalog, rows, head=None):
    out = [(link(url("db_action.php", table="host", id=v["host_id"]), v["host_id"]),)
           + _hav_cells(catalog, v) for v in rows]
    return table(("Host",) + HAV_HEADERS, out, empty="no host app versions match", head=head)


LISTS = {"result": list_results, "workunit": list_workunits, "host": list_hosts,
         "user": list_users, "app": list_apps, "app_version": list_app_versions,
         "platform": list_platforms, "team": list_teams,
         "host_app_version": list_host_app_versions, "batch": batches.list_batches}


# ---------------------------------------------------------------------------
# Detail pages

SINGULAR = {"app_version": "Application version", "batch": "Batch"}


def detail(ctx, spec, rowid):
    db = ctx.db
    row = db.query_one("SELECT * FROM %s WHERE id = %%s" % spec.name, (rowid,))
    if row is None:
        raise PageError("no %s with id %d" % (spec.name, rowid), "404 Not Found", "Not found")
    catalog = Catalog(db)
    body = DETAILS[spec.name](ctx, db, catalog, row)
    return render(ctx, "%s %d" % (SINGULAR.get(spec.name, spec.title.rstrip("s")), rowid), body)


def _pre(value):
    text = text_of(value)
    return fmt("<pre>{}</pre>", text) if text.strip() else Markup('<span class="muted">empty</span>')


def stderr_message(stderr):
    """The client's error line in stderr_out (its <message> element), or ""."""
    message = block(text_of(stderr), "message")
    return "" if message is None else message.strip()


def show_result(ctx, db, catalog, r):
    wu = db.query_one("SELECT id, name FROM workunit WHERE id = %s", (r["workunitid"],))
    host = (db.query_one("SELECT id, domain_name, last_ip_addr FROM host WHERE id = %s",
                         (r["hostid"],)) if r["hostid"] else None)
    user = (db.query_one("SELECT id, name FROM user WHERE id = %s", (r["userid"],))
            if r["userid"] else None)
    over = r["server_state"] == ServerState.OVER
    client_word = N.state_text("client_state", r["client_state"])
    if r["client_state"] == ClientState.ABORTED and r["exit_status"] == 202:
        client_word = "Cancelled by server [%d]" % r["client_state"]
    pairs = [
        ("ID", r["id"]),
        ("Name", r["name"]),
        ("Workunit", fmt("{} [{}]", link(url("db_action.php", table="workunit", id=r["workunitid"]),
                                          wu["name"] if wu else "missing"), r["workunitid"])),
        ("Created", N.time_text(r["create_time"])),
        ("Sent", N.time_text(r["sent_time"])),
        ("Report deadline", N.time_text(r["report_deadline"])),
        ("Received", N.time_text(r["received_time"])),
        ("Last modified", str(r["mod_time"])),
        ("Server state", N.state_text("server_state", r["server_state"])),
        ("Outcome", N.state_text("outcome", r["outcome"]) if over else "---"),
        ("Client state", client_word),
        ("Exit status", N.exit_text(r["exit_status"])),
        ("Error message", stderr_message(r["stderr_out"])),
        ("Host", fmt("{} [{}] {}", link(url("db_action.php", table="host", id=r["hostid"]),
                                         "%s (%s)" % (text_of(host["domain_name"]),
                                                      text_of(host["last_ip_addr"]))),
                     r["hostid"], link(url("why_no_work.php", hostid=r["hostid"]), "why no work?"))
         if host else r["hostid"] or "---"),
        ("User", fmt("{} [{}]", link(url("db_action.php", table="user", id=r["userid"]),
                                      user["name"]), r["userid"]) if user else r["userid"] or "---"),
        ("CPU time", "%s s" % num(r["cpu_time"], 2)),
        ("Elapsed time", "%s s" % num(r["elapsed_time"], 2)),
        ("Peak working set", N.bytes_text(r["peak_working_set_size"])),
        ("Peak disk usage", N.bytes_text(r["peak_disk_usage"])),
        ("Batch", r["batch"]),
        ("File delete state", N.state_text("file_delete_state", r["file_delete_state"])),
        ("Validate state", N.state_text("validate_state", r["validate_state"])),
        ("Granted credit", r["granted_credit"]),
        ("Application", fmt("{} [{}]", link(url("db_action.php", table="app", id=r["appid"]),
                                             catalog.app_name(r["appid"])), r["appid"])),
        ("App version", fmt("{} [{}]", catalog.version_link(r["app_version_id"]),
                            r["app_version_id"])),
        ("App version number (reported)", r["app_version_num"]),
        ("Estimated GFLOPS", num(r["flops_estimate"] / 1e9, 2)),
        ("Random", r["random"]),
        ("Opaque", r["opaque"]),
        ("Team", r["teamid"]),
        ("Priority", r["priority"]),
        ("Runtime outlier", "yes" if r["runtime_outlier"] else "no"),
        ("XML doc in", _pre(r["xml_doc_in"])),
        ("XML doc out", _pre(r["xml_doc_out"])),
        ("stderr out", _pre(r["stderr_out"])),
    ]
    links = join([
        link(url("db_action.php", table="result", workunitid=r["workunitid"]),
             "Other results of this workunit"),
        link(url("show_log.php", s="[RESULT#%d]" % r["id"]), "Grep logs for this result"),
    ], " | ")
    return fmt("<p>{}</p>{}", links, kv_table(pairs))


def show_workunit(ctx, db, catalog, w):
    where, params = "workunitid = %s", [w["id"]]
    panels = summary_panels(state_counts(db, where, params), {"workunitid": w["id"]})
    results = db.query("SELECT %s FROM result WHERE workunitid = %%s ORDER BY id"
                       % LIST_COLUMNS["result"], (w["id"],))
    canon = (link(url("db_action.php", table="result", id=w["canonical_resultid"]),
                  w["canonical_resultid"]) if w["canonical_resultid"] else "none")
    pairs = [
        ("ID", w["id"]), ("Name", w["name"]),
        ("Application", fmt("{} [{}]", link(url("db_action.php", table="app", id=w["appid"]),
                                             catalog.app_name(w["appid"])), w["appid"])),
        ("Created", N.time_text(w["create_time"])),
        ("Transition time", N.time_text(w["transition_time"], "0 (now)")),
        ("Last modified", str(w["mod_time"])),
        ("Batch", w["batch"]),
        ("Required app version number", w["app_version_num"] or "any"),
        ("Estimated FP operations", "%s GFLOPs" % num(w["rsc_fpops_est"] / 1e9)),
        ("Max FP operations", "%s GFLOPs" % num(w["rsc_fpops_bound"] / 1e9)),
        ("Max memory usage", N.bytes_text(w["rsc_memory_bound"])),
        ("Max disk usage", N.bytes_text(w["rsc_disk_bound"])),
        ("Need validate?", "%s [%d]" % ("yes" if w["need_validate"] else "no", w["need_validate"])),
        ("Canonical result", canon),
        ("Canonical credit", w["canonical_credit"]),
        ("Delay bound", N.delay_text(w["delay_bound"])),
        ("Error mask", fmt("{} [{}]", N.error_mask_text(w["error_mask"]) or "none", w["error_mask"])),
        ("File delete state", N.state_text("file_delete_state", w["file_delete_state"])),
        ("Assimilate state", N.state_text("assimilate_state", w["assimilate_state"])),
        ("Min quorum", w["min_quorum"]), ("Target results", w["target_nresults"]),
        ("Max error results", w["max_error_results"]),
        ("Max total results", w["max_total_results"]),
        ("Max success results", w["max_success_results"]),
        ("Result template", w["result_template_file"]),
        ("HR class", w["hr_class"]), ("Opaque", w["opaque"]), ("Priority", w["priority"]),
        ("Transitioner flags", w["transitioner_flags"]),
        ("Keywords", w.get("keywords", "") or "empty"),
        ("XML doc", _pre(w["xml_doc"])),
    ]
    actions = [link(url("revalidate.php", ids=w["id"]), "Revalidate..."),
               link(url("assign.php", workunitid=w["id"]), "Assignments"),
               link(url("show_log.php", s="[WU#%d " % w["id"]), "Grep logs for this workunit")]
    if not w["error_mask"] & 16:
        actions.insert(0, link(url("cancel_wu_action.php", wuid1=w["id"], wuid2=w["id"]),
                               "Cancel this workunit..."))
    return fmt("<p>{}</p>{}<h2>Results</h2>{}<h2>Workunit</h2>{}",
               join(actions, " | "), panels, list_results(ctx, db, catalog, results),
               kv_table(pairs))


def show_host(ctx, db, catalog, h):
    user = db.query_one("SELECT id, name FROM user WHERE id = %s", (h["userid"],))
    pairs = [
        ("ID", h["id"]), ("Created", N.time_text(h["create_time"])),
        ("User", fmt("{} [{}]", link(url("db_action.php", table="user", id=h["userid"]),
                                      user["name"]), h["userid"]) if user
         else "%d (zombie: merged into host %d)" % (h["userid"], h["rpc_seqno"])
         if not h["userid"] else h["userid"]),
        ("Domain name", h["domain_name"]), ("Venue", h["venue"]),
        ("Product name", h["product_name"]),
        ("Info", text_of(h["misc"]) or text_of(h["serialnum"])),
        ("Total credit", h["total_credit"]), ("Average credit", h["expavg_credit"]),
        ("IP address", "%s (same the last %d times)" % (text_of(h["last_ip_addr"]),
                                                       h["nsame_ip_addr"])),
        ("External IP address", h["external_ip_addr"]),
        ("Time zone", "UTC %+g hours" % (h["timezone"] / 3600.0)),
        ("Number of CPUs", h["p_ncpus"]),
        ("CPU", "%s %s" % (text_of(h["p_vendor"]), text_of(h["p_model"]))),
        ("GFLOPS per CPU", num(h["p_fpops"] / 1e9)), ("GIOPS per CPU", num(h["p_iops"] / 1e9)),
        ("Number of GPUs", h["p_ngpus"]), ("GPU GFLOPS", num(h["p_gpu_fpops"] / 1e9)),
        ("Operating system", "%s %s" % (text_of(h["os_name"]), text_of(h["os_version"]))),
        ("Memory", N.bytes_text(h["m_nbytes"])), ("Cache", N.bytes_text(h["m_cache"])),
        ("Swap", N.bytes_text(h["m_swap"])),
        ("Total disk", N.bytes_text(h["d_total"])), ("Free disk", N.bytes_text(h["d_free"])),
        ("Upload bandwidth", "%s/s" % N.bytes_text(h["n_bwup"])),
        ("Download bandwidth", "%s/s" % N.bytes_text(h["n_bwdown"])),
        ("Average turnaround", "%s days" % num(h["avg_turnaround"] / 86400)),
        ("Number of RPCs", h["rpc_seqno"]),
        ("Last RPC", N.time_text(h["rpc_time"], "never")),
        ("Client on", "%s %%" % num(h["on_frac"] * 100, 0)),
        ("Connected", "%s %%" % num(h["connected_frac"] * 100, 0)
         if h["connected_frac"] >= 0 else "unknown"),
        ("User active", "%s %%" % num(h["active_frac"] * 100, 0)),
        ("Max results per day", "%d%s" % (h["max_results_day"],
                                          " (blacklisted)" if h["max_results_day"] == -1 else "")),
        ("Results", link(url("db_action.php", table="result", hostid=h["id"]), "all results")),
        ("Failures", link(url("db_action.php", table="result", hostid=h["id"],
                              server_state=int(ServerState.OVER),
                              outcome=int(Outcome.CLIENT_ERROR)), "client errors")),
        ("Why no work?", link(url("why_no_work.php", hostid=h["id"]),
                              "the scheduler's recent reasons")),
    ]
    havs = db.query("SELECT * FROM host_app_version WHERE host_id = %s ORDER BY app_version_id",
                    (h["id"],))
    hav_rows = [_hav_cells(catalog, v) for v in havs]
    clear = fmt('<form class="inline" method="post" action="clear_host.php">{}{}'
                '<button type="submit">Clear RPC time</button></form> '
                '<span class="muted small">lets a host whose last RPC was "too recent" '
                'contact the scheduler again</span>',
                ctx.token_field("clear_host.php"), hidden("hostid", h["id"]))
    return fmt("{}<h2>Per app version</h2>{}<p>{}</p>", kv_table(pairs),
               table(HAV_HEADERS, hav_rows,
                     empty="this host has no app version statistics yet"), clear)


def show_user(ctx, db, catalog, u):
    hosts = db.query("SELECT %s FROM host WHERE userid = %%s ORDER BY id" % LIST_COLUMNS["host"],
                     (u["id"],))
    pairs = [
        ("ID", u["id"]), ("Name", u["name"]), ("Email", u["email_addr"]),
        ("Email validated", "yes" if u["email_validated"] else "no"),
        ("Created", N.time_text(u["create_time"])),
        ("Country", u["country"]), ("Postal code", u["postal_code"]), ("URL", u["url"]),
        ("Total credit", u["total_credit"]), ("Average credit", u["expavg_credit"]),
        ("Team", link(url("db_action.php", table="user", teamid=u["teamid"]), u["teamid"])
         if u["teamid"] else "none"),
        ("Venue", u["venue"]), ("Send email", u["send_email"]), ("Show hosts", u["show_hosts"]),
        ("Cross-project ID", u["cross_project_id"]),
        ("Results", link(url("db_action.php", table="result", userid=u["id"]), "all results")),
        ("Manage", link(url("manage_user.php", userid=u["id"]),
                        "ban, special user flags, job submission, delete...")),
        ("Project preferences", _pre(u["project_prefs"])),
        ("Global preferences", _pre(u["global_prefs"])),
    ]
    return fmt("{}<h2>Hosts</h2>{}", kv_table(pairs), list_hosts(ctx, db, catalog, hosts))


def show_app(ctx, db, catalog, a):
    pairs = [(k, a[k]) for k in a.keys() if k != "create_time"]
    pairs.insert(1, ("Created", N.time_text(a["create_time"])))
    versions = db.query("SELECT %s FROM app_version WHERE appid = %%s ORDER BY id"
                        % LIST_COLUMNS["app_version"], (a["id"],))
    links = join([link(url("manage_apps.php"), "Edit applications"),
                  link(url("result_summary.php", appid=a["id"]), "Result summary"),
                  link(url("failure_result_summary_by_platform.php", appid=a["id"]),
                       "Failures by app version")], " | ")
    return fmt("<p>{}</p>{}<h2>Versions</h2>{}", links, kv_table(pairs),
               list_app_versions(ctx, db, catalog, versions))


def show_app_version(ctx, db, catalog, v):
    pairs = [
        ("ID", v["id"]), ("Created", N.time_text(v["create_time"])),
        ("Application", link(url("db_action.php", table="app", id=v["appid"]),
                             catalog.app_name(v["appid"]))),
        ("Version", "%s [%d]" % (N.version_text(v["version_num"]), v["version_num"])),
        ("Platform", catalog.platform_name(v["platformid"])),
        ("Plan class", v["plan_class"]),
        ("Min client version", "%s [%d]" % (N.client_version_text(v["min_core_version"]),
                                            v["min_core_version"])),
        ("Max client version", "%s [%d]" % (N.client_version_text(v["max_core_version"]),
                                            v["max_core_version"])),
        ("Deprecated", "yes" if v["deprecated"] else "no"), ("Beta", "yes" if v["beta"] else "no"),
        ("PFC n / avg / scale", "%g / %g / %g" % (v["pfc_n"], v["pfc_avg"], v["pfc_scale"])),
        ("Recent credit", v["expavg_credit"]),
        ("Results", link(url("db_action.php", table="result", app_version_id=v["id"]), "all results")),
        ("XML doc", _pre(v["xml_doc"])),
    ]
    return fmt("<p>{}</p>{}", link("manage_app_versions.php", "Edit app versions"),
               kv_table(pairs))


def show_platform(ctx, db, catalog, p):
    return kv_table([(k, p[k]) for k in p.keys()])


def show_team(ctx, db, catalog, t):
    founder = db.query_one("SELECT id, name FROM user WHERE id = %s", (t["userid"],))
    pairs = [
        ("ID", t["id"]), ("Name", t["name"]), ("Name (HTML)", t["name_html"]),
        ("Created", N.time_text(t["create_time"])),
        ("Founder", fmt("{} [{}]", link(url("manage_user.php", userid=founder["id"]),
                                         founder["name"]), founder["id"])
         if founder else t["userid"] or "none"),
        ("Members", link(url("db_action.php", table="user", teamid=t["id"]), t["nusers"])),
        ("URL", t["url"]), ("Type", t["type"]), ("Country", t["country"]),
        ("Joinable", "yes" if t["joinable"] else "no"),
        ("Total credit", t["total_credit"]), ("Average credit", t["expavg_credit"]),
        ("Description", _pre(t["description"])),
    ]
    return kv_table(pairs)


DETAILS = {"result": show_result, "workunit": show_workunit, "host": show_host,
           "user": show_user, "app": show_app, "app_version": show_app_version,
           "platform": show_platform, "team": show_team, "batch": batches.show_batch}
