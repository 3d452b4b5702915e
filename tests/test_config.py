"""boincpy.config: the declared option table, config.xml parsing and writing."""

import os
import warnings
from pathlib import Path

import pytest

from tests.shared_fixtures import FIXTURES

from boincpy import config as C
from boincpy.config import (DaemonSpec, TaskSpec, load_config, parse_period,
                            write_config)
from boincpy.errors import BoincpyError, ConfigError

REPO = Path(__file__).resolve().parent.parent
FIXTURE = Path(FIXTURES) / "reference-server" / "project"


def make(tmp_path, body, daemons="", tasks="", name="proj"):
    """A project dir whose config.xml has ``body`` inside <config>."""
    project = tmp_path / name
    project.mkdir(exist_ok=True)
    (project / "config.xml").write_text(
        "<boinc>\n  <config>\n%s\n  </config>\n%s%s</boinc>\n" % (body, daemons, tasks))
    return project


@pytest.fixture(autouse=True)
def fresh_warnings():
    """Each test sees its own 'warned once' state."""
    C._warned_files.clear()
    yield
    C._warned_files.clear()


# -- the table ----------------------------------------------------------------

def test_table_declares_each_option_once_with_known_types():
    names = [row[0] for row in C._TABLE]
    assert len(names) == len(set(names))
    assert set(C.OPTIONS) == set(names)
    sections = {key for key, _ in C._SECTIONS}
    for opt in C.OPTIONS.values():
        assert opt.type in ("bool", "int", "float", "str", "path", "octal",
                            "list", "ints", "xml"), opt
        assert opt.section in sections, opt
        assert opt.doc


def test_table_covers_the_options_the_notes_and_sched_config_name():
    wanted = """master_url long_name host db_name db_user db_passwd db_host
    replica_db_host project_dir shmem_key key_dir download_url download_dir
    upload_url upload_dir uldl_dir_fanout app_dir log_dir cache_md5_info
    sched_debug_level fuh_debug_level max_wus_to_send daily_result_quota
    gpu_multiplier max_wus_in_progress max_wus_in_progress_gpu min_sendwork_interval
    one_result_per_user_per_wu one_result_per_host_per_wu send_result_abort
    resend_lost_results report_grace_period grace_period_hours delete_delay_hours
    dont_generate_upload_certificates ignore_upload_certificates maintenance_delay
    min_core_client_version min_core_client_version_announced
    min_core_client_upgrade_deadline next_rpc_delay shmem_work_items
    feeder_query_size default_disk_min_free_gb max_ncpus dont_send_jobs ended
    non_cpu_intensive verify_files_on_app_start strict_memory_bound
    dont_store_success_stderr max_results_accepted report_max sched_lockfile_dir
    msg_to_host ban_os ban_cpu nowork_skip httpd_user fuh_set_initial_permission
    fuh_set_completed_permission credit_by_app request_time_stats_log workload_sim
    prefer_primary_platform version_select_random_factor ignore_delay_bound
    estimate_flops_from_hav_pfc rte_no_stats debug_send debug_send_job
    debug_send_scan debug_version_select debug_quota debug_handle_results
    debug_prefs debug_resend debug_credit debug_request_details
    debug_request_headers debug_user_messages debug_req_reply_dir
    homogeneous_redundancy hr_class_static hr_allocate_slots reliable_on_priority
    reliable_max_avg_turnaround reliable_max_error_rate reliable_reduced_delay_bound
    reliable_priority_on_over reliable_priority_on_over_except_error
    locality_scheduling locality_scheduler_fraction enable_assignment
    enable_assignment_multi job_size_matching size_classes batch_accel
    keyword_sched user_filter distinct_beta_apps replace_download_url_by_timezone
    max_download_urls_per_file file_deletion_strategy enable_vda
    dont_search_host_for_user sched_old disable_account_creation
    disable_account_creation_rpc disable_web_account_creation
    account_creation_rpc_require_consent enable_login_mustagree_termsofuse
    enable_privacy_by_default show_results enable_delete_account no_computing
    project_user_name ssh_exec cgi_url stripchart_cgi_url db_socket""".split()
    missing = [n for n in wanted if n not in C.OPTIONS]
    assert not missing


# -- defaults -----------------------------------------------------------------

