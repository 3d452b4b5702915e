"""A small client of the MySQL/MariaDB client/server protocol, for the scheduler CGI.

A classic CGI is a new process per request, and ``import MySQLdb._mysql``
alone costs it ~3 ms (the C extension, libmariadb, libssl and libcrypto are
loaded and relocated); even the standard library's ``socket`` module costs
more (it imports ``enum`` and ``selectors``).  This module speaks the
protocol itself over the builtin ``_socket`` and ``_sha1`` modules, which
cost almost nothing to import.

It is the subset of ``MySQLdb._mysql.connection`` that
:mod:`boincpy.db.lite` and :mod:`boincpy.db.connection` use: ``query``,
``store_result`` (``fetch_row(maxrows, how)``), ``affected_rows``,
``insert_id``, ``info``, ``string_literal``, ``ping``, ``commit``,
``rollback``, ``autocommit``, ``close`` and the ``converter`` table, with
the same value conversions (a field type maps to a function, or to
``(flag, function)`` pairs chosen by the field's flags; ``str`` decodes UTF-8;
no converter leaves bytes).  Only the text protocol (COM_QUERY), one result
per statement, ``mysql_native_password``, no TLS, no compression.  Whatever
else the server asks for (another authentication plugin, an old protocol)
raises :class:`Unsupported`, and the caller uses ``MySQLdb._mysql`` instead.

Errors are :class:`Error` with ``args`` of ``(code, message)`` as MySQLdb's:
the server's code and text, or libmariadb's client codes and sentences
(2002 can't connect, 2005 unknown host, 2006 server gone away, 2013 lost
connection during a query).
"""

import _socket
from _sha1 import sha1

from boincpy.errors import BoincpyError, DatabaseError
from boincpy.hot_path import getenv     # not os, on a classic CGI's path

# Capability flags (the protocol's CLIENT_* bits)
CLIENT_LONG_FLAG = 4
CLIENT_CONNECT_WITH_DB = 8
CLIENT_PROTOCOL_41 = 512
CLIENT_SSL = 2048
CLIENT_TRANSACTIONS = 8192
CLIENT_SECURE_CONNECTION = 32768
CLIENT_PLUGIN_AUTH = 1 << 19

# Server status flags (in the handshake, OK and EOF packets)
SERVER_STATUS_AUTOCOMMIT = 2
SERVER_STATUS_NO_BACKSLASH_ESCAPES = 512

COM_QUIT = 1
COM_QUERY = 3
COM_PING = 14

# libmariadb's client error codes and sentences
CR_CONNECTION_ERROR = 2002
CR_UNKNOWN_HOST = 2005
CR_SERVER_GONE_ERROR = 2006
CR_SERVER_HANDSHAKE_ERR = 2012
CR_SERVER_LOST = 2013
CR_MALFORMED_PACKET = 2027
_GONE = "Server has gone away"
_LOST = "Lost connection to server during query"

ER_ACCESS_DENIED_ERROR = 1045
ER_NOT_SUPPORTED_AUTH_MODE = 1251

# Collation ids the handshake can ask for, by character set name
# (utf8mb4_general_ci, as libmariadb sends for "utf8mb4").
CHARSETS = {"utf8mb4": 45}

DEFAULT_SOCKET = "/run/mysqld/mysqld.sock"     # Debian's libmariadb MARIADB_UNIX_ADDR
DEFAULT_PORT = 3306
MAX_PACKET = 0xFFFFFF          # a payload this long continues in the next packet
NATIVE_PASSWORD = b"mysql_native_password"
_RECV = 65536


class Error(DatabaseError):
    """A MySQL error; ``args`` is ``(code, message)`` as MySQLdb's exceptions."""

    def __init__(self, code, message):
        super().__init__(message)
        self.args = (code, message)
        self.code = code


class Unsupported(BoincpyError):
    """The server wants something this client does not do (another
    authentication plugin, TLS, an old protocol): use ``MySQLdb._mysql``."""


