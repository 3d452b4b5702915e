"""Who is asking: authenticate the user, find or create the host, keep it current.

BOINC's authenticate_user / modify_host_struct / update_host_record /
handle_global_prefs (sched/handle_request.cpp), scheduler-protocol.md §7:

* hostid given: the host row (following "zombie" rows merged into others),
  its owner authenticated by account key or weak key; a host that belongs to
  another account, or an ``rpc_seqno`` lower than stored (a copied state
  file), gets a host record of its own;
* no hostid: the user by account key (or weak key ``USERID_HASH``), then the
  newest host of that user with the same host CPID, or a similar one
  (domain, IP, OS, CPU model and RAM), else a new row; in-progress jobs of a
  re-used host are marked CLIENT_DETACHED when the client holds none;
* every RPC: the client-reported host fields, written back as one UPDATE of
  the columns that changed.
"""

import time

from boincpy.db.host import insert_host, update_host_columns
from boincpy.files import md5_hex
from boincpy.sched.request import parse_global_prefs, prefs_mod_time

DELAY_MISSING_KEY = 3600
BAD_KEY_MESSAGE = "Invalid or missing account key.  To fix, remove and add this project."
# BOINC's hostid-less branch has this spelling (note the space before the period).
BAD_KEY_MESSAGE_NO_HOST = ("Invalid or missing account key.  To fix, remove and add "
                           "this project .")

# server_state / outcome values (boincpy.states; literal here because importing
# enum costs every CGI request ~4 ms -- tests check they agree)
RESULT_IN_PROGRESS = 4
RESULT_OVER = 5
OUTCOME_CLIENT_DETACHED = 7


def _s(value):
    """A text column as str ("" for NULL)."""
    return "" if value is None else value


# boincpy.passwords and boincpy.db.user are imported where they are used:
# a request that signs in with its account key and changes no user row (most
# of them) loads neither, and each module a classic CGI loads costs every
# request its unmarshalling and its body's run

def weak_auth(user):
    """``USERID_MD5(authenticator + passwd_hash)`` (BOINC's get_weak_auth)."""
    from boincpy import passwords
    return passwords.weak_auth(user["id"], _s(user["authenticator"]), _s(user["passwd_hash"]))


def rss_auth(user):
    """The notices feed key (BOINC's get_rss_auth)."""
    from boincpy import passwords
    return passwords.rss_auth(user["id"], _s(user["authenticator"]), _s(user["passwd_hash"]))


def _host_by_id(db, hostid):
    return db.query_one("SELECT * FROM host WHERE id = %s", (hostid,))


def _host_and_owner(db, hostid, ahead=None):
    """(host row, its user's row, {name: rows} of the ``ahead`` reads
    {name: (sql, params)}) in one round trip on a persistent connection;
    host None for no host, user None for a host whose user row is gone."""
    names = list(ahead or ())
    results = db.query_many(
        [("SELECT host.*, user.* FROM host LEFT JOIN user ON user.id = host.userid "
          "WHERE host.id = %s", (hostid,), True)]
        + [ahead[name] + (False,) for name in names])
    extra = dict(zip(names, results[1:]))
    if not results[0]:
        return None, None, extra
    row = results[0][0]
    user = row["user"]
    return row["host"], (user if user["id"] is not None else None), extra


def _user_by_id(db, userid):
    return db.query_one("SELECT * FROM user WHERE id = %s", (userid,))


def _user_by_auth(db, authenticator):
    if not authenticator:
        return None
    return db.query_one("SELECT * FROM user WHERE authenticator = %s", (authenticator,))


def _user_by_weak_auth(db, authenticator):
    """The user whose weak key this is, or None."""
    head = authenticator.split("_", 1)[0]
    digits = ""
    for c in head.strip():
        if not c.isdigit():
            break
        digits += c
    if not digits:
        return None
    user = _user_by_id(db, int(digits))
    if user is None or weak_auth(user) != authenticator:
        return None
    return user


def _obviously_different(host, req_host):
    """BOINC's obviously_different: CPU count, CPU, or OS changed."""
    return (host["p_ncpus"] != req_host.p_ncpus
            or _s(host["p_vendor"]) != req_host.p_vendor
            or _s(host["p_model"]) != req_host.p_model
            or _s(host["os_name"]) != req_host.os_name
            or _s(host["os_version"]) != req_host.os_version)


def _find_host_by_cpid(db, user, host_cpid):
    cpid = md5_hex(host_cpid + _s(user["email_addr"]))
    return db.query_one("SELECT * FROM host WHERE userid = %s AND host_cpid = %s "
                        "ORDER BY id DESC LIMIT 1", (user["id"], cpid))


