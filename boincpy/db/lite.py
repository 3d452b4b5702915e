"""A Database on MySQLdb's C layer alone, or on no library at all, for the scheduler.

:func:`boincpy.db.connect`'s default goes through MySQLdb's
Python layer, whose first connection imports ``re``, ``enum``, ``decimal``
and ``datetime``: about 15 ms, a third of what a scheduler request may cost.
This module talks to ``MySQLdb._mysql`` directly (loaded without the
package's ``__init__``), converts column values itself (integers, doubles,
text and BLOB columns as str, with the full layer's TEXT_CONVERTER) and quotes
``%s`` parameters with the server connection's own escaping.  The methods
are those of :class:`~boincpy.db.connection.Database`, which it subclasses.

A classic CGI (a process per request) doesn't even load ``_mysql`` (~3 ms of
shared libraries): :mod:`boincpy.db.wire` speaks the protocol itself, with
the same conversions, and ``_mysql`` is the fallback when the server wants
what wire doesn't do (``wire.Unsupported``).  A persistent process keeps
``_mysql``, whose C parsing pays off over many requests.
"""

from boincpy.db import wire as _wire
from boincpy.db.connection import (TEXT_CONVERSIONS, Database, connect_error,
                                   connect_params)
from boincpy.errors import DatabaseError

_CR_SERVER_GONE = 2006
_CR_SERVER_LOST = 2013
_READS = (b"SELECT", b"select")

# MySQL field types -> Python (the C layer's converter table)
_CONV = {1: int, 2: int, 3: int, 8: int, 9: int, 13: int, 16: int,
         0: float, 4: float, 5: float, 246: float, 245: str}
_CONV.update(TEXT_CONVERSIONS)


def _mysql_module():
    """``MySQLdb._mysql``, MySQLdb's C layer (imported with its package: a
    persistent process pays that once; a CGI uses :mod:`boincpy.db.wire`)."""
    from MySQLdb import _mysql
    return _mysql


# CLIENT_MULTI_STATEMENTS: several statements in one COM_QUERY
_MULTI_STATEMENTS = 1 << 16
_BEGIN = b"BEGIN"
_TRY = b"boincpy_try"            # read_then_write's savepoint


