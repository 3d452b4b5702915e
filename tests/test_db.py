"""The database layer against a real MariaDB/MySQL server."""

import MySQLdb
import pytest

from boincpy.db import Database, connect, schema
from boincpy.db import queries
from boincpy.db.workunit import insert_workunits
from boincpy.db.rows import App, Host, Platform, Workunit
from boincpy.errors import DatabaseError


@pytest.fixture
def db(schema_db):
    return schema_db()


def test_schema_has_core_tables_and_indexes(db):
    assert schema.missing_tables(db) == []
    idx = {r["Key_name"] for r in db.query("SHOW INDEX FROM result")}
    assert {"name", "res_wuid", "ind_res_st", "res_hostid_id"} <= idx
    idx = {r["Key_name"] for r in db.query("SHOW INDEX FROM workunit")}
    assert {"wu_timeout", "wu_val", "wu_assim", "wu_filedel"} <= idx


def test_schema_loads_in_strict_mode_and_partial_inserts_work(db):
    db.execute("SET SESSION sql_mode='STRICT_ALL_TABLES'")
    # an INSERT naming few columns must not be rejected by strict mode
    db.execute("INSERT INTO app (name) VALUES ('a')")
    db.execute("INSERT INTO workunit (appid, name) VALUES (1, 'w')")
    wu = db.query_one("SELECT * FROM workunit WHERE name='w'")
    assert wu["size_class"] == -1 and wu["transition_time"] == 0


def test_insert_and_lookup_rows(db):
    pid = queries.insert_row(db, Platform(name="x86_64-pc-linux-gnu",
                                          user_friendly_name="Linux"))
    assert pid > 0
    p = queries.lookup_platform_by_name(db, "x86_64-pc-linux-gnu")
    assert p.id == pid and p.user_friendly_name == "Linux"
    assert queries.lookup_platform_by_name(db, "nope") is None
    hid = queries.insert_row(db, Host(userid=3, misc=""))
    assert db.query_value("SELECT userid FROM host WHERE id=%s", (hid,)) == 3


def test_bulk_insert_workunits(db):
    aid = queries.insert_row(db, App(name="uc"))
    wus = [Workunit(appid=aid, name="wu_%d" % i, xml_doc="<workunit/>") for i in range(500)]
    insert_workunits(db, wus)
    assert db.query_value("SELECT COUNT(*) FROM workunit WHERE appid=%s", (aid,)) == 500


def test_transaction_rolls_back_on_error(db):
    queries.insert_row(db, App(name="keep"))
    with pytest.raises(DatabaseError):
        with db.transaction():
            queries.insert_row(db, App(name="gone"))
            queries.insert_row(db, App(name="keep"))   # duplicate name
    names = {r["name"] for r in db.query("SELECT name FROM app")}
    assert names == {"keep"}


def test_duplicate_key_error_names_the_problem(db):
    queries.insert_row(db, App(name="x"))
    with pytest.raises(DatabaseError) as e:
        queries.insert_row(db, App(name="x"))
    assert "Duplicate" in e.value.message and e.value.mysql_code == 1062


def test_check_schema_reports_missing_tables(db_root_params, scratch_db_name):
    root = MySQLdb.connect(**db_root_params)
    schema.create_database(root, scratch_db_name)
    root.close()
    d = Database(MySQLdb.connect(db=scratch_db_name, **db_root_params),
                 dict(db_root_params, db=scratch_db_name))
    with pytest.raises(DatabaseError) as e:
        schema.check_schema(d)
    assert "workunit" in e.value.message and "make_project" in e.value.message
    with pytest.raises(DatabaseError) as e:
        d.query("SELECT * FROM result")
    assert "schema" in e.value.message
    d.close()


def test_create_database_refuses_existing(db_root_params, scratch_db_name):
    root = MySQLdb.connect(**db_root_params)
    schema.create_database(root, scratch_db_name)
    with pytest.raises(DatabaseError, match="already exists"):
        schema.create_database(root, scratch_db_name)
    schema.create_database(root, scratch_db_name, drop_first=True)
    root.close()


class _Cfg:
    def __init__(self, **kw):
        base = dict(db_name="", db_user="", db_passwd="", db_host="", db_socket="",
                    replica_db_name="", replica_db_user="", replica_db_passwd="",
                    replica_db_host="")
        base.update(kw)
        self.__dict__.update(base)


