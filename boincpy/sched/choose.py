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

What this module does is daemons.md §2 (sched_send.cpp, sched_score.cpp,
sched_check.cpp, sched_version.cpp, sched_resend.cpp):

* setup (``send_work_setup``): per-resource requests, disk, usable RAM,
  availability, effective CPUs, ``max_jobs_per_rpc``, in-progress limits
  (``max_wus_in_progress[_gpu]`` and config_aux.xml's
  ``<max_jobs_in_progress>``, counting the client's <other_results>),
  project preferences, host_app_version rows (quota initialisation and the
  day rollover of ``n_jobs_today``);
* the score-based scan of the feeder's array (boincpy.shmem) with the app
  version choice, the fast checks under the array's lock, the slow checks
  against the database, and the commit: the conditional UPDATE of the
  result that must change exactly one row;
* resending lost results; the explanatory messages when nothing is sent;
* targeted and broadcast jobs (sched_assign.cpp: a result is created when
  one is sent), homogeneous redundancy and homogeneous app version (host
  classes in boincpy.sched.hr; the commitment is a conditional UPDATE of
  the workunit in :func:`add_result_to_reply`).

Bounded scan: C++ scores every slot of the array on every request, so its
cost grows with ``shmem_work_items``.  Here a request starts at a random
slot and stops scoring once it holds enough feasible candidates for what
the host asked (twice the jobs it can use, plus a few), sends the best of
those by score, and goes on scanning only if it still needs work.  While the
array holds any job with priority > 0 (retries, urgent work) the whole array
is scored, as in C++, so high-priority jobs still go first.

Also: non-CPU-intensive apps (:func:`send_nci`, sched_nci.cpp: one job of
each such app a host has none of, before the scan); the score terms of
locality scheduling lite (:func:`locality_lite_score`), ``batch_accel``
(:func:`batch_accel_score`) and ``keyword_sched`` (:func:`keyword_score`,
sched_keyword.cpp); and ``<sched_old/>``'s multi-pass scan
(:func:`send_work_old`, sched_array.cpp) in place of the score-based one.

Extension points (one function each, here): plan classes
(:func:`plan_class_usage`), homogeneous redundancy (:func:`hr_feasible`),
targeted jobs (:func:`send_targeted_jobs`), score terms (one small function
each, called from :func:`job_score`), per-app in-progress limits from
config_aux.xml (:func:`app_job_limits`), and the project-specific feasibility
hook (:func:`infeasible_custom`).
"""

import math
import os
import random
import time

from boincpy import shmem
from boincpy.sched import hr, plan_class
from boincpy.sched.context import PRIORITY_LOW, PRIORITY_NOTICE, SentJob
from boincpy.sched.plan_class import HostUsage  # noqa: F401  (choose.HostUsage, as before)

NPROC_TYPES = 5
PROC_TYPE_NAMES = ("CPU", "NVIDIA GPU", "AMD/ATI GPU", "Intel GPU", "Apple GPU")
# <coproc><type> names in replies, and the client's coproc_type in app versions
PROC_TYPE_XML = ("CPU", "NVIDIA", "ATI", "intel_gpu", "apple_gpu")
_COPROC_TYPE_TO_PT = {"": 0, "CPU": 0, "NVIDIA": 1, "CUDA": 1, "ATI": 2, "AMD": 2,
                      "intel_gpu": 3, "apple_gpu": 4}

SERVER_STATE_UNSENT = 2
SERVER_STATE_IN_PROGRESS = 4

KILO = 1024.0
MEGA = 1024.0 * KILO
GIGA = 1024.0 * MEGA
MAX_REQ_SECS = 28 * 86400.0
DEFAULT_RAM_SIZE = 64e6
FRAC_MIN = 0.1
MAX_CPUS = 4096
MAX_GPUS = 64
CONS_VALID_RELIABLE = 10
CONS_VALID_UNREPLICATED = 10
MIN_HOST_SAMPLES = 10
MIN_VERSION_SAMPLES = 100
ET_RATIO_LIMIT = 250.0
GPU_CPU_RATIO = 10.0
DELAY_MAX = 2 * 86400.0
RESEND_FRAC = 0.5

# bounded scan: candidates wanted = 2 x jobs the host can use + this
SCAN_SLACK = 4
# arrays this small are always scanned whole
FULL_SCAN_SLOTS = 64

CHECK_OK, CHECK_NO_HOST, CHECK_NO_ANY = 0, 1, 2

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
# per-request state

class BestVersion:
    """The app version chosen for an app on this host (BEST_APP_VERSION)."""

    __slots__ = ("appid", "av", "cav", "usage", "reliable", "trusted", "gavid",
                 "rsc_fpops_scale")

    def __init__(self, appid, av, cav, usage, gavid):
        self.appid = appid
        self.av = av                # app_version row (dict), None when anonymous
        self.cav = cav              # request.ClientAppVersion when anonymous
        self.usage = usage
        self.gavid = gavid          # host_app_version.app_version_id
        self.reliable = False
        self.trusted = False
        self.rsc_fpops_scale = 1.0

    @property
    def proc_type(self):
        return self.usage.proc_type

    @property
    def version_num(self):
        return self.av["version_num"] if self.av else self.cav.version_num

    def app_version_id(self):
        return self.av["id"] if self.av else self.usage.resource_type()


class ProjectPrefs:
    """The parts of user.project_prefs job choice uses."""

    __slots__ = ("selected_apps", "allow_non_preferred_apps", "allow_beta_work",
                 "dont_use_proc_type", "max_jobs_in_progress", "max_cpus")

    def __init__(self):
        self.selected_apps = {}             # appid -> work available (bool)
        self.allow_non_preferred_apps = False
        self.allow_beta_work = False
        self.dont_use_proc_type = [False] * NPROC_TYPES
        self.max_jobs_in_progress = 0
        self.max_cpus = 0


class JobLimit:
    """JOB_LIMIT for one request: the project's or one app's in-progress limits
    scaled to this host (0 = none), and the jobs counted against them."""

    __slots__ = ("base_total", "total", "base", "per_proc", "scaled", "njobs_total",
                 "njobs")

    def __init__(self):
        self.base_total = self.total = self.njobs_total = 0
        self.base = [0] * NPROC_TYPES
        self.per_proc = [False] * NPROC_TYPES
        self.scaled = [0] * NPROC_TYPES
        self.njobs = [0] * NPROC_TYPES

    def apply(self, spec):
        """Overlay a config_aux.xml <project>/<app> (JobLimitSpec) as BOINC's
        parser does: a limit element resets per_proc; <jobs> sets the number."""
        if spec.total_limit is not None and spec.total_limit.jobs is not None:
            self.base_total = spec.total_limit.jobs   # never scaled (reset(1))
        for pt, rsc in ((0, spec.cpu_limit), (1, spec.gpu_limit)):
            if rsc is not None:
                self.per_proc[pt] = rsc.per_proc
                if rsc.jobs is not None:
                    self.base[pt] = rsc.jobs
        if spec.gpu_limit is not None:       # <gpu_limit> is every GPU type's
            for pt in range(2, NPROC_TYPES):
                self.base[pt] = self.base[1]
                self.per_proc[pt] = self.per_proc[1]

    def scale(self, ninstances):
        self.total = self.base_total
        for pt in range(NPROC_TYPES):
            n = ninstances[pt] if self.per_proc[pt] else 1
            self.scaled[pt] = self.base[pt] * n

    def any_limit(self):
        return bool(self.base_total or any(self.base))

    def exceeded(self, pt):
        if self.total and self.njobs_total >= self.total:
            return True
        return bool(self.scaled[pt]) and self.njobs[pt] >= self.scaled[pt]

    def register(self, pt):
        self.njobs_total += 1
        self.njobs[pt] += 1

    def describe(self, pt):
        """Which limit is reached, in words (for the 'No tasks sent' log line)."""
        if self.total and self.njobs_total >= self.total:
            return "limit of %d tasks in progress" % self.total
        return "limit of %d %s tasks in progress" % (self.scaled[pt], PROC_TYPE_NAMES[pt])

    def log_lines(self):
        """RSC_JOB_LIMIT::print_log lines for the limits that are set."""
        lines = []
        if self.base_total:
            lines.append("[quota] total: base %d scaled %d njobs %d"
                         % (self.base_total, self.total, self.njobs_total))
        for pt, name in ((0, "CPU"), (1, "GPU")):
            if self.base[pt]:
                lines.append("[quota] %s: base %d scaled %d njobs %d"
                             % (name, self.base[pt], self.scaled[pt], self.njobs[pt]))
        return lines


class Limits:
    """In-progress limits (JOB_LIMITS): the project's, from config.xml's
    max_wus_in_progress[_gpu] and config_aux.xml's <project>, and each app's
    from config_aux.xml's <app> (:func:`app_job_limits`)."""

    def __init__(self, cfg, ninstances):
        project = JobLimit()
        # config.xml's options are per-instance CPU / GPU limits (read first)
        if cfg.max_wus_in_progress:
            project.base[0] = cfg.max_wus_in_progress
            project.per_proc[0] = True
        if cfg.max_wus_in_progress_gpu:
            for pt in range(1, NPROC_TYPES):
                project.base[pt] = cfg.max_wus_in_progress_gpu
                project.per_proc[pt] = True
        aux = getattr(cfg, "max_jobs_in_progress", None)
        if aux is not None and aux.project is not None:
            project.apply(aux.project)
        project.scale(ninstances)
        self.project = project
        self.app_limits = app_job_limits(cfg, ninstances)     # app name -> JobLimit

    @property
    def total(self):
        """Jobs in progress on the host plus those sent in this request."""
        return self.project.njobs_total

    def exceeded(self, app, pt):
        if self.project.exceeded(pt):
            return True
        if app is not None and self.app_limits:
            lim = self.app_limits.get(app["name"])
            if lim is not None and lim.exceeded(pt):
                return True
        return False

    def register(self, app, pt):
        self.project.register(pt)
        if app is not None and self.app_limits:
            lim = self.app_limits.get(app["name"])
            if lim is not None:
                lim.register(pt)

    def log(self, log):
        """JOB_LIMITS::print_log (under debug_quota)."""
        log.normal("[quota] Overall limits on jobs in progress:")
        for line in self.project.log_lines():
            log.normal(line)
        for name, lim in self.app_limits.items():
            if lim.any_limit():
                log.normal("[quota] Limits for %s:" % name)
                for line in lim.log_lines():
                    log.normal(line)


class Work:
    """WORK_REQ: what this request asks for and what has been sent so far."""

    def __init__(self, ctx, job_array):
        self.ctx = ctx
        self.ja = job_array
        self.cfg = ctx.cfg
        self.db = ctx.db
        self.log = ctx.log
        self.req = ctx.request
        self.hinfo = ctx.request.host
        self.host = ctx.host or {}
        self.user = ctx.user or {}
        self.hostid = self.host.get("id", 0) or 0
        self.userid = self.user.get("id", 0) or 0
        self.now = int(ctx.now or time.time())
        self.pid = os.getpid()
        self.req_secs = [0.0] * NPROC_TYPES
        self.req_instances = [0.0] * NPROC_TYPES
        self.est_delay = [0.0] * NPROC_TYPES
        self.ninstances = [0] * NPROC_TYPES
        self.rsc_spec_request = False
        self.seconds_to_fill = 0.0
        self.njobs_sent = 0
        self.best = {}
        self.wus_in_reply = set()
        self.no_work_messages = []
        self.reasons = {}
        self.disk_insufficient = self.mem_insufficient = False
        self.speed_insufficient = self.bandwidth_insufficient = False
        self.max_jobs_on_host_exceeded = False
        self.max_jobs_on_host_proc_type_exceeded = [False] * NPROC_TYPES
        self.no_jobs_available = False
        self.no_allowed_apps_available = False
        self.outdated_client = False
        self.hr_reject_temp = False         # a job was committed to another HR class
        self.hr_reject_perm = False         # the host has no HR class for any app
        self.quota_exceeded = None          # a host_app_version row that hit its quota
        self.havs = {}
        self.hav_reset = set()
        self.hav_added = {}                 # gavid -> jobs sent this request
        self.hav_quota_init = set()
        self.has_reliable_version = False
        self.taken = 0
        self.pc_specs = False               # plan_class_spec.xml not looked for yet
        self.plan_host = None
        self.host_files = None              # locality lite: sticky files on the host
        self.wu_sticky = {}                 # wuid -> sticky input file names
        self.user_kw = None                 # keyword_sched: (yes ids, no ids)
        self.wu_keywords = {}               # wuid -> keyword ids
        self.user_apps_only = True          # sched_old: only apps the user selected
        self.selected_app_message_index = 0

    # -- reasons ------------------------------------------------------------

    def reason(self, key, detail):
        """Remember why a job could not be sent (first detail per key kept)."""
        if key not in self.reasons:
            self.reasons[key] = detail

    def add_no_work_message(self, text):
        if text not in self.no_work_messages:
            self.no_work_messages.append(text)

    def set_delay(self, delay):
        r = self.ctx.reply
        if r.request_delay < delay:
            r.request_delay = min(delay, DELAY_MAX)

    def need_proc_type(self, pt):
        if self.rsc_spec_request:
            return self.req_secs[pt] > 0 or self.req_instances[pt] > 0
        return self.seconds_to_fill > 0

    def have_apps(self, pt):
        if self.anonymous:
            return self.client_has_apps[pt]
        return self.ja_have_apps[pt]


# ---------------------------------------------------------------------------
# extension points

def plan_class_usage(work, av, wu):
    """HostUsage for a plan-class app version on this host, or None if the plan
    class rejects the host (app_plan: the project's plan_class_spec.xml if it
    has one, else BOINC's built-in classes; see boincpy.sched.plan_class)."""
    specs = _plan_class_specs(work)
    r = plan_class.app_plan(_plan_host(work), av["plan_class"], specs, wu)
    for text in work.plan_host.messages:
        work.add_no_work_message(text)
    if not r:
        # every plan class's reason, not just the first (the host may have
        # been refused by cuda and mt for different reasons)
        known = work.reasons.get("plan_class")
        if known is None:
            work.reason("plan_class", r.reason)
        elif r.reason not in known.split("; "):
            work.reasons["plan_class"] = known + "; " + r.reason
        if work.cfg.debug_version_select:
            work.log.normal("[version] [AV#%d] %s" % (av["id"], r.reason))
        return None
    return r


def _plan_class_specs(work):
    """plan_class_spec.xml, looked for once per request; a bad file is logged
    once per request (and refuses every plan class)."""
    if work.pc_specs is False:
        work.pc_specs = plan_class.load_specs(work.cfg.project_dir)
        if isinstance(work.pc_specs, plan_class.PlanClassSpecError):
            work.log.critical("Error parsing plan class spec file: %s" % work.pc_specs)
    return work.pc_specs


def _capped_fpops(work):
    """capped_host_fpops(): the host's FLOPS within the project's distribution."""
    x = work.hinfo.p_fpops
    try:
        perf = work.ja.perf_info()
    except AttributeError:
        return x
    if x <= 0:
        return perf["host_fpops_50_percentile"]
    return min(x, perf["host_fpops_95_percentile"] * 1.1) if perf[
        "host_fpops_95_percentile"] > 0 else x


def _plan_host(work):
    ph = work.plan_host
    if ph is None:
        req = work.req
        venue = work.host.get("venue", "") or ""
        ph = plan_class.PlanHost(
            work.hinfo, req.resources, req.core_client_version,
            req.core_client_major_version, work.userid, work.effective_ncpus,
            work.usable_ram, _capped_fpops(work),
            work.platforms[0]["name"] if work.platforms else req.platform_name,
            _prefs_body(work.user.get("project_prefs"), venue),
            req.dont_use_docker, req.dont_use_wsl)
        work.plan_host = ph
    return ph


def _host_hr_fields(work):
    """(os_name, p_vendor, p_model) of the host as this request describes it."""
    h, row = work.hinfo, work.host
    return (h.os_name or row.get("os_name", "") or "",
            h.p_vendor or row.get("p_vendor", "") or "",
            h.p_model or row.get("p_model", "") or "")


def host_hr_class(work, hr_type):
    """This host's homogeneous-redundancy class under ``hr_type``."""
    return hr.hr_class(*_host_hr_fields(work), hr_type)


def _already_sent_to_different_hr_class(work, wu, hr_type):
    """already_sent_to_different_hr_class(): also sets (or clears) the flag
    behind "Tasks are committed to other platforms", as BOINC does on every call."""
    work.hr_reject_temp = False
    if wu.get("hr_class") and wu["hr_class"] != host_hr_class(work, hr_type):
        work.hr_reject_temp = True
        return True
    return False


def all_apps_use_hr(work):
    """True if every app of the project uses homogeneous redundancy."""
    return all(hr.app_hr_type(work.cfg, a) for a in work.ja.apps)


def hr_unknown_platform(work):
    """hr_unknown_platform(): True if the host has no HR class for any app."""
    fields = _host_hr_fields(work)
    return all(hr.hr_unknown_class(*fields, hr.app_hr_type(work.cfg, a))
               for a in work.ja.apps)


def hr_feasible(work, wu, app):
    """The homogeneous-redundancy part of wu_is_infeasible_fast: False if the
    app uses HR and the host has no class under its type, or the workunit
    (as the job array holds it) is committed to another class.

    The homogeneous-app-version check is in :func:`infeasible_fast`; both
    are checked again against the database in the slow check, and the
    commitment itself is the conditional UPDATE in :func:`add_result_to_reply`.
    """
    hr_type = hr.app_hr_type(work.cfg, app)
    if not hr_type:
        return True
    if hr.hr_unknown_class(*_host_hr_fields(work), hr_type):
        if work.cfg.debug_send_job:
            work.log.normal("[send_job] [HOST#%d] [WU#%d %s] host is of unknown class in HR "
                            "type %d" % (work.hostid, wu["id"], wu["name"], hr_type))
        work.reason("homogeneous_redundancy", "this host has no class in homogeneous "
                    "redundancy type %d, which app %s uses" % (hr_type, app["name"]))
        return False
    if _already_sent_to_different_hr_class(work, wu, hr_type):
        mine = host_hr_class(work, hr_type)
        if work.cfg.debug_send_job:
            work.log.normal("[send_job] [HOST#%d] [WU#%d %s] failed quick HR check: WU is "
                            "class %d, host is class %d"
                            % (work.hostid, wu["id"], wu["name"], wu["hr_class"], mine))
        work.reason("hr_committed", "[WU#%d] is committed to HR class %d; this host is "
                    "class %d" % (wu["id"], wu["hr_class"], mine))
        return False
    return True


def infeasible_custom(work, wu, app, bav):
    """Project-specific feasibility hook (wu_is_infeasible_custom): None = feasible.
    As BOINC's: a plan class of plan_class_spec.xml limited to some job ids or
    batches (the version was chosen for another job of the same app)."""
    if bav.av and bav.av["plan_class"]:
        specs = _plan_class_specs(work)
        if isinstance(specs, dict):
            spec = specs.get(bav.av["plan_class"])
            if spec is not None and spec.wu_restricted:
                why = plan_class.wu_infeasible(spec, wu)
                if why:
                    work.reason("plan_class", why)
                    return "plan_class"
    return None


def app_job_limits(cfg, ninstances):
    """Per-app in-progress limits from config_aux.xml's <app> elements, scaled
    to this host's processor instances: app name -> JobLimit ({} for none)."""
    aux = getattr(cfg, "max_jobs_in_progress", None)
    if aux is None or not aux.apps:
        return {}
    limits = {}
    for name, spec in aux.apps.items():
        lim = JobLimit()
        lim.apply(spec)
        lim.scale(ninstances)
        limits[name] = lim
    return limits


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

LOCALITY_SCHED_LITE = 1


def _host_files(work):
    """Names of the sticky files the host has: the client's <file_info>s,
    plus those of lite jobs sent in this request (add_job_files_to_host)."""
    if work.host_files is None:
        work.host_files = {name for name, _ in work.req.sticky_files}
    return work.host_files


def _sticky_input_files(work, wuid, xml_doc):
    """The names of the <file_info>s marked <sticky/> in a workunit's xml_doc
    (kept per workunit for the request)."""
    names = work.wu_sticky.get(wuid)
    if names is None:
        import re
        names = []
        for body in re.findall(r"<file_info>(.*?)</file_info>", xml_doc or "", re.S):
            m = re.search(r"<name>\s*(.*?)\s*</name>", body, re.S)
            if m and re.search(r"<sticky\s*/>|<sticky>\s*[1-9]", body):
                names.append(m.group(1))
        work.wu_sticky[wuid] = names
    return names


def _slot_xml_doc(work, slot):
    doc = work.ja.read_xml_doc(slot.index)
    if doc is None:                     # too big for the array: the row has it
        doc = _text(work.db.query_value("SELECT xml_doc FROM workunit WHERE id = %s",
                                        (slot.wu["id"],), default=""))
    return doc


def nfiles_on_host(work, slot):
    """How many of the job's sticky input files the host already has."""
    wu = slot.wu
    names = work.wu_sticky.get(wu["id"])
    if names is None:
        names = _sticky_input_files(work, wu["id"], _slot_xml_doc(work, slot))
    have = _host_files(work)
    return sum(1 for n in names if n in have)


def locality_lite_score(work, slot, app):
    """+10 when the app uses locality scheduling lite (app.locality_scheduling
    = 1) and the host already has one of the job's sticky input files."""
    if app.get("locality_scheduling") != LOCALITY_SCHED_LITE or not _host_files(work):
        return 0
    n = nfiles_on_host(work, slot)
    if work.cfg.debug_locality_lite:
        work.log.normal("[loc_lite] job %s has %d files on this host" % (slot.wu["name"], n))
    return 10 if n > 0 else 0


def add_job_files_to_host(work, wu):
    """A lite job is being sent: its sticky files count as on the host for the
    rest of this request."""
    have = _host_files(work)
    for name in _sticky_input_files(work, wu["id"], wu.get("xml_doc")):
        if name not in have:
            if work.cfg.debug_send:
                work.log.normal("[send] Adding file %s to host file list" % name)
            have.add(name)


# ---------------------------------------------------------------------------
# keyword scheduling

def _atoi_list(text):
    """Space-separated keyword ids as BOINC reads them (atoi of each token)."""
    out = []
    for token in (text or "").split():
        digits = ""
        for i, ch in enumerate(token):
            if ch.isdigit() or (i == 0 and ch in "+-"):
                digits += ch
            else:
                break
        try:
            out.append(int(digits))
        except ValueError:
            out.append(0)
    return out


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
    speed = bav.usage.projected_flops * _available_frac(work, bav)
    target = host_size_class(app.get("size_class_quantiles") or (), n, speed)
    job = wu["size_class"]
    if work.cfg.debug_send_job:
        work.log.normal("[send_job] size: host %d job %d speed %f" % (target, job, speed))
    if target == job:
        return 5
    return -2 if target < job else -1


# ---------------------------------------------------------------------------
# setup

def _clamp_req(x):
    return min(max(x, 0.0), MAX_REQ_SECS)


def _prefs_body(xml, venue):
    """user.project_prefs reduced to the host's venue (extract_venue)."""
    import re
    if not xml:
        return ""
    if isinstance(xml, bytes):
        xml = xml.decode("utf-8", "replace")
    if venue:
        m = re.search(r'<venue\s+name="%s"\s*>(.*?)</venue>' % re.escape(venue), xml, re.S)
        if m:
            return m.group(1)
        return xml
    return re.sub(r"<venue\b.*?</venue>", "", xml, flags=re.S)


def _parse_project_prefs(xml, venue):
    """ProjectPrefs from user.project_prefs (the host's venue block if any)."""
    import re
    prefs = ProjectPrefs()
    if not xml:
        return prefs
    body = _prefs_body(xml, venue)

    def flag(tag):
        m = re.search(r"<%s\s*/>|<%s>\s*([^<]*)</%s>" % (tag, tag, tag), body)
        if not m:
            return False
        text = (m.group(1) or "").strip()
        return m.group(0).endswith("/>") or (text not in ("", "0"))

    def number(tag):
        m = re.search(r"<%s>\s*([-0-9.eE+]+)\s*</%s>" % (tag, tag), body)
        return int(float(m.group(1))) if m else 0

    prefs.allow_beta_work = flag("allow_beta_work")
    prefs.allow_non_preferred_apps = flag("allow_non_preferred_apps")
    m = re.search(r"<apps_selected>(.*?)</apps_selected>", body, re.S)
    if m:
        for appid in re.findall(r"<app_id>\s*(\d+)\s*</app_id>", m.group(1)):
            prefs.selected_apps[int(appid)] = False
    for tag, pt in (("no_cpu", 0), ("no_cuda", 1), ("no_ati", 2), ("no_intel_gpu", 3),
                    ("no_apple_gpu", 4)):
        prefs.dont_use_proc_type[pt] = flag(tag)
    if flag("no_gpus"):
        for pt in range(1, NPROC_TYPES):
            prefs.dont_use_proc_type[pt] = True
    prefs.max_jobs_in_progress = number("max_jobs")
    prefs.max_cpus = number("max_cpus")
    return prefs


def app_not_selected(work, appid):
    sel = work.prefs.selected_apps
    if not sel:
        return False
    if appid in sel:
        sel[appid] = True
        return False
    return True


def client_platforms(request, job_array):
    """The request's platform rows (primary, then alternates; alternates are
    ignored for the anonymous platform), as the handler must check first."""
    names = [request.platform_name] if request.anonymous_platform else request.platforms
    out = []
    for name in names:
        p = job_array.lookup_platform(name)
        if p is not None and p not in out:
            out.append(p)
    return out


def _max_allowable_disk(work):
    h = work.hinfo
    prefs = work.req.global_prefs
    cfg = work.cfg
    # BOINC's GLOBAL_PREFS defaults where the client sent none
    min_free_gb = prefs.disk_min_free_gb or 0.1
    max_used_pct = prefs.disk_max_used_pct or 90.0
    max_used_gb = prefs.disk_max_used_gb
    if min_free_gb < cfg.default_disk_min_free_gb:
        min_free_gb = cfg.default_disk_min_free_gb
    used = h.d_boinc_used_total
    x = h.d_free - min_free_gb * GIGA
    if used and used > 0:
        if max_used_pct > 0:
            x = min(x, h.d_total * max_used_pct / 100.0 - used)
        if max_used_gb > 0:
            x = min(x, max_used_gb * GIGA - used)
    if x < 0:
        work.disk_insufficient = True
        work.reason("disk", "no disk space available for BOINC on the host (%.2f GB short)"
                    % (-x / GIGA))
        return 0.0
    return x


def _setup(ctx, job_array):
    """send_work_setup(), once per request (kept on ctx.work)."""
    work = ctx.work
    if work is not None and work.ja is job_array:
        return work
    work = Work(ctx, job_array)
    ctx.work = work
    cfg, req, h = work.cfg, work.req, work.hinfo

    work.seconds_to_fill = _clamp_req(req.work_req_seconds)
    work.anonymous = req.anonymous_platform
    work.platforms = client_platforms(req, job_array)
    work.ja_have_apps = job_array.have_apps_for_proc_type
    work.prefs = _parse_project_prefs(work.user.get("project_prefs"),
                                      work.host.get("venue", ""))
    _load_host_app_versions(work)

    # the client's own app versions (anonymous platform)
    work.client_has_apps = [False] * NPROC_TYPES
    work.cavs = []
    for cav in req.app_versions:
        app = _app_by_name(job_array, cav.app_name)
        pt = _COPROC_TYPE_TO_PT.get(cav.coproc_type, 0)
        usage = HostUsage(cav.flops or h.p_fpops)
        usage.proc_type = pt
        usage.avg_ncpus = cav.avg_ncpus if (cav.avg_ncpus or pt) else 1.0
        usage.gpu_usage = cav.coproc_count if pt else 0.0
        work.cavs.append((cav, app, usage))
        if app is not None:
            work.client_has_apps[pt] = True

    # disk, RAM, availability
    work.disk_available = _max_allowable_disk(work)
    work.ram = h.m_nbytes if h.m_nbytes > 0 else DEFAULT_RAM_SIZE
    busy = (req.global_prefs.ram_max_used_busy_pct or 50.0) / 100.0
    idle = (req.global_prefs.ram_max_used_idle_pct or 90.0) / 100.0
    work.usable_ram = work.ram * min(max(busy, idle), 1.0)
    if req.core_client_version <= 41900:
        cpu_frac = gpu_frac = h.on_frac
    else:
        cpu_frac = h.active_frac * h.on_frac
        gpu_frac = h.gpu_active_frac * h.on_frac
    work.cpu_frac = min(max(cpu_frac, FRAC_MIN), 1.0)
    work.gpu_frac = min(max(gpu_frac, FRAC_MIN), 1.0)

    # job limits
    n = h.p_ncpus or work.host.get("p_ncpus", 0) or 0
    pct = req.global_prefs.max_ncpus_pct
    if pct and pct < 100:
        n = int(n * pct / 100.0)
    n = max(1, min(n, cfg.max_ncpus or 64, MAX_CPUS))
    if work.prefs.max_cpus:
        n = min(n, work.prefs.max_cpus)
    work.effective_ncpus = n
    work.ninstances[0] = n
    ngpus = 0
    cpu_res = req.resources[0] if req.resources else None
    if cpu_res is not None:
        work.req_secs[0] = _clamp_req(cpu_res.req_secs)
        work.req_instances[0] = cpu_res.req_instances
        work.est_delay[0] = cpu_res.estimated_delay
    for res in req.resources[1:]:
        pt = res.proc_type
        if not 0 < pt < NPROC_TYPES or not res.count:
            continue
        work.ninstances[pt] = min(res.count, MAX_GPUS)
        ngpus += work.ninstances[pt]
        work.req_secs[pt] = _clamp_req(res.req_secs)
        work.req_instances[pt] = res.req_instances
        work.est_delay[pt] = (res.estimated_delay if res.estimated_delay >= 0
                              else work.est_delay[0])
    work.effective_ngpus = ngpus
    mult = n + cfg.gpu_multiplier * ngpus
    if cfg.non_cpu_intensive:
        mult = 1
        work.ninstances[0] = 1
        if ngpus:
            work.effective_ngpus = 1
    work.max_jobs_per_rpc = mult * cfg.max_wus_to_send if cfg.max_wus_to_send else 999999
    work.rsc_spec_request = any(work.req_secs)
    work.limits = Limits(cfg, work.ninstances)
    for other in req.other_results:
        app, pt = None, 0
        if 0 <= other.app_version < len(work.cavs):
            cav, app, usage = work.cavs[other.app_version]
            if app is not None:
                pt = usage.proc_type
        if app is None and other.plan_class:
            pt = shmem.plan_class_to_proc_type(other.plan_class)
        work.limits.register(app, pt)

    if cfg.debug_send:
        work.log.normal("[send] CPU: req %.2f sec, %.2f instances; est delay %.2f"
                        % (work.req_secs[0], work.req_instances[0], work.est_delay[0]))
        work.log.normal("[send] work_req_seconds: %.2f secs" % work.seconds_to_fill)
        work.log.normal("[send] available disk %.2f GB, usable RAM %.2f MB"
                        % (work.disk_available / GIGA, work.usable_ram / MEGA))
    if cfg.debug_quota:
        work.log.normal("[quota] effective ncpus %d ngpus %d; max jobs per RPC: %d"
                        % (n, ngpus, work.max_jobs_per_rpc))
        work.limits.log(work.log)
    return work


def _app_by_name(ja, name):
    for a in ja.apps:
        if a["name"] == name:
            return a
    return None


# ---------------------------------------------------------------------------
# host_app_version rows: daily quota, reliability, trust

def _day_of_year(t, offset):
    return time.localtime(t + offset).tm_yday


def _load_host_app_versions(work):
    """Read the host's rows; initialise max_jobs_per_day from daily_result_quota
    and reset n_jobs_today on a new day (offset by a per-host random 0-24 h)."""
    if not work.hostid:
        return
    cfg = work.cfg
    q = cfg.daily_result_quota
    last = work.ctx.last_rpc_time
    if last is None:
        last = work.host.get("rpc_time", 0) or 0
    offset = random.Random(work.hostid).random() * 86400
    new_day = _day_of_year(last, offset) != _day_of_year(work.now, offset)
    is_linuxish = any(w in (work.hinfo.os_name or "") for w in ("Windows", "Linux")) or (
        "Darwin" in (work.hinfo.os_name or "") and "Power Macintosh" not in work.hinfo.p_vendor)
    multiplier = 1.0 if is_linuxish else 1.8
    for row in work.db.query("SELECT * FROM host_app_version WHERE host_id = %s",
                             (work.hostid,)):
        gavid = row["app_version_id"]
        if q and row["max_jobs_per_day"] == 0:
            row["max_jobs_per_day"] = q
            work.hav_quota_init.add(gavid)
        if new_day and row["n_jobs_today"]:
            row["n_jobs_today"] = 0
            work.hav_reset.add(gavid)
        row["daily_quota_exceeded"] = False
        row["reliable"] = _reliable(cfg, row, multiplier)
        if row["reliable"]:
            work.has_reliable_version = True
        cv = row["consecutive_valid"]
        row["trusted"] = cv >= CONS_VALID_UNREPLICATED and random.random() > 1.0 / cv
        work.havs[gavid] = row


def _reliable(cfg, hav, multiplier):
    if (hav["turnaround_n"] > MIN_HOST_SAMPLES and cfg.reliable_max_avg_turnaround
            and hav["turnaround_avg"] > cfg.reliable_max_avg_turnaround * multiplier):
        return False
    if hav["consecutive_valid"] < CONS_VALID_RELIABLE:
        return False
    if cfg.daily_result_quota and hav["max_jobs_per_day"] < cfg.daily_result_quota:
        return False
    return True


def _scaled_max_jobs_per_day(work, hav, usage):
    n = hav["max_jobs_per_day"]
    if n == 1:
        return 1
    if usage.proc_type == 0:
        ncpus = work.hinfo.p_ncpus or work.host.get("p_ncpus", 0)
        if ncpus:
            n *= ncpus
    else:
        if work.ninstances[usage.proc_type]:
            n *= work.ninstances[usage.proc_type]
        if work.cfg.gpu_multiplier:
            n *= work.cfg.gpu_multiplier
    return n


def daily_quota_exceeded(work, gavid, usage):
    """True if the host has used its daily quota of this (generalised) app version.

    Without ``daily_result_quota`` a row whose quota was never set is not
    limited (C++ treats it as exhausted from the host's second RPC on)."""
    hav = work.havs.get(gavid)
    if hav is None:
        return False
    if hav["max_jobs_per_day"] == 0 and not work.cfg.daily_result_quota:
        return False
    q = _scaled_max_jobs_per_day(work, hav, usage)
    if hav["n_jobs_today"] >= q:
        hav["daily_quota_exceeded"] = True
        work.quota_exceeded = hav
        work.add_no_work_message("Daily job limit (%d) has been reached" % q)
        work.reason("daily_quota", "daily quota of [AV#%d] reached (%d of %d jobs today)"
                    % (gavid, hav["n_jobs_today"], q))
        if work.cfg.debug_quota:
            work.log.normal("[quota] [AV#%d] daily quota exceeded: %d >= %d"
                            % (gavid, hav["n_jobs_today"], q))
        return True
    return False


def _write_host_app_versions(work):
    """Persist n_jobs_today / max_jobs_per_day changes and create missing rows."""
    db = work.db
    for gavid, hav in work.havs.items():
        sent = work.hav_added.pop(gavid, 0)
        sets, params = [], []
        if gavid in work.hav_reset:
            sets.append("n_jobs_today = %s")
            params.append(sent)
        elif sent:
            sets.append("n_jobs_today = n_jobs_today + %s")
            params.append(sent)
        if gavid in work.hav_quota_init:
            sets.append("max_jobs_per_day = %s")
            params.append(hav["max_jobs_per_day"])
        if sets:
            db.execute("UPDATE host_app_version SET %s WHERE host_id = %%s AND "
                       "app_version_id = %%s" % ", ".join(sets),
                       params + [work.hostid, gavid])
    for gavid, sent in work.hav_added.items():
        if sent:
            db.execute("INSERT INTO host_app_version (host_id, app_version_id, n_jobs_today) "
                       "VALUES (%s, %s, %s) ON DUPLICATE KEY UPDATE "
                       "n_jobs_today = n_jobs_today + VALUES(n_jobs_today)",
                       (work.hostid, gavid, sent))
            if work.cfg.debug_credit:
                work.log.normal("[credit] created host_app_version record (%d, %d)"
                                % (work.hostid, gavid))
    work.hav_added = {}
    work.hav_reset = set()
    work.hav_quota_init = set()


# ---------------------------------------------------------------------------
# app version choice

def _max_32b_address_space(platform_name):
    for word, size in (("windows", 2 * GIGA), ("linux", 3 * GIGA), ("darwin", 4 * GIGA),
                       ("solaris", 4 * GIGA), ("anonymous", 2 * GIGA)):
        if word in platform_name:
            return size
    return 2 * GIGA


def _host_fpops(work):
    return work.hinfo.p_fpops or work.host.get("p_fpops", 0) or 0.0


def _estimate_flops(work, usage, av, hav):
    """Projected FLOPS from host / version statistics (estimate_flops)."""
    cfg = work.cfg
    if not cfg.rte_no_stats and hav is not None and hav["et_n"] > MIN_HOST_SAMPLES:
        if cfg.estimate_flops_from_hav_pfc:
            new = usage.peak_flops / (hav["pfc_avg"] + 1e-18)
        else:
            new = 1.0 / hav["et_avg"] if hav["et_avg"] > 0 else usage.projected_flops
        usage.projected_flops = min(new, ET_RATIO_LIMIT * usage.projected_flops)
    elif not cfg.rte_no_stats and av["pfc_n"] > MIN_VERSION_SAMPLES and av["pfc_avg"] > 0:
        usage.projected_flops = usage.peak_flops / av["pfc_avg"]
    else:
        fpops = _host_fpops(work)
        if fpops <= 0:
            fpops = 1e9
        usage.projected_flops = fpops * (usage.avg_ncpus + GPU_CPU_RATIO * usage.gpu_usage)


def _need_this_resource(work, pt):
    return not work.rsc_spec_request or work.need_proc_type(pt)


def get_app_version(work, wu, app, check_req=True, reliable_only=False):
    """The best app version of ``app`` for this job on this host, or None."""
    need64 = wu["rsc_memory_bound"] > _max_32b_address_space(work.req.platform_name)
    if app.get("homogeneous_app_version"):
        if work.anonymous:
            return None
        if wu.get("app_version_id"):
            return _committed_app_version(work, wu, app)
    key = (app["id"], need64, wu.get("app_version_num") or 0)
    if key in work.best:
        bav = work.best[key]
        if bav is None:
            return None
        stale = work.limits.exceeded(app, bav.proc_type) or (
            check_req and work.rsc_spec_request and not work.need_proc_type(bav.proc_type))
        if not stale:
            return bav
        del work.best[key]
    if work.anonymous:
        bav = _get_app_version_anonymous(work, app, need64, reliable_only)
    else:
        bav = _get_app_version_platforms(work, wu, app, need64, check_req, reliable_only)
    work.best[key] = bav
    return bav


def _get_app_version_platforms(work, wu, app, need64, check_req, reliable_only):
    cfg = work.cfg
    pinned = wu.get("app_version_num") or 0
    ccv = work.req.core_client_version
    best, best_flops = None, 0.0
    any_version = False
    for p in work.platforms:
        if need64 and "64" not in p["name"]:
            continue
        found_feasible = False
        for av in work.ja.app_versions:
            if av["appid"] != app["id"] or av["platformid"] != p["id"]:
                continue
            if pinned:
                if av["version_num"] != pinned:
                    continue
            elif av["deprecated"]:
                continue
            any_version = True
            if av["beta"] and not work.prefs.allow_beta_work:
                work.reason("beta", "[AV#%d] is a beta version and the user doesn't "
                            "accept beta work" % av["id"])
                continue
            if av["plan_class"]:
                usage = plan_class_usage(work, av, wu)
                if usage is None:
                    continue
                if not work.req.client_cap_plan_class and not usage.is_sequential():
                    continue
            else:
                usage = HostUsage(_host_fpops(work))
            pt = usage.proc_type
            if work.prefs.dont_use_proc_type[pt]:
                work.reason("prefs_proc_type", "the user's preferences exclude %s jobs"
                            % PROC_TYPE_NAMES[pt])
                continue
            hav = work.havs.get(av["id"])
            if reliable_only and not (hav and hav["reliable"]):
                continue
            if daily_quota_exceeded(work, av["id"], usage):
                continue
            if work.limits.exceeded(app, pt):
                if cfg.debug_version_select:
                    work.log.normal("[version] [AV#%d] jobs in progress limit exceeded"
                                    % av["id"])
                lim = work.limits.app_limits.get(app["name"])
                if lim is not None and lim.exceeded(pt):
                    work.reason("in_progress_limit", "config_aux.xml's %s for app %s "
                                "reached" % (lim.describe(pt), app["name"]))
                else:
                    work.reason("in_progress_limit", "project %s reached"
                                % work.limits.project.describe(pt))
                continue
            if check_req and not _need_this_resource(work, pt):
                continue
            if ccv < av["min_core_version"]:
                work.outdated_client = True
                work.reason("client_version", "[AV#%d] needs client version %d or later "
                            "(client is %d)" % (av["id"], av["min_core_version"], ccv))
                continue
            if av["max_core_version"] and ccv > av["max_core_version"]:
                work.reason("client_version", "[AV#%d] needs client version %d or "
                            "earlier (client is %d)" % (av["id"], av["max_core_version"], ccv))
                continue
            found_feasible = True
            r, n = 1.0, 1
            if hav is not None:
                n = max(int(hav["pfc_n"]), 1)
                old = usage.projected_flops
                _estimate_flops(work, usage, av, hav)
                usage.projected_flops = (usage.projected_flops * (n - 1) + old) / n
                if (hav["pfc_n"] == 0 and hav["max_jobs_per_day"] == 1
                        and hav["consecutive_valid"] == 0 and random.random() > 0.01):
                    usage.projected_flops *= 0.01       # this version keeps failing here
            if cfg.version_select_random_factor:
                r = max(r + cfg.version_select_random_factor * random.gauss(0.0, 1.0) / n, 0.1)
            if r * usage.projected_flops > best_flops:
                usage.projected_flops *= r
                best_flops = usage.projected_flops
                best = (av, usage)
            if cfg.debug_version_select:
                work.log.normal("[version] [AV#%d] %.2f GFLOPS (r=%.2f)"
                                % (av["id"], usage.projected_flops / 1e9, r))
        if cfg.prefer_primary_platform and found_feasible:
            break
    if best is None:
        if not any_version:
            name = app.get("user_friendly_name") or app["name"]
            work.add_no_work_message("%s is not available for your type of computer." % name)
            work.reason("no_app_version", "no version of app %s for platform(s) %s"
                        % (app["name"], ", ".join(p["name"] for p in work.platforms)
                           or work.req.platform_name))
        return None
    av, usage = best
    hav = work.havs.get(av["id"])
    _estimate_flops(work, usage, av, hav)
    bav = BestVersion(app["id"], av, None, usage, av["id"])
    bav.reliable = bool(hav and hav["reliable"])
    bav.trusted = bool(hav and hav["trusted"])
    if cfg.debug_version_select:
        work.log.normal("[version] Best version of app %s is [AV#%d] (%.2f GFLOPS)"
                        % (app["name"], av["id"], usage.projected_flops / 1e9))
    return bav


def _committed_app_version(work, wu, app):
    """Homogeneous app version: the version the workunit is committed to, if it
    suits this host (plain versions only until plan classes exist)."""
    avid = wu["app_version_id"]
    av = next((a for a in work.ja.app_versions if a["id"] == avid), None)
    if av is None:
        av = work.db.query_one("SELECT * FROM app_version WHERE id = %s", (avid,))
        if av is None:
            return None
    if av["platformid"] not in [p["id"] for p in work.platforms]:
        return None
    if av["plan_class"]:
        usage = plan_class_usage(work, av, wu)
        if usage is None:
            return None
    else:
        usage = HostUsage(_host_fpops(work))
    if not _need_this_resource(work, usage.proc_type):
        return None
    return BestVersion(app["id"], av, None, usage, av["id"])


def _get_app_version_anonymous(work, app, need64, reliable_only):
    best, found = None, False
    for cav, capp, usage in work.cavs:
        if capp is None or capp["id"] != app["id"]:
            continue
        if need64 and "64" not in (cav.platform or ""):
            continue
        gavid = app["id"] * 1000000 - usage.resource_type()
        hav = work.havs.get(gavid)
        if reliable_only and not (hav and hav["reliable"]):
            continue
        if daily_quota_exceeded(work, gavid, usage):
            continue
        if cav.version_num < app["min_version"]:
            continue
        found = True
        if not _need_this_resource(work, usage.proc_type):
            continue
        if best is None or usage.projected_flops > best[2].projected_flops:
            best = (cav, gavid, usage)
    if not found:
        work.add_no_work_message("Your app_info.xml file doesn't have a usable version of %s."
                                 % (app.get("user_friendly_name") or app["name"]))
        work.reason("no_app_version", "the client's app_info.xml has no usable version "
                    "of %s" % app["name"])
    if best is None:
        return None
    cav, gavid, usage = best
    usage = usage.copy()
    bav = BestVersion(app["id"], None, cav, usage, gavid)
    hav = work.havs.get(gavid)
    if hav is not None and hav["et_n"] > MIN_HOST_SAMPLES and hav["et_avg"] > 0:
        new = min(1.0 / hav["et_avg"], ET_RATIO_LIMIT * usage.projected_flops)
        bav.rsc_fpops_scale = usage.projected_flops / new
        usage.projected_flops = new
    bav.reliable = bool(hav and hav["reliable"])
    bav.trusted = bool(hav and hav["trusted"])
    return bav


# ---------------------------------------------------------------------------
# feasibility

def _available_frac(work, bav):
    return work.gpu_frac if bav.proc_type else work.cpu_frac


def estimate_duration(work, wu, bav):
    """Seconds the job should take on this host with this version."""
    est = wu["rsc_fpops_est"]
    if est <= 0:
        est = 1e12
    return est / bav.usage.projected_flops / _available_frac(work, bav)


def _app_name(app):
    return app.get("user_friendly_name") or app["name"]


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
            % (_app_name(app), mem / MEGA, work.usable_ram / MEGA))
        work.mem_insufficient = True
        work.reason("memory", "%s needs %.2f MB RAM, the host has %.2f MB usable"
                    % (app["name"], mem / MEGA, work.usable_ram / MEGA))
        return "memory"
    diff = wu["rsc_disk_bound"] - work.disk_available
    if diff > 0:
        work.add_no_work_message(
            "%s needs %0.2fMB more disk space.  You currently have %0.2f MB available and "
            "it needs %0.2f MB." % (_app_name(app), diff / MEGA, work.disk_available / MEGA,
                                    wu["rsc_disk_bound"] / MEGA))
        work.disk_insufficient = True
        work.reason("disk", "%s needs %.2f MB disk, the host has %.2f MB for BOINC"
                    % (app["name"], wu["rsc_disk_bound"] / MEGA, work.disk_available / MEGA))
        return "disk"
    bw = wu.get("rsc_bandwidth_bound") or 0
    if bw and work.hinfo.n_bwdown and bw > work.hinfo.n_bwdown:
        work.add_no_work_message(
            "%s requires %0.2f KB/sec download bandwidth.  Your computer has been measured "
            "at %0.2f KB/sec." % (_app_name(app), bw / KILO, work.hinfo.n_bwdown / KILO))
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


