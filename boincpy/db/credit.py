"""The credit columns of the credit holders -- host, user and team: their
total_credit and recent average (expavg_credit, expavg_time), which the
validator, the trickle handlers and update_stats write alike.

``table`` is one of CREDIT_HOLDERS; it is checked, never taken from input.
"""

from boincpy.db.bulk import update_by_id

CREDIT_HOLDERS = ("host", "user", "team")


def _holder(table):
    if table not in CREDIT_HOLDERS:
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
    """update_stats' decay: ``rows`` maps (id, expavg_time as read) to the new
    (expavg_credit, expavg_time); a row credited since it was read no longer
    matches and is left alone.  Return rows changed."""
    return update_by_id(db, _holder(table), ("expavg_credit", "expavg_time"), rows,
                        key=("id", "expavg_time"))
