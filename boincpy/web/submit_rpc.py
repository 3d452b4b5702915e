"""BOINC's remote job submission RPCs (``html/user/submit_rpc_handler.php``).

A submitter POSTs one form field, ``request``, holding an XML document whose
root names the operation (urlencoded, as BOINC's Python client sends it, or
multipart/form-data, as its C++ library and the HTCondor GAHP do).  The reply
is ``<OP>`` ... ``</OP>``, or ``<OP><error>`` ... ``</error></OP>``, with
the element names, order and number formats of BOINC's PHP handler, so BOINC's
own clients cannot tell the difference:

==========================  ==============================================
``ping``                    is the project up?
``get_templates``           an app's input and output templates
``estimate_batch``          how long a batch would take (seconds)
``create_batch``            an empty batch (state INIT) to upload files for
``submit_batch``            jobs, into a new or an INIT batch
``query_batches``           the user's batches (not retired)
``query_batch``             one batch and its jobs (by id or name)
``query_batch2``            jobs' states by batch name, changed since a time
``query_job``               a job's instances, by workunit id
``query_completed_job``     exit status, times and stderr, by job name
``abort_batch``             cancel a batch's jobs
``abort_jobs``              cancel jobs by name
``retire_batch``            retire a batch (its files are released)
``set_expire_time``         a batch's lease
==========================  ==============================================

Where BOINC's handler is unsafe this one is not (see the submitter's README
in the reference captures): no shell, no server-side file or URL access, names
checked, numbers range-checked, every value escaped, the submitter's job
limit enforced, and a request either does everything or nothing.  A manager
of an app (manage_all or user_submit_app.manage) may act on other submitters'
batches of that app; BOINC lets only the owner.
"""

import math
import os
import time

from boincpy.errors import BoincpyError, SubmitError, TemplateError, ToolError
from boincpy.log import failure_text
from boincpy.states import BatchState, Outcome, ServerState, ValidateState, WuError
from boincpy.web import accounts
from boincpy.web.http import BadRequest, Response, log_error
from boincpy.web.rpc_xml import XML_CONTENT_TYPE, XML_DECLARATION, RpcError, error_xml, php_float
from boincpy.web.rpc import RpcContext, format_number
from boincpy.xml import xml_escape

# A 10,000-job batch with job-level templates is ~15 MB of XML.
MAX_REQUEST_BYTES = 64 << 20


class SubmitContext(RpcContext):
    """An RPC's state: config, request, database, and the remote-submit log."""

    FIELDS = RpcContext.FIELDS + (("_log", None),)

    def log(self, message):
        """A line in <remote_submit_log> (BOINC's log_write), if configured."""
        name = self.cfg.remote_submit_log
        if not name:
            return
        if self._log is None:
            from boincpy.log import MessageLog
            try:
                self._log = MessageLog.open(os.path.join(self.cfg.log_dir, name), show_pid=True)
            except OSError:
                self._log = False
        if self._log:
            self._log.normal(message)

    def close(self):
        if self._log:
            self._log.stream.close()
            self._log = None
        super().close()


# ---------------------------------------------------------------------------
# Reading the request (simplexml's casts).

def parse_request_xml(text):
    """The request document (lxml element), or None if it is not well-formed
    XML (PHP's simplexml_load_string fails)."""
    from boincpy.xml import tree
    if not text or not text.strip():
        return None
    try:
        return tree.parse(text, comments=True)
    except tree.XmlError:
        return None


def child(el, path):
    """The first element at ``path`` ('a/b') below ``el``, or None."""
    if el is None:
        return None
    return el.find(path)


def text(el, path):
    """(string)$r->path: the first such element's text, '' if absent."""
    node = child(el, path)
    if node is None:
        return ""
    return "".join(node.itertext())


def to_number(raw, what):
    """(double) of a text: its leading number (0 if none), refused if not finite."""
    from boincpy.cnum import atof
    raw = raw.strip()
    if not raw:
        return 0.0
    try:
        whole = float(raw)          # "1e400", "inf", "nan": refused, not read as 0
    except ValueError:
        whole = 0.0
    value = atof(raw)
    if not (math.isfinite(value) and math.isfinite(whole)):
        raise SubmitError("bad value for %s: %s" % (what, raw))
    return value


