"""A client's <scheduler_request>, as plain data.

These dataclasses are the contract between the request parser (this module),
host and report handling, and job choice (:mod:`boincpy.sched.choose`): every
part of the scheduler reads the request through them, never through XML.
Field names are the request's element names (scheduler-protocol.md §4); values
are typed, and a missing element keeps the default here.

The parser itself (``parse_request``) is added to this module by the
scheduler work.
"""

from dataclasses import dataclass, field

# Processor types, in BOINC's order (lib/common_defs.h PROC_TYPE_*).
PROC_CPU, PROC_NVIDIA, PROC_AMD, PROC_INTEL, PROC_APPLE = range(5)
COPROC_TAGS = {"coproc_cuda": PROC_NVIDIA, "coproc_ati": PROC_AMD,
               "coproc_intel_gpu": PROC_INTEL, "coproc_apple_gpu": PROC_APPLE}


@dataclass
class ResourceRequest:
    """Work asked for one processor type (CPU, or one GPU type from <coprocs>)."""

    proc_type: int = PROC_CPU
    count: int = 0                 # instances the host has (GPUs: <count>)
    req_secs: float = 0.0
    req_instances: float = 0.0
    estimated_delay: float = 0.0
    peak_flops: float = 0.0        # GPUs only
    name: str = ""                 # GPU model
    xml: str = ""                  # the raw <coproc_*> element, for plan classes


@dataclass
class HostInfo:
    """<host_info>, <time_stats>, <net_stats> and <disk_usage> (scheduler-protocol.md §4.3)."""

    timezone: int = 0
    domain_name: str = ""
    ip_addr: str = ""
    host_cpid: str = ""
    p_ncpus: int = 0
    p_vendor: str = ""
    p_model: str = ""
    p_features: str = ""
    p_fpops: float = 0.0
    p_iops: float = 0.0
    p_membw: float = 0.0
    p_calculated: float = 0.0
    p_vm_extensions_disabled: bool = False
    m_nbytes: float = 0.0
    m_cache: float = 0.0
    m_swap: float = 0.0
    d_total: float = 0.0
    d_free: float = 0.0
    os_name: str = ""
    os_version: str = ""
    product_name: str = ""
    mac_address: str = ""
    virtualbox_version: str = ""
    # <time_stats>
    on_frac: float = 1.0
    connected_frac: float = 1.0
    active_frac: float = 1.0
    gpu_active_frac: float = 1.0
    cpu_and_network_available_frac: float = 1.0
    client_start_time: float = 0.0
    previous_uptime: float = 0.0
    # <net_stats>
    n_bwup: float = 0.0
    n_bwdown: float = 0.0
    # <disk_usage>; d_boinc_used_total < 0 means the client did not send it
    d_boinc_used_total: float = -1.0
    d_boinc_used_project: float = 0.0
    d_project_share: float = 0.0


@dataclass
class GlobalPrefs:
    """The fields of <working_global_preferences> the server uses (0 = not set)."""

    mod_time: float = 0.0
    disk_max_used_gb: float = 0.0
    disk_max_used_pct: float = 0.0
    disk_min_free_gb: float = 0.0
    work_buf_min_days: float = 0.0
    ram_max_used_busy_pct: float = 0.0
    ram_max_used_idle_pct: float = 0.0
    max_ncpus_pct: float = 0.0
    xml: str = ""                  # the raw block, stored in host/user as BOINC does


@dataclass
class ClientAppVersion:
    """One <app_versions>/<app_version> the client has (index = position in the list)."""

    app_name: str = ""
    version_num: int = 0
    platform: str = ""
    plan_class: str = ""
    avg_ncpus: float = 1.0
    flops: float = 0.0
    api_version: str = ""
    cmdline: str = ""
    coproc_type: str = ""          # e.g. "NVIDIA", "" for CPU versions
    coproc_count: float = 0.0


@dataclass
class OtherResult:
    """A task the client holds and is not reporting (<other_results>)."""

    name: str = ""
    app_version: int = -1          # index into SchedulerRequest.app_versions
    plan_class: str = ""


@dataclass
class ReportedResult:
    """A completed task being reported (<result>, scheduler-protocol.md §4.4)."""

    name: str = ""
    state: int = 0                 # the client's state -> result.client_state
    final_cpu_time: float = 0.0
    final_elapsed_time: float = 0.0
    exit_status: int = 0
    platform: str = ""
    version_num: int = 0
    plan_class: str = ""
    app_version_num: int = 0
    final_peak_working_set_size: float = 0.0
    final_peak_swap_size: float = 0.0
    final_peak_disk_usage: float = 0.0
    final_bytes_sent: float = 0.0
    final_bytes_received: float = 0.0
    stderr_out: str = ""           # raw, as BOINC stores it
    file_info_xml: str = ""        # the <file_info> elements, verbatim -> xml_doc_out


@dataclass
class MsgFromHost:
    """A trickle-up message (<msg_from_host>)."""

    result_name: str = ""
    time: int = 0
    variety: str = ""
    xml: str = ""


@dataclass
class SchedulerRequest:
    """Everything the scheduler uses from one <scheduler_request>."""

    authenticator: str = ""
    hostid: int = 0
    rpc_seqno: int = 0
    core_client_major_version: int = 0
    core_client_minor_version: int = 0
    core_client_release: int = 0
    resource_share_fraction: float = 1.0
    rrs_fraction: float = 1.0
    prrs_fraction: float = 1.0
    duration_correction_factor: float = 1.0
    allow_multiple_clients: bool = False
    sandbox: bool = False
    dont_send_work: bool = False
    work_req_seconds: float = 0.0
    client_cap_plan_class: bool = False
    platform_name: str = ""
    alt_platforms: list = field(default_factory=list)        # [str]
    code_sign_key: str = ""        # whitespace-stripped; "" when absent
    cross_project_id: str = ""
    client_brand: str = ""
    client_opaque: str = ""
    global_prefs: GlobalPrefs = field(default_factory=GlobalPrefs)
    global_prefs_xml: str = ""     # <global_preferences> (7.20 master prefs), raw
    host: HostInfo = field(default_factory=HostInfo)
    # [0] is the CPU request (cpu_req_secs / cpu_req_instances / estimated_delay);
    # then one per GPU type listed in <coprocs>
    resources: list = field(default_factory=lambda: [ResourceRequest()])
    results: list = field(default_factory=list)              # [ReportedResult]
    app_versions: list = field(default_factory=list)         # [ClientAppVersion]
    other_results: list = field(default_factory=list)        # [OtherResult]
    have_other_results_list: bool = False
    msgs_from_host: list = field(default_factory=list)       # [MsgFromHost]
    sticky_files: list = field(default_factory=list)         # [(name, nbytes)] top-level <file_info>

    @property
    def core_client_version(self):
        """10000*major + 100*minor + release, as the C++ server computes it (7.20.5 -> 72005)."""
        return (10000 * self.core_client_major_version
                + 100 * self.core_client_minor_version + self.core_client_release)

    @property
    def anonymous_platform(self):
        return self.platform_name == "anonymous"

    @property
    def platforms(self):
        """The primary platform, then the alternates, without repeats."""
        seen = []
        for name in [self.platform_name] + list(self.alt_platforms):
            if name and name not in seen:
                seen.append(name)
        return seen

    def cpu(self):
        """The CPU resource request."""
        return self.resources[0]
