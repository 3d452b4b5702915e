"""The transitioner: BOINC's workunit state machine (sched/transitioner.cpp).

Every workunit whose ``transition_time`` has passed is looked at with all its
results, and the transitioner decides, in this order:

1. results IN_PROGRESS past their ``report_deadline`` time out (OVER,
   NO_REPLY; the host_app_version is penalised);
2. results are counted by state and outcome; a SUCCESS result still to be
   validated after the canonical result's files were deleted is TOO_LATE;
3. ``need_validate`` is set when a new success waits and the successes reach
   ``min_quorum``;
4. error bits: COULDNT_SEND_RESULT (a result could not be sent),
   TOO_MANY_ERROR_RESULTS (errors > ``max_error_results``),
   TOO_MANY_TOTAL_RESULTS (more instances needed than ``max_total_results``
   allows); CANCELLED and TOO_MANY_SUCCESS_RESULTS come from elsewhere (cancel
   tools, the validator) and are acted on like the others;
5. a workunit with an error: unsent results become OVER/DIDNT_NEED, unchecked
   successes NO_CHECK, and assimilation is triggered (READY); otherwise, if
   there is no canonical result, new results are created up to
   ``target_nresults`` (never with TRANSITION_NO_NEW_RESULTS), named
   ``WUNAME_<n>`` after the highest existing suffix;
6. a canonical result with every result over and validated triggers deferred
   assimilation (READY);
7. once assimilated (and ``delete_delay_hours`` after the last report): input
   files (all results over and validated), outputs of error results, of
   validated results, and of the canonical result once nothing is pending,
   become file_delete_state READY;
8. the next ``transition_time``: never (INT_MAX) with a canonical result or an
   error, else a safety net of max(1.5 x delay_bound, 10 days); lowered to the
   earliest deadline of a result in progress and to a deferred deletion; a
   time already past means the transitioner is behind, so it is pushed
   2 x the lag into the future (60 s .. 1 day).

``plan_workunit`` holds those rules and touches no database; the
:class:`Transitioner` daemon reads due workunits in batches (one query for
the workunits, one for all their results), and writes the plans of a group
of workunits in one transaction: the group's results are locked first and
compared with what was read, and so are the workunits' rows (a workunit
whose results or own state changed meanwhile - a report, a send, a
validation, an assimilation - is left as it is and made due again at once),
result updates conditional on the row being unchanged, new results in one
multi-row INSERT, workunit updates grouped by identical change sets, with
``transition_time`` compare-and-set as BOINC does. A kill at any moment
leaves either all or none of a group's changes; result names are unique, so
a pass repeated after a crash cannot create a result twice.

Options: ``--one_pass``, ``--mod N I``, ``--sleep_interval S``, ``--wu_id ID``
(transition that workunit now, whatever its transition_time, and exit),
``-d N``.
"""

import os
import secrets
import time
from collections import defaultdict
from dataclasses import dataclass, field

from boincpy import crypto, doorbell
from boincpy.cli import option
from boincpy.cnum import atoi
from boincpy.credit import HAV_AVG_LIMIT, HAV_AVG_THRESH, HAV_AVG_WEIGHT, average_var_update
from boincpy.daemons.base import Daemon, run_daemon
from boincpy.db import host_app_version
from boincpy.db.bulk import by_primary_key, placeholders
from boincpy.db.result import insert_results, update_result_if_unchanged
from boincpy.db.workunit import apply_set_clause, set_transition_times, transition_set_clause
from boincpy.errors import DatabaseError, TemplateError
from boincpy.log import CRITICAL, DEBUG, NORMAL
from boincpy.states import (INT_MAX, AssimilateState, FileDeleteState, Outcome, ServerState,
                            TransitionerFlags, ValidateState, WuError)
from boincpy.submit.batch import refresh_moved
from boincpy.templates import process_result_template

