"""The snapshot of a parsed config.xml (boincpy.parsed_config): a later process
takes it instead of parsing only while it is that parse, and never gives a
different Config than the parse would."""

import marshal
import os
import stat

import pytest

from boincpy import config as C
from boincpy import parsed_config as P
from boincpy.resident import Resident
from boincpy.testing.simclient import SchedulerRequest
from tests.sched_env import CLIENT_AUTH, sched_env  # noqa: F401 (fixture)
from tests.test_import_budget import _run_once

HOST = os.uname().nodename.split(".")[0]
PARSE = C.load_config      # the parse itself, uncounted

CONFIG = """<boinc>
  <config>
    <long_name>Snapshot &amp; Co</long_name>
    <db_name>snap</db_name>
    <db_host>%s</db_host>
    <shmem_work_items>250</shmem_work_items>
    <fuh_set_initial_permission>0640</fuh_set_initial_permission>
    <grace_period_hours>2.5</grace_period_hours>
    <ban_os>Windows 95</ban_os>
    <ban_os>Darwin</ban_os>
    <no_amd_k6/>
    <dont_search_host_for_user>7</dont_search_host_for_user>
    <min_core_client_version>700</min_core_client_version>
    <an_option_of_our_own><a>kept</a><b/></an_option_of_our_own>
    <download_dir>dl</download_dir>
  </config>
  <daemons>
    <daemon><cmd>feeder -d 3</cmd></daemon>
    <daemon><cmd>run_in_ops validator --app x</cmd><host>other</host><disabled>1</disabled></daemon>
  </daemons>
  <tasks>
    <task><cmd>update_stats</cmd><period>1 day</period><output>stats.out</output></task>
  </tasks>
</boinc>
""" % os.uname().nodename

CONFIG_AUX = """<config><max_jobs_in_progress>
  <project><cpu_limit><jobs>8</jobs><per_proc/></cpu_limit></project>
  <app><app_name>x</app_name><gpu_limit><jobs>2</jobs></gpu_limit><total_limit/></app>
</max_jobs_in_progress></config>
"""


@pytest.fixture(autouse=True)
def quiet():
    """The unknown option's warning, once per process and file, is not what
    these tests look at."""
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", C.ConfigWarning)
        yield


@pytest.fixture
def project(tmp_path):
    root = tmp_path / "proj"
    (root / "cgi-bin").mkdir(parents=True)
    (root / ("tmp_" + HOST)).mkdir()
    (root / "config.xml").write_text(CONFIG)
    (root / "config_aux.xml").write_text(CONFIG_AUX)
    return root


@pytest.fixture
def parses(monkeypatch):
    """How many times boincpy.config parsed config.xml."""
    count = []
    real = C.load_config

    def counted(*args, **kwargs):
        count.append(args)
        return real(*args, **kwargs)
    monkeypatch.setattr(C, "load_config", counted)
    return count


def _limits(spec):
    if spec is None:
        return None

    def one(limit):
        return None if limit is None else (limit.app_name, limit.line) + tuple(
            None if rsc is None else (rsc.jobs, rsc.per_proc)
            for rsc in (limit.total_limit, limit.cpu_limit, limit.gpu_limit))
    return (spec.path, one(spec.project), {k: one(v) for k, v in spec.apps.items()})


_FROM_ROWS = ("daemons", "tasks", "max_jobs_in_progress")


def _same(a, b):
    """Every attribute of two Configs equal (the job limits field by field).
    A snapshot's Config makes its daemons, tasks and job limits from rows when
    they are first read: compared as read, after the other attributes."""
    def plain(cfg):
        return {name: value for name, value in cfg.__dict__.items()
                if name not in _FROM_ROWS and not name.startswith("_snapshot_rows_")}
    assert plain(a) == plain(b)
    assert a.daemons == b.daemons and a.tasks == b.tasks
    assert _limits(a.max_jobs_in_progress) == _limits(b.max_jobs_in_progress)
    assert plain(a) == plain(b)     # reading them left no rows behind


