"""Daemons follow the work: asleep (no CPU) with nothing to do, at work
within a fraction of a second of being rung (boincpy.doorbell)."""

import os
import subprocess
import time

import psutil
import pytest

from backend_util import (bin_cmd, bin_env, make_result, make_upload_keys, make_wu,
                          project_db, results_of, wait_for, wu_row)
from boincpy import doorbell

READY, DONE = 1, 2


@pytest.fixture
def proj(mini_project):
    make_upload_keys(mini_project)
    cfg, db = project_db(mini_project)
    yield mini_project, cfg, db
    db.close()


def _start(project, name, *args):
    """bin/NAME as bin/start runs it."""
    return subprocess.Popen(bin_cmd(name, "-d", "3", *args), cwd=project,
                            env=bin_env(project), stderr=subprocess.DEVNULL)


def _idle_cpu(proc, seconds=3.0):
    """CPU seconds per second the process used over ``seconds``."""
    p = psutil.Process(proc.pid)
    t0 = sum(p.cpu_times()[:2])
    time.sleep(seconds)
    return (sum(p.cpu_times()[:2]) - t0) / seconds


def _stop(proc):
    proc.terminate()
    try:
        assert proc.wait(20) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_idle_transitioner_sleeps_and_wakes_on_a_ring(proj):
    project, cfg, db = proj
    proc = _start(project, "transitioner")
    bell = os.path.join(doorbell.bell_dir(cfg), "transitioner.%d" % proc.pid)
    try:
        wait_for(lambda: os.path.exists(bell), timeout=20, step=0.05)
        time.sleep(0.5)                         # past its first (empty) pass
        assert _idle_cpu(proc) < 0.01
        # a new workunit, as create_work makes it, then rings
        wuid = make_wu(db, "wake_wu", transition_time=int(time.time()), target_nresults=2)
        t0 = time.monotonic()
        doorbell.ring(cfg, doorbell.TRANSITIONER)
        wait_for(lambda: len(results_of(db, wuid)) == 2, timeout=5, step=0.01)
        # its default --sleep_interval is 5 s: the ring did it
        assert time.monotonic() - t0 < 1.0
    finally:
        _stop(proc)
    assert not os.path.exists(bell)


def test_idle_assimilator_sleeps_and_wakes_on_a_ring(proj):
    project, cfg, db = proj
    proc = _start(project, "sample_dummy_assimilator", "--app", "example_app")
    bell = os.path.join(doorbell.bell_dir(cfg), "assimilator.%d" % proc.pid)
    try:
        wait_for(lambda: os.path.exists(bell), timeout=20, step=0.05)
        time.sleep(0.5)
        assert _idle_cpu(proc) < 0.01
        wuid = make_wu(db, "wake_wu", transition_time=2 ** 31 - 1)
        rid = make_result(db, wuid, "wake_wu_0", server_state=5, outcome=1, validate_state=1)
        db.execute("UPDATE workunit SET canonical_resultid = %s, assimilate_state = %s "
                   "WHERE id = %s", (rid, READY, wuid))
        t0 = time.monotonic()
        doorbell.ring(cfg, doorbell.ASSIMILATOR)
        wait_for(lambda: wu_row(db, wuid)["assimilate_state"] == DONE, timeout=12, step=0.01)
        # its default --sleep_interval is 10 s
        assert time.monotonic() - t0 < 1.0
    finally:
        _stop(proc)
