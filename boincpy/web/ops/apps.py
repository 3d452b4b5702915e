"""Applications and app versions: ``manage_apps.php``, ``manage_app_versions.php``,
``app_details.php`` (credit scale per version), ``job_times.php`` (FLOPs of
jobs against their estimates).

Each row is its own form posting back to the page (with the form token).
After a change the page creates the ``reread_db`` trigger file, so a running
feeder reloads apps and versions (BOINC's pages leave that to the operator).
"""

import math
import re

from boincpy.db.app import insert_app, update_app
from boincpy.db.app_version import update_app_version
from boincpy.errors import DatabaseError
from boincpy.states import Outcome, ServerState, ValidateState
from boincpy.web.markup import Markup, fmt, join, link, url
from boincpy.web.ops import charts
from boincpy.web.ops import names as N
from boincpy.web.ops.lookups import Catalog
from boincpy.web.page import (PageError, hidden, kv_table, notice, num, render, select,
                                  table, text_input)

NAME_RE = re.compile(r"[A-Za-z0-9_.+-]{1,191}")
PLAN_CLASS_RE = re.compile(r"[A-Za-z0-9_.+-]{0,128}")


def touch_reread_db(cfg):
    """Create PROJECT/reread_db; return "" or a sentence saying why it failed."""
    path = cfg.project_path("reread_db")
    try:
        with open(path, "a"):
            pass
        return ""
    except OSError as exc:
        return ("could not create %s (%s): create it yourself (or restart the feeder) so "
                "the scheduler sees the change" % (path, exc.strerror))


def _changed(ctx, message):
    problem = touch_reread_db(ctx.cfg)
    out = notice("ok", message + (" The feeder will reload apps and versions (reread_db)."
                                  if not problem else ""))
    if problem:
        out += notice("warn", problem)
    return out


def _float(ctx, name, label):
    text = ctx.req.post(name)
    try:
        return float(text)
    except ValueError:
        raise PageError("%s: %r is not a number" % (label, text)) from None


def _flag(ctx, name):
    return 1 if ctx.req.post(name) else 0


# ---------------------------------------------------------------------------

def manage_apps(ctx):
    """``manage_apps.php``: edit apps (weight, HR, flags, deprecation), add one."""
    message = Markup("")
    if ctx.req.method == "POST":
        ctx.require_action()
        message = _apps_post(ctx)
    show_all = bool(ctx.req.get("all"))
    apps = ctx.db.query("SELECT * FROM app ORDER BY id")
    counts = {r["appid"]: r["n"] for r in ctx.db.query(
        "SELECT appid, COUNT(*) AS n FROM app_version WHERE deprecated = 0 GROUP BY appid")}
    rows = []
    for a in apps:
        if a["deprecated"] and not show_all:
            continue
        fid = "app%d" % a["id"]
        f = Markup(' form="%s"' % fid)
        rows.append(fmt(
            '<tr><td>{}</td><td>{}<br><span class="small">{}</span></td><td>{}</td>'
            '<td><input type="text" name="weight" value="{}" size="4"{}></td>'
            '<td><input type="text" name="homogeneous_redundancy" value="{}" size="2"{}></td>'
            '<td><input type="text" name="target_nresults" value="{}" size="2"{}></td>'
            '<td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>'
            '<td><form id="{}" method="post" action="manage_apps.php">{}{}{}'
            '<button type="submit">Update</button></form></td></tr>',
            a["id"], link(url("db_action.php", table="app", id=a["id"]), a["name"]),
            a["user_friendly_name"], N.time_text(a["create_time"]).split(",")[0],
            a["weight"], f, a["homogeneous_redundancy"], f, a["target_nresults"], f,
            _cb("homogeneous_app_version", a, fid), _cb("deprecated", a, fid),
            _cb("non_cpu_intensive", a, fid), _cb("beta", a, fid),
            _cb("fraction_done_exact", a, fid), counts.get(a["id"], 0),
            fid, ctx.token_field(), hidden("action", "update"), hidden("id", a["id"])))
    head = ("ID", "Name and description", "Created", "Weight", "HR type",
            "Adaptive replication", "Homogeneous app version", "Deprecated",
            "Non-CPU-intensive", "Beta", "Exact fraction done", "Current versions", "")
    edit = fmt('<table class="apps"><thead><tr>{}</tr></thead><tbody>{}</tbody></table>',
               join(fmt("<th>{}</th>", h) for h in head),
               join(rows) or Markup('<tr><td colspan="13" class="muted">no applications'
                                    '</td></tr>'))
    toggle = (link("manage_apps.php", "Hide deprecated applications") if show_all
              else link("manage_apps.php?all=1", "Show deprecated applications"))
    add = fmt('<h2>Add an application</h2><form method="post" action="manage_apps.php">{}{}'
              '<label for="add_name">Short name</label> '
              '<input type="text" name="name" id="add_name" size="20"> '
              '<label for="add_ufn">Description</label> '
              '<input type="text" name="user_friendly_name" id="add_ufn" size="40"> '
              '<button type="submit">Add application</button></form>'
              '<p class="muted small">Then add versions with bin/update_versions.</p>',
              ctx.token_field(), hidden("action", "add"))
    body = fmt("{}<p>{} &middot; weight: share of the feeder's job slots (--allapps); HR type: "
               "homogeneous redundancy class (0 off); adaptive replication: target results "
               "for untrusted hosts.</p>{}{}", message, toggle, edit, add)
    return render(ctx, "Manage applications", body)


