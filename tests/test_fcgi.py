"""boincpy.fcgi: the FastCGI responder of the persistent mode, spoken to
record by record as a web server would (its use behind mod_proxy_fcgi is covered by
test_persistent and the Apache tests run in both modes)."""

import os
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest

from boincpy import fcgi

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def begin(rid, keep=False, role=fcgi.RESPONDER):
    return fcgi.record(fcgi.BEGIN_REQUEST, rid, fcgi.BEGIN_BODY.pack(role, int(keep)))


def request_records(rid, environ, body, keep=False, stdin_chunk=1000):
    params = fcgi.write_pairs({k.encode(): v.encode() for k, v in environ.items()})
    out = begin(rid, keep) + fcgi.record(fcgi.PARAMS, rid, params) + fcgi.record(fcgi.PARAMS, rid)
    for i in range(0, len(body), stdin_chunk):
        out += fcgi.record(fcgi.STDIN, rid, body[i:i + stdin_chunk])
    return out + fcgi.record(fcgi.STDIN, rid)


def replies(sock):
    """Every record the responder sent until it closed the connection."""
    reader = fcgi._Reader(sock)
    got = []
    while True:
        rec = reader.next()
        if rec is None:
            return got
        got.append(rec)


def stdout_of(records, rid):
    return b"".join(c for kind, r, c in records if kind == fcgi.STDOUT and r == rid)


def ends(records):
    return [(r, fcgi.END_BODY.unpack(c)[1]) for kind, r, c in records
            if kind == fcgi.END_REQUEST]


def served(data, respond):
    """The records answering ``data`` (sent by the web server side, which
    then closes its writing half)."""
    web, app = socket.socketpair()
    thread = threading.Thread(target=lambda: (fcgi.serve_connection(app, respond), app.close()))
    thread.start()
    web.sendall(data)
    web.shutdown(socket.SHUT_WR)
    got = replies(web)
    thread.join(10)
    web.close()
    return got


def test_a_request_reaches_the_application_and_its_output_comes_back():
    seen = {}

    def respond(environ, stream):
        seen["environ"] = environ
        seen["body"] = stream.read(int(environ["CONTENT_LENGTH"]))
        return b"Content-type: text/plain\n\n" + b"y" * 150000
    body = bytes(range(256)) * 300                      # 76,800 bytes in 77 records
    long_value = "v" * 300                              # a four-byte length
    got = served(request_records(7, {"SCRIPT_NAME": "/p_cgi/cgi", "CONTENT_LENGTH": str(len(body)),
                                     "HTTP_X_LONG": long_value}, body), respond)
    assert seen["body"] == body
    assert seen["environ"]["SCRIPT_NAME"] == "/p_cgi/cgi"
    assert seen["environ"]["HTTP_X_LONG"] == long_value
    assert stdout_of(got, 7) == b"Content-type: text/plain\n\n" + b"y" * 150000
    # STDOUT in records of at most 65,535 bytes, closed by an empty one, then the end
    sizes = [len(c) for kind, _, c in got if kind == fcgi.STDOUT]
    assert max(sizes) <= fcgi.MAX_CONTENT and sizes[-1] == 0
    assert got[-1][0] == fcgi.END_REQUEST and ends(got) == [(7, fcgi.REQUEST_COMPLETE)]


def test_what_the_application_leaves_unread_is_drained_and_kept_connections_serve_again():
    calls = []

    def respond(environ, stream):
        calls.append(stream.read(10))           # reads 10 of the body, no more
        return b"Status: 200 OK\n\nreply %d" % len(calls)
    data = (request_records(1, {"A": "1"}, b"x" * 5000, keep=True)
            + request_records(2, {"A": "2"}, b"z" * 20, keep=True))
    got = served(data, respond)
    assert calls == [b"x" * 10, b"z" * 10]
    assert stdout_of(got, 1) == b"Status: 200 OK\n\nreply 1"
    assert stdout_of(got, 2) == b"Status: 200 OK\n\nreply 2"
    assert ends(got) == [(1, fcgi.REQUEST_COMPLETE), (2, fcgi.REQUEST_COMPLETE)]


def test_a_body_larger_than_the_socket_buffers_is_read_to_its_end_before_the_reply():
    """A web server writes the whole body before it reads the reply: a
    process that replied and hung up early would cut its write short."""
    body = b"u" * (8 << 20)
    web, app = socket.socketpair()
    thread = threading.Thread(target=lambda: (fcgi.serve_connection(
        app, lambda e, s: b"\n\nrefused unread"), app.close()))
    thread.start()
    web.sendall(request_records(1, {"A": "1"}, body, stdin_chunk=65535))   # raises if cut
    got = replies(web)
    thread.join(10)
    web.close()
    assert stdout_of(got, 1) == b"\n\nrefused unread"
    assert ends(got) == [(1, fcgi.REQUEST_COMPLETE)]