def _find_host_by_other(ctx, user):
    """The user's newest host with the same name, IP, OS, CPU model and RAM."""
    if user["id"] in (ctx.cfg.dont_search_host_for_user or ()):
        return None
    h = ctx.request.host
    if not (h.domain_name and h.ip_addr and h.os_name and h.p_model):
        return None
    return ctx.db.query_one(
        "SELECT * FROM host WHERE userid = %s AND id > 0 AND domain_name = %s "
        "AND last_ip_addr = %s AND os_name = %s AND p_model = %s AND m_nbytes = %s "
        "ORDER BY id DESC LIMIT 1",
        (user["id"], h.domain_name, h.ip_addr, h.os_name, h.p_model, h.m_nbytes))


def mark_results_over(ctx, host):
    """The host was detached and re-attached: its in-progress jobs are lost to it.

    Each becomes OVER / CLIENT_DETACHED and its workunit is handed to the
    transitioner (BOINC's mark_results_over).
    """
    from boincpy.db.result import mark_result_over       # rare: not imported by every CGI
    from boincpy.db.workunit import set_transition_time
    db, now = ctx.db, ctx.now
    rows = db.query("SELECT id, name, workunitid FROM result WHERE hostid = %s "
                    "AND server_state = %s", (host["id"], RESULT_IN_PROGRESS))
    for r in rows:
        with db.transaction():
            mark_result_over(db, r["id"], OUTCOME_CLIENT_DETACHED, now)
            set_transition_time(db, r["workunitid"], now)
        ctx.log.critical("[HOST#%d] [RESULT#%d] [WU#%d] changed CPID: marking in-progress "
                         "result %s as client error!" % (host["id"], r["id"], r["workunitid"],
                                                         r["name"]))


def _bad_key(ctx, message, priority):
    reply = ctx.reply
    reply.add_message(message, priority)
    reply.set_delay(DELAY_MISSING_KEY)
    reply.nucleus_only = True


def authenticate(ctx, ahead=None):
    """Find the user and host of this request (sets ctx.user, ctx.host, ctx.team,
    ctx.email_hash, ctx.using_weak_auth; reply.hostid when the client must
    adopt a host id).  False when the account key is wrong (the reply then
    carries BOINC's message and a one-hour delay).

    ``ahead`` ({name: (sql, params)}) are reads the request will make of the
    host id it names; they go with the host row's SELECT (one round trip
    instead of several) and their rows are kept in ``ctx.read_ahead`` if
    that host is indeed the request's (not forwarded, not replaced)."""
    req, db, log, reply = ctx.request, ctx.db, ctx.log, ctx.reply
    user = None
    host = None
    need_host = True
    if req.hostid:
        # the owner comes with the host: one round trip on every RPC
        host, owner, read_ahead = _host_and_owner(db, req.hostid, ahead)
        seen = set()
        while host is not None and host["userid"] == 0:
            # a zombie merged into another host: its rpc_seqno links to it
            if host["id"] in seen:
                host = None
                break
            seen.add(host["id"])
            host, owner, _ = _host_and_owner(db, host["rpc_seqno"])
            if host is not None:
                reply.hostid = host["id"]
                log.normal("[HOST#%d] forwarding to new host ID %d" % (req.hostid, host["id"]))
        if host is None:
            reply.add_message("Can't find host record", "low")
            log.normal("[HOST#%d?] can't find host" % req.hostid)
            req.hostid = 0
        else:
            user = owner
            if user is None or user["authenticator"] != req.authenticator:
                if user is not None and weak_auth(user) == req.authenticator:
                    ctx.using_weak_auth = True
                    log.debug("[HOST#%d] accepting weak authenticator" % host["id"])
                else:
                    user = _user_by_auth(db, req.authenticator)
                    if user is None:
                        _bad_key(ctx, BAD_KEY_MESSAGE, "notice")
                        log.critical("[HOST#%d] [USER#%d] Bad authenticator '%s'"
                                     % (host["id"], host["userid"], req.authenticator))
                        return False
            if host["userid"] != user["id"]:
                log.normal("[HOST#%d] [USER#%d] inconsistent host ID; creating new host"
                           % (host["id"], user["id"]))
                host = None
            elif req.rpc_seqno < host["rpc_seqno"]:
                log.normal("[HOST#%d] [USER#%d] RPC seqno %d less than expected %d; "
                           "creating new host" % (host["id"], user["id"], req.rpc_seqno,
                                                  host["rpc_seqno"]))
                req.hostid = 0
                host = None
            else:
                need_host = False
                if host["id"] == req.hostid:
                    ctx.read_ahead = read_ahead
    if user is None:
        if "_" in req.authenticator:
            user = _user_by_weak_auth(db, req.authenticator)
            why = "authentication error"
            if user is not None:
                ctx.using_weak_auth = True
        else:
            user = _user_by_auth(db, req.authenticator)
            why = "no database rows found in lookup/enumerate"
        if user is None:
            _bad_key(ctx, BAD_KEY_MESSAGE_NO_HOST, "low")
            log.critical("[HOST#<none>] Bad authenticator '%s': %s" % (req.authenticator, why))
            return False
        if req.host.host_cpid:
            found = _find_host_by_cpid(db, user, req.host.host_cpid)
            if found is not None:
                log.normal("[HOST#%d] [USER#%d] No host ID in request, but host with "
                           "matching CPID found." % (found["id"], found["userid"]))
                if _obviously_different(found, req.host):
                    log.normal("[HOST#%d] [USER#%d] But that host doesn't match request."
                               % (found["id"], found["userid"]))
                else:
                    if not req.allow_multiple_clients and not req.other_results:
                        mark_results_over(ctx, found)
                    host = found
    if need_host and host is None:
        if not req.allow_multiple_clients:
            found = _find_host_by_other(ctx, user)
            if found is not None:
                log.normal("[HOST#%d] [USER#%d] Found similar existing host for this user "
                           "- assigned." % (found["id"], found["userid"]))
                if not req.other_results:
                    mark_results_over(ctx, found)
                host = found
        if host is None:
            host = create_host(ctx, user)
    if need_host:
        reply.hostid = host["id"]
        req.rpc_seqno = 0           # the new/reassigned host record starts its sequence
    ctx.user = user
    ctx.host = host
    if user.get("teamid"):
        ctx.team = db.query_one("SELECT id, name FROM team WHERE id = %s", (user["teamid"],))
    ctx.email_hash = md5_hex(_s(user["email_addr"]))
    if not ctx.using_weak_auth and req.cross_project_id \
            and req.cross_project_id != _s(user["cross_project_id"]):
        row = ctx.fitted("user", {"cross_project_id": req.cross_project_id},
                     "[USER#%d]" % user["id"])
        if row:
            from boincpy.db.user import set_cross_project_id
            set_cross_project_id(db, user["id"], row["cross_project_id"])
            user["cross_project_id"] = row["cross_project_id"]
    return True


