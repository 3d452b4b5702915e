"""Locality scheduling: jobs chosen by the data files a host already holds
(BOINC's sched/sched_locality.cpp, the Einstein@Home scheduler).

For projects whose jobs each read one large *sticky* data file (kept by the
client after the job) plus small inputs: a job of file FILE is named
``FILE__anything`` (its results ``FILE__anything_N``), and a host that holds
FILE gets FILE's jobs, so the file is downloaded once per host rather than
once per job.  The client lists its sticky files in each request
(``<file_info>``); the jobs are found in the result table by name, not in the
feeder's array.  Turned on by ``<locality_scheduling/>`` in config.xml, or
``<locality_scheduler_fraction>F</...>`` for a share F of the requests (the
others, and what is left of them, use the array scan of ``<sched_old/>``).

What one request does (send_work_locality()):

1. the host's files are sorted out by the config's regular expressions:
   names matching ``<locality_scheduling_workunit_file>`` are data files to
   find work for, those matching ``<locality_scheduling_sticky_file>`` may be
   deleted to make room, the others the host is told to delete
   (``<delete_file_info>``).  With no workunit-file expression configured
   every sticky file is a data file -- BOINC (built for Einstein@Home) would
   tell the host to delete them all;
2. with ``<locality_scheduling_send_timeout>`` T, a host downloading over
   100 kB/s first gets one job older than T of any kind, then more of its file;
3. for each data file on the host (in name order with
   ``<locality_scheduling_sorted_order/>``, else from a random one), the
   file's unsent results with an id above the last one this user got, one at
   a time; when there are none the work generator is asked for more through
   the file's trigger (boincpy.db.triggers: need_work), and with
   ``<locality_scheduling_wait_period>`` W the request waits W seconds once
   and looks again.  A file the generator can make nothing more of is flagged
   for removal from the working set; with ``<file_deletion_strategy>1``
   the host is told to delete a file that had no job for it;
4. if the host still needs work: a job between T and T/2 old, then up to five
   files drawn from the generator's working set (filesets with
   work_available), then a search through all result names in order from a
   random file of the working set, until something is sent;
5. after the reply is built (:func:`send_file_deletes`): the deletions of
   step 1, and when nothing could be sent for lack of disk space, one file
   the host should delete to make room (chosen by host id, so a host is
   always told the same one).

Left out, as Einstein@Home's own: the h1_/l1_ companion-file deletions and
the slow-host file pattern (disabled in BOINC too); decrement_disk_space_
locality (BOINC never calls it) and debug_sched's request/reply dumps.
"""

import time

from boincpy import rand
from boincpy.db import triggers
from boincpy.error_numbers import error_code
from boincpy.sched.check import infeasible_fast
from boincpy.sched.choose import SERVER_STATE_UNSENT, add_result_to_reply, work_needed
from boincpy.sched.context import PRIORITY_LOW, PRIORITY_NOTICE
from boincpy.sched.prefs import app_not_selected
from boincpy.sched.version import get_app_version

ERR_NO_APP_VERSION = error_code("ERR_NO_APP_VERSION")
ERR_WU_USER_RULE = error_code("ERR_WU_USER_RULE")
ERR_DB_NOT_FOUND = error_code("ERR_DB_NOT_FOUND")
ERR_INFEASIBLE = 1                  # wu_is_infeasible_fast's codes are positive
MAX_TRIES_PER_FILE = 100            # send_results_for_file's loop bound
WORKING_SET_TRIES = 5
FAST_HOST_BWDOWN = 100000           # bytes/s: hosts that get old work first
DELAY_DISK_SPACE = 3600
DELAY_DELETE_FILE = 4 * 3600
DELAY_ANONYMOUS = 4 * 3600


def extract_filename(name):
    """The data file of a locality job or result name (``FILE__...``), or None."""
    i = name.find("__")
    return name[:i] if i >= 0 else None


def _like_prefix(text):
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


class Locality:
    """One request's locality state: the host's files sorted out, the working set."""

    def __init__(self):
        self.file_infos = []            # data files: work is looked for by these
        self.delete_candidates = []     # sticky files that may go to make room
        self.files_not_needed = []      # files the host is told to delete
        self.working_set = None         # names not yet tried this request


def _log(work, text):
    if work.cfg.debug_locality:
        work.log.normal("[locality] " + text)


