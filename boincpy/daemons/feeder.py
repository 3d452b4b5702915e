"""The feeder: keeps the shared job array (boincpy.shmem) full of sendable jobs.

What BOINC's sched/feeder.cpp does (daemons.md §1):

* at start: remove ``reread_db``, (re)create the segment, read the static
  tables (non-deprecated platforms and apps; per (app, platform) the latest
  non-deprecated app version of each plan class, or every version >=
  ``app.min_version``), host FLOPS statistics;
* each pass over the slots: a PRESENT slot older than ``--purge_stale``
  minutes is emptied; an EMPTY slot gets the next row of the enumeration
  (unsent results of non-deprecated apps, ``transitioner_flags = 0``, in the
  chosen order, ``LIMIT feeder_query_size``), skipping rows whose app is not
  cached, rows already in a slot ("collisions") and rows whose workunit has
  ``error_mask`` set (those results become OVER / DIDNT_NEED); a slot
  reserved by a process that no longer exists goes back to PRESENT;
* after each pass the array is marked ready; the feeder sleeps
  ``--sleep_interval`` seconds if the pass added nothing or met a collision
  -- but here that sleep ends as soon as a scheduler rings the feeder's
  doorbell (boincpy.doorbell) after taking jobs from the array, or the
  transitioner after creating results, so the array is refilled at once
  rather than up to ``--sleep_interval`` later;
* ``PROJECT/reread_db`` makes it re-read the tables (update_versions touches
  it); ``stop_daemons`` or a signal makes it exit and remove the segment;
  ``<dont_send_jobs/>`` in config.xml: don't fill.

Differences from the C++ feeder, on purpose:

* the doorbell above (C++: the fixed sleep only; at make_project's 5 s most
  RPCs of a busy project were answered "no tasks" while jobs waited); a
  ring while over half the slots are full waits ``REFILL_BATCH`` (50 ms) so
  that one pass refills what several requests took;
* at most once a second a pass first empties PRESENT slots whose job can no
  longer be sent: the result is no longer UNSENT (e.g. made "didn't need"),
  or gone, its workunit has an error mask, or its batch was aborted (C++
  leaves them until a scheduler trips over them: BOINC issue #1517);
* ``feeder_query_size`` defaults to 2 x ``shmem_work_items`` (C++: 200 rows
  whatever the array size, so an array of more than 200 slots never fills
  past 200 without setting it);
* the database is read and the error-WU updates are written outside the
  array's lock; the lock is held only while slots are written;
* ``reread_db`` keeps the jobs of apps still present (C++ empties every slot);
* job-size statistics (``job_size_matching``'s fpops_size) are not kept:
  nothing in BOINC's scheduler reads them;
* ``hr_info.txt`` is read again on ``reread_db`` (C++: at start only), so a
  new census takes effect without a restart;
* config.xml's <homogeneous_redundancy> is applied to the cached apps after
  a ``reread_db`` too (C++ applies it only at start).

Job size classes, as in C++: an app with ``n_size_classes`` > 1 gets its
``size_census_APPNAME`` boundaries (boincpy.sizeclass) as the cached app's
``size_class_quantiles``, read at start and on ``reread_db``.  If that file is
missing or short the feeder logs it as CRITICAL and caches no apps at all
(C++ scan_tables stops there), so nothing is sent until the census is written
and the tables are re-read.

Homogeneous redundancy slot allocation (``<hr_allocate_slots/>``), as in
C++: jobs committed to a rare HR class would otherwise fill the array while
hardly any host can take them.  The feeder reads ``PROJECT/hr_info.txt``
(RAC per class, written by the ``census`` task; without it the feeder
refuses to start) at start and on ``reread_db``, and gives each HR type in
use slots by its apps' weights; of a type's slots half go to uncommitted jobs
(hr_class 0) and half to the classes in proportion to their RAC, at least
one each (boincpy.hrclass.HrInfo.allocate).  Each pass first counts the
slots each class holds, then skips a job whose class is full; jobs of HR
apps are enumerated in id order from the last one taken (C++'s
enumerate_all), whatever the ordering option.

Every AV_UPDATE_PERIOD seconds the main feeder (no ``--mod``/``--wmod``, or
part 0 of one) updates the app versions' credit scales
(:meth:`Feeder.update_av_scales`, credit.py's ``app_version_scales``).
"""

