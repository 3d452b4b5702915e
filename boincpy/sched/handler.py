"""One scheduler request end to end: what cgi-bin/cgi runs.

The order is BOINC's (sched_main.cpp main, handle_request.cpp
process_request; scheduler-protocol.md §5):

0. the ``stop_sched`` trigger, the code-signing key and the feeder's job
   array are checked first; failing any gives the minimal "project down"
   reply (``<project_is_down/>``, ``maintenance_delay``) without reading the
   request;
1. the request is parsed (a bad one gets "Error in request message: ...");
2. client version, ``ban_os`` and ``ban_cpu`` gates; nothing else happens
   (not even a database connection) if they fail and nothing is reported;
3. the job array tells whether there is any work at all;
4. user and host (:mod:`hosts`), host fields, platforms, preferences;
5. reported results (:mod:`reports`), lost-job resends and result aborts;
6. work: code-signing key, ``min_sendwork_interval``, ``dont_send_jobs``,
   then :func:`boincpy.sched.send.send_work`;
7. trickles, the host row and host_app_version rows, the reply.

Every reply that asked for work and got none says why in a ``<message>``,
and scheduler.log names the same reason for the host.
"""

import posix     # not os, on a classic CGI's path (boincpy.hot_path.join)
import time

from boincpy.hot_path import cgi_environ, exists, exit_now, join
from boincpy.sched import reply as replies
from boincpy.sched.context import SchedContext
from boincpy.sched.request import RequestError, parse_request

STOP_SCHED_FILE = "stop_sched"
DOWN_MESSAGE = "Project is temporarily shut down for maintenance"
DELAY_UNACCEPTABLE_OS = 86400
DELAY_BAD_CLIENT_VERSION = 86400
DELAY_PLATFORM_UNSUPPORTED = 86400
DELAY_BLACKLISTED = 86400
DELAY_NO_WORK_SKIP = 0
REFILL_WAIT = 2.0           # seconds a work request waits for the feeder's refill
NO_TASKS_AVAILABLE = "Project has no tasks available"


def open_log(cfg):
    """log_<this host>/scheduler.log (stderr if it can't be opened)."""
    import sys
    from boincpy.files import log_path
    from boincpy.log import SchedLog
    size = cfg.scheduler_log_buffer
    try:
        return SchedLog.open(log_path(cfg, "scheduler.log"), cfg.sched_debug_level,
                             buffer_size=size)
    except OSError:
        return SchedLog(sys.stderr, cfg.sched_debug_level, buffer_size=size)


def _kept_log(cfg, resident):
    """A persistent process's scheduler.log, kept open between its requests
    (BOINC's FastCGI scheduler opens it once), with this configuration's
    debug level and buffer and each request's indent starting at 0 (BOINC's
    set_indent_level(0) per request); None if it can't be opened (then the
    request opens its own, as a CGI does)."""
    from boincpy.files import log_path
    from boincpy.log import SchedLog
    try:
        log = resident.kept_open(join(cfg.host_log_dir, "scheduler.log"),
                                 lambda path: SchedLog.open(log_path(cfg, "scheduler.log")))
    except OSError:
        return None
    log.debug_level = cfg.sched_debug_level
    log.buffer_size = cfg.scheduler_log_buffer
    log.indent = 0
    return log


def read_code_sign_key(cfg):
    """KEY_DIR/code_sign_public, whitespace-stripped (None if unreadable)."""
    try:
        with open(join(cfg.key_dir, "code_sign_public"), "rb") as f:
            return f.read().decode("ascii", "replace").strip()
    except OSError:
        return None


def attach_job_array(cfg):
    """The feeder's job array (:func:`boincpy.shmem.attach`).  Raises
    ``boincpy.errors.ShmemError`` (with ``log_text`` and ``user_message``)
    when the feeder isn't running."""
    from boincpy import shmem
    return shmem.attach(cfg)


def _remote_addr(environ):
    return environ.get("REMOTE_ADDR") or "?.?.?.?"


