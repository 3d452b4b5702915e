"""db_purge: archive finished workunits and results to XML files, then delete them
(BOINC's sched/db_purge.cpp).

Workunits with ``file_delete_state = DONE`` (and, with ``--min_age_days N``,
``mod_time`` at least N days old; with ``--batch`` only those outside a
batch or in a RETIRED one; never those with ``nodelete`` in their name) are
written with all their results to

* ``PROJECT/archives/wu_archive_TIME.xml`` -- ``<archive>`` of
  ``<workunit_archive>`` records, one element per column as BOINC writes them;
* ``PROJECT/archives/result_archive_TIME.xml`` -- ``<result_archive>`` records
  (stderr_out XML-escaped);
* ``wu_index_TIME.xml`` / ``result_index_TIME.xml`` -- one line per row:
  ``ID     TIME    NAME``;

(``.gz`` with ``--gzip``/``--zlib``, ``.zip`` with ``--zip``; in
``archives/YYYY_MM_DD/`` with ``--daily_dir``; a new set of files every
``--max_wu_per_file`` workunits, and at each start), and then deleted from
the database.

Order, so that a kill never loses a row: a batch's records are written,
flushed and fsync'ed (gzip: a sync flush, so the file decompresses up to the
last complete batch) before one transaction deletes exactly the archived
results and their workunits.  A kill between the two leaves the rows in the
database; the next run archives them again (the archives may then hold a
record twice, never zero times).  A workunit that gained a result since it
was read is kept.  ``--zip`` archives are written as plain XML and zipped
when closed (a zip is unreadable until then); a killed run leaves the plain
file.
"""

import gzip
import os
import time
import zipfile
import zlib

from boincpy.cli import group_flag, option
from boincpy.daemons.base import Daemon
from boincpy.db.bulk import placeholders, select_in
from boincpy.db.assignment import delete_assignments_of_workunits
from boincpy.db.result import delete_results
from boincpy.db.workunit import delete_purged_workunits
from boincpy.errors import ToolError
from boincpy.xml import xml_escape
from boincpy.states import BatchState, FileDeleteState

DB_QUERY_LIMIT = 1000
WU_PREFIX, RESULT_PREFIX = "wu_archive", "result_archive"
WU_INDEX_PREFIX, RESULT_INDEX_PREFIX = "wu_index", "result_index"

WU_FIELDS = (("id", "d"), ("create_time", "d"), ("appid", "d"), ("name", "s"),
             ("xml_doc", "s"), ("batch", "d"), ("rsc_fpops_est", "e"),
             ("rsc_fpops_bound", "e"), ("rsc_memory_bound", "e"), ("rsc_disk_bound", "e"),
             ("need_validate", "d"), ("canonical_resultid", "d"), ("canonical_credit", "e"),
             ("transition_time", "d"), ("delay_bound", "d"), ("error_mask", "d"),
             ("file_delete_state", "d"), ("assimilate_state", "d"), ("hr_class", "d"),
             ("opaque", "f"), ("min_quorum", "d"), ("target_nresults", "d"),
             ("max_error_results", "d"), ("max_total_results", "d"),
             ("max_success_results", "d"), ("result_template_file", "s"), ("priority", "d"),
             ("mod_time", "s"))
RESULT_FIELDS = (("id", "d"), ("create_time", "d"), ("workunitid", "d"), ("server_state", "d"),
                 ("outcome", "d"), ("client_state", "d"), ("hostid", "d"), ("userid", "d"),
                 ("report_deadline", "d"), ("sent_time", "d"), ("received_time", "d"),
                 ("name", "s"), ("cpu_time", "e"), ("xml_doc_in", "s"), ("xml_doc_out", "s"),
                 ("stderr_out", "x"), ("batch", "d"), ("file_delete_state", "d"),
                 ("validate_state", "d"), ("claimed_credit", "e"), ("granted_credit", "e"),
                 ("opaque", "f"), ("random", "d"), ("app_version_num", "d"),
                 ("app_version_id", "d"), ("appid", "d"), ("exit_status", "d"), ("teamid", "d"),
                 ("priority", "d"), ("mod_time", "s"))