def to_integer(raw, what):
    """(int) of a text: its number's integer part."""
    value = to_number(raw, what)
    if abs(value) > 2 ** 63:
        raise SubmitError("bad value for %s: %s" % (what, raw.strip()))
    return int(value)


def number(el, path, what=None):
    """(double)$r->path, refused if not finite; 0 if absent."""
    return to_number(text(el, path), what or path)


def integer(el, path, what=None):
    """(int)$r->path (a number's integer part); 0 if absent."""
    return to_integer(text(el, path), what or path)


def flag(el, path):
    """An element used as a switch: present and not 0 (``<allocation_priority/>``
    counts, which BOINC's PHP, reading an empty element as false, ignores)."""
    node = child(el, path)
    if node is None:
        return False
    raw = "".join(node.itertext()).strip()
    return raw == "" or raw not in ("0", "false")


def non_negative(value, what):
    """A job parameter must be finite and not negative."""
    if value < 0:
        raise SubmitError("%s must not be negative (got %s)" % (what, php_float(value)))
    return value


# ---------------------------------------------------------------------------
# Who is asking.

def authenticate(ctx, r, app=None):
    """check_remote_submit_permissions: the user of <authenticator>, who must
    have submit access to ``app`` (or, without one, file access)."""
    from boincpy.submit import privileges
    auth = text(r, "authenticator")
    if not auth:
        raise SubmitError("no authenticator")
    user = accounts.lookup_user_by_auth(ctx.db(), auth)
    if user is None:
        raise SubmitError("bad authenticator")
    if app is not None:
        if not privileges.has_submit_access(ctx.db(), user.id, app["id"]):
            raise SubmitError("no submit access")
    elif not privileges.has_file_access(ctx.db(), user.id):
        raise SubmitError("no file access")
    return user


def lookup_app(ctx, name):
    """The app called ``name``, or "app not found"."""
    row = ctx.db().query_one("SELECT * FROM app WHERE name = %s", (name,))
    if row is None:
        ctx.log("no app named %s was found" % name)
        raise SubmitError("app not found: %s" % name)
    return row


def check_control(ctx, user, batch, msg):
    """The user must own the batch or manage its app."""
    from boincpy.submit import privileges
    if not privileges.may_control_batch(ctx.db(), user.id, batch):
        ctx.log(msg)
        raise SubmitError(msg)


def named_batch(ctx, r):
    """get_batch: the batch of <batch_id> or <batch_name>."""
    from boincpy.submit import batch as batches
    batch_id = integer(r, "batch_id")
    name = text(r, "batch_name")
    if batch_id:
        b = batches.lookup(ctx.db(), batch_id=batch_id)
    elif name:
        b = batches.lookup(ctx.db(), name=name)
    else:
        raise SubmitError("batch not specified")
    if b is None:
        raise SubmitError("no such batch")
    return b


# ---------------------------------------------------------------------------
# Operations.  Each returns the text after "<OP>\n", as BOINC's handler prints it.

def ping(ctx, r):
    ctx.db()            # -183 when the web site is stopped, -138 without a database
    return "<success>1</success>\n        </ping>\n    "


def get_templates(ctx, r):
    app_name = text(r, "app_name")
    if app_name:
        app = lookup_app(ctx, app_name)
    else:
        job_name = text(r, "job_name")
        wu = ctx.db().query_one("SELECT appid FROM workunit WHERE name = %s", (job_name,))
        if wu is None:
            raise SubmitError("job not found: %s" % job_name)
        app = ctx.db().query_one("SELECT * FROM app WHERE id = %s", (wu["appid"],))
        if app is None:
            raise SubmitError("app not found: %s" % wu["appid"])
    authenticate(ctx, r, app)
    try:
        parts = []
        for suffix in ("_in", "_out"):
            with open(ctx.cfg.project_path("templates", app["name"] + suffix),
                      encoding="utf-8", errors="replace") as f:
                parts.append(f.read())
    except OSError:
        ctx.log("template file missing")
        raise SubmitError("template file missing") from None
    return ("<templates>\n%s\n%s\n</templates>\n        </get_templates>\n    "
            % (parts[0], parts[1]))