def handle_request(cfg, body, environ=None, job_array=None, log=None, now=None,
                   resident=None):
    """Handle one <scheduler_request> (bytes); return the CGI output (bytes):
    the ``Content-type`` header line, a blank line and the <scheduler_reply>.

    ``job_array`` is the feeder's array when the caller has it (tests);
    otherwise it comes from ``resident`` (a :class:`boincpy.resident.Resident`,
    which also gives the code-signing key and the database connection), or is
    attached here for this request alone.  Never raises: an unexpected
    failure is logged as CRITICAL and answered with a well-formed reply.
    """
    environ = environ if environ is not None else cgi_environ()
    own_log = log is None
    if own_log and resident is not None and resident.persistent:
        log = _kept_log(cfg, resident)
        own_log = log is None
    if own_log:
        log = open_log(cfg)
    start = time.time()
    try:
        return _handle(cfg, body, environ, job_array, log, now, start, resident)
    except Exception as exc:
        # a lost database: one line, and the next request opens a new
        # connection (Resident); any other failure: its traceback
        from boincpy.log import failure_text
        log.indent = 0
        log.critical(failure_text(exc, "Scheduler failed"))
        return error_reply(cfg, "Server error: the scheduler could not handle this "
                           "request; please try again later")
    finally:
        if own_log:
            log.close()
        else:
            log.flush()


def error_reply(cfg, message):
    """A reply any client accepts after an internal failure: a message and a delay."""
    delay = max(float(getattr(cfg, "maintenance_delay", 3600) or 3600), 1.0)
    text = ("Content-type: text/xml\n\n<scheduler_reply>\n"
            "<scheduler_version>%d</scheduler_version>\n"
            "<request_delay>%f</request_delay>\n"
            "<message priority=\"low\">%s</message>\n"
            "<project_name>%s</project_name>\n"
            "</scheduler_reply>\n" % (replies.SCHEDULER_VERSION, delay,
                                      replies.xml_escape(message),
                                      replies.xml_escape(getattr(cfg, "long_name", ""))))
    return text.encode("utf-8")


def _handle(cfg, body, environ, job_array, log, now, start, resident):
    code_sign_key = (resident.key_text(cfg, "code_sign_public") if resident is not None
                     else read_code_sign_key(cfg))
    if code_sign_key is None:
        log.critical("Can't read code sign key file (%s)"
                     % join(cfg.key_dir, "code_sign_public"))
        return replies.down_reply("Server can't find key file", cfg.maintenance_delay, cfg.ended)
    if exists(join(cfg.project_dir, STOP_SCHED_FILE)):
        return replies.down_reply(DOWN_MESSAGE, cfg.maintenance_delay, cfg.ended)
    if job_array is not None:
        return _handle_attached(cfg, body, environ, job_array, log, now, start, code_sign_key,
                                resident)
    try:
        # only the attaching: a failure of the request itself is not "feeder not running"
        job_array = (resident.job_array(cfg) if resident is not None
                     else attach_job_array(cfg))
    except Exception as exc:
        log.critical(getattr(exc, "log_text", None)
                     or "Can't attach shmem: %s (feeder not running?)" % exc)
        return replies.down_reply(getattr(exc, "user_message", None)
                                  or "Server error: feeder not running",
                                  cfg.maintenance_delay, cfg.ended)
    if resident is not None:            # the process keeps its array attached
        return _handle_attached(cfg, body, environ, job_array, log, now, start,
                                code_sign_key, resident)
    try:
        return _handle_attached(cfg, body, environ, job_array, log, now, start, code_sign_key,
                                None)
    finally:
        job_array.close()


def _handle_attached(cfg, body, environ, job_array, log, now, start, code_sign_key, resident):
    if cfg.debug_request_headers:
        _log_request_headers(environ, body, log)
    saved = (_save_request(cfg, body, environ, log, resident) if cfg.debug_req_reply_dir
             else None)
    log.indent = 1
    ctx = SchedContext(cfg=cfg, log=log, now=int(now if now is not None else time.time()),
                       environ=environ, code_sign_key=code_sign_key)
    ctx.resident = resident
    try:
        ctx.request = parse_request(body, cfg.max_results_accepted)
    except RequestError as exc:
        log.normal("Incomplete request received %sfrom IP %s, auth , platform , version 0.0.0"
                   % ("(used GET method - probably a browser) "
                      if environ.get("REQUEST_METHOD") == "GET" else "",
                      _remote_addr(environ)))
        log.normal("Error in request message: %s" % exc)
        ctx.reply.add_message("Error in request message: %s" % exc, "low")
    else:
        for tag, line in ctx.request.unexpected:
            log.normal("SCHEDULER_REQUEST::parse(): unexpected: %s (line %d)" % (tag, line))
        ctx = _process_retrying_deadlocks(ctx, body, job_array)
    if cfg.debug_user_messages:
        for priority, text in ctx.reply.messages:
            log.normal("[user_messages] [HOST#%d] MSG(%s) %s"
                       % ((ctx.host or {}).get("id") or 0, priority, text))
    text = replies.write_reply(ctx, job_array)
    log.normal("Scheduler ran %.3f seconds" % (time.time() - start))
    out = ("Content-type: text/xml\n\n" + text).encode("utf-8")
    if saved:
        _save_reply(saved, out, log)
    return out


