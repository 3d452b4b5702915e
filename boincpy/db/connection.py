"""A thin layer over MySQLdb: one connection, dict rows, transactions, clear errors.

No ORM.  Callers write SQL with ``%s`` placeholders and pass parameters; the
driver quotes them.  Errors from the driver become :class:`DatabaseError`
carrying a sentence an operator can act on (which server, which database).
"""

import sys

from boincpy.cnum import php_truthy
from boincpy.errors import DatabaseError, DatabaseLostError, MissingTableError

# MySQL error codes worth a specific message.
_ER_CON_COUNT = 1040
_ER_USER_LIMIT_REACHED = 1226
_ER_ACCESS_DENIED = 1045
_ER_BAD_DB = 1049
_ER_NO_SUCH_TABLE = 1146
_CR_CONNECTION_ERROR = 2002
_CR_CONN_HOST_ERROR = 2003
_CR_SERVER_GONE = 2006
_CR_SERVER_LOST = 2013
_CR_SERVER_LOST_EXTENDED = 2055
_ER_SERVER_SHUTDOWN = 1053
_ER_CONNECTION_KILLED = 1927      # MariaDB's, to connections a shutdown ends
# The database server is gone (stopped, crashed, dropped this connection,
# unreachable): not a fault of the statement, so DatabaseLostError
LOST_CODES = frozenset((_CR_CONNECTION_ERROR, _CR_CONN_HOST_ERROR, _CR_SERVER_GONE,
                        _CR_SERVER_LOST, _CR_SERVER_LOST_EXTENDED, _ER_SERVER_SHUTDOWN,
                        _ER_CONNECTION_KILLED))

# Text columns come back as str, decoded once here rather than by each caller.
# BOINC's schema keeps most text in BLOB columns (xml_doc, stderr_out,
# global_prefs ...), which the server sends with the binary character set and
# MySQLdb would return as bytes.  They hold what clients and tools wrote, which
# is meant to be UTF-8 but is not checked by BOINC, so they are decoded with
# errors="replace": a bad byte becomes U+FFFD and nothing downstream (XML
# replies, web pages, logs, writing the value back) can fail on it.
# ("surrogateescape" would keep such bytes for a write-back, but every later
# encode without that handler -- the driver's quoting, a page, a reply --
# would raise on them.)  boincpy itself only ever writes valid UTF-8: the
# scheduler decodes client text with "replace" before storing it.
# Text (non-binary) columns are already valid UTF-8 (the server converts them
# to the connection's utf8mb4), so they keep the driver's fast str path.
# The schema has no column of binary data; one added later would need its
# own converter (or SELECT HEX(column)), not this one.
_FIELD_TYPES_TEXT = (15, 249, 250, 251, 252, 253, 254)   # VARCHAR, *BLOB, VAR_STRING, STRING
_BINARY_FLAG = 128


def blob_text(data):
    """A binary-charset column value (bytes) as text: UTF-8, bad bytes as U+FFFD."""
    return data.decode("utf-8", "replace")


TEXT_CONVERTER = ((_BINARY_FLAG, blob_text), (None, str))
TEXT_CONVERSIONS = dict.fromkeys(_FIELD_TYPES_TEXT, TEXT_CONVERTER)


def read_text_as_str(conn):
    """Make a MySQLdb connection return text and BLOB columns as str (see
    TEXT_CONVERSIONS); its later results only.  Returns ``conn``."""
    conn.converter.update(TEXT_CONVERSIONS)
    return conn


def split_host(host):
    """(host, port) of BOINC's ``db_host`` ("name", "name:port", "[v6]:port",
    a bare IPv6 address); port 0 when none is given.  The one reader of a
    database host setting (config.xml, make_project's and the demo's options)."""
    host = (host or "").strip()
    if host.startswith("["):
        name, _, rest = host[1:].partition("]")
        port = rest[1:] if rest.startswith(":") else ""
    elif host.count(":") == 1:
        name, _, port = host.partition(":")
    else:
        name, port = host, ""
    if port and not port.isdigit():
        raise DatabaseError("database host %r: the port %r is not a number" % (host, port))
    return name, int(port or 0)