def work_needed(work):
    """work_needed(): whether to look for more jobs for this request."""
    mj = work.prefs.max_jobs_in_progress
    if mj and work.limits.total >= mj:
        work.max_jobs_on_host_exceeded = True
        work.reason("in_progress_limit", "the user's max_jobs preference (%d) is reached" % mj)
        return False
    some_type_allowed = False
    for pt in range(NPROC_TYPES):
        if not work.have_apps(pt):
            continue
        if work.limits.exceeded(None, pt):
            if work.cfg.debug_quota:
                work.log.normal("[quota] reached limit on %s jobs in progress"
                                % PROC_TYPE_NAMES[pt])
                work.limits.log(work.log)
            work.req_secs[pt] = 0.0
            work.req_instances[pt] = 0.0
            work.max_jobs_on_host_proc_type_exceeded[pt] = True
            work.reason("in_progress_limit", "project %s reached"
                        % work.limits.project.describe(pt))
        else:
            some_type_allowed = True
    if not some_type_allowed:
        if work.cfg.debug_send:
            work.log.normal("[send] config.xml max_jobs_in_progress limit exceeded")
        work.max_jobs_on_host_exceeded = True
        return False
    if work.njobs_sent >= work.max_jobs_per_rpc:
        return False
    if work.rsc_spec_request:
        return any(work.need_proc_type(pt) and work.have_apps(pt)
                   for pt in range(NPROC_TYPES))
    return work.seconds_to_fill > 0


