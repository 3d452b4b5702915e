"""update_stats: decay the recent average credit of idle users, hosts, teams and
app versions, and recount team members (BOINC's sched/update_stats.cpp).

    update_stats [-d N] [--update_users] [--update_hosts] [--update_teams]
                 [--update_avs] [--min_age SECONDS]

Recent average credit (``expavg_credit``) is updated when credit is granted;
a user, host or team that stops working would keep its last average for
ever.  Run once a day (make_project installs it as a task), this program
brings every average up to now as if no credit had been granted since
``expavg_time``: :func:`boincpy.credit.update_average` with no new work, the
7-day half-life :data:`boincpy.credit.CREDIT_HALF_LIFE`.

Which rows, as in BOINC:

* users and hosts with ``expavg_credit > 0.1``, app versions with
  ``expavg_credit > 0``, teams with ``expavg_credit > 0.1`` -- each only if
  its ``expavg_time`` is older than ``--min_age`` seconds (default 86400:
  rows credited within the last day are already current);
* teams with ``expavg_credit > 0.1`` also get ``nusers`` set to their number
  of member users; a changed count is logged as BOINC logs it.

With none of the ``--update_*`` options, all four are done.

Rows are read in id order, 1000 at a time, and each batch is written with
one statement.  The write only touches a row whose ``expavg_time`` is still
the one read: a validator granting credit to the same user in between wins,
and its fresh average is not overwritten by a decayed stale one.
"""

import time

from boincpy.credit import CREDIT_HALF_LIFE, update_average
from boincpy.cli import option
from boincpy.daemons.base import Daemon, progress
from boincpy.db.bulk import placeholders
from boincpy.db.credit import decay_averages
from boincpy.db.team import set_team_nusers
from boincpy.errors import ToolError

BATCH = 1000
MIN_AGE = 86400.0

# (--update_WHAT, table, expavg_credit above which rows are decayed)
TABLES = (("users", "user", 0.1), ("hosts", "host", 0.1),
          ("teams", "team", 0.1), ("avs", "app_version", 0.0))


class UpdateStats(Daemon):
    """The update_stats task."""

    name = "update_stats"
    one_shot = True
    supports_mod = False
    description = ("Decay the recent average credit of idle users, hosts, teams and app "
                   "versions, and recount team members.  Run it about once a day.")

    @classmethod
    def add_options(cls, params):
        for what, _table, _threshold in TABLES:
            params.append(option("update_" + what, is_flag=True,
                                 help="update %s" % ("app versions" if what == "avs" else what)))
        params.append(option("min_age", type=float, default=MIN_AGE, metavar="SECONDS",
                             help="leave rows whose average was updated less than this "
                                  "long ago (default %d)" % MIN_AGE))

    def one_pass(self):
        args = self.args
        if args.min_age < 0:
            raise ToolError("--min_age must be 0 or more seconds, not %g" % args.min_age)
        # BOINC: rows whose average is newer than this are already current
        max_update_time = int(time.time()) - args.min_age
        wanted = [t for t in TABLES if getattr(args, "update_" + t[0])] or list(TABLES)
        for what, table, threshold in wanted:
            if table == "team":
                self.update_team_nusers(threshold)
            n = self.decay(table, threshold, max_update_time)
            if self.stop_requested():
                # what is done stays done; tomorrow's run does the rest
                self.log.normal("Exiting: %s" % self._stop_reason())
                return False
            self.log.normal("Updated %s (%d %s decayed)"
                            % ("app versions" if what == "avs" else what, n,
                               "row" if n == 1 else "rows"))
        self.log.normal("Finished")
        return True

    def decay(self, table, threshold, max_update_time):
        """Bring the recent average of ``table``'s rows with ``expavg_credit >
        threshold`` and ``expavg_time < max_update_time`` to now; return how
        many rows were written."""
        db = self.db
        last_id = 0
        written = 0
        top = db.query_value("SELECT MAX(id) FROM " + table, default=0)
        with progress(top, "%-11s" % table) as bar:
            while not self.stop_requested():
                rows = db.query("SELECT id, expavg_credit, expavg_time FROM " + table +
                                " WHERE id > %s AND expavg_credit > %s AND expavg_time < %s"
                                " ORDER BY id LIMIT %s",
                                (last_id, threshold, max_update_time, BATCH))
                if not rows:
                    break
                bar.update(rows[-1]["id"] - last_id)
                last_id = rows[-1]["id"]
                written += self._decay_rows(table, rows)
                if len(rows) < BATCH:
                    break
            bar.update(max(top, 1))       # done (the bar stops at 100%)
        return written

    def _decay_rows(self, table, rows):
        """Write one batch of decayed averages; return how many rows changed."""
        now = time.time()
        new = {}
        for r in rows:
            avg, avg_time = update_average(now, 0, 0, CREDIT_HALF_LIFE,
                                           r["expavg_credit"], r["expavg_time"])
            # keyed by the expavg_time read: a row credited since is left alone
            new[(r["id"], r["expavg_time"])] = (avg, avg_time)
            self.log.debug("[%s#%d] expavg_credit %f -> %f"
                           % (table.upper(), r["id"], r["expavg_credit"], avg))
        n = decay_averages(self.db, table, new)
        if n < len(rows):
            self.log.debug("%d %s rows were credited meanwhile and left alone"
                           % (len(rows) - n, table))
        return n

    def update_team_nusers(self, threshold):
        """Set ``nusers`` of teams with ``expavg_credit > threshold`` to their
        member count (BOINC's get_team_totals); return how many changed."""
        db = self.db
        last_id = 0
        changed = 0
        while not self.stop_requested():
            teams = db.query("SELECT id, nusers FROM team WHERE id > %s AND expavg_credit > %s"
                             " ORDER BY id LIMIT %s", (last_id, threshold, BATCH))
            if not teams:
                break
            last_id = teams[-1]["id"]
            ids = [t["id"] for t in teams]
            counts = {r["teamid"]: r["n"] for r in db.query(
                "SELECT teamid, COUNT(*) AS n FROM user WHERE teamid IN (%s) GROUP BY teamid"
                % placeholders(len(ids)), ids)}
            new = {}
            for t in teams:
                n = counts.get(t["id"], 0)
                if n != t["nusers"]:
                    self.log.critical("updating member count for [TEAM#%d]: database has %d "
                                      "users, count shows %d" % (t["id"], t["nusers"], n))
                    new[t["id"]] = (n,)
            if new:
                changed += set_team_nusers(db, new)
            if len(teams) < BATCH:
                break
        return changed
