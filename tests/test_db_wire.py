"""boincpy.db.wire: the scheduler CGI's own MySQL client, held to what MySQLdb does.

Against the real MariaDB: a user with a password over the socket and TCP,
every column type of schema.sql read as MySQLdb's C layer reads it, quoting
of every byte (with and without NO_BACKSLASH_ESCAPES), errors with
MySQLdb's codes and sentences, a killed connection opened again by
boincpy.db.lite, the fallback to MySQLdb._mysql, and the import cost.
"""

import os
import secrets
import subprocess
import sys
import threading
import time

import MySQLdb
import pytest

from boincpy.config import load_config
from boincpy.db import connect, lite, wire
from boincpy.errors import DatabaseError

SOCKET = "/run/mysqld/mysqld.sock"
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture
def account(db_root_params, mini_project, scratch_db_name):
    """A database user with a password (as make_project makes them), granted
    the mini project's database, on localhost and 127.0.0.1."""
    user, password = "bpw_" + secrets.token_hex(4), "p'w\\" + secrets.token_hex(6)
    root = MySQLdb.connect(**db_root_params)
    cur = root.cursor()
    for host in ("localhost", "127.0.0.1"):
        cur.execute("CREATE USER %s@%s IDENTIFIED BY %s", (user, host, password))
        cur.execute("GRANT ALL ON `%s`.* TO %%s@%%s" % scratch_db_name, (user, host))
    root.close()
    yield {"user": user, "password": password, "database": scratch_db_name}
    root = MySQLdb.connect(**db_root_params)
    for host in ("localhost", "127.0.0.1"):
        root.cursor().execute("DROP USER IF EXISTS %s@%s", (user, host))
    root.close()


def _cfg(mini_project, account, tcp=False, **changes):
    cfg = load_config(str(mini_project))
    cfg.db_user, cfg.db_passwd = account["user"], account["password"]
    cfg.db_host, cfg.db_socket = ("127.0.0.1:3306", "") if tcp else ("", SOCKET)
    for key, value in changes.items():
        setattr(cfg, key, value)
    return cfg


@pytest.fixture
def pair(mini_project):
    """The lite layer twice on one database: over wire and over _mysql."""
    cfg = load_config(str(mini_project))
    over_wire, over_mysql = connect(cfg, driver="wire"), connect(cfg, driver="mysql_c")
    assert isinstance(over_wire.conn, wire.Connection)
    assert not isinstance(over_mysql.conn, wire.Connection)
    yield over_wire, over_mysql
    over_wire.close()
    over_mysql.close()


def _raised(call):
    try:
        call()
    except Exception as exc:            # noqa: BLE001 (compared, not handled)
        return exc
    raise AssertionError("no error")


# -- connecting ------------------------------------------------------------

@pytest.mark.parametrize("tcp", [False, True])
def test_a_password_user_connects_over_the_socket_and_tcp(mini_project, account, tcp):
    db = connect(_cfg(mini_project, account, tcp), driver="wire")
    assert isinstance(db.conn, wire.Connection)
    assert db.query_value("SELECT CURRENT_USER()") == "%s@%s" % (
        account["user"], "127.0.0.1" if tcp else "localhost")
    assert db.query_value("SELECT @@autocommit") == 1
    assert db.query_value("SELECT DATABASE()") == account["database"]
    assert db.query_value("SELECT @@collation_connection") == "utf8mb4_general_ci"
    assert db.query_value("SELECT @@character_set_results") == "utf8mb4"
    db.close()
    db.close()