def connect(user, password="", database="", host=None, port=0, unix_socket=None,
            charset="utf8mb4", conv=None):
    """A :class:`Connection`, with ``MySQLdb._mysql.connect``'s keyword arguments
    (those :mod:`boincpy.db.lite` passes).  ``host`` None or "localhost" means
    the Unix socket (``unix_socket``, else $MYSQL_UNIX_PORT, else the client
    library's default), as with libmariadb.  Raises Error (server's or client's
    code) or Unsupported."""
    collation = CHARSETS.get(charset)
    if collation is None:
        raise Unsupported("character set %r" % charset)
    if host and host.startswith("["):
        raise Unsupported("bracketed host %s" % host)
    if not host or host == "localhost":
        path = unix_socket or getenv("MYSQL_UNIX_PORT") or DEFAULT_SOCKET
        sock = _unix_socket(path)
        tcp = False
    else:
        sock = _tcp_socket(host, port or int(getenv("MYSQL_TCP_PORT") or DEFAULT_PORT))
        tcp = True
    conn = Connection(sock, conv)
    try:
        conn._handshake(user, password, database, collation, tcp)
    except BaseException:
        conn._drop()
        raise
    return conn


def _unix_socket(path):
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        sock.connect(path)
    except OSError as exc:
        sock.close()
        raise Error(CR_CONNECTION_ERROR, "Can't connect to local server through socket "
                    "'%.64s' (%d)" % (path, exc.errno or 0)) from None
    return sock


def _tcp_socket(host, port):
    try:
        addresses = _socket.getaddrinfo(host, port, 0, _socket.SOCK_STREAM)
    except _socket.gaierror as exc:
        raise Error(CR_UNKNOWN_HOST, "Unknown server host '%.100s' (%d)"
                    % (host, exc.args[0])) from None
    errno = 0
    for family, kind, proto, _, address in addresses:
        sock = _socket.socket(family, kind, proto)
        try:
            sock.connect(address)
        except OSError as exc:
            sock.close()
            errno = exc.errno or 0
            continue
        # a request is many small round trips: don't let Nagle hold them back
        sock.setsockopt(_socket.IPPROTO_TCP, _socket.TCP_NODELAY, 1)
        return sock
    raise Error(CR_CONNECTION_ERROR, "Can't connect to server on '%.64s' (%d)"
                % (host, errno))


def native_password(password, scramble):
    """mysql_native_password's answer: SHA1(pw) XOR SHA1(scramble + SHA1(SHA1(pw)))."""
    if not password:
        return b""
    stage1 = sha1(password).digest()
    mask = sha1(scramble + sha1(stage1).digest()).digest()
    return (int.from_bytes(stage1, "big") ^ int.from_bytes(mask, "big")).to_bytes(20, "big")


def _lenenc(data, pos):
    """A length-encoded integer at ``pos``: (value, position after it)."""
    first = data[pos]
    if first < 251:
        return first, pos + 1
    if first == 252:
        return data[pos + 1] | data[pos + 2] << 8, pos + 3
    if first == 253:
        return int.from_bytes(data[pos + 1:pos + 4], "little"), pos + 4
    if first == 254:
        return int.from_bytes(data[pos + 1:pos + 9], "little"), pos + 9
    raise Error(CR_MALFORMED_PACKET, "Received malformed packet")


def _lenenc_bytes(data, pos):
    n, pos = _lenenc(data, pos)
    return data[pos:pos + n], pos + n


def _escape(data):
    """The server's backslash escaping of a string literal's bytes (what
    mysql_real_escape_string does; byte by byte is right for UTF-8, whose
    multi-byte sequences hold no ASCII byte)."""
    return (data.replace(b"\\", b"\\\\").replace(b"\0", b"\\0").replace(b"\n", b"\\n")
            .replace(b"\r", b"\\r").replace(b"'", b"\\'").replace(b'"', b'\\"')
            .replace(b"\x1a", b"\\Z"))


def _utf8(data):
    return data.decode("utf-8")


def _column_converter(table, field_type, flags):
    """What ``MySQLdb._mysql`` would call on a value of this column (None: bytes)."""
    conv = table.get(field_type)
    if conv.__class__ is tuple or conv.__class__ is list:
        for flag, func in conv:
            if flag is None or flags & flag:
                conv = func
                break
        else:
            conv = None
    if conv is str:
        return _utf8
    if conv is bytes:
        return None
    return conv


