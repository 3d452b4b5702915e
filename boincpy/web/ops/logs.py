"""Log pages: ``why_no_work.php`` (the scheduler's recent reasons for not
sending a host work) and ``show_log.php`` (grep the project's logs).

The scheduler logs to ``log_HOST/scheduler.log`` in BOINC's format::

    2026-11-22 08:05:30.3392 UTC [PID=2298 ]   Request: [USER#1] [HOST#1] [IP 127.0.0.1] client 7.20.5
    2026-11-22 08:05:30.3428 UTC [PID=2298 ]    Sending reply to [HOST#1]: 1 results, delay req 7.00
    2026-11-22 08:05:30.3429 UTC [PID=2298 ]    Scheduler ran 0.007 seconds

The parse is tolerant: lines are grouped into requests by PID (a group
starts at "Request:" and ends at "Scheduler ran"); a group belongs to the
host named by its first ``[HOST#N]``; lines without a PID stand alone.
Within a request, the number of results sent comes from "Sending reply to";
boincpy's scheduler names its reasons in one line per request,
``[HOST#n] No tasks sent: REASON; REASON``, and other lines that explain a
refusal (no work, quota, too recent, ...) are picked out as reasons too.  Only the tail of each log is read.
"""

import collections
import fnmatch
import glob
import os
import re

from boincpy.web.markup import Markup, fmt, join, link, url
from boincpy.web.ops import names as N
from boincpy.web.page import PageError, notice, render, table, text_input

TAIL_BYTES = 8 << 20
LINE_RE = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?)(?: UTC)?\s+"
                     r"(?:\[PID=\s*(\d+)\s*\])?\s*(.*)$")
HOST_RE = re.compile(r"\[HOST#(\d+)\]")
SENT_RE = re.compile(r"Sending reply to \[HOST#\d+\]: (\d+) results?")
NO_TASKS_RE = re.compile(r"No tasks sent:\s*(.*)$")
SEVERITY_RE = re.compile(r"^\[(?:normal|debug|CRITICAL|critical)\]\s*")
REASON_RE = re.compile(
    r"no work|no tasks|not sen[dt]|won't send|can't send|don't send|no (?:app|jobs|tasks|results)"
    r"|reason|quota|too recent|last RPC|insufficient|not enough|blacklist|banned"
    r"|deprecated|maintenance|stop_sched|disabled|skipp|infeasible|exceed|limit"
    r"|mustn't|not allowed|no .*version|platform|beta|plan class|memory|disk|deadline",
    re.I)


def log_dirs(cfg):
    """The project's log directories: log_dir and every PROJECT/log_*."""
    dirs = [cfg.log_dir] + sorted(glob.glob(cfg.project_path("log_*")))
    seen, out = set(), []
    for d in dirs:
        real = os.path.realpath(d)
        if os.path.isdir(real) and real not in seen:
            seen.add(real)
            out.append(d)
    return out