class LiteDatabase(Database):
    """Database over a ``MySQLdb._mysql`` connection (same methods).

    On ``_mysql`` (a persistent process) a transaction costs fewer round
    trips: its BEGIN, its savepoints and the writes whose outcome nobody
    reads (:meth:`defer`: the host row, the quota counts) wait and go to the
    server in one COM_QUERY with the next statement or with the COMMIT.
    Every statement is a round trip of two processes each woken in turn; a
    request that gets a job makes five instead of ten.  wire (a CGI) sends
    each alone.
    """

    def __init__(self, conn, params=None):
        super().__init__(conn, params)
        self._pending = []          # statements (bytes) waiting for the next one
        self._began = True          # False while the transaction's BEGIN is pending
        # (a reconnection opens the same kind of connection)
        self.batching = not isinstance(conn, _wire.Connection)

    def defer(self, sql, params=None):
        # not inside a savepoint: a failure there must undo only the savepoint,
        # so it has to happen there
        if self._in_transaction and not self._savepoints and self.batching:
            self._pending.append(self._sql(sql, params))
        else:
            self.execute(sql, params)

    def _begin(self):
        if self.batching:
            self._pending.append(_BEGIN)
            self._began = False
        else:
            self._run_plain(_BEGIN)

    def _savepoint(self, name):
        if self.batching:
            self._pending.append(b"SAVEPOINT " + name)
        else:
            self._run_plain(b"SAVEPOINT " + name)

    def _rollback_to_savepoint(self, name):
        mark = b"SAVEPOINT " + name
        if mark in self._pending:           # not sent yet: nothing to undo
            del self._pending[self._pending.index(mark):]
        else:
            self._run_plain(b"ROLLBACK TO SAVEPOINT " + name)

    def _commit(self):
        pending, self._pending = self._pending, []
        if pending == [_BEGIN]:
            self._began = True
            return                          # nothing happened in the transaction
        if pending:
            self._run_batch(pending + [b"COMMIT"])
        else:
            self.conn.commit()

    def _rollback(self):
        self._pending = []                  # never sent: nothing to undo
        if not self._began:
            self._began = True
            return                          # the server never saw the BEGIN
        self.conn.rollback()

    def _run_plain(self, sql_bytes):
        self._run(sql_bytes, None)

    def _literal(self, value):
        if value is None:
            return b"NULL"
        cls = value.__class__
        if cls is str:
            return self.conn.string_literal(value.encode("utf-8"))
        if cls is bytes or cls is bytearray:
            return self.conn.string_literal(bytes(value))
        if cls is bool:
            return b"1" if value else b"0"
        if cls is int:
            return str(value).encode()
        if cls is float:
            if value != value or value in (float("inf"), float("-inf")):
                raise ValueError("can't store %r in the database" % value)
            return repr(value).encode()
        if isinstance(value, int):
            return str(int(value)).encode()
        if isinstance(value, float):
            return repr(float(value)).encode()
        return self.conn.string_literal(str(value).encode("utf-8"))

    def _sql(self, sql, params):
        if params is None:
            return sql.encode("utf-8") if isinstance(sql, str) else sql
        if isinstance(params, dict):
            raise TypeError("LiteDatabase takes positional %s parameters only")
        text = sql.encode("utf-8") if isinstance(sql, str) else sql
        return text % tuple(self._literal(p) for p in params)

    # Who hears of a reconnection (a persistent process's log, see
    # boincpy.resident): None, or a function called with no argument.
    on_reconnect = None

    def _run(self, sql, params):
        text = self._sql(sql, params)
        if self._pending:
            statements, self._pending = self._pending + [text], []
            self._run_batch(statements)
            return
        try:
            self.conn.query(text)
        except Exception as exc:
            if not self._reopened(exc, text):
                raise self._wrap(exc, sql if isinstance(sql, str) else sql.decode(
                    "utf-8", "replace")) from None
            try:
                self.conn.query(text)
            except Exception as exc2:
                raise self._wrap(exc2, sql if isinstance(sql, str) else sql.decode(
                    "utf-8", "replace")) from None

    def _run_batch(self, statements, reads=None):
        """Send ``statements`` in one COM_QUERY.  ``reads`` ({index: fetch_row
        ``how``}) names the statements whose rows are returned, a list each,
        in order; unless the last statement is one of them, its result is
        then the connection's current result.  The first statement that
        fails raises (the server runs none after it)."""
        text = b";\n".join(statements)
        conn = self.conn
        try:
            try:
                conn.query(text)
            except Exception as exc:
                if not self._reopened(exc, text):
                    raise
                conn = self.conn
                conn.query(text)
        except Exception as exc:
            raise self._wrap(exc, statements[0].decode("utf-8", "replace")) from None
        self._began = True
        reads = reads or {}
        last = len(statements) - 1
        out = []
        for i, statement in enumerate(statements):
            if i:
                try:
                    conn.next_result()
                except Exception as exc:
                    raise self._wrap(exc, statement.decode("utf-8", "replace")) from None
            if i in reads:
                out.append(_rows(conn, reads[i]))
            elif i < last:
                _rows(conn, 0)              # read and dropped: the next one's comes after
        return out

    def _reopened(self, exc, text):
        """After "server has gone away" outside a transaction: open a new
        connection (True) so the statement can be sent again.  The statement
        never reached the server (2006 is reported when sending), so sending
        it again does not run it twice; a connection lost while the server ran
        a statement (2013) is retried only for a SELECT, which changes nothing.
        This is what BOINC gets from the client library's MYSQL_OPT_RECONNECT;
        it is also how a persistent process finds that the server restarted
        or dropped its idle connection: its first statement is a SELECT."""
        code = exc.args[0] if getattr(exc, "args", None) else 0
        # a transaction whose BEGIN is in this very statement has done nothing yet
        if (self._in_transaction and self._began) or not (
                code == _CR_SERVER_GONE
                or (code == _CR_SERVER_LOST and text.lstrip().startswith(_READS))):
            return False
        try:
            conn = _open(self.params, wire=isinstance(self.conn, _wire.Connection))
        except DatabaseError:
            return False            # the caller's DatabaseLostError says it all
        # told only once a new connection is open: a server that is still
        # down gives one line (the caller's error), not two
        if self.on_reconnect is not None:
            self.on_reconnect()
        try:
            self.conn.close()
        except Exception:
            pass
        self.conn = conn
        return True

    def ping(self):
        """True if the server still answers on this connection."""
        try:
            self.conn.ping()
            return True
        except Exception:
            return False

    def execute(self, sql, params=None):
        """Run one statement; return the number of affected rows."""
        self._run(sql, params)
        result = self.conn.store_result()
        if result is not None:
            result.fetch_row(0)
            return 0
        return self.conn.affected_rows()

    def executemany(self, sql, seq):
        """Run one statement for each parameter tuple; return the rows affected."""
        return sum(self.execute(sql, params) for params in seq)

    def insert(self, sql, params=None):
        """Run an INSERT; return the new row's AUTO_INCREMENT id."""
        self._run(sql, params)
        return self.conn.insert_id()

    def query(self, sql, params=None):
        """Run a SELECT; return a list of dicts keyed by column name."""
        self._run(sql, params)
        return _rows(self.conn)

    def query_many(self, reads):
        """Run several SELECTs; return each one's rows (a list), in order.

        ``reads`` is [(sql, params, joined)]; with ``joined`` true a row is
        ``{table: {column: value}}`` as :meth:`query_tables` gives it.  On a
        persistent connection they go to the server in one round trip, with
        any statement deferred before them; wire sends each alone.  Each read
        sees the database as the one before it left it, nothing more: reads
        sent together are not one snapshot unless a transaction makes them so.
        """
        texts = [self._sql(sql, params) for sql, params, _ in reads]
        hows = [2 if joined else 1 for _, _, joined in reads]
        if self.batching and (len(texts) > 1 or self._pending):
            statements, self._pending = self._pending + texts, []
            first = len(statements) - len(texts)
            out = self._run_batch(statements, {first + i: how for i, how in enumerate(hows)})
        else:
            out = []
            for text, how in zip(texts, hows):
                self._run(text, None)
                out.append(_rows(self.conn, how))
        for rows, how in zip(out, hows):
            if how == 2:
                rows[:] = [_split_tables(row) for row in rows]
        return out

    def read_then_write(self, read, writes):
        """A read and the writes wanted if it turns out as expected, in one
        round trip when the connection batches: SELECT ``read`` (sql,
        params), then a savepoint, then ``writes`` [(sql, params)].  Returns
        (the read's rows, the rows the last write changed).  If the rows show
        the writes were not wanted after all, :meth:`undo_writes` takes them
        back.  Inside a transaction only (the savepoint is its)."""
        if not self._in_transaction:
            raise DatabaseError("read_then_write outside a transaction")
        texts = ([self._sql(read[0], read[1]), b"SAVEPOINT " + _TRY]
                 + [self._sql(sql, params) for sql, params in writes])
        if self.batching:
            statements, self._pending = self._pending + texts, []
            (rows,) = self._run_batch(statements, {len(statements) - len(texts): 1})
        else:
            self._run(texts[0], None)
            rows = _rows(self.conn)
            for text in texts[1:]:
                self._run(text, None)
        _rows(self.conn, 0)                 # the last UPDATE's (none)
        return rows, self.conn.affected_rows()

    def undo_writes(self):
        """Take back the writes of the last :meth:`read_then_write` and all
        written since (a write deferred since is dropped: as if undone)."""
        self._pending = []
        self._run_plain(b"ROLLBACK TO SAVEPOINT " + _TRY)

    def query_tables(self, sql, params=None):
        """Run a SELECT of one row from several joined tables (``t1.*, t2.*``);
        return ``{table: {column: value}}``, or None for no row.  Columns the
        tables share (id, create_time ...) stay apart, which a dict keyed by
        column name alone can't do.  A table of an outer join with no matching
        row comes back with every value None."""
        rows = self.query_many([(sql, params, True)])[0]
        return rows[0] if rows else None

    def query_value(self, sql, params=None, default=None):
        """Run a SELECT of one value; return it (``default`` for no row / NULL)."""
        self._run(sql, params)
        result = self.conn.store_result()
        rows = result.fetch_row(1, 0) if result is not None else ()
        if not rows or rows[0][0] is None:
            return default
        return rows[0][0]

    def insert_many(self, table, columns, rows, max_bytes=1000000):
        """Multi-row INSERT (see Database.insert_many); returns the count."""
        head = ("INSERT INTO %s (%s) VALUES " % (table, ", ".join(columns))).encode()
        parts, size, total = [], len(head), 0
        for row in rows:
            item = b"(" + b",".join(self._literal(v) for v in row) + b")"
            if parts and size + len(item) > max_bytes:
                self._run(head + b",".join(parts), None)
                parts, size = [], len(head)
            parts.append(item)
            size += len(item) + 1
            total += 1
        if parts:
            self._run(head + b",".join(parts), None)
        return total