import os
import time

from boincpy import shmem
from boincpy.cli import group_flag, option
from boincpy.credit import app_version_scales
from boincpy.daemons.base import Daemon, run_daemon
from boincpy.db.app import set_min_avg_pfc
from boincpy.db.app_version import set_pfc_scale
from boincpy.db.host import ACTIVE_HOST_WHERE, host_fpops_percentile
from boincpy.db.result import mark_result_didnt_need
from boincpy.db.workunit import release_hr_class
from boincpy.errors import ToolError
from boincpy.hrclass import HR_INFO_FILE, HR_NCLASSES, HR_NTYPES, HrInfo, HrInfoError
from boincpy.sizeclass import CensusFileError, census_file_name, read_census

REREAD_DB_FILE = "reread_db"
AV_UPDATE_PERIOD = 600          # seconds between credit-scale updates (feeder.cpp)

# order clauses (feeder.cpp)
ORDER_DEFAULT = "ORDER BY r1.priority DESC, r1.workunitid"
ORDERS = {
    "priority_order": "ORDER BY r1.priority DESC",
    "priority_asc": "ORDER BY r1.priority ASC",
    "priority_order_create_time": "ORDER BY r1.priority DESC, r1.workunitid",
    "random_order": "ORDER BY r1.random",
    "random_order_db": "ORDER BY RAND()",
    "batch_accel": "ORDER BY r1.priority DESC, workunit.id",
}

# STRAIGHT_JOIN: read result first.  After bulk job creation the table
# statistics are stale and MariaDB otherwise starts from workunit, re-reading
# the UNSENT index range for every workunit: seconds instead of milliseconds.
_ENUM_SELECT = (
    "SELECT STRAIGHT_JOIN r1.id AS res_id, r1.priority AS res_priority, "
    "r1.server_state AS res_server_state, r1.report_deadline AS res_report_deadline, "
    "workunit.* FROM result r1 FORCE INDEX(ind_res_st), workunit, app "
    "WHERE r1.server_state = 2 AND r1.workunitid = workunit.id "
    "AND workunit.appid = app.id AND app.deprecated = 0 "
    "AND workunit.transitioner_flags = 0")

# --by_batch: round-robin over batches (rank of each result within its batch)
_BY_BATCH_SELECT = (
    "SELECT STRAIGHT_JOIN r1.id AS res_id, r1.priority AS res_priority, "
    "r1.server_state AS res_server_state, r1.report_deadline AS res_report_deadline, "
    "workunit.* FROM (SELECT r.id, r.priority, r.server_state, r.report_deadline, "
    "r.workunitid, r.appid, ROW_NUMBER() OVER (PARTITION BY r.batch ORDER BY r.id) AS rnk "
    "FROM result r WHERE r.server_state = 2) r1, workunit, app "
    "WHERE r1.workunitid = workunit.id AND workunit.appid = app.id "
    "AND app.deprecated = 0 AND workunit.transitioner_flags = 0")
_BY_BATCH_ORDER = "ORDER BY r1.rnk, r1.id"

FIRST_PASS, SECOND_PASS, OVER = 0, 1, 2
PURGE_PERIOD = 1.0              # seconds between checks for unsendable slots
REFILL_BATCH = 0.05             # seconds a ring waits while the array is over half full
BATCH_STATE_ABORTED = 3         # boincpy.states.BatchState.ABORTED


def _plain(row):
    """A row with values marshal can store: no timestamps, no Decimals."""
    out = {}
    for k, v in row.items():
        if k == "mod_time":
            continue
        if v is not None and not isinstance(v, (int, float, str)):
            v = float(v)           # Decimal
        out[k] = v
    return out


