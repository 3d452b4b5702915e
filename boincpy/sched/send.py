"""Which jobs, with which app version, go to the host making this request.

The handler calls, in this order and only when the request asks for work
(and min_sendwork_interval / dont_send_work / request_delay allow it)::

    if resend_lost_results(ctx, job_array):   # when <other_results> was sent
        ...                                   # BOINC sends no new jobs then
    else:
        send_work(ctx, job_array)

Both append :class:`~boincpy.sched.context.SentJob` objects to
``ctx.reply.jobs`` and user messages to ``ctx.reply.messages``; when nothing
is sent, ``ctx.reply.no_work_reasons`` names why and one log line per host
says the same (``[HOST#n] No tasks sent: ...``).

This module is the order of sending (daemons.md §2; sched_send.cpp,
sched_resend.cpp): targeted and broadcast jobs (boincpy.sched.assign),
non-CPU-intensive apps (:func:`send_nci`, sched_nci.cpp: one job of each
such app a host has none of, before the scan), the score-based scan of the
feeder's array (boincpy.shmem) or ``<sched_old/>``'s multi-pass scan
(:func:`send_work_old`, sched_array.cpp) in its place, or locality
scheduling (boincpy.sched.locality), the explanatory messages when nothing
is sent, and resending lost results.  It is the only
module of job choice that imports the others (see boincpy.sched.choose for
the map): the per-request state and the commit are in
boincpy.sched.choose, app version choice in boincpy.sched.version,
feasibility in boincpy.sched.check, homogeneous redundancy in
boincpy.sched.hr, the score and its terms in boincpy.sched.score.

Bounded scan: C++ scores every slot of the array on every request, so its
cost grows with ``shmem_work_items``.  Here a request starts at a random
slot and stops scoring once it holds enough feasible candidates for what
the host asked (twice the jobs it can use, plus a few), sends the best of
those by score, and goes on scanning only if it still needs work.  While the
array holds any job with priority > 0 (retries, urgent work) the whole array
is scored, as in C++, so high-priority jobs still go first.

Extension points (one function each): plan classes
(:func:`boincpy.sched.version.plan_class_usage`), homogeneous redundancy
(:func:`boincpy.sched.hr.hr_feasible`), targeted jobs
(:func:`boincpy.sched.assign.send_targeted_jobs`), score terms (one small
function each, called from :func:`boincpy.sched.score.job_score`), per-app
in-progress limits from config_aux.xml
(:func:`boincpy.sched.limits.app_job_limits`), and the project-specific
feasibility hook (:func:`boincpy.sched.check.infeasible_custom`).
"""

import math

from boincpy import rand
from boincpy.db.result import expire_result
from boincpy.proc_types import NPROC_TYPES, PROC_TYPE_NAMES
from boincpy.sched import plan_class
from boincpy.sched.assign import send_broadcast_jobs, send_targeted_jobs
from boincpy.sched.check import (
    CHECK_NO_ANY, CHECK_NO_HOST, CHECK_OK, infeasible_fast, slow_check, slow_check_and_read,
    slow_check_read)
from boincpy.sched.choose import (
    LOCALITY_SCHED_LITE, SERVER_STATE_IN_PROGRESS, app_label, claim_statements,
    host_sticky_files, matched_rows, setup_work, write_host_app_versions,
    add_result_to_reply, daily_quota_exceeded, estimate_duration,
    work_needed)
from boincpy.sched.context import PRIORITY_LOW, PRIORITY_NOTICE
from boincpy.sched.hr import host_hr_fields, all_apps_use_hr, hr_unknown_platform
from boincpy.sched.prefs import app_not_selected
from boincpy.sched.score import job_score, nfiles_on_host
from boincpy.sched.version import get_plan_host, get_app_version

RESEND_FRAC = 0.5

# bounded scan: candidates wanted = 2 x jobs the host can use + this
SCAN_SLACK = 4
# arrays this small are always scanned whole
FULL_SCAN_SLOTS = 64

