"""App version choice (sched_version.cpp): the best version of an app for
this job on this host (:func:`get_app_version`), on the host's platforms or
among the client's own versions (anonymous platform), with projected FLOPS
from host / version statistics, daily quotas and in-progress limits.

Plan class call-outs: :func:`plan_class_usage` asks
:func:`boincpy.sched.plan_class.app_plan` for a plan-class version's host
usage (the project's plan_class_spec.xml, read once per request by
:func:`plan_class_specs`, else BOINC's built-in classes).
"""

from boincpy import rand
from boincpy.proc_types import PROC_TYPE_NAMES
from boincpy.sched import plan_class
from boincpy.sched.choose import BestVersion, GIGA, MIN_HOST_SAMPLES, daily_quota_exceeded
from boincpy.sched.plan_class import HostUsage
from boincpy.sched.prefs import prefs_body

MIN_VERSION_SAMPLES = 100
ET_RATIO_LIMIT = 250.0
GPU_CPU_RATIO = 10.0


# ---------------------------------------------------------------------------
# plan class call-outs (boincpy.sched.plan_class)

def plan_class_usage(work, av, wu):
    """HostUsage for a plan-class app version on this host, or None if the plan
    class rejects the host (app_plan: the project's plan_class_spec.xml if it
    has one, else BOINC's built-in classes; see boincpy.sched.plan_class)."""
    specs = plan_class_specs(work)
    r = plan_class.app_plan(get_plan_host(work), av["plan_class"], specs, wu)
    for text in work.plan_host.messages:
        work.add_no_work_message(text)
    if not r:
        # every plan class's reason, not just the first (the host may have
        # been refused by cuda and mt for different reasons)
        known = work.reasons.get("plan_class")
        if known is None:
            work.reason("plan_class", r.reason)
        elif r.reason not in known.split("; "):
            work.reasons["plan_class"] = known + "; " + r.reason
        if work.cfg.debug_version_select:
            work.log.normal("[version] [AV#%d] %s" % (av["id"], r.reason))
        return None
    return r


def plan_class_specs(work):
    """plan_class_spec.xml, looked for once per request; a bad file is logged
    once per request (and refuses every plan class)."""
    if work.pc_specs is False:
        work.pc_specs = plan_class.load_specs(work.cfg.project_dir)
        if isinstance(work.pc_specs, plan_class.PlanClassSpecError):
            work.log.critical("Error parsing plan class spec file: %s" % work.pc_specs)
    return work.pc_specs


def _capped_fpops(work):
    """capped_host_fpops(): the host's FLOPS within the project's distribution."""
    x = work.hinfo.p_fpops
    try:
        perf = work.ja.perf_info()
    except AttributeError:
        return x
    if x <= 0:
        return perf["host_fpops_50_percentile"]
    return min(x, perf["host_fpops_95_percentile"] * 1.1) if perf[
        "host_fpops_95_percentile"] > 0 else x


def get_plan_host(work):
    ph = work.plan_host
    if ph is None:
        req = work.req
        venue = work.host.get("venue", "") or ""
        ph = plan_class.PlanHost(
            work.hinfo, req.resources, req.core_client_version,
            req.core_client_major_version, work.userid, work.effective_ncpus,
            work.usable_ram, _capped_fpops(work),
            work.platforms[0]["name"] if work.platforms else req.platform_name,
            prefs_body(work.user.get("project_prefs"), venue),
            req.dont_use_docker, req.dont_use_wsl)
        work.plan_host = ph
    return ph


# ---------------------------------------------------------------------------
# app version choice

def _max_32b_address_space(platform_name):
    for word, size in (("windows", 2 * GIGA), ("linux", 3 * GIGA), ("darwin", 4 * GIGA),
                       ("solaris", 4 * GIGA), ("anonymous", 2 * GIGA)):
        if word in platform_name:
            return size
    return 2 * GIGA


def _host_fpops(work):
    return work.hinfo.p_fpops or work.host.get("p_fpops", 0) or 0.0


