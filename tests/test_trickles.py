"""Trickle messages: what the scheduler stores and delivers, the trickle
handler framework and BOINC's stock handlers (trickle_credit,
trickle_deadline, trickle_echo), purge_trickles; and the time-stats log.

Against a real database; the scheduler in-process with the captured stock
client's requests (as tests/test_sched_handler.py), the daemons one pass at
a time through run_daemon, as bin/ runs them.
"""

import os
import time

import pytest

from boincpy.credit import COBBLESTONE_SCALE
from boincpy.daemons.base import run_daemon
from boincpy.daemons.purge_trickles import PurgeTrickles
from boincpy.daemons.trickle_handler import TrickleHandler
from boincpy.daemons.trickle_handlers import TrickleCredit, TrickleDeadline, TrickleEcho
from boincpy.sched.request import MSG_FROM_HOST_MAX_XML, parse_request
from tests.backend_util import run_daemon_once
from tests.sched_env import sched_env  # noqa: F401
from tests.test_sched_handler import attach, body, call


def trickle(result_name, variety, text, t=1795335270):
    return ("<msg_from_host>\n<result_name>%s</result_name>\n<time>%d</time>\n"
            "<variety>%s</variety>\n%s\n</msg_from_host>\n" % (result_name, t, variety, text))


def workfetch(extra=""):
    data = body("no_work", "03_sched_workfetch_hostid1.body.xml").decode()
    return data.replace("</scheduler_request>", extra + "</scheduler_request>").encode()


def add_msg(env, hostid, variety, xml, handled=0):
    return env.execute("INSERT INTO msg_from_host (create_time, hostid, variety, handled, xml) "
                       "VALUES (%s, %s, %s, %s, %s)", (int(time.time()), hostid, variety,
                                                       handled, xml))


# -- the scheduler's side ----------------------------------------------------------------

def test_stored_trickle_is_capped_as_boinc_stores_it():
    """msg_from_host.xml keeps at most 262143 bytes, variety 255 (BOINC's
    char arrays); the rest of the request is still read."""
    big = "x" * 300000
    data = ("<scheduler_request>\n<hostid>3</hostid>\n"
            + trickle("r_0", "v" * 300, big) + "<rpc_seqno>9</rpc_seqno>\n"
            "</scheduler_request>\n").encode()
    req = parse_request(data)
    (m,) = req.msgs_from_host
    assert len(m.variety) == 255
    assert len(m.xml.encode()) == MSG_FROM_HOST_MAX_XML
    assert m.xml.startswith("\n<result_name>r_0</result_name>\n<time>1795335270</time>\nxxx")
    assert req.rpc_seqno == 9


def test_trickle_down_is_delivered_once(sched_env):
    env = sched_env
    attach(env)
    env.set_options(msg_to_host=1)
    for n in (1, 2):
        env.execute("INSERT INTO msg_to_host (create_time, hostid, variety, handled, xml) "
                    "VALUES (1, 1, 'v', 0, %s)",
                    ("<trickle_down>\n<result_name>r%d</result_name>\n</trickle_down>\n" % n,))
    env.execute("INSERT INTO msg_to_host (create_time, hostid, variety, handled, xml) "
                "VALUES (1, 2, 'v', 0, '<trickle_down>\n</trickle_down>\n')")     # other host
    r = call(env, workfetch())
    assert [t.findtext("result_name") for t in r.root.findall("trickle_down")] == ["r1", "r2"]
    r = call(env, workfetch())
    assert r.root.findall("trickle_down") == []
    assert [row["handled"] for row in env.rows("SELECT handled FROM msg_to_host ORDER BY id")] \
        == [1, 1, 0]


def test_trickle_downs_wait_without_msg_to_host(sched_env):
    env = sched_env
    attach(env)
    env.execute("INSERT INTO msg_to_host (create_time, hostid, variety, handled, xml) "
                "VALUES (1, 1, 'v', 0, '<trickle_down>\n</trickle_down>\n')")
    r = call(env, workfetch(trickle("wu1_0", "runtime", "<runtime>5</runtime>")))
    assert r.root.findall("trickle_down") == []
    assert r.root.find("message_ack") is not None          # trickle-ups are always stored
    assert env.row("SELECT handled FROM msg_to_host")["handled"] == 0
    assert env.row("SELECT variety FROM msg_from_host")["variety"] == "runtime"


def test_time_stats_log_asked_for_then_stored(sched_env):
    env = sched_env
    env.set_options(request_time_stats_log=1)
    r = attach(env)
    assert r.text("send_time_stats_log") == "1"
    log = "\n1700000000.0 power_on\n1700000100.0 proc_start\n"
    r = call(env, workfetch("<time_stats_log>%s</time_stats_log>\n" % log))
    path = os.path.join(str(env.root), "time_stats_log", "1", "1")
    with open(path) as f:
        assert f.read() == log
    # stored: not asked for again
    assert r.text("send_time_stats_log") is None
    assert call(env, workfetch()).text("send_time_stats_log") is None