# Messages for reasons the C++ scheduler leaves at "No tasks sent".
EXTRA_MESSAGES = {
    "one_result_per_user_per_wu": "The tasks available are replicas of jobs you already "
                                  "have; the project sends one replica per volunteer",
    "one_result_per_host_per_wu": "The tasks available are replicas of jobs this computer "
                                  "already has",
    "taken": "The tasks available were sent to other computers meanwhile; try again later",
    "beta": "Only tasks of test (beta) applications are available, and your preferences "
            "don't accept them",
    "reliable": "The tasks available need a computer with a record of reliable results",
    "plan_class": "No version of the application suits this computer's hardware",
    "homogeneous_redundancy": "The tasks available can't be sent to this computer yet",
    "user_filter": "The tasks available are reserved for other volunteers",
}


# ---------------------------------------------------------------------------
# the score-based scan

def _candidate_target(work, rt, first):
    """How many feasible candidates a bounded scan collects before sending."""
    left = work.max_jobs_per_rpc - work.njobs_sent
    if first is None:
        return SCAN_SLACK
    _, _, _, _, app, bav, wu = first
    est = estimate_duration(work, wu, bav)
    use = bav.usage.avg_ncpus if rt == 0 else bav.usage.gpu_usage or 1.0
    if work.rsc_spec_request:
        jobs = max(math.ceil(work.req_secs[rt] / max(est * use, 1e-9)),
                   math.ceil(work.req_instances[rt] / use) if use else 0, 1)
    else:
        jobs = max(math.ceil(work.seconds_to_fill / max(est, 1e-9)), 1)
    return 2 * min(left, jobs) + SCAN_SLACK


def _scan_type(work, rt):
    """send_work_score_type(): candidates for processor type ``rt``, best first."""
    ja = work.ja
    saved = []
    for pt in range(NPROC_TYPES):
        if pt != rt:
            saved.append((pt, work.req_secs[pt], work.req_instances[pt]))
            work.req_secs[pt] = work.req_instances[pt] = 0.0
    n = ja.nslots
    full = n <= FULL_SCAN_SLOTS or ja.n_high_priority > 0
    start = rand.randrange(n)
    pos = 0
    seq = 0
    stop = False
    debug = work.cfg.debug_send_job
    if work.cfg.debug_send_scan:
        work.log.normal("[send_scan] scanning for %s jobs from slot %d (%s)"
                        % (PROC_TYPE_NAMES[rt], start, "whole array" if full else "bounded"))
    while pos < n and not stop and work_needed(work) and work.need_proc_type(rt):
        jobs = []
        target = n if full else None
        while pos < n:
            if target is not None and len(jobs) >= target:
                break
            i = (start + pos) % n
            pos += 1
            state, prio, _, _, resultid, appid = ja.slot_head(i)
            if not work.may_take(i, state):
                continue
            app = ja.lookup_app(appid)
            if app is None or app["non_cpu_intensive"]:
                continue
            slot = ja.read_slot(i)
            wu = slot.wu
            bav = get_app_version(work, wu, app, check_req=True)
            if bav is None:
                if debug:
                    work.log.normal("[send_job] [RESULT#%d] no app version available"
                                    % resultid)
                continue
            score = job_score(work, slot, app, bav)
            if score is None:
                continue
            # fast checks now, so a bounded scan counts only jobs this host can take
            if infeasible_fast(work, wu, slot.res_server_state, slot.res_priority,
                               slot.res_report_deadline, app, bav):
                continue
            seq += 1
            jobs.append((-score, seq, i, resultid, app, bav, wu))
            if target is None:
                target = _candidate_target(work, rt, jobs[0])
        if not jobs:
            break
        jobs.sort(key=lambda j: (j[0], j[1]))
        for _, _, i, resultid, app, bav, wu in jobs:
            if not work_needed(work) or not work.need_proc_type(rt):
                stop = True
                break
            if work.limits.exceeded(app, bav.proc_type):
                if work.cfg.debug_quota:
                    work.log.normal("[quota] limit for app/proctype exceeded")
                continue
            if daily_quota_exceeded(work, bav.gavid, bav.usage):
                stop = True
                break
            if _try_send(work, i, resultid, app, bav) is None and debug:
                work.log.normal("[send_job] slot %d not sent" % i)
    for pt, secs, inst in saved:
        work.req_secs[pt] += secs
        work.req_instances[pt] += inst
    work.best.clear()


