-- boincpy: the BOINC server database.
--
-- Table and column names and types are BOINC's own (db/schema.sql and
-- db/constraints.sql of the C++ server), so that operators' queries, the PHP
-- web code and db_dump-style scripts keep working.  Three deliberate changes
-- make it load in strict mode on MariaDB 10.x and MySQL 8:
--   * every NOT NULL column has a default, so an INSERT that names only the
--     columns it cares about is not rejected (STRICT_TRANS_TABLES);
--   * indexes are not declared DESC: older servers reject or ignore it and a
--     B-tree index serves ORDER BY ... DESC just as well;
--   * indexed varchar columns are at most 191 characters, which fits the
--     767-byte key limit under utf8mb4.
-- BLOB/TEXT columns cannot carry a literal default on MySQL, so those that
-- are NOT NULL (host.misc) are always written explicitly by boincpy.
-- Statements are separated by lines ending in ';' (boincpy.db.schema splits
-- on them); keep one statement per block.

create table platform (
    id                      integer         not null auto_increment,
    create_time             integer         not null default 0,
    name                    varchar(191)    not null,
    user_friendly_name      varchar(254)    not null default '',
    deprecated              tinyint         not null default 0,
    primary key (id),
    unique key name (name)
) engine=InnoDB;

create table app (
    id                      integer         not null auto_increment,
    create_time             integer         not null default 0,
    name                    varchar(191)    not null,
    min_version             integer         not null default 0,
    deprecated              smallint        not null default 0,
    user_friendly_name      varchar(254)    not null default '',
    homogeneous_redundancy  smallint        not null default 0,
    weight                  double          not null default 1,
    beta                    smallint        not null default 0,
    target_nresults         smallint        not null default 0,
    min_avg_pfc             double          not null default 1,
    host_scale_check        tinyint         not null default 0,
    homogeneous_app_version tinyint         not null default 0,
    non_cpu_intensive       tinyint         not null default 0,
    locality_scheduling     integer         not null default 0,
    n_size_classes          smallint        not null default 0,
    fraction_done_exact     tinyint         not null default 0,
    primary key (id),
    unique key name (name)
) engine=InnoDB;

create table app_version (
    id                      integer         not null auto_increment,
    create_time             integer         not null default 0,
    appid                   integer         not null,
    version_num             integer         not null,
    platformid              integer         not null,
    xml_doc                 mediumblob,
    min_core_version        integer         not null default 0,
    max_core_version        integer         not null default 0,
    deprecated              tinyint         not null default 0,
    plan_class              varchar(128)    not null default '',
    pfc_n                   double          not null default 0,
    pfc_avg                 double          not null default 0,
    pfc_scale               double          not null default 0,
    expavg_credit           double          not null default 0,
    expavg_time             double          not null default 0,
    beta                    tinyint         not null default 0,
    primary key (id),
    unique key apvp (appid, platformid, version_num, plan_class)
) engine=InnoDB;

create table user (
    id                      integer         not null auto_increment,
    create_time             integer         not null default 0,
    email_addr              varchar(191)    not null,
    name                    varchar(191),
    authenticator           varchar(191),
    country                 varchar(254),
    postal_code             varchar(254),
    total_credit            double          not null default 0,
    expavg_credit           double          not null default 0,
    expavg_time             double          not null default 0,
    global_prefs            blob,
    project_prefs           blob,
    teamid                  integer         not null default 0,
    venue                   varchar(254)    not null default '',
    url                     varchar(254),
    send_email              smallint        not null default 0,
    show_hosts              smallint        not null default 0,
    posts                   smallint        not null default 0,
    seti_id                 integer         not null default 0,
    seti_nresults           integer         not null default 0,
    seti_last_result_time   integer         not null default 0,
    seti_total_cpu          double          not null default 0,
    signature               varchar(254),
    has_profile             smallint        not null default 0,
    cross_project_id        varchar(254)    not null default '',
    passwd_hash             varchar(254)    not null default '',
    email_validated         smallint        not null default 0,
    donated                 smallint        not null default 0,
    login_token             char(32)        not null default '',
    login_token_time        double          not null default 0,
    previous_email_addr     varchar(254)    not null default '',
    email_addr_change_time  double          not null default 0,
    primary key (id),
    unique key email_addr (email_addr),
    unique key authenticator (authenticator),
    unique key name (name),
    key ind_tid (teamid),
    key user_tot (total_credit),
    key user_avg (expavg_credit),
    key user_email_time (email_addr_change_time)
) engine=InnoDB;