def _as_bytes(value):
    if value is None:
        return b""
    if isinstance(value, bytes):
        return value
    return str(value).encode("utf-8")


def archive_record(tag, fields, row):
    """One ``<workunit_archive>`` / ``<result_archive>`` record as BOINC prints it."""
    parts = [b"<%s>\n" % tag.encode()]
    for name, kind in fields:
        v = row.get(name)
        if kind == "d":
            text = b"%d" % int(v or 0)
        elif kind == "e":
            text = b"%.15e" % float(v or 0)
        elif kind == "f":
            text = b"%f" % float(v or 0)
        elif kind == "x":
            text = xml_escape(_as_bytes(v))
        else:
            text = _as_bytes(v)
        parts.append(b"  <%s>%s</%s>\n" % (name.encode(), text, name.encode()))
    parts.append(b"</%s>\n" % tag.encode())
    return b"".join(parts)


class ArchiveFile:
    """One archive or index file being written (plain, gzip, or plain-then-zip)."""

    def __init__(self, path, compression):
        self.compression = compression
        self.final_path = path
        if compression in ("gzip", "zlib"):
            self.final_path = path + ".gz"
            self.raw = open(self.final_path, "wb")
            self.f = gzip.GzipFile(fileobj=self.raw, mode="wb")
        else:
            if compression == "zip":
                self.final_path = path + ".zip"
            self.plain_path = path
            self.raw = self.f = open(path, "wb")

    def write(self, data):
        self.f.write(data)

    def sync(self):
        """Make everything written so far durable (and decompressible)."""
        if self.f is not self.raw:
            self.f.flush(zlib.Z_SYNC_FLUSH)
        self.raw.flush()
        os.fsync(self.raw.fileno())

    def close(self):
        if self.f is not self.raw:
            self.f.close()
        self.raw.flush()
        os.fsync(self.raw.fileno())
        self.raw.close()
        if self.compression == "zip":
            # as BOINC's "zip - -": one member named "-"
            with zipfile.ZipFile(self.final_path + ".tmp", "w", zipfile.ZIP_DEFLATED) as z:
                z.write(self.plain_path, arcname="-")
            with open(self.final_path + ".tmp", "rb") as f:
                os.fsync(f.fileno())
            os.replace(self.final_path + ".tmp", self.final_path)
            os.unlink(self.plain_path)


