"""The read replica (replica_db_host/name/user/passwd) against real MariaDB.

A second database on the same server, reached as a second user with a
password, stands in for the replica; it holds different rows from the main
database so each assertion shows which one a program read.

Where BOINC reads the replica:
  * db_dump and antique_file_deleter (C++): always, the replica settings
    defaulting to db_* (sched_config.cpp);
  * the ops pages that query the handle of BoincDb::get(true) (db_ops.inc
    lists and counts, cancel_workunits, errorwus, ...): only if config.xml
    gives all four settings, falling back to the main database if the
    replica refuses; the others (db_init(), BoincDb::get(): the index,
    list_new_users, the failure summaries ...) read the main database;
  * no account RPC (BoincDb::get() reopens the main database since 2024).
"""

import gzip
import secrets

import MySQLdb
import pytest

from boincpy.config import load_config
from boincpy.daemons.antique_file_deleter import AntiqueFileDeleter
from boincpy.daemons.db_dump import DEFAULT_SPEC, DbDump
from boincpy.db import connect, schema
from boincpy.db.connection import web_replica_configured
from boincpy.web import rpc
from boincpy.web.http import Request
from ops_fixtures import call as ops_call
from test_tasks import make_user, run_task, set_options

PASSWD = "replica-pw"


@pytest.fixture
def replica(mini_project, db_root_params):
    """(project, replica db name, replica user): a schema-loaded second
    database, a user with a password allowed on both, one distinct user row
    in each database ("main_only" in the main one, "replica_only" in the
    replica)."""
    cfg = load_config(str(mini_project))
    name = cfg.db_name + "_r"
    user = "bpr_" + secrets.token_hex(4)
    conn = MySQLdb.connect(**db_root_params)
    cur = conn.cursor()
    schema.create_database(conn, name)
    schema.load_schema(conn, name)
    cur.execute("CREATE USER %s@'localhost' IDENTIFIED BY %s", (user, PASSWD))
    for db in (name, cfg.db_name):
        cur.execute("GRANT ALL ON `%s`.* TO %%s@'localhost'" % db, (user,))
    conn.commit()
    main = connect(cfg)
    make_user(main, "main_only", total_credit=10.0)
    main.close()
    rep = MySQLdb.connect(db=name, **db_root_params)
    rep.cursor().execute(
        "INSERT INTO user (create_time, email_addr, name, authenticator, cross_project_id,"
        " total_credit, expavg_credit) VALUES (1600000000, 'r@example.org', 'replica_only',"
        " 'auth_replica', 'xpr', 20.0, 1.0)")
    rep.commit()
    rep.close()
    yield mini_project, name, user
    cur.execute("DROP USER IF EXISTS %s@'localhost'", (user,))
    cur.execute("DROP DATABASE IF EXISTS `%s`" % name)
    conn.close()


def use_replica(project, name, user, passwd=PASSWD, **more):
    options = dict(replica_db_host="localhost", replica_db_name=name,
                   replica_db_user=user, replica_db_passwd=passwd)
    options.update(more)
    set_options(project, **options)


def test_replica_settings_default_to_the_main_database(replica):
    project, name, user = replica
    cfg = load_config(str(project))
    assert cfg.replica_db_name == cfg.db_name and not web_replica_configured(cfg)
    use_replica(project, name, user)
    cfg = load_config(str(project))
    assert web_replica_configured(cfg)
    db = connect(cfg, replica=True)
    assert db.query_value("SELECT DATABASE()") == name
    db.close()


def test_ops_lists_read_the_replica(replica):
    project, name, user = replica
    body = str(ops_call(project, "db_action.php", query={"table": "user"}).body)
    assert "main_only" in body and "replica_only" not in body
    use_replica(project, name, user)
    body = str(ops_call(project, "db_action.php", query={"table": "user"}).body)
    assert "replica_only" in body and "main_only" not in body
    assert "1 rows match" in body