create table team (
    id                      integer         not null auto_increment,
    create_time             integer         not null default 0,
    userid                  integer         not null default 0,
    name                    varchar(191)    not null,
    name_lc                 varchar(254),
    url                     varchar(254),
    type                    integer         not null default 0,
    name_html               varchar(254),
    description             text,
    nusers                  integer         not null default 0,
    country                 varchar(254),
    total_credit            double          not null default 0,
    expavg_credit           double          not null default 0,
    expavg_time             double          not null default 0,
    seti_id                 integer         not null default 0,
    ping_user               integer         not null default 0,
    ping_time               integer unsigned not null default 0,
    joinable                tinyint         not null default 1,
    mod_time                timestamp       not null default current_timestamp on update current_timestamp,
    primary key (id),
    unique key name (name),
    fulltext key team_name_desc (name, description),
    key team_avg (expavg_credit),
    key team_tot (total_credit),
    key team_userid (userid)
) engine=InnoDB;

create table host (
    id                      integer         not null auto_increment,
    create_time             integer         not null default 0,
    userid                  integer         not null default 0,
    rpc_seqno               integer         not null default 0,
    rpc_time                integer         not null default 0,
    total_credit            double          not null default 0,
    expavg_credit           double          not null default 0,
    expavg_time             double          not null default 0,
    timezone                integer         not null default 0,
    domain_name             varchar(254),
    serialnum               varchar(254),
    last_ip_addr            varchar(254),
    nsame_ip_addr           integer         not null default 0,
    on_frac                 double          not null default 0,
    connected_frac          double          not null default 0,
    active_frac             double          not null default 0,
    cpu_efficiency          double          not null default 0,
    duration_correction_factor double       not null default 0,
    p_ncpus                 integer         not null default 0,
    p_vendor                varchar(254),
    p_model                 varchar(254),
    p_fpops                 double          not null default 0,
    p_iops                  double          not null default 0,
    p_membw                 double          not null default 0,
    os_name                 varchar(254),
    os_version              varchar(254),
    m_nbytes                double          not null default 0,
    m_cache                 double          not null default 0,
    m_swap                  double          not null default 0,
    d_total                 double          not null default 0,
    d_free                  double          not null default 0,
    d_boinc_used_total      double          not null default 0,
    d_boinc_used_project    double          not null default 0,
    d_boinc_max             double          not null default 0,
    n_bwup                  double          not null default 0,
    n_bwdown                double          not null default 0,
    credit_per_cpu_sec      double          not null default 0,
    venue                   varchar(254)    not null default '',
    nresults_today          integer         not null default 0,
    avg_turnaround          double          not null default 0,
    host_cpid               varchar(254),
    external_ip_addr        varchar(254),
    max_results_day         integer         not null default 0,
    error_rate              double          not null default 0,
    product_name            varchar(254)    not null default '',
    gpu_active_frac         double          not null default 0,
    p_ngpus                 integer         not null default 0,
    p_gpu_fpops             double          not null default 0,
    misc                    text            not null,
    primary key (id),
    key host_userid_cpid (userid, host_cpid(191)),
    key host_domain_name (domain_name(191)),
    key host_avg (expavg_credit),
    key host_tot (total_credit)
) engine=InnoDB;

create table host_app_version (
    host_id                 integer         not null,
    app_version_id          integer         not null,
    pfc_n                   double          not null default 0,
    pfc_avg                 double          not null default 0,
    et_n                    double          not null default 0,
    et_avg                  double          not null default 0,
    et_var                  double          not null default 0,
    et_q                    double          not null default 0,
    max_jobs_per_day        integer         not null default 0,
    n_jobs_today            integer         not null default 0,
    turnaround_n            double          not null default 0,
    turnaround_avg          double          not null default 0,
    turnaround_var          double          not null default 0,
    turnaround_q            double          not null default 0,
    consecutive_valid       integer         not null default 0,
    unique key hap (host_id, app_version_id)
) engine=InnoDB;