# MySQL errors after which InnoDB has undone the statement or the whole
# transaction and the same work may simply be tried again (its advice).
_ER_LOCK_WAIT_TIMEOUT = 1205
_ER_LOCK_DEADLOCK = 1213
RETRY_ERRORS = (_ER_LOCK_WAIT_TIMEOUT, _ER_LOCK_DEADLOCK)


# How many times a request whose transaction the database gave up is tried,
# and the random wait before each try after the first (seconds): waits that
# grow, so that requests a burst threw together (a daemon that stalled while
# holding locks, then let them go) come apart.
TRIES = 3
_RETRY_WAITS = ((0.01, 0.05), (0.05, 0.25))


def _process_retrying_deadlocks(ctx, body, job_array):
    """process_request; if the database gave up the request's transaction
    (a deadlock with another request or daemon, a lock wait timeout),
    nothing of it was written: handle the request again, from a fresh
    parse, up to TRIES times in all, rather than make the client wait out an
    error reply's delay.  Each try after the first waits a random time
    first: requests that deadlocked each other (a client's retry racing its
    own stalled RPC) would otherwise start again together and meet the same
    way.  Returns the context whose reply is sent."""
    for attempt in range(1, TRIES + 1):
        try:
            process_request(ctx, job_array)
            return ctx
        except Exception as exc:
            # the transaction was undone: the jobs it claimed go back to the
            # array (their slots were kept reserved until a commit)
            if ctx.work is not None and ctx.work.pending_slots:
                ctx.work.ja.restore(ctx.work.pid)
            if attempt == TRIES or getattr(exc, "mysql_code", None) not in RETRY_ERRORS:
                raise
            ctx.log.indent = 1
            ctx.log.normal("[HOST#%d] database: %s; the request's writes were undone, "
                           "handling it again" % ((ctx.host or {}).get("id") or 0, exc))
        finally:
            if ctx.db is not None and ctx.resident is None:
                ctx.db.close()
        from boincpy import rand      # only here: no request that goes through pays for it
        time.sleep(rand.uniform(*_RETRY_WAITS[attempt - 1]))
        again = SchedContext(cfg=ctx.cfg, log=ctx.log, now=ctx.now, environ=ctx.environ,
                             code_sign_key=ctx.code_sign_key)
        again.resident = ctx.resident
        again.request = parse_request(body, ctx.cfg.max_results_accepted)
        ctx = again


# ---------------------------------------------------------------------------

def _gates(ctx):
    """Client version, banned OS / CPU: why work must not be sent, or None."""
    cfg, req, reply, log = ctx.cfg, ctx.request, ctx.reply, ctx.log
    ok = None
    if cfg.min_core_client_version and req.core_client_version < cfg.min_core_client_version:
        log.normal("[HOST#%d] Wrong client version from user: wanted %d, got %d"
                   % (req.hostid, cfg.min_core_client_version, req.core_client_version))
        reply.add_message("Your BOINC client software is too old.  Please install the "
                          "current version.", "notice")
        reply.set_delay(DELAY_BAD_CLIENT_VERSION)
        ok = "client version %d.%d.%d is too old" % (req.core_client_major_version,
                                                     req.core_client_minor_version,
                                                     req.core_client_release)
    h = req.host
    if cfg.ban_os or cfg.ban_cpu:
        import re           # only then: the module costs a CGI request ~7 ms
    if not ok:
        for pattern in cfg.ban_os:
            if re.search(pattern, h.os_name + "\t" + h.os_version):
                log.normal("Unacceptable OS %s %s" % (h.os_name, h.os_version))
                reply.add_message("This project doesn't support operating system %s %s"
                                  % (h.os_name, h.os_version), "notice")
                reply.set_delay(DELAY_UNACCEPTABLE_OS)
                ok = "operating system not supported (ban_os)"
                break
    if not ok:
        for pattern in cfg.ban_cpu:
            if re.search(pattern, h.p_vendor + "\t" + h.p_model):
                log.normal("Unacceptable CPU %s %s" % (h.p_vendor, h.p_model))
                reply.add_message("This project doesn't support CPU type %s %s"
                                  % (h.p_vendor, h.p_model), "notice")
                reply.set_delay(DELAY_UNACCEPTABLE_OS)
                ok = "CPU type not supported (ban_cpu)"
                break
    if not h.p_vendor:
        log.normal("missing p_vendor")
        reply.add_message("Missing CPU type in request", "notice")
    if not h.os_name:
        log.normal("missing os_name")
        reply.add_message("Missing OS name in request", "notice")
    return ok