def test_defaults_when_absent(tmp_path):
    cfg = load_config(make(tmp_path, ""))
    assert cfg.project_dir == str(tmp_path / "proj")
    assert cfg.master_url == "" and cfg.db_name == "" and cfg.db_socket == ""
    assert cfg.max_wus_to_send == 10
    assert cfg.sched_debug_level == 3 and cfg.fuh_debug_level == 3
    assert cfg.shmem_key == 0 and cfg.uldl_dir_fanout == 0
    assert cfg.cache_md5_info is False
    assert cfg.dont_generate_upload_certificates is False
    assert cfg.httpd_user == "apache"
    assert cfg.max_ncpus == 64
    assert cfg.maintenance_delay == 3600.0
    assert cfg.version_select_random_factor == 1.0
    assert cfg.default_disk_min_free_gb == 1.0
    assert cfg.shmem_work_items == 100
    assert cfg.user_url is True and cfg.user_country is True
    assert cfg.fuh_set_initial_permission is None
    assert cfg.ban_os == [] and cfg.ban_cpu == []
    assert cfg.daemons == [] and cfg.tasks == [] and cfg.unknown == {}
    assert cfg.delete_delay == 0.0
    # list defaults are not shared between configs
    cfg.ban_os.append("x")
    assert load_config(make(tmp_path, "", name="other")).ban_os == []


def test_path_defaults_and_host(tmp_path):
    project = make(tmp_path, "")
    cfg = load_config(project)
    local = C.short_hostname()
    assert cfg.host == local == cfg.local_host
    assert cfg.key_dir == str(project / "keys")
    assert cfg.download_dir == str(project / "download")
    assert cfg.upload_dir == str(project / "upload")
    assert cfg.app_dir == str(project / "apps")
    assert cfg.log_dir == str(project / ("log_" + local))
    assert cfg.pid_dir == str(project / ("pid_" + local))
    assert cfg.tmp_dir == str(project / ("tmp_" + local))
    assert cfg.project_path("html", "user") == str(project / "html" / "user")


def test_explicit_and_relative_paths(tmp_path):
    project = make(tmp_path, "<key_dir>/srv/keys/</key_dir><upload_dir>up</upload_dir>"
                             "<host>main1</host>")
    cfg = load_config(project)
    assert cfg.key_dir == "/srv/keys/"
    assert cfg.upload_dir == str(project / "up")
    assert cfg.host == "main1"
    # the log dir is per *this* machine, as bin/start makes it
    assert cfg.log_dir == str(project / ("log_" + C.short_hostname()))


def test_db_host_equal_to_hostname_is_localhost(tmp_path):
    cfg = load_config(make(tmp_path, "<db_host>%s</db_host>" % os.uname().nodename))
    assert cfg.db_host == "localhost"
    cfg = load_config(make(tmp_path, "<db_host>db.example.org:3307</db_host>", name="b"))
    assert cfg.db_host == "db.example.org:3307"


def test_replica_defaults_to_main(tmp_path):
    cfg = load_config(make(tmp_path, "<db_name>p</db_name><db_user>u</db_user>"
                                     "<db_passwd>pw</db_passwd><db_host>h</db_host>"
                                     "<replica_db_host>r</replica_db_host>"))
    assert (cfg.replica_db_name, cfg.replica_db_user, cfg.replica_db_passwd,
            cfg.replica_db_host) == ("p", "u", "pw", "r")


# -- value types ----------------------------------------------------------------

@pytest.mark.parametrize("xml, expected", [
    ("<cache_md5_info/>", True),
    ("<cache_md5_info></cache_md5_info>", True),
    ("<cache_md5_info>1</cache_md5_info>", True),
    ("<cache_md5_info> 1 </cache_md5_info>", True),
    ("<cache_md5_info>0</cache_md5_info>", False),
    ("<cache_md5_info>2</cache_md5_info>", True),
    ("<cache_md5_info>true</cache_md5_info>", True),
    ("<cache_md5_info>false</cache_md5_info>", False),
])
def test_bool_forms(tmp_path, xml, expected):
    assert load_config(make(tmp_path, xml)).cache_md5_info is expected


