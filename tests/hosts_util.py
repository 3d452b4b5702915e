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