def _try_send(work, i, resultid, app, bav):
    """Reserve slot ``i``, run the slow checks, and commit the job (or give
    the slot back).  Returns the SentJob or None."""
    ja = work.ja
    pid = work.pid

    def check(slot):
        return infeasible_fast(work, slot.wu, slot.res_server_state, slot.res_priority,
                               slot.res_report_deadline, app, bav)

    slot, why = ja.claim(i, resultid, pid, check)
    if slot is None:
        if why == "taken":
            work.taken += 1
            work.reason("taken", "the job chosen was taken by another request")
        return None
    claim = claim_statements(work, resultid, slot.wu, app, bav)
    claimed = None
    if claim is None:
        status, row = slow_check_and_read(work, slot, app, bav)
    else:
        # The claim is sent with the check's read (one round trip instead of
        # two) and taken back if the check says no -- rarely: the feeder's
        # copy was just checked (infeasible_fast).
        db = work.db
        rows, n = db.read_then_write(slow_check_read(work, slot), claim)
        status, row = slow_check(work, slot, rows[0] if rows else None, app, bav)
        if status == CHECK_OK and row is not None:
            claimed = matched_rows(db, n)
        else:
            db.undo_writes()
    if status == CHECK_NO_HOST:
        ja.release(i, pid, empty=False)
        return None
    if status == CHECK_NO_ANY or row is None:
        ja.release(i, pid, empty=True)
        return None
    row.pop("n_mine", None)
    row.pop("wu_error_mask", None)
    wu = slot.wu
    if "xml_doc" not in wu:
        wu["xml_doc"] = ja.read_xml_doc(i)
    sent = add_result_to_reply(work, row, wu, app, bav, claimed=claimed)
    db = work.db
    if sent is None or not db.in_transaction:
        ja.release(i, pid, empty=True)
    else:
        # The slot stays reserved until the claim is committed: emptied
        # sooner, the feeder could put the job back from a read that still
        # sees it UNSENT, and another request would wait for this one's
        # transaction to claim it (two such requests deadlocked).  Undone,
        # job choice's restore() makes it PRESENT again.
        work.pending_slots.add(i)
        db.after_commit(lambda: ja.release(i, pid, empty=True), committed_only=True)
    return sent


# ---------------------------------------------------------------------------
# non-CPU-intensive apps (sched_nci.cpp)
#
# An NCI app (app.non_cpu_intensive, or every app with config.xml's
# <non_cpu_intensive/>) runs one job per host alongside the CPU work: a host
# that has no job of it gets one whatever it asked for.  The main scans skip
# NCI apps.

def _apps_with_jobs(work, appids):
    """The apps among ``appids`` of which the host has a job, going by the
    results named in the request's <other_results>."""
    from boincpy.db.bulk import chunks, placeholders
    names = [o.name for o in work.req.other_results]
    found, have = set(), set()
    for part in chunks(names):
        for row in work.db.query("SELECT name, appid FROM result WHERE name IN (%s)"
                                 % placeholders(len(part)), part):
            found.add(row["name"])
            if row["appid"] in appids:
                have.add(row["appid"])
    for name in names:
        if name not in found:
            work.log.normal("No such result: %s" % name)
    return have


def _send_job_for_app(work, app):
    """Send one job of NCI app ``app`` from the array; True if one was sent.
    Its jobs are alike: if the first one can't go to this host, none can."""
    ja, cfg = work.ja, work.cfg
    for i in range(ja.nslots):
        state, _, _, _, resultid, appid = ja.slot_head(i)
        if not work.may_take(i, state) or appid != app["id"]:
            continue
        slot = ja.read_slot(i)
        wu = slot.wu
        bav = get_app_version(work, wu, app, check_req=True)
        why = None
        if bav is None:
            why = "no app version for this host"
            if cfg.debug_send_job:
                work.log.normal("[send_job] [WU#%d] No app version for NCI job; skipping"
                                % wu["id"])
        else:
            why = infeasible_fast(work, wu, slot.res_server_state, slot.res_priority,
                                  slot.res_report_deadline, app, bav)
            if why and cfg.debug_send_job:
                work.log.normal("[send_job] [WU#%d] wu_is_infeasible_fast() failed for NCI "
                                "job; skipping" % wu["id"])
        if why:
            work.log.normal("can_send_nci() failed for NCI job")
            work.reason("nci", "non-CPU-intensive app %s: %s" % (app["name"], why))
            return False
        if _try_send(work, i, resultid, app, bav) is not None:
            if cfg.debug_send:
                work.log.normal("Sending non-CPU-intensive job: %s" % wu["name"])
            return True
        work.log.normal("NCI job was not still sendable")
    work.log.normal("no sendable NCI jobs for %s" % app_label(app))
    return False