def _cb(name, row, form_id):
    return fmt('<input type="checkbox" name="{}" value="1" form="{}"{}>', name, form_id,
               Markup(" checked") if row[name] else Markup(""))


def _apps_post(ctx):
    action = ctx.req.post("action")
    db = ctx.db
    if action == "add":
        name = ctx.req.post("name")
        ufn = ctx.req.post("user_friendly_name")
        if not NAME_RE.fullmatch(name):
            raise PageError("Short name %r: use letters, digits and _ . + - (no spaces)." % name)
        if not ufn:
            raise PageError("Give a description (user-friendly name) for the application.")
        if db.query_value("SELECT COUNT(*) FROM app WHERE name = %s", (name,)):
            raise PageError("An application named %s already exists." % name, "409 Conflict")
        appid = insert_app(db, {"create_time": ctx.now, "name": name,
                                "user_friendly_name": ufn})
        return _changed(ctx, "Application %s added with ID %d." % (name, appid))
    if action != "update":
        raise PageError("unknown action %r" % action)
    appid = ctx.int_arg("id", None, post=True, minimum=1)
    app = db.query_one("SELECT id, name FROM app WHERE id = %s", (appid,))
    if app is None:
        raise PageError("no application with ID %s" % appid, "404 Not Found")
    weight = _float(ctx, "weight", "Weight")
    hr = ctx.int_arg("homogeneous_redundancy", 0, post=True, minimum=0, maximum=32767)
    target = ctx.int_arg("target_nresults", 0, post=True, minimum=0, maximum=32767)
    update_app(db, appid, {
        "weight": weight, "homogeneous_redundancy": hr, "target_nresults": target,
        "homogeneous_app_version": _flag(ctx, "homogeneous_app_version"),
        "deprecated": _flag(ctx, "deprecated"),
        "non_cpu_intensive": _flag(ctx, "non_cpu_intensive"), "beta": _flag(ctx, "beta"),
        "fraction_done_exact": _flag(ctx, "fraction_done_exact")})
    return _changed(ctx, "Application %s updated." % app["name"])


# ---------------------------------------------------------------------------

def parse_client_version(text, label):
    """A client version as stored (M*10000+m*100+r): ``7.20.5`` or the number."""
    text = text.strip()
    if text in ("", "0", "none"):
        return 0
    if text.isdigit():
        return int(text)
    m = re.fullmatch(r"(\d+)\.(\d+)(?:\.(\d+))?", text)
    if not m or int(m.group(2)) > 99 or int(m.group(3) or 0) > 99:
        raise PageError("%s: %r is not a client version like 7.20.5" % (label, text))
    return int(m.group(1)) * 10000 + int(m.group(2)) * 100 + int(m.group(3) or 0)


