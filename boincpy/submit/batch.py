"""A batch's life: created, in progress, complete, aborted, retired.

The batch row holds counts that BOINC's PHP recomputes from the batch's
workunits whenever someone looks (``get_batch_params`` in submit_util.inc):
jobs, failed jobs, fraction done, canonical credit, and the move to COMPLETE
when every job has succeeded or failed.  :func:`refresh` does the same (so
batches made by ``create_work --batch`` or by the web RPCs are counted one
way), and also keeps the two figures BOINC leaves at 0: the credit estimate
(the batch's FLOPs in cobblestones, set at submission) and the completion
estimate (the batch's pace so far, extrapolated).

Aborting and retiring cancel workunits the way the ops pages cancel them
(:func:`boincpy.db.workunit.cancel_workunits_by_id`): unsent results become
"didn't need", the workunit gets the CANCELLED error bit and goes to the
transitioner, and hosts holding its results are told to abort them on their
next request (``send_result_abort``).
"""

import os
import shutil
import time
from dataclasses import dataclass, field

from boincpy.db.batch import (clear_batch_njobs, delete_retired_batch, insert_batch,
                              mark_batch_aborted, mark_batch_retired, record_batch_counts,
                              record_batch_start, set_batch_expire_time, start_batch_if_init)
from boincpy.db.submit import delete_batch_file_assocs
from boincpy.db.workunit import cancel_workunits_by_id
from boincpy.db.rows import Batch
from boincpy.errors import SubmitError
from boincpy.states import BatchState, ServerState

# Credit for one FLOP (lib/util.h COBBLESTONE_SCALE: 200 per GFLOPS-day).
COBBLESTONE_SCALE = 200.0 / 86400e9

# Per-job status of get_batch_params (not stored).
WU_UNSENT, WU_IN_PROGRESS, WU_SUCCESS, WU_ERROR = 1, 2, 3, 4

_STATE_TEXT = {BatchState.INIT: "new", BatchState.IN_PROGRESS: "in progress",
               BatchState.COMPLETE: "completed", BatchState.ABORTED: "aborted",
               BatchState.RETIRED: "retired"}

# A batch whose state is one of these still needs its input files.
LIVE_STATES = (int(BatchState.INIT), int(BatchState.IN_PROGRESS), int(BatchState.COMPLETE))


def state_text(state):
    """The state as BOINC's pages name it (batch_state_string)."""
    return _STATE_TEXT.get(state, "unknown state %s" % state)


def make_batch_name(db, user_name, app_name, now=None):
    """BOINC's default batch name, user:app:RFC 2822 date -- with " #2",
    " #3"... when that name is taken (two batches in one second)."""
    import email.utils
    base = "%s:%s:%s" % (user_name, app_name, email.utils.formatdate(now, localtime=True))
    name, n = base, 1
    while db.query_value("SELECT id FROM batch WHERE name = %s LIMIT 1", (name,)) is not None:
        n += 1
        name = "%s #%d" % (base, n)
    return name


def lookup(db, batch_id=None, name=None):
    """The batch with this id, or (without an id) the first with this name; None if absent."""
    if batch_id:
        row = db.query_one("SELECT * FROM batch WHERE id = %s", (int(batch_id),))
    elif name:
        row = db.query_one("SELECT * FROM batch WHERE name = %s ORDER BY id LIMIT 1", (name,))
    else:
        return None
    return Batch.from_row(row)


def of_user(db, user_id):
    """The user's batches, oldest first."""
    return [Batch.from_row(r) for r in db.query(
        "SELECT * FROM batch WHERE user_id = %s ORDER BY id", (user_id,))]


def create(db, user_id, app_id, name, expire_time=0.0, now=None):
    """Insert a batch in state INIT (no jobs yet); return it.

    Batch names are looked up by name (query_batch2, the GAHP), so a name
    already in use is refused, which BOINC does not do."""
    now = int(now or time.time())
    if db.query_value("SELECT id FROM batch WHERE name = %s LIMIT 1", (name,)) is not None:
        raise SubmitError("batch name %s is already in use" % name)
    batch = Batch(user_id=user_id, create_time=now, name=name, app_id=app_id,
                  expire_time=float(expire_time), state=int(BatchState.INIT))
    # ``create_work --batch N`` may have used numbers no batch row has: a new
    # batch must not take one of them, or it would adopt those jobs (BOINC's
    # auto-increment id does)
    stray = int(db.query_value("SELECT COALESCE(MAX(batch), 0) FROM workunit") or 0)
    top = int(db.query_value("SELECT COALESCE(MAX(id), 0) FROM batch") or 0)
    batch_id = stray + 1 if stray > top else None
    batch.id = insert_batch(db, batch_id, user_id, now, batch.state, name, app_id,
                            batch.expire_time)
    return batch


