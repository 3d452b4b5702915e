"""Locality scheduling (sched_locality.cpp) in the scheduler, in-process with
the captured stock client's work request: jobs FILE__N of sticky data files
go to the hosts that hold FILE; the work generator's triggers; which files
hosts are told to delete.

Each request asks for one second of work, so it gets one job."""

import re

from boincpy.db import triggers
from tests.sched_env import sched_env  # noqa: F401
from tests.test_sched_handler import attach, body, call


def request(files=(), **subs):
    subs.setdefault("work_req_seconds", "1.000000")
    subs.setdefault("cpu_req_secs", "1.000000")
    subs.setdefault("cpu_req_instances", "0.000000")
    data = body("no_work", "03_sched_workfetch_hostid1.body.xml", **subs).decode()
    infos = "".join("<file_info>\n    <name>%s</name>\n    <nbytes>52428800.000000</nbytes>\n"
                    "    <status>1</status>\n</file_info>\n" % f for f in files)
    return data.replace("<app_versions>", infos + "<app_versions>", 1).encode()


def sent(r):
    return [x.findtext("name") for x in r.root.findall("result")]


def deletes(r):
    return [x.text for x in r.root.findall("delete_file_info")]


def jobs(env, *names):
    for n in names:
        env.add_job(n)
    env.job_array(refill=True)


def locality(env, **options):
    attach(env)
    return env.set_options(locality_scheduling=1, debug_locality=1, **options)


def db_of(env):
    from boincpy.db import connect
    return connect(env.cfg)


def test_jobs_follow_the_file_the_host_has(sched_env):
    env = sched_env
    locality(env)
    jobs(env, "alpha__1", "alpha__2", "beta__1", "beta__2", "beta__3")
    # the host holds beta: it gets beta's jobs, in id order
    r = call(env, request(["beta"]))
    assert sent(r) == ["beta__1_0"]
    assert "[locality] [HOST#1] has file beta" in r.log
    assert call(env, request(["beta"])).root.findall("result")[0].findtext("name") \
        == "beta__2_0"
    # a host with no data file: the search through the result names finds alpha
    r = call(env, request([]))
    assert sent(r) == ["alpha__1_0"]
    assert "send_new_file_work_deterministic will try filename alpha" in r.log
    # no trigger rows: logged, not fatal
    assert "trigger retrieval for filename" not in r.log or "empty set" in r.log
    assert deletes(r) == []


def test_file_with_no_more_jobs_asks_the_work_generator_then_is_deleted(sched_env):
    env = sched_env
    locality(env, file_deletion_strategy=1)
    db = db_of(env)
    try:
        tid = triggers.add_fileset(db, "gamma")
        jobs(env, "gamma__1")
        assert sent(call(env, request(["gamma"]))) == ["gamma__1_0"]
        # none left: the generator is asked (need_work); with nothing else to
        # send the host is told to delete gamma (file_deletion_strategy 1)
        r = call(env, request(["gamma"]))
        assert sent(r) == []
        assert "No tasks sent: locality: locality scheduling found no unsent job" in r.log
        t = triggers.trigger(db, "gamma")
        assert (t["id"], t["need_work"], t["working_set_removal"]) == (tid, 1, 0)
        assert deletes(r) == ["gamma"]
        assert "delete file gamma (not needed)" in r.log
        assert triggers.filesets_with(db, "need_work") == ["gamma"]
        # the generator makes two more jobs, clears need_work
        jobs(env, "gamma__2", "gamma__3")
        triggers.set_state(db, tid, "need_work", False)
        assert sent(call(env, request(["gamma"]))) == ["gamma__2_0"]
        # then it has no more: the file leaves the working set
        triggers.set_state(db, tid, "no_work_available")
        assert sent(call(env, request(["gamma"]))) == ["gamma__3_0"]
        r = call(env, request(["gamma"]))
        assert "work generator says no work remaining for trigger gamma" in r.log
        assert "No remaining work for file gamma (0), flagging for removal" in r.log
        assert triggers.trigger(db, "gamma")["working_set_removal"] == 1
    finally:
        db.close()


