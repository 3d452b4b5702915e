"""What every back-end daemon shares: options, log, stop triggers, the pass loop.

A daemon is a subclass of :class:`Daemon` with three methods, as in huey's
consumer: ``initialise`` (open the database, read tables), ``one_pass`` (do one
scan; return True if it found work) and ``shutdown``.  :func:`run_daemon` is
the whole ``main`` of a ``bin/`` entry script.

Options every daemon accepts, spelled as BOINC's daemons spell them (one or
two dashes)::

    -d N / --debug_level N      1 critical, 2-3 normal, 4 debug
    --one_pass                  one scan, then exit
    --sleep_interval S          seconds to sleep when a pass found nothing
    --mod N I                   only rows whose id % N == I (when the daemon has rows to split)

Stopping: the file PROJECT/stop_daemons, SIGHUP (what bin/stop sends), SIGTERM
and SIGINT all make the daemon finish the pass it is in and exit 0; sleep is
taken in one-second steps so the stop is noticed quickly.  A pass must leave
the database consistent wherever it is cut (each row's change is one
transaction), because SIGKILL and crashes are not noticed at all.

A daemon with a ``doorbell`` name sleeps on its boincpy.doorbell FIFO instead:
the process that makes work for it rings, and the next pass starts at once
(the sleep interval is then only the longest wait for work nobody rang for).

Logs go to stderr in BOINC's format; ``bin/start`` appends them to
``log_HOST/NAME.log``.
"""

import os
import signal
import sys
import time
import warnings
from types import SimpleNamespace

import click

from boincpy.cli import option, resolve_groups
from boincpy.config import load_config
from boincpy.db import connect
from boincpy.doorbell import Doorbell
from boincpy.errors import BoincpyError, ConfigError
from boincpy.log import MessageLog

STOP_DAEMONS_FILE = "stop_daemons"


class Daemon:
    """Base of every daemon.  Subclasses set ``name`` and override the hooks."""

    #: program name: the log line prefix, bin/start's log and pid file names
    name = "daemon"
    #: seconds to sleep after a pass that found nothing (--sleep_interval)
    sleep_interval = 5.0
    #: whether --mod N I is offered (the daemon splits rows by id)
    supports_mod = True
    #: a periodic task (config.xml's <tasks>, run by bin/start --cron): one
    #: pass per run, no --one_pass or --sleep_interval
    one_shot = False
    #: what --help says the program does
    description = None
    #: the doorbell (boincpy.doorbell) others ring when they make work for
    #: this daemon: it then sleeps until rung or --sleep_interval is over
    doorbell = None
    #: other spellings of -d (size_regulator's -debug_leveld)
    debug_level_spellings = ()

    def __init__(self, args, cfg, log):
        self.args = args
        self.cfg = cfg
        self.log = log
        self.db = None
        self._stop_signal = None
        self._bell = None
        if getattr(args, "sleep_interval", None) is not None:
            self.sleep_interval = args.sleep_interval

    # -- hooks --------------------------------------------------------------

    @classmethod
    def add_options(cls, params):
        """Append this daemon's own click options to the list ``params``
        (made with boincpy.cli.option, which spells them as BOINC does)."""

    def initialise(self):
        """Open the database and read what the passes need.  Default: connect."""
        self.db = connect(self.cfg)

    def one_pass(self):
        """Do one scan; return True if it did any work (then no sleep follows)."""
        raise NotImplementedError

    def shutdown(self):
        """Release what ``initialise`` took.  Default: close the database."""
        if self.db is not None:
            self.db.close()
            self.db = None

    # -- helpers for subclasses ---------------------------------------------

    def mod_clause(self, column):
        """SQL condition and parameters for ``--mod N I`` on ``column`` ("" when unset).

        Used as ``"WHERE ... " + clause`` with ``params + clause_params``.
        """
        if not getattr(self.args, "mod", None):
            return "", ()
        n, i = self.args.mod
        return " AND MOD(%s, %%s) = %%s" % column, (n, i)

    def stop_requested(self):
        """True after a stop signal or once PROJECT/stop_daemons exists."""
        if self._stop_signal is not None:
            return True
        return os.path.exists(self.cfg.project_path(STOP_DAEMONS_FILE))

    # -- the loop ---------------------------------------------------------------

    def _on_signal(self, signum, frame):
        self._stop_signal = signum

    def install_signal_handlers(self):
        for sig in (signal.SIGHUP, signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, self._on_signal)

    def sleep(self, seconds):
        """Sleep up to ``seconds`` in one-second steps; return early on a stop,
        or when the daemon's doorbell is rung (then True)."""
        if self._bell is not None:
            return self._bell.wait(seconds, self.stop_requested)
        deadline = time.monotonic() + seconds
        while not self.stop_requested():
            left = deadline - time.monotonic()
            if left <= 0:
                return
            time.sleep(min(1.0, left))

    def run(self):
        """initialise, then passes until stopped (or one with --one_pass), then shutdown."""
        self.initialise()
        try:
            if self.doorbell and not (self.one_shot or self.args.one_pass):
                self._bell = Doorbell(self.cfg, self.doorbell)
            while True:
                if self.stop_requested():
                    self.log.normal("Exiting: %s" % self._stop_reason())
                    return
                did_work = self.one_pass()
                if self.one_shot or self.args.one_pass:
                    return
                if not did_work:
                    self.log.debug("No work; sleeping %g s" % self.sleep_interval)
                    if self.sleep(self.sleep_interval):
                        self.log.debug("Woken: new work")
        finally:
            if self._bell is not None:
                self._bell.close()
                self._bell = None
            self.shutdown()

    def _stop_reason(self):
        if self._stop_signal is not None:
            return "received signal %d" % self._stop_signal
        return "found trigger file %s" % STOP_DAEMONS_FILE


