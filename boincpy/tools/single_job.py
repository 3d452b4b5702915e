"""Single jobs: one program run once on a volunteer's host, submitted from a
shell on the server (BOINC's html/ops/single_job_setup.php and
tools/boinc_submit).

    single_job_setup WRAPPER_TREE      once: the app single_job_PLATFORM and
                                       its app version, the wrapper alone
    boinc_submit [options] PROGRAM [ARGS]   from the directory holding the
                                       program and its input files

The layout is BOINC's, so its ``single_job_assimilator`` (here
bin/single_job_assimilator) finds what it expects:

- the app ``single_job_PLATFORM`` has one app version: the wrapper, nothing
  else; the program travels with the workunit, executable and sticky, as
  ``PROGRAM_PLATFORM_MD5[:8]`` in download/ (a wrapper that runs only files
  of the app version refuses it: build boincpy's with CHECK_EXECUTABLES=no);
- the wrapper's job description is download/sj_WUID.xml, the inputs are
  download/NAME_WUID, the templates templates/sj_wu_template_WUID and
  templates/sj_result_template_WUID;
- upload/.../sj_WUID holds ``<job_dir>DIR</job_dir>``: the assimilator copies
  the outputs there under their own names, with job_summary_WUID.

Unlike BOINC's scripts these check everything before writing anything, undo
what they wrote if creating the job fails, and escape the names they put
into XML.
"""

import os
import platform as _platform
import shutil
import sys
import time
import uuid

import click

from boincpy import backend_lib, doorbell
from boincpy.backend_lib import Creator, JobDesc
from boincpy.cli import boinc_option, click_main, project_dir_option
from boincpy.config import load_config
from boincpy.db import connect, queries
from boincpy.db.rows import App, Platform, Workunit
from boincpy.db.workunit import cancel_workunits_by_id, delete_workunit, insert_workunit
from boincpy.errors import ToolError
from boincpy.files import dir_hier_path, md5_file
from boincpy.states import INT_MAX
from boincpy.xml import xml_escape

APP_PREFIX = "single_job_"

# BOINC's boinc_submit: "Job parameters.  Edit as needed"; here options.
DEFAULT_FPOPS_EST = 3600e9          # 1 GFLOPS-hour
DEFAULT_FPOPS_BOUND = 86400e9       # 1 GFLOPS-day
DEFAULT_MEMORY_BOUND = 5e8
DEFAULT_DISK_BOUND = 1e9
DEFAULT_DELAY_BOUND = 7 * 86400

POLL_SECONDS = 10


def server_platform():
    """The platform BOINC's scripts assume: this host's ``arch`` on Linux."""
    return _platform.machine() + "-pc-linux-gnu"


def app_name(platform):
    """The single-job app of ``platform``."""
    return APP_PREFIX + platform


# ---------------------------------------------------------------------------
# single_job_setup

def _version_dir(cfg, name, i, platform):
    return cfg.project_path("apps", name, "1.%d" % i, platform)


def _platform_description(platform):
    cpu, _, system = platform.partition("-pc-")
    return "%s on %s" % ("Linux" if system == "linux-gnu" else system or platform, cpu)