create table workunit (
    id                      integer         not null auto_increment,
    create_time             integer         not null default 0,
    appid                   integer         not null,
    name                    varchar(191)    not null,
    xml_doc                 blob,
    batch                   integer         not null default 0,
    rsc_fpops_est           double          not null default 0,
    rsc_fpops_bound         double          not null default 0,
    rsc_memory_bound        double          not null default 0,
    rsc_disk_bound          double          not null default 0,
    need_validate           smallint        not null default 0,
    canonical_resultid      integer         not null default 0,
    canonical_credit        double          not null default 0,
    transition_time         integer         not null default 0,
    delay_bound             integer         not null default 0,
    error_mask              integer         not null default 0,
    file_delete_state       integer         not null default 0,
    assimilate_state        integer         not null default 0,
    hr_class                integer         not null default 0,
    opaque                  double          not null default 0,
    min_quorum              integer         not null default 0,
    target_nresults         integer         not null default 0,
    max_error_results       integer         not null default 0,
    max_total_results       integer         not null default 0,
    max_success_results     integer         not null default 0,
    result_template_file    varchar(63)     not null default '',
    priority                integer         not null default 0,
    mod_time                timestamp       not null default current_timestamp on update current_timestamp,
    rsc_bandwidth_bound     double          not null default 0,
    fileset_id              integer         not null default 0,
    app_version_id          integer         not null default 0,
    transitioner_flags      tinyint         not null default 0,
    size_class              smallint        not null default -1,
    keywords                varchar(254)    not null default '',
    app_version_num         integer         not null default 0,
    primary key (id),
    unique key name (name),
    key wu_val (appid, need_validate),
    key wu_timeout (transition_time),
    key wu_filedel (file_delete_state),
    key wu_assim (appid, assimilate_state),
    key wu_batch (batch)
) engine=InnoDB;

create table result (
    id                      integer         not null auto_increment,
    create_time             integer         not null default 0,
    workunitid              integer         not null,
    server_state            integer         not null default 0,
    outcome                 integer         not null default 0,
    client_state            integer         not null default 0,
    hostid                  integer         not null default 0,
    userid                  integer         not null default 0,
    report_deadline         integer         not null default 0,
    sent_time               integer         not null default 0,
    received_time           integer         not null default 0,
    name                    varchar(191)    not null,
    cpu_time                double          not null default 0,
    xml_doc_in              blob,
    xml_doc_out             blob,
    stderr_out              blob,
    batch                   integer         not null default 0,
    file_delete_state       integer         not null default 0,
    validate_state          integer         not null default 0,
    claimed_credit          double          not null default 0,
    granted_credit          double          not null default 0,
    opaque                  double          not null default 0,
    random                  integer         not null default 0,
    app_version_num         integer         not null default 0,
    appid                   integer         not null default 0,
    exit_status             integer         not null default 0,
    teamid                  integer         not null default 0,
    priority                integer         not null default 0,
    mod_time                timestamp       not null default current_timestamp on update current_timestamp,
    elapsed_time            double          not null default 0,
    flops_estimate          double          not null default 0,
    app_version_id          integer         not null default 0,
    runtime_outlier         tinyint         not null default 0,
    size_class              smallint        not null default -1,
    peak_working_set_size   double          not null default 0,
    peak_swap_size          double          not null default 0,
    peak_disk_usage         double          not null default 0,
    primary key (id),
    unique key name (name),
    key res_wuid (workunitid),
    key ind_res_st (server_state, priority),
    key res_app_state (appid, server_state),
    key res_filedel (file_delete_state),
    key res_userid_id (userid, id),
    key res_userid_val (userid, validate_state),
    key res_hostid_id (hostid, id),
    key res_batch (batch)
) engine=InnoDB;

create table batch (
    id                      serial          primary key,
    user_id                 integer         not null default 0,
    create_time             integer         not null default 0,
    logical_start_time      double          not null default 0,
    logical_end_time        double          not null default 0,
    est_completion_time     double          not null default 0,
    njobs                   integer         not null default 0,
    fraction_done           double          not null default 0,
    nerror_jobs             integer         not null default 0,
    state                   integer         not null default 0,
    completion_time         double          not null default 0,
    credit_estimate         double          not null default 0,
    credit_canonical        double          not null default 0,
    credit_total            double          not null default 0,
    name                    varchar(255)    not null default '',
    app_id                  integer         not null default 0,
    project_state           integer         not null default 0,
    description             varchar(255)    not null default '',
    expire_time             double          not null default 0
) engine=InnoDB;

