"""Statements that touch many rows at once, for the daemons' batched passes.

A daemon that decides about hundreds of rows writes them with a few
statements instead of one per row: an UPDATE joined with a derived table of
the per-row values, ``WHERE id IN (...)`` for a common value.  Lists are cut into chunks so statements stay small.
"""

CHUNK = 500


def chunks(items, size=CHUNK):
    """Successive slices of ``items`` of at most ``size`` elements."""
    items = list(items)
    for i in range(0, len(items), size):
        yield items[i:i + size]


def by_primary_key(table, alias=""):
    """``table`` with the hint that has ``UPDATE table ... WHERE id IN (...)``
    find its rows through the primary key.  Without it the optimizer scans a
    small table's whole index once the list covers a good part of it, or
    takes a secondary index named in the rest of the WHERE clause, and InnoDB
    then locks every row it looked at, not only the listed ones: a file
    deleter's or transitioner's pass held every workunit until it committed,
    and schedulers claiming jobs deadlocked with it.  (MariaDB takes the hint
    in an UPDATE, not in a single-table DELETE.)  ``alias``: the table's
    name in the statement, if it has one."""
    return "%s%s FORCE INDEX (PRIMARY)" % (table, " " + alias if alias else "")


def placeholders(n):
    """``%s, %s, ...`` for ``n`` parameters."""
    return ", ".join(["%s"] * n)


def sql_number(value):
    """A number (or None) as SQL text: ints as digits, floats exactly as DOUBLE
    literals (``repr`` plus an exponent), so no driver quoting is needed."""
    if type(value) is int:
        return str(value)
    if value is None:
        return "NULL"
    if isinstance(value, float):
        text = repr(value)
        if text in ("inf", "-inf", "nan"):
            raise ValueError("%s can't be stored in the database" % text)
        return text if "e" in text else text + "e0"
    return "%d" % value


def update_by_id(db, table, columns, rows, key="id", relative=(), where="", where_params=(),
                 size=CHUNK, index="PRIMARY"):
    """Give each row its own numeric values in as few UPDATEs as possible; return rows changed.

    ``rows`` maps a key value to a tuple of numbers in ``columns`` order;
    ``key`` is a column name, or a tuple of names (then the row keys are
    tuples too, e.g. host_app_version's (host_id, app_version_id)).
    The values travel as a derived table joined on the key (``UPDATE (SELECT
    k, v0, .. UNION ALL ..) v STRAIGHT_JOIN t ON t.key = v.k SET ..``), which the
    server handles in linear time, unlike one ``CASE`` per column; they are
    written as SQL numbers directly (:func:`sql_number`), which is much
    cheaper than the driver's per-value quoting for thousands of values.
    Columns named in ``relative`` are incremented by the value (``col = col
    + v``), as BOINC writes credit totals.  ``where`` (SQL with ``%s``;
    unqualified names are ``table``'s columns) further restricts the rows,
    e.g. a compare-and-set on the state that was read.  ``index`` is the
    unique index on ``key``: each row is found through it, from the derived
    table (as with :func:`by_primary_key`, a scan would lock rows the
    statement does not write).
    """
    total = 0
    keys = (key,) if isinstance(key, str) else tuple(key)
    n = len(columns)
    sets = ", ".join(("t.%s = t.%s + v.v%d" % (col, col, i)) if col in relative
                     else ("t.%s = v.v%d" % (col, i)) for i, col in enumerate(columns))
    names = ["k%d" % i for i in range(len(keys))] + ["v%d" % i for i in range(n)]
    on = " AND ".join("t.%s = v.k%d" % (k, i) for i, k in enumerate(keys))
    tail = " WHERE " + where if where else ""
    items = list(rows.items())
    for part in chunks(items, size):
        selects = []
        for k, values in part:
            if len(keys) == 1:
                k = (k,)
            nums = [sql_number(x) for x in k] + [sql_number(v) for v in values]
            if not selects:
                nums = ["%s AS %s" % (x, name) for x, name in zip(nums, names)]
            selects.append("SELECT " + ", ".join(nums))
        # the statement has no %s of its own: escape % for the driver's formatting
        sql = "UPDATE (%s) v STRAIGHT_JOIN %s t FORCE INDEX (%s) ON %s SET %s" % (
            " UNION ALL ".join(selects), table, index, on, sets)
        if where_params:
            total += db.execute(sql.replace("%", "%%") + tail, list(where_params))
        else:
            total += db.execute(sql + tail)
    return total


def update_row(db, table, row_id, values):
    """``UPDATE table SET column = value, ... WHERE id = row_id`` for ``values``
    ({column: value}, names fixed by the caller's code); return the rowcount."""
    return db.execute("UPDATE %s SET %s WHERE id = %%s"
                      % (table, ", ".join("%s = %%s" % c for c in values)),
                      list(values.values()) + [row_id])


def update_ids(db, table, assignments, ids, params=(), where="", where_params=(), size=CHUNK):
    """``UPDATE table SET assignments WHERE id IN ids [AND where]``; return rows changed."""
    total = 0
    for part in chunks(ids, size):
        sql = "UPDATE %s SET %s WHERE id IN (%s)%s" % (
            by_primary_key(table), assignments, placeholders(len(part)),
            (" AND " + where) if where else "")
        total += db.execute(sql, list(params) + list(part) + list(where_params))
    return total


def select_in(db, sql, ids, params=(), size=CHUNK):
    """Run ``sql`` (containing ``{ids}`` where the IN list goes) for chunks of ids;
    return all rows (dicts).  ``params`` come before the ids."""
    rows = []
    for part in chunks(ids, size):
        rows.extend(db.query(sql.format(ids=placeholders(len(part))),
                             list(params) + list(part)))
    return rows


def insert_rows(db, table, columns, rows, on_duplicate="", ignore=False):
    """Multi-row ``INSERT [IGNORE] ... [ON DUPLICATE KEY UPDATE on_duplicate]``.

    The driver packs the rows into as few statements as fit its limit.
    """
    rows = list(rows)
    if not rows:
        return 0
    sql = "INSERT %sINTO %s (%s) VALUES (%s)" % (
        "IGNORE " if ignore else "", table, ", ".join(columns), placeholders(len(columns)))
    if on_duplicate:
        sql += " ON DUPLICATE KEY UPDATE " + on_duplicate
    return db.executemany(sql, rows)
