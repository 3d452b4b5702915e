"""A FastCGI responder for the persistent mode's workers (boincpy.fcgi_pool),
to which Apache's mod_proxy_fcgi sends requests.

A worker accepts a connection on the project's socket, reads the request's
records (BEGIN_REQUEST, PARAMS, STDIN), calls
:meth:`boincpy.persistent.Application.respond` with the CGI environment and
the body (read from the STDIN records as the application asks, so an upload
is written as it arrives), and writes the CGI output back as STDOUT records
and END_REQUEST.  Requests are served one at a time, as a job array slot
reserved for this process id demands (see :mod:`boincpy.persistent`).  A
connection the web server closes inside the body (its client went away) is
the body's end for the application, as a CGI's stdin would be.

SIGTERM (the master's stop) ends the process at once when it waits for a
connection, and after the reply when a request is in flight, so a reply is
never cut short by it."""

import io
import signal
import struct
import sys

from boincpy.errors import BoincpyError

VERSION = 1
BEGIN_REQUEST = 1
ABORT_REQUEST = 2
END_REQUEST = 3
PARAMS = 4
STDIN = 5
STDOUT = 6
GET_VALUES = 9
GET_VALUES_RESULT = 10
UNKNOWN_TYPE = 11

RESPONDER = 1
KEEP_CONN = 1
REQUEST_COMPLETE = 0
CANT_MPX_CONN = 1
UNKNOWN_ROLE = 3

MAX_CONTENT = 65535
HEADER = struct.Struct("!BBHHBx")
END_BODY = struct.Struct("!IB3x")
BEGIN_BODY = struct.Struct("!HB5x")
# what a web server may ask with GET_VALUES: one request at a time
LIMITS = {b"FCGI_MAX_CONNS": b"1", b"FCGI_MAX_REQS": b"1", b"FCGI_MPXS_CONNS": b"0"}
INTERNAL_ERROR = (b"Status: 500 Internal Server Error\r\nContent-Type: text/plain\r\n\r\n"
                  b"internal server error\n")
NOT_FOUND = b"Status: 404 Not Found\r\nContent-Type: text/plain\r\n\r\nnot found\n"


class ProtocolError(BoincpyError):
    """The web server sent what FastCGI does not allow; the connection is dropped."""


class ConnectionClosed(ProtocolError):
    """The web server closed the connection inside a request (its client went
    away in the middle of the body)."""


def read_pairs(data):
    """FastCGI name-value pairs (bytes) -> {name: value}, both bytes."""
    # a request's thirty-odd CGI variables go through here: the two lengths
    # read inline (one byte each below 128, else four)
    pairs = {}
    pos, end = 0, len(data)
    while pos < end:
        name_len = data[pos]
        if name_len < 128:
            pos += 1
        elif pos + 4 <= end:
            name_len = int.from_bytes(data[pos:pos + 4], "big") & 0x7FFFFFFF
            pos += 4
        else:
            raise ProtocolError("name-value pair cut short")
        if pos >= end:
            raise ProtocolError("name-value pair cut short")
        value_len = data[pos]
        if value_len < 128:
            pos += 1
        elif pos + 4 <= end:
            value_len = int.from_bytes(data[pos:pos + 4], "big") & 0x7FFFFFFF
            pos += 4
        else:
            raise ProtocolError("name-value pair cut short")
        stop = pos + name_len + value_len
        if stop > end:
            raise ProtocolError("name-value pair cut short")
        pairs[data[pos:pos + name_len]] = data[pos + name_len:stop]
        pos = stop
    return pairs


def write_pairs(pairs):
    """{name: value} (bytes) -> FastCGI name-value pairs."""
    out = bytearray()
    for name, value in pairs.items():
        for n in (len(name), len(value)):
            out += bytes((n,)) if n < 128 else (n | 0x80000000).to_bytes(4, "big")
        out += name + value
    return bytes(out)