create table msg_from_host (
    id                      integer         not null auto_increment,
    create_time             integer         not null default 0,
    hostid                  integer         not null default 0,
    variety                 varchar(254)    not null default '',
    handled                 smallint        not null default 0,
    xml                     mediumtext,
    primary key (id),
    key message_handled (handled),
    key message_hostid (hostid)
) engine=InnoDB;

create table msg_to_host (
    id                      integer         not null auto_increment,
    create_time             integer         not null default 0,
    hostid                  integer         not null default 0,
    variety                 varchar(254)    not null default '',
    handled                 smallint        not null default 0,
    xml                     mediumtext,
    primary key (id),
    key msg_to_host (hostid, handled)
) engine=InnoDB;

-- Locality scheduling's link to the project's work generator (BOINC's
-- DB_FILESET and DB_SCHED_TRIGGER classes; Einstein@Home's tables, absent
-- from BOINC's schema.sql).  One fileset per sticky data file, named as the
-- file (its jobs are FILE__...), with one trigger row: the generator sets
-- work_available for the files it can make jobs for (the working set) and
-- no_work_available once a file has no more; the scheduler sets need_work
-- when a file's jobs run out and working_set_removal when none remain.
create table fileset (
    id                      integer         not null auto_increment,
    name                    varchar(191)    not null,
    primary key (id),
    unique key fileset_name (name)
) engine=InnoDB;

create table sched_trigger (
    id                      integer         not null auto_increment,
    fileset_id              integer         not null,
    need_work               tinyint         not null default 0,
    work_available          tinyint         not null default 0,
    no_work_available       tinyint         not null default 0,
    working_set_removal     tinyint         not null default 0,
    primary key (id),
    unique key sched_trigger_fileset (fileset_id),
    key sched_trigger_work_available (work_available)
) engine=InnoDB;

create table assignment (
    id                      integer         not null auto_increment,
    create_time             integer         not null default 0,
    target_id               integer         not null default 0,
    target_type             integer         not null default 0,
    multi                   tinyint         not null default 0,
    workunitid              integer         not null default 0,
    resultid                integer         not null default 0,
    primary key (id),
    key asgn_target (target_type, target_id)
) engine=InnoDB;

create table credit_user (
    userid                  integer         not null,
    appid                   integer         not null,
    njobs                   integer         not null default 0,
    total                   double          not null default 0,
    expavg                  double          not null default 0,
    expavg_time             double          not null default 0,
    credit_type             integer         not null default 0,
    primary key (userid, appid, credit_type),
    key cu_total (appid, total),
    key cu_avg (appid, expavg)
) engine=InnoDB;

create table credit_team (
    teamid                  integer         not null,
    appid                   integer         not null,
    njobs                   integer         not null default 0,
    total                   double          not null default 0,
    expavg                  double          not null default 0,
    expavg_time             double          not null default 0,
    credit_type             integer         not null default 0,
    primary key (teamid, appid, credit_type),
    key ct_total (appid, total),
    key ct_avg (appid, expavg)
) engine=InnoDB;

create table credited_job (
    userid                  integer         not null,
    workunitid              bigint          not null,
    unique key credited_job_user_wu (userid, workunitid),
    key credited_job_user (userid),
    key credited_job_wu (workunitid)
) engine=InnoDB;

create table user_submit (
    user_id                 integer         not null,
    quota                   double          not null default 0,
    logical_start_time      double          not null default 0,
    submit_all              tinyint         not null default 0,
    manage_all              tinyint         not null default 0,
    max_jobs_in_progress    integer         not null default 0,
    primary key (user_id)
) engine=InnoDB;

create table user_submit_app (
    user_id                 integer         not null,
    app_id                  integer         not null,
    manage                  tinyint         not null default 0,
    primary key (user_id, app_id)
) engine=InnoDB;

create table job_file (
    id                      integer         not null auto_increment,
    name                    varchar(191)    not null,
    create_time             double          not null default 0,
    delete_time             double          not null default 0,
    primary key (id),
    unique key jf_name (name)
) engine=InnoDB;

-- db/schema_condor.sql: which batches use which job_file (remote submission's
-- files by content); make_project does not load it in BOINC, here it does.
create table batch_file_assoc (
    job_file_id             integer         not null,
    batch_id                integer         not null,
    unique key bfa_file_batch (job_file_id, batch_id),
    key bfa_batch (batch_id)
) engine=InnoDB;

create table profile (
    userid                  integer         not null,
    language                varchar(254),
    response1               text,
    response2               text,
    has_picture             smallint        not null default 0,
    recommend               integer         not null default 0,
    reject                  integer         not null default 0,
    posts                   integer         not null default 0,
    uotd_time               integer,
    verification            integer         not null default 0,
    primary key (userid),
    unique key profile_userid (userid),
    key pro_uotd (uotd_time),
    fulltext key profile_reponse (response1, response2)
) engine=InnoDB;

create table team_admin (
    teamid                  integer         not null,
    userid                  integer         not null,
    create_time             integer         not null default 0,
    rights                  integer         not null default 0,
    unique key teamid (teamid, userid)
) engine=InnoDB;

create table team_delta (
    userid                  integer         not null,
    teamid                  integer         not null,
    timestamp               integer         not null default 0,
    joining                 tinyint         not null default 0,
    total_credit            double          not null default 0,
    key team_delta_teamid (teamid, timestamp),
    key team_delta_userid (userid)
) engine=InnoDB;

create table token (
    token                   varchar(64)     not null,
    userid                  integer         not null,
    type                    char            not null default '',
    create_time             integer         not null default 0,
    expire_time             integer,
    primary key (token),
    key token_userid (userid)
) engine=InnoDB;

create table user_deleted (
    userid                  integer         not null,
    public_cross_project_id varchar(254)    not null default '',
    create_time             double          not null default 0,
    primary key (userid),
    key user_deleted_create (create_time)
) engine=InnoDB;

create table host_deleted (
    hostid                  integer         not null,
    public_cross_project_id varchar(254)    not null default '',
    create_time             double          not null default 0,
    primary key (hostid),
    key host_deleted_create (create_time)
) engine=InnoDB;

create table consent_type (
    id                      integer         not null auto_increment,
    shortname               varchar(191)    not null,
    description             varchar(255)    not null default '',
    enabled                 integer         not null default 0,
    project_specific        integer         not null default 0,
    privacypref             integer         not null default 0,
    primary key (id),
    key consent_name (shortname)
) engine=InnoDB;

create table consent (
    id                      integer         not null auto_increment,
    userid                  integer         not null,
    consent_type_id         integer         not null,
    consent_time            integer         not null default 0,
    consent_flag            tinyint         not null default 0,
    consent_not_required    tinyint         not null default 0,
    source                  varchar(255)    not null default '',
    primary key (id),
    key userid_ctid_timestamp (userid, consent_type_id, consent_time),
    key consent_timestamp (consent_time),
    key flag_ctid (consent_flag, consent_type_id),
    key consent_type_id (consent_type_id)
) engine=InnoDB;

create table sent_email (
    userid                  integer         not null,
    time_sent               integer         not null default 0,
    email_type              smallint        not null default 0,
    primary key (userid),
    key sent_email_userid (userid)
) engine=InnoDB;

-- BOINC's community preferences: the message boards' settings, and what the
-- ops pages keep here as BOINC does: the special-user flags (special_user,
-- one '0'/'1' character per flag) and a ban (banished_until, a Unix time).
create table forum_preferences (
    userid                  integer         not null default 0,
    signature               varchar(254)    not null default '',
    posts                   integer         not null default 0,
    last_post               integer         not null default 0,
    avatar                  varchar(254)    not null default '',
    hide_avatars            tinyint         not null default 0,
    forum_sorting           integer         not null default 0,
    thread_sorting          integer         not null default 0,
    no_signature_by_default tinyint         not null default 1,
    images_as_links         tinyint         not null default 0,
    link_popup              tinyint         not null default 0,
    mark_as_read_timestamp  integer         not null default 0,
    special_user            char(12)        not null default '0',
    jump_to_unread          tinyint         not null default 1,
    hide_signatures         tinyint         not null default 0,
    rated_posts             varchar(254)    not null default '',
    low_rating_threshold    integer         not null default -25,
    high_rating_threshold   integer         not null default 5,
    minimum_wrap_postcount  integer         not null default 100,
    display_wrap_postcount  integer         not null default 75,
    ignorelist              varchar(254)    not null default '',
    ignore_sticky_posts     tinyint         not null default 0,
    banished_until          integer         not null default 0,
    pm_notification         tinyint         not null default 0,
    highlight_special       tinyint         not null default 1,
    primary key (userid)
) engine=InnoDB;

-- The message boards (BOINC's forums; the project's news are the threads of
-- its "News" forum, see boincpy.db.forum): categories, forums in them (or
-- attached to a team, parent_type 1), threads, posts.
create table category (
    id                      integer         not null auto_increment,
    orderID                 integer         not null default 0,
    lang                    integer         not null default 0,
    name                    varchar(180)    not null default '',
    is_helpdesk             smallint        not null default 0,
    primary key (id),
    unique key cat1 (name, is_helpdesk)
) engine=InnoDB;

create table forum (
    id                      integer         not null auto_increment,
    category                integer         not null default 0,
    orderID                 integer         not null default 0,
    title                   varchar(175)    not null default '',
    description             varchar(254)    not null default '',
    timestamp               integer         not null default 0,
    threads                 integer         not null default 0,
    posts                   integer         not null default 0,
    rate_min_expavg_credit  integer         not null default 0,
    rate_min_total_credit   integer         not null default 0,
    post_min_interval       integer         not null default 0,
    post_min_expavg_credit  integer         not null default 0,
    post_min_total_credit   integer         not null default 0,
    is_dev_blog             tinyint         not null default 0,
    parent_type             integer         not null default 0,
    primary key (id),
    unique key pct (parent_type, category, title)
) engine=InnoDB;

create table thread (
    id                      integer         not null auto_increment,
    forum                   integer         not null default 0,
    owner                   integer         not null default 0,
    status                  integer         not null default 0,
    title                   varchar(254)    not null default '',
    timestamp               integer         not null default 0,
    views                   integer         not null default 0,
    replies                 integer         not null default 0,
    activity                double          not null default 0,
    sufferers               integer         not null default 0,
    score                   double          not null default 0,
    votes                   integer         not null default 0,
    create_time             integer         not null default 0,
    hidden                  integer         not null default 0,
    sticky                  tinyint         not null default 0,
    locked                  tinyint         not null default 0,
    primary key (id),
    -- boincpy's (BOINC has none): forum_forum.php's list walks it, sticky first
    key thread_forum (forum, hidden, sticky, timestamp),
    fulltext key thread_title (title)
) engine=InnoDB;

create table post (
    id                      integer         not null auto_increment,
    thread                  integer         not null default 0,
    user                    integer         not null default 0,
    timestamp               integer         not null default 0,
    content                 text            not null,
    modified                integer         not null default 0,
    parent_post             integer         not null default 0,
    score                   double          not null default 0,
    votes                   integer         not null default 0,
    signature               tinyint         not null default 0,
    hidden                  integer         not null default 0,
    primary key (id),
    key post_user (user),
    key post_thread (thread),
    fulltext key post_content (content)
) engine=InnoDB;

-- boincpy's own (not BOINC's): recent failed logins of the account web RPCs,
-- one row per client address ('addr:IP') and per account ('user:ID'), so that
-- password guessing is refused without a sleep holding a web worker.
create table login_failure (
    name                    varchar(191)    not null,
    nfail                   integer         not null default 0,
    first_time              integer         not null default 0,
    primary key (name)
) engine=InnoDB;