def test_working_set_gives_a_new_host_its_first_file(sched_env):
    env = sched_env
    locality(env)
    db = db_of(env)
    try:
        jobs(env, "aaa__1", "zzz__1")
        triggers.add_fileset(db, "zzz")                       # the working set: zzz only
        triggers.add_fileset(db, "aaa", work_available=False)
        assert triggers.working_set(db) == ["zzz"]
        r = call(env, request([]))
        assert sent(r) == ["zzz__1_0"]
        assert "get_working_set_filename(fasthost): returning zzz" in r.log
    finally:
        db.close()


def test_file_name_patterns_say_what_the_host_keeps(sched_env):
    env = sched_env
    locality(env, locality_scheduling_workunit_file=["^data_"],
             locality_scheduling_sticky_file=["^grid_"])
    jobs(env, "data_1__1")
    r = call(env, request(["data_1", "grid_7", "old_thing"]))
    assert sent(r) == ["data_1__1_0"]
    # old_thing matches neither: the host is told to delete it; grid_7 stays
    assert deletes(r) == ["old_thing"]
    assert ("low", "BOINC will delete file old_thing (no longer needed)") in r.messages()
    # no room for a job: one file to delete, chosen by host id (1 % 2 -> grid_7)
    r = call(env, request(["data_1", "grid_7"], d_free="0.000000"))
    assert sent(r) == []
    assert deletes(r) == ["grid_7"]
    assert ("low", "BOINC will delete file grid_7 when no longer needed") in r.messages()
    assert float(r.text("request_delay")) >= 4 * 3600


def test_file_names_are_escaped_in_the_reply(sched_env):
    env = sched_env
    locality(env, locality_scheduling_workunit_file=["^data_"])
    r = call(env, request(["a&lt;b&gt;"]))        # the client's name: a<b>
    assert deletes(r) == ["a<b>"]
    assert "<delete_file_info>a&lt;b" in r.raw


def test_one_result_per_user_per_wu_skips_the_users_own_jobs(sched_env):
    env = sched_env
    locality(env, one_result_per_user_per_wu=1)
    wuid, _ = env.add_job("delta__1")
    env.execute("INSERT INTO result (create_time, workunitid, server_state, name, appid, "
                "xml_doc_in, random) SELECT create_time, workunitid, 2, 'delta__1_1', appid, "
                "xml_doc_in, 8 FROM result WHERE name = 'delta__1_0'")
    jobs(env, "delta__2")
    assert sent(call(env, request(["delta"]))) == ["delta__1_0"]
    # the other replica of delta__1 is this user's job already: delta__2 comes next
    assert sent(call(env, request(["delta"]))) == ["delta__2_0"]
    r = call(env, request(["delta"]))
    assert sent(r) == []
    # a replica remains, of a job this user has: the file is not flagged
    assert "flagging for removal" not in r.log
    assert env.row("SELECT server_state FROM result WHERE name = 'delta__1_1'")[
        "server_state"] == 2


def test_mixed_locality_and_array(sched_env):
    env = sched_env
    attach(env)
    env.set_options(locality_scheduler_fraction=1.0, debug_locality=1)
    jobs(env, "eps__1", "plain_job")
    r = call(env, request(["eps"]))
    assert sent(r) == ["eps__1_0"]
    assert "[mixed] sending locality work first" in r.log
    assert "[mixed] sending non-locality work second" in r.log
    env.set_options(locality_scheduler_fraction=1e-9)
    r = call(env, request(["eps"]))
    assert sent(r) == ["plain_job_0"]
    assert "[mixed] sending non-locality work first" in r.log


def test_old_work_goes_first_to_fast_hosts(sched_env):
    env = sched_env
    locality(env, locality_scheduling_send_timeout=7200)
    jobs(env, "young__1", "ancient__1", "ancient__2")
    env.execute("UPDATE result SET create_time = create_time - 86400 "
                "WHERE name LIKE 'ancient%%'")
    r = call(env, request(["young"], bwdown="1000000.000000"))
    assert sent(r) == ["ancient__1_0"]
    assert re.search(r"send_old_work\(ancient__1_0\) sent result created 2\d\.\d hours ago",
                     r.log)
