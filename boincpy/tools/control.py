"""bin/start, bin/stop, bin/status: run the project's daemons and periodic tasks.

BOINC's ``sched/start``, with the same options and files.  The name the
program is invoked by selects the default action: ``start`` = ``--enable``,
``stop`` = ``--disable``, ``status`` = ``--status``.

* ``<daemons>`` and ``<tasks>`` of config.xml whose ``<host>`` (default: the
  ``<host>`` option) is this machine's short host name are run here; the main
  host then runs the same command on the other hosts through ``ssh_exec``.
* A daemon is started detached (double fork, new session) with working
  directory ``tmp_HOST``, ``PATH`` starting with ``PROJECT/bin``, stdin from
  /dev/null, stdout and stderr appended to ``log_HOST/<output or NAME.log>``,
  its pid in ``pid_HOST/<pid_file or NAME.pid>``, and an exclusive ``lockf``
  lock on ``pid_HOST/<lock_file or NAME.lock>`` that it holds as long as it
  runs: a second start finds the lock taken and starts no second copy; a pid
  file left by a dead daemon (lock free) is simply overwritten.
* A task runs when ``now >= last_run + period`` (``run_state_HOST.xml``
  records ``last_run`` and whether the project is enabled), with its output
  appended to ``log_HOST/<output or NAME.out>`` and the lock
  ``pid_HOST/<lock_file or OUTPUT.lock>``; disabled projects run only
  ``<always_run>`` tasks.
* ``stop`` writes ``stop_sched`` (the scheduler answers "down for
  maintenance") and ``stop_daemons`` (daemons exit at their next check),
  sends SIGHUP to every process named in ``pid_HOST/*.pid`` (removing the
  files), waits for them, and after ``--stop-timeout`` seconds (default 60)
  sends SIGKILL, saying so.  ``start`` removes ``stop_daemons``, starts the
  daemons, and once they had 5 s to start removes ``stop_sched``.
  ``stop_upload`` (uploads refused) is, as in BOINC, the operator's to create
  and remove; status shows it.
* ``status`` prints ENABLED/DISABLED; with ``-v`` a table of the daemons
  (pid, running / NOT RUNNING, lock, disabled, command) and the tasks (last
  run, period, next run, lock, disabled, command).
* In persistent mode (``bin/server_mode persistent``) the main host has one
  more daemon, the FastCGI server PROJECT/fcgi/boincpy.fcgi
  (:mod:`boincpy.fcgi_pool`); ``start`` returns once its workers are all
  up, and ``status -v`` lists them with their pids.

``<project_user_name>`` makes the commands refuse to run as another user.
"""

import fcntl
import getpass
import glob
import os
import shlex
import signal
import subprocess
import sys
import time

import click
import psutil

from boincpy import fcgi_pool
from boincpy.config import load_config
from boincpy.errors import BoincpyError, ConfigError
from boincpy.files import atomic_write, make_host_log_dir
from boincpy.tools import server_mode
from boincpy.xml import tree, xml_escape

STOP_DAEMONS = "stop_daemons"
STOP_SCHED = "stop_sched"
STOP_UPLOAD = "stop_upload"
TRIGGER_FILES = (STOP_DAEMONS, STOP_SCHED, STOP_UPLOAD, "reread_db")
CACHED_HOME_PAGE = os.path.join("html", "cache", "65", "index.php")
FEEDER_STARTUP_SECONDS = 5          # before stop_sched is removed
PERSISTENT_STARTUP_SECONDS = 60     # bin/start waits for the FastCGI workers
DEFAULT_STOP_TIMEOUT = 60.0

