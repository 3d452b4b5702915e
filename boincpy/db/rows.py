"""Dataclasses for the core BOINC tables: one field per column, BOINC's names.

Defaults are the values BOINC's tools write for a fresh row.  ``id`` and
``mod_time`` are the server's to set and are never inserted.  Build a row
from a query result with ``Row.from_row(dict)`` (unknown keys are ignored,
so ``SELECT *`` keeps working after a column is added).
"""

from dataclasses import dataclass, fields

INT_MAX = 2147483647


class _RowMixin:
    @classmethod
    def columns(cls):
        """Column names in declaration order (cached)."""
        cols = cls.__dict__.get("_columns")
        if cols is None:
            cols = tuple(f.name for f in fields(cls))
            cls._columns = cols
        return cols

    @classmethod
    def insert_columns(cls):
        """Columns an INSERT writes: all but id and mod_time."""
        cols = cls.__dict__.get("_insert_columns")
        if cols is None:
            cols = tuple(c for c in cls.columns() if c not in ("id", "mod_time"))
            cls._insert_columns = cols
        return cols

    @classmethod
    def from_row(cls, row):
        """Build from a dict of column values (extra keys ignored)."""
        if row is None:
            return None
        names = cls.columns()
        return cls(**{k: v for k, v in row.items() if k in names})

    def insert_values(self):
        """Values for insert_columns(), in order."""
        return tuple(getattr(self, c) for c in self.insert_columns())


@dataclass(slots=True)
class Platform(_RowMixin):
    id: int = 0
    create_time: int = 0
    name: str = ""
    user_friendly_name: str = ""
    deprecated: int = 0
    TABLE = "platform"


@dataclass(slots=True)
class App(_RowMixin):
    id: int = 0
    create_time: int = 0
    name: str = ""
    min_version: int = 0
    deprecated: int = 0
    user_friendly_name: str = ""
    homogeneous_redundancy: int = 0
    weight: float = 1.0
    beta: int = 0
    target_nresults: int = 0
    min_avg_pfc: float = 1.0
    host_scale_check: int = 0
    homogeneous_app_version: int = 0
    non_cpu_intensive: int = 0
    locality_scheduling: int = 0
    n_size_classes: int = 0
    fraction_done_exact: int = 0
    TABLE = "app"


@dataclass(slots=True)
class AppVersion(_RowMixin):
    id: int = 0
    create_time: int = 0
    appid: int = 0
    version_num: int = 0
    platformid: int = 0
    xml_doc: str = ""
    min_core_version: int = 0
    max_core_version: int = 0
    deprecated: int = 0
    plan_class: str = ""
    pfc_n: float = 0.0
    pfc_avg: float = 0.0
    pfc_scale: float = 0.0
    expavg_credit: float = 0.0
    expavg_time: float = 0.0
    beta: int = 0
    TABLE = "app_version"


@dataclass(slots=True)
class User(_RowMixin):
    id: int = 0
    create_time: int = 0
    email_addr: str = ""
    name: str = ""
    authenticator: str = ""
    country: str = ""
    postal_code: str = ""
    total_credit: float = 0.0
    expavg_credit: float = 0.0
    expavg_time: float = 0.0
    global_prefs: str = ""
    project_prefs: str = ""
    teamid: int = 0
    venue: str = ""
    url: str = ""
    send_email: int = 0
    show_hosts: int = 0
    posts: int = 0
    seti_id: int = 0
    seti_nresults: int = 0
    seti_last_result_time: int = 0
    seti_total_cpu: float = 0.0
    signature: str = ""
    has_profile: int = 0
    cross_project_id: str = ""
    passwd_hash: str = ""
    email_validated: int = 0
    donated: int = 0
    login_token: str = ""
    login_token_time: float = 0.0
    previous_email_addr: str = ""
    email_addr_change_time: float = 0.0
    TABLE = "user"


@dataclass(slots=True)
class Team(_RowMixin):
    id: int = 0
    create_time: int = 0
    userid: int = 0
    name: str = ""
    name_lc: str = ""
    url: str = ""
    type: int = 0
    name_html: str = ""
    description: str = ""
    nusers: int = 0
    country: str = ""
    total_credit: float = 0.0
    expavg_credit: float = 0.0
    expavg_time: float = 0.0
    seti_id: int = 0
    ping_user: int = 0
    ping_time: int = 0
    joinable: int = 1
    mod_time: object = None
    TABLE = "team"


@dataclass(slots=True)
class Host(_RowMixin):
    id: int = 0
    create_time: int = 0
    userid: int = 0
    rpc_seqno: int = 0
    rpc_time: int = 0
    total_credit: float = 0.0
    expavg_credit: float = 0.0
    expavg_time: float = 0.0
    timezone: int = 0
    domain_name: str = ""
    serialnum: str = ""
    last_ip_addr: str = ""
    nsame_ip_addr: int = 0
    on_frac: float = 0.0
    connected_frac: float = 0.0
    active_frac: float = 0.0
    cpu_efficiency: float = 0.0
    duration_correction_factor: float = 0.0
    p_ncpus: int = 0
    p_vendor: str = ""
    p_model: str = ""
    p_fpops: float = 0.0
    p_iops: float = 0.0
    p_membw: float = 0.0
    os_name: str = ""
    os_version: str = ""
    m_nbytes: float = 0.0
    m_cache: float = 0.0
    m_swap: float = 0.0
    d_total: float = 0.0
    d_free: float = 0.0
    d_boinc_used_total: float = 0.0
    d_boinc_used_project: float = 0.0
    d_boinc_max: float = 0.0
    n_bwup: float = 0.0
    n_bwdown: float = 0.0
    credit_per_cpu_sec: float = 0.0
    venue: str = ""
    nresults_today: int = 0
    avg_turnaround: float = 0.0
    host_cpid: str = ""
    external_ip_addr: str = ""
    max_results_day: int = 0
    error_rate: float = 0.0
    product_name: str = ""
    gpu_active_frac: float = 0.0
    p_ngpus: int = 0
    p_gpu_fpops: float = 0.0
    misc: str = ""
    TABLE = "host"


