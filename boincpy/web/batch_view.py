"""A batch of remote-submitted jobs as web pages show it: its progress, its
figures, its jobs, a job's instances and their output files.

Shared by the submitters' pages (``submit.php``,
:mod:`boincpy.web.submitter`) and the ops batch page
(:mod:`boincpy.web.ops.batches`); each passes the links that suit it.  The
counts are those of :func:`boincpy.submit.batch.refresh` (BOINC's
get_batch_params); figures are in BOINC's units (GFLOP-hours from credit).
"""

import os

from boincpy.files import dir_hier_path, file_name_fault
from boincpy.jobfiles import OutputFilesError, file_infos, input_file_refs, output_file_infos
from boincpy.states import BatchState, ServerState
from boincpy.submit import batch as batches
from boincpy.web.markup import Markup, fmt, join, link
from boincpy.web.ops import names as N
from boincpy.web.page import num, table
from boincpy.web.submit_rpc import result_state_text

# Per-job status words and colours (BOINC's submit.php).
STATUS = {batches.WU_ERROR: ("failed", "#d9534f", "bad"),
          batches.WU_SUCCESS: ("completed", "#5cb85c", "ok"),
          batches.WU_IN_PROGRESS: ("in progress", "#5bc0de", "warn"),
          batches.WU_UNSENT: ("unsent", "#999999", "off")}
STATUS_BY_WORD = {word: status for status, (word, _, _) in STATUS.items()}


def gflop_hours(credit):
    """Credit as GFLOP-hours (BOINC's credit_to_gflop_hours: 200 credits a GFLOPS-day)."""
    return credit / (200.0 / 24)


def counts(progress):
    """{status: number of jobs} of a refreshed batch (every status present)."""
    out = dict.fromkeys(STATUS, 0)
    for job in progress.jobs:
        out[job.status] += 1
    return out


def percent_done(batch):
    """``42%`` (BOINC truncates)."""
    return "%d%%" % int(batch.fraction_done * 100)


def progress_bar(progress, width=400, height=14):
    """The jobs by status as one bar (inline SVG, no style attributes) and the
    counts in words: ``1 failed · 3 completed · 0 in progress · 2 unsent``."""
    n = counts(progress)
    total = max(1, len(progress.jobs))
    rects, x = [], 0.0
    for status in STATUS:
        word, colour, _ = STATUS[status]
        w = width * n[status] / total
        if w:
            rects.append(fmt('<rect x="{:.1f}" y="0" width="{:.1f}" height="{}" fill="{}">'
                             '<title>{} {}</title></rect>', x, w, height, colour, n[status], word))
        x += w
    bar = fmt('<svg class="progress" width="{}" height="{}" role="img" aria-label="progress">'
              '{}</svg>', width, height, join(rects))
    words = join((fmt("{} {}", n[s], STATUS[s][0]) for s in STATUS), Markup(" &middot; "))
    return fmt("{}{}", bar, words)


def state_word(batch):
    return batches.state_text(batch.state)


def summary_pairs(progress, app_name, owner, output_size=None):
    """Label/value pairs of a batch's page; ``owner`` is Markup or text."""
    b = progress.batch
    pairs = [("Batch name", b.name)]
    if b.description:
        pairs.append(("Description", b.description))
    pairs += [("Submitter", owner), ("Application", app_name),
              ("Submitted", N.time_text(b.create_time)), ("State", state_word(b))]
    if b.njobs:
        pairs.append(("Progress", fmt("{} done: {}", percent_done(b), progress_bar(progress))))
    if b.state == BatchState.IN_PROGRESS:
        pairs.append(("Estimated completion", N.time_text(b.est_completion_time,
                                                          "not yet known")))
    if b.completion_time:
        pairs.append(("Completed" if b.state != BatchState.ABORTED else "Aborted",
                      N.time_text(b.completion_time)))
    if b.expire_time:
        pairs.append(("Expires", N.time_text(b.expire_time)))
    pairs += [("GFLOP-hours, estimated", num(gflop_hours(b.credit_estimate))),
              ("GFLOP-hours, actual", num(gflop_hours(b.credit_canonical))),
              ("Credit, canonical / all instances", "%s / %s" % (num(b.credit_canonical),
                                                                 num(b.credit_total)))]
    if output_size is not None:
        pairs.append(("Total size of output files", N.bytes_text(output_size)))
    return pairs


