"""ReplyData -> the <scheduler_reply> document, as BOINC's SCHEDULER_REPLY::write.

The element order, spacing and number formats are the C++ scheduler's
(sched/sched_types.cpp), so replies compare byte for byte with the captured
ones where the content is the same.  The client's own parser is lenient, but
it needs: the closing ``</scheduler_reply>``; escaped ``<`` and ``&`` in text;
raw blocks (code_sign_key, file_signature, prefs) with literal close tags;
for every job its app, file_infos, app_version (platform, flops),
workunit (rsc_* and name inserted after ``<workunit>``), and result
(report_deadline, wu_name, name inserted after ``<result>``; platform,
version_num and plan_class appended) -- scheduler-protocol.md §6.

``write_reply`` returns the body; the CGI header line comes from the handler.
"""

from boincpy.hot_path import join
from boincpy.proc_types import PROC_CPU, PROC_TYPE_XML
from boincpy.xml import xml_escape

SCHEDULER_VERSION = 803     # major*100+minor of the BOINC server this one matches (8.3)


def _x(value):
    """A value as it goes into the reply: escaped as BOINC's xml_escape does,
    whatever its origin (client, volunteer, operator), so that no text can
    end an element early or add one (str or None)."""
    return xml_escape(_s(value), boinc=True)


def _s(value):
    return "" if value is None else value


def down_reply(message, delay, ended=False):
    """The minimal "project down" reply BOINC sends before it looks at the
    request (stop_sched, no feeder, unreadable config or key), header included."""
    return ("Content-type: text/plain\n\n"
            "<scheduler_reply>\n"
            "    <message priority=\"low\">%s</message>\n"
            "    <request_delay>%d</request_delay>\n"
            "    <project_is_down/>\n"
            "%s</scheduler_reply>\n" % (_x(message), int(delay),
                                        "    <ended>1</ended>\n" if ended else "")).encode()


def insert_after(text, after, insert):
    """``insert`` placed right after the first ``after`` in ``text`` (BOINC's
    insert_after); None when ``after`` is missing."""
    p = text.find(after)
    if p < 0:
        return None
    p += len(after)
    return text[:p] + insert + text[p:]


def workunit_xml(job):
    """The job's workunit.xml_doc with BOINC's inserted tags (rsc_*, name, app_name)."""
    wu = job.workunit
    tags = ("    <rsc_fpops_est>%f</rsc_fpops_est>\n"
            "    <rsc_fpops_bound>%f</rsc_fpops_bound>\n"
            "    <rsc_memory_bound>%f</rsc_memory_bound>\n"
            "    <rsc_disk_bound>%f</rsc_disk_bound>\n"
            "    <name>%s</name>\n"
            "    <app_name>%s</app_name>\n"
            % (wu["rsc_fpops_est"], wu["rsc_fpops_bound"], wu["rsc_memory_bound"],
               wu["rsc_disk_bound"], _x(wu["name"]), _x(job.app["name"])))
    keywords = _s(wu.get("keywords"))
    if keywords.strip():
        tags += "    <job_keyword_ids>%s</job_keyword_ids>\n" % _x(keywords)
    doc = insert_after(_s(wu["xml_doc"]), "<workunit>\n", tags)
    if doc is None:
        raise ValueError("workunit %s: xml_doc has no '<workunit>' line" % wu["name"])
    return doc


def result_xml(job, platform_name):
    """The job's result.xml_doc_in as sent: deadline and names inserted after
    ``<result>``, the app version's identity appended."""
    res = job.result
    doc = _s(res["xml_doc_in"])
    for tag in ("<name>%s</name>\n" % _x(res["name"]),
                "<wu_name>%s</wu_name>\n" % _x(job.workunit["name"]),
                "<report_deadline>%d</report_deadline>\n" % job.report_deadline):
        doc = insert_after(doc, "<result>\n", tag)
        if doc is None:
            raise ValueError("result %s: xml_doc_in has no '<result>' line" % res["name"])
    end = doc.find("</result>")
    if end < 0:
        raise ValueError("result %s: xml_doc_in has no </result>" % res["name"])
    out = [doc[:end], "\n"]
    if job.app_version is not None:
        av = job.app_version
        out.append("    <platform>%s</platform>\n    <version_num>%d</version_num>\n"
                   "    <plan_class>%s</plan_class>\n"
                   % (_x(platform_name), av["version_num"], _x(av.get("plan_class"))))
    elif job.client_app_version is not None:
        cav = job.client_app_version
        out.append("    <platform>%s</platform>\n    <version_num>%d</version_num>\n"
                   "    <plan_class>%s</plan_class>\n"
                   % (_x(cav.platform), cav.version_num, _x(cav.plan_class)))
    out.append("</result>\n")
    return "".join(out)


