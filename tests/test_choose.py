"""Job choice (boincpy.sched.send and the modules it calls) against MariaDB
and a real job array."""

import io
import os
import time

import pytest

from boincpy import shmem
from boincpy.db import connect
from boincpy.sched import send as sched_send
from boincpy.sched.handler import write_transition_times
from jobs_helpers import (Feeding, ClientAppVersion, add_app_version, add_jobs,
                          add_platform, make_ctx, make_request, project_config)

LINUX = "x86_64-pc-linux-gnu"


@pytest.fixture(params=["full", "persistent"])
def proj(mini_project, request):
    """The project and a database: the full layer, or a persistent process's
    (boincpy.db.lite on _mysql, in a transaction as the handler has it: the
    slow check's read and the claim then go in one round trip)."""
    cfg = project_config(mini_project, one_result_per_user_per_wu=True,
                         daily_result_quota=500, report_grace_period=3600)
    db = connect(cfg) if request.param == "full" else connect(cfg, driver="mysql_c")
    feed = Feeding(cfg)
    yield cfg, db, feed
    feed.close()
    db.close()


def send(cfg, db, ja, request=None, hostid=1, userid=1, **kw):
    ctx = make_ctx(cfg, db, request or make_request(), hostid=hostid, userid=userid, **kw)
    if db.batching:
        with db.transaction():
            sched_send.send_work(ctx, ja)
            # as the handler does at the end of the request's transaction
            write_transition_times(ctx)
    else:
        sched_send.send_work(ctx, ja)
    assert ctx.wu_transition_times == {}
    return ctx


def messages(ctx):
    return [text for _, text in ctx.reply.messages]


def reason_keys(ctx):
    return [r.split(":")[0] for r in ctx.reply.no_work_reasons]


def test_sends_a_job_and_commits_it(proj):
    cfg, db, feed = proj
    avid = add_app_version(db)
    (wuid, (rid,)), = add_jobs(db, 1, delay_bound=7200)
    ja = feed()
    before = db.query_value("SELECT transition_time FROM workunit WHERE id = %s", (wuid,))
    db.execute("UPDATE workunit SET transition_time = 2147483647 WHERE id = %s", (wuid,))
    ctx = send(cfg, db, ja)
    assert before
    assert len(ctx.reply.jobs) == 1 and ctx.reply.no_work_reasons == []
    job = ctx.reply.jobs[0]
    assert job.result["id"] == rid and job.workunit["id"] == wuid
    assert job.app["name"] == "example_app" and job.app_version["id"] == avid
    assert job.report_deadline == ctx.now + 7200
    assert job.flops == 3e9 and job.avg_ncpus == 1.0 and job.resend is False
    assert job.workunit["xml_doc"].startswith("<file_info>")
    assert job.result["xml_doc_in"].startswith("<result>")
    row = db.query_one("SELECT * FROM result WHERE id = %s", (rid,))
    assert row["server_state"] == 4 and row["hostid"] == 1 and row["userid"] == 1
    assert row["sent_time"] == ctx.now
    assert row["report_deadline"] == ctx.now + 7200 + 3600        # with the grace period
    assert row["flops_estimate"] == 3e9 and row["app_version_id"] == avid
    assert db.query_value("SELECT transition_time FROM workunit WHERE id = %s",
                          (wuid,)) == ctx.now + 7200 + 3600
    hav = db.query_one("SELECT * FROM host_app_version WHERE host_id = 1")
    assert hav["app_version_id"] == avid and hav["n_jobs_today"] == 1
    assert ja.n_present == 0 and ja.slot_state(0) == shmem.EMPTY


