"""Files on a volunteer's host, moved by messages to the host (BOINC's
sched/delete_file.cpp, get_file.cpp, put_file.cpp):

    delete_file --host_id N --file_name NAME
    get_file    --host_id N --file_name NAME [--url URL]... [--max_latency S]
                [--max_nbytes B]
    put_file    --host_id N --file_name NAME [--url URL --md5 X --nbytes B]
                [--max_latency S]

Each writes one msg_to_host row (BOINC's XML, BOINC's varieties
``delete_file`` and ``file_xfer``); the scheduler puts it in its next reply to
that host -- if config.xml has <msg_to_host/>, which these tools remind you
of.  get_file makes the host upload the file (to the project's upload
handler by default, with an upload certificate unless
<dont_generate_upload_certificates/>); put_file makes it download a file
into the project directory of the client, kept as sticky: by default a
file of the download hierarchy, whose URL, MD5 and size the tool works out.

As BOINC's tools they accept ``-opt`` and ``--opt``, and exit quietly when
the stop_daemons trigger file is present.  Unlike them they refuse (writing
nothing) a host that does not exist, a file name a client would not accept,
and a size, latency or URL that makes no sense.
"""

import os
import re
import sys
import time

import click

from boincpy import crypto
from boincpy.cli import click_main
from boincpy.config import load_config
from boincpy.db import connect
from boincpy.db.msg import insert_msg_to_host
from boincpy.errors import FileNameError, ToolError
from boincpy.files import check_file_name as check
from boincpy.files import dir_hier_path, dir_hier_url, md5_file
from boincpy.templates import add_upload_certificates

WEEK = 7 * 86400


def _opt(name, **kw):
    return click.option("--" + name, "-" + name, **kw)


def check_file_name(name):
    """Refuse a name a client would not accept or that would break the XML
    (the project's one rule, ``files.check_file_name``), as a ToolError."""
    try:
        return check(name, "bad file name")
    except FileNameError as exc:
        raise ToolError(exc.message) from None


def check_url(url):
    if not url.startswith(("http://", "https://")) or set("<>& \t\n") & set(url):
        raise ToolError("bad URL %r: http:// or https://, without spaces or <>&" % url)
    return url


def _positive(value, what):
    if not value > 0:
        raise ToolError("%s must be above 0 (got %g)" % (what, value))
    return value


class Session:
    """The project (config, database) and the host a message goes to."""

    def __init__(self, project_dir, host_id):
        self.cfg = load_config(project_dir)
        if os.path.exists(self.cfg.project_path("stop_daemons")):
            sys.stderr.write("Found stop file; exiting\n")
            raise SystemExit(0)
        self.db = connect(self.cfg)
        if host_id < 1 or not self.db.query_value("SELECT COUNT(*) FROM host WHERE id = %s",
                                                  (host_id,)):
            self.db.close()
            raise ToolError("no host with ID %d" % host_id)
        self.host_id = host_id

    def send(self, variety, xml):
        """Insert the message; warn if the scheduler won't deliver it."""
        msg_id = insert_msg_to_host(self.db, int(time.time()), self.host_id, variety, xml)
        self.db.close()
        click.echo("message %d to host %d (%s) queued" % (msg_id, self.host_id, variety))
        if not self.cfg.msg_to_host:
            click.echo("warning: config.xml has no <msg_to_host/>: the scheduler delivers "
                       "it only once that is set", err=True)
        return msg_id


def delete_file_xml(file_name):
    """BOINC's delete_file_xml()."""
    return "<delete_file_info>%s</delete_file_info>\n" % file_name


def _xfer_app():
    return ("<app>\n    <name>file_xfer</name>\n</app>\n"
            "<app_version>\n    <app_name>file_xfer</app_name>\n"
            "    <version_num>0</version_num>\n</app_version>\n")


def get_file_xml(file_name, urls, max_nbytes, report_deadline, key=None):
    """BOINC's get_file_xml(): a pseudo-job whose result uploads the file;
    with ``key`` (upload_private) the file_info gets its upload certificate."""
    xml = (_xfer_app() + "<file_info>\n    <name>%s</name>\n    <max_nbytes>%.0f</max_nbytes>\n"
           % (file_name, max_nbytes))
    xml += "".join("    <url>%s</url>\n" % u for u in urls)
    xml += ("</file_info>\n<workunit>\n    <name>upload_%s</name>\n"
            "    <app_name>file_xfer</app_name>\n</workunit>\n"
            "<result>\n    <wu_name>upload_%s</wu_name>\n    <name>upload_%s</name>\n"
            "    <file_ref>\n        <file_name>%s</file_name>\n    </file_ref>\n"
            "    <report_deadline>%f</report_deadline>\n</result>\n"
            % (file_name, file_name, file_name, file_name, report_deadline))
    return add_upload_certificates(xml, key) if key is not None else xml


