"""The writes of the trickle message tables: msg_from_host (trickle-ups
the scheduler stores) and msg_to_host (trickle-downs it delivers).  The
scheduler loads this module: it imports nothing."""


def insert_msg_from_host(db, create_time, hostid, variety, xml):
    """Store a trickle-up message, not yet handled."""
    return db.execute("INSERT INTO msg_from_host (create_time, hostid, variety, "
                      "handled, xml) VALUES (%s, %s, %s, 0, %s)",
                      (create_time, hostid, variety, xml))


def set_msg_from_host_handled(db, msg_id, handled):
    """A trickle-up's ``handled`` flag (its handler's outcome)."""
    return db.execute("UPDATE msg_from_host SET handled = %s WHERE id = %s", (handled, msg_id))


def insert_msg_to_host(db, create_time, hostid, variety, xml):
    """Queue a trickle-down message for a host; return its id."""
    return db.insert("INSERT INTO msg_to_host (create_time, hostid, variety, handled, xml) "
                     "VALUES (%s, %s, %s, 0, %s)", (create_time, hostid, variety, xml))


def claim_msg_to_host(db, msg_id):
    """Mark a trickle-down handled, only if it is not yet; return the
    rowcount (0: another request delivers it)."""
    return db.execute("UPDATE msg_to_host SET handled = 1 WHERE id = %s AND handled = 0",
                      (msg_id,))


def delete_msgs_of_host(db, hostid):
    """DELETE the host's messages both ways; return the rows deleted."""
    n = db.execute("DELETE FROM msg_from_host WHERE hostid = %s", (hostid,))
    return n + db.execute("DELETE FROM msg_to_host WHERE hostid = %s", (hostid,))


def purge_handled(db, table, handled=None):
    """DELETE handled messages of ``table`` (msg_from_host or msg_to_host):
    those with ``handled`` equal to the value given, else all handled ones
    (handled <> 0); return the rowcount."""
    if table not in ("msg_from_host", "msg_to_host"):
        raise ValueError("%r is not a message table" % (table,))
    if handled is None:
        return db.execute("DELETE FROM %s WHERE handled <> 0" % table, ())
    return db.execute("DELETE FROM %s WHERE handled = %%s" % table, (handled,))
