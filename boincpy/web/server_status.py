"""The public ``server_status.php`` (BOINC's html/user/server_status.php).

* default: an HTML page (daemons, work, users, computers, tasks by app);
* ``?xml=1``: the same as XML, with BOINC's element names, for statistics
  sites and account managers;
* ``?counts=1``: only the overall job counts (``<job_counts>``), never
  cached, for remote job submission systems.

As BOINC: the daemons' status is read on each request (the scheduler and
upload handler are "running" unless stop_sched / stop_upload exist; each
<daemon> of config.xml on this host by its pid file; disabled ones
"disabled"; daemons on other hosts are left out, BOINC reading those from a
file a cron script of its ops area makes).  The job figures are cached for
STATUS_PAGE_TTL seconds in ``html/cache/XX/server_status.php_job_status``
(XX: characters 1-2 of the name's MD5, BOINC's cache layout); whoever finds
the copy stale touches it first, so parallel requests keep serving it while
one recomputes.  The counts are the ops status page's (boincpy.web.ops.status).
"""

import hashlib
import json
import math
import os
import time
from urllib.parse import urlsplit

from boincpy.errors import BoincpyError
from boincpy.files import atomic_write
from boincpy.web.http import HTML_CONTENT_TYPE, Response, log_error
from boincpy.web.rpc_xml import php_float, xml_response
from boincpy.xml import xml_escape

STATUS_PAGE_TTL = 3600          # BOINC's default (project.inc may define it)
PAGE = "server_status.php"
CACHE_KEY = "job_status"


def command_display(cmd):
    """A daemon's command as BOINC shows it: the program, and ``(APP)`` when
    it has an --app/-app argument."""
    prog = cmd.split(" -")[0]
    x = cmd.find("-app ")
    if x > 0:
        words = cmd[x:].split(" ")
        if len(words) > 1:
            prog += " (%s)" % words[1]
    return prog


def daemon_status(cfg):
    """[{cmd, host, status}] with status 1 running, 0 not running, -1
    disabled, in BOINC's order; and whether some daemon runs on another host."""
    from boincpy.web.ops.status import daemon_states
    main_host = cfg.host or cfg.local_host
    master_host = urlsplit(cfg.master_url).hostname
    local, disabled = [], []
    have_remote = False
    for label, url, stop in (("Download server", cfg.download_url, None),
                             ("Upload server", cfg.upload_url, "stop_upload")):
        host = urlsplit(url).hostname
        if host == master_host:
            running = not (stop and os.path.exists(cfg.project_path(stop)))
            local.append({"cmd": label, "host": host, "status": int(running)})
        else:
            have_remote = True
    local.append({"cmd": "Scheduler", "host": main_host,
                  "status": int(not os.path.exists(cfg.project_path("stop_sched")))})
    for d in daemon_states(cfg):
        if d["state"] == "Disabled":
            disabled.append({"cmd": d["cmd"], "host": d["host"], "status": -1})
        elif d["state"] == "Remote":
            have_remote = True
        else:
            local.append({"cmd": d["cmd"], "host": d["host"],
                          "status": int(d["state"] == "Running")})
    return local + disabled, have_remote


def _hours_up(seconds):
    """BOINC's ceil(seconds / 3600 * 100) / 100."""
    return math.ceil(seconds / 3600.0 * 100) / 100


