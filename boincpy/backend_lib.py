"""Creating jobs: workunit rows from job descriptions (BOINC's tools/backend_lib.cpp).

Shared by ``bin/create_work`` (one job, or thousands from --stdin) and by
remote job submission (``submit_rpc_handler.php``), so a job made either way
is the same row.  :class:`Creator` turns :class:`JobDesc` s into rows
(templates parsed once, input files looked at once); :func:`insert_jobs`
checks the names and writes every row of a run in one transaction, with
multi-row INSERTs of about 1 MB as BOINC's create_work does.
"""

import os
import time
from dataclasses import dataclass, field

from boincpy.db.assignment import insert_assignment
from boincpy.db.rows import Workunit
from boincpy.db.workunit import insert_workunit, insert_workunits, overwrite_workunit
from boincpy.errors import DatabaseError, TemplateError, ToolError
from boincpy.files import check_file_name
from boincpy.states import INT_MAX, AssignType, TransitionerFlags
from boincpy.templates import (FileInfoCache, check_workunit_values, load_input_template,
                               load_output_template, parse_input_template, process_input_template,
                               workunit_values)
from boincpy.xml import xml_escape

# workunit columns written by create_work, in INSERT order
WU_COLUMNS = (
    "create_time", "appid", "name", "xml_doc", "batch", "rsc_fpops_est",
    "rsc_fpops_bound", "rsc_memory_bound", "rsc_disk_bound", "need_validate",
    "canonical_resultid", "canonical_credit", "transition_time", "delay_bound",
    "error_mask", "file_delete_state", "assimilate_state", "hr_class", "opaque",
    "min_quorum", "target_nresults", "max_error_results", "max_total_results",
    "max_success_results", "result_template_file", "priority", "rsc_bandwidth_bound",
    "fileset_id", "app_version_id", "transitioner_flags", "size_class", "keywords",
    "app_version_num",
)

ROW_DEFAULTS = {
    "create_time": 0, "appid": 0, "name": "", "xml_doc": "", "batch": 0,
    "rsc_fpops_est": 0.0, "rsc_fpops_bound": 0.0, "rsc_memory_bound": 0.0,
    "rsc_disk_bound": 0.0, "need_validate": 0, "canonical_resultid": 0,
    "canonical_credit": 0.0, "transition_time": 0, "delay_bound": 0, "error_mask": 0,
    "file_delete_state": 0, "assimilate_state": 0, "hr_class": 0, "opaque": 0.0,
    "min_quorum": 0, "target_nresults": 0, "max_error_results": 0,
    "max_total_results": 0, "max_success_results": 0, "result_template_file": "",
    "priority": 0, "rsc_bandwidth_bound": 0.0, "fileset_id": 0, "app_version_id": 0,
    "transitioner_flags": 0, "size_class": -1, "keywords": "", "app_version_num": 0,
}

MAX_QUERY_BYTES = 1000000   # BOINC flushes its multi-row INSERT at ~1 MB



@dataclass
class JobDesc:
    """One job, or the run-level defaults every --stdin line starts from."""
    name: str = ""
    wu_template_file: str = ""
    result_template_file: str = ""
    infiles: list = field(default_factory=list)
    command_line: str = ""
    options: dict = field(default_factory=dict)     # DB columns from options
    assign_flag: bool = False
    assign_multi: bool = False
    assign_id: int = 0
    assign_type: int = AssignType.NONE
    sub_appname: str = ""
    wu_id: int = 0
    line: int = 0                                   # --stdin line number (1-based)

    def copy(self):
        return JobDesc(self.name, self.wu_template_file, self.result_template_file,
                       list(self.infiles), self.command_line, dict(self.options),
                       self.assign_flag, self.assign_multi, self.assign_id,
                       self.assign_type, self.sub_appname, self.wu_id, self.line)



