"""The ops area's CGI entry: map a script name to its page and run it.

Each file in ``html/ops/`` is two lines::

    #!/usr/bin/env python3
    from boincpy.web.ops.main import run; run(__file__)

Apache runs it as a CGI in ``PROJECT/html/ops/``; :func:`run` finds the
project two directories up (or at ``$BOINC_PROJECT_DIR``), reads the request
and prints the page.  Tests call :func:`handle` with an environ dict.

Every page requires the user Apache authenticated (REMOTE_USER): if the
directory is not behind HTTP basic auth the pages refuse to work rather
than expose the project.
"""

from boincpy.web.ops import (apps, batches, browse, dbinfo, failures, hosts, hrclass, index,
                             jobs, logs, mail, news, status, users)
from boincpy.web.ops import community
from boincpy.web.ops import spam
from boincpy.web.page import Context, PageError, handle_in_project, run_page, serve

PAGES = {
    "index.php": index.page,
    "server_status.php": status.page,
    "manage_apps.php": apps.manage_apps,
    "manage_app_versions.php": apps.manage_app_versions,
    "db_form.php": browse.db_form,
    "db_action.php": browse.db_action,
    "result_summary.php": failures.result_summary,
    "failure_result_summary_by_platform.php": failures.by_platform,
    "failure_result_summary_by_host.php": failures.by_host,
    "error_summary.php": failures.error_summary,
    "cancel_wu_form.php": jobs.cancel_wu_form,
    "cancel_wu_action.php": jobs.cancel_wu_action,
    "cancel_workunits.php": jobs.cancel_workunits,
    "cancel_workunits_action.php": jobs.cancel_workunits_action,
    "transition_all.php": jobs.transition_all,
    "errorwus.php": jobs.errorwus,
    "clear_host.php": jobs.clear_host,
    "add_user.php": users.add_user,
    "why_no_work.php": logs.why_no_work,
    "show_log.php": logs.show_log,
    "dbinfo.php": dbinfo.page,
    "manage_user.php": users.manage_user,
    "list_new_users.php": users.list_new_users,
    "manage_special_users.php": users.manage_special_users,
    "mass_email.php": mail.mass_email,
    "revalidate.php": jobs.revalidate,
    "assign.php": jobs.assign,
    "app_details.php": apps.app_details,
    "job_times.php": apps.job_times,
    "pass_percentage_by_platform.php": failures.pass_percentage,
    "host_stats.php": hosts.host_stats,
    "size_census.php": hosts.size_census,
    "hrclass_summary.php": hrclass.hrclass_summary,
    "reset_hrclass.php": hrclass.reset_hrclass,
    "batch_action.php": batches.batch_action,
    "manage_privileges.php": batches.manage_privileges,
    "profile_screen_form.php": community.profile_screen_form,
    "profile_screen_action.php": community.profile_screen_action,
    "badge_admin.php": community.badge_admin,
    "news.php": news.page,
    "accounts_by_address.php": spam.accounts_by_address,
}


def respond(page_name, cfg, req, now=None):
    """Run one page for a Request with the project's config; always a Response."""
    def context():
        if not req.remote_user:
            # Apache sets REMOTE_USER only after authenticating: without it the
            # ops directory is open to the world.
            raise PageError("The ops pages are not protected: configure HTTP basic "
                            "authentication for this directory (make_project's Apache "
                            "snippet and html/ops/.htpasswd).", "403 Forbidden",
                            "Not protected")
        return Context(req, cfg, now, page_name)
    return serve(PAGES, page_name, context)


def handle(page_name, req, project_dir, now=None):
    """Run one page of the project at ``project_dir`` (tests, run_in_ops)."""
    return handle_in_project(respond, page_name, req, project_dir, now)


def run(script_file):
    """CGI main of an html/ops script."""
    run_page(respond, script_file)