def _rows(conn, how=1):
    """The rows of the connection's current result (fetch_row's ``how``:
    1 dicts, 2 "table.column" dicts, 0 tuples), [] for a statement with none."""
    result = conn.store_result()
    return list(result.fetch_row(0, how)) if result is not None else []


_SPLITS = {}


def _split_tables(row):
    """{"table.column": value} (fetch_row's how=2) -> {table: {column: value}}.

    How a row's keys divide into tables is worked out once per column list
    and kept (a process runs few joined SELECTs, each many times): the
    scheduler's user-and-host read has some 150 columns, and splitting them
    key by key was 6% of a persistent request's CPU."""
    keys = tuple(row)
    plan = _SPLITS.get(keys)
    if plan is None:
        plan = _split_plan(keys)
        if len(_SPLITS) < 1000:
            _SPLITS[keys] = plan
    get = tuple(row.values()).__getitem__
    return {table: dict(zip(columns, map(get, at))) for table, columns, at in plan}


def _split_plan(keys):
    """[(table, its columns, their places in ``keys``)], tables in order of
    first appearance."""
    tables = {}
    for i, key in enumerate(keys):
        table, _, column = key.partition(".")
        tables.setdefault(table, ([], []))
        tables[table][0].append(column)
        tables[table][1].append(i)
    return [(table, tuple(columns), tuple(at)) for table, (columns, at) in tables.items()]


