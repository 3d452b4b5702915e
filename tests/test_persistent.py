"""The persistent mode (boincpy.persistent in the FastCGI workers of boincpy.fcgi_pool):
what a long-lived scheduler process must get right, each through a real
Apache, the real feeder and MariaDB.

* one database connection per process, reopened after the server dropped it;
* the job array attached once, attached again when the feeder restarts;
* config.xml, config_aux.xml and the keys re-read when their files change;
* stop_sched / stop_upload / stop_web honoured on every request;
* scheduler.log lines identical to the CGI's;
* a request killed half-way leaves no host lock and no reserved slot;
* memory flat over many requests (in-process, RSS).
"""

import fcntl
import io
import os
import re
import signal
import threading
import time
import xml.etree.ElementTree as ET

import MySQLdb
import psutil
import pytest

from boincpy import shmem
from boincpy.tools.server_mode import persistent_pids
from tests.sched_env import CLIENT, CLIENT_AUTH, apache_site, fixture_text  # noqa: F401

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="Apache's children run as www-data"),
    pytest.mark.parametrize("apache", ["persistent"], indirect=True),
]

REQUEST = ("no_work", "02_sched_initial_hostid0.body.xml")


def request(s, key=None):
    """The stock client's first request (asking for work), holding code-signing
    key ``key`` if given."""
    data = fixture_text(CLIENT, *REQUEST)
    if key is None:
        return data
    block = b"<code_sign_key>\n%s\n</code_sign_key>\n" % key.strip().encode()
    return data.replace(b"</scheduler_request>", block + b"</scheduler_request>", 1)


def reply(s, data=None):
    status, _, body = s.post(request(s) if data is None else data)
    assert status == 200, (status, body)
    return ET.fromstring(body)


def messages(root):
    return [m.text for m in root.findall("message")]


def sched_log(s):
    with open(os.path.join(s.p.cfg.host_log_dir, "scheduler.log")) as f:
        return f.read()


def daemon_pids(s):
    """Process ids of the project's persistent processes."""
    return persistent_pids(s.p.root)


def db_connections(s):
    """Ids of the database connections the project's account holds."""
    conn = MySQLdb.connect(**s.p.db_root_params)
    try:
        cur = conn.cursor()
        cur.execute("SELECT id FROM information_schema.processlist WHERE user = %s",
                    (s.p.db_user,))
        return [r[0] for r in cur.fetchall()]
    finally:
        conn.close()


def test_one_connection_per_process_reopened_after_the_server_drops_it(apache_site):
    s = apache_site
    before = set(db_connections(s))     # the workers open theirs as they start
    s.start_feeder()
    feeder = set(db_connections(s)) - before
    for _ in range(12):
        assert messages(reply(s)) == ["Project has no tasks available"]
    # two daemon processes served twelve requests over at most two connections
    ids = set(db_connections(s)) - feeder
    assert 1 <= len(ids) <= 2, ids
    # the server drops them (as a MariaDB restart or wait_timeout would)
    conn = MySQLdb.connect(**s.p.db_root_params)
    for i in ids:
        conn.cursor().execute("KILL CONNECTION %d" % i)
    conn.close()
    for _ in range(6):
        root = reply(s)
        assert messages(root) == ["Project has no tasks available"], messages(root)
        assert root.findtext("hostid") == "1"
    assert "lost connection to database - trying to reconnect" in sched_log(s)
    assert 1 <= len(set(db_connections(s)) - feeder) <= 2


def test_job_array_attached_again_when_the_feeder_restarts(apache_site):
    s = apache_site
    s.start_feeder()
    assert messages(reply(s)) == ["Project has no tasks available"]
    # a feeder killed outright leaves its segment (ready); the new one replaces it
    s.feeder.send_signal(signal.SIGKILL)
    s.feeder.wait()
    s.feeder = None
    s.add_job("after_restart")
    s.start_feeder()
    s.wait_present(1)
    s.execute("UPDATE host SET rpc_time = 0")
    root = reply(s)
    assert [r.findtext("name") for r in root.findall("result")] == ["after_restart_0"], \
        messages(root)
    # a feeder stopped properly removes its segment: "feeder not running" until it is back
    s.stop_feeder()
    root = reply(s)
    assert root.find("project_is_down") is not None
    assert messages(root) == ["Server error: feeder not running"]
    s.start_feeder()
    assert messages(reply(s)) == ["Project has no tasks available"]