class Creator:
    """Turns JobDescs into workunit rows (nothing is written here)."""

    def __init__(self, cfg, app_id, verbose=False):
        self.cfg = cfg
        self.app_id = app_id
        self.verbose = verbose
        self.files = FileInfoCache(cfg)
        self._in = {}        # resolved path -> InputTemplate
        self._out = {}       # result template name -> True (validated)
        self._base = {}      # (template path, options key, flags) -> base row
        self.now = int(time.time())

    def input_template(self, name):
        """The parsed input template called ``name`` (a file, read once, or one
        given to add_input_template)."""
        # BOINC reads it relative to the working directory; fall back to the
        # project directory so --project_dir works from anywhere.
        t = self._in.get(name)
        if t is not None:
            return t
        path = name
        if not os.path.isabs(name) and not os.path.exists(name):
            path = self.cfg.project_path(name)
        t = self._in.get(path)
        if t is None:
            if not os.path.exists(path):
                raise TemplateError("input template file %s doesn't exist" % name)
            t = self._in[path] = load_input_template(path)
        self._in[name] = t
        return t

    def add_input_template(self, name, text, label=None):
        """Use ``text`` as the input template called ``name`` (a job-level
        template of remote submission, whose errors say ``label``, default
        ``name``); TemplateError if it is malformed or sets what the server
        writes, FileNameError if it names a file badly."""
        self._in[name] = parse_input_template(text, label or name, submitted=True)

    def _check_result_template(self, name):
        if name in self._out:
            return
        if len(name.encode()) > 63:
            raise TemplateError("result template filename is too long: %d bytes, max is 63"
                                % len(name.encode()))
        path = self.cfg.project_path(name)
        if not os.path.exists(path):
            raise TemplateError("result template file %s doesn't exist" % path)
        load_output_template(
            path, check_file_info_newline=not self.cfg.dont_generate_upload_certificates)
        self._out[name] = True

    def row(self, jd):
        """The workunit row (dict of WU_COLUMNS) for one job."""
        tmpl = self.input_template(jd.wu_template_file)
        self._check_result_template(jd.result_template_file)
        flags = 0
        if jd.assign_flag:
            flags = (TransitionerFlags.TRANSITION_NONE if jd.assign_multi
                     else TransitionerFlags.TRANSITION_NO_NEW_RESULTS)
        key = (id(tmpl), tuple(sorted(jd.options.items())), jd.result_template_file, flags)
        base = self._base.get(key)
        if base is None:
            values = workunit_values(tmpl, jd.options)
            check_workunit_values(values, tmpl.path)
            base = dict(ROW_DEFAULTS)
            base.update(values)
            base["appid"] = self.app_id
            base["create_time"] = self.now
            base["result_template_file"] = jd.result_template_file
            base["transitioner_flags"] = int(flags)
            base["transition_time"] = INT_MAX if flags else self.now
            self._base[key] = base
        # result and output file names are made from it (NAME_N, NAME_N_rR_K)
        check_file_name(jd.name, "workunit name")
        additional = ""
        if jd.sub_appname:
            additional = "   <sub_appname>%s</sub_appname>" % xml_escape(jd.sub_appname)
        row = base.copy()
        row["name"] = jd.name
        row["xml_doc"] = process_input_template(
            tmpl, jd.infiles, self.cfg, jd.command_line, additional, self.files)
        if len(jd.name.encode()) > 191:
            raise ToolError("bad workunit name '%s'" % jd.name)
        return row



def existing_names(db, names):
    """Which of ``names`` are names of workunits already."""
    found = set()
    names = list(names)
    for k in range(0, len(names), 1000):
        chunk = names[k:k + 1000]
        marks = ",".join(["%s"] * len(chunk))
        for r in db.query("SELECT name FROM workunit WHERE name IN (%s)" % marks, chunk):
            found.add(r["name"])
    return found


def _insert_bulk(db, rows):
    """Insert unassigned rows with multi-row INSERTs of at most ~1 MB."""
    chunk = []
    size = 0
    for row in rows:
        chunk.append(Workunit(**row))
        size += len(row["xml_doc"]) + 400
        if size > MAX_QUERY_BYTES:
            insert_workunits(db, chunk)
            chunk, size = [], 0
    if chunk:
        insert_workunits(db, chunk)


def _insert_one(db, row, jd):
    """Insert (or with --wu_id update) one workunit; add its assignment row."""
    if jd.wu_id:
        overwrite_workunit(db, jd.wu_id, {c: row[c] for c in WU_COLUMNS})
        wu_id = jd.wu_id
    else:
        wu_id = insert_workunit(db, Workunit(**row))
    if jd.assign_flag:
        insert_assignment(db, int(time.time()), jd.assign_id, int(jd.assign_type),
                          1 if jd.assign_multi else 0, wu_id, 0)
    return wu_id


def insert_jobs(db, jobs, continue_on_error=False, errors=None):
    """Write the workunits of ``jobs`` ([(JobDesc, row)]) in one transaction.

    Names must be new and distinct: a clash raises ToolError (or, with
    ``continue_on_error``, is added to ``errors`` and the job skipped).
    Returns (ids of the targeted / --wu_id jobs with their names, number of
    other jobs written, errors).  Nothing is written if the transaction fails.
    """
    errors = [] if errors is None else errors
    seen = {}
    dup = []
    for k, (j, row) in enumerate(jobs):
        if row["name"] in seen:
            dup.append(k)
            _refuse(j, "duplicate workunit name %s" % row["name"], continue_on_error, errors)
        seen[row["name"]] = k
    existing = existing_names(db, [row["name"] for j, row in jobs if not j.wu_id])
    for k, (j, row) in enumerate(jobs):
        if row["name"] in existing and not j.wu_id:
            _refuse(j, "a workunit named %s already exists" % row["name"], continue_on_error,
                    errors)
            dup.append(k)
    if dup:
        skip = set(dup)
        jobs = [x for k, x in enumerate(jobs) if k not in skip]
    bulk = [row for j, row in jobs if not j.assign_flag and not j.wu_id]
    single = [(j, row) for j, row in jobs if j.assign_flag or j.wu_id]
    try:
        with db.transaction():
            if bulk:
                _insert_bulk(db, bulk)
            ids = [(_insert_one(db, row, j), row["name"]) for j, row in single]
    except DatabaseError:
        raise
    except Exception as exc:  # driver errors not wrapped by the db layer
        raise DatabaseError(str(exc)) from None
    return ids, len(bulk), errors


def _refuse(job, msg, continue_on_error, errors):
    if job.line:
        msg = "line %d: %s" % (job.line, msg)
    if not continue_on_error:
        raise ToolError(msg)
    errors.append(msg)