def test_a_claimed_jobs_slot_is_emptied_only_when_the_claim_is_committed(proj):
    # Emptied before, the feeder could put the job back from a read that
    # still sees it UNSENT, and the next request would wait on this one's
    # lock for it.  Undone, the job is back in the array at once.
    cfg, db, feed = proj
    add_app_version(db)
    (wuid, (rid,)), = add_jobs(db, 1, delay_bound=7200)
    ja = feed()
    for outcome in ("rollback", "commit"):
        ctx = make_ctx(cfg, db, make_request(), hostid=1, userid=1)
        try:
            with db.transaction():
                sched_send.send_work(ctx, ja)
                assert [j.result["id"] for j in ctx.reply.jobs] == [rid]
                assert ja.slot_state(0) == os.getpid()      # still reserved
                assert ctx.work.pending_slots == {0}
                if outcome == "rollback":
                    raise RuntimeError("the request failed after job choice")
        except RuntimeError:
            assert ja.slot_state(0) == os.getpid()
            ja.restore(os.getpid())                 # what the handler does then
            assert ja.slot_state(0) == shmem.PRESENT
            assert db.query_value("SELECT server_state FROM result WHERE id = %s",
                                  (rid,)) == 2
    assert ja.slot_state(0) == shmem.EMPTY
    assert db.query_value("SELECT server_state FROM result WHERE id = %s", (rid,)) == 4


def test_no_jobs_available(proj):
    cfg, db, feed = proj
    add_app_version(db)
    ja = feed()
    log = io.StringIO()
    ctx = send(cfg, db, ja, log_stream=log)
    assert ctx.reply.jobs == []
    assert messages(ctx) == ["Project has no tasks available"]
    assert reason_keys(ctx) == ["no_jobs_available"]
    assert "[HOST#1] No tasks sent: no_jobs_available" in log.getvalue()


def test_no_app_version_for_platform(proj):
    cfg, db, feed = proj
    win = add_platform(db, "windows_x86_64")
    add_app_version(db, platformid=1)
    add_jobs(db, 2)
    ja = feed()
    log = io.StringIO()
    ctx = send(cfg, db, ja, make_request(platform="windows_x86_64"), log_stream=log)
    assert ctx.reply.jobs == []
    assert "No tasks sent" in messages(ctx)
    assert "Example app is not available for your type of computer." in messages(ctx)
    assert reason_keys(ctx) == ["no_app_version"]
    assert "[HOST#1] No tasks sent: no_app_version: no version of app example_app for " \
        "platform(s) windows_x86_64" in log.getvalue()
    assert win
    ctx = send(cfg, db, ja, make_request(platform="sparc-sun-solaris"))
    assert reason_keys(ctx) == ["no_platform"]
    assert ja.n_present == 2                        # nothing was taken


def test_alt_platform_and_64bit_jobs(proj):
    cfg, db, feed = proj
    i686 = add_platform(db, "i686-pc-linux-gnu")
    av32 = add_app_version(db, platformid=i686)
    add_jobs(db, 1)
    add_jobs(db, 1, prefix="big", rsc_memory_bound=3.5 * 2 ** 30)
    ja = feed()
    req = make_request(alt_platforms=["i686-pc-linux-gnu"], m_nbytes=16e9, req_secs=1e5)
    ctx = send(cfg, db, ja, req)
    # the 32-bit version runs the small job; the big one needs a 64-bit version
    assert [j.app_version["id"] for j in ctx.reply.jobs] == [av32]
    assert ctx.reply.jobs[0].workunit["name"].startswith("wu_")
    av64 = add_app_version(db, platformid=1, version_num=100)
    open(os.path.join(cfg.project_dir, "reread_db"), "w").close()
    ja = feed()
    ctx = send(cfg, db, ja, req, hostid=2, userid=2)
    assert [j.app_version["id"] for j in ctx.reply.jobs] == [av64]


