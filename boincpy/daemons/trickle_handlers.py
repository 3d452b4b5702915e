"""BOINC's stock trickle handlers: trickle_credit, trickle_deadline, trickle_echo.

Each is a :class:`~boincpy.daemons.trickle_handler.TrickleHandler` for one
variety (``--variety X``) doing what the C++ handler of the same name does;
the framework runs each message and the change of its ``handled`` in one
transaction.

trickle_credit ``--max_runtime X``
    Messages carry ``<runtime>SECONDS</runtime>`` (CPU time since the last
    trickle).  The host gets ``runtime x FLOPS`` worth of credit (runtime
    capped at X, which should match how often the app trickles; FLOPS the
    host's p_fpops, at most the 95th percentile of active hosts', the 50th
    percentile if the host has none), granted as work started a day ago to
    the host, its user and the user's team, while the job is still running.
    BOINC's handler refuses to start while no host has expavg_credit > 10
    (no percentiles); this one starts and uses the feeder's defaults
    (3.3 GFLOPS) with no upper cap until such hosts exist.

trickle_deadline ``--extension_period X --extension_timeframe Y``
    Messages carry ``<result_name>``: if that result of the sending host is
    due within the next Y seconds (and not already late), its
    report_deadline moves X seconds later, so the transitioner does not
    time it out and send a replica.  The client is not told.

trickle_echo
    Sends every message back to its host as a trickle-down (``msg_to_host``,
    delivered by the scheduler with ``<msg_to_host/>`` set in config.xml):
    ``<trickle_down>`` around the message, so its ``<result_name>`` line
    takes it to the running task.
"""

import time

from boincpy.cnum import atof, atoi
from boincpy.credit import CREDIT_HALF_LIFE, fpops_to_credit, update_average
from boincpy.cli import option
from boincpy.daemons.trickle_handler import TrickleHandler
from boincpy.db.credit import grant_credit
from boincpy.db.host import host_fpops_percentile
from boincpy.db.msg import insert_msg_to_host
from boincpy.db.result import set_result_report_deadline
from boincpy.error_numbers import error_code
from boincpy.errors import ToolError
from boincpy.sched.request import MSG_FROM_HOST_MAX_XML
from boincpy.xml.scan import leaf_list

ERR_XML_PARSE = error_code("ERR_XML_PARSE")          # returned as the C++ handlers do
ERR_DB_NOT_FOUND = error_code("ERR_DB_NOT_FOUND")
DEFAULT_FLOPS = 3.3e9           # the feeder's PERF_INFO default (50th and 95th percentile)

def message_elements(xml):
    """(tag, text) of the message's simple elements, in order (the C++
    handlers read the message with XML_PARSER, stopping at the one they
    want: BOINC's dialect, so boincpy.xml.scan's reader, not a tree)."""
    return [(tag, text.decode("utf-8", "replace"))
            for tag, text in leaf_list((xml or "").encode("utf-8")) if text is not None]


class TrickleCredit(TrickleHandler):
    """trickle_credit: credit for the run time a running job reports."""

    name = "trickle_credit"

    @classmethod
    def add_handler_options(cls, params):
        params.append(option("max_runtime", type=float, default=0.0, metavar="X",
                             help="cap on the runtime one message is credited for "
                                  "(how often the app trickles), seconds"))

    def configure(self):
        if not self.args.max_runtime:
            raise ToolError("missing --max_runtime arg")
        p50 = host_fpops_percentile(self.db, 50)
        if p50 is None:
            self.log.normal("no host has expavg_credit > 10 yet: using %g FLOPS for hosts "
                            "without a benchmark, no upper cap" % DEFAULT_FLOPS)
            self.flops_50, self.flops_95 = DEFAULT_FLOPS, None
        else:
            self.flops_50, self.flops_95 = p50, host_fpops_percentile(self.db, 95)
        self.log.normal("default FLOPS: %f" % self.flops_50)
        self.log.normal("max FLOPS: %s" % ("%f" % self.flops_95 if self.flops_95 else "none"))
        self.log.normal("max runtime: %f" % self.args.max_runtime)

    def handle_trickle(self, msg):
        runtime = 0.0
        for tag, text in message_elements(msg.xml):
            if tag == "runtime":
                runtime = atof(text)
                break
            self.log.normal("unexpected tag: %s" % tag)
        if runtime <= 0:
            self.log.normal("unexpected nonpositive runtime: %f" % runtime)
            return ERR_XML_PARSE
        host = self.db.query_one("SELECT id, userid, p_fpops, total_credit, expavg_credit, "
                                 "expavg_time FROM host WHERE id = %s FOR UPDATE", (msg.hostid,))
        if host is None:
            return ERR_DB_NOT_FOUND
        if runtime > self.args.max_runtime:
            self.log.normal("Reported runtime exceeds bound: %f>%f"
                            % (runtime, self.args.max_runtime))
            runtime = self.args.max_runtime
        flops = host["p_fpops"]
        if flops < 0:
            self.log.normal("host CPU speed %f < 0.  Using %f instead" % (flops, self.flops_50))
            flops = self.flops_50
        if self.flops_95 is not None and flops > self.flops_95:
            self.log.normal("host CPU speed %f exceeds %f.  Using %f instead"
                            % (flops, self.flops_95, self.flops_95))
            flops = self.flops_95
        credit = fpops_to_credit(runtime * flops)
        now = time.time()
        self.grant_credit(host, now - 86400, credit, now)
        self.log.debug("granting %f credit to host %d" % (credit, host["id"]))
        return 0

    def grant_credit(self, host, start_time, credit, now):
        """grant_credit(): the host's, its user's and their team's totals and
        recent averages (credit.cpp; credit_user/credit_team are not touched)."""
        self._add_credit("host", host, start_time, credit, now)
        user = self.db.query_one("SELECT id, teamid, expavg_credit, expavg_time FROM user "
                                 "WHERE id = %s FOR UPDATE", (host["userid"],))
        if user is None:
            self.log.critical("lookup of user %d failed" % host["userid"])
            return
        self._add_credit("user", user, start_time, credit, now)
        if not user["teamid"]:
            return
        team = self.db.query_one("SELECT id, expavg_credit, expavg_time FROM team "
                                 "WHERE id = %s FOR UPDATE", (user["teamid"],))
        if team is None:
            self.log.critical("lookup of team %d failed" % user["teamid"])
            return
        self._add_credit("team", team, start_time, credit, now)

    def _add_credit(self, table, row, start_time, credit, now):
        avg, avg_time = update_average(now, start_time, credit, CREDIT_HALF_LIFE,
                                       row["expavg_credit"], row["expavg_time"])
        grant_credit(self.db, table, row["id"], credit, avg, avg_time)


