"""Job choice options through the real request handler: non-CPU-intensive
apps, the locality-lite / batch_accel / keyword score terms, the legacy
multi-pass scan (<sched_old/>, distinct_beta_apps) and debug_prefs.

Each test sets config.xml, writes app / job rows, runs the real feeder in
process, posts the stock 7.20.5 client's captured request (edited) to
``handle_request`` and checks which results were sent, the reply's messages
and the rows."""

import io
import re
import xml.etree.ElementTree as ET

from boincpy import shmem
from boincpy.log import SchedLog
from boincpy.sched.handler import handle_request
from boincpy.sched.request import parse_request
from tests import sched_env as env_module
from tests.sched_env import APP_VERSION_XML, CLIENT, fixture_text

sched_env = env_module.sched_env        # the fixture, for the tests below

ENV = {"REMOTE_ADDR": "127.0.0.1", "REQUEST_METHOD": "POST"}
UNSENT, IN_PROGRESS = 2, 4


def request(hostid=0, seqno=0, secs=1.0, other_results=None, extra=""):
    """The client's first work request (02), for host ``hostid``, asking for
    ``secs`` seconds of CPU work, with <other_results> and ``extra`` elements."""
    text = fixture_text(CLIENT, "cycle", "02_sched_initial_hostid0.body.xml").decode()
    text = text.replace("<hostid>0</hostid>", "<hostid>%d</hostid>" % hostid, 1)
    text = text.replace("<rpc_seqno>0</rpc_seqno>", "<rpc_seqno>%d</rpc_seqno>" % seqno, 1)
    for tag in ("work_req_seconds", "cpu_req_secs"):
        text = re.sub(r"<%s>[^<]*</%s>" % (tag, tag), "<%s>%f</%s>" % (tag, secs, tag), text)
    if other_results is not None:
        body = "".join("    <other_result>\n        <name>%s</name>\n    </other_result>\n" % n
                       for n in other_results)
        text = text.replace("<other_results>\n</other_results>",
                            "<other_results>\n%s</other_results>" % body)
    return text.replace("</scheduler_request>", extra + "</scheduler_request>").encode()


class Reply:
    def __init__(self, out, log):
        self.text = out.decode()
        self.log = log
        self.root = ET.fromstring(self.text.partition("\n\n")[2])

    @property
    def sent(self):
        return sorted(r.findtext("name") for r in self.root.findall("result"))

    @property
    def messages(self):
        return [m.text for m in self.root.findall("message")]


def post(env, data):
    log = SchedLog(io.StringIO(), 4)
    out = handle_request(env.cfg, data, dict(ENV), job_array=env.job_array(refill=True),
                         log=log)
    return Reply(out, log.stream.getvalue())


def add_app(env, name, **cols):
    """An app with one plain version for the client's platform; its id."""
    cols = dict({"create_time": 0, "name": name, "user_friendly_name": name.upper()}, **cols)
    appid = env.execute("INSERT INTO app (%s) VALUES (%s)" % (
        ", ".join(cols), ", ".join(["%s"] * len(cols))), list(cols.values()))
    env.execute("INSERT INTO app_version (create_time, appid, version_num, platformid, "
                "xml_doc, plan_class) VALUES (1700000000, %s, 100, %s, %s, '')",
                (appid, env.platform()["id"], APP_VERSION_XML.replace("example_app", name)))
    return appid


def add_job(env, name, appid=None, priority=0, **wu_cols):
    """env.add_job's job, of app ``appid``, with result/workunit priority and
    other workunit columns set."""
    wuid, rid = env.add_job(name)
    if appid is not None:
        env.execute("UPDATE workunit SET appid = %s WHERE id = %s", (appid, wuid))
        env.execute("UPDATE result SET appid = %s WHERE id = %s", (appid, rid))
    if priority:
        env.execute("UPDATE workunit SET priority = %s WHERE id = %s", (priority, wuid))
        env.execute("UPDATE result SET priority = %s WHERE id = %s", (priority, rid))
    for col, value in wu_cols.items():
        env.execute("UPDATE workunit SET %s = %%s WHERE id = %%s" % col, (value, wuid))
    return wuid, rid


