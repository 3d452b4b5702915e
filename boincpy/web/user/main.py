"""The project's web site (``html/user``): map a script name to its page and run it.

Each page file in ``html/user/`` is two lines::

    #!/usr/bin/env python3
    from boincpy.web.user.main import run; run(__file__)

Apache runs it as a CGI in ``PROJECT/html/user/`` (no HTTP authentication:
the login cookie says who is there), or a persistent process serves it
(:mod:`boincpy.persistent` lists every page of :data:`PAGES`).  While
``PROJECT/stop_web`` exists the pages answer that the project is down, as
BOINC's do.  Tests call :func:`handle` with a Request.

Each family of pages is one module with its own ``PAGES`` (script name ->
``page(ctx)``); this module only merges them, so a new page plugs in where
its family lives.
"""

import os

from boincpy.web.page import PageError, handle_in_project, run_page, serve
from boincpy.web.submitter import batches
from boincpy.web.user import (account, badges, forum, forum_post, lists, messages, moderation,
                              news, prefs, profile, session, tasks, teams)

FAMILIES = (session, account, prefs, tasks, teams, news, profile, badges, messages, forum, lists,
            moderation, forum_post)

PAGES = {"submit.php": batches.page}
for _family in FAMILIES:
    PAGES.update(_family.PAGES)

# Pages of the submitters, framed by their own navigation.
SUBMIT_PAGES = frozenset({"submit.php"})


def respond(page_name, cfg, req, now=None):
    """Run one page for a Request with the project's config; always a Response."""
    site = session.SUBMIT_SITE if page_name in SUBMIT_PAGES else session.USER_SITE

    def context():
        if os.path.exists(cfg.project_path("stop_web")):
            raise PageError("The project's web site is down for maintenance; please try "
                            "again later.", "503 Service Unavailable", "Project down")
        return session.UserContext(req, cfg, now, page_name, site)
    return serve(PAGES, page_name, context, site)


def handle(page_name, req, project_dir, now=None):
    """Run one page of the project at ``project_dir`` (tests)."""
    return handle_in_project(respond, page_name, req, project_dir, now)


def takes_uploads(page_name):
    """Whether a page reads multipart file uploads (its function's ``uploads``
    attribute, e.g. create_profile.php's picture)."""
    return bool(getattr(PAGES.get(page_name), "uploads", False))


respond.takes_uploads = takes_uploads


def run(script_file):
    """CGI main of an html/user page script."""
    run_page(respond, script_file, takes_uploads(os.path.basename(script_file)))
