"""Homogeneous redundancy classes of hosts (BOINC's hr.cpp, sched_hr.cpp).

An app with homogeneous redundancy (``app.homogeneous_redundancy``, or
config.xml's ``<homogeneous_redundancy>`` for every app) sends all instances
of a workunit to hosts of one class, so numerically fragile results can be
compared bitwise.  A class is ``os + cpu``: the OS part is a multiple of 128,
the CPU part below 128.  HR type 1 ("fine") tells CPU models apart, type 2
("coarse") only vendors (AMD counts as Intel there, as in BOINC).

The numbers are stored in ``workunit.hr_class``, so they must be BOINC's.

Below the classes, the request's side of job choice (sched_hr.cpp): this
host's class (:func:`host_hr_class`), the fast feasibility check
(:func:`hr_feasible`), and whether the host has a class for any app
(:func:`hr_unknown_platform`).  They read boincpy.sched.choose's ``Work``
and import nothing from job choice.
"""

HR_NTYPES = 3           # 0 = no HR, 1 = fine, 2 = coarse
HR_NAMES = ("", "fine", "coarse")

# CPU part
NOCPU = 1
INTEL = 2
AMD = 3
MACINTOSH = 4           # PowerPC
AMD_ATHLON = 5
AMD_DURON = 6
AMD_SEMPRON = 7
AMD_OPTERON = 8
AMD_ATHLON64 = 9
AMD_ATHLON_XP = 10
INTEL_XEON = 11
INTEL_CELERON = 12
INTEL_PENTIUM = 13
INTEL_PENTIUM_II = 14
INTEL_PENTIUM_III = 15
INTEL_PENTIUM_4 = 16
INTEL_PENTIUM_D = 17
INTEL_PENTIUM_M = 18
AMD_ATHLON_MP = 19
AMD_TURION = 20
INTEL_CORE2 = 21
ARM = 22

# OS part
NOOS = 128
LINUX = 256
WINDOWS = 384
DARWIN = 512
FREEBSD = 640
ANDROID = 768

MAX_HR_CLASS = ANDROID + 128

# "Intel x86 Family 6 Model 9 ..." strings of old clients; first match wins,
# so "Model 1" is tried after "Model 10" and "Model 11" would be (as in BOINC).
_INTEL_X86_MODELS = (
    ("Family 6 Model 6", INTEL_CELERON),
    ("Family 6 Model 9", INTEL_PENTIUM_M),
    ("Family 6 Model 10", INTEL_XEON),
    ("Family 5 Model 1", INTEL_PENTIUM),
    ("Family 5 Model 2", INTEL_PENTIUM),
    ("Family 6 Model 1", INTEL_PENTIUM),
    ("Family 15 Model 1", INTEL_PENTIUM_4),
    ("Family 15 Model 2", INTEL_PENTIUM_4),
    ("Family 6 Model 7", INTEL_PENTIUM_III),
    ("Family 6 Model 8", INTEL_PENTIUM_III),
    ("Family 6 Model 11", INTEL_PENTIUM_III),
    ("Family 6 Model 3", INTEL_PENTIUM_II),
    ("Family 6 Model 5", INTEL_PENTIUM_II),
)


def _has(text, word):
    """strcasestr(): case-insensitive substring test."""
    return word.lower() in (text or "").lower()


def os_part(os_name):
    """The OS part of a host's class from host.os_name."""
    for word, part in (("Linux", LINUX), ("Windows", WINDOWS), ("Darwin", DARWIN),
                       ("FreeBSD", FREEBSD), ("Android", ANDROID)):
        if _has(os_name, word):
            return part
    return NOOS


def cpu_coarse(p_vendor, p_model):
    """The CPU part for HR type 2: the vendor only (AMD is grouped with Intel)."""
    if _has(p_vendor, "Intel") or _has(p_vendor, "AMD"):
        return INTEL
    if _has(p_vendor, "Macintosh"):
        return MACINTOSH
    if _has(p_vendor, "ARM"):
        return ARM
    if "ARM" in (p_model or ""):         # p_vendor is sometimes blank on ARM
        return ARM
    return NOCPU


def cpu_fine(p_vendor, p_model):
    """The CPU part for HR type 1: vendor and model family."""
    m = p_model
    if _has(p_vendor, "Intel"):
        if _has(m, "Xeon"):
            return INTEL_XEON
        if _has(m, "Celeron"):
            if _has(m, " M "):
                return INTEL_PENTIUM_M
            if _has(m, " D "):
                return INTEL_PENTIUM_D
            if _has(m, "III"):
                return INTEL_PENTIUM_III
            return INTEL_CELERON
        if _has(m, "Core"):
            return INTEL_CORE2
        if _has(m, "Pentium"):
            for word, cls in (("III", INTEL_PENTIUM_III), ("II", INTEL_PENTIUM_II),
                              (" 4 ", INTEL_PENTIUM_4), (" D ", INTEL_PENTIUM_D),
                              (" M ", INTEL_PENTIUM_M)):
                if _has(m, word):
                    return cls
            return INTEL_PENTIUM
        if _has(m, "x86"):
            for word, cls in _INTEL_X86_MODELS:
                if _has(m, word):
                    return cls
        return INTEL
    if _has(p_vendor, "AMD"):
        for word, cls in (("Duron", AMD_DURON), ("Opteron", AMD_OPTERON),
                          ("Sempron", AMD_SEMPRON), ("Turion", AMD_TURION)):
            if _has(m, word):
                return cls
        if _has(m, "Athlon"):
            for word, cls in (("XP", AMD_ATHLON_XP), ("MP", AMD_ATHLON_MP),
                              ("64", AMD_ATHLON64)):
                if _has(m, word):
                    return cls
            return AMD_ATHLON
        return AMD
    if _has(p_vendor, "Macintosh"):
        return MACINTOSH
    if _has(p_vendor, "ARM"):
        return ARM
    return NOCPU


def hr_class(os_name, p_vendor, p_model, hr_type):
    """The host's class for ``hr_type`` (0 when the type is 0 or unknown).
    Only meaningful when :func:`hr_unknown_class` is False."""
    if hr_type == 1:
        return os_part(os_name) + cpu_fine(p_vendor, p_model)
    if hr_type == 2:
        return os_part(os_name) + cpu_coarse(p_vendor, p_model)
    return 0


def hr_unknown_class(os_name, p_vendor, p_model, hr_type):
    """True if the host has no class under ``hr_type``: it gets no jobs of
    apps using that type."""
    if hr_type == 1:
        return os_part(os_name) == NOOS or cpu_fine(p_vendor, p_model) == NOCPU
    if hr_type == 2:
        o = os_part(os_name)
        if o in (WINDOWS, LINUX):
            return False
        if o == DARWIN:
            return cpu_coarse(p_vendor, p_model) not in (INTEL, MACINTOSH)
        return True
    return False


def app_hr_type(cfg, app):
    """The HR type an app uses: its own, else config.xml's (app_hr_type())."""
    return app.get("homogeneous_redundancy") or cfg.homogeneous_redundancy or 0


# ---------------------------------------------------------------------------
# the request's side (sched_hr.cpp): ``work`` is boincpy.sched.choose.Work

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
