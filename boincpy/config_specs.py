"""config.xml's <daemon> and <task> entries and config_aux.xml's job limits,
as a parse of them (:mod:`boincpy.config`) makes them.

Apart from :mod:`boincpy.parsed_config` because the scheduler and the upload
handler read neither: they take config.xml's snapshot on every request, and
making these six classes cost each scheduler request 290,000 instructions
(2% of its imports).  A snapshot keeps them as rows, made into these objects
when first read (``Config.daemons``, ``Config.tasks``,
``Config.max_jobs_in_progress``).
"""


# ---------------------------------------------------------------------------
# Daemons and tasks.  Plain classes with __slots__ rather than dataclasses
# (importing dataclasses costs ~9 ms; bin/start and the ops pages read these).

class _Spec:
    __slots__ = ()

    def __repr__(self):
        return "%s(%s)" % (type(self).__name__, ", ".join(
            "%s=%r" % (f, getattr(self, f)) for f in self.__slots__))

    def __eq__(self, other):
        return type(other) is type(self) and all(
            getattr(self, f) == getattr(other, f) for f in self.__slots__)

    def cmd_name(self):
        """Program name bin/start derives file names from (skips run_in_ops)."""
        return command_basename(self.cmd)


class DaemonSpec(_Spec):
    """A <daemon> entry; output/pid_file/lock_file default as bin/start's do."""

    __slots__ = ("cmd", "host", "output", "pid_file", "disabled", "lock_file", "use_shell")

    def __init__(self, cmd, host="", output="", pid_file="", disabled=False,
                 lock_file="", use_shell=False):
        name = command_basename(cmd)
        self.cmd = cmd
        self.host = host
        self.output = output or name + ".log"
        self.pid_file = pid_file or name + ".pid"
        self.disabled = disabled
        # bin/start: <lock_file>, else OUTPUT.lock if <output> names a file, else
        # NAME.lock -- so two copies with their own <output> lock separately
        if not lock_file:
            lock_file = (output + ".lock" if output and not output.startswith("/dev/")
                         else name + ".lock")
        self.lock_file = lock_file
        self.use_shell = use_shell


class TaskSpec(_Spec):
    """A <task> entry; ``period`` in seconds, ``period_text`` as written."""

    __slots__ = ("cmd", "period", "output", "disabled", "host", "period_text",
                 "lock_file", "use_shell", "always_run")

    def __init__(self, cmd, period, output="", disabled=False, host="",
                 period_text="", lock_file="", use_shell=False, always_run=False):
        name = command_basename(cmd)
        if isinstance(period, str):
            period_text = period_text or period
            period = parse_period(period)
        self.cmd = cmd
        self.period = period
        self.output = output or name + ".out"
        self.disabled = disabled
        self.host = host
        self.period_text = period_text or format_period(period)
        # bin/start: <lock_file>, else OUTPUT.lock if output is a file, else NAME.lock
        if not lock_file:
            lock_file = (self.output + ".lock" if not self.output.startswith("/dev/")
                         else name + ".lock")
        self.lock_file = lock_file
        self.use_shell = use_shell
        self.always_run = always_run


def command_basename(cmd):
    """Base name of a command's program, the second word after run_in_ops."""
    words = cmd.split()
    if not words:
        return ""
    word = words[0]
    if word == "run_in_ops" and len(words) > 1:
        word = words[1]
    return word.rpartition("/")[2]


_PERIOD_UNITS = (("mo", 30 * 86400), ("s", 1), ("m", 60), ("h", 3600),
                 ("d", 86400), ("w", 7 * 86400))


def parse_period(text):
    """Seconds in a task period: "N" (minutes) or "N unit", unit by its first
    letter(s): s, m(in), h(our), d(ay), w(eek), mo(nth = 30 days).

    Raises ValueError for anything else.
    """
    words = text.split()
    if not words or len(words) > 2:
        raise ValueError("invalid task period %r" % text)
    try:
        number = int(words[0])
    except ValueError:
        number = float(words[0])     # ValueError propagates
    if len(words) == 1:
        return int(number * 60)
    unit = words[1].lower()
    for prefix, seconds in _PERIOD_UNITS:
        if unit.startswith(prefix):
            return int(number * seconds)
    raise ValueError("invalid task period %r" % text)


def format_period(seconds):
    """Text for a period in seconds, in the largest whole BOINC unit."""
    for unit, size in (("days", 86400), ("hours", 3600), ("minutes", 60)):
        if seconds and seconds % size == 0:
            n = seconds // size
            return "%d %s" % (n, unit[:-1] if n == 1 else unit)
    return "%d seconds" % seconds


# ---------------------------------------------------------------------------
# config_aux.xml's <max_jobs_in_progress> (BOINC's sched_limit.cpp)

class RscJobLimit:
    """One <total_limit>, <cpu_limit> or <gpu_limit> as written: ``jobs`` is
    None when the element has no <jobs> (BOINC then keeps the limit it had)."""

    __slots__ = ("jobs", "per_proc")

    def __init__(self, jobs=None, per_proc=False):
        self.jobs = jobs
        self.per_proc = per_proc

    def __repr__(self):
        return "RscJobLimit(%r, per_proc=%r)" % (self.jobs, self.per_proc)


class JobLimitSpec:
    """<project> or one <app> of <max_jobs_in_progress>; an absent limit is None."""

    __slots__ = ("app_name", "total_limit", "cpu_limit", "gpu_limit", "line")

    def __init__(self, app_name="", line=0):
        self.app_name = app_name
        self.total_limit = self.cpu_limit = self.gpu_limit = None
        self.line = line


class JobLimitsSpec:
    """config_aux.xml's <max_jobs_in_progress>: ``project`` (a JobLimitSpec or
    None) and ``apps`` (app name -> JobLimitSpec; the first of a name counts, as
    BOINC's lookup_app finds the first)."""

    __slots__ = ("path", "project", "apps")

    def __init__(self, path):
        self.path = path
        self.project = None
        self.apps = {}
