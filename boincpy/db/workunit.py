"""The workunit table's writes (BOINC's DB_WORKUNIT update/insert methods,
and backend_lib's cancel_wus).

Every UPDATE, INSERT and DELETE of a workunit row lives here, named for
what it does.  Conditional UPDATEs return the driver's rowcount; none of
these commit (cancel and revalidate run in their own transaction, as the
pages and tools that call them expect).
"""

from boincpy.db.bulk import by_primary_key, chunks, placeholders, update_by_id, update_ids
from boincpy.db.result import (INACTIVE, OUTCOME_SUCCESS, OVER, UNSENT,
                               VALIDATE_INIT)

# Values of boincpy.states, literal as in result.py (the scheduler loads this
# module; enum costs a CGI ~4 ms); tests/test_sched_request.py checks them.
OUTCOME_DIDNT_NEED = 5
FILE_DELETE_DONE, FILE_DELETE_ERROR = 2, 3
ASSIMILATE_READY = 1
WU_ERROR_CANCELLED = 16


def insert_workunit(db, wu):
    """Insert one workunit (a rows.Workunit); return its id."""
    from boincpy.db.queries import insert_row   # rows: dataclasses, not for the scheduler
    return insert_row(db, wu)


def insert_workunits(db, wus):
    """Insert many workunits in multi-row statements."""
    from boincpy.db.queries import insert_rows
    return insert_rows(db, wus)


def overwrite_workunit(db, wu_id, values):
    """Write ``values`` ({column: value}) over an existing workunit (create_work
    --wu_id: the row was made beforehand)."""
    cols = list(values)
    return db.execute("UPDATE workunit SET %s WHERE id=%%s"
                      % ", ".join("%s=%%s" % c for c in cols),
                      [values[c] for c in cols] + [wu_id])


def set_transition_time(db, wu_id, when):
    """Hand a workunit to the transitioner at ``when`` (usually now)."""
    return db.execute("UPDATE workunit SET transition_time = %s WHERE id = %s",
                      (when, wu_id))


def set_transition_times(db, wu_ids, when):
    """transition_time = ``when`` for all these workunits, in one statement."""
    return db.execute("UPDATE %s SET transition_time = %%s WHERE id IN (%s)"
                      % (by_primary_key("workunit"), placeholders(len(wu_ids))),
                      [when] + list(wu_ids))


def lower_transition_times(db, times):
    """transition_time = ``when`` unless already earlier, for each workunit in
    ``times`` ({wu id: when}), in one statement that takes the rows in id
    order."""
    ids = sorted(times)
    if not ids:
        return 0
    whens = set(times.values())
    if len(whens) == 1:
        value, params = "%s", [whens.pop()]
    else:
        value = "CASE id%s END" % (" WHEN %s THEN %s" * len(ids))
        params = [x for i in ids for x in (i, times[i])]
    return db.execute("UPDATE %s SET transition_time = LEAST(transition_time, %s) "
                      "WHERE id IN (%s)" % (by_primary_key("workunit"), value,
                                             placeholders(len(ids))), params + ids)


def set_timeout_transition_time(db, wu_id, when):
    """A sent targeted job: have the transitioner look at it when it times
    out (``when``), unless it is due earlier."""
    return db.execute("UPDATE workunit SET transition_time = %s WHERE id = %s "
                      "AND transition_time > %s", (when, wu_id, when))


def transition_all_workunits(db, when):
    """transition_time = ``when`` for every workunit; return the rowcount."""
    return db.execute("UPDATE workunit SET transition_time = %s", (when,))


def commit_on_send(db, wu_id, transition_time, app_version_id=None, hr_class=None):
    """BOINC's update_wu_on_send: lower transition_time and, for homogeneous
    app version / redundancy, commit the workunit to ``app_version_id`` /
    ``hr_class`` -- only if uncommitted or committed to the same.  Returns the
    rowcount (0: committed elsewhere meanwhile)."""
    sets = ["transition_time = LEAST(transition_time, %s)"]
    params = [transition_time]
    where, where_params = [], []
    if app_version_id is not None:
        sets.append("app_version_id = %s")
        params.append(app_version_id)
        where.append("(app_version_id = 0 OR app_version_id = %s)")
        where_params.append(app_version_id)
    if hr_class is not None:
        sets.append("hr_class = %s")
        params.append(hr_class)
        where.append("(hr_class = 0 OR hr_class = %s)")
        where_params.append(hr_class)
    return db.execute("UPDATE workunit SET %s WHERE id = %%s%s"
                      % (", ".join(sets), "".join(" AND " + w for w in where)),
                      params + [wu_id] + where_params)


def replicate_workunit(db, wu_id, nresults, when):
    """Adaptive replication: an unreplicated job sent to an untrusted host
    gets target_nresults = min_quorum = ``nresults``."""
    return db.execute("UPDATE workunit SET target_nresults = %s, min_quorum = %s, "
                      "transition_time = %s WHERE id = %s", (nresults, nresults, when, wu_id))


