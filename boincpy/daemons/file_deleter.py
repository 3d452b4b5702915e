"""file_deleter: remove the files of finished jobs (BOINC's sched/file_deleter.cpp).

Each pass takes results, then workunits, whose ``file_delete_state`` is
READY (set by the transitioner once a job is assimilated and, with
``<delete_delay_hours>``, that long after its last report), deletes their
files and sets the state to DONE -- or ERROR when a file could not be
removed or its fan-out directory is missing (possibly an unmounted disk).
ERROR rows are retried at start-up and then every hour unless
``--dont_retry_errors``.

* output files: every ``<file_info>`` of ``result.xml_doc_in`` under
  ``upload_dir`` (fan-out);
* input files: every ``<file_info>`` of ``workunit.xml_doc`` under
  ``download_dir``, plus ``NAME.gz`` and (with ``<cache_md5_info/>``)
  ``NAME.md5``; workunits with ``nodelete`` in their name keep their files.

``<no_delete/>`` files are kept.  A file already gone counts as deleted.
A name that is not a plain file name (``files.file_name_fault``: ``../x``,
``.htaccess`` ...) is logged as an error and skipped: nothing outside
``download_dir`` and ``upload_dir`` is ever unlinked, whatever a row says.

Safer than BOINC (which does neither): a ``<sticky/>`` input file is kept
(the client keeps it and the scheduler may rely on it being there), and an
input file still named by another workunit whose files are not yet deleted
(file_delete_state INIT/READY/ERROR, or ``nodelete`` in its name) is kept --
several workunits made from one staged file share it, and the last one to
finish deletes it.  ``--dont_check_shared_inputs`` skips that check (one
scan of the live workunits' xml_doc per batch).  Input files of remote
submission (``job_file`` rows, shared by batches and uploaded by content)
are never deleted here: ``delete_job_files`` deletes them when their lease
has passed and no live batch holds them.  The files of jobs in a batch
(remote submission, ``create_work --batch`` of a batch row) wait until the
batch is retired, so its submitter can fetch the outputs until then
(``--delete_batch_files_early``: as soon as they are assimilated, as BOINC);
``--dont_delete_batches`` leaves the files of jobs in batches alone altogether.

The files of a batch are deleted first, then the batch's rows are marked
with one UPDATE per new state, conditional on the state that was read.  A
kill in between leaves rows READY whose files are gone; the next pass finds
nothing to delete and marks them DONE.  A row is never marked DONE before
its files are deleted.
"""

import os
import time

from boincpy.cli import option
from boincpy.daemons.base import Daemon
from boincpy.db.bulk import select_in
from boincpy.db.result import set_results_file_delete_state
from boincpy.db.workunit import set_workunits_file_delete_state
from boincpy.errors import ToolError
from boincpy.files import file_name_fault
from boincpy.jobfiles import ERR_NOT_FOUND, ERR_OPENDIR, ERR_UNLINK, file_infos, locate_in_hierarchy
from boincpy.states import BatchState, FileDeleteState, Outcome
from boincpy.submit.job_files import managed_names

WUS_PER_ENUM = 500
RESULTS_PER_ENUM = 1500
ERROR_INTERVAL = 3600       # seconds between retries of rows in state ERROR
_SHARED_SCAN_ROWS = 1000


