"""The project's web site (``html/user``): map a script name to its page and run it.

Each page file in ``html/user/`` is two lines::

    #!/usr/bin/env python3
    from boincpy.web.user.main import run; run(__file__)

Apache runs it as a CGI in ``PROJECT/html/user/`` (no HTTP authentication:
the login cookie says who is there), or a persistent process serves it
(:mod:`boincpy.persistent` lists every page of :data:`PAGES`).  While
``PROJECT/stop_web`` exists the pages answer that the project is down, as
BOINC's do; a page that answers XML to programs says so with its function's
``xml_reply`` attribute (see :func:`down_reply`).  Tests call :func:`handle`
with a Request.

Each family of pages is one module with its own ``PAGES`` (script name ->
``page(ctx)``); this module only merges them, so a new page plugs in where
its family lives.
"""

import importlib
import os

from boincpy.hot_path import SITE_FAMILIES
from boincpy.web.page import PageError, handle_in_project, run_page, serve
from boincpy.web.rpc_xml import ERR_PROJECT_DOWN, RpcError, error_response
from boincpy.web.user import session

# The families, by module: a classic CGI imports only its page's family (its
# entry file names it, and the bundle of compiled modules it starts from,
# boincpy.hot_path, which keeps the list), a persistent process and the tests
# all of them.
FAMILIES = SITE_FAMILIES
_PAGES = None


def family_pages(family):
    """The PAGES of one family module of boincpy.web.user (``submitter``:
    submit.php)."""
    if family == "submitter":
        from boincpy.web.submitter import batches
        return {"submit.php": batches.page}
    return importlib.import_module("boincpy.web.user." + family).PAGES


def all_pages():
    """Every page of the site: script name -> page function."""
    global _PAGES
    if _PAGES is None:
        pages = dict(family_pages("submitter"))
        for family in FAMILIES:
            pages.update(family_pages(family))
        _PAGES = pages
    return _PAGES


def __getattr__(name):
    # main.PAGES: every page, imported on first use (PEP 562)
    if name == "PAGES":
        return all_pages()
    raise AttributeError(name)

# Pages of the submitters, framed by their own navigation.
SUBMIT_PAGES = frozenset({"submit.php"})


def xml_reply(page_name, req, pages=None):
    """Whether this request of the page is answered in XML for a program: the
    page function's ``xml_reply`` attribute, True or a predicate on the
    Request (show_user.php's ``format=xml``, apps.php's ``xml``...)."""
    mode = getattr((pages or all_pages()).get(page_name), "xml_reply", False)
    return bool(mode(req) if callable(mode) else mode)


def down_reply(page_name, req, pages=None):
    """The answer while PROJECT/stop_web exists to an XML request:
    xml_error(ERR_PROJECT_DOWN), -183 "Project is temporarily offline" after
    the XML declaration, as BOINC's db_init_xml pages answer (its apps.php
    and team_email_list.php connect before xml_header and so print the HTML
    page; a program gets XML from every one of ours).  None for the HTML
    pages and the RSS feeds, which answer the 503 page as BOINC's
    show_project_down (its feeds never set $generating_xml)."""
    if xml_reply(page_name, req, pages):
        return error_response(RpcError(ERR_PROJECT_DOWN))
    return None


def respond(page_name, cfg, req, now=None, pages=None):
    """Run one page for a Request with the project's config; always a Response.
    ``pages``: the page's family (a CGI's), else every page."""
    pages = pages or all_pages()
    site = session.SUBMIT_SITE if page_name in SUBMIT_PAGES else session.USER_SITE
    if os.path.exists(cfg.project_path("stop_web")):
        down = down_reply(page_name, req, pages)
        if down is not None:
            return down

    def context():
        if os.path.exists(cfg.project_path("stop_web")):
            raise PageError("The project's web site is down for maintenance; please try "
                            "again later.", "503 Service Unavailable", "Project down")
        return session.UserContext(req, cfg, now, page_name, site)
    return serve(pages, page_name, context, site)


def handle(page_name, req, project_dir, now=None):
    """Run one page of the project at ``project_dir`` (tests)."""
    return handle_in_project(respond, page_name, req, project_dir, now)


def takes_uploads(page_name, pages=None):
    """Whether a page reads multipart file uploads: its function's ``uploads``
    attribute (False; True; or the most bytes one file may have, e.g.
    create_profile.php's picture)."""
    return getattr((pages or all_pages()).get(page_name), "uploads", False)


respond.takes_uploads = takes_uploads


def run(script_file, family=None):
    """CGI main of an html/user page script; ``family``: the module of
    boincpy.web.user that has the page (only it is imported: a CGI pays for
    every import), else every family."""
    pages = family_pages(family) if family else all_pages()
    page = os.path.basename(script_file)

    def family_respond(page_name, cfg, req, now=None):
        return respond(page_name, cfg, req, now, pages)
    run_page(family_respond, script_file, takes_uploads(page, pages))