def _batch_template(ctx, app, r):
    """The batch-level input template: <batch><workunit_template_file> or
    templates/APP_in; None if there is none."""
    from boincpy.templates import load_input_template
    name = text(r, "batch/workunit_template_file")
    if name:
        _check_template_name(name)
        path = ctx.cfg.project_path("templates", name)
    else:
        path = ctx.cfg.project_path("templates", app["name"] + "_in")
    if not os.path.exists(path):
        return None
    try:
        return load_input_template(path)
    except TemplateError:
        raise SubmitError("couldn't parse input template file templates/%s"
                          % os.path.basename(path)) from None


def _check_template_name(name):
    from boincpy.submit.job_files import valid_name
    if not valid_name(name):
        raise SubmitError("bad template file name %s" % name)


def _project_flops(db):
    """estimate_batch's idea of the project's speed: 1 GFLOPS per 200 of the
    users' total recent average credit (1 GFLOPS if there is none)."""
    total = float(db.query_value("SELECT SUM(expavg_credit) FROM user") or 0.0)
    if total == 0:
        total = 200.0
    return 1e9 * total / 200


def estimate_batch(ctx, r):
    app = lookup_app(ctx, text(r, "batch/app_name"))
    authenticate(ctx, r, app)
    template = _batch_template(ctx, app, r)
    default = template.values.get("rsc_fpops_est", 0.0) if template else 0.0
    flops = 0.0
    for job in r.findall("batch/job"):
        est = non_negative(number(job, "rsc_fpops_est"), "rsc_fpops_est")
        if not est:
            est = default
        if not est:
            raise SubmitError("no rsc_fpops_est given for job")
        flops += est
    seconds = flops / _project_flops(ctx.db())
    return "<seconds>%s</seconds>\n        </estimate_batch>\n    " % php_float(seconds)


def _batch_name(ctx, r, path, user, app, now):
    from boincpy.submit.batch import make_batch_name
    name = text(r, path) or make_batch_name(ctx.db(), user.name, app["name"], now)
    if len(name.encode()) > 255:
        raise SubmitError("batch name too long (at most 255 bytes)")
    return name


def create_batch(ctx, r):
    from boincpy.submit import batch as batches
    app = lookup_app(ctx, text(r, "app_name"))
    user = authenticate(ctx, r, app)
    now = time.time()
    name = _batch_name(ctx, r, "batch_name", user, app, now)
    expire_time = non_negative(number(r, "expire_time"), "expire_time")
    b = batches.create(ctx.db(), user.id, app["id"], name, expire_time, now)
    ctx.log("created batch %d" % b.id)
    return "<batch_id>%d</batch_id>\n        </create_batch>\n    " % b.id


def _template_xml(el):
    """A job-level template element as text (asXML, with BOINC's one fix-up)."""
    from boincpy.xml.tree import to_string
    xml = to_string(el)
    return xml.replace("<file_info/>", "<file_info></file_info>")


def _leaf(el):
    if not len(el):
        return el.text or ""
    return "".join(el.itertext())


def _job_spec(j):
    """One <job>, its children read in a single pass (a batch has thousands)."""
    from boincpy.submit.stage import InputSpec, JobSpec
    job = JobSpec()
    seen = set()
    for el in j:
        tag = el.tag
        if tag in seen and tag != "input_file":
            continue                    # simplexml reads the first of each
        seen.add(tag)
        if tag == "name":
            job.name = _leaf(el)
        elif tag == "rsc_fpops_est":
            job.rsc_fpops_est = to_number(_leaf(el), tag)
        elif tag == "command_line":
            job.command_line = _leaf(el)
        elif tag in ("target_team", "target_user", "target_host", "priority"):
            setattr(job, tag, to_integer(_leaf(el), tag))
        elif tag in ("input_template", "output_template"):
            setattr(job, tag, _template_xml(el))
        elif tag == "input_file":
            values = {}
            for f in el:
                if f.tag not in values:
                    values[f.tag] = _leaf(f)
            mode = values.get("mode", "")
            if mode == "remote":
                job.files.append(InputSpec(mode, url=values.get("url", "").strip(),
                                           nbytes=to_number(values.get("nbytes", ""), "nbytes"),
                                           md5=values.get("md5", "").strip()))
            else:
                job.files.append(InputSpec(mode, source=values.get("source", "")))
    return job