USAGE = """Syntax: %s [options] [command]
   Starts or stops BOINC daemons and tasks.

Commands:
   --enable  (-e)     Set BOINC to ENABLED mode and start daemons
   --cron    (-c)     If ENABLED, start daemons and run tasks
                      Intended to be run from real cron every 5 min.
   --cron-tasks       If ENABLED run tasks only and do not start daemons
                      Intended to be run from real cron every 5 min.

   --disable (-d)     Set BOINC to DISABLED mode and stop daemons
   --status  (-s)     Show status.
   --show-config      Show configuration

Options:
   --quiet   (-q)     Operate quietly, even if STDOUT is a tty.
   --verbose (-v)     Operate verbosely, even if STDOUT is not a tty.

   --config-file=     Use specified file instead of PROJECT/config.xml
   --run-state-file=  Use specified file instead of PROJECT/run_state_HOST.xml
   --fork-delay=      Seconds to sleep between daemon forks instead of 0.1
   --ignore-timestamps    Ignore timestamps; for cron mode, runs all tasks now
   --prune-run-state  Delete unused timestamps in run_state.xml (always done)
   --stop-timeout=    Seconds stop waits for daemons before SIGKILL (default 60)
"""


class ControlError(BoincpyError):
    """start/stop/status can't go on (message for the operator, exit 1)."""


# ---------------------------------------------------------------------------
# run_state_HOST.xml