def test_int_float_str_parsing(tmp_path):
    cfg = load_config(make(tmp_path, """
        <max_wus_to_send> 50 </max_wus_to_send>
        <min_sendwork_interval>+7</min_sendwork_interval>
        <reliable_priority_on_over>-1</reliable_priority_on_over>
        <next_rpc_delay>2.5</next_rpc_delay>
        <maintenance_delay>60</maintenance_delay>
        <long_name>  A &amp; B &lt;proj&gt;  </long_name>
        <db_host>

        </db_host>"""))
    assert cfg.max_wus_to_send == 50
    assert cfg.min_sendwork_interval == 7
    assert cfg.reliable_priority_on_over == -1         # an option without a range
    assert cfg.next_rpc_delay == 2.5
    assert cfg.maintenance_delay == 60.0 and isinstance(cfg.maintenance_delay, float)
    assert cfg.long_name == "A & B <proj>"
    assert cfg.db_host == ""


def test_hex_shmem_key_and_strtol_ints(tmp_path):
    cfg = load_config(make(tmp_path, "<shmem_key>0x1111abcd</shmem_key>"
                                     "<uldl_dir_fanout>0X10</uldl_dir_fanout>"
                                     "<max_ncpus>010</max_ncpus>"))
    assert cfg.shmem_key == 0x1111ABCD
    assert cfg.uldl_dir_fanout == 16
    assert cfg.max_ncpus == 8          # leading zero is octal, as strtol(s, 0)


def test_octal_permissions(tmp_path):
    cfg = load_config(make(tmp_path, "<fuh_set_initial_permission>0660</fuh_set_initial_permission>"
                                     "<fuh_set_completed_permission>440</fuh_set_completed_permission>"))
    assert cfg.fuh_set_initial_permission == 0o660
    assert cfg.fuh_set_completed_permission == 0o440


def test_repeatable_options(tmp_path):
    cfg = load_config(make(tmp_path, """
        <ban_os>Windows\t5\\.0</ban_os>
        <ban_os>Darwin.*</ban_os>
        <ban_cpu>.*Celeron.*</ban_cpu>
        <no_amd_k6/>
        <dont_search_host_for_user>7</dont_search_host_for_user>
        <dont_search_host_for_user>9</dont_search_host_for_user>"""))
    assert cfg.ban_os == ["Windows\t5\\.0", "Darwin.*"]
    assert cfg.ban_cpu == [".*Celeron.*", C._AMD_K6_REGEX]
    assert cfg.dont_search_host_for_user == [7, 9]


def test_derived_values(tmp_path):
    cfg = load_config(make(tmp_path, """
        <grace_period_hours>1.5</grace_period_hours>
        <delete_delay_hours>2</delete_delay_hours>
        <min_core_client_version>700</min_core_client_version>
        <min_core_client_version_announced>71600</min_core_client_version_announced>"""))
    assert cfg.report_grace_period == 5400
    assert cfg.delete_delay == 7200.0
    assert cfg.min_core_client_version == 70000
    assert cfg.min_core_client_version_announced == 71600
    # file order decides, as in BOINC: a later report_grace_period wins
    cfg = load_config(make(tmp_path, "<grace_period_hours>1</grace_period_hours>"
                                     "<report_grace_period>10</report_grace_period>", name="b"))
    assert cfg.report_grace_period == 10


def test_batch_accel_with_size_classes_is_an_error(tmp_path):
    with pytest.raises(ConfigError, match="batch_accel and size_classes"):
        load_config(make(tmp_path, "<batch_accel/><size_classes/>"))


# -- errors -----------------------------------------------------------------------

def test_bad_int_names_file_line_and_option(tmp_path):
    project = make(tmp_path, "<db_name>x</db_name>\n<max_wus_to_send>abc</max_wus_to_send>")
    with pytest.raises(ConfigError) as info:
        load_config(project)
    msg = str(info.value)
    assert str(project / "config.xml") in msg
    assert "line 4" in msg
    assert "max_wus_to_send" in msg and "'abc'" in msg
    assert isinstance(info.value, BoincpyError)


@pytest.mark.parametrize("body, word", [
    ("<cache_md5_info>maybe</cache_md5_info>", "boolean"),
    ("<next_rpc_delay>soon</next_rpc_delay>", "number"),
    ("<fuh_set_initial_permission>0999</fuh_set_initial_permission>", "octal"),
    ("<shmem_key>0xZZ</shmem_key>", "integer"),
    ("<dont_search_host_for_user>x</dont_search_host_for_user>", "integer"),
])
def test_bad_values_of_each_type(tmp_path, body, word):
    with pytest.raises(ConfigError, match=word):
        load_config(make(tmp_path, body))


