"""Feasibility of a job for this host (sched_check.cpp).

:func:`infeasible_fast` (wu_is_infeasible_fast) runs on the feeder's copy of
the job: the project-specific hook (:func:`infeasible_custom`), user filter,
homogeneous redundancy and app version, memory, disk, bandwidth and the
deadline.  :func:`slow_check_and_read` (slow_check and
result_still_sendable) reads the result and workunit rows again once the
job's slot is claimed, including whether another request has committed the
workunit to another HR class or app version meanwhile.
"""

from boincpy.sched import hr, plan_class
from boincpy.sched.choose import (
    KILO, MEGA, SERVER_STATE_IN_PROGRESS, SERVER_STATE_UNSENT, app_label, estimate_duration)
from boincpy.sched.hr import already_sent_to_different_hr_class, host_hr_class, hr_feasible
from boincpy.sched.version import plan_class_specs

CHECK_OK, CHECK_NO_HOST, CHECK_NO_ANY = 0, 1, 2


# ---------------------------------------------------------------------------
# the fast checks (on the job array's copy of the job)

def infeasible_custom(work, wu, app, bav):
    """Project-specific feasibility hook (wu_is_infeasible_custom): None = feasible.
    As BOINC's: a plan class of plan_class_spec.xml limited to some job ids or
    batches (the version was chosen for another job of the same app)."""
    if bav.av and bav.av["plan_class"]:
        specs = plan_class_specs(work)
        if isinstance(specs, dict):
            spec = specs.get(bav.av["plan_class"])
            if spec is not None and spec.wu_restricted:
                why = plan_class.wu_infeasible(spec, wu)
                if why:
                    work.reason("plan_class", why)
                    return "plan_class"
    return None


def _check_deadline(work, wu, app, bav, delay_bound):
    if work.cfg.ignore_delay_bound:
        return None
    hard = app["weight"] == -1
    est_delay = work.est_delay[bav.proc_type]
    if est_delay == 0 and not hard:
        return None
    if hard and not work.host.get("total_credit", 0):
        work.speed_insufficient = True
        return "deadline"
    if work.ip_results is not None:         # <workload_sim>: simulate the queue
        from boincpy.sched import edf
        return edf.deadline_infeasible(work, wu, estimate_duration(work, wu, bav))
    ewd = estimate_duration(work, wu, bav)
    if hard:
        ewd *= 1.3
    if est_delay + ewd > delay_bound:
        work.speed_insufficient = True
        work.reason("deadline", "job %s would take %.0f s after %.0f s of queued work; "
                    "its delay bound is %d s" % (wu["name"], ewd, est_delay, delay_bound))
        return "deadline"
    return None