-- Badges (BOINC's badge, badge_user and badge_team; the unique keys of its
-- constraints.sql): written by boincpy/db/badge.py (bin/badge_assign and the
-- ops page badge_admin.php), shown on the user's and the team's pages.
create table badge (
    id                      serial          primary key,
    create_time             double          not null,
    type                    tinyint         not null,
    name                    varchar(255)    not null,
    title                   varchar(255)    not null,
    description             varchar(255)    not null,
    image_url               varchar(255)    not null,
    level                   varchar(255)    not null,
    tags                    varchar(255)    not null,
    sql_rule                varchar(255)    not null
) engine=InnoDB;

create table badge_user (
    badge_id                integer         not null,
    user_id                 integer         not null,
    create_time             double          not null,
    reassign_time           double          not null,
    unique key (user_id, badge_id)
) engine=InnoDB;

create table badge_team (
    badge_id                integer         not null,
    team_id                 integer         not null,
    create_time             double          not null,
    reassign_time           double          not null,
    unique key (team_id, badge_id)
) engine=InnoDB;

-- The community's private side (BOINC's db/schema.sql and constraints.sql;
-- writes in boincpy.db.messages): private messages between volunteers,
-- friendships (one row per direction; reciprocated once accepted) and the
-- notifications of both (notify.type: 1 friend request, 2 friend accepted,
-- 3 private message, 4 subscribed thread, 5 subscribed forum; opaque: the
-- id of the user, message or thread).
create table private_messages (
    id                      integer         not null auto_increment,
    userid                  integer         not null,
    senderid                integer         not null,
    date                    integer         not null,
    opened                  tinyint         not null default 0,
    subject                 varchar(255)    not null,
    content                 text            not null,
    primary key (id),
    key userid (userid)
) engine=InnoDB;