def start(db, batch, njobs, fpops_total, logical_start_time=0.0, logical_end_time=0.0):
    """A batch's jobs exist: state IN_PROGRESS, its job count and credit estimate.

    Called after the jobs are created (as BOINC does), so nothing can see an
    empty batch in progress and mark it complete."""
    batch.njobs = njobs
    batch.credit_estimate = fpops_total * COBBLESTONE_SCALE
    batch.logical_start_time = logical_start_time
    batch.logical_end_time = logical_end_time
    batch.state = int(BatchState.IN_PROGRESS)
    record_batch_start(db, batch)


def start_if_new(db, batch_id):
    """``create_work --batch N``: a batch still in INIT whose jobs were just
    made by hand goes IN_PROGRESS, so it is counted like a submitted one."""
    start_batch_if_init(db, batch_id)


@dataclass
class JobState:
    """One workunit of a batch as the submitter sees it."""
    id: int
    name: str
    canonical_resultid: int
    error_mask: int
    rsc_fpops_est: float
    canonical_credit: float
    status: int = WU_UNSENT


@dataclass
class Progress:
    """A batch with its counts brought up to date, and its jobs."""
    batch: Batch
    jobs: list = field(default_factory=list)
    njobs_success: int = 0
    njobs_in_prog: int = 0


def jobs_of(db, batch_id):
    """The batch's workunits (the fields the counts need), in id order."""
    return [JobState(r["id"], r["name"], r["canonical_resultid"], r["error_mask"],
                     r["rsc_fpops_est"], r["canonical_credit"])
            for r in db.query(
                "SELECT id, name, canonical_resultid, error_mask, rsc_fpops_est, "
                "canonical_credit FROM workunit WHERE batch = %s ORDER BY id", (batch_id,))]


def refresh(db, batch, now=None, jobs=None):
    """Bring a batch's counts up to date from its workunits (get_batch_params).

    Sets each job's status, the batch's njobs, nerror_jobs, fraction_done,
    credit_canonical, credit_total, est_completion_time, and COMPLETE (with
    completion_time) when every job of a batch in progress is done; writes
    them; returns a :class:`Progress`.  A batch in INIT has no jobs yet and is
    left alone."""
    now = now or time.time()
    progress = Progress(batch)
    if batch.state == BatchState.INIT:
        return progress
    if jobs is None:
        jobs = jobs_of(db, batch.id)
    progress.jobs = jobs
    if not jobs:
        if batch.njobs:
            batch.njobs = 0
            clear_batch_njobs(db, batch.id)
        return progress
    sent = set()
    credit_total = 0.0
    for r in db.query("SELECT workunitid, server_state, granted_credit FROM result "
                      "WHERE batch = %s", (batch.id,)):
        if r["server_state"] in (ServerState.IN_PROGRESS, ServerState.OVER):
            sent.add(r["workunitid"])
        credit_total += r["granted_credit"] or 0.0
    completed = True
    nerror = nsuccess = nprog = 0
    credit = 0.0
    for job in jobs:
        if job.canonical_resultid:
            job.status = WU_SUCCESS
            nsuccess += 1
            credit += job.canonical_credit
        elif job.error_mask:
            job.status = WU_ERROR
            nerror += 1
        else:
            completed = False
            if job.id in sent:
                job.status = WU_IN_PROGRESS
                nprog += 1
            else:
                job.status = WU_UNSENT
    batch.njobs = len(jobs)
    batch.nerror_jobs = nerror
    batch.credit_canonical = credit
    batch.credit_total = credit_total
    batch.fraction_done = (nsuccess + nerror) / batch.njobs
    if completed and batch.state == BatchState.IN_PROGRESS:
        batch.state = int(BatchState.COMPLETE)
        batch.completion_time = int(now)
    batch.est_completion_time = _completion_estimate(batch, now)
    record_batch_counts(db, batch)
    progress.njobs_success = nsuccess
    progress.njobs_in_prog = nprog
    return progress


def _completion_estimate(batch, now):
    """When the batch will be done at its pace so far (0 while nothing is done)."""
    if batch.state != BatchState.IN_PROGRESS:
        return 0.0 if not batch.completion_time else float(batch.completion_time)
    if batch.fraction_done <= 0:
        return 0.0
    elapsed = max(0.0, now - batch.create_time)
    return float(int(batch.create_time + elapsed / batch.fraction_done))


