"""bin/start, bin/stop, bin/status on a real project directory with real processes."""

import os
import re
import subprocess
import sys
import time

import psutil
import pytest

from backend_util import REPO, bin_env, make_wu, project_db, results_of, wait_for
from boincpy.config import DaemonSpec, TaskSpec, load_config, short_hostname, write_config

HOST = short_hostname()

STUBBORN = """#!%s
import signal, sys, time
signal.signal(signal.SIGHUP, signal.SIG_IGN)
print("stubborn here", flush=True)
while True:
    time.sleep(1)
""" % sys.executable

COUNTER_TASK = """#!/bin/sh
echo "ran at $(date +%%s) in $(pwd)" >> %s
"""


def install_bin(project, name, source=None, text=None):
    """Put a program in PROJECT/bin: a repository bin script with its shebang
    rewritten to this interpreter (as make_project does), or ``text``."""
    bindir = project / "bin"
    bindir.mkdir(exist_ok=True)
    if source:
        body = open(os.path.join(REPO, "bin", source)).read().split("\n", 1)[1]
        text = "#!%s\n%s" % (sys.executable, body)
    path = bindir / name
    path.write_text(text)
    path.chmod(0o755)
    return path


def configure(project, daemons=(), tasks=(), **options):
    cfg = load_config(str(project))
    opts = cfg.as_options()
    opts["host"] = HOST
    opts.update(options)
    write_config(str(project), opts, daemons, tasks)


def control(project, program, *args, timeout=60):
    """Run bin/PROGRAM (start, stop, status) from the repository in the project."""
    proc = subprocess.run([sys.executable, os.path.join(REPO, "bin", program)] + list(args),
                          cwd=project, env=bin_env(project), capture_output=True, text=True,
                          timeout=timeout)
    return proc.returncode, proc.stdout + proc.stderr


@pytest.fixture
def cproj(mini_project):
    """mini_project run by this host, with a teardown that stops whatever was started."""
    configure(mini_project)
    yield mini_project
    control(mini_project, "stop", "-q", "--stop-timeout=2")


def pid_dir(project):
    return project / ("pid_" + HOST)


def pid_of(project, name):
    path = pid_dir(project) / (name + ".pid")
    return int(path.read_text()) if path.exists() else 0


def alive(pid):
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def procs_running(cmdline_part, project):
    """Pids of processes running ``cmdline_part`` started for ``project`` (their
    working directory is under it): other test runs on the machine don't count."""
    found = []
    root = os.path.realpath(str(project))
    for p in psutil.process_iter(["cmdline", "cwd"]):
        cwd = p.info.get("cwd") or ""
        if (cmdline_part in " ".join(p.info["cmdline"] or [])
                and (cwd == root or cwd.startswith(root + os.sep))):
            found.append(p.pid)
    return found


# -- start / status / stop ------------------------------------------------------------

def test_start_twice_runs_one_copy_status_shows_it_stop_ends_it(cproj):
    marker = "sleep 3141"
    configure(cproj, daemons=[DaemonSpec(marker)])
    status, out = control(cproj, "start", "-v")
    assert status == 0, out
    assert "Entering ENABLED mode" in out and "Starting daemon: " + marker in out
    pid = wait_for(lambda: pid_of(cproj, "sleep"))
    assert alive(pid)
    assert not (cproj / "stop_daemons").exists() and not (cproj / "stop_sched").exists()
    log = (cproj / ("log_" + short_hostname()) / "sleep.log").read_text()
    assert re.search(r"\[\d{4}/\d\d/\d\d \d\d:\d\d:\d\d\] Executing command: sleep 3141", log)
    proc = psutil.Process(pid)
    assert proc.cwd() == str(cproj / ("tmp_" + HOST))
    assert proc.environ()["PATH"].startswith(str(cproj / "bin") + os.pathsep)

    status, out = control(cproj, "start", "-v")
    assert status == 0 and "Daemon already running" in out
    assert "Staying in ENABLED mode" in out
    time.sleep(0.3)
    assert procs_running(marker, cproj) == [pid]

    status, out = control(cproj, "status", "-v")
    assert status == 0 and "BOINC is ENABLED" in out
    row = [l for l in out.splitlines() if marker in l][0]
    assert str(pid) in row and "running" in row and "locked" in row and " no " in row
    assert "NOT RUNNING" not in row
    status, out = control(cproj, "status")
    assert out.strip() == "BOINC is ENABLED"

    status, out = control(cproj, "stop", "-v")
    assert status == 0, out
    assert "Entering DISABLED mode" in out and "Killed process %d" % pid in out
    assert not alive(pid)
    assert list(pid_dir(cproj).glob("*.pid")) == []
    assert (cproj / "stop_daemons").read_text() == "<stop/>\n"
    assert (cproj / "stop_sched").exists()
    status, out = control(cproj, "status", "-v")
    assert "BOINC is DISABLED" in out and "stop_daemons stop_sched" in out
    row = [l for l in out.splitlines() if marker in l][0]
    assert "UNLOCKED" in row


