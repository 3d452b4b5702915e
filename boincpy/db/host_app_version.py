"""The host_app_version table's SQL (BOINC's DB_HOST_APP_VERSION): a
host's per-app-version statistics (runtimes, turnaround, PFC) and quota
(max_jobs_per_day, n_jobs_today, consecutive_valid), keyed by (host_id,
app_version_id).  The scheduler loads this module: it imports nothing heavy.
"""

from boincpy.db.bulk import chunks, select_in, update_by_id


def host_rows_read(host_id):
    """(sql, params) of a SELECT of all of a host's rows, for
    ``db.query`` or a batch of reads (``db.query_many``)."""
    return "SELECT * FROM host_app_version WHERE host_id = %s", (host_id,)


def host_rows(db, host_id):
    """All of the host's rows (dicts)."""
    return db.query(*host_rows_read(host_id))


def lock_rows(db, keys):
    """The rows of these (host_id, app_version_id) keys, locked FOR UPDATE,
    in key order.  Each is found by its whole key: a range of a host's rows
    (``host_id IN ...``) would also lock the first row past it, the next
    host's, which that host's scheduler request then waits for."""
    rows = []
    for part in chunks(sorted(keys)):
        rows.extend(db.query(
            "SELECT * FROM host_app_version WHERE (host_id, app_version_id) IN (%s) "
            "ORDER BY host_id, app_version_id FOR UPDATE" % ", ".join(["(%s, %s)"] * len(part)),
            [x for key in part for x in key]))
    return rows


def lock_host_rows(db, host_ids):
    """All the rows of these hosts, locked FOR UPDATE, in key order (the
    validator's rare lookup of a row a host may take over: this range also
    locks the first row past each host's)."""
    return select_in(db, "SELECT * FROM host_app_version WHERE host_id IN ({ids})"
                     " ORDER BY host_id, app_version_id FOR UPDATE", sorted(host_ids))


def insert_host_app_version(db, host_id, app_version_id):
    """INSERT a fresh row for the host and app version."""
    return db.execute("INSERT INTO host_app_version (host_id, app_version_id) VALUES (%s, %s)",
                      (host_id, app_version_id))


def add_jobs_today(db, host_id, app_version_id, n):
    """``n`` more jobs sent today: the row made with n_jobs_today = n, or
    added to the row's count."""
    return db.execute("INSERT INTO host_app_version (host_id, app_version_id, n_jobs_today) "
                      "VALUES (%s, %s, %s) ON DUPLICATE KEY UPDATE "
                      "n_jobs_today = n_jobs_today + VALUES(n_jobs_today)",
                      (host_id, app_version_id, n))


def record_jobs_sent(db, host_id, app_version_id, n_jobs_today=None, added=0,
                     max_jobs_per_day=None):
    """The scheduler's quota bookkeeping after sending: n_jobs_today set to
    ``n_jobs_today`` (a new day) or increased by ``added``, and
    max_jobs_per_day set when given.  Nothing to write: no statement."""
    sets, params = [], []
    if n_jobs_today is not None:
        sets.append("n_jobs_today = %s")
        params.append(n_jobs_today)
    elif added:
        sets.append("n_jobs_today = n_jobs_today + %s")
        params.append(added)
    if max_jobs_per_day is not None:
        sets.append("max_jobs_per_day = %s")
        params.append(max_jobs_per_day)
    if not sets:
        return 0
    return db.execute("UPDATE host_app_version SET %s WHERE host_id = %%s AND "
                      "app_version_id = %%s" % ", ".join(sets),
                      params + [host_id, app_version_id])


def record_quota(db, host_id, app_version_id, consecutive_valid, max_jobs_per_day,
                 n_jobs_today):
    """Write the quota fields (BOINC's update_scheduler)."""
    return db.execute("UPDATE host_app_version SET consecutive_valid = %s, "
                      "max_jobs_per_day = %s, n_jobs_today = %s "
                      "WHERE host_id = %s AND app_version_id = %s",
                      (consecutive_valid, max_jobs_per_day, n_jobs_today, host_id,
                       app_version_id))


def record_timeout(db, host_id, app_version_id, turnaround_n, turnaround_avg, turnaround_var,
                   turnaround_q, max_jobs_per_day):
    """A result timed out: the turnaround statistics with the delay bound
    folded in, the lowered quota, and consecutive_valid back to 0."""
    return db.execute(
        "UPDATE host_app_version SET turnaround_n = %s, turnaround_avg = %s, "
        "turnaround_var = %s, turnaround_q = %s, max_jobs_per_day = %s, "
        "consecutive_valid = 0 WHERE host_id = %s AND app_version_id = %s",
        (turnaround_n, turnaround_avg, turnaround_var, turnaround_q, max_jobs_per_day,
         host_id, app_version_id))


def move_to_app_version(db, host_id, old_app_version_id, app_version_id):
    """Carry a host's row over to a newer version of the same app, platform
    and plan class (the validator's lookup of a missing row)."""
    return db.execute("UPDATE host_app_version SET app_version_id = %s"
                      " WHERE host_id = %s AND app_version_id = %s",
                      (app_version_id, host_id, old_app_version_id))


def punish(db, host_id, app_version_id):
    """A host that returned an invalid result: one job a day."""
    return db.execute("UPDATE host_app_version SET max_jobs_per_day = 1, n_jobs_today = 1"
                      " WHERE host_id = %s AND app_version_id = %s", (host_id, app_version_id))


def record_statistics(db, columns, rows):
    """The validator's pass: ``rows`` maps (host_id, app_version_id) to values
    of ``columns``; return rows changed."""
    return update_by_id(db, "host_app_version", columns, rows,
                        key=("host_id", "app_version_id"), index="hap")


def delete_host_app_versions(db, host_id):
    """DELETE a host's rows; return the rowcount."""
    return db.execute("DELETE FROM host_app_version WHERE host_id = %s", (host_id,))