@pytest.mark.parametrize("aux", [True, False])
def test_a_new_process_takes_the_snapshot_and_gets_the_same_config(project, parses, aux):
    parsed = Resident(str(project)).config(aux=aux)
    assert len(parses) == 1
    path = P.snapshot_path(str(project), aux)
    assert os.path.isfile(path)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o640     # it holds db_passwd
    taken = Resident(str(project)).config(aux=aux)
    assert len(parses) == 1                                 # no parse
    assert taken is not parsed
    # its daemons, tasks and job limits are rows until read (a CGI never
    # reads them, nor loads their classes)
    assert "daemons" not in taken.__dict__
    _same(taken, parsed)
    _same(taken, PARSE(str(project), aux=aux))
    # what the parse made of the file is all there
    assert taken.long_name == "Snapshot & Co" and taken.db_host == "localhost"
    assert taken.ban_os == ["Windows 95", "Darwin"] and len(taken.ban_cpu) == 1
    assert taken.report_grace_period == 9000 and taken.min_core_client_version == 70000
    assert taken.fuh_set_initial_permission == 0o640
    assert taken.download_dir == str(project / "dl")
    assert taken.get("an_option_of_our_own") == "<a>kept</a><b/>"
    assert taken.get("shmem_work_items") == 250 and taken.get("nothing", 5) == 5
    assert taken.daemons == parsed.daemons and taken.daemons[1].cmd_name() == "validator"
    assert taken.daemons[1].host == "other" and taken.daemons[1].disabled
    assert taken.tasks == parsed.tasks and taken.tasks[0].period == 86400
    if aux:
        limits = taken.max_jobs_in_progress
        assert limits.project.cpu_limit.jobs == 8 and limits.project.cpu_limit.per_proc
        assert limits.apps["x"].gpu_limit.jobs == 2 and limits.apps["x"].total_limit.jobs is None
    else:
        assert taken.max_jobs_in_progress is None


def _edit_config(project):
    text = (project / "config.xml").read_text().replace("Snapshot &amp; Co", "Renamed")
    (project / "config.xml").write_text(text)


def _edit_aux(project):
    (project / "config_aux.xml").write_text(CONFIG_AUX.replace("<jobs>8</jobs>", "<jobs>9</jobs>"))


def _drop_aux(project):
    (project / "config_aux.xml").unlink()


def _replace_config_same_size(project):
    # a new file, same size, same time: its inode tells
    text = (project / "config.xml").read_text().replace("Snapshot", "Snapsh0t")
    st = os.stat(project / "config.xml")
    (project / "new.xml").write_text(text)
    os.utime(project / "new.xml", ns=(st.st_atime_ns, st.st_mtime_ns))
    os.replace(project / "new.xml", project / "config.xml")


@pytest.mark.parametrize("change", [_edit_config, _edit_aux, _drop_aux,
                                    _replace_config_same_size])
def test_a_changed_file_is_parsed_again(project, parses, change):
    Resident(str(project)).config()
    change(project)
    cfg = Resident(str(project)).config()
    assert len(parses) == 2
    _same(cfg, PARSE(str(project)))
    # and the new parse is the next process's snapshot
    Resident(str(project)).config()
    assert len(parses) == 2


def test_a_new_boincpy_release_parses_again(project, parses, monkeypatch, tmp_path):
    Resident(str(project)).config()
    other = tmp_path / "config.py"
    other.write_text("# another release's option table\n")
    monkeypatch.setattr(P, "_TABLE_FILE", str(other))
    Resident(str(project)).config()
    assert len(parses) == 2


def test_another_host_name_parses_again(project, parses, monkeypatch):
    Resident(str(project)).config()
    real = os.uname()
    fake = type(real)((real.sysname, real.nodename + "x", real.release, real.version,
                       real.machine))
    monkeypatch.setattr(P.posix, "uname", lambda: fake)    # parsed_config's, not os's
    os.mkdir(os.path.dirname(P.snapshot_path(str(project), True)))
    cfg = Resident(str(project)).config()
    assert len(parses) == 2
    assert cfg.local_host == fake.nodename.split(".")[0]


