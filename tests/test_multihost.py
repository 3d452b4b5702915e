"""A project spread over several hosts, each emulated by its own host name
(UTS namespaces, tests/hosts_util.py) on one project directory.

Per-host files as BOINC places them: every program writes its log to
PROJECT/log_<its host> and bin/start keeps pid and lock files in
PROJECT/pid_<its host> (BOINC's start script and get_log_path()), whatever
config.xml's <log_dir> says; <log_dir> is only the web pages' (remote
submission logs, show_log.php).
"""

import os
import sys

from backend_util import REPO, bin_cmd, bin_env, wait_for
from boincpy.config import DaemonSpec, load_config, write_config
from hosts_util import needs_unshare, run_on

pytestmark = needs_unshare


def _set_daemons(project, daemons):
    cfg = load_config(str(project))
    write_config(str(project), cfg.as_options(), daemons, [])


def test_config_names_this_hosts_log_directory_whatever_log_dir_says(mini_project):
    script = ("from boincpy.config import load_config; c = load_config(%r); "
              "print(c.local_host, c.host_log_dir, c.log_dir, c.pid_dir)" % str(mini_project))
    r = run_on("back1", [sys.executable, "-c", script], env=bin_env(), capture_output=True,
               text=True, check=True)
    assert r.stdout.split() == ["back1", str(mini_project / "log_back1"),
                                str(mini_project / "log_test"), str(mini_project / "pid_back1")]


def test_scheduler_and_upload_handler_log_on_their_own_host(mini_project):
    body = b"<scheduler_request>\n</scheduler_request>\n"
    env = dict(bin_env(mini_project), CONTENT_LENGTH=str(len(body)), REQUEST_METHOD="POST")
    main_logs = mini_project / "log_test"
    os.chmod(main_logs, 0o2770)     # make_project's: the web server's group, setgid
    for host in ("web1", "web2"):
        r = run_on(host, [sys.executable, os.path.join(REPO, "cgi-bin", "cgi")], input=body,
                   cwd=str(mini_project / "cgi-bin"), env=env, capture_output=True)
        assert r.returncode == 0 and b"<scheduler_reply>" in r.stdout, r.stderr
        up = b"<data_server_request>\n<get_file_size>nope</get_file_size>\n</data_server_request>\n"
        r = run_on(host, [sys.executable, os.path.join(REPO, "cgi-bin", "file_upload_handler")],
                   input=up, cwd=str(mini_project / "cgi-bin"),
                   env=dict(env, CONTENT_LENGTH=str(len(up))), capture_output=True)
        assert r.returncode == 0 and b"<status>" in r.stdout, r.stderr
        logs = mini_project / ("log_" + host)
        assert "code sign key" in (logs / "scheduler.log").read_text()   # what it logs first
        assert "nope" in (logs / "file_upload_handler.log").read_text()
        # made like the main host's, so the project's user and the web
        # server's both write there
        st, main = os.stat(logs), os.stat(main_logs)
        assert (oct(st.st_mode & 0o7777), st.st_gid) == (oct(0o2770), main.st_gid)
    # nothing in config.xml's <log_dir>: that one is the web pages'
    assert sorted(os.listdir(mini_project / "log_test")) == []


def test_start_on_each_host_runs_its_daemons_with_its_own_logs_and_pids(mini_project):
    _set_daemons(mini_project, [DaemonSpec("sleep 3141", host="back1"),
                                DaemonSpec("sleep 2718", host="back2")])
    env = bin_env(mini_project)
    try:
        for host in ("back1", "back2"):
            r = run_on(host, bin_cmd("start", "-v"), cwd=str(mini_project), env=env,
                       capture_output=True, text=True, timeout=60)
            assert r.returncode == 0, r.stdout + r.stderr
        for host, arg in (("back1", "3141"), ("back2", "2718")):
            pid_file = mini_project / ("pid_" + host) / "sleep.pid"
            pid = int(wait_for(lambda: pid_file.exists() and pid_file.read_text().strip()))
            assert open("/proc/%d/cmdline" % pid).read().split("\0")[:2] == ["sleep", arg]
            log = (mini_project / ("log_" + host) / "sleep.log").read_text()
            assert "Executing command: sleep " + arg in log
            r = run_on(host, bin_cmd("status", "-v"), cwd=str(mini_project), env=env,
                       capture_output=True, text=True, timeout=60)
            assert "sleep " + arg in r.stdout and "running" in r.stdout, r.stdout + r.stderr
        assert not (mini_project / "log_test" / "sleep.log").exists()
    finally:
        for host in ("back1", "back2"):
            run_on(host, bin_cmd("stop", "--stop-timeout=2"), cwd=str(mini_project), env=env,
                   capture_output=True, timeout=60)
    for host in ("back1", "back2"):
        assert not (mini_project / ("pid_" + host) / "sleep.pid").exists()


# -- the master page lists the schedulers of schedulers.txt as it is now ---------------

def _master_page(project, host="web1"):
    env = dict(bin_env(project), REQUEST_METHOD="GET", QUERY_STRING="")
    r = run_on(host, [sys.executable, os.path.join(REPO, "html", "user", "index.php")],
               cwd=str(project / "html" / "user"), env=env, capture_output=True, check=True)
    head, _, body = r.stdout.decode().partition("\n\n")
    assert "Content-Type: text/html" in head and "no-cache" in head, head
    return body


def _schedulers(page):
    """The scheduler URLs a client finds: both forms, as its master-page scan does."""
    lines = page.splitlines()
    assert all(len(line.encode()) < 256 for line in lines)
    old = [x.split("<scheduler>")[1].split("</scheduler>")[0].strip()
           for x in lines if "<scheduler>" in x]
    new = [x.split('href="')[1].split('"')[0] for x in lines if 'rel="boinc_scheduler"' in x]
    return old, new


def test_master_page_reads_schedulers_txt_on_each_request(mini_project):
    user = mini_project / "html" / "user"
    user.mkdir(parents=True)
    line = ('<!-- <scheduler>{0}</scheduler> -->\n'
            '<link rel="boinc_scheduler" href="{0}">\n')
    one = "http://127.0.0.2/test_cgi/cgi"
    two = "http://127.0.0.3/test_cgi/cgi"
    (user / "schedulers.txt").write_text(line.format(one))
    page = _master_page(mini_project)
    assert _schedulers(page) == ([one], [one])
    assert "<h1>Test project</h1>" in page and "attach it" in page
    # an operator adds a second scheduler host: no rebuild, the next request has it
    with open(user / "schedulers.txt", "a") as f:
        f.write(line.format(two))
    assert _schedulers(_master_page(mini_project, "web2")) == ([one, two], [one, two])
    # the project's description and message of the day, read as they are now
    (mini_project / "html" / "project").mkdir()
    (mini_project / "html" / "project" / "project_description.html").write_text(
        "<p>We fold proteins.</p>\n")
    (user / "motd.html").write_text("Down for maintenance at 18:00 UTC\n")
    page = _master_page(mini_project)
    assert "We fold proteins." in page and "attach it" not in page
    assert "Down for maintenance at 18:00 UTC" in page
    # without schedulers.txt (a web-only project) the page lists no scheduler
    (user / "schedulers.txt").unlink()
    assert _schedulers(_master_page(mini_project)) == ([], [])
