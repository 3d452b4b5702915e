"""``server_status.php``: is the project running, and how is its work flowing?

* each daemon of config.xml: running or not (the pid in ``pid_HOST/NAME.pid``
  is alive and runs that program: psutil), disabled, or on another host;
* trigger files present (stop_daemons, stop_sched, stop_upload, reread_db)
  and the enabled flag bin/start keeps in ``run_state_HOST.xml``;
* the feeder's job array fill (when boincpy.shmem is installed);
* work counts (unsent, in progress, waiting for validation, assimilation,
  file deletion), the oldest unsent result, the transitioner's backlog;
* recent error rates, per application too;
* charts: results reported per hour by outcome, queue depth over time.
"""

import os
import re
import time

from boincpy.states import AssimilateState, FileDeleteState, Outcome, ServerState, ValidateState
from boincpy.web.markup import Markup, fmt, join, link, url
from boincpy.web.ops import charts
from boincpy.web.ops import names as N
from boincpy.web.ops.lookups import Catalog
from boincpy.web.page import notice, num, render, table
from boincpy.xml import tree

TRIGGERS = (("stop_daemons", "all daemons stop at their next check"),
            ("stop_sched", "the scheduler answers 'down for maintenance'"),
            ("stop_upload", "the upload handler refuses uploads"),
            ("reread_db", "the feeder will reload apps and versions"))

HOURS = 48


# ---------------------------------------------------------------------------
# Daemons

def _process_runs(pid, name):
    """(alive, detail) for a pid that should be running program ``name``."""
    import psutil
    try:
        proc = psutil.Process(pid)
        cmdline = proc.cmdline()
        started = proc.create_time()
    except psutil.NoSuchProcess:
        return False, "pid %d not running (stale pid file)" % pid
    except psutil.AccessDenied:
        return True, "pid %d (can't inspect it)" % pid
    except psutil.ZombieProcess:
        return False, "pid %d is a zombie" % pid
    words = " ".join(os.path.basename(w) for w in cmdline)
    if name and name not in words:
        return False, "pid %d now belongs to another program (%s)" % (pid, words[:60])
    return True, "pid %d, up %s" % (pid, N.age_text(_now() - started))


def _now():
    return time.time()


def read_pid(path):
    """The pid in a pid file, or None if it is missing or not a number."""
    try:
        with open(path) as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def daemon_states(cfg):
    """One dict per <daemon>: cmd, host, state (Running/Not running/Disabled/
    Remote), detail."""
    out = []
    for d in cfg.daemons:
        host = d.host or cfg.host
        name = d.cmd_name()
        pid_dir = cfg.pid_dir if host == cfg.local_host else cfg.project_path("pid_" + host)
        pid_path = d.pid_file if os.path.isabs(d.pid_file) else os.path.join(pid_dir, d.pid_file)
        item = {"cmd": d.cmd, "name": name, "host": host, "pid_file": pid_path}
        if d.disabled:
            item.update(state="Disabled", detail="<disabled/> in config.xml")
        elif host != cfg.local_host:
            pid = read_pid(pid_path)
            item.update(state="Remote", detail="runs on %s; %s" % (
                host, "pid file says %d" % pid if pid else "no pid file here"))
        else:
            pid = read_pid(pid_path)
            if pid is None:
                item.update(state="Not running", detail="no pid file %s" % pid_path)
            else:
                alive, detail = _process_runs(pid, name)
                item.update(state="Running" if alive else "Not running", detail=detail)
        out.append(item)
    return out


def run_state_enabled(cfg):
    """bin/start's enabled flag from run_state_HOST.xml (None if unknown)."""
    path = cfg.project_path("run_state_%s.xml" % cfg.local_host)
    try:
        enabled = tree.text(tree.parse_file(path), "enabled")
    except (OSError, tree.XmlError):
        return None
    return bool(int(enabled)) if enabled.isdigit() else None


def feeder_fill(cfg):
    """The feeder's job array as the scheduler sees it: a dict with nslots,
    present (slots holding a job), ready, feeder_pid, fill_time; or
    {"error": why} if it can't be read; None without boincpy.shmem.
    """
    try:
        from boincpy import shmem
    except ImportError:
        return None
    try:
        array = shmem.open_segment(shmem.segment_path(cfg))
    except Exception as exc:      # missing segment, permissions, other layout
        return {"error": str(exc)}
    try:
        h = array.header()
        return {"nslots": h["nslots"], "present": h["n_present"], "ready": bool(h["ready"]),
                "feeder_pid": h["feeder_pid"], "fill_time": h["fill_time"]}
    except Exception as exc:
        return {"error": str(exc)}
    finally:
        array.close()