@pytest.mark.parametrize("body, words", [
    ("<max_wus_to_send>-1</max_wus_to_send>", "-1 is below the minimum 0"),
    ("<locality_scheduler_fraction>1.5</locality_scheduler_fraction>",
     "1.5 is above the maximum 1"),
    ("<default_disk_max_used_pct>101</default_disk_max_used_pct>", "above the maximum 100"),
    ("<shmem_work_items>0</shmem_work_items>", "below the minimum 1"),
    ("<homogeneous_redundancy>3</homogeneous_redundancy>", "above the maximum 2"),
    ("<fuh_set_initial_permission>017777</fuh_set_initial_permission>",
     "above the maximum 07777"),
    ("<dont_search_host_for_user>0</dont_search_host_for_user>", "below the minimum 1"),
    ("<next_rpc_delay>inf</next_rpc_delay>", "'inf' is not a number"),
    ("<maintenance_delay>nan</maintenance_delay>", "'nan' is not a number"),
    ("<grace_period_hours>1e999</grace_period_hours>", "is not a number"),
    ("<max_wus_to_send>99999999999999999999999</max_wus_to_send>", "is not an integer"),
])
def test_values_outside_their_range_name_file_line_and_option(tmp_path, body, words):
    project = make(tmp_path, "<db_name>x</db_name>\n" + body)
    with pytest.raises(ConfigError) as info:
        load_config(project)
    name = body[1:body.index(">")]
    assert str(info.value) == "%s line 4: option <%s>: %s" % (
        project / "config.xml", name, str(info.value).split(": ", 2)[2])
    assert words in str(info.value)


def test_values_at_the_ends_of_their_range_are_taken(tmp_path):
    cfg = load_config(make(tmp_path, "<max_wus_to_send>0</max_wus_to_send>"
                                     "<locality_scheduler_fraction>1</locality_scheduler_fraction>"
                                     "<fuh_set_initial_permission>07777</fuh_set_initial_permission>"
                                     "<shmem_key>-5</shmem_key>"))
    assert (cfg.max_wus_to_send, cfg.locality_scheduler_fraction,
            cfg.fuh_set_initial_permission, cfg.shmem_key) == (0, 1.0, 0o7777, -5)


def test_every_numeric_option_declares_a_sane_range():
    for opt in C.OPTIONS.values():
        if opt.min is not None and opt.max is not None:
            assert opt.min <= opt.max, opt
        if opt.default is not None and opt.type in ("int", "float", "octal"):
            opt.validate(C.format_value(opt.name, opt.default))    # the default is valid
    assert C.OPTIONS["max_wus_to_send"].range_text() == "0 or more"
    assert "<locality_scheduler_fraction>  float 0 to 1, default" in C.describe_options()


def test_unknown_option_warns_did_you_mean_and_is_kept(tmp_path):
    project = make(tmp_path, "<db_name>x</db_name>\n<max_wu_to_send>5</max_wu_to_send>\n"
                             "<my_web_opt>1</my_web_opt>")
    with pytest.warns(C.ConfigWarning) as record:
        cfg = load_config(project)
    text = str(record[0].message)
    assert "<max_wu_to_send> (line 4) -- did you mean <max_wus_to_send>?" in text
    assert "<my_web_opt> (line 5)" in text and "my_web_opt> (line 5) --" not in text
    assert cfg.max_wus_to_send == 10 and cfg.unknown["max_wu_to_send"] == "5"


def test_a_daemon_logs_the_unknown_option_warning(tmp_path, capsys):
    from boincpy.daemons.base import Daemon, run_daemon

    class Idle(Daemon):
        name = "idle"
        one_shot = True

        def initialise(self):
            pass

        def one_pass(self):
            return False
    project = make(tmp_path, "<db_name>x</db_name>\n<shmem_workitems>5</shmem_workitems>")
    (project / "cgi-bin").mkdir()
    assert run_daemon(Idle, ["--project_dir", str(project)]) == 0
    err = capsys.readouterr().err
    line = [x for x in err.splitlines() if "shmem_workitems" in x][0]
    assert " [warning] " in line and "did you mean <shmem_work_items>?" in line


