"""Records for the core BOINC tables: one field per column, BOINC's names.

Defaults are the values BOINC's tools write for a fresh row.  ``id`` and
``mod_time`` are the server's to set and are never inserted.  Build a row
from a query result with ``Row.from_row(dict)`` (unknown keys are ignored,
so ``SELECT *`` keeps working after a column is added).
"""

from boincpy.record import Record

INT_MAX = 2147483647


class _RowMixin:
    """What every table's row adds to :class:`boincpy.record.Record`.  (Rows
    are records, not dataclasses: a page of the web site in classic CGI mode
    imports this module, and making these classes with ``dataclasses`` took
    8 ms of it.)"""

    __slots__ = ()

    @classmethod
    def columns(cls):
        """Column names in declaration order."""
        return cls._names

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
        names = cls._name_set
        return cls(**{k: v for k, v in row.items() if k in names})

    def insert_values(self):
        """Values for insert_columns(), in order."""
        return tuple(getattr(self, c) for c in self.insert_columns())


class Platform(_RowMixin, Record):
    FIELDS = (
        ("id", 0),
        ("create_time", 0),
        ("name", ""),
        ("user_friendly_name", ""),
        ("deprecated", 0),
    )
    TABLE = "platform"


class App(_RowMixin, Record):
    FIELDS = (
        ("id", 0),
        ("create_time", 0),
        ("name", ""),
        ("min_version", 0),
        ("deprecated", 0),
        ("user_friendly_name", ""),
        ("homogeneous_redundancy", 0),
        ("weight", 1.0),
        ("beta", 0),
        ("target_nresults", 0),
        ("min_avg_pfc", 1.0),
        ("host_scale_check", 0),
        ("homogeneous_app_version", 0),
        ("non_cpu_intensive", 0),
        ("locality_scheduling", 0),
        ("n_size_classes", 0),
        ("fraction_done_exact", 0),
    )
    TABLE = "app"


class AppVersion(_RowMixin, Record):
    FIELDS = (
        ("id", 0),
        ("create_time", 0),
        ("appid", 0),
        ("version_num", 0),
        ("platformid", 0),
        ("xml_doc", ""),
        ("min_core_version", 0),
        ("max_core_version", 0),
        ("deprecated", 0),
        ("plan_class", ""),
        ("pfc_n", 0.0),
        ("pfc_avg", 0.0),
        ("pfc_scale", 0.0),
        ("expavg_credit", 0.0),
        ("expavg_time", 0.0),
        ("beta", 0),
    )
    TABLE = "app_version"


class User(_RowMixin, Record):
    FIELDS = (
        ("id", 0),
        ("create_time", 0),
        ("email_addr", ""),
        ("name", ""),
        ("authenticator", ""),
        ("country", ""),
        ("postal_code", ""),
        ("total_credit", 0.0),
        ("expavg_credit", 0.0),
        ("expavg_time", 0.0),
        ("global_prefs", ""),
        ("project_prefs", ""),
        ("teamid", 0),
        ("venue", ""),
        ("url", ""),
        ("send_email", 0),
        ("show_hosts", 0),
        ("posts", 0),
        ("seti_id", 0),
        ("seti_nresults", 0),
        ("seti_last_result_time", 0),
        ("seti_total_cpu", 0.0),
        ("signature", ""),
        ("has_profile", 0),
        ("cross_project_id", ""),
        ("passwd_hash", ""),
        ("email_validated", 0),
        ("donated", 0),
        ("login_token", ""),
        ("login_token_time", 0.0),
        ("previous_email_addr", ""),
        ("email_addr_change_time", 0.0),
    )
    TABLE = "user"


class Team(_RowMixin, Record):
    FIELDS = (
        ("id", 0),
        ("create_time", 0),
        ("userid", 0),
        ("name", ""),
        ("name_lc", ""),
        ("url", ""),
        ("type", 0),
        ("name_html", ""),
        ("description", ""),
        ("nusers", 0),
        ("country", ""),
        ("total_credit", 0.0),
        ("expavg_credit", 0.0),
        ("expavg_time", 0.0),
        ("seti_id", 0),
        ("ping_user", 0),
        ("ping_time", 0),
        ("joinable", 1),
        ("mod_time", None),
    )
    TABLE = "team"


class Host(_RowMixin, Record):
    FIELDS = (
        ("id", 0),
        ("create_time", 0),
        ("userid", 0),
        ("rpc_seqno", 0),
        ("rpc_time", 0),
        ("total_credit", 0.0),
        ("expavg_credit", 0.0),
        ("expavg_time", 0.0),
        ("timezone", 0),
        ("domain_name", ""),
        ("serialnum", ""),
        ("last_ip_addr", ""),
        ("nsame_ip_addr", 0),
        ("on_frac", 0.0),
        ("connected_frac", 0.0),
        ("active_frac", 0.0),
        ("cpu_efficiency", 0.0),
        ("duration_correction_factor", 0.0),
        ("p_ncpus", 0),
        ("p_vendor", ""),
        ("p_model", ""),
        ("p_fpops", 0.0),
        ("p_iops", 0.0),
        ("p_membw", 0.0),
        ("os_name", ""),
        ("os_version", ""),
        ("m_nbytes", 0.0),
        ("m_cache", 0.0),
        ("m_swap", 0.0),
        ("d_total", 0.0),
        ("d_free", 0.0),
        ("d_boinc_used_total", 0.0),
        ("d_boinc_used_project", 0.0),
        ("d_boinc_max", 0.0),
        ("n_bwup", 0.0),
        ("n_bwdown", 0.0),
        ("credit_per_cpu_sec", 0.0),
        ("venue", ""),
        ("nresults_today", 0),
        ("avg_turnaround", 0.0),
        ("host_cpid", ""),
        ("external_ip_addr", ""),
        ("max_results_day", 0),
        ("error_rate", 0.0),
        ("product_name", ""),
        ("gpu_active_frac", 0.0),
        ("p_ngpus", 0),
        ("p_gpu_fpops", 0.0),
        ("misc", ""),
    )
    TABLE = "host"