def send_nci(work):
    """send_nci(): one job of each non-CPU-intensive app the host has no job
    of (its <other_results>), unless the app is beta and the user takes no
    beta work, or the user didn't select it and takes no other apps."""
    cfg, prefs = work.cfg, work.prefs
    if cfg.debug_send:
        work.log.normal("checking for NCI jobs")
    nci = [a for a in work.ja.apps if a["non_cpu_intensive"]]
    if not nci:
        return
    have = _apps_with_jobs(work, {a["id"] for a in nci}) if work.req.other_results else set()
    for app in nci:
        if app["id"] in have:
            if cfg.debug_send:
                work.log.normal("Already have job for %s" % app["name"])
            work.reason("nci", "the host already has a job of non-CPU-intensive app %s"
                        % app["name"])
            continue
        if app["beta"] and not prefs.allow_beta_work:
            if cfg.debug_send:
                work.log.normal("%s is beta" % app["name"])
            work.reason("beta", "app %s is beta and the user doesn't accept beta work"
                        % app["name"])
            continue
        if app_not_selected(work, app["id"]) and not prefs.allow_non_preferred_apps:
            if cfg.debug_send:
                work.log.normal("%s is not selected" % app["name"])
            work.reason("app_not_selected", "the user's preferences don't select app %s"
                        % app["name"])
            continue
        if not _send_job_for_app(work, app):
            work.log.normal("failed to send job for NCI app %s" % app_label(app))


# ---------------------------------------------------------------------------
# the legacy multi-pass scan (<sched_old/>, sched_array.cpp)

class _Pass:
    """Which jobs one pass of the legacy scan takes."""

    __slots__ = ("reliable_only", "beta_only", "infeasible_only", "lite_only")

    def __init__(self, reliable_only=False, beta_only=False, infeasible_only=False,
                 lite_only=False):
        self.reliable_only = reliable_only
        self.beta_only = beta_only
        self.infeasible_only = infeasible_only
        self.lite_only = lite_only


def _quick_check(work, slot, app, p):
    """quick_check(): the app version for this job if the pass takes it and
    the fast feasibility checks pass, else None."""
    cfg = work.cfg
    debug = cfg.debug_send_job
    log = work.log.normal
    wu = slot.wu
    if p.beta_only:
        if not app["beta"]:
            if debug:
                log("[send_job] job is not from beta app; skipping")
            return None
        if debug:
            log("[send_job] [HOST#%d] beta work found: [RESULT#%d]"
                % (work.hostid, slot.resultid))
    elif app["beta"]:
        if debug:
            log("[send_job] job is from beta app; skipping")
        if not work.prefs.allow_beta_work:
            work.reason("beta", "app %s is beta and the user doesn't accept beta work"
                        % app["name"])
        return None
    if not app["beta"]:
        if p.reliable_only and not slot.need_reliable:
            if debug:
                log("[send_job] job doesn't need reliable host; skipping")
            return None
        if not p.reliable_only and slot.need_reliable:
            if debug:
                log("[send_job] job needs reliable host; skipping")
            if not work.has_reliable_version:
                work.reason("reliable", "job [RESULT#%d] needs a reliable host"
                            % slot.resultid)
            return None
    if p.infeasible_only and not slot.infeasible_count:
        if debug:
            log("[send_job] job is not infeasible; skipping")
        return None
    if (p.lite_only and app.get("locality_scheduling") == LOCALITY_SCHED_LITE
            and host_sticky_files(work)):
        n = nfiles_on_host(work, slot)
        if cfg.debug_locality_lite:
            log("[loc_lite] job %s has %d files on this host" % (wu["name"], n))
        if n == 0:
            return None
    bav = get_app_version(work, wu, app, check_req=True, reliable_only=p.reliable_only)
    if bav is None:
        if debug:
            log("[send_job] No app version for job; skipping")
        return None
    # after the version choice, so its messages aren't misleading (as BOINC);
    # beta apps count as selected unless <distinct_beta_apps/>
    if work.user_apps_only and (not p.beta_only or cfg.distinct_beta_apps):
        if app_not_selected(work, app["id"]):
            work.no_allowed_apps_available = True
            if debug:
                log("[send_job] [USER#%d] [WU#%d] user doesn't want work for app %s"
                    % (work.userid, wu["id"], app["name"]))
            work.reason("app_not_selected", "the user's preferences don't select app %s"
                        % app["name"])
            return None
    why = infeasible_fast(work, wu, slot.res_server_state, slot.res_priority,
                          slot.res_report_deadline, app, bav)
    if why:
        if debug:
            log("[send_job] [HOST#%d] [WU#%d %s] WU is infeasible: %s"
                % (work.hostid, wu["id"], wu["name"], why))
        return None
    return bav