def state(env, name):
    row = env.row("SELECT server_state, hostid FROM result WHERE name = %s", (name,))
    return row["server_state"], row["hostid"]


def set_prefs(env, prefs):
    env.execute("UPDATE user SET project_prefs = %s WHERE id = 1",
                ("<project_preferences>\n%s\n</project_preferences>\n" % prefs,))


# ---------------------------------------------------------------------------
# 1. non-CPU-intensive apps

def test_nci_job_goes_to_every_host_without_one(sched_env):
    env = sched_env
    env.set_options(debug_send=1)
    nci = add_app(env, "monitor", non_cpu_intensive=1)
    add_job(env, "mon1", nci)
    add_job(env, "mon2", nci)
    add_job(env, "cpu1")
    # asked for no work at all: the NCI job comes anyway, the CPU job doesn't
    r = post(env, request(secs=0.0))
    assert len(r.sent) == 1 and r.sent[0].startswith("mon")
    first = r.sent[0]
    assert "<non_cpu_intensive>1</non_cpu_intensive>" in r.text
    assert "Sending non-CPU-intensive job: %s" % first[:-2] in r.log
    assert state(env, "cpu1_0") == (UNSENT, 0)
    # it lists its NCI job: no second one; the CPU job it asked for goes
    r = post(env, request(hostid=1, seqno=1, secs=1000.0, other_results=[first]))
    assert r.sent == ["cpu1_0"]
    assert "Already have job for monitor" in r.log
    other = "mon2_0" if first == "mon1_0" else "mon1_0"
    assert state(env, other) == (UNSENT, 0)
    # another request still listing it, nothing else to send: the reason says why
    r = post(env, request(hostid=1, seqno=2, secs=1000.0, other_results=[first, "cpu1_0"]))
    assert r.sent == []
    assert "nci: the host already has a job of non-CPU-intensive app monitor" in r.log


def test_nci_beta_app_needs_beta_preference(sched_env):
    env = sched_env
    nci = add_app(env, "betamon", non_cpu_intensive=1, beta=1)
    add_job(env, "bm1", nci)
    r = post(env, request(secs=0.0))
    assert r.sent == []
    r = post(env, request(hostid=1, seqno=1, secs=1000.0))
    assert r.sent == []
    assert "beta: app betamon is beta and the user doesn't accept beta work" in r.log
    set_prefs(env, "<allow_beta_work>1</allow_beta_work>")
    r = post(env, request(hostid=1, seqno=2, secs=0.0))
    assert r.sent == ["bm1_0"]


def test_config_non_cpu_intensive_makes_every_app_nci(sched_env):
    env = sched_env
    env.set_options(non_cpu_intensive=1)
    add_job(env, "a1")
    add_job(env, "a2")
    r = post(env, request(secs=100000.0))
    assert len(r.sent) == 1                     # one job per NCI app, whatever was asked
    assert "<non_cpu_intensive/>" in r.text
    assert "<non_cpu_intensive>1</non_cpu_intensive>" in r.text


def test_nci_job_that_doesnt_fit_is_refused_with_a_reason(sched_env):
    env = sched_env
    nci = add_app(env, "bigmon", non_cpu_intensive=1)
    add_job(env, "big1", nci, rsc_memory_bound=1e15)
    r = post(env, request(secs=0.0))
    assert r.sent == []
    assert "can_send_nci() failed for NCI job" in r.log
    assert "nci: non-CPU-intensive app bigmon: memory" in r.log


# ---------------------------------------------------------------------------
# 2. score terms