@dataclass(slots=True)
class HostAppVersion(_RowMixin):
    host_id: int = 0
    app_version_id: int = 0
    pfc_n: float = 0.0
    pfc_avg: float = 0.0
    et_n: float = 0.0
    et_avg: float = 0.0
    et_var: float = 0.0
    et_q: float = 0.0
    max_jobs_per_day: int = 0
    n_jobs_today: int = 0
    turnaround_n: float = 0.0
    turnaround_avg: float = 0.0
    turnaround_var: float = 0.0
    turnaround_q: float = 0.0
    consecutive_valid: int = 0
    TABLE = "host_app_version"


@dataclass(slots=True)
class Workunit(_RowMixin):
    id: int = 0
    create_time: int = 0
    appid: int = 0
    name: str = ""
    xml_doc: str = ""
    batch: int = 0
    rsc_fpops_est: float = 0.0
    rsc_fpops_bound: float = 0.0
    rsc_memory_bound: float = 0.0
    rsc_disk_bound: float = 0.0
    need_validate: int = 0
    canonical_resultid: int = 0
    canonical_credit: float = 0.0
    transition_time: int = 0
    delay_bound: int = 0
    error_mask: int = 0
    file_delete_state: int = 0
    assimilate_state: int = 0
    hr_class: int = 0
    opaque: float = 0.0
    min_quorum: int = 0
    target_nresults: int = 0
    max_error_results: int = 0
    max_total_results: int = 0
    max_success_results: int = 0
    result_template_file: str = ""
    priority: int = 0
    mod_time: object = None
    rsc_bandwidth_bound: float = 0.0
    fileset_id: int = 0
    app_version_id: int = 0
    transitioner_flags: int = 0
    size_class: int = -1
    keywords: str = ""
    app_version_num: int = 0
    TABLE = "workunit"


@dataclass(slots=True)
class Result(_RowMixin):
    id: int = 0
    create_time: int = 0
    workunitid: int = 0
    server_state: int = 0
    outcome: int = 0
    client_state: int = 0
    hostid: int = 0
    userid: int = 0
    report_deadline: int = 0
    sent_time: int = 0
    received_time: int = 0
    name: str = ""
    cpu_time: float = 0.0
    xml_doc_in: str = ""
    xml_doc_out: str = ""
    stderr_out: str = ""
    batch: int = 0
    file_delete_state: int = 0
    validate_state: int = 0
    claimed_credit: float = 0.0
    granted_credit: float = 0.0
    opaque: float = 0.0
    random: int = 0
    app_version_num: int = 0
    appid: int = 0
    exit_status: int = 0
    teamid: int = 0
    priority: int = 0
    mod_time: object = None
    elapsed_time: float = 0.0
    flops_estimate: float = 0.0
    app_version_id: int = 0
    runtime_outlier: int = 0
    size_class: int = -1
    peak_working_set_size: float = 0.0
    peak_swap_size: float = 0.0
    peak_disk_usage: float = 0.0
    TABLE = "result"


@dataclass(slots=True)
class Batch(_RowMixin):
    id: int = 0
    user_id: int = 0
    create_time: int = 0
    logical_start_time: float = 0.0
    logical_end_time: float = 0.0
    est_completion_time: float = 0.0
    njobs: int = 0
    fraction_done: float = 0.0
    nerror_jobs: int = 0
    state: int = 0
    completion_time: float = 0.0
    credit_estimate: float = 0.0
    credit_canonical: float = 0.0
    credit_total: float = 0.0
    name: str = ""
    app_id: int = 0
    project_state: int = 0
    description: str = ""
    expire_time: float = 0.0
    TABLE = "batch"


@dataclass(slots=True)
class Assignment(_RowMixin):
    id: int = 0
    create_time: int = 0
    target_id: int = 0
    target_type: int = 0
    multi: int = 0
    workunitid: int = 0
    resultid: int = 0
    TABLE = "assignment"


@dataclass(slots=True)
class MsgFromHost(_RowMixin):
    id: int = 0
    create_time: int = 0
    hostid: int = 0
    variety: str = ""
    handled: int = 0
    xml: str = ""
    TABLE = "msg_from_host"


@dataclass(slots=True)
class MsgToHost(_RowMixin):
    id: int = 0
    create_time: int = 0
    hostid: int = 0
    variety: str = ""
    handled: int = 0
    xml: str = ""
    TABLE = "msg_to_host"


@dataclass(slots=True)
class UserSubmit(_RowMixin):
    user_id: int = 0
    quota: float = 0.0
    logical_start_time: float = 0.0
    submit_all: int = 0
    manage_all: int = 0
    max_jobs_in_progress: int = 0
    TABLE = "user_submit"


@dataclass(slots=True)
class UserSubmitApp(_RowMixin):
    user_id: int = 0
    app_id: int = 0
    manage: int = 0
    TABLE = "user_submit_app"


@dataclass(slots=True)
class JobFile(_RowMixin):
    id: int = 0
    name: str = ""
    create_time: float = 0.0
    delete_time: float = 0.0
    TABLE = "job_file"
