"""The feeder and its shared job array, against MariaDB and real /dev/shm segments."""

import io
import multiprocessing
import os
import stat
import time

import pytest

from boincpy import shmem
from boincpy.db import connect
from boincpy.errors import ShmemError
from boincpy.files import make_host_log_dir
from jobs_helpers import add_app, add_app_version, add_jobs, make_feeder, project_config


@pytest.fixture
def proj(mini_project):
    """(cfg, db) of a mini project with one plain app version; the segment is
    removed afterwards whatever happens."""
    cfg = project_config(mini_project)
    db = connect(cfg)
    add_app_version(db)
    yield cfg, db
    db.close()
    path = shmem.segment_path(cfg)
    if os.path.exists(path):
        os.unlink(path)


def present(array):
    """{slot: resultid} of PRESENT slots."""
    out = {}
    for i in range(array.nslots):
        st, _, _, _, rid, _ = array.slot_head(i)
        if st == shmem.PRESENT:
            out[i] = rid
    return out


def test_fill_tables_and_stop_removes_segment(proj):
    cfg, db = proj
    cfg.shmem_work_items = 10
    jobs = add_jobs(db, 5)
    log = io.StringIO()
    feeder = make_feeder(cfg, log_stream=log)
    path = shmem.segment_path(cfg)
    try:
        assert os.path.exists(path)
        array = shmem.open_segment(path)
        assert not array.ready                      # before the first pass
        assert feeder.one_pass() is True
        assert array.ready and array.n_present == 5
        assert array.feeder_pid == os.getpid()
        assert present(array) == {i: jobs[i][1][0] for i in range(5)}
        slot = array.read_slot(0)
        assert slot.wu["id"] == jobs[0][0] and slot.wu["rsc_memory_bound"] == 1e6
        assert slot.wu["name"].startswith("wu_")
        assert array.read_xml_doc(0).startswith("<file_info>")
        assert [p["name"] for p in array.platforms] == ["x86_64-pc-linux-gnu"]
        assert [a["name"] for a in array.apps] == ["example_app"]
        assert [av["version_num"] for av in array.app_versions] == [100]
        assert array.app_versions[0]["xml_doc"].startswith("<app_version>")
        assert array.have_apps_for_proc_type == [True, False, False, False, False]
        text = log.getvalue()
        assert "read 1 platforms, 1 apps, 1 app_versions, 0 assignments" in text
        assert "Using 10 job slots" in text
        assert "adding result [RESULT#%d] in slot 0" % jobs[0][1][0] in text
        # nothing new: the next pass collides with what is there and sleeps
        assert feeder.one_pass() is False
        assert array.n_present == 5 and len(set(present(array).values())) == 5
        array.close()
    finally:
        feeder.shutdown()
    assert not os.path.exists(path)


def test_segment_permissions_and_name(proj, tmp_path):
    cfg, db = proj
    make_host_log_dir(cfg)
    os.chmod(cfg.host_log_dir, 0o770)
    feeder = make_feeder(cfg)
    try:
        path = shmem.segment_path(cfg)
        st = os.stat(path)
        assert stat.S_IMODE(st.st_mode) == 0o660
        assert st.st_gid == os.stat(cfg.host_log_dir).st_gid
        assert os.path.dirname(path) == "/dev/shm"
        assert "%08x" % cfg.shmem_key in os.path.basename(path)
        # another project (other directory, same key) gets another segment
        other = project_config(cfg.project_dir)
        other.project_dir = str(tmp_path / "elsewhere")
        assert shmem.segment_path(other) != path
    finally:
        feeder.shutdown()
    os.chmod(cfg.host_log_dir, 0o777)
    assert shmem.segment_mode_and_group(cfg)[0] == 0o666


