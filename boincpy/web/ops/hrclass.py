"""Homogeneous redundancy classes: ``hrclass_summary.php`` and
``reset_hrclass.php`` (BOINC's pages of those names).

The summary lists each HR class that holds jobs: its workunits and their
unsent results (BOINC's page counts the workunits of a fixed list of
classes; this one lists the classes in use, by name), its recent credit
from the census (``hr_info.txt``) and, with ``<hr_allocate_slots/>``, the
job-array slots the feeder allows it.  Resetting a class makes its
workunits uncommitted again (``hr_class`` 0), as BOINC's reset page does:
for jobs that went to a class of hosts that has stopped asking for work.
"""

from boincpy.db.workunit import reset_hr_class
from boincpy.hrclass import HR_INFO_FILE, HR_NAMES, HR_NTYPES, HrInfo, HrInfoError, class_name
from boincpy.web.markup import Markup, fmt, join, link, url
from boincpy.web.page import PageError, kv_table, notice, num, render, table


def _census(ctx, apps):
    """HrInfo from hr_info.txt with the feeder's allocation, or (None, why)."""
    cfg = ctx.cfg
    try:
        with open(cfg.project_path(HR_INFO_FILE)) as f:
            info = HrInfo.parse(f.read())
    except OSError:
        return None, "no %s yet (the census task writes it)" % HR_INFO_FILE
    except HrInfoError as exc:
        return None, "%s is unreadable: %s" % (HR_INFO_FILE, exc)
    for a in apps:
        t = _app_type(cfg, a)
        if t:
            info.type_weights[t] += 1 if cfg.homogeneous_redundancy else a["weight"]
    info.allocate(cfg.shmem_work_items or 100)
    return info, None


def _app_type(cfg, app):
    return cfg.homogeneous_redundancy or int(app["homogeneous_redundancy"] or 0)


def hrclass_summary(ctx):
    """``hrclass_summary.php``: jobs per HR class, the census and the slots."""
    cfg, db = ctx.cfg, ctx.db
    apps = db.query("SELECT id, name, homogeneous_redundancy, weight FROM app "
                    "WHERE deprecated = 0 ORDER BY id")
    types = sorted({_app_type(cfg, a) for a in apps} - {0})
    wus = {r["hr_class"]: int(r["n"]) for r in db.query(
        "SELECT hr_class, COUNT(*) AS n FROM workunit GROUP BY hr_class")}
    unsent = {r["hr_class"]: int(r["n"]) for r in db.query(
        "SELECT w.hr_class, COUNT(*) AS n FROM result r JOIN workunit w "
        "ON w.id = r.workunitid WHERE r.server_state = 2 GROUP BY w.hr_class")}
    info, why = _census(ctx, apps)
    parts = [kv_table([
        ("Apps using HR", join((fmt("{} ({})", a["name"], HR_NAMES[_app_type(cfg, a)])
                                for a in apps if _app_type(cfg, a)), ", ") or "none"),
        ("config.xml homogeneous_redundancy", cfg.homogeneous_redundancy or "off"),
        ("hr_allocate_slots", "on: the feeder shares job-array slots out by class"
         if cfg.hr_allocate_slots else "off"),
        ("Census", why or "%s (RAC per class)" % HR_INFO_FILE),
    ])]
    classes = sorted(set(wus) | set(unsent) | {
        c for t in range(1, HR_NTYPES) if info is not None
        for c, x in enumerate(info.rac_per_class[t]) if x})
    rows = []
    for c in classes:
        rac = [num(info.rac_per_class[t][c]) if info is not None and c else ""
               for t in range(1, HR_NTYPES)]
        slots = ""
        if info is not None and cfg.hr_allocate_slots and types:
            slots = join((str(info.max_slots[t][c]) for t in types), " / ")
        reset = link(url("reset_hrclass.php", hr_class=c), "reset") if c else ""
        rows.append([c, "uncommitted" if c == 0 else class_name(c),
                     link(url("db_action.php", table="workunit", hr_class=c), num(wus.get(c, 0))),
                     num(unsent.get(c, 0))] + rac + [slots, reset])
    parts.append(table(["hr_class", "Hosts (OS, CPU)", "Workunits", "Unsent results"]
                       + ["RAC (%s)" % HR_NAMES[t] for t in range(1, HR_NTYPES)]
                       + ["Max slots" + (" (%s)" % " / ".join(HR_NAMES[t] for t in types)
                                         if types else ""), ""],
                       rows, empty="no workunits"))
    parts.append(Markup('<p class="muted">A workunit gets the class of the first host it is '
                        'sent to; its other replicas then go only to hosts of that class.</p>'))
    return render(ctx, "Homogeneous redundancy classes", join(parts, Markup("\n")))


def reset_hrclass(ctx):
    """``reset_hrclass.php``: GET asks, POST sets hr_class = 0 for the class's workunits."""
    post = ctx.req.method == "POST"
    if post:
        ctx.require_action()
    c = ctx.int_arg("hr_class", None, post=post, minimum=1)
    if c is None:
        raise PageError("hr_class: give a class number (1 or more)")
    title = "Reset HR class %d (%s)" % (c, class_name(c))
    if post:
        n = reset_hr_class(ctx.db, c)
        return render(ctx, title, fmt("{}<p>{}</p>", notice(
            "ok", "%d workunit(s) of class %d are uncommitted again." % (n, c)),
            link("hrclass_summary.php", "HR classes")))
    n = ctx.db.query_value("SELECT COUNT(*) FROM workunit WHERE hr_class = %s", (c,), 0)
    body = fmt("<p>{} workunit(s) are committed to class {} ({}). Resetting makes them "
               "uncommitted: their unsent replicas may then go to a host of any class "
               "(those already sent stay where they are).</p>"
               '<form method="post" action="reset_hrclass.php">{}'
               '<input type="hidden" name="hr_class" value="{}">'
               '<button type="submit">Reset class {}</button></form><p>{}</p>',
               n, c, class_name(c), ctx.token_field(), c, c,
               link("hrclass_summary.php", "Back to the HR classes"))
    return render(ctx, title, body)