def _warn_upgrade(ctx):
    cfg, req = ctx.cfg, ctx.request
    announced = cfg.min_core_client_version_announced
    if not announced or req.core_client_version >= announced:
        return
    remaining = int((cfg.min_core_client_upgrade_deadline - ctx.now) / 3600)
    if remaining <= 0:
        return
    days, hours = remaining // 24, remaining % 24
    msg = ("In %d days and %d hours, this project will require a minimum BOINC version of "
           "%d.%d.%d.  You are currently using version %d.%d.%d; please upgrade before "
           "this time." % (days, hours, announced // 10000, (announced // 100) % 100,
                           announced % 100, req.core_client_major_version,
                           req.core_client_minor_version, req.core_client_release))
    ctx.reply.add_message(msg, "notice" if days < 3 else "low")


def requesting_work(req, job_array):
    """BOINC's requesting_work(): work asked for any resource (or an NCI app exists)."""
    if req.dont_send_work:
        return False
    if req.work_req_seconds > 0 or req.resources[0].req_secs > 0:
        return True
    if any(r.count and r.req_secs for r in req.resources[1:]):
        return True
    return bool(getattr(job_array, "have_nci_app", False))


def _array_has_work(job_array):
    """Whether the feeder's array holds any job nobody has reserved (BOINC's
    ssp->no_work(), without its reservation: job choice reserves the slots
    it takes itself)."""
    n_present = getattr(job_array, "n_present", None)
    if n_present is not None:
        if not getattr(job_array, "ready", True):
            return False
        if n_present > 0:
            return True
        # emptied by other requests a moment ago while jobs wait in the
        # database: the feeder is refilling it (not in BOINC)
        wait = getattr(job_array, "wait_for_work", None)
        return bool(wait is not None and wait(REFILL_WAIT))
    return not job_array.no_work(posix.getpid())


def _lookup_platforms(ctx, job_array):
    """Rows of the client's platforms the project knows (primary first;
    alternates ignored for the anonymous platform)."""
    req = ctx.request
    names = [req.platform_name] if req.anonymous_platform else req.platforms
    names = [n for n in names if n]
    if not names:
        return []
    known = getattr(job_array, "platforms", None)
    if known is None:
        rows = ctx.db.query("SELECT * FROM platform WHERE deprecated = 0 AND name IN (%s)"
                            % ", ".join(["%s"] * len(names)), names)
    else:
        rows = list(known)
    by_name = {}
    for row in rows:
        name = row["name"] if isinstance(row, dict) else getattr(row, "name", "")
        if isinstance(row, dict) and row.get("deprecated"):
            continue
        by_name[name] = row
    return [by_name[n] for n in names if n in by_name]


def _load_host_app_versions(ctx):
    """The host's host_app_version rows by (generalized) app version id, with
    BOINC's update_quota applied (quota initialised, n_jobs_today reset on a
    new day); returns (rows, their quota fields as read)."""
    rows = ctx.take_read_ahead("host_app_version")
    if rows is None:
        from boincpy.db.host_app_version import host_rows
        rows = host_rows(ctx.db, ctx.host["id"])
    orig = {r["app_version_id"]: _quota_fields(r) for r in rows}
    quota = ctx.cfg.daily_result_quota
    for row in rows:
        if quota and row["max_jobs_per_day"] == 0:
            row["max_jobs_per_day"] = quota
        if ctx.new_day:
            row["n_jobs_today"] = 0
    return {r["app_version_id"]: r for r in rows}, orig


def _quota_fields(row):
    return (row["consecutive_valid"], row["max_jobs_per_day"], row["n_jobs_today"])