def test_stale_pid_file_is_reported_and_replaced(cproj):
    configure(cproj, daemons=[DaemonSpec("sleep 2718")])
    dead = subprocess.Popen(["true"])
    dead.wait()
    pid_dir(cproj).mkdir(exist_ok=True)
    (pid_dir(cproj) / "sleep.pid").write_text("%d\n" % dead.pid)
    status, out = control(cproj, "status", "-v")
    row = [l for l in out.splitlines() if "sleep 2718" in l][0]
    assert "NOT RUNNING" in row and str(dead.pid) in row
    status, out = control(cproj, "start", "-v")
    assert "Starting daemon: sleep 2718" in out
    pid = wait_for(lambda: pid_of(cproj, "sleep") != dead.pid and pid_of(cproj, "sleep"))
    assert alive(pid)
    status, out = control(cproj, "stop", "-q")
    assert not alive(pid)


def test_stop_does_not_signal_a_process_that_reused_the_pid(cproj):
    configure(cproj, daemons=[])
    other = subprocess.Popen(["sleep", "30"])
    try:
        pid_dir(cproj).mkdir(exist_ok=True)
        f = pid_dir(cproj) / "old.pid"
        f.write_text("%d\n" % other.pid)
        old = time.time() - 3600
        os.utime(f, (old, old))           # written long before that process started
        status, out = control(cproj, "stop", "-v")
        assert status == 0 and "(No processes stopped)" in out
        assert other.poll() is None and not f.exists()
    finally:
        other.kill()
        other.wait()


def test_disabled_and_other_host_daemons_are_not_started(cproj):
    configure(cproj, daemons=[DaemonSpec("sleep 1111", disabled=True),
                              DaemonSpec("sleep 2222", host="elsewhere")],
              ssh_exec=str(cproj / "fake_ssh"))
    (cproj / "fake_ssh").write_text("#!/bin/sh\nprintf '%%s\\n' \"$@\" >> %s\n"
                                    % (cproj / "ssh_calls"))
    (cproj / "fake_ssh").chmod(0o755)
    status, out = control(cproj, "start", "-v")
    assert status == 0
    time.sleep(0.3)
    assert procs_running("sleep 1111", cproj) == [] and procs_running("sleep 2222", cproj) == []
    status, out = control(cproj, "status", "-v")
    rows = [l for l in out.splitlines() if "sleep" in l]
    assert len(rows) == 1 and "sleep 1111" in rows[0] and " yes " in rows[0]
    # the main host passes the command on to the other host
    calls = (cproj / "ssh_calls").read_text().splitlines()
    assert calls[:7] == ["elsewhere", "cd", str(cproj), " && ", os.path.join(REPO, "bin", "start"),
                     "-v", "-v"]


def test_two_copies_of_one_program_with_their_own_output_both_run(cproj):
    """As BOINC's start: a daemon's lock is OUTPUT.lock when <output> is given, so
    two copies of one program (e.g. --mod 2 0 and --mod 2 1) each start."""
    configure(cproj, daemons=[DaemonSpec("sleep 3331", output="copy_0.log", pid_file="copy_0.pid"),
                              DaemonSpec("sleep 3332", output="copy_1.log", pid_file="copy_1.pid")])
    status, out = control(cproj, "start", "-v")
    assert status == 0, out
    wait_for(lambda: procs_running("sleep 3331", cproj) and procs_running("sleep 3332", cproj))
    assert (pid_dir(cproj) / "copy_0.log.lock").exists()
    assert (pid_dir(cproj) / "copy_1.log.lock").exists()
    control(cproj, "stop", "-q")
    wait_for(lambda: not procs_running("sleep 3331", cproj)
             and not procs_running("sleep 3332", cproj))


def test_no_daemons_for_this_host(cproj):
    configure(cproj, daemons=[DaemonSpec("sleep 1", host="elsewhere")], ssh_exec="true")
    status, out = control(cproj, "start")
    assert "No daemons for this host found - check host name in config.xml" in out