def jobs_table(progress, job_link, outputs_link=None, status=None):
    """The batch's jobs: name (``job_link(job)``), status, GFLOP-hours and,
    with ``outputs_link(job)``, a link to a finished job's outputs.  ``status``:
    only jobs in that status."""
    rows, classes = [], []
    for job in progress.jobs:
        if status is not None and job.status != status:
            continue
        word, _, cls = STATUS[job.status]
        row = [job_link(job), word,
               num(gflop_hours(job.canonical_credit)) if job.status == batches.WU_SUCCESS
               else "---"]
        if outputs_link is not None:
            row.append(outputs_link(job) if job.status == batches.WU_SUCCESS else "---")
        rows.append(row)
        classes.append(cls)
    headers = ["Job", "Status", "GFLOP-hours"] + (["Outputs"] if outputs_link else [])
    return table(headers, rows, lambda i, j, c: classes[i] if j == 1 else "",
                 "no jobs" if status is None else "no %s jobs" % STATUS[status][0])


def status_filter(base_url, current):
    """Links that show the jobs of one status (or all)."""
    items = []
    for status in (batches.WU_ERROR, batches.WU_SUCCESS, batches.WU_IN_PROGRESS,
                   batches.WU_UNSENT):
        word = STATUS[status][0]
        items.append(Markup(fmt("<b>{}</b>", word)) if current == status
                     else link("%s&status=%s" % (base_url, word.replace(" ", "_")), word))
    items.append(Markup("<b>all</b>") if current is None else link(base_url, "all"))
    return fmt("<p>Show: {}</p>", join(items, Markup(" &middot; ")))


def parse_status(text):
    """The status a ``status`` parameter names (``failed``, ``in_progress``...,
    or BOINC's numbers 1-4), None for all; ValueError if it names none."""
    if not text:
        return None
    if text.isdigit() and int(text) in STATUS:
        return int(text)
    status = STATUS_BY_WORD.get(text.replace("_", " "))
    if status is None:
        raise ValueError("status %r: one of %s" % (
            text, ", ".join(w.replace(" ", "_") for w in STATUS_BY_WORD)))
    return status


# ---------------------------------------------------------------------------
# Output files

def instance_outputs(cfg, result):
    """[(file number, logical name, size or None if the file is missing)] of a
    result's output files, numbered as get_output2.php's ``file_num``."""
    phys = [fi.name for fi in file_infos(result["xml_doc_out"]) if fi.name]
    try:
        logical = [fi.logical_name for fi in output_file_infos(
            result["xml_doc_in"], cfg.upload_dir, cfg.uldl_dir_fanout)]
    except OutputFilesError:
        logical = []
    logical += phys[len(logical):]
    out = []
    for i, name in enumerate(phys):
        path = _output_path(cfg, name)
        out.append((i, logical[i], os.path.getsize(path) if path and os.path.isfile(path)
                    else None))
    return out


def _output_path(cfg, name):
    """Where an output file is, or "" if ``name`` (from xml_doc_out, which a
    volunteer's client reported) is not a file name."""
    if file_name_fault(name) is not None:
        return ""
    return dir_hier_path(cfg.upload_dir, name, cfg.uldl_dir_fanout)


def output_size(db, cfg, batch_id):
    """Bytes of the canonical output files of the batch's jobs that exist."""
    total = 0
    for r in db.query("SELECT result.xml_doc_out FROM result JOIN workunit ON "
                      "workunit.canonical_resultid = result.id WHERE workunit.batch = %s",
                      (batch_id,)):
        for fi in file_infos(r["xml_doc_out"]):
            path = _output_path(cfg, fi.name)
            if path and os.path.isfile(path):
                total += os.path.getsize(path)
    return total


def instances_table(cfg, results, file_link=None, result_link=None):
    """A job's instances: id, state, sent, received and (with ``file_link(result,
    file number, logical name)``) links to the output files of those that are over."""
    rows = []
    for r in results:
        files = "---"
        if r["server_state"] == ServerState.OVER and file_link is not None:
            items = []
            for i, name, size in instance_outputs(cfg, r):
                if size is None:
                    items.append(fmt("{} (missing)", name))
                else:
                    items.append(fmt("{} ({} bytes)", file_link(r, i, name), "{:,}".format(size)))
            files = join(items, Markup("<br>")) if items else "none"
        rows.append((result_link(r) if result_link else r["id"], result_state_text(r),
                     N.time_text(r["sent_time"]), N.time_text(r["received_time"]), files))
    return table(("Instance", "State", "Sent", "Received", "Output files"), rows,
                 empty="no instances yet")


def input_files_table(xml_doc):
    """A job's input files: open name (linked to its download URL) and size."""
    rows = [(link(f.url, f.open_name) if f.url.startswith(("http://", "https://"))
             else f.open_name, f.nbytes) for f in input_file_refs(xml_doc)]
    return table(("Input file", "Size (bytes)"), rows, empty="the job has no input files")
