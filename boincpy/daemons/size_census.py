"""size_census: the host-speed boundaries of each multi-size app's classes
(BOINC's html/ops/size_census.php).

    size_census [--all_apps] [-d N]

For each non-deprecated app with ``n_size_classes`` > 1 (every
non-deprecated app with ``--all_apps``, for setting up and testing), the
effective speed of each of its host app versions whose host has
``expavg_credit`` > 10 and whose ``et_n`` and ``et_avg`` are positive::

    (1 / et_avg) x on_frac x active_frac          CPU versions
    (1 / et_avg) x on_frac x gpu_active_frac      GPU plan classes (active_frac
                                                  if gpu_active_frac is 0)

sorted; element ``int(i x n / n_size_classes)`` for i = 1 .. n_size_classes-1
goes to ``PROJECT/size_census_APPNAME``, one number a line (boincpy.sizeclass
has the format).  The file is replaced atomically, so a feeder re-reading
its tables never sees half of it.  An app with no such host versions gets
zeros (PHP reads past the end of its empty array and prints 0) and a
warning here.  The feeder reads the files at start and on ``reread_db``:
run this as a task (about once a day) and touch ``reread_db`` after it.

Output as the PHP script's: ``Starting: <time>`` and ``Finished: <time>``
on stdout; one log line per app on stderr.
"""

import sys
import time

from boincpy.cli import option
from boincpy.daemons.base import Daemon
from boincpy.files import atomic_write
from boincpy.sizeclass import (census_file_name, census_quantiles, census_text,
                               is_gpu_plan_class)

MIN_HOST_EXPAVG_CREDIT = 10          # size_census.php: only hosts that do work


def time_str(t):
    """PHP time_str(): ``23 Nov 2026, 9:05:07 UTC``."""
    g = time.gmtime(t)
    return "%d %s, %d:%s UTC" % (g.tm_mday, time.strftime("%b %Y", g), g.tm_hour,
                                 time.strftime("%M:%S", g))


def effective_speed(row):
    """A host app version's FLOPS times the fraction of time it computes."""
    if is_gpu_plan_class(row["plan_class"] or ""):
        avail = row["on_frac"] * (row["gpu_active_frac"] or row["active_frac"])
    else:
        avail = row["on_frac"] * row["active_frac"]
    return (1.0 / row["et_avg"]) * avail


def host_speeds(db, appid):
    """The effective speeds of an app's host app versions on hosts that do
    work (size_census.php's do_app query); the ops page shows them too."""
    rows = db.query(
        "SELECT hav.et_avg, host.on_frac, host.active_frac, host.gpu_active_frac, "
        "app_version.plan_class FROM host_app_version hav, host, app_version "
        "WHERE hav.app_version_id = app_version.id AND app_version.appid = %s "
        "AND hav.et_n > 0 AND hav.et_avg > 0 AND host.id = hav.host_id "
        "AND host.expavg_credit > %s", (appid, MIN_HOST_EXPAVG_CREDIT))
    return [effective_speed(r) for r in rows]


class SizeCensus(Daemon):
    """The size_census task."""

    name = "size_census"
    one_shot = True
    supports_mod = False
    description = ("Write PROJECT/size_census_APPNAME: the host-speed boundaries of the "
                   "size classes of each app with n_size_classes > 1.  Run it about "
                   "once a day.")

    @classmethod
    def add_options(cls, params):
        params.append(option("all_apps", is_flag=True,
                             help="every non-deprecated app, not only multi-size ones "
                                  "(for setup and testing)"))

    def speeds(self, appid):
        """The effective speeds of the app's host app versions (do_app's query)."""
        return host_speeds(self.db, appid)

    def do_app(self, app):
        """Write one app's census file; returns its boundaries."""
        speeds = self.speeds(app["id"])
        quantiles = census_quantiles(speeds, app["n_size_classes"])
        name = census_file_name(app["name"])
        atomic_write(self.cfg.project_path(name), census_text(quantiles))
        if not speeds and quantiles:
            self.log.warning("%s: app %s has no host app versions with et_avg > 0 on "
                            "hosts with expavg_credit > %d; boundaries are 0"
                            % (name, app["name"], MIN_HOST_EXPAVG_CREDIT))
        self.log.normal("%s: %d host app versions; %d size classes; boundaries %s"
                        % (name, len(speeds), app["n_size_classes"],
                           " ".join("%g" % q for q in quantiles) or "none"))
        return quantiles

    def one_pass(self):
        print("Starting: %s" % time_str(time.time()))
        sys.stdout.flush()
        if self.args.all_apps:
            where = "deprecated = 0"
        else:
            where = "deprecated = 0 AND n_size_classes > 1"
        for app in self.db.query("SELECT id, name, n_size_classes FROM app WHERE "
                                 + where + " ORDER BY id"):
            self.do_app(app)
        print("Finished: %s" % time_str(time.time()))
        return True