def write_host_app_versions(ctx, orig):
    """Write back the quota fields that changed (BOINC's update_scheduler).
    Job choice reads the rows again (a round trip): handing it these was
    taken back while the fault test's deadlocks were chased, whose causes
    turned out to be elsewhere (lock order, index scans), so it could come
    back."""
    from boincpy.db.host_app_version import record_quota
    db = ctx.db.deferring()                 # with the next statement or the COMMIT
    for gavid, row in ctx.host_app_versions.items():
        new = _quota_fields(row)
        if orig.get(gavid) != new:
            record_quota(db, ctx.host["id"], gavid, *new)


def _send_code_sign_key(ctx):
    """Give the client our code-signing key (with the rotation signature when it
    holds an older one); False when its key is unknown (then no work)."""
    req, reply, cfg, log = ctx.request, ctx.reply, ctx.cfg, ctx.log
    ours = ctx.code_sign_key
    if not req.code_sign_key:
        reply.send_code_sign_key = True
        return True
    if req.code_sign_key == ours:
        return True
    log.normal("received old code sign key")
    i = 0
    while True:
        try:
            with open(join(cfg.key_dir, "old_key_%d" % i), "rb") as f:
                old = f.read().decode("ascii", "replace").strip()
        except OSError:
            log.critical("scanned old_key_i files, can find client's key")
            break
        if old == req.code_sign_key:
            name = "signature_%d" if req.core_client_major_version < 7 else \
                "signature_stripped_%d"
            try:
                with open(join(cfg.key_dir, name % i), "rb") as f:
                    signature = f.read().decode("ascii", "replace")
            except OSError:
                log.critical("Missing signature file for old key %d" % i)
                break
            log.normal("sending new code sign key and signature")
            reply.send_code_sign_key = True
            reply.code_sign_key_signature = signature
            return True
        i += 1
    reply.add_message("The project has changed its security key.  Please remove and add "
                      "this project.", "notice")
    return False


def _file_deletes(ctx):
    """Sticky files the host should drop: names matching a line of
    PROJECT/file_delete_regex (POSIX EREs, BOINC's do_file_delete_regex)."""
    if not ctx.request.sticky_files:
        return
    try:
        with open(join(ctx.cfg.project_dir, "file_delete_regex")) as f:
            patterns = [line.strip() for line in f if line.strip()]
    except OSError:
        return
    import re
    compiled = []
    for p in patterns:
        try:
            compiled.append((p, re.compile(p)))
        except re.error:
            ctx.log.critical("invalid regular expression in file_delete_regex: %s" % p)
    for name, _ in ctx.request.sticky_files:
        for p, rx in compiled:
            if rx.search(name):
                ctx.reply.file_deletes.append(name)
                if ctx.cfg.debug_client_files:
                    ctx.log.normal("[client_files] Sticky file %s matched regex %s; deleting"
                                   % (name, p))
                break
        else:
            if ctx.cfg.debug_client_files:
                ctx.log.normal("[client_files] Sticky file %s didn't match any regex" % name)


def process_request(ctx, job_array):
    """Everything between the parsed request and the reply (BOINC's process_request)."""
    cfg, req, reply, log = ctx.cfg, ctx.request, ctx.reply, ctx.log
    _file_deletes(ctx)
    blocked = _gates(ctx)
    if cfg.dont_send_jobs:
        blocked = blocked or "the project is not sending tasks (dont_send_jobs)"
    ok_to_send_work = not blocked
    wants_work = requesting_work(req, job_array)
    if not ok_to_send_work and not req.results:
        # BOINC's shortcut: nothing to record, no database access at all
        # (with dont_send_jobs every RPC without reports ends here)
        if cfg.dont_send_jobs and wants_work:
            reply.add_message("No tasks sent", "low")
            reply.add_message("This project is not sending tasks at the moment", "low")
            log.normal("[HOST#%d] No tasks sent: dont_send_jobs is set in config.xml"
                       % req.hostid)
        return
    _warn_upgrade(ctx)
    have_no_work = False
    if wants_work and not (cfg.locality_scheduling or cfg.locality_scheduler_fraction
                           or cfg.enable_assignment):
        have_no_work = not _array_has_work(job_array)
        ctx.no_jobs_available = have_no_work
    if have_no_work and cfg.nowork_skip and not req.results and req.hostid != 0:
        reply.add_message("No work available", "low")
        reply.set_delay(DELAY_NO_WORK_SKIP)
        if not cfg.msg_to_host and not cfg.enable_vda:
            log.normal("No work - skipping DB access")
            return
    _process_with_db(ctx, job_array, blocked, wants_work, have_no_work)