def _scan_work_array(work, p):
    """scan_work_array(): one pass over the whole array from a random slot,
    sending every job the pass takes.  True when no more work is needed."""
    ja = work.ja
    debug = work.cfg.debug_send_job
    n = ja.nslots
    start = rand.randrange(n)
    for j in range(n):
        i = (start + j) % n
        if debug:
            work.log.normal("[send_job] scanning slot %d" % i)
        state, _, _, _, resultid, appid = ja.slot_head(i)
        if not work.may_take(i, state):
            continue
        app = ja.lookup_app(appid)
        if app is None:
            work.log.critical("[RESULT#%d] no app" % resultid)
            continue
        if app["non_cpu_intensive"]:
            continue
        slot = ja.read_slot(i)
        bav = _quick_check(work, slot, app, p)
        if bav is None:
            if debug:
                work.log.normal("[send_job] slot %d failed quick check" % i)
            continue
        _try_send(work, i, resultid, app, bav)
        if not work_needed(work):
            return True
    return False


def send_work_old(work):
    """send_work_old(): passes over the array in priority order -- jobs that
    need a reliable host (if this host has a reliable version), beta jobs (if
    the user takes them), jobs infeasible for other hosts, locality-lite jobs
    whose files the host has (if an app uses it), everything; then, if
    nothing was sent and the user's preferences allow it, jobs of apps the
    user didn't select."""
    scan = work.cfg.debug_send_scan
    log = work.log.normal
    work.user_apps_only = True
    if work.has_reliable_version:
        if scan:
            log("[send_scan] scanning for jobs that need reliable host")
        work.best.clear()               # versions chosen among reliable ones only
        if _scan_work_array(work, _Pass(reliable_only=True)):
            return
        work.best.clear()
    elif scan:
        log("[send_scan] host has no reliable app versions; skipping scan")
    if work.prefs.allow_beta_work:
        if scan:
            log("[send_scan] host will accept beta jobs.  Scanning for them.")
        if _scan_work_array(work, _Pass(beta_only=True)):
            return
    if scan:
        log("[send_scan] Scanning for jobs that were infeasible for another host.")
    if _scan_work_array(work, _Pass(infeasible_only=True)):
        return
    if any(a.get("locality_scheduling") == LOCALITY_SCHED_LITE for a in work.ja.apps):
        if scan:
            log("[send_scan] Scanning for locality sched Lite jobs.")
        if _scan_work_array(work, _Pass(lite_only=True)):
            return
    if scan:
        log("[send_scan] Scanning: general case.")
    if _scan_work_array(work, _Pass()):
        return
    if not work.njobs_sent and work.prefs.allow_non_preferred_apps:
        work.user_apps_only = False
        work.selected_app_message_index = len(work.no_work_messages)
        if scan:
            log("[send_scan] scanning for jobs from non-selected applications")
        _scan_work_array(work, _Pass())


