"""Generic row statements: INSERT a row dataclass, look one up.

A table's own writes live in its module (boincpy/db/result.py,
workunit.py, ...); these are the helpers shared by all tables.
"""

from boincpy.db.rows import App, Platform


def insert_row(db, row):
    """INSERT one row dataclass into its table; return the new id."""
    cols = row.insert_columns()
    sql = "INSERT INTO %s (%s) VALUES (%s)" % (
        row.TABLE, ", ".join(cols), ", ".join(["%s"] * len(cols)))
    new_id = db.insert(sql, row.insert_values())
    if hasattr(row, "id"):
        row.id = new_id
    return new_id


def insert_rows(db, rows):
    """INSERT many rows of one table with multi-row INSERT statements (~1 MB each,
    as BOINC's create_work does); ids are not returned."""
    if not rows:
        return 0
    first = rows[0]
    return db.insert_many(first.TABLE, first.insert_columns(),
                          (r.insert_values() for r in rows))


def lookup(db, row_class, where, params=()):
    """The first row of ``row_class``'s table matching ``where`` (SQL), or None."""
    return row_class.from_row(db.query_one(
        "SELECT * FROM %s WHERE %s LIMIT 1" % (row_class.TABLE, where), params))


def lookup_app_by_name(db, name):
    """The app row called ``name``, or None."""
    return lookup(db, App, "name = %s", (name,))


def lookup_platform_by_name(db, name):
    """The platform row called ``name``, or None."""
    return lookup(db, Platform, "name = %s", (name,))
