"""The demo's pieces that need no client: settings checks, the files it writes
for the tools and the client, its config.xml edit, its summary text."""

import grp
import os
import pwd
import shutil
import tempfile

import pytest
from lxml import etree

from boincpy.config import load_config
from boincpy.testing.client import project_dir_name
from boincpy.tools import demo
from boincpy.tools.apps import read_version_xml
from boincpy.tools.demo import DemoError, Settings
from conftest import TEST_BASE


def test_settings_defaults_and_refusals(tmp_path):
    s = Settings(project_root=str(tmp_path / "my-demo"))
    assert (s.short_name, s.db_name, s.db_user) == ("my_demo", "my_demo", "my_demo")
    assert s.volunteers == 2 and s.clients_dir == str(tmp_path / "my-demo" / "demo_clients")
    assert Settings(project_root=str(tmp_path / "p"), min_quorum=3).volunteers == 3
    with pytest.raises(DemoError, match="--wrong_host needs --min_quorum 2"):
        Settings(project_root=str(tmp_path / "p"), min_quorum=1, wrong_host=True)
    with pytest.raises(DemoError, match="1 volunteers can't make a quorum of 2"):
        Settings(project_root=str(tmp_path / "p"), volunteers=1)
    with pytest.raises(DemoError, match="--min_quorum must be at least 1"):
        Settings(project_root=str(tmp_path / "p"), min_quorum=0)


def test_client_project_dir_name_is_the_clients():
    # client/file_names.cpp: escape_project_url() of the master URL
    assert project_dir_name("http://127.0.0.1:45755/") == "127.0.0.1_45755"
    assert project_dir_name("http://127.0.0.1:8080/proj") == "127.0.0.1_8080_proj"
    assert project_dir_name("https://boinc.example.org/my~proj/") == \
        "boinc.example.org_my_proj"


def test_version_xml_and_app_info_are_what_the_tools_and_client_read(tmp_path):
    path = tmp_path / "version.xml"
    path.write_text(demo.version_xml())
    spec = read_version_xml(str(path), warn=pytest.fail)
    assert spec.api_version == demo.API_VERSION
    assert [(f.physical_name, f.main_program) for f in spec.files] == [(demo.APP_FILE, True)]
    info = etree.fromstring(demo.wrong_app_info().encode())
    av = info.find("app_version")
    assert av.findtext("cmdline") == "--wrong" and av.findtext("version_num") == "100"
    assert av.find("file_ref").findtext("file_name") == info.find("file_info").findtext("name")


def test_job_inputs_are_lower_case_and_some_outputs_pass_8_kib():
    sizes = [len(demo.job_input(1, i)) for i in range(5)]
    assert sizes[0] < 100 and sizes[4] > 8192
    text = demo.job_input(3, 4)
    assert text == text.lower() and demo.expected_output(3, 4) == text.upper()
    assert demo.job_name(3, 4) == "demo_3_4"


def test_unreachable_dir_finds_what_www_data_cannot_enter(tmp_path):
    # pytest's tmp_path is under a 0700 directory: exactly what it must report
    assert demo.unreachable_dir(str(tmp_path / "project")) is not None
    www = pwd.getpwnam("www-data")
    os.makedirs(TEST_BASE, exist_ok=True)
    os.chmod(TEST_BASE, 0o755)
    base = tempfile.mkdtemp(dir=TEST_BASE)
    try:
        os.chmod(base, 0o755)
        closed = os.path.join(base, "closed")
        inner = os.path.join(closed, "project")
        os.makedirs(inner)
        os.chmod(closed, 0o700)
        assert demo.unreachable_dir(inner) == closed
        os.chmod(closed, 0o711)
        assert demo.unreachable_dir(os.path.join(inner, "not_yet")) is None
        if os.geteuid() == 0:                 # group access counts too
            os.chown(closed, 0, www.pw_gid)
            os.chmod(closed, 0o710)
            assert demo.unreachable_dir(inner) is None
    finally:
        shutil.rmtree(base)


def test_rewrite_config_keeps_mode_and_group(made_project):
    cfg = made_project.cfg
    before = os.stat(cfg.path)
    demo.rewrite_config(cfg, daemons=[{"cmd": c} for c in demo.DEFAULT_DAEMONS])
    after = os.stat(cfg.path)
    assert (after.st_mode, after.st_gid) == (before.st_mode, before.st_gid)
    if os.geteuid() == 0:
        assert grp.getgrgid(after.st_gid).gr_name == "www-data"
    new = load_config(made_project.root)
    assert [d.cmd for d in new.daemons] == list(demo.DEFAULT_DAEMONS)
    assert new.as_options() == cfg.as_options() and new.tasks == cfg.tasks


def test_summary_text():
    s = demo.Summary(project_root="/p", batch=2, njobs=3, min_quorum=2, done=3, failed=0,
                     valid=6, invalid=1, other=0, outputs_dir="/p/sample_results",
                     outputs=["demo_2_0", "demo_2_1", "demo_2_2"],
                     master_url="http://127.0.0.1:9/p/", ops_url="http://127.0.0.1:9/p_ops/",
                     ops_user="admin", ops_passwd="pw", stop_commands=["cd /p && bin/stop"],
                     users=[{"name": "V 1", "email_addr": "v1@x.org", "id": 4,
                             "total_credit": 0.5, "expavg_credit": 0.25,
                             "hosts": [{"id": 7, "total_credit": 0.5, "expavg_credit": 0.25,
                                        "valid": 3, "invalid": 0}]}])
    text = demo.format_summary(s)
    assert "  jobs done: 3 of 3 (validated and assimilated), 0 failed" in text
    assert "    V 1 <v1@x.org> (user 4): total 0.5, recent average 0.25" in text
    assert "      host 7: total 0.5, recent average 0.25; this batch: 3 valid, 0 invalid" in text
    assert "  outputs: /p/sample_results (3 files of this batch, e.g. demo_2_0)" in text
    assert "  ops pages: http://127.0.0.1:9/p_ops/ (user admin, password pw)" in text
    assert "      cd /p && bin/stop" in text
    assert "removed now" in demo.format_summary(s, teardown=True)