def manage_app_versions(ctx):
    """``manage_app_versions.php``: plan class, client version limits, beta, deprecated."""
    message = Markup("")
    if ctx.req.method == "POST":
        ctx.require_action()
        message = _versions_post(ctx)
    show_all = bool(ctx.req.get("all"))
    db = ctx.db
    catalog = Catalog(db)
    versions = db.query("SELECT id, create_time, appid, version_num, platformid, plan_class, "
                        "min_core_version, max_core_version, deprecated, beta "
                        "FROM app_version ORDER BY appid, platformid, plan_class, version_num")
    rows = []
    for v in versions:
        app = catalog.apps.get(v["appid"])
        hidden_row = v["deprecated"] or (app is not None and app["deprecated"])
        if hidden_row and not show_all:
            continue
        fid = "av%d" % v["id"]
        f = Markup(' form="%s"' % fid)
        rows.append(fmt(
            '<tr{}><td>{}</td><td>{}</td><td>{}</td><td>{}</td>'
            '<td><input type="text" name="plan_class" value="{}" size="14"{}></td>'
            '<td><input type="text" name="min_core_version" value="{}" size="8"{}></td>'
            '<td><input type="text" name="max_core_version" value="{}" size="8"{}></td>'
            '<td>{}</td><td>{}</td><td><form id="{}" method="post" '
            'action="manage_app_versions.php">{}{}<button type="submit">Update</button>'
            '</form></td></tr>',
            Markup(' class="muted"') if hidden_row else Markup(""),
            link(url("db_action.php", table="app_version", id=v["id"]), v["id"]),
            link(url("db_action.php", table="app", id=v["appid"]), catalog.app_name(v["appid"])),
            N.version_text(v["version_num"]), catalog.platform_name(v["platformid"]),
            v["plan_class"], f, N.client_version_text(v["min_core_version"])
            if v["min_core_version"] else "0", f,
            N.client_version_text(v["max_core_version"]) if v["max_core_version"] else "0", f,
            _cb("beta", v, fid), _cb("deprecated", v, fid), fid, ctx.token_field(),
            hidden("id", v["id"])))
    head = ("ID", "Application", "Version", "Platform", "Plan class", "Min client version",
            "Max client version", "Beta", "Deprecated", "")
    edit = fmt('<table><thead><tr>{}</tr></thead><tbody>{}</tbody></table>',
               join(fmt("<th>{}</th>", h) for h in head),
               join(rows) or Markup('<tr><td colspan="10" class="muted">no app versions'
                                    '</td></tr>'))
    toggle = (link("manage_app_versions.php", "Hide deprecated versions") if show_all
              else link("manage_app_versions.php?all=1", "Show deprecated versions"))
    platforms = table(("ID", "Name", "Description", "Deprecated", ""),
                      [(p["id"], p["name"], p["user_friendly_name"],
                        "yes" if p["deprecated"] else "no",
                        link(url("db_action.php", table="app_version", platformid=p["id"]),
                             "versions"))
                       for p in catalog.platforms.values()], empty="no platforms (bin/xadd)")
    body = fmt("{}<p>{} &middot; client versions as 7.20.5 (0: no limit). For each app, "
               "platform and plan class the feeder offers only the highest non-deprecated "
               "version (unless the app's min_version is set).</p>{}<h2>Platforms</h2>{}",
               message, toggle, edit, platforms)
    return render(ctx, "Manage application versions", body)


def _versions_post(ctx):
    db = ctx.db
    avid = ctx.int_arg("id", None, post=True, minimum=1)
    av = db.query_one("SELECT id FROM app_version WHERE id = %s", (avid,))
    if av is None:
        raise PageError("no app version with ID %s" % avid, "404 Not Found")
    plan_class = ctx.req.post("plan_class")
    if not PLAN_CLASS_RE.fullmatch(plan_class):
        raise PageError("Plan class %r: letters, digits and _ . + - only, at most 128."
                        % plan_class)
    min_v = parse_client_version(ctx.req.post("min_core_version"), "Min client version")
    max_v = parse_client_version(ctx.req.post("max_core_version"), "Max client version")
    if max_v and min_v > max_v:
        raise PageError("Min client version is above max client version.")
    try:
        update_app_version(db, avid, {"plan_class": plan_class, "min_core_version": min_v,
                                      "max_core_version": max_v, "beta": _flag(ctx, "beta"),
                                      "deprecated": _flag(ctx, "deprecated")})
    except DatabaseError as exc:
        if getattr(exc, "mysql_code", 0) == 1062:
            raise PageError("Another version of this app, platform and version number already "
                            "has plan class %r." % plan_class, "409 Conflict") from None
        raise
    return _changed(ctx, "App version %d updated." % avid)