class HostAppVersion(_RowMixin, Record):
    FIELDS = (
        ("host_id", 0),
        ("app_version_id", 0),
        ("pfc_n", 0.0),
        ("pfc_avg", 0.0),
        ("et_n", 0.0),
        ("et_avg", 0.0),
        ("et_var", 0.0),
        ("et_q", 0.0),
        ("max_jobs_per_day", 0),
        ("n_jobs_today", 0),
        ("turnaround_n", 0.0),
        ("turnaround_avg", 0.0),
        ("turnaround_var", 0.0),
        ("turnaround_q", 0.0),
        ("consecutive_valid", 0),
    )
    TABLE = "host_app_version"


class Workunit(_RowMixin, Record):
    FIELDS = (
        ("id", 0),
        ("create_time", 0),
        ("appid", 0),
        ("name", ""),
        ("xml_doc", ""),
        ("batch", 0),
        ("rsc_fpops_est", 0.0),
        ("rsc_fpops_bound", 0.0),
        ("rsc_memory_bound", 0.0),
        ("rsc_disk_bound", 0.0),
        ("need_validate", 0),
        ("canonical_resultid", 0),
        ("canonical_credit", 0.0),
        ("transition_time", 0),
        ("delay_bound", 0),
        ("error_mask", 0),
        ("file_delete_state", 0),
        ("assimilate_state", 0),
        ("hr_class", 0),
        ("opaque", 0.0),
        ("min_quorum", 0),
        ("target_nresults", 0),
        ("max_error_results", 0),
        ("max_total_results", 0),
        ("max_success_results", 0),
        ("result_template_file", ""),
        ("priority", 0),
        ("mod_time", None),
        ("rsc_bandwidth_bound", 0.0),
        ("fileset_id", 0),
        ("app_version_id", 0),
        ("transitioner_flags", 0),
        ("size_class", -1),
        ("keywords", ""),
        ("app_version_num", 0),
    )
    TABLE = "workunit"


class Result(_RowMixin, Record):
    FIELDS = (
        ("id", 0),
        ("create_time", 0),
        ("workunitid", 0),
        ("server_state", 0),
        ("outcome", 0),
        ("client_state", 0),
        ("hostid", 0),
        ("userid", 0),
        ("report_deadline", 0),
        ("sent_time", 0),
        ("received_time", 0),
        ("name", ""),
        ("cpu_time", 0.0),
        ("xml_doc_in", ""),
        ("xml_doc_out", ""),
        ("stderr_out", ""),
        ("batch", 0),
        ("file_delete_state", 0),
        ("validate_state", 0),
        ("claimed_credit", 0.0),
        ("granted_credit", 0.0),
        ("opaque", 0.0),
        ("random", 0),
        ("app_version_num", 0),
        ("appid", 0),
        ("exit_status", 0),
        ("teamid", 0),
        ("priority", 0),
        ("mod_time", None),
        ("elapsed_time", 0.0),
        ("flops_estimate", 0.0),
        ("app_version_id", 0),
        ("runtime_outlier", 0),
        ("size_class", -1),
        ("peak_working_set_size", 0.0),
        ("peak_swap_size", 0.0),
        ("peak_disk_usage", 0.0),
    )
    TABLE = "result"


class Batch(_RowMixin, Record):
    FIELDS = (
        ("id", 0),
        ("user_id", 0),
        ("create_time", 0),
        ("logical_start_time", 0.0),
        ("logical_end_time", 0.0),
        ("est_completion_time", 0.0),
        ("njobs", 0),
        ("fraction_done", 0.0),
        ("nerror_jobs", 0),
        ("state", 0),
        ("completion_time", 0.0),
        ("credit_estimate", 0.0),
        ("credit_canonical", 0.0),
        ("credit_total", 0.0),
        ("name", ""),
        ("app_id", 0),
        ("project_state", 0),
        ("description", ""),
        ("expire_time", 0.0),
    )
    TABLE = "batch"


class Assignment(_RowMixin, Record):
    FIELDS = (
        ("id", 0),
        ("create_time", 0),
        ("target_id", 0),
        ("target_type", 0),
        ("multi", 0),
        ("workunitid", 0),
        ("resultid", 0),
    )
    TABLE = "assignment"


class MsgFromHost(_RowMixin, Record):
    FIELDS = (
        ("id", 0),
        ("create_time", 0),
        ("hostid", 0),
        ("variety", ""),
        ("handled", 0),
        ("xml", ""),
    )
    TABLE = "msg_from_host"


class MsgToHost(_RowMixin, Record):
    FIELDS = MsgFromHost.FIELDS         # BOINC's two trickle tables have the same columns
    TABLE = "msg_to_host"


class UserSubmit(_RowMixin, Record):
    FIELDS = (
        ("user_id", 0),
        ("quota", 0.0),
        ("logical_start_time", 0.0),
        ("submit_all", 0),
        ("manage_all", 0),
        ("max_jobs_in_progress", 0),
    )
    TABLE = "user_submit"


class UserSubmitApp(_RowMixin, Record):
    FIELDS = (
        ("user_id", 0),
        ("app_id", 0),
        ("manage", 0),
    )
    TABLE = "user_submit_app"


class JobFile(_RowMixin, Record):
    FIELDS = (
        ("id", 0),
        ("name", ""),
        ("create_time", 0.0),
        ("delete_time", 0.0),
    )
    TABLE = "job_file"
