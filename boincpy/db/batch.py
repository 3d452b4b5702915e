"""The batch table's writes (BOINC's DB_BATCH update/insert methods).

boincpy/submit/batch.py decides a batch's life (create, start, refresh,
abort, retire, expire); the statements it writes live here.
"""

from boincpy.states import BatchState


def insert_batch(db, batch_id, user_id, create_time, state, name, app_id, expire_time):
    """INSERT a new batch (``batch_id`` None: the next auto-increment id);
    return its id.  Counts and times start at 0, the description empty."""
    return db.insert(
        "INSERT INTO batch (id, user_id, create_time, logical_start_time, logical_end_time, "
        "est_completion_time, njobs, fraction_done, nerror_jobs, state, completion_time, "
        "credit_estimate, credit_canonical, credit_total, name, app_id, project_state, "
        "description, expire_time) VALUES (%s, %s, %s, 0, 0, 0, 0, 0, 0, %s, 0, 0, 0, 0, "
        "%s, %s, 0, '', %s)", (batch_id, user_id, create_time, state, name, app_id,
                               expire_time))


def record_batch_start(db, batch):
    """Write a started batch's state, njobs, credit_estimate and logical times
    (from the rows.Batch ``batch``)."""
    return db.execute("UPDATE batch SET state = %s, njobs = %s, credit_estimate = %s, "
                      "logical_start_time = %s, logical_end_time = %s WHERE id = %s",
                      (batch.state, batch.njobs, batch.credit_estimate,
                       batch.logical_start_time, batch.logical_end_time, batch.id))


def start_batch_if_init(db, batch_id):
    """A batch still in INIT goes IN_PROGRESS (its jobs were made by hand)."""
    return db.execute("UPDATE batch SET state = %s WHERE id = %s AND state = %s",
                      (int(BatchState.IN_PROGRESS), batch_id, int(BatchState.INIT)))


def clear_batch_njobs(db, batch_id):
    """A batch whose jobs are all gone: njobs = 0."""
    return db.execute("UPDATE batch SET njobs = 0 WHERE id = %s", (batch_id,))


def record_batch_counts(db, batch):
    """Write a batch's counts as refreshed from its jobs (get_batch_params):
    fraction_done, nerror_jobs, state, completion_time, credit_canonical,
    credit_total, njobs, est_completion_time, from the rows.Batch ``batch``."""
    return db.execute(
        "UPDATE batch SET fraction_done = %s, nerror_jobs = %s, state = %s, "
        "completion_time = %s, credit_canonical = %s, credit_total = %s, njobs = %s, "
        "est_completion_time = %s WHERE id = %s",
        (batch.fraction_done, batch.nerror_jobs, batch.state, batch.completion_time,
         batch.credit_canonical, batch.credit_total, batch.njobs, batch.est_completion_time,
         batch.id))


def mark_batch_aborted(db, batch_id, completion_time):
    """state ABORTED, completed at ``completion_time``."""
    return db.execute("UPDATE batch SET state = %s, completion_time = %s WHERE id = %s",
                      (int(BatchState.ABORTED), completion_time, batch_id))


def mark_batch_retired(db, batch_id):
    """state RETIRED."""
    return db.execute("UPDATE batch SET state = %s WHERE id = %s",
                      (int(BatchState.RETIRED), batch_id))


def set_batch_expire_time(db, batch_id, expire_time):
    """The batch's lease (expire_time)."""
    return db.execute("UPDATE batch SET expire_time = %s WHERE id = %s",
                      (expire_time, batch_id))


def delete_retired_batch(db, batch_id):
    """DELETE a batch row, only if it is RETIRED."""
    return db.execute("DELETE FROM batch WHERE id = %s AND state = %s",
                      (batch_id, int(BatchState.RETIRED)))
