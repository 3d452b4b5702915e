"""The score of a job for this host (sched_score.cpp): :func:`job_score`
(JOB::get_score) and its terms, one small function each -- ``batch_accel``
(:func:`batch_accel_score`), locality scheduling lite
(:func:`locality_lite_score`), ``keyword_sched`` (:func:`keyword_score`,
sched_keyword.cpp) and job size classes (:func:`size_class_score`).
A new term is one more function called from :func:`job_score`.
"""
from boincpy.cnum import atoi
from boincpy.sched.choose import (
    LOCALITY_SCHED_LITE, available_frac, host_sticky_files, sticky_input_files)
from boincpy.sched.prefs import app_not_selected


def job_score(work, slot, app, bav):
    """The job's score (JOB::get_score), or None if it must not go to this host."""
    score = batch_accel_score(work, slot, app)
    if score is None:
        return None
    if not app["beta"] and slot.need_reliable and not bav.reliable:
        work.reason("reliable", "job [RESULT#%d] needs a reliable host" % slot.resultid)
        return None
    if app["beta"]:
        if work.prefs.allow_beta_work:
            score += 1
        else:
            work.reason("beta", "app %s is beta and the user doesn't accept beta work"
                        % app["name"])
            return None
    if app_not_selected(work, app["id"]):
        if work.prefs.allow_non_preferred_apps:
            score -= 1
        else:
            work.no_allowed_apps_available = True
            work.reason("app_not_selected", "the user's preferences don't select app %s"
                        % app["name"])
            return None
    if slot.infeasible_count:
        score += 1
    score += locality_lite_score(work, slot, app)
    score += size_class_score(work, slot.wu, app, bav)
    score += slot.res_priority
    kw = keyword_score(work, slot)
    if kw < 0:
        return None
    score += kw
    if work.cfg.debug_send_job:
        work.log.normal("[send_job]: score %f for result %d" % (score, slot.resultid))
    return score


def batch_accel_score(work, slot, app):
    """batch_accel: a high-priority job (workunit.priority > 0) of an
    accelerable app (n_size_classes > 0) goes only to low-turnaround hosts
    (host.error_rate > 0, as html/ops/batch_stats.php sets it), with +10.
    Returns 0 or 10, or None to refuse the job."""
    if not work.cfg.batch_accel or not app.get("n_size_classes"):
        return 0
    if (slot.wu.get("priority") or 0) <= 0:
        return 0
    if (work.host.get("error_rate") or 0) > 0:
        if work.cfg.debug_send_job:
            work.log.normal("[send_job] sending high-prio job to LTT host")
        return 10
    if work.cfg.debug_send_job:
        work.log.normal("[send_job] not sending high-prio job to non-LTT host")
    work.reason("batch_accel", "job %s is high-priority (batch_accel); it goes only to "
                "low-turnaround hosts (host.error_rate > 0)" % slot.wu["name"])
    return None


# ---------------------------------------------------------------------------
# locality scheduling lite: sticky input files the host already has

def _slot_xml_doc(work, slot):
    doc = work.ja.read_xml_doc(slot.index)
    if doc is None:                     # too big for the array: the row has it
        doc = work.db.query_value("SELECT xml_doc FROM workunit WHERE id = %s",
                                  (slot.wu["id"],), default="")
    return doc


def nfiles_on_host(work, slot):
    """How many of the job's sticky input files the host already has."""
    wu = slot.wu
    names = work.wu_sticky.get(wu["id"])
    if names is None:
        names = sticky_input_files(work, wu["id"], _slot_xml_doc(work, slot))
    have = host_sticky_files(work)
    return sum(1 for n in names if n in have)


def locality_lite_score(work, slot, app):
    """+10 when the app uses locality scheduling lite (app.locality_scheduling
    = 1) and the host already has one of the job's sticky input files."""
    if app.get("locality_scheduling") != LOCALITY_SCHED_LITE or not host_sticky_files(work):
        return 0
    n = nfiles_on_host(work, slot)
    if work.cfg.debug_locality_lite:
        work.log.normal("[loc_lite] job %s has %d files on this host" % (slot.wu["name"], n))
    return 10 if n > 0 else 0


# ---------------------------------------------------------------------------
# keyword scheduling

def _atoi_list(text):
    """Space-separated keyword ids as BOINC reads them (atoi of each token)."""
    return [atoi(token) for token in (text or "").split()]


def user_keywords(work):
    """(yes, no) keyword ids of this volunteer: the request's <user_keywords>
    (sent by clients under an account manager), else PROJECT/kw_prefs/USERID
    (line 1 yes, line 2 no, as the web site's kw_prefs.php writes it)."""
    if work.user_kw is None:
        yes, no = list(work.req.user_keywords_yes), list(work.req.user_keywords_no)
        if not yes and not no and work.userid:
            path = work.cfg.project_path("kw_prefs", str(work.userid))
            try:
                with open(path, encoding="utf-8", errors="replace") as f:
                    lines = f.read().split("\n")
            except OSError:
                lines = []
            if lines:
                if work.cfg.debug_keyword:
                    work.log.normal("[keyword] reading user kw prefs from file")
                yes = _atoi_list(lines[0])
                no = _atoi_list(lines[1]) if len(lines) > 1 else []
        work.user_kw = (set(yes), set(no))
    return work.user_kw


def keyword_score(work, slot):
    """keyword_sched: +1 for each of the job's keywords (workunit.keywords)
    the volunteer said yes to; -1 (the job is refused) if one is a no."""
    if not work.cfg.keyword_sched:
        return 0
    debug = work.cfg.debug_keyword
    yes, no = user_keywords(work)
    if not yes and not no:
        if debug:
            work.log.normal("[keyword] user has no keywords; returning 0")
        return 0
    ids = work.wu_keywords.get(slot.wu["id"])
    if ids is None:
        ids = work.wu_keywords[slot.wu["id"]] = _atoi_list(slot.wu.get("keywords"))
    if not ids:
        if debug:
            work.log.normal("[keyword] job has no keywords; returning 0")
        return 0
    score = 0
    for k in ids:
        if k in yes:
            score += 1
        elif k in no:
            work.add_no_work_message("Some jobs are ruled out by your science/location "
                                     "preferences")
            work.reason("keyword", "job %s has keyword %d, which the volunteer said no to"
                        % (slot.wu["name"], k))
            score = -1
            break
    if debug:
        work.log.normal("[keyword] keyword score: %f" % score)
    return score


# ---------------------------------------------------------------------------
# job size classes

def size_class_score(work, wu, app, bav):
    """Job size matching by class (JOB::get_score): with <size_classes/> and an
    app of several classes, +5 if the job's class is the host's, -2 if the
    host's class is smaller, -1 if larger.  The class boundaries are the
    app's ``size_class_quantiles``, which the feeder read from the
    size_census file; the host's speed is its version's projected FLOPS
    times the fraction of time it computes."""
    n = app.get("n_size_classes") or 0
    if not work.cfg.size_classes or n <= 1:
        return 0
    from boincpy.sizeclass import host_size_class
    speed = bav.usage.projected_flops * available_frac(work, bav)
    target = host_size_class(app.get("size_class_quantiles") or (), n, speed)
    job = wu["size_class"]
    if work.cfg.debug_send_job:
        work.log.normal("[send_job] size: host %d job %d speed %f" % (target, job, speed))
    if target == job:
        return 5
    return -2 if target < job else -1