@pytest.mark.parametrize("tcp", [False, True])
def test_connect_failures_read_as_mysqldb_s(mini_project, account, tcp):
    """The operator reads the same sentence (connect_error) over wire as over
    MySQLdb: wrong password, unknown database, no server on the socket."""
    cases = [{"db_passwd": "wrong"}, {"db_name": "bpt_no_such_db"}]
    if not tcp:
        cases.append({"db_socket": "/tmp/bpt-no-such.sock"})
    for change in cases:
        cfg = _cfg(mini_project, account, tcp, **change)
        over_wire = _raised(lambda: connect(cfg, driver="wire"))
        over_mysql = _raised(lambda: connect(cfg, driver="mysql_c"))
        assert isinstance(over_wire, DatabaseError) and str(over_wire) == str(over_mysql)
    params = dict(user=account["user"], password="wrong", database=account["database"])
    params.update(host="127.0.0.1", port=3306) if tcp else params.update(unix_socket=SOCKET)
    err = _raised(lambda: wire.connect(**params))
    assert err.args == _raised(lambda: lite._mysql_module().connect(**params)).args
    assert err.args[0] == 1045


def test_a_refused_tcp_port_is_2002_and_an_unknown_host_2005():
    assert _raised(lambda: wire.connect(user="x", host="127.0.0.1", port=1)).args == (
        2002, "Can't connect to server on '127.0.0.1' (111)")
    err = _raised(lambda: wire.connect(user="x", host="bpt-no-such-host.invalid"))
    assert err.args[0] == 2005 and "bpt-no-such-host.invalid" in err.args[1]


# -- values ------------------------------------------------------------------

_SAMPLES = {
    "tinyint": (-128, 127), "smallint": (-32768, 32767),
    "int": (-2147483648, 2147483647), "bigint": (-9223372036854775808, 9223372036854775807),
    "double": (-1.7976931348623157e308, 5e-324), "timestamp": ("2024-02-29 12:34:56",
                                                              "2030-01-01 00:00:00"),
}
_TEXT = "'\\\"\0\n\r\x1a%s e\u0301 \u00e9\u4e2d\U0001F600 <x>&amp;"


def _sample(column_type, data_type, length, k):
    if column_type.endswith("unsigned"):
        return (0, 4294967295)[k]
    if data_type in _SAMPLES:
        return _SAMPLES[data_type][k]
    text = (_TEXT * 4)[:min(length or 64, 40)]
    return text if k else text[::-1]


def test_every_schema_column_type_reads_as_mysqldb_reads_it(pair, db_root_params,
                                                            scratch_db_name):
    """Every table of schema.sql: a row of extreme values, a row of NULLs
    (where allowed), a row of defaults; wire gives the same rows with the same
    Python types as MySQLdb's C layer with lite's converters."""
    over_wire, over_mysql = pair
    root = MySQLdb.connect(charset="utf8mb4", **db_root_params)
    cur = root.cursor()
    # (its tables: BOINC's latest_consent view takes no rows)
    cur.execute("SELECT c.table_name, c.column_name, c.data_type, c.column_type, "
                "c.is_nullable, c.character_maximum_length, c.extra "
                "FROM information_schema.columns c JOIN information_schema.tables t "
                "ON t.table_schema = c.table_schema AND t.table_name = c.table_name "
                "WHERE c.table_schema = %s AND t.table_type = 'BASE TABLE' "
                "ORDER BY c.table_name, c.ordinal_position", (scratch_db_name,))
    tables = {}
    for table, *column in cur.fetchall():
        tables.setdefault(table, []).append(column)
    types = set()
    for table, columns in tables.items():
        cur.execute("DELETE FROM `%s`.`%s`" % (scratch_db_name, table))
        for k in (0, 1, 2):
            names, values = [], []
            for name, data_type, column_type, nullable, length, extra in columns:
                types.add(column_type)
                if k == 2:
                    if nullable == "YES" and "auto_increment" not in extra:
                        names.append(name)
                        values.append(None)
                    continue
                names.append(name)
                values.append(_sample(column_type, data_type, length, k))
            cur.execute("INSERT IGNORE INTO `%s`.`%s` (%s) VALUES (%s)" % (
                scratch_db_name, table, ", ".join("`%s`" % n for n in names),
                ", ".join(["%s"] * len(names))), values)
        root.commit()
        sql = "SELECT * FROM `%s`" % table
        rows = over_wire.query(sql)
        assert rows == over_mysql.query(sql) and len(rows) >= 2, table
        for mine, theirs in zip(rows, over_mysql.query(sql)):
            assert [type(v) for v in mine.values()] == [type(v) for v in theirs.values()]
    root.close()
    assert {"tinyint(4)", "smallint(6)", "int(11)", "int(10) unsigned", "bigint(20)",
            "double", "blob", "mediumblob", "text", "mediumtext", "timestamp",
            "char(1)", "varchar(254)"} <= types
    expressions = ("SELECT COUNT(*), SUM(id), AVG(id), MAX(name), NULL, 1.5, 1e3, -5, "
                   "18446744073709551615, CAST(2.5 AS FLOAT), _binary'\\xff\\x00', x'41', "
                   "CONCAT('a', 1), NOW() > 0, JSON_OBJECT('a', 1), '' FROM platform")
    assert over_wire.query(expressions) == over_mysql.query(expressions)