SELECT_LIMIT = 1000     # workunits per enumeration (BOINC: 1000 joined rows)
GROUP_SIZE = 250        # workunits per transaction
EXIT_ABORTED_VIA_GUI = 203
TEN_DAYS = 10 * 86400
# Errors after which a group is simply read and tried again.
_RETRYABLE = {1205: "lock wait timeout", 1213: "deadlock", 1062: "duplicate result name"}
_MAX_RETRIES = 5

WU_COLUMNS = ("id", "name", "appid", "min_quorum", "need_validate", "canonical_resultid",
              "transition_time", "delay_bound", "error_mask", "max_error_results",
              "max_total_results", "file_delete_state", "assimilate_state",
              "target_nresults", "result_template_file", "priority", "hr_class", "batch",
              "app_version_id", "transitioner_flags", "size_class")
RESULT_COLUMNS = ("id", "workunitid", "name", "report_deadline", "server_state", "outcome",
                  "validate_state", "file_delete_state", "sent_time", "hostid",
                  "received_time", "app_version_id", "exit_status")
# Result columns the transitioner may change.
RESULT_STATE_COLUMNS = ("server_state", "outcome", "validate_state", "file_delete_state")
# Workunit columns the transitioner may change (BOINC's update_workunit).
WU_STATE_COLUMNS = ("need_validate", "error_mask", "assimilate_state", "file_delete_state",
                    "transition_time", "hr_class", "app_version_id")
# Workunit columns others write while a group is planned: a change to any of
# them sends the workunit round again (see Transitioner._changed_meanwhile);
# transition_time alone is compare-and-set instead (the plan goes through,
# due again now).
WU_WATCHED_COLUMNS = tuple(c for c in WU_STATE_COLUMNS if c != "transition_time") + (
    "canonical_resultid",)
NEW_RESULT_COLUMNS = ("create_time", "workunitid", "server_state", "name", "xml_doc_in",
                      "xml_doc_out", "stderr_out", "batch", "random", "appid", "priority",
                      "size_class")

INACTIVE, UNSENT = ServerState.INACTIVE, ServerState.UNSENT
IN_PROGRESS, OVER = ServerState.IN_PROGRESS, ServerState.OVER


@dataclass
class Plan:
    """What one pass decided for one workunit (nothing written yet)."""
    wu: dict                                          # the row as read
    changes: dict = field(default_factory=dict)       # workunit column -> new value
    result_changes: list = field(default_factory=list)  # (result as read, {column: new})
    timed_out: list = field(default_factory=list)     # results that passed their deadline
    new_names: list = field(default_factory=list)     # names of results to create
    new_priority: int = 0
    messages: list = field(default_factory=list)      # (log level, text), logged on commit

    def say(self, level, text):
        self.messages.append((level, "[WU#%d %s] %s" % (self.wu["id"], self.wu["name"], text)))


def result_suffix(name):
    """The number after a result name's last ``_`` (C's atoi: 0 when none)."""
    p = name.rfind("_")
    return atoi(name[p + 1:]) if p >= 0 else 0


def generalized_app_version_id(app_version_id, appid):
    """host_app_version.app_version_id of a result: anonymous versions (< 0)
    become ``appid * 1000000 - app_version_id``."""
    if app_version_id < 0:
        return appid * 1000000 - app_version_id
    return app_version_id