def test_time_stats_log_unwritable_is_logged_and_ignored(sched_env):
    env = sched_env
    attach(env)
    with open(os.path.join(str(env.root), "time_stats_log"), "w") as f:
        f.write("a file where the directory should be")
    r = call(env, workfetch("<time_stats_log>\n1 power_on\n</time_stats_log>\n"))
    assert "Can't make time stats log dir" in r.log
    assert r.root.find("request_delay") is not None or r.root.find("message") is not None


# -- the framework ----------------------------------------------------------------------

class Exploding(TrickleHandler):
    """Writes a row, then fails: its write must not survive."""

    name = "exploding"

    def handle_trickle(self, msg):
        self.db.execute("UPDATE host SET total_credit = 99 WHERE id = %s", (msg.hostid,))
        raise RuntimeError("boom")


class Failing(TrickleHandler):
    name = "failing"
    handled_set = 7
    handled_error = 3

    def handle_trickle(self, msg):
        return -112 if "bad" in msg.xml else 0


def test_handler_exception_rolls_back_and_marks_error(sched_env):
    env = sched_env
    uid = env.row("SELECT id FROM user LIMIT 1")["id"]
    host = env.add_host(uid)
    m = add_msg(env, host, "x", "<a>1</a>")
    other = add_msg(env, host, "y", "<a>1</a>")          # another variety: untouched
    status, log = run_daemon_once(Exploding, env.root, "--variety", "x")
    assert status == 0
    assert "handle_trickle() failed for message %d: RuntimeError: boom" % m in log
    assert env.row("SELECT total_credit FROM host WHERE id = %s", (host,))["total_credit"] == 0
    assert env.row("SELECT handled FROM msg_from_host WHERE id = %s", (m,))["handled"] == 1
    assert env.row("SELECT handled FROM msg_from_host WHERE id = %s", (other,))["handled"] == 0


def test_handled_values_follow_the_return_code(sched_env):
    env = sched_env
    uid = env.row("SELECT id FROM user LIMIT 1")["id"]
    host = env.add_host(uid)
    good, bad, done = (add_msg(env, host, "v", "<ok/>"), add_msg(env, host, "v", "bad"),
                       add_msg(env, host, "v", "<ok/>", handled=1))
    status, log = run_daemon_once(Failing, env.root, "--variety", "v")
    assert status == 0 and "ERR_XML_PARSE" in log
    handled = {r["id"]: r["handled"] for r in env.rows("SELECT id, handled FROM msg_from_host")}
    assert handled == {good: 7, bad: 3, done: 1}


def test_variety_is_required(capsys):
    assert run_daemon(TrickleEcho, []) == 1
    assert "--variety" in capsys.readouterr().err


# -- the stock handlers ------------------------------------------------------------------

def test_trickle_credit(sched_env):
    env = sched_env
    team = env.execute("INSERT INTO team (create_time, name, userid) VALUES (1, 't', 1)")
    uid = env.add_user("trickler", name="trickler", email="t@example.com", teamid=team)
    host = env.add_host(uid, p_fpops=2e9)
    slow = env.add_host(uid, p_fpops=-1)
    msgs = [add_msg(env, host, "runtime", "\n<result_name>r_0</result_name>\n<time>5</time>\n"
                    "<runtime>100</runtime>\n"),
            add_msg(env, host, "runtime", "<runtime>5000</runtime>"),        # capped at 600
            add_msg(env, slow, "runtime", "<runtime>10</runtime>"),
            add_msg(env, host, "runtime", "<runtime>-3</runtime>")]
    status, log = run_daemon_once(TrickleCredit, env.root, "--variety", "runtime",
                                  "--max_runtime", "600", "-d", "4")
    assert status == 0, log
    assert "unexpected tag: result_name" in log
    assert "Reported runtime exceeds bound: 5000.000000>600.000000" in log
    assert "unexpected nonpositive runtime" in log
    h = env.row("SELECT * FROM host WHERE id = %s", (host,))
    assert h["total_credit"] == pytest.approx((100 + 600) * 2e9 * COBBLESTONE_SCALE)
    assert h["expavg_credit"] > 0 and h["expavg_time"] > 0
    # no host with expavg_credit > 10 yet: 3.3 GFLOPS for a host without a benchmark
    s = env.row("SELECT * FROM host WHERE id = %s", (slow,))
    assert s["total_credit"] == pytest.approx(10 * 3.3e9 * COBBLESTONE_SCALE)
    total = h["total_credit"] + s["total_credit"]
    assert env.row("SELECT total_credit FROM user WHERE id = %s", (uid,))["total_credit"] \
        == pytest.approx(total)
    assert env.row("SELECT total_credit FROM team WHERE id = %s", (team,))["total_credit"] \
        == pytest.approx(total)
    handled = [env.row("SELECT handled FROM msg_from_host WHERE id = %s", (m,))["handled"]
               for m in msgs]
    assert handled == [1, 1, 1, 1]