def test_malformed_xml_names_file_and_line(tmp_path):
    project = tmp_path / "p"
    project.mkdir()
    (project / "config.xml").write_text(
        "<boinc>\n<config>\n<db_name>x</db_name>\n<master_url>u</master_ur>\n</config>\n</boinc>\n")
    with pytest.raises(ConfigError) as info:
        load_config(project)
    assert str(project / "config.xml") in str(info.value)
    assert "line 4" in str(info.value)
    assert "malformed XML" in str(info.value)


def test_elements_nested_too_deep_are_refused_with_the_line(tmp_path):
    """An unknown option holding elements is kept as written (its inner XML,
    rebuilt by a recursive reader): nested deeper than any writer nests, the
    file is refused with its line, not a RecursionError (found by the fuzz
    test of the config reader)."""
    project = tmp_path / "p"
    project.mkdir()
    (project / "cgi-bin").mkdir()
    deep = "<a>" * 2000 + "z" + "</a>" * 2000
    (project / "config.xml").write_text(
        "<boinc>\n<config>\n<db_name>x</db_name>\n<my_option>\n%s\n</my_option>\n"
        "</config>\n</boinc>\n" % deep)
    with pytest.raises(ConfigError) as info:
        load_config(project)
    assert str(project / "config.xml") in str(info.value)
    assert "line 5" in str(info.value) and "nested more than 64 deep" in str(info.value)
    # as deep as an option may be: kept
    kept = "<a>" * 60 + "z" + "</a>" * 60
    (project / "config.xml").write_text(
        "<boinc>\n<config>\n<db_name>x</db_name>\n<my_option>%s</my_option>\n"
        "</config>\n</boinc>\n" % kept)
    with pytest.warns(Warning):
        assert load_config(project).unknown["my_option"] == kept


def test_wrong_root_or_missing_config(tmp_path):
    project = tmp_path / "p"
    project.mkdir()
    (project / "config.xml").write_text("<config><db_name>x</db_name></config>")
    with pytest.raises(ConfigError, match="expected <boinc>"):
        load_config(project)
    (project / "config.xml").write_text("<boinc><daemons/></boinc>")
    with pytest.raises(ConfigError, match="no <config>"):
        load_config(project)


def test_missing_file(tmp_path):
    with pytest.raises(ConfigError, match="config.xml"):
        load_config(tmp_path)


# -- unknown options ----------------------------------------------------------------

def test_unknown_options_kept_and_warned_once(tmp_path):
    project = make(tmp_path, "<db_name>x</db_name><my_web_opt>42</my_web_opt>"
                             "<structured><a>1</a><b x=\"y\"/></structured>")
    with pytest.warns(C.ConfigWarning, match="my_web_opt") as record:
        cfg = load_config(project)
    assert len(record) == 1
    assert cfg.unknown == {"my_web_opt": "42", "structured": '<a>1</a><b x="y"/>'}
    assert cfg.get("my_web_opt") == "42" and cfg.get("db_name") == "x"
    assert cfg.get("nothing", "d") == "d"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        again = load_config(project)         # same file: no second warning
    assert again.unknown["my_web_opt"] == "42"


def test_unknown_options_keep_their_mixed_content_in_order(tmp_path):
    """An option boincpy does not know is written back as it was read (a
    tool that rewrites config.xml keeps it): text and elements in their
    order, markup as markup, plain text with a '<' as text."""
    project = make(tmp_path, "<db_name>x</db_name>"
                             "<mixed>a <b>c</b> d<e/> f</mixed>"
                             "<listed>\n  <a>1</a>\n  <b x=\"y\"/>\n</listed>"
                             "<texty>1 &lt; 2</texty>")
    with pytest.warns(C.ConfigWarning):
        cfg = load_config(project)
    assert cfg.unknown == {"mixed": "a <b>c</b> d<e/> f", "listed": '<a>1</a><b x="y"/>',
                           "texty": "1 < 2"}
    C.write_config(cfg.path, cfg.as_options(), cfg.daemons, cfg.tasks)
    with open(cfg.path) as f:
        text = f.read()
    assert "<mixed>a <b>c</b> d<e/> f</mixed>" in text
    assert "<texty>1 &lt; 2</texty>" in text
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")         # warned once already
        again = load_config(project)
    assert again.unknown == cfg.unknown