class Connection:
    """One connection to the server (``MySQLdb._mysql.connection``'s subset)."""

    def __init__(self, sock, conv=None):
        self._sock = sock
        self._buf = b""
        self._pos = 0
        self._seq = 0
        self.converter = dict(conv or {})
        self.server_status = 0
        self.server_capabilities = 0
        self.server_version = ""
        self._thread_id = 0
        self._affected = 0
        self._insert_id = 0
        self._info = b""
        self._result = None
        self._column_cache = {}

    # -- packets ------------------------------------------------------------

    def _drop(self):
        """Close the socket without a word to the server (it is gone, or we
        can't go on with it)."""
        sock, self._sock = self._sock, None
        self._buf, self._pos = b"", 0
        if sock is not None:
            try:
                sock.close()
            except OSError:
                pass

    def _lost(self):
        self._drop()
        return Error(CR_SERVER_LOST, _LOST)

    def _fill(self, need):
        """Receive until ``need`` bytes are buffered past the read position."""
        parts = [self._buf[self._pos:]]
        have = len(parts[0])
        while have < need:
            try:
                chunk = self._sock.recv(max(_RECV, need - have))
            except OSError:
                chunk = b""
            if not chunk:
                raise self._lost()
            parts.append(chunk)         # joined once: a 16 MB value arrives in many chunks
            have += len(chunk)
        self._buf, self._pos = b"".join(parts), 0

    def _read_packet(self):
        """The next packet's payload (continuation packets joined)."""
        payload = b""
        while True:
            if len(self._buf) - self._pos < 4:
                self._fill(4)
            pos = self._pos
            buf = self._buf
            n = buf[pos] | buf[pos + 1] << 8 | buf[pos + 2] << 16
            self._seq = (buf[pos + 3] + 1) & 0xFF
            if len(buf) - pos < 4 + n:
                self._fill(4 + n)
                pos, buf = 0, self._buf
            part = buf[pos + 4:pos + 4 + n]
            self._pos = pos + 4 + n
            if n < MAX_PACKET and not payload:
                return part
            payload += part
            if n < MAX_PACKET:
                return payload

    def _read_packets(self, count):
        """The next ``count`` payloads: those already received are cut from
        the buffer here, without a call per packet (a row of the host table
        has 49 column definitions)."""
        out = []
        buf, pos = self._buf, self._pos
        while count:
            count -= 1
            if len(buf) - pos >= 4:
                end = pos + 4 + (buf[pos] | buf[pos + 1] << 8 | buf[pos + 2] << 16)
                if end <= len(buf) and end - pos - 4 < MAX_PACKET:
                    out.append(buf[pos + 4:end])
                    pos = end
                    continue
            self._pos = pos
            out.append(self._read_packet())
            buf, pos = self._buf, self._pos
        self._pos = pos
        return out

    def _read_rows(self):
        """Row payloads up to the EOF packet (whose status is kept); an error
        packet in their place (a statement killed while sending) is raised."""
        rows = []
        append = rows.append
        while True:
            buf, pos = self._buf, self._pos
            size = len(buf)
            while size - pos >= 4:
                end = pos + 4 + (buf[pos] | buf[pos + 1] << 8 | buf[pos + 2] << 16)
                if end > size or end - pos - 4 >= MAX_PACKET:
                    break
                kind = buf[pos + 4]
                if kind >= 0xFE and (kind == 0xFF or end - pos < 13):
                    self._pos = pos
                    packet = self._read_packet()
                    if kind == 0xFF:
                        raise self._server_error(packet)
                    self.server_status = packet[3] | packet[4] << 8
                    return rows
                append(buf[pos + 4:end])
                pos = end
            self._pos = pos
            packet = self._read_packet()        # receives more, joins a long row
            kind = packet[0]
            if kind == 0xFF:
                raise self._server_error(packet)
            if kind == 0xFE and len(packet) < 9:
                self.server_status = packet[3] | packet[4] << 8
                return rows
            append(packet)

    def _columns(self, packets):
        """(name, table, converter) of each column definition, parsed once
        per distinct definition on this connection."""
        cache = self._column_cache
        out = []
        for packet in packets:
            column = cache.get(packet)
            if column is None:
                column = cache[packet] = _column(packet, self.converter)
            out.append(column)
        return out

    def _write_packet(self, payload, seq):
        """Send one payload, cut into packets of at most MAX_PACKET bytes."""
        out = []
        start = 0
        while True:
            part = payload[start:start + MAX_PACKET]
            out.append(len(part).to_bytes(3, "little") + bytes((seq,)) + part)
            seq = (seq + 1) & 0xFF
            start += MAX_PACKET
            if len(part) < MAX_PACKET:
                break
        try:
            self._sock.sendall(b"".join(out))
        except OSError:
            self._drop()
            raise Error(CR_SERVER_GONE_ERROR, _GONE) from None

    def _command(self, command, argument=b""):
        """Send a command (sequence 0).  A connection the server has closed
        since the last command (KILL, wait_timeout, restart) is found before
        anything is sent, and reported as libmariadb reports a failed send,
        2006: so 2006 always means the statement never reached the server,
        and 2013 that it may have run."""
        sock = self._sock
        if sock is None:
            raise Error(CR_SERVER_GONE_ERROR, _GONE)
        if self._pos == len(self._buf):
            try:
                pending = sock.recv(1, _socket.MSG_PEEK | _socket.MSG_DONTWAIT)
            except BlockingIOError:
                pending = None          # nothing to read: the usual, live case
            except OSError:
                pending = b""
        else:
            pending = b"?"
        if pending is not None:
            # end of stream, or something unasked for (a server's farewell
            # error packet): this connection is over
            self._drop()
            raise Error(CR_SERVER_GONE_ERROR, _GONE)
        self._result = None
        self._write_packet(bytes((command,)) + argument, 0)

    def _server_error(self, payload):
        code = payload[1] | payload[2] << 8
        text = payload[9:] if payload[3:4] == b"#" else payload[3:]
        return Error(code, text.decode("utf-8", "replace"))

    def _reply(self):
        """The next packet, unless it is an OK packet (taken in: None) or an
        error packet (raised as Error)."""
        packet = self._read_packet()
        kind = packet[0]
        if kind == 0:
            self._ok(packet)
            return None
        if kind == 0xFF:
            raise self._server_error(packet)
        return packet

    def _ok(self, payload):
        self._affected, pos = _lenenc(payload, 1)
        self._insert_id, pos = _lenenc(payload, pos)
        self.server_status = payload[pos] | payload[pos + 1] << 8
        # the server's message ("Rows matched: ..."), length-encoded
        self._info = _lenenc_bytes(payload, pos + 4)[0] if len(payload) > pos + 4 else b""

    # -- connecting -----------------------------------------------------------

    def _greeting(self, greeting):
        """Read the server's handshake v10: (scramble, capabilities)."""
        end = greeting.index(b"\0", 1)
        version = greeting[1:end].decode("utf-8", "replace")
        # MariaDB 10's version has a prefix for old replicas; libmariadb drops it
        self.server_version = version[6:] if version.startswith("5.5.5-") else version
        pos = end + 1
        self._thread_id = int.from_bytes(greeting[pos:pos + 4], "little")
        scramble = greeting[pos + 4:pos + 12]
        pos += 13
        caps = greeting[pos] | greeting[pos + 1] << 8
        self.server_status = greeting[pos + 3] | greeting[pos + 4] << 8
        caps |= (greeting[pos + 5] | greeting[pos + 6] << 8) << 16
        self.server_capabilities = caps
        data_len = greeting[pos + 7]
        pos += 18                       # the length byte, 10 reserved (MariaDB's own caps)
        part2 = greeting[pos:pos + max(13, data_len - 8)]
        pos += len(part2)
        scramble += part2.rstrip(b"\0")
        # then the server's default plugin's name: whatever it is, the reply is
        # mysql_native_password's; the account's plugin decides, and the server
        # asks for another (an auth switch) if it isn't that one
        return scramble[:20], caps

    def _handshake(self, user, password, database, collation, tcp):
        try:
            greeting = self._read_packet()
        except Error:
            raise Error(CR_SERVER_LOST, "Lost connection to server at 'handshake: reading "
                        "initial communication packet', system error: 0") from None
        if greeting[:1] == b"\xff":
            raise self._server_error(greeting)
        if greeting[0] != 10:
            raise Unsupported("protocol version %d" % greeting[0])
        try:
            scramble, caps = self._greeting(greeting)
        except (IndexError, ValueError):
            # not a MySQL server's greeting (another service on the port?)
            raise Error(CR_SERVER_HANDSHAKE_ERR, "Error in server handshake") from None
        need = CLIENT_PROTOCOL_41 | CLIENT_SECURE_CONNECTION | CLIENT_PLUGIN_AUTH
        if caps & need != need:
            raise Unsupported("server capabilities %#x" % caps)

        password = password.encode("utf-8") if isinstance(password, str) else password
        flags = (CLIENT_LONG_FLAG | CLIENT_PROTOCOL_41 | CLIENT_TRANSACTIONS
                 | CLIENT_SECURE_CONNECTION | CLIENT_PLUGIN_AUTH)
        if database:
            flags |= CLIENT_CONNECT_WITH_DB
        answer = native_password(password, scramble)
        response = [flags.to_bytes(4, "little"), (1 << 30).to_bytes(4, "little"),
                    bytes((collation,)), bytes(23),
                    user.encode("utf-8") + b"\0", bytes((len(answer),)) + answer]
        if database:
            response.append(database.encode("utf-8") + b"\0")
        response.append(NATIVE_PASSWORD + b"\0")
        self._write_packet(b"".join(response), self._seq)

        switched = False
        while True:
            try:
                reply = self._reply()
            except Error as err:
                if err.code == ER_NOT_SUPPORTED_AUTH_MODE:
                    raise Unsupported("server: %s" % err.args[1]) from None
                if err.code == ER_ACCESS_DENIED_ERROR and tcp and caps & CLIENT_SSL:
                    # the account may require TLS, which only libmariadb speaks
                    raise Unsupported("access denied over TCP without TLS") from None
                raise
            if reply is None:
                return
            kind = reply[0]
            if kind == 0xFE and not switched and len(reply) > 1:
                end = reply.find(b"\0", 1)
                name = reply[1:end]
                if name != NATIVE_PASSWORD:
                    raise Unsupported("authentication plugin %s"
                                      % name.decode("ascii", "replace"))
                switched = True
                seed = reply[end + 1:].rstrip(b"\0")
                self._write_packet(native_password(password, seed), self._seq)
                continue
            raise Unsupported("authentication exchange (packet %#x)" % kind)

    # -- MySQLdb._mysql.connection's methods ---------------------------------------

    def query(self, sql):
        """Run one statement (bytes or str) and read its whole answer; rows
        wait for :meth:`store_result`.  Raises Error."""
        if sql.__class__ is str:
            sql = sql.encode("utf-8")
        self._command(COM_QUERY, sql)
        first = self._reply()
        if first is None:
            return
        if first[0] == 0xFB:            # LOCAL INFILE: never asked for (CLIENT_LOCAL_FILES)
            self._drop()
            raise Error(CR_MALFORMED_PACKET, "Received malformed packet")
        ncols, _ = _lenenc(first, 0)
        columns = self._columns(self._read_packets(ncols))
        self._read_packet()             # EOF after the column definitions
        rows = self._read_rows()
        self._affected, self._insert_id, self._info = len(rows), 0, b""
        self._result = Result(columns, rows)

    def store_result(self):
        """The last statement's rows (a :class:`Result`), or None if it had none."""
        result, self._result = self._result, None
        return result

    def affected_rows(self):
        """Rows changed by the last statement (rows returned, for a SELECT)."""
        return self._affected

    def insert_id(self):
        """The AUTO_INCREMENT id the last statement made (0 if none)."""
        return self._insert_id

    def info(self):
        """The server's words on the last statement ("Rows matched: 1  Changed: 0
        Warnings: 0") or None."""
        return self._info.decode("utf-8", "replace") if self._info else None

    def thread_id(self):
        """The server's id of this connection (CONNECTION_ID())."""
        return self._thread_id

    def string_literal(self, data):
        """``data`` (bytes, or str as UTF-8) quoted as an SQL string literal the
        way the server reads it now: backslash escapes, or only doubled quotes
        when the session's sql_mode has NO_BACKSLASH_ESCAPES."""
        if data.__class__ is str:
            data = data.encode("utf-8")
        elif data.__class__ is not bytes:
            data = bytes(data)
        if self.server_status & SERVER_STATUS_NO_BACKSLASH_ESCAPES:
            return b"'" + data.replace(b"'", b"''") + b"'"
        return b"'" + _escape(data) + b"'"

    def ping(self):
        """Ask the server whether it is there (COM_PING); raises Error if not."""
        self._command(COM_PING)
        if self._reply() is not None:
            self._drop()
            raise Error(CR_MALFORMED_PACKET, "Received malformed packet")

    def commit(self):
        """COMMIT the transaction."""
        self.query(b"COMMIT")

    def rollback(self):
        """ROLLBACK the transaction."""
        self.query(b"ROLLBACK")

    def autocommit(self, on):
        """Set autocommit; no round trip if the session already is so (the
        server reports it in every status)."""
        if bool(self.server_status & SERVER_STATUS_AUTOCOMMIT) != bool(on):
            self.query(b"SET autocommit=1" if on else b"SET autocommit=0")

    def close(self):
        """Say goodbye (COM_QUIT) and close the socket; safe to call twice."""
        if self._sock is not None:
            try:
                self._write_packet(bytes((COM_QUIT,)), 0)
            except Error:
                pass
            self._drop()