def locality_work_needed(work):
    """work_needed(true): also stop once a job failed for lack of disk,
    memory or speed, or no selected app has locality work."""
    for flag, why in (("disk_insufficient", "insufficient disk space"),
                      ("speed_insufficient", "host too slow"),
                      ("mem_insufficient", "insufficient memory"),
                      ("no_allowed_apps_available", "no locality app selected")):
        if getattr(work, flag):
            if work.cfg.debug_send:
                work.log.normal("[send] stopping work search - %s" % why)
            return False
    return work_needed(work)


# ---------------------------------------------------------------------------
# sending one result

def possibly_send_result(work, result):
    """Try to send this (unsent) result: 0, or why not (BOINC's codes)."""
    db = work.db
    wu = db.query_one("SELECT * FROM workunit WHERE id = %s", (result["workunitid"],))
    if wu is None:
        return ERR_DB_NOT_FOUND
    if app_not_selected(work, wu["appid"]):
        return ERR_NO_APP_VERSION
    app = work.ja.lookup_app(wu["appid"])
    bav = get_app_version(work, wu, app, check_req=True) if app is not None else None
    if bav is None and not work.cfg.locality_scheduler_fraction and work.anonymous:
        work.ctx.reply.add_message(
            "To get more %s work, finish current work, stop BOINC, remove app_info.xml file, "
            "and restart." % work.cfg.long_name, PRIORITY_NOTICE)
        work.set_delay(DELAY_ANONYMOUS)
    if bav is None:
        return ERR_NO_APP_VERSION
    if infeasible_fast(work, wu, result["server_state"], result["priority"],
                       result["report_deadline"], app, bav):
        return ERR_INFEASIBLE
    if work.cfg.one_result_per_user_per_wu and db.query_value(
            "SELECT COUNT(*) FROM result WHERE userid = %s AND workunitid = %s",
            (work.userid, wu["id"]), default=0):
        return ERR_WU_USER_RULE
    if add_result_to_reply(work, result, wu, app, bav) is None:
        return ERR_DB_NOT_FOUND         # another request took it meanwhile
    return 0


def _is_fatal(retval):
    """No app version (or no resources): stop the whole search, as BOINC."""
    return retval == ERR_NO_APP_VERSION


# ---------------------------------------------------------------------------
# the work generator's triggers (BOINC logs and carries on when they fail)

def _trigger(work, name):
    try:
        t = triggers.trigger(work.db, name)
    except Exception as exc:            # no trigger tables: an older schema
        work.log.critical("[locality] trigger retrieval for filename %s failed with error %s"
                          % (name, exc))
        return None
    if t is None:
        work.log.normal("[locality] trigger retrieval for filename %s returned empty set"
                        % name)
    elif work.cfg.debug_locality:
        work.log.debug("[locality] trigger %s state after retrieval: nw=%d wa=%d nwa=%d wsr=%d"
                       % (name, t["need_work"], t["work_available"], t["no_work_available"],
                          t["working_set_removal"]))
    return t


def make_more_work_for_file(work, name):
    """Ask the work generator for more jobs of this file (need_work); False if
    it says it has none (no_work_available) or there is no trigger."""
    t = _trigger(work, name)
    if t is None:
        return False
    if t["no_work_available"]:
        _log(work, "work generator says no work remaining for trigger %s" % name)
        return False
    try:
        triggers.set_state(work.db, t["id"], "need_work")
    except Exception as exc:
        work.log.critical("unable to set need_work state for trigger %s (error: %s)"
                          % (name, exc))
        return False
    return True


def flag_for_possible_removal(work, name):
    """No unsent job left and none to come: the generator may drop the file."""
    t = _trigger(work, name)
    if t is None:
        return
    try:
        triggers.set_state(work.db, t["id"], "working_set_removal")
    except Exception as exc:
        work.log.critical("unable to set working_set_removal state for trigger %s (error: %s)"
                          % (name, exc))


def working_set_filename(work):
    """A file drawn at random from the working set, each at most once per
    request (get_working_set_filename); None when none is left."""
    loc = work.locality
    if loc.working_set is None:
        try:
            loc.working_set = triggers.working_set(work.db)
        except Exception as exc:
            work.log.critical("build_working_set_namelist(fasthost): %s" % exc)
            loc.working_set = []
        _log(work, "build_working_set_namelist(fasthost): pattern .* has %d matches"
             % len(loc.working_set))
    names = loc.working_set
    if not names:
        work.log.critical("get_working_set_filename(fasthost): pattern not found "
                          "(file list empty)")
        return None
    i = rand.randrange(len(names))
    names[i], names[-1] = names[-1], names[i]
    name = names.pop()
    _log(work, "get_working_set_filename(fasthost): returning %s" % name)
    return name