create table friend (
    user_src                integer         not null,
    user_dest               integer         not null,
    message                 varchar(255)    not null,
    create_time             integer         not null,
    reciprocated            tinyint         not null,
    unique key friend_u (user_src, user_dest)
) engine=InnoDB;

create table notify (
    id                      serial          primary key,
    userid                  integer         not null,
    create_time             integer         not null,
    type                    integer         not null,
    opaque                  integer         not null,
    unique key notify_un (userid, type, opaque)
) engine=InnoDB;

-- The message boards' own tables (BOINC's subscriptions, post_ratings and
-- forum_logging, with constraints.sql's keys; writes in boincpy/db/forum.py):
-- a subscription's threadid is a thread's id, or minus a forum's id.
create table subscriptions (
    userid                  integer         not null,
    threadid                integer         not null,
    notified_time           integer         not null default 0,
    unique key sub_unique (userid, threadid),
    key sub_thread (threadid)
) engine=InnoDB;

create table post_ratings (
    post                    integer         not null,
    user                    integer         not null,
    rating                  tinyint         not null,
    primary key (post, user),
    key post_ratings_user (user)
) engine=InnoDB;

create table forum_logging (
    userid                  integer         not null default 0,
    threadid                integer         not null default 0,
    timestamp               integer         not null default 0,
    primary key (userid, threadid)
) engine=InnoDB;

