"""The app_version table's writes (BOINC's DB_APP_VERSION)."""

from boincpy.db.bulk import update_row
from boincpy.db.queries import insert_row


def insert_app_version(db, av):
    """INSERT an app version (a rows.AppVersion); return its id."""
    return insert_row(db, av)


def update_app_version(db, av_id, values):
    """UPDATE the version's columns in ``values`` ({column: value}, names
    fixed by the caller's code); return the rowcount."""
    return update_row(db, "app_version", av_id, values)


def set_pfc_scale(db, av_id, pfc_scale):
    """The version's PFC scale (the feeder's credit normalisation)."""
    return db.execute("UPDATE app_version SET pfc_scale = %s WHERE id = %s", (pfc_scale, av_id))


def record_pfc_and_credit(db, av_id, pfc_n, pfc_avg, expavg_credit, expavg_time):
    """The validator's samples folded in: PFC statistics and recent credit."""
    return db.execute("UPDATE app_version SET pfc_n = %s, pfc_avg = %s,"
                      " expavg_credit = %s, expavg_time = %s WHERE id = %s",
                      (pfc_n, pfc_avg, expavg_credit, expavg_time, av_id))


def delete_app_version(db, av_id):
    """DELETE an app version row."""
    return db.execute("DELETE FROM app_version WHERE id = %s", (av_id,))
