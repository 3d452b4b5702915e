"""Create a project database, load BOINC's schema into it, check it is there.

Used by make_project (with an administrative account) and by every program
that opens the project's database (``check_schema``), so that a missing or
half-made schema is reported once, clearly, instead of as a random SQL error.
"""

import os
import re

from boincpy.errors import DatabaseError

SCHEMA_FILE = os.path.join(os.path.dirname(__file__), "schema.sql")

# Tables the scheduler and daemons cannot run without.
CORE_TABLES = ("platform", "app", "app_version", "user", "team", "host",
               "host_app_version", "workunit", "result", "batch",
               "msg_from_host", "msg_to_host", "assignment",
               "credit_user", "credit_team")

_NAME_RE = re.compile(r"^[A-Za-z0-9_$]{1,64}$")


def schema_statements(path=SCHEMA_FILE):
    """The CREATE statements of schema.sql, comments removed, in file order."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    lines = [ln for ln in text.splitlines() if not ln.lstrip().startswith("--")]
    stmts = []
    for chunk in "\n".join(lines).split(";\n"):
        chunk = chunk.strip().rstrip(";").strip()
        if chunk:
            stmts.append(chunk)
    return stmts


def check_name(name, what="database name"):
    """Refuse identifiers that would need quoting (they end up in SQL text)."""
    if not _NAME_RE.match(name or ""):
        raise DatabaseError("invalid %s %r: use letters, digits and '_' only" % (what, name))
    return name


def create_database(root_conn, db_name, drop_first=False):
    """CREATE DATABASE db_name (utf8mb4) with an administrative MySQLdb connection.

    Refuses if it exists, unless ``drop_first``.
    """
    check_name(db_name)
    cur = root_conn.cursor()
    try:
        cur.execute("SHOW DATABASES LIKE %s", (db_name,))
        exists = cur.fetchone() is not None
        if exists and not drop_first:
            raise DatabaseError("database %s already exists (use --drop_db_first to "
                                "replace it)" % db_name)
        if exists:
            cur.execute("DROP DATABASE `%s`" % db_name)
        cur.execute("CREATE DATABASE `%s` CHARACTER SET utf8mb4 COLLATE "
                    "utf8mb4_general_ci" % db_name)
    finally:
        cur.close()


def load_schema(conn, db_name=None):
    """Create every table of schema.sql in the current (or named) database.

    Runs in strict SQL mode so that the schema is proven to load where
    operators run strict servers.
    """
    cur = conn.cursor()
    try:
        if db_name:
            cur.execute("USE `%s`" % check_name(db_name))
        cur.execute("SET SESSION sql_mode = 'STRICT_TRANS_TABLES,STRICT_ALL_TABLES,"
                    "NO_ZERO_DATE,NO_ZERO_IN_DATE,ERROR_FOR_DIVISION_BY_ZERO'")
        for stmt in schema_statements():
            try:
                cur.execute(stmt)
            except Exception as exc:
                table = stmt.split("(")[0].strip()
                raise DatabaseError("schema.sql: %s failed: %s" % (table, exc)) from None
    finally:
        cur.close()


def ensure_table(db, name):
    """Create table ``name`` as schema.sql declares it if the database lacks it
    (a project made before boincpy used the table); safe when two processes
    do it at once."""
    for stmt in schema_statements():
        if stmt.split("(")[0].split() == ["create", "table", name]:
            db.execute(stmt.replace("create table", "create table if not exists", 1))
            return
    raise DatabaseError("schema.sql declares no table %s" % name)


def missing_tables(db):
    """Names of core tables absent from ``db`` (a boincpy.db.Database)."""
    present = {r["TABLE_NAME"].lower() for r in db.query(
        "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE()")}
    return [t for t in CORE_TABLES if t not in present]


def check_schema(db):
    """Raise DatabaseError naming the missing tables if the BOINC schema is absent."""
    missing = missing_tables(db)
    if missing:
        raise DatabaseError("database %s lacks BOINC tables (%s): was it created "
                            "with make_project?" % (db.params.get("db", "?"),
                                                    ", ".join(missing)))


def grant_user(root_conn, db_name, user, passwd, hosts=("localhost", "127.0.0.1")):
    """Create (or re-password) ``user`` and give it all rights on ``db_name``.

    The CGIs run as www-data and cannot use root's socket login, so a project
    needs a password account of its own.
    """
    check_name(db_name)
    check_name(user, "database user")
    cur = root_conn.cursor()
    try:
        for host in hosts:
            cur.execute("CREATE USER IF NOT EXISTS %s@%s IDENTIFIED BY %s",
                        (user, host, passwd))
            cur.execute("ALTER USER %s@%s IDENTIFIED BY %s", (user, host, passwd))
            cur.execute("GRANT ALL PRIVILEGES ON `%s`.* TO %%s@%%s" % db_name,
                        (user, host))
    finally:
        cur.close()
