"""The validator framework: quorum, canonical result, credit (BOINC's validator.cpp).

A validator is a :class:`Validator` subclass supplying three functions, as
BOINC's validate_util2 interface does:

* ``init_result(result) -> (code, data)``: read and check one result's output
  (0 = good; ``VAL_RESULT_TRANSIENT_ERROR`` or ``ERR_OPENDIR`` = try again
  later; ``VAL_RESULT_SUSPICIOUS`` = good only next to others; anything else
  = the output is bad: outcome VALIDATE_ERROR, validate_state INVALID);
* ``compare_results(r1, data1, r2, data2) -> (code, match)``;
* ``cleanup_result(result, data)``.

The stock validators (trivial, bitwise, substr, script) are in
:mod:`boincpy.daemons.sample_validators`.

One pass: for the app's workunits with ``need_validate > 0`` (in batches,
ordered by id), load all their results, run the checks (file I/O, outside
any transaction), then in **one transaction per batch** lock the workunits,
their results, and the hosts, users, teams and host_app_versions involved,
verify that nothing changed since the checks (a changed workunit is left for
the next pass), apply BOINC's handle_wu logic with credit, and write
everything.  A kill before the commit changes nothing; after it, the results
are no longer INIT, so a repeated pass never grants credit twice.

Behaviour (BOINC's, checked against sched/validator.cpp and validate_util2.cpp):

* no canonical result yet: results OVER+SUCCESS and not INVALID are
  "viable"; with at least ``min_quorum`` of them, check_set runs init_result
  on each and compares them pairwise; the first result matching at least
  ``min_quorum/2+1`` (itself included) becomes canonical, the others are
  VALID or INVALID; the workunit gets canonical_resultid, canonical_credit,
  assimilate_state READY, transition_time INT_MAX (the assimilator wakes the
  transitioner), and its UNSENT results become OVER/DIDNT_NEED.  Without
  consensus, results become INCONCLUSIVE and, when the viable results reach
  target_nresults, target_nresults becomes viable+1 (the transitioner makes
  another replica); more than max_success_results sets error bit 4.
* canonical result already there (late results): each SUCCESS result in INIT
  or INCONCLUSIVE is compared with the canonical one; VALID gets the
  canonical's granted_credit.
* a transient error leaves the workunit for a retry: transition_time
  ``min(current, now+6h)``.  Unlike BOINC, a result whose own check failed
  transiently stays INIT (BOINC marks it INCONCLUSIVE, after which the
  transitioner never asks for it to be validated again).
* credit (``--credit_from_wu``, ``--credit_from_runtime``,
  ``--post_assigned_credit``, ``--no_credit``, default CreditNew) is in
  :mod:`boincpy.credit`; VALID results add it to host, user and team totals
  and recent averages, ``credit_user``/``credit_team`` with
  ``<credit_by_app/>``, ``credited_job`` with ``--update_credited_job``.
"""

import time
from dataclasses import dataclass, field

from boincpy import credit as creditlib, doorbell
from boincpy.cli import option
from boincpy.daemons.base import Daemon
from boincpy.db import host_app_version, result as result_table, workunit as workunit_table
from boincpy.db.app_version import record_pfc_and_credit
from boincpy.db.bulk import by_primary_key, select_in
from boincpy.db.credit import add_credit_by_app, grant_credits
from boincpy.db.rows import App, HostAppVersion, Result, Workunit
from boincpy.db.user import record_credited_jobs
from boincpy.errors import BoincpyError, DatabaseError, Signal, ToolError
from boincpy.jobfiles import ERR_OPENDIR, OutputFilesError, output_file_infos
from boincpy.states import INT_MAX, AssimilateState, Outcome, ServerState, ValidateState
from boincpy.submit.batch import refresh_moved

# Return values of init_result / compare_results besides 0 and error codes
# (sched/validate_util2.h).
VAL_RESULT_SUSPICIOUS = 1
VAL_RESULT_LONG_TERM_FAIL = 2
VAL_RESULT_TRANSIENT_ERROR = 3
_TRANSIENT = (ERR_OPENDIR, VAL_RESULT_TRANSIENT_ERROR)

WU_BATCH = 500           # workunits per batch (BOINC: 1000 joined rows)
DELAYED_SECONDS = 6 * 3600
_DEADLOCK_CODES = (1205, 1213)   # lock wait timeout, deadlock: retry the batch

_WU_COLUMNS = ("id", "name", "appid", "canonical_resultid", "canonical_credit", "min_quorum",
               "assimilate_state", "transition_time", "opaque", "batch", "target_nresults",
               "max_success_results", "error_mask", "rsc_fpops_est", "rsc_fpops_bound",
               "need_validate")
_RESULT_COLUMNS = ("id", "workunitid", "name", "validate_state", "server_state", "outcome",
                   "client_state", "granted_credit", "claimed_credit", "xml_doc_in",
                   "xml_doc_out", "stderr_out", "cpu_time", "batch", "opaque", "exit_status",
                   "hostid", "userid", "teamid", "sent_time", "received_time", "appid",
                   "app_version_id", "app_version_num", "elapsed_time", "flops_estimate",
                   "runtime_outlier")
_BLOBS = ("xml_doc_in", "xml_doc_out", "stderr_out")
_HAV_STATS = ("pfc_n", "pfc_avg", "et_n", "et_avg", "et_q", "et_var", "turnaround_n",
              "turnaround_avg", "turnaround_q", "turnaround_var", "consecutive_valid",
              "max_jobs_per_day")