def record(kind, request_id, content=b""):
    """One record (content at most 65,535 bytes), padded to 8 bytes."""
    pad = -len(content) % 8
    return HEADER.pack(VERSION, kind, request_id, len(content), pad) + content + b"\0" * pad


def stream_records(kind, request_id, data):
    """``data`` as records of ``kind``, closed by an empty one."""
    parts = [record(kind, request_id, data[i:i + MAX_CONTENT])
             for i in range(0, len(data), MAX_CONTENT)]
    parts.append(record(kind, request_id))
    return b"".join(parts)


class _Reader:
    """Records from a connected socket."""

    def __init__(self, sock):
        self.sock = sock
        self.buf = b""
        self.pos = 0            # where the unread part of buf starts

    def _fill(self, n):
        """At least ``n`` unread bytes in buf (False if the connection ends
        first).  What was read is dropped only here, not record by record:
        a request's records mostly come in one recv."""
        buf, pos = self.buf, self.pos
        if pos:
            buf = buf[pos:]
            self.pos = 0
        while len(buf) < n:
            chunk = self.sock.recv(max(65536, n - len(buf)))
            if not chunk:
                self.buf = buf
                return False
            buf += chunk
        self.buf = buf
        return True

    def next(self):
        """(type, request id, content), or None where the connection ends
        between records."""
        if len(self.buf) - self.pos < HEADER.size and not self._fill(HEADER.size):
            return None
        version, kind, request_id, length, pad = HEADER.unpack_from(self.buf, self.pos)
        if version != VERSION:
            raise ProtocolError("FastCGI version %d" % version)
        need = HEADER.size + length + pad
        if len(self.buf) - self.pos < need and not self._fill(need):
            raise ProtocolError("connection closed inside a record")
        start = self.pos + HEADER.size
        self.pos += need
        return kind, request_id, self.buf[start:start + length]

    def next_of(self, request_id):
        """The next record of ``request_id`` as (type, content); management
        records are answered and records of other requests answered or
        ignored on the way (this process serves one request at a time)."""
        while True:
            rec = self.next()
            if rec is None:
                raise ConnectionClosed("connection closed inside a request")
            kind, rid, content = rec
            if rid == request_id:
                return kind, content
            _answer_other(self.sock, kind, rid, content)


def _answer_other(sock, kind, rid, content):
    if rid == 0:
        if kind == GET_VALUES:
            wanted = read_pairs(content)
            sock.sendall(record(GET_VALUES_RESULT, 0, write_pairs(
                {k: v for k, v in LIMITS.items() if k in wanted})))
        else:
            sock.sendall(record(UNKNOWN_TYPE, 0, bytes((kind,)) + bytes(7)))
    elif kind == BEGIN_REQUEST:
        sock.sendall(record(END_REQUEST, rid, END_BODY.pack(0, CANT_MPX_CONN)))
    # anything else of a request not in progress is ignored, as FastCGI says


class _Stdin(io.RawIOBase):
    """The request body, read from the STDIN records as the application
    asks for it (an upload is never held in memory whole)."""

    def __init__(self, reader, request_id):
        self.reader = reader
        self.request_id = request_id
        self.pending = b""
        self.ended = False
        self.aborted = False
        self.lost = False       # the web server closed the connection

    def _next(self):
        # the body's next record; a connection closed inside the body is its
        # end for the application (what a CGI's stdin gives when the client
        # goes away), so an upload writes what arrived and says EOF as a CGI
        try:
            return self.reader.next_of(self.request_id)
        except ConnectionClosed:
            self.lost = True
            return ABORT_REQUEST, b""

    def readable(self):
        return True

    def readinto(self, buffer):
        while not self.pending and not self.ended:
            kind, content = self._next()
            if kind == STDIN:
                self.pending = content
                self.ended = not content
            elif kind == ABORT_REQUEST:
                self.ended = self.aborted = True
        n = min(len(buffer), len(self.pending))
        buffer[:n] = self.pending[:n]
        self.pending = self.pending[n:]
        return n

    def drain(self):
        """Read what the application left unread, up to the end of STDIN
        (the web server writes all of it before it reads the reply)."""
        self.pending = b""
        while not self.ended:
            kind, content = self._next()
            if kind == STDIN:
                self.ended = not content
            elif kind == ABORT_REQUEST:
                self.ended = self.aborted = True


