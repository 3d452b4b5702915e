"""create_work: create jobs (workunits), like BOINC's tools/create_work.cpp.

    create_work --appname NAME [options] infile1 infile2 ...
    create_work --appname NAME --stdin [options] < jobs.txt

Options are accepted as ``-opt`` or ``--opt``.  The command line and each
--stdin line are parsed by click from one set of option declarations (the
job options a line may give are the first of the command line's);
``--remote_file URL NBYTES MD5`` entries keep their place among the input
file names (cli.placed_option), as their order is the job's file order.
At most one of --target_* and --broadcast* may be given (BOINC takes the
last).  Defaults are BOINC's; values given as options are applied first and
the input template's values override them.  Everything is checked before
anything is written: a bad job means an error message, exit status 1 and no
rows at all (with --continue_on_error bad --stdin lines are reported and
skipped).  All rows of one run are inserted in one transaction, unassigned
ones with multi-row INSERTs.
"""

import functools
import os
import re
import sys
import time
from dataclasses import dataclass, field

import click

from boincpy import doorbell
from boincpy.backend_lib import Creator, JobDesc, insert_jobs
from boincpy.cli import LineParser, Placed, option, placed_option, resolve_groups
from boincpy.config import load_config
from boincpy.db import connect, queries
from boincpy.errors import BoincpyError, DatabaseError, Signal, ToolError
from boincpy.states import AssignType
from boincpy.submit.batch import start_if_new
from boincpy.templates import InputFile

USAGE = """usage: create_work [options] infile1 infile2 ...

Options:
   --appname name
   [ --app_version_num N ]
   [ --batch n ]
   [ --broadcast ]
   [ --broadcast_user ID ]
   [ --broadcast_team ID ]
   [ --command_line "X" ]
   [ --config_dir path ]   (or --project_dir path)
   [ --continue_on_error ]
   [ --credit X ]
   [ -d n ]
   [ --delay_bound x ]
   [ --hr_class n ]
   [ --keywords 'n1 n2 ...' ]
   [ --max_error_results n ]
   [ --max_success_results n ]
   [ --max_total_results n ]
   [ --min_quorum n ]
   [ --priority n ]
   [ --remote_file URL NBYTES MD5 ]
   [ --result_template filename ]  default: templates/appname_out
   [ --rsc_disk_bound x ]
   [ --rsc_fpops_est x ]
   [ --rsc_fpops_bound x ]
   [ --rsc_memory_bound x ]
   [ --size_class n ]
   [ --stdin ]
   [ --sub_appname 'foo bar' ]
   [ --target_host ID ]
   [ --target_nresults n ]
   [ --target_team ID ]
   [ --target_user ID ]
   [ --verbose ]
   [ --wu_id ID ]   ID of existing workunit record (used by remote submission)
   [ --wu_name name ]              default: generate a name based on app name
   [ --wu_template filename ]      default: templates/appname_in
"""

@dataclass
class RunOptions:
    appname: str = ""
    config_dir: str = ""
    use_stdin: bool = False
    show_wu_name: bool = True
    verbose: bool = False
    continue_on_error: bool = False
    debug_level: int = 3
    job: JobDesc = field(default_factory=JobDesc)


class _Help(Signal):
    """--help was given: run() prints the usage."""


class _Number(click.ParamType):
    """An option's number (``kind`` int or float), named as BOINC names its
    options when it is bad; ``nonzero``: a database ID assigning jobs."""

    name = "number"

    def __init__(self, kind, nonzero=False):
        self.kind = kind
        self.nonzero = nonzero

    def convert(self, value, param, ctx):
        if not isinstance(value, str):
            return value
        try:
            number = int(value.strip(), 10) if self.kind is int else float(value)
        except ValueError:
            self.fail("bad value for --%s: '%s'" % (param.name, value), param, ctx)
        if self.nonzero and number == 0:
            self.fail("you must specify a nonzero database ID for assigning jobs "
                      "to users, teams, or hosts (--%s)" % param.name, param, ctx)
        return number