def _estimate_flops(work, usage, av, hav):
    """Projected FLOPS from host / version statistics (estimate_flops)."""
    cfg = work.cfg
    if not cfg.rte_no_stats and hav is not None and hav["et_n"] > MIN_HOST_SAMPLES:
        if cfg.estimate_flops_from_hav_pfc:
            new = usage.peak_flops / (hav["pfc_avg"] + 1e-18)
        else:
            new = 1.0 / hav["et_avg"] if hav["et_avg"] > 0 else usage.projected_flops
        usage.projected_flops = min(new, ET_RATIO_LIMIT * usage.projected_flops)
    elif not cfg.rte_no_stats and av["pfc_n"] > MIN_VERSION_SAMPLES and av["pfc_avg"] > 0:
        usage.projected_flops = usage.peak_flops / av["pfc_avg"]
    else:
        fpops = _host_fpops(work)
        if fpops <= 0:
            fpops = 1e9
        usage.projected_flops = fpops * (usage.avg_ncpus + GPU_CPU_RATIO * usage.gpu_usage)


def _need_this_resource(work, pt):
    return not work.rsc_spec_request or work.need_proc_type(pt)


def get_app_version(work, wu, app, check_req=True, reliable_only=False):
    """The best app version of ``app`` for this job on this host, or None."""
    need64 = wu["rsc_memory_bound"] > _max_32b_address_space(work.req.platform_name)
    if app.get("homogeneous_app_version"):
        if work.anonymous:
            return None
        if wu.get("app_version_id"):
            return _committed_app_version(work, wu, app)
    key = (app["id"], need64, wu.get("app_version_num") or 0)
    if key in work.best:
        bav = work.best[key]
        if bav is None:
            return None
        stale = work.limits.exceeded(app, bav.proc_type) or (
            check_req and work.rsc_spec_request and not work.need_proc_type(bav.proc_type))
        if not stale:
            return bav
        del work.best[key]
    if work.anonymous:
        bav = _get_app_version_anonymous(work, app, need64, reliable_only)
    else:
        bav = _get_app_version_platforms(work, wu, app, need64, check_req, reliable_only)
    work.best[key] = bav
    return bav


def _get_app_version_platforms(work, wu, app, need64, check_req, reliable_only):
    cfg = work.cfg
    pinned = wu.get("app_version_num") or 0
    ccv = work.req.core_client_version
    best, best_flops = None, 0.0
    any_version = False
    for p in work.platforms:
        if need64 and "64" not in p["name"]:
            continue
        found_feasible = False
        for av in work.ja.app_versions:
            if av["appid"] != app["id"] or av["platformid"] != p["id"]:
                continue
            if pinned:
                if av["version_num"] != pinned:
                    continue
            elif av["deprecated"]:
                continue
            any_version = True
            if av["beta"] and not work.prefs.allow_beta_work:
                work.reason("beta", "[AV#%d] is a beta version and the user doesn't "
                            "accept beta work" % av["id"])
                continue
            if av["plan_class"]:
                usage = plan_class_usage(work, av, wu)
                if usage is None:
                    continue
                if not work.req.client_cap_plan_class and not usage.is_sequential():
                    continue
            else:
                usage = HostUsage(_host_fpops(work))
            pt = usage.proc_type
            if work.prefs.dont_use_proc_type[pt]:
                work.reason("prefs_proc_type", "the user's preferences exclude %s jobs"
                            % PROC_TYPE_NAMES[pt])
                continue
            hav = work.havs.get(av["id"])
            if reliable_only and not (hav and hav["reliable"]):
                continue
            if daily_quota_exceeded(work, av["id"], usage):
                continue
            if work.limits.exceeded(app, pt):
                if cfg.debug_version_select:
                    work.log.normal("[version] [AV#%d] jobs in progress limit exceeded"
                                    % av["id"])
                lim = work.limits.app_limits.get(app["name"])
                if lim is not None and lim.exceeded(pt):
                    work.reason("in_progress_limit", "config_aux.xml's %s for app %s "
                                "reached" % (lim.describe(pt), app["name"]))
                else:
                    work.reason("in_progress_limit", "project %s reached"
                                % work.limits.project.describe(pt))
                continue
            if check_req and not _need_this_resource(work, pt):
                continue
            if ccv < av["min_core_version"]:
                work.outdated_client = True
                work.reason("client_version", "[AV#%d] needs client version %d or later "
                            "(client is %d)" % (av["id"], av["min_core_version"], ccv))
                continue
            if av["max_core_version"] and ccv > av["max_core_version"]:
                work.reason("client_version", "[AV#%d] needs client version %d or "
                            "earlier (client is %d)" % (av["id"], av["max_core_version"], ccv))
                continue
            found_feasible = True
            r, n = 1.0, 1
            if hav is not None:
                n = max(int(hav["pfc_n"]), 1)
                old = usage.projected_flops
                _estimate_flops(work, usage, av, hav)
                usage.projected_flops = (usage.projected_flops * (n - 1) + old) / n
                if (hav["pfc_n"] == 0 and hav["max_jobs_per_day"] == 1
                        and hav["consecutive_valid"] == 0 and rand.drand() > 0.01):
                    usage.projected_flops *= 0.01       # this version keeps failing here
            if cfg.version_select_random_factor:
                r = max(r + cfg.version_select_random_factor * rand.gauss(0.0, 1.0) / n, 0.1)
            if r * usage.projected_flops > best_flops:
                usage.projected_flops *= r
                best_flops = usage.projected_flops
                best = (av, usage)
            if cfg.debug_version_select:
                work.log.normal("[version] [AV#%d] %.2f GFLOPS (r=%.2f)"
                                % (av["id"], usage.projected_flops / 1e9, r))
        if cfg.prefer_primary_platform and found_feasible:
            break
    if best is None:
        if not any_version:
            name = app.get("user_friendly_name") or app["name"]
            work.add_no_work_message("%s is not available for your type of computer." % name)
            work.reason("no_app_version", "no version of app %s for platform(s) %s"
                        % (app["name"], ", ".join(p["name"] for p in work.platforms)
                           or work.req.platform_name))
        return None
    av, usage = best
    hav = work.havs.get(av["id"])
    _estimate_flops(work, usage, av, hav)
    bav = BestVersion(app["id"], av, None, usage, av["id"])
    bav.reliable = bool(hav and hav["reliable"])
    bav.trusted = bool(hav and hav["trusted"])
    if cfg.debug_version_select:
        work.log.normal("[version] Best version of app %s is [AV#%d] (%.2f GFLOPS)"
                        % (app["name"], av["id"], usage.projected_flops / 1e9))
    return bav