def test_version_choice_latest_pinned_deprecated_core_version(proj):
    cfg, db, feed = proj
    add_app_version(db, version_num=100)
    v2 = add_app_version(db, version_num=200)
    add_app_version(db, version_num=300, deprecated=1)
    add_jobs(db, 1)
    ja = feed()
    ctx = send(cfg, db, ja)
    assert ctx.reply.jobs[0].app_version["version_num"] == 200
    assert ctx.reply.jobs[0].app_version["id"] == v2
    # a workunit pinned to 1.00 gets 1.00 when app.min_version keeps it cached
    db.execute("UPDATE app SET min_version = 100")
    add_jobs(db, 1, prefix="pinned", app_version_num=100)
    ja = feed()
    ctx = send(cfg, db, ja, hostid=2, userid=2)
    assert ctx.reply.jobs[0].app_version["version_num"] == 100
    # client too old for every version
    db.execute("UPDATE app SET min_version = 0")
    db.execute("UPDATE app_version SET min_core_version = 80000")
    add_jobs(db, 1, prefix="new")
    ja = feed()
    ctx = send(cfg, db, ja, hostid=3, userid=3)
    assert ctx.reply.jobs == [] and reason_keys(ctx) == ["client_version"]
    assert "Newer BOINC version required; please install current version" in messages(ctx)
    assert ctx.reply.request_delay == 86400
    db.execute("UPDATE app_version SET min_core_version = 0, max_core_version = 71000")
    open(os.path.join(cfg.project_dir, "reread_db"), "w").close()
    ja = feed()
    ctx = send(cfg, db, ja, hostid=3, userid=3)
    assert ctx.reply.jobs == [] and reason_keys(ctx) == ["client_version"]


def test_beta_versions_need_beta_users(proj):
    cfg, db, feed = proj
    add_app_version(db, beta=1)
    add_jobs(db, 1)
    ja = feed()
    ctx = send(cfg, db, ja)
    assert ctx.reply.jobs == [] and reason_keys(ctx) == ["beta"]
    assert sched_send.EXTRA_MESSAGES["beta"] in messages(ctx)
    prefs = "<project_preferences><allow_beta_work>1</allow_beta_work></project_preferences>"
    ctx = send(cfg, db, ja, project_prefs=prefs)
    assert len(ctx.reply.jobs) == 1


def test_memory_disk_deadline_checks(proj):
    cfg, db, feed = proj
    add_app_version(db)
    add_jobs(db, 1, rsc_memory_bound=4e9)
    ja = feed()
    ctx = send(cfg, db, ja, make_request(m_nbytes=2e9))
    assert ctx.reply.jobs == [] and reason_keys(ctx) == ["memory"]
    assert "Example app needs 3814.70 MB RAM but only 1716.61 MB is available for use." \
        in messages(ctx)
    assert ja.n_present == 1
    # memory fits, disk doesn't
    ctx = send(cfg, db, ja, make_request(m_nbytes=16e9, d_free=1.5 * 2 ** 30))
    assert reason_keys(ctx) == []                        # 4e9 job needs only 1 MB disk
    assert len(ctx.reply.jobs) == 1
    add_jobs(db, 1, prefix="disk", rsc_disk_bound=2e9)
    ja = feed()
    ctx = send(cfg, db, ja, make_request(d_free=2.5 * 2 ** 30), hostid=2, userid=2)
    assert ctx.reply.jobs == [] and reason_keys(ctx) == ["disk"]
    assert ("Example app needs 371.35MB more disk space.  You currently have 1536.00 MB "
            "available and it needs 1907.35 MB.") in messages(ctx)
    # deadline: a queue of 1 day and a 2-day job with a 1-day delay bound
    add_jobs(db, 1, prefix="slow", rsc_fpops_est=3e9 * 86400 * 2, delay_bound=86400)
    ja = feed()
    ctx = send(cfg, db, ja, make_request(d_free=1e12, estimated_delay=3600), hostid=3,
               userid=3)
    assert [j.workunit["name"][:4] for j in ctx.reply.jobs] == ["disk"]
    ctx = send(cfg, db, ja, make_request(estimated_delay=86400), hostid=4, userid=4)
    assert ctx.reply.jobs == [] and reason_keys(ctx) == ["deadline"]
    assert ("Tasks won't finish in time: BOINC runs 100.0% of the time; computation is "
            "enabled 100.0% of that") in messages(ctx)
    # an idle host (estimated delay 0) gets it regardless of speed
    ctx = send(cfg, db, ja, make_request(estimated_delay=0), hostid=5, userid=5)
    assert len(ctx.reply.jobs) == 1