@pytest.mark.parametrize("option, expect", [
    ((), "default"), (("--priority_order",), "prio"), (("--priority_asc",), "asc"),
    (("--priority_order_create_time",), "default"), (("--batch_accel",), "default"),
    (("--random_order",), "random"), (("--random_order_db",), "any"),
    (("--by_batch",), "batch"),
])
def test_orderings(proj, option, expect):
    cfg, db = proj
    cfg.shmem_work_items = 4
    cfg.feeder_query_size = 4
    a = add_jobs(db, 3, prefix="a", priority=0, batch=1)
    b = add_jobs(db, 3, prefix="b", priority=5, batch=2)
    feeder = make_feeder(cfg, option)
    try:
        feeder.one_pass()
        got = [rid for _, rid in sorted(present(feeder.array).items())]
    finally:
        feeder.shutdown()
    ids = lambda jobs: [r[0] for _, r in jobs]
    if expect == "default":                 # priority desc, then oldest workunit
        assert got == ids(b) + ids(a)[:1]
    elif expect == "prio":
        assert sorted(got[:3]) == ids(b) and got[3] in ids(a)
    elif expect == "asc":
        assert sorted(got[:3]) == ids(a) and got[3] in ids(b)
    elif expect == "random":
        rows = db.query("SELECT id FROM result ORDER BY random LIMIT 4")
        assert got == [r["id"] for r in rows]
    elif expect == "batch":                 # two of each batch, round robin
        assert len(set(got) & set(ids(a))) == 2 and len(set(got) & set(ids(b))) == 2
    else:
        assert len(set(got)) == 4 and set(got) <= set(ids(a) + ids(b))


def test_error_workunits_become_didnt_need(proj):
    cfg, db = proj
    bad = add_jobs(db, 2, prefix="bad", error_mask=16)
    good = add_jobs(db, 2, prefix="good")
    targeted = add_jobs(db, 1, prefix="tgt", transitioner_flags=2)
    log = io.StringIO()
    feeder = make_feeder(cfg, log_stream=log)
    try:
        feeder.one_pass()
        got = set(present(feeder.array).values())
    finally:
        feeder.shutdown()
    assert got == {r[0] for _, r in good}
    for _, (rid,) in bad:
        row = db.query_one("SELECT server_state, outcome FROM result WHERE id = %s", (rid,))
        assert (row["server_state"], row["outcome"]) == (5, 5)
        assert "[RESULT#%d] WU had error, marking as DIDNT_NEED" % rid in log.getvalue()
    assert db.query_value("SELECT server_state FROM result WHERE id = %s",
                          (targeted[0][1][0],)) == 2


def test_mod_wmod_appids(proj):
    cfg, db = proj
    app2 = add_app(db, "second_app")
    add_app_version(db, appid=app2)
    one = add_jobs(db, 6)
    two = add_jobs(db, 4, appid=app2, prefix="two")
    for argv, want in (
            (("--mod", "2", "0"), {r[0] for _, r in one + two if r[0] % 2 == 0}),
            (("--wmod", "2", "1"), {r[0] for w, r in one + two if w % 2 == 1}),
            (("--appids", str(app2)), {r[0] for _, r in two})):
        feeder = make_feeder(cfg, argv)
        try:
            feeder.one_pass()
            assert set(present(feeder.array).values()) == want, argv
        finally:
            feeder.shutdown()


def test_allapps_weights(proj):
    cfg, db = proj
    cfg.shmem_work_items = 8
    db.execute("UPDATE app SET weight = 1")
    app2 = add_app(db, "heavy_app", weight=3)
    add_app_version(db, appid=app2)
    add_jobs(db, 10)
    add_jobs(db, 10, appid=app2, prefix="heavy")
    feeder = make_feeder(cfg, ["--allapps"])
    try:
        feeder.one_pass()
        apps = [feeder.array.slot_head(i)[5] for i in range(8)]
    finally:
        feeder.shutdown()
    assert apps.count(app2) == 6 and apps.count(1) == 2


