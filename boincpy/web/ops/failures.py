"""Result summaries and failure analysis, per app and time window:
``result_summary.php``, ``failure_result_summary_by_platform.php``,
``failure_result_summary_by_host.php``, ``error_summary.php``,
``pass_percentage_by_platform.php``.

A failure is what BOINC's pages count: server_state OVER with outcome
CLIENT_ERROR, received in the window.  Exit statuses are shown by their
BOINC names; every count links to the list of those results.
"""

from boincpy.error_numbers import exit_status_hex
from boincpy.states import Outcome, ServerState
from boincpy.web.markup import fmt, join, link, url
from boincpy.web.ops import names as N
from boincpy.web.ops.lookups import Catalog
from boincpy.web.page import checkbox, render, select, table
from boincpy.web.ops.summary import state_counts, summary_panels

WINDOWS = ((3600, "past hour"), (43200, "past 12 hours"), (86400, "past 24 hours"),
           (7 * 86400, "past 7 days"), (30 * 86400, "past 30 days"), (0, "all time"))
FAILED = "server_state = %d AND outcome = %d" % (ServerState.OVER, Outcome.CLIENT_ERROR)


def _window(ctx):
    appid = ctx.int_arg("appid", None)
    nsecs = ctx.int_arg("nsecs", 86400, minimum=0)
    return appid, nsecs


def _chooser(ctx, page, appid, nsecs, catalog):
    """The app / window form at the top of each page."""
    return fmt('<form method="get" action="{}"><label for="appid">Application</label> {} '
               '<label for="nsecs">Window</label> {} <button type="submit">Show</button></form>',
               page, select("appid", catalog.app_choices(), appid if appid else "", "All"),
               select("nsecs", WINDOWS, nsecs))


def _where(ctx, appid, nsecs, column="received_time", prefix=""):
    """SQL, parameters, and the list-page filters for app + window
    (``prefix``: the result table's alias and a dot, in a join)."""
    clauses, params, filters = [], [], {}
    if appid:
        clauses.append(prefix + "appid = %s")
        params.append(appid)
        filters["appid"] = appid
    if nsecs:
        since = ctx.now - nsecs
        mark = "FROM_UNIXTIME(%s)" if column == "mod_time" else "%s"
        clauses.append("%s%s > %s" % (prefix, column, mark))
        params.append(since)
        filters.update(tfield=column, after=since)
    return " AND ".join(clauses) or "1", params, filters


def _window_word(nsecs):
    return dict(WINDOWS).get(nsecs, "past %s" % N.age_text(nsecs))


def result_summary(ctx):
    """``result_summary.php?appid=&nsecs=``: results whose state changed in the window."""
    appid, nsecs = _window(ctx)
    db = ctx.rdb
    catalog = Catalog(db)
    where, params, filters = _where(ctx, appid, nsecs, "mod_time")
    body = fmt("{}<p>Results of {} modified in the {}.</p>{}",
               _chooser(ctx, "result_summary.php", appid, nsecs, catalog),
               catalog.app_name(appid) if appid else "all applications", _window_word(nsecs),
               summary_panels(state_counts(db, where, params), filters))
    return render(ctx, "Result summary", body)


def _failure_link(filters, count, **extra):
    params = dict(filters, table="result", server_state=int(ServerState.OVER),
                  outcome=int(Outcome.CLIENT_ERROR), **extra)
    return link(url("db_action.php", **params), count)