def app_version_xml(job, platform_name, core_client_version, mirrors=None):
    """The app_version.xml_doc up to </app_version>, then this host's usage
    (``mirrors``: a DownloadServers rewriting the files' URLs first)."""
    av = job.app_version
    doc = _s(av["xml_doc"])
    if mirrors is not None:
        doc = mirrors.rewrite(doc, "APP version")
    end = doc.find("</app_version>")
    if end < 0:
        raise ValueError("app version %d: xml_doc has no </app_version>" % av["id"])
    out = [doc[:end], "    <platform>%s</platform>\n" % _x(platform_name)]
    plan_class = _s(av.get("plan_class"))
    if plan_class:
        out.append("    <plan_class>%s</plan_class>\n" % _x(plan_class))
    out.append("    <avg_ncpus>%f</avg_ncpus>\n    <flops>%f</flops>\n"
               % (job.avg_ncpus, job.flops))
    if job.cmdline:
        out.append("    <cmdline>%s</cmdline>\n" % _x(job.cmdline))
    if job.coproc_type:
        ctype = job.coproc_type
        if ctype == "NVIDIA" and core_client_version < 70000:
            ctype = "CUDA"          # the name clients before 7.0 know
        out.append("    <coproc>\n        <type>%s</type>\n        <count>%f</count>\n"
                   "    </coproc>\n" % (ctype, job.coproc_usage))
    if job.gpu_ram:
        out.append("    <gpu_ram>%f</gpu_ram>\n" % job.gpu_ram)
    out.append("</app_version>\n")
    return "".join(out)


def app_xml(app):
    return ("<app>\n"
            "    <name>%s</name>\n"
            "    <user_friendly_name>%s</user_friendly_name>\n"
            "    <non_cpu_intensive>%d</non_cpu_intensive>\n"
            "    <fraction_done_exact>%d</fraction_done_exact>\n"
            "</app>\n" % (_x(app["name"]), _x(app.get("user_friendly_name")),
                          1 if app.get("non_cpu_intensive") else 0,
                          1 if app.get("fraction_done_exact") else 0))


def read_project_file(cfg, name, resident=None):
    """A project file (gui_urls.xml, project_files.xml), LF-terminated, or "".

    A persistent process (``resident.persistent``) keeps it from one request
    to the next until the file changes (one stat a request): BOINC's FastCGI
    scheduler reads these once per process, and this one still sees an edit
    at the next request."""
    path = join(cfg.project_dir, name)
    try:
        if resident is not None and resident.persistent:
            return resident.file_value(path, _read_text) or ""
        return _read_text(path)
    except OSError:
        return ""


def _read_text(path):
    with open(path, "rb") as f:
        text = f.read().decode("utf-8", "replace")
    if text and not text.endswith("\n"):
        text += "\n"
    return text


def gui_urls_text(ctx):
    """gui_urls.xml with BOINC's substitutions for this user/host/team."""
    text = read_project_file(ctx.cfg, "gui_urls.xml", ctx.resident)
    if not text:
        return ""
    from boincpy.sched.hosts import rss_auth, weak_auth
    user = ctx.user or {}
    host = ctx.host or {}
    team = ctx.team or {}
    if not user.get("teamid"):
        while True:
            start = text.find("<ifteam>")
            if start < 0:
                break
            end = text.find("</ifteam>", start)
            if end < 0:
                break
            text = text[:start] + text[end + len("</ifteam>"):]
        teamid = "0"
    else:
        teamid = "%d" % (team.get("id") or 0)
    subs = (("<authenticator/>", _x(user.get("authenticator"))),
            ("<hostid/>", "%d" % (host.get("id") or 0)),
            ("<master_url/>", _x(ctx.cfg.master_url)),
            ("<project_name/>", _x(ctx.cfg.long_name)),
            ("<rss_auth/>", rss_auth(user) if user else ""),
            ("<teamid/>", teamid),
            ("<team_name/>", _x(team.get("name"))),
            ("<userid/>", "%d" % (user.get("id") or 0)),
            ("<user_name/>", _x(user.get("name"))),
            ("<weak_auth/>", weak_auth(user) if user else ""))
    for tag, value in subs:
        if tag in text:
            text = text.replace(tag, value)
    return text


