"""The assimilator framework: hand each finished job to the project (BOINC's assimilator.cpp).

An assimilator is an :class:`Assimilator` subclass with
``assimilate_handler(wu, results, canonical_result) -> int``; ``wu`` is a
Workunit, ``results`` all its Result rows, ``canonical_result`` the
canonical one (an empty ``Result()`` when the job failed: then
``wu.canonical_resultid`` is 0 and ``wu.error_mask`` says why).  The stock
handlers are in :mod:`boincpy.daemons.sample_assimilators`.

Return values, as in BOINC:

* 0: done -- ``assimilate_state = DONE``, ``transition_time = now`` (the
  transitioner then schedules file deletion);
* ``DEFER_ASSIMILATION`` (123321): ``assimilate_state = INIT``,
  ``transition_time = now`` (the transitioner marks it READY again later);
* anything else (or an exception): the workunit stays READY, the daemon
  logs the error and exits non-zero, as BOINC's does, so ``bin/start
  --cron`` restarts it and the job is retried -- a failing handler never
  marks a job done.

A pass takes the app's READY workunits in batches of :data:`BATCH`
(ordered by id), runs the handler on each, and records each handled
workunit (conditional on ``assimilate_state`` still being READY) right
after its handler, as BOINC does: if the process dies between a handler
and that UPDATE, the handler runs again for that one workunit on the next
pass.  ``--record_interval S`` trades that window for speed: handled
workunits are recorded together at most every S seconds (each UPDATE is a
disk flush, so one per job caps the rate at the disk's flushes per
second), and a kill repeats up to S seconds of handler work.
If instead the *database* fails at that moment (the server restarting,
the connection lost), the daemon writes the handled workunits' new states
to a journal, PID_DIR/assimilator_APP[_mod_N_I].handled, before it exits,
and the next start records them (still only where READY) before its first
pass: a lost database never makes a handler run twice.
**Handlers must nevertheless be idempotent**:
write outputs under names derived from the workunit (not appended to),
through a temporary file renamed into place, and check before inserting
rows elsewhere (e.g. a unique key on the workunit name).  The stock
``sample_assimilator`` does exactly that.
"""

import os
import time

from boincpy import doorbell
from boincpy.cli import option
from boincpy.daemons.base import Daemon
from boincpy.daemons.validator import result_from_row
from boincpy.db.bulk import select_in
from boincpy.db.workunit import record_assimilate_states, set_error_mask
from boincpy.db.rows import App, Result, Workunit
from boincpy.errors import BoincpyError, DatabaseError, ToolError
from boincpy.jobfiles import output_file_infos
from boincpy.states import AssimilateState, WuError

DEFER_ASSIMILATION = 123321
BATCH = 500             # workunits read per query


class HandlerError(BoincpyError):
    """The project's handler failed: the daemon stops, the workunit stays READY."""