# transition_time decisions of handle_wu
NEVER, DELAYED, IMMEDIATE, NO_CHANGE = "never", "delayed", "immediate", "no_change"


def result_from_row(row):
    """A Result dataclass from a query row, NULL blob columns as ""."""
    for name in _BLOBS:
        if name in row and row[name] is None:
            row[name] = ""
    try:
        return Result(**row)            # the validator's own column list: all known
    except TypeError:
        return Result.from_row(row)     # SELECT * on a schema with extra columns


@dataclass
class SetCheck:
    """What check_set decided for a workunit without a canonical result."""
    canonicalid: int = 0
    retry: bool = False
    decided: dict = field(default_factory=dict)   # result id -> (outcome, validate_state)
    transient: set = field(default_factory=set)   # ids whose own check failed transiently
    min_quorum: int = 0


@dataclass
class PairCheck:
    """What check_pair decided for one late result."""
    resultid: int
    retry: bool
    outcome: int
    validate_state: int


@dataclass
class WuPlan:
    """One workunit's rows as read and the checks' decisions, before the transaction."""
    wu: Workunit
    results: list
    snapshot: tuple
    set_check: SetCheck = None
    pair_checks: list = None
    ran_check_set: bool = False
    punish: list = field(default_factory=list)    # (hostid, app_version_id)


@dataclass
class _Batch:
    """In-memory rows of one transaction."""
    now: float
    hosts: dict = field(default_factory=dict)
    users: dict = field(default_factory=dict)
    teams: dict = field(default_factory=dict)
    havs: dict = field(default_factory=dict)       # (host_id, gavid) -> HostAppVersion
    havs_orig: dict = field(default_factory=dict)
    credit_users: dict = field(default_factory=dict)
    credit_teams: dict = field(default_factory=dict)
    result_updates: dict = field(default_factory=dict)
    wu_updates: dict = field(default_factory=dict)
    credited_jobs: set = field(default_factory=set)
    punish: set = field(default_factory=set)
    n_done: int = 0


