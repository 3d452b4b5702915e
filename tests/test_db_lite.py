"""boincpy.db.lite: the scheduler's database layer on MySQLdb's C module."""

import os
import subprocess
import sys

import pytest

from boincpy.db import connect, lite
from boincpy.errors import DatabaseError
from jobs_helpers import count_round_trips


@pytest.fixture
def dbs(mini_project):
    from boincpy.config import load_config
    cfg = load_config(str(mini_project))
    full, light = connect(cfg), connect(cfg, driver="wire")
    yield full, light
    full.close()
    light.close()


def test_rows_and_types_are_those_of_the_full_layer(dbs):
    full, light = dbs
    light.execute("INSERT INTO user (create_time, email_addr, name, authenticator, "
                  "total_credit, global_prefs, cross_project_id, country) "
                  "VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
                  (17, "a'b\\c@example.com", "n\u00e9\u4e2d", "k%s", 1.25,
                   b"<x>\x00\xff</x>", "", None))
    sql = "SELECT * FROM user WHERE authenticator = %s"
    assert light.query(sql, ("k%s",)) == full.query(sql, ("k%s",))
    row = light.query_one(sql, ("k%s",))
    assert row["email_addr"] == "a'b\\c@example.com" and row["name"] == "n\u00e9\u4e2d"
    assert row["create_time"] == 17 and row["total_credit"] == 1.25
    assert row["global_prefs"] == "<x>\x00\ufffd</x>" and row["country"] is None
    assert light.query_value("SELECT COUNT(*) FROM user") == 1
    assert light.query_value("SELECT id FROM user WHERE id = 99", default=-1) == -1


@pytest.mark.parametrize("wire", [True, False], ids=["wire", "_mysql"])
def test_a_joined_row_keeps_each_tables_columns_apart(mini_project, wire):
    from boincpy.config import load_config
    db = connect(load_config(str(mini_project)), driver="wire" if wire else "mysql_c")
    try:
        uid = db.insert("INSERT INTO user (create_time, email_addr, name, authenticator, "
                        "total_credit, cross_project_id) VALUES (5, 'u@x', 'u', 'k', 7.5, '')")
        hid = db.insert("INSERT INTO host (create_time, userid, total_credit, domain_name, "
                        "misc) VALUES (9, %s, 2.5, 'h', '')", (uid,))
        orphan = db.insert("INSERT INTO host (create_time, userid, misc) VALUES (3, %s, '')", (uid + 99,))
        sql = ("SELECT host.*, user.* FROM host LEFT JOIN user ON user.id = host.userid "
               "WHERE host.id = %s")
        row = db.query_tables(sql, (hid,))
        assert row["host"] == db.query_one("SELECT * FROM host WHERE id = %s", (hid,))
        assert row["user"] == db.query_one("SELECT * FROM user WHERE id = %s", (uid,))
        assert (row["host"]["id"], row["user"]["id"]) == (hid, uid)
        assert (row["host"]["create_time"], row["user"]["create_time"]) == (9, 5)
        assert (row["host"]["total_credit"], row["user"]["total_credit"]) == (2.5, 7.5)
        lone = db.query_tables(sql, (orphan,))
        assert lone["host"]["id"] == orphan and set(lone["user"].values()) == {None}
        assert db.query_tables(sql, (orphan + 1,)) is None
        # a table's columns apart from each other in the SELECT, read twice
        # (the second time by the split worked out the first time)
        mixed = ("SELECT user.name, host.id, user.id, host.domain_name FROM host "
                 "JOIN user ON user.id = host.userid WHERE host.id = %s")
        for _ in range(2):
            assert db.query_tables(mixed, (hid,)) == {
                "user": {"name": "u", "id": uid}, "host": {"id": hid, "domain_name": "h"}}
    finally:
        db.close()