def test_ops_pages_read_where_boincs_read(replica):
    # the replica for what BOINC queries through BoincDb::get(true) (db_form's
    # lists, errorwus.php); the primary for pages BOINC opens with db_init()
    # or BoincDb::get() (list_new_users.php, the index, the failure summaries)
    project, name, user = replica
    use_replica(project, name, user)
    listed = str(ops_call(project, "db_action.php", query={"table": "user"}).body)
    assert "replica_only" in listed and "main_only" not in listed
    newest = str(ops_call(project, "list_new_users.php").body)
    assert "main_only" in newest and "replica_only" not in newest
    # the stand-in is not replicating: nothing to say about staleness
    assert "may be stale" not in listed


def test_ops_pages_use_the_main_database_unless_all_four_are_given(replica):
    # BoincDb::get_aux: "must include all"; replica_db_host missing here (the
    # C++ programs would take db_host and reach the replica)
    project, name, user = replica
    set_options(project, replica_db_name=name, replica_db_user=user,
                replica_db_passwd=PASSWD)
    db = connect(load_config(str(project)), replica=True)
    assert db.query_value("SELECT DATABASE()") == name
    db.close()
    body = str(ops_call(project, "db_action.php", query={"table": "user"}).body)
    assert "main_only" in body and "replica_only" not in body


def test_ops_pages_fall_back_to_the_main_database_if_the_replica_refuses(replica):
    project, name, user = replica
    use_replica(project, name, user, passwd="wrong")
    resp = ops_call(project, "db_action.php", query={"table": "user"})
    body = str(resp.body)
    assert resp.status.startswith("200")
    assert "main_only" in body and "replica_only" not in body


def test_db_dump_reads_the_replica(replica):
    project, name, user = replica
    (project / "db_dump_spec.xml").write_text(DEFAULT_SPEC)
    (project / "tmp_test").mkdir()
    (project / "html").mkdir()
    use_replica(project, name, user)
    status, log = run_task(DbDump, project, "-d", "3", "--dump_spec", "../db_dump_spec.xml",
                           cwd=project / "tmp_test")
    assert status == 0, log
    with gzip.open(project / "html" / "stats" / "user.gz", "rb") as f:
        users = f.read().decode()
    assert "<name>replica_only</name>" in users and "main_only" not in users


def test_db_dump_db_host_option_overrides_the_replica_host(replica):
    # db_dump --db_host H: the replica's name/user/passwd on host H
    project, name, user = replica
    (project / "db_dump_spec.xml").write_text(DEFAULT_SPEC)
    (project / "tmp_test").mkdir()
    (project / "html").mkdir()
    use_replica(project, name, user, replica_db_host="bpt-no-such-host.invalid")
    status, log = run_task(DbDump, project, "--dump_spec", "../db_dump_spec.xml",
                           cwd=project / "tmp_test")
    assert status != 0 and "bpt-no-such-host.invalid" in log
    status, log = run_task(DbDump, project, "--dump_spec", "../db_dump_spec.xml",
                           "--db_host", "localhost", cwd=project / "tmp_test")
    assert status == 0, log


def test_antique_file_deleter_reads_the_replica(replica):
    project, name, user = replica
    use_replica(project, name, user, replica_db_name=name + "_missing")
    status, log = run_task(AntiqueFileDeleter, project, "--dry_run")
    assert status != 0 and name + "_missing" in log
    use_replica(project, name, user)
    status, log = run_task(AntiqueFileDeleter, project, "--dry_run")
    assert status == 0, log


def test_account_rpcs_read_the_main_database(replica):
    project, name, user = replica
    use_replica(project, name, user)
    cfg = load_config(str(project))
    req = Request.of(method="GET", get={"account_key": "auth_main_only"}, post={},
                     environ={"REMOTE_ADDR": "127.0.0.1"})
    body = rpc.handle("am_get_info", cfg, req).body
    assert "<name>main_only</name>" in body
    req = Request.of(method="GET", get={"account_key": "auth_replica"}, post={},
                     environ={"REMOTE_ADDR": "127.0.0.1"})
    assert "<error_num>-136</error_num>" in rpc.handle("am_get_info", cfg, req).body
    req = Request.of(method="GET", get={"format": "xml", "userid": "1"}, post={},
                     environ={"REMOTE_ADDR": "127.0.0.1"})
    assert "<name>main_only</name>" in rpc.handle("show_user", cfg, req).body
