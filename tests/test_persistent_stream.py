"""The persistent mode's FastCGI workers behind mod_proxy_fcgi (boincpy.fcgi_pool),
under a private Apache: request bodies reach the upload handler as they
arrive, so an upload whose client drops the connection half-way keeps its
bytes and resumes from them; a body shorter than its Content-Length is
answered as in CGI mode (Apache's 400, never a 500), and the workers serve on;
bin/start leaves the configured workers running and bin/status lists them;
an Apache restart leaves them up.  The same upload tests run with the CGIs."""

import hashlib
import os
import re
import socket
import subprocess
import time
import urllib.request

import pytest

from boincpy import crypto, fcgi_pool
from boincpy.files import dir_hier_path
from tests.test_end_to_end import fullrun  # noqa: F401  (the demo over a fresh project)

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(os.geteuid() != 0, reason="Apache's children run as www-data")]

BOTH_MODES = pytest.mark.parametrize("apache", ["cgi", "persistent"], indirect=True)
PERSISTENT = pytest.mark.parametrize("apache", ["persistent"], indirect=True)
MAX_NBYTES = 10_000_000


def upload_head(name, sig, nbytes, md5, offset):
    return ("<data_server_request>\n<core_client_major_version>7</core_client_major_version>\n"
            "<core_client_minor_version>20</core_client_minor_version>\n"
            "<core_client_release>5</core_client_release>\n"
            "<file_upload>\n<file_info>\n<name>%s</name>\n<xml_signature>\n%s\n</xml_signature>\n"
            "<max_nbytes>%d</max_nbytes>\n</file_info>\n<nbytes>%d</nbytes>\n"
            "<md5_cksum>%s</md5_cksum>\n<offset>%d</offset>\n<data>\n"
            % (name, sig, MAX_NBYTES, nbytes, md5, offset)).encode()


def post(url, body):
    req = urllib.request.Request(url, data=body, method="POST")
    with urllib.request.urlopen(req, timeout=30) as resp:
        return resp.status, resp.read()


def raw_post(apache, path, declared, body, pause=0.0):
    """POST ``body`` with Content-Length ``declared`` on a raw connection,
    (``pause`` s later) close the writing half, and read what comes back:
    (status, reply bytes), status None if the server only closed."""
    sock = socket.create_connection(("127.0.0.1", apache.port), timeout=30)
    try:
        sock.sendall(b"POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: %d\r\n"
                     b"Content-Type: application/x-www-form-urlencoded\r\n"
                     b"Connection: close\r\n\r\n" % (path.encode(), declared) + body)
        time.sleep(pause)
        sock.shutdown(socket.SHUT_WR)
        data = b""
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
    finally:
        sock.close()
    m = re.match(rb"HTTP/1\.1 (\d+)", data)
    return (int(m.group(1)) if m else None), data


def url_path(url):
    return "/" + url.split("/", 3)[3]


def file_size(apache, name):
    body = (b"<data_server_request>\n<core_client_major_version>7</core_client_major_version>\n"
            b"<get_file_size>%s</get_file_size>\n</data_server_request>\n" % name.encode())
    status, reply = post(apache.upload_url, body)
    assert status == 200 and b"<status>0</status>" in reply, reply
    return int(re.search(rb"<file_size>(\d+)</file_size>", reply).group(1))


