"""The credit columns of the credit holders -- host, user and team: their
total_credit and recent average (expavg_credit, expavg_time), which the
validator, the trickle handlers and update_stats write alike; and credit by
app (credit_user, credit_team).

``table`` is one of CREDIT_HOLDERS; it is checked, never taken from input.
"""

from boincpy.db.bulk import insert_rows, update_by_id

CREDIT_HOLDERS = ("host", "user", "team")
# the tables with a recent average update_stats decays (app versions too)
AVERAGE_HOLDERS = CREDIT_HOLDERS + ("app_version",)


def _holder(table, holders=CREDIT_HOLDERS):
    if table not in holders:
        raise ValueError("%r holds no credit" % (table,))
    return table


def grant_credit(db, table, holder_id, credit, expavg_credit, expavg_time):
    """Add ``credit`` to one holder's total and write its new average."""
    return db.execute("UPDATE %s SET total_credit = total_credit + %%s, expavg_credit = %%s, "
                      "expavg_time = %%s WHERE id = %%s" % _holder(table),
                      (credit, expavg_credit, expavg_time, holder_id))


def grant_credits(db, table, columns, rows):
    """The validator's pass: ``rows`` maps holder id to values of ``columns``,
    which start with total_credit (written as an increment, as BOINC does),
    expavg_credit, expavg_time; return rows changed."""
    return update_by_id(db, _holder(table), columns, rows, relative=("total_credit",))


def decay_averages(db, table, rows):
    """update_stats' decay of ``table`` (one of AVERAGE_HOLDERS): ``rows`` maps
    (id, expavg_time as read) to the new (expavg_credit, expavg_time); a row credited since it was read no longer
    matches and is left alone.  Return rows changed."""
    return update_by_id(db, _holder(table, AVERAGE_HOLDERS), ("expavg_credit", "expavg_time"),
                        rows, key=("id", "expavg_time"))


CREDIT_BY_APP_COLUMNS = ("appid", "credit_type", "njobs", "total", "expavg", "expavg_time")


def add_credit_by_app(db, table, owner_column, rows):
    """The validator's credit by app: ``rows`` are (owner, appid, credit_type,
    njobs, total, expavg, expavg_time) for ``table`` credit_user (owner
    column userid) or credit_team (teamid); njobs and total are added,
    the average replaced."""
    if (table, owner_column) not in (("credit_user", "userid"), ("credit_team", "teamid")):
        raise ValueError("no credit by app in %s.%s" % (table, owner_column))
    return insert_rows(
        db, table, (owner_column,) + CREDIT_BY_APP_COLUMNS, rows,
        on_duplicate="njobs = njobs + VALUES(njobs), total = total + VALUES(total),"
                     " expavg = VALUES(expavg), expavg_time = VALUES(expavg_time)")