STICKY_WU = ("<file_info>\n    <name>%s</name>\n    <url>http://127.0.0.1/test/download/%s</url>\n"
             "    <md5_cksum>ed3bc8e71d247133e1b956b921bbc579</md5_cksum>\n"
             "    <nbytes>75</nbytes>\n    <sticky/>\n</file_info>\n<workunit>\n"
             "<file_ref>\n    <file_name>%s</file_name>\n    <open_name>in</open_name>\n"
             "</file_ref>\n</workunit>")


def test_locality_lite_prefers_jobs_whose_sticky_files_the_host_has(sched_env):
    env = sched_env
    env.set_options(debug_locality_lite=1)
    env.execute("UPDATE app SET locality_scheduling = 1")
    for n in range(1, 6):
        f = "data_%d.bin" % n
        add_job(env, "loc%d" % n, xml_doc=STICKY_WU % (f, f, f))
    have = "<file_info>\n    <name>data_4.bin</name>\n    <nbytes>75</nbytes>\n</file_info>\n"
    for seqno in range(3):                      # whatever slot the scan starts at
        r = post(env, request(hostid=seqno and 1, seqno=seqno, extra=have))
        assert r.sent == ["loc4_0"], r.log
        assert "[loc_lite] job loc4 has 1 files on this host" in r.log
        assert "[loc_lite] job loc2 has 0 files on this host" in r.log or seqno
        env.execute("UPDATE result SET server_state = 2, hostid = 0 WHERE name = 'loc4_0'")
    # a host without sticky files: no lite term at all (BOINC looks only then)
    r = post(env, request(hostid=1, seqno=5, secs=1e6))
    assert len(r.sent) == 5 and "[loc_lite]" not in r.log


def test_locality_lite_job_sent_adds_its_sticky_files_to_the_host(sched_env):
    env = sched_env
    env.set_options(debug_send=1)
    env.execute("UPDATE app SET locality_scheduling = 1")
    doc = STICKY_WU % ("data_a", "data_a", "data_a")
    doc = doc.replace("<workunit>", (STICKY_WU % ("data_b", "data_b", "data_b")).split(
        "<workunit>")[0] + "<workunit>", 1)
    add_job(env, "pair", xml_doc=doc)
    have = "<file_info>\n    <name>data_a</name>\n    <nbytes>75</nbytes>\n</file_info>\n"
    r = post(env, request(extra=have))
    assert r.sent == ["pair_0"]
    assert "[send] Adding file data_b to host file list" in r.log
    assert "Adding file data_a" not in r.log


def test_batch_accel_sends_high_priority_jobs_only_to_low_turnaround_hosts(sched_env):
    env = sched_env
    env.set_options(batch_accel=1, debug_send_job=1)
    env.execute("UPDATE app SET n_size_classes = 1")        # accelerable
    add_job(env, "urgent", priority=5)
    r = post(env, request(secs=1e6))
    assert r.sent == []
    assert "not sending high-prio job to non-LTT host" in r.log
    assert "No tasks sent: batch_accel: job urgent is high-priority" in r.log
    assert state(env, "urgent_0") == (UNSENT, 0)
    # a normal job still goes to that host
    add_job(env, "normal")
    r = post(env, request(hostid=1, seqno=1, secs=1e6))
    assert r.sent == ["normal_0"]
    # batch_stats.php marks the host low-turnaround (host.error_rate = 1)
    env.execute("UPDATE host SET error_rate = 1 WHERE id = 1")
    r = post(env, request(hostid=1, seqno=2, secs=1e6))
    assert r.sent == ["urgent_0"]
    assert "sending high-prio job to LTT host" in r.log
    assert re.search(r"score 15\.0+ for result", r.log)      # 10 + priority 5


def test_batch_accel_leaves_apps_without_size_classes_alone(sched_env):
    env = sched_env
    env.set_options(batch_accel=1)
    add_job(env, "urgent", priority=5)
    r = post(env, request(secs=1e6))
    assert r.sent == ["urgent_0"]