def setup(cfg, db, wrapper_tree, platform, out):
    """Make the single-job app of ``platform`` and, unless the newest one
    already holds this wrapper, a new app version directory with it
    (apps/single_job_PLATFORM/1.N/PLATFORM/single_job_PLATFORM_1.N).
    ``wrapper_tree``: BOINC's samples tree, holding wrapper/wrapper (a
    directory holding ``wrapper`` itself is taken too).  Says, on ``out``,
    what the operator still has to do, as BOINC's script does."""
    wrapper = os.path.join(wrapper_tree, "wrapper", "wrapper")
    if not os.path.isfile(wrapper) and os.path.isfile(os.path.join(wrapper_tree, "wrapper")):
        wrapper = os.path.join(wrapper_tree, "wrapper")
    if not os.path.isfile(wrapper):
        raise ToolError("%s doesn't exist: build the wrapper first "
                        "(make -C examples/wrapper CHECK_EXECUTABLES=no)" % wrapper)
    wrapper_md5 = md5_file(wrapper)[0]
    if queries.lookup_platform_by_name(db, platform) is None:
        # update_versions needs it; BOINC's script leaves that to project.xml
        queries.insert_row(db, Platform(create_time=int(time.time()), name=platform,
                                        user_friendly_name=_platform_description(platform)))
        out.write("Added platform %s\n" % platform)
    name = app_name(platform)
    app = queries.lookup_app_by_name(db, name)
    if app is None:
        app_id = queries.insert_row(db, App(create_time=int(time.time()), name=name,
                                            user_friendly_name="Jobs for %s" % platform))
        out.write("Added app %s\n" % name)
    else:
        app_id = app.id
    latest = -1
    while os.path.isdir(_version_dir(cfg, name, latest + 1, platform)):
        latest += 1
    current = False
    if latest >= 0:
        installed = os.path.join(_version_dir(cfg, name, latest, platform),
                                 "%s_1.%d" % (name, latest))
        current = os.path.isfile(installed) and md5_file(installed)[0] == wrapper_md5
    if current:
        out.write("Current wrapper already installed.\n")
        version = latest
        registered = db.query_one(
            "SELECT id FROM app_version WHERE appid = %s AND version_num = %s",
            (app_id, 100 + version))
    else:
        version = latest + 1
        directory = _version_dir(cfg, name, version, platform)
        os.makedirs(directory)
        target = os.path.join(directory, "%s_1.%d" % (name, version))
        shutil.copyfile(wrapper, target)
        os.chmod(target, 0o750)
        out.write("Installed the wrapper as %s\n" % os.path.relpath(target, cfg.project_dir))
        registered = None
    if not registered:
        out.write("- type 'bin/update_versions' to make it the app version 1.%d\n" % version)
    config = open(cfg.project_path("config.xml"), encoding="utf-8", errors="replace").read()
    if "single_job_assimilator" not in config:
        out.write(_DAEMONS_HINT.format(app=name, platform=platform))
    return app_id


_DAEMONS_HINT = """- Add the following to the <daemons> section of config.xml:
    <daemon>
      <cmd>single_job_assimilator --app {app}</cmd>
      <output>single_job_assimilator_{platform}.out</output>
      <pid>single_job_assimilator_{platform}.pid</pid>
    </daemon>
    <daemon>
      <cmd>sample_trivial_validator --app {app}</cmd>
      <output>sample_trivial_validator_{platform}.out</output>
      <pid>sample_trivial_validator_{platform}.pid</pid>
    </daemon>
  then restart the project: bin/stop; bin/start
"""


# ---------------------------------------------------------------------------
# boinc_submit

def _job_xml(program_phys, stdin_file, stdout_file, args):
    lines = ["<job_desc>", "    <task>",
             "        <application>%s</application>" % xml_escape(program_phys)]
    if stdin_file:
        lines.append("        <stdin_filename>%s</stdin_filename>" % xml_escape(stdin_file))
    if stdout_file:
        lines.append("        <stdout_filename>%s</stdout_filename>" % xml_escape(stdout_file))
    if args:
        lines.append("        <command_line>%s</command_line>" % xml_escape(" ".join(args)))
    lines += ["    </task>", "</job_desc>", ""]
    return "\n".join(lines)


def _wu_template(infiles, stdin_file, program_phys, bounds):
    n = len(infiles) + 1 + (1 if stdin_file else 0)       # + job.xml
    parts = ["<file_info>\n    <number>%d</number>\n</file_info>\n" % i for i in range(n)]
    # the program: executable, and sticky so a host keeps it for the next job
    parts.append("<file_info>\n    <number>%d</number>\n    <executable/>\n    <sticky/>\n"
                 "</file_info>\n" % n)
    parts.append("<workunit>\n")
    refs = [(f, True) for f in infiles]
    if stdin_file:
        refs.append((stdin_file, False))
    refs += [("job.xml", False), (program_phys, False)]
    for i, (open_name, copy) in enumerate(refs):
        parts.append("    <file_ref>\n        <file_number>%d</file_number>\n"
                     "        <open_name>%s</open_name>\n%s    </file_ref>\n"
                     % (i, xml_escape(open_name), "        <copy_file/>\n" if copy else ""))
    for tag in ("rsc_fpops_est", "rsc_fpops_bound", "rsc_memory_bound", "rsc_disk_bound",
                "delay_bound"):
        parts.append("    <%s>%s</%s>\n" % (tag, bounds[tag], tag))
    parts.append("</workunit>\n")
    return "".join(parts)


