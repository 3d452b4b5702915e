"""The trickle handler framework: handle the trickle-up messages apps send
(BOINC's sched/trickle_handler.cpp).

An app running on a host calls ``boinc_send_trickle_up(variety, text)``; the
client sends the text in its next scheduler request and the scheduler stores
it in ``msg_from_host`` (``handled`` 0, ``variety`` the app's word, ``xml``
the client's ``<result_name>`` and ``<time>`` lines and the text).  A
trickle handler is a daemon for one variety::

    trickle_credit --variety runtime --max_runtime 3600 [-d N] [--one_pass]

The project's code is a :class:`TrickleHandler` subclass, as in BOINC a
program linked with ``handle_trickle_init`` and ``handle_trickle``::

    from boincpy.daemons.trickle_handler import TrickleHandler

    class MyHandler(TrickleHandler):
        name = "my_trickle_handler"

        def handle_trickle(self, msg):          # msg: boincpy.db.rows.MsgFromHost
            ...                                 # self.db, self.log, self.cfg
            return 0                            # non-zero: an error

    # bin/my_trickle_handler:  sys.exit(run(run_daemon, MyHandler))

``configure()`` is ``handle_trickle_init``: check the handler's own options
(``add_arguments``) and raise ToolError to refuse to start.  The class
attributes ``handled_enum`` / ``handled_set`` / ``handled_error`` are BOINC's
globals of the same names: the pass takes messages of the variety whose
``handled`` is ``handled_enum`` (0), and sets it to ``handled_set`` (1) when
the handler returns 0, else to ``handled_error`` (1).

Each message is handled in one database transaction together with the
change of its ``handled``: if the daemon is killed, either both happened or
neither did, so a message is never credited twice or lost.  (BOINC marks the
message after the handler has written its rows.)  A handler that raises has
its database work rolled back; the message is marked ``handled_error`` and the
daemon goes on.  Work a handler does outside the database is not covered:
make it idempotent.

A handler may answer with a trickle-down: a ``msg_to_host`` row (its xml
``<trickle_down>`` with the ``<result_name>`` line), put in the host's next
reply when config.xml has ``<msg_to_host/>`` and read by the running app with
``boinc_receive_trickle_down``.  Handled messages stay in the table until
``purge_trickles`` removes them.
The stock handlers are in :mod:`boincpy.daemons.trickle_handlers`.
"""

import traceback

from boincpy.cli import option
from boincpy.daemons.base import Daemon
from boincpy.db.msg import set_msg_from_host_handled
from boincpy.db.rows import MsgFromHost
from boincpy.error_numbers import exit_status_text
from boincpy.errors import DatabaseLostError

BATCH = 100             # messages read per query


class TrickleHandler(Daemon):
    """The trickle handler daemon; subclasses override :meth:`handle_trickle`."""

    name = "trickle_handler"
    sleep_interval = 5.0            # BOINC's daemon_sleep(5)
    handled_enum = 0
    handled_set = 1
    handled_error = 1

    @classmethod
    def add_options(cls, params):
        params.append(option("variety", required=True, metavar="X",
                             help="handle trickle-up messages of this variety"))
        cls.add_handler_options(params)

    @classmethod
    def add_handler_options(cls, params):
        """The handler's own options (BOINC passes unknown ones to handle_trickle_init)."""

    def configure(self):
        """handle_trickle_init: check the options; raise ToolError to stop."""

    def handle_trickle(self, msg):
        """Handle one message (a MsgFromHost row); return 0, or non-zero on error."""
        raise NotImplementedError

    def initialise(self):
        super().initialise()
        self.configure()
        self.log.normal("Starting trickle handler")

    def one_pass(self):
        """do_trickle_scan: every message of the variety still to be handled,
        in id order; True if there were any."""
        found = False
        last_id = 0
        while not self.stop_requested():
            mod, mod_params = self.mod_clause("id")
            ids = [r["id"] for r in self.db.query(
                "SELECT id FROM msg_from_host WHERE variety = %s AND handled = %s AND id > %s"
                + mod + " ORDER BY id LIMIT %s",
                (self.args.variety, self.handled_enum, last_id) + tuple(mod_params) + (BATCH,))]
            if not ids:
                break
            for msg_id in ids:
                last_id = msg_id
                if self.handle_one(msg_id):
                    found = True
                if self.stop_requested():
                    break
        return found

    def handle_one(self, msg_id):
        """Run the handler on one message and record the outcome, in one
        transaction; False if another handler took the message meanwhile."""
        try:
            with self.db.transaction():
                msg = self._claim(msg_id)
                if msg is None:
                    return False
                retval = self.handle_trickle(msg)
                if retval:
                    self.log.critical("handle_trickle(): %s" % exit_status_text(retval))
                self._mark(msg_id, self.handled_error if retval else self.handled_set)
            return True
        except DatabaseLostError:
            raise                           # not the message's fault: exit, cron restarts
        except Exception as exc:            # the handler's writes are rolled back
            self.log.critical("handle_trickle() failed for message %d: %s: %s"
                              % (msg_id, exc.__class__.__name__, exc))
            for line in traceback.format_exc().splitlines():
                self.log.debug(line)
        with self.db.transaction():
            if self._claim(msg_id) is None:
                return False
            self._mark(msg_id, self.handled_error)
        return True

    def _claim(self, msg_id):
        row = self.db.query_one("SELECT * FROM msg_from_host WHERE id = %s AND handled = %s "
                                "FOR UPDATE", (msg_id, self.handled_enum))
        if row is None:
            return None
        msg = MsgFromHost.from_row(row)
        msg.xml = msg.xml or ""                     # NULL as ""
        return msg

    def _mark(self, msg_id, handled):
        set_msg_from_host_handled(self.db, msg_id, handled)
