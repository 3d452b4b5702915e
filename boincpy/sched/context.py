"""The state of one scheduler request, shared by the steps that handle it.

``handler`` builds a :class:`SchedContext` (request parsed, user and host
found), ``reports`` fills the acknowledgements, ``choose`` appends the jobs it
sends as :class:`SentJob` and the reasons it sends none, and ``reply`` turns
the :class:`ReplyData` into the <scheduler_reply> document.
"""

from dataclasses import dataclass, field

# <message priority="..."> words the client knows
PRIORITY_LOW = "low"
PRIORITY_NOTICE = "notice"
PRIORITY_HIGH = "high"


@dataclass
class SentJob:
    """One job in the reply: a claimed result with what the client needs to run it."""

    app: dict                        # app row
    workunit: dict                   # workunit row (xml_doc as stored)
    result: dict                     # result row as claimed (name, xml_doc_in, ...)
    app_version: dict = None         # app_version row; None on the anonymous platform
    client_app_version: object = None  # request.ClientAppVersion on the anonymous platform
    report_deadline: int = 0         # what the client is told (without the grace period)
    avg_ncpus: float = 1.0
    flops: float = 0.0               # projected FLOPS -> <flops> in <app_version>
    plan_class: str = ""
    coproc_type: str = ""            # "NVIDIA", "ATI", "intel_gpu", ... for GPU versions
    coproc_usage: float = 0.0
    gpu_ram: float = 0.0
    cmdline: str = ""                # plan-class command line
    resend: bool = False             # a lost result sent again


@dataclass
class ReplyData:
    """Everything the reply will carry, gathered while the request is handled."""

    hostid: int = 0
    request_delay: float = 0.0
    messages: list = field(default_factory=list)      # [(priority, text)]
    result_acks: list = field(default_factory=list)   # [result name]
    result_aborts: list = field(default_factory=list)
    result_abort_if_not_starteds: list = field(default_factory=list)
    jobs: list = field(default_factory=list)          # [SentJob]
    send_code_sign_key: bool = False
    project_is_down: bool = False
    no_work_reasons: list = field(default_factory=list)  # [str] why jobs were not sent

    def add_message(self, text, priority=PRIORITY_LOW):
        if (priority, text) not in self.messages:
            self.messages.append((priority, text))


@dataclass
class SchedContext:
    """One request being handled."""

    cfg: object                      # boincpy.config.Config
    db: object                       # boincpy.db.Database
    log: object                      # boincpy.log.MessageLog
    now: int
    request: object                  # boincpy.sched.request.SchedulerRequest
    user: dict = None                # user row
    host: dict = None                # host row (as updated by this request)
    team: dict = None
    reply: ReplyData = field(default_factory=ReplyData)
    # host.rpc_time before this request updated it (None: host["rpc_time"]);
    # choose uses it for the day rollover of host_app_version.n_jobs_today
    last_rpc_time: float = None
    # set by result handling when a result was reported twice in this RPC:
    # BOINC then resends lost results even without <resend_lost_results/>
    resend_lost_results: bool = False
    # choose's per-request state (send_work_setup), shared by
    # resend_lost_results() and send_work()
    work: object = None