def test_reread_db(proj):
    cfg, db = proj
    add_jobs(db, 3)
    log = io.StringIO()
    feeder = make_feeder(cfg, log_stream=log)
    try:
        feeder.one_pass()
        assert [av["version_num"] for av in feeder.array.app_versions] == [100]
        add_app_version(db, version_num=200)
        db.execute("INSERT INTO platform (create_time, name, user_friendly_name) "
                   "VALUES (0, 'windows_x86_64', 'Windows')")
        trigger = os.path.join(cfg.project_dir, "reread_db")
        open(trigger, "w").close()
        feeder.one_pass()
        assert not os.path.exists(trigger)
        array = shmem.open_segment(shmem.segment_path(cfg))
        # the latest version per plan class only; the new platform is there
        assert [av["version_num"] for av in array.app_versions] == [200]
        assert {p["name"] for p in array.platforms} == {"x86_64-pc-linux-gnu",
                                                         "windows_x86_64"}
        assert array.n_present == 3
        # a deprecated app's jobs leave the array on the next reread
        db.execute("UPDATE app SET deprecated = 1")
        open(trigger, "w").close()
        feeder.one_pass()
        assert array.apps == [] and array.n_present == 0
        array.close()
        assert "Found trigger file reread_db; re-scanning database tables." in log.getvalue()
        assert "Done re-scanning: trigger file removed." in log.getvalue()
    finally:
        feeder.shutdown()


def test_update_av_scales_normalises_versions(proj):
    """Two CPU versions with enough samples: the app is normalised to their
    weighted average PFC; each version's pfc_scale = average / its own; a
    version with too few samples keeps scale 0; the array sees the new rows."""
    cfg, db = proj
    db.execute("UPDATE app_version SET pfc_n = 300, pfc_avg = 2.0 WHERE id = 1")
    slow = add_app_version(db, version_num=100, plan_class="sse2", pfc_n=100, pfc_avg=4.0)
    few = add_app_version(db, version_num=100, plan_class="avx", pfc_n=50, pfc_avg=1.0)
    log = io.StringIO()
    feeder = make_feeder(cfg, log_stream=log)
    try:
        # pfc_n 100 is not over the threshold: only version 1 counts, and one
        # CPU version alone is not enough to normalise
        feeder.one_pass()
        assert db.query_one("SELECT min_avg_pfc FROM app WHERE id = 1")["min_avg_pfc"] == 1    # the schema default
        db.execute("UPDATE app_version SET pfc_n = 101 WHERE id = %s", (slow,))
        feeder.one_pass()                  # within AV_UPDATE_PERIOD: nothing
        assert db.query_one("SELECT min_avg_pfc FROM app WHERE id = 1")["min_avg_pfc"] == 1    # the schema default
        feeder.next_av_update_time = 0
        feeder.one_pass()
        avg = (300 * 2.0 + 101 * 4.0) / 401
        app = db.query_one("SELECT min_avg_pfc FROM app WHERE id = 1")
        assert app["min_avg_pfc"] == pytest.approx(avg)
        scales = {r["id"]: r["pfc_scale"] for r in db.query(
            "SELECT id, pfc_scale FROM app_version")}
        assert scales[1] == pytest.approx(avg / 2.0)
        assert scales[slow] == pytest.approx(avg / 4.0)
        assert scales[few] == 0
        array = shmem.open_segment(shmem.segment_path(cfg))
        cached = {av["id"]: av for av in array.app_versions}
        assert cached[slow]["pfc_n"] == 101 and cached[slow]["pfc_scale"] == pytest.approx(
            avg / 4.0)
        assert array.apps[0]["min_avg_pfc"] == pytest.approx(avg)
        array.close()
        assert "version scale(s) updated" in log.getvalue()
    finally:
        feeder.shutdown()