def _begin(reader):
    """The next BEGIN_REQUEST as (request id, keep the connection), or None
    where the web server closed the connection."""
    while True:
        rec = reader.next()
        if rec is None:
            return None
        kind, rid, content = rec
        if kind == BEGIN_REQUEST and rid:
            if len(content) < BEGIN_BODY.size:
                raise ProtocolError("BEGIN_REQUEST of %d bytes" % len(content))
            role, flags = BEGIN_BODY.unpack_from(content)
            if role == RESPONDER:
                return rid, bool(flags & KEEP_CONN)
            reader.sock.sendall(record(END_REQUEST, rid, END_BODY.pack(0, UNKNOWN_ROLE)))
            continue
        _answer_other(reader.sock, kind, rid, content)


def _params(reader, rid):
    """The request's CGI environment, or None if the web server aborted it."""
    params = bytearray()
    while True:
        kind, content = reader.next_of(rid)
        if kind == PARAMS:
            if not content:
                return {k.decode("latin-1"): v.decode("latin-1")
                        for k, v in read_pairs(bytes(params)).items()}
            params += content
        elif kind == ABORT_REQUEST:
            return None
        elif kind == STDIN:
            raise ProtocolError("STDIN before the end of PARAMS")


def serve_connection(sock, respond):
    """Serve the requests of one connection; ``respond(environ, stream)``
    returns the CGI output (bytes).  Returns when the web server closes the
    connection, or after a request begun without FCGI_KEEP_CONN."""
    reader = _Reader(sock)
    while True:
        started = _begin(reader)
        if started is None:
            return
        rid, keep = started
        environ = _params(reader, rid)
        reply = b""
        if environ is not None:         # None: aborted before it began
            stdin = _Stdin(reader, rid)
            try:
                out = respond(environ, io.BufferedReader(stdin, 65536))
            except ProtocolError:
                raise
            except Exception as exc:
                # a fault of the application: the web server's error log gets
                # the traceback (one line for a lost database), the client a
                # 500, and the process lives on
                from boincpy.log import failure_text
                script = environ.get("SCRIPT_NAME", "?")
                sys.stderr.write("fcgi: %s\n" % failure_text(exc, "%s failed" % script, script))
                sys.stderr.flush()
                out = INTERNAL_ERROR
            stdin.drain()
            if stdin.lost:
                raise ConnectionClosed("connection closed inside the request's body")
            reply = stream_records(STDOUT, rid, out)
        sock.sendall(reply + record(END_REQUEST, rid, END_BODY.pack(0, REQUEST_COMPLETE)))
        if not keep:
            return


class _Stop:
    """SIGTERM: exit now when idle, after the reply when busy."""

    def __init__(self):
        self.busy = False
        self.wanted = False

    def __call__(self, signum, frame):
        self.wanted = True
        if not self.busy:
            raise SystemExit(0)


def run(respond, listener):
    """Accept connections on ``listener`` and serve them one at a time, until
    SIGTERM.  A broken connection is named on stderr (the workers' log)."""
    stop = _Stop()
    signal.signal(signal.SIGTERM, stop)
    while not stop.wanted:
        conn, _ = listener.accept()
        stop.busy = True
        try:
            serve_connection(conn, respond)
        except (OSError, ProtocolError) as exc:
            sys.stderr.write("fcgi: connection dropped: %s\n" % exc)
            sys.stderr.flush()
        finally:
            conn.close()
            stop.busy = False