# ---------------------------------------------------------------------------
# committing a job

def _matched_rows(db, affected):
    """Rows an UPDATE matched (MySQL counts only changed rows without FOUND_ROWS)."""
    if affected:
        return affected
    info = db.conn.info() or ""
    if isinstance(info, bytes):
        info = info.decode("ascii", "replace")
    for part in info.split():
        if part.isdigit():
            return int(part)
    return 0


def _text(v):
    return v.decode("utf-8", "replace") if isinstance(v, (bytes, bytearray)) else v


def add_result_to_reply(work, result, wu, app, bav, resend=False):
    """Claim ``result`` for this host and put it in the reply (daemons.md §2.6).

    The result row is changed by a conditional UPDATE (``server_state`` must
    still be what was read) that must match exactly one row; otherwise
    another request won the job and None is returned.
    """
    cfg, db = work.cfg, work.db
    now = work.now
    usage = bav.usage
    deadline = now + wu["delay_bound"]
    grace = cfg.report_grace_period
    # The workunit first (as BOINC): if we die before the claim, a lowered
    # transition_time is harmless; a commitment to an HR class / app version
    # made by another request since we read the workunit makes this fail.
    committed = _update_wu_on_send(work, wu, app, bav, deadline + grace)
    if committed is None:
        return None
    old_state = result["server_state"]
    n = db.execute(
        "UPDATE result SET server_state = %s, hostid = %s, userid = %s, sent_time = %s, "
        "report_deadline = %s, flops_estimate = %s, app_version_id = %s "
        "WHERE id = %s AND server_state = %s",
        (SERVER_STATE_IN_PROGRESS, work.hostid, work.userid, now, deadline + grace,
         usage.peak_flops, bav.app_version_id(), result["id"], old_state))
    if _matched_rows(db, n) != 1:
        work.log.critical("[RESULT#%d] [HOST#%d]: CAN'T SEND, already sent to another host"
                          % (result["id"], work.hostid))
        work.taken += 1
        work.reason("taken", "the job chosen was sent to another host meanwhile")
        return None
    result = dict(result)
    result.update(server_state=SERVER_STATE_IN_PROGRESS, hostid=work.hostid,
                  userid=work.userid, sent_time=now, report_deadline=deadline + grace,
                  flops_estimate=usage.peak_flops, app_version_id=bav.app_version_id())
    for k in ("xml_doc_in", "xml_doc_out", "stderr_out"):
        if k in result:
            result[k] = _text(result[k])
    wu = dict(wu)
    wu.update(committed)
    wu["xml_doc"] = _text(wu.get("xml_doc"))
    if usage.mem_usage:
        wu["rsc_memory_bound"] = usage.mem_usage
    if bav.rsc_fpops_scale != 1.0:
        wu["rsc_fpops_est"] *= bav.rsc_fpops_scale
        wu["rsc_fpops_bound"] *= bav.rsc_fpops_scale
    plan_class = bav.av["plan_class"] if bav.av else (bav.cav.plan_class or "")
    job = SentJob(
        app=app, workunit=wu, result=result, app_version=bav.av,
        client_app_version=bav.cav, report_deadline=deadline, avg_ncpus=usage.avg_ncpus,
        flops=usage.projected_flops, plan_class=plan_class,
        coproc_type=PROC_TYPE_XML[usage.proc_type] if usage.proc_type else "",
        coproc_usage=usage.gpu_usage, gpu_ram=usage.gpu_ram, cmdline=usage.cmdline,
        resend=resend)
    work.ctx.reply.jobs.append(job)
    if cfg.debug_keyword and (wu.get("keywords") or "").strip():
        work.log.normal("[keyword] keywords: %s" % wu["keywords"])

    # what this job uses of the request
    work.disk_available -= wu["rsc_disk_bound"]
    est = estimate_duration(work, wu, bav)
    pt = usage.proc_type
    if work.rsc_spec_request:
        use = usage.avg_ncpus if pt == 0 else usage.gpu_usage
        work.req_secs[pt] -= est * use
        work.req_instances[pt] -= use
    else:
        work.seconds_to_fill -= est
    if pt == 0:
        ncpus = work.hinfo.p_ncpus or 1
        work.est_delay[0] += est * usage.avg_ncpus / ncpus
    elif work.ninstances[pt]:
        work.est_delay[pt] += est * usage.gpu_usage / work.ninstances[pt]
    work.njobs_sent += 1
    work.wus_in_reply.add(wu["id"])
    work.limits.register(app, pt)
    if not resend:
        hav = work.havs.get(bav.gavid)
        if hav is not None:
            hav["n_jobs_today"] += 1
        work.hav_added[bav.gavid] = work.hav_added.get(bav.gavid, 0) + 1
    if cfg.debug_send:
        work.log.normal("[send] [HOST#%d] sending [RESULT#%d %s] (est. dur. %.2fs)"
                        % (work.hostid, result["id"], result["name"], est))
    # adaptive replication
    if wu.get("target_nresults") == 1 and (app.get("target_nresults") or 0) > 1:
        if not bav.trusted:
            db.execute("UPDATE workunit SET target_nresults = %s, min_quorum = %s, "
                       "transition_time = %s WHERE id = %s",
                       (app["target_nresults"], app["target_nresults"], now, wu["id"]))
    if app.get("locality_scheduling") == LOCALITY_SCHED_LITE:
        add_job_files_to_host(work, wu)
    return job