def _nonneg(x):
    return x if x > 0 else 0.0


def create_host(ctx, user):
    """Insert a host row from the request (BOINC: host = request host; insert)."""
    req = ctx.request
    h = req.host
    row = {
        "create_time": ctx.now, "userid": user["id"], "rpc_seqno": 0, "rpc_time": 0,
        "expavg_time": float(ctx.now), "venue": _s(user.get("venue")),
        "timezone": h.timezone, "domain_name": h.domain_name, "last_ip_addr": h.ip_addr,
        "on_frac": h.on_frac, "connected_frac": h.connected_frac,
        "active_frac": h.active_frac, "gpu_active_frac": h.gpu_active_frac,
        "duration_correction_factor": req.duration_correction_factor,
        "p_ncpus": h.p_ncpus, "p_vendor": h.p_vendor, "p_model": h.p_model,
        "p_fpops": h.p_fpops, "p_iops": h.p_iops, "p_membw": h.p_membw,
        "os_name": h.os_name, "os_version": h.os_version,
        "m_nbytes": h.m_nbytes, "m_cache": h.m_cache, "m_swap": h.m_swap,
        "d_total": h.d_total, "d_free": h.d_free,
        "d_boinc_used_total": _nonneg(h.d_boinc_used_total),
        "d_boinc_used_project": h.d_boinc_used_project, "d_boinc_max": h.d_project_share,
        "n_bwup": h.n_bwup, "n_bwdown": h.n_bwdown, "host_cpid": h.host_cpid,
        "product_name": h.product_name, "serialnum": "", "external_ip_addr": "",
        "misc": "",
    }
    row = ctx.fitted("host", row, "new host")
    hostid = insert_host(ctx.db, row)
    host = _host_by_id(ctx.db, hostid)
    ctx.log.debug("[HOST#%d] created host record for [USER#%d]" % (hostid, user["id"]))
    return host


# -- per-RPC host fields -------------------------------------------------------

def remote_addr(environ):
    """The client's address as BOINC records it (X-Forwarded-For first)."""
    return environ.get("HTTP_X_FORWARDED_FOR") or environ.get("REMOTE_ADDR") or "?.?.?.?"