def by_platform(ctx):
    """``failure_result_summary_by_platform.php``: failures by (app version, exit status)."""
    appid, nsecs = _window(ctx)
    db = ctx.db
    catalog = Catalog(db)
    where, params, filters = _where(ctx, appid, nsecs)
    rows = db.query("SELECT app_version_id, exit_status, COUNT(*) AS n FROM result "
                    "WHERE %s AND %s GROUP BY app_version_id, exit_status ORDER BY n DESC"
                    % (where, FAILED), params)
    totals = {r["app_version_id"]: r for r in db.query(
        "SELECT app_version_id, COUNT(*) AS n, SUM(%s) AS failed FROM result "
        "WHERE %s AND server_state = %%s GROUP BY app_version_id" % (FAILED, where),
        params + [int(ServerState.OVER)])}
    detail = table(("App version", "Platform", "Exit status", "Error count"),
                   [(catalog.version_link(r["app_version_id"]),
                     _platform(catalog, r["app_version_id"]), N.exit_text(r["exit_status"]),
                     _failure_link(filters, r["n"], app_version_id=r["app_version_id"],
                                   exit_status=r["exit_status"]))
                    for r in rows], empty="no failures in this window")
    rates = table(("App version", "Platform", "Results over", "Failures", "Failure rate"),
                  [(catalog.version_link(avid), _platform(catalog, avid), t["n"],
                    _failure_link(filters, int(t["failed"] or 0), app_version_id=avid),
                    "%.1f %%" % (100.0 * int(t["failed"] or 0) / t["n"]) if t["n"] else "")
                   for avid, t in sorted(totals.items())],
                  lambda i, j, c: "bad" if j == 4 and c and not c.startswith("0.0") else "",
                  "no results over in this window")
    body = fmt("{}<p>Client errors of {} received in the {}.</p><h2>Failure rate by app version"
               "</h2>{}<h2>Failures by app version and exit status</h2>{}<p>{}</p>",
               _chooser(ctx, "failure_result_summary_by_platform.php", appid, nsecs, catalog),
               catalog.app_name(appid) if appid else "all applications", _window_word(nsecs),
               rates, detail,
               join([link(url("failure_result_summary_by_host.php", appid=appid, nsecs=nsecs),
                          "By host"),
                     link(url("error_summary.php", appid=appid, nsecs=nsecs), "By exit status")],
                    " | "))
    return render(ctx, "Failures by app version and error", body)


def _platform(catalog, avid):
    av = catalog.versions.get(int(avid or 0))
    return catalog.platform_name(av["platformid"]) if av else "---"


def by_host(ctx):
    """``failure_result_summary_by_host.php``: failures by (app version, host)."""
    appid, nsecs = _window(ctx)
    db = ctx.db
    catalog = Catalog(db)
    where, params, filters = _where(ctx, appid, nsecs)
    rwhere = _where(ctx, appid, nsecs, prefix="r.")[0]
    rows = db.query(
        "SELECT r.app_version_id, r.hostid, COUNT(*) AS n, h.os_name, h.os_version, "
        "h.domain_name FROM result r LEFT JOIN host h ON h.id = r.hostid "
        "WHERE %s AND %s GROUP BY r.app_version_id, r.hostid ORDER BY n DESC LIMIT 200"
        % (rwhere, "r.server_state = %d AND r.outcome = %d"
           % (ServerState.OVER, Outcome.CLIENT_ERROR)), params)
    hosts = {r["hostid"] for r in rows}
    ok = {}
    if hosts:
        marks = ", ".join(["%s"] * len(hosts))
        ok = {(r["app_version_id"], r["hostid"]): r["n"] for r in db.query(
            "SELECT app_version_id, hostid, COUNT(*) AS n FROM result WHERE %s AND "
            "server_state = %%s AND outcome = %%s AND hostid IN (%s) "
            "GROUP BY app_version_id, hostid" % (where, marks),
            params + [int(ServerState.OVER), int(Outcome.SUCCESS)] + sorted(hosts))}
    out = [(catalog.version_link(r["app_version_id"]),
            link(url("db_action.php", table="host", id=r["hostid"]),
                 "%d %s" % (r["hostid"], r["domain_name"] or "")),
            "%s %s" % (r["os_name"] or "", r["os_version"] or ""),
            ok.get((r["app_version_id"], r["hostid"]), 0),
            _failure_link(filters, r["n"], hostid=r["hostid"],
                          app_version_id=r["app_version_id"]))
           for r in rows]
    body = fmt("{}<p>Client errors of {} received in the {}, by host (the 200 worst).</p>{}",
               _chooser(ctx, "failure_result_summary_by_host.php", appid, nsecs, catalog),
               catalog.app_name(appid) if appid else "all applications", _window_word(nsecs),
               table(("App version", "Host", "OS", "Successes", "Error count"), out,
                     empty="no failures in this window"))
    return render(ctx, "Failures by app version and host", body)


def error_summary(ctx):
    """``error_summary.php``: the most frequent exit statuses of failed results."""
    appid, nsecs = _window(ctx)
    db = ctx.db
    catalog = Catalog(db)
    where, params, filters = _where(ctx, appid, nsecs)
    rows = db.query("SELECT exit_status, COUNT(*) AS n, COUNT(DISTINCT hostid) AS hosts, "
                    "MAX(id) AS example FROM result WHERE %s AND %s GROUP BY exit_status "
                    "ORDER BY n DESC LIMIT 50" % (where, FAILED), params)
    out = [(N.exit_name(r["exit_status"]), r["exit_status"], exit_status_hex(r["exit_status"]),
            _failure_link(filters, r["n"], exit_status=r["exit_status"]), r["hosts"],
            link(url("db_action.php", table="result", id=r["example"]), r["example"]))
           for r in rows]
    body = fmt("{}<p>Exit statuses of client errors of {} received in the {}.</p>{}",
               _chooser(ctx, "error_summary.php", appid, nsecs, catalog),
               catalog.app_name(appid) if appid else "all applications", _window_word(nsecs),
               table(("Error", "Exit status", "Hex", "Results", "Hosts", "Latest example"),
                     out, empty="no failures in this window"))
    return render(ctx, "Error summary", body)


