"""The persistent mode: the scheduler, the upload handler and the web RPCs
served by long-lived FastCGI processes that bin/start runs
(:mod:`boincpy.fcgi_pool`) and Apache's mod_proxy_fcgi sends requests to.

A classic CGI pays for a Python start-up and the imports on every request;
here a process imports everything once and serves request after request
through the same plain functions the CGIs call (``serve(environ, stream,
resident)`` -> the CGI's output), so replies and log lines are byte for byte
those of the CGIs.  What a process keeps between requests (configuration
re-read when its files change, keys, one database connection, the feeder's
job array) is a :class:`boincpy.resident.Resident`; :mod:`boincpy.fcgi`
speaks FastCGI to the web server.

Why a FastCGI server of our own rather than mod_wsgi: it runs the project's
own interpreter (/usr/bin/python3), while mod_wsgi runs Python inside
Apache's processes through Debian's shared libpython3.11.so, which runs
Python code more slowly: the same scheduler request took 25-35% more CPU
there (measured in one process on each, and under Apache with
bench/bench_sched.py).  Why not mod_fcgid (used before): it reads a request's
whole body before the process sees any of it, so an upload cut short lost
every byte received, and it starts processes under load (a second's stall
each).  Each worker handles one request at a time, as a reserved slot of the
job array carrying the process id requires.  The FastCGI protocol (about 200
lines) is written here: the standard library has none and the packages that
had one are no longer kept.

``make_project --persistent`` writes the Apache configuration and
PROJECT/fcgi/boincpy.fcgi (which calls :func:`boincpy.fcgi_pool.main`);
``bin/server_mode`` switches an existing project between the two modes."""

import os
import sys

from boincpy.resident import Resident

SCHEDULER = "cgi"
UPLOAD_HANDLER = "file_upload_handler"

# html/user pages served persistently: script name -> "module:function[:arg]",
# function([arg,] cfg, request) -> boincpy.web.http.Response (the shape of
# boincpy.web.http.serve's handlers).  A page listed here is routed to the
# daemon by the Apache configuration make_project writes; any other .php
# stays a CGI.  A new page plugs in with one line.
WEB_PAGES = {
    "get_project_config.php": "boincpy.web.rpc:handle:get_project_config",
    "create_account.php": "boincpy.web.rpc:handle:create_account",
    "lookup_account.php": "boincpy.web.rpc:handle:lookup_account",
    "am_get_info.php": "boincpy.web.rpc:handle:am_get_info",
    "am_set_info.php": "boincpy.web.rpc:handle:am_set_info",
    "am_set_host_info.php": "boincpy.web.rpc:handle:am_set_host_info",
    "show_user.php": "boincpy.web.rpc:handle:show_user",
    "team_lookup.php": "boincpy.web.rpc:handle:team_lookup",
    "create_team.php": "boincpy.web.rpc:handle:create_team",
    "login_token_lookup.php": "boincpy.web.rpc:handle:login_token_lookup",
    "submit_rpc_handler.php": "boincpy.web.submit_rpc:handle",
    "job_file.php": "boincpy.web.job_file:handle",
    "get_output.php": "boincpy.web.get_output:handle:get_output",
    "get_output2.php": "boincpy.web.get_output:handle:get_output2",
    "get_output3.php": "boincpy.web.get_output:handle:get_output3",
    "server_status.php": "boincpy.web.server_status:handle",
    "index.php": "boincpy.web.master:handle",
}


def _site_pages():
    # the web site's pages (volunteers' and submitters'): one dispatcher
    from boincpy.web.user.main import PAGES
    return {name: "boincpy.web.user.main:respond:" + name for name in PAGES}


WEB_PAGES.update(_site_pages())

def page_handler(target):
    """The callable ``handler(cfg, request)`` a WEB_PAGES entry names."""
    import importlib
    parts = target.split(":")
    function = getattr(importlib.import_module(parts[0]), parts[1])
    if len(parts) == 2:
        return function
    arg = parts[2]

    def handler(cfg, request):
        return function(arg, cfg, request)
    # a dispatcher says which of its pages read file uploads
    takes_uploads = getattr(function, "takes_uploads", None)
    if takes_uploads is not None:
        handler.uploads = takes_uploads(arg)
    return handler


class Application:
    """One project's persistent application: dispatch by script name (the
    last part of SCRIPT_NAME) to the scheduler, the upload handler or a
    WEB_PAGES entry.  One per process; ``resident`` lives as long as it does."""

    def __init__(self, project_dir, preload=True):
        self.project_dir = os.path.abspath(project_dir)
        self.resident = Resident(self.project_dir, persistent=True)
        self.pages = {}
        if preload:
            self.preload()
            # What the imports made lives as long as the process: out of the
            # cyclic collector's sight, a full collection no longer walks the
            # whole program (a tenth of a request's CPU, measured)
            import gc
            gc.freeze()
            # A request allocates some ten thousand objects that live until
            # its end, and the default threshold (700) walks them several
            # times a request; collecting every 20,000 allocations costs 4%
            # less CPU a request (measured) and still bounds the garbage.
            gc.set_threshold(20000, 20, 20)

    def preload(self):
        """Import what requests need now, so no request pays for it."""
        import importlib
        for module in ("boincpy.sched.handler", "boincpy.sched.hosts", "boincpy.sched.reports",
                       "boincpy.sched.send", "boincpy.upload", "boincpy.db.lite"):
            importlib.import_module(module)
        for name in WEB_PAGES:
            self.page(name)

    def page(self, name):
        handler = self.pages.get(name)
        if handler is None:
            handler = self.pages[name] = page_handler(WEB_PAGES[name])
        return handler

    def respond(self, environ, stream):
        """The CGI output (bytes) for one request, or None for an unknown
        script.  What goes to stderr reaches the workers' log
        (log_HOST/boincpy_fcgi.log)."""
        script = environ.get("SCRIPT_NAME", "").rstrip("/").rsplit("/", 1)[-1]
        if script == SCHEDULER:
            from boincpy.sched import handler
            try:
                return handler.serve(environ, stream, self.resident, sys.stderr)
            finally:
                self._release_slots()
        if script == UPLOAD_HANDLER:
            from boincpy import upload
            return upload.serve(environ, stream, self.resident, sys.stderr)
        if script in WEB_PAGES:
            from boincpy.web import http
            return http.serve(self.page(script), environ, stream, self.resident, script)
        return None

    def _release_slots(self):
        # job choice gives back what it reserved; this is the backstop for a
        # request that ended some other way, since the process lives on
        array = self.resident._array
        if array is not None:
            try:
                array.restore(os.getpid())
            except (OSError, ValueError):
                self.resident.close_job_array()