def job_status(db, now):
    """The figures of the page (BOINC's get_job_status), as a dict."""
    from boincpy.web.ops.status import app_queue, work_counts
    c = work_counts(db, now)
    queue, runtimes = app_queue(db, now)
    apps = []
    for a in db.query("SELECT id, name, user_friendly_name FROM app WHERE deprecated = 0 "
                      "ORDER BY id"):
        q = queue.get(a["id"], {})
        rt = runtimes.get(a["id"])
        info = None
        if rt and rt["avg"]:
            info = {"avg": _hours_up(rt["avg"]), "min": _hours_up(rt["min"]),
                    "max": _hours_up(rt["max"]), "users": int(rt["users"])}
        apps.append({"id": a["id"], "name": a["name"],
                     "user_friendly_name": a["user_friendly_name"],
                     "unsent": int(q.get("unsent") or 0),
                     "in_progress": int(q.get("in_progress") or 0), "info": info})
    users = db.query_one("SELECT SUM(expavg_credit > 1) AS recent, SUM(total_credit > 1) AS credit, "
                         "SUM(create_time > %s) AS new, SUM(expavg_credit) AS rac FROM user",
                         (now - 86400,))
    hosts = db.query_one("SELECT SUM(expavg_credit > 1) AS recent, SUM(total_credit > 1) AS credit, "
                         "SUM(create_time > %s) AS new FROM host", (now - 86400,))
    return {
        "apps": apps,
        "results_ready_to_send": c["unsent"], "results_in_progress": c["in_progress"],
        "results_need_file_delete": c["res_delete"], "wus_need_validate": c["validate"],
        "wus_need_assimilate": c["assimilate"], "wus_need_file_delete": c["wu_delete"],
        "transitioner_backlog": c["backlog"] / 3600.0,
        "users_with_recent_credit": int(users["recent"] or 0),
        "users_with_credit": int(users["credit"] or 0),
        "users_past_24_hours": int(users["new"] or 0),
        "hosts_with_recent_credit": int(hosts["recent"] or 0),
        "hosts_with_credit": int(hosts["credit"] or 0),
        "hosts_past_24_hours": int(hosts["new"] or 0),
        "flops": float(users["rac"] or 0) / 200,
        "cached_time": int(now),
    }


def cache_path(cfg):
    """Where BOINC's cache.inc keeps the page's job figures."""
    key = "%s_%s" % (PAGE, CACHE_KEY)
    bucket = hashlib.md5(key.encode()).hexdigest()[1:3]
    return os.path.join(cfg.project_path("html"), "cache", bucket, key)


def cached_job_status(cfg, db_factory, now, ttl=STATUS_PAGE_TTL):
    """The job figures, from the cache if younger than ``ttl`` seconds, else
    computed (and the cache rewritten; a cache that can't be written only
    costs the next request a recomputation)."""
    path = cache_path(cfg)
    try:
        age = now - os.path.getmtime(path)
    except OSError:
        age = None
    if age is not None and age < ttl:
        try:
            with open(path, encoding="utf-8") as f:
                return json.load(f)
        except (OSError, ValueError):
            pass
    elif age is not None:
        try:
            os.utime(path)          # the others keep serving this copy meanwhile
        except OSError:
            pass
    status = job_status(db_factory(), now)
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        atomic_write(path, json.dumps(status), mode=0o660)
    except (OSError, BoincpyError):
        pass
    return status


def db_revision(cfg):
    try:
        with open(cfg.project_path("db_revision")) as f:
            return f.read().strip()
    except OSError:
        return ""


# ---------------------------------------------------------------------------
# Output

def item_xml(name, value):
    """BOINC's item_xml(): a missing or zero value prints as 0."""
    if not value:
        value = 0
    text = php_float(value) if isinstance(value, float) else xml_escape(value)
    return "   <%s>%s</%s>\n" % (name, text, name)


_STATUS_WORDS = {0: "not running", 1: "running"}