def test_repeated_column_names_are_keyed_as_mysqldb_keys_them(pair):
    over_wire, over_mysql = pair
    sql = "SELECT p.id, a.id, p.name, a.name FROM platform p, app a"
    assert over_wire.query(sql) == over_mysql.query(sql)
    assert set(over_wire.query(sql)[0]) == {"id", "a.id", "name", "a.name"}


def test_every_byte_and_odd_utf8_round_trip(pair):
    """bytes 0..255 through a BLOB (read back as HEX and as text), odd UTF-8
    through a VARCHAR; and the quoting is byte for byte MySQLdb's, with
    backslash escapes and with NO_BACKSLASH_ESCAPES."""
    over_wire, over_mysql = pair
    data = bytes(range(256)) + bytes(range(255, -1, -1)) + b"\\'\\\\''\"\0\x1a"
    text = "".join(chr(c) for c in range(1, 170)) + "\u2028\ufeff\U0010FFFF\U0001F600 '\\"
    for mode in ("", "NO_BACKSLASH_ESCAPES"):
        for db in pair:
            db.execute("SET SESSION sql_mode = %s", (mode,))
        assert bool(over_wire.conn.server_status & wire.SERVER_STATUS_NO_BACKSLASH_ESCAPES) \
            == bool(mode)
        for value in (data, text.encode(), b"", b"'", b"\\", bytes(range(128, 256))):
            assert over_wire.conn.string_literal(value) == \
                over_mysql.conn.string_literal(value)
        low, high = "".join(map(chr, range(254))), "\u00fe\u00ff" + text[-10:]
        new = over_wire.insert("INSERT INTO user (create_time, email_addr, name, "
                               "authenticator, global_prefs, cross_project_id, url, "
                               "signature) VALUES (1, %s, %s, %s, %s, '', %s, %s)",
                               ("x" + mode, mode[:1] + text, "k" + mode, data, low, high))
        row = over_wire.query_one("SELECT HEX(global_prefs) AS h, name, global_prefs, "
                                  "url, signature FROM user WHERE id = %s", (new,))
        assert bytes.fromhex(row["h"]) == data
        assert row["name"] == mode[:1] + text
        assert (row["url"], row["signature"]) == (low, high)     # U+0000..U+00FF
        assert row["global_prefs"] == data.decode("utf-8", "replace")
        assert over_wire.query("SELECT * FROM user WHERE id = %s", (new,)) == \
            over_mysql.query("SELECT * FROM user WHERE id = %s", (new,))


