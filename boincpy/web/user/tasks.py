"""Tasks and computers: the volunteer's pages of results, workunits and hosts.

=========================  ==================================================
``results.php``            a user's (their own only), a host's or a workunit's
                           tasks, 20 a page (``offset``), BOINC's ``state``
                           filter (result.inc: 0 all, 1 in progress, 2
                           validation pending, 3 inconclusive, 4 valid,
                           5 invalid, 6 error), ``appid``, ``show_names``
``result.php``             one task (``resultid`` or ``result_name``), its
                           stderr escaped in a ``<pre>``
``workunit.php``           one workunit (``wuid``) and its tasks
``hosts_user.php``         the logged-in user's computers, or another user's
                           (``userid``) if that user shows them; ``sort``,
                           ``rev``, ``show_all`` as BOINC
``show_host_detail.php``   a computer; its owner also sees address, domain,
                           disk, venue, merge and delete
``host_delete.php``        POST: delete one's computer that has no tasks
``host_venue_action.php``  POST: set one's computer's venue (its detail page's form)
``host_edit_form.php``     the one's computers that may be the same machine
``host_edit_action.php``   POST: merge them into the newest (host.inc merge_hosts)
``merge_by_name.php``      POST: merge one's computers of equal domain name
``host_app_versions.php``  a computer's per-app-version statistics
``show_user.php``          a user's public page (``format=xml``: BOINC's RPC,
                           answered by :func:`boincpy.web.rpc.show_user`)
=========================  ==================================================

What is public follows BOINC's pages: anyone may see a task, a workunit, a
computer's public fields and a computer's task list (top_hosts.php links
them); a user's task list only its owner; a computer's owner is named only
if that user shows computers (``show_hosts``), and only the owner sees the
computer's address, domain name, disk, location and the merge and delete
forms: those come from a query carrying ``host.userid`` = the logged-in
account's id, so no id in the URL reaches them.  Deleting and merging are
POST forms with the account's form token, and their statements carry the
owner in their WHERE clause as well.
"""

import time

from boincpy.credit import CREDIT_HALF_LIFE, update_average
from boincpy.db import host as host_table, profile as profile_table, result as result_table
from boincpy.jobfiles import input_file_refs
from boincpy.web import accounts, rpc
from boincpy.web.markup import Markup, fmt, join, link, url
from boincpy.web.page import PageError, Redirect, hidden, kv_table, render, select, table
from boincpy.web.submit_rpc import result_state_text
from boincpy.web.user import messages, profile
from boincpy.web.user.badges import badges_html
from boincpy.web.user.common import ID_MAX, date_str, time_str, user_link
from boincpy.web.user.prefs import VENUES

RESULTS_PER_PAGE = 20
OVER, IN_PROGRESS = 5, 4
SUCCESS, CLIENT_ERROR, NO_REPLY, VALIDATE_ERROR, CLIENT_DETACHED = 1, 3, 4, 6, 7
V_INIT, V_VALID, V_INVALID, V_NO_CHECK, V_INCONCLUSIVE, V_TOO_LATE = 0, 1, 2, 3, 4, 5

# result.inc's filter: (name, SQL condition, parameters)
STATES = (
    ("All", "", ()),
    ("In progress", " AND server_state = %s", (IN_PROGRESS,)),
    ("Validation pending", " AND server_state = %s AND outcome = %s AND validate_state = %s",
     (OVER, SUCCESS, V_INIT)),
    ("Validation inconclusive",
     " AND server_state = %s AND outcome = %s AND validate_state = %s",
     (OVER, SUCCESS, V_INCONCLUSIVE)),
    ("Valid", " AND server_state = %s AND outcome = %s AND validate_state = %s",
     (OVER, SUCCESS, V_VALID)),
    ("Invalid", " AND server_state = %s AND (outcome = %s OR (outcome = %s AND "
     "validate_state IN (%s, %s, %s)))",
     (OVER, VALIDATE_ERROR, SUCCESS, V_INVALID, V_NO_CHECK, V_TOO_LATE)),
    ("Error", " AND server_state = %s AND outcome IN (%s, %s, %s)",
     (OVER, CLIENT_ERROR, NO_REPLY, CLIENT_DETACHED)),
)

# result.inc's anonymous-platform app_version_ids
ANON_PLATFORMS = {-1: None, -2: "CPU", -3: "NVIDIA GPU", -4: "AMD GPU", -5: "Intel GPU",
                  -6: "Apple GPU"}

# the columns a list of results shows (never the blobs)
RESULT_LIST_COLUMNS = ("id, name, workunitid, hostid, userid, appid, sent_time, received_time, "
                       "report_deadline, server_state, outcome, client_state, validate_state, "
                       "exit_status, elapsed_time, cpu_time, granted_credit, app_version_id")


# ---------------------------------------------------------------------------
# BOINC's formats (util_basic.inc, util.inc)