def status_xml(daemons, j):
    out = ["<server_status>\n<daemon_status>\n"]
    for d in daemons:
        out.append("  <daemon>\n        <host>%s</host>\n        <command>%s</command>\n"
                   "        <status>%s</status>\n    </daemon>\n"
                   % (xml_escape(d["host"]), xml_escape(command_display(d["cmd"])),
                      _STATUS_WORDS.get(d["status"], "disabled")))
    out.append("</daemon_status>\n<database_file_states>\n")
    for name, key in (("results_ready_to_send", "results_ready_to_send"),
                      ("results_in_progress", "results_in_progress"),
                      ("workunits_waiting_for_validation", "wus_need_validate"),
                      ("workunits_waiting_for_assimilation", "wus_need_assimilate"),
                      ("workunits_waiting_for_deletion", "wus_need_file_delete"),
                      ("results_waiting_for_deletion", "results_need_file_delete"),
                      ("transitioner_backlog_hours", "transitioner_backlog"),
                      ("users_with_recent_credit", "users_with_recent_credit"),
                      ("users_with_credit", "users_with_credit"),
                      ("users_registered_in_past_24_hours", "users_past_24_hours"),
                      ("hosts_with_recent_credit", "hosts_with_recent_credit"),
                      ("hosts_with_credit", "hosts_with_credit"),
                      ("hosts_registered_in_past_24_hours", "hosts_past_24_hours"),
                      ("current_floating_point_speed", "flops")):
        out.append(item_xml(name, j[key]))
    out.append("<tasks_by_app>\n")
    for a in j["apps"]:
        out.append("<app>\n")
        out.append(item_xml("id", a["id"]))
        out.append(item_xml("name", a["name"]))
        out.append(item_xml("unsent", a["unsent"]))
        out.append(item_xml("in_progress", a["in_progress"]))
        if a["info"]:
            for name in ("avg", "min", "max"):
                out.append(item_xml("%s_runtime" % name, a["info"][name]))
            out.append(item_xml("users", a["info"]["users"]))
        out.append("</app>\n")
    out.append("</tasks_by_app>\n</database_file_states>\n</server_status>\n")
    return "".join(out)


def counts_xml(db):
    """BOINC's show_counts_xml(): the overall job counts, uncached."""
    from boincpy.states import AssimilateState, FileDeleteState, ServerState
    values = (
        ("results_ready_to_send", "SELECT COUNT(*) FROM result WHERE server_state = %s",
         int(ServerState.UNSENT)),
        ("results_in_progress", "SELECT COUNT(*) FROM result WHERE server_state = %s",
         int(ServerState.IN_PROGRESS)),
        ("results_need_file_delete", "SELECT COUNT(*) FROM result WHERE file_delete_state = %s",
         int(FileDeleteState.READY)),
        ("wus_need_validate", "SELECT COUNT(*) FROM workunit WHERE need_validate = %s", 1),
        ("wus_need_assimilate", "SELECT COUNT(*) FROM workunit WHERE assimilate_state = %s",
         int(AssimilateState.READY)),
        ("wus_need_file_delete", "SELECT COUNT(*) FROM workunit WHERE file_delete_state = %s",
         int(FileDeleteState.READY)))
    return "<job_counts>\n%s</job_counts>\n" % "".join(
        item_xml(name, int(db.query_value(sql, (v,), 0))) for name, sql, v in values)


def _time_str(t):
    return time.strftime("%d %b %Y, %H:%M:%S UTC", time.gmtime(t))


def html_escape(value):
    return xml_escape(value, quote=True)