def test_connect_with_project_user_and_clear_errors(db_root_params, scratch_db_name):
    root = MySQLdb.connect(**db_root_params)
    schema.create_database(root, scratch_db_name)
    schema.load_schema(root, scratch_db_name)
    schema.grant_user(root, scratch_db_name, scratch_db_name, "pw123")
    root.close()
    try:
        cfg = _Cfg(db_name=scratch_db_name, db_user=scratch_db_name, db_passwd="pw123",
                   db_host="127.0.0.1")
        d = connect(cfg)
        schema.check_schema(d)
        d.close()
        bad = _Cfg(db_name=scratch_db_name, db_user=scratch_db_name, db_passwd="wrong",
                   db_host="127.0.0.1")
        with pytest.raises(DatabaseError, match="access denied"):
            connect(bad)
        missing = _Cfg(db_name=scratch_db_name + "x", db_user="root", db_passwd="",
                       db_socket=db_root_params.get("unix_socket", ""))
        if "unix_socket" in db_root_params:
            with pytest.raises(DatabaseError, match="does not exist"):
                connect(missing)
        down = _Cfg(db_name="x", db_user="u", db_passwd="p", db_host="127.0.0.1:1")
        with pytest.raises(DatabaseError, match="cannot reach"):
            connect(down)
    finally:
        root = MySQLdb.connect(**db_root_params)
        cur = root.cursor()
        for h in ("localhost", "127.0.0.1"):
            cur.execute("DROP USER IF EXISTS %s@%s", (scratch_db_name, h))
        root.close()


def test_insert_many_quotes_like_the_driver_and_splits_statements(db):
    rows = [(0, 1, "o'brien \\ %s é %d" % ("x" * 50, i), "<x>&'\"</x>", 1.5e12, None)
            for i in range(200)]
    n = db.insert_many("workunit", ("create_time", "appid", "name", "xml_doc",
                                    "rsc_fpops_est", "opaque"),
                       [r[:5] + (0.25,) for r in rows], max_bytes=2000)
    assert n == 200
    got = db.query("SELECT name, xml_doc, rsc_fpops_est, opaque FROM workunit ORDER BY id")
    assert [g["name"] for g in got] == [r[2] for r in rows]
    assert got[0]["xml_doc"] == "<x>&'\"</x>" and got[0]["rsc_fpops_est"] == 1.5e12
    assert got[0]["opaque"] == 0.25


def test_one_reader_of_database_hosts():
    from boincpy.db.connection import server_params, split_host
    from boincpy.errors import DatabaseError
    assert split_host("db.example.org") == ("db.example.org", 0)
    assert split_host("db.example.org:3307") == ("db.example.org", 3307)
    assert split_host("[::1]:3307") == ("::1", 3307) and split_host("::1") == ("::1", 0)
    assert split_host("") == ("", 0)
    with pytest.raises(DatabaseError, match="port 'x' is not a number"):
        split_host("db:x")
    # "" and localhost: the socket, as BOINC
    assert server_params("", "/run/s.sock", "u", "p")["unix_socket"] == "/run/s.sock"
    assert server_params("localhost:3307", "", "u", "p", "d") == {
        "user": "u", "passwd": "p", "charset": "utf8mb4", "use_unicode": True,
        "autocommit": True, "db": "d", "port": 3307, "host": "localhost"}
    assert server_params("10.0.0.1:3310", "/s", "u", "p")["host"] == "10.0.0.1"


def test_a_missing_table_is_its_own_error_and_query_if_table_reads_nothing(db):
    # a project made before a table existed (the community's, login_failure):
    # pages read nothing from it, every other database error still raises
    from boincpy.errors import DatabaseError, MissingTableError
    db.execute("DROP TABLE notify")
    with pytest.raises(MissingTableError, match="notify"):
        db.query("SELECT * FROM notify")
    assert issubclass(MissingTableError, DatabaseError)
    assert db.query_if_table("SELECT * FROM notify WHERE userid = %s", (1,)) == []
    assert db.query_if_table("SELECT COUNT(*) AS n FROM user")[0]["n"] == 0
    with pytest.raises(DatabaseError) as err:
        db.query_if_table("SELECT no_such_column FROM user")
    assert not isinstance(err.value, MissingTableError)