def scan_tables(db, cfg, log=None):
    """The static tables as the feeder caches them (SCHED_SHMEM::scan_tables)."""
    platforms = [_plain(r) for r in db.query(
        "SELECT * FROM platform WHERE deprecated = 0 ORDER BY id")]
    apps = []
    for r in db.query("SELECT * FROM app WHERE deprecated = 0 ORDER BY id"):
        app = _plain(r)
        if cfg.non_cpu_intensive:
            app["non_cpu_intensive"] = 1
        if (app.get("n_size_classes") or 0) > 1:
            try:
                app["size_class_quantiles"] = read_census(
                    cfg.project_path(census_file_name(app["name"])), app["name"],
                    app["n_size_classes"])
            except CensusFileError as exc:
                # C++ scan_tables returns here: no apps, versions or
                # assignments are cached, so nothing is sent until the file
                # exists and reread_db (or a restart) reads it
                if log is not None:
                    log.critical(str(exc))
                return {"platforms": platforms, "apps": [], "app_versions": [],
                        "assignments": []}
        apps.append(app)
    by_pair = {}
    for r in db.query("SELECT * FROM app_version WHERE deprecated = 0 ORDER BY id"):
        by_pair.setdefault((r["appid"], r["platformid"]), []).append(_plain(r))
    app_versions = []
    for p in platforms:
        for app in apps:
            avs = by_pair.get((app["id"], p["id"]), [])
            # a lower version of the same plan class counts as deprecated
            best = {}
            for av in avs:
                pc = av["plan_class"]
                if pc not in best or av["version_num"] > best[pc]:
                    best[pc] = av["version_num"]
            for av in avs:
                if av["version_num"] < best[av["plan_class"]]:
                    av["deprecated"] = 1
                if app["min_version"]:
                    if av["version_num"] < app["min_version"]:
                        continue
                elif av["deprecated"]:
                    continue
                for f in ("min_core_version", "max_core_version"):
                    if av[f] and av[f] < 10000:
                        av[f] *= 100
                app_versions.append(av)
    try:
        assignments = [_plain(r) for r in db.query(
            "SELECT * FROM assignment WHERE multi <> 0 ORDER BY id")]
    except Exception:            # older schemas without the table
        assignments = []
    return {"platforms": platforms, "apps": apps, "app_versions": app_versions,
            "assignments": assignments}


def hr_init(tables, cfg, all_apps, log, nslots=0):
    """Check the homogeneous-redundancy settings and apply config.xml's
    <homogeneous_redundancy> to every cached app (feeder.cpp hr_init()); the
    scheduler reads each app's type from the array.  Returns None when no app
    uses HR, else the HrInfo with the slot allocation when
    <hr_allocate_slots/> is set (read from PROJECT/hr_info.txt, which the
    census task writes), else False.

    Raises ToolError (the feeder exits) as BOINC does: a type out of range, HR
    set both globally and per app, apps of different HR types without
    --allapps, or hr_allocate_slots without a readable hr_info.txt.
    """
    apps = tables["apps"]
    types = [int(a.get("homogeneous_redundancy") or 0) for a in apps]
    for a, t in zip(apps, types):
        if t < 0 or t >= HR_NTYPES:
            raise ToolError("HR type %d out of range for app %s" % (t, a["name"]))
    some_app_uses_hr = any(types)
    if cfg.homogeneous_redundancy:
        hrt = cfg.homogeneous_redundancy
        log.normal("config HR is %d" % hrt)
        if hrt < 0 or hrt >= HR_NTYPES:
            raise ToolError("Main HR type %d out of range" % hrt)
        if some_app_uses_hr:
            raise ToolError("You can specify HR at global or app level, but not both")
        for a in apps:
            a["homogeneous_redundancy"] = hrt
            a["weight"] = 1
    elif not some_app_uses_hr:
        return None
    elif len(set(types)) > 1 and not all_apps:
        raise ToolError("You must use --allapps if apps have different HR")
    if not cfg.hr_allocate_slots:
        return False
    path = cfg.project_path(HR_INFO_FILE)
    try:
        with open(path) as f:
            info = HrInfo.parse(f.read())
    except (OSError, HrInfoError) as exc:
        raise ToolError("Can't read HR info file %s: %s (run the census task first)"
                        % (path, getattr(exc, "strerror", None) or exc)) from None
    for a in apps:
        t = int(a.get("homogeneous_redundancy") or 0)
        info.type_weights[t] += a["weight"]
        info.type_being_used[t] = True
    info.allocate(nslots, log)
    for line in info.lines():
        log.normal(line)
    return info