_INT = _Number(int)
_FLOAT = _Number(float)
_ASSIGN_ID = _Number(int, nonzero=True)

# options that set a workunit column: BOINC's name -> (column, type)
_COLUMN_OPTIONS = {
    "batch": ("batch", _INT),
    "priority": ("priority", _INT),
    "credit": ("canonical_credit", _FLOAT),
    "rsc_fpops_est": ("rsc_fpops_est", _FLOAT),
    "rsc_fpops_bound": ("rsc_fpops_bound", _FLOAT),
    "rsc_memory_bound": ("rsc_memory_bound", _FLOAT),
    "rsc_disk_bound": ("rsc_disk_bound", _FLOAT),
    "size_class": ("size_class", _INT),
    "app_version_num": ("app_version_num", _INT),
    "delay_bound": ("delay_bound", _INT),
    "hr_class": ("hr_class", _INT),
    "min_quorum": ("min_quorum", _INT),
    "target_nresults": ("target_nresults", _INT),
    "max_error_results": ("max_error_results", _INT),
    "max_total_results": ("max_total_results", _INT),
    "max_success_results": ("max_success_results", _INT),
}

# options assigning the job: name -> (assign type, to every host of the target)
_ASSIGN_OPTIONS = {
    "target_host": (AssignType.HOST, False),
    "target_user": (AssignType.USER, False),
    "target_team": (AssignType.TEAM, False),
    "broadcast_user": (AssignType.USER, True),
    "broadcast_team": (AssignType.TEAM, True),
}


class _InputFileType(click.ParamType):
    """An input file of the job: a name given as an argument, or a
    --remote_file entry placed among them (placed_option)."""

    name = "file"

    def convert(self, value, param, ctx):
        if isinstance(value, Placed):
            url, nbytes, md5 = value.convert(ctx)
            return InputFile(is_remote=True, url=url, nbytes=nbytes, md5=md5)
        if isinstance(value, str):
            return InputFile(name=value)
        return value


def _job_params():
    """What a --stdin line may give as well as the command line (BOINC's
    JOB_DESC::parse_stdin_line): these options and input files."""
    return [
        option("command_line", metavar='"X"'),
        option("wu_name", metavar="NAME"),
        option("wu_template", metavar="FILE"),
        option("result_template", metavar="FILE"),
        placed_option("remote_file", nargs=3, type=(str, _FLOAT, str),
                      metavar="URL NBYTES MD5"),
        option("target_host", type=_ASSIGN_ID, group="assign", metavar="ID"),
        option("target_user", type=_ASSIGN_ID, group="assign", metavar="ID"),
        option("priority", type=_INT, metavar="N"),
        click.Argument(["infiles"], nargs=-1, type=_InputFileType()),
    ]


def _show_usage(ctx, param, value):
    if value and not ctx.resilient_parsing:
        raise _Help()


@functools.lru_cache(maxsize=None)
def _command():
    """create_work's command line; invoking it returns the values by name
    (input files as InputFiles) and raises _Help for --help."""
    params = _job_params()
    given = {p.name for p in params}
    params += [option(name, type=kind, metavar="N")
               for name, (_, kind) in _COLUMN_OPTIONS.items() if name not in given]
    params += [option(name, type=_ASSIGN_ID, group="assign", metavar="ID")
               for name in _ASSIGN_OPTIONS if name not in given]
    params += [
        option("appname", default="", metavar="NAME"),
        option("d", type=_INT, default=3, metavar="N"),
        option("project_dir", "--config_dir", "-config_dir", dest="config_dir",
               default="", metavar="DIR"),
        option("wu_id", type=_INT, default=0, metavar="ID"),
        option("broadcast", is_flag=True, group="assign"),
        option("stdin", is_flag=True),
        option("verbose", is_flag=True),
        option("continue_on_error", is_flag=True),
        option("keywords", metavar="'N1 N2 ...'"),
        option("sub_appname", default="", metavar="NAME"),
        option("help", is_flag=True, is_eager=True, expose_value=False,
               callback=_show_usage),
    ]
    return click.Command("create_work", params=params, add_help_option=False,
                         callback=lambda **values: resolve_groups(params, values))