class Validator(Daemon):
    """The validator daemon; subclasses override init_result/compare_results/cleanup_result."""

    name = "validator"
    sleep_interval = 5.0
    doorbell = "validator"

    # -- project functions (validate_util2 interface) ---------------------

    def init_result(self, result):
        """Check one result's output; return (code, data).  Default: accept."""
        return 0, None

    def compare_results(self, r1, data1, r2, data2):
        """Compare two checked results; return (code, match).  Default: equal."""
        return 0, True

    def cleanup_result(self, result, data):
        """Release what init_result returned."""

    def configure(self):
        """Check this validator's own options (validate_handler_init); raise ToolError."""

    def output_file_infos(self, result):
        """The result's output files (OutputFileInfo list) in the upload fan-out."""
        return output_file_infos(result.xml_doc_in, self.cfg.upload_dir, self.cfg.uldl_dir_fanout)

    # -- options --------------------------------------------------------------

    @classmethod
    def add_options(cls, params):
        params.append(option("app", required=True, metavar="NAME",
                             help="validate jobs of this application"))
        params.append(option("one_pass_N_WU", type=int, default=0, metavar="N",
                             help="validate at most N workunits, then exit"))
        params.append(option("dry_run", is_flag=True,
                             help="don't update the database, just log"))
        params.append(option("min_wu_id", type=int, default=0, metavar="N"))
        params.append(option("max_wu_id", type=int, default=0, metavar="N"))
        params.append(option("wu_id", type=int, default=0, metavar="N",
                             help="validate this workunit only (debugging), then exit"))
        params.append(option("max_granted_credit", type=float,
                             default=creditlib.DEFAULT_MAX_GRANTED_CREDIT, metavar="X",
                             help="grant no more than X credit per result (0: no limit)"))
        params.append(option("update_credited_job", is_flag=True,
                             help="add (userid, workunit opaque) to credited_job"))
        params.append(option("credit_from_wu", is_flag=True,
                             help="grant workunit.canonical_credit (create_work --credit)"))
        params.append(option("credit_from_runtime", is_flag=True,
                             help="grant credit from elapsed time x FLOPS estimate"))
        params.append(option("post_assigned_credit", is_flag=True,
                             help="grant the canonical result's claimed_credit "
                                  "(set by init_result)"))
        params.append(option("no_credit", is_flag=True, help="grant no credit"))
        params.append(option("check_punitive", is_flag=True,
                             help="limit hosts whose failed results are long-term failures "
                                  "to 1 job a day"))

    # -- daemon hooks ---------------------------------------------------------

    def initialise(self):
        a = self.args
        if a.wu_id:
            a.one_pass = True
        if a.one_pass_N_WU:
            a.one_pass = True
        if a.credit_from_runtime and not a.max_granted_credit:
            raise ToolError("if use credit_from_runtime, must specify max credit")
        self.configure()
        super().initialise()
        self.app = self._lookup_app()
        self.av_cache = {}
        if a.credit_from_runtime:
            self.log.normal("using credit from runtime")
        if a.max_granted_credit:
            self.log.normal("max_granted_credit: %f" % a.max_granted_credit)
        if getattr(a, "mod", None):
            self.log.normal("Modulus %d, remainder %d" % tuple(a.mod))
        self.log.normal("Starting validator, debug level %d" % a.debug_level)

    def _lookup_app(self):
        row = self.db.query_one("SELECT * FROM app WHERE name = %s", (self.args.app,))
        if row is None:
            raise ToolError("can't find app %s" % self.args.app)
        return App.from_row(row)

    def now(self):
        """The time credit is granted at (a method so tests can fix it)."""
        return time.time()

    def one_pass(self):
        """Validate every workunit that needs it; return True if there was any."""
        # re-read each pass: the feeder updates min_avg_pfc
        self.app = self._lookup_app()
        found = False
        handled = 0
        # workunits left with need_validate set in this pass (changed while
        # being checked, canonical result missing): not enumerated again
        self.skipped = set()
        touched = set()           # job batches (remote submission) whose jobs moved
        while not self.stop_requested():
            limit = WU_BATCH
            if self.args.one_pass_N_WU:
                limit = min(limit, self.args.one_pass_N_WU - handled)
                if limit <= 0:
                    break
            wus = self._enumerate(limit)
            if not wus:
                break
            plans = self._check_batch(wus)
            handled += self._commit_batch(plans)
            touched.update(wu.batch for wu in wus if wu.batch)
            found = True
            if len(wus) < limit or self.args.wu_id or self.args.dry_run:
                break
        self._flush_app_versions()
        if touched and not self.args.dry_run:
            refresh_moved(self.db, touched, self.log)
        return found

    # -- enumeration ----------------------------------------------------------

    def _enumerate(self, limit):
        """The next workunits to validate.  Handled ones leave the set
        (need_validate = 0), so each query returns new ones; it follows the
        (appid, need_validate) index, as BOINC's does, without a sort."""
        a = self.args
        if a.wu_id:
            where, params = "id = %s", [a.wu_id]
        else:
            where, params = "appid = %s AND need_validate > 0", [self.app.id]
            clause, cparams = self.mod_clause("id")
            where += clause
            params += list(cparams)
            if a.min_wu_id:
                where += " AND id >= %s"
                params.append(a.min_wu_id)
            if a.max_wu_id:
                where += " AND id <= %s"
                params.append(a.max_wu_id)
            if self.skipped:
                where += " AND id NOT IN (%s)" % ", ".join(["%s"] * len(self.skipped))
                params += sorted(self.skipped)
        rows = self.db.query("SELECT %s FROM workunit WHERE %s LIMIT %d"
                             % (", ".join(_WU_COLUMNS), where, limit), params)
        return [Workunit.from_row(r) for r in rows]

    def _load_results(self, wu_ids):
        by_wu = {i: [] for i in wu_ids}
        rows = select_in(self.db, "SELECT %s FROM result WHERE workunitid IN ({ids}) ORDER BY id"
                         % ", ".join(_RESULT_COLUMNS), wu_ids)
        for row in rows:
            by_wu[row["workunitid"]].append(result_from_row(row))
        return by_wu

    # -- checks (file I/O, no transaction) --------------------------------------

    def _check_batch(self, wus):
        by_wu = self._load_results([w.id for w in wus])
        plans = []
        for wu in wus:
            results = by_wu[wu.id]
            snapshot = _snapshot(wu, results)
            plan = WuPlan(wu, results, snapshot)
            if self.args.check_punitive:
                plan.punish = self._scan_punitive(results)
            if wu.canonical_resultid:
                plan.pair_checks = self._check_late(wu, results)
            else:
                viable = [r for r in results if _viable(r)]
                if len(viable) >= wu.min_quorum:
                    self.log.debug("[WU#%d %s] Enough for quorum, checking set." % (wu.id, wu.name))
                    saved = [(r.outcome, r.validate_state) for r in viable]
                    plan.set_check = self.check_set(viable, wu)
                    plan.ran_check_set = True
                    # the decisions are in set_check; the rows stay as read
                    for r, (outcome, state) in zip(viable, saved):
                        r.outcome, r.validate_state = outcome, state
            plans.append(plan)
        return plans

    def _scan_punitive(self, results):
        out = []
        for r in results:
            if r.server_state != ServerState.OVER or r.outcome != Outcome.CLIENT_ERROR:
                continue
            code, data = self.init_result(r)
            if code == VAL_RESULT_LONG_TERM_FAIL:
                self.log.normal("punishing host %d for app version %d"
                                % (r.hostid, r.app_version_id))
                out.append((r.hostid, r.app_version_id))
            if data is not None:
                self.cleanup_result(r, data)
        return out

    def _safe_init(self, result):
        try:
            return self.init_result(result)
        except OutputFilesError as exc:
            self.log.critical("[RESULT#%d %s] can't get output file names: %s"
                              % (result.id, result.name, exc))
            return exc.code, None

    def _safe_compare(self, r1, d1, r2, d2):
        try:
            return self.compare_results(r1, d1, r2, d2)
        except OutputFilesError as exc:
            self.log.critical("[RESULT#%d] can't get output file names: %s" % (r1.id, exc))
            return exc.code, False

    def check_set(self, results, wu):
        """BOINC's check_set over the viable results (their outcome and
        validate_state are changed); return a :class:`SetCheck`."""
        out = SetCheck(min_quorum=wu.min_quorum)
        n = len(results)
        data = [None] * n
        had_error = [False] * n
        good = suspicious = 0
        for i, r in enumerate(results):
            code, data[i] = self._safe_init(r)
            if code == 0:
                good += 1
            elif code in _TRANSIENT:
                self.log.critical("check_set: init_result([RESULT#%d %s]) transient failure"
                                  % (r.id, r.name))
                out.retry = True
                out.transient.add(r.id)
                had_error[i] = True
            elif code == VAL_RESULT_SUSPICIOUS:
                self.log.normal("[RESULT#%d %s] considered to be suspicious" % (r.id, r.name))
                suspicious += 1
            else:
                self.log.critical("check_set: init_result([RESULT#%d %s]) failed: %d"
                                  % (r.id, r.name, code))
                r.outcome = Outcome.VALIDATE_ERROR
                r.validate_state = ValidateState.INVALID
                had_error[i] = True
        # one suspicious result alone is not good; several, or next to good ones, are
        if suspicious > 1 or good > 0:
            good += suspicious
        if suspicious and wu.min_quorum < abs(self.app.target_nresults):
            self.log.normal("suspicious result - raising quorum")
            out.min_quorum = abs(self.app.target_nresults)
        try:
            if good < out.min_quorum:
                return out
            min_valid = out.min_quorum // 2 + 1
            for i in range(n):
                if had_error[i]:
                    continue
                matches = [False] * n
                neq = 0
                for j in range(n):
                    if had_error[j]:
                        continue
                    if i == j:
                        neq += 1
                        matches[j] = True
                        continue
                    code, match = self._safe_compare(results[i], data[i], results[j], data[j])
                    if code in _TRANSIENT:
                        out.retry = True
                        return out
                    if code == 0:
                        if match:
                            neq += 1
                            matches[j] = True
                    else:
                        self.log.critical(
                            "check_set(): compare_results([RESULT#%d %s], [RESULT#%d %s]) failed"
                            % (results[i].id, results[i].name, results[j].id, results[j].name))
                if neq >= min_valid:
                    for j in range(n):
                        if not had_error[j]:
                            results[j].validate_state = (ValidateState.VALID if matches[j]
                                                         else ValidateState.INVALID)
                    out.canonicalid = results[i].id
                    break
            return out
        finally:
            for r in results:
                out.decided[r.id] = (r.outcome, r.validate_state)
            for i, r in enumerate(results):
                self.cleanup_result(r, data[i])

    def check_pair(self, r1, r2):
        """BOINC's check_pair: a late result ``r1`` against the canonical ``r2``."""
        outcome, state = r1.outcome, r1.validate_state
        code, d1 = self._safe_init(r1)
        if code in _TRANSIENT:
            self.log.critical("check_pair: init_result([RESULT#%d %s]) transient failure 1"
                              % (r1.id, r1.name))
            return PairCheck(r1.id, True, outcome, state)
        if code != 0:
            self.log.critical("check_pair: init_result([RESULT#%d %s]) perm failure 1"
                              % (r1.id, r1.name))
            return PairCheck(r1.id, False, Outcome.VALIDATE_ERROR, ValidateState.INVALID)
        code, d2 = self._safe_init(r2)
        if code in _TRANSIENT:
            self.log.critical("check_pair: init_result([RESULT#%d %s]) transient failure 2"
                              % (r2.id, r2.name))
            self.cleanup_result(r1, d1)
            return PairCheck(r1.id, True, outcome, state)
        if code != 0:
            self.log.critical("check_pair: init_result([RESULT#%d %s]) perm failure2"
                              % (r2.id, r2.name))
            self.cleanup_result(r1, d1)
            return PairCheck(r1.id, False, Outcome.VALIDATE_ERROR, ValidateState.INVALID)
        code, match = self._safe_compare(r1, d1, r2, d2)
        retry = False
        if code in _TRANSIENT:
            retry = True
        elif code == 0:
            state = ValidateState.VALID if match else ValidateState.INVALID
        else:
            self.log.critical("check_pair: compare_results([RESULT#%d RESULT#%d]) perm failure"
                              % (r1.id, r2.id))
            state = ValidateState.INVALID
        self.cleanup_result(r1, d1)
        self.cleanup_result(r2, d2)
        return PairCheck(r1.id, retry, outcome, state)

    def _check_late(self, wu, results):
        canonical = next((r for r in results if r.id == wu.canonical_resultid), None)
        if canonical is None:
            return []
        checks = []
        for r in results:
            if not _late_candidate(r):
                continue
            self.log.normal("[WU#%d] handle_wu(): testing result %d" % (wu.id, r.id))
            pc = self.check_pair(_copy_row(r), canonical)
            checks.append(pc)
            if pc.retry:
                break       # BOINC stops at the first transient failure
        return checks

    # -- the transaction ----------------------------------------------------------

    def _commit_batch(self, plans):
        """Apply the plans in one transaction (retried on deadlock); return #handled."""
        for attempt in range(4):
            marks = {k: (len(av.pfc_samples), len(av.credit_samples))
                     for k, av in self.av_cache.items()}
            try:
                with self.db.transaction():
                    done = self._apply(plans)
                    if self.args.dry_run:
                        self.log.normal("DB not updated (dry run)")
                        raise _DryRun()
                if done:
                    # transition_time is now; a canonical result makes the
                    # workunit READY for the assimilator
                    doorbell.ring(self.cfg, doorbell.TRANSITIONER, doorbell.ASSIMILATOR)
                return done
            except _DryRun:
                return len(plans)
            except DatabaseError as exc:
                # undo the samples the rolled-back work gathered
                for k, av in self.av_cache.items():
                    np_, nc = marks.get(k, (0, 0))
                    del av.pfc_samples[np_:]
                    del av.credit_samples[nc:]
                if getattr(exc, "mysql_code", None) in _DEADLOCK_CODES and attempt < 3:
                    self.log.normal("database lock conflict (%s); retrying the batch" % exc)
                    continue
                raise
        return 0

    def _apply(self, plans):
        batch = _Batch(now=self.now())
        fresh = self._lock_and_verify(plans)
        plans = [p for p in plans if p.wu.id in fresh]
        if not plans:
            return 0
        self._load_holders(batch, plans)
        for plan in plans:
            self._handle_wu(batch, plan, fresh[plan.wu.id])
        self._write(batch)
        return len(plans)

    def _lock_and_verify(self, plans):
        """Lock the batch's workunits and results; return {wu id: fresh wu row} of
        those unchanged since the checks."""
        ids = [p.wu.id for p in plans]
        # results before workunits, as the transitioner and the scheduler
        # take them: opposite orders deadlock under load
        states = {}
        for r in select_in(self.db, "SELECT id, workunitid, server_state, outcome, validate_state"
                           " FROM result WHERE workunitid IN ({ids}) ORDER BY id FOR UPDATE", ids):
            states.setdefault(r["workunitid"], []).append(
                (r["id"], r["server_state"], r["outcome"], r["validate_state"]))
        wus = {r["id"]: r for r in select_in(
            self.db, "SELECT id, need_validate, canonical_resultid, error_mask, assimilate_state,"
            " transition_time, target_nresults FROM " + by_primary_key("workunit")
            + " WHERE id IN ({ids}) ORDER BY id FOR UPDATE", ids)}
        fresh = {}
        for p in plans:
            w = wus.get(p.wu.id)
            now_snapshot = (w and w["canonical_resultid"], tuple(states.get(p.wu.id, ())))
            if (w is None or (w["need_validate"] <= 0 and not self.args.wu_id)
                    or now_snapshot != p.snapshot):
                self.log.debug("[WU#%d %s] changed while being checked; left for the next pass"
                               % (p.wu.id, p.wu.name))
                self.skipped.add(p.wu.id)
                continue
            fresh[p.wu.id] = w
        return fresh

    def _load_holders(self, batch, plans):
        """Lock and load the hosts, users, teams, host_app_versions the plans touch."""
        host_ids, hav_keys, owners = set(), set(), {"userid": set(), "teamid": set()}
        appids = set()
        for p in plans:
            for r in p.results:
                if r.server_state == ServerState.OVER and r.outcome == Outcome.SUCCESS:
                    host_ids.add(r.hostid)
                    hav_keys.add((r.hostid, creditlib.generalized_app_version_id(
                        r.app_version_id, r.appid)))
                    owners["userid"].add(r.userid)
                    owners["teamid"].add(r.teamid)
                    appids.add(r.appid)
        if self.cfg.credit_by_app and appids:
            for table, column, cache in (("credit_user", "userid", batch.credit_users),
                                         ("credit_team", "teamid", batch.credit_teams)):
                for row in select_in(
                        self.db, "SELECT %s AS owner, appid, njobs, total, expavg, expavg_time"
                        " FROM %s WHERE credit_type = 0 AND appid IN (%s) AND %s IN ({ids})"
                        " ORDER BY %s, appid FOR UPDATE"
                        % (column, table, ", ".join(["%s"] * len(appids)), column, column),
                        sorted(owners[column]), params=sorted(appids)):
                    cache[(row["owner"], row["appid"])] = creditlib.CreditHolder(
                        id=row["owner"], njobs=row["njobs"], total_credit=row["total"],
                        expavg_credit=row["expavg"], expavg_time=row["expavg_time"])
        # host_app_version rows before the hosts: the scheduler writes them
        # in that order
        keys = sorted(hav_keys)
        for row in host_app_version.lock_rows(self.db, keys):
            hav = HostAppVersion.from_row(row)
            batch.havs[(hav.host_id, hav.app_version_id)] = hav
        by_host = {}
        missing_hosts = sorted({k[0] for k in keys if k not in batch.havs})
        # (rare: a host's first result of an app version) its other rows, one
        # of which it may take over
        for row in host_app_version.lock_host_rows(self.db, missing_hosts):
            hav = batch.havs.setdefault((row["host_id"], row["app_version_id"]),
                                        HostAppVersion.from_row(row))
            by_host.setdefault(hav.host_id, []).append(hav)
        for key in keys:
            if key not in batch.havs:
                self._hav_lookup(batch, key, by_host.get(key[0], []))
        for row in select_in(self.db, "SELECT id, userid, total_credit, expavg_credit, expavg_time,"
                             " avg_turnaround FROM " + by_primary_key("host")
                             + " WHERE id IN ({ids}) ORDER BY id FOR UPDATE", sorted(host_ids)):
            batch.hosts[row["id"]] = creditlib.CreditHolder(**row)
        user_ids = sorted({h.userid for h in batch.hosts.values()})
        for row in select_in(self.db, "SELECT id, teamid, total_credit, expavg_credit, expavg_time"
                             " FROM " + by_primary_key("user") + " WHERE id IN ({ids}) ORDER BY id"
                             " FOR UPDATE", user_ids):
            batch.users[row["id"]] = creditlib.CreditHolder(**row)
        team_ids = sorted({u.teamid for u in batch.users.values() if u.teamid})
        for row in select_in(self.db, "SELECT id, total_credit, expavg_credit, expavg_time"
                             " FROM " + by_primary_key("team") + " WHERE id IN ({ids}) ORDER BY id"
                             " FOR UPDATE", team_ids):
            batch.teams[row["id"]] = creditlib.CreditHolder(**row)
        for key, hav in batch.havs.items():
            batch.havs_orig[key] = _hav_tuple(hav)

    def _hav_lookup(self, batch, key, host_havs):
        """BOINC's hav_lookup for a missing row: take over the host's row of the
        newest version of the same app, platform and plan class, or insert one."""
        host_id, gavid = key
        if gavid >= 0:
            # (0, an unknown version, finds no app_version either: no row, as in BOINC)
            av = self.db.query_one("SELECT id, appid, platformid, plan_class, version_num"
                                   " FROM app_version WHERE id = %s", (gavid,))
            if av is None:
                return      # BOINC: lookup fails, the result is handled without a hav
            best = best_av = None
            others = {h.app_version_id: h for h in host_havs if h.app_version_id > 0}
            if others:
                for av2 in select_in(self.db, "SELECT id, appid, platformid, plan_class,"
                                     " version_num FROM app_version WHERE id IN ({ids})",
                                     sorted(others)):
                    if (av2["appid"], av2["platformid"], av2["plan_class"]) != (
                            av["appid"], av["platformid"], av["plan_class"]):
                        continue
                    if best_av is None or av2["version_num"] > best_av["version_num"]:
                        best, best_av = others[av2["id"]], av2
            if best is not None:
                host_app_version.move_to_app_version(self.db, host_id, best.app_version_id, gavid)
                batch.havs.pop((host_id, best.app_version_id), None)
                best.app_version_id = gavid
                batch.havs[key] = best
                return
        host_app_version.insert_host_app_version(self.db, host_id, gavid)
        batch.havs[key] = HostAppVersion(host_id=host_id, app_version_id=gavid)

    def _av_lookup(self, av_id):
        av = self.av_cache.get(av_id)
        if av is None:
            row = self.db.query_one("SELECT id, pfc_n, pfc_avg, pfc_scale, expavg_credit,"
                                    " expavg_time FROM app_version WHERE id = %s", (av_id,))
            if row is None:
                return None
            av = self.av_cache[av_id] = creditlib.AppVersionCredit(**row)
        return av

    def _hav(self, batch, r):
        return batch.havs.get((r.hostid, creditlib.generalized_app_version_id(
            r.app_version_id, r.appid)))

    # -- handle_wu ---------------------------------------------------------------

    def _handle_wu(self, batch, plan, fresh):
        wu = _copy_row(plan.wu)
        # columns others may have changed since the read: start from the locked row
        for col in ("error_mask", "assimilate_state", "transition_time", "target_nresults"):
            setattr(wu, col, fresh[col])
        # work on copies: a deadlock retry starts again from the rows as read
        results = [_copy_row(r) for r in plan.results]
        for hostid, avid in plan.punish:
            batch.punish.add((hostid, avid))
        if plan.pair_checks is not None:
            transition = self._handle_late(batch, wu, results, plan)
            if transition is None:
                # canonical result row missing: leave the workunit alone
                self.skipped.add(wu.id)
                return
        else:
            transition = self._handle_no_canonical(batch, wu, results, plan)
        now = int(batch.now)
        if transition == IMMEDIATE:
            wu.transition_time = now
        elif transition == DELAYED:
            wu.transition_time = min(wu.transition_time, now + DELAYED_SECONDS)
        elif transition == NEVER:
            wu.transition_time = INT_MAX
        batch.wu_updates[wu.id] = (0, wu.error_mask, wu.assimilate_state, wu.transition_time,
                                   wu.target_nresults, wu.canonical_resultid, wu.canonical_credit)

    def _handle_late(self, batch, wu, results, plan):
        self.log.normal("[WU#%d %s] Already has canonical result %d"
                        % (wu.id, wu.name, wu.canonical_resultid))
        canonical = next((r for r in results if r.id == wu.canonical_resultid), None)
        if canonical is None:
            self.log.critical("[WU#%d %s] Can't find canonical result %d"
                              % (wu.id, wu.name, wu.canonical_resultid))
            return None
        by_id = {r.id: r for r in results}
        transition = NO_CHANGE
        for pc in plan.pair_checks:
            if pc.retry:
                return DELAYED      # e.g. a failed NFS mount: try again later
            r = by_id[pc.resultid]
            r.outcome, r.validate_state = pc.outcome, pc.validate_state
            update_result = r.outcome == Outcome.VALIDATE_ERROR
            transition = IMMEDIATE
            host = batch.hosts.get(r.hostid)
            if host is None:
                self.log.critical("[RESULT#%d] lookup of host %d failed" % (r.id, r.hostid))
                continue
            hav = self._hav(batch, r)
            if r.validate_state == ValidateState.VALID:
                update_result = True
                self.log.normal("[RESULT#%d %s] pair_check() matched: setting result to valid"
                                % (r.id, r.name))
                self._is_valid(batch, host, r, wu, hav)
                # the statistics are updated; the credit is the canonical's
                creditlib.assign_credit_set(wu, [_copy_row(r)], self.app,
                                            self._av_lookup, [hav], self.args.max_granted_credit,
                                            self.log, self.cfg.debug_credit)
                if not self.args.no_credit:
                    r.granted_credit = canonical.granted_credit
                    self._grant(batch, host, r, r.granted_credit)
            elif r.validate_state == ValidateState.INVALID:
                update_result = True
                self.log.normal("[RESULT#%d %s] pair_check() didn't match: setting result to"
                                " invalid" % (r.id, r.name))
                self._is_invalid(hav)
            if hav is not None:
                self._log_hav(batch, hav, r)
            if update_result:
                self.log.normal("[RESULT#%d %s] granted_credit %f"
                                % (r.id, r.name, r.granted_credit))
                self._update_result(batch, r)
        return transition

    def _handle_no_canonical(self, batch, wu, results, plan):
        self.log.normal("[WU#%d %s] handle_wu(): No canonical result yet" % (wu.id, wu.name))
        viable = [r for r in results if _viable(r)]
        self.log.debug("[WU#%d %s] Found %d viable results" % (wu.id, wu.name, len(viable)))
        if not plan.ran_check_set:
            return NO_CHANGE
        sc = plan.set_check
        transition = DELAYED if sc.retry else NO_CHANGE
        for r in viable:
            if r.id in sc.decided:
                r.outcome, r.validate_state = sc.decided[r.id]
        havs = [self._hav(batch, r) for r in viable]
        credit = 0.0
        canonicalid = sc.canonicalid
        if canonicalid:
            a = self.args
            # computed even when granting another way: it updates the statistics
            if not a.credit_from_runtime:
                credit = creditlib.assign_credit_set(wu, viable, self.app, self._av_lookup, havs,
                                                     a.max_granted_credit, self.log,
                                                     self.cfg.debug_credit)
            if a.credit_from_wu:
                credit = wu.canonical_credit
                if credit == 0:
                    self.log.critical("[WU#%d %s] credit not specified in WU" % (wu.id, wu.name))
            elif a.credit_from_runtime:
                credit = creditlib.credit_from_runtime(wu, viable, a.max_granted_credit, self.log)
            elif a.post_assigned_credit:
                credit = next((r.claimed_credit for r in viable if r.id == canonicalid), 0.0)
                if credit == 0:
                    self.log.critical("[WU#%d %s] post-assigned credit missing"
                                      % (wu.id, wu.name))
            elif a.no_credit:
                credit = 0.0
            if a.max_granted_credit and credit > a.max_granted_credit:
                credit = a.max_granted_credit
        n_viable = 0
        for r, hav in zip(viable, havs):
            update_result = False
            if r.outcome != Outcome.SUCCESS or r.validate_state == ValidateState.INVALID:
                transition = IMMEDIATE
                update_result = True
            else:
                n_viable += 1
            host = None
            if r.validate_state in (ValidateState.VALID, ValidateState.INVALID):
                host = batch.hosts.get(r.hostid)
                if host is None:
                    self.log.critical("[RESULT#%d] lookup of host %d failed" % (r.id, r.hostid))
                    continue
            if r.validate_state == ValidateState.VALID:
                update_result = True
                self._is_valid(batch, host, r, wu, hav)
                if not self.args.no_credit:
                    r.granted_credit = credit
                    self._grant(batch, host, r, credit)
                    self.log.normal("[RESULT#%d %s] Valid; granted %f credit [HOST#%d]"
                                    % (r.id, r.name, r.granted_credit, r.hostid))
            elif r.validate_state == ValidateState.INVALID:
                update_result = True
                self.log.normal("[RESULT#%d %s] Invalid [HOST#%d]" % (r.id, r.name, r.hostid))
                self._is_invalid(hav)
            elif r.validate_state == ValidateState.INIT and r.id not in sc.transient:
                self.log.normal("[RESULT#%d %s] Inconclusive [HOST#%d]"
                                % (r.id, r.name, r.hostid))
                r.validate_state = ValidateState.INCONCLUSIVE
                update_result = True
            if hav is not None:
                self._log_hav(batch, hav, r)
            if update_result:
                self._update_result(batch, r)
        if canonicalid:
            # the assimilator, not the transitioner, goes next
            transition = NEVER
            self.log.debug("[WU#%d %s] Found a canonical result: id=%d"
                           % (wu.id, wu.name, canonicalid))
            wu.canonical_resultid = canonicalid
            wu.canonical_credit = credit
            wu.assimilate_state = AssimilateState.READY
            for r in results:
                if r.server_state == ServerState.UNSENT:
                    r.server_state = ServerState.OVER
                    r.outcome = Outcome.DIDNT_NEED
                    self._update_result(batch, r)
        else:
            if n_viable > wu.max_success_results:
                wu.error_mask |= 4          # WU_ERROR_TOO_MANY_SUCCESS_RESULTS
                transition = IMMEDIATE
            if n_viable >= wu.target_nresults:
                # ask the transitioner for one more replica
                wu.target_nresults = n_viable + 1
                transition = IMMEDIATE
        return transition

    # -- bookkeeping of one result ---------------------------------------------------

    def _is_valid(self, batch, host, r, wu, hav):
        host.avg_turnaround = creditlib.compute_avg_turnaround(
            host.avg_turnaround, r.received_time - r.sent_time)
        host.changed = True
        if hav is not None:
            hav.max_jobs_per_day += 1
            # unreplicated jobs of an adaptive-replication app don't count
            if not (wu.target_nresults == 1 and self.app.target_nresults > 1):
                hav.consecutive_valid += 1
        if self.args.update_credited_job:
            # BOINC records the workunit's opaque value as its id here
            batch.credited_jobs.add((host.userid, int(wu.opaque)))

    def _is_invalid(self, hav):
        if hav is None:
            return
        hav.consecutive_valid = 0
        if hav.max_jobs_per_day > self.cfg.daily_result_quota:
            hav.max_jobs_per_day -= 1

    def _grant(self, batch, host, r, amount):
        """grant_credit (host, its user, the user's team) and grant_credit_by_app."""
        now = batch.now
        creditlib.grant(host, now, r.sent_time, amount)
        user = batch.users.get(host.userid)
        if user is None:
            self.log.critical("lookup of user %d failed" % host.userid)
        else:
            creditlib.grant(user, now, r.sent_time, amount)
            if user.teamid:
                team = batch.teams.get(user.teamid)
                if team is None:
                    self.log.critical("lookup of team %d failed" % user.teamid)
                else:
                    creditlib.grant(team, now, r.sent_time, amount)
        if self.cfg.credit_by_app:
            self._grant_by_app(batch, batch.credit_users, r.userid, r, amount)
            self._grant_by_app(batch, batch.credit_teams, r.teamid, r, amount)

    def _grant_by_app(self, batch, cache, owner, r, amount):
        """grant_credit_by_app for one credit_user or credit_team row (loaded
        by _load_holders; a missing one starts, as in BOINC, with expavg_time now)."""
        key = (owner, r.appid)
        holder = cache.get(key)
        if holder is None:
            holder = cache[key] = creditlib.CreditHolder(id=owner, expavg_time=batch.now)
        creditlib.grant(holder, batch.now, r.sent_time, amount)

    def _log_hav(self, batch, hav, r):
        orig = batch.havs_orig.get((hav.host_id, hav.app_version_id))
        self.log.normal("[HOST#%d AV#%d] [outlier=%d] Updating HAV in DB.  pfc.n=%f->%f"
                        % (hav.host_id, hav.app_version_id, r.runtime_outlier,
                           orig[0] if orig else 0.0, hav.pfc_n))

    def _update_result(self, batch, r):
        batch.result_updates[r.id] = (int(r.validate_state), r.granted_credit,
                                      int(r.server_state), int(r.outcome), r.opaque,
                                      1 if r.runtime_outlier else 0)

    # -- writing -------------------------------------------------------------------

    def _write(self, batch):
        db = self.db
        if batch.result_updates:
            result_table.record_validation(db, batch.result_updates)
        credit_cols = ("total_credit", "expavg_credit", "expavg_time")
        for table, holders, extra in (("host", batch.hosts, ("avg_turnaround",)),
                                      ("user", batch.users, ()), ("team", batch.teams, ())):
            cols = credit_cols + extra
            # total_credit is written as an increment, as BOINC does
            rows = {h.id: (h.total_added, h.expavg_credit, h.expavg_time)
                    + tuple(getattr(h, c) for c in extra)
                    for h in holders.values() if h.changed}
            if rows:
                grant_credits(db, table, cols, rows)
        changed_havs = [h for k, h in batch.havs.items()
                        if _hav_tuple(h) != batch.havs_orig.get(k)]
        if changed_havs:
            # the rows exist: _load_holders locked them or inserted the missing ones
            host_app_version.record_statistics(
                db, _HAV_STATS,
                {(h.host_id, h.app_version_id): _hav_tuple(h) for h in changed_havs})
        for (hostid, avid) in sorted(batch.punish):
            host_app_version.punish(db, hostid, avid)
        for table, column, cache in (("credit_user", "userid", batch.credit_users),
                                     ("credit_team", "teamid", batch.credit_teams)):
            if cache:
                add_credit_by_app(
                    db, table, column,
                    [(owner, appid, 0, h.njobs_added, h.total_added, h.expavg_credit,
                      h.expavg_time) for (owner, appid), h in cache.items()])
        if batch.credited_jobs:
            record_credited_jobs(db, sorted(batch.credited_jobs))
        if batch.wu_updates:
            workunit_table.record_validation(db, batch.wu_updates)

    def _flush_app_versions(self):
        """Fold the pass's samples into app_version rows (write_modified_app_versions)."""
        pending = [av for av in self.av_cache.values() if av.pfc_samples or av.credit_samples]
        if not pending or self.args.dry_run:
            for av in pending:
                av.pfc_samples.clear()
                av.credit_samples.clear()
            return
        now = self.now()
        with self.db.transaction():
            rows = {r["id"]: r for r in select_in(
                self.db, "SELECT id, pfc_n, pfc_avg, pfc_scale, expavg_credit, expavg_time"
                " FROM app_version WHERE id IN ({ids}) FOR UPDATE", sorted(av.id for av in pending))}
            for av in pending:
                row = rows.get(av.id)
                if row is None:
                    continue
                # start from the stored values: the feeder may have changed pfc_scale
                av.pfc_n, av.pfc_avg, av.pfc_scale = row["pfc_n"], row["pfc_avg"], row["pfc_scale"]
                av.expavg_credit, av.expavg_time = row["expavg_credit"], row["expavg_time"]
                av.apply_samples(now)
                record_pfc_and_credit(self.db, av.id, av.pfc_n, av.pfc_avg, av.expavg_credit,
                                      av.expavg_time)
        for av in pending:
            av.pfc_samples.clear()
            av.credit_samples.clear()


class _DryRun(Signal):
    """Raised inside the transaction to roll back a --dry_run batch."""


def _viable(r):
    return (r.server_state == ServerState.OVER and r.outcome == Outcome.SUCCESS
            and r.validate_state != ValidateState.INVALID)


def _late_candidate(r):
    return (r.server_state == ServerState.OVER and r.outcome == Outcome.SUCCESS
            and r.validate_state in (ValidateState.INIT, ValidateState.INCONCLUSIVE))


def _snapshot(wu, results):
    return (wu.canonical_resultid,
            tuple((r.id, r.server_state, r.outcome, r.validate_state) for r in results))


def _hav_tuple(hav):
    """The statistics the validator writes (pfc_n first)."""
    return tuple(getattr(hav, c) for c in _HAV_STATS)


def _copy_row(row):
    """A shallow copy of a row dataclass (faster than dataclasses.replace)."""
    cls = row.__class__
    c = cls.__new__(cls)
    for name in cls.__slots__:
        setattr(c, name, getattr(row, name))
    return c
