"""The host table: its writes (BOINC's DB_HOST update methods) and the FLOPS
statistics of active hosts."""

from boincpy.db.bulk import update_row

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


def insert_host(db, row):
    """INSERT a new host from ``row`` ({column: value}, fitted to the
    columns); return its id."""
    cols = list(row)
    return db.insert("INSERT INTO host (%s) VALUES (%s)" % (
        ", ".join(cols), ", ".join(["%s"] * len(cols))), [row[c] for c in cols])


def update_host_columns(db, host_id, changed):
    """UPDATE the host's columns in ``changed`` ({column: value}); return the
    rowcount."""
    return update_row(db, "host", host_id, changed)


def set_host_venue(db, host_id, userid, venue):
    """The venue of the user's host (am_set_host_info.php); return the
    rowcount (0: no such host of this user, or the venue was already that)."""
    return db.execute("UPDATE host SET venue = %s WHERE id = %s AND userid = %s",
                      (venue, host_id, userid))


def clear_rpc_time(db, host_id):
    """rpc_time = 0: the host may contact the scheduler at once."""
    return db.execute("UPDATE host SET rpc_time = 0 WHERE id = %s", (host_id,))


def delete_hosts_of_user(db, userid):
    """DELETE a user's hosts; return the rowcount."""
    return db.execute("DELETE FROM host WHERE userid = %s", (userid,))


def record_hosts_deleted(db, userid, now):
    """host_deleted rows for every host of the user (db_dump tells other projects)."""
    return db.execute("INSERT IGNORE INTO host_deleted (hostid, public_cross_project_id, "
                      "create_time) SELECT id, COALESCE(host_cpid, ''), %s FROM host "
                      "WHERE userid = %s", (now, userid))


def delete_host_without_results(db, host_id, userid):
    """DELETE the user's host if no result names it (BOINC's host_delete.php);
    return the rowcount (0: not the user's host, or it still has results)."""
    return db.execute("DELETE FROM host WHERE id = %s AND userid = %s AND NOT EXISTS "
                      "(SELECT 1 FROM result WHERE result.hostid = %s)",
                      (host_id, userid, host_id))


def add_merged_credit(db, host_id, userid, total_credit, expavg_credit, expavg_time):
    """The newest of a user's host records takes a merged one's credit
    (BOINC's merge_hosts): ``total_credit`` added, the summed average written."""
    return db.execute("UPDATE host SET total_credit = total_credit + %s, expavg_credit = %s, "
                      "expavg_time = %s WHERE id = %s AND userid = %s",
                      (total_credit, expavg_credit, expavg_time, host_id, userid))


def retire_merged_host(db, host_id, userid, new_host_id):
    """A merged host record becomes a zombie: no credit, no owner, rpc_seqno
    naming the host it was merged into (BOINC's merge_hosts)."""
    return db.execute("UPDATE host SET total_credit = 0, expavg_credit = 0, userid = 0, "
                      "rpc_seqno = %s WHERE id = %s AND userid = %s",
                      (new_host_id, host_id, userid))


def delete_expired_host_deleted(db, before):
    """DELETE host_deleted rows made before ``before``; return the rowcount."""
    return db.execute("DELETE FROM host_deleted WHERE create_time < %s", (before,))