def time_diff(x):
    """Seconds as ``D days h hours m min s sec``."""
    x = int(x)
    days, rest = divmod(x, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, seconds = divmod(rest, 60)
    out = []
    if days:
        out.append("%d days" % days)
    if hours or out:
        out.append("%d hours" % hours)
    if minutes or out:
        out.append("%d min" % minutes)
    out.append("%d sec" % seconds)
    return " ".join(out)


def credit(x):
    return "{:,.2f}".format(x or 0)


def credit_large(x):
    return "{:,.0f}".format(x or 0)


def host_link(hostid):
    return link(url("show_host_detail.php", hostid=hostid), hostid) if hostid else "---"


def id_arg(ctx, name, default=None, post=False):
    """An id parameter (1 .. 2^31-1; without a default, required); PageError
    naming it otherwise."""
    value = ctx.int_arg(name, default, post=post, minimum=1 if default is None else 0,
                        maximum=ID_MAX)
    if value is None:
        raise PageError("missing or bad parameter: %s" % name)
    return value


def lines(*parts):
    """Text parts on separate lines (``<br>`` between them)."""
    return join([p for p in parts if p not in (None, "")], Markup("<br>"))


# ---------------------------------------------------------------------------
# Results (result.inc)

def state_num(r):
    """result.inc's state_num: the filter a result falls in (0: none)."""
    state, outcome, vs = r["server_state"], r["outcome"], r["validate_state"]
    if state == IN_PROGRESS:
        return 1
    if state != OVER:
        return 0
    if outcome == SUCCESS:
        return {V_INIT: 2, V_INCONCLUSIVE: 3, V_VALID: 4, V_INVALID: 5, V_NO_CHECK: 5,
                V_TOO_LATE: 5}.get(vs, 0)
    if outcome == VALIDATE_ERROR:
        return 5
    if outcome in (CLIENT_ERROR, NO_REPLY, CLIENT_DETACHED):
        return 6
    return 0


def granted_credit_text(r):
    """result.inc's result_granted_credit_string."""
    shown = credit(r["granted_credit"])
    if r["server_state"] == IN_PROGRESS and r["granted_credit"] > 0:
        return shown
    if r["server_state"] != OVER:
        return "---"
    if r["outcome"] == SUCCESS:
        return "pending" if r["validate_state"] in (V_INIT, V_INCONCLUSIVE) else shown
    return shown if r["granted_credit"] > 0 else "---"


def app_versions_of(db, results):
    """{app_version id: (app name, version_num, plan_class, platform)} and
    {app id: app name} for these results: two statements at most."""
    ids = sorted({r["app_version_id"] for r in results if r["app_version_id"] > 0})
    versions = {}
    if ids:
        rows = db.query(
            "SELECT app_version.id AS id, app.user_friendly_name AS app, version_num, "
            "plan_class, platform.name AS platform FROM app_version "
            "LEFT JOIN app ON app.id = app_version.appid "
            "LEFT JOIN platform ON platform.id = app_version.platformid "
            "WHERE app_version.id IN (%s)" % ", ".join(["%s"] * len(ids)), ids)
        versions = {row["id"]: row for row in rows}
    app_ids = sorted({r["appid"] for r in results if r["app_version_id"] < 0})
    apps = {}
    if app_ids:
        apps = {row["id"]: row["user_friendly_name"] for row in db.query(
            "SELECT id, user_friendly_name FROM app WHERE id IN (%s)"
            % ", ".join(["%s"] * len(app_ids)), app_ids)}
    return versions, apps


def app_version_text(r, versions, apps):
    """result.inc's app_version_string."""
    avid = r["app_version_id"]
    if avid == 0:
        return "---"
    if avid in ANON_PLATFORMS:
        rsc = ANON_PLATFORMS[avid]
        return lines(apps.get(r["appid"], ""),
                     "Anonymous platform" + (" (%s)" % rsc if rsc else ""))
    av = versions.get(avid)
    if av is None:
        return "missing app version %d" % avid
    name = "%s v%d.%02d" % (av["app"] or "", av["version_num"] // 100, av["version_num"] % 100)
    if av["plan_class"]:
        name += " (%s)" % av["plan_class"]
    return lines(name, av["platform"] or "")


def result_rows(ctx, db, results, show_wu, show_host, show_names):
    """The table of results (result.inc's result_table_start/show_result_row)."""
    versions, apps = app_versions_of(db, results)
    headers = ["Name" if show_names else "Task"]
    if show_wu:
        headers.append("Work unit")
    if show_host:
        headers.append("Computer")
    headers += ["Sent", "Time reported or deadline", "Status", "Run time (sec)",
                "CPU time (sec)", "Credit", "Application"]
    rows, marks = [], []
    for r in results:
        row = [link(url("result.php", resultid=r["id"]), r["name"] if show_names else r["id"])]
        if show_wu:
            row.append(link(url("workunit.php", wuid=r["workunitid"]), r["workunitid"]))
        if show_host:
            row.append(host_link(r["hostid"]))
        mark = ""
        if r["received_time"]:
            reported = time_str(r["received_time"])
        elif r["report_deadline"]:
            reported = time_str(r["report_deadline"])
            mark = "ok" if r["report_deadline"] > ctx.now else "bad"
        else:
            reported = "---"
        done = r["server_state"] == OVER
        row += [time_str(r["sent_time"]), reported, result_state_text(r),
                "{:,.2f}".format(r["elapsed_time"]) if done else "---",
                "{:,.2f}".format(r["cpu_time"]) if done else "---",
                granted_credit_text(r), app_version_text(r, versions, apps)]
        rows.append(row)
        marks.append(mark)
    deadline_col = headers.index("Time reported or deadline")

    def classes(i, j, cell):
        if j == deadline_col:
            return marks[i]
        return "num" if headers[j] in ("Run time (sec)", "CPU time (sec)", "Credit") else ""
    return table(headers, rows, classes, empty="No tasks to display")


def results_page(ctx):
    """results.php: a user's, a computer's or a workunit's tasks."""
    req = ctx.req
    req.check_args(("hostid", "userid", "workunitid", "offset", "appid", "state",
                    "show_names"))
    if not ctx.cfg.show_results:
        raise PageError("This feature is disabled.", "403 Forbidden")
    hostid = id_arg(ctx, "hostid", 0)
    userid = id_arg(ctx, "userid", 0)
    wuid = id_arg(ctx, "workunitid", 0)
    offset = ctx.int_arg("offset", 0, minimum=0, maximum=1000000000)
    appid = id_arg(ctx, "appid", 0)
    state = ctx.int_arg("state", 0, minimum=0, maximum=len(STATES) - 1)
    show_names = 1 if ctx.int_arg("show_names", 0) else 0
    db = ctx.rdb
    if hostid:
        host = db.query_one("SELECT id FROM host WHERE id = %s", (hostid,))
        if host is None:
            raise PageError("No computer with ID %d found" % hostid, "404 Not Found")
        where, params, whose = "hostid = %s", [hostid], "computer %d" % hostid
        show_host = False
    elif userid:
        user = ctx.require_login()
        if user.id != userid:
            raise PageError("No access", "403 Forbidden")
        where, params, whose = "userid = %s", [user.id], user.name
        show_host = True
    elif wuid:
        if db.query_one("SELECT id FROM workunit WHERE id = %s", (wuid,)) is None:
            raise PageError("No workunit with ID %d found" % wuid, "404 Not Found")
        where, params, whose = "workunitid = %s", [wuid], "workunit %d" % wuid
        show_host = True
    else:
        # the site's "Tasks" link: one's own (BOINC asks for an id)
        raise Redirect(url("results.php", userid=ctx.require_login().id))
    name, clause, clause_params = STATES[state]
    sql_where = where + clause
    all_params = params + list(clause_params)
    if appid:
        sql_where += " AND appid = %s"
        all_params.append(appid)
    order = "name" if show_names else "sent_time DESC"
    results = db.query("SELECT %s FROM result WHERE %s ORDER BY %s LIMIT %d, %d" % (
        RESULT_LIST_COLUMNS, sql_where, order, offset, RESULTS_PER_PAGE + 1), all_params)
    more = len(results) > RESULTS_PER_PAGE
    results = results[:RESULTS_PER_PAGE]
    counts = [0] * len(STATES)
    for row in db.query("SELECT server_state, outcome, validate_state, COUNT(*) AS n "
                        "FROM result WHERE %s%s GROUP BY server_state, outcome, "
                        "validate_state" % (where, " AND appid = %s" if appid else ""),
                        params + ([appid] if appid else [])):
        counts[0] += row["n"]
        k = state_num(row)
        if k:
            counts[k] += row["n"]
    base = {"hostid": hostid or None, "userid": userid or None, "workunitid": wuid or None,
            "appid": appid or None, "show_names": show_names or None}
    filters = []
    for k, (label, _, _) in enumerate(STATES):
        text = "%s (%d)" % (label, counts[k])
        filters.append(fmt("<strong>{}</strong>", text) if k == state else
                       link(url("results.php", **dict(base, state=k or None)), text))
    pages = []
    here = dict(base, state=state or None)
    if offset:
        pages.append(link(url("results.php", **dict(
            here, offset=max(0, offset - RESULTS_PER_PAGE) or None)), "Previous"))
    if more:
        pages.append(link(url("results.php", **dict(here, offset=offset + RESULTS_PER_PAGE)),
                          "Next"))
    toggle = link(url("results.php", **dict(here, offset=offset or None,
                                            show_names=None if show_names else 1)),
                  "Show IDs" if show_names else "Show names")
    nav = fmt('<p class="paging">{}</p>', join(pages, " | ")) if pages else Markup("")
    body = join([
        fmt("<p>Show: {}</p>", join(filters, Markup(" &middot; "))),
        fmt('<p class="small">{}</p>', toggle), nav,
        result_rows(ctx, db, results, True, show_host, show_names), nav])
    return render(ctx, "%s tasks for %s" % (name, whose), body)


def result_page(ctx):
    """result.php: one task."""
    req = ctx.req
    resultid = id_arg(ctx, "resultid", 0)
    db = ctx.db
    if resultid:
        r = db.query_one("SELECT * FROM result WHERE id = %s", (resultid,))
        what = resultid
    else:
        what = req.get_str("result_name")
        r = db.query_one("SELECT * FROM result WHERE name = %s", (what,))
    if r is None:
        raise PageError("No such task: %s" % what, "404 Not Found")
    versions, apps = app_versions_of(db, [r])
    pairs = [("Name", r["name"]),
             ("Workunit", link(url("workunit.php", wuid=r["workunitid"]), r["workunitid"])),
             ("Created", time_str(r["create_time"])), ("Sent", time_str(r["sent_time"])),
             ("Report deadline", time_str(r["report_deadline"])),
             ("Received", time_str(r["received_time"])),
             ("Server state", {1: "Inactive", 2: "Unsent", 4: "In progress", 5: "Over"}.get(
                 r["server_state"], "Unknown")),
             ("Outcome", outcome_text(r)), ("Client state", client_state_text(r)),
             ("Computer ID", host_link(r["hostid"]))]
    if r["server_state"] == OVER:
        pairs.append(("Exit status", exit_status_text(r["exit_status"])))
    if r["outcome"] == SUCCESS:
        pairs += [("Run time", time_diff(r["elapsed_time"])),
                  ("CPU time", time_diff(r["cpu_time"])),
                  ("Credit", credit(r["granted_credit"])),
                  ("Validate state", validate_state_text(r))]
    pairs += [("Priority", r["priority"]),
              ("Device peak FLOPS", "%s GFLOPS" % credit(r["flops_estimate"] / 1e9)),
              ("Application version", app_version_text(r, versions, apps))]
    for column, label in (("peak_working_set_size", "Peak working set size"),
                          ("peak_swap_size", "Peak swap size"),
                          ("peak_disk_usage", "Peak disk usage")):
        if r[column]:
            pairs.append((label, size_text(r[column])))
    parts = [kv_table(pairs)]
    if r["server_state"] == OVER:
        parts.append(fmt("<h2>Stderr output</h2><pre>{}</pre>", r["stderr_out"] or ""))
    return render(ctx, "Task %s" % what, join(parts))


def outcome_text(r):
    if r["outcome"] == CLIENT_ERROR:
        return "Redundant result" if r["exit_status"] == -221 else "Computation error"
    return {0: "---", 1: "Success", 2: "Couldn't send", 4: "No reply", 5: "Didn't need",
            6: "Validate error", 7: "Abandoned"}.get(r["outcome"], "Unknown")


def client_state_text(r):
    if r["client_state"] == 6:
        return ("Cancelled by server" if r["exit_status"] in (-221, 202)
                else "Aborted by user")
    return {0: "New", 1: "Downloading", 2: "Processing", 3: "Compute error", 4: "Uploading",
            5: "Done", 7: "Upload failed"}.get(r["client_state"], "Unknown")


def validate_state_text(r):
    if r["validate_state"] == V_INVALID:
        return "Not necessary" if r["exit_status"] == -221 else "Invalid"
    return {0: "Initial", 1: "Valid", 3: "Workunit error - check skipped",
            4: "Checked, but no consensus yet",
            5: "Task was reported too late to validate"}.get(r["validate_state"], "Unknown")


def exit_status_text(x):
    """The exit status, in hex too when negative (as BOINC's Windows codes)."""
    return "%d (0x%08X)" % (x, x & 0xFFFFFFFF)


def size_text(n):
    """BOINC's size_string: bytes in the largest unit that keeps the number >= 1."""
    n = float(n)
    for unit, size in (("TB", 1 << 40), ("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if n >= size:
            return "%.2f %s" % (n / size, unit)
    return "%d bytes" % n


WU_ERRORS = ((1, "Couldn't send result"), (2, "Too many errors (may have bug)"),
             (4, "Too many results (may be nondeterministic)"), (8, "Too many total results"),
             (16, "WU cancelled"), (32, "Canonical result is missing"))


def workunit_page(ctx):
    """workunit.php: a workunit and its tasks (hidden while an adaptive-
    replication job has no canonical result, as BOINC)."""
    ctx.req.check_args(("wuid",))
    wuid = id_arg(ctx, "wuid")
    db = ctx.db
    wu = db.query_one("SELECT * FROM workunit WHERE id = %s", (wuid,))
    if wu is None:
        raise PageError("can't find workunit", "404 Not Found")
    app = db.query_one("SELECT id, user_friendly_name, target_nresults FROM app "
                       "WHERE id = %s", (wu["appid"],)) or {
        "id": wu["appid"], "user_friendly_name": "", "target_nresults": 0}
    pairs = [("name", wu["name"]),
             ("application", link(url("apps.php", app_id=app["id"]),
                                  app["user_friendly_name"]))]
    if wu["batch"]:
        pairs.append(("batch", link(url("submit.php", action="query_batch",
                                        batch_id=wu["batch"]), wu["batch"])))
    pairs.append(("created", time_str(wu["create_time"])))
    if wu["canonical_resultid"]:
        pairs += [("canonical result", link(url("result.php", resultid=wu["canonical_resultid"]),
                                            wu["canonical_resultid"])),
                  ("granted credit", credit(wu["canonical_credit"]))]
    parts = []
    if (app["target_nresults"] > 0 and not wu["canonical_resultid"] and not wu["error_mask"]
            and not ctx.cfg.dont_suppress_pending):
        pairs.append(("Tasks in progress", "suppressed pending completion"))
        parts.append(kv_table(pairs))
    else:
        pairs += [("minimum quorum", wu["min_quorum"]),
                  ("target #results", wu["target_nresults"]),
                  ("max # of error/total/success tasks", "%d, %d, %d" % (
                      wu["max_error_results"], wu["max_total_results"],
                      wu["max_success_results"]))]
        if wu["error_mask"]:
            pairs.append(("errors", " ".join(text for bit, text in WU_ERRORS
                                             if wu["error_mask"] & bit)))
        if wu["need_validate"]:
            pairs.append(("validation", "Pending"))
        pairs.append(("Priority", wu["priority"]))
        results = db.query("SELECT %s FROM result WHERE workunitid = %%s ORDER BY id"
                           % RESULT_LIST_COLUMNS, (wuid,))
        parts += [kv_table(pairs), Markup("<h2>Job instances</h2>"),
                  result_rows(ctx, db, results, False, True, False)]
    files = [[link(ref.url, ref.open_name) if ref.url.startswith(("http://", "https://"))
              else ref.open_name, ref.nbytes] for ref in input_file_refs(wu["xml_doc"])]
    parts += [Markup("<h2>Input files</h2>"),
              table(["Name (click to view)", "Size (bytes)"], files, empty="none")]
    return render(ctx, "Workunit %d" % wuid, join(parts))


# ---------------------------------------------------------------------------
# Hosts (host.inc)

def host_misc(host):
    """host.misc (JSON the client's GPUs and Docker report), as a dict."""
    # imported here: a host's details need it, and every page of the tasks
    # and lists families (a classic CGI each) would pay 1 ms for it
    import json
    try:
        misc = json.loads(host.get("misc") or "{}")
    except ValueError:
        return {}
    return misc if isinstance(misc, dict) else {}


def gpu_text(misc):
    """host.inc's gpu_desc: one line per GPU type."""
    out = []
    for g in misc.get("gpus") or ():
        if not isinstance(g, dict):
            continue
        text = "%s %s" % (g.get("count") or 1, g.get("model", ""))
        if g.get("ram_mb"):
            text += "; %s RAM" % size_text(float(g["ram_mb"]) * (1 << 20))
        if g.get("driver_version"):
            text += "; Driver: %s" % g["driver_version"]
        out.append(text)
    return lines(*out) if out else "---"


def boinc_version_text(misc):
    if not misc.get("client_version"):
        return "---"
    text = str(misc["client_version"])
    if misc.get("client_brand"):
        text += " (%s)" % misc["client_brand"]
    return text


def cpu_text(host):
    return lines(host["p_vendor"] or "", host["p_model"] or "",
                 "(%d cores)" % host["p_ncpus"])


def os_text(host):
    return lines(host["os_name"] or "", host["os_version"] or "")


def count_results(db, host_ids):
    """{host id: number of results} (index res_hostid_id)."""
    ids = list(host_ids)
    if not ids:
        return {}
    rows = db.query("SELECT hostid, COUNT(*) AS n FROM result WHERE hostid IN (%s) "
                    "GROUP BY hostid" % ", ".join(["%s"] * len(ids)), ids)
    counts = {i: 0 for i in ids}
    counts.update((row["hostid"], row["n"]) for row in rows)
    return counts


HOST_SORTS = {"total_credit": ("total_credit", True), "expavg_credit": ("expavg_credit", True),
              "name": ("domain_name", False), "id": ("id", False), "cpu": ("p_vendor", False),
              "os": ("os_name", False), "venue": ("venue", False),
              "rpc_time": ("rpc_time", True)}


def hosts_user_page(ctx):
    """hosts_user.php: one's computers, or another user's if shown."""
    req = ctx.req
    req.check_args(("show_all", "rev", "sort", "userid"))
    show_all = 1 if ctx.int_arg("show_all", 0) == 1 else 0
    rev = 1 if ctx.int_arg("rev", 0) == 1 else 0
    sort = req.get("sort")
    if sort not in HOST_SORTS:
        sort = "rpc_time"
    userid = id_arg(ctx, "userid", 0)
    me = ctx.logged_in_user()
    if me is not None and me.id == userid:
        userid = 0
    if userid:
        owner = accounts.lookup_user_by_id(ctx.rdb, userid)
        if owner is None or "deleted" in owner.authenticator:
            raise PageError("No such user", "404 Not Found")
        if not owner.show_hosts:
            return render(ctx, "Computers hidden", fmt(
                "<p>This user has chosen not to show information about his or her "
                "computers.</p>"))
        private, title = False, "Computers belonging to %s" % owner.name
    else:
        owner = ctx.require_login()
        private, title = True, "Your computers"
    column, desc = HOST_SORTS[sort]
    hosts = ctx.rdb.query("SELECT * FROM host WHERE userid = %%s ORDER BY %s%s, id LIMIT 100"
                          % (column, " DESC" if rev != desc else ""), (owner.id,))
    params = {"userid": userid or None, "show_all": show_all, "rev": rev, "sort": sort}

    def sort_head(key, label):
        flip = 1 - rev if key == sort else rev
        return link(url("hosts_user.php", **dict(params, sort=key, rev=flip)), label)
    any_product = any(h["product_name"] for h in hosts)
    heads = [sort_head("id", "Computer ID")]
    if private:
        heads.append(sort_head("name", "Name"))
        if any_product:
            heads.append("Model")
        heads.append(sort_head("venue", "Location"))
    else:
        heads.append("Rank")
    heads += [sort_head("expavg_credit", "Avg. credit"),
              sort_head("total_credit", "Total credit"), "BOINC version",
              sort_head("cpu", "CPU"), "GPU", sort_head("os", "Operating System"),
              sort_head("rpc_time", "Last contact")]
    rows, old = [], 0
    for host in hosts:
        if ctx.now - host["rpc_time"] > 30 * 86400:
            old += 1
            if not show_all:
                continue
        misc = host_misc(host)
        row = [lines(fmt("ID: {}", host["id"]), join([
            link(url("show_host_detail.php", hostid=host["id"]), "Details"),
            link(url("results.php", hostid=host["id"]), "Tasks")], " | "))]
        if private:
            row.append(host["domain_name"])
            if any_product:
                row.append(host["product_name"])
            row.append(host["venue"])
        else:
            row.append(len(rows) + 1)
        row += [credit(host["expavg_credit"]), credit_large(host["total_credit"]),
                boinc_version_text(misc), cpu_text(host), gpu_text(misc), os_text(host),
                time_str(host["rpc_time"])]
        rows.append(row)
    choice = (fmt("Show: All computers &middot; {}", link(url("hosts_user.php", **dict(
        params, show_all=0)), "Only computers active in past 30 days")) if show_all else
        fmt("Show: {} &middot; Only computers active in past 30 days", link(url(
            "hosts_user.php", **dict(params, show_all=1)), "All computers")))
    parts = [fmt("<p>{}</p>", choice), table(heads, rows, empty="No computers")]
    if private:
        parts.append(fmt("<p>{}</p>", link("merge_by_name.php", "Merge computers by name")))
    return render(ctx, title, join(parts))


def owned_host(ctx, hostid, user, db=None):
    """The host row if it is ``user``'s (the check is in the query), else None."""
    return (db or ctx.db).query_one("SELECT * FROM host WHERE id = %s AND userid = %s",
                                    (hostid, user.id))


def show_host_detail(ctx):
    """show_host_detail.php: a computer; its owner sees more."""
    req = ctx.req
    req.check_args(("hostid", "ipprivate"))
    hostid = id_arg(ctx, "hostid")
    me = ctx.logged_in_user()
    host = owned_host(ctx, hostid, me) if me is not None else None
    mine = host is not None
    if host is None:
        host = ctx.db.query_one(
            "SELECT id, userid, create_time, total_credit, expavg_credit, p_vendor, p_model, "
            "p_ncpus, misc, os_name, os_version, m_nbytes, m_cache, p_fpops, p_iops, n_bwup, "
            "n_bwdown, avg_turnaround, rpc_seqno, rpc_time FROM host WHERE id = %s",
            (hostid,))
    if host is None:
        raise PageError("No such computer", "404 Not Found")
    misc = host_misc(host)
    pairs = []
    if mine:
        if req.get("ipprivate"):
            pairs.append(("IP address", "%s (same the last %d times)" % (
                host["last_ip_addr"] or "", host["nsame_ip_addr"])))
            if host["last_ip_addr"] != host["external_ip_addr"]:
                pairs.append(("External IP address", host["external_ip_addr"]))
        else:
            pairs.append(("IP address", link(url("show_host_detail.php", hostid=hostid,
                                                 ipprivate=1), "Show IP address")))
        pairs.append(("Domain name", host["domain_name"]))
        if host["product_name"]:
            pairs.append(("Product name", host["product_name"]))
        pairs.append(("Local Standard Time", "UTC %+g hours" % (host["timezone"] / 3600.0)))
    else:
        owner = accounts.lookup_user_by_id(ctx.db, host["userid"]) if host["userid"] else None
        pairs.append(("Owner", user_link(owner.id, owner.name)
                      if owner is not None and owner.show_hosts else "Anonymous"))
    pairs += [("Created", time_str(host["create_time"])),
              ("Total credit", credit_large(host["total_credit"])),
              ("Average credit", credit(host["expavg_credit"])),
              ("CPU type", lines(host["p_vendor"] or "", host["p_model"] or "")),
              ("Number of cores", host["p_ncpus"]), ("Coprocessors", gpu_text(misc)),
              ("Operating System", os_text(host)), ("BOINC version", boinc_version_text(misc)),
              ("Memory", "%g GB" % round(host["m_nbytes"] / (1 << 30), 2))]
    if host["m_cache"] > 0:
        pairs.append(("Cache", "%g KB" % round(host["m_cache"] / 1024, 2)))
    if mine:
        pairs += [("Swap space", "%g GB" % round(host["m_swap"] / (1 << 30), 2)),
                  ("Total disk space", "%g GB" % round(host["d_total"] / (1 << 30), 2)),
                  ("Free Disk Space", "%g GB" % round(host["d_free"] / (1 << 30), 2))]
    pairs += [("Measured floating point speed", "%g billion ops/sec"
               % round(host["p_fpops"] / 1e9, 2)),
              ("Measured integer speed", "%g billion ops/sec" % round(host["p_iops"] / 1e9, 2))]
    for column, label in (("n_bwup", "Average upload rate"),
                          ("n_bwdown", "Average download rate")):
        rate = round(host[column] / (1 << 20), 2)
        pairs.append((label, "%g MB/sec" % rate if rate > 0 else "Unknown"))
    if host["avg_turnaround"]:
        pairs.append(("Average turnaround time", time_diff(host["avg_turnaround"])))
    pairs.append(("Application details", link(url("host_app_versions.php", hostid=hostid),
                                              "Show")))
    nresults = None
    if ctx.cfg.show_results:
        nresults = count_results(ctx.db, [hostid])[hostid]
        pairs.append(("Tasks", link(url("results.php", hostid=hostid), nresults)
                      if nresults else "0"))
    pairs.append(("Number of times client has contacted server", host["rpc_seqno"]))
    if mine:
        pairs += [("Last time contacted server", time_str(host["rpc_time"])),
                  ("Fraction of time BOINC is running", "%.2f%%" % (100 * host["on_frac"])),
                  ("While BOINC is running, fraction of time computing is allowed",
                   "%.2f%%" % (100 * host["active_frac"])),
                  ("Location", fmt(
                      '<form class="inline" method="post" action="host_venue_action.php">{}{}{}'
                      '<button type="submit">Update location</button></form>',
                      ctx.token_field("host_venue_action.php"), hidden("hostid", hostid),
                      select("venue", [(v, v) for v in VENUES], host["venue"],
                             any_label="---"))),
                  ("Merge duplicate records of this computer",
                   link(url("host_edit_form.php", hostid=hostid), "Merge"))]
        if nresults == 0:
            pairs.append(("", fmt(
                '<form class="inline" method="post" action="host_delete.php">{}{}'
                '<button type="submit" class="danger">Delete this computer</button></form>',
                ctx.token_field("host_delete.php"), hidden("hostid", hostid))))
    else:
        pairs.append(("Last contact", date_str(host["rpc_time"])))
    return render(ctx, "Computer %d" % hostid, kv_table(pairs))


def host_delete(ctx):
    """host_delete.php (POST, form token): delete one's computer with no tasks."""
    user = ctx.require_action()
    hostid = id_arg(ctx, "hostid", post=True)
    db = ctx.db
    with db.transaction():
        deleted = host_table.delete_host_without_results(db, hostid, user.id)
    if not deleted:
        if owned_host(ctx, hostid, user) is None:
            raise PageError("We have no record of that computer.", "404 Not Found")
        raise PageError("You can not delete our record of this computer because our database "
                        "still contains work for it. You must wait a few days until the work "
                        "for this computer has been deleted from the project database.",
                        "409 Conflict")
    return render(ctx, "Delete record of computer", fmt(
        "<p>Record deleted.</p><p>{}</p>",
        link("hosts_user.php", "Return to list of your computers")))


def host_venue_action(ctx):
    """host_venue_action.php (POST, form token): the owner sets the
    computer's venue ("" none, home, school, work: check_venue), as BOINC's
    GET form of show_host_detail.php does; another user's computer refused."""
    user = ctx.require_action()
    hostid = id_arg(ctx, "hostid", post=True)
    venue = ctx.req.post("venue")
    if venue not in VENUES + ("",):
        raise PageError("bad venue: %s (one of home, school, work or none)" % venue[:40])
    if owned_host(ctx, hostid, user) is None:
        raise PageError("We have no record of that computer.", "404 Not Found")
    host_table.set_host_venue(ctx.db, hostid, user.id, venue)
    return render(ctx, "Computer venue updated", fmt(
        "<p>The venue of this computer has been set to <b>{}</b>.</p><p>Preference changes "
        "will take effect when the computer communicates with this project.</p><p>{}</p>",
        venue or "(none)", link(url("show_host_detail.php", hostid=hostid),
                                "Return to the computer")))


# -- merging duplicate host records (host.inc) ----------------------------

def _model_parts(model):
    """host.inc's parse_model: (speed, architecture, family info)."""
    speed = arch = info = None
    for word in model.split(" "):
        if "GHz" in word or "MHz" in word:
            speed = word
    start, end = model.find("["), model.find("]")
    if start >= 0 and end >= 0:
        inner = model[start + 1:end]
        words = inner.split(" ")
        if words[0] == "Family":
            info = inner
        else:
            arch, info = words[0], inner[len(words[0]) + 1:]
    return speed, arch, info


def _cpus_compatible(a, b):
    if a["p_ncpus"] != b["p_ncpus"] or (a["p_vendor"] or "") != (b["p_vendor"] or ""):
        return False
    s1, a1, i1 = _model_parts(a["p_model"] or "")
    s2, a2, i2 = _model_parts(b["p_model"] or "")
    if i1 and i2:
        return (i1 == i2 and not (s1 and s2 and s1 != s2)
                and not (a1 and a2 and a1 != a2))
    return (a["p_model"] or "") == (b["p_model"] or "")


def _os_compatible(a, b):
    one, two = a["os_name"] or "", b["os_name"] or ""
    return one == two or any(k in one and k in two
                             for k in ("Windows", "Linux", "Darwin", "SunOS"))


def incompatibility(a, b, nresults):
    """Why two host records can't be one machine (None: they may be), as
    host.inc's hosts_compatible: lifetimes must not overlap unless one is
    new (no credit, no tasks); the OS and CPU must agree."""
    new1 = not a["total_credit"] and not nresults.get(a["id"])
    new2 = not b["total_credit"] and not nresults.get(b["id"])
    if not new1 and not new2 and not (a["rpc_time"] < b["create_time"]
                                      or b["rpc_time"] < a["create_time"]):
        return "Host %d has overlapping lifetime: (%s - %s), (%s - %s)" % (
            b["id"], date_str(a["create_time"]), date_str(a["rpc_time"]),
            date_str(b["create_time"]), date_str(b["rpc_time"]))
    if not _os_compatible(a, b):
        return "Host %d has an incompatible OS: (%s, %s)" % (b["id"], a["os_name"],
                                                             b["os_name"])
    if not _cpus_compatible(a, b):
        return "Host %d has an incompatible CPU: (%s %s, %s %s)" % (
            b["id"], a["p_vendor"], a["p_model"], b["p_vendor"], b["p_model"])
    return None


def merge_hosts(ctx, user, old, new):
    """Merge the host record ``old`` into ``new`` (both the user's): credit
    summed (averages decayed to now), tasks moved, ``old`` retired (no owner,
    rpc_seqno = new id).  Returns a line saying what happened."""
    if old["id"] == new["id"]:
        return "same host"
    db = ctx.db
    if incompatibility(old, new, count_results(db, (old["id"], new["id"]))):
        return "Can't merge host %d into %d - they're incompatible" % (old["id"], new["id"])
    now = ctx.now
    old_avg, _ = update_average(now, 0, 0, CREDIT_HALF_LIFE, old["expavg_credit"],
                                old["expavg_time"])
    new_avg, _ = update_average(now, 0, 0, CREDIT_HALF_LIFE, new["expavg_credit"],
                                new["expavg_time"])
    with db.transaction():
        result_table.move_results_to_host(db, old["id"], new["id"])
        if not host_table.retire_merged_host(db, old["id"], user.id, new["id"]):
            raise PageError("We have no record of that computer", "404 Not Found")
        host_table.add_merged_credit(db, new["id"], user.id, old["total_credit"],
                                     old_avg + new_avg, now)
    return "Merged %d into %d" % (old["id"], new["id"])


def host_edit_form(ctx):
    """host_edit_form.php: choose which of one's computers are this one."""
    ctx.req.check_args(("hostid", "detail"))
    user = ctx.require_login()
    hostid = id_arg(ctx, "hostid")
    detail = ctx.int_arg("detail", 0)
    host = owned_host(ctx, hostid, user)
    if host is None:
        raise PageError("We have no record of that computer", "404 Not Found")
    others = [h for h in ctx.db.query("SELECT * FROM host WHERE userid = %s AND id <> %s "
                                      "ORDER BY id LIMIT 500", (user.id, hostid))]
    nresults = count_results(ctx.db, [hostid] + [h["id"] for h in others])
    eligible, reasons = [], []
    for other in others:
        why = incompatibility(host, other, nresults)
        if why:
            reasons.append(why)
        else:
            eligible.append(other)
    parts = [fmt("<p>Sometimes BOINC assigns separate identities to the same computer by "
                 "mistake. You can correct this by merging old identities with the newest "
                 "one.</p>")]
    if detail and reasons:
        parts.append(fmt("<p>{}</p>", lines(*reasons)))
    if not eligible:
        parts.append(fmt("<p>No hosts are eligible for merging with this one.</p>"))
    else:
        rows = [[fmt('<input type="checkbox" name="id_{}" id="id_{}" value="{}">', i, i,
                     h["id"]), h["domain_name"] or "[no hostname]",
                 time_str(h["create_time"]), h["id"]]
                for i, h in enumerate(eligible, 1)]
        parts.append(fmt(
            '<form method="post" action="host_edit_action.php">{}{}{}'
            "<p>Check the computers that are the same as {} (created {}, computer ID {}):</p>"
            '{}<p><button type="submit">Merge hosts</button></p></form>',
            ctx.token_field("host_edit_action.php"), hidden("id_0", hostid),
            hidden("nhosts", len(eligible) + 1), host["domain_name"],
            time_str(host["create_time"]), hostid,
            table(["", "name", "created", "computer ID"], rows)))
    if not detail:
        parts.append(fmt("<p>{}</p>", link(url("host_edit_form.php", hostid=hostid, detail=1),
                                           "Show details")))
    return render(ctx, "Merge computers", join(parts))


def host_edit_action(ctx):
    """host_edit_action.php (POST, form token): merge the checked computers
    with ``id_0``, each into whichever is newer."""
    user = ctx.require_action()
    nhosts = ctx.int_arg("nhosts", post=True, minimum=1, maximum=500)
    if nhosts is None:
        raise PageError("missing or bad parameter: nhosts")
    latest = owned_host(ctx, id_arg(ctx, "id_0", post=True), user)
    if latest is None:
        raise PageError("We have no record of that computer", "404 Not Found")
    chosen, seen = [], {latest["id"]}
    for i in range(1, nhosts):
        hostid = id_arg(ctx, "id_%d" % i, 0, post=True)
        if hostid and hostid not in seen:
            seen.add(hostid)
            host = owned_host(ctx, hostid, user)
            if host is None:
                raise PageError("We have no record of that computer", "404 Not Found")
            chosen.append(host)
    done = []
    for host in chosen:
        if host["create_time"] > latest["create_time"]:
            line = merge_hosts(ctx, user, latest, host)
            if not line.startswith("Merged"):
                done.append(line)
                continue
            latest = host
        else:
            line = merge_hosts(ctx, user, host, latest)
        done.append(line)
        latest = owned_host(ctx, latest["id"], user)
    return render(ctx, "Merge computer records", fmt(
        "<p>{}</p><p>{}</p>", lines(*done) if done else "Nothing to merge.",
        link("hosts_user.php", "Return to list of your computers")))


def merge_by_name(ctx):
    """merge_by_name.php: a form; its POST (with the token) merges, for each
    domain name, the older computers into the newest of that name."""
    user = ctx.require_login()
    if ctx.req.method != "POST":
        return render(ctx, "Merge computers by name", fmt(
            "<p>This operation merges computers based on their domain name.</p>"
            "<p>For each domain name, it will merge all older computers having that name "
            "with the newest computer having that name. Incompatible computers will not be "
            'merged.</p><form method="post" action="merge_by_name.php">{}{}'
            '<button type="submit">Go ahead and do this</button></form><p>{}</p>',
            ctx.token_field(), hidden("confirmed", 1),
            link("hosts_user.php", "Return to the list of computers")))
    ctx.require_action()
    by_name = {}
    for host in ctx.db.query("SELECT * FROM host WHERE userid = %s ORDER BY id", (user.id,)):
        by_name.setdefault(host["domain_name"] or "", []).append(host)
    done = []
    for name, hosts in by_name.items():
        if len(hosts) < 2:
            continue
        done.append("Processing %s" % name)
        newest = max(hosts, key=lambda h: (h["create_time"], h["id"]))
        for host in hosts:
            if host["id"] == newest["id"]:
                continue
            done.append(merge_hosts(ctx, user, host, newest))
            newest = owned_host(ctx, newest["id"], user)
    return render(ctx, "Merge computers by name", fmt(
        "<p>{}</p><p>{}</p>", lines(*done) if done else "No computers share a name.",
        link("hosts_user.php", "Return to the list of your computers")))


RSC_NAMES = {2: "CPU", 3: "NVIDIA GPU", 4: "AMD GPU", 5: "Intel GPU"}


def host_app_versions(ctx):
    """host_app_versions.php: a computer's statistics per app version."""
    hostid = id_arg(ctx, "hostid")
    show_dep = 1 if ctx.int_arg("show_dep", 0) else 0
    db = ctx.rdb
    havs = db.query("SELECT * FROM host_app_version WHERE host_id = %s ORDER BY app_version_id",
                    (hostid,))
    ids = [h["app_version_id"] for h in havs if h["app_version_id"] < 1000000]
    versions = {}
    if ids:
        versions = {r["id"]: r for r in db.query(
            "SELECT app_version.id AS id, version_num, plan_class, app_version.deprecated AS "
            "av_dep, app.deprecated AS app_dep, app.user_friendly_name AS app, platform.name "
            "AS platform FROM app_version JOIN app ON app.id = app_version.appid LEFT JOIN "
            "platform ON platform.id = app_version.platformid WHERE app_version.id IN (%s)"
            % ", ".join(["%s"] * len(ids)), ids)}
    anon_ids = sorted({h["app_version_id"] // 1000000 for h in havs
                       if h["app_version_id"] >= 1000000})
    apps = {}
    if anon_ids:
        apps = {r["id"]: r for r in db.query(
            "SELECT id, user_friendly_name, deprecated FROM app WHERE id IN (%s)"
            % ", ".join(["%s"] * len(anon_ids)), anon_ids)}
    parts = []
    for hav in havs:
        gavid = hav["app_version_id"]
        if gavid >= 1000000:
            app = apps.get(gavid // 1000000)
            if app is None or (app["deprecated"] and not show_dep):
                continue
            desc = "%s (anonymous platform, %s)" % (app["user_friendly_name"],
                                                   RSC_NAMES.get(gavid % 1000000, "Unknown"))
        else:
            av = versions.get(gavid)
            if av is None or ((av["av_dep"] or av["app_dep"]) and not show_dep):
                continue
            desc = "%s %.2f %s %s(ID %d)" % (av["app"], av["version_num"] / 100.0,
                                             av["platform"] or "Missing platform",
                                             "(%s) " % av["plan_class"] if av["plan_class"]
                                             else "", gavid)
        pairs = [("# Tasks completed", "%g" % hav["et_n"]),
                 ("Max tasks per day", hav["max_jobs_per_day"]),
                 ("# Tasks sent today", hav["n_jobs_today"]),
                 ("Consecutive valid tasks", hav["consecutive_valid"])]
        if hav["et_avg"]:
            pairs.append(("Average processing rate", "%s GFLOPS" % credit(1e-9 / hav["et_avg"])))
        pairs.append(("Average turnaround time", "%.2f days" % (hav["turnaround_avg"] / 86400)))
        parts.append(join([fmt("<h2>{}</h2>", desc), kv_table(pairs)]))
    if not parts:
        parts.append(fmt('<p class="muted">No application versions.</p>'))
    parts.append(fmt("<p>{}</p>", link(url("host_app_versions.php", hostid=hostid,
                                           show_dep=None if show_dep else 1),
                                       "Show active versions" if show_dep
                                       else "Show all versions")))
    return render(ctx, "Application details for host %d" % hostid, join(parts))


# ---------------------------------------------------------------------------
# show_user.php

def show_user(ctx):
    """show_user.php: ``format=xml`` is BOINC's RPC (its reply unchanged);
    otherwise the user's public page."""
    req = ctx.req
    if req.get("format") == "xml":
        return rpc.handle("show_user", ctx.cfg, req)
    userid = id_arg(ctx, "userid")
    db = ctx.db
    user = accounts.lookup_user_by_id(db, userid)
    if user is None or "deleted" in user.authenticator:
        raise PageError("No such user %d" % userid, "404 Not Found")
    me = ctx.logged_in_user()
    pairs = [("Name", user.name)]
    if ctx.cfg.user_country:
        pairs.append(("Country", user.country))
    pairs += [("Member since", date_str(user.create_time)),
              ("Total credit", credit_large(user.total_credit)),
              ("Recent average credit", credit(user.expavg_credit))]
    if user.teamid:
        team = accounts.lookup_team_by_id(db, user.teamid)
        if team is not None:
            pairs.append(("Team", link(url("team_display.php", teamid=team.id), team.name)))
    else:
        pairs.append(("Team", "None"))
    if user.show_hosts or (me is not None and me.id == user.id):
        pairs.append(("Computers", link(url("hosts_user.php", userid=user.id),
                                        "View")))
    else:
        pairs.append(("Computers", "hidden"))
    if me is not None and me.id == user.id and ctx.cfg.show_results:
        pairs.append(("Tasks", link(url("results.php", userid=user.id), "View")))
    row = profile_table.lookup(db, user.id) if user.has_profile else None
    if row is not None and ((me is not None and me.id == user.id)
                            or profile.visible_to_others(ctx.cfg, row)):
        pairs.append(("Profile", link(url("view_profile.php", userid=user.id), "View")))
    held = badges_html(db, user.id)
    if held:
        pairs.append(("Badges", held))
    return render(ctx, user.name, join([fmt("<h2>Account information</h2>"), kv_table(pairs),
                                        fmt("<h2>Community</h2>"),
                                        messages.friends_html(db, user.id, viewer=me)]))


# show_user.php's RPC answers XML (main.down_reply while the site is stopped)
show_user.xml_reply = lambda req: req.get("format") == "xml"

PAGES = {
    "results.php": results_page,
    "result.php": result_page,
    "workunit.php": workunit_page,
    "hosts_user.php": hosts_user_page,
    "show_host_detail.php": show_host_detail,
    "host_delete.php": host_delete,
    "host_venue_action.php": host_venue_action,
    "host_edit_form.php": host_edit_form,
    "host_edit_action.php": host_edit_action,
    "merge_by_name.php": merge_by_name,
    "host_app_versions.php": host_app_versions,
    "show_user.php": show_user,
}
