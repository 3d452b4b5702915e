"""A submitted batch becomes workunits (submit_rpc_handler.php's submit_batch).

BOINC's handler writes a command line per job and pipes it through a shell
into ``bin/create_work --stdin``; here the same jobs are made in-process
with create_work's own code (:mod:`boincpy.backend_lib`), in one
transaction with the batch row, so a refused job leaves nothing behind and
nothing a submitter sends can reach a shell.

Input files, by mode:

* ``local_staged``: a file already in the download hierarchy (uploaded with
  job_file.php, or staged by the operator), named by its physical name;
* ``inline``: the content itself, stored once as ``jf_<md5>``;
* ``remote``: a URL with its size and MD5, fetched by the volunteer's client.

BOINC's ``local`` (any path on the server), ``semilocal`` (a URL the server
fetches) and ``sandbox`` modes are refused: the first two let a submitter
publish any file the web server can read, or make it fetch any URL.

Job-level input templates are parsed from the request; job-level output
templates are stored as ``templates/tmp/<md5 of the text>`` (the result
template file must outlive the request).  A submitter's template may not set
what the server writes (an input file's name, URL, checksum, size) nor send
outputs anywhere but the project's upload handler (``<allow_any_upload_url/>``
lets it), and every file name it gives must be one (``files.check_file_name``).
"""

import hashlib
import math
import os
import re
import time
from dataclasses import dataclass, field

from boincpy import doorbell
from boincpy.backend_lib import Creator, JobDesc, insert_jobs
from boincpy.errors import FileNameError, SubmitError, TemplateError, ToolError
from boincpy.states import AssignType, BatchState
from boincpy.submit import batch as batches, job_files, privileges
from boincpy.templates import InputFile, parse_output_template
from boincpy.xml import xml_escape

_JOB_NAME_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-:@+]*$")
_MD5_RE = re.compile(r"^[0-9a-f]{32}$")
MAX_JOB_NAME = 150          # result and output file names are built from it
MODES = ("local_staged", "inline", "remote")


@dataclass
class InputSpec:
    """One <input_file> of a job."""
    mode: str
    source: str = ""
    url: str = ""
    nbytes: float = 0.0
    md5: str = ""


@dataclass
class JobSpec:
    """One <job> of a batch."""
    name: str = ""
    rsc_fpops_est: float = 0.0
    command_line: str = ""
    input_template: str = None      # XML text of a job-level <input_template>
    output_template: str = None     # XML text of a job-level <output_template>
    files: list = field(default_factory=list)
    priority: int = None
    target_team: int = 0
    target_user: int = 0
    target_host: int = 0


@dataclass
class BatchSpec:
    """A submit_batch request: the app, the batch to fill or make, and the jobs."""
    app: dict
    jobs: list
    batch_id: int = 0
    batch_name: str = ""
    app_version_num: int = 0
    allocation_priority: bool = False
    priority: int = None
    job_params: dict = field(default_factory=dict)   # rsc_* and delay_bound, 0 = unset
    input_template_filename: str = ""                # under templates/
    output_template_filename: str = ""


def check_job_name(name):
    """Job names become file names (results, output files): letters, digits
    and ``_ . - : @ +``, not starting with a dot, at most 150 bytes."""
    if not _JOB_NAME_RE.match(name) or len(name.encode()) > MAX_JOB_NAME or ".." in name:
        raise SubmitError("bad job name %s: use letters, digits and _ . - : @ + "
                          "(at most %d characters)" % (name, MAX_JOB_NAME))


def _template_file(cfg, name):
    """A batch-level template file, which must be a plain name under templates/."""
    if not job_files.valid_name(name):
        raise SubmitError("bad template file name %s" % name)
    rel = "templates/" + name
    if not os.path.isfile(cfg.project_path(rel)):
        raise SubmitError("no template file %s" % rel)
    return rel


def allowed_upload_urls(cfg):
    """The URLs a submitted output template may send files to besides
    <UPLOAD_URL/>: the project's upload handler; None (any) with
    <allow_any_upload_url/>."""
    if cfg.allow_any_upload_url:
        return None
    return [cfg.upload_url] if cfg.upload_url else []