def perf_info(db):
    """Host FLOPS statistics (PERF_INFO::get_from_db): defaults below 10 hosts."""
    mean, stddev, p50, p95 = 2.2e9, 0.7e9, 3.3e9, 3.3e9
    if db.query_value("SELECT COUNT(*) FROM host", default=0) < 10:
        return mean, stddev, p50, p95
    where = "FROM host WHERE " + ACTIVE_HOST_WHERE
    mean = db.query_value("SELECT AVG(p_fpops) " + where, default=mean)
    stddev = db.query_value("SELECT STDDEV(p_fpops) " + where, default=stddev)
    x = host_fpops_percentile(db, 50)
    if x is not None:
        p50, p95 = x, host_fpops_percentile(db, 95)
    return float(mean), float(stddev), float(p50), float(p95)


def weighted_interleave(weights, nslots):
    """Slot -> app index, each app getting slots in proportion to its weight
    (feeder.cpp weighted_interleave)."""
    x = [1e-100 if w == 0 else 0.0 for w in weights]
    out = []
    for _ in range(nslots):
        best = 0
        for j in range(1, len(weights)):
            if x[j] > x[best]:
                best = j
        out.append(best)
        w = weights[best]
        x[best] -= 1.0 / w if w else 1e300
    return out


class _Enumeration:
    """One enumeration of sendable rows (per app with --allapps): the rows of
    the last query, consumed one at a time, re-queried once exhausted."""

    def __init__(self, appid, limit, hr_type=0):
        self.appid = appid
        self.limit = limit
        self.rows = []
        self.pos = 0
        self.active = False
        # with HR slot allocation: rows in id order from after the last one
        # taken (DB_WORK_ITEM::enumerate_all), not in the chosen order
        self.hr_type = hr_type
        self.start_id = 0


