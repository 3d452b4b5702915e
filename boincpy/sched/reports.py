"""Completed jobs the client reports, the jobs it should abort, and trickle messages.

``handle_results`` is BOINC's handle_results (sched/sched_result.cpp,
scheduler-protocol.md §8): every reported result is acknowledged
(``<result_ack>``) unless its row could not be written, so the client
forgets it; only a result that is in progress for this host (or this user),
or came back late after a timeout, is written: outcome SUCCESS when the
client uploaded its files and exited 0, else CLIENT_ERROR / INVALID; the
host's daily quota for the app version doubles on success and shrinks on
error.  A result reported again is acknowledged again and not processed
twice.  All rows of one request are written in one transaction together
with the workunits' ``transition_time``, so the transitioner sees every
accepted report.
"""

import time

from boincpy.errors import Signal

# The db.* writers are imported where used: most requests (no reports, no
# trickles) need none of them, and a CGI pays for every import.

# Values of boincpy.states (ServerState, Outcome, ValidateState, ClientState),
# literal because importing enum costs every CGI request ~4 ms; a test checks
# they agree.
RESULT_UNSENT = 2
RESULT_IN_PROGRESS = 4
RESULT_OVER = 5
OUTCOME_INIT = 0
OUTCOME_SUCCESS = 1
OUTCOME_COULDNT_SEND = 2
OUTCOME_CLIENT_ERROR = 3
OUTCOME_NO_REPLY = 4
OUTCOME_DIDNT_NEED = 5
OUTCOME_VALIDATE_ERROR = 6
OUTCOME_CLIENT_DETACHED = 7
VALIDATE_INVALID = 2
CLIENT_FILES_UPLOADED = 5
WU_ERROR_CANCELLED = 16
ASSIMILATE_DONE = 2
EXIT_ABORTED_BY_PROJECT = 202

# Why a result that is already over is not taken again (BOINC's words).
_OVER_REASONS = {
    OUTCOME_INIT: "this result was never sent",
    OUTCOME_SUCCESS: "result already reported as success",
    OUTCOME_COULDNT_SEND: "this result couldn't be sent",
    OUTCOME_CLIENT_ERROR: "result already reported as error",
    OUTCOME_DIDNT_NEED: "this result wasn't sent (not needed)",
    OUTCOME_VALIDATE_ERROR: "result already reported, validate error",
}


def generalized_app_version_id(app_version_id, appid):
    """host_app_version.app_version_id of a result's version (anonymous
    platform versions are appid*1000000 + resource code)."""
    if app_version_id < 0:
        return appid * 1000000 - app_version_id
    return app_version_id


def _got_good_result(ctx, row):
    """A success: the host may have twice as many jobs a day (up to the quota)."""
    quota = ctx.cfg.daily_result_quota
    hav = ctx.host_app_versions.get(generalized_app_version_id(row["app_version_id"],
                                                               row["appid"]))
    if hav is None:
        return
    if hav["max_jobs_per_day"] < quota:
        n = min(hav["max_jobs_per_day"] * 2, quota)
        if ctx.cfg.debug_quota:
            ctx.log.normal("[quota] increasing max_jobs_per_day for %d: %d->%d"
                           % (hav["app_version_id"], hav["max_jobs_per_day"], n))
        hav["max_jobs_per_day"] = n


def _got_bad_result(ctx, row):
    """An error: one job a day fewer (at least 1), and the valid streak ends."""
    quota = ctx.cfg.daily_result_quota
    hav = ctx.host_app_versions.get(generalized_app_version_id(row["app_version_id"],
                                                               row["appid"]))
    if hav is None:
        return
    n = max(min(hav["max_jobs_per_day"], quota) - 1, 1)
    if ctx.cfg.debug_quota:
        ctx.log.normal("[quota] decreasing max_jobs_per_day for %d: %d->%d"
                       % (hav["app_version_id"], hav["max_jobs_per_day"], n))
    hav["max_jobs_per_day"] = n
    hav["consecutive_valid"] = 0


def _time_text(t):
    return time.strftime("%d-%b-%Y %H:%M:%S", time.localtime(t))


