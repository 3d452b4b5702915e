"""The result table's writes (BOINC's DB_RESULT update/insert methods).

Every UPDATE, INSERT and DELETE of a result row lives here, named for what
it does; the callers decide when, these functions say how.  A conditional
UPDATE (``... AND server_state = %s``) returns the driver's rowcount, which
callers use to tell whether they won a race; none of these commit.
"""

from boincpy.db.bulk import (by_primary_key, chunks, placeholders, update_by_id, update_ids,
                             update_row)

# Values of boincpy.states (ServerState, Outcome, ValidateState), literal
# because the scheduler's CGI requests load this module and importing enum
# costs each ~4 ms; tests/test_sched_request.py checks they agree.
INACTIVE, UNSENT, IN_PROGRESS, OVER = 1, 2, 4, 5
OUTCOME_SUCCESS, OUTCOME_COULDNT_SEND, OUTCOME_CLIENT_DETACHED = 1, 2, 7
VALIDATE_INIT, VALIDATE_INVALID, VALIDATE_INCONCLUSIVE = 0, 2, 4


def insert_result(db, create_time, workunitid, server_state, name, xml_doc_in, batch,
                  random, appid, priority, size_class):
    """INSERT one new result of a workunit (empty xml_doc_out and stderr_out);
    return its id.  The scheduler's assigned jobs create results this way."""
    return db.insert(
        "INSERT INTO result (create_time, workunitid, server_state, name, xml_doc_in, "
        "xml_doc_out, stderr_out, batch, random, appid, priority, size_class) "
        "VALUES (%s, %s, %s, %s, %s, '', '', %s, %s, %s, %s, %s)",
        (create_time, workunitid, server_state, name, xml_doc_in, batch, random,
         appid, priority, size_class))


def insert_results(db, columns, rows):
    """Multi-row INSERT of new results (the transitioner's replicas), ``rows``
    being tuples in ``columns`` order; return the count."""
    return db.insert_many("result", columns, rows)


def mark_result_sent(db, result_id, old_state, server_state, hostid, userid, sent_time,
                     report_deadline, flops_estimate, app_version_id):
    """Claim a result for a host: IN_PROGRESS with its host, user, times and
    app version -- only if its server_state is still ``old_state``.  Returns
    the rowcount (0: another request sent it meanwhile)."""
    return db.execute(
        "UPDATE result SET server_state = %s, hostid = %s, userid = %s, sent_time = %s, "
        "report_deadline = %s, flops_estimate = %s, app_version_id = %s "
        "WHERE id = %s AND server_state = %s",
        (server_state, hostid, userid, sent_time, report_deadline, flops_estimate,
         app_version_id, result_id, old_state))


def mark_result_didnt_need(db, result_id):
    """The feeder's result of an erroneous workunit: OVER / DIDNT_NEED (5, 5),
    only if still UNSENT (2)."""
    return db.execute("UPDATE result SET server_state = 5, outcome = 5 "
                      "WHERE id = %s AND server_state = 2", (result_id,))


def mark_result_over(db, result_id, outcome, received_time):
    """An in-progress result the host lost (BOINC's mark_results_over): OVER
    with ``outcome`` and received_time, only if still IN_PROGRESS."""
    return db.execute("UPDATE result SET server_state = %s, outcome = %s, received_time = %s "
                      "WHERE id = %s AND server_state = %s",
                      (OVER, outcome, received_time, result_id, IN_PROGRESS))


def mark_result_couldnt_send(db, result_id):
    """An unsent result whose input files are missing: OVER / COULDNT_SEND,
    only if still UNSENT; return the rowcount."""
    return db.execute("UPDATE result SET server_state = %s, outcome = %s "
                      "WHERE id = %s AND server_state = %s",
                      (OVER, OUTCOME_COULDNT_SEND, result_id, UNSENT))


def activate_results(db, appid, size_class, n, order_clause=""):
    """The size regulator's refill: up to ``n`` INACTIVE results of the app's
    size class become UNSENT, in ``order_clause`` order (SQL text, e.g.
    ``ORDER BY id``); return how many changed."""
    return db.execute(
        "UPDATE result SET server_state = %s WHERE appid = %s AND server_state = %s "
        "AND size_class = %s " + order_clause + " LIMIT %s",
        (UNSENT, appid, INACTIVE, size_class, n))


def set_result_report_deadline(db, result_id, deadline):
    """Move a result's report deadline (a trickle extending it)."""
    return db.execute("UPDATE result SET report_deadline = %s WHERE id = %s",
                      (deadline, result_id))


def expire_result(db, result_id, deadline):
    """A lost result that can't be resent: report_deadline ``deadline`` (in
    the past) so the transitioner times it out, only if still IN_PROGRESS;
    return the rowcount."""
    return db.execute("UPDATE result SET report_deadline = %s WHERE id = %s "
                      "AND server_state = %s", (deadline, result_id, IN_PROGRESS))