# ---------------------------------------------------------------------------
# the searches

def send_results_for_file(work, name):
    """Send the host unsent results of data file ``name``, one at a time (see
    the module doc, step 3); returns (retval, number sent)."""
    db = work.db
    nsent = 0
    if not locality_work_needed(work):
        _log(work, "send_results_for_file(): No work needed")
        return 0, 0
    _log(work, "send_results_for_file(%s)" % name)
    like = _like_prefix(name + "__")
    in_file = "name LIKE %s AND name LIKE BINARY %s"
    # the results this user already has of this file come first in id order:
    # start after the last of them
    prev_id = db.query_value("SELECT MAX(id) FROM result WHERE userid = %s AND " + in_file,
                             (work.userid, like, like), default=None) or 0
    prev_wuid = 0
    if prev_id:
        prev_wuid = db.query_value("SELECT workunitid FROM result WHERE id = %s", (prev_id,),
                                   default=0)
    slept = False
    one_per_user = work.cfg.one_result_per_user_per_wu
    for i in range(MAX_TRIES_PER_FILE):
        if not locality_work_needed(work):
            break
        _log(work, "in_send_results_for_file(%s, %d) prev_result.id=%d" % (name, i, prev_id))
        sql = ("SELECT * FROM result WHERE " + in_file + " AND id > %s AND server_state = %s")
        params = [like, like, prev_id, SERVER_STATE_UNSENT]
        if one_per_user and prev_id:
            sql += " AND workunitid <> %s"      # not the job this user just got
            params.append(prev_wuid)
        result = db.query_one(sql + " ORDER BY id LIMIT 1", params)
        if result is None:
            more = make_more_work_for_file(work, name)
            _log(work, "make_more_work_for_file(%s, %d)=%d" % (name, i, 0 if more else -1))
            if not more:
                if one_per_user and db.query_value(
                        "SELECT id FROM result WHERE server_state = %s AND " + in_file
                        + " LIMIT 1", (SERVER_STATE_UNSENT, like, like), default=None):
                    break           # some remain, of jobs this user already has
                flag_for_possible_removal(work, name)
                _log(work, "No remaining work for file %s (%d), flagging for removal"
                     % (name, i))
                break
            if not work.cfg.locality_scheduling_wait_period or slept:
                break
            time.sleep(work.cfg.locality_scheduling_wait_period)
            slept = True
            continue
        retval = possibly_send_result(work, result)
        if _is_fatal(retval):
            return retval, nsent
        if retval == 0:
            nsent += 1
            slept = False
        elif not one_per_user:
            work.log.critical("Database inconsistency?  possibly_send_result(%d) failed for "
                              "[RESULT#%d], returning %d" % (i, result["id"], retval))
        elif retval != ERR_DB_NOT_FOUND:
            _log(work, "possibly_send_result [RESULT#%d]: %d" % (result["id"], retval))
        prev_id, prev_wuid = result["id"], result["workunitid"]
    return 0, nsent


