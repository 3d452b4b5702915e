"""The persistent mode's processes: a small preforking FastCGI server.

Apache's mod_proxy_fcgi hands the scheduler, the upload handler and the web
RPCs to a unix socket, PROJECT/fcgi/boincpy.sock; this module is what listens
there.  ``bin/start`` runs PROJECT/fcgi/boincpy.fcgi (written by
``server_mode persistent``), which calls :func:`main`: the master process

* is one of the project's daemons for bin/start (boincpy.tools.control adds
  it in persistent mode): its lock pid_HOST/boincpy_fcgi.lock, its pid in
  pid_HOST/boincpy_fcgi.pid, its output in log_HOST/boincpy_fcgi.log, and
  ``bin/stop`` stops it with SIGHUP;
* builds the :class:`boincpy.persistent.Application` once (the imports, the
  page table), binds the socket, then forks the configured number of
  workers; each one runs as the web server's user (``<httpd_user>``, like
  the CGIs) when the master is root, and serves one request at a time
  (:func:`boincpy.fcgi.run`);
* lists the workers that are ready (accepting) in pid_HOST/boincpy_fcgi.workers,
  which ``bin/start`` waits for and ``bin/status -v`` shows;
* replaces a worker that dies (a crash, a SIGKILL), and on SIGHUP or SIGTERM
  lets each worker finish its request and stops them all.

Why this rather than mod_fcgid: mod_fcgid reads a request's whole body before
its process sees any of it, so an upload cut short by a dropped connection
lost every byte (BOINC's upload protocol resumes from what the server kept)
and a body shorter than its Content-Length got mod_fcgid's own HTTP 500.
mod_proxy_fcgi passes the body on as it arrives: the upload handler writes the
bytes received so far, and a body cut short is Apache's 400, as with the
classic CGIs.  And the processes are up before the first request instead of
being started under load by the web server (a second's stall each).
"""

import os
import pwd
import select
import signal
import socket
import sys
import threading
import time
import traceback

from boincpy import fcgi
from boincpy.config import DaemonSpec, load_config
from boincpy.errors import ConfigError
from boincpy.persistent import Application
from boincpy.shmem import pid_alive

NAME = "boincpy_fcgi"
SOCKET = "boincpy.sock"             # in PROJECT/fcgi/
STOP_GRACE = 30.0                   # seconds a worker may take to finish its request
RESPAWN_PAUSE = 1.0                 # after a worker died before it was ready


def script_path(project_dir):
    """PROJECT/fcgi/boincpy.fcgi, the program bin/start runs (written by
    boincpy.tools.server_mode)."""
    return os.path.join(os.path.abspath(project_dir), "fcgi", "boincpy.fcgi")


def socket_path(project_dir):
    """PROJECT/fcgi/boincpy.sock, where Apache's mod_proxy_fcgi connects."""
    return os.path.join(os.path.abspath(project_dir), "fcgi", SOCKET)


def _pid_dir(project_dir):
    return load_config(project_dir, aux=False).pid_dir


def pid_path(project_dir):
    """pid_HOST/boincpy_fcgi.pid: the master's pid (as bin/start writes it)."""
    return os.path.join(_pid_dir(project_dir), NAME + ".pid")


def daemon_spec(cfg):
    """The master as one of bin/start's daemons (cfg: the project's Config)."""
    return DaemonSpec(script_path(cfg.project_dir), host=cfg.host, output=NAME + ".log",
                      pid_file=NAME + ".pid", lock_file=NAME + ".lock")


def workers_path(project_dir):
    """pid_HOST/boincpy_fcgi.workers: ``configured N``, then the ready
    workers' pids, one a line."""
    return os.path.join(_pid_dir(project_dir), NAME + ".workers")


def master_pid(project_dir):
    """The running master's pid, or None."""
    try:
        with open(pid_path(project_dir)) as f:
            pid = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    return pid if pid_alive(pid) else None


