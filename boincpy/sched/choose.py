"""Job choice's per-request state, and the machinery every way of sending uses.

The order of sending -- targeted and broadcast jobs, non-CPU-intensive apps,
the score-based or ``<sched_old/>`` scan, resending lost results -- is in
:mod:`boincpy.sched.send`, which the handler calls; the feature modules it
calls build on this one (daemons.md §2).  Job choice, imports running down::

    send.py     the order of sending, the scans, NCI, messages, resends
                (sched_send.cpp, sched_array.cpp, sched_nci.cpp, sched_resend.cpp)
    assign.py   targeted and broadcast jobs (sched_assign.cpp)
    locality.py locality scheduling (sched_locality.cpp)
    score.py    job_score and its terms (sched_score.cpp, sched_keyword.cpp)
    check.py    feasibility: the fast checks and the slow check against the
                database (sched_check.cpp)
    edf.py      workload_sim's deadline simulation (edf_sim.cpp)
    version.py  app version choice and plan class call-outs (sched_version.cpp)
    choose.py   this module
    limits.py   jobs-in-progress limits (sched_limit.cpp)
    prefs.py    the user's project preferences
    hr.py       homogeneous redundancy host classes (hr.cpp, sched_hr.cpp)
    plan_class.py  plan_class_spec.xml and the built-in plan classes

What this module holds:

* the request's state: :class:`Work` (WORK_REQ) and :class:`BestVersion`
  (BEST_APP_VERSION); its in-progress limits are :mod:`boincpy.sched.limits`'s
  and the user's preferences :mod:`boincpy.sched.prefs`'s;
* setup (``send_work_setup``, :func:`setup_work`): per-resource requests, disk,
  usable RAM, availability, effective CPUs, ``max_jobs_per_rpc``, in-progress
  limits (counting the client's <other_results>), project preferences,
  host_app_version rows (quota initialisation and the day rollover of
  ``n_jobs_today``, written back by :func:`write_host_app_versions`);
* :func:`work_needed` and :func:`estimate_duration`;
* the commit, :func:`add_result_to_reply`: the conditional UPDATE of the
  workunit (its homogeneous-redundancy class / app version commitment) and
  of the result, which must change exactly one row;
* locality scheduling lite's list of the sticky files on the host (the
  score term is :func:`boincpy.sched.score.locality_lite_score`).
"""

import posix     # not os, on a classic CGI's path (boincpy.hot_path.join)
import time

from boincpy import rand, shmem
from boincpy.db.host_app_version import add_jobs_today, host_rows, record_jobs_sent
from boincpy.db.result import mark_result_sent
from boincpy.db.workunit import commit_on_send, replicate_workunit
from boincpy.proc_types import NPROC_TYPES, PROC_TYPE_NAMES, PROC_TYPE_XML
from boincpy.sched import hr
from boincpy.sched.context import SentJob
from boincpy.sched.hosts import is_new_day
from boincpy.sched.hr import host_hr_class
from boincpy.sched.limits import Limits
from boincpy.sched.plan_class import HostUsage  # noqa: F401  (choose.HostUsage, as before)
from boincpy.sched.prefs import parse_project_prefs
from boincpy.xml.scan import blocks, flag, leaf_text

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
DELAY_MAX = 2 * 86400.0


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
        self.pid = posix.getpid()
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
        # slots of jobs claimed in the request's transaction: reserved until
        # it commits, so the feeder can't put the job back meanwhile
        self.pending_slots = set()
        self.has_reliable_version = False
        self.taken = 0
        self.pc_specs = False               # plan_class_spec.xml not looked for yet
        self.plan_host = None
        self.host_files = None              # locality lite: sticky files on the host
        self.locality = None                # locality scheduling's state (locality.py)
        self.wu_sticky = {}                 # wuid -> sticky input file names
        self.user_kw = None                 # keyword_sched: (yes ids, no ids)
        self.wu_keywords = {}               # wuid -> keyword ids
        self.ip_results = None              # workload_sim: the simulated queue (edf.py)
        self.edf_rejects = None
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

    def may_take(self, i, state):
        """Whether slot ``i``, in ``state``, holds a job this request may
        claim: PRESENT, or reserved by this process and not already claimed
        by this request (waiting for its commit)."""
        return state == shmem.PRESENT or (state == self.pid and i not in self.pending_slots)

    def need_proc_type(self, pt):
        if self.rsc_spec_request:
            return self.req_secs[pt] > 0 or self.req_instances[pt] > 0
        return self.seconds_to_fill > 0

    def have_apps(self, pt):
        if self.anonymous:
            return self.client_has_apps[pt]
        return self.ja_have_apps[pt]