def release_hr_class(db, wu_id, when):
    """The feeder's stale HR-committed job: uncommit it and ask for one more
    result (hr_class 0, target_nresults + 1)."""
    return db.execute("UPDATE workunit SET hr_class = 0, target_nresults = "
                      "target_nresults + 1, transition_time = %s WHERE id = %s", (when, wu_id))


def reset_hr_class(db, hr_class):
    """Uncommit every workunit of an HR class; return the rowcount."""
    return db.execute("UPDATE workunit SET hr_class = 0 WHERE hr_class = %s", (hr_class,))


def set_error_mask(db, wu_id, error_mask):
    """Write a workunit's error_mask."""
    return db.execute("UPDATE workunit SET error_mask = %s WHERE id = %s",
                      (error_mask, wu_id))


def transition_set_clause(changes, read_transition_time):
    """(SET text, parameters) for the transitioner's ``changes`` ({column:
    value}) of a workunit; transition_time is compare-and-set: if someone
    changed it since it was read (``read_transition_time``), make it now."""
    sets, params = [], []
    for c, value in changes.items():
        if c == "transition_time":
            sets.append("transition_time = IF(transition_time = %s, %s, UNIX_TIMESTAMP())")
            params += [read_transition_time, value]
        else:
            sets.append("%s = %%s" % c)
            params.append(value)
    return ", ".join(sets), tuple(params)


def apply_set_clause(db, sets, params, wu_ids):
    """UPDATE these workunits with a transition_set_clause()."""
    return db.execute("UPDATE %s SET %s WHERE id IN (%s)"
                      % (by_primary_key("workunit"), sets, placeholders(len(wu_ids))),
                      tuple(params) + tuple(wu_ids))


def record_assimilate_states(db, new_states, when):
    """The assimilator's outcome: ``new_states`` maps workunit id to its
    assimilate_state, with transition_time ``when`` -- only if still READY."""
    return update_by_id(db, "workunit", ("assimilate_state", "transition_time"),
                        {i: (state, when) for i, state in new_states.items()},
                        where="assimilate_state = %s",
                        where_params=(ASSIMILATE_READY,))


VALIDATION_COLUMNS = ("need_validate", "error_mask", "assimilate_state", "transition_time",
                      "target_nresults", "canonical_resultid", "canonical_credit")


def record_validation(db, updates):
    """The validator's outcome per workunit: ``updates`` maps id to values of
    VALIDATION_COLUMNS."""
    return update_by_id(db, "workunit", VALIDATION_COLUMNS, updates)


def set_workunits_file_delete_state(db, ids, new_state, old_state):
    """The file deleter's outcome for workunits whose input files it handled:
    file_delete_state ``new_state``, only where it is still ``old_state``;
    return rows changed."""
    return update_ids(db, "workunit", "file_delete_state = %s", ids, params=(new_state,),
                      where="file_delete_state = %s", where_params=(old_state,))


def delete_workunit(db, wu_id):
    """DELETE one workunit row (a job whose creation failed half-way)."""
    return db.execute("DELETE FROM workunit WHERE id = %s", (wu_id,))


def delete_purged_workunits(db, wu_ids):
    """DELETE archived workunits, each only if its files are deleted
    (file_delete_state DONE)."""
    for part in chunks(wu_ids):
        db.execute("DELETE FROM workunit WHERE id IN (%s) AND file_delete_state = %%s"
                   % placeholders(len(part)), part + [FILE_DELETE_DONE])


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
                        if r["server_state"] > UNSENT}
                chunk = [w for w in chunk if w not in sent]
                if not chunk:
                    continue
                marks = ", ".join(["%s"] * len(chunk))
            nres += db.execute(
                "UPDATE result SET server_state = %%s, outcome = %%s WHERE workunitid IN (%s) "
                "AND server_state IN (%%s, %%s)" % marks,
                [OVER, OUTCOME_DIDNT_NEED] + chunk + [INACTIVE, UNSENT])
            nwu += db.execute(
                "UPDATE %s SET error_mask = error_mask | %%s, transition_time = %%s "
                "WHERE id IN (%s)" % (by_primary_key("workunit"), marks),
                [WU_ERROR_CANCELLED, now] + chunk)
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
    gone = (FILE_DELETE_DONE, FILE_DELETE_ERROR)
    with db.transaction():
        for start in range(0, len(wuids), 500):
            chunk = wuids[start:start + 500]
            marks = ", ".join(["%s"] * len(chunk))
            cond = ("workunitid IN (%s) AND server_state = %%s AND outcome = %%s "
                    "AND validate_state > %%s AND file_delete_state NOT IN (%%s, %%s)" % marks)
            params = chunk + [OVER, OUTCOME_SUCCESS, VALIDATE_INIT] + list(gone)
            touched = sorted({r["workunitid"] for r in db.query(
                "SELECT workunitid FROM result WHERE %s FOR UPDATE" % cond, params)})
            if not touched:
                continue
            nres += db.execute("UPDATE result SET validate_state = %%s WHERE %s" % cond,
                               [VALIDATE_INIT] + params)
            db.execute("UPDATE %s SET need_validate = 1 WHERE id IN (%s)"
                       % (by_primary_key("workunit"), placeholders(len(touched))), touched)
            nwu += len(touched)
    return nwu, nres
