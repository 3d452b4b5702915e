"""A made project served by a real private Apache: master page, downloads with
byte ranges, CGIs run as www-data, what is never served, the ops password."""

import base64
import grp
import http.client
import os
import pwd
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from urllib.parse import urlsplit

import pytest

from boincpy import crypto
from boincpy.files import dir_hier_path
from boincpy.tools.httpd import PrivateApache, free_port

WWW_UID = pwd.getpwnam("www-data").pw_uid


def _get(url, headers=None, data=None, method=None):
    """(status, headers, body) without raising on HTTP errors."""
    req = urllib.request.Request(url, data=data, headers=headers or {}, method=method)
    try:
        with urllib.request.urlopen(req, timeout=20) as resp:
            return resp.status, resp.headers, resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers, exc.read()


def _raw_get(port, path):
    """GET with the path sent exactly as given (no client-side normalisation)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
    try:
        conn.putrequest("GET", path, skip_accept_encoding=True)
        conn.endheaders()
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


def _scheduler_urls(page):
    """The scheduler URLs a BOINC 7 client finds in a master page (256-byte chunks)."""
    urls = []
    for line in page.splitlines(keepends=True):
        for i in range(0, len(line), 255):
            chunk = line[i:i + 255]
            if chunk.startswith('<link rel="boinc_scheduler" href="'):
                urls.append(chunk.split('href="', 1)[1].split('"')[0])
            if "<scheduler>" in chunk and "</scheduler>" in chunk:
                urls.append(chunk.split("<scheduler>")[1].split("</scheduler>")[0].strip())
    return urls


def test_master_page_names_the_scheduler_both_ways(shared_apache):
    apache = shared_apache
    assert apache.master_url == apache.base_url + apache.project.short_name + "/"
    status, headers, body = _get(apache.master_url)
    assert status == 200
    page = body.decode()
    assert apache.project.long_name in page
    sched = apache.scheduler_url
    assert sched == apache.base_url + apache.project.short_name + "_cgi/cgi"
    assert _scheduler_urls(page) == [sched, sched]
    assert '<link rel="boinc_scheduler" href="%s">' % sched in page.splitlines()
    assert "<!-- <scheduler>%s</scheduler> -->" % sched in page.splitlines()
    # the master URL without its slash redirects to it (the client follows)
    status, _, _ = _get(apache.master_url.rstrip("/"))
    assert status == 200


def test_download_is_static_with_byte_ranges(shared_apache):
    apache = shared_apache
    p = apache.project
    data = bytes(range(256)) * 40
    path = dir_hier_path(p.cfg.download_dir, "input_0", 1024, create=True)
    with open(path, "wb") as f:
        f.write(data)
    url = apache.download_url + "/" + os.path.relpath(path, p.cfg.download_dir)
    status, _, body = _get(url)
    assert status == 200 and body == data
    status, headers, body = _get(url, headers={"Range": "bytes=1000-"})
    assert status == 206
    assert headers["Content-Range"] == "bytes 1000-%d/%d" % (len(data) - 1, len(data))
    assert body == data[1000:]
    # resuming clients send Accept-Encoding too: the range stays raw bytes
    status, headers, body = _get(url, headers={"Range": "bytes=10-19",
                                               "Accept-Encoding": "gzip, deflate"})
    assert status == 206 and body == data[10:20]
    assert "Content-Encoding" not in headers
    # no directory listings, no scripts
    assert _get(apache.download_url + "/")[0] in (403, 404)
    bucket = os.path.dirname(path)
    assert _get(apache.download_url + "/" + os.path.basename(bucket) + "/")[0] in (403, 404)
    script = os.path.join(p.cfg.download_dir, "evil.php")
    with open(script, "w") as f:
        f.write("#!/bin/sh\necho Content-type: text/plain\necho\necho EXECUTED\n")
    os.chmod(script, 0o755)
    status, _, body = _get(apache.download_url + "/evil.php")
    assert status == 200 and body.startswith(b"#!/bin/sh")


# the upload handler as a CGI and in the persistent mode's FastCGI workers
BOTH_MODES = pytest.mark.parametrize("apache", ["cgi", "persistent"], indirect=True)


@BOTH_MODES
def test_upload_handler_runs_as_www_data(apache):
    p = apache.project
    body = (b"<data_server_request>\n"
            b"    <core_client_major_version>7</core_client_major_version>\n"
            b"    <core_client_minor_version>20</core_client_minor_version>\n"
            b"    <core_client_release>5</core_client_release>\n"
            b"    <get_file_size>x</get_file_size>\n"
            b"</data_server_request>\n")
    status, _, reply = _get(apache.upload_url, data=body)
    assert status == 200, open(apache.error_log).read()
    assert b"<status>0</status>" in reply and b"<file_size>0</file_size>" in reply
    log = p.path("log_" + p.cfg.host, "file_upload_handler.log")
    with open(log) as f:
        assert "get_file_size: x not found" in f.read()
    assert os.stat(log).st_uid == WWW_UID


def _upload_body(name, sig, data, max_nbytes=100000):
    import hashlib
    head = ("<data_server_request>\n<core_client_major_version>7</core_client_major_version>\n"
            "<file_upload>\n<file_info>\n<name>%s</name>\n<xml_signature>\n%s\n</xml_signature>\n"
            "<max_nbytes>%d</max_nbytes>\n</file_info>\n<nbytes>%d</nbytes>\n"
            "<md5_cksum>%s</md5_cksum>\n<offset>0</offset>\n<data>\n"
            % (name, sig, max_nbytes, len(data), hashlib.md5(data).hexdigest()))
    return head.encode() + data


@BOTH_MODES
def test_upload_with_certificate_is_written_by_www_data(apache, tmp_path):
    """A real upload: config.xml, keys/upload_public and upload/BUCKET all work
    for www-data; a certificate that isn't the project's, or doesn't cover the
    name or the size, is refused with nothing written."""
    p = apache.project
    key = crypto.read_key(p.path("keys", "upload_private"))
    crypto.generate_key_pair(str(tmp_path / "other_private"), str(tmp_path / "other_public"))
    other = crypto.read_key(str(tmp_path / "other_private"))
    # signed with another key; for another name; for a smaller max_nbytes; none
    for bad_name, sig, why in (
            ("wu_2_0_r1_0", crypto.sign_upload_certificate("wu_2_0_r1_0", 100000, other),
             "invalid signature"),
            ("wu_3_0_r1_0", crypto.sign_upload_certificate("wu_9_0_r1_0", 100000, key),
             "invalid signature"),
            ("wu_4_0_r1_0", crypto.sign_upload_certificate("wu_4_0_r1_0", 100, key),
             "invalid signature"),
            ("wu_5_0_r1_0", "", "missing signature")):
        status, _, reply = _get(apache.upload_url,
                                data=_upload_body(bad_name, sig.strip(), b"x" * 200))
        assert status == 200 and b"<status>-1</status>" in reply, (bad_name, reply)
        assert why.encode() in reply, (bad_name, reply)
        assert not os.path.exists(dir_hier_path(p.cfg.upload_dir, bad_name, 1024)), bad_name
    name = "wu_1_0_r1_0"
    data = b"result output\n" * 100
    sig = crypto.sign_upload_certificate(name, 100000, key).strip()
    status, _, reply = _get(apache.upload_url, data=_upload_body(name, sig, data))
    assert status == 200 and b"<status>0</status>" in reply, reply
    path = dir_hier_path(p.cfg.upload_dir, name, 1024)
    with open(path, "rb") as f:
        assert f.read() == data
    assert os.stat(path).st_uid == WWW_UID
    assert os.stat(path).st_gid == grp.getgrnam("www-data").gr_gid


def test_cgi_directory_runs_python_cgis_as_www_data(apache):
    """What the scheduler (cgi-bin/cgi) will get: www-data, BOINC_PROJECT_DIR, config.xml."""
    p = apache.project
    assert apache.scheduler_url == p.cgi_url + "cgi"
    probe = ("#!%s\nimport os, sys\nfrom boincpy.config import load_config\n"
             "cfg = load_config()\nsys.stdout.write('Content-type: text/plain\\n\\n')\n"
             "print(os.geteuid(), os.environ.get('BOINC_PROJECT_DIR'), cfg.project_dir, "
             "sys.stdin.read())\n" % sys.executable)
    for where, url in (("cgi-bin", p.cgi_url + "probe_test"),
                       ("html/user", p.master_url + "probe_test.php")):
        path = p.path(where, url.rsplit("/", 1)[1])
        with open(path, "w") as f:
            f.write(probe)
        os.chmod(path, 0o755)
        status, _, body = _get(url, data=b"<raw body/>")
        assert status == 200, (url, open(apache.error_log).read())
        assert body.decode().split() == [str(WWW_UID), p.root, p.root, "<raw"] + ["body/>"]


def test_keys_upload_and_config_are_never_served(shared_apache):
    apache = shared_apache
    p = apache.project
    key_text = open(p.path("keys", "upload_public"), "rb").read()
    short = p.short_name
    with open(p.path("upload", "0", "secret_output"), "w") as f:
        f.write("SECRET")
    paths = ["/%s/keys/upload_public" % short, "/%s/../keys/upload_public" % short,
             "/%s_cgi/../keys/upload_public" % short, "/%s/download/../keys/upload_public" % short,
             "/%s/download/../../keys/upload_public" % short,
             "/%s/download/%%2e%%2e/%%2e%%2e/keys/upload_public" % short,
             "/%s/upload/0/secret_output" % short, "/%s/download/../upload/0/secret_output" % short,
             "/%s/config.xml" % short, "/%s/../config.xml" % short,
             "/%s_cgi/../config.xml" % short, "/%s_ops/.htpasswd" % short,
             "/%s/../%s.httpd.conf" % (short, short)]
    for path in paths:
        status, body = _raw_get(apache.port, path)
        assert status in (400, 403, 404), (path, status)
        assert key_text not in body and b"SECRET" not in body and b"db_passwd" not in body


def test_ops_pages_need_the_password(apache):
    p = apache.project
    with open(p.path("html/ops/index.html"), "w") as f:
        f.write("<html>ops</html>\n")
    status, headers, _ = _get(apache.ops_url)
    assert status == 401 and "Basic" in headers["WWW-Authenticate"]

    def auth(user, passwd):
        token = base64.b64encode(("%s:%s" % (user, passwd)).encode()).decode()
        return {"Authorization": "Basic " + token}

    assert _get(apache.ops_url, auth(apache.ops_user, "wrong"))[0] == 401
    # (the directory URL itself serves html/ops/index.php, the ops landing page)
    status, _, body = _get(apache.ops_url + "index.html", auth(apache.ops_user, apache.ops_passwd))
    assert status == 200 and body == b"<html>ops</html>\n"
    status, _, body = _get(apache.ops_url, auth(apache.ops_user, apache.ops_passwd))
    assert status == 200 and b"Project Management" in body
    # .php pages there are Python CGIs (the ops pages engineer's)
    page = p.path("html/ops", "probe_test.php")
    with open(page, "w") as f:
        f.write("#!%s\nimport os\nprint('Content-type: text/plain')\nprint()\n"
                "print(os.environ['BOINC_PROJECT_DIR'], os.environ.get('REMOTE_USER'))\n"
                % sys.executable)
    os.chmod(page, 0o755)
    assert _get(apache.ops_url + "probe_test.php")[0] == 401
    status, _, body = _get(apache.ops_url + "probe_test.php",
                           auth(apache.ops_user, apache.ops_passwd))
    assert status == 200 and body.decode().split() == [p.root, apache.ops_user]


def test_stop_frees_the_port(apache):
    assert apache.server.running()
    pid = apache.server.pid()
    assert apache.stop() is True
    assert not apache.server.running()
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", apache.port), timeout=1).close()
    assert not os.path.exists(apache.server.pid_file)
    assert apache.stop() is False
    assert _gone(pid)


def _gone(pid):
    import psutil
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_command_line_start_status_stop(made_project):
    cmd = [sys.executable, "-m", "boincpy.tools.httpd"]
    root = made_project.root
    # the port comes from the master URL
    proc = subprocess.run(cmd + ["start", root], capture_output=True, text=True)
    try:
        assert proc.returncode == 0, proc.stderr
        assert "127.0.0.1:%d" % made_project.port in proc.stdout
        assert subprocess.run(cmd + ["status", root], capture_output=True).returncode == 0
        again = subprocess.run(cmd + ["start", root], capture_output=True, text=True)
        assert again.returncode == 1 and "already running" in again.stderr
        assert _get(made_project.master_url)[0] == 200
    finally:
        stop = subprocess.run(cmd + ["stop", root], capture_output=True, text=True)
    assert stop.returncode == 0 and "stopped" in stop.stdout
    assert subprocess.run(cmd + ["status", root], capture_output=True).returncode == 3


def test_start_failure_is_reported(made_project):
    # Something else holds the port: Apache can't bind, start says so.
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", made_project.port))
        s.listen(1)
        server = PrivateApache(made_project.root, made_project.port)
        with pytest.raises(Exception, match="(?is)apache.*(Address already in use|could not bind)"):
            server.start(timeout=5)
    assert not server.running()
