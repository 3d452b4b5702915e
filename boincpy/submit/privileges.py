"""Who may submit and manage jobs: the user_submit and user_submit_app tables.

As BOINC's submit_util.inc: a user with a ``user_submit`` row may use the
file RPCs; ``submit_all`` (or a ``user_submit_app`` row) lets them submit to
an app; ``manage_all`` (or ``user_submit_app.manage``) lets them manage an
app's batches -- here that also means seeing and changing other submitters'
batches of the app, which BOINC's RPC handler never allows anyone.

The submitter's share of the project: ``quota`` (relative to the other
submitters' quotas) and ``logical_start_time``, which grows with the FLOPs the
submitter asked for (adjust_user_priority); batches submitted with
``allocation_priority`` get the negated logical end time as job priority, so
the submitter who used least of their share is served first.
"""

import time

from boincpy.db.rows import UserSubmit, UserSubmitApp
from boincpy.db.submit import (delete_submit_app, delete_submit_rights, grant_manage_app,
                               grant_submit_app, insert_user_submit, revoke_manage_app,
                               set_logical_start_time, set_manage_all, set_max_jobs_in_progress,
                               set_submit_all, set_submit_quota)
from boincpy.errors import SubmitError

from boincpy.submit.batch import COBBLESTONE_SCALE


def user_submit(db, user_id):
    """The user's user_submit row, or None."""
    return UserSubmit.from_row(db.query_one(
        "SELECT * FROM user_submit WHERE user_id = %s", (user_id,)))


def _submit_app(db, user_id, app_id):
    return UserSubmitApp.from_row(db.query_one(
        "SELECT * FROM user_submit_app WHERE user_id = %s AND app_id = %s", (user_id, app_id)))


def has_file_access(db, user_id):
    """May the user use job_file.php and query their batches?"""
    return user_submit(db, user_id) is not None


def has_submit_access(db, user_id, app_id):
    """May the user submit jobs of this app?"""
    us = user_submit(db, user_id)
    if us is None:
        return False
    return bool(us.submit_all) or _submit_app(db, user_id, app_id) is not None


def has_manage_access(db, user_id, app_id):
    """May the user manage this app (app_id 0: every app)?"""
    us = user_submit(db, user_id)
    if us is None:
        return False
    if us.manage_all:
        return True
    if not app_id:
        return False
    usa = _submit_app(db, user_id, app_id)
    return bool(usa and usa.manage)


def may_control_batch(db, user_id, batch):
    """The batch's owner, or a manager of its app."""
    return batch.user_id == user_id or has_manage_access(db, user_id, batch.app_id)


def _ensure_user_submit(db, user_id, quota=None, max_jobs_in_progress=None):
    if user_submit(db, user_id) is None:
        insert_user_submit(db, user_id, 1.0 if quota is None else quota,
                           max_jobs_in_progress or 0)
    if quota is not None:
        set_submit_quota(db, user_id, quota)
    if max_jobs_in_progress is not None:
        set_max_jobs_in_progress(db, user_id, max_jobs_in_progress)


def grant_submit(db, user_id, app_id=0, quota=None, max_jobs_in_progress=None):
    """Let a user submit jobs of an app (app_id 0: of every app); set their
    quota (default 1: an equal share) and job limit when given."""
    with db.transaction():
        _ensure_user_submit(db, user_id, quota, max_jobs_in_progress)
        if app_id:
            grant_submit_app(db, user_id, app_id)
        else:
            set_submit_all(db, user_id)


def grant_manage(db, user_id, app_id=0):
    """Let a user manage an app (app_id 0: every app), as BOINC's
    manage_privileges grant; False if they already could."""
    with db.transaction():
        us = user_submit(db, user_id)
        if not app_id:
            if us is not None and us.manage_all:
                return False
            _ensure_user_submit(db, user_id)
            set_manage_all(db, user_id, 1)
            return True
        usa = _submit_app(db, user_id, app_id)
        if usa is not None and usa.manage:
            return False
        _ensure_user_submit(db, user_id)
        grant_manage_app(db, user_id, app_id)
        return True


def revoke_manage(db, user_id, app_id=0):
    """Take back the manage privilege of an app (app_id 0: the global one);
    False if the user did not have it."""
    with db.transaction():
        if not app_id:
            us = user_submit(db, user_id)
            if us is None or not us.manage_all:
                return False
            set_manage_all(db, user_id, 0)
            return True
        usa = _submit_app(db, user_id, app_id)
        if usa is None or not usa.manage:
            return False
        revoke_manage_app(db, user_id, app_id)
        return True


def revoke_submit(db, user_id, app_id=0):
    """Take back the right to submit jobs of an app (its user_submit_app row);
    app_id 0: every right the user has, user_submit row included
    (delete_remote_submit_user).  False if there was nothing to take."""
    with db.transaction():
        if app_id:
            return delete_submit_app(db, user_id, app_id) > 0
        return delete_submit_rights(db, user_id) > 0


def submitters(db):
    """Every user with submission rights: [(user row, UserSubmit, [UserSubmitApp with app name])]."""
    apps = {}
    for r in db.query("SELECT user_submit_app.*, app.name AS app_name FROM user_submit_app "
                      "LEFT JOIN app ON app.id = user_submit_app.app_id ORDER BY app_id"):
        apps.setdefault(r["user_id"], []).append((UserSubmitApp.from_row(r), r["app_name"]))
    out = []
    for r in db.query("SELECT user_submit.*, user.name, user.email_addr FROM user_submit "
                      "JOIN user ON user.id = user_submit.user_id ORDER BY user_submit.user_id"):
        out.append(({"id": r["user_id"], "name": r["name"], "email_addr": r["email_addr"]},
                    UserSubmit.from_row(r), apps.get(r["user_id"], [])))
    return out


def project_flops(db, now=None):
    """The project's recent speed in FLOPS, from the app versions' average
    credit of the last 30 days (get_project_flops)."""
    now = now or time.time()
    credit_per_day = db.query_value(
        "SELECT SUM(expavg_credit) FROM app_version WHERE expavg_time > %s",
        (now - 30 * 86400,)) or 0.0
    return float(credit_per_day) / COBBLESTONE_SCALE / 86400


def adjust_user_priority(db, user_id, flops, min_avg_pfc=0.0, now=None, update=True):
    """Advance the submitter's logical start time by the time ``flops`` take
    at their share of the project (adjust_user_priority.cpp); return the new
    value (the batch's logical end time).  FLOPs are normalised by the app's
    ``min_avg_pfc``.  No quotas or no recent credit: no advance, as BOINC."""
    now = now or time.time()
    us = user_submit(db, user_id)
    if us is None:
        raise SubmitError("no submit access")
    if min_avg_pfc:
        flops *= min_avg_pfc
    total_quota = float(db.query_value("SELECT SUM(quota) FROM user_submit") or 0.0)
    speed = project_flops(db, now)
    delta = 0.0
    if total_quota > 0 and speed > 0:
        if us.quota > 0:
            share = us.quota / total_quota
        else:
            # BOINC divides by zero here; a submitter without a quota gets an
            # equal share of the submitters instead
            share = 1.0 / max(1, int(db.query_value("SELECT COUNT(*) FROM user_submit") or 1))
        delta = (flops / speed) / share
    start = max(us.logical_start_time, now)
    new = start + delta
    if update:
        set_logical_start_time(db, user_id, new)
    return new