def handle_results(ctx):
    """Write the reported results (see the module docstring); fills
    reply.result_acks and sets ctx.resend_lost_results when a success is
    reported again.  Whatever the number of results, the SQL is a few
    statements: one read (usually made with the host row's), one guarded
    UPDATE of the results in a savepoint, and one of their workunits."""
    _ack_file_xfers(ctx)
    reported = ctx.request.results
    if not reported:
        return
    reported = _reported(ctx)
    by_name = _read_reported(ctx, reported)
    plan_classes = {}
    accepted = []           # (row as read, new values)
    for r in reported:
        row = by_name.get(r.name)
        if _judge(ctx, row, r):
            accepted.append((row, _accept(ctx, row, r, plan_classes)))
    if not accepted:
        return
    written = _write_reports(ctx, accepted)
    for row, v in written:
        # the quota follows the reports that were recorded, and only those
        if v["outcome"] == OUTCOME_SUCCESS:
            _got_good_result(ctx, row)
        elif v["exit_status"] != EXIT_ABORTED_BY_PROJECT:
            _got_bad_result(ctx, row)
        ctx.reply.result_acks.append(row["name"])
    if written:
        from boincpy import doorbell
        cfg = ctx.cfg
        ctx.db.after_commit(lambda: doorbell.ring(cfg, doorbell.TRANSITIONER))


def _ack_file_xfers(ctx):
    for r in ctx.request.file_xfer_results:
        # BOINC takes results named *download* / *upload* for file-transfer
        # pseudo-jobs: acknowledged, never recorded
        ctx.log.normal("completed file xfer %s" % r.name)
        ctx.reply.result_acks.append(r.name)


def _reported(ctx):
    """The reported results handled (the first report_max when it is set)."""
    reported = ctx.request.results
    if ctx.cfg.report_max and len(reported) > ctx.cfg.report_max:
        reported = reported[:ctx.cfg.report_max]
    return reported


def reported_read(ctx):
    """(sql, params) of the SELECT of the reported results' rows."""
    names = [r.name for r in _reported(ctx)]
    return ("SELECT id, name, workunitid, appid, server_state, hostid, userid, sent_time, "
            "received_time, validate_state, outcome, client_state, file_delete_state, "
            "app_version_id FROM result WHERE name IN (%s)" % ", ".join(["%s"] * len(names)),
            names)


def _read_reported(ctx, reported):
    """{name: result row} of the reported results: read ahead with the host
    row (a plain read, as it would be here: the UPDATE checks the row is
    still as read), else one query now."""
    rows = ctx.take_read_ahead("reported")
    if rows is None:
        rows = ctx.db.query(*reported_read(ctx))
    return {row["name"]: row for row in rows}


def _judge(ctx, row, r):
    """True if report ``r`` of result ``row`` (None: unknown) is to be
    written; otherwise it is acknowledged (or not) here, with BOINC's log."""
    log, reply = ctx.log, ctx.reply
    host = ctx.host
    hostid = host["id"]
    if row is None:
        log.critical("[HOST#%d] [RESULT#? %s] reported result not in DB" % (hostid, r.name))
        reply.result_acks.append(r.name)
        return False
    debug = ctx.cfg.debug_handle_results
    if debug:
        log.normal("[handle] [HOST#%d] [RESULT#%d] [WU#%d] got result (DB: server_state=%d "
                   "outcome=%d client_state=%d validate_state=%d delete_state=%d)"
                   % (hostid, row["id"], row["workunitid"], row["server_state"],
                      row["outcome"], row["client_state"], row["validate_state"],
                      row["file_delete_state"]))
    if row["server_state"] == RESULT_OVER:
        outcome = row["outcome"]
        if outcome not in (OUTCOME_NO_REPLY, OUTCOME_CLIENT_DETACHED):
            reason = _OVER_REASONS.get(outcome,
                                       "server logic bug; please alert BOINC developers")
            if outcome == OUTCOME_SUCCESS:
                # the client never saw our ack: it may also have missed jobs
                ctx.resend_lost_results = True
            if debug:
                log.normal("[handle][HOST#%d][RESULT#%d][WU#%d] result already over "
                           "[outcome=%d validate_state=%d]: %s"
                           % (hostid, row["id"], row["workunitid"], outcome,
                              row["validate_state"], reason))
            reply.result_acks.append(r.name)
            return False
    if row["server_state"] == RESULT_UNSENT:
        log.critical("[HOST#%d] [RESULT#%d] [WU#%d] got unexpected result: server state "
                     "is %d" % (hostid, row["id"], row["workunitid"], row["server_state"]))
        reply.result_acks.append(r.name)
        return False
    if row["received_time"]:
        log.critical("[HOST#%d] [RESULT#%d] [WU#%d] already got result, at %s "
                     % (hostid, row["id"], row["workunitid"],
                        _time_text(row["received_time"])))
        reply.result_acks.append(r.name)
        return False
    if row["hostid"] != hostid:
        return _same_user(ctx, row, r)
    return True


