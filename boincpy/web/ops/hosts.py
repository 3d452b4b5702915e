"""Who computes for the project: ``host_stats.php`` (platforms, operating
systems, CPU vendors, GPUs, client, libc and VirtualBox versions of the hosts
active lately) and ``size_census.php`` (job size classes: the host-speed
boundaries bin/size_census wrote, what a census would find now, and how
hosts and unsent jobs fall into the classes).
"""

import os
import re

from boincpy.daemons.size_census import host_speeds
from boincpy.sizeclass import (CensusFileError, census_file_name, census_quantiles,
                               host_size_class, read_census)
from boincpy.states import ServerState
from boincpy.web.markup import Markup, fmt, join, link, url
from boincpy.web.ops import names as N
from boincpy.web.page import PageError, notice, num, render, table, text_input

DEFAULT_DAYS = 30           # host_stats.php: hosts with an RPC in this many days

# Platform families, as pass_percentage_by_platform.php groups os_name.
FAMILIES = (("Darwin", "macOS"), ("Mac", "macOS"), ("Linux", "Linux"),
            ("Windows", "Windows"), ("Android", "Android"), ("FreeBSD", "FreeBSD"),
            ("SunOS", "Solaris"), ("Solaris", "Solaris"))

# serialnum items ("[KIND|...]") that name a GPU or a virtual machine manager.
GPU_KINDS = {"CUDA": "NVIDIA (CUDA)", "CAL": "AMD (CAL)", "INTEL": "Intel GPU",
             "apple_gpu": "Apple GPU", "opencl_gpu": "Other OpenCL GPU"}


def family(os_name):
    for word, name in FAMILIES:
        if word in (os_name or ""):
            return name
    return "other (%s)" % os_name if os_name else "unknown"


def libc_version(os_version):
    """The libc version in a Linux host's os_version (``[...|libc 2.36 ...]``)."""
    text = os_version or ""
    n = text.find("libc ")
    if n < 0:
        return ""
    m = text.find("]", n)
    if m < 0:
        return ""
    return text[n + 5:m].split(" ")[0]


def serialnum_items(serialnum):
    """{KIND: rest} of the ``[KIND|...]`` items of host.serialnum."""
    out = {}
    for item in re.findall(r"\[([^\]]*)\]", serialnum or ""):
        kind, _, rest = item.partition("|")
        out[kind] = rest
    return out


def vbox_version(items):
    """The VirtualBox version of a host (``[vbox|6.1.38r153438...]`` -> 6.1.38)."""
    text = items.get("vbox", "")
    return re.split(r"[_r|]", text)[0] if text else ""


def _count(counter, key, n):
    counter[key] = counter.get(key, 0) + n


def host_stats(ctx):
    """``host_stats.php?days=N``: hosts that contacted the scheduler in the
    past N days (default 30), counted by platform, OS, CPU vendor, GPU, BOINC
    client, libc and VirtualBox version."""
    days = ctx.int_arg("days", DEFAULT_DAYS, minimum=1, maximum=3650)
    db = ctx.db
    rows = db.query("SELECT os_name, os_version, p_vendor, serialnum, COUNT(*) AS n FROM host "
                    "WHERE rpc_time > %s GROUP BY os_name, os_version, p_vendor, serialnum",
                    (ctx.now - days * 86400,))
    tables = {k: {} for k in ("family", "os", "vendor", "gpu", "client", "libc", "vbox",
                              "libc_vbox")}
    total = 0
    for r in rows:
        n = int(r["n"])
        total += n
        os_name = r["os_name"] or ""
        items = serialnum_items(r["serialnum"])
        _count(tables["family"], family(os_name), n)
        _count(tables["os"], os_name or "unknown", n)
        _count(tables["vendor"], (r["p_vendor"] or "unknown").strip(), n)
        gpus = [name for kind, name in GPU_KINDS.items() if kind in items]
        for name in gpus or ["none"]:
            _count(tables["gpu"], name, n)
        _count(tables["client"], items.get("BOINC", "").split("|")[0] or "unknown", n)
        vbox = vbox_version(items)
        if vbox:
            _count(tables["vbox"], vbox, n)
        if "Linux" in os_name:
            libc = libc_version(r["os_version"]) or "unknown"
            _count(tables["libc"], libc, n)
            if vbox:
                _count(tables["libc_vbox"], libc, n)

    def show(title, key, head):
        counts = sorted(tables[key].items(), key=lambda kv: (-kv[1], kv[0]))
        return fmt("<div><h2>{}</h2>{}</div>", title, table(
            (head, "Hosts", "Share"),
            [(k, num(v), "%.1f %%" % (100.0 * v / total)) for k, v in counts],
            lambda i, j, c: "num" if j else "", "none"))

    body = fmt(
        '<form class="inline" method="get" action="host_stats.php"><label for="days">Hosts '
        'active in the past</label> {} days <button type="submit">Show</button></form>'
        "<p>{} hosts contacted the scheduler in the past {} days.</p>"
        '<div class="cols">{}{}{}{}</div><div class="cols">{}{}{}{}</div>{}',
        text_input("days", days, 5, "number"), num(total), days,
        show("Platforms", "family", "Platform"), show("CPU vendors", "vendor", "Vendor"),
        show("GPUs", "gpu", "GPU"), show("BOINC client versions", "client", "Version"),
        show("Linux libc versions", "libc", "libc"),
        show("VirtualBox versions", "vbox", "VirtualBox"),
        show("libc of Linux hosts with VirtualBox", "libc_vbox", "libc"),
        Markup(""), show("Operating systems", "os", "OS"))
    return render(ctx, "Host statistics", body)