def plan_workunit(wu, results, now, cfg):
    """Apply BOINC's transition rules to one workunit and its results.

    ``wu``: dict with WU_COLUMNS; ``results``: dicts with RESULT_COLUMNS;
    ``now``: Unix time; ``cfg``: the Config (hr_class_static, delete_delay,
    reliable_priority_on_over[_except_error]).  Returns a :class:`Plan`.
    The phases are BOINC's handle_wu's: count the results (timing out the
    overdue), the workunit's errors and how many new results it needs, the
    failed workunit's cleanup or the new results, assimilation and file
    deletion, the next transition time.
    """
    plan = Plan(wu)
    new = dict(wu)                        # the workunit as this pass leaves it
    res = [dict(r) for r in results]      # the results as this pass leaves them
    canonical = _canonical_result(plan, wu, res)
    n = _count_results(plan, res, now, canonical)
    needed = _check_errors(plan, wu, new, n, cfg)
    if new["error_mask"]:
        _finish_failed(plan, new, res)
    elif not wu["canonical_resultid"]:
        _plan_new_results(plan, wu, n, needed, cfg)
    over = _over_state(res, now)
    deferred_file_delete_time = _assimilation_and_deletion(plan, wu, new, res, canonical,
                                                           over, now, cfg)
    new["transition_time"] = _transition_time(plan, wu, new, res, deferred_file_delete_time,
                                              now)
    plan.changes = {c: int(new[c]) for c in WU_STATE_COLUMNS if new[c] != wu[c]}
    for before, after in zip(results, res):
        changed = {c: int(after[c]) for c in RESULT_STATE_COLUMNS if after[c] != before[c]}
        if changed:
            plan.result_changes.append((before, changed))
    return plan


@dataclass
class _Counts:
    """The results of a workunit by state and outcome (handle_wu's counters)."""
    total: int = 0
    unsent: int = 0
    in_progress: int = 0
    over: int = 0
    success: int = 0
    errors: int = 0
    couldnt_send: int = 0
    no_reply: int = 0
    didnt_need: int = 0
    max_suffix: int = -1
    new_result_to_validate: bool = False


@dataclass
class _OverState:
    """Whether every result is over (and validated, or ready to assimilate),
    and when the last one came back."""
    validated: bool = True
    ready_to_assimilate: bool = True
    most_recently_returned: int = 0


def _canonical_result(plan, wu, res):
    """The canonical result among ``res`` (None when the workunit has none)."""
    canonical = None
    if wu["canonical_resultid"]:
        for r in res:
            if r["id"] == wu["canonical_resultid"]:
                canonical = r
        if canonical is None:
            plan.say(CRITICAL, "can't find canonical result")
    return canonical


def _count_results(plan, res, now, canonical):
    """Count the results by state; time out the overdue; find new results to
    validate (too late once the canonical result's files are gone)."""
    tag = _result_tag
    canonical_files_deleted = (canonical is not None
                               and canonical["file_delete_state"] == FileDeleteState.DONE)
    n = _Counts()
    for r in res:
        n.total += 1
        n.max_suffix = max(n.max_suffix, result_suffix(r["name"]))
        state = r["server_state"]
        if state == INACTIVE or state == UNSENT:
            n.unsent += 1
        elif state == IN_PROGRESS:
            if r["report_deadline"] < now:
                plan.say(NORMAL, "%s result timed out (%d < %d) server_state:IN_PROGRESS=>OVER; "
                         "outcome:NO_REPLY" % (tag(r), r["report_deadline"], now))
                r["server_state"] = OVER
                r["outcome"] = Outcome.NO_REPLY
                plan.timed_out.append(r)
                n.over += 1
                n.no_reply += 1
            else:
                n.in_progress += 1
        elif state == OVER:
            n.over += 1
            outcome = r["outcome"]
            if outcome == Outcome.COULDNT_SEND:
                plan.say(NORMAL, "%s result couldn't be sent" % tag(r))
                n.couldnt_send += 1
            elif outcome == Outcome.SUCCESS:
                if r["validate_state"] == ValidateState.INIT:
                    if canonical_files_deleted:
                        r["validate_state"] = ValidateState.TOO_LATE
                        plan.say(NORMAL, "%s validate_state:INIT=>TOO_LATE" % tag(r))
                    else:
                        n.new_result_to_validate = True
                if r["validate_state"] != ValidateState.INVALID:
                    n.success += 1       # invalid results don't count as successes
            elif outcome == Outcome.CLIENT_ERROR:
                # a job the user aborted is not the job's fault
                if r["exit_status"] == EXIT_ABORTED_VIA_GUI:
                    n.no_reply += 1
                else:
                    n.errors += 1
            elif outcome == Outcome.VALIDATE_ERROR:
                n.errors += 1
            elif outcome == Outcome.NO_REPLY or outcome == Outcome.CLIENT_DETACHED:
                n.no_reply += 1
            elif outcome == Outcome.DIDNT_NEED:
                n.didnt_need += 1
    plan.say(DEBUG, "%d results: unsent %d, in_progress %d, over %d (success %d, error %d, "
             "couldnt_send %d, no_reply %d, didnt_need %d)"
             % (n.total, n.unsent, n.in_progress, n.over, n.success, n.errors, n.couldnt_send,
                n.no_reply, n.didnt_need))
    return n