def open_database(params, wire=True):
    """A :class:`LiteDatabase` on ``params`` (:func:`connection.connect_params`):
    over :mod:`boincpy.db.wire` if ``wire`` (a CGI's choice: nothing to load),
    else over ``MySQLdb._mysql`` (a persistent process's).  Callers go through
    :func:`boincpy.db.connect`."""
    return LiteDatabase(_open(params, wire), params)


def _open(params, wire=True):
    """A connection as ``params`` say: wire's if ``wire`` and the server lets
    it, else ``_mysql``'s.  Raises DatabaseError (connect_error's sentence)."""
    kwargs = {"user": params["user"], "password": params["passwd"],
              "database": params["db"], "charset": params["charset"], "conv": _CONV}
    for key in ("host", "port", "unix_socket"):
        if key in params:
            kwargs[key] = params[key]
    if wire:
        try:
            conn = _wire.connect(**kwargs)
            conn.autocommit(True)       # a round trip only if the server's default is off
            return conn
        except _wire.Unsupported:
            pass                        # what libmariadb can do and wire can't
        except _wire.Error as exc:
            raise connect_error(exc, params) from None
    _mysql = _mysql_module()
    # several statements per round trip (LiteDatabase's deferred writes);
    # every value in them is quoted by the connection, as in any statement
    kwargs["client_flag"] = _MULTI_STATEMENTS
    try:
        conn = _mysql.connect(**kwargs)
    except _mysql.OperationalError as exc:
        raise connect_error(exc, params) from None
    conn.autocommit(True)
    return conn
