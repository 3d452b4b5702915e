"""The project's config.xml: one declared table of options drives everything.

Like gunicorn's config module, every option the server reads is declared once
in ``_TABLE`` (name, type, default, section, doc[, example]).  That table
drives parsing (``load_config``), typed attribute access and defaults
(``Config``), writing (``write_config``), the option reference
(``describe_options``) and the commented ``config.xml.example``
(``example_config``).

The file layout is BOINC's::

    <boinc>
      <config> ...options... </config>
      <daemons> <daemon><cmd>feeder -d 3</cmd>...</daemon> ... </daemons>
      <tasks> <task><cmd>..</cmd><period>24 hours</period>...</task> ... </tasks>
    </boinc>

Value syntax follows BOINC's C++ XML parser (lib/parse.cpp): booleans are
``<opt/>`` or ``<opt>N</opt>`` (non-zero = true); integers are read like
``strtol(text, 0)`` (``0x..`` hex, leading ``0`` octal); text is stripped of
surrounding white space.  Unknown options are kept (``Config.unknown``) and
reported once, because the web code and tools read options the scheduler does
not know.

What a parse produces lives in :mod:`boincpy.parsed_config` (Config, with
the snapshot that lets a CGI skip this module) and :mod:`boincpy.config_specs`
(DaemonSpec, TaskSpec, the job limits): the scheduler and the upload handler
parse config.xml only on the first request after it (or config_aux.xml, or
this table) changed.  The parse imports only the standard library's expat
binding and builds no tree beyond small lists.
"""

import os
import sys

from boincpy.cnum import strtod, strtol
from boincpy.errors import ConfigError
# what a parse produces lives there (see its docstring: a CGI reads it
# without this module); these names are this module's too
from boincpy.config_specs import (  # noqa: F401
    DaemonSpec, JobLimitSpec, JobLimitsSpec, RscJobLimit, TaskSpec, command_basename,
    format_period, parse_period)
from boincpy.parsed_config import (  # noqa: F401
    CONFIG_AUX_FILE, CONFIG_FILE, Config, find_project_dir, non_option_values, short_hostname)
from boincpy.xml import MAX_DEPTH, parse_bool, xml_escape


# ---------------------------------------------------------------------------
# Option table.  Types:
#   bool   <opt/>, <opt>1</opt>, <opt>0</opt>
#   int    strtol base 0: decimal, 0x hex, leading-0 octal
#   float  decimal / exponent
#   str    text, white space stripped
#   path   str; empty -> a directory under the project, relative -> joined
#          to the project directory
#   octal  permission bits written in octal (fuh_set_*_permission); None = unset
#   list   repeatable str (each occurrence appends)
#   ints   repeatable int
#   xml    raw inner XML text (for options with structure)
# A numeric type may carry its range after a space: "int 0.." (no upper
# bound), "float 0..1", "octal 0..0o7777"; a value outside it is refused
# with file, line and option named.  Floats must be finite.
# Sections group the reference text and the example file.

# Doc prefix of options only BOINC's PHP volunteer site reads.
_VOLUNTEER_SITE = "Read by BOINC's PHP site, not yet by boincpy's: "

