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

import os
import sys
import traceback

from boincpy.config import CONFIG_FILE, load_config
from boincpy.errors import BoincpyError
from boincpy.web.ops.request import BadRequest, Response, read_request, write_response
from boincpy.web.markup import fmt
from boincpy.web.ops import apps, browse, failures, index, jobs, logs, status, users
from boincpy.web.ops.page import Context, PageError, error_page, render

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
    "clear_host.php": jobs.clear_host,
    "add_user.php": users.add_user,
    "why_no_work.php": logs.why_no_work,
    "show_log.php": logs.show_log,
}


def project_dir_for(script_file):
    """The project root of an ops script: $BOINC_PROJECT_DIR, else two levels up."""
    env = os.environ.get("BOINC_PROJECT_DIR")
    if env:
        return env
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(script_file))))


def handle(page_name, req, project_dir, now=None):
    """Run one page for a Request; always returns a Response."""
    ctx = None
    try:
        if not req.remote_user:
            # Apache sets REMOTE_USER only after authenticating: without it the
            # ops directory is open to the world.
            raise PageError("The ops pages are not protected: configure HTTP basic "
                            "authentication for this directory (make_project's Apache "
                            "snippet and html/ops/.htpasswd).", "403 Forbidden",
                            "Not protected")
        func = PAGES.get(page_name)
        if func is None:
            raise PageError("no ops page named %s" % page_name, "404 Not Found", "Not found")
        cfg = load_config(project_dir, CONFIG_FILE, aux=False)
        ctx = Context(req, cfg, now, page_name)
        return func(ctx)
    except PageError as err:
        return error_page(ctx, err)
    except BoincpyError as err:
        return error_page(ctx, PageError(err.message, "500 Internal Server Error", "Error"))
    except Exception:
        text = traceback.format_exc()
        sys.stderr.write(text)
        return render(ctx, "Internal error",
                      fmt('<div class="notice bad">The page failed:</div><pre>{}</pre>', text),
                      "500 Internal Server Error")
    finally:
        if ctx is not None:
            ctx.close()


def run(script_file):
    """CGI main of an html/ops script."""
    page_name = os.path.basename(script_file)
    try:
        req = read_request(os.environ, sys.stdin.buffer)
    except BadRequest as err:
        write_response(Response(body=str(err), status=err.status,
                                content_type="text/plain; charset=utf-8"))
        return
    write_response(handle(page_name, req, project_dir_for(script_file)))