def host_info_json(req):
    """host.misc: BOINC 8's JSON summary (client version, GPUs, Docker, VirtualBox)."""
    def q(text):
        return '"%s"' % text.replace("\\", "\\\\").replace('"', '\\"')
    parts = ['{\n    "client_version": "%d.%d.%d"' % (
        req.core_client_major_version, req.core_client_minor_version,
        req.core_client_release)]
    gpus = []
    for r in req.resources[1:]:
        gpus.append('        {\n            "type": %s,\n            "model": %s,\n'
                    '            "count": %d,\n            "ram_mb": %d\n        }'
                    % (q(_GPU_NAMES.get(r.proc_type, "GPU")), q(r.name), r.count,
                       int(r.available_ram / (1024 * 1024))))
    if gpus:
        parts.append(',\n    "gpus": [\n' + ",\n".join(gpus) + "\n    ]")
    h = req.host
    if h.docker_version:
        parts.append(',\n    "docker": {\n        "version": %s,\n        "type": %d\n    }'
                     % (q(h.docker_version), h.docker_type))
    if h.virtualbox_version:
        accel = "vmx" in h.p_features or "svm" in h.p_features
        parts.append(',\n    "vbox": {\n        "version": %s,\n        "hw_accel": %s,\n'
                     '        "hw_accel_enabled": %s\n    }'
                     % (q(h.virtualbox_version), "true" if accel else "false",
                        "false" if h.p_vm_extensions_disabled else "true"))
    if req.dont_use_docker or req.dont_use_wsl:
        parts.append(',\n    "config": {\n        "dont_use_docker": %s,\n'
                     '        "dont_use_wsl": %s\n    }'
                     % ("true" if req.dont_use_docker else "false",
                        "true" if req.dont_use_wsl else "false"))
    parts.append("\n}")
    return "".join(parts)


_GPU_NAMES = {1: "NVIDIA", 2: "ATI", 3: "intel_gpu", 4: "apple_gpu"}

# Host columns the scheduler may change, in BOINC's update_diff_sched order.
_UPDATE_COLUMNS = (
    "rpc_seqno", "rpc_time", "timezone", "domain_name", "serialnum", "last_ip_addr",
    "nsame_ip_addr", "on_frac", "connected_frac", "active_frac", "cpu_efficiency",
    "duration_correction_factor", "p_ncpus", "p_vendor", "p_model", "p_fpops", "p_iops",
    "p_membw", "os_name", "os_version", "m_nbytes", "m_cache", "m_swap", "d_total",
    "d_free", "d_boinc_used_total", "d_boinc_used_project", "d_boinc_max", "n_bwdown",
    "n_bwup", "venue", "nresults_today", "avg_turnaround", "host_cpid",
    "external_ip_addr", "product_name", "gpu_active_frac", "p_ngpus", "p_gpu_fpops",
    "misc",
)


def modify_host(ctx):
    """Copy the client-reported fields into ctx.host (BOINC's modify_host_struct);
    ctx.host_orig keeps the row as read, for the final diff."""
    req, host = ctx.request, ctx.host
    h = req.host
    host["rpc_seqno"] = req.rpc_seqno
    host["rpc_time"] = ctx.now
    host["timezone"] = h.timezone
    host["domain_name"] = h.domain_name
    host["misc"] = host_info_json(req)
    if _s(host.get("last_ip_addr")) != h.ip_addr:
        host["last_ip_addr"] = h.ip_addr
        host["nsame_ip_addr"] = 0
    else:
        host["nsame_ip_addr"] = (host.get("nsame_ip_addr") or 0) + 1
    host["on_frac"] = h.on_frac
    host["connected_frac"] = h.connected_frac
    host["active_frac"] = h.active_frac
    host["gpu_active_frac"] = h.gpu_active_frac
    host["duration_correction_factor"] = req.duration_correction_factor
    host["p_ncpus"] = h.p_ncpus
    host["p_vendor"] = h.p_vendor
    host["p_model"] = h.p_model
    host["p_fpops"] = h.p_fpops
    host["p_iops"] = h.p_iops
    host["p_membw"] = h.p_membw
    host["os_name"] = h.os_name
    host["os_version"] = h.os_version
    host["m_nbytes"] = h.m_nbytes
    host["m_cache"] = h.m_cache
    host["m_swap"] = h.m_swap
    host["d_total"] = h.d_total
    host["d_free"] = h.d_free
    host["d_boinc_used_total"] = _nonneg(h.d_boinc_used_total)
    host["d_boinc_used_project"] = h.d_boinc_used_project
    host["d_boinc_max"] = h.d_project_share
    host["n_bwup"] = h.n_bwup
    host["n_bwdown"] = h.n_bwdown
    host["product_name"] = h.product_name
    if h.host_cpid:
        # stored hashed with the e-mail address so one user can't claim
        # another's host (BOINC's update_host_record)
        host["host_cpid"] = md5_hex(h.host_cpid + _s(ctx.user["email_addr"]))
    host["external_ip_addr"] = remote_addr(ctx.environ)
    gpus = req.resources[1:]
    host["p_ngpus"] = sum(r.count for r in gpus)
    host["p_gpu_fpops"] = sum(r.count * r.peak_flops for r in gpus)