def server_params(host, socket, user, passwd, database=None):
    """MySQLdb keyword arguments for a database server: ``host`` of "" or
    "localhost" means the local socket (``socket`` if set), as in BOINC."""
    params = {"user": user, "passwd": passwd, "charset": "utf8mb4",
              "use_unicode": True, "autocommit": True}
    if database is not None:
        params["db"] = database
    name, port = split_host(host)
    if port:
        params["port"] = port
    if name and name != "localhost":
        params["host"] = name
    elif socket:
        params["unix_socket"] = socket
    else:
        params["host"] = "localhost"
    return params


def connect_params(cfg, replica=False):
    """MySQLdb keyword arguments for the project's database (or its read replica).

    ``cfg`` is a :class:`boincpy.config.Config`.  ``db_host`` of "" or
    "localhost" means the local socket (``db_socket`` if set), as in BOINC.
    """
    prefix = "replica_db_" if replica else "db_"
    return server_params(getattr(cfg, prefix + "host"), getattr(cfg, "db_socket", ""),
                         getattr(cfg, prefix + "user"), getattr(cfg, prefix + "passwd"),
                         getattr(cfg, prefix + "name"))


def _describe(params):
    where = params.get("unix_socket") or params.get("host", "localhost")
    if params.get("port"):
        where += ":%d" % params["port"]
    return "database '%s' as user '%s' on %s" % (params.get("db", ""),
                                                  params.get("user", ""), where)


def open_connection(params):
    """Open a MySQLdb connection, turning failures into DatabaseError."""
    import MySQLdb
    try:
        return MySQLdb.connect(**params)
    except MySQLdb.OperationalError as exc:
        raise connect_error(exc, params) from None


def open_server(params, who):
    """An administrative connection (``params`` from :func:`server_params`)
    for make_project and the demo; DatabaseError naming ``who`` if refused."""
    import MySQLdb
    try:
        return MySQLdb.connect(**params)
    except MySQLdb.Error as exc:
        raise DatabaseError("can't connect to the database server as %s: %s"
                            % (who, exc.args[-1])) from None


def connect_error(exc, params):
    """The DatabaseError (a sentence an operator can act on) for a failed connect."""
    code = exc.args[0] if exc.args else 0
    what = _describe(params)
    if code == _ER_ACCESS_DENIED:
        return DatabaseError("access denied to %s: check db_user and db_passwd "
                             "in config.xml" % what)
    if code == _ER_BAD_DB:
        return DatabaseError("%s does not exist: create it with make_project "
                             "(or check db_name in config.xml)" % what)
    if code in (_ER_CON_COUNT, _ER_USER_LIMIT_REACHED):
        # every classic CGI in flight holds a connection: Apache's
        # MaxRequestWorkers plus the daemons can outnumber the limit
        limit = ("the server's max_connections" if code == _ER_CON_COUNT
                 else "the account's limit (%s)" % exc.args[-1])
        return DatabaseError("the database server refused %s: too many connections; raise "
                             "%s above the web server's MaxRequestWorkers plus the "
                             "project's daemons" % (what, limit))
    if code in LOST_CODES:
        err = DatabaseLostError("cannot reach the database server for %s: is "
                                "MariaDB/MySQL running? (%s)" % (what, exc.args[-1]),
                                reason=exc.args[-1])
        err.mysql_code = code
        return err
    return DatabaseError("cannot connect to %s: %s" % (what, exc.args[-1]))