@pytest.mark.parametrize("damage", [b"", b"garbage", None])
def test_a_damaged_snapshot_is_parsed_over(project, parses, damage):
    first = Resident(str(project)).config()
    path = P.snapshot_path(str(project), True)
    data = open(path, "rb").read()
    with open(path, "wb") as f:
        f.write(data[:len(data) // 2] if damage is None else damage)
    cfg = Resident(str(project)).config()
    assert len(parses) == 2
    _same(cfg, first)
    # written anew (marshal's bytes may differ where objects are shared)
    assert marshal.loads(open(path, "rb").read()) == marshal.loads(data)


def test_another_projects_snapshot_is_not_taken(project, parses, tmp_path):
    Resident(str(project)).config()
    other = tmp_path / "other"
    (other / ("tmp_" + HOST)).mkdir(parents=True)
    (other / "cgi-bin").mkdir()
    (other / "config.xml").write_text(CONFIG.replace("snap", "other_db"))
    os.link(P.snapshot_path(str(project), True), P.snapshot_path(str(other), True))
    os.unlink(P.snapshot_path(str(project), True))
    assert Resident(str(other)).config().db_name == "other_db"
    assert len(parses) == 2


def test_without_its_directory_every_process_parses(project, parses):
    os.rmdir(project / ("tmp_" + HOST))
    for _ in range(2):
        assert Resident(str(project)).config().long_name == "Snapshot & Co"
    assert len(parses) == 2
    assert not os.path.exists(os.path.dirname(P.snapshot_path(str(project), True)))


def test_a_config_the_server_may_no_longer_read_is_refused(project, parses):
    """Its mode (or group) changed: parsed again, not taken from the snapshot
    (troubleshooting by chgrp, as the operator's guide shows, must see it)."""
    Resident(str(project)).config()
    os.chmod(project / "config.xml", 0o600)
    Resident(str(project)).config()
    assert len(parses) == 2
    real_open = open

    def no_read(path, *args, **kwargs):
        if str(path).endswith("config.xml"):
            raise PermissionError(13, "Permission denied")
        return real_open(path, *args, **kwargs)
    os.chmod(project / "config.xml", 0o640)
    import builtins
    builtins.open = no_read
    try:
        with pytest.raises(C.ConfigError, match="Permission denied"):
            Resident(str(project)).config()
    finally:
        builtins.open = real_open


def test_a_broken_config_is_an_error_on_every_request(project, parses):
    Resident(str(project)).config()
    (project / "config.xml").write_text("<boinc><config><long_name>x</config></boinc>")
    for _ in range(2):
        with pytest.raises(C.ConfigError, match="config.xml line 1"):
            Resident(str(project)).config()


def test_the_scheduler_cgi_sees_a_config_change_on_its_next_request(sched_env):
    """End to end: cgi-bin/cgi, one process a request, as Apache runs it."""
    root = sched_env.root
    (root / ("tmp_" + HOST)).mkdir(exist_ok=True)
    sched_env.job_array(refill=True)
    body = SchedulerRequest(CLIENT_AUTH).xml().encode()
    reply, loaded = _run_once("cgi-bin/cgi", body, root)
    assert "boincpy.config" in loaded                     # parsed, snapshot left
    reply, loaded = _run_once("cgi-bin/cgi", body, root)
    assert "boincpy.config" not in loaded                 # taken
    assert b"<project_name>Test project</project_name>" in reply
    sched_env.set_options(long_name="Renamed project")
    reply, loaded = _run_once("cgi-bin/cgi", body, root)
    assert "boincpy.config" in loaded
    assert b"<project_name>Renamed project</project_name>" in reply


def test_a_config_without_daemons_says_so_as_a_missing_attribute():
    """A Config made without daemons, tasks or job limits (a caller's partial
    values) answers as before the snapshot kept them as rows: an
    AttributeError, so getattr's default still applies."""
    cfg = P.Config({"project_dir": "/nowhere"})
    for name in ("daemons", "tasks", "max_jobs_in_progress"):
        with pytest.raises(AttributeError, match=name):
            getattr(cfg, name)
        assert getattr(cfg, name, "default") == "default"