# ---------------------------------------------------------------------------
# locality scheduling lite: the sticky files the host has, as this request
# goes on (the score term is boincpy.sched.score.locality_lite_score)

LOCALITY_SCHED_LITE = 1


def host_sticky_files(work):
    """Names of the sticky files the host has: the client's <file_info>s,
    plus those of lite jobs sent in this request (add_job_files_to_host)."""
    if work.host_files is None:
        work.host_files = {name for name, _ in work.req.sticky_files}
    return work.host_files


def sticky_input_files(work, wuid, xml_doc):
    """The names of the <file_info>s marked <sticky/> in a workunit's xml_doc
    (kept per workunit for the request)."""
    names = work.wu_sticky.get(wuid)
    if names is None:
        names = []
        for body in blocks(xml_doc or "", "file_info"):
            name = leaf_text(body, "name")
            if name and flag(body, "sticky"):
                names.append(name)
        work.wu_sticky[wuid] = names
    return names


def add_job_files_to_host(work, wu):
    """A lite job is being sent: its sticky files count as on the host for the
    rest of this request."""
    have = host_sticky_files(work)
    for name in sticky_input_files(work, wu["id"], wu.get("xml_doc")):
        if name not in have:
            if work.cfg.debug_send:
                work.log.normal("[send] Adding file %s to host file list" % name)
            have.add(name)


# ---------------------------------------------------------------------------
# setup

def _clamp_req(x):
    return min(max(x, 0.0), MAX_REQ_SECS)


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