def like_escape(text):
    """``text`` with LIKE's wildcards escaped (file names often contain ``_``)."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


class FileDeleter(Daemon):
    """The file deleter daemon."""

    name = "file_deleter"
    sleep_interval = 5.0
    doorbell = "file_deleter"

    @classmethod
    def add_options(cls, params):
        params.append(option("appid", type=int, default=0, metavar="ID",
                             help="handle only jobs of the app with this id"))
        params.append(option("app", default="", metavar="NAME",
                             help="handle only jobs of the app with this name"))
        params.append(option("dont_retry_errors", is_flag=True,
                             help="don't retry rows in state ERROR (every hour otherwise)"))
        params.append(option("preserve_wu_files", is_flag=True,
                             help="update the database but don't delete input files"))
        params.append(option("preserve_result_files", is_flag=True,
                             help="update the database but don't delete output files"))
        params.append(option("input_files_only", is_flag=True,
                             help="delete only input (download) files"))
        params.append(option("output_files_only", is_flag=True,
                             help="delete only output (upload) files"))
        params.append(option("no_db_update", is_flag=True,
                             help="don't update file_delete_state"))
        params.append(option("xml_doc_like", default="", metavar="L",
                             help="only workunits whose xml_doc LIKE 'L'"))
        params.append(option("download_dir", default="", metavar="D",
                             help="override download_dir from config.xml"))
        params.append(option("dont_delete_antiques", is_flag=True,
                             help="no effect (kept for compatibility)"))
        params.append(option("dont_delete_batches", is_flag=True,
                             help="don't delete the files of jobs in a batch (batch > 0); "
                                  "they stay READY (BOINC's option until 2025)"))
        params.append(option("delete_batch_files_early", is_flag=True,
                             help="delete the files of jobs in a batch not yet retired as soon "
                                  "as they are assimilated (BOINC's behaviour; by default they "
                                  "wait for the batch's retirement)"))
        params.append(option("dont_check_shared_inputs", is_flag=True,
                             help="delete input files even if another unfinished workunit "
                                  "names them (BOINC's behaviour)"))

    def initialise(self):
        a = self.args
        if a.dont_delete_antiques:
            self.log.critical("'--dont_delete_antiques' has no effect, this file deleter does "
                              "no antique files deletion")
        if a.download_dir:
            self.log.normal("Overriding download_dir '%s' from project config with "
                            "command-line '%s'" % (self.cfg.download_dir, a.download_dir))
            self.download_dir = a.download_dir
        else:
            self.download_dir = self.cfg.download_dir
        self.log.normal("Starting")
        super().initialise()
        self.appid = a.appid
        if a.app and not self.appid:
            self.appid = self.db.query_value("SELECT id FROM app WHERE name = %s", (a.app,))
            if self.appid is None:
                raise ToolError("Can't find app %s" % a.app)
            self.log.debug("Deleting files of appid %d" % self.appid)
        self.do_input = not a.output_files_only
        self.do_output = not a.input_files_only
        self.retry_errors_now = not a.dont_retry_errors
        self.next_error_time = 0.0

    def one_pass(self):
        """Delete what is READY (and retry ERROR rows when due); True if a state changed."""
        got_any = self._do_pass(FileDeleteState.READY)
        if self.retry_errors_now:
            if self._do_pass(FileDeleteState.ERROR):
                got_any = True
            else:
                self.retry_errors_now = False
                self.next_error_time = time.time() + ERROR_INTERVAL
                self.log.debug("ending retry of previous errors")
        if (not self.args.dont_retry_errors and not self.retry_errors_now
                and time.time() > self.next_error_time):
            self.retry_errors_now = True
            self.log.debug("starting retry of previous errors")
        return got_any

    # -- enumeration --------------------------------------------------------------

    def _where(self, state, table):
        where = "file_delete_state = %s"
        params = [int(state)]
        clause, cparams = self.mod_clause("id")
        where += clause
        params += list(cparams)
        if self.appid:
            where += " AND appid = %s"
            params.append(self.appid)
        if self.args.dont_delete_batches:
            where += " AND batch = 0"
        elif not self.args.delete_batch_files_early:
            # a submitter fetches a batch's outputs until retiring it
            where += (" AND (%s.batch = 0 OR NOT EXISTS (SELECT 1 FROM batch WHERE batch.id = "
                      "%s.batch AND batch.state <> %%s))" % (table, table))
            params.append(int(BatchState.RETIRED))
        return where, params

    def _do_pass(self, state):
        did = False
        if self.do_output:
            did |= self._results_pass(state)
        if self.do_input:
            did |= self._workunits_pass(state)
        return did

    def _not_due(self, wu_ids):
        """Workunits whose last report is less than delete_delay_hours ago."""
        delay = self.cfg.delete_delay
        if not delay or not wu_ids:
            return set()
        now = time.time()
        rows = select_in(self.db, "SELECT workunitid, MAX(received_time) AS t FROM result"
                         " WHERE workunitid IN ({ids}) GROUP BY workunitid", sorted(wu_ids))
        return {r["workunitid"] for r in rows if r["t"] and now < r["t"] + delay}

    def _results_pass(self, state):
        did = False
        last = 0
        where, params = self._where(state, "result")
        while not self.stop_requested():
            rows = self.db.query("SELECT id, workunitid, name, outcome, client_state,"
                                 " xml_doc_in FROM result WHERE %s AND id > %%s ORDER BY id"
                                 " LIMIT %d" % (where, RESULTS_PER_ENUM), params + [last])
            if not rows:
                break
            last = rows[-1]["id"]
            waiting = self._not_due({r["workunitid"] for r in rows})
            new_states = {}
            for r in rows:
                if r["workunitid"] in waiting:
                    continue
                retval = 0 if self.args.preserve_result_files else self._delete_result_files(r)
                if retval:
                    self.log.critical("[RESULT#%d] file deletion failed: %d" % (r["id"], retval))
                new_states[r["id"]] = (FileDeleteState.ERROR if retval
                                       else FileDeleteState.DONE)
            did |= self._record("result", new_states, state)
            if len(rows) < RESULTS_PER_ENUM:
                break
        return did

    def _workunits_pass(self, state):
        did = False
        last = 0
        where, params = self._where(state, "workunit")
        if self.args.xml_doc_like:
            where += " AND xml_doc LIKE %s"
            params.append(self.args.xml_doc_like)
        while not self.stop_requested():
            rows = self.db.query("SELECT id, name, xml_doc FROM workunit WHERE %s AND id > %%s"
                                 " ORDER BY id LIMIT %d" % (where, WUS_PER_ENUM), params + [last])
            if not rows:
                break
            last = rows[-1]["id"]
            n_rows = len(rows)
            waiting = self._not_due({r["id"] for r in rows})
            rows = [r for r in rows if r["id"] not in waiting]
            in_use = set()
            if not self.args.preserve_wu_files and not self.args.dont_check_shared_inputs:
                in_use = self._inputs_in_use(rows)
            job_files = set()
            if not self.args.preserve_wu_files:
                job_files = self._job_files(rows)
            new_states = {}
            for r in rows:
                retval = 0 if self.args.preserve_wu_files else self._delete_wu_files(
                    r, in_use, job_files)
                if retval:
                    self.log.critical("[WU#%d] file deletion failed: %d" % (r["id"], retval))
                new_states[r["id"]] = (FileDeleteState.ERROR if retval
                                       else FileDeleteState.DONE)
            did |= self._record("workunit", new_states, state)
            if n_rows < WUS_PER_ENUM:
                break
        return did

    def _record(self, table, new_states, old_state):
        changed = False
        for new in (FileDeleteState.DONE, FileDeleteState.ERROR):
            ids = [i for i, s in new_states.items() if s == new]
            if not ids or new == old_state:
                continue
            if self.args.no_db_update:
                changed = True
                continue
            record = (set_results_file_delete_state if table == "result"
                      else set_workunits_file_delete_state)
            n = record(self.db, ids, int(new), int(old_state))
            if n:
                changed = True
                for i in ids:
                    self.log.debug("[%s#%d] file_delete_state updated"
                                   % ("RESULT" if table == "result" else "WU", i))
        return changed

    # -- deleting -------------------------------------------------------------------

    def _delete_result_files(self, r):
        retval = 0
        count = 0
        for fi in file_infos(r["xml_doc_in"]):
            if not fi.name:
                self.log.critical("bad result XML: %s" % r["xml_doc_in"])
                continue
            if fi.no_delete or self._refused(fi.name, "RESULT", r["id"]):
                continue
            status, path = locate_in_hierarchy(self.cfg.upload_dir, fi.name,
                                               self.cfg.uldl_dir_fanout)
            if status == ERR_OPENDIR:
                retval = ERR_OPENDIR
                self.log.critical("[RESULT#%d] missing dir for %s" % (r["id"], path))
            elif status == ERR_NOT_FOUND:
                # expected for failed results, which may have produced nothing
                msg = ("[RESULT#%d] outcome=%d client_state=%d No file %s to delete"
                       % (r["id"], r["outcome"], r["client_state"], fi.name))
                if r["outcome"] == Outcome.SUCCESS:
                    self.log.critical(msg)
                else:
                    self.log.debug(msg)
            else:
                try:
                    os.unlink(path)
                except FileNotFoundError:
                    pass
                except OSError as exc:
                    retval = ERR_UNLINK
                    self.log.critical("[RESULT#%d] unlink %s error: %s"
                                      % (r["id"], path, exc.strerror))
                    continue
                count += 1
                self.log.normal("[RESULT#%d] unlinked %s" % (r["id"], path))
        self.log.debug("[RESULT#%d] deleted %d file(s)" % (r["id"], count))
        return retval

    def _refused(self, name, kind, row_id):
        """True (logged) if ``name`` is not a file name the deleter may touch:
        a row's XML may have come from anyone (a submitted template, an old
        server), and ``../x`` joined to a bucket is a file outside it."""
        fault = file_name_fault(name)
        if fault is None:
            return False
        self.log.critical("[%s#%d] bad file name %r (%s): not deleted"
                          % (kind, row_id, name, fault))
        return True

    def _job_files(self, rows):
        """Input files of these workunits that remote submission manages
        (job_file rows): shared by batches, deleted by delete_job_files."""
        names = {fi.name for w in rows for fi in file_infos(w["xml_doc"]) if fi.name}
        return managed_names(self.db, names) if names else set()

    def _delete_wu_files(self, w, in_use, job_files=()):
        if "nodelete" in w["name"]:
            return 0
        retval = 0
        count = 0
        for fi in file_infos(w["xml_doc"]):
            if not fi.name:
                self.log.critical("bad WU XML: %s" % w["xml_doc"])
                continue
            if fi.no_delete or self._refused(fi.name, "WU", w["id"]):
                continue
            if fi.sticky:
                self.log.debug("[WU#%d] %s is sticky; not deleted" % (w["id"], fi.name))
                continue
            if fi.name in in_use:
                self.log.normal("[WU#%d] %s is still used by another workunit; not deleted"
                                % (w["id"], fi.name))
                continue
            if fi.name in job_files:
                self.log.debug("[WU#%d] %s is a job file of remote submission; left to "
                               "delete_job_files" % (w["id"], fi.name))
                continue
            status, path = locate_in_hierarchy(self.download_dir, fi.name,
                                               self.cfg.uldl_dir_fanout)
            if status == ERR_OPENDIR:
                self.log.critical("[WU#%d] missing dir for %s" % (w["id"], fi.name))
                retval = ERR_UNLINK
                continue
            # the companions (.gz, .md5) go first and the file last, so that a
            # kill in between leaves the file, which the next pass finds and
            # deletes; a companion left by an older run goes even when the
            # file is already gone
            self._delete_companions(w["id"], fi.name, path, status == 0)
            if status == ERR_NOT_FOUND:
                self.log.critical("[WU#%d] get_file_path: %s: file not found"
                                  % (w["id"], fi.name))
                continue
            self.log.normal("[WU#%d] deleting %s" % (w["id"], fi.name))
            try:
                os.unlink(path)
                count += 1
            except FileNotFoundError:
                pass
            except OSError as exc:
                self.log.critical("[WU#%d] unlink %s failed: %s" % (w["id"], fi.name, exc.strerror))
                retval = ERR_UNLINK
        self.log.debug("[WU#%d] deleted %d file(s)" % (w["id"], count))
        return retval

    def _delete_companions(self, wuid, name, path, file_exists):
        """Delete NAME.gz and (with <cache_md5_info/>) NAME.md5 beside ``path``."""
        try:
            os.unlink(path + ".gz")
            self.log.normal("[WU#%d] deleted %s.gz" % (wuid, name))
        except OSError:
            pass
        if not self.cfg.cache_md5_info:
            return
        if not file_exists and not os.path.lexists(path + ".md5"):
            return
        self.log.normal("[WU#%d] deleting %s.md5" % (wuid, name))
        try:
            os.unlink(path + ".md5")
        except OSError as exc:
            self.log.critical("[WU#%d] unlink %s.md5 failed: %s" % (wuid, name, exc.strerror))

    def _inputs_in_use(self, rows):
        """Names among these workunits' input files that other unfinished
        workunits (or nodelete ones) still name in their xml_doc."""
        names = set()
        deleting = []
        for w in rows:
            if "nodelete" in w["name"]:
                continue
            deleting.append(w["id"])
            for fi in file_infos(w["xml_doc"]):
                if fi.name and not fi.no_delete and not fi.sticky:
                    names.add(fi.name)
        found = set()
        remaining = sorted(names)
        # One scan finds the rows naming any remaining file; a row limit keeps
        # a file shared by thousands of workunits from flooding the result, and
        # the names it proves shared drop out of the next scan.
        while remaining:
            likes = " OR ".join(["xml_doc LIKE %s"] * len(remaining))
            params = ["%%<name>%s</name>%%" % like_escape(n) for n in remaining]
            exclude = ""
            if deleting:
                exclude = " AND id NOT IN (%s)" % ", ".join(["%s"] * len(deleting))
            rows_in_use = self.db.query(
                "SELECT xml_doc FROM workunit WHERE (file_delete_state IN (%%s, %%s, %%s)"
                " OR name LIKE %%s)%s AND (%s) LIMIT %d"
                % (exclude, likes, _SHARED_SCAN_ROWS),
                [int(FileDeleteState.INIT), int(FileDeleteState.READY),
                 int(FileDeleteState.ERROR), "%nodelete%"] + deleting + params)
            hit = set()
            for r in rows_in_use:
                doc = r["xml_doc"] or ""
                for n in remaining:
                    if "<name>%s</name>" % n in doc:
                        hit.add(n)
            found |= hit
            if len(rows_in_use) < _SHARED_SCAN_ROWS or not hit:
                break
            remaining = [n for n in remaining if n not in hit]
        return found