# The platform of a host as pass_percentage_by_platform.php names it: the
# first word of os_name it finds, Darwin split by CPU.
_PLATFORM_SQL = (
    "CASE WHEN INSTR(h.os_name, 'Darwin') THEN "
    "(CASE WHEN INSTR(h.p_vendor, 'Power') THEN 'Darwin PPC' ELSE 'Darwin x86' END) "
    "WHEN INSTR(h.os_name, 'Linux') THEN 'Linux' WHEN INSTR(h.os_name, 'Windows') THEN 'Windows' "
    "WHEN INSTR(h.os_name, 'SunOS') THEN 'SunOS' WHEN INSTR(h.os_name, 'Solaris') THEN 'Solaris' "
    "WHEN INSTR(h.os_name, 'Mac') THEN 'Mac' ELSE %s END")


def pass_percentage(ctx):
    """``pass_percentage_by_platform.php?appid=&nsecs=``: per app version and
    platform, the results reported in the window, the share that succeeded and
    the share that failed, split by the client state they failed in."""
    appid, nsecs = _window(ctx)
    db = ctx.db
    catalog = Catalog(db)
    all_versions = bool(ctx.req.get("allversions"))
    all_platforms = bool(ctx.req.get("allplatforms"))
    where, params, filters = _where(ctx, appid, nsecs, prefix="r.")
    clauses = [where, "r.server_state = %s"]
    params = params + [int(ServerState.OVER)]
    current = []
    if not all_versions and appid:
        current = [av["id"] for av in catalog.current_versions(appid)]
    if current:
        clauses.append("r.app_version_id IN (%s)" % ", ".join(["%s"] * len(current)))
        params += current
    fails = ", ".join("SUM(r.outcome = %d AND r.client_state = %d) AS fail%d"
                      % (Outcome.CLIENT_ERROR, i, i) for i in range(1, 7))
    rows = db.query(
        "SELECT r.app_version_id, %s AS platform, COUNT(*) AS total, "
        "SUM(r.outcome = %d) AS pass, SUM(r.outcome = %d) AS fail, %s "
        "FROM result r LEFT JOIN host h ON h.id = r.hostid WHERE %s "
        "GROUP BY r.app_version_id, platform ORDER BY r.app_version_id DESC, platform"
        % (_PLATFORM_SQL % ("IFNULL(h.os_name, 'unknown')" if all_platforms else "'unknown'"),
           Outcome.SUCCESS, Outcome.CLIENT_ERROR, fails, " AND ".join(clauses)), params)

    def pct(n, total):
        return "%.2f %%" % (100.0 * int(n or 0) / total) if total else "---"

    out = []
    for r in rows:
        total = int(r["total"])
        out.append([fmt("{} on {}", catalog.version_link(r["app_version_id"]), r["platform"]),
                    total, pct(r["pass"], total), pct(r["fail"], total)]
                   + [pct(r["fail%d" % i], total) for i in range(1, 7)])
    form = fmt('<form method="get" action="pass_percentage_by_platform.php">'
               '<label for="appid">Application</label> {} <label for="nsecs">Window</label> {} '
               '<label>{} all versions (not only current ones)</label> '
               '<label>{} name unknown platforms</label> '
               '<button type="submit">Show</button></form>',
               select("appid", catalog.app_choices(), appid if appid else "", "All"),
               select("nsecs", WINDOWS, nsecs), checkbox("allversions", all_versions),
               checkbox("allplatforms", all_platforms))
    body = fmt("{}<p>Results of {} reported in the {}.</p>{}",
               form, catalog.app_name(appid) if appid else "all applications",
               _window_word(nsecs),
               table(("App version and platform", "Results", "Pass rate", "Fail rate",
                      "Failed downloading", "Failed downloaded", "Failed computing",
                      "Failed uploading", "Failed uploaded", "Aborted"), out,
                     lambda i, j, c: "num" if j else "", "no results in this window"))
    return render(ctx, "Pass percentage by platform", body)
