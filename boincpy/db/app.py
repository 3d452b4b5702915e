"""The writes of the app and platform tables (BOINC's DB_APP, DB_PLATFORM).

The operator's tools and pages add and change these rows; the feeder
writes an app's min_avg_pfc.  ``values`` dicts name columns fixed by the
caller's code, never user text.
"""

from boincpy.db.bulk import update_row


def _insert(db, table, values):
    cols = list(values)
    return db.insert("INSERT INTO %s (%s) VALUES (%s)"
                     % (table, ", ".join(cols), ", ".join(["%s"] * len(cols))),
                     [values[c] for c in cols])


def insert_app(db, values):
    """INSERT an app with ``values`` ({column: value}; the others take their
    defaults); return its id."""
    return _insert(db, "app", values)


def update_app(db, app_id, values):
    """UPDATE an app's columns in ``values``; return the rowcount."""
    return update_row(db, "app", app_id, values)


def set_min_avg_pfc(db, app_id, min_avg_pfc):
    """The app's lowest average PFC over its versions (the feeder's credit scaling)."""
    return db.execute("UPDATE app SET min_avg_pfc = %s WHERE id = %s", (min_avg_pfc, app_id))


def delete_app(db, app_id):
    """DELETE an app row."""
    return db.execute("DELETE FROM app WHERE id = %s", (app_id,))


def insert_platform(db, values):
    """INSERT a platform with ``values``; return its id."""
    return _insert(db, "platform", values)


def update_platform(db, platform_id, values):
    """UPDATE a platform's columns in ``values``; return the rowcount."""
    return update_row(db, "platform", platform_id, values)


def delete_platform(db, platform_id):
    """DELETE a platform row."""
    return db.execute("DELETE FROM platform WHERE id = %s", (platform_id,))