_TABLE = (
    # -- project identity and database --------------------------------------
    ("master_url", "str", "", "project",
     "Canonical project URL (master page); reported in scheduler replies.",
     "https://example.org/proj/"),
    ("long_name", "str", "", "project",
     "Human-readable project name (<project_name> in replies).", "Example Project"),
    ("host", "str", "", "project",
     "Short host name of the main server; bin/start runs daemons and tasks "
     "whose <host> is this.  Empty: this machine's short host name.", "server1"),
    ("project_dir", "str", "", "project",
     "Override of the project root (normally the directory holding config.xml)."),
    ("db_name", "str", "", "project", "Database name.", "proj"),
    ("db_user", "str", "", "project", "Database user.", "boincadm"),
    ("db_passwd", "str", "", "project", "Database password.", "secret"),
    ("db_host", "str", "", "project",
     "Database host (host or host:port); empty or this machine's host name "
     "means localhost."),
    ("db_socket", "str", "", "project",
     "boincpy extension: Unix socket of the database server (empty: the "
     "client library's default)."),
    ("replica_db_name", "str", "", "project",
     "Read-replica database name (empty: db_name).  db_dump and antique_file_deleter "
     "read through the replica (each empty replica_db_* taken from db_*); the ops "
     "pages' lists and counts read it only if all four replica_db_* are set, else or "
     "if it refuses they use the main database (BOINC's BoincDb::get(true)); the "
     "account RPCs always use the main database."),
    ("replica_db_user", "str", "", "project", "Read-replica user (empty: db_user)."),
    ("replica_db_passwd", "str", "", "project", "Read-replica password (empty: db_passwd)."),
    ("replica_db_host", "str", "", "project",
     "Read-replica host (empty: db_host; db_dump --db_host overrides it)."),
    ("shmem_key", "int", 0, "project",
     "Key of the feeder/scheduler shared-memory segment (hex allowed: 0x1111abcd).",
     0x1111ABCD),
    ("project_user_name", "str", "", "project",
     "If set, bin/start refuses to run as any other user."),
    ("ssh_exec", "str", "ssh", "project",
     "Command bin/start uses to reach other hosts."),
    ("httpd_user", "str", "apache", "project", "User the web server runs as."),

    # -- directories and URLs -----------------------------------------------
    ("key_dir", "path", "", "paths",
     "Directory of the key files (empty: PROJECT/keys)."),
    ("download_url", "str", "", "paths",
     "URL of the download hierarchy.", "https://example.org/proj/download"),
    ("download_dir", "path", "", "paths",
     "Directory of the download hierarchy (empty: PROJECT/download)."),
    ("upload_url", "str", "", "paths",
     "URL of the file upload handler.",
     "https://example.org/proj_cgi/file_upload_handler"),
    ("upload_dir", "path", "", "paths",
     "Directory of the upload hierarchy (empty: PROJECT/upload)."),
    ("uldl_dir_fanout", "int 0..", 0, "paths",
     "Number of hashed buckets in the upload/download hierarchies (0: flat). "
     "Never change it once files exist.", 1024),
    ("app_dir", "path", "", "paths",
     "Directory of application versions to install (empty: PROJECT/apps)."),
    ("log_dir", "path", "", "paths",
     "The web pages' log directory (remote submission logs, show_log.php, the ops "
     "log; empty: PROJECT/log_<this host>). Daemons, tasks, the scheduler and the "
     "upload handler always write to PROJECT/log_<their host>, as BOINC's do."),
    ("pid_dir", "path", "", "paths",
     "Directory of pid and lock files (empty: PROJECT/pid_<this host>)."),
    ("tmp_dir", "path", "", "paths",
     "Working directory of daemons (empty: PROJECT/tmp_<this host>)."),
    ("sched_lockfile_dir", "str", "", "paths",
     "If set, the scheduler takes a per-host lock file in this directory."),
    ("debug_req_reply_dir", "str", "", "paths",
     "If set, the scheduler saves each request and reply here."),
    ("cache_md5_info", "bool", False, "paths",
     "create_work keeps FILE.md5 ('<md5> <size>') next to each input file and takes "
     "them from it while it is not older than the file (so a large file shared by "
     "many jobs is hashed once); file_deleter removes it with the file.", True),

    # -- upload handler -------------------------------------------------------
    ("fuh_debug_level", "int 0..10", 3, "upload",
     "Upload handler log verbosity (1 critical, 2-3 normal, 4 debug)."),
    ("fuh_set_initial_permission", "octal 0..0o7777", None, "upload",
     "Octal mode of files while being uploaded (unset: 0664)."),
    ("fuh_set_completed_permission", "octal 0..0o7777", None, "upload",
     "Octal mode set when an upload completes (unset: unchanged)."),
    ("ignore_upload_certificates", "bool", False, "upload",
     "The upload handler does not check upload certificates.", True),
    ("dont_generate_upload_certificates", "bool", False, "upload",
     "Output file descriptions carry no <xml_signature>.", True),
    ("allow_any_upload_url", "bool", False, "upload",
     "boincpy extension: the output template a remote submission's job brings may "
     "name any upload URL.  Without it its <file_info>s may name only <UPLOAD_URL/> "
     "or upload_url, so a submitter can't send volunteers' results to a host of "
     "their choosing.", True),

    # -- scheduler: job limits --------------------------------------------------
    ("sched_debug_level", "int 0..10", 3, "scheduler",
     "Scheduler log verbosity (1 critical, 2-3 normal, 4 debug incl. SQL)."),
    ("max_wus_to_send", "int 0..", 10, "scheduler",
     "Jobs per RPC per (CPU + gpu_multiplier x GPU) instance.", 50),
    ("daily_result_quota", "int 0..", 0, "scheduler",
     "Base daily job quota per host app version.", 500),
    ("gpu_multiplier", "int 0..", 0, "scheduler",
     "Weight of a GPU in per-RPC and daily limits."),
    ("max_wus_in_progress", "int 0..", 0, "scheduler",
     "Jobs in progress per CPU (0: no limit)."),
    ("max_wus_in_progress_gpu", "int 0..", 0, "scheduler",
     "Jobs in progress per GPU (0: no limit)."),
    ("max_ncpus", "int 0..", 64, "scheduler", "Cap on the CPUs counted for limits."),
    ("min_sendwork_interval", "int 0..", 0, "scheduler",
     "Seconds a host must wait between work requests.", 6),
    ("one_result_per_user_per_wu", "bool", False, "scheduler",
     "Never send two instances of a workunit to the same user."),
    ("one_result_per_host_per_wu", "bool", False, "scheduler",
     "Never send two instances of a workunit to the same host."),
    ("send_result_abort", "bool", False, "scheduler",
     "Tell clients to abort jobs that are no longer needed.", True),
    ("resend_lost_results", "bool", False, "scheduler",
     "Resend jobs the client has lost."),
    ("report_grace_period", "int 0..", 0, "scheduler",
     "Seconds after the client deadline before a job times out."),
    ("grace_period_hours", "float 0..", 0.0, "scheduler",
     "Same as report_grace_period, in hours: sets report_grace_period where it is "
     "read, so the later of the two in the file wins."),
    ("delete_delay_hours", "float 0..", 0.0, "scheduler",
     "Hours to keep files after the last report (Config.delete_delay is in seconds)."),
    ("maintenance_delay", "float 0..", 3600.0, "scheduler",
     "request_delay in 'down for maintenance' replies."),
    ("min_core_client_version", "int 0..", 0, "scheduler",
     "Reject clients older than this (M*10000+m*100+r; values below 10000 are x100)."),
    ("min_core_client_version_announced", "int 0..", 0, "scheduler",
     "Warn clients older than this (same encoding)."),
    ("min_core_client_upgrade_deadline", "int 0..", 0, "scheduler",
     "Unix time from which min_core_client_version_announced is enforced."),
    ("next_rpc_delay", "float 0..", 0.0, "scheduler",
     "Ask clients to contact the project again after this many seconds."),
    ("shmem_work_items", "int 1..", 100, "scheduler", "Job-cache slots in shared memory."),
    ("feeder_query_size", "int 0..", 0, "scheduler",
     "Feeder enumeration LIMIT (0: 2 x shmem_work_items)."),
    ("default_disk_min_free_gb", "float 0..", 1.0, "scheduler",
     "Floor of the disk_min_free_gb preference."),
    ("default_disk_max_used_gb", "float 0..", 0.0, "scheduler",
     "Web site only: the disk_max_used_gb a preferences form starts from (0: no "
     "limit).  The scheduler never reads it, as BOINC's doesn't."),
    ("default_disk_max_used_pct", "float 0..100", 90.0, "scheduler",
     "Web site only: the disk_max_used_pct a preferences form starts from.  The "
     "scheduler never reads it, as BOINC's doesn't."),
    ("dont_send_jobs", "bool", False, "scheduler", "Scheduler and feeder send no jobs."),
    ("ended", "bool", False, "scheduler", "Tell clients the project has ended."),
    ("non_cpu_intensive", "bool", False, "scheduler",
     "Every app is non-CPU-intensive: a host gets one job of each it has none of."),
    ("verify_files_on_app_start", "bool", False, "scheduler",
     "Clients check file signatures when starting apps."),
    ("strict_memory_bound", "bool", False, "scheduler",
     "Clients enforce the memory bound strictly."),
    ("dont_store_success_stderr", "bool", False, "scheduler",
     "Do not store stderr of successful results."),
    ("max_results_accepted", "int 0..", 0, "scheduler",
     "Cap on results accepted per RPC (0: none)."),
    ("report_max", "int 0..", 0, "scheduler",
     "Ask clients to report at most this many results per RPC (0: no cap)."),
    ("msg_to_host", "bool", False, "scheduler",
     "Deliver trickle-down messages: each reply carries the host's msg_to_host rows not "
     "yet handled (then marked handled), e.g. trickle_echo's answers; with nowork_skip "
     "the database is still read.  Trickle-ups are stored whatever this says."),
    ("ban_os", "list", (), "scheduler",
     "Refuse hosts whose 'os_name<TAB>os_version' matches this POSIX ERE (repeatable)."),
    ("ban_cpu", "list", (), "scheduler",
     "Refuse hosts whose 'p_vendor<TAB>p_model' matches this POSIX ERE (repeatable)."),
    ("no_amd_k6", "bool", False, "scheduler",
     "Refuse AMD K6 hosts: adds BOINC's ban_cpu pattern "
     "'.*AMD.*<TAB>.*Family 5 Model 8 Stepping 0.*'."),
    ("nowork_skip", "bool", False, "scheduler", "Skip database work when there are no jobs."),
    ("credit_by_app", "bool", False, "scheduler", "Maintain credit_user/credit_team per app."),
    ("request_time_stats_log", "bool", False, "scheduler",
     "Ask each host for its time-stats log (when it was on, connected, computing) until "
     "one is stored: PROJECT/time_stats_log/(HOSTID % 1000)/HOSTID, for analysis; a log "
     "that arrives unasked is stored too."),
    ("workload_sim", "bool", False, "scheduler",
     "Ask clients for their whole queue (<send_full_workload/>) and refuse a job an "
     "earliest-deadline-first simulation of that queue on the host's CPUs says would be "
     "late or make a queued task late (edf_sim.cpp; boincpy.sched.edf)."),
    ("prefer_primary_platform", "bool", False, "scheduler",
     "Prefer app versions of the host's primary platform."),
    ("version_select_random_factor", "float 0..", 1.0, "scheduler",
     "Random spread in app version selection."),
    ("ignore_delay_bound", "bool", False, "scheduler",
     "Send jobs even if they may miss their deadline."),
    ("estimate_flops_from_hav_pfc", "bool", False, "scheduler",
     "Estimate FLOPS from host_app_version statistics."),
    ("rte_no_stats", "bool", False, "scheduler",
     "Runtime estimates ignore statistics."),
    ("scheduler_log_buffer", "int 0..", 32768, "scheduler",
     "Bytes of a request's scheduler.log lines held before they are written, in "
     "blocks of this size (BOINC's stderr buffer), so requests running at once do "
     "not interleave lines; 0 writes each line at once."),
    ("symstore", "str", "", "scheduler", "URL of a symbol store for Windows clients."),
    ("user_url", "bool", True, "scheduler", "db_dump exports user.url."),
    ("user_country", "bool", True, "scheduler", "db_dump exports user.country."),
    ("file_deletion_strategy", "int 0..", 0, "scheduler",
     "1: locality scheduling tells a host to delete a data file that had no job for it "
     "while it could take more (<delete_file_info>)."),
    ("dont_search_host_for_user", "ints 1..", (), "scheduler",
     "User id whose hosts are never matched by CPID (repeatable)."),

    # -- advanced scheduling -------------------------------------------------------
    ("homogeneous_redundancy", "int 0..2", 0, "advanced",
     "Homogeneous redundancy level (0 off, 1 fine, 2 coarse)."),
    ("hr_class_static", "bool", False, "advanced", "HR class fixed at workunit creation."),
    ("hr_allocate_slots", "bool", False, "advanced",
     "The feeder shares the job array out among homogeneous redundancy classes: half of "
     "a type's slots to uncommitted jobs, the rest by each class's recent credit from "
     "PROJECT/hr_info.txt (written by the census task; the feeder won't start without "
     "it), at least one a class."),
    ("reliable_on_priority", "int", 0, "advanced",
     "Send jobs with priority >= this only to reliable hosts."),
    ("reliable_max_avg_turnaround", "int 0..", 0, "advanced",
     "Reliable hosts' maximum average turnaround (seconds)."),
    ("reliable_max_error_rate", "float 0..1", 0.0, "advanced",
     "Accepted and ignored: BOINC's scheduler parses it but no longer uses it "
     "(reliability goes by consecutive_valid, turnaround and the daily quota)."),
    ("reliable_reduced_delay_bound", "float 0..", 0.0, "advanced",
     "Delay-bound factor for jobs sent to reliable hosts."),
    ("reliable_priority_on_over", "int", 0, "advanced",
     "Priority boost of retries after a result fails."),
    ("reliable_priority_on_over_except_error", "int", 0, "advanced",
     "Priority boost of retries except after errors."),
    ("locality_scheduling", "bool", False, "advanced",
     "Locality scheduling: jobs named FILE__... go to hosts that hold the sticky file "
     "FILE, found in the result table by name, not in the feeder's array "
     "(boincpy.sched.locality)."),
    ("locality_scheduler_fraction", "float 0..1", 0.0, "advanced",
     "Share of requests (0-1) that try locality scheduling first, then the sched_old "
     "array scan; the others the other way round."),
    ("locality_scheduling_sorted_order", "bool", False, "advanced",
     "Locality scheduling: go through a host's files in name order (else from a "
     "random one)."),
    ("locality_scheduling_wait_period", "int 0..", 0, "advanced",
     "Locality scheduling: when a file's jobs run out, wait this many seconds (once a "
     "file) for the work generator, then look again (0: don't wait)."),
    ("locality_scheduling_send_timeout", "int 0..", 0, "advanced",
     "Locality scheduling: jobs unsent for longer than this (seconds) go first, to hosts "
     "downloading over 100 kB/s; between this and half of it, to any host with no file "
     "work (0: off)."),
    ("locality_scheduling_workunit_file", "list", (), "advanced",
     "Locality scheduling: a host's sticky files matching this POSIX ERE are data files "
     "to find jobs by (repeatable).  With none given every sticky file is one (BOINC "
     "would tell hosts to delete them all)."),
    ("locality_scheduling_sticky_file", "list", (), "advanced",
     "Locality scheduling: sticky files matching this POSIX ERE (and no "
     "locality_scheduling_workunit_file) may be deleted to make room; files matching "
     "neither list are deleted from the host (repeatable)."),
    ("enable_assignment", "bool", False, "advanced", "Enable targeted job assignment."),
    ("enable_assignment_multi", "bool", False, "advanced", "Enable multi-host assignment."),
    ("job_size_matching", "bool", False, "advanced",
     "Accepted and ignored: BOINC's feeder then keeps a job-size statistic that nothing "
     "in its scheduler reads (size_classes is what matches jobs to hosts)."),
    ("size_classes", "bool", False, "advanced", "Jobs have size classes (not with batch_accel)."),
    ("batch_accel", "bool", False, "advanced",
     "High-priority jobs of apps with n_size_classes > 0 go only to hosts with "
     "error_rate > 0 (low turnaround), with +10 (not with size_classes)."),
    ("keyword_sched", "bool", False, "advanced",
     "Score jobs by workunit.keywords against the volunteer's yes/no keywords "
     "(PROJECT/kw_prefs/USERID or the request's <user_keywords>)."),
    ("user_filter", "bool", False, "advanced", "Jobs may be restricted to users."),
    ("distinct_beta_apps", "bool", False, "advanced",
     "With sched_old: beta apps must be selected in the volunteer's preferences too."),
    ("replace_download_url_by_timezone", "str", "", "advanced",
     "If set, each download <url> of a sent app version or job containing this text "
     "becomes one <url> per mirror listed in PROJECT/download_servers (lines "
     "'UTC_OFFSET_SECONDS URL'), the mirror URL followed by the rest of the original, "
     "nearest the host's time zone first (e.g. the download_url with a trailing /)."),
    ("max_download_urls_per_file", "int 0..", 0, "advanced",
     "With replace_download_url_by_timezone: at most this many mirror URLs per file "
     "(0: all)."),
    ("enable_vda", "bool", False, "advanced",
     "Volunteer data archival: BOINC's scheduler code for it is not compiled in "
     "(ENABLE_VDA), so its only effect is that of BOINC: nowork_skip still reads the "
     "database."),
    ("vda_host_timeout", "float 0..", 0.0, "advanced",
     "Accepted and ignored: read only by BOINC's volunteer data archival code, which "
     "its scheduler does not compile."),
    ("sched_old", "bool", False, "advanced",
     "Use the old multi-pass array scan instead of job scores (no keyword or "
     "batch_accel terms)."),

    # -- scheduler log flags ----------------------------------------------------------
    ("debug_assignment", "bool", False, "debug", "Log job assignment."),
    ("debug_client_files", "bool", False, "debug",
     "Log sticky files matched against PROJECT/file_delete_regex."),
    ("debug_credit", "bool", False, "debug", "Log credit computation."),
    ("debug_edf_sim_detail", "bool", False, "debug",
     "Log each step of workload_sim's simulation."),
    ("debug_edf_sim_workload", "bool", False, "debug",
     "Log the queue workload_sim simulates."),
    ("debug_fcgi", "bool", False, "debug", "Log FastCGI handling."),
    ("debug_handle_results", "bool", False, "debug", "Log reported results."),
    ("debug_keyword", "bool", False, "debug", "Log keyword scheduling."),
    ("debug_locality", "bool", False, "debug",
     "Log locality scheduling ([locality] and [mixed] lines)."),
    ("debug_locality_lite", "bool", False, "debug", "Log locality scheduling lite."),
    ("debug_prefs", "bool", False, "debug", "Log preferences handling."),
    ("debug_quota", "bool", False, "debug", "Log quota checks."),
    ("debug_request_details", "bool", False, "debug", "Log request details."),
    ("debug_request_headers", "bool", False, "debug", "Log HTTP request headers."),
    ("debug_resend", "bool", False, "debug", "Log resending of lost jobs."),
    ("debug_send", "bool", False, "debug", "Log job sending."),
    ("debug_send_job", "bool", False, "debug", "Log each job sent."),
    ("debug_send_scan", "bool", False, "debug", "Log the job-cache scan."),
    ("debug_user_messages", "bool", False, "debug", "Log messages to users."),
    ("debug_vda", "bool", False, "debug",
     "Accepted and ignored: read only by BOINC's volunteer data archival code, which "
     "its scheduler does not compile."),
    ("debug_version_select", "bool", False, "debug", "Log app version selection."),

    # -- read only by the web code ---------------------------------------------------
    ("disable_account_creation", "bool", False, "web",
     "No new accounts: create_account.php refuses them and get_project_config.php "
     "says <account_creation_disabled/>."),
    ("disable_account_creation_rpc", "bool", False, "web",
     "create_account.php refuses new accounts (the web site may still make them)."),
    ("disable_web_account_creation", "bool", False, "web",
     "Written by BOINC's make_project but read by no BOINC code (its web code reads "
     "no_web_account_creation); accepted and ignored."),
    ("no_web_account_creation", "bool", False, "web",
     "No new accounts through the web site; with disable_account_creation_rpc, "
     "create_account.php answers 'not accepting new accounts' instead of 'visit the "
     "project web site'."),
    ("account_creation_rpc_require_consent", "bool", False, "web",
     "Account-creation RPC requires terms-of-use consent."),
    ("enable_login_mustagree_termsofuse", "bool", False, "web",
     _VOLUNTEER_SITE + "users must accept the terms of use at web login."),
    ("enable_privacy_by_default", "bool", False, "web",
     "New accounts (create_account.php's too) hide their computers (show_hosts 0)."),
    ("show_results", "bool", False, "web",
     "The site shows task lists on computer and task pages (results.php)."),
    ("enable_delete_account", "int 0..", 0, "web",
     "Users may delete their accounts (delete_account_request.php, confirmed by an "
     "e-mailed link): 0 no; 1 obfuscate (the row stays, its name, e-mail and keys "
     "replaced, hosts anonymised); 2 wipe (every row of the account deleted); 3 (a "
     "project's own PHP function) is refused by boincpy."),
    ("no_computing", "bool", False, "web",
     "Written by BOINC's make_project --no_computing but read by no BOINC code; "
     "accepted and ignored."),
    ("disable_team_creation", "bool", False, "web", "No new teams (create_team.php refuses)."),
    ("account_manager", "bool", False, "web",
     "The project is an account manager: get_project_config.php says <account_manager/>."),
    ("dont_suppress_pending", "bool", False, "web", "The site shows pending credit."),
    ("moderators_allowed_to_ban", "bool", False, "web",
     "Volunteer moderators, not only administrators, may banish a post's author "
     "(forum_moderate_post.php?action=banish_user)."),
    ("moderators_vote_to_ban", "bool", False, "web",
     "Moderators may start a vote to banish a post's author "
     "(forum_banishment_vote.php): the author is banished while the six-hour vote "
     "runs, and for two weeks if it ends with more ayes than nays."),
    ("post_report_emails", "str", "", "web",
     "E-mail addresses, separated by |, that get the message boards' moderation "
     "and banishment reports (BOINC's POST_REPORT_EMAILS in project.inc)."),
    ("no_forum_rating", "bool", False, "web", "No forum post rating (forum_rate.php refuses)."),
    ("forum_max_edit_time", "int 0..", 3600, "web",
     "Seconds after posting in which a volunteer may still edit a post (BOINC's "
     "project.inc MAXIMUM_EDIT_TIME); moderators may edit any time."),
    ("forum_need_credit_to_post", "bool", True, "web",
     "Users without credit may post only in help-desk categories (BOINC's project.inc "
     "NEED_CREDIT_TO_POST_EXCEPT_HELP); each forum's post_min_total_credit, "
     "post_min_expavg_credit and post_min_interval apply too."),
    ("forum_post_max_links", "int 0..", 0, "web",
     "Most links a post may hold, moderators excepted; 0: no limit (BOINC's POST_MAX_LINKS)."),
    ("profile_screening", "bool", False, "web", "Profiles are screened (ops profile_screen_form.php) before others see them."),
    ("team_forums_members_only", "bool", False, "web", "Team message boards are visible to the team's members only."),
    ("scheduler_disk_space_check_hardcoded", "bool", False, "web",
     _VOLUNTEER_SITE + "the preferences page notes the hard-coded disk check."),
    ("cgi_url", "str", "", "web",
     "URL of the cgi-bin directory; read by no BOINC code (only BOINC's retired test "
     "harness wrote it); accepted and ignored."),
    ("stripchart_cgi_url", "str", "", "web",
     "URL of the stripchart CGI, linked from BOINC's ops index page; boincpy's ops "
     "pages have no stripcharts and ignore it."),
    ("akismet_key", "str", "", "web", _VOLUNTEER_SITE + "Akismet spam filter key."),
    ("recaptcha_public_key", "str", "", "web",
     "reCAPTCHA site key: the sign-up form shows the reCAPTCHA box (Google's script "
     "must then be allowed by the site's Content-Security-Policy)."),
    ("recaptcha_private_key", "str", "", "web",
     "reCAPTCHA secret key: when set, a sign-up (create_account_action.php) is "
     "refused unless the verifier accepts the form's g-recaptcha-response "
     "(off when empty)."),
    ("recaptcha_verify_url", "str", "https://www.google.com/recaptcha/api/siteverify",
     "web", "URL of the reCAPTCHA verifier (asked with secret, response and remoteip, "
     "as BOINC's recaptchalib.inc asks Google's)."),
    ("rpc_key", "str", "", "web",
     _VOLUNTEER_SITE + "key the BOINC web site passes to download_software.php."),
    ("project_id", "int 0..", 0, "web",
     _VOLUNTEER_SITE + "project id assigned by BOINC (download_software.php, sample_index.php)."),
    ("min_passwd_length", "int 0..", 6, "web",
     "Minimum password length, announced by get_project_config.php and enforced by "
     "the web site's forms (the account RPCs see only a hash)."),
    ("profile_min_credit", "float 0..", 0.0, "web", "Total credit needed to create a profile (create_profile.php)."),
    ("hosts_per_page", "int 1..", 20, "web", "Rows per page in the top-hosts list (top_hosts.php)."),
    ("teams_per_page", "int 1..", 20, "web", "Rows per page in the top-teams list (top_teams.php)."),
    ("users_per_page", "int 1..", 20, "web", "Rows per page in the top-users list (top_users.php)."),
    ("sandbox_dir", "str", "", "web",
     "Remote job submission only: directory of per-user sandbox files (BOINC's web "
     "sandbox; boincpy refuses the sandbox file mode, so nothing reads it)."),
    ("remote_submission_log", "str", "", "web",
     "File in the log directory where job_file.php appends each request's XML "
     "(empty: none)."),
    ("remote_submit_log", "str", "", "web",
     "File in the log directory where submit_rpc_handler.php and job_file.php log "
     "what they do and refuse (BOINC's log_write; empty: no log)."),
    ("remote_submit_request_log", "str", "", "web",
     "File in the log directory where submit_rpc_handler.php appends each request's "
     "XML (empty: none)."),
    ("secure_url_base", "str", "", "web",
     "URL base of the account web RPCs, sent as <web_rpc_url_base> by "
     "get_project_config.php (BOINC's SECURE_URL_BASE in project.inc; empty: master_url)."),
    ("invite_codes", "str", "", "web",
     "If set, new accounts need an invitation code matching this regular expression "
     "(BOINC's INVITE_CODES in project.inc; PHP form /.../flags or a plain regex)."),
    ("invite_codes_rpc", "str", "", "web",
     "Regular expression for invitation codes of create_account.php only; the code "
     "is stored in user.signature (BOINC's INVITE_CODES_RPC)."),
    ("banned_email_domain", "list", (), "web",
     "New accounts may not use an e-mail address ending in this text "
     "(repeatable; BOINC's $banned_email_domains)."),
    ("enable_am_set_info_rpc", "bool", False, "web",
     "boincpy extension: serve am_set_info.php (account managers changing account "
     "attributes); BOINC answers 'not supported'."),
    ("app_select_prefs", "bool", False, "web",
     "The project preferences form lets volunteers choose among the apps "
     "(<apps_selected>, <allow_non_preferred_apps> in project_specific; BOINC's "
     "APP_SELECT_PREFS in project.inc)."),
    ("max_jobs_pref", "bool", False, "web",
     "The project preferences form offers a cap on this project's jobs in progress "
     "(<max_jobs> in project_specific, 0-8; BOINC's MAX_JOBS_PREF)."),
    ("max_cpus_pref", "bool", False, "web",
     "The project preferences form offers a cap on the CPUs this project's jobs use "
     "(<max_cpus> in project_specific, 0-8; BOINC's MAX_CPUS_PREF)."),
    ("enable_create_team_rpc", "bool", False, "web",
     "boincpy extension: serve create_team.php; BOINC disabled this RPC (spam) and "
     "answers 'Nope'."),
    ("email_from", "str", "", "web",
     "boincpy: the From: address of e-mail the web site sends (mass_email.php, the "
     "account pages; BOINC's EMAIL_FROM in project.inc); empty: noreply@ the master "
     "URL's host."),
    ("email_command", "str", "", "web",
     "boincpy: a local command that sends one e-mail given on its standard input "
     "(headers, blank line, body), such as '/usr/sbin/sendmail -t -i'; used when "
     "smtp_host is empty. Neither set: mass_email.php writes the messages to an mbox "
     "file in PROJECT/mail/ instead.",
     "/usr/sbin/sendmail -t -i"),
    ("smtp_host", "str", "", "web",
     "boincpy: the SMTP server the web site sends e-mail through (boincpy.mail: "
     "password-reset links, e-mail-change notices, account deletion, mass_email.php); "
     "empty: email_command sends it, and with neither the pages say no e-mail could "
     "be sent (mass_email.php writes an mbox file).", "smtp.example.org"),
    ("smtp_port", "int 0..65535", 0, "web",
     "boincpy: port of smtp_host (0: 587 with smtp_starttls, else 25)."),
    ("smtp_starttls", "bool", False, "web",
     "boincpy: switch the SMTP connection to TLS (STARTTLS) before logging in or "
     "sending; refuse to send if the server can't."),
    ("smtp_username", "str", "", "web",
     "boincpy: user name to log in to smtp_host with (empty: no login)."),
    ("smtp_password", "str", "", "web", "boincpy: password of smtp_username."),

    # -- obsolete options still found in old files (accepted, ignored) ----------------
    ("debug_array", "bool", False, "obsolete", "Obsolete; ignored."),
    ("debug_array_detail", "bool", False, "obsolete", "Obsolete; ignored."),
    ("matchmaker", "bool", False, "obsolete", "Obsolete; ignored."),
    ("mm_min_slots", "int", 0, "obsolete", "Obsolete; ignored."),
    ("mm_max_slots", "int", 0, "obsolete", "Obsolete; ignored."),
    ("no_vista_sandbox", "bool", False, "obsolete", "Obsolete; ignored."),
    ("fp_benchmark_weight", "float", 0.0, "obsolete", "Obsolete; ignored."),
)