def workers(project_dir):
    """(configured number, pids of the workers up and accepting) of the
    running master; (0, []) if none runs."""
    if master_pid(project_dir) is None:
        return 0, []
    try:
        with open(workers_path(project_dir)) as f:
            words = f.read().split()
        configured, pids = int(words[1]), [int(word) for word in words[2:]]
    except (OSError, ValueError, IndexError):
        return 0, []
    return configured, [pid for pid in pids if pid_alive(pid)]


def wait_ready(project_dir, timeout=60.0):
    """Wait until the master runs with all its workers ready; True if so."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        configured, ready = workers(project_dir)
        if configured and len(ready) >= configured:
            return True
        time.sleep(0.05)
    return False


def stop(project_dir, timeout=STOP_GRACE + 10):
    """SIGHUP to the running master, and wait for it to end; False if none ran."""
    pid = master_pid(project_dir)
    if pid is None:
        return False
    os.kill(pid, signal.SIGHUP)
    deadline = time.monotonic() + timeout
    while pid_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    try:
        os.unlink(pid_path(project_dir))    # as bin/stop does
    except OSError:
        pass
    return True


def _log(severity, text):
    # BOINC's daemon log lines: local time, severity word, the message
    sys.stderr.write("%s [%s] %s %s\n" % (time.strftime("%d-%b-%Y %H:%M:%S"), NAME,
                                           severity, text))
    sys.stderr.flush()


def httpd_user(project_dir):
    """The project's <httpd_user> (www-data if unset): the web server's user,
    whom the CGIs and these workers run as."""
    name = load_config(project_dir, aux=False).raw.get("httpd_user") or "www-data"
    try:
        pwd.getpwnam(name)
    except KeyError:
        raise ConfigError("httpd_user %s in config.xml: no such user" % name) from None
    return name


class Master:
    """The supervising process: the socket, the workers, their replacement."""

    def __init__(self, project_dir, processes):
        self.project_dir = os.path.abspath(project_dir)
        self.processes = processes
        self.workers = {}           # pid -> ready (bool)
        self.stopping = False
        self.user = None
        if os.geteuid() == 0:
            entry = pwd.getpwnam(httpd_user(self.project_dir))
            self.user = entry.pw_uid, entry.pw_gid

    # -- start ----------------------------------------------------------------

    def bind(self):
        """The listening socket, owned by the web server's user when root."""
        path = socket_path(self.project_dir)
        try:
            os.unlink(path)             # left by a master that was killed
        except FileNotFoundError:
            pass
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old = os.umask(0o117)
        try:
            listener.bind(path)
        finally:
            os.umask(old)
        if self.user:
            os.chown(path, *self.user)
        listener.listen(128)
        return listener

    def serve(self):
        """Run until SIGHUP or SIGTERM; returns the exit status."""
        os.environ.setdefault("BOINC_PROJECT_DIR", self.project_dir)
        self.app = Application(self.project_dir)
        self.listener = self.bind()
        self.ready_r, self.ready_w = os.pipe()
        # the master's life line: only the master keeps its write end, so a
        # worker reads EOF from the other as soon as the master is gone
        self.life_r, self.life_w = os.pipe()
        self.master = os.getpid()
        for sig in (signal.SIGHUP, signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, self._stop)
        _log("normal", "Starting %d workers on %s" % (self.processes,
                                                       socket_path(self.project_dir)))
        try:
            self.supervise()
        finally:
            self.shutdown()
        return 0

    def _stop(self, signum, frame):
        self.stopping = True

    # -- workers ------------------------------------------------------------------

    def spawn(self):
        pid = os.fork()
        if pid:
            self.workers[pid] = False
            return pid
        status = 1
        try:
            self._worker()
            status = 0
        except SystemExit as exc:
            status = exc.code if isinstance(exc.code, int) else 0
        except BaseException:
            traceback.print_exc()
        finally:
            sys.stderr.flush()
            os._exit(status)

    def _worker(self):
        for sig in (signal.SIGHUP, signal.SIGINT):
            signal.signal(sig, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.close(self.ready_r)
        os.close(self.life_w)
        if self.user:
            os.setgroups([])
            os.setgid(self.user[1])
            os.setuid(self.user[0])
        _end_with(self.master, self.life_r)
        app = self.app
        _warm(app.resident)
        os.write(self.ready_w, b"%d\n" % os.getpid())
        os.close(self.ready_w)

        def respond(environ, stream):
            out = app.respond(environ, stream)
            return fcgi.NOT_FOUND if out is None else out
        try:
            fcgi.run(respond, self.listener)
        finally:
            app.resident.close()

    def write_workers(self):
        path = workers_path(self.project_dir)
        tmp = path + ".new"
        with open(tmp, "w") as f:
            f.write("configured %d\n" % self.processes)
            f.write("".join("%d\n" % pid for pid, ready in sorted(self.workers.items())
                            if ready))
        os.replace(tmp, path)

    def supervise(self):
        pending = b""
        next_spawn = 0.0
        while not self.stopping:
            now = time.monotonic()
            while len(self.workers) < self.processes and now >= next_spawn:
                self.spawn()
            try:
                readable, _, _ = select.select([self.ready_r], [], [], 0.2)
            except InterruptedError:
                readable = []
            changed = False
            if readable:
                pending += os.read(self.ready_r, 4096)
                *lines, pending = pending.split(b"\n")
                for line in lines:
                    pid = int(line)
                    if pid in self.workers:
                        self.workers[pid] = changed = True
            while self.workers:
                try:
                    pid, status = os.waitpid(-1, os.WNOHANG)
                except ChildProcessError:
                    break
                if not pid:
                    break
                was_ready = self.workers.pop(pid, None)
                if was_ready is None:
                    continue
                changed = True
                _log("CRITICAL" if not self.stopping else "normal",
                     "worker %d %s; starting another" % (pid, _ended(status)))
                if not was_ready:
                    next_spawn = time.monotonic() + RESPAWN_PAUSE
            if changed:
                self.write_workers()

    def shutdown(self):
        """Stop the workers (each after its request), remove the socket."""
        _log("normal", "Stopping %d workers" % len(self.workers))
        for pid in list(self.workers):
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + STOP_GRACE
        while self.workers and time.monotonic() < deadline:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid:
                self.workers.pop(pid, None)
            else:
                time.sleep(0.05)
        for pid in self.workers:
            _log("CRITICAL", "worker %d did not stop within %g s; killing it"
                 % (pid, STOP_GRACE))
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for path in (socket_path(self.project_dir), workers_path(self.project_dir)):
            try:
                os.unlink(path)
            except OSError:
                pass


def _warm(resident):
    """What a worker's first request would open, opened before it is ready:
    the configuration, the database connection, the feeder's job array (each
    one left to the first request if it can't be had now)."""
    try:
        cfg = resident.config()
    except Exception:                   # noqa: BLE001 -- the first request says what
        return
    for step in (resident.database, resident.job_array):
        try:
            step(cfg)
        except Exception as exc:        # noqa: BLE001 -- optional: the request retries
            _log("normal", "worker %d: %s at start (left to the first request): %s"
                 % (os.getpid(), step.__name__, exc))


def _end_with(master, life_r):
    """SIGTERM to this worker when its master dies: a worker left behind
    would hold its database connection on a socket no longer bound.  A
    thread waits on the read end of the master's life line, which gives EOF
    once no process holds its write end, however the master ended (SIGKILL
    included); a thread blocked in read costs the requests nothing."""
    if os.getppid() != master:          # it died before this worker got here
        raise SystemExit(0)

    def watch():
        try:
            while os.read(life_r, 64):
                pass
        except OSError:
            pass
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch, name="master-watch", daemon=True).start()


def _ended(status):
    if os.WIFSIGNALED(status):
        return "killed by signal %d" % os.WTERMSIG(status)
    return "exited with status %d" % os.waitstatus_to_exitcode(status)


def main(project_dir, processes):
    """The entry point of PROJECT/fcgi/boincpy.fcgi: serve the project's
    scheduler, upload handler and web RPCs in ``processes`` workers until
    SIGHUP or SIGTERM."""
    sys.exit(Master(project_dir, processes).serve())
