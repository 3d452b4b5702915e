"""run_in_ops: run one of the project's ops scripts (BOINC's tools/run_in_ops).

    run_in_ops SCRIPT [ARG...]

BOINC's run_in_ops runs a PHP script of html/ops, mostly as a periodic task
(``<cmd>run_in_ops size_census.php</cmd>``).  boincpy's counterparts of those
scripts are programs in bin/, so a config.xml written for BOINC keeps
working:

* SCRIPT (``.php`` dropped) names a program of PROJECT/bin -- size_census,
  delete_job_files, expire_batches, delete_batches... -- : it runs, in the
  project directory, with the ARGs;
* SCRIPT names an ops page (``server_status.php``, ``dbinfo.php``, ...): the
  page is rendered as for a GET, each ARG a ``name=value`` parameter, and
  printed; GET never changes anything, so actions can't be run this way;
* anything else is refused with a message, among them the scripts of BOINC's
  volunteer web site (forums, profiles, badges, news), which boincpy lacks.
"""

import os
import re
import subprocess
import sys
from urllib.parse import urlencode

import click

from boincpy.cli import click_main, project_dir_option, usage_help_option
from boincpy.config import find_project_dir
from boincpy.errors import BoincpyError
from boincpy.web.http import Request, parse_params
from boincpy.web.ops.main import PAGES, handle

USAGE = """Usage: run_in_ops SCRIPT [ARG...]

Runs an ops script as BOINC's run_in_ops does (for tasks in config.xml):
  SCRIPT[.php] a program of PROJECT/bin (size_census, delete_job_files,
               expire_batches, ...): run with the ARGs in the project directory;
  PAGE.php     an ops page of html/ops: printed as a GET request with the
               ARGs as name=value parameters (pages only show; they change
               nothing this way).
"""

# BOINC ops scripts of its volunteer web site, which boincpy does not have.
VOLUNTEER_SITE = {"update_forum_activities", "team_import", "team_export", "delete_spammers",
                  "news_convert", "create_forums", "forum_repair", "repair_forums",
                  "update_translations"}

_NAME_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")


def run_in_ops(project_dir, script, args, out=None, err=None):
    """Run ``script`` of the project with ``args``; return the exit status."""
    out = out or sys.stdout
    err = err or sys.stderr
    if script.startswith("./"):
        script = script[2:]         # BOINC's tasks say run_in_ops ./notify.php
    if not _NAME_RE.match(script) or ".." in script:
        err.write("run_in_ops: %r is not the name of an ops script\n" % script)
        return 1
    name = script[:-4] if script.endswith(".php") else script
    program = os.path.join(project_dir, "bin", name)
    if os.path.isfile(program) and os.access(program, os.X_OK) and name != "run_in_ops":
        out.flush()
        return subprocess.call([program] + list(args), cwd=project_dir)
    if name + ".php" in PAGES:
        return _show_page(project_dir, name + ".php", args, out, err)
    if name in VOLUNTEER_SITE:
        err.write("run_in_ops: BOINC's %s belongs to its volunteer web site (forums, "
                  "profiles, badges, news), which boincpy does not have; remove the task "
                  "from config.xml\n" % script)
    else:
        err.write("run_in_ops: no ops script %s: neither a program in %s nor an ops page\n"
                  % (script, os.path.join(project_dir, "bin")))
    return 1


def _show_page(project_dir, page, args, out, err):
    pairs = []
    for arg in args:
        if "=" not in arg:
            err.write("run_in_ops: page parameters are name=value, not %r\n" % arg)
            return 1
        pairs.append(tuple(arg.split("=", 1)))
    # The caller is the project's owner at a shell: the ops pages' user check
    # (Apache's basic auth) stands for "someone allowed in"; GET only.
    environ = {"REQUEST_METHOD": "GET", "QUERY_STRING": urlencode(pairs),
               "REMOTE_USER": "run_in_ops", "HTTP_HOST": "localhost"}
    req = Request(method="GET", query=parse_params(environ["QUERY_STRING"]), environ=environ)
    resp = handle(page, req, project_dir)
    out.write(resp.body if isinstance(resp.body, str) else resp.body.decode("utf-8"))
    if not resp.status.startswith("200"):
        err.write("run_in_ops: %s answered %s\n" % (page, resp.status))
        return 1
    return 0


def main(argv=None):
    """Entry point of bin/run_in_ops."""

    @click.command(add_help_option=False,
                   context_settings={"ignore_unknown_options": True,
                                     "allow_interspersed_args": False})
    @usage_help_option(USAGE)
    @project_dir_option()
    @click.argument("script")
    @click.argument("args", nargs=-1, type=click.UNPROCESSED)
    def run_in_ops_cmd(project_dir, script, args):
        try:
            project_dir = os.path.abspath(project_dir or find_project_dir())
        except BoincpyError as exc:
            sys.stderr.write("run_in_ops: %s\n" % exc.message)
            return 1
        return run_in_ops(project_dir, script, list(args))
    return click_main(run_in_ops_cmd, argv, "run_in_ops", USAGE)