def test_results_counts_and_ids(pair):
    db, other = pair
    conn = db.conn
    assert db.query("SELECT id FROM platform WHERE id < 0") == []
    assert db.query_value("SELECT NULL") is None
    assert db.query_value("SELECT NULL", default=7) == 7
    ids = [db.insert("INSERT INTO platform (create_time, name) VALUES (%s, %s)", (k, "p%d" % k))
           for k in range(3)]
    assert ids == list(range(ids[0], ids[0] + 3)) and db.insert_id() == ids[2]
    assert [r["name"] for r in db.query("SELECT name FROM platform WHERE id >= %s ORDER BY id",
                                        (ids[0],))] == ["p0", "p1", "p2"]
    assert db.execute("UPDATE platform SET deprecated = 1 WHERE id >= %s", (ids[0],)) == 3
    assert db.execute("UPDATE platform SET deprecated = 1 WHERE id >= %s", (ids[0],)) == 0
    assert conn.info() == "Rows matched: 3  Changed: 0  Warnings: 0"
    other.execute("UPDATE platform SET deprecated = 1 WHERE id >= %s", (ids[0],))
    assert other.conn.info() == conn.info()
    assert db.execute("DELETE FROM platform WHERE id >= %s", (ids[0],)) == 3
    conn.query("SELECT 1 UNION SELECT 2 UNION SELECT 3")
    result = conn.store_result()
    assert result.fetch_row() == ((1,),) and result.fetch_row(0, 1) == ({"1": 2}, {"1": 3})
    assert result.fetch_row(0) == () and conn.store_result() is None
    conn.query("SET @x = 1")
    assert conn.store_result() is None and conn.affected_rows() == 0
    conn.ping()
    assert db.ping()
    big = "x" * (3 << 20)       # more than a packet can hold
    assert db.query_value("SELECT LENGTH(%s)", (big,)) == len(big)


def test_a_long_value_spans_packets(db_root_params):
    """A row, and a statement, longer than a packet (16 MB) go whole."""
    root = MySQLdb.connect(**db_root_params)
    cur = root.cursor()
    cur.execute("SELECT @@GLOBAL.max_allowed_packet")
    saved = cur.fetchone()[0]
    cur.execute("SET GLOBAL max_allowed_packet = %d" % (64 << 20))
    try:
        conn = wire.connect(user=db_root_params["user"], unix_socket=SOCKET,
                            conv=lite._CONV)
        conn.query(b"SELECT REPEAT('ab', 9000000) AS v, 7")
        (value, seven), = conn.store_result().fetch_row(0)
        assert value == "ab" * 9000000 and seven == 7
        conn.query(b"SELECT LENGTH('" + b"y" * (17 << 20) + b"')")
        assert conn.store_result().fetch_row() == ((17 << 20,),)
        conn.close()
    finally:
        cur.execute("SET GLOBAL max_allowed_packet = %d" % saved)
        root.close()


def test_errors_have_mysqldb_s_codes_and_sentences(pair):
    over_wire, over_mysql = pair
    over_wire.execute("INSERT INTO platform (create_time, name) VALUES (1, 'dup')")
    statements = ("SELEC 1", "SELECT * FROM no_such_table",
                  "INSERT INTO platform (create_time, name) VALUES (1, 'dup')")
    for sql, code in zip(statements, (1064, 1146, 1062)):
        mine, theirs = _raised(lambda: over_wire.query(sql)), _raised(lambda: over_mysql.query(sql))
        assert isinstance(mine, DatabaseError) and str(mine) == str(theirs)
        assert mine.mysql_code == theirs.mysql_code == code
        raw = _raised(lambda: over_wire.conn.query(sql.encode()))
        assert isinstance(raw, wire.Error) and raw.args[0] == code
    assert over_wire.query_value("SELECT 1") == 1        # the connection goes on


# -- a connection the server dropped -----------------------------------------------

def _kill(db_root_params, conn_id, delay=0.0):
    def run():
        time.sleep(delay)
        root = MySQLdb.connect(**db_root_params)
        root.cursor().execute("KILL CONNECTION %d" % conn_id)
        root.close()
    if not delay:
        return run()
    thread = threading.Thread(target=run)
    thread.start()
    return thread