def setup_work(ctx, job_array):
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
    work.prefs = parse_project_prefs(work.user.get("project_prefs"),
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
    new_day = is_new_day(work.hostid, last, work.now)
    is_linuxish = any(w in (work.hinfo.os_name or "") for w in ("Windows", "Linux")) or (
        "Darwin" in (work.hinfo.os_name or "") and "Power Macintosh" not in work.hinfo.p_vendor)
    multiplier = 1.0 if is_linuxish else 1.8
    # read with the host row when the handler did not need them
    rows = work.ctx.take_read_ahead("host_app_version")
    if rows is None:
        rows = host_rows(work.db, work.hostid)
    for row in rows:
        gavid = row["app_version_id"]
        if q and row["max_jobs_per_day"] == 0:
            row["max_jobs_per_day"] = q
            work.hav_quota_init.add(gavid)
        if new_day and row["n_jobs_today"]:
            row["n_jobs_today"] = 0
            work.hav_reset.add(gavid)
        row["daily_quota_exceeded"] = False
        row["reliable"] = _reliable(work, row, multiplier)
        if row["reliable"]:
            work.has_reliable_version = True
        row["trusted"] = _trusted(work, row)
        work.havs[gavid] = row


def _reliable(work, hav, multiplier):
    """get_reliability_version(): the host returns this version's results
    quickly (reliable_max_avg_turnaround), validly (CONS_VALID_RELIABLE in a
    row) and at its full daily quota; such hosts get the jobs that need one
    (reliable_on_priority)."""
    cfg = work.cfg
    debug = work.log.normal if cfg.debug_send else None
    avid = hav["app_version_id"]
    limit = cfg.reliable_max_avg_turnaround * multiplier
    if (hav["turnaround_n"] > MIN_HOST_SAMPLES and cfg.reliable_max_avg_turnaround
            and hav["turnaround_avg"] > limit):
        if debug:
            debug("[send] [AV#%d] not reliable; avg turnaround: %.3f > %.3f hrs"
                  % (avid, hav["turnaround_avg"] / 3600, limit / 3600))
        return False
    if hav["consecutive_valid"] < CONS_VALID_RELIABLE:
        if debug:
            debug("[send] [AV#%d] not reliable; cons valid %d < %d"
                  % (avid, hav["consecutive_valid"], CONS_VALID_RELIABLE))
        return False
    if cfg.daily_result_quota and hav["max_jobs_per_day"] < cfg.daily_result_quota:
        if debug:
            debug("[send] [AV#%d] not reliable; max_jobs_per_day %d<%d"
                  % (avid, hav["max_jobs_per_day"], cfg.daily_result_quota))
        return False
    if debug:
        debug("[send] [HOST#%d] app version %d is reliable" % (work.hostid, avid))
    return True


def _trusted(work, hav):
    """set_trust(): adaptive replication sends this version's jobs unreplicated
    when it has CONS_VALID_UNREPLICATED valid results in a row -- then with
    probability 1 - 1/consecutive_valid, so a host that turns bad is still
    checked now and then, and loses its trust with its first invalid result."""
    cv = hav["consecutive_valid"]
    debug = work.log.normal if work.cfg.debug_send else None
    if cv < CONS_VALID_UNREPLICATED:
        if debug:
            debug("[send] set_trust: cons valid %d < %d, don't use single replication"
                  % (cv, CONS_VALID_UNREPLICATED))
        return False
    trusted = rand.drand() > 1.0 / cv
    if debug:
        debug("[send] set_trust: random choice for cons valid %d: %s"
              % (cv, "yes" if trusted else "no"))
    return trusted


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


def write_host_app_versions(work):
    """Persist n_jobs_today / max_jobs_per_day changes and create missing rows
    (deferred: they go with the request's next statement or its commit)."""
    db = work.db.deferring()
    for gavid, hav in work.havs.items():
        sent = work.hav_added.pop(gavid, 0)
        record_jobs_sent(db, work.hostid, gavid,
                         n_jobs_today=sent if gavid in work.hav_reset else None, added=sent,
                         max_jobs_per_day=(hav["max_jobs_per_day"]
                                           if gavid in work.hav_quota_init else None))
    for gavid, sent in work.hav_added.items():
        if sent:
            add_jobs_today(db, work.hostid, gavid, sent)
            if work.cfg.debug_credit:
                work.log.normal("[credit] created host_app_version record (%d, %d)"
                                % (work.hostid, gavid))
    work.hav_added = {}
    work.hav_reset = set()
    work.hav_quota_init = set()


# ---------------------------------------------------------------------------
# duration estimates; whether more work is needed

def available_frac(work, bav):
    return work.gpu_frac if bav.proc_type else work.cpu_frac


def estimate_duration(work, wu, bav):
    """Seconds the job should take on this host with this version."""
    est = wu["rsc_fpops_est"]
    if est <= 0:
        est = 1e12
    return est / bav.usage.projected_flops / available_frac(work, bav)


def app_label(app):
    return app.get("user_friendly_name") or app["name"]


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

def matched_rows(db, affected):
    """Rows an UPDATE matched (MySQL counts only changed rows without FOUND_ROWS)."""
    if affected:
        return affected
    info = db.conn.info() or ""              # str ("Rows matched: 1 Changed: 0 ...")
    for part in info.split():
        if part.isdigit():
            return int(part)
    return 0


def claim_statements(work, result_id, wu, app, bav):
    """The claim of a job (add_result_to_reply's UPDATE of the result,
    expected UNSENT; the workunit's transition_time is lowered at the end of
    the request) as statements to send with the slow check's read in one
    round trip (LiteDatabase.read_then_write), where the connection batches
    (inside the request's transaction) and the workunit is committed to
    nothing (no homogeneous app version or redundancy: those UPDATEs'
    outcome decides whether to go on); else None."""
    db = work.db
    if not (db.batching and db.in_transaction) or _commitments(work, app, bav):
        return None
    from boincpy.db.connection import Statements
    deadline = work.now + wu["delay_bound"] + work.cfg.report_grace_period
    claim = Statements()
    mark_result_sent(claim, result_id, SERVER_STATE_UNSENT, SERVER_STATE_IN_PROGRESS,
                     work.hostid, work.userid, work.now, deadline, bav.usage.peak_flops,
                     bav.app_version_id())
    return claim.list


def add_result_to_reply(work, result, wu, app, bav, resend=False, claimed=None):
    """Claim ``result`` for this host and put it in the reply (daemons.md §2.6).

    The result row is changed by a conditional UPDATE (``server_state`` must
    still be what was read) that must match exactly one row; otherwise
    another request won the job and None is returned.  ``claimed``: the
    rows :func:`claim_statements`' UPDATE matched when they were sent
    already, with the slow check's read.
    """
    cfg, db = work.cfg, work.db
    now = work.now
    usage = bav.usage
    deadline = now + wu["delay_bound"]
    grace = cfg.report_grace_period
    if claimed is None:
        # A commitment to an HR class / app version goes first (as BOINC): one
        # made by another request since we read the workunit makes it fail.
        committed = _update_wu_on_send(work, wu, app, bav, deadline + grace)
        if committed is None:
            return None
        old_state = result["server_state"]
        n = matched_rows(db, mark_result_sent(
            db, result["id"], old_state, SERVER_STATE_IN_PROGRESS, work.hostid, work.userid,
            now, deadline + grace, usage.peak_flops, bav.app_version_id()))
    else:
        committed, n = {}, claimed
    if n != 1:
        work.log.critical("[RESULT#%d] [HOST#%d]: CAN'T SEND, already sent to another host"
                          % (result["id"], work.hostid))
        work.taken += 1
        work.reason("taken", "the job chosen was sent to another host meanwhile")
        return None
    if not committed:
        work.ctx.lower_transition_time(wu["id"], deadline + grace)
    result = dict(result)
    result.update(server_state=SERVER_STATE_IN_PROGRESS, hostid=work.hostid,
                  userid=work.userid, sent_time=now, report_deadline=deadline + grace,
                  flops_estimate=usage.peak_flops, app_version_id=bav.app_version_id())
    wu = dict(wu)
    wu.update(committed)
    wu.setdefault("xml_doc", None)
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
    if work.ip_results is not None:         # workload_sim's queue (edf.py)
        from boincpy.sched import edf
        edf.job_sent(work, wu, est)
    if cfg.debug_send:
        work.log.normal("[send] [HOST#%d] sending [RESULT#%d %s] (est. dur. %.2fs)"
                        % (work.hostid, result["id"], result["name"], est))
    # adaptive replication: a job created unreplicated (target_nresults 1,
    # app.target_nresults > 1) is replicated unless this host is trusted
    if wu.get("target_nresults") == 1 and (app.get("target_nresults") or 0) > 1:
        if bav.trusted:
            if cfg.debug_send:
                work.log.normal("[send] [WU#%d] using trusted app version, not replicating"
                                % wu["id"])
        else:
            if cfg.debug_send:
                work.log.normal("[send] [WU#%d] sending to untrusted host, replicating"
                                % wu["id"])
            replicate_workunit(db, wu["id"], app["target_nresults"], now)
    if app.get("locality_scheduling") == LOCALITY_SCHED_LITE:
        add_job_files_to_host(work, wu)
    return job


def _commitments(work, app, bav):
    """What sending a job of ``app`` with ``bav`` commits its workunit to:
    {app_version_id, hr_class} for homogeneous app version / redundancy."""
    committed = {}
    if app.get("homogeneous_app_version") and bav.av:
        committed["app_version_id"] = bav.av["id"]
    hr_type = hr.app_hr_type(work.cfg, app)
    if hr_type:
        committed["hr_class"] = host_hr_class(work, hr_type)
    return committed


def _update_wu_on_send(work, wu, app, bav, transition_time):
    """update_wu_on_send(): lower the workunit's transition_time and, for
    homogeneous app version / redundancy, commit it to this host's app
    version / HR class -- only if it is uncommitted or committed to the same
    (the transitioner may have reset it meanwhile).  Returns the committed
    fields, or None when the UPDATE matched no row (committed elsewhere)."""
    committed = _commitments(work, app, bav)
    if not committed:
        # nothing to commit to: transition_time is lowered once the result
        # is claimed (SchedContext.lower_transition_time)
        return committed
    n = commit_on_send(work.db, wu["id"], transition_time, **committed)
    if matched_rows(work.db, n) != 1:
        work.log.normal("add_result_to_reply: WU already sent to other HR class or app version")
        work.reason("hr_committed", "[WU#%d] was committed to another HR class or app "
                    "version meanwhile" % wu["id"])
        return None
    return committed