def _column(packet, converter):
    """A column definition's (name, table as bytes, converter).  Type and flags
    are at fixed places from the end: a definition sent for COM_QUERY ends with
    12 fixed bytes (charset, length, type, flags, decimals, filler)."""
    conv = _column_converter(converter, packet[-6], packet[-5] | packet[-4] << 8)
    # catalog ("def"), schema, table, org_table, name: each a length byte
    # (below 251) and its text, read inline, as a CGI parses every column once
    try:
        a = packet[0]
        b = packet[1 + a]
        pos = 2 + a + b
        t = packet[pos]
        table = packet[pos + 1:pos + 1 + t]
        pos += 1 + t
        o = packet[pos]
        n = packet[pos + 1 + o]
        if a < 251 and b < 251 and t < 251 and o < 251 and n < 251:
            pos += 2 + o
            return packet[pos:pos + n].decode("utf-8", "replace"), table, conv
    except IndexError:
        pass
    pos = 0                             # a length of 251 or more: the general way
    for _ in range(2):                  # catalog, schema
        n, pos = _lenenc(packet, pos)
        pos += n
    table, pos = _lenenc_bytes(packet, pos)
    n, pos = _lenenc(packet, pos)       # org_table
    name, _ = _lenenc_bytes(packet, pos + n)
    return name.decode("utf-8", "replace"), table, conv


