"""<workload_sim>: the scheduler simulates the host's queue (its
<in_progress_results>) earliest-deadline-first before sending a job.

The EDF functions on their own, then the scheduler in-process with the
captured stock client's work request given a queue (two CPUs, 1 GFLOPS:
the test job of 3.6e12 FLOPs takes an hour)."""

import time

from boincpy.sched import edf
from tests.sched_env import sched_env  # noqa: F401
from tests.test_sched_handler import attach, body, call


class _Work:
    """What the simulation reads of a request's state."""

    class cfg:
        debug_send = debug_edf_sim_workload = debug_edf_sim_detail = True

    class log:
        lines = []

        @classmethod
        def normal(cls, text):
            cls.lines.append(text)


def test_edf_marks_misses_and_checks_candidates():
    w = _Work()
    queue = [edf.IpResult("a", 100, 60), edf.IpResult("b", 100, 60), edf.IpResult("c", 130, 50)]
    edf.init_ip_results(w, 10, 2, queue)          # computation deadlines 90, 90, 120
    # a and b run first on the two CPUs; c follows one of them and ends at 110
    assert [(r.name, r.misses_deadline) for r in queue] == [
        ("a", False), ("b", False), ("c", False)]
    # 25 s more with deadline 200: fits after a (60 + 25); c still ends at 110
    assert edf.check_candidate(w, edf.IpResult("ok", 200, 25), 2, queue)
    # a job due at 80 runs first and pushes b past 90
    assert not edf.check_candidate(w, edf.IpResult("urgent", 80, 40), 2, queue)
    assert any("cand. fails; b now misses deadline" in ln for ln in w.log.lines)
    # a job that can't make its own deadline
    assert not edf.check_candidate(w, edf.IpResult("long", 150, 500), 2, queue)
    late = [edf.IpResult("x", 10, 50)]
    edf.init_ip_results(w, 0, 1, late)
    assert late[0].misses_deadline and late[0].estimated_completion_time == 50
    # a job due first would make the late one later still
    assert not edf.check_candidate(w, edf.IpResult("y", 5, 1), 1, late)
    rejects = edf.EdfRejects()
    rejects.add(100, 500)
    assert rejects.covers(150, 400) and not rejects.covers(50, 400)
    assert not rejects.covers(150, 600)


def _queue(now, remaining_tag, remaining):
    return "".join(
        "<ip_result>\n<name>q%d</name>\n<report_deadline>%d</report_deadline>\n"
        "<%s>%f</%s>\n<avg_ncpus>1</avg_ncpus>\n</ip_result>\n"
        % (i, now + 59500, remaining_tag, remaining, remaining_tag) for i in range(2))


def _request(queue):
    data = body("no_work", "03_sched_workfetch_hostid1.body.xml",
                estimated_delay="100.000000").decode()
    if queue is not None:
        data = data.replace("</scheduler_request>", "<in_progress_results>\n%s"
                            "</in_progress_results>\n</scheduler_request>" % queue)
    return data.encode()


def _sent(r):
    return [x.findtext("name") for x in r.root.findall("result")]


def test_workload_sim_refuses_a_job_the_queue_would_make_late(sched_env):
    env = sched_env
    attach(env)
    env.set_options(workload_sim=1, debug_send=1)
    env.add_job("wu1", delay_bound=60000)
    env.add_job("wu2", delay_bound=60000)
    env.job_array(refill=True)
    now = int(time.time())
    # both CPUs busy for 58000 s of 59500: an hour-long job due in 60000 s is late
    r = call(env, _request(_queue(now, "time_remaining", 58000)))
    assert r.root.find("send_full_workload") is not None
    assert _sent(r) == []
    assert "cand. fails" in r.log
    # the second job is as hard: refused without a second simulation
    assert r.log.count("cand. fails") == 1
    assert "workload_sim" in r.log
    # BOINC's own tag, which clients no longer send, wins when present
    r = call(env, _request(_queue(now, "cpu_time_remaining", 0)))
    assert sorted(_sent(r)) == ["wu1_0", "wu2_0"]
    assert "candidate succeeds" in r.log


def test_without_the_queue_the_usual_estimate_decides(sched_env):
    env = sched_env
    attach(env)
    env.add_job("wu1", delay_bound=60000)
    env.job_array(refill=True)
    now = int(time.time())
    # workload_sim off: the queue is not looked at
    r = call(env, _request(_queue(now, "time_remaining", 58000)))
    assert _sent(r) == ["wu1_0"]
    assert r.root.find("send_full_workload") is None