_SECTIONS = (
    ("project", "Project identity, database and hosts"),
    ("paths", "Directories and URLs"),
    ("upload", "File upload handler"),
    ("scheduler", "Scheduler and feeder"),
    ("advanced", "Advanced scheduling"),
    ("debug", "Scheduler log flags"),
    ("web", "Read only by the web code"),
    ("obsolete", "Obsolete (accepted and ignored)"),
)


class Option:
    """One declared option: its name, type, range (``min``/``max``, None
    where open), default, section and doc text; :meth:`validate` reads a
    value written in config.xml."""

    __slots__ = ("name", "type", "min", "max", "default", "section", "doc", "example")

    def __init__(self, name, type, default, section, doc, example=None):
        kind, _, bounds = type.partition(" ")
        self.name = name
        self.type = kind
        self.min = self.max = None
        if bounds:
            low, _, high = bounds.partition("..")
            self.min = _bound(kind, low)
            self.max = _bound(kind, high)
        self.default = default
        self.section = section
        self.doc = doc
        self.example = example

    def validate(self, text):
        """The value of ``text`` written for this option; ValueError with a
        message (without the file and line) when it isn't one."""
        try:
            value = _convert(self.type, text)
        except ValueError:
            raise ValueError("%r is not %s" % (text, _TYPE_WORDS.get(self.type, self.type))) \
                from None
        if self.min is not None and value < self.min:
            raise ValueError("%s is below the minimum %s" % (text, _bound_text(self, self.min)))
        if self.max is not None and value > self.max:
            raise ValueError("%s is above the maximum %s" % (text, _bound_text(self, self.max)))
        return value

    def range_text(self):
        """The range as the reference shows it ("0 or more", "0 to 1"), or ""."""
        if self.min is None and self.max is None:
            return ""
        if self.max is None:
            return "%s or more" % _bound_text(self, self.min)
        if self.min is None:
            return "at most %s" % _bound_text(self, self.max)
        return "%s to %s" % (_bound_text(self, self.min), _bound_text(self, self.max))

    def __repr__(self):
        return "Option(%r, %r, %r)" % (self.name, self.type, self.default)