-- Moderators' votes to banish a user from the message boards (BOINC's
-- banishment_vote and banishment_votes, with constraints.sql's key; writes in
-- boincpy/db/forum.py): a vote is in progress while end_time is in the future.
create table banishment_vote (
    id                      serial          primary key,
    userid                  integer         not null,
    modid                   integer         not null,
    start_time              integer         not null,
    end_time                integer         not null,
    key banishment_vote_userid (userid)
) engine=InnoDB;

create table banishment_votes (
    id                      serial          primary key,
    voteid                  integer         not null,
    modid                   integer         not null,
    time                    integer         not null,
    yes                     tinyint         not null
) engine=InnoDB;

-- BOINC's PayPal donation pages' tables (boincpy serves no donation page;
-- they are here so that a project moving either way keeps its rows).
create table donation_items (
    id                      integer         not null auto_increment,
    item_name               varchar(32)     not null,
    title                   varchar(255)    not null,
    description             varchar(255)    not null,
    required                double          not null default 0,
    primary key (id)
) engine=InnoDB;

create table donation_paypal (
    id                      integer         not null auto_increment,
    order_time              integer         not null default 0,
    userid                  integer         not null default 0,
    email_addr              varchar(255)    not null default '',
    order_amount            double(6,2)     not null default 0,
    processed               tinyint         not null default 0,
    payment_time            integer         not null default 0,
    item_name               varchar(255)    not null default '',
    item_number             varchar(255)    not null default '',
    payment_status          varchar(255)    not null default '',
    payment_amount          double(6,2)     not null default 0,
    payment_fee             double(5,2),
    payment_currency        varchar(255)    not null default '',
    txn_id                  varchar(255)    not null default '',
    receiver_email          varchar(255)    not null default '',
    payer_email             varchar(255)    not null default '',
    payer_name              varchar(255)    not null default '',
    primary key (id),
    key donation_paypal_userid (userid)
) engine=InnoDB;

-- BOINC's view of each user's latest consent of each type (its db_dump and
-- preference pages read it): the consent rows no later row of the same user
-- and type follows.
create view latest_consent as
    select c.userid, c.consent_type_id, c.consent_flag
    from consent c
    where not exists (
        select 1 from consent later
        where later.userid = c.userid
            and later.consent_type_id = c.consent_type_id
            and later.consent_time > c.consent_time)