def _same_user(ctx, row, r):
    """A result sent to another host of the same user is taken (BOINC's rule)."""
    log, host = ctx.log, ctx.host
    hostid = host["id"]
    log.critical("[HOST#%d] [RESULT#%d] [WU#%d] got result from wrong host; "
                 "expected [HOST#%d]" % (hostid, row["id"], row["workunitid"], row["hostid"]))
    other = ctx.db.query_one("SELECT id, userid FROM host WHERE id = %s", (row["hostid"],))
    if other is None:
        log.critical("[RESULT#%d] [WU#%d] Can't lookup [HOST#%d]"
                     % (row["id"], row["workunitid"], row["hostid"]))
        ctx.reply.result_acks.append(r.name)
        return False
    if other["userid"] != host["userid"]:
        log.critical("[USER#%d] [HOST#%d] [RESULT#%d] [WU#%d] Not even the same user; "
                     "expected [USER#%d]" % (host["userid"], hostid, row["id"],
                                             row["workunitid"], other["userid"]))
        ctx.reply.result_acks.append(r.name)
        return False
    log.critical("[HOST#%d] [RESULT#%d] [WU#%d] Allowing result because same USER#%d"
                 % (hostid, row["id"], row["workunitid"], host["userid"]))
    return True


# The columns a report is written under: the row must still be as it was read.
_GUARD = ("server_state", "outcome", "validate_state", "received_time", "hostid")
# Bytes of client text (stderr, xml_doc_out) per UPDATE, under max_allowed_packet.
_UPDATE_TEXT_BYTES = 4 << 20


def _write_reports(ctx, accepted):
    """Write the accepted reports in one transaction (a savepoint of the
    request's) and have their workunits' transition_time lowered at the
    request's end; returns [(row, values)] written ([] if the transaction
    failed: then nothing is acknowledged and the client reports again)."""
    db, log = ctx.db, ctx.log
    hostid = ctx.host["id"]
    try:
        with db.transaction():
            written = _once_each(ctx, accepted)
            groups = {}         # column tuple -> [(id, values, guard values)]
            # rows in (workunit, id) order: the order the daemons lock a
            # workunit's results in (through the result.workunitid index)
            for row, v in sorted(written, key=lambda rv: (rv[0]["workunitid"], rv[0]["id"])):
                # What the client sent, fitted to the columns (a stderr larger
                # than its column is cut): a report must never fail to be
                # written, or it is reported again on every RPC, forever.
                sets = ctx.fitted("result", {
                    "hostid": hostid, "received_time": ctx.now,
                    "client_state": v["client_state"], "cpu_time": v["cpu_time"],
                    "exit_status": v["exit_status"], "app_version_num": v["app_version_num"],
                    "server_state": RESULT_OVER, "outcome": v["outcome"],
                    "stderr_out": v["stderr_out"], "xml_doc_out": v["xml_doc_out"],
                    "validate_state": v["validate_state"],
                    "teamid": ctx.user.get("teamid") or 0, "elapsed_time": v["elapsed_time"],
                    "peak_working_set_size": round(v["peak_working_set_size"]),
                    "peak_swap_size": round(v["peak_swap_size"]),
                    "peak_disk_usage": round(v["peak_disk_usage"])}, "[RESULT#%d]" % row["id"])
                groups.setdefault(tuple(sets), []).append(
                    (row["id"], tuple(sets.values()), tuple(row[c] for c in _GUARD)))
            for columns, rows in groups.items():
                _update_rows(db, columns, rows)
    except Exception as exc:
        # not acknowledged: the client reports them again next time
        log.critical("[HOST#%d] can't update results: %s" % (hostid, exc))
        return []
    # Outside the savepoint, at the end of the request's transaction (see
    # SchedContext.lower_transition_time): if it fails, the whole
    # transaction is undone and nothing is acknowledged; a deadlock there has
    # the request handled once more.
    for row, _ in written:
        ctx.lower_transition_time(row["workunitid"], ctx.now)
    return written


def _once_each(ctx, accepted):
    """The accepted reports, a result reported twice in one request once."""
    keep, seen = [], set()
    for row, v in accepted:
        if row["id"] in seen:
            ctx.log.critical("[HOST#%d] [RESULT#%d] [WU#%d] can't update result: "
                             "reported twice in one request"
                             % (ctx.host["id"], row["id"], row["workunitid"]))
            continue
        keep.append((row, v))
        seen.add(row["id"])
    return keep


