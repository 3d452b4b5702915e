"""Many scheduler processes on one job array (and on two arrays caching the same
results): no slot is taken twice, no result is sent twice."""

import multiprocessing
import os
import random
from collections import Counter

import pytest

from boincpy import shmem
from boincpy.db import connect
from boincpy.sched import send
from jobs_helpers import add_app_version, add_jobs, make_ctx, make_feeder, make_request, \
    project_config

NPROCS = 6


@pytest.fixture
def proj(mini_project):
    cfg = project_config(mini_project, one_result_per_user_per_wu=True,
                         daily_result_quota=100000, shmem_work_items=320)
    db = connect(cfg)
    add_app_version(db)
    feeders = []
    yield cfg, db, feeders
    for f in feeders:
        f.shutdown()
    db.close()


def _claimer(project_dir, q):
    cfg = project_config(project_dir)
    ja = shmem.attach(cfg, wait_ready=5)
    got = []
    order = list(range(ja.nslots))
    random.shuffle(order)
    for i in order * 2:
        st, _, _, _, rid, _ = ja.slot_head(i)
        if st == shmem.PRESENT:
            slot, _ = ja.claim(i, rid, os.getpid())
            if slot is not None:
                got.append((i, rid))
    q.put(got)
    ja.close()


def test_processes_never_claim_the_same_slot(proj):
    cfg, db, feeders = proj
    add_jobs(db, 300)
    feeders.append(make_feeder(cfg))
    feeders[0].one_pass()
    ctx = multiprocessing.get_context("fork")
    q = ctx.Queue()
    procs = [ctx.Process(target=_claimer, args=(cfg.project_dir, q)) for _ in range(NPROCS)]
    for p in procs:
        p.start()
    claims = [c for _ in procs for c in q.get(timeout=60)]
    for p in procs:
        p.join(30)
    assert len(claims) == 300
    assert len({i for i, _ in claims}) == 300 and len({r for _, r in claims}) == 300
    assert feeders[0].array.n_present == 0


def _scheduler(project_dir, keys, hostid, q):
    """One 'scheduler process': requests until two in a row get nothing."""
    arrays = []
    for key in keys:
        cfg = project_config(project_dir, one_result_per_user_per_wu=True,
                             daily_result_quota=100000, shmem_key=key)
        arrays.append(shmem.attach(cfg, wait_ready=5))
    db = connect(cfg)
    sent, misses, n = [], 0, 0
    while misses < 2:
        ja = arrays[n % len(arrays)]
        n += 1
        ctx = make_ctx(cfg, db, make_request(req_secs=1500, ncpus=1), hostid=hostid,
                       userid=hostid)
        send.send_work(ctx, ja)
        ids = [(j.result["id"], j.result["workunitid"]) for j in ctx.reply.jobs]
        misses = 0 if ids else misses + 1
        sent += ids
    q.put((hostid, sent))
    db.close()


def _run_schedulers(cfg, keys):
    ctx = multiprocessing.get_context("fork")
    q = ctx.Queue()
    procs = [ctx.Process(target=_scheduler, args=(cfg.project_dir, keys, h + 1, q))
             for h in range(NPROCS)]
    for p in procs:
        p.start()
    out = dict(q.get(timeout=120) for _ in procs)
    for p in procs:
        p.join(30)
    return out


def _check_database(db, out, nresults):
    sent = [(h, rid, wu) for h, jobs in out.items() for rid, wu in jobs]
    counts = Counter(rid for _, rid, _ in sent)
    assert max(counts.values()) == 1, "a result was sent twice"
    rows = db.query("SELECT id, hostid, userid, workunitid FROM result WHERE server_state = 4")
    assert len(rows) == len(sent) == nresults
    by_id = {r["id"]: r for r in rows}
    for h, rid, wu in sent:
        assert by_id[rid]["hostid"] == h and by_id[rid]["userid"] == h
    per_user_wu = Counter((r["userid"], r["workunitid"]) for r in rows)
    assert max(per_user_wu.values()) == 1


def test_schedulers_send_each_result_once(proj):
    cfg, db, feeders = proj
    add_jobs(db, 150, results_per_wu=2)
    feeders.append(make_feeder(cfg))
    feeders[0].one_pass()
    out = _run_schedulers(cfg, [cfg.shmem_key])
    _check_database(db, out, 300)
    assert feeders[0].array.n_present == 0


def test_two_arrays_with_the_same_results(proj):
    """Two feeders (two segments) cache the same results: only the conditional
    UPDATE keeps schedulers on different arrays from sending one result twice."""
    cfg, db, feeders = proj
    add_jobs(db, 150, results_per_wu=2)
    other = project_config(cfg.project_dir, shmem_work_items=320,
                           shmem_key=(cfg.shmem_key or 0) + 1)
    feeders.append(make_feeder(cfg))
    feeders.append(make_feeder(other))
    for f in feeders:
        f.one_pass()
    assert feeders[0].array.n_present == feeders[1].array.n_present == 300
    out = _run_schedulers(cfg, [cfg.shmem_key, other.shmem_key])
    _check_database(db, out, 300)
