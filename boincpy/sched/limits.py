"""In-progress job limits of one scheduler request (BOINC's sched_limit.cpp).

config.xml's ``max_wus_in_progress`` and ``max_wus_in_progress_gpu`` (per
processor instance) and config_aux.xml's ``<max_jobs_in_progress>`` (the
project's ``<project>`` and each app's ``<app>``), scaled to the host's
processors: :class:`Limits` holds the project's and each app's
:class:`JobLimit`, counts the jobs in progress against them (the client's
``<other_results>``, then each job sent) and says when one is reached.
"""

from boincpy.proc_types import NPROC_TYPES, PROC_TYPE_NAMES


class JobLimit:
    """JOB_LIMIT for one request: the project's or one app's in-progress limits
    scaled to this host (0 = none), and the jobs counted against them."""

    __slots__ = ("base_total", "total", "base", "per_proc", "scaled", "njobs_total",
                 "njobs")

    def __init__(self):
        self.base_total = self.total = self.njobs_total = 0
        self.base = [0] * NPROC_TYPES
        self.per_proc = [False] * NPROC_TYPES
        self.scaled = [0] * NPROC_TYPES
        self.njobs = [0] * NPROC_TYPES

    def apply(self, spec):
        """Overlay a config_aux.xml <project>/<app> (JobLimitSpec) as BOINC's
        parser does: a limit element resets per_proc; <jobs> sets the number."""
        if spec.total_limit is not None and spec.total_limit.jobs is not None:
            self.base_total = spec.total_limit.jobs   # never scaled (reset(1))
        for pt, rsc in ((0, spec.cpu_limit), (1, spec.gpu_limit)):
            if rsc is not None:
                self.per_proc[pt] = rsc.per_proc
                if rsc.jobs is not None:
                    self.base[pt] = rsc.jobs
        if spec.gpu_limit is not None:       # <gpu_limit> is every GPU type's
            for pt in range(2, NPROC_TYPES):
                self.base[pt] = self.base[1]
                self.per_proc[pt] = self.per_proc[1]

    def scale(self, ninstances):
        self.total = self.base_total
        for pt in range(NPROC_TYPES):
            n = ninstances[pt] if self.per_proc[pt] else 1
            self.scaled[pt] = self.base[pt] * n

    def any_limit(self):
        return bool(self.base_total or any(self.base))

    def exceeded(self, pt):
        if self.total and self.njobs_total >= self.total:
            return True
        return bool(self.scaled[pt]) and self.njobs[pt] >= self.scaled[pt]

    def register(self, pt):
        self.njobs_total += 1
        self.njobs[pt] += 1

    def describe(self, pt):
        """Which limit is reached, in words (for the 'No tasks sent' log line)."""
        if self.total and self.njobs_total >= self.total:
            return "limit of %d tasks in progress" % self.total
        return "limit of %d %s tasks in progress" % (self.scaled[pt], PROC_TYPE_NAMES[pt])

    def log_lines(self):
        """RSC_JOB_LIMIT::print_log lines for the limits that are set."""
        lines = []
        if self.base_total:
            lines.append("[quota] total: base %d scaled %d njobs %d"
                         % (self.base_total, self.total, self.njobs_total))
        for pt, name in ((0, "CPU"), (1, "GPU")):
            if self.base[pt]:
                lines.append("[quota] %s: base %d scaled %d njobs %d"
                             % (name, self.base[pt], self.scaled[pt], self.njobs[pt]))
        return lines


class Limits:
    """In-progress limits (JOB_LIMITS): the project's, from config.xml's
    max_wus_in_progress[_gpu] and config_aux.xml's <project>, and each app's
    from config_aux.xml's <app> (:func:`app_job_limits`)."""

    def __init__(self, cfg, ninstances):
        project = JobLimit()
        # config.xml's options are per-instance CPU / GPU limits (read first)
        if cfg.max_wus_in_progress:
            project.base[0] = cfg.max_wus_in_progress
            project.per_proc[0] = True
        if cfg.max_wus_in_progress_gpu:
            for pt in range(1, NPROC_TYPES):
                project.base[pt] = cfg.max_wus_in_progress_gpu
                project.per_proc[pt] = True
        aux = getattr(cfg, "max_jobs_in_progress", None)
        if aux is not None and aux.project is not None:
            project.apply(aux.project)
        project.scale(ninstances)
        self.project = project
        self.app_limits = app_job_limits(cfg, ninstances)     # app name -> JobLimit

    @property
    def total(self):
        """Jobs in progress on the host plus those sent in this request."""
        return self.project.njobs_total

    def exceeded(self, app, pt):
        if self.project.exceeded(pt):
            return True
        if app is not None and self.app_limits:
            lim = self.app_limits.get(app["name"])
            if lim is not None and lim.exceeded(pt):
                return True
        return False

    def register(self, app, pt):
        self.project.register(pt)
        if app is not None and self.app_limits:
            lim = self.app_limits.get(app["name"])
            if lim is not None:
                lim.register(pt)

    def log(self, log):
        """JOB_LIMITS::print_log (under debug_quota)."""
        log.normal("[quota] Overall limits on jobs in progress:")
        for line in self.project.log_lines():
            log.normal(line)
        for name, lim in self.app_limits.items():
            if lim.any_limit():
                log.normal("[quota] Limits for %s:" % name)
                for line in lim.log_lines():
                    log.normal(line)


def app_job_limits(cfg, ninstances):
    """Per-app in-progress limits from config_aux.xml's <app> elements, scaled
    to this host's processor instances: app name -> JobLimit ({} for none)."""
    aux = getattr(cfg, "max_jobs_in_progress", None)
    if aux is None or not aux.apps:
        return {}
    limits = {}
    for name, spec in aux.apps.items():
        lim = JobLimit()
        lim.apply(spec)
        lim.scale(ninstances)
        limits[name] = lim
    return limits