class Database:
    """One database connection with dict rows and explicit transactions."""

    # Several statements go to the server in one round trip (boincpy.db.lite
    # on a persistent connection): then a few things are worth doing otherwise.
    batching = False
    # Set once a statement found the server gone (DatabaseLostError): a
    # persistent process then opens a new connection for its next request
    lost = False

    def __init__(self, conn, params=None):
        self.conn = read_text_as_str(conn)     # whoever opened it
        self.params = params or {}
        self._in_transaction = False
        self._after_commit = []
        self._savepoints = 0

    @property
    def in_transaction(self):
        """Whether a ``with db.transaction():`` is open."""
        return self._in_transaction

    # -- statements -------------------------------------------------------

    def execute(self, sql, params=None):
        """Run one statement; return the number of affected rows."""
        cur = self.conn.cursor()
        try:
            return cur.execute(sql, params)
        except Exception as exc:
            raise self._wrap(exc, sql) from None
        finally:
            cur.close()

    def executemany(self, sql, seq):
        """Run one statement for each parameter tuple (multi-row INSERT when possible)."""
        cur = self.conn.cursor()
        try:
            return cur.executemany(sql, seq)
        except Exception as exc:
            raise self._wrap(exc, sql) from None
        finally:
            cur.close()

    def insert_many(self, table, columns, rows, max_bytes=1000000):
        """Multi-row INSERT of ``rows`` (tuples in ``columns`` order); return the count.

        Values are quoted by the driver (``literal``), as with ``execute``; the
        quoting of repeated numbers is memoised, because bulk job creation
        writes the same numbers for thousands of rows and per-value quoting
        otherwise dominates its run time.  Statements are cut at ``max_bytes``
        to stay under max_allowed_packet.
        """
        conn = self.conn
        literal = conn.literal
        string_literal = conn.string_literal
        encoding = "utf8"
        cache = {}
        head = ("INSERT INTO %s (%s) VALUES " % (table, ", ".join(columns))).encode()
        parts, size, total = [], len(head), 0
        for row in rows:
            vals = []
            for v in row:
                cls = v.__class__
                if cls is str:
                    vals.append(string_literal(v.encode(encoding)))
                elif v is None:
                    vals.append(b"NULL")
                else:
                    key = (cls, v)
                    lit = cache.get(key)
                    if lit is None:
                        lit = cache[key] = literal(v)
                    vals.append(lit)
            item = b"(" + b",".join(vals) + b")"
            if parts and size + len(item) > max_bytes:
                self._run_raw(head + b",".join(parts))
                parts, size = [], len(head)
            parts.append(item)
            size += len(item) + 1
            total += 1
        if parts:
            self._run_raw(head + b",".join(parts))
        return total

    def defer(self, sql, params=None):
        """Run a write whose outcome the caller doesn't read.  Here at once;
        a connection that can send several statements in one round trip
        (boincpy.db.lite on a persistent connection) holds it back, inside a
        transaction, until its next statement or the commit."""
        self.execute(sql, params)

    def deferring(self):
        """This database as the per-table write functions see it, with
        ``execute`` meaning :meth:`defer` (their rowcount is then None)."""
        return _Deferring(self)

    def _begin(self):
        self._run_plain(b"BEGIN")

    def _savepoint(self, name):
        self._run_plain(b"SAVEPOINT " + name)

    def _rollback_to_savepoint(self, name):
        self._run_plain(b"ROLLBACK TO SAVEPOINT " + name)

    def _commit(self):
        self.conn.commit()

    def _rollback(self):
        self.conn.rollback()

    def _run_plain(self, sql_bytes):
        """Send a statement that returns no rows (BEGIN, SAVEPOINT ...)."""
        try:
            self.conn.query(sql_bytes)
        except Exception as exc:
            raise self._wrap(exc, sql_bytes.decode("ascii", "replace")) from None

    def _run_raw(self, sql_bytes):
        cur = self.conn.cursor()
        try:
            cur.execute(sql_bytes)
        except Exception as exc:
            raise self._wrap(exc, sql_bytes[:80].decode("utf8", "replace")) from None
        finally:
            cur.close()

    def insert(self, sql, params=None):
        """Run an INSERT; return the new row's AUTO_INCREMENT id."""
        cur = self.conn.cursor()
        try:
            cur.execute(sql, params)
            return cur.lastrowid
        except Exception as exc:
            raise self._wrap(exc, sql) from None
        finally:
            cur.close()

    def query(self, sql, params=None):
        """Run a SELECT; return a list of dicts keyed by column name."""
        import MySQLdb.cursors
        cur = self.conn.cursor(MySQLdb.cursors.DictCursor)
        try:
            cur.execute(sql, params)
            return list(cur.fetchall())
        except Exception as exc:
            raise self._wrap(exc, sql) from None
        finally:
            cur.close()

    def query_if_table(self, sql, params=None):
        """:meth:`query`, or no rows when a table it reads is missing (a
        project made before the table existed: its pages show nothing)."""
        try:
            return self.query(sql, params)
        except MissingTableError:
            return []

    def stream(self, sql, params=None):
        """Run a SELECT and yield its rows (dicts) as the server sends them,
        without holding the whole result in memory (for tables of millions of
        rows).  No other statement may run on this connection until the
        iteration ends."""
        import MySQLdb.cursors
        cur = self.conn.cursor(MySQLdb.cursors.SSDictCursor)
        try:
            try:
                cur.execute(sql, params)
                while True:
                    rows = cur.fetchmany(1000)
                    if not rows:
                        return
                    yield from rows
            except MySQLdb.Error as exc:
                raise self._wrap(exc, sql) from None
        finally:
            cur.close()

    def query_one(self, sql, params=None):
        """Run a SELECT expected to match at most one row; return it or None."""
        rows = self.query(sql, params)
        return rows[0] if rows else None

    def query_value(self, sql, params=None, default=None):
        """Run a SELECT of one value (COUNT(*), MAX(id) ...); return it."""
        cur = self.conn.cursor()
        try:
            cur.execute(sql, params)
            row = cur.fetchone()
        except Exception as exc:
            raise self._wrap(exc, sql) from None
        finally:
            cur.close()
        if row is None or row[0] is None:
            return default
        return row[0]

    def insert_id(self):
        """The AUTO_INCREMENT id of this connection's last INSERT."""
        return self.conn.insert_id()

    def transaction(self):
        """All statements inside commit together or not at all (``with
        db.transaction():``).  A nested one is a savepoint of the outer: if it
        fails, its own statements are undone and the outer goes on."""
        return Transaction(self)

    def after_commit(self, action, committed_only=False):
        """Call ``action()`` once the current transaction has ended (at once
        outside one): a daemon woken before the commit would read the rows as
        they were (boincpy.doorbell).  With ``committed_only``, only if it
        ended in a commit."""
        if self._in_transaction:
            self._after_commit.append((action, committed_only))
        else:
            action()

    def close(self):
        """Close the connection (safe to call twice)."""
        if self.conn is not None:
            try:
                self.conn.close()
            except Exception:
                pass
            self.conn = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- errors -----------------------------------------------------------

    def _wrap(self, exc, sql):
        """The DatabaseError (a sentence an operator can act on) for a
        driver's error -- MySQLdb's or boincpy.db.wire's, both carrying
        (code, message); any other exception is returned as it is."""
        if not _driver_error(exc):
            return exc
        code = exc.args[0] if exc.args else 0
        text = exc.args[-1] if exc.args else str(exc)
        if code == _ER_NO_SUCH_TABLE:
            err = MissingTableError("%s (the BOINC schema is missing or incomplete in "
                                "%s: was the database made with make_project?)"
                                % (text, _describe(self.params)))
            err.mysql_code = code
            return err
        if code in LOST_CODES:
            self.lost = True
            err = DatabaseLostError("lost connection to database (%s)" % text,
                                    reason=text)
            err.mysql_code = code
            return err
        first = " ".join(sql.split())[:80]
        err = DatabaseError("database error %s: %s [in: %s]" % (code, text, first))
        err.mysql_code = code
        return err