def test_config_files_and_keys_are_read_again_when_they_change(apache_site):
    s = apache_site
    s.start_feeder()
    cfg_path = s.p.path("config.xml")
    root = reply(s)
    assert root.findtext("project_name") == s.p.long_name
    with open(cfg_path) as f:
        text = f.read()
    with open(cfg_path, "w") as f:
        f.write(text.replace("<long_name>%s</long_name>" % s.p.long_name,
                             "<long_name>Renamed project</long_name>"))
    assert reply(s).findtext("project_name") == "Renamed project"
    # a malformed config_aux.xml stops the scheduler, as it stops BOINC's; fixed, it runs
    aux = s.p.path("config_aux.xml")
    with open(aux, "w") as f:
        f.write("<config><max_jobs_in_progress><project>")
    root = reply(s)
    assert messages(root) == ["Server can't parse configuration file"]
    with open(aux, "w") as f:
        f.write("<config><max_jobs_in_progress><project><total_limit><jobs>3</jobs>"
                "</total_limit></project></max_jobs_in_progress></config>\n")
    assert messages(reply(s)) == ["Project has no tasks available"]
    # a new code-signing key: a client holding the old one is told the key changed
    from boincpy import crypto
    old = open(s.p.path("keys", "code_sign_public")).read()
    _, public = crypto.generate_key_pair()
    with open(s.p.path("keys", "code_sign_public"), "w") as f:
        f.write(public)
    root = reply(s, request(s, old))
    assert "The project has changed its security key.  Please remove and add this project." \
        in messages(root)
    assert root.findtext("code_sign_key") is None
    assert messages(reply(s, request(s, public))) == ["Project has no tasks available"]


def test_project_files_are_kept_until_they_change(apache_site):
    """gui_urls.xml and project_files.xml, which a worker keeps from one
    request to the next (BOINC's FastCGI scheduler reads them once): a new,
    changed or removed file shows in the next reply of every worker."""
    s = apache_site
    s.start_feeder()
    files = s.p.path("project_files.xml")
    gui = s.p.path("gui_urls.xml")

    def write(path, text):
        # a new inode each time, as editors and make_project write
        with open(path + ".new", "w") as f:
            f.write(text)
        os.replace(path + ".new", path)

    def names(root):
        return [e.text for e in root.iterfind("project_files/file_ref/file_name")]

    assert names(reply(s)) == []
    for version in ("v1", "v2"):
        write(files, "<project_files>\n<file_ref>\n<file_name>logo_%s.png</file_name>\n"
                     "<open_name>logo.png</open_name>\n</file_ref>\n</project_files>\n" % version)
        for _ in range(4):                  # each worker, whichever serves the request
            assert names(reply(s)) == ["logo_%s.png" % version]
    write(gui, "<gui_urls>\n<gui_url>\n<name>Forum</name>\n<description>forum of <user_name/>"
               "</description>\n<url>https://example.org/forum</url>\n</gui_url>\n</gui_urls>\n")
    for _ in range(4):
        root = reply(s)
        assert root.findtext("gui_urls/gui_url/name") == "Forum"
    os.remove(files)
    os.remove(gui)
    for _ in range(4):
        root = reply(s)
        assert names(root) == [] and root.find("gui_urls") is None


def test_stop_triggers_are_honoured_on_every_request(apache_site):
    s = apache_site
    s.start_feeder()
    assert messages(reply(s)) == ["Project has no tasks available"]
    stop = s.p.path("stop_sched")
    open(stop, "w").close()
    root = reply(s)
    assert root.find("project_is_down") is not None
    assert messages(root) == ["Project is temporarily shut down for maintenance"]
    os.unlink(stop)
    assert messages(reply(s)) == ["Project has no tasks available"]
    # the upload handler
    import http.client
    from urllib.parse import urlsplit
    url = urlsplit(s.apache.upload_url)

    def upload_status():
        conn = http.client.HTTPConnection(url.hostname, url.port, timeout=30)
        conn.request("POST", url.path, b"<data_server_request>\n<get_file_size>x_0_r1_0"
                                        b"</get_file_size>\n</data_server_request>\n")
        body = conn.getresponse().read().decode()
        conn.close()
        return body
    assert "<status>0</status>" in upload_status()
    open(s.p.path("stop_upload"), "w").close()
    body = upload_status()
    assert "<status>1</status>" in body and "temporarily disabled" in body
    os.unlink(s.p.path("stop_upload"))
    assert "<status>0</status>" in upload_status()
    # the web RPCs (stop_web: project down, -183)
    import urllib.request
    page = s.apache.master_url + "lookup_account.php?email_addr=a%40b.c"
    open(s.p.path("stop_web"), "w").close()
    with urllib.request.urlopen(page, timeout=30) as resp:
        assert "<error_num>-183</error_num>" in resp.read().decode()
    os.unlink(s.p.path("stop_web"))
    with urllib.request.urlopen(page, timeout=30) as resp:
        assert "<error_num>-136</error_num>" in resp.read().decode()


def _normalised(log):
    """scheduler.log lines without what differs from run to run."""
    out = []
    for line in log.splitlines():
        line = re.sub(r"^\S+ \S+ UTC \[PID=\d+\s*\]", "T [PID]", line)
        line = re.sub(r"ran \d+\.\d+ seconds", "ran N seconds", line)
        out.append(line)
    return out