def test_writes_transactions_and_errors(dbs):
    _, db = dbs
    new = db.insert("INSERT INTO platform (create_time, name) VALUES (1, %s)", ("p1",))
    assert new > 1
    assert db.execute("UPDATE platform SET deprecated = 1 WHERE name LIKE %s", ("p%",)) == 1
    with pytest.raises(RuntimeError):
        with db.transaction():
            db.execute("UPDATE platform SET deprecated = 0 WHERE id = %s", (new,))
            with db.transaction():          # joins the outer one
                db.execute("DELETE FROM platform WHERE id = %s", (new,))
            raise RuntimeError("roll back")
    assert db.query_one("SELECT deprecated FROM platform WHERE id = %s", (new,)) \
        == {"deprecated": 1}
    with db.transaction():
        db.execute("DELETE FROM platform WHERE id = %s", (new,))
    assert db.query_one("SELECT id FROM platform WHERE id = %s", (new,)) is None
    with pytest.raises(DatabaseError) as err:
        db.query("SELECT * FROM no_such_table")
    assert "schema" in str(err.value)
    assert db.insert_many("platform", ("create_time", "name"), [(1, "q1"), (2, "q2")]) == 2


@pytest.fixture
def batching(mini_project):
    """The light layer on _mysql, which holds BEGIN, SAVEPOINT and deferred
    writes back to send them with the next statement."""
    from boincpy.config import load_config
    db = connect(load_config(str(mini_project)), driver="mysql_c")
    yield db
    db.close()


@pytest.mark.parametrize("layer", ["full", "light", "light on _mysql"])
def test_a_nested_transaction_is_a_savepoint(dbs, layer, batching):
    full, light = dbs
    db = {"full": full, "light": light, "light on _mysql": batching}[layer]
    other = light if db is full else full
    seen = []

    def count():
        return other.query_value("SELECT COUNT(*) FROM platform WHERE name LIKE 'sp%'")
    with db.transaction():
        db.insert("INSERT INTO platform (create_time, name) VALUES (1, 'sp1')")
        db.after_commit(lambda: seen.append(count()))
        with pytest.raises(DatabaseError):
            with db.transaction():          # fails alone: only its own rows go
                db.insert("INSERT INTO platform (create_time, name) VALUES (1, 'sp2')")
                db.insert("INSERT INTO platform (create_time, name) VALUES (1, 'sp1')")
        with db.transaction():
            db.insert("INSERT INTO platform (create_time, name) VALUES (1, 'sp3')")
        assert count() == 0 and seen == []  # nothing visible before the commit
    assert seen == [2]                      # run after it, seeing what was committed
    assert [r["name"] for r in other.query(
        "SELECT name FROM platform WHERE name LIKE 'sp%' ORDER BY name")] == ["sp1", "sp3"]
    db.after_commit(lambda: seen.append("now"))     # outside a transaction: at once
    assert seen == [2, "now"]
    # The server rolled the whole transaction back (as on a deadlock): the
    # savepoint is gone with what came before it, so every statement after
    # fails and so does the end of the transaction -- nothing done before the
    # loss may be taken for written.
    with pytest.raises(DatabaseError) as lost:
        with db.transaction():
            db.insert("INSERT INTO platform (create_time, name) VALUES (1, 'sp4')")
            with pytest.raises(RuntimeError):
                with db.transaction():
                    db.insert("INSERT INTO platform (create_time, name) VALUES (1, 'sp5')")
                    db._run_plain(b"ROLLBACK")
                    raise RuntimeError("deadlock")
            with pytest.raises(DatabaseError):
                db.insert("INSERT INTO platform (create_time, name) VALUES (1, 'sp6')")
    assert "rolled back the whole transaction" in str(lost.value)
    assert [r["name"] for r in other.query(
        "SELECT name FROM platform WHERE name LIKE 'sp%' ORDER BY name")] == ["sp1", "sp3"]
    assert db.query_value("SELECT COUNT(*) FROM platform WHERE name = 'sp1'") == 1


