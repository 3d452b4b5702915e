"""server_mode: serve a project's scheduler, upload handler and web RPCs as
classic CGIs (the default) or persistently (FastCGI processes that bin/start
runs and Apache's mod_proxy_fcgi talks to, see :mod:`boincpy.fcgi_pool`).

    server_mode [--project_dir DIR]                      print the mode
    server_mode cgi [--project_dir DIR]
    server_mode persistent [--processes N] [--project_dir DIR]

It rewrites the block of PROJECT/SHORT.httpd.conf between the ``## boincpy
persistent mode`` markers (added for persistent, removed for cgi) and writes
PROJECT/fcgi/boincpy.fcgi; then reload Apache (``apache2ctl graceful``, or
``python -m boincpy.tools.httpd stop/start`` for a private one).  Requests in
progress finish in the processes that started them; the client sees the same
URLs and the same replies in both modes.  make_project's --persistent writes
the same block when it creates the project.
"""

import ast
import glob
import os
import re
import subprocess
import sys

import click

from boincpy.cli import boinc_option, click_main, project_dir_option
from boincpy.config import find_project_dir
from boincpy.errors import BoincpyError, ToolError
from boincpy.fcgi_pool import script_path, socket_path, workers
from boincpy.persistent import SCHEDULER, UPLOAD_HANDLER, WEB_PAGES

MODES = ("cgi", "persistent")
# One worker per CPU, at least two.  A worker spends most of a request on the
# CPU (the database is quick to answer), and the kernel hands each new
# connection to the worker that has waited longest, whose memory has left the
# CPU's caches since: on 2 cores, 2 workers served 10-25% more scheduler
# requests a second than 4 (bench_sched --processes).  A project whose database
# is on another machine, where requests wait longer, may want more.
DEFAULT_PROCESSES = max(2, os.cpu_count() or 1)
FCGI_DIR = "fcgi"
FCGI_SCRIPT = "boincpy.fcgi"
BEGIN = "## boincpy persistent mode: begin"
END = "## boincpy persistent mode: end"


def cgi_paths(python):
    """The import paths ``python`` gets from its ``site`` start-up (a venv's
    site-packages, an editable install's source tree) beyond those it has
    with ``-S``; None if they can't be found out.

    A CGI started as ``python -S`` with these paths added by its second line
    imports the same modules without running site at every request: site
    reads every ``.pth`` file of the install (setuptools' distutils hook,
    editable-install hooks) and Debian's sitecustomize, a few ms of CPU on
    each of the scheduler's and upload handler's requests.  The user's own
    site directory is left out, as under Apache.

    An editable install of boincpy is found either way pip makes one: a
    ``.pth`` line naming the source tree (a path site adds), or the import
    hook setuptools installs for this flat layout (no path at all: the
    directory holding the package ``python`` finds is added, after the
    others, as the hook comes after sys.path's own finders)."""
    code = ("import sys, importlib.util; paths = sys.path[1:]; "
            "spec = importlib.util.find_spec('boincpy'); "
            "print(repr((paths, list(spec.submodule_search_locations or ()) if spec else [])))")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    try:
        (full, found), (bare, _) = (ast.literal_eval(subprocess.run(
            [python] + flags + ["-c", code], capture_output=True, text=True, env=env,
            cwd="/", timeout=60, check=True).stdout) for flags in (["-s"], ["-s", "-S"]))
    except (OSError, ValueError, SyntaxError, TypeError, subprocess.SubprocessError):
        return None
    paths = [p for p in full if p not in bare]
    for location in found:
        parent = os.path.dirname(os.path.normpath(location))
        if parent not in paths and parent not in bare:
            paths.append(parent)
    return paths


def fcgi_script_path(project_dir):
    """PROJECT/fcgi/boincpy.fcgi, the program bin/start runs."""
    return script_path(project_dir)


def persistent_pids(project_dir):
    """Process ids of the persistent workers serving the project in
    ``project_dir`` (those up and accepting)."""
    return workers(project_dir)[1]


def fcgi_script_text(project_dir, processes=DEFAULT_PROCESSES, python=None, paths=None):
    """PROJECT/fcgi/boincpy.fcgi: the program bin/start runs.  Like the CGIs
    make_project installs, it runs ``python -S`` with the import paths site
    would have added (:func:`cgi_paths`)."""
    python = python or sys.executable
    paths = cgi_paths(python) if paths is None else paths
    return ("#!%s -S\n"
            "# The project's persistent scheduler, upload handler and web RPCs: %d\n"
            "# FastCGI workers that bin/start runs; written by boincpy (server_mode).\n"
            "import sys; sys.path += %r\n"
            "from boincpy.fcgi_pool import main\n"
            "main(%r, %d)\n" % (python, processes, paths or [], project_dir, processes))


