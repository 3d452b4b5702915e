"""The feeder follows the schedulers: refilled at once when they take jobs
(the doorbell), and slots whose job can no longer be sent are emptied."""

import contextlib
import io
import os
import threading
import time

import pytest

from boincpy import doorbell, shmem
from boincpy.db import connect
from boincpy.log import MessageLog
from boincpy.submit import batch
from jobs_helpers import add_app_version, add_jobs, project_config


@pytest.fixture
def proj(mini_project):
    cfg = project_config(mini_project)
    db = connect(cfg)
    add_app_version(db)
    yield cfg, db
    db.close()
    path = shmem.segment_path(cfg)
    if os.path.exists(path):
        os.unlink(path)


def _feeder(cfg, argv):
    from boincpy.daemons.base import parse_args
    from boincpy.daemons.feeder import Feeder
    args = parse_args(Feeder, list(argv))
    return Feeder(args, cfg, MessageLog(io.StringIO(), 4))


def _present(array):
    out = {}
    for i in range(array.nslots):
        st, _, _, _, rid, _ = array.slot_head(i)
        if st == shmem.PRESENT:
            out[i] = rid
    return out


def _wait_for(cond, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.01)
    return cond()


@contextlib.contextmanager
def _running(cfg, feeder, nslots):
    """The feeder in a thread for the block's length; yields the job array
    once the feeder has filled its ``nslots`` slots."""
    thread = threading.Thread(target=feeder.run, daemon=True)
    thread.start()
    try:
        assert _wait_for(lambda: os.path.exists(shmem.segment_path(cfg)), 10)
        array = shmem.attach(cfg)
        assert _wait_for(lambda: array.n_present == nslots, 10)
        yield array
    finally:
        feeder._stop_signal = 15
        doorbell.ring(cfg, "feeder")
        thread.join(10)
    assert not thread.is_alive()


def _send_all(cfg, array, db, ring=True):
    """What schedulers do with every job of the array: reserve, mark the
    result sent, empty the slot; then ring the feeder once committed."""
    pid = os.getpid()
    sent = []
    for i, rid in _present(array).items():
        slot, why = array.claim(i, rid, pid)
        assert slot is not None, why
        db.execute("UPDATE result SET server_state = 4 WHERE id = %s", (rid,))
        assert array.release(i, pid, empty=True)
        sent.append(rid)
    if array.take_emptied() and ring:       # as boincpy.sched.send does
        doorbell.ring(cfg, doorbell.FEEDER)
    return sent


def test_feeder_refills_within_a_second_of_the_last_slot_taken(proj):
    cfg, db = proj
    cfg.shmem_work_items = 5
    add_jobs(db, 40)
    feeder = _feeder(cfg, ["--sleep_interval", "5"])
    with _running(cfg, feeder, 5) as array:
        # wait until the feeder sleeps (its passes now add nothing)
        time.sleep(0.5)
        sent = set()
        gaps = []
        for _ in range(4):
            # emptied, checked, then rung: a ring before the check lets the
            # feeder refill first (it is that quick)
            taken = set(_send_all(cfg, array, db, ring=False))
            assert array.n_present == 0
            t0 = time.monotonic()
            doorbell.ring(cfg, doorbell.FEEDER)
            assert _wait_for(lambda: array.n_present == 5, 3), "not refilled"
            gaps.append(time.monotonic() - t0)
            assert not taken & set(_present(array).values())
            sent |= taken
        # each refill came on the ring, far sooner than --sleep_interval 5
        assert max(gaps) < 1.0, gaps
        assert len(sent) == 20
        # a request finding the array just emptied waits for the refill
        # (20 jobs still wait in the database)
        assert array.backlog
        _send_all(cfg, array, db)
        t0 = time.monotonic()
        assert array.wait_for_work(3)
        assert time.monotonic() - t0 < 1.0
    assert not os.path.exists(doorbell.bell_dir(cfg))   # its FIFO is gone, and the directory