@BOTH_MODES
def test_an_upload_cut_at_half_keeps_its_bytes_and_resumes(apache):
    """The client sends half of a 4 MB output, then its connection drops (it
    closes the socket without reading a reply); get_file_size then tells
    what the server kept, and the rest sent from there completes the file."""
    p = apache.project
    key = crypto.read_key(p.path("keys", "upload_private"))
    name = "wu_cut_0_r1_0"
    data = os.urandom(4 << 20)
    md5 = hashlib.md5(data).hexdigest()
    sig = crypto.sign_upload_certificate(name, MAX_NBYTES, key).strip()
    head = upload_head(name, sig, len(data), md5, 0)
    half = len(data) // 2
    sock = socket.create_connection(("127.0.0.1", apache.port), timeout=30)
    sock.sendall(b"POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: %d\r\n\r\n"
                 % (url_path(apache.upload_url).encode(), len(head) + len(data)) + head)
    for i in range(0, half, 1 << 18):
        sock.sendall(data[i:i + (1 << 18)])
    time.sleep(1.0)             # what was sent reaches the handler before the drop
    sock.close()

    path = dir_hier_path(p.cfg.upload_dir, name, p.cfg.uldl_dir_fanout)
    log = p.path("log_" + p.cfg.host, "file_upload_handler.log")
    kept, deadline = -1, time.monotonic() + 30
    while time.monotonic() < deadline:          # until the handler is done with it
        time.sleep(0.5)
        size = file_size(apache, name)
        if size == kept:
            break
        kept = size
    # all of it but what was still in flight in Apache's and the kernel's buffers
    assert half - (256 << 10) <= kept <= half, (kept, half)
    assert not os.path.exists(path)          # not under its name until complete
    status, reply = post(apache.upload_url,
                         upload_head(name, sig, len(data), md5, kept) + data[kept:])
    assert status == 200 and b"<status>0</status>" in reply, reply
    with open(path, "rb") as f:
        assert hashlib.md5(f.read()).hexdigest() == md5
    with open(log) as f:
        text = f.read()
    assert "(%d bytes, offset %d)" % (len(data), kept) in text
    from boincpy.tools import server_mode
    with open(server_mode.conf_path(p.root)) as f:
        if server_mode.current_mode(f.read()) == "persistent":
            # the worker read up to the drop and said so in BOINC's words (the
            # classic CGI is killed by mod_cgi once Apache gives up on the request)
            assert "EOF on socket read : asked for %d, got %d" % (len(data), kept) in text


@BOTH_MODES
def test_a_body_shorter_than_its_content_length_is_answered_as_by_the_cgis(apache):
    """Scheduler and upload handler: Apache's 400 (the client's request is
    malformed) in both modes, never a server error; the next request is
    served as usual."""
    sched_body = (b"<scheduler_request>\n<authenticator>x</authenticator>\n"
                  b"<core_client_major_version>7</core_client_major_version>\n")
    upload_body = b"<data_server_request>\n<core_client_major_version>7</core_client_"
    for url, body in ((apache.scheduler_url, sched_body), (apache.upload_url, upload_body)):
        for pause in (0.0, 0.5):
            status, data = raw_post(apache, url_path(url), len(body) + 1000, body, pause)
            assert status == 400, (apache, url, data[:300])
    with open(apache.error_log, errors="replace") as f:
        log = f.read()
    assert "mod_fcgid" not in log and " 500 " not in log
    status, reply = post(apache.upload_url, b"<data_server_request>\n<core_client_major_version>"
                         b"7</core_client_major_version>\n<get_file_size>nothing</get_file_size>"
                         b"\n</data_server_request>\n")
    assert status == 200 and b"<status>0</status>" in reply