def batch_spec(r, app):
    """The <batch> of a submit_batch request as a BatchSpec."""
    from boincpy.submit.stage import BatchSpec
    jobs = [_job_spec(j) for j in r.iterfind("batch/job")]
    spec = BatchSpec(app=app, jobs=jobs, batch_id=integer(r, "batch/batch_id"),
                     batch_name=text(r, "batch/batch_name"),
                     app_version_num=integer(r, "batch/app_version_num"),
                     allocation_priority=flag(r, "batch/allocation_priority"),
                     input_template_filename=text(r, "batch/input_template_filename"),
                     output_template_filename=text(r, "batch/output_template_filename"))
    if child(r, "batch/priority") is not None:
        spec.priority = integer(r, "batch/priority")
    for name in ("rsc_disk_bound", "rsc_fpops_est", "rsc_fpops_bound", "rsc_memory_bound",
                 "delay_bound"):
        spec.job_params[name] = number(r, "batch/job_params/" + name)
    return spec


def submit_batch(ctx, r):
    from boincpy.submit import stage
    app = lookup_app(ctx, text(r, "batch/app_name"))
    user = authenticate(ctx, r, app)
    batch_id = stage.submit(ctx.db(), ctx.cfg, user, batch_spec(r, app))
    ctx.log("created batch %d" % batch_id)
    return "<batch_id>%d</batch_id>\n        </submit_batch>\n    " % batch_id


def _batch_params(b, app_name, cpu_time=None, refreshed=False):
    """print_batch_params: the batch's fields.  Counts refresh() computed are
    printed as PHP prints numbers, the others as the database gives them."""
    show = php_float if refreshed else format_number
    lines = [
        "",
        "        <id>%d</id>" % b.id,
        "        <create_time>%s</create_time>" % format_number(b.create_time),
        "        <expire_time>%s</expire_time>" % format_number(b.expire_time),
        "        <est_completion_time>%s</est_completion_time>" % format_number(
            b.est_completion_time),
        "        <njobs>%s</njobs>" % format_number(b.njobs),
        "        <fraction_done>%s</fraction_done>" % show(b.fraction_done),
        "        <nerror_jobs>%s</nerror_jobs>" % format_number(b.nerror_jobs),
        "        <state>%s</state>" % format_number(b.state),
        "        <completion_time>%s</completion_time>" % format_number(b.completion_time),
        "        <credit_estimate>%s</credit_estimate>" % format_number(b.credit_estimate),
        "        <credit_canonical>%s</credit_canonical>" % show(b.credit_canonical),
        "        <name>%s</name>" % xml_escape(b.name),
        "        <app_name>%s</app_name>" % xml_escape(app_name),
    ]
    if cpu_time is not None:
        lines.append("        <total_cpu_time>%s</total_cpu_time>" % php_float(cpu_time))
    return "\n".join(lines) + "\n"


def _app_names(db):
    return {r["id"]: r["name"] for r in db.query("SELECT id, name FROM app")}


def query_batches(ctx, r):
    from boincpy.submit import batch as batches
    user = authenticate(ctx, r)
    db = ctx.db()
    get_cpu_time = integer(r, "get_cpu_time")
    apps = _app_names(db)
    now = time.time()
    out = []
    for b in batches.of_user(db, user.id):
        if b.state == BatchState.RETIRED:
            continue
        refreshed = b.state == BatchState.IN_PROGRESS
        if refreshed:
            batches.refresh(db, b, now)
        cpu = batches.total_cpu_time(db, b.id) if get_cpu_time else None
        out.append("    <batch>\n" + _batch_params(b, apps.get(b.app_id, "none"), cpu, refreshed)
                   + "   </batch>\n")
    return "".join(out) + "</query_batches>\n"


