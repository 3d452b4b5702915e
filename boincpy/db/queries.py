"""The SQL the tools share, written out and parameterised.

Queries used by one program only live next to that program; the ones here
are lookups and inserts several programs need.
"""

from boincpy.db.rows import App, AppVersion, Platform, Workunit
from boincpy.states import Outcome, ServerState, WuError


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


def enumerate_rows(db, row_class, where="1", params=(), order="id"):
    """All rows of ``row_class``'s table matching ``where``, as dataclasses."""
    return [row_class.from_row(r) for r in db.query(
        "SELECT * FROM %s WHERE %s ORDER BY %s" % (row_class.TABLE, where, order), params)]


def lookup_app_by_name(db, name):
    """The app row called ``name``, or None."""
    return lookup(db, App, "name = %s", (name,))


def lookup_platform_by_name(db, name):
    """The platform row called ``name``, or None."""
    return lookup(db, Platform, "name = %s", (name,))


def lookup_app_version(db, appid, platformid, version_num, plan_class):
    """The app_version row for this (app, platform, version, plan class), or None."""
    return lookup(db, AppVersion,
                  "appid = %s AND platformid = %s AND version_num = %s AND plan_class = %s",
                  (appid, platformid, version_num, plan_class))


def insert_workunit(db, wu):
    """Insert one workunit; return its id."""
    return insert_row(db, wu)


def insert_workunits(db, wus):
    """Insert many workunits in multi-row statements."""
    return insert_rows(db, wus)


def lookup_workunit_by_name(db, name):
    """The workunit called ``name``, or None."""
    return lookup(db, Workunit, "name = %s", (name,))


def cancel_workunits_by_id(db, wuids, now, unsent_only=False):
    """Cancel the workunits with these ids (BOINC's cancel_wus); return
    (#workunits, #results) changed.

    Unsent (and inactive) results become OVER / DIDNT_NEED; the workunit gets
    error_mask CANCELLED and transition_time now, so the transitioner finishes
    it and the scheduler tells hosts running its results to abort them.

    ``unsent_only``: skip workunits any of whose results was already sent.
    """
    wuids = sorted({int(i) for i in wuids})
    if not wuids:
        return 0, 0
    nwu = nres = 0
    with db.transaction():
        for start in range(0, len(wuids), 500):
            chunk = wuids[start:start + 500]
            marks = ", ".join(["%s"] * len(chunk))
            # Lock the results first: a scheduler sending one of them right now
            # waits for this transaction (its UPDATE is conditional on UNSENT).
            rows = db.query("SELECT workunitid, server_state FROM result WHERE workunitid IN (%s) "
                            "FOR UPDATE" % marks, chunk)
            if unsent_only:
                sent = {r["workunitid"] for r in rows
                        if r["server_state"] > ServerState.UNSENT}
                chunk = [w for w in chunk if w not in sent]
                if not chunk:
                    continue
                marks = ", ".join(["%s"] * len(chunk))
            nres += db.execute(
                "UPDATE result SET server_state = %%s, outcome = %%s WHERE workunitid IN (%s) "
                "AND server_state IN (%%s, %%s)" % marks,
                [int(ServerState.OVER), int(Outcome.DIDNT_NEED)] + chunk
                + [int(ServerState.INACTIVE), int(ServerState.UNSENT)])
            nwu += db.execute(
                "UPDATE workunit SET error_mask = error_mask | %%s, transition_time = %%s "
                "WHERE id IN (%s)" % marks, [int(WuError.CANCELLED), now] + chunk)
    return nwu, nres
