"""The SQL the tools share, written out and parameterised.

Queries used by one program only live next to that program; the ones here
are lookups and inserts several programs need.
"""

from boincpy.db.rows import App, Platform
from boincpy.states import FileDeleteState, Outcome, ServerState, ValidateState, WuError


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


def insert_workunit(db, wu):
    """Insert one workunit; return its id."""
    return insert_row(db, wu)


def insert_workunits(db, wus):
    """Insert many workunits in multi-row statements."""
    return insert_rows(db, wus)


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


def revalidate_workunits(db, wuids):
    """Have the validator look again at these workunits (BOINC's
    revalidate.php); return (#workunits, #results) changed.

    Their successful results already validated (valid, invalid, ...) go back
    to validate_state INIT and the workunit gets need_validate = 1.  Results
    whose output files are deleted (file_delete_state DONE or ERROR) are left
    alone: the validator could not read them.
    """
    wuids = sorted({int(i) for i in wuids})
    nwu = nres = 0
    gone = (int(FileDeleteState.DONE), int(FileDeleteState.ERROR))
    with db.transaction():
        for start in range(0, len(wuids), 500):
            chunk = wuids[start:start + 500]
            marks = ", ".join(["%s"] * len(chunk))
            cond = ("workunitid IN (%s) AND server_state = %%s AND outcome = %%s "
                    "AND validate_state > %%s AND file_delete_state NOT IN (%%s, %%s)" % marks)
            params = chunk + [int(ServerState.OVER), int(Outcome.SUCCESS),
                              int(ValidateState.INIT)] + list(gone)
            touched = sorted({r["workunitid"] for r in db.query(
                "SELECT workunitid FROM result WHERE %s FOR UPDATE" % cond, params)})
            if not touched:
                continue
            nres += db.execute("UPDATE result SET validate_state = %%s WHERE %s" % cond,
                               [int(ValidateState.INIT)] + params)
            db.execute("UPDATE workunit SET need_validate = 1 WHERE id IN (%s)"
                       % ", ".join(["%s"] * len(touched)), touched)
            nwu += len(touched)
    return nwu, nres


# Hosts that count in FLOPS statistics: those doing work (BOINC's
# "where expavg_credit>10" in DB_HOST::fpops_*).
ACTIVE_HOST_WHERE = "expavg_credit > 10"


def host_fpops_percentile(db, percentile):
    """p_fpops of the host at ``percentile`` (0-100) among hosts with
    expavg_credit > 10 (DB_HOST::fpops_percentile); None when there are none."""
    n = db.query_value("SELECT COUNT(*) FROM host WHERE " + ACTIVE_HOST_WHERE, default=0)
    if not n:
        return None
    return float(db.query_value("SELECT p_fpops FROM host WHERE %s ORDER BY p_fpops "
                                "LIMIT %d, 1" % (ACTIVE_HOST_WHERE, int(n * percentile / 100.0)),
                                default=0.0))
