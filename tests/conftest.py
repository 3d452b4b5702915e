"""Shared fixtures: a real MariaDB/MySQL server, throwaway databases and projects.

Tests connect as root over the local socket (CI runs as the OS root) unless
BOINCPY_TEST_DB_HOST / _USER / _PASSWD / _SOCKET say otherwise.
"""

import os
import secrets

import MySQLdb
import pytest


def root_db_params():
    """Connection keyword arguments for an administrative database account."""
    params = {
        "user": os.environ.get("BOINCPY_TEST_DB_USER", "root"),
        "passwd": os.environ.get("BOINCPY_TEST_DB_PASSWD", ""),
    }
    host = os.environ.get("BOINCPY_TEST_DB_HOST")
    if host:
        params["host"] = host
        params["port"] = int(os.environ.get("BOINCPY_TEST_DB_PORT", "3306"))
    else:
        params["unix_socket"] = os.environ.get(
            "BOINCPY_TEST_DB_SOCKET", "/run/mysqld/mysqld.sock")
    return params


@pytest.fixture(scope="session")
def db_root_params():
    """Root connection parameters; skips nothing: a missing server is a failure."""
    params = root_db_params()
    conn = MySQLdb.connect(**params)
    conn.close()
    return params


@pytest.fixture
def scratch_db_name(db_root_params):
    """A fresh, not yet created database name; dropped after the test."""
    name = "bpt_" + secrets.token_hex(4)
    yield name
    conn = MySQLdb.connect(**db_root_params)
    try:
        conn.cursor().execute("DROP DATABASE IF EXISTS `%s`" % name)
    finally:
        conn.close()


EXAMPLE_IN = """<input_template>
    <file_info>
        <number>0</number>
    </file_info>
    <workunit>
        <file_ref>
            <file_number>0</file_number>
            <open_name>in</open_name>
        </file_ref>
        <command_line>-cpu_time 30</command_line>
    </workunit>
</input_template>
"""

EXAMPLE_OUT = """<output_template>
    <file_info>
        <name><OUTFILE_0/></name>
        <generated_locally/>
        <upload_when_present/>
        <max_nbytes>5000000</max_nbytes>
        <url><UPLOAD_URL/></url>
    </file_info>
    <result>
        <file_ref>
            <file_name><OUTFILE_0/></file_name>
            <open_name>out</open_name>
        </file_ref>
    </result>
</output_template>
"""


@pytest.fixture
def mini_project(tmp_path, db_root_params, scratch_db_name):
    """A hand-built project (no make_project): config.xml, dirs, schema, one
    platform and the app 'example_app' with BOINC's example templates.

    The database is reached as the admin account, so tools can run in-process.
    """
    from boincpy.config import write_config
    from boincpy.db import schema

    root = tmp_path / "proj"
    for d in ("download", "upload", "templates", "keys", "apps", "cgi-bin", "log_test"):
        (root / d).mkdir(parents=True)
    (root / "templates" / "example_app_in").write_text(EXAMPLE_IN)
    (root / "templates" / "example_app_out").write_text(EXAMPLE_OUT)
    options = {
        "long_name": "Test project", "master_url": "http://127.0.0.1/test/",
        "download_url": "http://127.0.0.1/test/download",
        "upload_url": "http://127.0.0.1/test_cgi/file_upload_handler",
        "db_name": scratch_db_name, "db_user": db_root_params["user"],
        "db_passwd": db_root_params["passwd"],
        "db_host": ("%s:%d" % (db_root_params["host"], db_root_params["port"])
                    if "host" in db_root_params else ""),
        "db_socket": db_root_params.get("unix_socket", ""),
        "uldl_dir_fanout": 1024, "host": "localhost",
        "download_dir": str(root / "download"), "upload_dir": str(root / "upload"),
        "key_dir": str(root / "keys"), "app_dir": str(root / "apps"),
        "log_dir": str(root / "log_test"),
    }
    write_config(str(root), options)
    conn = MySQLdb.connect(**db_root_params)
    schema.create_database(conn, scratch_db_name)
    schema.load_schema(conn, scratch_db_name)
    cur = conn.cursor()
    cur.execute("INSERT INTO platform (create_time, name, user_friendly_name) "
                "VALUES (0, 'x86_64-pc-linux-gnu', 'Linux on x86_64')")
    cur.execute("INSERT INTO app (create_time, name, user_friendly_name) "
                "VALUES (0, 'example_app', 'Example app')")
    conn.commit()
    conn.close()
    return root
