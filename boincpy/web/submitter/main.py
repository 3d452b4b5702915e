"""The submitters' pages' CGI entry: map a script name to its page and run it.

Each of ``html/user/submit.php``, ``login_form.php``, ``login_action.php``
and ``logout.php`` is two lines::

    #!/usr/bin/env python3
    from boincpy.web.submitter.main import run; run(__file__)

Apache runs them as CGIs in ``PROJECT/html/user/`` (no HTTP authentication:
the login cookie says who is there).  While ``PROJECT/stop_web`` exists they
answer that the project is down, as BOINC's pages do.  Tests call
:func:`handle` with a Request.
"""

import os

from boincpy.config import CONFIG_FILE, load_config
from boincpy.errors import ConfigError
from boincpy.web.http import config_failure, run_cgi
from boincpy.web.page import PageError, serve
from boincpy.web.submitter import batches, session

PAGES = {
    "submit.php": batches.page,
    "login_form.php": session.login_form,
    "login_action.php": session.login_action,
    "logout.php": session.logout,
}


def respond(page_name, cfg, req, now=None):
    """Run one page for a Request with the project's config; always a Response."""
    def context():
        if os.path.exists(cfg.project_path("stop_web")):
            raise PageError("The project's web site is down for maintenance; please try "
                            "again later.", "503 Service Unavailable", "Project down")
        return session.UserContext(req, cfg, now, page_name)
    return serve(PAGES, page_name, context, session.SUBMIT_SITE)


def handle(page_name, req, project_dir, now=None):
    """Run one page of the project at ``project_dir`` (tests)."""
    try:
        cfg = load_config(project_dir, CONFIG_FILE, aux=False)
    except ConfigError as exc:
        return config_failure(exc)
    return respond(page_name, cfg, req, now)


def run(script_file):
    """CGI main of an html/user page script."""
    page = os.path.basename(script_file)
    run_cgi(lambda cfg, req: respond(page, cfg, req), page)