def test_one_result_per_user_and_host_per_wu(proj):
    cfg, db, feed = proj
    add_app_version(db)
    (wuid, rids), = add_jobs(db, 1, results_per_wu=3)
    ja = feed()
    big = make_request(req_secs=1e6)
    ctx = send(cfg, db, ja, big)
    assert len(ctx.reply.jobs) == 1                   # not two of the same WU in one reply
    ctx = send(cfg, db, ja, big, hostid=2, userid=1)  # same user, other host
    assert ctx.reply.jobs == [] and reason_keys(ctx) == ["one_result_per_user_per_wu"]
    assert messages(ctx) == ["No tasks sent", sched_send.EXTRA_MESSAGES[
        "one_result_per_user_per_wu"]]
    ctx = send(cfg, db, ja, big, hostid=3, userid=3)
    assert len(ctx.reply.jobs) == 1
    cfg.one_result_per_user_per_wu = False
    cfg.one_result_per_host_per_wu = True
    ctx = send(cfg, db, ja, big, hostid=3, userid=4)  # same host, other user
    assert ctx.reply.jobs == [] and reason_keys(ctx) == ["one_result_per_host_per_wu"]
    ctx = send(cfg, db, ja, big, hostid=2, userid=1)  # per-user check is off now
    assert len(ctx.reply.jobs) == 1
    hosts = [r["hostid"] for r in db.query("SELECT hostid FROM result WHERE workunitid = %s "
                                           "ORDER BY id", (wuid,))]
    assert sorted(hosts) == [1, 2, 3]


def test_daily_quota_and_day_rollover(proj):
    cfg, db, feed = proj
    cfg.daily_result_quota = 2
    avid = add_app_version(db)
    add_jobs(db, 6)
    ja = feed()
    one_cpu = make_request(ncpus=1, req_secs=1e6)
    ctx = send(cfg, db, ja, one_cpu)                 # no host_app_version row yet
    assert len(ctx.reply.jobs) == 6
    sent_first = len(ctx.reply.jobs)
    hav = db.query_one("SELECT * FROM host_app_version WHERE host_id = 1")
    assert hav["n_jobs_today"] == sent_first and hav["max_jobs_per_day"] == 0
    db.execute("UPDATE result SET server_state = 2, hostid = 0, userid = 0 WHERE hostid = 1")
    db.execute("UPDATE host_app_version SET n_jobs_today = 2")
    ja = feed()
    ctx = send(cfg, db, ja, one_cpu)
    assert ctx.reply.jobs == [] and reason_keys(ctx) == ["daily_quota"]
    assert "This computer has finished a daily quota of 2 tasks" in messages(ctx)
    assert "Daily job limit (2) has been reached" in messages(ctx)
    hav = db.query_one("SELECT * FROM host_app_version WHERE host_id = 1")
    assert hav["max_jobs_per_day"] == 2 and hav["app_version_id"] == avid
    # four CPUs: quota 2 x 4
    ctx = send(cfg, db, ja, make_request(ncpus=4, req_secs=1e6))
    assert len(ctx.reply.jobs) == 6
    assert db.query_value("SELECT n_jobs_today FROM host_app_version") == 8
    # a new day resets n_jobs_today
    db.execute("UPDATE result SET server_state = 2, hostid = 0, userid = 0 WHERE hostid = 1")
    ja = feed()
    ctx = send(cfg, db, ja, one_cpu, rpc_time=int(time.time()) - 2 * 86400)
    assert len(ctx.reply.jobs) == 2
    assert db.query_value("SELECT n_jobs_today FROM host_app_version") == 2


def test_in_progress_limits_and_max_wus_to_send(proj):
    cfg, db, feed = proj
    cfg.max_wus_in_progress = 1
    add_app_version(db)
    add_jobs(db, 10)
    ja = feed()
    two_cpus = dict(ncpus=2, req_secs=1e7)
    ctx = send(cfg, db, ja, make_request(other_results=["a", "b"], **two_cpus))
    assert ctx.reply.jobs == [] and reason_keys(ctx) == ["in_progress_limit"]
    assert "This computer has reached a limit on tasks in progress" in messages(ctx)
    ctx = send(cfg, db, ja, make_request(other_results=["a"], **two_cpus))
    assert len(ctx.reply.jobs) == 1
    cfg.max_wus_in_progress = 0
    cfg.max_wus_to_send = 2
    ctx = send(cfg, db, ja, make_request(**two_cpus), hostid=2, userid=2)
    assert len(ctx.reply.jobs) == 4                  # 2 per CPU
    # the request's seconds limit the number too: 1e12 flops / 3e9 = 333 s each
    ctx = send(cfg, db, ja, make_request(ncpus=2, req_secs=700), hostid=3, userid=3)
    assert len(ctx.reply.jobs) == 3


