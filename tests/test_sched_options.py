"""config.xml shorthands and the scheduler log buffer, end to end through the
scheduler against real MariaDB: <grace_period_hours>, <no_amd_k6>,
<scheduler_log_buffer> (sched_config.cpp, sched_main.cpp)."""

import io
import os
import time

from boincpy.log import SchedLog
from boincpy.sched import handler
from boincpy.sched.handler import handle_request
import tests.sched_env as _env
from tests.test_sched_handler import ENV, attach, body, workfetch

sched_env = _env.sched_env       # the fixture

K6 = "AMD-K6(tm) 3D processor [Family 5 Model 8 Stepping 0]"


def test_grace_period_hours_extends_the_stored_deadline_only(sched_env):
    # BOINC: report_grace_period = hours x 3600; mark_as_sent stores the
    # deadline plus grace, the reply carries the deadline without it
    env = sched_env
    env.set_options(grace_period_hours=1.5)
    attach(env)
    env.add_job("graced", delay_bound=7200)
    env.job_array(refill=True)
    before = int(time.time())
    r = workfetch(env, rpc_seqno=1)
    assert r.names("result") == ["graced_0"], r.log
    row = env.row("SELECT sent_time, report_deadline FROM result WHERE name = 'graced_0'")
    assert before <= row["sent_time"] <= before + 5
    assert row["report_deadline"] == row["sent_time"] + 7200 + 5400
    wu = env.row("SELECT transition_time FROM workunit WHERE name = 'graced'")
    assert wu["transition_time"] == row["sent_time"] + 7200 + 5400
    sent = r.root.find("result")
    assert int(sent.findtext("report_deadline")) == row["sent_time"] + 7200


def test_grace_period_hours_then_report_grace_period_last_one_wins(sched_env):
    env = sched_env
    env.set_options(grace_period_hours=2.0)
    text = (env.root / "config.xml").read_text().replace(
        "</config>", "<report_grace_period>60</report_grace_period>\n</config>")
    (env.root / "config.xml").write_text(text)
    env.reload()
    attach(env)
    env.add_job("g2", delay_bound=7200)
    env.job_array(refill=True)
    r = workfetch(env, rpc_seqno=1)
    assert r.names("result") == ["g2_0"], r.log
    row = env.row("SELECT sent_time, report_deadline FROM result WHERE name = 'g2_0'")
    assert row["report_deadline"] == row["sent_time"] + 7200 + 60


def test_no_amd_k6_refuses_k6_hosts_only(sched_env):
    env = sched_env
    env.set_options(no_amd_k6=True)
    attach(env)
    env.add_job("k6job")
    env.job_array(refill=True)
    before = env.snapshot()
    r = workfetch(env, rpc_seqno=1, p_model=K6)
    assert r.messages() == [("notice", "This project doesn't support CPU type AuthenticAMD "
                                       + K6)]
    assert r.text("request_delay") == "86400.000000"
    assert r.names("result") == []
    assert env.snapshot() == before
    assert "Unacceptable CPU AuthenticAMD " + K6 in r.log
    # an Intel CPU of the same family/model numbers, and a modern AMD: served
    r = workfetch(env, rpc_seqno=2, p_vendor="GenuineIntel",
                  p_model="Pentium [Family 5 Model 8 Stepping 0]")
    assert r.names("result") == ["k6job_0"], r.log


def test_without_no_amd_k6_k6_hosts_get_work(sched_env):
    env = sched_env
    attach(env)
    env.add_job("k6ok")
    env.job_array(refill=True)
    r = workfetch(env, rpc_seqno=1, p_model=K6)
    assert r.names("result") == ["k6ok_0"], r.log


# -- scheduler_log_buffer --------------------------------------------------------------

def request_log_writes(env, monkeypatch, **options):
    """Handle one work request with the scheduler's own log (config.xml's
    log_<host>/scheduler.log); returns (the write calls' data, the file's text)."""
    cfg = env.set_options(**options)
    attach(env)
    env.add_job("logged")
    env.job_array(refill=True)
    path = os.path.join(cfg.host_log_dir, "scheduler.log")
    if os.path.exists(path):
        os.unlink(path)
    writes = []
    real = SchedLog._write

    def recording(self, data):
        writes.append(data)
        real(self, data)
    monkeypatch.setattr(SchedLog, "_write", recording)
    data = body("no_work", "03_sched_workfetch_hostid1.body.xml")
    out = handle_request(cfg, data.replace(b"<rpc_seqno>0</rpc_seqno>",
                                           b"<rpc_seqno>1</rpc_seqno>"),
                         dict(ENV), job_array=env.job_array())
    assert b"<name>logged_0</name>" in out
    with open(path, "rb") as f:
        return writes, f.read()


def test_default_log_buffer_writes_a_request_at_once(sched_env, monkeypatch):
    env = sched_env
    writes, text = request_log_writes(env, monkeypatch)
    assert env.cfg.scheduler_log_buffer == 32768
    assert len(writes) == 1 and writes[0] == text
    assert b"Sending reply to [HOST#1]: 1 results" in text


def test_small_log_buffer_writes_whole_buffers(sched_env, monkeypatch):
    env = sched_env
    writes, text = request_log_writes(env, monkeypatch, scheduler_log_buffer=100)
    assert len(text) > 200
    assert len(writes) == len(text) // 100 + 1 and b"".join(writes) == text
    assert all(len(w) == 100 for w in writes[:-1]) and len(writes[-1]) == len(text) % 100


def test_zero_log_buffer_writes_line_by_line(sched_env, monkeypatch):
    env = sched_env
    writes, text = request_log_writes(env, monkeypatch, scheduler_log_buffer=0)
    assert b"".join(writes) == text
    assert len(writes) == text.count(b"\n") >= 3
    assert all(w.endswith(b"\n") for w in writes)


def test_open_log_takes_the_buffer_size(sched_env):
    env = sched_env
    cfg = env.set_options(scheduler_log_buffer=100)
    log = handler.open_log(cfg)
    try:
        assert log.buffer_size == 100
    finally:
        log.close()
    # a text stream (stderr, when the log file can't be opened) gets the same blocks
    log = SchedLog(io.StringIO(), 3, buffer_size=10)
    log.normal("x" * 30)
    written = log.stream.getvalue()
    assert len(written) % 10 == 0 and 0 < len(log.buf) < 10
    log.flush()
    assert log.stream.getvalue().endswith("x" * 30 + "\n")