# -- daemons and tasks ------------------------------------------------------------

DAEMONS = """  <daemons>
    <daemon><cmd>feeder -d 3</cmd></daemon>
    <daemon>
      <cmd>sample_bitwise_validator -d 3 --app example_app</cmd>
      <host>other</host><output>val.txt</output><pid_file>val.pid</pid_file>
      <disabled/>
    </daemon>
    <daemon><cmd>run_in_ops ./x.php</cmd><disabled>0</disabled></daemon>
  </daemons>
"""

TASKS = """  <tasks>
    <task><cmd>antique_file_deleter -d 2</cmd><period>24 hours</period>
      <output>antique_file_deleter.out</output><disabled>0</disabled></task>
    <task><cmd>run_in_ops ./update_uotd.php</cmd><period>1 days</period><disabled>1</disabled></task>
    <task><cmd>a</cmd><period>30</period><host>h2</host></task>
    <task><cmd>b</cmd><period>5 min</period><always_run>1</always_run></task>
    <task><cmd>c</cmd><period>2 weeks</period><output>/dev/null</output></task>
  </tasks>
"""


def test_daemons(tmp_path):
    cfg = load_config(make(tmp_path, "<host>main1</host>", DAEMONS))
    feeder, validator, ops = cfg.daemons
    assert feeder == DaemonSpec("feeder -d 3", host="main1", pid_file="feeder.pid",
                                disabled=False)
    assert (feeder.output, feeder.lock_file) == ("feeder.log", "feeder.lock")
    assert (validator.host, validator.output, validator.pid_file, validator.disabled) == \
        ("other", "val.txt", "val.pid", True)
    # as BOINC's start: an explicit <output> names the lock file
    assert validator.lock_file == "val.txt.lock"
    assert DaemonSpec("feeder", output="/dev/null").lock_file == "feeder.lock"
    assert DaemonSpec("feeder", output="f.log", lock_file="x.lock").lock_file == "x.lock"
    assert ops.output == "x.php.log" and ops.disabled is False
    assert ops.cmd_name() == "x.php"


def test_tasks_and_periods(tmp_path):
    cfg = load_config(make(tmp_path, "<host>main1</host>", tasks=TASKS))
    t = cfg.tasks
    assert (t[0].cmd, t[0].period, t[0].period_text, t[0].output, t[0].disabled) == \
        ("antique_file_deleter -d 2", 86400, "24 hours", "antique_file_deleter.out", False)
    assert t[0].lock_file == "antique_file_deleter.out.lock"
    assert t[0].host == "main1"
    assert (t[1].period, t[1].output, t[1].disabled) == (86400, "update_uotd.php.out", True)  # bin/start: basename + .out
    assert (t[2].period, t[2].host) == (1800, "h2")
    assert (t[3].period, t[3].always_run) == (300, True)
    assert t[4].period == 14 * 86400 and t[4].lock_file == "c.lock"


@pytest.mark.parametrize("text, seconds", [
    ("24 hours", 86400), ("1 hour", 3600), ("1 days", 86400), ("1 day", 86400),
    ("5 min", 300), ("5 minutes", 300), ("1 minute", 60), ("10 seconds", 10),
    ("1 second", 1), ("10 s", 10), ("2 weeks", 1209600), ("1 week", 604800),
    ("7", 420), ("1 month", 30 * 86400), ("3 Hours", 10800), (" 2  days ", 172800),
])
def test_parse_period(text, seconds):
    assert parse_period(text) == seconds


@pytest.mark.parametrize("text", ["", "soon", "1 fortnight", "1 2 3", "x hours"])
def test_bad_period(tmp_path, text):
    with pytest.raises(ValueError):
        parse_period(text)
    tasks = "<tasks>\n<task><cmd>a</cmd>\n<period>%s</period></task></tasks>" % text
    with pytest.raises(ConfigError, match=r"line \d+: <period>"):
        load_config(make(tmp_path, "", tasks=tasks))


def test_task_without_cmd_or_period(tmp_path):
    with pytest.raises(ConfigError, match="without <period>"):
        load_config(make(tmp_path, "", tasks="<tasks><task><cmd>a</cmd></task></tasks>"))
    with pytest.raises(ConfigError, match="without <cmd>"):
        load_config(make(tmp_path, "", daemons="<daemons><daemon/></daemons>", name="b"))