_ERROR_WORDS = ((WuError.COULDNT_SEND_RESULT, "couldnt_send_result"),
                (WuError.TOO_MANY_ERROR_RESULTS, "too_many_error_results"),
                (WuError.TOO_MANY_SUCCESS_RESULTS, "too_many_success_results"),
                (WuError.TOO_MANY_TOTAL_RESULTS, "too_many_total_results"),
                (WuError.CANCELLED, "cancelled"),
                (WuError.NO_CANONICAL_RESULT, "no_canonical_result"))


def _job_details(job, results):
    """show_job_details: error bits, exit statuses of failed instances, the
    canonical instance's CPU time, and the status word."""
    out = []
    for bit, word in _ERROR_WORDS:
        if job.error_mask & bit:
            out.append("   <error>%s</error>\n" % word)
    in_progress = 0
    for res in results:
        if res["server_state"] == ServerState.IN_PROGRESS:
            in_progress += 1
        if job.error_mask and res["outcome"] == Outcome.CLIENT_ERROR:
            out.append("            <exit_status>%d</exit_status>\n" % res["exit_status"])
        if res["id"] == job.canonical_resultid:
            out.append("            <cpu_time>%s</cpu_time>\n" % format_number(res["cpu_time"]))
    if job.error_mask:
        status = "error"
    elif job.canonical_resultid:
        status = "done"
    elif in_progress:
        status = "in_progress"
    else:
        status = "queued"
    out.append("            <status>%s</status>\n" % status)
    return "".join(out)


def query_batch(ctx, r):
    from boincpy.submit import batch as batches
    user = authenticate(ctx, r)
    db = ctx.db()
    b = named_batch(ctx, r)
    check_control(ctx, user, b, "not owner of batch")
    progress = batches.refresh(db, b)
    refreshed = b.state != BatchState.INIT
    jobs = progress.jobs if refreshed else batches.jobs_of(db, b.id)
    cpu = batches.total_cpu_time(db, b.id) if integer(r, "get_cpu_time") else None
    app = db.query_one("SELECT name FROM app WHERE id = %s", (b.app_id,))
    out = [_batch_params(b, app["name"] if app else "none", cpu, refreshed)]
    details = integer(r, "get_job_details")
    by_job = {}
    if details:
        for res in db.query(
                "SELECT result.id, result.workunitid, result.server_state, result.outcome, "
                "result.exit_status, result.cpu_time FROM result JOIN workunit ON "
                "workunit.id = result.workunitid WHERE workunit.batch = %s ORDER BY result.id",
                (b.id,)):
            by_job.setdefault(res["workunitid"], []).append(res)
    for job in jobs:
        out.append("        <job>\n        <id>%d</id>\n        <name>%s</name>\n"
                   "        <canonical_instance_id>%d</canonical_instance_id>\n"
                   % (job.id, xml_escape(job.name), job.canonical_resultid))
        if details:
            out.append(_job_details(job, by_job.get(job.id, ())))
        out.append("        </job>\n")
    out.append("</query_batch>\n")
    return "".join(out)


def query_batch2(ctx, r):
    user = authenticate(ctx, r)
    db = ctx.db()
    from boincpy.submit import batch as batches
    found = []
    for node in r.findall("batch_name"):
        name = "".join(node.itertext())
        b = batches.lookup(db, name=name)
        if b is None:
            raise SubmitError("no batch named %s" % name)
        check_control(ctx, user, b, "not owner of %s" % name)
        found.append(b)
    min_mod_time = number(r, "min_mod_time")
    out = ["<server_time>%s</server_time>\n" % php_float(time.time())]
    for b in found:
        if min_mod_time:
            wus = db.query("SELECT id, name, canonical_resultid, error_mask FROM workunit "
                           "WHERE batch = %s AND mod_time > FROM_UNIXTIME(%s) ORDER BY id",
                           (b.id, min_mod_time))
        else:
            wus = db.query("SELECT id, name, canonical_resultid, error_mask FROM workunit "
                           "WHERE batch = %s ORDER BY id", (b.id,))
        sent = {row["workunitid"] for row in db.query(
            "SELECT DISTINCT workunitid FROM result WHERE batch = %s AND sent_time > 0",
            (b.id,))} if wus else set()
        out.append("   <batch_size>%d</batch_size>\n" % len(wus))
        for wu in wus:
            if wu["canonical_resultid"]:
                status = "DONE"
            elif wu["error_mask"]:
                status = "ERROR"
            elif wu["id"] in sent:
                status = "IN_PROGRESS"
            else:
                status = "UNSENT"
            out.append("    <job>\n        <job_name>%s</job_name>\n        <status>%s</status>\n"
                       "    </job>\n" % (xml_escape(wu["name"]), status))
    out.append("</query_batch2>\n")
    return "".join(out)