class TrickleDeadline(TrickleHandler):
    """trickle_deadline: a running job that reports in gets a later deadline."""

    name = "trickle_deadline"

    @classmethod
    def add_handler_options(cls, params):
        params.append(option("extension_period", type=float, default=0.0, metavar="X",
                             help="seconds added to the report deadline"))
        params.append(option("extension_timeframe", type=float, default=0.0, metavar="X",
                             help="extend only deadlines within the next X seconds"))

    def configure(self):
        if not self.args.extension_period:
            raise ToolError("missing --extension_period arg")
        if not self.args.extension_timeframe:
            raise ToolError("missing --extension_timeframe arg")
        self.log.normal("extension_period: %f sec" % self.args.extension_period)
        self.log.normal("extension_timeframe: %f sec" % self.args.extension_timeframe)

    def handle_trickle(self, msg):
        name = ""
        # as the C++ loop: the first of <cpu_time> and <result_name> ends it
        for tag, text in message_elements(msg.xml):
            if tag == "cpu_time":
                atoi(text)
                break
            if tag == "result_name":
                name = text
                break
            self.log.normal("[HOST#%d] unexpected tag: %s" % (msg.hostid, tag))
        if not name:
            self.log.normal("[HOST#%d] unexpected empty result_name attribute" % msg.hostid)
            return ERR_XML_PARSE
        task = self.db.query_one("SELECT id, report_deadline FROM result WHERE name = %s "
                                 "AND hostid = %s FOR UPDATE", (name, msg.hostid))
        if task is None:
            self.log.critical("[HOST#%d] error while looking for result_name: %s"
                              % (msg.hostid, name))
            return ERR_DB_NOT_FOUND
        now = time.time()
        if task["report_deadline"] < now:
            self.log.normal("[RESULT#%d][HOST#%d] report deadline is in the past"
                            % (task["id"], msg.hostid))
            return 0
        if task["report_deadline"] - self.args.extension_timeframe > now:
            self.log.debug("[RESULT#%d][HOST#%d] report deadline is too far in the future"
                           % (task["id"], msg.hostid))
            return 0
        deadline = int(task["report_deadline"] + self.args.extension_period)
        set_result_report_deadline(self.db, task["id"], deadline)
        self.log.debug("[RESULT#%d][HOST#%d] report deadline extended to %d"
                       % (task["id"], msg.hostid, deadline))
        return 0


class TrickleEcho(TrickleHandler):
    """trickle_echo: every message goes back to its host as a trickle-down."""

    name = "trickle_echo"

    def handle_trickle(self, msg):
        print("got trickle-up \n%s\n" % msg.xml, flush=True)
        # The client ends a trickle-down at the first line holding its close
        # tag: the host's own text must not end it early.
        body = msg.xml.replace("</trickle_down>", "&lt;/trickle_down&gt;")
        xml = ("<trickle_down>\n%s</trickle_down>\n" % body)[:MSG_FROM_HOST_MAX_XML]
        insert_msg_to_host(self.db, int(time.time()), msg.hostid, msg.variety, xml)
        return 0