@functools.lru_cache(maxsize=None)
def _line_parser():
    """The parser of --stdin lines: a click command of the job options."""
    return LineParser(click.Command("create_work --stdin", params=_job_params(),
                                    add_help_option=False))


def _main_values(args):
    command = _command()
    with command.make_context(command.name, args) as ctx:
        return command.invoke(ctx)


def _parse(parse, args, bad_argument):
    """``parse(args)``, the values of a command line parsed by click; a bad
    argument is a ToolError naming it (``bad_argument``: BOINC's words for
    an unknown option)."""
    try:
        return parse(list(args))
    except click.NoSuchOption as exc:
        # click reports "-xyz" as its first letter "-x": name the whole word
        token = next((a for a in args if a == exc.option_name), None) or next(
            (a for a in args if a.startswith(exc.option_name)), exc.option_name)
        raise ToolError("%s '%s'" % (bad_argument, token)) from None
    except click.BadParameter as exc:
        raise ToolError(exc.message) from None      # _Number's own words
    except click.UsageError as exc:
        raise ToolError(exc.format_message()) from None


def _apply(jd, values, add_command_line=False):
    """Put the job values of one command line into ``jd``; with
    ``add_command_line`` (a --stdin line) --command_line is appended to
    the run's."""
    if values["command_line"] is not None:
        if add_command_line and jd.command_line:
            jd.command_line += " " + values["command_line"]
        else:
            jd.command_line = values["command_line"]
    if values["wu_name"] is not None:
        jd.name = values["wu_name"]
    if values["wu_template"] is not None:
        jd.wu_template_file = values["wu_template"]
    if values["result_template"] is not None:
        jd.result_template_file = values["result_template"]
    jd.infiles.extend(values["infiles"])
    if values.get("broadcast"):
        jd.assign_flag = jd.assign_multi = True
        jd.assign_type = AssignType.NONE
    for name, value in values.items():
        if value is None:
            continue
        if name in _COLUMN_OPTIONS:
            jd.options[_COLUMN_OPTIONS[name][0]] = value
        elif name in _ASSIGN_OPTIONS:
            jd.assign_type, multi = _ASSIGN_OPTIONS[name]
            jd.assign_flag = True
            if multi:
                # not cleared by a --stdin line's --target_*, as in BOINC
                jd.assign_multi = True
            jd.assign_id = value


def parse_args(argv):
    """Parse create_work's command line (BOINC spellings) into RunOptions;
    ToolError for a bad argument, _Help for --help."""
    values = _parse(_main_values, argv, "bad argument")
    ro = RunOptions(appname=values["appname"], config_dir=values["config_dir"],
                    use_stdin=values["stdin"], show_wu_name=values["wu_name"] is None,
                    verbose=values["verbose"],
                    continue_on_error=values["continue_on_error"],
                    debug_level=values["d"])
    jd = ro.job
    _apply(jd, values)
    jd.wu_id = values["wu_id"]
    jd.sub_appname = values["sub_appname"]
    if values["keywords"] is not None:
        jd.options["keywords"] = values["keywords"]
    return ro


_TOKEN_RE = re.compile(r"'([^']*)'?|\"([^\"]*)\"?|(\S+)")


def split_line(line):
    """Split a --stdin line like BOINC's parse_command_line: whitespace
    separated, a token starting with ' or \" runs to the matching quote."""
    if "'" not in line and '"' not in line:
        return line.split()
    out = []
    for m in _TOKEN_RE.finditer(line):
        a, b, c = m.groups()
        out.append(a if a is not None else b if b is not None else c)
    return out