def _bound(kind, text):
    if not text:
        return None
    return int(text, 0) if kind in ("int", "ints", "octal") else float(text)


def _bound_text(opt, value):
    if opt.type == "octal":
        return "0%o" % value if value else "0"
    return "%g" % value


# name -> Option, in table order (dicts keep insertion order).
OPTIONS = {row[0]: Option(*row) for row in _TABLE}
_TYPES = {name: opt.type for name, opt in OPTIONS.items()}
_SCALAR_DEFAULTS = {name: opt.default for name, opt in OPTIONS.items()
                    if opt.type not in ("list", "ints")}
_LIST_NAMES = tuple(name for name, opt in OPTIONS.items() if opt.type in ("list", "ints"))

# Empty path option -> directory under the project root.  log/pid/tmp are
# per host, as bin/start creates them.
_PATH_DEFAULTS = {"key_dir": "keys", "download_dir": "download",
                  "upload_dir": "upload", "app_dir": "apps",
                  "log_dir": "log_%s", "pid_dir": "pid_%s", "tmp_dir": "tmp_%s"}

# The regex BOINC appends to ban_cpu for <no_amd_k6>.
_AMD_K6_REGEX = ".*AMD.*\t.*Family 5 Model 8 Stepping 0.*"

_warned_files = set()


