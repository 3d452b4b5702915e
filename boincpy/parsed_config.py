"""A parsed config.xml: the :class:`Config` object (its daemons, tasks and
config_aux.xml's job limits are :mod:`boincpy.config_specs`' objects), where
the project is, and a snapshot of a parse that the next process reads
instead of parsing.

:mod:`boincpy.config` declares the options and parses, writes and documents
the file; what a parse produces lives here, apart from the option table,
because a classic CGI pays for every module it imports on every request.
The scheduler and the upload handler read config.xml on each request, as
BOINC's CGIs do; importing the table and the XML reader and parsing was about
2 ms of a no-work request's 20.  So after a parse, :class:`boincpy.resident.Resident`
saves a snapshot of the result (:func:`save_snapshot`: marshal, written
atomically to ``PROJECT/tmp_<host>/``, the directory the CGIs and the
operator's programs share) and a later process takes it (:func:`load_snapshot`)
as long as nothing it came from changed: config.xml, config_aux.xml (inode,
size, modification and change times in nanoseconds, stated before the parse
read them: a new owner, group or mode counts as a change), this
machine's host name, the project directory and boincpy's config.py (a new
release may have new options or defaults).  Anything else (no snapshot, a
directory it can't write, a damaged file) falls back to the parse, so the
snapshot can only save time, never change a result.
"""

import marshal
import posix     # not os, on a classic CGI's path (boincpy.hot_path.join)

from boincpy.errors import ConfigError
from boincpy.hot_path import absolute, getenv, is_dir, is_file, join

CONFIG_FILE = "config.xml"
CONFIG_AUX_FILE = "config_aux.xml"


# ---------------------------------------------------------------------------
# The parsed file

def non_option_values(project_dir, path):
    """Config's attributes that are not options, as they are before a parse
    (see :class:`Config`)."""
    return dict(project_dir=project_dir, path=path, raw={}, unknown={}, daemons=[], tasks=[],
                local_host="", host_log_dir="", delete_delay=0.0, max_jobs_in_progress=None)


# Config.get answers for options only
_NOT_OPTIONS = frozenset(non_option_values("", None))


class _FromSnapshot:
    """A Config attribute that a snapshot keeps as rows (the daemons, the
    tasks, the job limits), made into its objects (:mod:`boincpy.config_specs`)
    when first read.  The CGIs take a snapshot on every request and never
    read these; a Config from a parse holds them in its ``__dict__``, which
    Python reads before this descriptor."""

    def __init__(self, restore):
        self.restore = restore

    def __set_name__(self, owner, name):
        self.name = name

    def __get__(self, cfg, owner=None):
        if cfg is None:
            return self
        try:
            rows = cfg.__dict__.pop(_ROWS + self.name)
        except KeyError:
            # a Config made without it: what reading a missing attribute raises
            # (getattr(cfg, name, default) still answers)
            raise AttributeError("Config has no %s" % self.name) from None
        value = cfg.__dict__[self.name] = self.restore(rows)
        return value


_ROWS = "_snapshot_rows_"     # + the attribute: its rows, until first read


class Config:
    """Parsed config.xml: one attribute per declared option plus

    ``project_dir`` (absolute), ``path`` (the file), ``raw`` (options as
    written in the file, typed), ``unknown`` (undeclared options: name ->
    text, or inner XML for options with child elements), ``daemons``,
    ``tasks``, ``delete_delay`` (seconds), ``local_host`` (this
    machine's short host name), ``host_log_dir`` (PROJECT/log_<local_host>,
    where this host's programs write their logs whatever <log_dir> says) and
    ``max_jobs_in_progress`` (config_aux.xml's job limits, a JobLimitsSpec,
    or None).  :func:`boincpy.config.load_config` makes one;
    ``values`` is every attribute's value by name.
    """

    def __init__(self, values):
        self.__dict__.update(values)

    # (lambdas: the functions are defined further down)
    daemons = _FromSnapshot(lambda rows: _restore_all("DaemonSpec", rows))
    tasks = _FromSnapshot(lambda rows: _restore_all("TaskSpec", rows))
    max_jobs_in_progress = _FromSnapshot(lambda rows: _restore_limits(rows))

    def get(self, name, default=None):
        """A declared option's value, else an undeclared one's text, else ``default``."""
        d = self.__dict__
        if name in d and name not in _NOT_OPTIONS:
            return d[name]
        return self.unknown.get(name, default)

    def project_path(self, *parts):
        """A path under the project root."""
        return join(self.project_dir, *parts)

    def as_options(self):
        """The options as written in the file (declared typed, unknown as text)
        -- what write_config needs to reproduce the file."""
        options = dict(self.raw)
        options.update(self.unknown)
        return options

    def __repr__(self):
        return "<Config %s>" % (self.path or self.project_dir)


def find_project_dir():
    """The project root as BOINC's project_path() finds it: $BOINC_PROJECT_DIR,
    else the current, parent or grandparent directory if it holds config.xml
    and cgi-bin/ (the grandparent: pages in html/user and html/ops, as BOINC's
    web code finds ../../config.xml).  Apache's CGIs get BOINC_PROJECT_DIR
    from the project's SHORT.httpd.conf."""
    env = getenv("BOINC_PROJECT_DIR")
    candidates = [env] if env else [".", "..", "../.."]
    for directory in candidates:
        if is_file(join(directory, CONFIG_FILE)) and is_dir(join(directory, "cgi-bin")):
            return absolute(directory)
    if env:
        raise ConfigError("BOINC_PROJECT_DIR=%s is not a project directory" % env)
    raise ConfigError("Not in a project directory or subdirectory")