def test_keyword_scheduling_with_kw_prefs_file(sched_env):
    env = sched_env
    env.set_options(keyword_sched=1, debug_keyword=1)
    (env.root / "kw_prefs").mkdir()
    (env.root / "kw_prefs" / "1").write_text("5 9\n7\n")      # as kw_prefs.php writes it
    add_job(env, "yes5", keywords="5")
    add_job(env, "no7", keywords="12 7")
    add_job(env, "plain")
    for seqno in range(3):
        r = post(env, request(hostid=seqno and 1, seqno=seqno))
        assert r.sent == ["yes5_0"], r.log                  # +1 beats 0
        assert "[keyword] reading user kw prefs from file" in r.log
        assert "<job_keyword_ids>5</job_keyword_ids>" in r.text
        assert "[keyword] keywords: 5" in r.log
        env.execute("UPDATE result SET server_state = 2, hostid = 0 WHERE name = 'yes5_0'")
    r = post(env, request(hostid=1, seqno=3, secs=1e6))
    assert r.sent == ["plain_0", "yes5_0"]
    assert "[keyword] job has no keywords; returning 0" in r.log
    assert state(env, "no7_0") == (UNSENT, 0)
    r = post(env, request(hostid=1, seqno=4, secs=1e6))
    assert r.sent == []
    assert "Some jobs are ruled out by your science/location preferences" in r.messages
    assert "keyword: job no7 has keyword 7, which the volunteer said no to" in r.log
    # an account manager's client sends the keywords itself: they win over the file
    r = post(env, request(hostid=1, seqno=5, secs=1e6,
                          extra="<user_keywords>\n   <yes>7</yes>\n</user_keywords>\n"))
    assert r.sent == ["no7_0"]
    assert "reading user kw prefs from file" not in r.log


def test_keywords_ignored_without_keyword_sched(sched_env):
    env = sched_env
    (env.root / "kw_prefs").mkdir()
    (env.root / "kw_prefs" / "1").write_text("\n7\n")
    add_job(env, "no7", keywords="7")
    r = post(env, request(secs=1e6))
    assert r.sent == ["no7_0"]


def test_user_keywords_parsed_from_the_request():
    req = parse_request(b"<scheduler_request>\n<user_keywords>\n <yes>3</yes>\n <no>8</no>\n"
                        b" <yes>4</yes>\n</user_keywords>\n</scheduler_request>\n")
    assert (req.user_keywords_yes, req.user_keywords_no) == ([3, 4], [8])
    assert req.unexpected == []


# ---------------------------------------------------------------------------
# 3. sched_old: the legacy multi-pass scan

def test_sched_old_sends_beta_jobs_first_and_only_with_beta_prefs(sched_env):
    env = sched_env
    env.set_options(sched_old=1, debug_send_scan=1)
    beta = add_app(env, "betaapp", beta=1)
    add_job(env, "b1", beta)
    for n in range(4):
        add_job(env, "n%d" % n)
    r = post(env, request(secs=1e6))
    assert r.sent == ["n0_0", "n1_0", "n2_0", "n3_0"]
    assert "[send_scan] Scanning: general case." in r.log
    assert "Scanning for them" not in r.log
    add_job(env, "n4")
    set_prefs(env, "<allow_beta_work>1</allow_beta_work>")
    r = post(env, request(hostid=1, seqno=1, secs=1.0))     # room for one job
    assert r.sent == ["b1_0"]
    assert "[send_scan] host will accept beta jobs.  Scanning for them." in r.log


def test_sched_old_infeasible_jobs_before_others(sched_env):
    env = sched_env
    env.set_options(sched_old=1)
    for n in range(6):
        add_job(env, "j%d" % n)
    ja = env.job_array(refill=True)
    marked = None
    for i in range(ja.nslots):
        if ja.slot_state(i) == shmem.PRESENT:
            head = ja.slot_head(i)
            slot, _ = ja.claim(i, head[4], 999999)
            ja.bump_infeasible_count(i, 999999)
            ja.release(i, 999999)
            marked = slot.wu["name"] + "_0"
            break
    r = post(env, request(secs=1.0))
    assert r.sent == [marked]