def test_update_av_scales_gpu_and_mod_split(proj):
    """A GPU-only app is scaled to DEFAULT_GPU_SCALE of its average; a feeder
    that is not part 0 of a --mod split leaves credit alone."""
    cfg, db = proj
    db.execute("UPDATE app_version SET plan_class = 'cuda', pfc_n = 500, pfc_avg = 20.0")
    other = make_feeder(cfg, ["--mod", "2", "1"])
    try:
        other.one_pass()
        assert db.query_one("SELECT min_avg_pfc FROM app")["min_avg_pfc"] == 1    # the schema default
    finally:
        other.shutdown()
    main_feeder = make_feeder(cfg, ["--mod", "2", "0"])
    try:
        main_feeder.one_pass()
        assert db.query_one("SELECT min_avg_pfc FROM app")["min_avg_pfc"] == pytest.approx(2.0)
        assert db.query_one("SELECT pfc_scale FROM app_version")["pfc_scale"] == \
            pytest.approx(0.1)
    finally:
        main_feeder.shutdown()


def test_min_version_keeps_older_versions_and_core_versions_scaled(proj):
    cfg, db = proj
    add_app_version(db, version_num=200, min_core_version=720, max_core_version=0)
    add_app_version(db, version_num=50)
    db.execute("UPDATE app SET min_version = 100")
    feeder = make_feeder(cfg)
    try:
        avs = sorted(feeder.array.app_versions, key=lambda a: a["version_num"])
        assert [(a["version_num"], a["deprecated"]) for a in avs] == [(100, 1), (200, 0)]
        assert avs[1]["min_core_version"] == 72000
    finally:
        feeder.shutdown()


def _exit_at_once():
    os._exit(0)


def test_dead_pid_slot_comes_back(proj):
    cfg, db = proj
    add_jobs(db, 3)
    log = io.StringIO()
    feeder = make_feeder(cfg, log_stream=log)
    try:
        feeder.one_pass()
        array = feeder.array
        proc = multiprocessing.get_context("fork").Process(target=_exit_at_once)
        proc.start()
        proc.join()
        dead = proc.pid
        slot = array.read_slot(0)
        with array.lock():
            array._change_state(0, shmem.PRESENT, dead, 0)     # as if it had claimed it
        assert array.n_present == 2 and array.slot_state(0) == dead
        feeder.one_pass()
        assert array.slot_state(0) == shmem.PRESENT and array.n_present == 3
        assert array.read_slot(0).resultid == slot.resultid
        assert "Result reserved by non-existent process PID %d; resetting" % dead \
            in log.getvalue()
        # a live reservation (this process) stays
        with array.lock():
            array._change_state(1, shmem.PRESENT, os.getpid(), 0)
        feeder.one_pass()
        assert array.slot_state(1) == os.getpid()
    finally:
        feeder.shutdown()


def test_purge_stale_and_dont_send_jobs(proj):
    cfg, db = proj
    cfg.shmem_work_items = 2
    jobs = add_jobs(db, 4)
    feeder = make_feeder(cfg, ["--purge_stale", "1"])
    try:
        feeder.one_pass()
        array = feeder.array
        assert sorted(present(array).values()) == [jobs[0][1][0], jobs[1][1][0]]
        off, st = shmem._S["time_added"]
        st.pack_into(array.mm, array.slots_offset + off, time.time() - 120)   # slot 0
        feeder.one_pass()
        # slot 0 was stale: emptied and refilled by the next row of the enumeration
        assert present(array)[0] == jobs[2][1][0]
        assert present(array)[1] == jobs[1][1][0]
    finally:
        feeder.shutdown()
    cfg.dont_send_jobs = True
    feeder = make_feeder(cfg)
    try:
        assert feeder.one_pass() is False
        assert feeder.array.ready and feeder.array.n_present == 0
    finally:
        feeder.shutdown()


