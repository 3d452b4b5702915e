"""Tasks of remote job submission (BOINC's html/ops/ scripts of the same names):

* ``expire_batches``: abort and retire every batch whose lease
  (``expire_time``, set by create_batch or set_expire_time) has passed;
* ``delete_job_files``: delete the uploaded input files (``job_file`` rows)
  whose lease has passed and that no live batch (new, in progress or
  complete) uses -- a file without a lease after ``--grace`` seconds.
  (BOINC's script has its test the wrong way round: it deletes only files a
  live batch still uses.);
* ``delete_batches``: delete retired batches that have no jobs left (db_purge
  with --batch purges their jobs first).

Run them from config.xml's <tasks> (hourly is plenty).
"""

import time

from boincpy.cli import option
from boincpy.daemons.base import Daemon
from boincpy.submit import batch as batches
from boincpy.submit import job_files


class ExpireBatches(Daemon):
    """The expire_batches task."""

    name = "expire_batches"
    one_shot = True
    supports_mod = False
    description = "Abort and retire the batches whose expire time has passed."

    def one_pass(self):
        expired = batches.expire(self.db, self.cfg.project_dir, time.time())
        for b in expired:
            self.log.normal("[BATCH#%d %s] expired: aborted and retired" % (b.id, b.name))
        return bool(expired)


class DeleteJobFiles(Daemon):
    """The delete_job_files task."""

    name = "delete_job_files"
    one_shot = True
    supports_mod = False
    description = ("Delete uploaded input files (job_file) whose lease has passed and that "
                   "no new, in-progress or complete batch uses.")

    @classmethod
    def add_options(cls, params):
        params.append(option("grace", type=float, default=86400.0, metavar="S",
                             help="a file uploaded without a lease (delete_time 0) is kept "
                                  "this many seconds (default 86400)"))
        params.append(option("dry_run", is_flag=True,
                             help="say what would be deleted, delete nothing"))

    def one_pass(self):
        names = job_files.delete_unused(self.db, self.cfg, time.time(), self.args.grace,
                                        self.log, dry_run=self.args.dry_run)
        if self.args.dry_run:
            for name in names:
                self.log.normal("would delete %s" % name)
        self.log.normal("%s %d job file(s)" % ("would delete" if self.args.dry_run
                                                else "deleted", len(names)))
        return bool(names)


class DeleteBatches(Daemon):
    """The delete_batches task."""

    name = "delete_batches"
    one_shot = True
    supports_mod = False
    description = "Delete retired batches whose jobs have all been purged."

    def one_pass(self):
        gone = batches.delete_empty_retired(self.db)
        for batch_id in gone:
            self.log.normal("[BATCH#%d] deleted (retired, no jobs left)" % batch_id)
        return bool(gone)
