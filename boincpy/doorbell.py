"""Doorbells: wake a sleeping daemon the moment another process made work for it.

BOINC's daemons sleep a fixed ``--sleep_interval`` after a pass that found
nothing, so a job waits up to that long at every stage (feeder, transitioner,
validator, assimilator, file deleter).  Here each waiting daemon owns a named
pipe (FIFO); whoever has just committed work for it (the scheduler taking
jobs from the array or recording reports, the transitioner creating results
or marking a workunit for validation, ...) writes one byte to it, and the
daemon's ``select`` returns at once.  Nothing polls: a daemon with nothing to
do sleeps in the kernel until rung, or until its sleep interval is over, so
every BOINC option keeps its meaning and work made where no bell is rung
(another host, the C++ tools) is still found after ``--sleep_interval``.

Why a FIFO rather than a counter in the job array or a semaphore: a FIFO
can be slept on with ``select`` together with a timeout and costs no CPU
while idle; several rings while a pass runs collapse into one wake-up; a
ring to a daemon that is not running is a failed ``open`` and nothing else;
and it needs only the standard library's builtin modules (the scheduler CGI
pays for every import).

Where: the directory ``<job array segment path>.bells`` (so in ``/dev/shm``,
one per project and ``<shmem_key>``), one FIFO per daemon process, named
``DAEMON.PID`` (several ``--mod`` instances each get the ring).  The
directory and FIFOs get the job array's group and mode, so schedulers
running as the web server's user can ring.  FIFOs of processes that no
longer exist are removed by the next daemon of that name to start, and by
any daemon that stops; the last daemon to stop removes the directory.
"""

import errno
import posix     # not os: the scheduler rings, on a classic CGI's path (boincpy.hot_path.join)
import select
import time

from boincpy.hot_path import join
from boincpy.shmem import pid_alive, segment_mode_and_group, segment_path

# the names daemons ring each other by
FEEDER = "feeder"
TRANSITIONER = "transitioner"
VALIDATOR = "validator"
ASSIMILATOR = "assimilator"
FILE_DELETER = "file_deleter"


def bell_dir(cfg):
    """The project's doorbell directory."""
    return segment_path(cfg) + ".bells"


def ring(cfg, *names):
    """Wake every running daemon process of these ``names``; never fails
    (a daemon not running, or a directory we may not read, is no error)."""
    d = bell_dir(cfg)
    try:
        entries = posix.listdir(d)
    except OSError:
        return
    prefixes = tuple(n + "." for n in names)
    for entry in entries:
        if not entry.startswith(prefixes):
            continue
        try:
            fd = posix.open(join(d, entry), posix.O_WRONLY | posix.O_NONBLOCK)
        except OSError:
            continue        # ENXIO: its daemon died; ENOENT: it just left
        try:
            posix.write(fd, b"!")
        except OSError:
            pass            # EAGAIN: full, so already rung
        finally:
            posix.close(fd)


class Doorbell:
    """The FIFO this daemon process sleeps on (see the module docstring)."""

    def __init__(self, cfg, name):
        self.path = None
        self.fd = None
        self.dir = bell_dir(cfg)
        mode, gid = segment_mode_and_group(cfg)
        path = join(self.dir, "%s.%d" % (name, posix.getpid()))
        for attempt in range(3):
            self._make_dir(mode, gid)
            self._remove_dead(self.dir, name)
            try:
                posix.unlink(path)
            except FileNotFoundError:
                pass
            try:
                posix.mkfifo(path, 0o600)
                break
            except FileNotFoundError:
                if attempt == 2:        # the last daemon leaving removed the directory
                    raise
        _give_group(path, gid)
        posix.chmod(path, mode)
        # O_RDWR: the pipe always has a writer, so select never sees EOF,
        # and ringers always find a reader
        self.fd = posix.open(path, posix.O_RDWR | posix.O_NONBLOCK)
        self.path = path

    def _make_dir(self, mode, gid):
        dir_mode = 0o755 if mode & 0o002 else 0o750
        try:
            posix.mkdir(self.dir, dir_mode)
        except FileExistsError:
            return
        _give_group(self.dir, gid)
        posix.chmod(self.dir, dir_mode)

    @staticmethod
    def _remove_dead(d, name=None):
        """Remove the FIFOs of ``name`` (None: any name) whose process is gone."""
        try:
            entries = posix.listdir(d)
        except OSError:
            return
        for entry in entries:
            base, _, pid = entry.rpartition(".")
            if (name is None or base == name) and pid.isdigit() and not pid_alive(int(pid)):
                try:
                    posix.unlink(join(d, entry))
                except OSError:
                    pass

    def drain(self):
        """Forget rings received so far; True if there were any."""
        rung = False
        while True:
            try:
                data = posix.read(self.fd, 4096)
            except BlockingIOError:
                return rung
            if not data:
                return rung
            rung = True

    def wait(self, seconds, stop=None):
        """Sleep up to ``seconds``; return True as soon as rung (the rings
        are consumed), False at the end of the time or when ``stop()``
        (checked every second, as BOINC's daemons check stop_daemons)
        becomes true."""
        deadline = time.monotonic() + seconds
        while True:
            if stop is not None and stop():
                return False
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            ready, _, _ = select.select([self.fd], [], [], min(1.0, left))
            if ready and self.drain():
                return True

    def close(self):
        """Stop listening and remove the FIFO, and the directory if it was
        the last (safe to call twice)."""
        if self.fd is not None:
            posix.close(self.fd)
            self.fd = None
        if self.path is not None:
            try:
                posix.unlink(self.path)
            except OSError:
                pass
            self.path = None
            self._remove_dead(self.dir)         # of daemons that were killed
            try:
                posix.rmdir(self.dir)
            except OSError:
                pass            # other daemons' bells are in it


def _give_group(path, gid):
    if gid is not None and gid != posix.getegid():
        try:
            posix.chown(path, -1, gid)
        except OSError as exc:
            if exc.errno not in (errno.EPERM, errno.EACCES):
                raise