class ConfigWarning(UserWarning):
    """config.xml has options no part of boincpy declares."""


# ---------------------------------------------------------------------------
# Value conversion

def _parse_int(text):
    """strtol(text, 0): optional sign, 0x hex, leading-0 octal, else decimal
    (a 64-bit value at most); ValueError for anything else."""
    value = strtol(text, -2 ** 63, 2 ** 63 - 1)
    if value is None:
        raise ValueError(text)
    return value


_TRUE_WORDS = ("", "true", "yes", "on")
_FALSE_WORDS = ("false", "no", "off")


def _parse_bool(text):
    """BOINC's parse_bool (boincpy.xml.parse_bool), plus what an operator may
    write by hand: <opt/> or empty is true, and the words true/yes/on,
    false/no/off.  Anything else is an error naming the option."""
    low = text.strip().lower()
    if low in _TRUE_WORDS:
        return True
    if low in _FALSE_WORDS:
        return False
    value = parse_bool(text)
    if value is None:
        raise ValueError(text)
    return value


def _convert(kind, text):
    if kind == "str" or kind == "path" or kind == "list":
        return text
    if kind == "int" or kind == "ints":
        return _parse_int(text)
    if kind == "bool":
        return _parse_bool(text)
    if kind == "float":
        value = strtod(text)            # finite only: no inf or nan
        if value is None:
            raise ValueError(text)
        return value
    if kind == "octal":
        value = int(text, 8)
        if value < 0:
            raise ValueError(text)
        return value
    raise AssertionError(kind)