class Result:
    """The rows of one statement (``MySQLdb._mysql.result``'s subset)."""

    def __init__(self, columns, rows):
        self._columns = columns
        self._convs = [conv for _, _, conv in columns]
        self._rows = rows
        self._next = 0

    def fetch_row(self, maxrows=1, how=0):
        """Up to ``maxrows`` more rows (0: all the rest), as tuples (``how`` 0)
        or dicts by column name (``how`` 1; a repeated name is keyed
        "table.name", as MySQLdb does; ``how`` 2: every name so keyed)."""
        start = self._next
        stop = len(self._rows) if maxrows == 0 else min(len(self._rows), start + maxrows)
        self._next = stop
        convs = self._convs
        rows = [_row(packet, convs) for packet in self._rows[start:stop]]
        if how == 0:
            return tuple(rows)
        keys, seen = [], set()
        for name, table, _ in self._columns:
            key = (table.decode("utf-8", "replace") + "." + name if how == 2 or name in seen
                   else name)
            keys.append(key)
            seen.add(key)
        return tuple(dict(zip(keys, row)) for row in rows)


def _row(packet, convs):
    """One text-protocol row: each value length-encoded, 0xFB for NULL."""
    row = []
    append = row.append
    pos = 0
    for conv in convs:
        n = packet[pos]
        if n < 251:
            start = pos + 1
            pos = start + n
        elif n == 251:
            append(None)
            pos += 1
            continue
        else:
            n, start = _lenenc(packet, pos)
            pos = start + n
        value = packet[start:pos]
        append(value if conv is None else conv(value))
    return tuple(row)
