"""purge_trickles: remove trickle messages that have been handled (BOINC's
html/ops/purge_trickles.php, a command-line script).

    purge_trickles                     both tables: rows with handled <> 0
    purge_trickles msg_from_host N     trickle-ups with handled = N
    purge_trickles msg_to_host N       trickle-downs with handled = N

Trickle-ups are handled once a trickle handler has run on them, trickle-downs
once the scheduler has put them in a reply.  Run it as a task (e.g. daily).
"""

import click

from boincpy.daemons.base import Daemon
from boincpy.db.msg import purge_handled
from boincpy.errors import ToolError

TABLES = ("msg_from_host", "msg_to_host")


class PurgeTrickles(Daemon):
    """The purge_trickles task."""

    name = "purge_trickles"
    one_shot = True
    supports_mod = False
    description = ("Delete handled trickle messages: with no arguments those of both "
                   "tables with handled <> 0; 'msg_from_host N' or 'msg_to_host N': that "
                   "table's rows with handled = N.")

    @classmethod
    def add_options(cls, params):
        # TABLE N (BOINC's script takes both or neither)
        params.append(click.Argument(["table"], required=False,
                                     type=click.Choice(TABLES)))
        params.append(click.Argument(["handled"], required=False, type=int, metavar="N"))

    def initialise(self):
        if self.args.table and self.args.handled is None:
            raise ToolError("usage: purge_trickles [msg_from_host N | msg_to_host N]")
        super().initialise()

    def one_pass(self):
        if self.args.table:
            plan = [(self.args.table, self.args.handled)]
        else:
            plan = [(t, None) for t in TABLES]
        for table, handled in plan:
            n = purge_handled(self.db, table, handled)
            self.log.normal("%s: deleted %d handled messages" % (table, n))
        return True
