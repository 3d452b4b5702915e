"""bin/ tools piped into a reader that has gone (``bin/status | head -1``):
a quiet end with the shell's SIGPIPE status, no traceback."""

import os
import subprocess
import sys

import pytest

from boincpy import cli
from tests import sched_env as _sched_env
from tests.backend_util import bin_cmd, bin_env

sched_env = _sched_env.sched_env


def run_into_closed_pipe(cmd, env, cwd):
    """Run ``cmd`` with stdout a pipe whose reader is already closed (what
    ``head`` leaves once it has its line); returns (exit status, stderr)."""
    r, w = os.pipe()
    os.close(r)
    try:
        proc = subprocess.run(cmd, stdout=w, stderr=subprocess.PIPE, env=env, cwd=cwd,
                              timeout=120, text=True)
    finally:
        os.close(w)
    return proc.returncode, proc.stderr


def test_status_into_closed_pipe_is_quiet(sched_env):
    root = str(sched_env.root)
    status, err = run_into_closed_pipe(bin_cmd("status"), bin_env(root), root)
    assert err == ""
    assert status == cli.EXIT_SIGPIPE


def test_show_shmem_into_closed_pipe_is_quiet(sched_env):
    sched_env.add_job("wu1")
    sched_env.job_array()
    try:
        root = str(sched_env.root)
        status, err = run_into_closed_pipe(bin_cmd("show_shmem", "--project_dir", root),
                                           bin_env(root), root)
    finally:
        sched_env.close_array()
    assert err == ""
    assert status == cli.EXIT_SIGPIPE


def test_status_piped_to_head_shows_its_first_line(sched_env):
    root = str(sched_env.root)
    full = subprocess.run(bin_cmd("status"), env=bin_env(root), cwd=root, capture_output=True,
                          text=True, timeout=120)
    piped = subprocess.run(" ".join("'%s'" % a for a in bin_cmd("status")) + " | head -1",
                           shell=True, env=bin_env(root), cwd=root, capture_output=True,
                           text=True, timeout=120)
    assert piped.stdout == full.stdout.splitlines(True)[0]
    assert piped.stderr == ""


def test_run_passes_status_and_other_broken_pipes_through():
    assert cli.run(lambda: 3) == 3
    assert cli.run(lambda x: x, 0) == 0

    def exits():
        sys.exit(2)
    assert cli.run(exits) == 2

    def socket_gone():
        raise BrokenPipeError(32, "Broken pipe")
    # stdout (pytest's capture) is fine: the error is someone else's
    with pytest.raises(BrokenPipeError):
        cli.run(socket_gone)