def write_reply(ctx, job_array=None):
    """The <scheduler_reply> body (str) for the request handled in ``ctx``.

    Also logs BOINC's "Sending reply to [HOST#N]: J results, delay req D" line.
    ``job_array`` (the feeder's) says which processor types have apps, for
    ``<no_rsc_apps>``.
    """
    cfg, req, reply = ctx.cfg, ctx.request, ctx.reply
    user, host = ctx.user, ctx.host
    ccv = req.core_client_version if req is not None else 0
    out = ["<scheduler_reply>\n<scheduler_version>%d</scheduler_version>\n" % SCHEDULER_VERSION]
    w = out.append
    if ccv >= 70028:
        w("<dont_use_dcf/>\n")
    if cfg.master_url:
        w("<master_url>%s</master_url>\n" % _x(cfg.master_url))
    if cfg.ended:
        w("   <ended>1</ended>\n")
    delay = reply.request_delay
    msi = cfg.min_sendwork_interval
    if delay or msi:
        needed = max(1.01 * msi, msi + 1)
        if delay < needed:
            delay = needed
        w("<request_delay>%f</request_delay>\n" % delay)
    if ctx.log is not None:
        ctx.log.normal("Sending reply to [HOST#%d]: %d results, delay req %.2f"
                       % ((host or {}).get("id") or 0, len(reply.jobs), delay))
    _write_messages(w, reply.messages, ccv)
    w("<project_name>%s</project_name>\n" % _x(cfg.long_name))
    if cfg.request_time_stats_log:
        from boincpy.sched.time_stats_log import have_time_stats_log
        if not have_time_stats_log(cfg, (host or {}).get("id") or 0):
            w("<send_time_stats_log>1</send_time_stats_log>\n")
    if reply.project_is_down:
        w("<project_is_down/>\n")
        w("</scheduler_reply>\n")
        return "".join(out)
    if cfg.workload_sim:
        w("<send_full_workload/>\n")
    if reply.nucleus_only:
        w("</scheduler_reply>\n")
        return "".join(out)
    if cfg.symstore:
        w("<symstore>%s</symstore>\n" % _x(cfg.symstore))
    if cfg.next_rpc_delay:
        w("<next_rpc_delay>%f</next_rpc_delay>\n" % cfg.next_rpc_delay)
    if user:
        w("<userid>%d</userid>\n<user_name>%s</user_name>\n"
          "<user_total_credit>%f</user_total_credit>\n"
          "<user_expavg_credit>%f</user_expavg_credit>\n"
          "<user_create_time>%d</user_create_time>\n"
          % (user["id"], _x(user["name"]), user["total_credit"],
             user["expavg_credit"], user["create_time"]))
        if ctx.email_hash:
            w("<email_hash>%s</email_hash>\n" % _x(ctx.email_hash))
        cpid = _s(user.get("cross_project_id"))
        if cpid:
            from boincpy.sched.hosts import md5_hex
            w("<cross_project_id>%s</cross_project_id>\n<external_cpid>%s</external_cpid>\n"
              % (_x(cpid), md5_hex(cpid + _s(user["email_addr"]))))
        if reply.send_global_prefs:
            w(_s(user.get("global_prefs")) + "\n")
        w(_s(user.get("project_prefs")) + "\n")     # always, as BOINC does
    if reply.hostid:
        w("<hostid>%d</hostid>\n" % reply.hostid)
    host = host or {}
    w("<host_total_credit>%f</host_total_credit>\n"
      "<host_expavg_credit>%f</host_expavg_credit>\n"
      "<host_venue>%s</host_venue>\n"
      "<host_create_time>%d</host_create_time>\n"
      % (host.get("total_credit") or 0.0, host.get("expavg_credit") or 0.0,
         _x(host.get("venue")), host.get("create_time") or 0))
    team = ctx.team
    if team and team.get("id"):
        w("<teamid>%d</teamid>\n<team_name>%s</team_name>\n"
          % (team["id"], _x(team["name"])))
    else:
        w("<team_name></team_name>\n")
    for name in reply.result_acks:
        w("<result_ack>\n    <name>%s</name>\n</result_ack>\n" % _x(name))
    for name in reply.result_aborts:
        w("<result_abort>\n    <name>%s</name>\n</result_abort>\n" % _x(name))
    for name in reply.result_abort_if_not_starteds:
        w("<result_abort_if_not_started>\n    <name>%s</name>\n"
          "</result_abort_if_not_started>\n" % _x(name))
    _write_jobs(ctx, w, ccv)
    if reply.send_code_sign_key and ctx.code_sign_key:
        w("<code_sign_key>\n%s\n</code_sign_key>\n" % ctx.code_sign_key)
    if reply.code_sign_key_signature:
        w("<code_sign_key_signature>\n%s</code_sign_key_signature>\n"
          % reply.code_sign_key_signature)
    if reply.send_msg_ack:
        w("<message_ack/>\n")
    for xml in reply.msgs_to_host:
        w(xml + "\n")
    if cfg.non_cpu_intensive:
        w("<non_cpu_intensive/>\n")
    if cfg.strict_memory_bound:
        w("<strict_memory_bound/>\n")
    if cfg.verify_files_on_app_start:
        w("<verify_files_on_app_start/>\n")
    for name in reply.file_deletes:
        w("<delete_file_info>%s</delete_file_info>\n" % _x(name))
    _write_no_rsc_apps(w, req, job_array, ccv)
    w(gui_urls_text(ctx))
    project_files = read_project_file(cfg, "project_files.xml", ctx.resident)
    if project_files:
        w(project_files)
    w("</scheduler_reply>\n")
    return "".join(out)