@pytest.mark.parametrize("wire", [True, False], ids=["wire", "_mysql"])
def test_a_dropped_connection_is_opened_again_for_a_read_not_inside_a_transaction(
        mini_project, db_root_params, wire):
    """The server drops the connection (KILL, as a restart or wait_timeout
    does): a SELECT goes on over a new connection, telling on_reconnect, and
    so does a transaction that has sent nothing but its BEGIN; once a
    transaction has done something, nothing is sent again (what it did is
    gone with the old connection)."""
    import MySQLdb
    from boincpy.config import load_config
    db = connect(load_config(str(mini_project)), driver="wire" if wire else "mysql_c")
    db.execute("INSERT INTO platform (create_time, name) VALUES (1, 'p')")
    heard = []
    db.on_reconnect = lambda: heard.append(1)

    def kill():
        conn_id = db.query_value("SELECT CONNECTION_ID()")
        root = MySQLdb.connect(**db_root_params)
        root.cursor().execute("KILL CONNECTION %d" % conn_id)
        root.close()
        return conn_id

    try:
        old = kill()
        assert db.query_value("SELECT COUNT(*) FROM platform WHERE name = 'p'") == 1
        assert db.query_value("SELECT CONNECTION_ID()") != old and heard == [1]
        kill()
        with db.transaction():
            assert db.query_value("SELECT COUNT(*) FROM platform WHERE name = 'p'") == 1
        assert heard == [1, 1]
        with pytest.raises(DatabaseError):
            with db.transaction():
                db.execute("UPDATE platform SET deprecated = 1 WHERE name = 'p'")
                kill()
                db.query("SELECT id FROM platform")
        assert heard == [1, 1]
        assert db.query_value("SELECT deprecated FROM platform WHERE name = 'p'") == 0
    finally:
        db.close()


@pytest.fixture
def counted(mini_project, wire):
    """(the light layer on wire or _mysql as ``wire`` says, another connection
    to look with, the list of what the first sends: one entry a round trip)."""
    from boincpy.config import load_config
    cfg = load_config(str(mini_project))
    db, other = connect(cfg, driver="wire" if wire else "mysql_c"), connect(cfg, driver="wire")
    yield db, other, count_round_trips(db)
    db.close()
    other.close()


@pytest.mark.parametrize("wire", [True, False], ids=["wire", "_mysql"])
def test_deferred_writes_go_with_the_next_statement_or_the_commit(counted, wire):
    db, other, sent = counted
    sql = "SELECT deprecated FROM platform WHERE name = %s"
    db.execute("INSERT INTO platform (create_time, name) VALUES (1, 'a'), (1, 'b')")
    db.defer("UPDATE platform SET deprecated = 1 WHERE name = 'a'")     # no transaction
    assert other.query_value(sql, ("a",)) == 1
    sent.clear()
    with db.transaction():
        db.defer("UPDATE platform SET deprecated = 2 WHERE name = 'a'")
        db.deferring().execute("UPDATE platform SET deprecated = 2 WHERE name = 'b'")
        assert db.query_value(sql, ("a",)) == 2         # in order, before the SELECT
        assert db.execute("UPDATE platform SET deprecated = 3 WHERE name LIKE %s",
                          ("%",)) >= 2                 # its own rowcount
        db.defer("UPDATE platform SET deprecated = 4 WHERE name = 'b'")
        assert other.query_value(sql, ("b",)) == 0      # nothing committed yet
    assert [other.query_value(sql, (n,)) for n in "ab"] == [3, 4]
    # _mysql: BEGIN with the first statement, the last write with COMMIT
    # (wire: one statement each; its COMMIT is conn.commit(), not counted)
    assert len(sent) == (3 if not wire else 6)
    sent.clear()
    with db.transaction():
        pass
    assert len(sent) == (0 if not wire else 1)
    with pytest.raises(DatabaseError) as err:
        with db.transaction():
            db.defer("UPDATE platform SET deprecated = 5 WHERE name = 'a'")
            db.defer("UPDATE platform SET no_such_column = 1")
            db.defer("UPDATE platform SET deprecated = 5 WHERE name = 'b'")
    assert "no_such_column" in str(err.value)
    assert [other.query_value(sql, (n,)) for n in "ab"] == [3, 4]  # all undone
    with db.transaction():
        db.defer("UPDATE platform SET deprecated = 6 WHERE name = 'a'")
        with pytest.raises(DatabaseError):
            with db.transaction():              # a savepoint fails alone
                db.defer("UPDATE platform SET deprecated = 6 WHERE name = 'b'")
                db.defer("UPDATE platform SET no_such_column = 1")
    assert [other.query_value(sql, (n,)) for n in "ab"] == [6, 4]
    with db.transaction():
        db.defer("UPDATE platform SET deprecated = 7 WHERE name = 'a'")
        with pytest.raises(ValueError):
            with db.transaction():              # undone before it reached the server
                raise ValueError("nothing sent")
    assert [other.query_value(sql, (n,)) for n in "ab"] == [7, 4]


