"""create_work: create jobs (workunits), like BOINC's tools/create_work.cpp.

    create_work --appname NAME [options] infile1 infile2 ...
    create_work --appname NAME --stdin [options] < jobs.txt

Options are accepted as ``-opt`` or ``--opt``.  Defaults are BOINC's; values
given as options are applied first and the input template's values override
them.  Everything is checked before anything is written: a bad job means an
error message, exit status 1 and no rows at all (with --continue_on_error bad
--stdin lines are reported and skipped).  All rows of one run are inserted in
one transaction, unassigned ones with multi-row INSERTs.
"""

import os
import re
import sys
import time
from dataclasses import dataclass, field

from boincpy.backend_lib import Creator, JobDesc, insert_jobs
from boincpy.errors import BoincpyError, DatabaseError, ToolError
from boincpy.states import AssignType
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

# options taking one value that set a DB column: name -> (column, kind)
_VALUE_OPTIONS = {
    "batch": ("batch", "int"),
    "priority": ("priority", "int"),
    "credit": ("canonical_credit", "float"),
    "rsc_fpops_est": ("rsc_fpops_est", "float"),
    "rsc_fpops_bound": ("rsc_fpops_bound", "float"),
    "rsc_memory_bound": ("rsc_memory_bound", "float"),
    "rsc_disk_bound": ("rsc_disk_bound", "float"),
    "size_class": ("size_class", "int"),
    "app_version_num": ("app_version_num", "int"),
    "delay_bound": ("delay_bound", "int"),
    "hr_class": ("hr_class", "int"),
    "min_quorum": ("min_quorum", "int"),
    "target_nresults": ("target_nresults", "int"),
    "max_error_results": ("max_error_results", "int"),
    "max_total_results": ("max_total_results", "int"),
    "max_success_results": ("max_success_results", "int"),
}

@dataclass
class RunOptions:
    appname: str = ""
    config_dir: str = ""
    use_stdin: bool = False
    show_wu_name: bool = True
    verbose: bool = False
    continue_on_error: bool = False
    debug_level: int = 3
    keywords: str = ""
    job: JobDesc = field(default_factory=JobDesc)


def _opt_name(token):
    """'--x' / '-x' -> 'x' (None for non-options)."""
    if token.startswith("--"):
        return token[2:]
    if token.startswith("-") and len(token) > 1:
        return token[1:]
    return None


def _number(text, kind, opt):
    try:
        if kind == "int":
            return int(text.strip(), 10)
        return float(text)
    except ValueError:
        raise ToolError("bad value for --%s: '%s'" % (opt, text)) from None


def _assign_id(text, opt):
    value = _number(text, "int", opt)
    if value == 0:
        raise ToolError("you must specify a nonzero database ID for assigning jobs "
                        "to users, teams, or hosts (--%s)" % opt)
    return value


def parse_args(argv):
    """Parse create_work's command line (BOINC spellings) into RunOptions."""
    ro = RunOptions()
    jd = ro.job
    i = 0
    n = len(argv)

    def value(k=1):
        nonlocal i
        if i + k >= n:
            raise ToolError("option %s needs %d value%s" % (argv[i], k, "s" if k > 1 else ""))
        vals = argv[i + 1:i + 1 + k]
        i += k
        return vals[0] if k == 1 else vals

    while i < n:
        tok = argv[i]
        name = _opt_name(tok)
        if name is None or tok == "-":
            jd.infiles.append(InputFile(name=tok))
        elif name in _VALUE_OPTIONS:
            column, kind = _VALUE_OPTIONS[name]
            jd.options[column] = _number(value(), kind, name)
        elif name == "appname":
            ro.appname = value()
        elif name == "d":
            ro.debug_level = _number(value(), "int", "d")
        elif name == "wu_name":
            ro.show_wu_name = False
            jd.name = value()
        elif name == "wu_template":
            jd.wu_template_file = value()
        elif name == "result_template":
            jd.result_template_file = value()
        elif name in ("config_dir", "project_dir"):
            ro.config_dir = value()
        elif name == "command_line":
            jd.command_line = value()
        elif name == "wu_id":
            jd.wu_id = _number(value(), "int", name)
        elif name == "broadcast":
            jd.assign_flag = jd.assign_multi = True
            jd.assign_type = AssignType.NONE
        elif name in ("broadcast_user", "broadcast_team"):
            jd.assign_flag = jd.assign_multi = True
            jd.assign_type = AssignType.USER if name.endswith("user") else AssignType.TEAM
            jd.assign_id = _assign_id(value(), name)
        elif name in ("target_host", "target_user", "target_team"):
            jd.assign_flag = True
            jd.assign_type = {"target_host": AssignType.HOST, "target_user": AssignType.USER,
                              "target_team": AssignType.TEAM}[name]
            jd.assign_id = _assign_id(value(), name)
        elif name == "help":
            raise _Help()
        elif name == "stdin":
            ro.use_stdin = True
        elif name == "remote_file":
            url, nbytes, md5 = value(3)
            jd.infiles.append(InputFile(is_remote=True, url=url,
                                        nbytes=_number(nbytes, "float", name), md5=md5))
        elif name == "verbose":
            ro.verbose = True
        elif name == "continue_on_error":
            ro.continue_on_error = True
        elif name == "keywords":
            jd.options["keywords"] = value()
        elif name == "sub_appname":
            jd.sub_appname = value()
        else:
            raise ToolError("bad argument '%s'" % tok)
        i += 1
    return ro


class _Help(BoincpyError):
    pass


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
    i = 0
    n = len(tokens)
    while i < n:
        tok = tokens[i]
        if tok[0] != "-":
            jd.infiles.append(InputFile(name=tok))
            i += 1
            continue
        name = _opt_name(tok)
        nvals = 3 if name == "remote_file" else 1
        if name not in ("command_line", "wu_name", "wu_template", "result_template",
                        "remote_file", "target_host", "target_user", "priority"):
            raise ToolError("bad stdin argument '%s'" % tok)
        if i + nvals >= n:
            raise ToolError("stdin option %s needs a value" % tok)
        v = tokens[i + 1]
        if name == "command_line":
            jd.command_line = (jd.command_line + " " + v) if jd.command_line else v
        elif name == "wu_name":
            jd.name = v
        elif name == "wu_template":
            jd.wu_template_file = v
        elif name == "result_template":
            jd.result_template_file = v
        elif name == "remote_file":
            jd.infiles.append(InputFile(is_remote=True, url=v,
                                        nbytes=_number(tokens[i + 2], "float", name),
                                        md5=tokens[i + 3]))
        elif name in ("target_host", "target_user"):
            jd.assign_flag = True
            jd.assign_type = AssignType.HOST if name == "target_host" else AssignType.USER
            jd.assign_id = _assign_id(v, name)
        else:
            jd.options["priority"] = _number(v, "int", name)
        i += nvals + 1
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
    from boincpy.config import load_config
    from boincpy.db import connect
    from boincpy.db import queries

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
            from boincpy import doorbell
            doorbell.ring(cfg, doorbell.TRANSITIONER)   # its results are made now
        if jd.options.get("batch"):
            # a batch made by create_batch and filled by hand is counted too
            from boincpy.submit.batch import start_if_new
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