class Assimilator(Daemon):
    """The assimilator daemon; subclasses override assimilate_handler."""

    name = "assimilator"
    sleep_interval = 10.0
    doorbell = "assimilator"

    def assimilate_handler(self, wu, results, canonical_result):
        """Handle one completed job; return 0, DEFER_ASSIMILATION or an error code."""
        raise NotImplementedError

    def configure(self):
        """Check this assimilator's own options (assimilate_handler_init); raise ToolError."""

    def output_file_infos(self, result):
        """The result's output files (OutputFileInfo list) in the upload fan-out."""
        return output_file_infos(result.xml_doc_in, self.cfg.upload_dir, self.cfg.uldl_dir_fanout)

    @classmethod
    def add_options(cls, params):
        params.append(option("app", required=True, metavar="NAME",
                             help="assimilate jobs of this application"))
        params.append(option("one_pass_N_WU", type=int, default=0, metavar="N",
                             help="assimilate at most N jobs, then exit"))
        params.append(option("dont_update_db", is_flag=True,
                             help="run the handler but leave the database alone (testing)"))
        params.append(option("record_interval", type=float, default=0.0, metavar="S",
                             help="record handled jobs together at most every S "
                                  "seconds (default 0: after each job, as BOINC; a kill then "
                                  "repeats at most one handler call)"))
        params.append(option("noinsert", is_flag=True,
                             help="tell the handler not to insert into project databases "
                                  "(self.args.noinsert; the stock handlers insert nothing)"))

    def initialise(self):
        if self.args.one_pass_N_WU:
            self.args.one_pass = True
        self.configure()
        super().initialise()
        row = self.db.query_one("SELECT * FROM app WHERE name = %s", (self.args.app,))
        if row is None:
            raise ToolError("Can't find app: %s" % self.args.app)
        self.app = App.from_row(row)
        if getattr(self.args, "mod", None):
            self.log.debug("Using mod'ed WU enumeration.  modulus = %d  remainder = %d"
                           % tuple(self.args.mod))
        self._replay_journal()
        self.log.normal("Starting assimilator handler")

    def one_pass(self):
        """Assimilate the READY workunits; return True if there were any."""
        update_db = not self.args.dont_update_db
        did_something = False
        n_assimilated = 0
        last_id = 0
        while not self.stop_requested():
            limit = BATCH
            if self.args.one_pass_N_WU:
                limit = min(limit, self.args.one_pass_N_WU - n_assimilated)
                if limit <= 0:
                    break
            wus = self._enumerate(last_id, limit)
            if not wus:
                break
            last_id = wus[-1].id
            if update_db:
                did_something = True
            n_assimilated += self._assimilate_batch(wus, update_db)
            if len(wus) < limit:
                break
        if n_assimilated:
            self.log.normal("Assimilated %d workunits." % n_assimilated)
        return did_something

    def _enumerate(self, last_id, limit):
        clause, params = self.mod_clause("id")
        rows = self.db.query("SELECT * FROM workunit WHERE appid = %%s AND assimilate_state = %%s"
                             " AND id > %%s%s ORDER BY id LIMIT %d" % (clause, limit),
                             (self.app.id, int(AssimilateState.READY), last_id) + tuple(params))
        wus = []
        for r in rows:
            r["xml_doc"] = r["xml_doc"] or ""         # NULL as ""
            wus.append(Workunit.from_row(r))
        return wus

    def _assimilate_batch(self, wus, update_db):
        by_wu = {w.id: [] for w in wus}
        for r in select_in(self.db, "SELECT * FROM result WHERE workunitid IN ({ids}) ORDER BY id",
                           list(by_wu)):
            by_wu[r["workunitid"]].append(result_from_row(r))
        new_states = {}
        first_pending = None
        recorded = 0
        try:
            for wu in wus:
                if new_states and update_db and \
                        time.monotonic() - first_pending >= self.args.record_interval:
                    pending, new_states = new_states, {}
                    recorded += self._record_or_journal(pending)
                if not new_states:
                    first_pending = time.monotonic()
                self.log.debug("[%s] assimilating WU %d; state=%d"
                               % (wu.name, wu.id, wu.assimilate_state))
                results = by_wu[wu.id]
                canonical = next((r for r in results if r.id == wu.canonical_resultid), None)
                if canonical is None:
                    canonical = Result()
                    if not wu.error_mask:
                        # e.g. result rows deleted too early: unrecoverable, flag it
                        self.log.critical("[%s] no canonical result" % wu.name)
                        wu.error_mask = int(WuError.NO_CANONICAL_RESULT)
                        if update_db:
                            set_error_mask(self.db, wu.id, wu.error_mask)
                retval = self._call_handler(wu, results, canonical)
                if retval and retval != DEFER_ASSIMILATION:
                    self.log.critical("assimilator [%s] handler error %d; exiting"
                                      % (wu.name, retval))
                    raise HandlerError("handler error %d for workunit %s (left READY)"
                                       % (retval, wu.name),
                                       exit_code=retval if 0 < retval < 256 else 1)
                new_states[wu.id] = int(AssimilateState.INIT if retval == DEFER_ASSIMILATION
                                        else AssimilateState.DONE)
        finally:
            # what was handled is recorded even when a later handler failed
            if update_db and new_states:
                recorded += self._record_or_journal(new_states)
        return recorded if update_db else len(new_states)

    def _call_handler(self, wu, results, canonical):
        try:
            return int(self.assimilate_handler(wu, results, canonical) or 0)
        except Exception as exc:
            self.log.critical("[%s] handler raised %s: %s" % (wu.name, type(exc).__name__, exc))
            return -1

    def _record(self, new_states):
        """One statement: the new state and transition_time = now (so the
        transitioner moves on to file deletion), only if still READY."""
        record_assimilate_states(self.db, new_states, int(time.time()))
        doorbell.ring(self.cfg, doorbell.TRANSITIONER)
        return len(new_states)

    # -- the journal of handled workunits the database did not take ------------

    def journal_path(self):
        """Where handled but unrecorded workunits wait for the next start."""
        name = "assimilator_%s" % self.args.app
        if getattr(self.args, "mod", None):
            name += "_mod_%d_%d" % tuple(self.args.mod)
        return os.path.join(self.cfg.pid_dir, name + ".handled")

    def _record_or_journal(self, new_states):
        """Record ``new_states``; if the database fails, keep them in the
        journal (so their handlers are not run again) and re-raise."""
        try:
            return self._record(new_states)
        except DatabaseError:
            self._write_journal(new_states)
            raise

    def _write_journal(self, new_states):
        path = self.journal_path()
        states = self._read_journal()
        states.update(new_states)
        tmp = path + ".tmp"
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(tmp, "w") as f:
                f.writelines("%d %d\n" % item for item in sorted(states.items()))
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
        except OSError as exc:
            # the database error goes on up; this only costs repeated handlers
            self.log.critical("can't keep %d handled workunits in %s: %s; their handlers "
                              "will run again" % (len(new_states), path, exc.strerror))
            return
        self.log.critical("database lost after %d handled workunits; kept in %s for the "
                          "next start" % (len(new_states), path))

    def _read_journal(self):
        path = self.journal_path()
        try:
            with open(path) as f:
                lines = f.read().split("\n")
        except FileNotFoundError:
            return {}
        except OSError as exc:
            raise ToolError("can't read %s: %s" % (path, exc.strerror)) from None
        states = {}
        for lineno, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                wuid, state = (int(x) for x in line.split())
            except ValueError:
                # a torn last line cannot happen (written whole, then renamed)
                raise ToolError("%s line %d: expected 'WUID STATE', got %r"
                                % (path, lineno, line)) from None
            states[wuid] = state
        return states

    def _replay_journal(self):
        """Record what a previous run handled but could not record."""
        if self.args.dont_update_db:
            return              # left for a run that may write the database
        states = self._read_journal()
        if not states:
            return
        self._record(states)
        os.unlink(self.journal_path())
        self.log.normal("recorded %d workunits handled before the database was lost (%s)"
                        % (len(states), self.journal_path()))
