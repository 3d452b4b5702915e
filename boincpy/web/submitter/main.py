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
from boincpy.web.ops.page import PageError, serve
from boincpy.web.ops.request import run_script
from boincpy.web.submitter import batches, session

PAGES = {
    "submit.php": batches.page,
    "login_form.php": session.login_form,
    "login_action.php": session.login_action,
    "logout.php": session.logout,
}


def handle(page_name, req, project_dir, now=None):
    """Run one page for a Request; always returns a Response."""
    def context():
        cfg = load_config(project_dir, CONFIG_FILE, aux=False)
        if os.path.exists(cfg.project_path("stop_web")):
            raise PageError("The project's web site is down for maintenance; please try "
                            "again later.", "503 Service Unavailable", "Project down")
        return session.UserContext(req, cfg, now, page_name)
    return serve(PAGES, page_name, context, session.SUBMIT_SITE)


def run(script_file):
    """CGI main of an html/user page script."""
    run_script(script_file, handle)