def test_sched_old_other_apps_when_selected_ones_have_none(sched_env):
    env = sched_env
    env.set_options(sched_old=1)
    other = add_app(env, "otherapp")
    add_job(env, "x1")
    set_prefs(env, "<apps_selected>\n<app_id>%d</app_id>\n</apps_selected>\n" % other)
    r = post(env, request(secs=1e6))
    assert r.sent == []
    assert "No tasks are available for the applications you have selected." in r.messages
    assert "app_not_selected: the user's preferences don't select app example_app" in r.log
    set_prefs(env, "<apps_selected>\n<app_id>%d</app_id>\n</apps_selected>\n"
              "<allow_non_preferred_apps>1</allow_non_preferred_apps>" % other)
    r = post(env, request(hostid=1, seqno=1, secs=1e6))
    assert r.sent == ["x1_0"]
    msgs = r.messages
    for text in ("No tasks are available for the applications you have selected",
                 "No tasks are available for OTHERAPP",
                 "Your preferences allow tasks from applications other than those selected",
                 "Sending tasks from other applications"):
        assert text in msgs, msgs


def test_distinct_beta_apps_makes_beta_apps_need_selecting(sched_env):
    env = sched_env
    env.set_options(sched_old=1)
    beta = add_app(env, "betaapp", beta=1)
    add_job(env, "b1", beta)
    main = env.app()["id"]
    set_prefs(env, "<allow_beta_work>1</allow_beta_work>\n<apps_selected>\n<app_id>%d"
              "</app_id>\n</apps_selected>" % main)
    env.set_options(sched_old=1, distinct_beta_apps=1)
    r = post(env, request(secs=1e6))
    assert r.sent == []
    assert "app_not_selected: the user's preferences don't select app betaapp" in r.log
    # without it a beta app needn't be selected
    env.set_options(sched_old=1, distinct_beta_apps=0)
    r = post(env, request(hostid=1, seqno=1, secs=1e6))
    assert r.sent == ["b1_0"]


def test_sched_old_reliable_jobs_go_first_to_reliable_hosts(sched_env):
    env = sched_env
    env.set_options(sched_old=1, reliable_on_priority=3, debug_send_scan=1)
    _, rid = add_job(env, "retry", priority=3)
    r = post(env, request(secs=1e6))        # a new host: no reliable version
    assert r.sent == []
    assert "host has no reliable app versions; skipping scan" in r.log
    assert "No tasks sent: reliable: job [RESULT#%d] needs a reliable host" % rid in r.log
    assert ("The tasks available need a computer with a record of reliable results"
            in r.messages)
    for n in range(4):
        add_job(env, "m%d" % n)
    av = env.app_version()["id"]
    env.execute("INSERT INTO host_app_version (host_id, app_version_id, consecutive_valid, "
                "max_jobs_per_day) VALUES (1, %s, 20, 500) ON DUPLICATE KEY UPDATE "
                "consecutive_valid = 20, max_jobs_per_day = 500", (av,))
    r = post(env, request(hostid=1, seqno=1, secs=1.0))
    assert r.sent == ["retry_0"]
    assert "[send_scan] scanning for jobs that need reliable host" in r.log


# ---------------------------------------------------------------------------
# 4. debug_prefs

def test_debug_prefs_logs_which_preferences_are_used(sched_env):
    env = sched_env
    env.set_options(debug_prefs=1)
    r = post(env, request(secs=0.0))
    assert "[prefs] have_master:0 have_working: 1 have_db: 0" in r.log
    assert "[prefs] using working prefs" in r.log
    env.set_options(debug_prefs=0)
    r = post(env, request(hostid=1, seqno=1, secs=0.0))
    assert "[prefs]" not in r.log