def _check_errors(plan, wu, new, n, cfg):
    """Validation due, the workunit's error conditions, and how many new
    results it needs (returned)."""
    # Validation is due when a new success waits and the quorum can be met.
    if n.new_result_to_validate and n.success >= wu["min_quorum"]:
        new["need_validate"] = 1
        plan.say(NORMAL, "need_validate:=>true")

    # Workunit error conditions (too many successes is the validator's check).
    if n.couldnt_send > 0:
        new["error_mask"] |= WuError.COULDNT_SEND_RESULT
    # Only errors so far: let other platforms / app versions have a try.
    if n.errors and not (n.success or n.in_progress or n.no_reply) and not cfg.hr_class_static:
        new["hr_class"] = 0
        new["app_version_id"] = 0
    if n.errors > wu["max_error_results"]:
        plan.say(NORMAL, "WU has too many errors (%d errors for %d results)"
                 % (n.errors, n.total))
        new["error_mask"] |= WuError.TOO_MANY_ERROR_RESULTS

    # How many new results: enough to keep target_nresults viable, within
    # max_total_results; needing one more than allowed errors the workunit.
    needed = max(0, wu["target_nresults"] - n.unsent - n.in_progress - n.success)
    allowed = wu["max_total_results"] - n.total
    too_many = allowed < 0 or (allowed == 0 and needed > 0)
    if not too_many:
        needed = min(needed, allowed)
    else:
        plan.say(NORMAL, "WU has too many total results (%d)" % n.total)
        plan.say(NORMAL, "   target_nresults=%d nunsent=%d ninprogress=%d nsuccess=%d "
                 "new_needed=%d new_allowed=%d" % (wu["target_nresults"], n.unsent,
                                                   n.in_progress, n.success, needed, allowed))
        new["error_mask"] |= WuError.TOO_MANY_TOTAL_RESULTS
    return needed


def _finish_failed(plan, new, res):
    """A failed workunit sends nothing more and goes to the assimilator."""
    for r in res:
        if r["server_state"] == INACTIVE or r["server_state"] == UNSENT:
            plan.say(NORMAL, "%s server_state:UNSENT=>OVER; outcome:=>DIDNT_NEED"
                     % _result_tag(r))
            r["server_state"] = OVER
            r["outcome"] = Outcome.DIDNT_NEED
        elif (r["server_state"] == OVER and r["outcome"] == Outcome.SUCCESS
              and r["validate_state"] in (ValidateState.INIT, ValidateState.INCONCLUSIVE)):
            r["validate_state"] = ValidateState.NO_CHECK
    if new["assimilate_state"] == AssimilateState.INIT:
        new["assimilate_state"] = AssimilateState.READY
        plan.say(NORMAL, "error_mask:%d assimilate_state:INIT=>READY" % new["error_mask"])