def size_census(ctx):
    """``size_census.php``: each app with job size classes (``?all=1``: every
    app): the boundaries in its size_census file, those a census would write
    now, and how hosts and unsent jobs spread over the classes."""
    if ctx.req.get("all") not in ("", "1"):
        raise PageError("all: 1 or nothing")
    db = ctx.db
    show_all = bool(ctx.req.get("all"))
    apps = db.query("SELECT id, name, n_size_classes FROM app WHERE deprecated = 0 %s "
                    "ORDER BY id" % ("" if show_all else "AND n_size_classes > 1"))
    parts = [Markup(
        "<p>Apps with <code>n_size_classes</code> above 1 get jobs of several sizes; the "
        "scheduler sends each host jobs of the class of its speed. bin/size_census writes "
        "the speed boundaries between classes to <code>size_census_APP</code> (run it "
        "daily as a task); the feeder reads the file at start and on reread_db.</p>")]
    for app in apps:
        nclasses = max(int(app["n_size_classes"]), 1)
        path = ctx.cfg.project_path(census_file_name(app["name"]))
        speeds = host_speeds(db, app["id"])
        fresh = census_quantiles(speeds, nclasses)
        try:
            current = read_census(path, app["name"], nclasses)
            written = "written %s" % N.time_text(int(os.path.getmtime(path)))
            problem = ""
        except CensusFileError as exc:
            current, written, problem = None, "", str(exc)
        hosts = [0] * nclasses
        for s in speeds:
            hosts[host_size_class(current if current is not None else fresh, nclasses, s)] += 1
        unsent = {r["size_class"]: int(r["n"]) for r in db.query(
            "SELECT size_class, COUNT(*) AS n FROM result WHERE appid = %s AND server_state = %s "
            "GROUP BY size_class", (app["id"], int(ServerState.UNSENT)))}
        rows = []
        for k in range(nclasses):
            def bound(q):
                return ("%.4g GFLOPS" % (q[k] / 1e9)) if q is not None and k < len(q) else "---"
            rows.append((k, bound(current), bound(fresh), hosts[k], unsent.get(k, 0)))
        if -1 in unsent:
            rows.append(("none (-1)", "", "", "", unsent[-1]))
        parts.append(fmt(
            "<h2>{} ({} size classes)</h2>{}<p>{}: {}. {} host app versions of hosts "
            "doing work measured.</p>{}",
            app["name"], nclasses, notice("warn", problem) if problem else "", path,
            written or "no usable file", len(speeds),
            table(("Class", "Upper boundary in the file", "Upper boundary, census now",
                   "Hosts in class", "Unsent results"), rows,
                  lambda i, j, c: "num" if j else "")))
    if not apps:
        parts.append(notice("warn", "No application has job size classes (n_size_classes > 1)."))
    parts.append(fmt("<p>{}</p>", link(url("size_census.php", all=None if show_all else 1),
                                       "Only apps with size classes" if show_all
                                       else "All applications")))
    return render(ctx, "Job size classes", join(parts))