class _NoProgress:
    """What :func:`progress` gives when nobody is watching: does nothing."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def update(self, n, current_item=None):
        pass


def progress(length, label):
    """A click progress bar on stdout when stdout is a terminal (an operator
    running a task by hand), else a silent stand-in (bin/start, cron); use as
    ``with progress(n, "hosts") as bar: ... bar.update(k)``."""
    try:
        tty = sys.stdout.isatty()
    except (AttributeError, ValueError):
        tty = False
    if not tty:
        return _NoProgress()
    return click.progressbar(length=max(int(length), 1), label=label, file=sys.stdout)


def daemon_options(daemon_class):
    """The daemon's click options: the common ones plus its own."""
    params = [option("debug_level", "-d", "--d", *daemon_class.debug_level_spellings,
                     type=int, default=3, metavar="N",
                     help="log verbosity: 1 critical, 2-3 normal, 4 debug")]
    if not daemon_class.one_shot:
        params.append(option("one_pass", is_flag=True, help="do one pass, then exit"))
        params.append(option("sleep_interval", type=float, default=None, metavar="S",
                             help="seconds to sleep when idle (default %g)"
                             % daemon_class.sleep_interval))
    params.append(option("project_dir", default=None, metavar="DIR",
                         help="project directory (default: found as BOINC finds it)"))
    if daemon_class.supports_mod:
        params.append(option("mod", nargs=2, type=int, default=None, metavar="N I",
                             help="handle only rows whose id % N == I"))
    daemon_class.add_options(params)
    return params


def daemon_command(daemon_class):
    """The daemon's click command; invoking it returns the parsed options
    as a namespace (``args``)."""
    params = daemon_options(daemon_class)

    def parsed(**values):
        resolve_groups(params, values)
        mod = values.get("mod")
        if mod and (mod[0] < 1 or not 0 <= mod[1] < mod[0]):
            raise click.UsageError("--mod N I needs N >= 1 and 0 <= I < N (got %d %d)"
                                   % tuple(mod))
        return SimpleNamespace(**values)
    return click.Command(daemon_class.name, params=params, callback=parsed,
                         help=daemon_class.description,
                         context_settings={"help_option_names": ["-h", "--help"]})


def parse_args(daemon_class, argv):
    """The daemon's options from the command line ``argv`` (a namespace);
    raises click.UsageError for a bad one."""
    command = daemon_command(daemon_class)
    with command.make_context(daemon_class.name, list(argv)) as ctx:
        return command.invoke(ctx)


def run_daemon(daemon_class, argv=None):
    """Parse the command line, load config.xml, and run the daemon; return the exit status.

    A :class:`BoincpyError` (bad config, database unreachable) is logged as
    CRITICAL and gives exit status 1, so ``bin/start --cron`` restarts the
    daemon later, as BOINC's daemons expect.
    """
    command = daemon_command(daemon_class)
    try:
        args = command.main(args=sys.argv[1:] if argv is None else list(argv),
                            prog_name=daemon_class.name, standalone_mode=False)
    except click.ClickException as exc:
        exc.show()
        return 1                    # BOINC's daemons exit 1 on a bad option
    if not isinstance(args, SimpleNamespace):
        return args or 0            # --help: click printed it
    log = MessageLog(sys.stderr, args.debug_level)
    try:
        # config.xml's warnings (unknown options) go to the daemon's log
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            cfg = load_config(args.project_dir)
    except ConfigError as exc:
        log.critical("Can't parse config.xml: %s" % exc)
        return 1
    for warning in caught:
        log.warning(str(warning.message))
    daemon = daemon_class(args, cfg, log)
    daemon.install_signal_handlers()
    log.normal("Starting %s" % daemon_class.name)
    try:
        daemon.run()
    except BoincpyError as exc:
        log.critical(str(exc))
        return exc.exit_code or 1
    return 0