def _plan_new_results(plan, wu, n, needed, cfg):
    """The names and priority of the results to create (none once the
    workunit says TRANSITION_NO_NEW_RESULTS)."""
    if wu["transitioner_flags"] != TransitionerFlags.TRANSITION_NO_NEW_RESULTS and needed > 0:
        plan.say(NORMAL, "Generating %d more results (%d target - %d unsent - %d in progress"
                 " - %d success)" % (needed, wu["target_nresults"], n.unsent, n.in_progress,
                                     n.success))
        plan.new_names = ["%s_%d" % (wu["name"], n.max_suffix + j + 1) for j in range(needed)]
        increase = 0
        if n.over and cfg.reliable_priority_on_over:
            increase = cfg.reliable_priority_on_over
        elif n.over and not n.errors and cfg.reliable_priority_on_over_except_error:
            increase = cfg.reliable_priority_on_over_except_error
        plan.new_priority = wu["priority"] + increase


def _over_state(res, now):
    """Are all results over (and validated)?  A NO_REPLY result whose deadline
    is still ahead (set by hand or by a resend) may yet come back."""
    over = _OverState()
    for r in res:
        if r["server_state"] == OVER:
            over.most_recently_returned = max(over.most_recently_returned, r["received_time"])
            if r["outcome"] == Outcome.SUCCESS:
                if r["validate_state"] == ValidateState.INIT:
                    over.validated = False
                    over.ready_to_assimilate = False
            elif r["outcome"] == Outcome.NO_REPLY and now < r["report_deadline"]:
                over.validated = False
        else:
            over.validated = False
            over.ready_to_assimilate = False
    return over


def _assimilation_and_deletion(plan, wu, new, res, canonical, over, now, cfg):
    """Deferred assimilation, and the files that may go once assimilated
    (delete_delay after the last report); returns the time deletion was
    deferred to (0: not deferred)."""
    # Assimilation the validator deferred until every result is in.
    if (over.ready_to_assimilate and new["assimilate_state"] == AssimilateState.INIT
            and wu["canonical_resultid"] > 0):
        new["assimilate_state"] = AssimilateState.READY
        plan.say(NORMAL, "Deferred assimilation now set to ASSIMILATE_STATE_READY")

    deferred_file_delete_time = 0
    if new["assimilate_state"] == AssimilateState.DONE:
        if now >= over.most_recently_returned + cfg.delete_delay:
            if over.validated and new["file_delete_state"] == FileDeleteState.INIT:
                new["file_delete_state"] = FileDeleteState.READY
                plan.say(DEBUG, "ASSIMILATE_DONE: file_delete_state:=>READY")
            for r in res:
                # the canonical outputs stay while a success awaits checking
                if r is canonical and not over.validated:
                    continue
                if r["outcome"] == Outcome.CLIENT_ERROR:
                    do_delete = True
                elif r["outcome"] == Outcome.SUCCESS:
                    do_delete = r["validate_state"] != ValidateState.INIT
                else:
                    do_delete = False
                if do_delete and r["file_delete_state"] == FileDeleteState.INIT:
                    plan.say(NORMAL, "%s file_delete_state:=>READY" % _result_tag(r))
                    r["file_delete_state"] = FileDeleteState.READY
        else:
            deferred_file_delete_time = over.most_recently_returned + cfg.delete_delay
            plan.say(DEBUG, "deferring file deletion for %.0f seconds"
                     % (deferred_file_delete_time - now))
    return deferred_file_delete_time


def _transition_time(plan, wu, new, res, deferred_file_delete_time, now):
    """The next transition time: the earliest deadline of a result in
    progress, the deferred deletion, or the safety net; never in the past."""
    if wu["canonical_resultid"] or new["error_mask"]:
        tt = INT_MAX
    else:
        tt = now + max(int(1.5 * wu["delay_bound"]), TEN_DAYS)   # safety net
    for r in res:
        if r["server_state"] == IN_PROGRESS and r["report_deadline"] < tt:
            tt = r["report_deadline"]
    if deferred_file_delete_time and deferred_file_delete_time < tt:
        tt = int(deferred_file_delete_time)
    if tt < now:
        extra = min(max(2 * (now - tt), 60), 86400)
        plan.say(DEBUG, "transition time in past: adding extra delay %d sec" % extra)
        tt = now + extra
    elif tt == now:
        # due next second, as with BOINC's "transition_time < now"; the
        # enumeration takes "<= now" so that a workunit a report (or the
        # validator, the assimilator) set to now is transitioned at once
        tt = now + 1
    plan.say(DEBUG, "setting transition_time to %d" % tt)
    return tt