# -- writing ------------------------------------------------------------------------

def test_write_load_round_trip(tmp_path):
    project = tmp_path / "rt"
    project.mkdir()
    options = {
        "master_url": "http://h/p/", "long_name": "Fish & <Chips>", "host": "main1",
        "db_name": "p", "db_passwd": 'a"b\'c<&>', "shmem_key": 0x1111ABCD,
        "uldl_dir_fanout": 1024, "cache_md5_info": True, "send_result_abort": False,
        "next_rpc_delay": 2.5, "maintenance_delay": 60.0,
        "fuh_set_initial_permission": 0o660, "ban_os": ["Darwin.*", "Win\t5"],
        "dont_search_host_for_user": [3, 4], "key_dir": "/srv/keys",
        "my_web_opt": "42",
    }
    daemons = [DaemonSpec("feeder -d 3", host="main1"),
               DaemonSpec("transitioner -d 3", host="other", disabled=True,
                          output="t.out", pid_file="t.pid")]
    tasks = [TaskSpec("update_stats", "1 days", host="main1"),
             TaskSpec("db_dump -d 2", 7200, disabled=True, host="h3", output="d.out"),
             {"cmd": "run_in_ops ./notify.php", "period": "24 hours"}]
    path = write_config(str(project), options, daemons, tasks)
    assert path == str(project / "config.xml")
    text = (project / "config.xml").read_text()
    assert text.startswith('<?xml version="1.0" ?>\n<boinc>\n    <config>\n        <')
    assert "<shmem_key>0x1111abcd</shmem_key>" in text
    assert "<fuh_set_initial_permission>0660</fuh_set_initial_permission>" in text
    assert "Fish &amp; &lt;Chips&gt;" in text
    with pytest.warns(C.ConfigWarning):
        cfg = load_config(project)
    assert cfg.as_options() == options
    assert cfg.daemons == daemons
    assert [t.cmd for t in cfg.tasks] == ["update_stats", "db_dump -d 2",
                                           "run_in_ops ./notify.php"]
    assert cfg.tasks[0] == tasks[0]
    assert cfg.tasks[1] == tasks[1] and cfg.tasks[1].period_text == "2 hours"
    assert cfg.tasks[2].period == 86400 and cfg.tasks[2].output == "notify.php.out"
    assert cfg.tasks[2].host == "main1"
    # and again from the loaded config: the same text
    write_config(str(tmp_path / "rt" / "again.xml"), cfg.as_options(), cfg.daemons, cfg.tasks)
    assert (project / "again.xml").read_text() == text


def test_write_to_file_path_is_atomic_replace(tmp_path):
    target = tmp_path / "config.xml"
    target.write_text("old")
    write_config(str(target), {"db_name": "x"})
    assert load_config(tmp_path).db_name == "x"
    assert [p.name for p in tmp_path.iterdir()] == ["config.xml"]


# -- docs and example -----------------------------------------------------------------

def test_describe_options_mentions_every_option():
    text = C.describe_options()
    for name in C.OPTIONS:
        assert "<%s>" % name in text
    assert "PROJECT/keys" in text and "PROJECT/log_<host>" in text


def test_config_xml_example_parses_and_declares_only_known_options(tmp_path):
    example = REPO / "config.xml.example"
    text = example.read_text()
    assert text == C.example_config(), "regenerate: python -m boincpy.config --example"
    project = tmp_path / "ex"
    project.mkdir()
    (project / "config.xml").write_text(text)
    with warnings.catch_warnings():
        warnings.simplefilter("error")        # an undeclared option would warn
        cfg = load_config(project)
    assert cfg.unknown == {}
    assert cfg.master_url == "https://example.org/proj/"
    assert cfg.ban_os == [] and cfg.ban_cpu == []
    assert [d.cmd.split()[0] for d in cfg.daemons][:3] == ["feeder", "transitioner",
                                                           "file_deleter"]
    assert cfg.tasks[0].period == 86400
    # every declared non-repeatable option appears as an element
    for name, opt in C.OPTIONS.items():
        assert "<%s>" % name in text, name
    # copying the example must not switch off upload certificates or let one
    # volunteer return two replicas of a job
    assert not cfg.ignore_upload_certificates
    assert not cfg.dont_generate_upload_certificates
    assert cfg.one_result_per_user_per_wu