def _update_wu_on_send(work, wu, app, bav, transition_time):
    """update_wu_on_send(): lower the workunit's transition_time and, for
    homogeneous app version / redundancy, commit it to this host's app
    version / HR class -- only if it is uncommitted or committed to the same
    (the transitioner may have reset it meanwhile).  Returns the committed
    fields, or None when the UPDATE matched no row (committed elsewhere)."""
    sets = ["transition_time = LEAST(transition_time, %s)"]
    params = [transition_time]
    where, where_params = [], []
    committed = {}
    if app.get("homogeneous_app_version") and bav.av:
        sets.append("app_version_id = %s")
        params.append(bav.av["id"])
        where.append("(app_version_id = 0 OR app_version_id = %s)")
        where_params.append(bav.av["id"])
        committed["app_version_id"] = bav.av["id"]
    hr_type = hr.app_hr_type(work.cfg, app)
    if hr_type:
        mine = host_hr_class(work, hr_type)
        sets.append("hr_class = %s")
        params.append(mine)
        where.append("(hr_class = 0 OR hr_class = %s)")
        where_params.append(mine)
        committed["hr_class"] = mine
    n = work.db.execute("UPDATE workunit SET %s WHERE id = %%s%s"
                        % (", ".join(sets), "".join(" AND " + w for w in where)),
                        params + [wu["id"]] + where_params)
    if _matched_rows(work.db, n) != 1:
        work.log.normal("add_result_to_reply: WU already sent to other HR class or app version")
        work.reason("hr_committed", "[WU#%d] was committed to another HR class or app "
                    "version meanwhile" % wu["id"])
        return None
    return committed


