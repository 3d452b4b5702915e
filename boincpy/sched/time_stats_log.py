"""Hosts' time-stats logs (BOINC's sched/time_stats_log.cpp).

With ``<request_time_stats_log/>`` in config.xml the reply asks a client for
its time-stats log (``<send_time_stats_log>1</send_time_stats_log>``: when
the client was on, connected, computing) until one is stored for the host.
The client sends it as ``<time_stats_log>`` in its next request; it is
written as sent, once the host is known, to
``PROJECT/time_stats_log/(HOSTID % 1000)/HOSTID`` for later analysis
(replacing an older one).  A log that arrives unasked is stored too, as
BOINC does.  Nothing else reads these files.
"""

import os

DIR = "time_stats_log"


def log_path(cfg, hostid):
    """Where the log of host ``hostid`` goes."""
    return cfg.project_path(os.path.join(DIR, str(hostid % 1000), str(hostid)))


def have_time_stats_log(cfg, hostid):
    """Whether a log of this host is stored (then the reply doesn't ask for one)."""
    return os.path.isfile(log_path(cfg, hostid))


def write_time_stats_log(ctx):
    """Store the request's <time_stats_log> for its host (write_time_stats_log());
    a failure is logged and the request goes on."""
    path = log_path(ctx.cfg, ctx.host["id"])
    directory = os.path.dirname(path)
    try:
        if not os.path.isdir(directory):
            os.makedirs(directory, 0o770, exist_ok=True)
    except OSError as exc:
        ctx.log.critical("Can't make time stats log dir %s: %s" % (directory, exc.strerror))
        return False
    tmp = "%s.tmp%d" % (path, os.getpid())
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(ctx.request.time_stats_log)
        os.replace(tmp, path)
    except OSError:
        ctx.log.critical("Can't create time stats file %s" % path)
        try:
            os.unlink(tmp)
        except OSError:
            pass
        return False
    return True
