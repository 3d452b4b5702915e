"""The host table: its writes (BOINC's DB_HOST update methods) and the FLOPS
statistics of active hosts."""


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