def _slow_check_and_read(work, slot, app=None, bav=None):
    """slow_check() and result_still_sendable() in one query.

    For apps with homogeneous redundancy or homogeneous app version the
    workunit's current hr_class / app_version_id are checked too: another
    request may have committed it since the feeder copied it; such a job is
    marked infeasible once more in the array (so committed jobs go first).

    Returns (CHECK_OK, result_row), (CHECK_NO_HOST, None) or (CHECK_NO_ANY, None);
    (CHECK_OK, None) when the result is no longer sendable.
    """
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
    row = work.db.query_one(
        "SELECT %s FROM result r LEFT JOIN workunit w ON w.id = r.workunitid "
        "WHERE r.id = %%s" % ", ".join(cols), params)
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
        if _already_sent_to_different_hr_class(work, wu, hr_type):
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
    pid = work.pid
    full = n <= FULL_SCAN_SLOTS or ja.n_high_priority > 0
    start = random.randrange(n)
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
            if state != shmem.PRESENT and state != pid:
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
    status, row = _slow_check_and_read(work, slot, app, bav)
    if status == CHECK_NO_HOST:
        ja.release(i, pid, empty=False)
        return None
    ja.release(i, pid, empty=True)
    if status == CHECK_NO_ANY or row is None:
        return None
    row.pop("n_mine", None)
    row.pop("wu_error_mask", None)
    wu = slot.wu
    if "xml_doc" not in wu:
        wu["xml_doc"] = ja.read_xml_doc(i)
    return add_result_to_reply(work, row, wu, app, bav)


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
            found.add(_text(row["name"]))
            if row["appid"] in appids:
                have.add(row["appid"])
    for name in names:
        if name not in found:
            work.log.normal("No such result: %s" % name)
    return have