def _result_tag(r):
    return "[RESULT#%d %s]" % (r["id"], r["name"])


class Transitioner(Daemon):
    """Moves workunits through their states (see the module docstring)."""

    name = "transitioner"
    sleep_interval = 5.0
    doorbell = "transitioner"

    @classmethod
    def add_options(cls, params):
        params.append(option("wu_id", type=int, default=0, metavar="ID",
                             help="transition this workunit now and exit"))

    def initialise(self):
        """Connect; read the upload key when upload certificates are made."""
        super().initialise()
        if self.args.wu_id:
            self.args.one_pass = True
        self.upload_key = None
        if not self.cfg.dont_generate_upload_certificates:
            self.upload_key = crypto.read_key(os.path.join(self.cfg.key_dir, "upload_private"))
        self._templates = {}

    def stop_requested(self):
        # BOINC's transitioner ignores stop_daemons with --one_pass, so an
        # operator can run a pass by hand while the project is stopped.
        if self.args.one_pass:
            return self._stop_signal is not None
        return super().stop_requested()

    # -- one pass -----------------------------------------------------------

    def one_pass(self):
        """Transition every due workunit; True if there was any."""
        self._templates = {}          # re-read result templates each pass
        did_something = False
        failures = 0
        touched = set()           # job batches (remote submission) whose jobs moved
        redone = set()            # changed while being transitioned: due again now
        while not self.stop_requested():
            batch = self.enumerate(int(time.time()))
            if not batch or all(wu["id"] in redone for wu, _ in batch):
                break             # (those wait for the next pass)
            did_something = True
            for k in range(0, len(batch), GROUP_SIZE):
                if self.stop_requested():
                    break
                try:
                    group = batch[k:k + GROUP_SIZE]
                    redone |= self.handle_group(group)
                    touched.update(wu["batch"] for wu, _ in group if wu["batch"])
                    failures = 0
                except DatabaseError as exc:
                    code = getattr(exc, "mysql_code", None)
                    failures += 1
                    if code not in _RETRYABLE or failures > _MAX_RETRIES:
                        raise
                    self.log.normal("%s; reading the workunits again (%s)"
                                    % (_RETRYABLE[code], exc.message))
                    time.sleep(0.1 * failures)
                    break           # read the batch again: nothing of it was written
            if self.args.wu_id:
                break
        if touched:
            refresh_moved(self.db, touched, self.log)
        return did_something

    def enumerate(self, now):
        """Due workunits (at most SELECT_LIMIT) with their results: [(wu, [result])]."""
        cols = ", ".join(WU_COLUMNS)
        if self.args.wu_id:
            wus = self.db.query("SELECT %s FROM workunit WHERE id = %%s AND transitioner_flags <> %%s"
                                % cols, (self.args.wu_id, int(TransitionerFlags.TRANSITION_NONE)))
        else:
            clause, params = self.mod_clause("id")
            wus = self.db.query(
                "SELECT %s FROM workunit WHERE transition_time <= %%s AND transitioner_flags <> %%s"
                "%s LIMIT %d" % (cols, clause, SELECT_LIMIT),
                (now, int(TransitionerFlags.TRANSITION_NONE)) + params)
        if not wus:
            return []
        by_wu = {wu["id"]: [] for wu in wus}
        ids = list(by_wu)
        rows = self.db.query("SELECT %s FROM result WHERE workunitid IN (%s)"
                             % (", ".join(RESULT_COLUMNS), ", ".join(["%s"] * len(ids))), ids)
        for r in rows:
            by_wu[r["workunitid"]].append(r)
        return [(wu, by_wu[wu["id"]]) for wu in wus]

    def handle_group(self, group):
        """Plan and write a group of workunits in one transaction, then log;
        returns the ids of those to transition again (changed meanwhile)."""
        now = int(time.time())
        plans = [plan_workunit(wu, results, now, self.cfg) for wu, results in group]
        db = self.db
        new_rows = []
        wu_updates = defaultdict(list)   # SET clause and its parameters -> workunit ids
        redo = []                        # workunits changed under us: transition again
        penalties = []
        with db.transaction():
            changed = self._changed_meanwhile(group)
            for plan in plans:
                if plan.wu["id"] in changed:
                    redo.append(plan)
                    continue
                if plan.result_changes:
                    db.execute("SAVEPOINT wu")
                    if not self._update_results(plan):
                        db.execute("ROLLBACK TO SAVEPOINT wu")
                        redo.append(plan)
                        continue
                    for r in plan.timed_out:
                        penalties.append(self._penalise_timeout(plan.wu, r))
                if plan.new_names:
                    new_rows.extend(self._new_result_rows(plan, now))
                if plan.changes:
                    wu_updates[self._wu_set_clause(plan)].append(plan.wu["id"])
            if new_rows:
                insert_results(db, NEW_RESULT_COLUMNS, new_rows)
            for (sets, params), ids in wu_updates.items():
                apply_set_clause(db, sets, params, ids)
            if redo:
                set_transition_times(db, [p.wu["id"] for p in redo], int(time.time()))
        # committed: wake the daemons that have new work, then say what was done
        skipped = {id(p) for p in redo}
        self._ring([p for p in plans if id(p) not in skipped], bool(new_rows))
        log = self.log
        for plan in plans:
            if id(plan) in skipped:
                log.normal("[WU#%d %s] a result changed while being transitioned; "
                           "will transition again" % (plan.wu["id"], plan.wu["name"]))
                continue
            for level, text in plan.messages:
                log.printf(level, text)
        for text in penalties:
            if text:
                log.normal(text)
        return {p.wu["id"] for p in redo}

    def _ring(self, plans, new_results):
        """Ring the doorbells (boincpy.doorbell) of the daemons these
        committed plans made work for."""
        names = set()
        if new_results:
            names.add(doorbell.FEEDER)
        for plan in plans:
            c = plan.changes
            if c.get("need_validate"):
                names.add(doorbell.VALIDATOR)
            if c.get("assimilate_state") == AssimilateState.READY:
                names.add(doorbell.ASSIMILATOR)
            if c.get("file_delete_state") == FileDeleteState.READY or any(
                    ch.get("file_delete_state") == FileDeleteState.READY
                    for _, ch in plan.result_changes):
                names.add(doorbell.FILE_DELETER)
        if names:
            doorbell.ring(self.cfg, *sorted(names))

    def _changed_meanwhile(self, group):
        """Ids of the group's workunits that are not as they were read: their
        results (a report, a send, the validator) or the workunit's own
        columns that other programs write (the validator, the assimilator,
        the file deleter, a cancellation).  Both are locked, so they stay as
        they are until this transaction ends.  Compare-and-set on
        transition_time alone misses a change that wrote the same second: an
        assimilator recording a job in the second the transitioner read it
        had its transition_time overwritten with "never", and the job's
        files were never deleted."""
        key = ("id",) + RESULT_STATE_COLUMNS
        ids = [wu["id"] for wu, _ in group]
        now = defaultdict(set)
        for r in self.db.query("SELECT %s, workunitid FROM result WHERE workunitid IN (%s) "
                               "FOR UPDATE" % (", ".join(key), placeholders(len(ids))), ids):
            now[r["workunitid"]].add(tuple(r[c] for c in key))
        changed = {wu["id"] for wu, results in group
                   if now.get(wu["id"], set()) != {tuple(r[c] for c in key) for r in results}}
        wu_key = WU_WATCHED_COLUMNS
        rows = {w["id"]: tuple(w[c] for c in wu_key) for w in self.db.query(
            "SELECT id, %s FROM %s WHERE id IN (%s) FOR UPDATE"
            % (", ".join(wu_key), by_primary_key("workunit"), placeholders(len(ids))), ids)}
        changed.update(wu["id"] for wu, _ in group
                       if rows.get(wu["id"]) != tuple(wu[c] for c in wu_key))
        return changed

    def _update_results(self, plan):
        """Write the plan's result changes, each only if the row is as it was read."""
        for before, changed in plan.result_changes:
            n = update_result_if_unchanged(self.db, before["id"], changed, before,
                                           RESULT_STATE_COLUMNS)
            if n != 1:
                return False
        return True

    def _wu_set_clause(self, plan):
        """(SET text, parameters) for a workunit's changes (transition_time
        compare-and-set against the value read)."""
        return transition_set_clause(plan.changes, plan.wu["transition_time"])

    def _new_result_rows(self, plan, now):
        """Rows (NEW_RESULT_COLUMNS) for the results the plan creates."""
        wu = plan.wu
        template_file = wu["result_template_file"]
        text = self._result_template(wu, template_file)
        state = int(UNSENT if wu["size_class"] < 0 else INACTIVE)
        rows = []
        for name in plan.new_names:
            try:
                xml = process_result_template(text, name, self.cfg, self.upload_key,
                                              rand=secrets.randbits(31), path=template_file)
            except TemplateError as exc:
                raise TemplateError("[WU#%d %s] can't create result %s: %s"
                                    % (wu["id"], wu["name"], name, exc.message)) from None
            rows.append((now, wu["id"], state, name, xml, "", "", wu["batch"],
                         secrets.randbits(31), wu["appid"], plan.new_priority,
                         wu["size_class"]))
        return rows

    def _result_template(self, wu, template_file):
        text = self._templates.get(template_file)
        if text is None:
            path = self.cfg.project_path(template_file)
            try:
                with open(path, encoding="utf-8", errors="replace") as f:
                    text = f.read()
            except OSError as exc:
                raise TemplateError("[WU#%d %s] can't read result template file %s: %s"
                                    % (wu["id"], wu["name"], path, exc.strerror)) from None
            self._templates[template_file] = text
        return text

    def _penalise_timeout(self, wu, r):
        """A result timed out: its host_app_version gets a turnaround sample of
        delay_bound, one job less per day and no consecutive valid results.
        Returns the text to log."""
        gavid = generalized_app_version_id(r["app_version_id"], wu["appid"])
        hav = self.db.query_one(
            "SELECT turnaround_n, turnaround_avg, turnaround_var, turnaround_q, "
            "max_jobs_per_day FROM host_app_version WHERE host_id = %s AND app_version_id = %s "
            "FOR UPDATE", (r["hostid"], gavid))
        if hav is None:
            return ("result_timed_out(): no host_app_version for host %d, app version %d"
                    % (r["hostid"], gavid))
        n, avg, var, q = average_var_update(hav["turnaround_n"], hav["turnaround_avg"],
                                            hav["turnaround_var"], hav["turnaround_q"],
                                            float(wu["delay_bound"]), HAV_AVG_THRESH,
                                            HAV_AVG_WEIGHT, HAV_AVG_LIMIT)
        quota = self.cfg.daily_result_quota
        jobs = hav["max_jobs_per_day"] or quota
        jobs = max(min(jobs, quota) - 1, 1)
        host_app_version.record_timeout(self.db, r["hostid"], gavid, n, avg, var, q, jobs)
        if self.cfg.debug_quota:
            return "[quota] max_jobs_per_day for %d; %d->%d" % (gavid, hav["max_jobs_per_day"],
                                                                jobs)
        return ""


def main(argv=None):
    """Entry point of bin/transitioner."""
    return run_daemon(Transitioner, argv)