def status_html(cfg, daemons, have_remote, j):
    e = html_escape
    words = {0: ("Not Running", "bad"), 1: ("Running", "ok"), -1: ("Disabled", "off")}
    rows = "".join("<tr><td>%s</td><td>%s</td><td class=\"%s\">%s</td></tr>\n" % (
        e(command_display(d["cmd"])), e(d["host"]), words[d["status"]][1],
        words[d["status"]][0]) for d in daemons)

    def items(pairs):
        return "".join("<tr><td>%s</td><td>%s</td></tr>\n" % (e(k), e(v)) for k, v in pairs)

    apps = []
    for a in j["apps"]:
        info = a["info"]
        runtime = ("%s (%s - %s)" % (info["avg"], info["min"], info["max"])
                   if info and info["max"] else "---")
        apps.append("<tr><td>%s</td><td>%d</td><td>%d</td><td>%s</td><td>%s</td></tr>\n" % (
            e(a["user_friendly_name"] or a["name"]), a["unsent"], a["in_progress"], e(runtime),
            info["users"] if info else "---"))
    revision = db_revision(cfg)
    return (
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head><meta charset=\"utf-8\">"
        "<title>%s: Project status</title>\n<style>table{border-collapse:collapse}"
        "td,th{padding:3px 8px;border-bottom:1px solid #ddd;text-align:left}"
        ".ok{background:#dff0d8}.bad{background:#f2dede}.off{background:#fcf8e3}</style>"
        "</head>\n<body>\n<h1>%s: Project status</h1>\n"
        "<h3>Server status</h3>\n<table>\n<tr><th>Program</th><th>Host</th><th>Status</th></tr>\n"
        "%s</table>\n%s"
        "<h3>Computing status</h3>\n<h4>Work</h4>\n<table>\n%s</table>\n"
        "<h4>Users</h4>\n<table>\n%s</table>\n<h4>Computers</h4>\n<table>\n%s</table>\n"
        "<h3>Tasks by application</h3>\n<table>\n<tr><th>Application</th><th>Unsent</th>"
        "<th>In progress</th><th>Runtime of recent tasks in hours: average, min, max</th>"
        "<th>Users in last 24 hours</th></tr>\n%s</table>\n"
        "<p>%sTask data as of %s</p>\n</body>\n</html>\n" % (
            e(cfg.long_name), e(cfg.long_name), rows,
            "<p>Status of remote daemons is missing</p>\n" if have_remote else "",
            items((("Tasks ready to send", j["results_ready_to_send"]),
                   ("Tasks in progress", j["results_in_progress"]),
                   ("Workunits waiting for validation", j["wus_need_validate"]),
                   ("Workunits waiting for assimilation", j["wus_need_assimilate"]),
                   ("Workunits waiting for file deletion", j["wus_need_file_delete"]),
                   ("Tasks waiting for file deletion", j["results_need_file_delete"]),
                   ("Transitioner backlog (hours)", "%.2f" % j["transitioner_backlog"]))),
            items((("With credit", j["users_with_credit"]),
                   ("With recent credit", j["users_with_recent_credit"]),
                   ("Registered in past 24 hours", j["users_past_24_hours"]))),
            items((("With credit", j["hosts_with_credit"]),
                   ("With recent credit", j["hosts_with_recent_credit"]),
                   ("Registered in past 24 hours", j["hosts_past_24_hours"]),
                   ("Current GigaFLOPS", "%.2f" % j["flops"]))),
            "".join(apps),
            "Database schema version: %s<br>" % e(revision) if revision else "",
            _time_str(j["cached_time"])))


def handle(cfg, request, now=None):
    """Serve one request (``handler(cfg, request)`` of boincpy.web.http.serve);
    return its Response.  A database that can't be reached gives a 503 page."""
    from boincpy.cnum import php_numeric
    from boincpy.db import connect
    now = int(time.time() if now is None else now)
    conns = []

    def db():
        # its own connection, opened only on a cache miss or for ?counts=1
        if not conns:
            conns.append(connect(cfg))
        return conns[0]

    def flag(name):
        return bool(php_numeric(request.get(name)))

    try:
        if flag("counts"):
            return xml_response(counts_xml(db()))
        daemons, have_remote = daemon_status(cfg)
        jobs = cached_job_status(cfg, db, now)
        if flag("xml"):
            return xml_response(status_xml(daemons, jobs))
        return Response(status_html(cfg, daemons, have_remote, jobs),
                        content_type=HTML_CONTENT_TYPE)
    except BoincpyError as exc:
        log_error("server_status.php: %s" % exc)
        return Response("<!DOCTYPE html>\n<html><body><p>The project status is not "
                        "available: %s</p></body></html>\n" % html_escape(exc.message),
                        content_type=HTML_CONTENT_TYPE, status="503 Service Unavailable")
    finally:
        for conn in conns:
            conn.close()


def cgi_main():
    """Entry point of html/user/server_status.php (a CGI; in the persistent
    mode boincpy.persistent serves :func:`handle` itself)."""
    from boincpy.web.http import run_cgi
    run_cgi(handle, PAGE)