def test_priority_first_and_bounded_scan(proj):
    cfg, db, feed = proj
    cfg.shmem_work_items = 300
    add_app_version(db)
    add_jobs(db, 250, prefix="low")
    (_, (urgent,)), = add_jobs(db, 1, prefix="urgent", priority=10)
    ja = feed(["--random_order"])
    assert ja.n_high_priority == 1
    ctx = send(cfg, db, ja, make_request(req_secs=10))
    assert [j.result["id"] for j in ctx.reply.jobs] == [urgent]
    assert ja.n_high_priority == 0
    # without priorities a request scores a bounded number of slots
    calls = []
    real = ja.read_slot
    ja.read_slot = lambda i: calls.append(i) or real(i)
    ctx = send(cfg, db, ja, make_request(req_secs=10), hostid=2, userid=2)
    assert len(ctx.reply.jobs) == 1
    assert len(calls) <= 2 * (2 * 1 + sched_send.SCAN_SLACK)


def test_taken_slot_is_skipped(proj):
    cfg, db, feed = proj
    add_app_version(db)
    (_, (r1,)), (_, (r2,)) = add_jobs(db, 2)
    ja = feed()
    # another scheduler sends r1 behind the array's back
    db.execute("UPDATE result SET server_state = 4, hostid = 99 WHERE id = %s", (r1,))
    ctx = send(cfg, db, ja, make_request(req_secs=1e6))
    assert [j.result["id"] for j in ctx.reply.jobs] == [r2]
    assert db.query_value("SELECT hostid FROM result WHERE id = %s", (r1,)) == 99
    assert ja.n_present == 0                          # r1's slot emptied too


def test_big_xml_doc_read_from_database(proj):
    cfg, db, feed = proj
    add_app_version(db)
    big = "<workunit>\n<!-- %s -->\n</workunit>\n" % ("y" * (shmem.XML_CAPACITY + 5))
    add_jobs(db, 1, xml_doc=big)
    ja = feed()
    ctx = send(cfg, db, ja)
    assert ctx.reply.jobs[0].workunit["xml_doc"] == big


def test_anonymous_platform(proj):
    cfg, db, feed = proj
    add_platform(db, "anonymous")
    add_app_version(db)
    add_jobs(db, 1)
    ja = feed()
    cav = ClientAppVersion(app_name="example_app", version_num=105, platform=LINUX,
                           avg_ncpus=1, flops=5e9)
    ctx = send(cfg, db, ja, make_request(platform="anonymous", app_versions=[cav]))
    job, = ctx.reply.jobs
    assert job.app_version is None and job.client_app_version is cav
    assert job.flops == 5e9
    assert job.result["app_version_id"] == -2
    assert db.query_value("SELECT app_version_id FROM host_app_version") == 1000000 + 2