# ---------------------------------------------------------------------------
# entry points

def send_work(ctx, job_array):
    """Choose jobs for this request and add them to ``ctx.reply`` (send_work()).

    ``job_array`` is a :class:`boincpy.shmem.JobArray` from
    :func:`boincpy.shmem.attach`.  Appends SentJob objects to
    ``ctx.reply.jobs``, messages to ``ctx.reply.messages``, reasons to
    ``ctx.reply.no_work_reasons``; updates result, workunit and
    host_app_version rows.  Returns the number of jobs sent.
    """
    work = setup_work(ctx, job_array)
    sent_before = work.njobs_sent
    if not work.platforms:
        work.reason("no_platform", "platform %s is not supported by this project"
                    % ctx.request.platform_name)
        _finish(work, sent_before)
        return 0
    # BOINC's no_work() (the handler's check) is skipped with enable_assignment:
    # targeted jobs are not in the array, so an empty array still gets them.
    reserved = job_array.reserve_any(work.pid)
    uses_locality = work.cfg.locality_scheduling or work.cfg.locality_scheduler_fraction > 0
    if not reserved and not work.cfg.enable_assignment and not uses_locality:
        work.no_jobs_available = True
        work.reason("no_jobs_available", "the job cache (feeder) holds no unsent jobs")
        if work.cfg.debug_send:
            work.log.normal("[send] No jobs in shmem cache")
        ctx.reply.add_message("Project has no tasks available", PRIORITY_LOW)
        _finish(work, sent_before)
        return 0
    try:
        _send_work_body(work, reserved)
    finally:
        job_array.restore(work.pid, keep=work.pending_slots)
        if job_array.take_emptied() or work.pending_slots:
            # the feeder refills the slots once the jobs sent are committed
            from boincpy import doorbell
            work.db.after_commit(lambda: doorbell.ring(work.cfg, doorbell.FEEDER))
        if not work.hr_reject_perm:
            write_host_app_versions(work)
    if not work.hr_reject_perm:         # BOINC returns before its messages then
        _send_user_messages(work)
    _finish(work, sent_before)
    return work.njobs_sent - sent_before


def _send_work_body(work, reserved):
    cfg = work.cfg
    if all_apps_use_hr(work) and hr_unknown_platform(work):
        work.log.normal("Not sending work because unknown HR class")
        work.hr_reject_perm = True
        work.reason("homogeneous_redundancy", "this host (%s, %s %s) has no homogeneous "
                    "redundancy class for any app" % host_hr_fields(work))
        return
    if cfg.enable_assignment and send_targeted_jobs(work):
        if cfg.debug_assignment:
            work.log.normal("[assign] [HOST#%d] sent assigned jobs" % work.hostid)
        return
    if work.user.get("seti_id"):
        return
    if cfg.enable_assignment_multi and send_broadcast_jobs(work):
        if cfg.debug_assignment:
            work.log.normal("[assign] [HOST#%d] sent assigned jobs" % work.hostid)
        return
    if cfg.workload_sim:                # the host's queue, simulated (loaded only then)
        from boincpy.sched import edf
        edf.start(work)
    if getattr(work.ja, "have_nci_app", False):
        send_nci(work)
    if not work_needed(work):
        return
    # locality scheduling finds its jobs in the database, not in the array
    # (its module is loaded only when it is on)
    if cfg.locality_scheduler_fraction > 0:
        from boincpy.sched import locality
        locality.send_mixed(work, send_work_old)
        return
    if cfg.locality_scheduling:
        from boincpy.sched import locality
        locality.send_work_locality(work)
        return
    if not reserved:                    # enable_assignment and an empty array
        return
    if cfg.sched_old:
        send_work_old(work)
        return
    for rt in range(NPROC_TYPES - 1, -1, -1):
        if work.need_proc_type(rt) and work.have_apps(rt):
            _scan_type(work, rt)