class _RowsChanged(Signal):
    """Some reported rows were no longer as read when written: not an error,
    the savepoint is undone and the client reports them again."""


def _update_rows(db, columns, rows):
    """Write result rows [(id, values of ``columns``, values of _GUARD as
    read)] in as few statements as the text allows (record_reported_results:
    a join with a derived table)."""
    chunk, size = [], 0
    for row in rows:
        n = sum(len(x) for x in row[1] if isinstance(x, (str, bytes)))
        if chunk and size + n > _UPDATE_TEXT_BYTES:
            _update_chunk(db, columns, chunk)
            chunk, size = [], 0
        chunk.append(row)
        size += n
    if chunk:
        _update_chunk(db, columns, chunk)


def _update_chunk(db, columns, rows):
    # Each row is written only if still as it was read: another request
    # reporting the same result (a client retrying a stalled RPC) may have
    # written it since, and the validator validated and credited it --
    # writing our stale validate_state over that would have it validated and
    # credited again.  The UPDATE's own read is a locking one, so no SELECT
    # ... FOR UPDATE round trip is needed first.  If any row changed, the
    # savepoint undoes every report of the request: none is acknowledged,
    # the client reports them again, and each is then judged against the row
    # as it is.  (A report always changes its row: received_time, server_state.)
    from boincpy.db.result import record_reported_results
    n = record_reported_results(db, columns, rows, _GUARD)
    if n != len(rows):
        raise _RowsChanged("%d of %d result rows changed meanwhile; none is acknowledged, "
                           "the client reports them again" % (len(rows) - n, len(rows)))


def _accept(ctx, row, r, plan_classes):
    """The new column values of an accepted report, with BOINC's sanity fixes
    (the host's quota is adjusted once the row is written); ``plan_classes``
    caches app versions' plan classes over one request."""
    log = ctx.log
    hostid = ctx.host["id"]
    cpu_time = r.final_cpu_time
    elapsed = r.final_elapsed_time
    if elapsed < cpu_time and row["app_version_id"] > 0:
        # a single-thread app can't use more CPU than wall time
        avid = row["app_version_id"]
        if avid not in plan_classes:
            av = ctx.db.query_one("SELECT plan_class FROM app_version WHERE id = %s", (avid,))
            plan_classes[avid] = None if av is None else (av["plan_class"] or "")
        if plan_classes[avid] is not None and "mt" not in plan_classes[avid]:
            log.normal("[HOST#%d] [RESULT#%d] elapsed time %f < CPU %f for seq app; "
                       "setting to CPU" % (hostid, row["id"], elapsed, cpu_time))
            elapsed = cpu_time
    if elapsed < 0:
        log.normal("[HOST#%d] [RESULT#%d] [WU#%d] negative elapsed time: %f"
                   % (hostid, row["id"], row["workunitid"], elapsed))
        elapsed = 0.0
    if elapsed == 0 and cpu_time > 0:
        elapsed = cpu_time
        log.normal("[HOST#%d] [RESULT#%d] elapsed time is zero; setting to CPU time %f"
                   % (hostid, row["id"], cpu_time))
    turnaround = ctx.now - row["sent_time"]
    if turnaround < 0:
        log.critical("[HOST#%d] [RESULT#%d] [WU#%d] inconsistent sent/received times"
                     % (hostid, row["id"], row["workunitid"]))
    elif elapsed > turnaround:
        log.normal("[HOST#%d] [RESULT#%d] [WU#%d] impossible elapsed time: reported %f > "
                   "turnaround %f" % (hostid, row["id"], row["workunitid"], elapsed,
                                      float(turnaround)))
        elapsed = float(turnaround)
    ncpus = ctx.host["p_ncpus"]
    if cpu_time > elapsed * ncpus:
        log.normal("[HOST#%d] [RESULT#%d] [WU#%d] impossible CPU time: %f > %f * %d"
                   % (hostid, row["id"], row["workunitid"], cpu_time, elapsed, ncpus))
        cpu_time = elapsed * ncpus
    v = {
        "client_state": r.state, "cpu_time": cpu_time, "elapsed_time": elapsed,
        "exit_status": r.exit_status, "app_version_num": r.app_version_num,
        "stderr_out": r.stderr_out, "xml_doc_out": r.file_info_xml,
        "peak_working_set_size": r.final_peak_working_set_size,
        "peak_swap_size": r.final_peak_swap_size,
        "peak_disk_usage": r.final_peak_disk_usage,
        "validate_state": row["validate_state"],
    }
    if r.state == CLIENT_FILES_UPLOADED and r.exit_status == 0:
        v["outcome"] = OUTCOME_SUCCESS
        if ctx.cfg.debug_handle_results:
            log.normal("[handle] [RESULT#%d] [WU#%d]: setting outcome SUCCESS"
                       % (row["id"], row["workunitid"]))
        if ctx.cfg.dont_store_success_stderr:
            v["stderr_out"] = ""
    else:
        if ctx.cfg.debug_handle_results:
            log.normal("[handle] [RESULT#%d] [WU#%d]: client_state %d exit_status %d; "
                       "setting outcome ERROR" % (row["id"], row["workunitid"], r.state,
                                                  r.exit_status))
        v["outcome"] = OUTCOME_CLIENT_ERROR
        v["validate_state"] = VALIDATE_INVALID
    return v