@pytest.mark.parametrize("wire", [True, False], ids=["wire", "_mysql"])
def test_several_reads_go_in_one_round_trip(counted, wire):
    """query_many: each read's rows in order (joined ones split by table);
    on _mysql one COM_QUERY with whatever was deferred before, on wire one
    each; a failing read names itself and leaves the connection usable."""
    db, _, sent = counted
    uid = db.insert("INSERT INTO user (create_time, email_addr, name, authenticator, "
                    "cross_project_id) VALUES (5, 'u@x', 'u', 'k', '')")
    hid = db.insert("INSERT INTO host (create_time, userid, misc) VALUES (9, %s, '')",
                    (uid,))
    db.execute("INSERT INTO platform (create_time, name) VALUES (1, 'm1'), (1, 'm2')")
    join = ("SELECT host.*, user.* FROM host LEFT JOIN user ON user.id = host.userid "
            "WHERE host.id = %s")
    names = "SELECT name FROM platform WHERE name LIKE %s ORDER BY name"
    sent.clear()
    joined, platforms, none = db.query_many([(join, (hid,), True),
                                             (names, ("m%",), False),
                                             (names, ("zz",), False)])
    assert len(sent) == (3 if wire else 1)
    assert [(r["host"]["id"], r["user"]["id"]) for r in joined] == [(hid, uid)]
    assert joined[0]["host"] == db.query_one("SELECT * FROM host WHERE id = %s", (hid,))
    assert platforms == [{"name": "m1"}, {"name": "m2"}] and none == []
    sent.clear()
    with db.transaction():
        db.defer("UPDATE platform SET name = 'm3' WHERE name = 'm2'")
        (after,) = db.query_many([(names, ("m%",), False)])
        assert after == [{"name": "m1"}, {"name": "m3"}]      # the write went first
    # _mysql: BEGIN, the write and the read in one (COMMIT is conn.commit(),
    # not counted); wire: one each
    assert len(sent) == (3 if wire else 1)
    with pytest.raises(DatabaseError) as err:
        db.query_many([(names, ("m%",), False), ("SELECT nope FROM platform", None, False)])
    assert "nope" in str(err.value)
    assert db.query_many([(names, ("m1",), False)]) == [[{"name": "m1"}]]