def test_management_records_other_roles_and_a_second_request_are_answered():
    def respond(environ, stream):
        return b"\n\nok"
    wanted = fcgi.write_pairs({b"FCGI_MAX_CONNS": b"", b"FCGI_MPXS_CONNS": b"", b"OTHER": b""})
    data = (fcgi.record(fcgi.GET_VALUES, 0, wanted)
            + fcgi.record(42, 0, b"")                               # a type unknown
            + begin(3, role=2)                                      # an authorizer: not us
            + begin(4) + fcgi.record(fcgi.PARAMS, 4)
            + begin(5)                                              # while 4 is going on
            + fcgi.record(fcgi.STDIN, 4))
    got = served(data, respond)
    values = [fcgi.read_pairs(c) for kind, r, c in got if kind == fcgi.GET_VALUES_RESULT]
    assert values == [{b"FCGI_MAX_CONNS": b"1", b"FCGI_MPXS_CONNS": b"0"}]
    assert [c[0] for kind, r, c in got if kind == fcgi.UNKNOWN_TYPE] == [42]
    assert ends(got) == [(3, fcgi.UNKNOWN_ROLE), (5, fcgi.CANT_MPX_CONN),
                         (4, fcgi.REQUEST_COMPLETE)]
    assert stdout_of(got, 4) == b"\n\nok"


def test_a_failing_application_gets_its_client_a_500_and_the_connection_goes_on(capsys):
    def respond(environ, stream):
        if environ["A"] == "1":
            raise KeyError("no such thing")
        return b"\n\nfine"
    data = (request_records(1, {"A": "1", "SCRIPT_NAME": "/p/cgi"}, b"x", keep=True)
            + request_records(2, {"A": "2"}, b"", keep=True))
    got = served(data, respond)
    assert stdout_of(got, 1).startswith(b"Status: 500 Internal Server Error")
    assert stdout_of(got, 2) == b"\n\nfine"
    err = capsys.readouterr().err
    assert "fcgi: /p/cgi failed:" in err and "KeyError: 'no such thing'" in err


def test_an_aborted_request_ends_without_calling_the_application():
    calls = []
    data = (begin(9) + fcgi.record(fcgi.PARAMS, 9, fcgi.write_pairs({b"A": b"1"}))
            + fcgi.record(fcgi.ABORT_REQUEST, 9))
    got = served(data, lambda e, s: calls.append(e) or b"")
    assert calls == [] and ends(got) == [(9, fcgi.REQUEST_COMPLETE)]
    assert stdout_of(got, 9) == b""


@pytest.mark.parametrize("data, why", [
    (fcgi.HEADER.pack(2, fcgi.BEGIN_REQUEST, 1, 8, 0) + bytes(8), "FastCGI version 2"),
    (begin(1) + fcgi.record(fcgi.PARAMS, 1, b"\x05\x01ab") + fcgi.record(fcgi.PARAMS, 1),
     "name-value pair cut short"),
    (begin(1) + fcgi.record(fcgi.STDIN, 1, b"body"), "STDIN before the end of PARAMS"),
    (begin(1) + fcgi.record(fcgi.PARAMS, 1, b"\x01\x01ab"), "connection closed inside a request"),
    (begin(1)[:12], "connection closed inside a record"),
])
def test_a_malformed_conversation_is_named_and_the_application_never_called(data, why):
    web, app = socket.socketpair()
    web.sendall(data)
    web.shutdown(socket.SHUT_WR)
    calls = []
    with pytest.raises(fcgi.ProtocolError) as err:
        fcgi.serve_connection(app, lambda e, s: calls.append(e) or b"")
    assert why in str(err.value) and calls == []
    web.close()
    app.close()


SERVER = r"""
import socket, sys, time
sys.path.insert(0, %(repo)r)
from boincpy import fcgi
listener = socket.socket(socket.AF_UNIX)
listener.bind(%(path)r)
listener.listen(5)
def respond(environ, stream):
    time.sleep(float(environ.get("SLEEP", "0")))
    return b"\n\nslept " + environ.get("SLEEP", "0").encode()
print("ready", flush=True)
fcgi.run(respond, listener)
print("stopped", flush=True)
"""


def _ask(path, sleep):
    sock = socket.socket(socket.AF_UNIX)
    sock.connect(path)
    sock.sendall(request_records(1, {"SLEEP": sleep}, b""))
    got = replies(sock)
    sock.close()
    return got