def write_fcgi_script(project_dir, processes=DEFAULT_PROCESSES):
    """Write PROJECT/fcgi/boincpy.fcgi (executable)."""
    path = fcgi_script_path(project_dir)
    os.makedirs(os.path.dirname(path), mode=0o755, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(fcgi_script_text(project_dir, processes))
    os.chmod(path, 0o755)
    return path


def persistent_block(short_name, project_dir, processes):
    """The Apache directives handing the scheduler, the upload handler and
    the web RPCs of boincpy.persistent.WEB_PAGES to the project's FastCGI
    workers (boincpy.fcgi_pool) through mod_proxy_fcgi."""
    pages = "|".join(re.escape(name[:-len(".php")]) for name in sorted(WEB_PAGES))
    # mod_alias maps the URLs to the files (cgi-bin/cgi, html/user/NAME.php) as
    # for the CGIs; only the handler of those files changes.  GENERIC: the
    # CGI variables as for any FastCGI program (not PHP-FPM's variant).
    handler = """\
        SetHandler "proxy:unix:{socket}|fcgi://boincpy-{short}/"
        ProxyFCGIBackendType GENERIC""".format(socket=socket_path(project_dir), short=short_name)
    return """\
{begin}
# The scheduler, the upload handler and the account web RPCs of {short} run in
# {n} long-lived FastCGI processes that bin/start runs (bin/status -v lists
# them), reached through Apache's mod_proxy_fcgi (a2enmod proxy_fcgi), which
# passes a request body on as it arrives: an upload cut short keeps what was
# sent.  Switch back with bin/server_mode cgi.
<Directory "{project_dir}/cgi-bin">
    <FilesMatch "^({sched}|{upload})$">
{handler}
    </FilesMatch>
</Directory>
<Directory "{project_dir}/html/user">
    <FilesMatch "^({pages})\\.php$">
{handler}
    </FilesMatch>
</Directory>
<Directory "{project_dir}/{fcgi_dir}">
    Require all denied
</Directory>
{end}
""".format(begin=BEGIN, end=END, short=short_name, n=processes,
           sched=SCHEDULER, upload=UPLOAD_HANDLER, pages=pages, handler=handler,
           project_dir=project_dir, fcgi_dir=FCGI_DIR)


def conf_path(project_dir):
    """PROJECT/SHORT.httpd.conf (the one make_project wrote)."""
    found = sorted(glob.glob(os.path.join(project_dir, "*.httpd.conf")))
    if len(found) != 1:
        raise ToolError("%s: expected one SHORT.httpd.conf written by make_project, found %s"
                        % (project_dir, ", ".join(map(os.path.basename, found)) or "none"))
    return found[0]


def current_mode(text):
    """"persistent" if the configuration text has the block, else "cgi"."""
    return "persistent" if BEGIN in text else "cgi"


def without_block(text):
    """The configuration text with the persistent block removed."""
    start = text.find(BEGIN)
    if start < 0:
        return text
    end = text.find(END, start)
    if end < 0:
        raise ToolError("the configuration has %r without %r: fix it by hand" % (BEGIN, END))
    end += len(END)
    if text[end:end + 1] == "\n":
        end += 1
    return text[:start] + text[end:]


def set_mode(project_dir, mode, processes=DEFAULT_PROCESSES):
    """Rewrite PROJECT/SHORT.httpd.conf for ``mode`` ("cgi" or "persistent");
    returns the configuration file's path."""
    if mode not in MODES:
        raise ToolError("mode %r: use one of %s" % (mode, ", ".join(MODES)))
    if processes < 1:
        raise ToolError("--processes %d: at least 1" % processes)
    project_dir = os.path.abspath(project_dir)
    path = conf_path(project_dir)
    with open(path, encoding="utf-8") as f:
        text = without_block(f.read())
    if mode == "persistent":
        short = os.path.basename(path)[:-len(".httpd.conf")]
        write_fcgi_script(project_dir, processes)
        text = text.rstrip("\n") + "\n\n" + persistent_block(short, project_dir, processes)
    tmp = path + ".new"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.chmod(tmp, os.stat(path).st_mode & 0o7777)
    os.replace(tmp, path)
    return path


@click.command(help=__doc__.split("\n\n")[0] + "  MODE: cgi or persistent; omit it "
               "to print the current mode.",
               context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("mode", required=False, type=click.Choice(MODES))
@boinc_option("processes", type=int, default=DEFAULT_PROCESSES, metavar="N",
              help="persistent processes (default %d)" % DEFAULT_PROCESSES)
@project_dir_option()
def server_mode_cmd(mode, processes, project_dir):
    """Print or set the serving mode."""
    try:
        project_dir = project_dir or find_project_dir()
        if mode is None:
            with open(conf_path(project_dir), encoding="utf-8") as f:
                print(current_mode(f.read()))
            return 0
        path = set_mode(project_dir, mode, processes)
    except BoincpyError as exc:
        sys.stderr.write("server_mode: ERROR: %s\n" % exc.message)
        return exc.exit_code or 1
    print("%s: %s mode; run bin/stop and bin/start, and reload Apache to apply "
          "(apache2ctl graceful)" % (path, mode))
    return 0


def main(argv=None):
    """``bin/server_mode [cgi|persistent] [--processes N] [--project_dir DIR]``."""
    return click_main(server_mode_cmd, argv, "server_mode")


if __name__ == "__main__":
    sys.exit(main())