def result_state_text(res):
    """The web site's description of an instance (result.inc's state_string)."""
    state, outcome = res["server_state"], res["outcome"]
    if state == ServerState.INACTIVE:
        return "Inactive"
    if state == ServerState.UNSENT:
        return "Unsent"
    if state == ServerState.IN_PROGRESS:
        return "In progress"
    if state != ServerState.OVER:
        return "Unknown"
    if outcome == Outcome.SUCCESS:
        return {ValidateState.INIT: "Completed, waiting for validation",
                ValidateState.VALID: "Completed and validated",
                ValidateState.INVALID: "Completed, marked as invalid",
                ValidateState.NO_CHECK: "Completed, can't validate",
                ValidateState.INCONCLUSIVE: "Completed, validation inconclusive",
                ValidateState.TOO_LATE: "Completed, too late to validate"}.get(
                    res["validate_state"], "Completed")
    if outcome == Outcome.COULDNT_SEND:
        return "Couldn't send"
    if outcome == Outcome.CLIENT_ERROR:
        if res["exit_status"] in (-221, 202):
            return "Cancelled by server"
        if res["exit_status"] in (-233, 200):
            return "Not started by deadline - canceled"
        return {1: "Error while downloading", 2: "Error while computing",
                3: "Error while computing", 4: "Error while uploading", 6: "Aborted",
                7: "Upload failed"}.get(res["client_state"], "Error")
    return {Outcome.NO_REPLY: "Timed out - no response", Outcome.DIDNT_NEED: "Didn't need",
            Outcome.VALIDATE_ERROR: "Validate error",
            Outcome.CLIENT_DETACHED: "Abandoned"}.get(outcome, "Unknown")


def _job_with_batch(ctx, user, wu):
    from boincpy.submit import batch as batches
    b = batches.lookup(ctx.db(), batch_id=wu["batch"]) if wu["batch"] else None
    if b is None:
        raise SubmitError("not owner")
    check_control(ctx, user, b, "not owner")
    return b


def query_job(ctx, r):
    from boincpy.jobfiles import file_infos
    from boincpy.files import dir_hier_path, file_name_fault
    user = authenticate(ctx, r)
    db = ctx.db()
    wu = db.query_one("SELECT id, batch FROM workunit WHERE id = %s", (integer(r, "job_id"),))
    if wu is None:
        raise SubmitError("no such job")
    _job_with_batch(ctx, user, wu)
    out = []
    for res in db.query("SELECT id, name, server_state, outcome, validate_state, exit_status, "
                        "client_state, xml_doc_out FROM result WHERE workunitid = %s "
                        "ORDER BY id", (wu["id"],)):
        out.append("    <instance>\n        <name>%s</name>\n        <id>%d</id>\n"
                   "        <state>%s</state>\n"
                   % (xml_escape(res["name"]), res["id"], result_state_text(res)))
        if res["server_state"] == ServerState.OVER:
            for fi in file_infos(res["xml_doc_out"]):
                if file_name_fault(fi.name) is not None:
                    continue        # "" or a name a client made up: no file of ours
                path = dir_hier_path(ctx.cfg.upload_dir, fi.name, ctx.cfg.uldl_dir_fanout)
                if os.path.isfile(path):
                    out.append("        <outfile>\n            <size>%d</size>\n"
                               "        </outfile>\n" % os.path.getsize(path))
        out.append("</instance>\n")
    out.append("</query_job>\n")
    return "".join(out)


def completed_instance(db, wu):
    """The instance whose outcome a finished job reports: the canonical one,
    else the last that succeeded, failed or failed validation (or None)."""
    if wu["canonical_resultid"]:
        return db.query_one("SELECT * FROM result WHERE id = %s", (wu["canonical_resultid"],))
    found = None
    for res in db.query("SELECT * FROM result WHERE workunitid = %s ORDER BY id", (wu["id"],)):
        if res["outcome"] in (Outcome.SUCCESS, Outcome.CLIENT_ERROR, Outcome.VALIDATE_ERROR):
            found = res
    return found