_TYPE_WORDS = {"int": "an integer", "ints": "an integer", "bool": "a boolean (0 or 1)",
               "float": "a number", "octal": "an octal number"}


# ---------------------------------------------------------------------------
# A tiny expat tree: each node is [tag, attrs, line, text_parts, children,
# content], content being its text parts and children in document order.
# ElementTree would cost ~4 ms of imports and lxml ~18 ms; expat alone ~1 ms.

def _parse_tree(data, path):
    from xml.parsers import expat

    parser = expat.ParserCreate()
    parser.buffer_text = True
    root = []
    stack = []

    def start(tag, attrs):
        if len(stack) >= MAX_DEPTH:
            # (the serialisers of unknown options recurse: refused before Python's stack is)
            raise ConfigError("%s line %d: elements nested more than %d deep"
                              % (path, parser.CurrentLineNumber, MAX_DEPTH))
        node = [tag, attrs, parser.CurrentLineNumber, [], [], []]
        if stack:
            stack[-1][4].append(node)
            stack[-1][5].append(node)
        else:
            root.append(node)
        stack.append(node)

    def end(tag):
        stack.pop()

    def chars(text):
        if stack:
            stack[-1][3].append(text)
            stack[-1][5].append(text)

    parser.StartElementHandler = start
    parser.EndElementHandler = end
    parser.CharacterDataHandler = chars
    try:
        parser.Parse(data, True)
    except expat.ExpatError as exc:
        raise ConfigError("%s line %d: malformed XML: %s" % (
            path, exc.lineno, expat.ErrorString(exc.code))) from None
    return root[0]


def _text(node):
    return "".join(node[3]).strip()


def _inner_xml(node):
    """Serialise a node's content (text and child elements) back to XML text,
    in document order; text that is only white space (the layout between
    elements) is left out, and the content's ends are stripped, as a plain
    option's text is."""
    parts = []
    for item in node[5]:
        if isinstance(item, str):
            if item.strip():
                parts.append(xml_escape(item))
            continue
        inner = _inner_xml(item)
        attrs = "".join(' %s="%s"' % (k, xml_escape(v, quote=True))
                        for k, v in item[1].items())
        if inner:
            parts.append("<%s%s>%s</%s>" % (item[0], attrs, inner, item[0]))
        else:
            parts.append("<%s%s/>" % (item[0], attrs))
    return "".join(parts).strip()


def _is_markup(value):
    """Whether an option's text value is XML content holding elements (an
    unknown option kept as written, say ``a <b>c</b> d``): written back as it
    is, where plain text is escaped."""
    if "<" not in value:
        return False
    try:
        return bool(_parse_tree("<x>%s</x>" % value, "option value")[4])
    except ConfigError:
        return False


# ---------------------------------------------------------------------------

def _blank_values(project_dir, path):
    """A Config's attributes before the file is read: every option's default."""
    values = dict(_SCALAR_DEFAULTS)
    for name in _LIST_NAMES:
        values[name] = []
    values.update(non_option_values(project_dir, path))
    return values


def load_config(project_dir=None, filename=CONFIG_FILE, aux=True):
    """Parse PROJECT/config.xml into a Config (see the module docstring).

    ``project_dir`` None: find it as BOINC does (find_project_dir).  Raises
    ConfigError naming the file (and line, and option) for a missing file,
    malformed XML, a wrong root, or a value of the wrong type.  ``aux``:
    also read config_aux.xml, as every C++ server program does (BOINC's web
    pages don't: they pass False, so a broken config_aux.xml can't stop them).
    """
    if project_dir is None:
        project_dir = find_project_dir()
    project_dir = os.path.abspath(project_dir)
    path = os.path.join(project_dir, filename)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as exc:
        raise ConfigError("can't read %s: %s" % (path, exc.strerror)) from None
    cfg = parse_config_text(data, project_dir, path)
    if aux:
        cfg.max_jobs_in_progress = load_config_aux(os.path.dirname(path))
    return cfg


# ---------------------------------------------------------------------------
# config_aux.xml: <max_jobs_in_progress> (BOINC's sched_limit.cpp)
#
#   <config><max_jobs_in_progress>
#     <project> <total_limit>..</total_limit> <cpu_limit>..</cpu_limit>
#               <gpu_limit>..</gpu_limit> </project>
#     <app> <app_name>NAME</app_name> (the same three limits) </app> ...
#   </max_jobs_in_progress></config>
#
# each limit being <jobs>N</jobs> and optionally <per_proc/> (N per instance of
# the processor type).  BOINC reads the file after config.xml, in every program
# that reads config.xml, and refuses to run when it is malformed.

def load_config_aux(project_dir):
    """PROJECT/config_aux.xml's job limits as a JobLimitsSpec, or None when the
    file does not exist (one failed open: cheap for the scheduler CGI).
    Raises ConfigError naming file, line and element for malformed content."""
    path = os.path.join(project_dir, CONFIG_AUX_FILE)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ConfigError("can't read %s: %s" % (path, exc.strerror)) from None
    return parse_config_aux_text(data, path)


def parse_config_aux_text(data, path=CONFIG_AUX_FILE):
    """Parse config_aux.xml content (str or bytes); ``path`` is used in messages."""
    if isinstance(data, str):
        data = data.encode()
    root = _parse_tree(data, path)
    if root[0] != "config":
        raise ConfigError("%s line %d: root element is <%s>, expected <config>"
                          % (path, root[2], root[0]))
    spec = JobLimitsSpec(path)
    # BOINC ignores the other elements of config_aux.xml; so do we
    for node in root[4]:
        if node[0] != "max_jobs_in_progress":
            continue
        for child in node[4]:
            if child[0] == "project":
                spec.project = _job_limit(child, path)
            elif child[0] == "app":
                limit = _job_limit(child, path)
                if not limit.app_name:
                    # BOINC logs "missing app name" and goes on without it
                    import warnings
                    warnings.warn("%s line %d: <app> without <app_name> ignored"
                                  % (path, child[2]), ConfigWarning, stacklevel=3)
                    continue
                spec.apps.setdefault(limit.app_name, limit)
    return spec


def _job_limit(node, path):
    limit = JobLimitSpec(line=node[2])
    for child in node[4]:
        tag = child[0]
        if tag == "app_name":
            limit.app_name = _text(child)
        elif tag in ("total_limit", "cpu_limit", "gpu_limit"):
            setattr(limit, tag, _rsc_job_limit(child, path))
    return limit


def _rsc_job_limit(node, path):
    rsc = RscJobLimit()
    for child in node[4]:
        text = _text(child)
        try:
            if child[0] == "jobs":
                rsc.jobs = _parse_int(text)
            elif child[0] == "per_proc":
                rsc.per_proc = _parse_bool(text)
        except ValueError:
            raise ConfigError("%s line %d: <%s><%s>: %r is not %s" % (
                path, child[2], node[0], child[0], text,
                "an integer" if child[0] == "jobs" else "a boolean (0 or 1)")) from None
    return rsc