def _driver_error(exc):
    """Whether ``exc`` comes from a database driver (without importing one:
    an error of a driver not loaded can't have been raised)."""
    wire = sys.modules.get("boincpy.db.wire")
    if wire is not None and isinstance(exc, wire.Error):
        return True
    exceptions = sys.modules.get("MySQLdb._exceptions")
    return exceptions is not None and isinstance(exc, exceptions.Error)


class Transaction:
    """The context manager behind :meth:`Database.transaction`.

    A class rather than ``contextlib.contextmanager``: contextlib costs every
    scheduler request ~3 ms of imports.  A nested transaction is a SAVEPOINT:
    the scheduler runs a whole request in one transaction (one commit, so one
    log flush, instead of one per statement), while the parts that may fail
    on their own (recording reports, storing trickles) undo only themselves.
    If the server has already rolled the whole transaction back (a
    deadlock), the savepoint is gone with everything before it: from then
    on every statement fails, and so does the outer transaction's end, so
    that nothing after the loss is committed and nobody takes the writes
    before it for done (a scheduler would acknowledge reports it lost).
    """

    def __init__(self, db):
        self.db = db
        self.outer = False
        self.savepoint = None

    def __enter__(self):
        db = self.db
        if db._in_transaction:
            db._savepoints += 1
            self.savepoint = b"boincpy_sp%d" % db._savepoints
            db._savepoint(self.savepoint)
            return db
        db._begin()
        db._in_transaction = True
        self.outer = True
        return db

    def __exit__(self, exc_type, exc, tb):
        db = self.db
        if not self.outer:                  # a savepoint
            db._savepoints -= 1
            if exc_type is not None and not isinstance(db.conn, _LostTransaction):
                try:
                    db._rollback_to_savepoint(self.savepoint)
                except Exception:
                    db.conn = _LostTransaction(db.conn, exc)
            return False
        lost = db.conn if isinstance(db.conn, _LostTransaction) else None
        if lost is not None:
            db.conn = lost.real
        committed = False
        try:
            if exc_type is not None or lost is not None:
                try:
                    db._rollback()
                except Exception:
                    pass
                if exc_type is None:
                    raise lost.error()
                return False
            try:
                db._commit()
            except Exception as err:
                raise db._wrap(err, "COMMIT") from None
            committed = True
            return False
        finally:
            db._in_transaction = False
            db._savepoints = 0
            actions, db._after_commit = db._after_commit, []
            for action, committed_only in actions:
                if committed or not committed_only:
                    action()