def test_sigterm_ends_an_idle_process_at_once_and_a_busy_one_after_its_reply(tmp_path):
    path = str(tmp_path / "sock")
    proc = subprocess.Popen([sys.executable, "-c", SERVER % {"repo": REPO, "path": path}],
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline() == "ready\n"
        assert stdout_of(_ask(path, "0"), 1) == b"\n\nslept 0"
        # SIGTERM in the middle of a request: the reply is whole, then the process ends
        got = {}
        asking = threading.Thread(target=lambda: got.update(r=_ask(path, "1.0")))
        asking.start()
        time.sleep(0.4)
        proc.send_signal(signal.SIGTERM)
        asking.join(10)
        assert stdout_of(got["r"], 1) == b"\n\nslept 1.0"
        assert ends(got["r"]) == [(1, fcgi.REQUEST_COMPLETE)]
        assert proc.wait(10) == 0 and proc.stdout.read() == "stopped\n"
        # idle: at once
        proc = subprocess.Popen([sys.executable, "-c", SERVER % {"repo": REPO, "path": path + "2"}],
                                stdout=subprocess.PIPE, text=True)
        assert proc.stdout.readline() == "ready\n"
        # "ready" comes before fcgi.run installs its handler: one answered request
        # proves the process is inside run, idle in accept
        assert stdout_of(_ask(path + "2", "0"), 1) == b"\n\nslept 0"
        t = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(10) == 0 and time.monotonic() - t < 2
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_a_connection_closed_inside_the_body_is_its_end_for_the_application():
    """What mod_proxy_fcgi does when its client goes away in the middle of an
    upload: the application gets the bytes that came, then EOF (as a CGI's
    stdin), and no reply is written to the closed connection."""
    seen = {}

    def respond(environ, stream):
        data = b""
        while True:
            block = stream.read(5000)
            if not block:
                break
            data += block
        seen["body"] = data
        return b"Content-type: text/plain\n\nEOF after %d bytes" % len(data)
    body = b"u" * 12000
    records = request_records(3, {"CONTENT_LENGTH": "100000"}, body)
    cut = records[:-len(fcgi.record(fcgi.STDIN, 3))]       # no end of STDIN: closed there
    web, app = socket.socketpair()
    web.sendall(cut)
    web.shutdown(socket.SHUT_WR)
    with pytest.raises(fcgi.ConnectionClosed):
        fcgi.serve_connection(app, respond)
    assert seen["body"] == body
    app.close()
    assert replies(web) == []
    web.close()


def test_name_value_pairs_short_and_long_and_cut_anywhere():
    """Lengths below 128 take one byte, longer ones four; a block cut at a
    pair's end is the pairs before it, cut anywhere else it is named."""
    pairs = {b"A": b"1", b"EMPTY": b"", b"N" * 127: b"v" * 128, b"L" * 300: b"x",
             b"": b"no name", b"HTTP_USER_AGENT": b"BOINC client (x86_64-pc-linux-gnu 7.20.5)"}
    data = fcgi.write_pairs(pairs)
    assert fcgi.read_pairs(data) == pairs
    ends_at = {}
    for k in range(1, len(pairs) + 1):
        ends_at[len(fcgi.write_pairs(dict(list(pairs.items())[:k])))] = k
    for cut in range(len(data)):
        if cut in ends_at or cut == 0:
            assert fcgi.read_pairs(data[:cut]) == dict(list(pairs.items())[:ends_at.get(cut, 0)])
        else:
            with pytest.raises(fcgi.ProtocolError, match="cut short"):
                fcgi.read_pairs(data[:cut])


class _Trickle:
    """A connection whose recv gives ``step`` bytes at a time."""

    def __init__(self, data, step):
        self.data, self.step, self.sent = data, step, b""

    def recv(self, n):
        chunk, self.data = self.data[:min(n, self.step)], self.data[min(n, self.step):]
        return chunk

    def sendall(self, data):
        self.sent += data


@pytest.mark.parametrize("step", [1, 7, 8, 4096, 1 << 20])
def test_records_split_anywhere_by_the_connection_read_the_same(step):
    """However the bytes of a keep-alive connection's two requests arrive,
    the application sees the same environments and bodies and the replies
    are the same records."""
    body = bytes(range(256)) * 300                      # records of 1000 bytes
    data = (request_records(1, {"SCRIPT_NAME": "/x/cgi", "CONTENT_LENGTH": str(len(body))},
                            body, keep=True)
            + request_records(2, {"SCRIPT_NAME": "/x/two", "Q": "z" * 200}, b"second"))
    seen = []

    def respond(environ, stream):
        seen.append((environ, stream.read()))
        return b"Content-type: text/plain\n\n" + environ["SCRIPT_NAME"].encode()

    conn = _Trickle(data, step)
    fcgi.serve_connection(conn, respond)
    assert seen == [({"SCRIPT_NAME": "/x/cgi", "CONTENT_LENGTH": str(len(body))}, body),
                    ({"SCRIPT_NAME": "/x/two", "Q": "z" * 200}, b"second")]
    back = replies(_Trickle(conn.sent, step))
    assert stdout_of(back, 1).endswith(b"/x/cgi") and stdout_of(back, 2).endswith(b"/x/two")
    assert ends(back) == [(1, fcgi.REQUEST_COMPLETE), (2, fcgi.REQUEST_COMPLETE)]
