"""The data server (file_upload_handler) protocol, in-process and as a CGI."""

import hashlib
import io
import os
import subprocess
import sys

import pytest

from boincpy import upload
from boincpy.config import load_config
from boincpy.files import dir_hier_path
from boincpy.log import MessageLog

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture
def project(mini_project):
    from boincpy import crypto
    priv, pub = crypto.generate_key_pair()
    (mini_project / "keys" / "upload_private").write_text(priv)
    (mini_project / "keys" / "upload_public").write_text(pub)
    return mini_project


def _cfg(project, **overrides):
    cfg = load_config(str(project))
    cfg.__dict__.update(overrides)
    return cfg


def _certificate(project, name, max_nbytes):
    from boincpy import crypto
    key = crypto.read_key(str(project / "keys" / "upload_private"))
    return crypto.sign_upload_certificate(name, max_nbytes, key).strip()


def _body(name, data, sig, max_nbytes=5000000, nbytes=None, offset=0):
    nbytes = len(data) + offset if nbytes is None else nbytes
    head = ("<data_server_request>\n    <core_client_major_version>7</core_client_major_version>\n"
            "    <core_client_minor_version>20</core_client_minor_version>\n"
            "    <core_client_release>5</core_client_release>\n<file_upload>\n<file_info>\n"
            "<name>%s</name>\n<xml_signature>\n%s</xml_signature>\n"
            "<max_nbytes>%d</max_nbytes>\n</file_info>\n<nbytes>%d</nbytes>\n"
            "<md5_cksum>%s</md5_cksum>\n<offset>%d</offset>\n<data>\n"
            % (name, sig, max_nbytes, nbytes, hashlib.md5(data).hexdigest(), offset))
    return head.encode() + data


def _size_query(name):
    return ("<data_server_request>\n    <core_client_major_version>7</core_client_major_version>\n"
            "    <get_file_size>%s</get_file_size>\n</data_server_request>\n" % name).encode()


def _serve(cfg, body, length=None):
    log = MessageLog(io.StringIO(), 3)
    return upload.handle_request(cfg, io.BytesIO(body),
                                 len(body) if length is None else length, log)


def _status(reply):
    return int(reply.split("<status>")[1].split("<")[0])


def test_signed_upload_is_stored_in_fanout_dir(project):
    cfg = _cfg(project)
    name = "wu_1_0_r123_0"
    data = b"RESULT DATA\n" * 1000
    reply = _serve(cfg, _body(name, data, _certificate(project, name, 5000000)))
    assert reply.startswith("Content-type: text/plain\n\n<data_server_reply>\n")
    assert _status(reply) == 0, reply
    path = dir_hier_path(cfg.upload_dir, name, cfg.uldl_dir_fanout)
    assert open(path, "rb").read() == data
    assert os.stat(path).st_mode & 0o777 == 0o664


def test_forged_or_missing_certificate_is_rejected_and_nothing_written(project):
    cfg = _cfg(project)
    name = "wu_2_0_r9_0"
    other = _certificate(project, "someone_elses_file", 5000000)
    for sig, words in ((other, "invalid signature"), ("", "missing signature")):
        reply = _serve(cfg, _body(name, b"x" * 10, sig))
        assert _status(reply) == -1 and words in reply
    # a certificate for a smaller limit does not cover a bigger max_nbytes
    small = _certificate(project, name, 10)
    reply = _serve(cfg, _body(name, b"x" * 10, small, max_nbytes=5000000))
    assert _status(reply) == -1 and "invalid signature" in reply
    assert not os.listdir(cfg.upload_dir) or not any(
        files for _, _, files in os.walk(cfg.upload_dir))


def test_oversized_upload_is_refused(project):
    cfg = _cfg(project)
    name = "wu_3_0_r1_0"
    reply = _serve(cfg, _body(name, b"y" * 2048, _certificate(project, name, 1024),
                              max_nbytes=1024))
    assert _status(reply) == -1 and "exceeds limit" in reply