def read_tail(path, nbytes=TAIL_BYTES):
    """The last ``nbytes`` of a text file as lines (a cut first line dropped)
    and whether the file was longer."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            start = max(0, size - nbytes)
            f.seek(start)
            data = f.read()
    except OSError:
        return [], False
    lines = data.decode("utf-8", "replace").splitlines()
    if start and lines:
        lines = lines[1:]
    return lines, bool(start)


def parse_requests(lines):
    """Scheduler log lines -> list of requests, each a dict with time, pid,
    host (int or None), lines, sent (int or None), reasons."""
    requests = []
    open_by_pid = {}
    for line in lines:
        m = LINE_RE.match(line)
        if not m:
            # A continuation (multi-line message): attach it to the last request.
            if requests:
                requests[-1]["lines"].append(line)
            continue
        stamp, pid, text = m.groups()
        text = SEVERITY_RE.sub("", text, count=1)
        req = open_by_pid.get(pid) if pid else None
        if req is None or "Request:" in text:
            req = {"time": stamp, "pid": pid, "host": None, "lines": [], "sent": None,
                   "reasons": []}
            requests.append(req)
            if pid:
                open_by_pid[pid] = req
        req["lines"].append(line)
        if req["host"] is None:
            h = HOST_RE.search(text)
            if h:
                req["host"] = int(h.group(1))
        s = SENT_RE.search(text)
        none = NO_TASKS_RE.search(text)
        if s:
            req["sent"] = int(s.group(1))
        elif none:
            # boincpy's scheduler: "[HOST#n] No tasks sent: reason; reason".
            req["sent"] = 0 if req["sent"] is None else req["sent"]
            req["reasons"] += [r.strip() for r in none.group(1).split("; ") if r.strip()]
        elif REASON_RE.search(text) and "Request:" not in text:
            req["reasons"].append(text.strip())
        if pid and "Scheduler ran" in text:
            open_by_pid.pop(pid, None)
    return requests


def host_requests(cfg, hostid, nbytes=TAIL_BYTES):
    """The scheduler requests of one host in the tails of the scheduler logs,
    oldest first; and whether any log was longer than what was read."""
    found, truncated = [], False
    for d in log_dirs(cfg):
        lines, cut = read_tail(os.path.join(d, "scheduler.log"), nbytes)
        truncated |= cut
        found += [r for r in parse_requests(lines) if r["host"] == hostid]
    found.sort(key=lambda r: r["time"])
    return found, truncated


def _reason_key(text):
    """A reason with numbers and ids blanked, so repeats count together."""
    return re.sub(r"\d+(?:\.\d+)?", "N", text)


def why_no_work(ctx):
    """``why_no_work.php?hostid=N``: why the scheduler sent this host no work."""
    hostid = ctx.int_arg("hostid", None, minimum=1)
    if hostid is None:
        body = fmt('<form method="get" action="why_no_work.php"><label for="hostid">Host ID'
                   '</label> {} <button type="submit">Show</button></form>',
                   text_input("hostid", "", 8))
        return render(ctx, "Why no work?", body)
    limit = ctx.int_arg("n", 30, minimum=1, maximum=1000)
    host = ctx.db.query_one("SELECT id, userid, domain_name, os_name, os_version, rpc_time, "
                            "rpc_seqno, max_results_day, p_ncpus, m_nbytes, d_free "
                            "FROM host WHERE id = %s", (hostid,))
    parts = []
    if host is None:
        parts.append(notice("warn", "No host %d in the database (the log may still mention it)."
                            % hostid))
    else:
        facts = [("Host", link(url("db_action.php", table="host", id=hostid),
                               "%d %s" % (hostid, host["domain_name"] or ""))),
                 ("OS", "%s %s" % (host["os_name"] or "", host["os_version"] or "")),
                 ("Last RPC", "%s (%s ago)" % (N.time_text(host["rpc_time"], "never"),
                                               N.age_text(ctx.now - host["rpc_time"]))
                  if host["rpc_time"] else "never"),
                 ("Max results per day", "%d%s" % (host["max_results_day"],
                                                   " (blacklisted)" if host["max_results_day"] == -1
                                                   else ""))]
        parts.append(fmt('<table class="kv">{}</table>',
                         join(fmt("<tr><th>{}</th><td>{}</td></tr>", k, v) for k, v in facts)))
    project = []
    if ctx.cfg.dont_send_jobs:
        project.append("config.xml has <dont_send_jobs/>: the scheduler sends no jobs at all.")
    if os.path.exists(ctx.cfg.project_path("stop_sched")):
        project.append("stop_sched exists: the scheduler answers 'down for maintenance'.")
    unsent = ctx.rdb.query_value("SELECT COUNT(*) FROM result WHERE server_state = 2", None, 0)
    if not unsent:
        project.append("There are no unsent results: no host can get work.")
    for p in project:
        parts.append(notice("warn", p))

    requests, truncated = host_requests(ctx.cfg, hostid)
    recent = requests[-limit:]
    idle = [r for r in recent if r["sent"] == 0]
    counter = collections.Counter()
    example = {}
    for r in idle:
        for reason in dict.fromkeys(r["reasons"]):
            key = _reason_key(reason)
            counter[key] += 1
            example.setdefault(key, reason)
    parts.append(fmt("<h2>Recent scheduler requests</h2><p>{} request(s) of this host in the "
                     "scheduler log{}; of the last {}, {} got no work.</p>",
                     len(requests), " (only the end of the log was read)" if truncated else "",
                     len(recent), len(idle)))
    if counter:
        parts.append(table(("Reason given (requests without work)", "Requests"),
                           [(example[k], n) for k, n in counter.most_common(20)]))
    elif idle:
        parts.append(notice("warn", "The scheduler logged no reason for these requests; raise "
                            "sched_debug_level or set debug_send in config.xml for detail."))
    rows = []
    for r in reversed(recent):
        sent = "?" if r["sent"] is None else r["sent"]
        rows.append((r["time"], r["pid"] or "", sent,
                     join((fmt("{}", x) for x in r["reasons"]), Markup("<br>")) or "---",
                     fmt("<details><summary>{} line(s)</summary><pre>{}</pre></details>",
                         len(r["lines"]), "\n".join(r["lines"]))))
    parts.append(table(("Time (UTC)", "PID", "Jobs sent", "Reasons", "Log"), rows,
                       lambda i, j, c: ("bad" if c == 0 else "ok" if isinstance(c, int) else "")
                       if j == 2 else "",
                       "no request of this host in the scheduler log"))
    return render(ctx, "Why no work for host %d?" % hostid, join(parts, Markup("\n")))


# ---------------------------------------------------------------------------

def show_log(ctx):
    """``show_log.php?s=TEXT&f=GLOB&l=N``: lines of the logs containing TEXT."""
    search = ctx.req.get("s")
    pattern = ctx.req.get("f") or "*.log"
    use_re = bool(ctx.req.get("re"))
    limit = ctx.int_arg("l", 200, minimum=1, maximum=5000)
    if "/" in pattern or "\\" in pattern or pattern.startswith("."):
        raise PageError("file pattern %r: a file name pattern inside the log directories, "
                        "like *.log or scheduler.log" % pattern)
    form = fmt('<form method="get" action="show_log.php"><label for="s">Text</label> {} '
               '<label><input type="checkbox" name="re" value="1"{}> regular expression</label> '
               '<label for="f">Files</label> {} <label for="l">Last lines</label> {} '
               '<button type="submit">Search</button></form>',
               text_input("s", search, 40), Markup(" checked") if use_re else Markup(""),
               text_input("f", pattern, 16), text_input("l", limit, 5, "number"))
    parts = [form]
    if use_re and search:
        try:
            matcher = re.compile(search).search
        except re.error as exc:
            raise PageError("regular expression %r: %s" % (search, exc)) from None
    else:
        matcher = (lambda line: search in line) if search else (lambda line: True)
    files = []
    for d in log_dirs(ctx.cfg):
        try:
            names = sorted(n for n in os.listdir(d) if fnmatch.fnmatch(n, pattern))
        except OSError:
            continue
        files += [os.path.join(d, n) for n in names if os.path.isfile(os.path.join(d, n))]
    if not files:
        parts.append(notice("warn", "No log file matches %s in %s." % (
            pattern, ", ".join(log_dirs(ctx.cfg)) or "the project (no log directories)")))
    for path in files:
        lines, cut = read_tail(path)
        hits = [line for line in lines if matcher(line)][-limit:]
        if not hits and search:
            continue
        parts.append(fmt("<h2>{}</h2><p class=\"muted small\">{} matching line(s){}{}</p>"
                         "<pre>{}</pre>", os.path.relpath(path, ctx.cfg.project_dir), len(hits),
                         ", the last %d shown" % limit if len(hits) >= limit else "",
                         " (searched the last %d MB)" % (TAIL_BYTES >> 20) if cut else "",
                         "\n".join(hits)))
    return render(ctx, "Logs", join(parts, Markup("\n")))
