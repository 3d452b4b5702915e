"""size_regulator: keep a buffer of UNSENT results of each size class of one
app (BOINC's sched/size_regulator.cpp).

    size_regulator --app_name NAME --lo N --hi N --sleep_time S [-d N]
                   [--random_order | --priority_asc | --priority_order |
                    --priority_order_create_time] [--one_pass]

The transitioner creates the results of a workunit that has a size class
INACTIVE (server_state 1): the feeder doesn't see them.  Each pass, for each
size class ``i`` of the app (0 .. ``n_size_classes - 1``), this daemon counts
the class's UNSENT results (up to ``--hi``: it reads at most that many ids,
as BOINC does, so a large table costs little) and, when there are fewer than
``--lo``, turns up to ``hi - unsent`` INACTIVE results of the class UNSENT,
in the order the option asks for (default: whatever order the database
gives).  A pass in which some class got all it asked for is followed by
another pass at once; otherwise the daemon sleeps ``--sleep_time`` seconds.

At start it exits with a CRITICAL line if the app doesn't exist or has fewer
than 2 size classes, as BOINC's does.  All four of ``--app_name``, ``--lo``,
``--hi`` and ``--sleep_time`` are required and must not be 0 (BOINC prints
its usage line otherwise); unlike BOINC, a negative ``--lo``/``--hi`` or
``--lo`` above ``--hi`` is refused too (BOINC would run a query with a
negative LIMIT, or release 0 results in a loop that never sleeps).
"""

from boincpy.cli import group_flag, option
from boincpy.daemons.base import Daemon
from boincpy.db.result import activate_results
from boincpy.errors import ToolError
from boincpy.states import ServerState

UNSENT = int(ServerState.UNSENT)
MAX_SLEEP_TIME = 1000000            # size_regulator.cpp clamps --sleep_time to this

# the release order options (size_regulator.cpp); none: the database's order
ORDERS = {
    "random_order": "ORDER BY random",
    "priority_asc": "ORDER BY priority ASC",
    "priority_order": "ORDER BY priority DESC",
    "priority_order_create_time": "ORDER BY priority DESC, workunitid",
}

USAGE = "usage: size_regulator --app_name x --lo x --hi x --sleep_time x"


class SizeRegulator(Daemon):
    """The size_regulator daemon for one app."""

    name = "size_regulator"
    supports_mod = False
    debug_level_spellings = ("--debug_leveld", "-debug_leveld")    # BOINC's spelling
    description = ("Keep between --lo and --hi UNSENT results of each size class of an "
                   "app, releasing INACTIVE ones.")

    @classmethod
    def add_options(cls, params):
        params.append(option("app_name", default=None, metavar="NAME",
                             help="the app (its n_size_classes must be 2 or more)"))
        params.append(option("lo", type=int, default=0, metavar="N",
                             help="release results of a class when it has fewer than N "
                                  "unsent"))
        params.append(option("hi", type=int, default=0, metavar="N",
                             help="... as many as bring it to N unsent"))
        params.append(option("sleep_time", type=int, default=0, metavar="S",
                             help="seconds to sleep after a pass in which no class got "
                                  "all it asked for (replaces --sleep_interval)"))
        for opt in ORDERS:
            params.append(group_flag(opt, "order", dest="order", const=opt,
                                     help="release in %s order" % ORDERS[opt][len("ORDER BY "):]))

    def __init__(self, args, cfg, log):
        super().__init__(args, cfg, log)
        self.app = None
        self.order_clause = ORDERS.get(getattr(args, "order", None) or "", "")
        if args.sleep_time:
            self.sleep_interval = min(max(args.sleep_time, 0), MAX_SLEEP_TIME)

    def initialise(self):
        args = self.args
        sleep_time = min(max(args.sleep_time, 0), MAX_SLEEP_TIME)
        if not args.app_name or not args.lo or not args.hi or not sleep_time:
            raise ToolError(USAGE)
        if args.lo < 0 or args.hi < 0:
            raise ToolError("--lo and --hi must be positive (got --lo %d --hi %d)"
                            % (args.lo, args.hi))
        if args.lo > args.hi:
            raise ToolError("--lo %d is above --hi %d" % (args.lo, args.hi))
        super().initialise()
        self.app = self.db.query_one("SELECT id, name, n_size_classes FROM app WHERE name = %s",
                                     (args.app_name,))
        if self.app is None:
            raise ToolError("no such app: %s" % args.app_name)
        if self.app["n_size_classes"] < 2:
            raise ToolError("app '%s' is not multi-size" % args.app_name)

    def unsent_count(self, size_class):
        """UNSENT results of the class, counted up to --hi (get_unsent_counts)."""
        return self.db.query_value(
            "SELECT COUNT(*) FROM (SELECT id FROM result WHERE appid = %s AND "
            "server_state = %s AND size_class = %s LIMIT %s) AS r",
            (self.app["id"], UNSENT, size_class, self.args.hi), default=0)

    def make_unsent(self, size_class, n):
        """Turn up to ``n`` INACTIVE results of the class UNSENT; how many changed."""
        return activate_results(self.db, self.app["id"], size_class, n, self.order_clause)

    def one_pass(self):
        """do_pass(): True if some class got every result it asked for."""
        lo, hi = self.args.lo, self.args.hi
        action = False
        for i in range(self.app["n_size_classes"]):
            unsent = self.unsent_count(i)
            self.log.normal("%d unsent for class %d" % (unsent, i))
            if unsent < lo:
                n = hi - unsent
                self.log.normal("releasing %d jobs of size class %d" % (n, i))
                nchanged = self.make_unsent(i, n)
                self.log.normal("%d jobs released" % nchanged)
                if nchanged == n:
                    action = True
        if not action and not self.args.one_pass:
            self.log.normal("sleeping")
        return action