def parse_stdin_line(base, tokens, lineno):
    """A JobDesc for one --stdin line: the run-level values plus the line's
    --command_line (appended), --wu_name, --wu_template, --result_template,
    --remote_file, --target_host, --target_user, --priority and input files."""
    jd = base.copy()
    jd.name = ""
    jd.line = lineno
    _apply(jd, _parse(_line_parser().parse, tokens, "bad stdin argument"),
           add_command_line=True)
    return jd


def _read_jobs(ro, base, lines, creator, errors):
    """Rows for the --stdin lines; bad lines raise, or are collected in
    ``errors`` with --continue_on_error."""
    jobs = []
    default_name = base.name
    for j, line in enumerate(lines):
        if len(line) >= 4095:
            raise ToolError("line %d: job description too long (max 4095 bytes)" % (j + 1))
        tokens = split_line(line)
        if not tokens:
            continue  # blank line: no job (BOINC would try an empty job)
        try:
            jd = parse_stdin_line(base, tokens, j + 1)
            if not jd.name:
                jd.name = "%s_%d" % (default_name, j)
            jobs.append((jd, creator.row(jd)))
        except BoincpyError as exc:
            msg = "line %d: %s" % (j + 1, exc.message)
            if not ro.continue_on_error:
                raise type(exc)(msg) from None
            errors.append(msg)
    return jobs


def run(argv, stdin=None, stdout=None, stderr=None):
    """create_work with ``argv`` (without the program name); returns the exit status."""
    stdin = stdin or sys.stdin
    stdout = stdout or sys.stdout
    stderr = stderr or sys.stderr
    try:
        ro = parse_args(argv)
    except _Help:
        stdout.write(USAGE)
        return 0
    if not ro.appname:
        stderr.write(USAGE)
        return 1

    cfg = load_config(ro.config_dir or None)
    jd = ro.job
    if not jd.name:
        jd.name = "%s_%d_%f" % (ro.appname, os.getpid(), time.time())
    if not jd.wu_template_file:
        jd.wu_template_file = "templates/%s_in" % ro.appname
    if not jd.result_template_file:
        jd.result_template_file = "templates/%s_out" % ro.appname

    db = connect(cfg)
    try:
        app = queries.lookup_app_by_name(db, ro.appname)
        if app is None:
            raise ToolError("app not found: %s" % ro.appname)
        app_id = app["id"] if isinstance(app, dict) else app.id
        creator = Creator(cfg, app_id, ro.verbose)
        errors = []
        if ro.use_stdin:
            jobs = _read_jobs(ro, jd, stdin, creator, errors)
        else:
            jobs = [(jd, creator.row(jd))]

        try:
            ids, nbulk, errors = insert_jobs(db, jobs, ro.continue_on_error, errors)
        except DatabaseError as exc:
            raise DatabaseError("no jobs created: %s" % exc.message) from None
        if ids or nbulk:
            doorbell.ring(cfg, doorbell.TRANSITIONER)   # its results are made now
        if jd.options.get("batch"):
            # a batch made by create_batch and filled by hand is counted too
            start_if_new(db, jd.options["batch"])
        if ro.verbose:
            for wu_id, name in ids:
                stderr.write("created workunit; name %s, ID %d\n" % (name, wu_id))
            if nbulk:
                stderr.write("created %d workunits\n" % nbulk)
        for msg in errors:
            stderr.write("create_work: skipped %s\n" % msg)
        if not ro.use_stdin and ro.show_wu_name:
            stdout.write("workunit name: %s\n" % jd.name)
        return 0
    finally:
        db.close()


def main(argv=None):
    """Entry point of bin/create_work."""
    if argv is None:
        argv = sys.argv[1:]
    try:
        status = run(argv)
    except BoincpyError as exc:
        sys.stdout.flush()
        sys.stderr.write("create_work: ERROR: %s\n" % exc.message)
        status = exc.exit_code or 1
    except KeyboardInterrupt:
        status = 130
    sys.stdout.flush()
    sys.exit(status)