_ABORT_REASONS = {1: "result not in request", 2: "WU cancelled", 3: "WU assimilated",
                  4: "result timed out"}


def send_result_abort(ctx):
    """Tell the client to abort the jobs it holds that are no longer wanted
    (BOINC's send_result_abort): unknown to this host, cancelled -> abort;
    assimilated or timed out -> abort if not started."""
    req, reply, log = ctx.request, ctx.reply, ctx.log
    others = req.other_results
    if not others:
        return
    hostid = ctx.host["id"]
    names = [o.name for o in others]
    rows = ctx.db.query(
        "SELECT result.name, workunit.error_mask, workunit.assimilate_state, "
        "result.server_state, result.outcome FROM result, workunit "
        "WHERE result.hostid = %%s AND workunit.id = result.workunitid "
        "AND (result.server_state = %%s OR (result.server_state = %%s AND result.outcome = %%s)) "
        "AND result.name IN (%s)" % ", ".join(["%s"] * len(names)),
        [hostid, RESULT_IN_PROGRESS, RESULT_OVER, OUTCOME_NO_REPLY] + names)
    by_name = {row["name"]: row for row in rows}
    for o in others:
        row = by_name.get(o.name)
        if row is None:
            action, reason = "abort", 1
        elif row["error_mask"] & WU_ERROR_CANCELLED:
            action, reason = "abort", 2
        elif row["assimilate_state"] == ASSIMILATE_DONE:
            action, reason = "if_not_started", 3
        elif row["server_state"] == RESULT_OVER and row["outcome"] == OUTCOME_NO_REPLY:
            action, reason = "if_not_started", 4
        else:
            continue
        if action == "abort":
            reply.result_aborts.append(o.name)
            log.normal("[HOST#%d]: Send result_abort for result %s; reason: %s"
                       % (hostid, o.name, _ABORT_REASONS[reason]))
            reply.add_message("Result %s is no longer usable" % o.name, "low")
        else:
            reply.result_abort_if_not_starteds.append(o.name)
            log.normal("[HOST#%d]: Send result_abort_if_unstarted for result %s; reason %d"
                       % (hostid, o.name, reason))


def handle_msgs_from_host(ctx):
    """Store trickle-up messages (msg_from_host rows); ack them in the reply."""
    req = ctx.request
    if not req.msgs_from_host:
        return
    ctx.reply.send_msg_ack = True
    from boincpy.db.msg import insert_msg_from_host
    try:
        with ctx.db.transaction():
            for m in req.msgs_from_host:
                ctx.log.normal("got msg from host; variety %s " % m.variety)
                insert_msg_from_host(ctx.db, ctx.now, ctx.host["id"], m.variety, m.xml)
    except Exception as exc:
        ctx.log.critical("[HOST#%d] message insert failed: %s" % (ctx.host["id"], exc))
        ctx.reply.send_msg_ack = False


def handle_msgs_to_host(ctx):
    """Trickle-downs waiting for this host go into the reply and are marked
    handled.  Each is claimed by a conditional UPDATE first, so two requests
    of one host at once (a client retrying) never both deliver it."""
    rows = ctx.db.query("SELECT id, xml FROM msg_to_host WHERE hostid = %s AND handled = 0 "
                        "ORDER BY id", (ctx.host["id"],))
    from boincpy.db.msg import claim_msg_to_host
    for row in rows:
        n = claim_msg_to_host(ctx.db, row["id"])
        if n != 1:
            continue
        ctx.reply.msgs_to_host.append(row["xml"])
