"""Emulated hosts for multi-host tests: a program run in its own UTS namespace
(``unshare --uts``) sees its own host name, as it would on another machine
sharing the project directory.  Needs root (CI and the dev machines run as
root); tests skip when namespaces can't be made."""

import subprocess

import pytest

# sh sets the namespace's host name, then becomes the program
_ON_HOST = 'hostname "$0" && exec "$@"'


def can_unshare():
    try:
        return subprocess.run(["unshare", "--uts", "true"], capture_output=True,
                              timeout=10).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


needs_unshare = pytest.mark.skipif(not can_unshare(),
                                   reason="unshare --uts needs root (CAP_SYS_ADMIN)")


def host_argv(host, argv):
    """``argv`` run as if on the machine named ``host``."""
    return ["unshare", "--uts", "sh", "-c", _ON_HOST, host] + list(argv)


def run_on(host, argv, **kwargs):
    """subprocess.run of ``argv`` on host ``host`` (kwargs as subprocess.run's)."""
    return subprocess.run(host_argv(host, argv), **kwargs)


class Host:
    """An emulated machine: its own host name (UTS namespace) and its own
    /dev/shm (a mount namespace with a private tmpfs there, so a feeder's job
    array is this host's alone, as on a real machine); the file system is
    otherwise shared, as a project directory on NFS would be.

    A placeholder process keeps the namespaces alive; :meth:`argv` wraps a
    command to run inside them (nsenter).  ``pid_file`` (if given) records
    that process for the ssh_exec stand-in (:func:`write_ssh_exec`)."""

    def __init__(self, name, pid_file=None):
        self.name = name
        script = ('hostname "$0" && mount -t tmpfs -o mode=1777 tmpfs /dev/shm '
                  '&& echo $$ && exec sleep 86400')
        self.proc = subprocess.Popen(["unshare", "--uts", "--mount", "--fork", "sh", "-c",
                                      script, name], stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline().strip()
        if not line.isdigit():
            self.proc.kill()
            raise RuntimeError("host %s: namespaces not made" % name)
        self.pid = int(line)
        self.pid_file = pid_file
        if pid_file:
            with open(pid_file, "w") as f:
                f.write("%d\n" % self.pid)

    def argv(self, argv):
        return ["nsenter", "-t", str(self.pid), "--uts", "--mount", "--"] + list(argv)

    def run(self, argv, **kwargs):
        return subprocess.run(self.argv(argv), **kwargs)

    def popen(self, argv, **kwargs):
        return subprocess.Popen(self.argv(argv), **kwargs)

    def close(self):
        """End the placeholder (the host's own processes must be stopped first)."""
        import os
        import signal
        try:
            os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.kill()
        self.proc.wait()


SSH_EXEC = """#!/bin/sh
# ssh's stand-in for emulated hosts: HOST COMMAND... runs COMMAND on HOST
# (its namespaces, by the placeholder pid in %(dir)s/HOST.pid)
host=$1; shift
exec nsenter -t "$(cat "%(dir)s/$host.pid")" --uts --mount -- sh -c "$*"
"""


def write_ssh_exec(path, pid_dir):
    """A script for config.xml's <ssh_exec>: runs the command on the emulated
    host whose placeholder pid is in PID_DIR/HOST.pid."""
    with open(path, "w") as f:
        f.write(SSH_EXEC % {"dir": pid_dir})
    import os
    os.chmod(path, 0o755)
    return path
