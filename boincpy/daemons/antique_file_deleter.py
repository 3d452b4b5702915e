"""antique_file_deleter: remove stray old files from upload/ (BOINC's
sched/antique_file_deleter.cpp).

    antique_file_deleter [-d N] [--dry_run] [--usleep N]

A client may upload an output file after its result was purged from the
database (a late or repeated upload); nothing will ever delete it.  This task
(make_project installs it, daily) deletes the regular files of the upload
hierarchy (``upload/0`` .. ``upload/FANOUT-1``, or ``upload/`` itself
without fan-out) that are

* older than BOINC's limit: the earlier of 32 days ago and one day before
  the creation of the oldest workunit in the database (workunits with
  ``nodelete`` in their name are kept for ever and don't count).  Every
  output a result in the database can still need was uploaded after its
  workunit was created, so it is younger than that;
* owned by the web server's user (``httpd_user`` in config.xml), i.e.
  written by the upload handler, not put there by the operator;
* and, beyond BOINC, not named after a result still in the database
  (``RESULTNAME_N``, the output names make_project's templates give): such a
  file is the file deleter's business, however old.

With no workunit in the database nothing is deleted (there is no time to
compare with), and the run succeeds.  ``--dry_run`` only logs what would be
deleted; ``--usleep N`` sleeps N microseconds after each deletion (default
50000) to spare the disk.  Files whose modification time is exactly the limit
are deleted, newer ones never.  The database is read through the
``replica_db_*`` settings, as BOINC does.
"""

import os
import pwd
import re
import stat
import time

from boincpy.cli import option
from boincpy.daemons.base import Daemon, progress
from boincpy.db import connect
from boincpy.db.bulk import select_in
from boincpy.errors import ToolError

ANTIQUE_USLEEP = 50000
MAX_AGE_DAYS = 32             # files younger than this are never antiques
WU_MARGIN = 86400             # ... nor younger than the oldest workunit minus this
_OUTPUT_NAME_RE = re.compile(r"^(.+)_\d+$")


def antique_limit(now, oldest_wu_create_time):
    """Files modified after this Unix time are kept (BOINC's max_mod_time)."""
    limit = int(now) - MAX_AGE_DAYS * 86400
    if limit > oldest_wu_create_time:
        limit = oldest_wu_create_time - WU_MARGIN
    return limit


def upload_dirs(cfg):
    """The directories of the upload hierarchy that hold files."""
    if cfg.uldl_dir_fanout:
        return [os.path.join(cfg.upload_dir, "%x" % i) for i in range(cfg.uldl_dir_fanout)]
    return [cfg.upload_dir]