# ---------------------------------------------------------------------------
# app_details.php, job_times.php

def _app_or_404(ctx, catalog, param="appid"):
    appid = ctx.int_arg(param, None, minimum=1)
    if appid is None or appid not in catalog.apps:
        raise PageError("no application with ID %s" % appid, "404 Not Found", "Not found")
    return catalog.apps[appid]


def app_details(ctx):
    """``app_details.php?appid=N``: the app's credit statistics and, per
    current version, the jobs validated, average efficiency and credit scale."""
    db = ctx.db
    catalog = Catalog(db)
    app = _app_or_404(ctx, catalog)
    min_avg_pfc = db.query_value("SELECT min_avg_pfc FROM app WHERE id = %s", (app["id"],), 0)
    ids = [av["id"] for av in catalog.current_versions(app["id"])]
    versions = (db.query("SELECT id, platformid, plan_class, version_num, pfc_n, pfc_avg, "
                         "pfc_scale, expavg_credit FROM app_version WHERE id IN (%s) ORDER BY id"
                         % ", ".join(["%s"] * len(ids)), ids) if ids else [])
    rows = [(catalog.version_link(v["id"]), catalog.platform_name(v["platformid"]),
             v["plan_class"], N.version_text(v["version_num"]), num(v["pfc_n"], 0),
             num(1 / v["pfc_avg"], 4) if v["pfc_avg"] else "---", num(v["pfc_scale"], 4),
             num(v["expavg_credit"]))
            for v in versions]
    body = fmt(
        "{}<p>Credit scale factor should be roughly 1 for CPU versions and 0.1 for GPU "
        "versions; far from that, the jobs' FLOP estimates are probably wrong: {}.</p>"
        "<h2>Current app versions</h2>{}<p>{} &middot; {}</p>",
        kv_table([("Name", app["name"]), ("Description", app["user_friendly_name"]),
                  ("Min average efficiency", num(min_avg_pfc, 4))]),
        link(url("job_times.php", appid=app["id"]), "compare them with measured run times"),
        table(("App version", "Platform", "Plan class", "Version", "Jobs validated",
               "Average efficiency", "Credit scale factor", "Average credit"), rows,
              empty="no current versions (bin/update_versions)"),
        link(url("result_summary.php", appid=app["id"]), "Result summary"),
        link(url("manage_app_versions.php"), "Manage app versions"))
    return render(ctx, "Details for %s (%s)" % (app["name"], app["user_friendly_name"]), body)


def _round_step(x):
    """A 1, 2 or 5 times a power of ten near ``x`` (> 0)."""
    exp = math.floor(math.log10(x))
    for m in (1, 2, 5, 10):
        if m * 10 ** exp >= x:
            return m * 10 ** exp
    return 10 ** (exp + 1)


def flops_stats(values):
    """(mean, sample standard deviation) of a list (BOINC's running formulas)."""
    mean = varsum = 0.0
    for count, x in enumerate(values, 1):
        delta = x - mean
        mean += delta / count
        varsum += delta * (x - mean)
    n = len(values)
    return mean, math.sqrt(varsum / (n - 1)) if n > 1 else 0.0


MAX_BINS = 500