def test_stop_kills_a_daemon_that_ignores_sighup_and_says_so(cproj):
    install_bin(cproj, "stubborn", text=STUBBORN)
    configure(cproj, daemons=[DaemonSpec("stubborn")])
    control(cproj, "start", "-q")
    pid = wait_for(lambda: pid_of(cproj, "stubborn"))
    wait_for(lambda: "stubborn here" in (cproj / ("log_" + short_hostname()) / "stubborn.log").read_text())
    t0 = time.monotonic()
    status, out = control(cproj, "stop", "-q", "--stop-timeout=1")
    assert status == 0
    assert "Process %d" % pid in out and "sending SIGKILL" in out
    assert time.monotonic() - t0 < 15
    assert not alive(pid)


def test_shell_characters_need_use_shell(cproj):
    configure(cproj, daemons=[DaemonSpec("sleep 4444 | cat"),
                              DaemonSpec("sleep 5555 | cat", use_shell=True, pid_file="sh.pid",
                                         lock_file="sh.lock", output="sh.log")])
    status, out = control(cproj, "start", "-v")
    assert "Couldn't start:  sleep 4444 | cat  <use_shell> is required" in out
    assert "Using shell encapsulation for:  sleep 5555 | cat" in out
    pid = wait_for(lambda: pid_of(cproj, "sh"))
    wait_for(lambda: procs_running("sleep 5555", cproj))
    assert procs_running("sleep 4444", cproj) == []
    control(cproj, "stop", "-q")
    wait_for(lambda: not procs_running("sleep 5555", cproj), timeout=10)
    assert not alive(pid)


def test_transitioner_runs_as_a_daemon_and_stops_on_sighup(cproj):
    from backend_util import make_upload_keys
    make_upload_keys(cproj)
    install_bin(cproj, "transitioner", source="transitioner")
    configure(cproj, daemons=[DaemonSpec("transitioner -d 3 --sleep_interval 1")])
    cfg, db = project_db(cproj)
    try:
        wuid = make_wu(db, "wu_daemon")
        status, out = control(cproj, "start", "-q")
        assert status == 0, out
        wait_for(lambda: results_of(db, wuid), timeout=30)
        pid = pid_of(cproj, "transitioner")
        assert alive(pid)
        status, out = control(cproj, "stop", "-q")
        assert not alive(pid)
        log = (cproj / ("log_" + short_hostname()) / "transitioner.log").read_text()
        assert "Executing command: transitioner -d 3 --sleep_interval 1" in log
        assert "[WU#%d wu_daemon] Generating 1 more results" % wuid in log
        assert "Exiting: received signal 1" in log
    finally:
        db.close()


def test_start_removes_stop_triggers_after_feeder_time(cproj):
    configure(cproj, daemons=[DaemonSpec("sleep 6666")])
    (cproj / "stop_daemons").write_text("<stop/>\n")
    (cproj / "stop_sched").write_text("<stop/>\n")
    (cproj / "stop_upload").write_text("x")
    cache = cproj / "html" / "cache" / "65"
    cache.mkdir(parents=True)
    (cache / "index.php").write_text("cached")
    t0 = time.monotonic()
    status, out = control(cproj, "start", "-q")
    assert time.monotonic() - t0 >= 5        # the feeder gets its 5 seconds
    assert not (cproj / "stop_daemons").exists() and not (cproj / "stop_sched").exists()
    assert (cproj / "stop_upload").exists()  # the operator's to remove
    assert not (cache / "index.php").exists()


# -- tasks and --cron --------------------------------------------------------------------

def _tasks_project(cproj):
    marks = {}
    tasks = []
    for name, period, extra in (("hourly", "1 hour", {}), ("always", "1 hour",
                                                          {"always_run": True}),
                                ("off", "1 min", {"disabled": True})):
        marks[name] = cproj / ("ran_" + name)
        install_bin(cproj, name, text=COUNTER_TASK % marks[name])
        tasks.append(TaskSpec(name, period, **extra))
    configure(cproj, daemons=[DaemonSpec("sleep 7777")], tasks=tasks)
    return marks


def _runs(path):
    return len(path.read_text().splitlines()) if path.exists() else 0


