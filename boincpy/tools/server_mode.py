"""server_mode: serve a project's scheduler, upload handler and web RPCs as
classic CGIs (the default) or persistently (Apache's mod_wsgi in daemon mode,
see :mod:`boincpy.wsgi`).

    server_mode [--project_dir DIR]                      print the mode
    server_mode cgi [--project_dir DIR]
    server_mode persistent [--processes N] [--project_dir DIR]

It rewrites the block of PROJECT/SHORT.httpd.conf between the ``## boincpy
persistent mode`` markers (added for persistent, removed for cgi) and writes
PROJECT/wsgi/boincpy.wsgi; then reload Apache (``apache2ctl graceful``, or
``python -m boincpy.tools.httpd stop/start`` for a private one).  Requests in
progress finish in the processes that started them; the client sees the same
URLs and the same replies in both modes.  make_project's --persistent writes
the same block when it creates the project.
"""

import glob
import os
import re
import sys

import click

from boincpy.cli import boinc_option, click_main, project_dir_option
from boincpy.errors import BoincpyError, ToolError

MODES = ("cgi", "persistent")
DEFAULT_PROCESSES = 4
WSGI_DIR = "wsgi"
WSGI_SCRIPT = "boincpy.wsgi"
BEGIN = "## boincpy persistent mode: begin"
END = "## boincpy persistent mode: end"


def wsgi_script_text(project_dir):
    """PROJECT/wsgi/boincpy.wsgi: the application mod_wsgi loads."""
    return ("# The project's persistent scheduler, upload handler and web RPCs\n"
            "# (mod_wsgi daemon mode), written by boincpy; see boincpy/wsgi.py.\n"
            "# Touch this file to make Apache replace the processes.\n"
            "from boincpy.wsgi import make_application\n\n"
            "application = make_application(%r)\n"
            "handle_request = application      # the name WSGIHandlerScript calls\n"
            % project_dir)


def persistent_block(short_name, project_dir, processes, python_home=None):
    """The Apache directives routing the scheduler, the upload handler and the
    web RPCs of boincpy.wsgi.WEB_PAGES to one mod_wsgi daemon process group."""
    from boincpy.wsgi import SCHEDULER, UPLOAD_HANDLER, WEB_PAGES
    python_home = python_home or sys.prefix
    group = "boincpy_" + re.sub(r"[^A-Za-z0-9_]", "_", short_name)
    script = os.path.join(project_dir, WSGI_DIR, WSGI_SCRIPT)
    pages = "|".join(re.escape(name[:-len(".php")]) for name in sorted(WEB_PAGES))
    # mod_alias maps the URLs to the files (cgi-bin/cgi, html/user/NAME.php) as
    # for the CGIs; only the handler of those files changes
    return """\
{begin}
# The scheduler, the upload handler and the account web RPCs run in {n}
# long-lived processes (Apache's mod_wsgi, daemon mode; a2enmod wsgi), one
# request at a time each.  Switch back with bin/server_mode cgi.
WSGIDaemonProcess {group} processes={n} threads=1 python-home="{home}" display-name=%{{GROUP}} lang=C.UTF-8 locale=C.UTF-8 request-timeout=300 graceful-timeout=15 shutdown-timeout=10
WSGIHandlerScript {handler} "{script}" process-group={group} application-group=%{{GLOBAL}}
<Directory "{project_dir}/cgi-bin">
    WSGIChunkedRequest On
    <FilesMatch "^({sched}|{upload})$">
        SetHandler {handler}
    </FilesMatch>
</Directory>
<Directory "{project_dir}/html/user">
    <FilesMatch "^({pages})\\.php$">
        SetHandler {handler}
    </FilesMatch>
</Directory>
<Directory "{project_dir}/{wsgi_dir}">
    Require all denied
</Directory>
{end}
""".format(begin=BEGIN, end=END, n=processes, group=group, home=python_home,
           handler=group.replace("_", "-"), sched=SCHEDULER, upload=UPLOAD_HANDLER,
           script=script, pages=pages, project_dir=project_dir, wsgi_dir=WSGI_DIR)


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


def write_wsgi_script(project_dir):
    """Write PROJECT/wsgi/boincpy.wsgi (readable by the web server)."""
    directory = os.path.join(project_dir, WSGI_DIR)
    os.makedirs(directory, mode=0o755, exist_ok=True)
    path = os.path.join(directory, WSGI_SCRIPT)
    with open(path, "w", encoding="utf-8") as f:
        f.write(wsgi_script_text(project_dir))
    os.chmod(path, 0o644)
    return path


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
        write_wsgi_script(project_dir)
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
        from boincpy.config import find_project_dir
        project_dir = project_dir or find_project_dir()
        if mode is None:
            with open(conf_path(project_dir), encoding="utf-8") as f:
                print(current_mode(f.read()))
            return 0
        path = set_mode(project_dir, mode, processes)
    except BoincpyError as exc:
        sys.stderr.write("server_mode: ERROR: %s\n" % exc.message)
        return exc.exit_code or 1
    print("%s: %s mode; reload Apache to apply (apache2ctl graceful)" % (path, mode))
    return 0


def main(argv=None):
    """``bin/server_mode [cgi|persistent] [--processes N] [--project_dir DIR]``."""
    return click_main(server_mode_cmd, argv, "server_mode")


if __name__ == "__main__":
    sys.exit(main())
