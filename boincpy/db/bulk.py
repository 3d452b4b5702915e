"""Statements that touch many rows at once, for the daemons' batched passes.

A daemon that decides about hundreds of rows writes them with a few
statements instead of one per row: ``UPDATE ... SET col = CASE id WHEN ..
THEN .. END ... WHERE id IN (...)`` for per-row values, ``WHERE id IN (...)``
for a common value.  Lists are cut into chunks so statements stay small.
"""

CHUNK = 500


def chunks(items, size=CHUNK):
    """Successive slices of ``items`` of at most ``size`` elements."""
    items = list(items)
    for i in range(0, len(items), size):
        yield items[i:i + size]


def placeholders(n):
    """``%s, %s, ...`` for ``n`` parameters."""
    return ", ".join(["%s"] * n)


def update_by_id(db, table, columns, rows, key="id", relative=(), where="", where_params=(),
                 size=CHUNK):
    """Give each row its own values in as few UPDATEs as possible; return rows changed.

    ``rows`` maps a key value to a tuple of values in ``columns`` order.
    Columns named in ``relative`` are incremented by the value
    (``col = col + CASE ...``) rather than set, as BOINC writes credit
    totals.  ``where`` (SQL with ``%s``) further restricts the rows, e.g. a
    compare-and-set on the state that was read.
    """
    total = 0
    items = list(rows.items())
    for part in chunks(items, size):
        sets, params = [], []
        for i, col in enumerate(columns):
            case = ["CASE %s" % key]
            for k, values in part:
                case.append("WHEN %s THEN %s")
                params.extend((k, values[i]))
            case.append("END")
            expr = " ".join(case)
            if col in relative:
                sets.append("%s = %s + %s" % (col, col, expr))
            else:
                sets.append("%s = %s" % (col, expr))
        keys = [k for k, _ in part]
        sql = "UPDATE %s SET %s WHERE %s IN (%s)%s" % (
            table, ", ".join(sets), key, placeholders(len(keys)),
            (" AND " + where) if where else "")
        total += db.execute(sql, params + keys + list(where_params))
    return total


def update_ids(db, table, assignments, ids, params=(), where="", where_params=(), size=CHUNK):
    """``UPDATE table SET assignments WHERE id IN ids [AND where]``; return rows changed."""
    total = 0
    for part in chunks(ids, size):
        sql = "UPDATE %s SET %s WHERE id IN (%s)%s" % (
            table, assignments, placeholders(len(part)), (" AND " + where) if where else "")
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