def _result_template(outfiles, stdout_file):
    names = list(outfiles) + ([stdout_file] if stdout_file else [])
    parts = ["<file_info>\n    <name><OUTFILE_%d/></name>\n    <generated_locally/>\n"
             "    <upload_when_present/>\n    <max_nbytes>1e12</max_nbytes>\n"
             "    <url><UPLOAD_URL/></url>\n</file_info>\n" % i for i in range(len(names))]
    parts.append("<result>\n")
    for i, name in enumerate(names):
        # the program opens its output files by name: real files (copy_file);
        # its stdout is written by the wrapper through the link
        copy = "        <copy_file/>\n" if i < len(outfiles) else ""
        parts.append("    <file_ref>\n        <file_name><OUTFILE_%d/></file_name>\n"
                     "        <open_name>%s</open_name>\n        <optional/>\n%s"
                     "    </file_ref>\n" % (i, xml_escape(name), copy))
    parts.append("</result>\n")
    return "".join(parts)


def _check_name(name, what):
    if not name or os.path.basename(name) != name or name in (".", ".."):
        raise ToolError("%s '%s': give a file name in the job directory, not a path"
                        % (what, name))
    return name


def submit(cfg, db, job_dir, program, args=(), infiles=(), outfiles=(), stdin_file=None,
           stdout_file=None, platform=None, bounds=None, out=None):
    """Create the single job running ``program`` (a file in ``job_dir``)
    with ``args``; return its workunit id.  Everything is checked first;
    if making the job fails, what was written is removed."""
    platform = platform or server_platform()
    bounds = dict(dict(rsc_fpops_est=DEFAULT_FPOPS_EST, rsc_fpops_bound=DEFAULT_FPOPS_BOUND,
                       rsc_memory_bound=DEFAULT_MEMORY_BOUND, rsc_disk_bound=DEFAULT_DISK_BOUND,
                       delay_bound=DEFAULT_DELAY_BOUND), **(bounds or {}))
    _check_name(program, "program")
    for name in list(infiles) + list(outfiles) + [n for n in (stdin_file, stdout_file) if n]:
        _check_name(name, "file")
    for name in list(infiles) + ([stdin_file] if stdin_file else []) + [program]:
        if not os.path.isfile(os.path.join(job_dir, name)):
            raise ToolError("Missing input file %s" % name)
    app = queries.lookup_app_by_name(db, app_name(platform))
    if app is None:
        raise ToolError("This project isn't configured to run single jobs for %s "
                        "(run single_job_setup)" % platform)
    program_phys = "%s_%s_%s" % (program, platform, md5_file(os.path.join(job_dir, program))[0][:8])

    # The workunit's id names its files, so the row comes first (as BOINC's
    # script does), never transitioned until create_work's update fills it.
    wuid = insert_workunit(db, Workunit(name=uuid.uuid4().hex, appid=app.id,
                                        transition_time=INT_MAX, create_time=int(time.time())))
    fanout = cfg.uldl_dir_fanout
    written = []

    def write(path, text):
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        written.append(path)

    def copy(src, dst):
        shutil.copyfile(src, dst)
        written.append(dst)

    try:
        job_file = "sj_%d.xml" % wuid
        write(dir_hier_path(cfg.download_dir, job_file, fanout, create=True),
              _job_xml(program_phys, stdin_file, stdout_file, args))
        write(dir_hier_path(cfg.upload_dir, "sj_%d" % wuid, fanout, create=True),
              "<job_dir>%s</job_dir>\n" % os.path.abspath(job_dir))
        wu_template = os.path.join("templates", "sj_wu_template_%d" % wuid)
        result_template = os.path.join("templates", "sj_result_template_%d" % wuid)
        write(cfg.project_path(wu_template),
              _wu_template(infiles, stdin_file, program_phys, bounds))
        write(cfg.project_path(result_template), _result_template(outfiles, stdout_file))
        # from here on the stdin file is an input file like the others
        inputs = list(infiles) + ([stdin_file] if stdin_file else [])
        phys = []
        for name in inputs:
            phys.append("%s_%d" % (name, wuid))
            copy(os.path.join(job_dir, name),
                 dir_hier_path(cfg.download_dir, phys[-1], fanout, create=True))
        program_path = dir_hier_path(cfg.download_dir, program_phys, fanout, create=True)
        if not os.path.exists(program_path):
            copy(os.path.join(job_dir, program), program_path)
        jd = JobDesc(name="sj_%d" % wuid, wu_template_file=wu_template,
                     result_template_file=result_template,
                     infiles=phys + [job_file, program_phys],
                     options={"min_quorum": 1, "target_nresults": 1}, wu_id=wuid)
        creator = Creator(cfg, app.id)
        backend_lib.insert_jobs(db, [(jd, creator.row(jd))])
    except BaseException:
        delete_workunit(db, wuid)
        for path in written:
            try:
                os.unlink(path)
            except OSError:
                pass
        raise
    doorbell.ring(cfg, doorbell.TRANSITIONER)
    if out is not None:
        out.write("Job %d submitted (workunit sj_%d)\n" % (wuid, wuid))
    return wuid