def parse_config_text(data, project_dir, path="config.xml"):
    """Parse config.xml content (str or bytes); ``path`` is used in messages."""
    if isinstance(data, str):
        data = data.encode()
    root = _parse_tree(data, path)
    if root[0] != "boinc":
        raise ConfigError("%s line %d: root element is <%s>, expected <boinc>"
                          % (path, root[2], root[0]))
    config_node = daemons_node = tasks_node = None
    for child in root[4]:
        tag = child[0]
        if tag == "config" and config_node is None:
            config_node = child
        elif tag == "daemons" and daemons_node is None:
            daemons_node = child
        elif tag == "tasks" and tasks_node is None:
            tasks_node = child
    if config_node is None:
        raise ConfigError("%s: no <config> element inside <boinc>" % path)

    cfg = Config(_blank_values(project_dir, path))
    d = cfg.__dict__
    raw = cfg.raw
    unknown = cfg.unknown
    types = _TYPES
    unknown_lines = {}
    for node in config_node[4]:
        name = node[0]
        kind = types.get(name)
        if kind is None:
            unknown[name] = _inner_xml(node) if node[4] else _text(node)
            unknown_lines.setdefault(name, node[2])
            continue
        text = _text(node)
        if kind == "xml":
            value = _inner_xml(node)
        else:
            try:
                value = OPTIONS[name].validate(text)
            except ValueError as exc:
                raise ConfigError("%s line %d: option <%s>: %s" % (
                    path, node[2], name, exc)) from None
        if kind == "list" or kind == "ints":
            d[name].append(value)
            raw.setdefault(name, []).append(value)
            continue
        d[name] = value
        raw[name] = value
        # Options with side effects, applied in file order as BOINC does.
        if name == "grace_period_hours":
            d["report_grace_period"] = int(value * 3600)
        elif name == "no_amd_k6" and value:
            d["ban_cpu"].append(_AMD_K6_REGEX)
        elif name in ("min_core_client_version", "min_core_client_version_announced"):
            if value and value < 10000:
                d[name] = value * 100

    _finish(cfg, path)
    if daemons_node is not None:
        cfg.daemons = [_daemon(node, cfg, path) for node in daemons_node[4]
                       if node[0] == "daemon"]
    if tasks_node is not None:
        cfg.tasks = [_task(node, cfg, path) for node in tasks_node[4]
                     if node[0] == "task"]
    if unknown and path not in _warned_files:
        _warned_files.add(path)
        import warnings
        warnings.warn("%s: options not known to boincpy (kept): %s" % (path, ", ".join(
            unknown_option_text(name, unknown_lines[name]) for name in sorted(unknown))),
            ConfigWarning, stacklevel=3)
    return cfg


def closest_option(name):
    """The declared option whose name is closest to ``name`` (a likely typo
    of it), or None."""
    import difflib
    close = difflib.get_close_matches(name, OPTIONS, n=1, cutoff=0.75)
    return close[0] if close else None


def unknown_option_text(name, line):
    """How the warning names an unknown option: ``<name> (line N)``, and the
    declared one it may be a typo of."""
    text = "<%s> (line %d)" % (name, line)
    near = closest_option(name)
    if near:
        text += " -- did you mean <%s>?" % near
    return text


def _finish(cfg, path):
    """Derived values once all options are read (BOINC does these at </config>)."""
    d = cfg.__dict__
    if d["batch_accel"] and d["size_classes"]:
        raise ConfigError("%s: can't have both batch_accel and size_classes" % path)
    local = short_hostname()
    d["local_host"] = local
    if d["db_host"] and d["db_host"] in (os.uname().nodename, local):
        d["db_host"] = "localhost"
    for part in ("host", "name", "user", "passwd"):
        if not d["replica_db_" + part]:
            d["replica_db_" + part] = d["db_" + part]
    if not d["host"]:
        d["host"] = local
    # A non-empty <project_dir> overrides the root, as in BOINC's project_path().
    override = cfg.raw.get("project_dir")
    root = os.path.abspath(override) if override else cfg.project_dir
    d["project_dir"] = root
    for name, sub in _PATH_DEFAULTS.items():
        value = d[name]
        if not value:
            d[name] = os.path.join(root, sub % local if "%" in sub else sub)
        elif not os.path.isabs(value):
            d[name] = os.path.join(root, value)
    # BOINC's start and get_log_path(): log_<short host name>, never <log_dir>
    d["host_log_dir"] = os.path.join(root, "log_" + local)
    d["delete_delay"] = d["delete_delay_hours"] * 3600


def _fields(node, path, owner):
    fields = {}
    for child in node[4]:
        fields[child[0]] = (_text(child), child[2])
    if not fields.get("cmd", ("",))[0]:
        raise ConfigError("%s line %d: <%s> without <cmd>" % (path, node[2], owner))
    return fields


def _flag(fields, name, path):
    if name not in fields:
        return False
    text, line = fields[name]
    try:
        return _parse_bool(text)
    except ValueError:
        raise ConfigError("%s line %d: <%s>: %r is not a boolean (0 or 1)"
                          % (path, line, name, text)) from None


def _daemon(node, cfg, path):
    f = _fields(node, path, "daemon")
    get = lambda k: f.get(k, ("",))[0]
    return DaemonSpec(get("cmd"), host=get("host") or cfg.host, output=get("output"),
                      pid_file=get("pid_file"), disabled=_flag(f, "disabled", path),
                      lock_file=get("lock_file"), use_shell=_flag(f, "use_shell", path))


def _task(node, cfg, path):
    f = _fields(node, path, "task")
    get = lambda k: f.get(k, ("",))[0]
    if "period" not in f:
        raise ConfigError("%s line %d: <task> without <period>" % (path, node[2]))
    text, line = f["period"]
    try:
        seconds = parse_period(text)
    except ValueError:
        raise ConfigError("%s line %d: <period>: invalid task period %r "
                          "(use e.g. '24 hours', '30 min', '1 day')" % (path, line, text)) from None
    return TaskSpec(get("cmd"), seconds, output=get("output"),
                    disabled=_flag(f, "disabled", path), host=get("host") or cfg.host,
                    period_text=text, lock_file=get("lock_file"),
                    use_shell=_flag(f, "use_shell", path),
                    always_run=_flag(f, "always_run", path))


# ---------------------------------------------------------------------------
# Writing

def format_value(name, value):
    """Text of an option value as written in config.xml (not yet escaped)."""
    kind = _TYPES.get(name)
    if isinstance(value, bool) or kind == "bool":
        return "1" if value else "0"
    if kind == "octal" and isinstance(value, int):
        return "0%o" % value
    if name == "shmem_key" and isinstance(value, int):
        return "0x%08x" % value
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else repr(value)
    return str(value)


_IND = "    "


def _option_lines(name, value, level):
    pad = _IND * level
    if _TYPES.get(name) == "xml" or (name not in _TYPES and isinstance(value, str)
                                     and _is_markup(value)):
        return ["%s<%s>%s</%s>" % (pad, name, value, name)]
    if isinstance(value, (list, tuple)):
        lines = []
        for item in value:
            lines.extend(_option_lines(name, item, level))
        return lines
    return ["%s<%s>%s</%s>" % (pad, name, xml_escape(format_value(name, value)), name)]


def _spec_dict(spec):
    return spec if isinstance(spec, dict) else {f: getattr(spec, f) for f in spec.__slots__}


def _daemon_lines(spec, main_host):
    s = _spec_dict(spec)
    cmd = s["cmd"]
    name = command_basename(cmd)
    out = ["%s<daemon>" % (_IND * 2), "%s<cmd>%s</cmd>" % (_IND * 3, xml_escape(cmd))]
    defaults = {"host": main_host, "output": name + ".log", "pid_file": name + ".pid",
                "lock_file": name + ".lock"}
    for key in ("host", "output", "pid_file", "lock_file"):
        value = s.get(key) or ""
        if value and value != defaults[key]:
            out.append("%s<%s>%s</%s>" % (_IND * 3, key, xml_escape(value), key))
    for key in ("disabled", "use_shell"):
        if s.get(key):
            out.append("%s<%s>1</%s>" % (_IND * 3, key, key))
    out.append("%s</daemon>" % (_IND * 2))
    return out