# ---------------------------------------------------------------------------
# Counts

def work_counts(db, now):
    """The numbers of the 'Work' table, in one pass per table."""
    r = db.query_one(
        "SELECT SUM(server_state = %s) AS unsent, SUM(server_state = %s) AS inactive, "
        "SUM(server_state = %s) AS in_progress, SUM(file_delete_state = %s) AS res_delete, "
        "MIN(IF(server_state = %s, create_time, NULL)) AS oldest_unsent "
        "FROM result WHERE server_state IN (%s, %s, %s) OR file_delete_state = %s",
        (int(ServerState.UNSENT), int(ServerState.INACTIVE), int(ServerState.IN_PROGRESS),
         int(FileDeleteState.READY), int(ServerState.UNSENT), int(ServerState.INACTIVE),
         int(ServerState.UNSENT), int(ServerState.IN_PROGRESS), int(FileDeleteState.READY)))
    w = db.query_one(
        "SELECT SUM(need_validate = 1) AS validate, SUM(assimilate_state = %s) AS assimilate, "
        "SUM(file_delete_state = %s) AS wu_delete, "
        "MIN(IF(transition_time < %s, transition_time, NULL)) AS oldest_transition "
        "FROM workunit WHERE need_validate = 1 OR assimilate_state = %s "
        "OR file_delete_state = %s OR transition_time < %s",
        (int(AssimilateState.READY), int(FileDeleteState.READY), now,
         int(AssimilateState.READY), int(FileDeleteState.READY), now))
    counts = {k: int(v or 0) for k, v in list(r.items()) + list(w.items())
              if k not in ("oldest_unsent", "oldest_transition")}
    counts["oldest_unsent"] = r["oldest_unsent"]
    counts["oldest_unsent_id"] = (db.query_value(
        "SELECT id FROM result WHERE server_state = %s AND create_time = %s LIMIT 1",
        (int(ServerState.UNSENT), r["oldest_unsent"])) if r["oldest_unsent"] else None)
    counts["backlog"] = (now - int(w["oldest_transition"])) if w["oldest_transition"] else 0
    return counts


RATE_KEYS = ("success", "client_error", "invalid", "validate_error", "reported", "no_reply")


def error_rates(db, now, windows=(3600, 86400)):
    """{window: {appid: counts}} of results reported in each window by
    outcome, and of timeouts (deadline passed in the window): one scan."""
    cols, params = [], []
    for i, w in enumerate(windows):
        since = now - w
        cols.append("SUM(received_time > %%s AND outcome = %d) AS success%d, "
                    "SUM(received_time > %%s AND outcome = %d) AS client_error%d, "
                    "SUM(received_time > %%s AND validate_state = %d) AS invalid%d, "
                    "SUM(received_time > %%s AND outcome = %d) AS validate_error%d, "
                    "SUM(received_time > %%s) AS reported%d, "
                    "SUM(outcome = %d AND report_deadline > %%s AND report_deadline <= %%s) "
                    "AS no_reply%d"
                    % (Outcome.SUCCESS, i, Outcome.CLIENT_ERROR, i, ValidateState.INVALID, i,
                       Outcome.VALIDATE_ERROR, i, i, Outcome.NO_REPLY, i))
        params += [since] * 6 + [now]
    oldest = now - max(windows)
    rows = db.query("SELECT appid, %s FROM result WHERE server_state = %%s AND "
                    "(received_time > %%s OR (outcome = %%s AND report_deadline > %%s)) "
                    "GROUP BY appid" % ", ".join(cols),
                    params + [int(ServerState.OVER), oldest, int(Outcome.NO_REPLY), oldest])
    return {w: {r["appid"]: {k: int(r["%s%d" % (k, i)] or 0) for k in RATE_KEYS}
                for r in rows}
            for i, w in enumerate(windows)}