def test_resend_lost_results(proj):
    cfg, db, feed = proj
    cfg.resend_lost_results = True
    add_app_version(db)
    (w1, (lost,)), (w2, (kept,)), (w3, (broken,)) = add_jobs(db, 3)
    ja = feed()
    ctx = send(cfg, db, ja, make_request(req_secs=1e6))
    assert sorted(j.result["id"] for j in ctx.reply.jobs) == [lost, kept, broken]
    db.execute("UPDATE workunit SET error_mask = 16 WHERE id = %s", (w3,))
    db.execute("UPDATE result SET sent_time = sent_time - 100 WHERE hostid = 1")
    kept_name = db.query_value("SELECT name FROM result WHERE id = %s", (kept,))
    req = make_request(req_secs=1e6, other_results=[kept_name])
    ctx = make_ctx(cfg, db, req)
    assert sched_send.resend_lost_results(ctx, ja) is True
    names = {r["id"]: r["name"] for r in db.query("SELECT id, name FROM result")}
    assert [j.result["id"] for j in ctx.reply.jobs] == [lost]
    assert ctx.reply.jobs[0].resend is True
    assert "Resent lost task %s" % names[lost] in messages(ctx)
    assert "Didn't resend lost task %s (expired)" % names[broken] in messages(ctx)
    row = db.query_one("SELECT * FROM result WHERE id = %s", (lost,))
    assert row["sent_time"] == ctx.now and row["server_state"] == 4
    assert row["report_deadline"] == ctx.now + 86400 + 3600
    assert db.query_value("SELECT report_deadline FROM result WHERE id = %s",
                          (broken,)) == ctx.now - 1 + 3600
    # a resend doesn't count against the daily quota
    assert db.query_value("SELECT n_jobs_today FROM host_app_version") == 3
    # without the option nothing happens
    cfg.resend_lost_results = False
    ctx = make_ctx(cfg, db, req)
    assert sched_send.resend_lost_results(ctx, ja) is False and ctx.reply.jobs == []


def test_selected_apps_and_non_preferred(proj):
    cfg, db, feed = proj
    add_app_version(db)
    add_jobs(db, 1)
    ja = feed()
    only_other = ("<project_preferences><apps_selected><app_id>77</app_id></apps_selected>"
                  "</project_preferences>")
    ctx = send(cfg, db, ja, project_prefs=only_other)
    assert ctx.reply.jobs == [] and reason_keys(ctx) == ["app_not_selected"]
    assert "No tasks are available for the applications you have selected." in messages(ctx)
    allow = only_other.replace("</project_preferences>",
                               "<allow_non_preferred_apps>1</allow_non_preferred_apps>"
                               "</project_preferences>")
    ctx = send(cfg, db, ja, project_prefs=allow)
    assert len(ctx.reply.jobs) == 1


def test_every_no_work_reply_explains(proj):
    """Whatever the reason, a reply that sends nothing to a work request carries
    more than the bare "No tasks sent"."""
    cfg, db, feed = proj
    add_app_version(db)
    (wuid, rids), = add_jobs(db, 1, results_per_wu=2)
    ja = feed()
    db.execute("UPDATE result SET server_state = 4, hostid = 9 WHERE id = %s", (rids[0],))
    db.execute("UPDATE result SET server_state = 4, hostid = 9 WHERE id = %s", (rids[1],))
    ctx = send(cfg, db, ja)
    assert ctx.reply.jobs == [] and reason_keys(ctx) == ["taken"]
    assert len(messages(ctx)) >= 2 and messages(ctx)[0] == "No tasks sent"


def test_restore_takes_the_lock_only_when_something_is_reserved(tmp_path):
    """A persistent worker calls restore after every request; one that
    reserved nothing takes no lock (another process holding it does not hold
    it up), one that reserved a slot gives it back under the lock."""
    import threading
    path = str(tmp_path / "array")
    ja, _ = shmem.JobArray.create(path, 4, {"platforms": [], "apps": [], "app_versions": [],
                                           "assignments": []})
    other = shmem.open_segment(path, mapped=False)     # its own open file: its own lock
    pid = os.getpid()

    def restore_in_thread():
        done = []
        worker = threading.Thread(target=lambda: done.append(ja.restore(pid)))
        worker.start()
        return worker, done

    try:
        with ja._lock:
            ja.fill_slot(0, 100, 0, 2, 0, {"id": 3, "name": "wu_3"}, "<workunit/>")
        ja.set_ready()
        with other.lock():
            worker, done = restore_in_thread()
            worker.join(5)
            assert done == [0]                  # nothing reserved: it did not wait
        assert ja.reserve_any(pid) and ja.slot_state(0) == pid
        with other.lock():
            worker, done = restore_in_thread()
            worker.join(0.3)
            assert done == []                   # waits for the lock
        worker.join(5)
        assert done == [1] and ja.slot_state(0) == shmem.PRESENT
    finally:
        other.close()
        ja.destroy()
        ja.close()