def test_log_lines_are_the_cgis(apache_site):
    """The same requests, served as CGIs and then persistently, log the same lines."""
    from boincpy.tools import server_mode
    from boincpy.tools.httpd import PrivateApache
    s = apache_site
    s.start_feeder()
    bad = fixture_text(CLIENT, *REQUEST).replace(CLIENT_AUTH.encode(), b"ffffffffffffffff")
    sequence = (request(s), bad, b"<scheduler_request>\n<hostid>1")
    reply(s)                                        # creates host 1
    logs = {}
    for mode in ("cgi", "persistent"):
        s.apache.stop()
        server_mode.set_mode(s.p.root, mode, processes=2)
        PrivateApache(s.p.root, s.p.port).start()
        start = os.path.getsize(os.path.join(s.p.cfg.host_log_dir, "scheduler.log"))
        for data in sequence:
            s.post(data)
        logs[mode] = _normalised(sched_log(s)[start:])
    assert logs["cgi"] == logs["persistent"], logs
    assert any("Request: [USER#1] [HOST#1]" in line for line in logs["cgi"]), logs
    assert any("Error in request message" in line for line in logs["cgi"])


def test_a_request_killed_half_way_leaves_no_lock_or_reserved_slot(apache_site):
    s = apache_site
    lock_dir = s.p.path("sched_locks")
    os.mkdir(lock_dir)
    os.chmod(lock_dir, 0o777)
    with open(s.p.path("config.xml")) as f:
        text = f.read()
    with open(s.p.path("config.xml"), "w") as f:
        f.write(text.replace("</config>", "<sched_lockfile_dir>%s</sched_lockfile_dir>\n"
                                          "</config>" % lock_dir, 1))
    s.start_feeder()
    reply(s)                                        # host 1 exists
    wu = s.add_job("held")
    s.wait_present(1)
    s.execute("UPDATE host SET rpc_time = 0")
    # hold the job's result row: the scheduler blocks on it half-way
    holder = MySQLdb.connect(db=s.p.db_name, **s.p.db_root_params)
    cur = holder.cursor()
    cur.execute("BEGIN")
    cur.execute("SELECT id FROM result WHERE workunitid = %s FOR UPDATE", (wu["id"],))
    done = {}
    thread = threading.Thread(target=lambda: done.update(r=_try_post(s)))
    thread.start()
    array = shmem.attach(s.p.cfg)
    try:
        _kill_the_holder_of_a_slot(s, array, holder, thread, lock_dir)
    finally:
        array.close()
        holder.close()
    # the job is not lost: still unsent, or sent to host 1 (the reply was lost
    # with the process: the client learns of it by BOINC's lost-job resend)
    (state,) = s.rows("SELECT server_state, hostid FROM result WHERE workunitid = %s",
                      (wu["id"],))
    assert (state["server_state"], state["hostid"]) in ((2, 0), (4, 1)), state
    # Apache started new processes, which serve the next request
    s.execute("UPDATE host SET rpc_time = 0")
    root = reply(s)
    names = [r.findtext("name") for r in root.findall("result")]
    assert names == (["held_0"] if state["server_state"] == 2 else []), messages(root)


def _kill_the_holder_of_a_slot(s, array, holder, thread, lock_dir):
    try:
        time.sleep(1.5)                 # the request is waiting for the row
        assert thread.is_alive()
        pids = daemon_pids(s)
        assert pids
        for pid in pids:                # the one serving it among them
            os.kill(pid, signal.SIGKILL)
    finally:
        holder.rollback()
    thread.join(60)
    # the kernel dropped the host lock; no slot stays reserved by a dead process
    path = os.path.join(lock_dir, "CGI_%07d" % 1)
    if os.path.exists(path):
        fd = os.open(path, os.O_WRONLY)
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)      # raises if still held
        os.close(fd)
    for _ in range(100):
        if array.n_present == 1:
            break
        time.sleep(0.1)
    assert [array.slot_state(i) for i in range(array.nslots)].count(shmem.PRESENT) == 1


def _try_post(s):
    try:
        return s.post(request(s))[0]
    except OSError as exc:
        return exc


def test_memory_stays_flat_over_many_requests(apache_site):
    """In-process (boincpy.persistent.Application, as boincpy.fcgi calls it): the resident
    set after 3,000 more requests is within 2 MB of where it was.  bench/
    bench_sched.py --memory measures 100,000."""
    from boincpy.persistent import Application
    s = apache_site
    s.start_feeder()
    reply(s)
    app = Application(s.p.root)
    data = request(s)
    environ = {"SCRIPT_NAME": "/x_cgi/cgi", "REQUEST_METHOD": "POST",
               "CONTENT_LENGTH": str(len(data)), "REMOTE_ADDR": "127.0.0.1"}
    proc = psutil.Process()

    def serve(n):
        for _ in range(n):
            out = app.respond(environ, io.BytesIO(data))
            assert b"Project has no tasks available" in out
    serve(1000)
    before = proc.memory_info().rss
    serve(3000)
    grown = proc.memory_info().rss - before
    app.resident.close()
    assert grown < 2 * 1024 * 1024, grown