def test_cron_runs_due_tasks_once_and_records_last_run(cproj):
    marks = _tasks_project(cproj)
    control(cproj, "start", "-q")
    pid = wait_for(lambda: pid_of(cproj, "sleep"))
    status, out = control(cproj, "start", "--cron", "-v")
    assert status == 0, out
    wait_for(lambda: _runs(marks["hourly"]) == 1 and _runs(marks["always"]) == 1)
    assert "in %s" % (cproj / ("tmp_" + HOST)) in marks["hourly"].read_text()
    assert _runs(marks["off"]) == 0
    state = (cproj / ("run_state_%s.xml" % HOST)).read_text()
    assert "<cmd>hourly</cmd>" in state and "<enabled>1</enabled>" in state
    last = int(re.search(r"<cmd>hourly</cmd>\s*<last_run>(\d+)</last_run>", state).group(1))
    assert abs(last - time.time()) < 30
    # not due yet
    status, out = control(cproj, "start", "--cron", "-v")
    assert "Not running task because not time yet: hourly" in out
    time.sleep(0.5)
    assert _runs(marks["hourly"]) == 1
    assert procs_running("sleep 7777", cproj) == [pid]      # cron starts no second copy
    # status shows the tasks
    status, out = control(cproj, "status", "-v")
    row = [l for l in out.splitlines() if l.rstrip().endswith("hourly")][0]
    assert "1 hour" in row and "NOW" not in row
    # an hour later (last_run moved back): due again
    path = cproj / ("run_state_%s.xml" % HOST)
    path.write_text(state.replace("<last_run>%d<" % last, "<last_run>%d<" % (last - 3601)))
    control(cproj, "start", "--cron", "-q")
    wait_for(lambda: _runs(marks["hourly"]) == 2)
    # --ignore-timestamps runs everything now
    control(cproj, "start", "--cron-tasks", "--ignore-timestamps", "-q")
    wait_for(lambda: _runs(marks["hourly"]) == 3)


def test_cron_when_disabled_runs_only_always_run_tasks_and_no_daemons(cproj):
    marks = _tasks_project(cproj)
    control(cproj, "stop", "-q")
    status, out = control(cproj, "start", "-c", "-v")
    assert "status == DISABLED" in out
    wait_for(lambda: _runs(marks["always"]) == 1)
    time.sleep(0.3)
    assert _runs(marks["hourly"]) == 0
    assert procs_running("sleep 7777", cproj) == []


def test_cron_restarts_a_daemon_that_died(cproj):
    configure(cproj, daemons=[DaemonSpec("sleep 8888")])
    control(cproj, "start", "-q")
    pid = wait_for(lambda: pid_of(cproj, "sleep"))
    psutil.Process(pid).kill()
    wait_for(lambda: not alive(pid))
    status, out = control(cproj, "start", "--cron", "-q")
    assert "Starting daemon: sleep 8888" in out     # cron says what it restarted
    new = wait_for(lambda: pid_of(cproj, "sleep") != pid and pid_of(cproj, "sleep"))
    assert alive(new)


# -- options and checks ------------------------------------------------------------------

def test_project_user_name_is_enforced(cproj):
    configure(cproj, project_user_name="somebody_else")
    status, out = control(cproj, "status")
    assert status == 1 and 'The script must be run by user "somebody_else"' in out


def test_invocation_name_selects_the_action(cproj, tmp_path):
    configure(cproj)
    link = tmp_path / "control"
    link.symlink_to(os.path.join(REPO, "bin", "start"))
    proc = subprocess.run([sys.executable, str(link)], cwd=cproj, env=bin_env(cproj),
                          capture_output=True, text=True)
    assert proc.returncode == 1 and "No command specified" in proc.stderr
    proc = subprocess.run([sys.executable, str(link), "-s"], cwd=cproj, env=bin_env(cproj),
                          capture_output=True, text=True)
    assert proc.returncode == 0 and "BOINC is DISABLED" in proc.stdout
    status, out = control(cproj, "start", "--show-config")
    assert status == 0 and "pid dir:     %s" % pid_dir(cproj) in out
    status, out = control(cproj, "start", "--bogus")
    assert status == 1 and "No such option '--bogus'" in out


def test_start_lock_prevents_concurrent_runs(cproj):
    import fcntl
    configure(cproj)
    pid_dir(cproj).mkdir(exist_ok=True)
    lock = pid_dir(cproj) / ("start.lock." + HOST)
    fd = os.open(lock, os.O_WRONLY | os.O_CREAT)
    fcntl.lockf(fd, fcntl.LOCK_EX)
    try:
        status, out = control(cproj, "status")
        assert status == 1 and "start is currently running!" in out
    finally:
        os.close(fd)
    status, out = control(cproj, "status")
    assert status == 0


def test_bad_run_state_file_is_a_clear_error(cproj):
    (cproj / ("run_state_%s.xml" % HOST)).write_text("<boinc><enabled>1</enab")
    status, out = control(cproj, "status")
    assert status == 1 and "run_state_%s.xml: malformed XML" % HOST in out