def test_a_killed_connection_is_opened_again_and_a_write_runs_once(pair, db_root_params):
    """After KILL CONNECTION the next statement finds the socket closed before
    sending (2006), so lite opens a new connection and sends it once: a
    SELECT, and an UPDATE that must not run twice."""
    db, _ = pair
    heard = []
    db.on_reconnect = lambda: heard.append(1)
    old = db.query_value("SELECT CONNECTION_ID()")
    _kill(db_root_params, old)
    err = _raised(lambda: db.conn.ping())
    assert err.args == (2006, "Server has gone away")
    db.conn = lite._open(db.params)
    old = db.query_value("SELECT CONNECTION_ID()")
    _kill(db_root_params, old)
    assert db.query_value("SELECT COUNT(*) FROM platform") == 1 and heard == [1]
    assert db.query_value("SELECT CONNECTION_ID()") != old
    assert isinstance(db.conn, wire.Connection)
    before = db.query_value("SELECT create_time FROM platform")
    _kill(db_root_params, db.query_value("SELECT CONNECTION_ID()"))
    assert db.execute("UPDATE platform SET create_time = create_time + 1") == 1
    assert db.query_value("SELECT create_time FROM platform") == before + 1 and heard == [1, 1]


def test_a_connection_lost_during_a_statement_retries_only_a_select(pair, db_root_params):
    """Killed while the server runs it (2013): a SELECT is sent again on a new
    connection; an UPDATE is not (it may have run), and the error says so."""
    db, _ = pair
    heard = []
    db.on_reconnect = lambda: heard.append(1)
    thread = _kill(db_root_params, db.query_value("SELECT CONNECTION_ID()"), delay=0.3)
    started = time.time()
    assert db.query_value("SELECT SLEEP(0.6)") == 0
    thread.join()
    assert heard == [1] and time.time() - started > 0.8
    before = db.query_value("SELECT create_time FROM platform")
    thread = _kill(db_root_params, db.query_value("SELECT CONNECTION_ID()"), delay=0.3)
    err = _raised(lambda: db.execute("UPDATE platform SET create_time = create_time + 1 "
                                     "WHERE SLEEP(0.6) = 0"))
    thread.join()
    assert isinstance(err, DatabaseError) and heard == [1]
    assert str(err) == ("lost connection to database "
                        "(Lost connection to server during query)")
    db.conn = lite._open(db.params)
    assert db.query_value("SELECT create_time FROM platform") == before


# -- what wire doesn't do ------------------------------------------------------------------

def _fake_server(path, replies):
    """A server on a Unix socket that greets as MariaDB 10.11 does (default
    plugin ``plugin``), reads the client's answer and sends ``replies``."""
    import socket
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(path)
    listener.listen(1)

    def serve():
        conn, _ = listener.accept()
        for payload, seq in replies:
            if seq:
                conn.recv(65536)
            conn.sendall(len(payload).to_bytes(3, "little") + bytes((seq,)) + payload)
        conn.recv(65536)
        conn.close()
        listener.close()
    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    return thread


def _greeting(version=10, caps=0xF7FE | 0x81FF << 16, plugin=b"mysql_native_password"):
    return (bytes((version,)) + b"5.5.5-10.11.19-MariaDB\0" + (7).to_bytes(4, "little")
            + b"abcdefgh\0" + (caps & 0xFFFF).to_bytes(2, "little") + b"\x2d\x02\x00"
            + (caps >> 16).to_bytes(2, "little") + b"\x15" + bytes(10)
            + b"ijklmnopqrst\0" + plugin + b"\0")


@pytest.mark.parametrize("replies", [
    [(_greeting(), 0), (b"\xfeclient_ed25519\0" + b"n" * 32 + b"\0", 2)],
    [(_greeting(plugin=b"client_ed25519"), 0), (b"\xfeclient_ed25519\0" + b"n" * 32, 2)],
    [(_greeting(), 0), (b"\xfe", 2)],                                   # pre-4.1 passwords
    [(_greeting(), 0), (b"\x01\x04", 2)],                               # more auth data
    [(_greeting(version=9), 0)],
    [(_greeting(caps=0xF7FE & ~wire.CLIENT_PROTOCOL_41), 0)],
    [(_greeting(), 0), (b"\xff\xe3\x04#08004Client does not support authentication", 2)],
], ids=["auth_switch", "server_default", "old_password", "more_data", "protocol_9",
        "no_protocol_41", "ER_NOT_SUPPORTED_AUTH_MODE"])