def bin_tool(p, name, *args):
    proc = subprocess.run([p.path("bin", name)] + list(args), capture_output=True, text=True,
                          cwd=p.root, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def test_bin_start_leaves_the_workers_running_and_status_lists_them(made_project):
    """In persistent mode bin/start returns once the configured workers are up
    (as <httpd_user>); bin/status -v lists their pids; a killed worker is
    replaced; an Apache restart leaves them be; bin/stop ends them all."""
    import psutil
    from boincpy.tools import server_mode
    from boincpy.tools.httpd import PrivateApache
    p = made_project
    server_mode.set_mode(p.root, "persistent", processes=3)
    bin_tool(p, "start")
    try:
        configured, ready = fcgi_pool.workers(p.root)
        assert configured == 3 and len(ready) == 3
        master = fcgi_pool.master_pid(p.root)
        for pid in ready:
            proc = psutil.Process(pid)
            assert proc.ppid() == master and proc.username() == "www-data"
        status = bin_tool(p, "status", "-v")
        line = [x for x in status.splitlines() if x.startswith("FastCGI workers")]
        assert line == ["FastCGI workers: 3 of 3 up: pids " + " ".join(map(str, ready))], status
        assert re.search(r"\b%d\s+running .*boincpy\.fcgi" % master, status), status

        server = PrivateApache(p.root, p.port)
        server.start()
        try:
            assert file_size(server_site(server, p), "none") == 0
            server.stop(graceful=False)
            server.start()      # the workers were bin/start's: still the same ones
            assert fcgi_pool.workers(p.root)[1] == ready
            assert file_size(server_site(server, p), "none") == 0
        finally:
            server.stop(graceful=False)
        assert fcgi_pool.workers(p.root)[1] == ready

        os.kill(ready[0], 9)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            now = fcgi_pool.workers(p.root)[1]
            if len(now) == 3 and ready[0] not in now:
                break
            time.sleep(0.05)
        assert len(now) == 3 and ready[0] not in now and set(ready[1:]) <= set(now)
    finally:
        bin_tool(p, "stop")
    assert fcgi_pool.master_pid(p.root) is None
    assert not any(psutil.pid_exists(pid) and psutil.Process(pid).status() != "zombie"
                   for pid in now)
    assert not os.path.exists(fcgi_pool.socket_path(p.root))


class server_site:
    """What file_size needs of a RunningApache, for a PrivateApache."""

    def __init__(self, server, project):
        self.upload_url = project.upload_url


class CuttingProxy:
    """An HTTP proxy on 127.0.0.1 for a stock client: it passes requests on to
    the web server, except the first upload of a file of more than
    ``min_nbytes``, which it passes on up to half of the file's bytes and then
    drops (both connections closed, no reply): a volunteer's connection lost
    in the middle of an upload.  ``cuts``: (file name, bytes of the file
    passed on, its size)."""

    def __init__(self, min_nbytes):
        import threading
        self.min_nbytes = min_nbytes
        self.cuts = []
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(16)
        self.port = self.listener.getsockname()[1]
        self.closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def close(self):
        self.closed = True
        self.listener.close()

    def _accept(self):
        import threading
        while not self.closed:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    @staticmethod
    def _read_head(conn):
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = conn.recv(65536)
            if not chunk:
                return None, b""
            data += chunk
        head, rest = data.split(b"\r\n\r\n", 1)
        return head, rest

    def _serve(self, conn):
        from urllib.parse import urlsplit
        try:
            head, body = self._read_head(conn)
            if head is None:
                return
            lines = head.decode("latin-1").split("\r\n")
            method, url, version = lines[0].split(" ", 2)
            target = urlsplit(url)
            headers = [h for h in lines[1:] if h.split(":", 1)[0].lower() not in
                       ("proxy-connection", "connection", "expect", "keep-alive")]
            length = next((int(h.split(":", 1)[1]) for h in headers
                           if h.lower().startswith("content-length:")), 0)
            if any(h.lower().startswith("expect:") for h in lines[1:]):
                conn.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
            while len(body) < length:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                body += chunk
            up = socket.create_connection((target.hostname, target.port or 80), timeout=60)
            path = target.path + ("?" + target.query if target.query else "")
            up.sendall(("%s %s %s\r\n%s\r\nConnection: close\r\n\r\n" % (
                method, path, version, "\r\n".join(headers))).encode("latin-1"))
            cut = self._cut_at(body)
            if cut is not None:
                up.sendall(body[:cut])
                time.sleep(1.0)         # what was sent reaches the server, then the drop
                up.close()
                return
            up.sendall(body)
            while True:
                chunk = up.recv(65536)
                if not chunk:
                    break
                conn.sendall(chunk)
            up.close()
        except OSError:
            pass
        finally:
            conn.close()

    def _cut_at(self, body):
        if self.cuts or b"<file_upload>" not in body:
            return None
        m = re.search(rb"<name>([^<]+)</name>.*?<nbytes>(\d+)</nbytes>.*?<data>\n", body, re.S)
        if not m or int(m.group(2)) <= self.min_nbytes:
            return None
        nbytes = int(m.group(2))
        self.cuts.append((m.group(1).decode(), nbytes // 2, nbytes))
        return m.end() + nbytes // 2


def test_the_stock_client_resumes_an_upload_cut_at_half(fullrun):
    """In persistent mode a stock 7.20.5 client whose connection drops in the
    middle of an upload asks the data server what it kept (get_file_size) and
    sends only the rest: the file completes with the bytes of both tries."""
    from boincpy.tools.demo import expected_output
    from tests.test_end_to_end import _batch_results, _output_name
    run = fullrun
    demo = run(njobs=5, min_quorum=1, volunteers=1, until="reported",
               daemons=("feeder -d 3", "transitioner -d 3"), persistent=True)
    # the client's output files: 76 bytes to 12 kB; the client asks what the
    # server has of a file before uploading it only past 8 kB
    proxy = CuttingProxy(min_nbytes=8192)
    make_volunteers = demo.make_volunteers

    def through_the_proxy():
        volunteers = make_volunteers()
        for v in volunteers:
            v.client.options["proxy_info"] = (
                "<http_server_name>127.0.0.1</http_server_name>"
                "<http_server_port>%d</http_server_port>" % proxy.port)
            base = v.client.environment

            def environment(base=base):
                env = base()
                env.pop("no_proxy", None)   # loopback traffic through the proxy
                env.pop("NO_PROXY", None)
                return env
            v.client.environment = environment
        return volunteers
    demo.make_volunteers = through_the_proxy
    try:
        demo.run()
    finally:
        proxy.close()
    assert len(proxy.cuts) == 1, proxy.cuts
    name, sent, nbytes = proxy.cuts[0]
    cfg = demo.cfg
    (v,) = demo.volunteers
    log = v.client.log_text()
    assert re.search(r"Temporarily failed upload of %s" % re.escape(name), log), log[-3000:]
    assert re.search(r"Finished upload of %s" % re.escape(name), log)
    with open(os.path.join(cfg.host_log_dir, "file_upload_handler.log")) as f:
        handler_log = f.read()
    kept = int(re.search(r"get_file_size: %s has (\d+) bytes" % re.escape(name),
                         handler_log).group(1))
    assert 0 < kept <= sent
    assert "Uploaded %s (%d bytes, offset %d)" % (name, nbytes, kept) in handler_log
    results = _batch_results(run, demo.batch)
    (r,) = [r for r in results if _output_name(r) == name]
    i = int(r["wu_name"].rsplit("_", 1)[1])
    with open(dir_hier_path(cfg.upload_dir, name, cfg.uldl_dir_fanout)) as f:
        assert f.read() == expected_output(demo.batch, i)


def test_workers_end_with_a_killed_master_and_a_new_start_serves(made_project):
    """A master killed outright takes its workers with it (none is left
    holding a database connection on a socket no longer bound); bin/start's
    way of starting it again brings up new ones on a new socket."""
    import psutil
    from boincpy.tools import server_mode
    from boincpy.tools.control import start_persistent
    p = made_project
    server_mode.set_mode(p.root, "persistent", processes=2)
    assert start_persistent(p.root)
    try:
        master = fcgi_pool.master_pid(p.root)
        _, old = fcgi_pool.workers(p.root)
        os.kill(master, 9)
        gone, alive = psutil.wait_procs([psutil.Process(pid) for pid in old], timeout=10)
        assert not alive, alive
        assert start_persistent(p.root)
        _, new = fcgi_pool.workers(p.root)
        assert len(new) == 2 and not set(new) & set(old)
        sock = socket.socket(socket.AF_UNIX)
        sock.connect(fcgi_pool.socket_path(p.root))
        sock.close()
    finally:
        fcgi_pool.stop(p.root)