def query_completed_job(ctx, r):
    user = authenticate(ctx, r)
    db = ctx.db()
    wu = db.query_one("SELECT id, batch, error_mask, canonical_resultid FROM workunit "
                      "WHERE name = %s", (text(r, "job_name"),))
    if wu is None:
        raise SubmitError("no such job")
    _job_with_batch(ctx, user, wu)
    out = ["<completed_job>\n", "   <error_mask>%d</error_mask>\n" % wu["error_mask"]]
    res = completed_instance(db, wu)
    if wu["canonical_resultid"]:
        out.append("   <canonical_resultid>%d</canonical_resultid>\n" % wu["canonical_resultid"])
    elif res is not None:
        out.append("   <error_resultid>%d</error_resultid>\n" % res["id"])
    if res is not None:
        # htmlspecialchars inside CDATA, as BOINC: the escaping also keeps a
        # "]]>" in the text from closing the section
        out.append("   <exit_status>%d</exit_status>\n   <elapsed_time>%s</elapsed_time>\n"
                   "   <cpu_time>%s</cpu_time>\n   <stderr_out><![CDATA[\n%s   ]]></stderr_out>\n"
                   % (res["exit_status"], format_number(res["elapsed_time"]),
                      format_number(res["cpu_time"]), xml_escape(res["stderr_out"], quote=True)))
    out.append("</completed_job>\n        </query_completed_job>\n    ")
    return "".join(out)


def abort_batch(ctx, r):
    from boincpy.submit import batch as batches
    user = authenticate(ctx, r)
    b = named_batch(ctx, r)
    check_control(ctx, user, b, "not owner")
    batches.abort(ctx.db(), b)
    ctx.log("aborted batch %d" % b.id)
    return "<success>1</success>\n        </abort_batch>\n    "


def abort_jobs(ctx, r):
    from boincpy.submit import batch as batches
    user = authenticate(ctx, r)
    db = ctx.db()
    names, ids = [], []
    checked = {}
    for node in r.findall("job_name"):
        name = "".join(node.itertext())
        wu = db.query_one("SELECT id, batch FROM workunit WHERE name = %s", (name,))
        if wu is None:
            raise SubmitError("no job %s" % name)
        if not wu["batch"]:
            raise SubmitError("job %s is not part of a batch" % name)
        if wu["batch"] not in checked:
            b = batches.lookup(db, batch_id=wu["batch"])
            if b is None:
                raise SubmitError("not owner of batch")
            check_control(ctx, user, b, "not owner of batch")
            checked[wu["batch"]] = b
        names.append(name)
        ids.append(wu["id"])
    batches.abort_jobs(db, ids)
    ctx.log("aborted %d jobs" % len(ids))
    return "".join("<aborted>%s</aborted>\n" % xml_escape(n) for n in names) + \
        "<success>1</success>\n        </abort_jobs>\n    "


def retire_batch(ctx, r):
    from boincpy.submit import batch as batches
    user = authenticate(ctx, r)
    b = named_batch(ctx, r)
    check_control(ctx, user, b, "not owner of batch")
    batches.retire(ctx.db(), b, ctx.cfg.project_dir)
    ctx.log("retired batch %d" % b.id)
    return "<success>1</success>\n        </retire_batch>\n    "


def set_expire_time(ctx, r):
    from boincpy.submit import batch as batches
    user = authenticate(ctx, r)
    b = named_batch(ctx, r)
    check_control(ctx, user, b, "not owner of batch")
    batches.set_expire_time(ctx.db(), b, non_negative(number(r, "expire_time"), "expire_time"))
    return "<success>1</success></set_expire_time>\n"


OPERATIONS = {
    "abort_batch": abort_batch, "abort_jobs": abort_jobs, "create_batch": create_batch,
    "estimate_batch": estimate_batch, "get_templates": get_templates, "ping": ping,
    "query_batch": query_batch, "query_batch2": query_batch2, "query_batches": query_batches,
    "query_job": query_job, "query_completed_job": query_completed_job,
    "retire_batch": retire_batch, "set_expire_time": set_expire_time,
    "submit_batch": submit_batch,
}