def test_truncated_upload_keeps_nothing_under_the_name_and_resumes(project):
    cfg = _cfg(project)
    name = "wu_4_0_r1_0"
    sig = _certificate(project, name, 5000000)
    full = bytes(range(256)) * 40
    body = _body(name, full, sig)
    cut = body[:len(body) - len(full) + 4000]           # only 4000 bytes of data arrive
    reply = _serve(cfg, cut, length=len(body))
    assert _status(reply) == 1 and "EOF on socket read" in reply
    path = dir_hier_path(cfg.upload_dir, name, cfg.uldl_dir_fanout)
    assert not os.path.exists(path)
    reply = _serve(cfg, _size_query(name))
    assert _status(reply) == 0 and "<file_size>4000</file_size>" in reply
    reply = _serve(cfg, _body(name, full[4000:], sig, nbytes=len(full), offset=4000))
    assert _status(reply) == 0, reply
    assert open(path, "rb").read() == full
    reply = _serve(cfg, _size_query(name))
    assert "<file_size>%d</file_size>" % len(full) in reply


def test_bad_names_and_requests(project):
    cfg = _cfg(project)
    # ".x.part": another upload's bytes in progress (files.check_file_name's rule)
    for name in ("../escape", "a/b", "x\x01y", ".x.part", "a..b"):
        sig = _certificate(project, name, 5000000)
        reply = _serve(cfg, _body(name, b"z", sig))
        assert _status(reply) == -1, (name, reply)
    assert _status(_serve(cfg, _size_query("../../etc/passwd"))) == -1
    assert _status(_serve(cfg, _size_query(".x.part"))) == -1
    reply = _serve(cfg, b"<data_server_request>\n</data_server_request>\n")
    assert _status(reply) == 1 and "no command" in reply
    reply = _serve(cfg, _size_query("never_uploaded"))
    assert _status(reply) == 0 and "<file_size>0</file_size>" in reply
    walked = [f for _, _, files in os.walk(cfg.upload_dir) for f in files]
    assert walked == []


def test_stalled_upload_does_not_truncate_a_file_another_upload_completed(project, monkeypatch):
    """Bug found while building the fault test: a handler stalled between
    opening NAME.part and locking it; meanwhile the client's retry uploaded
    the whole file and renamed NAME.part to NAME.  The stalled handler then
    took the lock on what had become NAME, cut it to its offset and wrote
    what it still had -- corrupting a complete output.  A handler that gets
    its lock on a file no longer named NAME.part must leave it alone."""
    cfg = _cfg(project)
    name = "wu_9_0_r5_0"
    data = b"COMPLETE OUTPUT\n" * 50
    sig = _certificate(project, name, 5000000)
    stalled = _body(name, data, sig)[:-len(data) + 10]      # the client gave up on it
    lockf = upload.fcntl.lockf
    retried = []

    def lock_meanwhile(fd, flags, *args):
        if not retried:
            retried.append(None)
            retried[0] = _serve(cfg, _body(name, data, sig))   # the retry, in full
        return lockf(fd, flags, *args)

    monkeypatch.setattr(upload.fcntl, "lockf", lock_meanwhile)
    reply = _serve(cfg, stalled, length=len(_body(name, data, sig)))
    assert _status(retried[0]) == 0
    assert _status(reply) == 1                      # transient: the client may ask again
    path = dir_hier_path(cfg.upload_dir, name, cfg.uldl_dir_fanout)
    assert open(path, "rb").read() == data
    assert sorted(os.listdir(os.path.dirname(path))) == [name]


def test_stop_upload_trigger(project):
    cfg = _cfg(project)
    (project / "stop_upload").write_text("")
    reply = _serve(cfg, _size_query("a"))
    assert _status(reply) == 1 and "temporarily disabled" in reply


def test_ignore_upload_certificates_accepts_unsigned(project):
    cfg = _cfg(project, ignore_upload_certificates=True)
    reply = _serve(cfg, _body("plain_0", b"abc", ""))
    assert _status(reply) == 0


def test_cgi_script_end_to_end(project):
    name = "wu_5_0_r7_0"
    body = _body(name, b"hello", _certificate(project, name, 5000000))
    env = dict(os.environ, CONTENT_LENGTH=str(len(body)), REQUEST_METHOD="POST",
               PYTHONPATH=REPO)
    r = subprocess.run([sys.executable, os.path.join(REPO, "cgi-bin", "file_upload_handler")],
                       input=body, cwd=str(project / "cgi-bin"), env=env, capture_output=True)
    assert r.returncode == 0, r.stderr
    assert b"<status>0</status>" in r.stdout
    cfg = _cfg(project)
    assert open(dir_hier_path(cfg.upload_dir, name, 1024), "rb").read() == b"hello"
    log = open(os.path.join(cfg.host_log_dir, "file_upload_handler.log")).read()
    assert "[normal]" in log and name in log