def _send_user_messages(work):
    """send_user_messages(): explain when work was asked for and none sent."""
    ctx, req = work.ctx, work.req
    reply = ctx.reply
    # send_gpu_messages(), whether or not jobs were sent
    if req.resources[1:] or not work.ja_have_apps[0]:
        for prio, text in plan_class.gpu_messages(get_plan_host(work), work.ja_have_apps,
                                                  work.anonymous):
            reply.add_message(text, PRIORITY_NOTICE if prio == "notice" else PRIORITY_LOW)
    if work.cfg.sched_old and work.njobs_sent and not work.user_apps_only:
        _non_selected_apps_messages(work)
    if work.njobs_sent or not req.work_req_seconds:
        return
    work.set_delay(0)
    reply.add_message("No tasks sent", PRIORITY_LOW)
    for appid, available in work.prefs.selected_apps.items():
        if not available:
            app = work.ja.lookup_app(appid)
            if app is not None:
                reply.add_message("No tasks are available for %s" % app_label(app),
                                  PRIORITY_LOW)
    for text in work.no_work_messages:
        reply.add_message(text, PRIORITY_NOTICE)
    if work.no_allowed_apps_available:
        reply.add_message("No tasks are available for the applications you have selected.",
                          PRIORITY_LOW)
    if work.speed_insufficient:
        h = work.hinfo
        if req.core_client_version > 41900:
            text = ("Tasks won't finish in time: BOINC runs %.1f%% of the time; computation "
                    "is enabled %.1f%% of that" % (100 * h.on_frac, 100 * h.active_frac))
        else:
            text = "Tasks won't finish in time: Computer available %.1f%% of the time" % (
                100 * h.on_frac)
        reply.add_message(text, PRIORITY_LOW)
    if work.hr_reject_temp:
        reply.add_message("Tasks are committed to other platforms", PRIORITY_LOW)
    if work.outdated_client:
        reply.add_message("Newer BOINC version required; please install current version",
                          PRIORITY_NOTICE)
        work.set_delay(86400)
        work.log.normal("Not sending tasks because newer client version required")
    for pt in range(NPROC_TYPES):
        if work.prefs.dont_use_proc_type[pt] and work.ja_have_apps[pt]:
            reply.add_message("Tasks for %s are available, but your preferences are set to "
                              "not accept them" % PROC_TYPE_NAMES[pt], PRIORITY_LOW)
    if work.quota_exceeded is not None:
        reply.add_message("This computer has finished a daily quota of %d tasks"
                          % work.quota_exceeded["max_jobs_per_day"], PRIORITY_LOW)
    if work.max_jobs_on_host_exceeded or any(work.max_jobs_on_host_proc_type_exceeded):
        reply.add_message("This computer has reached a limit on tasks in progress",
                          PRIORITY_LOW)
    # reasons BOINC sends no words for: say them anyway
    for key in work.reasons:
        text = EXTRA_MESSAGES.get(key)
        if text:
            if key == "plan_class":
                text += ": " + work.reasons[key]      # which plan class, and why
            reply.add_message(text, PRIORITY_LOW)


def _non_selected_apps_messages(work):
    """sched_old sent jobs of apps the user didn't select (their preferences
    allow it): say so, and why the selected ones had none."""
    reply = work.ctx.reply
    reply.add_message("No tasks are available for the applications you have selected",
                      PRIORITY_LOW)
    for appid, available in work.prefs.selected_apps.items():
        if not available:
            app = work.ja.lookup_app(appid)
            if app is not None:
                reply.add_message("No tasks are available for %s" % app_label(app),
                                  PRIORITY_LOW)
    for text in work.no_work_messages[:work.selected_app_message_index]:
        reply.add_message(text, PRIORITY_NOTICE)
    reply.add_message("Your preferences allow tasks from applications other than those "
                      "selected", PRIORITY_LOW)
    reply.add_message("Sending tasks from other applications", PRIORITY_LOW)


def _finish(work, sent_before):
    """Reasons into the reply and one log line for the host when nothing was sent."""
    sent = work.njobs_sent - sent_before
    if sent:
        return
    reasons = work.reasons
    if not reasons:
        if not work.req.work_req_seconds and not work.rsc_spec_request:
            reasons = {"work_not_requested": "the client asked for no work"}
        else:
            reasons = {"no_feasible_job": "no job in the cache fits this host's request"}
    out = ["%s: %s" % (k, v) for k, v in reasons.items()]
    for r in out:
        if r not in work.ctx.reply.no_work_reasons:
            work.ctx.reply.no_work_reasons.append(r)
    work.log.normal("[HOST#%d] No tasks sent: %s" % (work.hostid, "; ".join(out)))