# ---------------------------------------------------------------------------
# The page.

def log_request(cfg, name, tag, text_):
    """<remote_submit_request_log> (or job_file.php's <remote_submission_log>):
    each request's XML appended to a file in the log directory."""
    if not name:
        return
    try:
        with open(os.path.join(cfg.log_dir, os.path.basename(name)), "a",
                  encoding="utf-8", errors="replace") as f:
            f.write('\n<%s date="%s">\n%s\n</%s>\n'
                    % (tag, time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime()), text_, tag))
    except OSError as exc:
        log_error("%s: can't write the request log: %s" % (tag, exc))


def unparseable(req_text, extra=""):
    """The reply to a request that is not XML: a root-level <error> quoting it
    (BOINC also prints PHP's warnings first; those are left out)."""
    return Response(XML_DECLARATION + error_xml(-1, "can't parse request message: %s"
                                                % req_text) + extra, XML_CONTENT_TYPE)


def run(ctx, operations, page, req_text):
    """Parse ``req_text`` and run the operation its root names; the Response."""
    if ctx.request.body_error:
        ctx.log("bad request body: %s" % ctx.request.body_error)
        return Response(XML_DECLARATION + error_xml(-1, "can't read the request: %s"
                                                    % ctx.request.body_error), XML_CONTENT_TYPE)
    r = parse_request_xml(req_text)
    if r is None:
        ctx.log("----- RPC request: can't parse request message: %s" % req_text)
        return unparseable(req_text)
    op = r.tag if isinstance(r.tag, str) else ""
    ctx.log("----- Handling RPC; command %s" % op)
    handler = operations.get(op)
    head = XML_DECLARATION + "<%s>\n" % op
    try:
        if handler is None:
            raise SubmitError("bad command" if page == "submit_rpc_handler" else "no such action")
        body = handler(ctx, r)
        ctx.log("RPC done")
        return Response(head + body, XML_CONTENT_TYPE)
    except SubmitError as exc:
        ctx.log(exc.message)
        return Response(head + error_xml(exc.num, exc.message) + "</%s>\n" % op, XML_CONTENT_TYPE)
    except (TemplateError, ToolError) as exc:
        return Response(head + error_xml(-1, exc.message) + "</%s>\n" % op, XML_CONTENT_TYPE)
    except BadRequest as exc:
        return Response(head + error_xml(exc.num, exc.message) + "</%s>\n" % op, XML_CONTENT_TYPE)
    except BoincpyError as exc:
        log_error("%s.php: %s" % (page, exc.message))
        return Response(head + error_xml(-1, "server error: %s" % exc.message) + "</%s>\n" % op, XML_CONTENT_TYPE)
    except Exception as exc:
        log_error(failure_text(exc, "%s.php failed" % page))
        resp = Response(head + error_xml(-1, "server error: see the web server's error log")
                        + "</%s>\n" % op, XML_CONTENT_TYPE)
        resp.status = "500 Internal Server Error"
        return resp


def page_handler(operations, page, log_option):
    """The handler(cfg, request) of one remote submission page: its
    operations, its name, the config option naming its request log.  It
    takes the large bodies those pages get (multipart uploads spooled to
    the project's tmp directory)."""
    def handle(cfg, request):
        ctx = SubmitContext(cfg, request)
        try:
            req_text = request.post("request")
            log_request(cfg, getattr(cfg, log_option), page, req_text)
            return run(ctx, operations, page, req_text)
        finally:
            ctx.close()
    handle.__doc__ = "Serve one %s.php request; return its Response." % page
    handle.max_post_bytes = MAX_REQUEST_BYTES
    handle.uploads = True
    return handle


handle = page_handler(OPERATIONS, "submit_rpc_handler", "remote_submit_request_log")


def cgi_main():
    """Entry point of html/user/submit_rpc_handler.php."""
    from boincpy.web.http import run_cgi
    run_cgi(handle, "submit_rpc_handler.php")