def _send_job_for_app(work, app):
    """Send one job of NCI app ``app`` from the array; True if one was sent.
    Its jobs are alike: if the first one can't go to this host, none can."""
    ja, pid, cfg = work.ja, work.pid, work.cfg
    for i in range(ja.nslots):
        state, _, _, _, resultid, appid = ja.slot_head(i)
        if (state != shmem.PRESENT and state != pid) or appid != app["id"]:
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
    work.log.normal("no sendable NCI jobs for %s" % _app_name(app))
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
            work.log.normal("failed to send job for NCI app %s" % _app_name(app))


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
            and _host_files(work)):
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
    ja, pid = work.ja, work.pid
    debug = work.cfg.debug_send_job
    n = ja.nslots
    start = random.randrange(n)
    for j in range(n):
        i = (start + j) % n
        if debug:
            work.log.normal("[send_job] scanning slot %d" % i)
        state, _, _, _, resultid, appid = ja.slot_head(i)
        if state != shmem.PRESENT and state != pid:
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
# targeted and broadcast jobs (sched_assign.cpp)
#
# create_work --target_host/_user/_team makes a workunit with
# transitioner_flags TRANSITION_NO_NEW_RESULTS, --broadcast[_user|_team] one
# with TRANSITION_NONE, both with transition_time INT_MAX and no results, plus
# an assignment row (multi=1 for broadcasts).  The feeder never caches such
# workunits; the scheduler creates a result when it sends one to a host of
# the target and claims it at once.