def test_trickle_credit_caps_at_the_95th_percentile(sched_env):
    env = sched_env
    uid = env.add_user("trickler", name="trickler", email="t@example.com")
    for i in range(20):
        env.add_host(uid, p_fpops=1e9 * (i + 1), expavg_credit=50)
    fast = env.add_host(uid, p_fpops=1e12)
    add_msg(env, fast, "runtime", "<runtime>10</runtime>")
    status, log = run_daemon_once(TrickleCredit, env.root, "--variety", "runtime",
                                  "--max_runtime", "60")
    assert status == 0, log
    assert "max FLOPS: 20000000000.000000" in log
    credit = env.row("SELECT total_credit FROM host WHERE id = %s", (fast,))["total_credit"]
    assert credit == pytest.approx(10 * 20e9 * COBBLESTONE_SCALE)


def test_trickle_credit_needs_max_runtime(sched_env):
    status, log = run_daemon_once(TrickleCredit, sched_env.root, "--variety", "runtime")
    assert status == 1 and "missing --max_runtime arg" in log


def test_trickle_deadline(sched_env):
    env = sched_env
    uid = env.row("SELECT id FROM user LIMIT 1")["id"]
    host = env.add_host(uid)
    now = int(time.time())
    _, soon = env.add_job("soon", state=4, hostid=host, report_deadline=now + 100)
    _, far = env.add_job("far", state=4, hostid=host, report_deadline=now + 100000)
    _, late = env.add_job("late", state=4, hostid=host, report_deadline=now - 10)
    _, other = env.add_job("other", state=4, hostid=host + 1, report_deadline=now + 100)
    for name in ("soon_0", "far_0", "late_0", "other_0"):
        add_msg(env, host, "deadline", "\n<result_name>%s</result_name>\n<time>1</time>\n"
                "<cpu_time>50</cpu_time>\n" % name)
    status, log = run_daemon_once(TrickleDeadline, env.root, "--variety", "deadline",
                                  "--extension_period", "3600", "--extension_timeframe",
                                  "1000", "-d", "4")
    assert status == 0, log
    deadline = {r["id"]: r["report_deadline"] for r in env.rows(
        "SELECT id, report_deadline FROM result")}
    assert deadline[soon] == now + 100 + 3600
    assert (deadline[far], deadline[late], deadline[other]) == (now + 100000, now - 10, now + 100)
    assert "report deadline is in the past" in log
    assert "report deadline is too far in the future" in log
    assert "error while looking for result_name: other_0" in log       # not this host's


def test_trickle_echo(sched_env, capsys):
    env = sched_env
    attach(env)
    env.set_options(msg_to_host=1)
    hostid = 1
    # the scheduler stores a trickle-up, the echo handler answers, the next RPC delivers
    call(env, workfetch(trickle("wu1_0", "echo", "<say>hello &amp; bye</say>\n"
                                "</trickle_down> sneaky")))
    status, log = run_daemon_once(TrickleEcho, env.root, "--variety", "echo")
    assert status == 0, log
    assert "got trickle-up" in capsys.readouterr().out
    row = env.row("SELECT * FROM msg_to_host")
    assert (row["hostid"], row["variety"], row["handled"]) == (hostid, "echo", 0)
    r = call(env, workfetch())
    (down,) = r.root.findall("trickle_down")
    assert down.findtext("result_name") == "wu1_0"
    assert down.findtext("say") == "hello & bye"
    assert "</trickle_down> sneaky" not in r.raw and "&lt;/trickle_down&gt; sneaky" in r.raw


def test_purge_trickles(sched_env):
    env = sched_env
    for handled in (0, 1, 2):
        add_msg(env, 1, "v", "x", handled)
        env.execute("INSERT INTO msg_to_host (create_time, hostid, variety, handled, xml) "
                    "VALUES (1, 1, 'v', %s, 'x')", (handled,))

    def left(table):
        return sorted(r["handled"] for r in env.rows("SELECT handled FROM %s" % table))
    status, _ = run_daemon_once(PurgeTrickles, env.root, "msg_to_host", "2")
    assert status == 0
    assert (left("msg_from_host"), left("msg_to_host")) == ([0, 1, 2], [0, 1])
    status, _ = run_daemon_once(PurgeTrickles, env.root)
    assert (left("msg_from_host"), left("msg_to_host")) == ([0], [0])
    status, log = run_daemon_once(PurgeTrickles, env.root, "msg_from_host")
    assert status == 1 and "usage: purge_trickles" in log
