"""``<workload_sim>``: deadline simulation of the host's queue (BOINC's edf_sim.cpp).

With ``<workload_sim/>`` in config.xml every reply carries
``<send_full_workload/>``, and the client then lists in each request the
tasks it holds for all projects (``<in_progress_results>``: name, report
deadline, time remaining).  For a request with that list (and
``<other_results>``), job choice replaces its usual deadline estimate by an
earliest-deadline-first simulation on the host's usable CPUs:

* at the start of sending (:func:`init_ip_results`) each queued task's
  deadline is its report deadline minus the client's work_buf_min, and the
  tasks that would miss it are marked, with their simulated completion;
* a candidate job (deadline: its delay bound; length: its estimated
  duration) is refused (:func:`check_candidate`) if it would miss its own
  deadline, make a queued task miss one it would have met, or make a late
  one later still.  The easiest refused job is remembered
  (:class:`EdfRejects`): a harder one is refused without simulating;
* a job sent joins the simulated queue.

Every queued task counts as a one-CPU job, as in BOINC.  Two differences,
both because BOINC's simulation then hardly simulates anything: BOINC reads
a task's remaining time from ``<cpu_time_remaining>``, which clients since
6.x no longer send (they send ``<time_remaining>``), so it sees every queued
task as done -- here ``<time_remaining>`` is read when
``<cpu_time_remaining>`` is absent; and BOINC adds a sent job with an
absolute deadline (now + delay bound) to a queue of relative ones, so it
never delays a later candidate -- here its deadline is relative too.
Log lines are BOINC's: the decision under ``debug_send``, the queue under
``debug_edf_sim_workload``, each step under ``debug_edf_sim_detail``.
"""


class IpResult:
    """One task in the simulated queue (IP_RESULT); times in seconds from now."""

    __slots__ = ("name", "computation_deadline", "report_deadline", "cpu_time_remaining",
                 "misses_deadline", "estimated_completion_time")

    def __init__(self, name, deadline, cpu_time_remaining):
        self.name = name
        self.report_deadline = deadline
        self.computation_deadline = deadline
        self.cpu_time_remaining = cpu_time_remaining
        self.misses_deadline = False
        self.estimated_completion_time = 0.0


def _log(work, level, text):
    cfg = work.cfg
    if (level == "summary" and cfg.debug_send) or (
            level == "workload" and cfg.debug_edf_sim_workload) or (
            level == "detail" and cfg.debug_edf_sim_detail):
        work.log.normal(text)


def _run(work, ncpus, queue, on_step):
    """Run ``queue`` (sorted by deadline) EDF on ``ncpus`` CPUs; ``on_step(r,
    cpu, finish)`` sees each task's finish; False from it stops the run."""
    booked = [0.0] * max(ncpus, 1)
    for r in sorted(queue, key=lambda r: r.computation_deadline):
        cpu = min(range(len(booked)), key=lambda j: booked[j])
        booked[cpu] += r.cpu_time_remaining
        if on_step(r, cpu, booked[cpu]) is False:
            return False
    return True


def init_ip_results(work, work_buf_min, ncpus, ip_results):
    """init_ip_results(): computation deadlines, then which tasks miss them."""
    _log(work, "detail", "[edf_detail] init_ip_results; work_buf_min %.2f ncpus %d:"
         % (work_buf_min, ncpus))
    for r in ip_results:
        r.computation_deadline = r.report_deadline - work_buf_min
        _log(work, "detail", "[edf_detail]     %s: deadline %.2f cpu %.2f"
             % (r.name, r.computation_deadline, r.cpu_time_remaining))
    _log(work, "detail", "[edf_detail] mark_edf_misses")

    def mark(r, cpu, finish):
        _log(work, "detail", "[edf_detail]   running %s on cpu %d; finishes at %.2f"
             % (r.name, cpu, finish))
        if finish > r.computation_deadline:
            r.misses_deadline = True
            r.estimated_completion_time = finish
            _log(work, "detail", "[edf_detail]   %s misses_deadline; est completion %.2f"
                 % (r.name, finish))
        else:
            r.misses_deadline = False
            _log(work, "detail", "[edf_detail]   %s makes deadline; est completion %.2f"
                 % (r.name, finish))
    _run(work, ncpus, ip_results, mark)
    for r in ip_results:
        _log(work, "workload", "[edf_workload] %s: deadline %.2f cpu %.2f%s"
             % (r.name, r.computation_deadline, r.cpu_time_remaining,
                " (misses deadline)" if r.misses_deadline else ""))