def test_what_wire_does_not_speak_is_unsupported(tmp_path, replies):
    path = str(tmp_path / "fake.sock")
    thread = _fake_server(path, replies)
    with pytest.raises(wire.Unsupported):
        wire.connect(user="u", password="pw", database="d", unix_socket=path)
    thread.join(5)


def test_a_greeting_that_is_not_mysql_s_is_a_handshake_error(tmp_path):
    path = str(tmp_path / "fake.sock")
    thread = _fake_server(path, [(b"\x0aHTTP/1.1 400", 0)])
    assert _raised(lambda: wire.connect(user="u", unix_socket=path)).args == (
        2012, "Error in server handshake")
    thread.join(5)


def test_an_auth_switch_to_native_password_is_answered(tmp_path):
    """The server may ask again with a new scramble (MariaDB does for an
    account whose plugin list starts elsewhere); wire answers with it."""
    path = str(tmp_path / "fake.sock")
    seed = b"ABCDEFGHIJKLMNOPQRST"
    thread = _fake_server(path, [(_greeting(), 0),
                                 (b"\xfemysql_native_password\0" + seed + b"\0", 2),
                                 (b"\x00\x00\x00\x02\x00\x00\x00", 4)])
    conn = wire.connect(user="u", password="pw", unix_socket=path)
    assert conn.server_version == "10.11.19-MariaDB" and conn.thread_id() == 7
    conn.close()
    thread.join(5)
    assert len(wire.native_password(b"pw", seed)) == 20 and wire.native_password(b"", seed) == b""


def test_unsupported_falls_back_to_mysqldb(mini_project, account, monkeypatch):
    """wire.Unsupported at connect: lite goes on over MySQLdb._mysql, and so
    does a connection opened again after the server dropped it."""
    def refuse(self, *args):
        raise wire.Unsupported("as a server wanting client_ed25519 would")
    monkeypatch.setattr(wire.Connection, "_handshake", refuse)
    db = connect(_cfg(mini_project, account), driver="wire")
    assert not isinstance(db.conn, wire.Connection)
    assert db.query_value("SELECT CURRENT_USER()").startswith(account["user"] + "@")
    db.close()


# -- the point of it all ---------------------------------------------------------------------

def test_a_query_over_wire_loads_no_heavy_module(mini_project):
    """As the CGI starts (python -S): connecting through lite and running a
    query loads neither MySQLdb nor what wire avoids."""
    code = ("import sys; from boincpy.config import load_config; from boincpy.db import connect; "
            "db = connect(load_config(%r), driver='wire'); print(db.query('SELECT * FROM platform')[0]"
            "['name']); print(' '.join(sorted(m for m in ('socket', 'hashlib', 'ssl', 'MySQLdb', "
            "'MySQLdb._mysql', 'enum', 'selectors', 're', '_ssl', '_hashlib') "
            "if m in sys.modules)))" % str(mini_project))
    out = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True,
                         check=True, cwd=REPO).stdout.split("\n")
    assert out[0] == "x86_64-pc-linux-gnu" and out[1] == ""


def test_long_names_and_values_use_longer_length_encodings(pair):
    """A column name or alias of 251 bytes or more, and values of 251 and
    65536 bytes or more, have the longer length encodings."""
    over_wire, over_mysql = pair
    alias = "\u00e9" * 127                    # 254 bytes (the server cuts names there)
    sql = ("SELECT REPEAT('a', 251) AS `%s`, REPEAT('b', 70000) AS v, `%s`.id, "
           "'%s' AS w FROM platform AS `%s`" % (alias, "t" * 60, "c" * 300, "t" * 60))
    assert over_wire.query(sql) == over_mysql.query(sql)
    row = over_wire.query(sql)[0]
    assert row[alias] == "a" * 251 and row["v"] == "b" * 70000 and row["w"] == "c" * 300
