"""Targeted and broadcast jobs (sched_assign.cpp): :func:`send_targeted_jobs`
(``<enable_assignment/>``) and :func:`send_broadcast_jobs`
(``<enable_assignment_multi/>``).  A result is created when one is sent
(:func:`send_assigned_job`).
"""

import time
from boincpy import rand
from boincpy.db.assignment import delete_assignment
from boincpy.db.result import insert_result
from boincpy.db.workunit import set_timeout_transition_time
from boincpy.sched.choose import (
    SERVER_STATE_IN_PROGRESS, SERVER_STATE_UNSENT, add_result_to_reply, work_needed)
from boincpy.sched.prefs import app_not_selected
from boincpy.sched.version import get_app_version


# ---------------------------------------------------------------------------
# targeted and broadcast jobs (sched_assign.cpp)
#
# create_work --target_host/_user/_team makes a workunit with
# transitioner_flags TRANSITION_NO_NEW_RESULTS, --broadcast[_user|_team] one
# with TRANSITION_NONE, both with transition_time INT_MAX and no results, plus
# an assignment row (multi=1 for broadcasts).  The feeder never caches such
# workunits; the scheduler creates a result when it sends one to a host of
# the target and claims it at once.

ASSIGN_NONE, ASSIGN_HOST, ASSIGN_USER, ASSIGN_TEAM = 0, 1, 2, 3
SERVER_STATE_INACTIVE = 1
SERVER_STATE_OVER = 5
OUTCOME_SUCCESS = 1
VALIDATE_STATE_INVALID = 2

_result_seqno = 0


def _team_id(work):
    team = work.ctx.team
    return (team or {}).get("id", 0) or 0


def need_targeted_instance(work, wu):
    """need_targeted_instance(): whether a targeted workunit needs another
    instance, on this host.  Returns None if so, else the reason."""
    if wu["error_mask"]:
        return "it has an error or was cancelled"
    if wu["need_validate"]:
        return "it is waiting for validation"
    if wu["canonical_resultid"]:
        return "it is complete"
    if wu["transition_time"] < time.time():
        return "it is waiting for the transitioner"
    nunsent = ninprogress = nsuccess = 0
    for r in work.db.query("SELECT hostid, userid, server_state, outcome, validate_state "
                           "FROM result WHERE workunitid = %s", (wu["id"],)):
        if r["hostid"] == work.hostid:
            return "this host already has an instance of it"
        # BOINC checks the host only; a user-targeted job of quorum 2 would
        # then be validated by one volunteer against themselves
        if work.cfg.one_result_per_user_per_wu and r["userid"] == work.userid:
            return "this user already has an instance of it (one_result_per_user_per_wu)"
        state = r["server_state"]
        if state in (SERVER_STATE_INACTIVE, SERVER_STATE_UNSENT):
            nunsent += 1
        elif state == SERVER_STATE_IN_PROGRESS:
            ninprogress += 1
        elif state == SERVER_STATE_OVER:
            if r["outcome"] == OUTCOME_SUCCESS and r["validate_state"] != VALIDATE_STATE_INVALID:
                nsuccess += 1
    if wu["target_nresults"] - nunsent - ninprogress - nsuccess <= 0:
        return "it has all the instances it needs (%d unsent, %d in progress, %d done)" % (
            nunsent, ninprogress, nsuccess)
    return None


def _create_result(work, wu):
    """create_result() as the scheduler calls it for an assigned job: a new
    result WUNAME_PID_TIME_SEQ (UNSENT, or INACTIVE with a size class).
    Returns the row, or None after logging why it couldn't be made."""
    from boincpy.errors import BoincpyError
    from boincpy.templates import process_result_template
    global _result_seqno
    name = "%s_%d_%d_%d" % (wu["name"], work.pid, int(time.time()), _result_seqno)
    _result_seqno += 1
    template_file = wu["result_template_file"]
    path = work.cfg.project_path(template_file)
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
        xml = process_result_template(text, name, work.cfg, rand=rand.getrandbits(31),
                                      path=template_file)
    except (OSError, BoincpyError) as exc:
        work.log.critical("[WU#%d %s] create_result(): %s"
                          % (wu["id"], wu["name"], getattr(exc, "message", None) or exc))
        return None
    size_class = wu.get("size_class", -1)
    if size_class is None:
        size_class = -1
    state = SERVER_STATE_UNSENT if size_class < 0 else SERVER_STATE_INACTIVE
    rid = insert_result(work.db, int(time.time()), wu["id"], state, name, xml, wu["batch"],
                        rand.getrandbits(31), wu["appid"], wu["priority"], size_class)
    return work.db.query_one("SELECT * FROM result WHERE id = %s", (rid,))


