"""Homogeneous redundancy, the request's side (BOINC's sched_hr.cpp).

The classes themselves (numbers, :func:`~boincpy.hrclass.hr_class`) and the
HR census are in boincpy.hrclass.  Here: this host's class
(:func:`host_hr_class`), the fast feasibility check (:func:`hr_feasible`),
and whether the host has a class for any app (:func:`hr_unknown_platform`).
They read boincpy.sched.choose's ``Work`` and import nothing from job choice.
"""

from boincpy.hrclass import app_hr_type, hr_class, hr_unknown_class


def host_hr_fields(work):
    """(os_name, p_vendor, p_model) of the host as this request describes it."""
    h, row = work.hinfo, work.host
    return (h.os_name or row.get("os_name", "") or "",
            h.p_vendor or row.get("p_vendor", "") or "",
            h.p_model or row.get("p_model", "") or "")


def host_hr_class(work, hr_type):
    """This host's homogeneous-redundancy class under ``hr_type``."""
    return hr_class(*host_hr_fields(work), hr_type)


def already_sent_to_different_hr_class(work, wu, hr_type):
    """already_sent_to_different_hr_class(): also sets (or clears) the flag
    behind "Tasks are committed to other platforms", as BOINC does on every call."""
    work.hr_reject_temp = False
    if wu.get("hr_class") and wu["hr_class"] != host_hr_class(work, hr_type):
        work.hr_reject_temp = True
        return True
    return False


def all_apps_use_hr(work):
    """True if every app of the project uses homogeneous redundancy."""
    return all(app_hr_type(work.cfg, a) for a in work.ja.apps)


def hr_unknown_platform(work):
    """hr_unknown_platform(): True if the host has no HR class for any app."""
    fields = host_hr_fields(work)
    return all(hr_unknown_class(*fields, app_hr_type(work.cfg, a))
               for a in work.ja.apps)


def hr_feasible(work, wu, app):
    """The homogeneous-redundancy part of wu_is_infeasible_fast: False if the
    app uses HR and the host has no class under its type, or the workunit
    (as the job array holds it) is committed to another class.

    The homogeneous-app-version check is in
    :func:`boincpy.sched.check.infeasible_fast`; both are checked again
    against the database in the slow check, and the commitment itself is the
    conditional UPDATE in :func:`boincpy.sched.choose.add_result_to_reply`.
    """
    hr_type = app_hr_type(work.cfg, app)
    if not hr_type:
        return True
    if hr_unknown_class(*host_hr_fields(work), hr_type):
        if work.cfg.debug_send_job:
            work.log.normal("[send_job] [HOST#%d] [WU#%d %s] host is of unknown class in HR "
                            "type %d" % (work.hostid, wu["id"], wu["name"], hr_type))
        work.reason("homogeneous_redundancy", "this host has no class in homogeneous "
                    "redundancy type %d, which app %s uses" % (hr_type, app["name"]))
        return False
    if already_sent_to_different_hr_class(work, wu, hr_type):
        mine = host_hr_class(work, hr_type)
        if work.cfg.debug_send_job:
            work.log.normal("[send_job] [HOST#%d] [WU#%d %s] failed quick HR check: WU is "
                            "class %d, host is class %d"
                            % (work.hostid, wu["id"], wu["name"], wu["hr_class"], mine))
        work.reason("hr_committed", "[WU#%d] is committed to HR class %d; this host is "
                    "class %d" % (wu["id"], wu["hr_class"], mine))
        return False
    return True