def short_hostname():
    """This machine's host name up to the first dot (as bin/start uses)."""
    return posix.uname().nodename.split(".")[0]


def file_signature(path):
    """What tells that a file changed: (inode, size, modification and change
    times in ns), or None if it is missing.  The change time moves with its
    owner, group and mode too: a config.xml the web server may no longer read
    is read again (and refused) rather than taken from the snapshot."""
    try:
        st = posix.stat(path)
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


# ---------------------------------------------------------------------------
# The snapshot

_FORMAT = 1
_TABLE_FILE = join(absolute(__file__).rpartition("/")[0], "config.py")


def snapshot_key(project_dir, aux):
    """What a parse of PROJECT's config depends on, stated now (before the
    parse reads the files): compared with a snapshot's, equal means the
    snapshot is that parse's result."""
    return (_FORMAT, project_dir, bool(aux), posix.uname().nodename,
            file_signature(join(project_dir, CONFIG_FILE)),
            file_signature(join(project_dir, CONFIG_AUX_FILE)) if aux else None,
            file_signature(_TABLE_FILE))


def snapshot_path(project_dir, aux):
    """Where the snapshot of PROJECT's config lives: its tmp_<host>
    directory (the CGIs' and the operator's; BOINC's default <tmp_dir>,
    whatever config.xml says, which is not known before the parse)."""
    return join(project_dir, "tmp_" + short_hostname(),
                "config.snapshot" if aux else "config_noaux.snapshot")


def _complete(key):
    """The key's files are there to parse (else the parse says what is wrong)."""
    return key[4] is not None and key[6] is not None


def load_snapshot(key):
    """The Config in the project's snapshot if it is the parse the files
    would give now (``key``: :func:`snapshot_key`, taken now), else None."""
    if not _complete(key):
        return None
    try:
        with open(snapshot_path(key[1], key[2]), "rb") as f:
            stored_key, values, daemons, tasks, limits = marshal.loads(f.read())
    except (OSError, EOFError, ValueError, TypeError):
        return None                 # none, or damaged: parse
    if stored_key != key:
        return None
    values[_ROWS + "daemons"] = daemons          # made into objects when read
    values[_ROWS + "tasks"] = tasks
    values[_ROWS + "max_jobs_in_progress"] = limits
    return Config(values)


def save_snapshot(cfg, key):
    """Write ``cfg`` (the parse made after ``key`` was taken) as the project's
    snapshot, atomically and readable as config.xml is (owner and group);
    nothing if its directory can't be written."""
    if not _complete(key):
        return
    values = {name: value for name, value in cfg.__dict__.items()
              if name not in ("daemons", "tasks", "max_jobs_in_progress")
              and not name.startswith(_ROWS)}
    try:
        data = marshal.dumps((
            key, values,
            [tuple(getattr(d, f) for f in d.__slots__) for d in cfg.daemons],
            [tuple(getattr(t, f) for f in t.__slots__) for t in cfg.tasks],
            _limits_rows(cfg.max_jobs_in_progress)))
    except ValueError:
        return                      # a value marshal can't hold: no snapshot
    path = snapshot_path(key[1], key[2])
    tmp = "%s.%d" % (path, posix.getpid())
    try:
        fd = posix.open(tmp, posix.O_WRONLY | posix.O_CREAT | posix.O_TRUNC, 0o640)
        try:
            posix.write(fd, data)
        finally:
            posix.close(fd)
        posix.replace(tmp, path)
    except OSError:
        try:
            posix.unlink(tmp)
        except OSError:
            pass


def _restore_all(class_name, rows):
    from boincpy import config_specs
    cls = getattr(config_specs, class_name)
    objs = []
    for row in rows:
        obj = object.__new__(cls)
        for name, value in zip(cls.__slots__, row):
            setattr(obj, name, value)
        objs.append(obj)
    return objs


def _limit_row(spec):
    if spec is None:
        return None
    return (spec.app_name, spec.line) + tuple(
        None if rsc is None else (rsc.jobs, rsc.per_proc)
        for rsc in (spec.total_limit, spec.cpu_limit, spec.gpu_limit))


def _limits_rows(limits):
    if limits is None:
        return None
    return (limits.path, _limit_row(limits.project),
            [(name, _limit_row(spec)) for name, spec in limits.apps.items()])


def _restore_limit(row):
    if row is None:
        return None
    from boincpy.config_specs import JobLimitSpec, RscJobLimit
    spec = JobLimitSpec(row[0], row[1])
    spec.total_limit, spec.cpu_limit, spec.gpu_limit = (
        None if rsc is None else RscJobLimit(*rsc) for rsc in row[2:])
    return spec


def _restore_limits(rows):
    if rows is None:
        return None
    from boincpy.config_specs import JobLimitsSpec
    limits = JobLimitsSpec(rows[0])
    limits.project = _restore_limit(rows[1])
    limits.apps = {name: _restore_limit(row) for name, row in rows[2]}
    return limits