def send_assigned_job(work, asg, wu=None):
    """send_assigned_job(): create a result of the assignment's workunit and
    send it to this host.  Returns False if nothing could be tried (workunit,
    app or app version missing, app not selected, result not created); True
    once the result exists and its claim was attempted, as BOINC counts it."""
    if wu is None:
        wu = work.db.query_one("SELECT * FROM workunit WHERE id = %s", (asg["workunitid"],))
        if wu is None:
            work.log.critical("assigned WU %d not found" % asg["workunitid"])
            return False
    if app_not_selected(work, wu["appid"]):
        work.log.critical("Assigned WU %s is for app not selected by user" % wu["name"])
        work.reason("assigned", "assigned job %s is for an app the user didn't select"
                    % wu["name"])
        return False
    app = work.ja.lookup_app(wu["appid"])
    bav = get_app_version(work, wu, app, check_req=False) if app is not None else None
    if bav is None:
        work.log.critical("App version for assigned WU not found")
        work.reason("assigned", "no app version for assigned job %s on this host"
                    % wu["name"])
        return False
    result = _create_result(work, wu)
    if result is None:
        return False
    add_result_to_reply(work, result, wu, app, bav)
    if work.cfg.debug_assignment:
        work.log.normal("[assign] [WU#%d] [RESULT#%d] [HOST#%d] send assignment %d"
                        % (wu["id"], result["id"], work.hostid, asg["id"]))
    return True


def _send_jobs(work, assign_type, target_id):
    """send_jobs(): this host's targeted (multi=0) jobs of one target type."""
    db = work.db
    sent = False
    rows = db.query("SELECT * FROM assignment WHERE target_type = %s AND target_id = %s "
                    "AND multi = 0 ORDER BY id", (assign_type, target_id))
    for asg in rows:
        if not work_needed(work):
            break
        lock = _lock_workunit(work, asg["workunitid"])
        if lock is None:
            work.reason("assigned", "targeted [WU#%d] is being sent by another request"
                        % asg["workunitid"])
            continue
        try:
            wu = _send_targeted_job(work, asg)
        finally:
            db.query_one("SELECT RELEASE_LOCK(%s) AS released", (lock,))
        if wu is None:
            continue
        sent = True
        # time the job out if it doesn't come back (no grace period here, as BOINC)
        set_timeout_transition_time(db, wu["id"], int(time.time()) + wu["delay_bound"])
    return sent


ASSIGN_LOCK_WAIT = 5       # seconds a request waits for another to finish a targeted job


def _lock_workunit(work, wuid):
    """A MySQL named lock on one targeted workunit for this project: two
    scheduler processes deciding at once whether it needs another instance
    would both say yes (C++ has that race; one instance too many is sent).
    The lock goes with the connection if the CGI dies.  Returns its name, or
    None if another request held it for ASSIGN_LOCK_WAIT seconds."""
    name = "boincpy.assign.%s.%d" % (work.cfg.db_name[:40], wuid)
    row = work.db.query_one("SELECT GET_LOCK(%s, %s) AS got", (name, ASSIGN_LOCK_WAIT))
    return name if row is not None and row["got"] == 1 else None


def _send_targeted_job(work, asg):
    """One targeted assignment, under its workunit's lock: the workunit row
    if an instance was sent, else None (the reason is logged)."""
    db, cfg = work.db, work.cfg
    wu = db.query_one("SELECT * FROM workunit WHERE id = %s", (asg["workunitid"],))
    if wu is None:
        delete_assignment(db, asg["id"])
        return None
    why = need_targeted_instance(work, wu)
    if why:
        if cfg.debug_assignment:
            work.log.normal("[assign] [HOST#%d] not sending targeted job %s: %s"
                            % (work.hostid, wu["name"], why))
        work.reason("assigned", "targeted job %s: %s" % (wu["name"], why))
        return None
    if cfg.debug_send:
        work.log.normal("sending targeted job: %s" % wu["name"])
    if not send_assigned_job(work, asg, wu):
        work.log.normal("failed to send targeted job: %s" % wu["name"])
        return None
    return wu


def send_targeted_jobs(work):
    """Send this host the jobs targeted at its user, itself and its team
    (enable_assignment; send_targeted_jobs()).  Returns True if any was sent:
    BOINC sends no other jobs in that reply."""
    if work.cfg.debug_send:
        work.log.normal("checking for targeted jobs")
    sent = _send_jobs(work, ASSIGN_USER, work.userid)
    sent |= _send_jobs(work, ASSIGN_HOST, work.hostid)
    sent |= _send_jobs(work, ASSIGN_TEAM, _team_id(work))
    work.best.clear()
    return sent


def send_broadcast_jobs(work):
    """Send this host one instance of every broadcast job (multi=1 assignment,
    from the feeder's tables) for everyone, its user or its team, unless it
    already has one (enable_assignment_multi; send_broadcast_jobs()).
    Returns True if any was sent."""
    sent = False
    for asg in work.ja.tables().get("assignments", ()):
        if work.cfg.debug_assignment:
            work.log.normal("[assign] processing broadcast type %d" % asg["target_type"])
        t = asg["target_type"]
        if t == ASSIGN_USER and work.userid != asg["target_id"]:
            continue
        if t == ASSIGN_TEAM and _team_id(work) != asg["target_id"]:
            continue
        if t not in (ASSIGN_NONE, ASSIGN_USER, ASSIGN_TEAM):
            continue
        have = work.db.query_one("SELECT id FROM result WHERE workunitid = %s AND hostid = %s "
                                 "LIMIT 1", (asg["workunitid"], work.hostid))
        if have is not None:
            continue
        wu = work.db.query_one("SELECT * FROM workunit WHERE id = %s", (asg["workunitid"],))
        if wu is None:
            continue
        if wu["error_mask"]:
            # C++ sends a cancelled broadcast job anyway; the host would only
            # be told to abort it on its next request
            work.reason("assigned", "broadcast job %s was cancelled" % wu["name"])
            continue
        if send_assigned_job(work, asg, wu):
            sent = True
    work.best.clear()
    return sent