def test_rings_while_the_array_is_full_are_served_by_one_pass(proj):
    # Schedulers ring after every job taken.  While over half the slots still
    # hold jobs, the feeder lets a few rings gather (REFILL_BATCH) and refills
    # them in one pass -- still far sooner than --sleep_interval.
    from boincpy.daemons import feeder as feeder_module
    cfg, db = proj
    cfg.shmem_work_items = 10
    add_jobs(db, 60)
    feeder = _feeder(cfg, ["--sleep_interval", "5"])
    refills = []        # passes that added jobs

    def one_pass(orig=feeder.one_pass):
        before = feeder.array.n_present
        try:
            return orig()
        finally:
            if feeder.array.n_present > before:
                refills.append(feeder.array.n_present - before)
    feeder.one_pass = one_pass
    with _running(cfg, feeder, 10) as array:
        assert array.slot_heads() == [array.slot_head(i) for i in range(10)]
        time.sleep(0.5)
        del refills[:]
        pid = os.getpid()
        t0 = time.monotonic()
        for i, rid in list(_present(array).items())[:3]:     # three requests, one job each
            slot, why = array.claim(i, rid, pid)
            assert slot is not None, why
            db.execute("UPDATE result SET server_state = 4 WHERE id = %s", (rid,))
            assert array.release(i, pid, empty=True)
            doorbell.ring(cfg, doorbell.FEEDER)
            time.sleep(feeder_module.REFILL_BATCH / 10)
        assert _wait_for(lambda: array.n_present == 10, 3), "not refilled"
        assert time.monotonic() - t0 < 1.0
        assert refills == [3], "one pass for the three rings"


def test_no_backlog_no_wait(proj):
    """Every job in the array: a request finding it empty doesn't wait."""
    cfg, db = proj
    cfg.shmem_work_items = 5
    add_jobs(db, 3)
    feeder = _feeder(cfg, [])
    feeder.initialise()
    try:
        feeder.one_pass()
        array = shmem.open_segment(shmem.segment_path(cfg))
        assert array.n_present == 3 and not array.backlog
        _send_all(cfg, array, db, ring=False)
        t0 = time.monotonic()
        assert not array.wait_for_work(3)
        assert time.monotonic() - t0 < 0.1
        add_jobs(db, 12)
        feeder.one_pass()
        assert array.n_present == 5 and array.backlog
    finally:
        feeder.shutdown()


def test_without_a_ring_the_sleep_interval_holds(proj):
    """--sleep_interval keeps its meaning: slots emptied without a ring wait."""
    cfg, db = proj
    cfg.shmem_work_items = 3
    add_jobs(db, 10)
    feeder = _feeder(cfg, ["--sleep_interval", "2"])
    with _running(cfg, feeder, 3) as array:
        time.sleep(0.3)
        _send_all(cfg, array, db, ring=False)
        t0 = time.monotonic()
        assert _wait_for(lambda: array.n_present == 3, 5)
        assert time.monotonic() - t0 > 0.5


def test_unsendable_jobs_are_purged_and_never_sent(proj):
    cfg, db = proj
    cfg.shmem_work_items = 6
    jobs = add_jobs(db, 6)
    feeder = _feeder(cfg, [])
    feeder.initialise()
    try:
        assert feeder.one_pass() is True
        array = shmem.open_segment(shmem.segment_path(cfg))
        before = _present(array)
        assert sorted(before.values()) == sorted(r[0] for _, r in jobs)
        (wu0, (r0,)), (wu1, (r1,)), (wu2, (r2,)) = jobs[:3]
        # a result made "didn't need", a cancelled workunit, an aborted batch
        db.execute("UPDATE result SET server_state = 5, outcome = 5 WHERE id = %s", (r0,))
        db.execute("UPDATE workunit SET error_mask = 16 WHERE id = %s", (wu1,))
        b = batch.create(db, 1, 1, "purge_test")
        db.execute("UPDATE workunit SET batch = %s WHERE id = %s", (b.id, wu2))
        batch.abort(db, b)
        # no new jobs: the emptied slots stay empty
        feeder.next_purge_check = 0
        feeder.one_pass()
        after = _present(array)
        assert set(after.values()) == set(before.values()) - {r0, r1, r2}
        assert array.n_present == 3
        # and a scheduler can't reserve them
        pid = os.getpid()
        for i, rid in before.items():
            if rid in (r0, r1, r2):
                assert array.claim(i, rid, pid) == (None, "taken")
        assert feeder.log.stream.getvalue().count("can no longer be sent") == 3
    finally:
        feeder.shutdown()