def test_attach_errors(proj):
    cfg, db = proj
    with pytest.raises(ShmemError) as exc:
        shmem.attach(cfg, wait_ready=0)
    assert "Can't attach shmem" in exc.value.log_text
    assert "(feeder not running?)" in exc.value.log_text
    assert exc.value.user_message == "Server error: feeder not running"
    feeder = make_feeder(cfg)
    try:
        with pytest.raises(ShmemError) as exc:          # created, not filled yet
            shmem.attach(cfg, wait_ready=0)
        assert exc.value.log_text == "feeder doesn't seem to be running"
        feeder.one_pass()
        array = shmem.attach(cfg, wait_ready=0)
        assert array.ready
        array.close()
        path = shmem.segment_path(cfg)
        with open(path, "r+b") as f:
            f.write(b"NOTOURS!")
        with pytest.raises(ShmemError) as exc:
            shmem.attach(cfg, wait_ready=0)
        assert exc.value.user_message == "Server error: recompile needed"
    finally:
        feeder.shutdown()


def test_an_array_attached_unmapped_reads_the_feeders_writes_and_maps_for_a_slot(proj):
    """A classic CGI attaches without mapping (resident.job_array): the
    header and tables come by pread, and see the feeder's later writes; the
    first slot read maps the segment."""
    cfg, db = proj
    cfg.shmem_work_items = 4
    jobs = add_jobs(db, 2)
    feeder = make_feeder(cfg)
    try:
        feeder.one_pass()
        array = shmem.attach(cfg, wait_ready=0, mapped=False)
        assert array._mm is None
        assert array.ready and array.n_present == 2 and array.nslots == 4
        assert [a["name"] for a in array.apps] == ["example_app"]
        assert array.header()["have_apps"] == [True, False, False, False, False]
        add_app_version(db, version_num=200)            # the feeder rewrites its tables
        open(os.path.join(cfg.project_dir, "reread_db"), "w").close()
        jobs += add_jobs(db, 1)
        feeder.one_pass()
        assert array._mm is None
        assert array.n_present == 3
        assert [av["version_num"] for av in array.app_versions] == [200]
        # a slot read: mapped now, and the slots are the feeder's
        assert sorted(present(array).values()) == sorted(rids[0] for _, rids in jobs)
        assert array._mm is not None
        array.close()
        array.close()
        with pytest.raises(ShmemError):                 # closed: neither read nor mapped
            array.mm
    finally:
        feeder.shutdown()


def test_big_xml_doc_not_cached(proj):
    cfg, db = proj
    big = "<workunit>\n" + "<!-- %s -->\n" % ("x" * (shmem.XML_CAPACITY + 10)) + "</workunit>\n"
    add_jobs(db, 1, xml_doc=big)
    feeder = make_feeder(cfg)
    try:
        feeder.one_pass()
        i = next(iter(present(feeder.array)))
        assert feeder.array.read_slot(i).xml_len == -1
        assert feeder.array.read_xml_doc(i) is None
    finally:
        feeder.shutdown()


def test_show_shmem(proj, capsys):
    from boincpy.tools.show_shmem import main
    cfg, db = proj
    jobs = add_jobs(db, 2)
    assert main(["--project_dir", cfg.project_dir]) == 1       # no segment yet
    assert "can't attach shmem" in capsys.readouterr().out
    feeder = make_feeder(cfg)
    try:
        feeder.one_pass()
        with feeder.array.lock():
            feeder.array._change_state(1, shmem.PRESENT, 4242, 0)
        assert main(["--project_dir", cfg.project_dir]) == 0
        out = capsys.readouterr().out
    finally:
        feeder.shutdown()
    assert "apps:\nid: 1 name: example_app hr: 0 weight: 1.00 beta: 0 hav: 0 nci: 0" in out
    assert "appid: 1 platformid: 1 version_num: 100 plan_class: " in out
    assert "have CPU apps: yes" in out and "ready: 1" in out
    assert "max_wu_results: %d" % cfg.shmem_work_items in out
    assert "   1: PID 4242: result %d" % jobs[1][1][0] in out
    assert "   2: ---" in out
    line0 = [l for l in out.splitlines() if l.startswith("   0 ")][0]
    assert "example_app" in line0 and str(jobs[0][1][0]) in line0
    headers = [l for l in out.splitlines() if l.startswith("slot ")]
    assert len(headers) == (cfg.shmem_work_items + 23) // 24


REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _wait(cond, timeout=20):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.1)
    return False


def _ready(cfg):
    try:
        array = shmem.attach(cfg, wait_ready=0)
    except ShmemError:
        return None
    return array


def test_bin_feeder_daemon_signals_and_stop_file(proj):
    import signal
    import subprocess
    import sys
    cfg, db = proj
    add_jobs(db, 2)
    cmd = [sys.executable, os.path.join(REPO, "bin", "feeder"), "--project_dir",
           cfg.project_dir, "--sleep_interval", "1", "-d", "3"]
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
    try:
        assert _wait(lambda: _ready(cfg) is not None)
        array = _ready(cfg)
        assert array.n_present == 2 and array.feeder_pid == proc.pid
        add_jobs(db, 3, prefix="later")
        assert _wait(lambda: array.n_present == 5)
        out = subprocess.run([sys.executable, os.path.join(REPO, "bin", "show_shmem"),
                              "--project_dir", cfg.project_dir], capture_output=True,
                             text=True, check=True).stdout
        assert "ready: 1" in out and "feeder pid: %d (running)" % proc.pid in out
        array.close()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(20) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    err = proc.stderr.read()
    assert "Starting feeder" in err and "Using 100 job slots" in err
    assert "Exiting: received signal %d" % signal.SIGTERM in err
    assert not os.path.exists(shmem.segment_path(cfg))
    # the stop_daemons trigger file stops it too
    proc = subprocess.Popen(cmd, stderr=subprocess.DEVNULL)
    try:
        assert _wait(lambda: _ready(cfg) is not None)
        open(os.path.join(cfg.project_dir, "stop_daemons"), "w").close()
        assert proc.wait(20) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert not os.path.exists(shmem.segment_path(cfg))


def test_bad_appids_is_a_clean_error(proj):
    import subprocess
    import sys
    cfg, db = proj
    r = subprocess.run([sys.executable, os.path.join(REPO, "bin", "feeder"), "--project_dir",
                        cfg.project_dir, "--appids", "one,two"], capture_output=True, text=True)
    assert r.returncode == 1
    assert "--appids needs a comma-separated list of app ids, got 'one,two'" in r.stderr
    assert "Traceback" not in r.stderr and not os.path.exists(shmem.segment_path(cfg))


def _as_www_data(path, q):
    import pwd
    pw = pwd.getpwnam("www-data")
    os.setgroups([])
    os.setgid(pw.pw_gid)
    os.setuid(pw.pw_uid)
    try:
        array = shmem.open_segment(path)
    except ShmemError as exc:
        q.put(("error", exc.log_text))
        return
    st, _, _, _, rid, _ = array.slot_head(0)
    slot, _ = array.claim(0, rid, os.getpid())
    q.put(("claimed", slot.resultid if slot else None))


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to switch to www-data")
def test_web_server_user_can_use_the_array(proj):
    import grp
    cfg, db = proj
    jobs = add_jobs(db, 1)
    www = grp.getgrnam("www-data").gr_gid
    os.chown(make_host_log_dir(cfg), -1, www)
    feeder = make_feeder(cfg)
    ctx = multiprocessing.get_context("fork")
    try:
        feeder.one_pass()
        path = shmem.segment_path(cfg)
        assert os.stat(path).st_gid == www
        q = ctx.Queue()
        p = ctx.Process(target=_as_www_data, args=(path, q))
        p.start()
        assert q.get(timeout=20) == ("claimed", jobs[0][1][0])
        p.join(10)
        # a segment of another group: the scheduler is told why it can't attach
        os.chown(path, -1, 0)
        q = ctx.Queue()
        p = ctx.Process(target=_as_www_data, args=(path, q))
        p.start()
        kind, text = q.get(timeout=20)
        p.join(10)
        assert kind == "error" and text.startswith("Can't attach shmem: permission denied")
        assert "(feeder not running?)" in text
    finally:
        feeder.shutdown()