def _process_with_db(ctx, job_array, blocked, wants_work, have_no_work):
    from boincpy.db import connect
    from boincpy.sched import hosts
    cfg, req, reply, log = ctx.cfg, ctx.request, ctx.reply, ctx.log
    try:
        ctx.db = (ctx.resident.database(cfg, log) if ctx.resident is not None
                  else connect(cfg, driver="wire"))
    except Exception as exc:
        log.critical("can't open database: %s" % exc)
        reply.add_message("Server can't open database", "low")
        reply.set_delay(cfg.maintenance_delay)
        reply.project_is_down = True
        return
    if not hosts.authenticate(ctx, _reads_ahead(ctx, wants_work and not have_no_work)):
        return
    host = ctx.host
    reply.nucleus_only = False
    log.normal("Request: [USER#%d] [HOST#%d] [IP %s] client %d.%d.%d"
               % (ctx.user["id"], host["id"], hosts.remote_addr(ctx.environ),
                  req.core_client_major_version, req.core_client_minor_version,
                  req.core_client_release))
    if cfg.debug_request_details:
        log.debug("Request details: auth %s, RPC seqno %d, platform %s"
                  % (req.authenticator, req.rpc_seqno, req.platform_name))
    log.indent = 2
    if host.get("max_results_day") == -1:
        reply.add_message("Not accepting requests from this host", "low")
        reply.set_delay(DELAY_BLACKLISTED)
        reply.nucleus_only = True
        return
    lock = _lock_host(ctx)
    if lock is False:
        return
    try:
        # A request that reports results or may get jobs writes in one
        # transaction: one commit (one log flush) instead of one per
        # statement, and all or nothing; parts that may fail alone are
        # savepoints inside it (boincpy.db.connection.Transaction).  Other
        # requests write the host row alone, which BEGIN and COMMIT would
        # only make two round trips dearer.
        if req.results or (wants_work and not have_no_work):
            with ctx.db.transaction():
                _process_host_and_files(ctx, job_array, blocked, wants_work, have_no_work)
        else:
            _process_host_and_files(ctx, job_array, blocked, wants_work, have_no_work)
    finally:
        if lock:
            _unlock_host(ctx, lock)


def _reads_ahead(ctx, may_send):
    """The reads this request will make of its host's rows, sent with the
    host row's SELECT (hosts.authenticate): the reported results, and the
    host_app_version rows that reports and job choice both use.  None where
    the connection sends each statement alone (a CGI's): there reading ahead
    saves no round trip, and would read for requests turned away later."""
    req = ctx.request
    if not ctx.db.batching or not req.hostid or not (req.results or may_send):
        return None
    from boincpy.db.host_app_version import host_rows_read
    ahead = {"host_app_version": host_rows_read(req.hostid)}
    if req.results:
        from boincpy.sched.reports import reported_read
        ahead["reported"] = reported_read(ctx)
    return ahead


def _process_host_and_files(ctx, job_array, blocked, wants_work, have_no_work):
    _process_host(ctx, job_array, blocked, wants_work, have_no_work)
    cfg = ctx.cfg
    if cfg.locality_scheduling or cfg.locality_scheduler_fraction > 0:
        from boincpy.sched.locality import send_file_deletes
        send_file_deletes(ctx)