def output_template_file(cfg, text):
    """Store a job-level output template as templates/tmp/<md5>; its name."""
    try:
        parse_output_template(text, "output_template",
                              check_file_info_newline=not cfg.dont_generate_upload_certificates,
                              upload_urls=allowed_upload_urls(cfg))
    except (TemplateError, FileNameError) as exc:
        raise SubmitError(exc.message) from None
    rel = "templates/tmp/" + hashlib.md5(text.encode("utf-8")).hexdigest()
    path = cfg.project_path(rel)
    if not os.path.exists(path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = "%s.tmp_%d" % (path, os.getpid())
        try:
            with open(tmp, "w", encoding="utf-8") as f:
                f.write(text)
            os.chmod(tmp, 0o644)
            os.replace(tmp, path)
        except OSError as exc:
            raise SubmitError("can't write %s: %s" % (rel, exc.strerror)) from None
    return rel


def _input_files(db, cfg, job, index):
    """The job's InputFiles for create_work, and the job files it uses."""
    out, used = [], []
    for f in job.files:
        if f.mode == "local_staged":
            if not job_files.valid_name(f.source):
                raise SubmitError("job %d: bad file name %s" % (index, f.source))
            out.append(InputFile(name=f.source))
            used.append(f.source)
        elif f.mode == "inline":
            name = job_files.store_bytes(db, cfg, f.source.encode("utf-8"))
            out.append(InputFile(name=name))
            used.append(name)
        elif f.mode == "remote":
            if not f.url.startswith(("http://", "https://")) or any(
                    c in f.url for c in "<>&\"' \n\r\t"):
                raise SubmitError("job %d: bad URL for a remote file: %s" % (index, f.url))
            if not _MD5_RE.match(f.md5):
                raise SubmitError("job %d: bad MD5 for remote file %s" % (index, f.url))
            if not math.isfinite(f.nbytes) or f.nbytes <= 0:
                raise SubmitError("job %d: bad size for remote file %s" % (index, f.url))
            out.append(InputFile(is_remote=True, url=f.url, nbytes=f.nbytes, md5=f.md5))
        elif f.mode in ("local", "semilocal", "sandbox"):
            raise SubmitError("file mode %s is not supported by this project: upload the file "
                              "(job_file.php) and use local_staged, or use inline or remote"
                              % f.mode)
        else:
            raise SubmitError("unsupported file mode: %s" % f.mode)
    return out, used


def _job_params(spec):
    options = {}
    for name in ("rsc_disk_bound", "rsc_fpops_est", "rsc_fpops_bound", "rsc_memory_bound"):
        value = spec.job_params.get(name, 0.0)
        if value < 0 or not math.isfinite(value):
            raise SubmitError("%s must be a positive number" % name)
        if value:
            options[name] = float(value)
    delay = spec.job_params.get("delay_bound", 0.0)
    if delay < 0 or not math.isfinite(delay) or delay > 2 ** 31 - 1:
        raise SubmitError("delay_bound must be a positive number of seconds")
    if delay:
        options["delay_bound"] = int(delay)
    if spec.app_version_num:
        options["app_version_num"] = int(spec.app_version_num)
    return options


def submit(db, cfg, user, spec, now=None):
    """Create the jobs of ``spec`` for ``user`` in a new batch or in their
    batch ``spec.batch_id`` (which must be in state INIT); return the batch id.

    Everything is checked and written in one transaction: a refused job
    (SubmitError naming it) leaves no batch, job or association behind."""
    now = now or time.time()
    app = spec.app
    if not spec.jobs:
        raise SubmitError("no jobs in the batch")
    us = privileges.user_submit(db, user.id)
    if us is not None and us.max_jobs_in_progress:
        if batches.jobs_in_progress(db, user.id) + len(spec.jobs) > us.max_jobs_in_progress:
            raise SubmitError("limit on jobs in progress exceeded")
    options = _job_params(spec)
    wu_template = (_template_file(cfg, spec.input_template_filename)
                   if spec.input_template_filename else "templates/%s_in" % app["name"])
    result_template = (_template_file(cfg, spec.output_template_filename)
                       if spec.output_template_filename else "templates/%s_out" % app["name"])
    creator = Creator(cfg, app["id"])
    job_level = {}          # input template text -> its key in the creator

    with db.transaction():
        if spec.batch_id:
            batch = batches.lookup(db, batch_id=spec.batch_id)
            if batch is None:
                raise SubmitError("no batch %d" % spec.batch_id)
            if batch.user_id != user.id:
                raise SubmitError("not owner of batch")
            if batch.state != BatchState.INIT:
                raise SubmitError("batch not in init state")
        else:
            name = spec.batch_name or batches.make_batch_name(db, user.name, app["name"], now)
            if len(name.encode()) > 255:
                raise SubmitError("batch name too long (at most 255 bytes)")
            batch = batches.create(db, user.id, app["id"], name, 0.0, now)
        base = dict(options, batch=batch.id)
        jobs, used_files = [], []
        fpops_total = 0.0
        for i, job in enumerate(spec.jobs):
            jd = JobDesc(name=job.name or "%s_%d_%d" % (app["name"], batch.id, i),
                         wu_template_file=wu_template, result_template_file=result_template,
                         command_line=xml_escape(job.command_line, boinc=True),
                         options=dict(base))
            check_job_name(jd.name)
            if job.rsc_fpops_est:
                if job.rsc_fpops_est < 0 or not math.isfinite(job.rsc_fpops_est):
                    raise SubmitError("job %s: rsc_fpops_est must be positive" % jd.name)
                jd.options["rsc_fpops_est"] = job.rsc_fpops_est
            if job.priority is not None:
                jd.options["priority"] = int(job.priority)
            elif spec.priority is not None:
                jd.options["priority"] = int(spec.priority)
            for target, kind in ((job.target_team, AssignType.TEAM),
                                 (job.target_user, AssignType.USER),
                                 (job.target_host, AssignType.HOST)):
                if target:
                    jd.assign_flag, jd.assign_type, jd.assign_id = True, kind, int(target)
                    break
            else:
                if user.seti_id:
                    # BOINC: such a user's jobs run on their own hosts only
                    jd.assign_flag, jd.assign_type, jd.assign_id = True, AssignType.USER, \
                        user.id
            if job.input_template is not None:
                key = job_level.get(job.input_template)
                if key is None:
                    key = "job-level input template %d" % len(job_level)
                    try:
                        creator.add_input_template(key, job.input_template, "input_template")
                    except (TemplateError, FileNameError) as exc:
                        raise SubmitError("job %s: %s" % (jd.name, exc.message)) from None
                    job_level[job.input_template] = key
                jd.wu_template_file = key
            if job.output_template is not None:
                try:
                    jd.result_template_file = output_template_file(cfg, job.output_template)
                except SubmitError as exc:
                    raise SubmitError("job %s: %s" % (jd.name, exc.message)) from None
            jd.infiles, used = _input_files(db, cfg, job, i)
            used_files.extend(used)
            try:
                template = creator.input_template(jd.wu_template_file)
                if len(jd.infiles) != template.n_var_files:
                    raise SubmitError("wrong # of input files for job %d: need %d, got %d"
                                      % (i, template.n_var_files, len(jd.infiles)))
                row = creator.row(jd)
            except (TemplateError, ToolError, FileNameError) as exc:
                raise SubmitError("job %s: %s" % (jd.name, exc.message)) from None
            fpops_total += row["rsc_fpops_est"] * max(1, row["target_nresults"])
            jobs.append((jd, row))
        lst = let = 0.0
        if spec.allocation_priority:
            lst = max(us.logical_start_time, now) if us is not None else now
            let = privileges.adjust_user_priority(db, user.id, fpops_total,
                                                  app.get("min_avg_pfc") or 0.0, now)
            for jd, row in jobs:
                row["priority"] = -int(let)
        try:
            insert_jobs(db, jobs)
        except ToolError as exc:
            raise SubmitError(exc.message) from None
        job_files.associate(db, used_files, batch.id)
        batches.start(db, batch, len(jobs), fpops_total, lst, let)
    doorbell.ring(cfg, doorbell.TRANSITIONER)       # its results are made now
    return batch.id