def refresh_moved(db, batch_ids, log=None, now=None):
    """refresh() the batches in progress among ``batch_ids`` (batches whose
    jobs a daemon just moved); log each that became COMPLETE.  BOINC updates
    a batch only when a submitter looks at it; the back end doing it means a
    batch is complete as soon as its last job is, whoever asks."""
    for batch_id in sorted(set(batch_ids)):
        b = lookup(db, batch_id=batch_id)
        if b is None or b.state != BatchState.IN_PROGRESS:
            continue
        refresh(db, b, now)
        if b.state == BatchState.COMPLETE and log is not None:
            log.normal("[BATCH#%d %s] all %d jobs done (%d failed): batch complete"
                       % (b.id, b.name, b.njobs, b.nerror_jobs))


def total_cpu_time(db, batch_id):
    """Sum of the CPU time of every result of the batch's jobs."""
    value = db.query_value(
        "SELECT SUM(result.cpu_time) FROM workunit JOIN result ON workunit.id = "
        "result.workunitid WHERE workunit.batch = %s", (batch_id,))
    return float(value or 0.0)


def jobs_in_progress(db, user_id):
    """How many of the user's jobs are neither done nor failed (n_jobs_in_progress)."""
    return int(db.query_value(
        "SELECT COUNT(*) FROM workunit JOIN batch ON workunit.batch = batch.id "
        "WHERE batch.user_id = %s AND batch.state = %s AND workunit.error_mask = 0 "
        "AND workunit.canonical_resultid = 0", (user_id, int(BatchState.IN_PROGRESS))) or 0)


def abort_jobs(db, wu_ids, now=None):
    """Cancel these workunits (abort_workunit); return how many changed."""
    nwu, _ = cancel_workunits_by_id(db, wu_ids, int(now or time.time()))
    return nwu


def abort(db, batch, now=None):
    """Abort a batch (abort_batch): cancel all its jobs; state ABORTED."""
    now = int(now or time.time())
    ids = [r["id"] for r in db.query("SELECT id FROM workunit WHERE batch = %s", (batch.id,))]
    with db.transaction():
        cancel_workunits_by_id(db, ids, now)
        mark_batch_aborted(db, batch.id, now)
    batch.state = int(BatchState.ABORTED)
    batch.completion_time = now


def retire(db, batch, project_dir=None, now=None):
    """Retire a batch (retire_batch): counts brought up to date, state RETIRED,
    its unsent jobs cancelled.  The rows stay until db_purge (with --batch)
    and the output files stay readable; its input files are released (the
    job file deleter may delete those no live batch holds).  Batch-collect
    outputs (PROJECT/results/ID/) are removed as BOINC does."""
    now = now or time.time()
    progress = refresh(db, batch, now)
    unsent = [j.id for j in progress.jobs if j.status == WU_UNSENT]
    with db.transaction():
        mark_batch_retired(db, batch.id)
        if unsent:
            cancel_workunits_by_id(db, unsent, int(now), unsent_only=True)
    batch.state = int(BatchState.RETIRED)
    if project_dir:
        shutil.rmtree(os.path.join(project_dir, "results", str(int(batch.id))),
                      ignore_errors=True)


def set_expire_time(db, batch, expire_time):
    """The batch's lease: after it, expire_batches aborts and retires it."""
    batch.expire_time = float(expire_time)
    set_batch_expire_time(db, batch.id, batch.expire_time)


def expire(db, project_dir=None, now=None):
    """Abort and retire every batch whose expire time has passed (html/ops/expire_batches);
    return the batches expired."""
    now = now or time.time()
    expired = [Batch.from_row(r) for r in db.query(
        "SELECT * FROM batch WHERE expire_time > 0 AND expire_time < %s AND state <> %s",
        (now, int(BatchState.RETIRED)))]
    for b in expired:
        if b.state != BatchState.ABORTED:
            abort(db, b, now)
        retire(db, b, project_dir, now)
    return expired


def delete_empty_retired(db):
    """Delete retired batches with no workunit left (html/ops/delete_batches.php)
    and their file associations; return their ids."""
    ids = [r["id"] for r in db.query(
        "SELECT batch.id FROM batch WHERE batch.state = %s AND NOT EXISTS "
        "(SELECT 1 FROM workunit WHERE workunit.batch = batch.id)", (int(BatchState.RETIRED),))]
    for batch_id in ids:
        with db.transaction():
            delete_batch_file_assocs(db, batch_id)
            delete_retired_batch(db, batch_id)
    return ids