def test_reference_server_fixture_loads():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cfg = load_config(FIXTURE)
    assert cfg.unknown == {}
    assert cfg.long_name == "Reference Project"
    assert (cfg.db_name, cfg.db_user, cfg.db_passwd) == ("refproj", "boincadm", "boincpw")
    assert cfg.db_host == ""                 # only white space in the file
    assert cfg.shmem_key == 0x11115882
    assert cfg.uldl_dir_fanout == 1024 and cfg.host == "vm"
    assert cfg.cache_md5_info and cfg.send_result_abort and cfg.show_results
    assert cfg.one_result_per_user_per_wu is False
    assert cfg.key_dir == "/srv1/ref/projects/refproj/keys/"
    assert cfg.debug_req_reply_dir == "/srv1/ref/projects/refproj/req_reply"
    assert [d.cmd for d in cfg.daemons] == [
        "feeder -d 3", "transitioner -d 3", "file_deleter -d 3",
        "sample_bitwise_validator -d 3 --app example_app",
        "sample_dummy_assimilator -d 3 --app example_app"]
    assert cfg.daemons[0].output == "feeder.log" and cfg.daemons[0].pid_file == "feeder.pid"
    assert len(cfg.tasks) == 11
    forum = [t for t in cfg.tasks if "forum" in t.cmd][0]
    assert forum.period == 3600 and forum.output == "update_forum_activities.out"
    assert [t.disabled for t in cfg.tasks].count(True) == 2


def test_load_is_cheap(tmp_path):
    """A 60-option config loads well under the scheduler's budget."""
    import time
    options = {}
    for name, opt in C.OPTIONS.items():
        if opt.type in ("list", "ints") or opt.default is None:
            continue
        options[name] = opt.example if opt.example is not None else opt.default
        if len(options) == 60:
            break
    write_config(str(tmp_path), options, [DaemonSpec("feeder -d 3")],
                 [TaskSpec("update_stats", "1 days")])
    load_config(tmp_path)
    n = 200
    start = time.perf_counter()
    for _ in range(n):
        load_config(tmp_path)
    per_load = (time.perf_counter() - start) / n
    assert per_load < 0.005      # measured ~0.4 ms; generous for slow CI


def test_find_project_dir(tmp_path, monkeypatch):
    project = make(tmp_path, "<db_name>x</db_name>")
    (project / "cgi-bin").mkdir()
    monkeypatch.chdir(project / "cgi-bin")
    monkeypatch.delenv("BOINC_PROJECT_DIR", raising=False)
    assert load_config().project_dir == str(project)
    monkeypatch.setenv("BOINC_PROJECT_DIR", str(tmp_path))
    with pytest.raises(ConfigError, match="BOINC_PROJECT_DIR"):
        C.find_project_dir()


def test_options_documented_as_unread_are_read_by_no_module():
    # config.py's docs say which options only BOINC's PHP site (not boincpy's)
    # or remote job submission reads, or nothing reads at all: keep that true
    import re
    unread = [name for name, opt in C.OPTIONS.items()
              if opt.doc.startswith((C._VOLUNTEER_SITE, "Remote job submission only"))
              or "accepted and ignored" in opt.doc or "ignore it" in opt.doc]
    assert {"rpc_key", "project_id", "akismet_key", "no_computing", "cgi_url",
            "disable_web_account_creation", "stripchart_cgi_url"} <= set(unread)
    sources = []
    for top in ("boincpy", "bin", "cgi-bin", "html"):
        for root, _dirs, files in os.walk(REPO / top):
            for f in files:
                path = os.path.join(root, f)
                if f.endswith((".py", ".php")) or top in ("bin", "cgi-bin"):
                    # make_project writes some of them, as BOINC's does
                    if path not in (str(REPO / "boincpy" / "config.py"),
                                    str(REPO / "boincpy" / "tools" / "make_project.py")):
                        sources.append(open(path, errors="replace").read())
    text = "\n".join(sources)
    for name in unread:
        # attribute reads (cfg.NAME) and look-ups by name ("NAME")
        pattern = r"\.%s\b|['\"]%s['\"]" % (name, name)
        assert not re.search(pattern, text), name