def send_old_work(work, t_min, t_max):
    """One unsent job created between t_min and t_max (whole hours), of any
    kind, then more of its file; returns 0 if one was sent."""
    if not locality_work_needed(work):
        return 0
    t_max = (t_max // 3600) * 3600
    sql = "SELECT * FROM result WHERE server_state = %s AND create_time < %s"
    params = [SERVER_STATE_UNSENT, t_max]
    if t_min is not None:
        sql += " AND create_time > %s"
        params.append(t_min)
    result = work.db.query_one(sql + " LIMIT 1", params)
    now = work.now
    retval = -1
    if result is not None:
        retval = possibly_send_result(work, result)
        if retval == 0:
            _log(work, "send_old_work(%s) sent result created %.1f hours ago [RESULT#%d]"
                 % (result["name"], (now - result["create_time"]) / 3600.0, result["id"]))
            name = extract_filename(result["name"])
            if name is not None:
                send_results_for_file(work, name)
            else:
                _log(work, "Note: sent NON-LOCALITY result %s" % result["name"])
        elif _is_fatal(retval):
            return retval
    if retval:
        if t_min is not None:
            _log(work, "send_old_work() no feasible result younger than %.1f hours and older "
                 "than %.1f hours" % ((now - t_min) / 3600.0, (now - t_max) / 3600.0))
        else:
            _log(work, "send_old_work() no feasible result older than %.1f hours"
                 % ((now - t_max) / 3600.0))
    return retval


def _deterministic_seeded(work, start, end):
    """Walk the result names from ``start`` (to ``end``) file by file until a
    file gives the host something; returns (retval, number sent)."""
    _log(work, "send_new_file_work_deterministic_seeded() start=%s end=%s"
         % (start, end if end is not None else "+Inf"))
    lowest = start
    nsent = 0
    while True:
        if end is not None and lowest >= end:
            break
        row = work.db.query_one("SELECT name FROM result WHERE name > %s ORDER BY name "
                                "LIMIT 1", (lowest,))
        if row is None:
            break
        name = extract_filename(row["name"])
        if name is None:
            return -1, nsent            # a result that isn't locality-named
        _log(work, "send_new_file_work_deterministic will try filename %s" % name)
        retval, nsent = send_results_for_file(work, name)
        if _is_fatal(retval):
            return retval, nsent
        if nsent or not locality_work_needed(work):
            break
        lowest = name + "__~"           # past every result of this file
    return 0, nsent


def send_new_file_work_deterministic(work):
    """From a random file of the working set to the last name, then from the
    first name up to it; True if nothing was sent (no work at all)."""
    start = working_set_filename(work)
    _, nsent = _deterministic_seeded(work, start or "", None)
    if nsent:
        return False
    if start is not None and locality_work_needed(work):
        _, nsent = _deterministic_seeded(work, "", start)
        if nsent:
            return False
    return True


def send_new_file_work(work):
    """The host has no file with work: old work, the working set, then the
    deterministic search (steps 4-5 of the module doc)."""
    timeout = work.cfg.locality_scheduling_send_timeout
    while locality_work_needed(work):
        end = int(time.time()) - timeout // 2
        start = end - int(0.5 * rand.drand() * timeout)
        _log(work, "send_new_file_work(): try to send old work")
        if _is_fatal(send_old_work(work, start, end)):
            return
        for retry in range(WORKING_SET_TRIES):
            if not locality_work_needed(work):
                break
            _log(work, "send_new_file_work(%d): try to send from working set" % retry)
            name = working_set_filename(work)
            if name is not None:
                _log(work, "send_new_file_working_set will try filename %s" % name)
                retval, _ = send_results_for_file(work, name)
                if _is_fatal(retval):
                    return
        if locality_work_needed(work):
            _log(work, "send_new_file_work(): try deterministic method")
            if send_new_file_work_deterministic(work):
                return


# ---------------------------------------------------------------------------
# entry points (send.py's send_work and the handler)

def _regexes(work, patterns):
    """The config's expressions compiled; a bad one is logged and left out
    (BOINC's config parser does the same)."""
    import re
    out = []
    for p in patterns:
        try:
            out.append(re.compile(p))
        except re.error as exc:
            work.log.critical("BAD REGEXP %s in config.xml: %s" % (p, exc))
    return out


def _sort_files(work, loc):
    """Step 1: data files, deletion candidates, files the host won't need."""
    cfg = work.cfg
    wu_res = _regexes(work, cfg.locality_scheduling_workunit_file)
    sticky_res = _regexes(work, cfg.locality_scheduling_sticky_file)
    for name, nbytes in work.req.sticky_files:
        if not wu_res or any(r.search(name) for r in wu_res):
            loc.file_infos.append(name)
        elif any(r.search(name) for r in sticky_res):
            loc.delete_candidates.append(name)
            _log(work, "[HOST#%d] removing file %s from file_infos list" % (work.hostid, name))
        else:
            loc.files_not_needed.append(name)
            _log(work, "[HOST#%d] adding file %s to files_not_needed list"
                 % (work.hostid, name))


def send_work_locality(work):
    """send_work_locality(): what one request gets by locality (module doc)."""
    loc = work.locality = Locality()
    sent_before = work.njobs_sent
    try:
        _send_work_locality(work, loc)
    finally:
        if work.njobs_sent == sent_before:
            work.reason("locality", "locality scheduling found no unsent job this host can "
                        "take: none of its %d data file(s), of the working set or of any "
                        "other file" % len(loc.file_infos))


def _send_work_locality(work, loc):
    cfg = work.cfg
    _sort_files(work, loc)
    for name in loc.file_infos:
        _log(work, "[HOST#%d] has file %s" % (work.hostid, name))
    timeout = cfg.locality_scheduling_send_timeout
    if timeout and work.hinfo.n_bwdown > FAST_HOST_BWDOWN:
        retval = send_old_work(work, None, int(time.time()) - timeout)
        if retval:
            work.log.normal("[locality] send_old_work() returned %d" % retval)
        if not locality_work_needed(work):
            return
    files = list(loc.file_infos)
    if cfg.locality_scheduling_sorted_order:
        files.sort()
    elif files:
        j = rand.randrange(len(files))
        files = files[j:] + files[:j]
    for name in files:
        if not locality_work_needed(work):
            break
        retval, nsent = send_results_for_file(work, name)
        if _is_fatal(retval):
            return
        # nothing for this file although the host could take more: it has no
        # job left here for this host (not a passing shortage such as disk)
        if not nsent and locality_work_needed(work) and cfg.file_deletion_strategy == 1:
            work.ctx.reply.file_deletes.append(name)
            _log(work, "[HOST#%d]: delete file %s (not needed)" % (work.hostid, name))
    if locality_work_needed(work):
        send_new_file_work(work)


def send_mixed(work, send_other):
    """locality_scheduler_fraction: locality first for that share of requests,
    else the array scan first (``send_other``, BOINC's send_work_old), each
    starting with the 'insufficient' flags clear; a flag stays set only if
    both set it."""
    first_locality = rand.drand() < work.cfg.locality_scheduler_fraction
    steps = [(send_work_locality, "locality"), (send_other, "non-locality")]
    if not first_locality:
        steps.reverse()
    flags = ("disk_insufficient", "speed_insufficient", "mem_insufficient",
             "no_allowed_apps_available")
    step, what = steps[0]
    if work.cfg.debug_locality:
        work.log.normal("[mixed] sending %s work first" % what)
    step(work)
    saved = {f: getattr(work, f) for f in flags}
    for f in flags:
        setattr(work, f, False)
    step, what = steps[1]
    if work.cfg.debug_locality:
        work.log.normal("[mixed] sending %s work second" % what)
    step(work)
    for f in flags:
        setattr(work, f, getattr(work, f) and saved[f])


def send_file_deletes(ctx):
    """send_file_deletes(): after job choice, tell the host which files to
    delete (step 5 of the module doc)."""
    work = ctx.work
    loc = getattr(work, "locality", None)
    if loc is None:
        return
    reply = ctx.reply
    for name in loc.files_not_needed:
        reply.file_deletes.append(name)
        _log(work, "[HOST#%d]: delete file %s (not needed)" % (work.hostid, name))
        reply.add_message("BOINC will delete file %s (no longer needed)" % name, PRIORITY_LOW)
    if not reply.jobs and (work.disk_insufficient or work.disk_available < 0):
        delete_file_from_host(work)


def delete_file_from_host(work):
    """No room for a job: one file to delete (the same one each time for a
    host), or, with none, the disk messages."""
    reply = work.ctx.reply
    names = work.locality.file_infos + work.locality.delete_candidates
    if not names:
        work.log.critical("[HOST#%d]: no disk space but no files we can delete!" % work.hostid)
        x = work.disk_available
        if x > 0:
            text = "Not enough disk space (only %.1f MB free for BOINC). " % (x / 1e6)
        else:
            text = ("No disk space (YOU must free %.1f MB before BOINC gets space). "
                    % (-x / 1e6))
        prefs = work.req.global_prefs
        if prefs.disk_max_used_gb:
            text += "Review preferences for maximum disk space used."
        elif prefs.disk_max_used_pct:
            text += "Review preferences for maximum disk percentage used."
        elif prefs.disk_min_free_gb:
            text += "Review preferences for minimum disk free space allowed."
        reply.add_message(text, PRIORITY_NOTICE)
        work.set_delay(DELAY_DISK_SPACE)
        return
    name = names[work.hostid % len(names)]
    reply.file_deletes.append(name)
    _log(work, "[HOST#%d]: delete file %s (make space)" % (work.hostid, name))
    reply.add_message("BOINC will delete file %s when no longer needed" % name, PRIORITY_LOW)
    work.set_delay(DELAY_DELETE_FILE)