def infeasible_fast(work, wu, res_server_state, res_priority, res_report_deadline, app,
                    bav):
    """wu_is_infeasible_fast: a reason word, or None if the job fits the host."""
    cfg = work.cfg
    why = infeasible_custom(work, wu, app, bav)
    if why:
        return why
    if cfg.user_filter and wu["batch"] and wu["batch"] != work.userid:
        return "user_filter"
    if not hr_feasible(work, wu, app):
        return "homogeneous_redundancy"
    if app.get("homogeneous_app_version") and wu.get("app_version_id") and bav.av \
            and bav.av["id"] != wu["app_version_id"]:
        return "homogeneous_app_version"
    if (cfg.one_result_per_user_per_wu or cfg.one_result_per_host_per_wu) \
            and wu["id"] in work.wus_in_reply:
        return "duplicate"
    mem = wu["rsc_memory_bound"]
    if mem > work.usable_ram:
        work.add_no_work_message(
            "%s needs %0.2f MB RAM but only %0.2f MB is available for use."
            % (app_label(app), mem / MEGA, work.usable_ram / MEGA))
        work.mem_insufficient = True
        work.reason("memory", "%s needs %.2f MB RAM, the host has %.2f MB usable"
                    % (app["name"], mem / MEGA, work.usable_ram / MEGA))
        return "memory"
    diff = wu["rsc_disk_bound"] - work.disk_available
    if diff > 0:
        work.add_no_work_message(
            "%s needs %0.2fMB more disk space.  You currently have %0.2f MB available and "
            "it needs %0.2f MB." % (app_label(app), diff / MEGA, work.disk_available / MEGA,
                                    wu["rsc_disk_bound"] / MEGA))
        work.disk_insufficient = True
        work.reason("disk", "%s needs %.2f MB disk, the host has %.2f MB for BOINC"
                    % (app["name"], wu["rsc_disk_bound"] / MEGA, work.disk_available / MEGA))
        return "disk"
    bw = wu.get("rsc_bandwidth_bound") or 0
    if bw and work.hinfo.n_bwdown and bw > work.hinfo.n_bwdown:
        work.add_no_work_message(
            "%s requires %0.2f KB/sec download bandwidth.  Your computer has been measured "
            "at %0.2f KB/sec." % (app_label(app), bw / KILO, work.hinfo.n_bwdown / KILO))
        work.bandwidth_insufficient = True
        work.reason("bandwidth", "%s needs %.2f KB/s download bandwidth" % (app["name"],
                                                                           bw / KILO))
        return "bandwidth"
    if app["non_cpu_intensive"]:
        return None
    # delay bound range (get_delay_bound_range)
    delay_bound = wu["delay_bound"]
    if res_server_state == SERVER_STATE_IN_PROGRESS:
        if res_report_deadline < work.now:
            return None
        opt, pess = res_report_deadline - work.now, delay_bound
    else:
        opt = pess = delay_bound
        if (cfg.reliable_on_priority and res_priority >= cfg.reliable_on_priority
                and cfg.reliable_reduced_delay_bound > 0.01):
            opt = delay_bound * cfg.reliable_reduced_delay_bound
            ewd = estimate_duration(work, wu, bav)
            if (ewd * 2 > opt and ewd * 2 < delay_bound
                    and ewd * 2 < delay_bound * cfg.reliable_reduced_delay_bound * 2):
                opt = ewd * 2
    opt = int(opt)
    if opt == 0:
        return None
    why = _check_deadline(work, wu, app, bav, opt)
    if why and opt != pess:
        why = _check_deadline(work, wu, app, bav, int(pess))
    return why


# ---------------------------------------------------------------------------
# the slow check (against the database, once the slot is claimed)

def slow_check_and_read(work, slot, app=None, bav=None):
    """slow_check() and result_still_sendable() in one query.

    For apps with homogeneous redundancy or homogeneous app version the
    workunit's current hr_class / app_version_id are checked too: another
    request may have committed it since the feeder copied it; such a job is
    marked infeasible once more in the array (so committed jobs go first).

    Returns (CHECK_OK, result_row), (CHECK_NO_HOST, None) or (CHECK_NO_ANY, None);
    (CHECK_OK, None) when the result is no longer sendable.
    """
    return slow_check(work, slot, work.db.query_one(*slow_check_read(work, slot)), app, bav)


def slow_check_read(work, slot):
    """(sql, params) of the slow check's one SELECT: the result row, its
    workunit's error_mask, hr_class and app_version_id, and with
    one_result_per_user_per_wu (or _host_) how many of its results the user
    (host) has."""
    cfg = work.cfg
    wu = slot.wu
    cols = ["r.*", "w.error_mask AS wu_error_mask", "w.hr_class AS wu_hr_class",
            "w.app_version_id AS wu_app_version_id"]
    params = []
    if cfg.one_result_per_user_per_wu:
        cols.append("(SELECT COUNT(*) FROM result r2 WHERE r2.workunitid = %s "
                    "AND r2.userid = %s) AS n_mine")
        params += [wu["id"], work.userid]
    elif cfg.one_result_per_host_per_wu:
        cols.append("(SELECT COUNT(*) FROM result r2 WHERE r2.workunitid = %s "
                    "AND r2.hostid = %s) AS n_mine")
        params += [wu["id"], work.hostid]
    if slot.xml_len < 0:
        cols.append("w.xml_doc AS wu_xml_doc")
    params += [slot.resultid]
    return ("SELECT %s FROM result r LEFT JOIN workunit w ON w.id = r.workunitid "
            "WHERE r.id = %%s" % ", ".join(cols), params)