class Feeder(Daemon):
    """bin/feeder."""

    name = "feeder"
    sleep_interval = 5.0
    supports_mod = True
    doorbell = "feeder"

    @classmethod
    def add_options(cls, params):
        params.append(option("allapps", is_flag=True,
                             help="interleave jobs of all apps in proportion to app.weight"))
        params.append(option("appids", metavar="A1,A2", help="only jobs of these app ids"))
        params.append(option("wmod", nargs=2, type=int, metavar="N I",
                             help="only workunits whose id % N == I"))
        for opt, text in (("priority_order", "order by decreasing result priority"),
                          ("priority_asc", "order by increasing result priority"),
                          ("priority_order_create_time",
                           "order by decreasing priority, then workunit creation"),
                          ("random_order", "order by result.random"),
                          ("random_order_db", "order randomly (SQL RAND())"),
                          ("batch_accel", "order for batch acceleration"),
                          ("by_batch", "spread jobs evenly over batches")):
            params.append(group_flag(opt, "order", help=text))
        params.append(option("purge_stale", type=int, metavar="M",
                             help="remove jobs that have been in the array over M minutes"))

    def __init__(self, args, cfg, log):
        super().__init__(args, cfg, log)
        self.array = None
        self._committed = None           # cached results whose WU got an HR class (a pass)
        self.nslots = cfg.shmem_work_items or shmem_default_slots()
        self.enum_limit = cfg.feeder_query_size or 2 * self.nslots
        self.select_clause, self.select_params = "", []
        self.by_batch = bool(getattr(args, "by_batch", False))
        self.order_clause = ORDER_DEFAULT
        for opt, clause in ORDERS.items():
            if getattr(args, opt, False):
                self.order_clause = clause
        self.purge_stale_time = 60 * (getattr(args, "purge_stale", None) or 0)
        self.all_apps = bool(getattr(args, "allapps", False))
        self.app_indices = [0] * self.nslots
        self.enums = [_Enumeration(None, self.enum_limit)]
        # only one feeder of a --mod/--wmod split normalises credit
        self.is_main_feeder = all(not part or part[1] == 0 for part in
                                  (getattr(args, "mod", None), getattr(args, "wmod", None)))
        self.next_av_update_time = 0.0
        self.next_purge_check = 0.0
        self.hr_info = None             # the HR slot allocation (hr_allocate_slots)

    def _select_clause(self):
        clause, params = "", []
        appids = getattr(self.args, "appids", None)
        if appids:
            try:
                ids = [int(a) for a in appids.split(",") if a.strip()]
            except ValueError:
                raise ToolError("--appids needs a comma-separated list of app ids, got %r"
                                % appids) from None
            if not ids:
                raise ToolError("--appids needs at least one app id")
            clause += " AND workunit.appid IN (%s)" % ", ".join(["%s"] * len(ids))
            params += ids
        mod = getattr(self.args, "mod", None)
        if mod:
            clause += " AND MOD(r1.id, %s) = %s"
            params += list(mod)
        wmod = getattr(self.args, "wmod", None)
        if wmod:
            if wmod[0] < 1 or not 0 <= wmod[1] < wmod[0]:
                raise ToolError("--wmod N I needs N >= 1 and 0 <= I < N (got %d %d)"
                                % tuple(wmod))
            clause += " AND MOD(workunit.id, %s) = %s"
            params += list(wmod)
        return clause, params

    # -- start / stop ---------------------------------------------------------

    def initialise(self):
        self.select_clause, self.select_params = self._select_clause()
        super().initialise()
        try:
            os.unlink(self.cfg.project_path(REREAD_DB_FILE))
        except FileNotFoundError:
            pass
        tables = scan_tables(self.db, self.cfg, self.log)
        self.hr_info = hr_init(tables, self.cfg, self.all_apps, self.log, self.nslots) or None
        self._log_tables(tables)
        self.create_array(tables)
        self.log.normal("read %d platforms, %d apps, %d app_versions, %d assignments"
                        % (len(tables["platforms"]), len(tables["apps"]),
                           len(tables["app_versions"]), len(tables["assignments"])))
        self.log.normal("Using %d job slots" % self.nslots)
        self.array.set_perf_info(*perf_info(self.db))
        self._setup_apps(tables)

    def create_array(self, tables):
        """(Re)create the segment for this project, replacing any old one."""
        path = shmem.segment_path(self.cfg)
        mode, gid = shmem.segment_mode_and_group(self.cfg)
        if self.array is not None:
            self.array.destroy()
            self.array.close()
        self.array, warning = shmem.JobArray.create(path, self.nslots, tables,
                                                    mode=mode, gid=gid)
        if warning:
            self.log.critical(warning)
        self.log.debug("job array %s (mode %o)" % (path, mode))

    def _log_tables(self, tables):
        have = [False] * 5
        for av in tables["app_versions"]:
            have[shmem.plan_class_to_proc_type(av["plan_class"])] = True
        for i, name in enumerate(("CPU", "NVIDIA GPU", "AMD/ATI GPU", "Intel GPU",
                                  "Apple GPU")):
            self.log.normal("have apps for %s: %s" % (name, "yes" if have[i] else "no"))

    def _setup_apps(self, tables):
        """Per-app enumerations and the slot -> app map for --allapps."""
        apps = tables["apps"]
        if self.all_apps and apps:
            weights = [a["weight"] for a in apps]
            if sum(weights) == 0:
                weights = [1.0] * len(apps)
            total = sum(weights)
            self.enums = [_Enumeration(a["id"], int(0.5 + self.enum_limit * w / total),
                                       self._hr_type(a)) for a, w in zip(apps, weights)]
            self.app_indices = weighted_interleave(weights, self.nslots)
        else:
            self.enums = [_Enumeration(None, self.enum_limit,
                                       self._hr_type(apps[0]) if apps else 0)]
            self.app_indices = [0] * self.nslots

    def _hr_type(self, app):
        """The HR type whose slot quota an app's jobs count against (0: none)."""
        if self.hr_info is None:
            return 0
        return int(app.get("homogeneous_redundancy") or 0)

    def shutdown(self):
        if self.array is not None:
            self.array.destroy()
            self.array.close()
            self.array = None
        super().shutdown()

    def sleep(self, seconds):
        """The daemon's sleep (ended by the doorbell); when a scheduler rang
        while over half the slots still hold jobs, wait REFILL_BATCH seconds
        more, so that one pass refills the slots of several requests: at
        2,000 slots a pass for every job taken cost more CPU than the
        requests themselves.  An array running low is refilled at once."""
        rung = super().sleep(seconds)
        if rung and self.array is not None and 2 * self.array.n_present > self.nslots:
            time.sleep(min(REFILL_BATCH, seconds))
        return rung

    # -- one pass ----------------------------------------------------------------

    def one_pass(self):
        """One scan of the slots; True if jobs were added and none collided."""
        if self.cfg.dont_send_jobs:
            action = False
        else:
            action = self.scan_work_array()
        self.array.set_backlog(not self.cfg.dont_send_jobs and self.has_backlog())
        self.array.set_ready(True)
        now = time.time()
        self.array.set_fill_time(now)
        if self.is_main_feeder and now > self.next_av_update_time:
            self.update_av_scales()
            self.next_av_update_time = now + AV_UPDATE_PERIOD
        self.check_reread_trigger()
        return action

    def has_backlog(self):
        """Whether sendable jobs wait outside the array: rows of the last
        query not placed yet, or a query cut at its LIMIT (schedulers finding
        the array empty then wait for the refill: boincpy.shmem)."""
        return any(e.pos < len(e.rows) or len(e.rows) >= e.limit for e in self.enums)

    def update_av_scales(self):
        """Credit normalisation (credit.cpp update_av_scales): refresh the cached
        app versions' PFC statistics from the database, then set each app's
        min_avg_pfc and its versions' pfc_scale where enough samples exist."""
        tables = self.array.tables()
        debug = self.cfg.debug_credit
        if debug:
            self.log.normal("-- updating app version scales --")
        cached = tables["app_versions"]
        fresh = {}
        if cached:
            # one query for every cached version (C++ looks each up in turn)
            fresh = {r["id"]: _plain(r) for r in self.db.query(
                "SELECT id, pfc_n, pfc_avg, pfc_scale, expavg_credit, expavg_time "
                "FROM app_version WHERE id IN (%s)" % ", ".join(["%s"] * len(cached)),
                [av["id"] for av in cached])}
        for app in tables["apps"]:
            versions = []
            for av in cached:
                if av["appid"] != app["id"] or av["id"] not in fresh:
                    continue
                av.update(fresh[av["id"]])
                is_gpu = shmem.plan_class_to_proc_type(av["plan_class"]) != 0
                versions.append((av["id"], is_gpu, av["pfc_n"], av["pfc_avg"]))
                if debug:
                    self.log.normal("add to %s totals: (%d %s) %g %g"
                                    % ("gpu" if is_gpu else "cpu", av["id"], av["plan_class"],
                                       av["pfc_n"], av["pfc_avg"]))
            min_avg_pfc, scales = app_version_scales(versions)
            if min_avg_pfc is None:
                continue
            for avid, scale in scales.items():
                set_pfc_scale(self.db, avid, scale)
                if debug:
                    self.log.normal(" updating scale factor for %d: new scale %g"
                                    % (avid, scale))
            for av in cached:
                if av["id"] in scales:
                    av["pfc_scale"] = scales[av["id"]]
            set_min_avg_pfc(self.db, app["id"], min_avg_pfc)
            app["min_avg_pfc"] = min_avg_pfc
            self.log.normal("app %s: average PFC %g, %d version scale(s) updated"
                            % (app["name"], min_avg_pfc, len(scales)))
        if not self.array.write_tables(tables):
            self.log.critical("app version tables outgrew the job array; "
                              "scales kept in the database only")

    def check_reread_trigger(self):
        """PROJECT/reread_db: re-read the static tables, then remove the file."""
        path = self.cfg.project_path(REREAD_DB_FILE)
        if not os.path.exists(path):
            return False
        self.log.normal("Found trigger file %s; re-scanning database tables." % REREAD_DB_FILE)
        tables = scan_tables(self.db, self.cfg, self.log)
        self.hr_info = hr_init(tables, self.cfg, self.all_apps, self.log, self.nslots) or None
        self._log_tables(tables)
        if not self.array.write_tables(tables):
            self.log.normal("tables outgrew the segment; recreating it")
            self.create_array(tables)
        else:
            appids = {a["id"] for a in tables["apps"]}
            with self.array.lock():
                for i in range(self.nslots):
                    state, _, _, _, _, appid = self.array.slot_head(i)
                    if state != shmem.EMPTY and appid not in appids:
                        self.array.empty_slot(i)
        self.array.set_perf_info(*perf_info(self.db))
        self._setup_apps(tables)
        try:
            os.unlink(path)
        except OSError as exc:
            # C++ exits rather than loop on a trigger it can't remove
            raise ToolError("Can't unlink trigger file %s: %s; exiting"
                            % (path, exc.strerror)) from None
        self.log.normal("Done re-scanning: trigger file removed.")
        return True

    def _query(self, enum):
        if self.by_batch:
            sql = _BY_BATCH_SELECT
            order = _BY_BATCH_ORDER
        else:
            sql = _ENUM_SELECT
            order = self.order_clause
        params = list(self.select_params)
        clause = self.select_clause
        if enum.appid is not None:
            clause += " AND r1.appid = %s"
            params.append(enum.appid)
        if enum.hr_type:
            # enumerate_all: on from the last row taken; none left: from the start
            rows = self.db.query("%s%s AND r1.id > %%s ORDER BY r1.id LIMIT %d"
                                 % (_ENUM_SELECT, clause, enum.limit),
                                 params + [enum.start_id])
            if not rows:
                enum.start_id = 0
            return rows
        return self.db.query("%s%s %s LIMIT %d" % (sql, clause, order, enum.limit),
                             params)

    def _next_row(self, enum, phase, in_array, tables_apps, errors, counts):
        """get_job_from_db: the next usable row of ``enum`` or None; ``phase`` is
        a one-item list (FIRST_PASS / SECOND_PASS / OVER)."""
        while True:
            if not enum.active or enum.pos >= len(enum.rows):
                if enum.active:
                    enum.active = False          # end of the result set
                    if phase[0] == FIRST_PASS:
                        phase[0] = SECOND_PASS
                        counts["collisions"] = 0     # maybe there are new jobs
                        self.log.normal("restarted enumeration for appid %s"
                                        % (enum.appid if enum.appid is not None else 0))
                    else:
                        phase[0] = OVER
                        return None
                enum.rows = self._query(enum)
                enum.pos = 0
                enum.active = True
                continue
            row = enum.rows[enum.pos]
            enum.pos += 1
            enum.start_id = row["res_id"]
            if row["appid"] not in tables_apps:
                continue
            if row["error_mask"]:
                errors.append(row["res_id"])
                continue
            if row["res_id"] in in_array:
                # already cached; if another instance of its workunit has been
                # sent meanwhile (HR class set), make it go out sooner
                if row["hr_class"] and self._committed is not None:
                    self._committed.append(row["res_id"])
                counts["collisions"] += 1
                self.log.debug("result [RESULT#%d] already in array" % row["res_id"])
                continue
            if enum.hr_type and not self._hr_accept(enum.hr_type, row):
                continue
            return row

    def _hr_accept(self, hr_type, row):
        """hr_allocate_slots: False if the row's HR class has its share of slots."""
        c = row["hr_class"]
        if not 0 <= c < HR_NCLASSES[hr_type]:
            self.log.critical("HR class %d is out of range" % c)
            return False
        if not self.hr_info.accept(hr_type, c, self.log):
            self.log.debug("rejecting [RESULT#%d] because HR class %d/%d over quota"
                           % (row["res_id"], hr_type, c))
            return False
        return True

    def hr_count_slots(self):
        """The slots each HR class holds now (hr_count_slots(): PRESENT slots,
        by the type of the slot's app under --allapps)."""
        info, array = self.hr_info, self.array
        for t in range(1, HR_NTYPES):
            if info.type_being_used[t]:
                info.cur_slots[t] = [0] * HR_NCLASSES[t]
        apps = array.apps
        for i in range(self.nslots):
            if not apps:
                break
            t = int(apps[self.app_indices[i]].get("homogeneous_redundancy") or 0)
            if not t or array.slot_state(i) != shmem.PRESENT:
                continue
            c = array.slot_hr_class(i)
            if not 0 <= c < HR_NCLASSES[t]:
                self.log.critical("HR class %d is out of range" % c)
                continue
            info.cur_slots[t][c] += 1

    def purge_unsendable(self):
        """Empty the PRESENT slots whose job can no longer be sent (see the
        module docstring); returns how many."""
        array = self.array
        present = {h[4]: i for i, h in enumerate(array.slot_heads()) if h[0] == shmem.PRESENT}
        if not present:
            return 0
        ids = sorted(present)
        rows = self.db.query(
            "SELECT r.id FROM result r JOIN workunit w ON w.id = r.workunitid "
            "LEFT JOIN batch b ON b.id = w.batch AND w.batch > 0 "
            "WHERE r.id IN (%s) AND r.server_state = 2 AND w.error_mask = 0 "
            "AND (b.state IS NULL OR b.state <> %%s)" % ", ".join(["%s"] * len(ids)),
            ids + [BATCH_STATE_ABORTED])
        gone = set(ids) - {r["id"] for r in rows}
        removed = []
        with array.lock():
            for rid in gone:
                i = present[rid]
                state, _, _, _, now_rid, _ = array.slot_head(i)
                if state == shmem.PRESENT and now_rid == rid:
                    array.empty_slot(i)
                    removed.append((i, rid))
        for i, rid in removed:
            self.log.normal("remove result [RESULT#%d] from slot %d: it can no longer "
                            "be sent" % (rid, i))
        return len(removed)

    def scan_work_array(self):
        """scan_work_array: one pass over the slots (see the module docstring)."""
        array = self.array
        now = time.time()
        if now >= self.next_purge_check:
            self.next_purge_check = now + PURGE_PERIOD
            self.purge_unsendable()
        tables_apps = {a["id"] for a in array.apps}
        heads = array.slot_heads()
        in_array = {h[4] for h in heads if h[0] != shmem.EMPTY}
        phases = [[FIRST_PASS if e.active else SECOND_PASS] for e in self.enums]
        counts = {"collisions": 0}
        self._committed = []
        errors = []
        fills, purges, dead = [], [], []
        reliable_on = self.cfg.reliable_on_priority
        if self.hr_info is not None:
            self.hr_count_slots()
        for i, (state, prio, _, _, resultid, _) in enumerate(heads):
            if state == shmem.PRESENT:
                if not self.purge_stale_time:
                    continue
                slot = array.read_slot(i)
                if slot.time_added >= now - self.purge_stale_time:
                    continue
                purges.append(slot)
                state = shmem.EMPTY                 # and refill it
            if state == shmem.EMPTY:
                k = self.app_indices[i]
                if phases[k][0] == OVER:
                    continue
                row = self._next_row(self.enums[k], phases[k], in_array, tables_apps,
                                     errors, counts)
                if row is None:
                    continue
                in_array.add(row["res_id"])
                fills.append((i, row))
            elif state != shmem.PRESENT:
                self.log.debug("checking pid %d" % state)
                if not shmem.pid_alive(state):
                    dead.append((i, state))

        for rid in errors:
            mark_result_didnt_need(self.db, rid)
            self.log.normal("[RESULT#%d] WU had error, marking as DIDNT_NEED" % rid)
        for slot in purges:
            if slot.wu["hr_class"]:
                release_hr_class(self.db, slot.wu["id"], int(now))

        applied = []
        with array.lock():
            for slot in purges:
                state, _, _, _, rid, _ = array.slot_head(slot.index)
                if state == shmem.PRESENT and rid == slot.resultid:
                    self.log.normal("remove result [RESULT#%d] from slot %d because it "
                                    "is stale" % (slot.resultid, slot.index))
                    array.empty_slot(slot.index)
            if self._committed:
                slot_of = {h[4]: i for i, h in enumerate(heads) if h[0] != shmem.EMPTY}
                for rid in self._committed:
                    if rid in slot_of:
                        array.note_committed(slot_of[rid], rid)
            for i, pid in dead:
                if array.slot_state(i) == pid:
                    array.reset_slot(i, pid)
                    self.log.normal("Result reserved by non-existent process PID %d; "
                                    "resetting" % pid)
            for i, row in fills:
                if array.slot_state(i) != shmem.EMPTY:
                    continue
                prio = row["res_priority"]
                array.fill_slot(
                    i, row["res_id"], prio, row["res_server_state"],
                    row["res_report_deadline"], row, row.get("xml_doc"),
                    infeasible_count=1 if row["hr_class"] > 0 else 0,
                    need_reliable=bool(reliable_on and prio >= reliable_on), now=now)
                applied.append((i, row["res_id"]))
        for i, rid in applied:
            self.log.normal("adding result [RESULT#%d] in slot %d" % (rid, i))
        added = len(applied)
        self.log.debug("Added %d results to array" % added)
        if counts["collisions"]:
            self.log.debug("%d results already in array" % counts["collisions"])
            return False
        return added > 0


def shmem_default_slots():
    """BOINC's MAX_WU_RESULTS."""
    return 100


def main(argv=None):
    """bin/feeder."""
    return run_daemon(Feeder, argv)