def single_job_of(db, wuid):
    """The workunit ``wuid`` if it is a single job (ToolError otherwise)."""
    wu = queries.lookup(db, Workunit, "id = %s", (wuid,))
    if wu is None:
        raise ToolError("No such job: %s" % wuid)
    app = queries.lookup(db, App, "id = %s", (wu.appid,))
    if app is None or not app.name.startswith(APP_PREFIX):
        raise ToolError("Job %d is not a boinc_submit job" % wu.id)
    return wu


def abort(db, wuid, out):
    """Cancel single job ``wuid`` as BOINC's boinc_submit --abort does (its
    unsent instance not needed, the workunit cancelled; a host running it is
    told to abort it)."""
    wu = single_job_of(db, wuid)
    if wu.error_mask:
        out.write("Job %d has already been aborted.\n" % wu.id)
        return
    cancel_workunits_by_id(db, [wu.id], int(time.time()))
    out.write("Job %d has been aborted.\n" % wu.id)


_ASSIMILATE = {0: "in progress", 1: "being assimilated", 2: "completed"}
_INSTANCE = {2: "unsent", 4: "in progress on host %d", 5: "completed on host %d"}


def show_jobs(db, out):
    """List the single jobs of every platform, as boinc_submit --jobs."""
    for app in db.query("SELECT id, name FROM app WHERE name LIKE %s ORDER BY id",
                        (APP_PREFIX + "%",)):
        out.write("Jobs for %s:\n" % app["name"][len(APP_PREFIX):])
        for wu in db.query("SELECT id, assimilate_state FROM workunit WHERE appid = %s "
                           "ORDER BY id", (app["id"],)):
            out.write("Job %d: %s\n" % (wu["id"], _ASSIMILATE.get(wu["assimilate_state"], "?")))


def job_status(db, wuid):
    """(finished, lines): the state of single job ``wuid`` as boinc_submit
    --wait prints it."""
    wu = db.query_one("SELECT id, assimilate_state, error_mask FROM workunit WHERE id = %s",
                      (wuid,))
    if wu is None:
        return True, ["Job %d is not in the database" % wuid]
    now = time.strftime("%B %-d, %Y, %-I:%M %p")
    state = wu["assimilate_state"]
    if state == 2:
        return True, ["%s: job %d completed" % (now, wuid)]
    lines = ["%s: job %d is %s" % (now, wuid, _ASSIMILATE.get(state, "in progress"))]
    if state == 0:
        results = db.query("SELECT server_state, hostid FROM result WHERE workunitid = %s "
                           "ORDER BY id", (wuid,))
        for i, r in enumerate(results):
            text = _INSTANCE.get(r["server_state"])
            if text:
                lines.append("  Instance %d: %s" % (i, text % r["hostid"] if "%" in text
                                                    else text))
        if not results:
            lines.append("  (no instances yet)")
    return False, lines


def wait(db, wuid, out, poll=POLL_SECONDS):
    """Print the job's state every ``poll`` seconds until it is completed."""
    while True:
        finished, lines = job_status(db, wuid)
        out.write("\n".join(lines) + "\n")
        out.flush()
        if finished:
            return
        time.sleep(poll)


# ---------------------------------------------------------------------------
# The commands

def _connect(project_dir):
    cfg = load_config(project_dir or os.environ.get("BOINC_PROJECT_DIR") or None)
    return cfg, connect(cfg)


_POSITIVE = click.FloatRange(min=0, min_open=True)


@click.command(context_settings={"help_option_names": ["-h", "--help"]},
               help="Set the project up for single jobs (boinc_submit): the app "
                    "single_job_PLATFORM and an app version holding WRAPPER_TREE/wrapper/"
                    "wrapper.  Run in the project directory.")