class _Deferring:
    """What :meth:`Database.deferring` returns."""

    __slots__ = ("db",)

    def __init__(self, db):
        self.db = db

    def execute(self, sql, params=None):
        self.db.defer(sql, params)


class Statements:
    """Stands in for a database to collect the statements the per-table
    functions would run (``execute`` records (sql, params) and returns
    None), to send them later in one batch
    (:meth:`boincpy.db.lite.LiteDatabase.read_then_write`)."""

    def __init__(self):
        self.list = []

    def execute(self, sql, params=None):
        self.list.append((sql, params))


class _LostTransaction:
    """Stands in for the connection of a transaction the server rolled back
    whole (see Transaction): every use fails until the transaction ends."""

    def __init__(self, real, cause):
        self.real = real
        self.cause_code = getattr(cause, "mysql_code", None)
        self.cause_reason = getattr(cause, "reason", str(cause))
        self.message = ("the database server rolled back the whole transaction (%s); "
                        "nothing of it was written" % cause)

    def error(self):
        """The DatabaseError every use raises (with the cause's MySQL code;
        DatabaseLostError if the server went away)."""
        if self.cause_code in LOST_CODES:
            err = DatabaseLostError(self.message, reason=self.cause_reason)
        else:
            err = DatabaseError(self.message)
        err.mysql_code = self.cause_code
        return err

    def __getattr__(self, name):
        raise self.error()


_REPLICA_PARTS = ("host", "name", "user", "passwd")


def web_replica_configured(cfg):
    """True if config.xml names a read replica the way BOINC's web code
    requires: all four of replica_db_host, _name, _user and _passwd written
    and non-empty (html/inc/boinc_db.inc BoincDb::get_aux: "must include all";
    PHP's truthiness, so "0" counts as empty).  The C++ programs instead fill
    missing replica settings from db_* (which Config already did)."""
    raw = cfg.raw
    return all(php_truthy(raw.get("replica_db_" + part, "")) for part in _REPLICA_PARTS)



REPLICA_LAG_WARN = 60       # seconds behind the primary before pages say so


def replica_state(db):
    """How current a replica connection's data is: (stale, text).

    From the server's own ``SHOW REPLICA STATUS`` (MariaDB 10.5+; the user
    needs REPLICA MONITOR, or SLAVE MONITOR, or SUPER): ``stale`` is True if
    replication has stopped (either thread not running) or is more than
    REPLICA_LAG_WARN seconds behind; None if the state can't be seen (not a
    replica, or no privilege), with ``text`` saying why."""
    from boincpy.errors import DatabaseError
    try:
        rows = db.query("SHOW REPLICA STATUS")
    except DatabaseError as exc:
        return None, "replication state not visible to this user (%s)" % exc
    if not rows:
        return None, "this server is not replicating from a primary"
    row = rows[0]

    def field(*names):
        for name in names:
            if name in row:
                return row[name]
        return None
    io = field("Slave_IO_Running", "Replica_IO_Running")
    sql = field("Slave_SQL_Running", "Replica_SQL_Running")
    lag = field("Seconds_Behind_Master", "Seconds_Behind_Primary")
    if io != "Yes" or sql != "Yes":
        error = field("Last_SQL_Error") or field("Last_IO_Error") or ""
        return True, "has stopped replicating (I/O thread: %s, SQL thread: %s%s)" % (
            io, sql, "; " + error if error else "")
    if lag is not None and int(lag) > REPLICA_LAG_WARN:
        return True, "is %d seconds behind the primary" % int(lag)
    return False, "is %s seconds behind the primary" % (lag if lag is not None else "?")