def _task_lines(spec, main_host):
    s = _spec_dict(spec)
    cmd = s["cmd"]
    name = command_basename(cmd)
    period = s.get("period_text") or s.get("period")
    if not isinstance(period, str):
        period = format_period(period)
    output = s.get("output") or name + ".out"
    out = ["%s<task>" % (_IND * 2),
           "%s<cmd>%s</cmd>" % (_IND * 3, xml_escape(cmd)),
           "%s<period>%s</period>" % (_IND * 3, xml_escape(period)),
           "%s<output>%s</output>" % (_IND * 3, xml_escape(output)),
           "%s<disabled>%d</disabled>" % (_IND * 3, 1 if s.get("disabled") else 0)]
    host = s.get("host") or ""
    if host and host != main_host:
        out.append("%s<host>%s</host>" % (_IND * 3, xml_escape(host)))
    lock = s.get("lock_file") or ""
    default_lock = output + ".lock" if not output.startswith("/dev/") else name + ".lock"
    if lock and lock != default_lock:
        out.append("%s<lock_file>%s</lock_file>" % (_IND * 3, xml_escape(lock)))
    for key in ("use_shell", "always_run"):
        if s.get(key):
            out.append("%s<%s>1</%s>" % (_IND * 3, key, key))
    out.append("%s</task>" % (_IND * 2))
    return out


def config_text(options, daemons=(), tasks=()):
    """The text of a config.xml holding ``options`` (name -> value; None is
    omitted; lists repeat the element), ``daemons`` and ``tasks``
    (DaemonSpec/TaskSpec or dicts with the same keys)."""
    lines = ['<?xml version="1.0" ?>', "<boinc>", _IND + "<config>"]
    for name, value in options.items():
        if value is None:
            continue
        lines.extend(_option_lines(name, value, 2))
    lines.append(_IND + "</config>")
    main_host = options.get("host") or short_hostname()
    lines.append(_IND + "<daemons>")
    for spec in daemons:
        lines.extend(_daemon_lines(spec, main_host))
    lines.append(_IND + "</daemons>")
    lines.append(_IND + "<tasks>")
    for spec in tasks:
        lines.extend(_task_lines(spec, main_host))
    lines.append(_IND + "</tasks>")
    lines.append("</boinc>")
    return "\n".join(lines) + "\n"


def write_config(path, options, daemons=(), tasks=(), mode=0o644):
    """Atomically write a config.xml in BOINC's layout; returns ``path``.

    ``path`` may be the file or the project directory.  Round-trips with
    load_config: load_config(dir).as_options() gives back ``options``.
    """
    from boincpy.files import atomic_write

    if os.path.isdir(path):
        path = os.path.join(path, CONFIG_FILE)
    atomic_write(path, config_text(options, daemons, tasks), mode)
    return path


# ---------------------------------------------------------------------------
# Documentation

def _default_text(opt):
    if opt.type in ("list", "ints"):
        return "(none)"
    if opt.type == "path":
        sub = _PATH_DEFAULTS[opt.name]
        return "PROJECT/" + sub.replace("%s", "<host>")
    if opt.default is None:
        return "(unset)"
    if opt.type == "str":
        return '"%s"' % opt.default
    return format_value(opt.name, opt.default)


def describe_options(section=None):
    """Reference text for every declared option (or one section's)."""
    out = []
    for key, title in _SECTIONS:
        if section and key != section:
            continue
        out.append(title)
        out.append("=" * len(title))
        for opt in OPTIONS.values():
            if opt.section != key:
                continue
            rng = opt.range_text()
            out.append("<%s>  %s%s, default %s" % (opt.name, opt.type,
                                                    " " + rng if rng else "",
                                                    _default_text(opt)))
            out.append("    " + opt.doc)
        out.append("")
    return "\n".join(out)


#: Where a new project departs from BOINC's defaults to be safe: make_project
#: writes these, and config.xml.example shows them (BOINC's make_project
#: writes one_result_per_user_per_wu 0 and both certificate switches 1, so
#: forged uploads are accepted and one volunteer can validate their own job).
SAFE_NEW_PROJECT = {
    "one_result_per_user_per_wu": True,
    "send_result_abort": True,
    "dont_generate_upload_certificates": False,
    "ignore_upload_certificates": False,
}


def example_config():
    """The commented config.xml.example: every declared option with its doc.

    Repeatable and unset options appear commented out, because an empty
    <ban_os/> would ban every host.
    """
    lines = ['<?xml version="1.0" ?>',
             "<!-- config.xml for a boincpy project: every option boincpy knows,",
             "     generated from boincpy/config.py (describe_options() has the same text).",
             "     Values shown are the defaults, or an example where a value is needed. -->",
             "<boinc>", _IND + "<config>"]
    for key, title in _SECTIONS:
        lines.append("")
        lines.append("%s<!-- ===== %s ===== -->" % (_IND * 2, title))
        for opt in OPTIONS.values():
            if opt.section != key:
                continue
            doc = opt.doc.replace("--", "-")
            if opt.range_text():
                doc += "  Range: %s." % opt.range_text()
            lines.append("%s<!-- %s -->" % (_IND * 2, doc))
            # a boolean's "example" would switch a behaviour on for whoever
            # copies the file (e.g. upload certificates off): show the default,
            # or the value a new project gets
            if opt.name in SAFE_NEW_PROJECT:
                value = SAFE_NEW_PROJECT[opt.name]
            elif opt.type == "bool" or opt.example is None:
                value = opt.default
            else:
                value = opt.example
            if opt.type in ("list", "ints") or value is None:
                sample = {"octal": "0660", "ints": "123"}.get(opt.type, "REGEX")
                lines.append("%s<!-- <%s>%s</%s> -->" % (_IND * 2, opt.name, sample, opt.name))
            else:
                lines.append("%s<%s>%s</%s>" % (_IND * 2, opt.name,
                                                xml_escape(format_value(opt.name, value)), opt.name))
    lines.append(_IND + "</config>")
    lines.append(_IND + "<daemons>")
    for spec in (DaemonSpec("feeder -d 3"), DaemonSpec("transitioner -d 3"),
                 DaemonSpec("file_deleter -d 3"),
                 DaemonSpec("sample_bitwise_validator -d 3 --app example_app"),
                 DaemonSpec("sample_dummy_assimilator -d 3 --app example_app")):
        lines.extend(_daemon_lines(spec, "server1"))
    lines.append(_IND + "</daemons>")
    lines.append(_IND + "<tasks>")
    lines.append("%s<!-- period: N (minutes) or 'N seconds|minutes|hours|days|weeks' -->"
                 % (_IND * 2))
    for spec in (TaskSpec("antique_file_deleter -d 2", "24 hours"),
                 TaskSpec("db_dump -d 2 --dump_spec ../db_dump_spec.xml", "24 hours",
                          disabled=True),
                 TaskSpec("update_stats", "1 days")):
        lines.extend(_task_lines(spec, "server1"))
    lines.append(_IND + "</tasks>")
    lines.append("</boinc>")
    return "\n".join(lines) + "\n"


def main(argv=None):
    """``python -m boincpy.config [--example]``: print the option reference."""
    import click
    from boincpy.cli import click_main

    @click.command(help="Print the reference of config.xml's options.")
    @click.option("--example", is_flag=True, help="print config.xml.example instead")
    def reference(example):
        sys.stdout.write(example_config() if example else describe_options())
    return click_main(reference, argv, "python -m boincpy.config")


if __name__ == "__main__":
    sys.exit(main())