@click.argument("wrapper_tree", type=click.Path(file_okay=False))
@boinc_option("platform", default=None, metavar="P",
              help="the hosts' platform (default: this host's)")
@project_dir_option()
def setup_cmd(wrapper_tree, platform, project_dir):
    cfg, db = _connect(project_dir)
    try:
        setup(cfg, db, wrapper_tree, platform or server_platform(), sys.stdout)
    finally:
        db.close()


@click.command(context_settings={"help_option_names": ["-h", "--help"],
                                 "allow_interspersed_args": False},
               help="Run PROGRAM (a file in the current directory) with ARGS as one job "
                    "on a volunteer's host, then wait for it; the outputs come back into "
                    "this directory.  BOINC_PROJECT_DIR (or --project_dir) names the project.")
@click.argument("program", required=False)
@click.argument("args", nargs=-1)
@boinc_option("infile", multiple=True, metavar="F", help="an input file of the program")
@boinc_option("outfile", multiple=True, metavar="F", help="an output file of the program")
@boinc_option("stdin", dest="stdin_file", default=None, metavar="F", help="the program's stdin")
@boinc_option("stdout", dest="stdout_file", default=None, metavar="F",
              help="where the program's stdout goes")
@boinc_option("platform", default=None, metavar="P",
              help="the platform to run on (default: the server's)")
@boinc_option("wait", dest="wait_id", type=int, default=None, metavar="JOB",
              help="wait for an existing job")
@boinc_option("abort", dest="abort_id", type=int, default=None, metavar="JOB",
              help="abort an existing job")
@boinc_option("jobs", dest="list_jobs", is_flag=True, help="list the jobs")
@boinc_option("no_wait", is_flag=True, help="submit and return without waiting")
@boinc_option("verbose", is_flag=True, help="say what is done")
@boinc_option("rsc_fpops_est", type=_POSITIVE, default=DEFAULT_FPOPS_EST, show_default=True)
@boinc_option("rsc_fpops_bound", type=_POSITIVE, default=DEFAULT_FPOPS_BOUND, show_default=True)
@boinc_option("rsc_memory_bound", type=_POSITIVE, default=DEFAULT_MEMORY_BOUND, show_default=True)
@boinc_option("rsc_disk_bound", type=_POSITIVE, default=DEFAULT_DISK_BOUND, show_default=True)
@boinc_option("delay_bound", type=click.IntRange(min=1), default=DEFAULT_DELAY_BOUND, show_default=True)
@project_dir_option()
def submit_cmd(program, args, infile, outfile, stdin_file, stdout_file, platform, wait_id,
               abort_id, list_jobs, no_wait, verbose, rsc_fpops_est, rsc_fpops_bound,
               rsc_memory_bound, rsc_disk_bound, delay_bound, project_dir):
    if not (program or wait_id or abort_id or list_jobs):
        raise click.UsageError("give a PROGRAM, or --wait JOB, --abort JOB or --jobs")
    if not (project_dir or os.environ.get("BOINC_PROJECT_DIR")):
        raise click.UsageError("set BOINC_PROJECT_DIR to the project's directory "
                               "(or give --project_dir)")
    out = sys.stdout
    cfg, db = _connect(project_dir)
    try:
        if list_jobs:
            return show_jobs(db, out)
        if abort_id is not None:
            return abort(db, abort_id, out)
        if wait_id is not None:
            single_job_of(db, wait_id)
            return wait(db, wait_id, out)
        bounds = dict(rsc_fpops_est=rsc_fpops_est, rsc_fpops_bound=rsc_fpops_bound,
                      rsc_memory_bound=rsc_memory_bound, rsc_disk_bound=rsc_disk_bound,
                      delay_bound=delay_bound)
        wuid = submit(cfg, db, os.getcwd(), program, args, infile, outfile, stdin_file,
                      stdout_file, platform, bounds, out)
        if not no_wait:
            wait(db, wuid, out)
    finally:
        db.close()


def setup_main(argv=None):
    """Entry point of bin/single_job_setup."""
    return click_main(setup_cmd, argv, "single_job_setup")


def submit_main(argv=None):
    """Entry point of bin/boinc_submit."""
    return click_main(submit_cmd, argv, "boinc_submit")