def slow_check(work, slot, row, app=None, bav=None):
    """The slow check of ``row``, read by :func:`slow_check_read` (None: no
    such result); returns as :func:`slow_check_and_read`."""
    cfg = work.cfg
    wu = slot.wu
    if row is None:
        work.log.critical("[RESULT#%d] result.lookup_id() failed: not found" % slot.resultid)
        return CHECK_NO_ANY, None
    if row.get("n_mine"):
        who = "USER#%d" % work.userid if cfg.one_result_per_user_per_wu else \
            "HOST#%d" % work.hostid
        key = ("one_result_per_user_per_wu" if cfg.one_result_per_user_per_wu
               else "one_result_per_host_per_wu")
        work.reason(key, "[%s] already has a task of [WU#%d]" % (who, wu["id"]))
        if cfg.debug_send_job:
            work.log.normal("[send_job] [%s] already has %d result(s) for [WU#%d]"
                            % (who, row["n_mine"], wu["id"]))
        return CHECK_NO_HOST, None
    if row.get("wu_error_mask"):
        return CHECK_NO_ANY, None
    wu_hr_class = row.pop("wu_hr_class", 0)
    wu_avid = row.pop("wu_app_version_id", 0)
    if app is not None and _committed_elsewhere(work, slot, app, bav, wu_hr_class, wu_avid):
        return CHECK_NO_HOST, None
    if row["server_state"] != SERVER_STATE_UNSENT:
        work.log.normal("[RESULT#%d] expected to be unsent; instead, state is %d"
                        % (slot.resultid, row["server_state"]))
        work.reason("taken", "the job chosen was sent to another host meanwhile")
        return CHECK_OK, None
    if row["workunitid"] != wu["id"]:
        work.log.critical("[RESULT#%d] wrong WU ID: wanted %d, got %d"
                          % (slot.resultid, wu["id"], row["workunitid"]))
        return CHECK_OK, None
    if slot.xml_len < 0:
        slot.wu["xml_doc"] = row.pop("wu_xml_doc", None)
    return CHECK_OK, row


def _committed_elsewhere(work, slot, app, bav, wu_hr_class, wu_avid):
    """The slow check's HR / homogeneous-app-version part: True if the workunit
    is now committed to another HR class or app version (its infeasible
    count in the array goes up by one)."""
    wu = slot.wu
    hr_type = hr.app_hr_type(work.cfg, app)
    debug = work.cfg.debug_send_job
    if hr_type:
        wu["hr_class"] = wu_hr_class
        if already_sent_to_different_hr_class(work, wu, hr_type):
            if debug:
                work.log.normal("[send_job] [HOST#%d] [WU#%d %s] is assigned to different HR "
                                "class" % (work.hostid, wu["id"], wu["name"]))
            work.reason("hr_committed", "[WU#%d] is committed to HR class %d; this host is "
                        "class %d" % (wu["id"], wu_hr_class, host_hr_class(work, hr_type)))
            work.ja.bump_infeasible_count(slot.index, work.pid)
            return True
    if app.get("homogeneous_app_version"):
        wu["app_version_id"] = wu_avid
        if wu_avid and bav is not None and bav.av and wu_avid != bav.av["id"]:
            if debug:
                work.log.normal("[send_job] [HOST#%d] [WU#%d %s] is assigned to different app "
                                "version" % (work.hostid, wu["id"], wu["name"]))
            work.reason("homogeneous_app_version", "[WU#%d] is committed to [AV#%d]"
                        % (wu["id"], wu_avid))
            work.ja.bump_infeasible_count(slot.index, work.pid)
            return True
    return False