def _process_host(ctx, job_array, blocked, wants_work, have_no_work):
    from boincpy.sched import hosts
    cfg, req, reply, log = ctx.cfg, ctx.request, ctx.reply, ctx.log
    ok_to_send_work = not blocked
    host = ctx.host
    host_orig = dict(host)
    ctx.last_rpc_time = host["rpc_time"]
    ctx.new_day = hosts.is_new_day(host["id"], host["rpc_time"], ctx.now)
    hosts.modify_host(ctx)
    if req.time_stats_log is not None:
        from boincpy.sched.time_stats_log import write_time_stats_log
        write_time_stats_log(ctx)

    ctx.platforms = _lookup_platforms(ctx, job_array)
    if not ctx.platforms:
        reply.add_message("This project doesn't support computers of type %s"
                          % req.platform_name, "notice")
        log.critical("[HOST#%d] platform '%s' not found" % (host["id"], req.platform_name))
        reply.set_delay(DELAY_PLATFORM_UNSUPPORTED)
        return                              # BOINC leaves the host row as it was

    hosts.handle_global_prefs(ctx)
    # Reports change the host's daily quota; job choice reads and writes the
    # host_app_version rows itself, so ours are written before it runs.
    if req.results or ctx.new_day:
        ctx.host_app_versions, hav_orig = _load_host_app_versions(ctx)
        if req.results or req.file_xfer_results:
            _reports().handle_results(ctx)
        write_host_app_versions(ctx, hav_orig)
    elif req.file_xfer_results:
        _reports().handle_results(ctx)      # file-transfer pseudo-results only

    if not wants_work:
        ok_to_send_work = False
    choose = None
    if req.have_other_results_list:
        if (ok_to_send_work and (cfg.resend_lost_results or ctx.resend_lost_results)
                and not req.results_truncated):
            choose = _choose_module()
            if choose is not None and choose.resend_lost_results(ctx, job_array):
                if cfg.debug_send:
                    log.normal("[send] Resent lost jobs, don't send more")
                ok_to_send_work = False
        if cfg.send_result_abort and req.other_results:
            _reports().send_result_abort(ctx)

    if wants_work:
        reasons = []
        if not _send_code_sign_key(ctx):
            ok_to_send_work = False
            reasons.append("the client's code-signing key is unknown to the project")
        if have_no_work:
            if cfg.debug_send:
                log.normal("[send] No jobs in shmem cache")
            reply.add_message(NO_TASKS_AVAILABLE, "low")
            reasons.append(NO_TASKS_AVAILABLE)
        elif ok_to_send_work and cfg.min_sendwork_interval:
            diff = time.time() - ctx.last_rpc_time
            if diff < cfg.min_sendwork_interval:
                ok_to_send_work = False
                text = ("Not sending work. Last request too recent. Please wait %d seconds."
                        % int(cfg.min_sendwork_interval - diff))
                log.normal(text)
                reply.add_message(text + "\n", "low")
                # 1% more than needed, in case the client's clock runs fast
                reply.set_delay(1.01 * cfg.min_sendwork_interval)
                reasons.append("last request too recent (min_sendwork_interval %d s)"
                               % cfg.min_sendwork_interval)
        if not have_no_work and ok_to_send_work:
            if choose is None:
                choose = _choose_module()
            if choose is None:
                reasons.append("no job choice module installed")
            else:
                choose.send_work(ctx, job_array)    # explains and logs itself
                reasons = []
        elif not reasons and not reply.jobs:
            reasons.append(blocked or "work not sent")
        if reasons and not reply.jobs:
            _explain_no_work(ctx, reasons)

    if req.msgs_from_host:
        _reports().handle_msgs_from_host(ctx)
    if cfg.msg_to_host:
        _reports().handle_msgs_to_host(ctx)
    write_transition_times(ctx)
    hosts.write_host(ctx, host_orig)


def _reports():
    """boincpy.sched.reports, loaded by the requests that report something
    (results, file transfers, trickles, jobs the client holds): a classic
    CGI's request that reports nothing does without its 26 KB of code."""
    from boincpy.sched import reports
    return reports


def write_transition_times(ctx):
    """The workunits' transition_time lowered by the request's reports and
    claims (SchedContext.lower_transition_time), in one statement, in id
    order; with the next statement or the COMMIT where the connection
    batches."""
    if ctx.wu_transition_times:
        from boincpy.db.workunit import lower_transition_times
        lower_transition_times(ctx.db.deferring(), ctx.wu_transition_times)
        ctx.wu_transition_times = {}


def _explain_no_work(ctx, reasons):
    """Work was asked for and the handler decided to send none: the reply says
    why (a message, unless one already does) and the log names the reasons."""
    reply = ctx.reply
    for reason in reasons:
        reply.add_no_work_reason(reason)
    if not reply.messages:
        reply.add_message("No tasks sent", "low")
        for reason in reasons:
            reply.add_message(reason, "low")
    ctx.log.normal("[HOST#%d] No tasks sent: %s" % (ctx.host["id"], "; ".join(reasons)))


def _choose_module():
    """Job choice (boincpy.sched.send and the modules it imports), loaded
    only when a request may get jobs."""
    try:
        from boincpy.sched import send
    except ImportError:
        return None
    return send