def write_host(ctx, orig):
    """UPDATE the host columns that differ from ``orig`` (the row as read),
    each value fitted to its column; in a request's transaction the UPDATE
    goes with its COMMIT (db.defer).  Returns the number of columns written."""
    host = ctx.host
    changed = {}
    for col in _UPDATE_COLUMNS:
        new = host.get(col)
        old = orig.get(col)
        if isinstance(new, str) or isinstance(old, str) or old is None:
            if _s(new) == _s(old):
                continue
        elif new == old:
            continue
        changed[col] = new
    changed = ctx.fitted("host", changed, "[HOST#%d]" % host["id"])
    if changed:
        update_host_columns(ctx.db.deferring(), host["id"], changed)
    return len(changed)


def rpc_day_offset(hostid):
    """Seconds added to times before taking the day of year, spreading each
    host's quota day over 24 hours (BOINC seeds rand() with the host id).

    The same value as boincpy.sched.choose's ``random.Random(hostid)``, from
    the C generator behind it (``import random`` costs a request ~1.5 ms).
    """
    from _random import Random
    return Random(hostid).random() * 86400


def is_new_day(hostid, last_rpc_time, now):
    """True when the host's (offset) local day changed since its last RPC."""
    x = rpc_day_offset(hostid)
    return (time.localtime(int(last_rpc_time + x)).tm_yday
            != time.localtime(int(now + x)).tm_yday)


# -- global preferences ------------------------------------------------------------

def handle_global_prefs(ctx):
    """Decide the preferences used for scheduling, store the client's master
    preferences in the user row when they are newer, and decide whether the
    reply carries the database's (BOINC's handle_global_prefs, §7.4)."""
    req, user, reply, now = ctx.request, ctx.user, ctx.reply, ctx.now
    working = req.working_global_prefs_xml
    master = req.global_prefs_xml
    db_prefs = _s(user.get("global_prefs"))
    venue = _s(ctx.host.get("venue"))
    master_mod = prefs_mod_time(master, now) if master else 0.0
    working_mod = prefs_mod_time(working, now) if working else 0.0
    db_mod = prefs_mod_time(db_prefs, now) if db_prefs else 0.0
    # debug_prefs: BOINC's [prefs] lines, word for word
    log = ctx.log.normal if ctx.cfg.debug_prefs else None
    if log:
        log("[prefs] have_master:%d have_working: %d have_db: %d"
            % (bool(master), bool(working), bool(db_prefs)))
    if working:
        if log:
            log("[prefs] using working prefs")   # already parsed from the request
    elif master and not (db_prefs and db_mod > master_mod):
        req.global_prefs = parse_global_prefs(master, venue, now)
        if log:
            log("[prefs] using master prefs")
    elif db_prefs:
        req.global_prefs = parse_global_prefs(db_prefs, venue, now)
        if log:
            log("[prefs] using db prefs - more recent" if master else "[prefs] using db prefs")
    elif log:
        log("[prefs] using default prefs")
    had_db, read_db_mod = bool(db_prefs), db_mod
    if not ctx.using_weak_auth and master:
        same_account = req.global_prefs_source_email_hash == ctx.email_hash
        if same_account and (not db_prefs or master_mod > db_mod) and ctx.fitted(
                "user", {"global_prefs": master}, "[USER#%d]" % user["id"]):
            # (preferences too large for the column are not stored, as BOINC's
            # buffer refuses them)
            if log:
                log("[prefs] updating db prefs")
            from boincpy.db.user import set_global_prefs
            set_global_prefs(ctx.db, user["id"], master)
            user["global_prefs"] = master
            db_prefs = master
            db_mod = master_mod
    if log:
        log("[prefs] have DB prefs: %d; dbmod %f; global mod %f; working mod %f"
            % (had_db, read_db_mod, req.global_prefs.mod_time, working_mod))
    if db_prefs and db_mod > master_mod and db_mod > working_mod:
        if ctx.cfg.debug_prefs:
            ctx.log.debug("[prefs] sending DB prefs in reply")
        reply.send_global_prefs = True