def check_candidate(work, candidate, ncpus, ip_results):
    """check_candidate(): True if the queue plus ``candidate`` runs without a
    new deadline miss and without making a late task later."""
    _log(work, "detail", "[edf_detail] check_candidate %s: dl %.2f cpu %.2f"
         % (candidate.name, candidate.computation_deadline, candidate.cpu_time_remaining))

    def check(r, cpu, finish):
        _log(work, "detail", "[edf_detail]   running %s on cpu %d; deadline %f, finishes at "
             "%.2f" % (r.name, cpu, r.computation_deadline, finish))
        if finish > r.computation_deadline and not r.misses_deadline:
            _log(work, "summary", "[send]  cand. fails; %s now misses deadline: %.2f > %.2f"
                 % (r.name, finish, r.computation_deadline))
            return False
        if r.misses_deadline and finish > r.estimated_completion_time:
            _log(work, "summary", "[send]  cand. fails; late result %s would be returned "
                 "even later" % r.name)
            return False
        return True
    ok = _run(work, ncpus, list(ip_results) + [candidate], check)
    if ok:
        _log(work, "summary", "[send]  candidate succeeds")
    return ok


class EdfRejects:
    """The easiest job the simulation refused (WORK_REQ's edf_reject*): a job
    at least as long with a delay bound no larger fails too."""

    __slots__ = ("have", "min_cpu", "max_delay_bound")

    def __init__(self):
        self.have = False
        self.min_cpu = 0.0
        self.max_delay_bound = 0

    def add(self, cpu, delay_bound):
        if self.have:
            self.min_cpu = min(self.min_cpu, cpu)
            self.max_delay_bound = max(self.max_delay_bound, delay_bound)
        else:
            self.have, self.min_cpu, self.max_delay_bound = True, cpu, delay_bound

    def covers(self, cpu, delay_bound):
        return self.have and cpu >= self.min_cpu and delay_bound <= self.max_delay_bound


def start(work):
    """At the start of sending (send_work()): the request's queue, simulated
    once, becomes ``work.ip_results``; it stays None (no simulation) when the
    option is off or the request lacks the lists."""
    req = work.req
    if not (work.cfg.workload_sim and req.have_other_results_list):
        return None
    queue = [IpResult(r.name, r.report_deadline - work.now,
                      r.time_remaining if r.cpu_time_remaining is None
                      else r.cpu_time_remaining)
             for r in req.ip_results]
    init_ip_results(work, req.global_prefs.work_buf_min_days * 86400.0,
                    work.effective_ncpus, queue)
    work.ip_results = queue
    work.edf_rejects = EdfRejects()
    return queue


def deadline_infeasible(work, wu, est_dur):
    """The simulation's part of check_deadline(): "workload" if the job must
    not be sent, else None."""
    rejects = work.edf_rejects
    if rejects.covers(est_dur, wu["delay_bound"]):
        return "workload"
    candidate = IpResult(wu["name"], float(wu["delay_bound"]), est_dur)
    if check_candidate(work, candidate, work.effective_ncpus, work.ip_results):
        return None         # joins the queue only when sent (job_sent)
    rejects.add(est_dur, wu["delay_bound"])
    work.speed_insufficient = True
    work.reason("workload", "job %s (%.0f s, delay bound %d s) would miss a deadline on "
                "this host's queue (workload_sim)" % (wu["name"], est_dur, wu["delay_bound"]))
    return "workload"


def job_sent(work, wu, est_dur):
    """A job went into the reply: it is part of the host's queue from now on."""
    if work.ip_results is not None:
        work.ip_results.append(IpResult("", float(wu["delay_bound"]), est_dur))