def put_file_xml(file_name, urls, md5, nbytes, report_deadline):
    """BOINC's put_file_xml(): a pseudo-job that downloads a sticky file."""
    xml = _xfer_app() + "<file_info>\n    <name>%s</name>\n" % file_name
    xml += "".join("    <url>%s</url>\n" % u for u in urls)
    xml += ("    <md5_cksum>%s</md5_cksum>\n    <nbytes>%.0f</nbytes>\n    <sticky/>\n"
            "</file_info>\n<workunit>\n    <name>download_%s</name>\n"
            "    <app_name>file_xfer</app_name>\n    <file_ref>\n"
            "        <file_name>%s</file_name>\n    </file_ref>\n</workunit>\n"
            "<result>\n    <wu_name>download_%s</wu_name>\n    <name>download_%s</name>\n"
            "    <report_deadline>%f</report_deadline>\n</result>\n"
            % (md5, nbytes, file_name, file_name, file_name, file_name, report_deadline))
    return xml


_CONTEXT = {"help_option_names": ["-h", "--help"]}
_project_dir = click.option("--project_dir", default=None, metavar="DIR",
                            help="project directory (default: found as BOINC finds it)")


@click.command(context_settings=_CONTEXT)
@_opt("host_id", type=int, required=True, help="host DB ID")
@_opt("file_name", required=True, help="file name")
@_project_dir
def delete_file_cmd(host_id, file_name, project_dir):
    """Delete a file from a host (its client's project directory)."""
    check_file_name(file_name)
    Session(project_dir, host_id).send("delete_file", delete_file_xml(file_name))


@click.command(context_settings=_CONTEXT)
@_opt("host_id", type=int, required=True, help="host DB ID")
@_opt("file_name", required=True, help="name of the file")
@_opt("url", multiple=True, help="URL of the upload handler (repeatable; default: the "
                                 "project's)")
@_opt("max_latency", type=float, default=WEEK, show_default=True,
      help="seconds the host has to upload it")
@_opt("max_nbytes", type=float, default=1e9, show_default=True, help="max file size, bytes")
@_project_dir
def get_file_cmd(host_id, file_name, url, max_latency, max_nbytes, project_dir):
    """Get a file from a host: its client uploads it to the project."""
    check_file_name(file_name)
    for u in url:
        check_url(u)
    _positive(max_latency, "--max_latency")
    _positive(max_nbytes, "--max_nbytes")
    session = Session(project_dir, host_id)
    cfg = session.cfg
    urls = list(url) or [cfg.upload_url]
    key = None
    if not cfg.dont_generate_upload_certificates:
        key = crypto.read_private_key(os.path.join(cfg.key_dir, "upload_private"))
    session.send("file_xfer", get_file_xml(file_name, urls, max_nbytes,
                                           time.time() + max_latency, key))


@click.command(context_settings=_CONTEXT)
@_opt("host_id", type=int, required=True, help="host DB ID")
@_opt("file_name", required=True, help="file name")
@_opt("url", multiple=True, help="file URL (repeatable); without it, the file of the "
                                 "project's download hierarchy")
@_opt("md5", default="", help="file MD5 (needed with --url)")
@_opt("nbytes", type=float, default=-1, help="file size (needed with --url)")
@_opt("max_latency", type=float, default=WEEK, show_default=True,
      help="seconds the host has to download it")
@_project_dir
def put_file_cmd(host_id, file_name, url, md5, nbytes, max_latency, project_dir):
    """Send a file to a host: its client downloads it and keeps it."""
    check_file_name(file_name)
    for u in url:
        check_url(u)
    _positive(max_latency, "--max_latency")
    if url and (nbytes < 0 or not re.fullmatch(r"[0-9a-f]{32}", md5)):
        raise ToolError("a file given by --url needs --md5 (32 hex digits) and --nbytes")
    session = Session(project_dir, host_id)
    cfg = session.cfg
    urls = list(url)
    if not urls:
        path = dir_hier_path(cfg.download_dir, file_name, cfg.uldl_dir_fanout)
        if not os.path.isfile(path):
            session.db.close()
            raise ToolError("file not found: %s (stage it with bin/stage_file, or give "
                            "--url, --md5 and --nbytes)" % path)
        md5, nbytes = md5_file(path)
        urls = [dir_hier_url(cfg.download_url, file_name, cfg.uldl_dir_fanout)]
    session.send("file_xfer", put_file_xml(file_name, urls, md5, nbytes,
                                           time.time() + max_latency))


def delete_file_main(argv=None):
    """Entry point of bin/delete_file."""
    return click_main(delete_file_cmd, argv, "delete_file")


def get_file_main(argv=None):
    """Entry point of bin/get_file."""
    return click_main(get_file_cmd, argv, "get_file")


def put_file_main(argv=None):
    """Entry point of bin/put_file."""
    return click_main(put_file_cmd, argv, "put_file")
