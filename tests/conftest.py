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
