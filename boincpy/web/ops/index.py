"""``index.php``: the ops area's landing page ("Project Management").

Warnings first (trigger files, a disabled project), then one click to the
newest jobs, results, users and hosts, find boxes (an id or a name) for the
main tables, the links an admin needs, and per-application summary links
for the past 24 hours and 7 days.
"""

import os
import time

from boincpy.web.markup import Markup, fmt, join, link, url
from boincpy.web.ops.lookups import Catalog
from boincpy.web.page import notice, render
from boincpy.web.ops.status import TRIGGERS, run_state_enabled


def _list(title, items):
    return fmt("<div><h2>{}</h2><ul>{}</ul></div>", title,
               join(fmt("<li>{}</li>", i) for i in items))


def _find(table_name, label):
    return fmt('<form class="inline" method="get" action="db_action.php">'
               '<input type="hidden" name="table" value="{}">'
               '<label for="find_{}">{}</label> <input type="text" name="find" '
               'id="find_{}" size="24" placeholder="ID or name"> '
               '<button type="submit">Find</button></form>',
               table_name, table_name, label, table_name)


def day(t):
    """The UTC date of a Unix time, as the browse filters take it."""
    return time.strftime("%Y-%m-%d", time.gmtime(t))


def created_on(table_name, date, column="create_time"):
    """The rows of a table whose ``column`` falls on a UTC date, newest first."""
    return url("db_action.php", table=table_name, tfield=column, after=date, before=date,
               sort=column, order="desc")


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

    today, yesterday = day(ctx.now), day(ctx.now - 86400)
    newest = [
        fmt("{}: {} | {}", link("db_action.php?table=workunit", "Newest jobs (workunits)"),
            link(created_on("workunit", today), "created today"),
            link(created_on("workunit", yesterday), "created yesterday")),
        fmt("{}: {} | {} | {}", link("db_action.php?table=result", "Newest results"),
            link(created_on("result", today, "sent_time"), "sent today"),
            link(created_on("result", today, "received_time"), "received today"),
            link(created_on("result", yesterday, "received_time"), "received yesterday")),
        fmt("{}: {}", link("list_new_users.php", "Newest users"),
            link(created_on("user", today), "registered today")),
        fmt("{}: {}", link("db_action.php?table=host&sort=create_time&order=desc",
                           "Newest hosts"),
            link(created_on("host", today), "registered today")),
    ]
    parts.append(_list("Newest", newest))
    parts.append(fmt('<div class="goto">{}{}{}{}{}</div>',
                     _find("workunit", "Workunit"), _find("result", "Result"),
                     _find("user", "User (name or e-mail)"), _find("host", "Host (name or IP)"),
                     _find("team", "Team")))

    browse = [link("db_form.php?table=result", "Results"),
              link("db_form.php?table=workunit", "Workunits"),
              link("db_form.php?table=host", "Hosts"),
              link("db_form.php?table=user", "Users"),
              link("db_form.php?table=team", "Teams"),
              link("db_form.php?table=host_app_version", "Host app versions"),
              link("db_action.php?table=app", "Applications"),
              link("db_action.php?table=app_version", "Application versions"),
              link("db_action.php?table=platform", "Platforms"),
              link("db_form.php?table=batch", "Batches (remote job submission)"),
              link("dbinfo.php", "Database and disk usage (dbinfo)")]
    computing = [link("server_status.php", "Server status (daemons, queues, charts)"),
                 link("manage_apps.php", "Manage applications"),
                 link("manage_app_versions.php", "Manage application versions"),
                 link("cancel_wu_form.php", "Cancel jobs by ID"),
                 link("cancel_workunits.php", "Cancel jobs by query"),
                 link("transition_all.php", "Transition all jobs"),
                 link("revalidate.php", "Re-validate jobs"),
                 link("assign.php", "Assigned (targeted) jobs"),
                 link("job_times.php", "FLOP counts of jobs (job_times)"),
                 link("size_census.php", "Job size classes (size_census)"),
                 link("host_stats.php", "Host statistics: platforms, CPUs, OS"),
                 link("error_summary.php", "Most frequent errors"),
                 link("errorwus.php", "Workunits with too many errors"),
                 link("hrclass_summary.php", "Homogeneous redundancy classes"),
                 link("show_log.php", "Show/grep logs")]
    people = [link("list_new_users.php", "Newest users"),
              link("manage_user.php", "Manage a user (ban, delete a spammer, privileges)"),
              link("manage_special_users.php", "Special users"),
              link("add_user.php", "Add a user"),
              link("manage_privileges.php", "Job submitters: grant and revoke"),
              link("mass_email.php", "Send mass e-mail"),
              link("news.php", "News: post, edit, hide"),
              link("profile_screen_form.php", "Screen user profiles"),
              link("badge_admin.php", "Badges"),
              link("accounts_by_address.php", "Accounts made from one address"),
              link("why_no_work.php", "Why does a host get no work?"),
              link("clear_host.php", "Clear a host's RPC time")]
    parts.append(fmt('<div class="cols">{}{}{}</div>', _list("Browse database", browse),
                     _list("Computing", computing), _list("Users and hosts", people)))

    catalog = Catalog(ctx.db)       # BOINC's index.php: db_init(), the primary
    show_all = bool(ctx.req.get("show_deprecated"))
    apps = []
    for app in catalog.apps.values():
        if app["deprecated"] and not show_all:
            continue
        lines = []
        for nsecs, label in ((86400, "Past 24 hours"), (7 * 86400, "Past 7 days")):
            lines.append(fmt("<li>{}: {}</li>", label, join([
                link(url("result_summary.php", appid=app["id"], nsecs=nsecs), "summary"),
                link(url("pass_percentage_by_platform.php", appid=app["id"], nsecs=nsecs),
                     "pass percentage by platform"),
                link(url("failure_result_summary_by_platform.php", appid=app["id"], nsecs=nsecs),
                     "failures by (app version, error)"),
                link(url("failure_result_summary_by_host.php", appid=app["id"], nsecs=nsecs),
                     "failures by (app version, host)"),
                link(url("error_summary.php", appid=app["id"], nsecs=nsecs), "errors"),
            ], " | ")))
        lines.append(fmt("<li>{} | {}</li>",
                         link(url("app_details.php", appid=app["id"]),
                              "details: credit scale per version"),
                         link(url("job_times.php", appid=app["id"]), "FLOPs of its jobs")))
        apps.append(fmt("<div><b>Results for <code>{}</code></b>{}<ul>{}</ul></div>",
                        app["name"], " (deprecated)" if app["deprecated"] else "", join(lines)))
    parts.append(Markup("<h2>Results by application</h2>"))
    parts.append(join(apps) or Markup('<p class="muted">No applications yet (bin/xadd).</p>'))
    parts.append(link("index.php?show_deprecated=1", "Show deprecated applications")
                 if not show_all else link("index.php", "Hide deprecated applications"))
    return render(ctx, "Project Management", join(parts, Markup("\n")))