def app_queue(db, now):
    """Per app: unsent and in-progress results, and recent valid runtimes."""
    rows = db.query("SELECT appid, SUM(server_state = %s) AS unsent, "
                    "SUM(server_state = %s) AS in_progress FROM result "
                    "WHERE server_state IN (%s, %s) GROUP BY appid",
                    (int(ServerState.UNSENT), int(ServerState.IN_PROGRESS),
                     int(ServerState.UNSENT), int(ServerState.IN_PROGRESS)))
    runtimes = {r["appid"]: r for r in db.query(
        "SELECT appid, AVG(elapsed_time) AS avg, MIN(elapsed_time) AS min, "
        "MAX(elapsed_time) AS max, COUNT(DISTINCT userid) AS users FROM result "
        "WHERE validate_state = %s AND received_time > %s GROUP BY appid",
        (int(ValidateState.VALID), now - 86400))}
    return {r["appid"]: r for r in rows}, runtimes


def hourly_outcomes(db, now, hours=HOURS):
    """(hour labels, {series: [count per hour]}) of results reported per hour."""
    start = (now // 3600 - hours + 1) * 3600
    series = {"success": [0] * hours, "client_error": [0] * hours, "other": [0] * hours,
              "no_reply": [0] * hours, "sent": [0] * hours}
    for r in db.query("SELECT FLOOR((received_time - %s) / 3600) AS h, outcome, COUNT(*) AS n "
                      "FROM result WHERE received_time >= %s GROUP BY h, outcome",
                      (start, start)):
        h = int(r["h"])
        if 0 <= h < hours:
            key = {Outcome.SUCCESS: "success", Outcome.CLIENT_ERROR: "client_error"}.get(
                r["outcome"], "other")
            series[key][h] += int(r["n"])
    for r in db.query("SELECT FLOOR((report_deadline - %s) / 3600) AS h, COUNT(*) AS n "
                      "FROM result WHERE server_state = %s AND outcome = %s "
                      "AND report_deadline >= %s AND report_deadline <= %s GROUP BY h",
                      (start, int(ServerState.OVER), int(Outcome.NO_REPLY), start, now)):
        h = int(r["h"])
        if 0 <= h < hours:
            series["no_reply"][h] += int(r["n"])
    for r in db.query("SELECT FLOOR((sent_time - %s) / 3600) AS h, COUNT(*) AS n FROM result "
                      "WHERE sent_time >= %s GROUP BY h", (start, start)):
        h = int(r["h"])
        if 0 <= h < hours:
            series["sent"][h] += int(r["n"])
    labels = [_hour_label(start + 3600 * i) for i in range(hours)]
    return labels, series


def _hour_label(t):
    return time.strftime("%d %Hh", time.gmtime(t))


# When a result left the unsent queue / in-progress state (NULL: it hasn't).
_UNSENT_END = ("CASE WHEN sent_time > 0 THEN sent_time WHEN server_state IN (%d, %d) THEN NULL "
               "ELSE UNIX_TIMESTAMP(mod_time) END" % (ServerState.INACTIVE, ServerState.UNSENT))
_PROGRESS_END = ("CASE WHEN sent_time = 0 THEN NULL WHEN received_time > 0 THEN received_time "
                 "WHEN server_state = %d THEN NULL WHEN outcome = %d THEN report_deadline "
                 "ELSE UNIX_TIMESTAMP(mod_time) END" % (ServerState.IN_PROGRESS, Outcome.NO_REPLY))


def queue_depth(db, now, hours=HOURS):
    """(labels, unsent, in progress) at each hour boundary and now, rebuilt
    from the timestamps of the result rows still in the database.

    A result counts as unsent from its creation until it was sent (or, never
    sent and over, until its last modification); as in progress from its
    sending until it was received (or timed out at its deadline, or, over
    otherwise, until its last modification).  The depths at the first point
    are counted, later ones follow from the number of results entering and
    leaving each state per hour: five aggregate scans of the result table.
    """
    points = [(now // 3600 - hours + 1 + i) * 3600 for i in range(hours)] + [now]
    first = points[0]
    base = db.query_one(
        "SELECT SUM(create_time <= %%s AND (u_end IS NULL OR u_end > %%s)) AS u, "
        "SUM(sent_time > 0 AND sent_time <= %%s AND (p_end IS NULL OR p_end > %%s)) AS p "
        "FROM (SELECT create_time, sent_time, %s AS u_end, %s AS p_end FROM result) r"
        % (_UNSENT_END, _PROGRESS_END), (first, first, first, first))

    def moves(expr):
        """Results whose ``expr`` time falls after the first point, by the
        index of the point that first counts them."""
        out = [0] * len(points)
        for r in db.query("SELECT CEIL((t - %%s) / 3600) AS b, COUNT(*) AS n FROM "
                          "(SELECT %s AS t FROM result) r WHERE t > %%s AND t <= %%s GROUP BY b"
                          % expr, (first, first, now)):
            out[min(int(r["b"]), len(points) - 1)] += int(r["n"])
        return out

    series = []
    for start, enter, leave in ((base["u"], "create_time", _UNSENT_END),
                                (base["p"], "NULLIF(sent_time, 0)", _PROGRESS_END)):
        level, values = int(start or 0), []
        ins, outs = moves(enter), moves(leave)
        for i in range(len(points)):
            level += ins[i] - outs[i]
            values.append(level)
        series.append(values)
    labels = [_hour_label(t) for t in points[:-1]] + ["now"]
    return labels, series[0], series[1]


# ---------------------------------------------------------------------------

def page(ctx):
    """``server_status.php``."""
    cfg = ctx.cfg
    db = ctx.db
    now = ctx.now
    catalog = Catalog(db)
    parts = []

    enabled = run_state_enabled(cfg)
    present = [(name, why) for name, why in TRIGGERS if os.path.exists(cfg.project_path(name))]
    state_line = {True: "Project enabled (bin/start).", False: "Project DISABLED (bin/stop).",
                  None: "No run_state file: bin/start has not run on this host."}[enabled]
    parts.append(notice("ok" if enabled and not present else "warn", state_line))
    if present:
        parts.append(table(("Trigger file", "Effect"), present))

    states = daemon_states(cfg)
    rows = [(d["name"], d["host"], d["state"], d["detail"], d["cmd"]) for d in states]
    stop_sched = os.path.exists(cfg.project_path("stop_sched"))
    stop_upload = os.path.exists(cfg.project_path("stop_upload"))
    rows.insert(0, ("scheduler (cgi)", cfg.host, "Disabled" if stop_sched else "Running",
                    "stop_sched present" if stop_sched else "answers each request (CGI)", ""))
    rows.insert(1, ("file_upload_handler", cfg.host, "Disabled" if stop_upload else "Running",
                    "stop_upload present" if stop_upload else "accepts uploads (CGI)", ""))
    colour = {"Running": "ok", "Not running": "bad", "Disabled": "warn", "Remote": "off"}
    parts.append(Markup("<h2>Daemons</h2>"))
    parts.append(table(("Program", "Host", "Status", "Detail", "Command"), rows,
                       lambda i, j, c: colour.get(c, "") if j == 2 else "",
                       "no daemons in config.xml"))

    fill = feeder_fill(cfg)
    if fill is None:
        parts.append(Markup('<p class="muted">Feeder job array: boincpy.shmem is not '
                            'installed.</p>'))
    elif "error" in fill:
        parts.append(notice("bad", "Feeder job array: %s (is the feeder running?)"
                            % fill["error"]))
    else:
        parts.append(fmt("<p>Feeder job array: <b>{}</b> of {} slots hold a job ({}){}; "
                         "last filled {}; feeder pid {}.</p>", fill["present"], fill["nslots"],
                         "%.0f %%" % (100.0 * fill["present"] / fill["nslots"])
                         if fill["nslots"] else "-",
                         "" if fill["ready"] else ", NOT READY",
                         N.time_text(fill["fill_time"]), fill["feeder_pid"]))

    c = work_counts(db, now)
    unsent_link = lambda n, **kw: link(url("db_action.php", table="result", **kw), "{:,}".format(n))
    wu_link = lambda n, **kw: link(url("db_action.php", table="workunit", **kw), "{:,}".format(n))
    oldest = (fmt("{} ({} ago, result {})", N.time_text(c["oldest_unsent"]),
                  N.age_text(now - c["oldest_unsent"]),
                  link(url("db_action.php", table="result", id=c["oldest_unsent_id"]),
                       c["oldest_unsent_id"]))
              if c["oldest_unsent"] else "none")
    work = [
        ("Results ready to send", unsent_link(c["unsent"], server_state=int(ServerState.UNSENT))),
        ("Results inactive (waiting for size_regulator)",
         unsent_link(c["inactive"], server_state=int(ServerState.INACTIVE))),
        ("Results in progress", unsent_link(c["in_progress"],
                                            server_state=int(ServerState.IN_PROGRESS))),
        ("Oldest unsent result", oldest),
        ("Workunits waiting for validation", wu_link(c["validate"], need_validate=1)),
        ("Workunits waiting for assimilation",
         wu_link(c["assimilate"], assimilate_state=int(AssimilateState.READY))),
        ("Workunits waiting for file deletion",
         wu_link(c["wu_delete"], file_delete_state=int(FileDeleteState.READY))),
        ("Results waiting for file deletion",
         unsent_link(c["res_delete"], file_delete_state=int(FileDeleteState.READY))),
        ("Transitioner backlog", "%.2f hours" % (c["backlog"] / 3600.0)),
    ]
    parts.append(Markup("<h2>Work</h2>"))
    parts.append(fmt('<table class="kv">{}</table>',
                     join(fmt("<tr><th>{}</th><td>{}</td></tr>", k, v) for k, v in work)))

    parts.append(Markup("<h2>Recent results by application</h2>"))
    queue, runtimes = app_queue(db, now)
    rates = error_rates(db, now, (3600, 86400))
    rates_h, rates_d = rates[3600], rates[86400]
    app_rows = []
    for appid, app in catalog.apps.items():
        if app["deprecated"]:
            continue
        q = queue.get(appid, {})
        rt = runtimes.get(appid)
        app_rows.append((
            link(url("db_action.php", table="app", id=appid), app["name"]),
            num(int(q.get("unsent") or 0)), num(int(q.get("in_progress") or 0)),
            _rate_cell(rates_h.get(appid)), _rate_cell(rates_d.get(appid)),
            ("%.2f (%.2f - %.2f)" % (rt["avg"] / 3600, rt["min"] / 3600, rt["max"] / 3600)
             if rt else "---"),
            rt["users"] if rt else 0,
            link(url("failure_result_summary_by_platform.php", appid=appid), "failures")))
    parts.append(table(("Application", "Unsent", "In progress", "Errors, past hour",
                        "Errors, past 24 h", "Valid runtime, hours: avg (min - max)",
                        "Users in 24 h", ""), app_rows,
                       lambda i, j, c: "bad" if j in (3, 4) and _high(c) else "",
                       "no applications"))
    parts.append(Markup('<p class="muted small">Errors: client errors + validate errors + '
                        'timeouts as a share of results reported or timed out in the window '
                        '(invalid results in brackets).</p>'))

    labels, series = hourly_outcomes(db, now)
    parts.append(Markup("<h2>Charts</h2>"))
    parts.append(charts.bar_chart(
        "Results per hour (UTC) by outcome, past %d hours" % HOURS, labels,
        [("success", "#5cb85c", series["success"]),
         ("client error", "#d9534f", series["client_error"]),
         ("no reply", "#f0ad4e", series["no_reply"]),
         ("other", "#999999", series["other"])]))
    parts.append(charts.bar_chart("Results sent per hour (UTC)", labels,
                                  [("sent", "#337ab7", series["sent"])]))
    qlabels, unsent, progress = queue_depth(db, now)
    parts.append(charts.line_chart("Queue depth (rebuilt from result timestamps)", qlabels,
                                   [("unsent", "#337ab7", unsent),
                                    ("in progress", "#5cb85c", progress)]))
    hosts = db.query_one("SELECT COUNT(*) AS total, SUM(rpc_time > %s) AS active, "
                         "SUM(create_time > %s) AS new FROM host", (now - 86400, now - 86400))
    users = db.query_one("SELECT COUNT(*) AS total, SUM(create_time > %s) AS new FROM user",
                         (now - 86400,))
    parts.append(Markup("<h2>Hosts and users</h2>"))
    parts.append(fmt('<table class="kv"><tr><th>Hosts</th><td>{}</td></tr>'
                     '<tr><th>Hosts that contacted the scheduler in 24 h</th><td>{}</td></tr>'
                     '<tr><th>Hosts registered in 24 h</th><td>{}</td></tr>'
                     '<tr><th>Users</th><td>{}</td></tr>'
                     '<tr><th>Users registered in 24 h</th><td>{}</td></tr></table>',
                     int(hosts["total"] or 0), int(hosts["active"] or 0), int(hosts["new"] or 0),
                     int(users["total"] or 0), int(users["new"] or 0)))
    return render(ctx, "Server status", join(parts, Markup("\n")))


def _rate_cell(r):
    if not r:
        return "---"
    bad = r["client_error"] + r["validate_error"] + r["no_reply"]
    total = r["reported"] + r["no_reply"]
    if not total:
        return "---"
    return "%.1f %% (%d of %d; %d invalid)" % (100.0 * bad / total, bad, total, r["invalid"])


def _high(cell):
    """A rate above 10 % is worth a colour."""
    m = re.match(r"([\d.]+) %", str(cell))
    return bool(m) and float(m.group(1)) > 10
