"""The parts of a user's project preferences job choice uses.

``user.project_prefs`` reduced to the host's venue (:func:`prefs_body`, as
BOINC's extract_venue), and read into :class:`ProjectPrefs`: the apps the
user selected (and whether others may be sent when they have no work), beta
work, the processor types not to use, and the caps on jobs in progress and
CPUs.  :func:`app_not_selected` is the check every way of sending makes.
"""

from boincpy.proc_types import NPROC_TYPES
from boincpy.sched.request import extract_venue
from boincpy.xml.scan import block, flag, leaf_text, leaf_texts


class ProjectPrefs:
    """The parts of user.project_prefs job choice uses."""

    __slots__ = ("selected_apps", "allow_non_preferred_apps", "allow_beta_work",
                 "dont_use_proc_type", "max_jobs_in_progress", "max_cpus")

    def __init__(self):
        self.selected_apps = {}             # appid -> work available (bool)
        self.allow_non_preferred_apps = False
        self.allow_beta_work = False
        self.dont_use_proc_type = [False] * NPROC_TYPES
        self.max_jobs_in_progress = 0
        self.max_cpus = 0


def prefs_body(xml, venue):
    """user.project_prefs reduced to the host's venue (BOINC's extract_venue:
    the venue's block if the prefs have one, else the prefs without any)."""
    if not xml:
        return ""
    return extract_venue(xml, venue)


def _number(body, tag):
    # a number as the prefs form writes it (int(float) of the first <tag>N</tag>)
    text = leaf_text(body, tag)
    try:
        return int(float(text)) if text else 0
    except (ValueError, OverflowError):
        return 0


def parse_project_prefs(xml, venue):
    """ProjectPrefs from user.project_prefs (the host's venue block if any)."""
    prefs = ProjectPrefs()
    if not xml:
        return prefs
    body = prefs_body(xml, venue)
    prefs.allow_beta_work = flag(body, "allow_beta_work")
    prefs.allow_non_preferred_apps = flag(body, "allow_non_preferred_apps")
    selected = block(body, "apps_selected")
    if selected:
        for appid in leaf_texts(selected, "app_id"):
            if appid.isdigit():
                prefs.selected_apps[int(appid)] = False
    for tag, pt in (("no_cpu", 0), ("no_cuda", 1), ("no_ati", 2), ("no_intel_gpu", 3),
                    ("no_apple_gpu", 4)):
        prefs.dont_use_proc_type[pt] = flag(body, tag)
    if flag(body, "no_gpus"):
        for pt in range(1, NPROC_TYPES):
            prefs.dont_use_proc_type[pt] = True
    prefs.max_jobs_in_progress = _number(body, "max_jobs")
    prefs.max_cpus = _number(body, "max_cpus")
    return prefs


def app_not_selected(work, appid):
    sel = work.prefs.selected_apps
    if not sel:
        return False
    if appid in sel:
        sel[appid] = True
        return False
    return True