def _committed_app_version(work, wu, app):
    """Homogeneous app version: the version the workunit is committed to, if it
    suits this host (plain versions only until plan classes exist)."""
    avid = wu["app_version_id"]
    av = next((a for a in work.ja.app_versions if a["id"] == avid), None)
    if av is None:
        av = work.db.query_one("SELECT * FROM app_version WHERE id = %s", (avid,))
        if av is None:
            return None
    if av["platformid"] not in [p["id"] for p in work.platforms]:
        return None
    if av["plan_class"]:
        usage = plan_class_usage(work, av, wu)
        if usage is None:
            return None
    else:
        usage = HostUsage(_host_fpops(work))
    if not _need_this_resource(work, usage.proc_type):
        return None
    return BestVersion(app["id"], av, None, usage, av["id"])


def _get_app_version_anonymous(work, app, need64, reliable_only):
    best, found = None, False
    for cav, capp, usage in work.cavs:
        if capp is None or capp["id"] != app["id"]:
            continue
        if need64 and "64" not in (cav.platform or ""):
            continue
        gavid = app["id"] * 1000000 - usage.resource_type()
        hav = work.havs.get(gavid)
        if reliable_only and not (hav and hav["reliable"]):
            continue
        if daily_quota_exceeded(work, gavid, usage):
            continue
        if cav.version_num < app["min_version"]:
            continue
        found = True
        if not _need_this_resource(work, usage.proc_type):
            continue
        if best is None or usage.projected_flops > best[2].projected_flops:
            best = (cav, gavid, usage)
    if not found:
        work.add_no_work_message("Your app_info.xml file doesn't have a usable version of %s."
                                 % (app.get("user_friendly_name") or app["name"]))
        work.reason("no_app_version", "the client's app_info.xml has no usable version "
                    "of %s" % app["name"])
    if best is None:
        return None
    cav, gavid, usage = best
    usage = usage.copy()
    bav = BestVersion(app["id"], None, cav, usage, gavid)
    hav = work.havs.get(gavid)
    if hav is not None and hav["et_n"] > MIN_HOST_SAMPLES and hav["et_avg"] > 0:
        new = min(1.0 / hav["et_avg"], ET_RATIO_LIMIT * usage.projected_flops)
        bav.rsc_fpops_scale = usage.projected_flops / new
        usage.projected_flops = new
    bav.reliable = bool(hav and hav["reliable"])
    bav.trusted = bool(hav and hav["trusted"])
    return bav