def update_result_if_unchanged(db, result_id, changes, before, guard_columns):
    """Write ``changes`` ({column: value}) to a result only if its
    ``guard_columns`` still hold the values in ``before`` (the row as read);
    return the rowcount (1, or 0 when it changed meanwhile)."""
    sets = ", ".join("%s = %%s" % c for c in changes)
    where = " AND ".join("%s = %%s" % c for c in guard_columns)
    return db.execute("UPDATE result SET %s WHERE id = %%s AND %s" % (sets, where),
                      tuple(changes.values()) + (result_id,)
                      + tuple(before[c] for c in guard_columns))


def record_reported_results(db, columns, rows, guard=()):
    """Write reported results in one statement: ``rows`` is [(id, values of
    ``columns``, values of ``guard``)], joined with the row as a derived table
    (values travel as parameters: they include the text of stderr_out and
    xml_doc_out).  A row is written only if its ``guard`` columns still hold
    the values given (the row as the scheduler read it).  Returns the
    rowcount.  One row (the usual report) is a plain UPDATE: the server
    would build a temporary table for the derived one."""
    if len(rows) == 1:
        rid, values, expected = rows[0]
        changes = dict(zip(columns, values))
        if not guard:
            return update_row(db, "result", rid, changes)
        return update_result_if_unchanged(db, rid, changes, dict(zip(guard, expected)), guard)
    names = list(columns) + ["guard_%s" % c for c in guard]
    first = "SELECT %%s AS id, %s" % ", ".join("%%s AS %s" % c for c in names)
    more = " UNION ALL SELECT %s" % ", ".join(["%s"] * (len(names) + 1))
    params = []
    for rid, values, expected in rows:
        params.append(rid)
        params.extend(values)
        params.extend(expected)
    # the rows locked in the order given: the derived table drives the join
    return db.execute("UPDATE (%s%s) v STRAIGHT_JOIN %s ON r.id = v.id%s SET %s"
                      % (first, more * (len(rows) - 1), by_primary_key("result", "r"),
                         "".join(" AND r.%s = v.guard_%s" % (c, c) for c in guard),
                         ", ".join("r.%s = v.%s" % (c, c) for c in columns)), params)


VALIDATION_COLUMNS = ("validate_state", "granted_credit", "server_state", "outcome",
                      "opaque", "runtime_outlier")


def record_validation(db, updates):
    """The validator's verdicts: ``updates`` maps result id to values of
    VALIDATION_COLUMNS; return rows changed."""
    return update_by_id(db, "result", VALIDATION_COLUMNS, updates)


def set_results_file_delete_state(db, ids, new_state, old_state):
    """The file deleter's outcome for results whose files it handled:
    file_delete_state ``new_state``, only where it is still ``old_state``;
    return rows changed."""
    return update_ids(db, "result", "file_delete_state = %s", ids, params=(new_state,),
                      where="file_delete_state = %s", where_params=(old_state,))


# a deleted user's unfinished work: in progress, or succeeded and not yet validated
UNFINISHED_OF_USER = ("userid = %s AND (server_state = %s OR (server_state = %s AND outcome = %s "
                      "AND validate_state IN (%s, %s)))")


def unfinished_of_user_params(userid):
    """Parameters of UNFINISHED_OF_USER for this user."""
    return (userid, IN_PROGRESS, OVER, OUTCOME_SUCCESS, VALIDATE_INIT, VALIDATE_INCONCLUSIVE)


def cancel_user_results(db, userid):
    """A deleted user's unfinished work (UNFINISHED_OF_USER) becomes OVER /
    CLIENT_DETACHED / INVALID; return the rowcount."""
    return db.execute(
        "UPDATE result SET server_state = %s, outcome = %s, validate_state = %s WHERE "
        + UNFINISHED_OF_USER,
        (OVER, OUTCOME_CLIENT_DETACHED, VALIDATE_INVALID)
        + unfinished_of_user_params(userid))


def unlink_user_results(db, userid):
    """A deleted user's results keep their rows but lose user and host."""
    return db.execute("UPDATE result SET userid = 0, hostid = 0 WHERE userid = %s",
                      (userid,))


def delete_results(db, ids):
    """DELETE the results with these ids (db_purge, once archived)."""
    for part in chunks(ids):
        db.execute("DELETE FROM result WHERE id IN (%s)" % placeholders(len(part)), part)


def move_results_to_host(db, old_host_id, new_host_id):
    """A merged host's results move to the host it was merged into."""
    return db.execute("UPDATE result SET hostid = %s WHERE hostid = %s",
                      (new_host_id, old_host_id))