class DbPurge(Daemon):
    """The db_purge daemon."""

    name = "db_purge"
    sleep_interval = 300.0
    files = None            # the open archive files, by prefix

    @classmethod
    def add_options(cls, params):
        params.append(option("app", default="", metavar="NAME",
                             help="purge only jobs of this application"))
        params.append(option("batch", is_flag=True,
                             help="purge batch jobs only if their batch is retired"))
        params.append(option("min_age_days", type=float, default=0.0, metavar="N",
                             help="purge workunits with mod_time at least N days ago"))
        params.append(option("max", type=int, default=0, metavar="N",
                             help="purge at most N workunits"))
        for kind, text in (("zip", "zip"), ("gzip", "gzip"), ("zlib", "zlib (gzip format)")):
            params.append(group_flag(kind, "compression", dest="compression", const=kind,
                                     help="compress archives with " + text))
        params.append(option("no_archive", is_flag=True,
                             help="don't write archives, just purge"))
        params.append(option("daily_dir", is_flag=True,
                             help="write archives in a new directory each day"))
        params.append(option("max_wu_per_file", type=int, default=0, metavar="N",
                             help="write at most N workunits per archive file"))
        params.append(option("sleep", dest="sleep_interval", type=float, metavar="N",
                             help="seconds to sleep after a scan (default 300)"))
        params.append(option("dont_delete", is_flag=True,
                             help="don't delete anything from the database (testing)"))

    def initialise(self):
        a = self.args
        if getattr(a, "mod", None) and not a.no_archive:
            raise ToolError("If you use modulus, you must set no_archive")
        if not 1 <= self.sleep_interval <= 86400:
            raise ToolError("Unreasonable value of sleep interval: %g seconds"
                            % self.sleep_interval)
        self.log.normal("Starting")
        super().initialise()
        os.makedirs(self.cfg.project_path("archives"), exist_ok=True)
        self.appid = 0
        if a.app:
            self.appid = self.db.query_value("SELECT id FROM app WHERE name = %s", (a.app,))
            if self.appid is None:
                raise ToolError("Can't find app %s" % a.app)
        self.files = None
        self.time_int = 0
        self.wu_stored_in_file = 0
        self.purged_workunits = 0

    def shutdown(self):
        self.close_archives()
        super().shutdown()

    def time_to_quit(self):
        """True once --max workunits are purged (then the daemon exits)."""
        return bool(self.args.max) and self.purged_workunits >= self.args.max

    def stop_requested(self):
        return self.time_to_quit() or super().stop_requested()

    def _stop_reason(self):
        if self.time_to_quit():
            return "purged %d workunits (--max)" % self.purged_workunits
        return super()._stop_reason()

    # -- archives --------------------------------------------------------------

    def _archive_dir(self):
        if self.args.daily_dir:
            d = self.cfg.project_path("archives", time.strftime("%Y_%m_%d",
                                                                time.gmtime(self.time_int)))
            os.makedirs(d, 0o775, exist_ok=True)
            return d
        return self.cfg.project_path("archives")

    def open_archives(self):
        old = self.time_int
        # a new time stamp, so a new set of files never overwrites the last one
        while True:
            self.time_int = int(time.time())
            if self.time_int != old:
                break
            time.sleep(0.2)
        d = self._archive_dir()
        self.files = {}
        for prefix in (WU_PREFIX, RESULT_PREFIX, RESULT_INDEX_PREFIX, WU_INDEX_PREFIX):
            path = os.path.join(d, "%s_%d.xml" % (prefix, self.time_int))
            f = ArchiveFile(path, self.args.compression)
            self.log.normal("Opening archive %s" % f.final_path)
            self.files[prefix] = f
        self.files[WU_PREFIX].write(b"<archive>\n")
        self.files[RESULT_PREFIX].write(b"<archive>\n")

    def close_archives(self):
        if not self.files:
            return
        self.files[WU_PREFIX].write(b"</archive>\n")
        self.files[RESULT_PREFIX].write(b"</archive>\n")
        for f in self.files.values():
            f.close()
            self.log.normal("Closed archive file %s containing records of %d workunits"
                            % (f.final_path, self.wu_stored_in_file))
        self.files = None

    def _archive(self, wus, results_by_wu):
        f = self.files
        for w in wus:
            for r in results_by_wu.get(w["id"], ()):
                f[RESULT_PREFIX].write(archive_record("result_archive", RESULT_FIELDS, r))
                f[RESULT_INDEX_PREFIX].write(b"%d     %d    %s\n"
                                             % (r["id"], self.time_int, _as_bytes(r["name"])))
            f[WU_PREFIX].write(archive_record("workunit_archive", WU_FIELDS, w))
            f[WU_INDEX_PREFIX].write(b"%d     %d    %s\n"
                                     % (w["id"], self.time_int, _as_bytes(w["name"])))
        for af in f.values():
            af.sync()

    # -- the pass --------------------------------------------------------------------

    def _where(self):
        a = self.args
        where = "file_delete_state = %s"
        params = [int(FileDeleteState.DONE)]
        if a.min_age_days:
            where += " AND mod_time < CURRENT_TIMESTAMP() - INTERVAL %s SECOND"
            params.append(int(a.min_age_days * 86400))
        clause, cparams = self.mod_clause("id")
        where += clause
        params += list(cparams)
        if self.appid:
            where += " AND appid = %s"
            params.append(self.appid)
        if a.batch:
            retired = [0] + [r["id"] for r in self.db.query(
                "SELECT id FROM batch WHERE state = %s", (int(BatchState.RETIRED),))]
            where += " AND batch IN (%s)" % placeholders(len(retired))
            params += retired
        return where, params

    def one_pass(self):
        """Archive and purge what is due; True if more than half a query's worth was purged
        (BOINC's signal to scan again without sleeping)."""
        where, params = self._where()
        n_wus = n_results = 0
        last = 0
        while not self.time_to_quit() and not self.stop_requested():
            limit = DB_QUERY_LIMIT
            if self.args.max:
                limit = min(limit, self.args.max - self.purged_workunits)
            if self.args.max_wu_per_file and not self.args.no_archive:
                limit = min(limit, self.args.max_wu_per_file - self.wu_stored_in_file)
            rows = self.db.query("SELECT * FROM workunit WHERE %s AND id > %%s ORDER BY id"
                                 " LIMIT %d" % (where, limit), params + [last])
            if not rows:
                break
            last = rows[-1]["id"]
            wus = [w for w in rows if "nodelete" not in w["name"]]
            if wus:
                nw, nr = self._purge(wus)
                n_wus += nw
                n_results += nr
            if len(rows) < limit:
                break
        if n_wus:
            self.log.normal("Archived %d workunits and %d results" % (n_wus, n_results))
        if n_wus and self.wu_stored_in_file:
            self.log.debug("Currently open archive files contain %d workunits"
                           % self.wu_stored_in_file)
        return n_wus > DB_QUERY_LIMIT / 2

    def _purge(self, wus):
        results_by_wu = {}
        ids = [w["id"] for w in wus]
        for r in select_in(self.db, "SELECT * FROM result WHERE workunitid IN ({ids})"
                           " ORDER BY id", ids):
            results_by_wu.setdefault(r["workunitid"], []).append(r)
        if not self.args.no_archive:
            if self.files is None:
                self.open_archives()
            self._archive(wus, results_by_wu)
            for w in wus:
                self.log.debug("Archived workunit [%d] to a file" % w["id"])
        n_results = sum(len(v) for v in results_by_wu.values())
        if self.args.dont_delete:
            self.log.debug("Didn't purge %d workunits from database (--dont_delete)" % len(wus))
            purged = wus
        else:
            purged = self._delete(wus, results_by_wu)
        self.purged_workunits += len(purged)
        self.wu_stored_in_file += len(wus)
        if (self.files is not None and self.args.max_wu_per_file
                and self.wu_stored_in_file >= self.args.max_wu_per_file):
            self.close_archives()
            self.wu_stored_in_file = 0
        return len(purged), n_results

    def _delete(self, wus, results_by_wu):
        """Delete exactly the archived rows in one transaction; return the purged workunits."""
        result_ids = [r["id"] for rs in results_by_wu.values() for r in rs]
        wu_ids = [w["id"] for w in wus]
        with self.db.transaction():
            delete_results(self.db, result_ids)
            # a workunit that gained a result since it was read keeps its row
            kept = {r["workunitid"] for r in select_in(
                self.db, "SELECT DISTINCT workunitid FROM result WHERE workunitid IN ({ids})",
                wu_ids)}
            purged = [w for w in wus if w["id"] not in kept]
            pids = [w["id"] for w in purged]
            delete_purged_workunits(self.db, pids)
            if self.cfg.enable_assignment:
                delete_assignments_of_workunits(self.db, pids)
        for w in wus:
            if w["id"] in kept:
                self.log.critical("Couldn't purge workunit [%d]: it has new results" % w["id"])
            else:
                for r in results_by_wu.get(w["id"], ()):
                    self.log.normal("Purged result [%d] batch %d" % (r["id"], r["batch"]))
                self.log.normal("Purged workunit [%d] batch %d" % (w["id"], w["batch"]))
        return purged