def _write_messages(w, messages, ccv):
    if ccv and ccv <= 41900:
        # very old clients show one message; newlines break them
        if messages:
            priority = "notice" if any(p == "notice" for p, _ in messages) else "low"
            text = " ".join(m for _, m in messages).replace("\n", " ")
            w('<message priority="%s">%s </message>\n' % (priority, _x(text)))
        return
    for priority, text in messages:
        if ccv and ccv <= 61100 and priority == "notice":
            priority = "high"
        w('<message priority="%s">%s</message>\n' % (priority, _x(text)))


def _write_jobs(ctx, w, ccv):
    jobs = ctx.reply.jobs
    if not jobs:
        return
    names = {p["id"]: _s(p["name"]) for p in ctx.platforms}
    apps, versions, wus = [], [], []
    seen_apps, seen_versions, seen_wus = set(), set(), set()
    mirrors = None
    if ctx.cfg.replace_download_url_by_timezone:
        # imported only when the option is on, to keep the CGI's start-up lean
        from boincpy.sched.download_servers import DownloadServers
        mirrors = DownloadServers(ctx.cfg, ctx.host, ctx.log)
    for job in jobs:
        if job.app_version is not None:
            # anonymous-platform jobs carry neither app nor app version
            if job.app["id"] not in seen_apps:
                seen_apps.add(job.app["id"])
                apps.append(app_xml(job.app))
            if job.app_version["id"] not in seen_versions:
                seen_versions.add(job.app_version["id"])
                versions.append(app_version_xml(
                    job, names.get(job.app_version["platformid"], ""), ccv, mirrors))
        if job.workunit["id"] not in seen_wus:
            seen_wus.add(job.workunit["id"])
            doc = workunit_xml(job)
            if mirrors is not None:
                doc = mirrors.rewrite(doc, "WU")
            wus.append(doc + "\n")
    for text in apps:
        w(text)
    for text in versions:
        w(text)
    for text in wus:
        w(text)
    for job in jobs:
        platform = ""
        if job.app_version is not None:
            platform = names.get(job.app_version["platformid"], "")
        w(result_xml(job, platform))


def _write_no_rsc_apps(w, req, job_array, ccv):
    """<no_rsc_apps> for the processor types the project has no app for --
    only if it has apps for one the client owns (7.0 clients stop asking
    otherwise)."""
    have = getattr(job_array, "have_apps_for_proc_type", None)
    if not have or req is None:
        return
    owned = {PROC_CPU} | {r.proc_type for r in req.resources[1:] if r.count}
    if not any(have[t] for t in owned if t < len(have)):
        return
    if ccv < 70040:
        w("<no_cpu_apps>%d</no_cpu_apps>\n<no_cuda_apps>%d</no_cuda_apps>\n"
          "<no_ati_apps>%d</no_ati_apps>\n"
          % (0 if have[0] else 1, 0 if have[1] else 1, 0 if have[2] else 1))
    for t, name in enumerate(PROC_TYPE_XML):
        if t >= len(have):
            break
        if t > 0 and t not in owned:
            continue
        if not have[t]:
            w("<no_rsc_apps>%s</no_rsc_apps>\n" % name)