def _lock_host(ctx):
    """BOINC's per-host lock file (sched_lockfile_dir); False when another
    scheduler holds it, None when not configured, else the open file."""
    directory = ctx.cfg.sched_lockfile_dir
    if not directory:
        return None
    import fcntl
    path = join(directory, "CGI_%07d" % ctx.host["id"])
    try:
        fd = posix.open(path, posix.O_WRONLY | posix.O_CREAT, 0o644)
    except OSError:
        ctx.log.critical("Error acquiring lock for [HOST#%d]" % ctx.host["id"])
        ok = False
    else:
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            posix.write(fd, b"%d\n" % posix.getpid())
            return (fd, path)
        except OSError:
            posix.close(fd)
            ctx.log.critical("Another scheduler instance is running for [HOST#%d]"
                             % ctx.host["id"])
            ok = False
    if not ok:
        ctx.reply.add_message("Another scheduler instance is running for this host", "low")
        ctx.reply.set_delay(60)
        ctx.reply.nucleus_only = True
    return False


def _unlock_host(ctx, lock):
    fd, path = lock
    try:
        posix.unlink(path)
    except OSError:
        pass
    posix.close(fd)


# -- debug_request_headers, debug_req_reply_dir ------------------------------------

def _log_request_headers(environ, body, log):
    g = environ.get
    log.normal("(req details) REQUEST_METHOD=%s CONTENT_TYPE=%s HTTP_ACCEPT=%s "
               "HTTP_USER_AGENT=%s" % (g("REQUEST_METHOD", ""), g("CONTENT_TYPE", ""),
                                       g("HTTP_ACCEPT", ""), g("HTTP_USER_AGENT", "")))
    if g("CONTENT_LENGTH") is None:
        log.critical("CONTENT_LENGTH environment variable not set")
    else:
        log.normal("CONTENT_LENGTH=%s from %s" % (g("CONTENT_LENGTH"), g("REMOTE_ADDR")
                                                  or "[Unknown]"))


def _save_request(cfg, body, environ, log, resident=None):
    pid = posix.getpid()
    # BOINC's FastCGI scheduler numbers a process's requests from 1; a CGI's is 0
    counter = resident.requests if resident is not None and resident.persistent else 0
    base = join(cfg.debug_req_reply_dir, "%d_%d" % (pid, counter))
    try:
        with open(base + "_sched.log", "a") as f:
            f.write("PID: %d Client IP: %s\n" % (pid, _remote_addr(environ)))
        with open(base + "_sched_request.xml", "wb") as f:
            f.write(body)
    except OSError as exc:
        log.critical("can't write request file: %s" % exc)
        return None
    log.debug("keeping sched_request in %s_sched_request.xml, sched_reply in "
              "%s_sched_reply.xml, custom log in %s_sched.log" % (base, base, base))
    return base


def _save_reply(base, out, log):
    try:
        with open(base + "_sched_reply.xml", "wb") as f:
            f.write(out)
    except OSError as exc:
        log.critical("can't write reply file: %s" % exc)


def read_body(environ, stream):
    """The request body: CONTENT_LENGTH bytes of ``stream``, or everything
    up to its end when there is no CONTENT_LENGTH (a chunked POST), as BOINC
    reads it."""
    length = environ.get("CONTENT_LENGTH")
    try:
        length = int(length) if length else -1
    except ValueError:
        length = -1
    return stream.read(length) if length >= 0 else stream.read()


def serve(environ, stream, resident, errors=None):
    """One scheduler RPC as a plain function: the CGI environment and the
    request body's stream in, the CGI output (bytes) out.  ``resident``
    keeps configuration, key, database and job array (see
    :mod:`boincpy.resident`); ``errors`` is where a configuration error is
    written (the web server's error log)."""
    resident.requests += 1
    try:
        cfg = resident.config()
    except Exception as exc:
        if errors is not None:
            errors.write("scheduler: can't parse config.xml: %s\n" % exc)
            errors.flush()
        return replies.down_reply("Server can't parse configuration file", 3600)
    return handle_request(cfg, read_body(environ, stream), environ, resident=resident)


def cgi_main():
    """Entry point of cgi-bin/cgi: CONTENT_LENGTH bytes of stdin in, reply out."""
    import sys
    from boincpy.resident import Resident
    resident = Resident()
    try:
        out = serve(cgi_environ(), sys.stdin.buffer, resident, sys.stderr)
    finally:
        resident.close()
    sys.stdout.buffer.write(out)
    exit_now()