ASSIGN_NONE, ASSIGN_HOST, ASSIGN_USER, ASSIGN_TEAM = 0, 1, 2, 3
SERVER_STATE_INACTIVE = 1
SERVER_STATE_OVER = 5
OUTCOME_SUCCESS = 1
VALIDATE_STATE_INVALID = 2

_result_seqno = 0


def _team_id(work):
    team = work.ctx.team
    return (team or {}).get("id", 0) or 0


def need_targeted_instance(work, wu):
    """need_targeted_instance(): whether a targeted workunit needs another
    instance, on this host.  Returns None if so, else the reason."""
    if wu["error_mask"]:
        return "it has an error or was cancelled"
    if wu["need_validate"]:
        return "it is waiting for validation"
    if wu["canonical_resultid"]:
        return "it is complete"
    if wu["transition_time"] < time.time():
        return "it is waiting for the transitioner"
    nunsent = ninprogress = nsuccess = 0
    for r in work.db.query("SELECT hostid, userid, server_state, outcome, validate_state "
                           "FROM result WHERE workunitid = %s", (wu["id"],)):
        if r["hostid"] == work.hostid:
            return "this host already has an instance of it"
        # BOINC checks the host only; a user-targeted job of quorum 2 would
        # then be validated by one volunteer against themselves
        if work.cfg.one_result_per_user_per_wu and r["userid"] == work.userid:
            return "this user already has an instance of it (one_result_per_user_per_wu)"
        state = r["server_state"]
        if state in (SERVER_STATE_INACTIVE, SERVER_STATE_UNSENT):
            nunsent += 1
        elif state == SERVER_STATE_IN_PROGRESS:
            ninprogress += 1
        elif state == SERVER_STATE_OVER:
            if r["outcome"] == OUTCOME_SUCCESS and r["validate_state"] != VALIDATE_STATE_INVALID:
                nsuccess += 1
    if wu["target_nresults"] - nunsent - ninprogress - nsuccess <= 0:
        return "it has all the instances it needs (%d unsent, %d in progress, %d done)" % (
            nunsent, ninprogress, nsuccess)
    return None


def _create_result(work, wu):
    """create_result() as the scheduler calls it for an assigned job: a new
    result WUNAME_PID_TIME_SEQ (UNSENT, or INACTIVE with a size class).
    Returns the row, or None after logging why it couldn't be made."""
    from boincpy.errors import BoincpyError
    from boincpy.templates import process_result_template
    global _result_seqno
    name = "%s_%d_%d_%d" % (wu["name"], work.pid, int(time.time()), _result_seqno)
    _result_seqno += 1
    template_file = _text(wu["result_template_file"])
    path = work.cfg.project_path(template_file)
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
        xml = process_result_template(text, name, work.cfg, rand=random.getrandbits(31),
                                      path=template_file)
    except (OSError, BoincpyError) as exc:
        work.log.critical("[WU#%d %s] create_result(): %s"
                          % (wu["id"], wu["name"], getattr(exc, "message", None) or exc))
        return None
    size_class = wu.get("size_class", -1)
    if size_class is None:
        size_class = -1
    state = SERVER_STATE_UNSENT if size_class < 0 else SERVER_STATE_INACTIVE
    rid = work.db.insert(
        "INSERT INTO result (create_time, workunitid, server_state, name, xml_doc_in, "
        "xml_doc_out, stderr_out, batch, random, appid, priority, size_class) "
        "VALUES (%s, %s, %s, %s, %s, '', '', %s, %s, %s, %s, %s)",
        (int(time.time()), wu["id"], state, name, xml, wu["batch"], random.getrandbits(31),
         wu["appid"], wu["priority"], size_class))
    return work.db.query_one("SELECT * FROM result WHERE id = %s", (rid,))


