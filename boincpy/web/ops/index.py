"""``index.php``: the ops area's landing page ("Project Management").

Warnings first (trigger files, a disabled project), then the links an
admin needs, quick "go to row N" forms, and per-application summary links
for the past 24 hours and 7 days.
"""

import os

from boincpy.web.markup import Markup, fmt, join, link, url
from boincpy.web.ops.lookups import Catalog
from boincpy.web.ops.page import notice, render
from boincpy.web.ops.status import TRIGGERS, run_state_enabled


def _list(title, items):
    return fmt("<div><h2>{}</h2><ul>{}</ul></div>", title,
               join(fmt("<li>{}</li>", i) for i in items))


def _goto(table_name, label):
    return fmt('<form class="inline" method="get" action="db_action.php">'
               '<input type="hidden" name="table" value="{}">'
               '<label for="goto_{}">{}</label> <input type="number" min="1" name="id" '
               'id="goto_{}" size="8"> <button type="submit">Show</button></form>',
               table_name, table_name, label, table_name)


def page(ctx):
    """The landing page."""
    cfg = ctx.cfg
    warnings = []
    for name, why in TRIGGERS:
        if os.path.exists(cfg.project_path(name)):
            warnings.append("%s is present: %s." % (name, why))
    if run_state_enabled(cfg) is False:
        warnings.append("The project is disabled (bin/stop); bin/start enables it.")
    if cfg.dont_send_jobs:
        warnings.append("config.xml has <dont_send_jobs/>: no jobs are sent.")
    parts = [join(notice("warn", w) for w in warnings)]

    browse = [link("db_form.php?table=result", "Results"),
              link("db_form.php?table=workunit", "Workunits"),
              link("db_form.php?table=host", "Hosts"),
              fmt("{} ({})", link("db_form.php?table=user", "Users"),
                  link("db_action.php?table=user&sort=create_time&order=desc",
                       "recently registered")),
              link("db_action.php?table=app", "Applications"),
              link("db_action.php?table=app_version", "Application versions"),
              link("db_action.php?table=platform", "Platforms"),
              link("db_form.php?table=batch", "Batches (remote job submission)")]
    computing = [link("server_status.php", "Server status (daemons, queues, charts)"),
                 link("manage_apps.php", "Manage applications"),
                 link("manage_app_versions.php", "Manage application versions"),
                 link("cancel_wu_form.php", "Cancel jobs by ID"),
                 link("cancel_workunits.php", "Cancel jobs by query"),
                 link("transition_all.php", "Transition all jobs"),
                 link("error_summary.php", "Most frequent errors"),
                 link("hrclass_summary.php", "Homogeneous redundancy classes"),
                 link("show_log.php", "Show/grep logs")]
    people = [link("add_user.php", "Add a user"),
              link("manage_privileges.php", "Job submitters: grant and revoke"),
              link("why_no_work.php", "Why does a host get no work?"),
              link("clear_host.php", "Clear a host's RPC time")]
    parts.append(fmt('<div class="cols">{}{}{}</div>', _list("Browse database", browse),
                     _list("Computing", computing), _list("Hosts and users", people)))
    parts.append(fmt('<h2>Go to</h2><div class="goto">{}{}{}{}{}</div>',
                     _goto("result", "Result"), _goto("workunit", "Workunit"),
                     _goto("host", "Host"), _goto("user", "User"),
                     fmt('<form class="inline" method="get" action="why_no_work.php">'
                         '<label for="wnw">Why no work, host</label> <input type="number" '
                         'min="1" name="hostid" id="wnw" size="8"> <button type="submit">Show'
                         '</button></form>')))

    catalog = Catalog(ctx.rdb)
    show_all = bool(ctx.req.get("show_deprecated"))
    apps = []
    for app in catalog.apps.values():
        if app["deprecated"] and not show_all:
            continue
        lines = []
        for nsecs, label in ((86400, "Past 24 hours"), (7 * 86400, "Past 7 days")):
            lines.append(fmt("<li>{}: {}</li>", label, join([
                link(url("result_summary.php", appid=app["id"], nsecs=nsecs), "summary"),
                link(url("failure_result_summary_by_platform.php", appid=app["id"], nsecs=nsecs),
                     "failures by (app version, error)"),
                link(url("failure_result_summary_by_host.php", appid=app["id"], nsecs=nsecs),
                     "failures by (app version, host)"),
                link(url("error_summary.php", appid=app["id"], nsecs=nsecs), "errors"),
            ], " | ")))
        apps.append(fmt("<div><b>Results for <code>{}</code></b>{}<ul>{}</ul></div>",
                        app["name"], " (deprecated)" if app["deprecated"] else "", join(lines)))
    parts.append(Markup("<h2>Results by application</h2>"))
    parts.append(join(apps) or Markup('<p class="muted">No applications yet (bin/xadd).</p>'))
    parts.append(link("index.php?show_deprecated=1", "Show deprecated applications")
                 if not show_all else link("index.php", "Hide deprecated applications"))
    return render(ctx, "Project Management", join(parts, Markup("\n")))