def resend_lost_results(ctx, job_array):
    """Resend the host's in-progress results that its client no longer lists
    (resend_lost_work(), daemons.md §2.8).

    Runs when the request carried <other_results> and config.xml has
    <resend_lost_results/> or ``ctx.resend_lost_results`` is set (a result was
    reported twice).  A result that can't be resent gets a deadline in the
    past (the transitioner times it out) and the message "Didn't resend lost
    task NAME (expired)"; one resent gets "Resent lost task NAME".  Returns
    True if anything was resent: BOINC then sends no new jobs in this RPC.
    """
    req = ctx.request
    cfg = ctx.cfg
    if not req.have_other_results_list:
        return False
    if not (cfg.resend_lost_results or ctx.resend_lost_results):
        return False
    work = setup_work(ctx, job_array)
    if not work.hostid:
        return False
    listed = {o.name for o in req.other_results}
    rows = work.db.query("SELECT * FROM result WHERE hostid = %s AND server_state = %s",
                         (work.hostid, SERVER_STATE_IN_PROGRESS))
    did_any = False
    n_lost = n_resent = 0
    try:
        for result in rows:
            if not work_needed(work):
                break
            if result["name"] in listed:
                continue
            n_lost += 1
            if cfg.debug_resend:
                work.log.normal("[resend] [HOST#%d] found lost [RESULT#%d]: %s"
                                % (work.hostid, result["id"], result["name"]))
            wu = work.db.query_one("SELECT * FROM workunit WHERE id = %s",
                                   (result["workunitid"],))
            app = bav = None
            can = wu is not None
            if not can:
                work.log.critical("[HOST#%d] can't resend - WU not found for [RESULT#%d]"
                                  % (work.hostid, result["id"]))
            if can:
                app = job_array.lookup_app(wu["appid"])
                if app is None:
                    work.log.critical("can't resend - app not found for [RESULT#%d]"
                                      % result["id"])
                    can = False
            if can and app_not_selected(work, app["id"]):
                work.log.normal("[RESULT#%d] can't resend - app is not selected"
                                % result["id"])
                can = False
            if can:
                bav = get_app_version(work, wu, app, check_req=True)
                can = bav is not None
            if can and (wu["error_mask"] or wu["canonical_resultid"]):
                can = False
            if can and infeasible_fast(work, wu, result["server_state"], result["priority"],
                                       result["report_deadline"], app, bav):
                can = False
            if can:
                new_deadline = work.now + int(RESEND_FRAC * (result["report_deadline"]
                                                             - result["sent_time"]))
                new_deadline = min(max(new_deadline, result["report_deadline"]),
                                   work.now + wu["delay_bound"])
                if estimate_duration(work, wu, bav) > new_deadline - work.now:
                    can = False
            if not can:
                _expire_lost_result(work, result, wu)
                continue
            job = add_result_to_reply(work, result, wu, app, bav, resend=True)
            if job is None:
                continue
            work.ctx.reply.add_message("Resent lost task %s" % result["name"], PRIORITY_LOW)
            n_resent += 1
            did_any = True
            if work.njobs_sent >= cfg.max_wus_to_send:
                break
    finally:
        write_host_app_versions(work)
    if n_lost and cfg.debug_resend:
        work.log.normal("[resend] [HOST#%d] %d lost results, resent %d"
                        % (work.hostid, n_lost, n_resent))
    return did_any


def _expire_lost_result(work, result, wu):
    """A lost result that can't be resent: deadline now - 1 (+ grace) so the
    transitioner times it out."""
    grace = work.cfg.report_grace_period
    deadline = work.now - 1
    n = expire_result(work.db, result["id"], deadline + grace)
    if not matched_rows(work.db, n):
        return
    if wu is not None:
        work.ctx.lower_transition_time(wu["id"], deadline + grace)
    work.ctx.reply.add_message("Didn't resend lost task %s (expired)" % result["name"],
                               PRIORITY_LOW)