def send_assigned_job(work, asg, wu=None):
    """send_assigned_job(): create a result of the assignment's workunit and
    send it to this host.  Returns False if nothing could be tried (workunit,
    app or app version missing, app not selected, result not created); True
    once the result exists and its claim was attempted, as BOINC counts it."""
    if wu is None:
        wu = work.db.query_one("SELECT * FROM workunit WHERE id = %s", (asg["workunitid"],))
        if wu is None:
            work.log.critical("assigned WU %d not found" % asg["workunitid"])
            return False
    if app_not_selected(work, wu["appid"]):
        work.log.critical("Assigned WU %s is for app not selected by user" % wu["name"])
        work.reason("assigned", "assigned job %s is for an app the user didn't select"
                    % wu["name"])
        return False
    app = work.ja.lookup_app(wu["appid"])
    bav = get_app_version(work, wu, app, check_req=False) if app is not None else None
    if bav is None:
        work.log.critical("App version for assigned WU not found")
        work.reason("assigned", "no app version for assigned job %s on this host"
                    % wu["name"])
        return False
    result = _create_result(work, wu)
    if result is None:
        return False
    add_result_to_reply(work, result, wu, app, bav)
    if work.cfg.debug_assignment:
        work.log.normal("[assign] [WU#%d] [RESULT#%d] [HOST#%d] send assignment %d"
                        % (wu["id"], result["id"], work.hostid, asg["id"]))
    return True


def _send_jobs(work, assign_type, target_id):
    """send_jobs(): this host's targeted (multi=0) jobs of one target type."""
    db = work.db
    sent = False
    rows = db.query("SELECT * FROM assignment WHERE target_type = %s AND target_id = %s "
                    "AND multi = 0 ORDER BY id", (assign_type, target_id))
    for asg in rows:
        if not work_needed(work):
            break
        lock = _lock_workunit(work, asg["workunitid"])
        if lock is None:
            work.reason("assigned", "targeted [WU#%d] is being sent by another request"
                        % asg["workunitid"])
            continue
        try:
            wu = _send_targeted_job(work, asg)
        finally:
            db.query_one("SELECT RELEASE_LOCK(%s) AS released", (lock,))
        if wu is None:
            continue
        sent = True
        # time the job out if it doesn't come back (no grace period here, as BOINC)
        db.execute("UPDATE workunit SET transition_time = %s WHERE id = %s "
                   "AND transition_time > %s",
                   (int(time.time()) + wu["delay_bound"], wu["id"],
                    int(time.time()) + wu["delay_bound"]))
    return sent


ASSIGN_LOCK_WAIT = 5       # seconds a request waits for another to finish a targeted job


def _lock_workunit(work, wuid):
    """A MySQL named lock on one targeted workunit for this project: two
    scheduler processes deciding at once whether it needs another instance
    would both say yes (C++ has that race; one instance too many is sent).
    The lock goes with the connection if the CGI dies.  Returns its name, or
    None if another request held it for ASSIGN_LOCK_WAIT seconds."""
    name = "boincpy.assign.%s.%d" % (work.cfg.db_name[:40], wuid)
    row = work.db.query_one("SELECT GET_LOCK(%s, %s) AS got", (name, ASSIGN_LOCK_WAIT))
    return name if row is not None and row["got"] == 1 else None


def _send_targeted_job(work, asg):
    """One targeted assignment, under its workunit's lock: the workunit row
    if an instance was sent, else None (the reason is logged)."""
    db, cfg = work.db, work.cfg
    wu = db.query_one("SELECT * FROM workunit WHERE id = %s", (asg["workunitid"],))
    if wu is None:
        db.execute("DELETE FROM assignment WHERE id = %s", (asg["id"],))
        return None
    why = need_targeted_instance(work, wu)
    if why:
        if cfg.debug_assignment:
            work.log.normal("[assign] [HOST#%d] not sending targeted job %s: %s"
                            % (work.hostid, wu["name"], why))
        work.reason("assigned", "targeted job %s: %s" % (wu["name"], why))
        return None
    if cfg.debug_send:
        work.log.normal("sending targeted job: %s" % wu["name"])
    if not send_assigned_job(work, asg, wu):
        work.log.normal("failed to send targeted job: %s" % wu["name"])
        return None
    return wu


def send_targeted_jobs(work):
    """Send this host the jobs targeted at its user, itself and its team
    (enable_assignment; send_targeted_jobs()).  Returns True if any was sent:
    BOINC sends no other jobs in that reply."""
    if work.cfg.debug_send:
        work.log.normal("checking for targeted jobs")
    sent = _send_jobs(work, ASSIGN_USER, work.userid)
    sent |= _send_jobs(work, ASSIGN_HOST, work.hostid)
    sent |= _send_jobs(work, ASSIGN_TEAM, _team_id(work))
    work.best.clear()
    return sent


def send_broadcast_jobs(work):
    """Send this host one instance of every broadcast job (multi=1 assignment,
    from the feeder's tables) for everyone, its user or its team, unless it
    already has one (enable_assignment_multi; send_broadcast_jobs()).
    Returns True if any was sent."""
    sent = False
    for asg in work.ja.tables().get("assignments", ()):
        if work.cfg.debug_assignment:
            work.log.normal("[assign] processing broadcast type %d" % asg["target_type"])
        t = asg["target_type"]
        if t == ASSIGN_USER and work.userid != asg["target_id"]:
            continue
        if t == ASSIGN_TEAM and _team_id(work) != asg["target_id"]:
            continue
        if t not in (ASSIGN_NONE, ASSIGN_USER, ASSIGN_TEAM):
            continue
        have = work.db.query_one("SELECT id FROM result WHERE workunitid = %s AND hostid = %s "
                                 "LIMIT 1", (asg["workunitid"], work.hostid))
        if have is not None:
            continue
        wu = work.db.query_one("SELECT * FROM workunit WHERE id = %s", (asg["workunitid"],))
        if wu is None:
            continue
        if wu["error_mask"]:
            # C++ sends a cancelled broadcast job anyway; the host would only
            # be told to abort it on its next request
            work.reason("assigned", "broadcast job %s was cancelled" % wu["name"])
            continue
        if send_assigned_job(work, asg, wu):
            sent = True
    work.best.clear()
    return sent


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
    work = _setup(ctx, job_array)
    sent_before = work.njobs_sent
    if not work.platforms:
        work.reason("no_platform", "platform %s is not supported by this project"
                    % ctx.request.platform_name)
        _finish(work, sent_before)
        return 0
    # BOINC's no_work() (the handler's check) is skipped with enable_assignment:
    # targeted jobs are not in the array, so an empty array still gets them.
    reserved = job_array.reserve_any(work.pid)
    if not reserved and not work.cfg.enable_assignment:
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
        job_array.restore(work.pid)
        if not work.hr_reject_perm:
            _write_host_app_versions(work)
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
                    "redundancy class for any app" % _host_hr_fields(work))
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
    if getattr(work.ja, "have_nci_app", False):
        send_nci(work)
    if not reserved:                    # enable_assignment and an empty array
        return
    if not work_needed(work):
        return
    locality = work.cfg.locality_scheduling or work.cfg.locality_scheduler_fraction
    if locality:
        work.reason("locality", "locality scheduling is not supported yet; using the "
                    "job cache")
    if cfg.sched_old and not locality:
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
        for prio, text in plan_class.gpu_messages(_plan_host(work), work.ja_have_apps,
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
                reply.add_message("No tasks are available for %s" % _app_name(app),
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
                reply.add_message("No tasks are available for %s" % _app_name(app),
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
    work = _setup(ctx, job_array)
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
        _write_host_app_versions(work)
    if n_lost and cfg.debug_resend:
        work.log.normal("[resend] [HOST#%d] %d lost results, resent %d"
                        % (work.hostid, n_lost, n_resent))
    return did_any


def _expire_lost_result(work, result, wu):
    """A lost result that can't be resent: deadline now - 1 (+ grace) so the
    transitioner times it out."""
    grace = work.cfg.report_grace_period
    deadline = work.now - 1
    n = work.db.execute("UPDATE result SET report_deadline = %s WHERE id = %s "
                        "AND server_state = %s",
                        (deadline + grace, result["id"], SERVER_STATE_IN_PROGRESS))
    if not _matched_rows(work.db, n):
        return
    if wu is not None:
        work.db.execute("UPDATE workunit SET transition_time = LEAST(transition_time, %s) "
                        "WHERE id = %s", (deadline + grace, wu["id"]))
    work.ctx.reply.add_message("Didn't resend lost task %s (expired)" % result["name"],
                               PRIORITY_LOW)