class AntiqueFileDeleter(Daemon):
    """The antique_file_deleter task."""

    name = "antique_file_deleter"
    one_shot = True
    supports_mod = False
    description = ("Delete files in the upload directories that are older than every "
                   "workunit in the database and at least 32 days old (uploaded after their "
                   "result was purged).  Run it about once a day.")

    @classmethod
    def add_options(cls, params):
        params.append(option("dry_run", is_flag=True,
                             help="delete nothing, log what would be deleted"))
        params.append(option("usleep", type=int, default=ANTIQUE_USLEEP, metavar="N",
                             help="microseconds to sleep after each deleted file "
                                  "(default %d)" % ANTIQUE_USLEEP))

    def initialise(self):
        if self.args.usleep < 0:
            raise ToolError("--usleep must be 0 or more microseconds, not %d" % self.args.usleep)
        self.db = connect(self.cfg, replica=True)

    def one_pass(self):
        cfg = self.cfg
        oldest = self.db.query_value(
            "SELECT MIN(create_time) FROM workunit WHERE name NOT LIKE %s", ("%nodelete%",))
        if oldest is None:
            self.log.normal("No workunits in the database: no file is older than all of "
                            "them; nothing deleted")
            self.log.normal("Done")
            return False
        try:
            uid = pwd.getpwnam(cfg.httpd_user).pw_uid
        except KeyError:
            raise ToolError("Couldn't find http_user '%s' in passwd (set <httpd_user> in "
                            "config.xml to the web server's user)" % cfg.httpd_user) from None
        limit = antique_limit(time.time(), oldest)
        self.log.debug("delete_antiques(): Deleting files older than epoch %d (%s) with "
                       "userid %d" % (limit, time.ctime(limit), uid))
        self.deleted = 0
        failed = []
        dirs = upload_dirs(cfg)
        with progress(len(dirs), "upload dirs") as bar:
            for d in dirs:
                if self.stop_requested():
                    self.log.normal("Exiting: %s" % self._stop_reason())
                    break
                self.log.debug("delete_antiques(): scanning upload directory '%s'" % d)
                if not self.delete_antiques_from_dir(d, limit, uid):
                    failed.append(d)
                bar.update(1)
        self.log.normal("%s %d antique file%s" % (
            "Would delete" if self.args.dry_run else "Deleted", self.deleted,
            "" if self.deleted == 1 else "s"))
        if failed:
            raise ToolError("couldn't read %d upload director%s: %s" % (
                len(failed), "y" if len(failed) == 1 else "ies", ", ".join(failed)))
        self.log.normal("Done")
        return self.deleted > 0

    def delete_antiques_from_dir(self, dirpath, limit, uid):
        """Delete the antiques of one directory; False if it couldn't be read."""
        log = self.log
        try:
            names = sorted(os.listdir(dirpath))
        except FileNotFoundError:
            log.debug("no directory %s" % dirpath)
            return True
        except OSError as exc:
            log.critical("delete_antiques_from_dir(): Couldn't open dir '%s': %s (%d)"
                         % (dirpath, exc.strerror, exc.errno))
            return False
        candidates = []
        for name in names:
            if name.startswith("."):
                continue
            path = os.path.join(dirpath, name)
            log.debug("delete_antiques_from_dir(): examining file: '%s'" % path)
            try:
                st = os.lstat(path)
            except OSError as exc:
                log.normal("couldn't stat '%s: %s (%d)'" % (path, exc.strerror, exc.errno))
                continue
            if not stat.S_ISREG(st.st_mode):
                log.debug("not a regular plain file")
                continue
            if st.st_mtime > limit:
                log.debug("too young: %s" % time.ctime(st.st_mtime))
                continue
            if st.st_uid != uid:
                log.debug("wrong owner: id %d" % st.st_uid)
                continue
            candidates.append((name, st.st_mtime))
        if not candidates:
            return True
        live = self.live_results([name for name, _ in candidates])
        for name, mtime in candidates:
            if self.stop_requested():
                return True
            path = os.path.join(dirpath, name)
            m = _OUTPUT_NAME_RE.match(name)
            if m and m.group(1) in live:
                log.normal("Keeping '%s': result %s is still in the database"
                           % (path, m.group(1)))
                continue
            if self.args.dry_run:
                log.normal("Would delete '%s' (%s)" % (path, time.ctime(mtime)))
                self.deleted += 1
                continue
            log.normal("Deleting file '%s' (%s)" % (path, time.ctime(mtime)))
            try:
                os.unlink(path)
                self.deleted += 1
            except FileNotFoundError:
                pass
            except OSError as exc:
                log.critical("delete_antiques_from_dir(): Couldn't unlink '%s: %s (%d)'"
                             % (path, exc.strerror, exc.errno))
            if self.args.usleep:
                time.sleep(self.args.usleep / 1e6)
        return True

    def live_results(self, names):
        """The result names among the ``RESULT_N`` stems of ``names`` that are
        rows of the result table."""
        stems = sorted({m.group(1) for m in map(_OUTPUT_NAME_RE.match, names) if m})
        if not stems:
            return set()
        rows = select_in(self.db, "SELECT name FROM result WHERE name IN ({ids})", stems)
        return {r["name"] for r in rows}