class RunState:
    """``run_state_HOST.xml``: whether the project is enabled, and when each
    task last ran (tasks not looked up by a task run are pruned)."""

    def __init__(self, path):
        self.path = path
        self.enabled = False
        self.last_run = {}        # task command -> Unix time
        self._touched = set()

    @classmethod
    def read(cls, path):
        state = cls(path)
        try:
            with open(path, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            return state
        except OSError as exc:
            raise ControlError("can't read %s: %s" % (path, exc.strerror)) from None
        try:
            root = tree.parse(data)
        except tree.XmlError as exc:
            raise ControlError("%s: malformed XML (%s); fix or remove it" % (path, exc)) from None
        enabled = tree.text(root, "enabled") or "0"
        try:
            state.enabled = int(float(enabled)) != 0
        except ValueError:
            raise ControlError("%s: <enabled> is %r, not 0 or 1" % (path, enabled)) from None
        for task in root.iterfind("tasks/task"):
            try:
                state.last_run[tree.text(task, "cmd")] = float(tree.text(task, "last_run") or "0")
            except ValueError:
                state.last_run[tree.text(task, "cmd")] = 0.0
        return state

    def lookup(self, cmd):
        """Last run time of a task (0 if never); marks it as still configured."""
        self._touched.add(cmd)
        return self.last_run.setdefault(cmd, 0.0)

    def prune(self):
        """Forget tasks not looked up since the last prune."""
        self.last_run = {c: t for c, t in self.last_run.items() if c in self._touched}

    def write(self):
        lines = ['<?xml version="1.0" ?>', "<boinc>", "    <tasks>"]
        for cmd, last in self.last_run.items():
            lines += ["        <task>", "            <cmd>%s</cmd>" % xml_escape(cmd),
                      "            <last_run>%d</last_run>" % int(last), "        </task>"]
        lines += ["    </tasks>", "    <enabled>%d</enabled>" % (1 if self.enabled else 0),
                  "</boinc>"]
        atomic_write(self.path, "\n".join(lines) + "\n", 0o664)


# ---------------------------------------------------------------------------
# Context: what every action needs

class Control:
    """One invocation of start/stop/status."""

    def __init__(self, cfg, run_state, verbose, fork_delay=0.1, ignore_timestamps=False,
                 stop_timeout=DEFAULT_STOP_TIMEOUT, out=None, err=None):
        self.cfg = cfg
        self.run_state = run_state
        self.verbose = verbose
        self.verbose_daemon_run = False
        self.fork_delay = fork_delay
        self.ignore_timestamps = ignore_timestamps
        self.stop_timeout = stop_timeout
        self.out = out or sys.stdout
        self.err = err or sys.stderr
        self.host = cfg.local_host
        self.now = int(time.time())
        self.project = cfg.project_dir
        self.bin_dir = os.path.join(self.project, "bin")
        self.log_dir = cfg.host_log_dir      # bin/start: log_<this host>, never <log_dir>
        self.pid_dir = cfg.pid_dir
        self.tmp_dir = cfg.tmp_dir
        self.started = 0

    def say(self, *words):
        print(*words, file=self.out)
        self.out.flush()

    def warn(self, *words):
        print(*words, file=self.err)
        self.err.flush()

    def path(self, name):
        return os.path.join(self.project, name)

    def my_daemons(self):
        daemons = [d for d in self.cfg.daemons if d.host == self.host]
        pool = persistent_daemon(self.cfg)
        if pool is not None and pool.host == self.host:
            daemons.append(pool)
        return daemons

    def my_tasks(self):
        return [t for t in self.cfg.tasks if t.host == self.host]

    # -- file names ------------------------------------------------------------

    def log_path(self, spec):
        return os.path.join(self.log_dir, spec.output)

    def pid_path(self, spec):
        return os.path.join(self.pid_dir, spec.pid_file)

    def lock_path(self, spec):
        return os.path.join(self.pid_dir, spec.lock_file)

    # -- trigger files -----------------------------------------------------------

    def write_trigger(self, name):
        with open(self.path(name), "w") as f:
            f.write("<stop/>\n")

    def remove_trigger(self, name):
        try:
            os.unlink(self.path(name))
        except FileNotFoundError:
            pass

    def remove_cached_home_page(self):
        path = self.path(CACHED_HOME_PAGE)
        if os.path.exists(path):
            self.say("removing " + path)
            try:
                os.unlink(path)
            except OSError as exc:
                self.say("Couldn't unlink %s:" % path, exc)

    # -- daemons -------------------------------------------------------------------

    def start_daemons(self):
        """Start this host's enabled daemons not already running; False if the
        host has no daemons at all."""
        if self.verbose:
            self.say("Starting daemons")
        self.remove_trigger(STOP_DAEMONS)
        found_any = False
        for spec in self.my_daemons():
            found_any = True
            if not spec.disabled:
                self.start_daemon(spec)
        return found_any

    def start_daemon(self, spec):
        """Start one daemon detached; True if a process was started."""
        lock = self.lock_path(spec)
        if lock_is_held(lock):
            if self.verbose:
                self.warn("  Daemon already running: ", spec.cmd)
            return False
        if not self._can_exec(spec, "  "):
            return False
        if self.verbose or self.verbose_daemon_run:
            self.say("  Starting daemon:", spec.cmd)
        self._flush()
        pid = os.fork()
        if pid:
            os.waitpid(pid, 0)          # the first child exits once the second forked
            time.sleep(self.fork_delay)
            self.started += 1
            return True
        # first child: new session, then fork again so the daemon has no parent here
        try:
            os.setsid()
            if os.fork():
                os._exit(0)
            self._daemon_child(spec, lock)
        except BaseException as exc:
            _child_failed(spec, exc)
        finally:
            os._exit(1)

    def _daemon_child(self, spec, lock):
        os.chdir("/")
        os.umask(0o002)
        fd = take_lock(lock)
        if fd is None:
            if self.verbose:
                os.write(2, ("  Daemon already running:  %s\n" % spec.cmd).encode())
            os._exit(0)
        redirect(self.log_path(spec))
        with open(self.pid_path(spec), "w") as f:
            f.write("%d\n" % os.getpid())
        os.write(1, ("[%s] Executing command: %s\n" % (local_timestamp(self.now), spec.cmd))
                 .encode())
        self._exec(spec)

    def stop_daemons(self):
        """stop_daemons trigger, SIGHUP to every pid file's process, wait
        (SIGKILL after stop_timeout)."""
        if self.verbose:
            self.say("Stopping all daemons")
        self.write_trigger(STOP_DAEMONS)
        procs = []
        for pid_file in sorted(glob.glob(os.path.join(self.pid_dir, "*.pid"))):
            pid = read_pid(pid_file)
            try:
                written = os.stat(pid_file).st_mtime
            except OSError:
                written = None
            try:
                os.unlink(pid_file)
            except OSError as exc:
                self.say("Couldn't unlink %s:" % pid_file, exc)
            proc = daemon_process(pid, written)
            if proc is None:
                continue
            try:
                proc.send_signal(signal.SIGHUP)
            except Exception as exc:            # psutil.NoSuchProcess, AccessDenied
                if not _gone(exc):
                    self.warn("Warning: couldn't kill pid %d:" % pid, exc)
                continue
            if self.verbose:
                self.say("  Killed process", pid)
            procs.append(proc)
        self.wait_for_exit(procs)
        if self.verbose and not procs:
            self.say("  (No processes stopped)")

    def wait_for_exit(self, procs):
        if not procs:
            return
        if self.verbose:
            self.out.write("  Waiting for %s to end: " % " ".join(str(p.pid) for p in procs))
            self.out.flush()
        deadline = time.monotonic() + self.stop_timeout
        alive = procs
        while alive and time.monotonic() < deadline:
            gone, alive = psutil.wait_procs(alive, timeout=min(0.5, max(
                0.01, deadline - time.monotonic())))
            if alive and self.verbose:
                self.out.write(".")
                self.out.flush()
        if self.verbose:
            self.say(" ok" if not alive else "")
        for proc in alive:
            self.warn("  Process %d (%s) did not exit within %g s of SIGHUP; sending SIGKILL"
                      % (proc.pid, _describe(proc), self.stop_timeout))
            try:
                proc.kill()
            except Exception:
                pass
        if alive:
            psutil.wait_procs(alive, timeout=5)

    # -- tasks -------------------------------------------------------------------

    def run_tasks(self):
        """Run this host's due tasks (all if ENABLED, else only <always_run>)."""
        if self.verbose:
            self.say("Running tasks")
        state = self.run_state
        state._touched = set()
        for spec in self.my_tasks():
            if spec.disabled:
                continue
            if spec.always_run or state.enabled:
                self.run_task(spec)
        state.prune()

    def run_task(self, spec):
        last = self.run_state.lookup(spec.cmd)
        if not (self.ignore_timestamps or self.now >= last + spec.period):
            if self.verbose:
                self.say("  Not running task because not time yet:", spec.cmd)
            return False
        if self.verbose:
            self.say("  Running task:", spec.cmd)
        self.run_state.last_run[spec.cmd] = self.now
        self._flush()
        pid = os.fork()
        if pid:
            time.sleep(self.fork_delay)
            return True
        try:
            fd = take_lock(self.lock_path(spec))
            if fd is None:
                if self.verbose:
                    os.write(2, ("    Task currently running! (%s)\n" % spec.cmd).encode())
                os._exit(0)
            if not self._can_exec(spec, "    "):
                os._exit(1)
            redirect(self.log_path(spec))
            self._exec(spec)
        except BaseException as exc:
            _child_failed(spec, exc)
        finally:
            os._exit(1)

    # -- exec ------------------------------------------------------------------------

    def _can_exec(self, spec, indent):
        if spec.use_shell:
            self.warn(indent + "Using shell encapsulation for: ", spec.cmd)
            return True
        try:
            needs_shell = contains_shell_characters(spec.cmd)
        except ValueError as exc:
            self.warn(indent + "Couldn't start: ", spec.cmd, " (%s)" % exc)
            return False
        if needs_shell:
            self.warn(indent + "Couldn't start: ", spec.cmd,
                      " <use_shell> is required but was not specified")
            return False
        return True

    def _exec(self, spec):
        """Replace this (child) process by the command, in tmp_HOST."""
        os.chdir(self.tmp_dir)
        try:
            if spec.use_shell:
                # the shell passes the stop signals on to the command
                os.execl("/bin/sh", "sh", "-c",
                         'trap "kill 0" INT QUIT HUP TERM; ' + spec.cmd + "& wait")
            args = command_words(spec.cmd)
            os.execvp(args[0], args)
        except OSError as exc:
            os.write(2, ("Couldn't execute '%s': %s\n" % (spec.cmd, exc)).encode())
        os._exit(1)

    def _flush(self):
        for stream in (self.out, self.err, sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:
                pass

    # -- the actions -------------------------------------------------------------

    def enable(self):
        """start / --enable: ENABLED, start daemons, then let the scheduler work."""
        if self.verbose:
            self.say("Staying in ENABLED mode" if self.run_state.enabled
                     else "Entering ENABLED mode")
        self.run_state.enabled = True
        if not self.start_daemons():
            self.say("No daemons for this host found - check host name in config.xml")
        self.wait_for_persistent()
        # let the feeder make its job cache before the scheduler takes requests
        if self.started and os.path.exists(self.path(STOP_SCHED)):
            time.sleep(FEEDER_STARTUP_SECONDS)
        self.remove_trigger(STOP_SCHED)
        self.remove_cached_home_page()

    def wait_for_persistent(self):
        """In persistent mode, return once the FastCGI workers are all up (so
        no request waits for one to start), or say they are not."""
        pool = persistent_daemon(self.cfg)
        if pool is None or pool.host != self.host or pool.disabled:
            return
        if fcgi_pool.wait_ready(self.project, PERSISTENT_STARTUP_SECONDS):
            if self.verbose:
                configured, ready = fcgi_pool.workers(self.project)
                self.say("  FastCGI workers up:", " ".join(map(str, ready)))
        else:
            self.warn("  FastCGI workers not up within %d s: see %s" % (
                PERSISTENT_STARTUP_SECONDS, self.log_path(pool)))

    def cron(self):
        """--cron: if ENABLED start what isn't running and run due tasks;
        else run only <always_run> tasks."""
        if self.verbose:
            self.say("Verbose cron-start: status ==",
                     "ENABLED" if self.run_state.enabled else "DISABLED")
        self.verbose_daemon_run = True
        if self.run_state.enabled:
            self.start_daemons()
        self.run_tasks()

    def cron_tasks(self):
        """--cron-tasks: run due tasks only."""
        if self.verbose:
            self.say("Verbose cron-start: status ==",
                     "ENABLED" if self.run_state.enabled else "DISABLED")
        self.run_tasks()

    def disable(self):
        """stop / --disable: DISABLED, scheduler down, daemons stopped."""
        if self.verbose:
            self.say("Entering DISABLED mode" if self.run_state.enabled
                     else "Staying in DISABLED mode")
        self.run_state.enabled = False
        self.write_trigger(STOP_SCHED)      # first, so no request finds the job cache gone
        self.stop_daemons()
        self.remove_cached_home_page()

    def status(self):
        """status / --status: ENABLED or DISABLED; -v: daemons and tasks."""
        self.say("BOINC is ENABLED" if self.run_state.enabled else "BOINC is DISABLED")
        if not self.verbose:
            return
        triggers = [t for t in TRIGGER_FILES if os.path.exists(self.path(t))]
        if triggers:
            self.say("Trigger files present:", " ".join(triggers))
        self.say()
        self.say("DAEMON  pid  status      lockfile disabled  commandline")
        for n, spec in enumerate(self.my_daemons(), 1):
            pid = read_pid(self.pid_path(spec))
            if not pid:
                running = "           "
            elif pid_running(pid):
                running = " running   "
            else:
                running = "NOT RUNNING"
            lock = " locked " if lock_is_held(self.lock_path(spec)) else "UNLOCKED"
            disabled = " yes    " if spec.disabled else " no     "
            self.say("  %2d" % n, " %5d" % pid, running, lock, disabled, " ", spec.cmd)
        if persistent_daemon(self.cfg) is not None:
            configured, ready = fcgi_pool.workers(self.project)
            self.say()
            self.say("FastCGI workers: %d of %d up%s" % (
                len(ready), configured, ": pids " + " ".join(map(str, ready)) if ready else ""))
        self.say()
        self.say("TASK       last run       period          next run        lock file "
                 "disabled  commandline")
        for n, spec in enumerate(self.my_tasks(), 1):
            last = self.run_state.lookup(spec.cmd)
            next_run = last + spec.period
            lock = " LOCKED " if lock_is_held(self.lock_path(spec)) else "unlocked"
            disabled = " yes    " if spec.disabled else " no     "
            self.say("  %2d" % n, (local_timestamp(last) if last else "?").center(20),
                     spec.period_text.ljust(10),
                     ("NOW" if next_run <= self.now else local_timestamp(next_run)).center(20),
                     lock, disabled, " ", spec.cmd)

    def show_config(self):
        """--show-config: where things are, and what runs on this host."""
        cfg = self.cfg
        for label, value in (("project", self.project), ("config file", cfg.path),
                             ("main host", cfg.host), ("this host", self.host),
                             ("run state", self.run_state.path), ("log dir", self.log_dir),
                             ("pid dir", self.pid_dir), ("tmp dir", self.tmp_dir),
                             ("bin dir", self.bin_dir)):
            self.say("%-12s %s" % (label + ":", value))
        self.say("daemons on this host:")
        for spec in self.my_daemons():
            self.say("  %s%s  (log %s, pid %s, lock %s)" % (
                spec.cmd, " [disabled]" if spec.disabled else "", self.log_path(spec),
                self.pid_path(spec), self.lock_path(spec)))
        self.say("tasks on this host:")
        for spec in self.my_tasks():
            self.say("  %s every %s%s%s  (output %s)" % (
                spec.cmd, spec.period_text, " [disabled]" if spec.disabled else "",
                " [always_run]" if spec.always_run else "", self.log_path(spec)))


# ---------------------------------------------------------------------------
# Process and lock helpers

def start_persistent(project_dir, timeout=PERSISTENT_STARTUP_SECONDS):
    """Start only the FastCGI server of a project in persistent mode, as
    bin/start does (its lock, pid file and log), unless it runs, and wait for
    its workers: for a private Apache (boincpy.tools.httpd), which leaves the
    other daemons to its user.  False in CGI mode."""
    cfg = load_config(project_dir)
    pool = persistent_daemon(cfg)
    if pool is None:
        return False
    try:
        for d in (cfg.tmp_dir, cfg.pid_dir):
            os.makedirs(d, exist_ok=True)
        make_host_log_dir(cfg)
    except OSError as exc:
        raise ControlError("can't create %s: %s" % (exc.filename, exc.strerror)) from None
    Control(cfg, None, False).start_daemon(pool)
    if not fcgi_pool.wait_ready(cfg.project_dir, timeout):
        raise ControlError("the FastCGI workers of %s are not up within %g s: see %s"
                           % (cfg.project_dir, timeout, os.path.join(cfg.host_log_dir,
                                                                     pool.output)))
    return True


def persistent_daemon(cfg):
    """In persistent mode (bin/server_mode), the project's FastCGI server
    (boincpy.fcgi_pool) as one more daemon of the main host; else None."""
    try:
        with open(server_mode.conf_path(cfg.project_dir), encoding="utf-8") as f:
            mode = server_mode.current_mode(f.read())
    except (OSError, BoincpyError):
        return None
    return fcgi_pool.daemon_spec(cfg) if mode == "persistent" else None


def take_lock(path):
    """Open ``path`` and take an exclusive lockf lock on it, inherited by exec;
    the fd, or None if another process holds it."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o664)
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    os.set_inheritable(fd, True)
    return fd


def lock_is_held(path):
    """True if another process holds a lock on ``path`` (the file is left alone)."""
    try:
        fd = os.open(path, os.O_RDWR)
    except OSError:
        return False
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)        # closing also drops the test lock
    return False


def redirect(output):
    """stdin from /dev/null; stdout and stderr appended to ``output``."""
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    out = os.open(output, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o664)
    os.dup2(out, 1)
    os.dup2(out, 2)
    os.close(null)
    os.close(out)


def read_pid(path):
    """The pid in a pid file, 0 if absent or unreadable."""
    try:
        with open(path) as f:
            return int(f.readline().strip())
    except (OSError, ValueError):
        return 0


def pid_running(pid):
    """True if process ``pid`` exists and is not a zombie."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def daemon_process(pid, pid_file_time):
    """The psutil.Process named by a pid file, or None if it is gone or the pid
    now belongs to a process started after the file was written (pid reuse)."""
    if pid <= 0:
        return None
    try:
        proc = psutil.Process(pid)
        if proc.status() == psutil.STATUS_ZOMBIE:
            return None
        if pid_file_time is not None and proc.create_time() > pid_file_time + 1:
            return None
        return proc
    except psutil.Error:
        return None


def _child_failed(spec, exc):
    try:
        os.write(2, ("Couldn't start '%s': %s\n" % (spec.cmd, exc)).encode())
    except OSError:
        pass


def _gone(exc):
    return isinstance(exc, psutil.NoSuchProcess)


def _describe(proc):
    try:
        return " ".join(proc.cmdline()) or proc.name()
    except Exception:
        return "?"


def contains_shell_characters(command):
    """True if the command has a pipe or a redirection (needs <use_shell>)."""
    for word in shlex.split(command):
        if word in ("|", ">", ">>", "<"):
            return True
        if word.startswith(("1>", "2>", "&>")):
            return True
    return False


def command_words(command):
    """The command split as a shell would (a backslash-newline continues a line)."""
    return [w[1:] if w.startswith("\n") else w for w in shlex.split(command)]


def local_timestamp(t):
    return time.strftime("%Y/%m/%d %H:%M:%S", time.localtime(t))


# ---------------------------------------------------------------------------
# Command line

def _find_project(argv0):
    """BOINC_PROJECT_DIR, else ., .., ../.. or the script's parent directory,
    whichever holds config.xml (as BOINC's boinc_project_path)."""
    env = os.environ.get("BOINC_PROJECT_DIR")
    if env:
        return env
    script_parent = os.path.join(os.path.dirname(os.path.abspath(argv0)), os.pardir)
    for d in (os.curdir, os.pardir, os.path.join(os.pardir, os.pardir), script_parent):
        if os.path.exists(os.path.join(d, "config.xml")):
            return os.path.abspath(d)
    return None


def main(argv=None, prog=None):
    """Entry point of bin/start, bin/stop and bin/status; returns the exit status."""
    argv = sys.argv[1:] if argv is None else argv
    prog = prog or os.path.basename(sys.argv[0])
    try:
        return _main(argv, prog)
    except BoincpyError as exc:
        sys.stdout.flush()
        sys.stderr.write("%s: %s\n" % (prog, exc.message))
        return exc.exit_code or 1


_ACTIONS = {"start": "enable", "stop": "disable", "status": "status"}


def _action_flag(decls, action):
    """A flag selecting ``action``; the last such flag given wins, as with
    BOINC's getopt loop (click calls the callbacks in command-line order)."""

    def chosen(ctx, param, value):
        if value:
            ctx.meta["control_action"] = action
    return click.Option(decls + ["action_" + action], is_flag=True, callback=chosen,
                        expose_value=False)


def _seconds(ctx, param, value):
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        raise click.BadParameter("needs a number of seconds, not %r" % value) from None


def _command():
    """start/stop/status's options, spelled as BOINC's sched/start spells them."""
    params = [
        _action_flag(["-e", "--enable", "--start"], "enable"),
        _action_flag(["-c", "--cron"], "cron"),
        _action_flag(["--cron-tasks"], "cron_tasks"),
        _action_flag(["-d", "--disable", "--stop", "-k", "--kill"], "disable"),
        _action_flag(["-s", "--status"], "status"),
        _action_flag(["--show-config"], "show_config"),
        click.Option(["-q", "--quiet", "quiet"], is_flag=True),
        click.Option(["-v", "--verbose", "verbose"], is_flag=True),
        click.Option(["-h", "--help", "-?", "show_help"], is_flag=True),
        click.Option(["--ignore-timestamps", "ignore_timestamps"], is_flag=True),
        click.Option(["--prune-run-state", "prune_run_state"], is_flag=True),
        click.Option(["--config-file", "config_file"]),
        click.Option(["--run-state-file", "run_state_file"]),
        click.Option(["--fork-delay", "fork_delay"], callback=_seconds),
        click.Option(["--stop-timeout", "stop_timeout"], callback=_seconds),
    ]

    def parsed(**values):
        values["action"] = click.get_current_context().meta.get("control_action")
        return values
    return click.Command("start", params=params, callback=parsed, add_help_option=False)


def _main(argv, prog):
    invocation_dir = os.getcwd()
    try:
        opts = _command().main(args=list(argv), prog_name=prog, standalone_mode=False)
    except click.ClickException as exc:
        sys.stderr.write("%s\nUse '%s --help' for help\n" % (exc.format_message(), prog))
        return 1
    if opts["show_help"]:
        sys.stderr.write(USAGE % prog)
        if prog in _ACTIONS:
            sys.stderr.write("Based on the invocation name as `%s', the default action "
                             "is --%s.\n" % (prog, _ACTIONS[prog]))
        return 1
    action = opts["action"] or _ACTIONS.get(prog)
    # -q and -v: the later wins in BOINC; here -v wins over -q given with it
    verbose = True if opts["verbose"] else False if opts["quiet"] else sys.stdout.isatty()
    ignore_timestamps = opts["ignore_timestamps"]
    fork_delay = 0.1 if opts["fork_delay"] is None else opts["fork_delay"]
    stop_timeout = (DEFAULT_STOP_TIMEOUT if opts["stop_timeout"] is None
                    else opts["stop_timeout"])
    config_file, run_state_file = opts["config_file"], opts["run_state_file"]
    if not action:
        raise ControlError('No command specified and script name is not "start", "stop", '
                           'or "status"')

    project = _find_project(sys.argv[0])
    if project is None and config_file:
        project = os.path.dirname(os.path.abspath(config_file))
    if project is None:
        raise ConfigError("no config.xml here, in .., or beside bin/: run from the project "
                          "directory or set BOINC_PROJECT_DIR")
    cfg = load_config(project, os.path.abspath(config_file) if config_file else "config.xml")
    if cfg.project_user_name and getpass.getuser() != cfg.project_user_name:
        raise ControlError('The script must be run by user "%s"' % cfg.project_user_name)
    host = cfg.local_host
    if run_state_file is None:
        run_state_file = os.path.join(cfg.project_dir, "run_state_%s.xml" % host)
    run_state = RunState.read(run_state_file)

    os.chdir(cfg.project_dir)
    for d in (cfg.tmp_dir, cfg.pid_dir):
        try:
            os.makedirs(d, exist_ok=True)
        except OSError as exc:
            raise ControlError("can't create %s: %s" % (d, exc.strerror)) from None
    try:
        make_host_log_dir(cfg)
    except OSError as exc:
        raise ControlError("can't create %s: %s" % (cfg.host_log_dir, exc.strerror)) from None
    bin_dir = os.path.join(cfg.project_dir, "bin")
    os.environ["PATH"] = bin_dir + os.pathsep + os.environ["PATH"] if os.environ.get(
        "PATH") else bin_dir
    os.environ.setdefault("BOINC_PROJECT_DIR", cfg.project_dir)

    start_lock = os.path.join(cfg.pid_dir, "start.lock." + host)
    lock_fd = take_lock(start_lock)
    if lock_fd is None:
        sys.stderr.write("start is currently running!\n")
        return 1
    os.set_inheritable(lock_fd, False)
    try:
        ctl = Control(cfg, run_state, verbose, fork_delay, ignore_timestamps, stop_timeout)
        getattr(ctl, action)()
        run_state.write()
        if cfg.host == host:
            _run_on_other_hosts(cfg, host, prog, argv, verbose, invocation_dir)
    finally:
        try:
            os.unlink(start_lock)
        except OSError:
            pass
        os.close(lock_fd)
    return 0


def _run_on_other_hosts(cfg, host, prog, argv, verbose, invocation_dir):
    """The main host runs the same command on the other hosts named in <daemons>/<tasks>."""
    others = []
    for spec in list(cfg.tasks) + list(cfg.daemons):
        if spec.host and spec.host != host and spec.host not in others:
            others.append(spec.host)
    if not others:
        return
    if cfg.raw.get("project_dir"):
        cwd, cmd = os.path.join(cfg.raw["project_dir"], "bin"), "./" + prog
    else:
        cwd, cmd = invocation_dir, sys.argv[0]
    ssh = cfg.ssh_exec or "/usr/bin/ssh"
    for other in others:
        remote = [ssh, other, "cd", cwd, " && ", cmd] + list(argv)
        if verbose:
            remote.append("-v")
            print("running ", " ".join(remote))
            sys.stdout.flush()
        try:
            subprocess.call(remote)
        except OSError as exc:
            sys.stderr.write("can't run %s: %s\n" % (ssh, exc))