@pytest.mark.parametrize("wire", [True, False], ids=["wire", "_mysql"])
def test_a_read_and_the_writes_it_may_want_go_together(counted, wire):
    """read_then_write: the read sees the rows before the writes (and after
    what was deferred); the last write's rowcount comes back; undo_writes
    takes back the writes and what was written since, nothing before; on
    _mysql read and writes are one COM_QUERY."""
    db, other, sent = counted
    sql = "SELECT name, deprecated FROM platform WHERE name LIKE 't%' ORDER BY name"
    db.execute("INSERT INTO platform (create_time, name) VALUES (1, 't1'), (1, 't2')")
    with pytest.raises(DatabaseError):
        db.read_then_write((sql, None), [])     # its savepoint needs a transaction
    with db.transaction():
        db.defer("UPDATE platform SET deprecated = 9 WHERE name = 't2'")
        sent.clear()
        rows, n = db.read_then_write(
            (sql, None), [("UPDATE platform SET deprecated = 1 WHERE name = %s", ("t1",)),
                          ("UPDATE platform SET deprecated = 2 WHERE name LIKE %s",
                           ("t%",))])
        assert len(sent) == (4 if wire else 1)
        assert rows == [{"name": "t1", "deprecated": 0}, {"name": "t2", "deprecated": 9}]
        assert n == 2
        db.defer("UPDATE platform SET deprecated = 7 WHERE name = 't2'")
        rows, n = db.read_then_write(
            (sql, None), [("UPDATE platform SET deprecated = 5 WHERE name = 'nope'", None)])
        assert rows[1]["deprecated"] == 7 and n == 0
        rows, n = db.read_then_write(
            (sql, None), [("UPDATE platform SET deprecated = 3 WHERE name = 't1'", None)])
        db.defer("UPDATE platform SET deprecated = 8 WHERE name = 't2'")
        db.undo_writes()
    assert other.query(sql) == [{"name": "t1", "deprecated": 2},
                                {"name": "t2", "deprecated": 7}]


def test_connect_errors_name_the_database(mini_project):
    from boincpy.config import load_config
    cfg = load_config(str(mini_project))
    cfg.db_name = "bpt_does_not_exist"
    with pytest.raises(DatabaseError) as err:
        connect(cfg, driver="wire")
    assert "bpt_does_not_exist" in str(err.value)


@pytest.mark.parametrize("wire", [True, False], ids=["wire", "_mysql"])
def test_a_connection_limit_is_named_with_what_to_raise(mini_project, db_root_params, wire):
    """Each classic CGI in flight holds a connection: the account's (or the
    server's) connection limit is what an operator must raise."""
    import MySQLdb
    from boincpy.config import load_config
    from boincpy.db.connection import _ER_CON_COUNT, connect_error
    cfg = load_config(str(mini_project))
    user = "bpt_limit_%d" % os.getpid()
    root = MySQLdb.connect(**db_root_params)
    cur = root.cursor()
    cur.execute("CREATE USER %s@'localhost' IDENTIFIED BY 'pw' WITH MAX_USER_CONNECTIONS 1",
                (user,))
    cur.execute("GRANT ALL ON `%s`.* TO %%s@'localhost'" % cfg.db_name, (user,))
    cfg.db_user, cfg.db_passwd, cfg.db_host = user, "pw", "localhost"
    first = None
    try:
        first = connect(cfg, driver="wire" if wire else "mysql_c")
        with pytest.raises(DatabaseError) as err:
            connect(cfg, driver="wire" if wire else "mysql_c")
        assert "max_user_connections" in str(err.value)
        assert "MaxRequestWorkers" in str(err.value) and cfg.db_name in str(err.value)
    finally:
        if first is not None:
            first.close()
        cur.execute("DROP USER %s@'localhost'", (user,))
        root.close()
    # the server's own limit (max_connections, shared by every test here:
    # not lowered for real) reads the same way
    text = str(connect_error(MySQLdb.OperationalError(_ER_CON_COUNT, "Too many connections"),
                             {"db": cfg.db_name}))
    assert "max_connections" in text and "MaxRequestWorkers" in text


def test_light_layer_imports_none_of_the_heavy_modules(mini_project):
    code = ("import sys; from boincpy.config import load_config; from boincpy.db import connect; "
            "db = connect(load_config(%r), driver='wire'); db.query('SELECT * FROM platform'); "
            "print(' '.join(m for m in ('re', 'enum', 'decimal', 'datetime', 'contextlib', "
            "'MySQLdb.connections') if m in sys.modules)); import MySQLdb; "
            "print(MySQLdb.connect is not None)" % str(mini_project))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split("\n")
    assert out[0] == "" and out[1] == "True"    # and the full package still imports after
