"""The writes of remote job submission's tables: user_submit and
user_submit_app (who may submit and manage what), job_file and
batch_file_assoc (files uploaded for jobs, and the batches holding them).

boincpy/submit/privileges.py and job_files.py decide; the statements live here.
"""


def insert_user_submit(db, user_id, quota, max_jobs_in_progress):
    """INSERT a user's user_submit row (no logical start time, no global rights)."""
    return db.execute("INSERT INTO user_submit (user_id, quota, logical_start_time, submit_all, "
                      "manage_all, max_jobs_in_progress) VALUES (%s, %s, 0, 0, 0, %s)",
                      (user_id, quota, max_jobs_in_progress))


def set_submit_quota(db, user_id, quota):
    """The submitter's share of the project."""
    return db.execute("UPDATE user_submit SET quota = %s WHERE user_id = %s", (quota, user_id))


def set_max_jobs_in_progress(db, user_id, max_jobs_in_progress):
    """The submitter's limit on unfinished jobs."""
    return db.execute("UPDATE user_submit SET max_jobs_in_progress = %s WHERE user_id = %s",
                      (max_jobs_in_progress, user_id))


def set_submit_all(db, user_id):
    """The user may submit jobs of every app."""
    return db.execute("UPDATE user_submit SET submit_all = 1 WHERE user_id = %s", (user_id,))


def set_manage_all(db, user_id, manage_all):
    """The user may (1) or may not (0) manage every app."""
    return db.execute("UPDATE user_submit SET manage_all = %s WHERE user_id = %s",
                      (manage_all, user_id))


def set_logical_start_time(db, user_id, logical_start_time):
    """The submitter's logical start time (adjust_user_priority)."""
    return db.execute("UPDATE user_submit SET logical_start_time = %s WHERE user_id = %s",
                      (logical_start_time, user_id))


def grant_submit_app(db, user_id, app_id):
    """The user may submit jobs of the app (a user_submit_app row unless one exists)."""
    return db.execute("INSERT IGNORE INTO user_submit_app (user_id, app_id, manage) "
                      "VALUES (%s, %s, 0)", (user_id, app_id))


def grant_manage_app(db, user_id, app_id):
    """The user may manage the app (its user_submit_app row made or set manage = 1)."""
    return db.execute("INSERT INTO user_submit_app (user_id, app_id, manage) VALUES (%s, %s, 1) "
                      "ON DUPLICATE KEY UPDATE manage = 1", (user_id, app_id))


def revoke_manage_app(db, user_id, app_id):
    """The user no longer manages the app (manage = 0)."""
    return db.execute("UPDATE user_submit_app SET manage = 0 WHERE user_id = %s AND app_id = %s",
                      (user_id, app_id))


def delete_submit_app(db, user_id, app_id):
    """DELETE the user's right for one app; return the rowcount."""
    return db.execute("DELETE FROM user_submit_app WHERE user_id = %s AND app_id = %s",
                      (user_id, app_id))


def delete_submit_rights(db, user_id):
    """DELETE every user_submit_app row of the user, then the user_submit row;
    return the rows deleted."""
    n = db.execute("DELETE FROM user_submit_app WHERE user_id = %s", (user_id,))
    n += db.execute("DELETE FROM user_submit WHERE user_id = %s", (user_id,))
    return n


def insert_job_file(db, name, create_time, delete_time):
    """A job_file row for ``name`` (its id if it exists already); return the id."""
    return db.insert("INSERT INTO job_file (name, create_time, delete_time) "
                     "VALUES (%s, %s, %s) ON DUPLICATE KEY UPDATE id = LAST_INSERT_ID(id)",
                     (name, create_time, delete_time))


def set_job_file_delete_time(db, job_file_id, delete_time):
    """The job file's lease."""
    return db.execute("UPDATE job_file SET delete_time = %s WHERE id = %s",
                      (delete_time, job_file_id))


def delete_job_file_named(db, name):
    """DELETE the job_file row of ``name`` (its file is gone)."""
    return db.execute("DELETE FROM job_file WHERE name = %s", (name,))


def delete_job_file(db, job_file_id):
    """DELETE a job file's batch associations, then its row."""
    db.execute("DELETE FROM batch_file_assoc WHERE job_file_id = %s", (job_file_id,))
    return db.execute("DELETE FROM job_file WHERE id = %s", (job_file_id,))


def associate_job_file(db, job_file_id, batch_id):
    """Record that the batch uses the job file (unless recorded)."""
    return db.execute("INSERT IGNORE INTO batch_file_assoc (job_file_id, batch_id) "
                      "VALUES (%s, %s)", (job_file_id, batch_id))


def associate_job_files_named(db, names, batch_id):
    """Record that the batch uses the job files among ``names``."""
    marks = ", ".join(["%s"] * len(names))
    return db.execute("INSERT IGNORE INTO batch_file_assoc (job_file_id, batch_id) SELECT id, %%s "
                      "FROM job_file WHERE name IN (%s)" % marks, [batch_id] + list(names))


def delete_batch_file_assocs(db, batch_id):
    """DELETE the batch's job file associations."""
    return db.execute("DELETE FROM batch_file_assoc WHERE batch_id = %s", (batch_id,))