def job_times(ctx):
    """``job_times.php?appid=N``: FLOPs of an app's recent valid jobs
    (elapsed time x the scheduler's FLOPS estimate) against the FLOP
    estimates the jobs were created with, per app version; histogram."""
    db = ctx.db
    catalog = Catalog(db)
    if not ctx.req.get("appid"):
        apps = [fmt("<li>{}</li>", link(url("job_times.php", appid=a["id"]),
                                        "%s (%s)" % (a["name"], a["user_friendly_name"])))
                for a in catalog.apps.values() if not a["deprecated"]]
        return render(ctx, "FLOPs of jobs", fmt("<p>Choose an application:</p><ul>{}</ul>",
                                                join(apps) or "no applications"))
    app = _app_or_404(ctx, catalog)
    avid = ctx.int_arg("app_version_id", 0, minimum=0)
    nresults = ctx.int_arg("nresults", 1000, minimum=1, maximum=100000)
    quantum_text = ctx.req.get("quantum")
    quantum = None
    if quantum_text:
        try:
            quantum = float(quantum_text)
        except ValueError:
            raise PageError("Resolution: %r is not a number" % quantum_text) from None
        if not quantum > 0:
            raise PageError("Resolution must be above 0")
    where, params = ("r.appid = %s AND r.server_state = %s AND r.outcome = %s "
                     "AND r.validate_state = %s",
                     [app["id"], int(ServerState.OVER), int(Outcome.SUCCESS),
                      int(ValidateState.VALID)])
    if avid:
        where += " AND r.app_version_id = %s"
        params.append(avid)
    rows = db.query("SELECT r.app_version_id, r.elapsed_time, r.flops_estimate, "
                    "w.rsc_fpops_est FROM result r JOIN workunit w ON w.id = r.workunitid "
                    "WHERE %s ORDER BY r.id DESC LIMIT %%s" % where, params + [nresults])
    versions = [(0, "All")] + [(av["id"], catalog.version_desc(av["id"]))
                               for av in catalog.current_versions(app["id"])]
    form = fmt('<form class="filters" method="get" action="job_times.php">{}'
               '<label for="app_version_id">App version</label><div>{}</div>'
               '<label for="quantum">Resolution, FLOPs (empty: automatic)</label><div>{}</div>'
               '<label for="nresults">Sample size (jobs)</label><div>{}</div>'
               '<span></span><div><button type="submit">Show</button></div></form>',
               hidden("appid", app["id"]), select("app_version_id", versions, avid),
               text_input("quantum", quantum_text, 10), text_input("nresults", nresults, 8))
    if not rows:
        return render(ctx, "FLOPs of %s jobs" % app["name"], fmt(
            "{}{}", form, notice("warn", "No valid results of this application in the "
                                 "database yet.")))
    flops = [r["elapsed_time"] * r["flops_estimate"] for r in rows]
    mean, stdev = flops_stats(flops)
    by_version = {}
    for r, f in zip(rows, flops):
        v = by_version.setdefault(r["app_version_id"], [0, 0.0, 0.0])
        v[0] += 1
        v[1] += f
        v[2] += r["rsc_fpops_est"]
    version_rows = [(catalog.version_link(k), n, "%.4e" % (m / n), "%.4e" % (e / n),
                     "%.2f" % (m / e) if e else "---")
                    for k, (n, m, e) in sorted(by_version.items())]
    low, high = min(flops), max(flops)
    if quantum is None:
        quantum = _round_step((high - low) / 20) if high > low else (_round_step(high) if high
                                                                       else 1.0)
    first, last = int(low // quantum), int(high // quantum)
    if last - first + 1 > MAX_BINS:
        raise PageError("Resolution %g gives %d bars: use a value of at least %g"
                        % (quantum, last - first + 1, (high - low) / MAX_BINS))
    counts = [0] * (last - first + 1)
    for f in flops:
        counts[int(f // quantum) - first] += 1
    labels = ["%.3g" % ((first + i) * quantum) for i in range(len(counts))]
    xml = "".join("<bin>\n    <value>%e</value>\n    <count>%d</count>\n</bin>\n"
                  % ((first + i) * quantum, c) for i, c in enumerate(counts) if c)
    body = fmt(
        "{}{}<h2>Per app version</h2>{}"
        '<p class="muted small">FLOPs measured: elapsed time x the FLOPS the scheduler '
        "estimated for the host and version; estimated: the workunit's rsc_fpops_est. "
        "A ratio far from 1 means the jobs' estimates (create_work --rsc_fpops_est) are off, "
        "and so are run time estimates and credit.</p><h2>Distribution</h2>{}<pre>{}</pre>",
        form, kv_table([("Mean", "%e" % mean), ("Standard deviation", "%e" % stdev),
                        ("Samples", len(flops)), ("Resolution", "%g FLOPs" % quantum)]),
        table(("App version", "Jobs", "FLOPs measured, mean", "FLOPs estimated, mean",
               "Measured / estimated"), version_rows),
        charts.bar_chart("Jobs by FLOPs", labels, [("jobs", "#337ab7", counts)]), xml)
    return render(ctx, "FLOPs of %s jobs" % app["name"], body)
