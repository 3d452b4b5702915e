"""The volunteer's preferences: computing, project, keywords (BOINC's
prefs.php family).

==========================  =================================================
``prefs.php``               ``subset=global`` (computing) or ``project``: the
                            default set and each venue (home, school, work)
``prefs_edit.php``          the form of one set (``venue=`` for a venue's);
                            a POST with its token saves it
``add_venue.php``           a venue's own set, starting from the defaults
``prefs_remove.php``        drop a venue's set (a confirming form)
``prefs_default.php``       computing preferences back to the defaults
``kw_prefs.php``            keywords: yes / as needed / never for each
==========================  =================================================

Stored as BOINC's PHP stores them, so either site reads the other's:

* ``user.global_prefs``: ``<global_preferences>``, ``<mod_time>`` first (the
  time of the save: the client takes the newer of its own and the
  project's by it), every field of BOINC's form in its order
  (html/inc/prefs.inc), then ``<venue name="home|work|school">`` blocks;
* ``user.project_prefs``: ``<project_preferences>``: ``resource_share``, the
  processor types the project has app versions for (``no_cpu``, ``no_ati``,
  ``no_cuda``, ``no_intel_gpu``, ``no_apple_gpu``), ``allow_beta_work`` when
  the project has beta apps, ``<project_specific>`` (with
  ``<app_select_prefs/>``: ``<apps_selected>`` and
  ``<allow_non_preferred_apps>``, as the scheduler reads them in
  boincpy.sched.prefs), venues; ``send_email``, ``show_hosts`` and
  ``venue`` are columns of the user row;
* keywords: ``PROJECT/kw_prefs/USERID``, the ids said yes to on line 1 and
  no to on line 2 (what the scheduler's keyword score reads).

Values are written as PHP prints them (``0.1``, ``67``; :func:`php_text`).
Unlike BOINC's pages, the forms are POSTs with a form token, a bad value is
refused with a page naming the field (nothing is stored), hour ranges and
venues are checked, and no script is needed: an optional limit is a text
box left blank for none.
"""

import os
import re
import time
from urllib.parse import quote_plus

from boincpy.cnum import php_numeric, php_truthy
from boincpy.db import user as user_table
from boincpy.web.markup import Markup, fmt, join, link, url
from boincpy.web.page import PageError, Redirect, hidden, notice, render, table
from boincpy.web.rpc_xml import php_float
from boincpy.xml import parse_bool, xml_escape, xml_unescape

VENUES = ("home", "school", "work")          # shown in this order
VENUE_WRITE_ORDER = ("home", "work", "school")  # written in this one (BOINC's)
SUBSETS = ("global", "project")


# ---------------------------------------------------------------------------
# PHP's view of values

truthy = php_truthy


def php_text(value):
    """A value as PHP prints it into the XML (floats at precision 14)."""
    if value is None or value is False:
        return ""
    if value is True:
        return "1"
    if isinstance(value, (int, float)):
        return php_float(value)
    return value


_INT_TEXT = re.compile(r"^\s*[+-]?\d+\s*$")


def php_number(text):
    """A form's numeric text as PHP's arithmetic takes it (an int for an
    integer that fits, else a float); None if PHP's is_numeric refuses it."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        return text
    if text is None:
        return None
    number = php_numeric(text)
    if number is None:
        return None
    if _INT_TEXT.match(text):
        value = int(text)
        if -2 ** 63 <= value < 2 ** 63:
            return value
    return number


def _divide(value, scale):
    """PHP's value / scale: an int when it divides exactly."""
    if isinstance(value, int) and value % scale == 0:
        return value // scale
    return value / scale


# ---------------------------------------------------------------------------
# The preference kinds (html/inc/prefs_util.inc)

class NumSpec:
    """A number's unit, range, default, and the scale between what the form
    shows and what is stored (KB/s shown, bytes/s stored)."""

    def __init__(self, suffix, lo, hi, default, scale=1):
        self.suffix, self.lo, self.hi, self.default, self.scale = suffix, lo, hi, default, scale

    def shown(self, value):
        """The number the form shows for a stored value (out of range: the default)."""
        number = php_number(value)
        if number is None:
            return value if isinstance(value, str) else ""
        number = _divide(number, self.scale)
        if number < self.lo or number > self.hi:
            number = self.default
        return php_text(number)

    def convert(self, text, field, desc):
        """The stored value of a form's text; PageError naming the field if
        it is not a number or out of range (BOINC's form_convert: blank is 0).
        The range is that of the number typed, in the form's unit, as the
        form shows it (BOINC's form_convert tests the stored, scaled value,
        so its KB/s limits stopped at 9765)."""
        if text == "":
            text = "0"
        number = php_number(text)
        if number is not None and self.lo <= number <= self.hi:
            return number * self.scale
        raise PageError(fmt("{} ({}): {} is not a number from {} to {} {}; nothing was "
                            "saved.", field, desc, repr(text)[:60], self.lo, self.hi,
                            self.suffix), title="Preferences not saved")

    def readable(self, value):
        """The read-only view (BOINC's value_str): --- for 0."""
        number = php_number(value)
        if number is None:
            number = self.default
        number = _divide(number, self.scale)
        if number < self.lo or number > self.hi:
            number = self.default
        return ("---" if number == 0 else php_text(number)) + " " + self.suffix


class Pref:
    """One preference: ``kind`` bool, num, opt (a number where 0 is "no
    limit"), num2 (two numbers: MB every N days) or hours (a range)."""

    def __init__(self, kind, desc, tooltip, tag, default=None, spec=None, tag2=None,
                 spec2=None, invert=False):
        self.kind, self.desc, self.tooltip, self.tag = kind, desc, tooltip, tag
        self.default, self.spec, self.tag2, self.spec2 = default, spec, tag2, spec2
        self.invert = invert

    def tags(self):
        return (self.tag, self.tag2) if self.tag2 else (self.tag,)

    def set_default(self, values):
        if self.kind == "bool":
            values[self.tag] = self.default
        elif self.kind == "hours":
            values[self.tag] = values[self.tag2] = 0
        else:
            values[self.tag] = self.spec.default
            if self.tag2:
                values[self.tag2] = self.spec2.default

    def parse_xml(self, values, name, text):
        """Take an element's text if it is this preference's."""
        if self.kind == "bool":
            stripped = text.strip()
            number = php_numeric(stripped)
            values[name] = (number != 0) if number is not None else stripped != "0"
        else:
            values[name] = text

    def xml(self, values):
        """This preference's elements, as BOINC writes them."""
        tag, tag2 = self.tag, self.tag2
        if self.kind == "bool":
            return "<%s>%s</%s>\n" % (tag, "1" if truthy(values.get(tag)) else "0", tag)
        if self.kind in ("num", "opt"):
            v = values.get(tag)
            return "<%s>%s</%s>\n" % (tag, xml_escape(php_text(v if truthy(v) else 0)), tag)
        if self.kind == "num2":
            return "<%s>%s</%s>\n<%s>%s</%s>\n" % (
                tag, xml_escape(php_text(values.get(tag))), tag,
                tag2, xml_escape(php_text(values.get(tag2))), tag2)
        h1, h2 = values.get(tag), values.get(tag2)
        if _hours_equal(h1, h2):
            return ""
        return "<%s>%s</%s>\n<%s>%s</%s>\n" % (tag, xml_escape(php_text(h1)), tag,
                                               tag2, xml_escape(php_text(h2)), tag2)

    # -- the form ---------------------------------------------------------

    def checked(self, values):
        value = truthy(values.get(self.tag))
        return not value if self.invert else value

    def form_cell(self, values):
        """The form's input(s) for this preference (BOINC's field names)."""
        tag, tag2 = self.tag, self.tag2
        if self.kind == "bool":
            return fmt('<input type="checkbox" name="{}" id="{}"{}>', tag, tag,
                       Markup(" checked") if self.checked(values) else Markup(""))
        if self.kind == "num":
            return fmt('{} {}', _text_box(tag, self.spec.shown(values.get(tag))),
                       self.spec.suffix)
        if self.kind == "opt":
            value = values.get(tag)
            shown = self.spec.shown(value) if truthy(value) else ""
            return fmt('{} {} <span class="muted small">(blank: no limit)</span>',
                       _text_box(tag, shown), self.spec.suffix)
        if self.kind == "num2":
            v1, v2 = values.get(tag), values.get(tag2)
            on = truthy(v1) and truthy(v2)
            return fmt('{} {} {} {} <span class="muted small">(blank: no limit)</span>',
                       _text_box(tag, self.spec.shown(v1) if on else ""), self.spec.suffix,
                       _text_box(tag2, self.spec2.shown(v2) if on else ""), self.spec2.suffix)
        h1, h2 = values.get(tag), values.get(tag2)
        off = _hours_equal(h1, h2)
        return fmt('{} and {} <span class="muted small">(--- for any time)</span>',
                   _hour_select(tag, None if off else h1),
                   _hour_select(tag2, None if off else h2))

    def parse_form(self, values, form):
        """Take this preference from a posted form; PageError if it is bad."""
        tag, tag2 = self.tag, self.tag2
        if self.kind == "bool":
            present = tag in form
            values[tag] = (not present) if self.invert else present
        elif self.kind in ("num", "opt"):
            values[tag] = self.spec.convert(_one(form, tag), tag, self.desc)
        elif self.kind == "num2":
            values[tag] = self.spec.convert(_one(form, tag), tag, self.desc)
            values[tag2] = self.spec2.convert(_one(form, tag2), tag2, self.desc)
        else:
            h1, h2 = _one(form, tag).strip(), _one(form, tag2).strip()
            if not h1 and not h2:
                values[tag] = values[tag2] = 0
                return
            def valid(text):
                return text.isdigit() and text.isascii() and int(text) <= 23
            wrong = [n for n, t in ((tag, h1), (tag2, h2)) if t and not valid(t)]
            wrong += [n for n, t in ((tag, h1), (tag2, h2)) if not t]
            if wrong:
                raise PageError(fmt("{} ({}): choose both hours, from 0 to 23; "
                                    "nothing was saved.", wrong[0], self.desc),
                                title="Preferences not saved")
            values[tag], values[tag2] = int(h1), int(h2)

    def readable(self, values):
        """The read-only view of this preference."""
        tag, tag2 = self.tag, self.tag2
        if self.kind == "bool":
            return "yes" if self.checked(values) else "no"
        if self.kind in ("num", "opt"):
            return self.spec.readable(values.get(tag))
        if self.kind == "num2":
            return "%s %s" % (self.spec.readable(values.get(tag)),
                              self.spec2.readable(values.get(tag2)))
        h1, h2 = values.get(tag), values.get(tag2)
        if _hours_equal(h1, h2):
            return "---"
        return "%s:00 and %s:00" % (php_text(h1), php_text(h2))


def _hours_equal(h1, h2):
    """PHP's loose h1 == h2 for hours (numbers compared as numbers)."""
    n1, n2 = php_number(h1 if h1 is not None else ""), php_number(h2 if h2 is not None else "")
    if n1 is not None and n2 is not None:
        return n1 == n2
    return php_text(h1) == php_text(h2)


def _one(form, name):
    values = form.get(name)
    return values[-1] if values else ""


def _text_box(name, value):
    return fmt('<input type="text" size="6" name="{}" id="{}" value="{}">', name, name, value)


def _hour_select(name, selected):
    number = php_number(selected) if selected is not None else None
    opts = [fmt('<option value=""{}>---</option>',
                Markup(" selected") if number is None else Markup(""))]
    for hour in range(24):
        sel = Markup(" selected") if number is not None and number == hour else Markup("")
        opts.append(fmt('<option value="{}"{}>{}:00</option>', hour, sel, hour))
    return fmt('<select name="{}" id="{}">{}</select>', name, name, join(opts))


# ---------------------------------------------------------------------------
# Computing preferences (html/inc/prefs.inc)

def _config_number(value, fallback):
    """A config.xml default as PHP's project_config_val gives it (0: the fallback)."""
    if not value:
        return fallback
    return int(value) if float(value).is_integer() else value


def global_groups(cfg):
    """[(heading, [Pref])] of the computing preferences, in BOINC's order
    (the disk defaults from config.xml, as BOINC's get_disk_space_config)."""
    B, N, O = "bool", "num", "opt"
    max_gb = _config_number(cfg.default_disk_max_used_gb, 0)
    min_free = _config_number(cfg.default_disk_min_free_gb, 1)
    max_pct = _config_number(cfg.default_disk_max_used_pct, 90)
    cpus = "Leave some cores to other programs: 75% of an 8-core CPU is 6 cores."
    throttle = "Run and pause in turns of a few seconds, to keep the CPU cooler and use " \
               "less energy: 75% runs 3 seconds in every 4."
    busy = "Pause while other programs keep the computer busy."
    return [
        ("When computer is in use", [
            Pref(N, "'In use' means mouse/keyboard input in last",
                 "When the computer counts as in use.", "idle_time_to_run",
                 spec=NumSpec("minutes", 1, 9999, 3)),
            Pref(B, "Suspend all computing", "Suspend computing and file transfers while "
                 "you use the computer.", "run_if_user_active", True, invert=True),
            Pref(B, "Suspend GPU computing", "Suspend GPU computing while you use the "
                 "computer.", "run_gpu_if_user_active", False, invert=True),
            Pref(N, "Use at most", cpus, "max_ncpus_pct",
                 spec=NumSpec("% of the CPUs", 1, 100, 100)),
            Pref(N, "Use at most", throttle, "cpu_usage_limit",
                 spec=NumSpec("% of CPU time", 1, 100, 100)),
            Pref(O, "Suspend when non-BOINC CPU usage is above", busy, "suspend_cpu_usage",
                 spec=NumSpec("%", 0, 100, 25)),
            Pref(N, "Use at most", "Memory BOINC may use while you use the computer.",
                 "ram_max_used_busy_pct", spec=NumSpec("% of memory", 1, 100, 50)),
        ]),
        ("When computer is not in use", [
            Pref(N, "Use at most (BOINC 7.20.3+)", cpus, "niu_max_ncpus_pct",
                 spec=NumSpec("% of the CPUs", 1, 100, 0)),
            Pref(N, "Use at most (BOINC 7.20.3+)", throttle, "niu_cpu_usage_limit",
                 spec=NumSpec("% of CPU time", 1, 100, 0)),
            Pref(O, "Suspend when non-BOINC CPU usage is above (BOINC 7.20.3+)", busy,
                 "niu_suspend_cpu_usage", spec=NumSpec("%", 0, 100, 0)),
            Pref(N, "Use at most", "Memory BOINC may use while you don't use the computer.",
                 "ram_max_used_idle_pct", spec=NumSpec("% of memory", 1, 100, 90)),
            Pref(O, "Suspend when no mouse/keyboard input in last", "Lets the computer "
                 "enter low-power mode when not in use.", "suspend_if_no_recent_input",
                 spec=NumSpec("minutes", 0, 9999, 0)),
        ]),
        ("General", [
            Pref(B, "Suspend when computer is on battery", "Suspend computing on portables "
                 "running on battery power.", "run_on_batteries", False, invert=True),
            Pref(N, "Switch between tasks every", "How often BOINC may switch between "
                 "projects.", "cpu_scheduling_period_minutes",
                 spec=NumSpec("minutes", 1, 9999, 60)),
            Pref(N, "Request tasks to checkpoint at most every", "How often tasks save "
                 "their state to disk.", "disk_interval",
                 spec=NumSpec("seconds", 0, 9999999, 60)),
            Pref(B, "Leave non-GPU tasks in memory while suspended", "Suspended tasks stay "
                 "in memory and resume with no work lost.", "leave_apps_in_memory", False),
            Pref(N, "Store at least", "Enough tasks to keep the computer busy this long.",
                 "work_buf_min_days", spec=NumSpec("days of work", 0, 10, 0.1)),
            Pref(N, "Store up to an additional", "Tasks above the minimum: how much work "
                 "is asked for at a time.", "work_buf_additional_days",
                 spec=NumSpec("days of work", 0, 10, 0.5)),
            Pref("hours", "Compute only between", "Compute only during these hours of "
                 "each day.", "start_hour", tag2="end_hour"),
        ]),
        ("Disk", [
            Pref(O, "Use no more than", "Total disk space BOINC may use.",
                 "disk_max_used_gb", spec=NumSpec("GB", 0, 9999999, max_gb)),
            Pref(O, "Leave at least", "Free space to leave on the volume where BOINC "
                 "stores its data.", "disk_min_free_gb",
                 spec=NumSpec("GB free", 0, 9999999, min_free)),
            Pref(O, "Use no more than", "Share of the volume where BOINC stores its data.",
                 "disk_max_used_pct", spec=NumSpec("% of total", 0, 100, max_pct)),
            Pref(N, "Page/swap file: use at most", "Swap space BOINC may use.",
                 "vm_max_used_pct", spec=NumSpec("%", 1, 100, 75)),
        ]),
        ("Network", [
            Pref(O, "Limit download rate to", "File transfers' download rate.",
                 "max_bytes_sec_down", spec=NumSpec("KB/second", 0, 9999999, 0, 1024)),
            Pref(O, "Limit upload rate to", "File transfers' upload rate.",
                 "max_bytes_sec_up", spec=NumSpec("KB/second", 0, 9999999, 0, 1024)),
            Pref("num2", "Limit usage to", "Example: at most 2000 MB every 30 days.",
                 "daily_xfer_limit_mb", spec=NumSpec("MB every", 0, 9999999, 0),
                 tag2="daily_xfer_period_days", spec2=NumSpec("days", 0, 9999999, 0)),
            Pref("hours", "Transfer files only between", "Transfer files only during these "
                 "hours of each day.", "net_start_hour", tag2="net_end_hour"),
            Pref(B, "Skip data verification for image files", "Only if your Internet "
                 "provider modifies image files (less secure).", "dont_verify_images",
                 False),
            Pref(B, "Confirm before connecting to Internet", "Only for modem, ISDN or VPN "
                 "connections.", "confirm_before_connecting", False),
            Pref(B, "Disconnect when done", "Only for modem, ISDN or VPN connections.",
                 "hangup_if_dialed", False),
        ]),
    ]


def _all(groups):
    return [p for _, prefs in groups for p in prefs]


def default_global(groups):
    """A preference set as BOINC's default_prefs_global."""
    values = {}
    for pref in _all(groups):
        pref.set_default(values)
    return values


def set_niu(values):
    """Not-in-use limits that are unset take the in-use ones (set_niu_prefs)."""
    for niu, used in (("niu_max_ncpus_pct", "max_ncpus_pct"),
                      ("niu_cpu_usage_limit", "cpu_usage_limit"),
                      ("niu_suspend_cpu_usage", "suspend_cpu_usage")):
        if not truthy(values.get(niu)):
            values[niu] = values.get(used)


class PrefsSet:
    """Preferences read from the XML: the default set (``values``), the
    venues' sets, and mod_time (global) or project-specific XML per set."""

    def __init__(self, values):
        self.values = values
        self.venues = {}
        self.mod_time = None


_TOKEN = re.compile(r"<(/?)([A-Za-z_][-\w.:]*)([^>]*?)(/?)>|<!--.*?-->|<\?.*?\?>|<!.*?>", re.S)
_NAME_ATTR = re.compile(r"""\bname\s*=\s*(?:"([^"]*)"|'([^']*)')""")


def _venue_attr(attrs, default):
    """A <venue>'s name attribute (``default`` without one)."""
    m = _NAME_ATTR.search(attrs)
    if not m:
        return default
    return m.group(1) if m.group(1) is not None else m.group(2)


def _elements(xml):
    """(start, name, attrs, pos) and (end, name, text, pos) events of an XML
    text, leniently (what PHP's parser reports before any error)."""
    text_parts, pos = [], 0
    for m in _TOKEN.finditer(xml or ""):
        text_parts.append(xml[pos:m.start()])
        pos = m.end()
        if not m.group(2):
            continue
        closing, name, attrs, empty = m.group(1), m.group(2), m.group(3), m.group(4)
        if closing:
            yield "end", name, xml_unescape("".join(text_parts)), m.start()
            continue
        text_parts = []
        yield "start", name, attrs, m.end()
        if empty:
            yield "end", name, "", m.end()


def parse_global(xml, groups):
    """user.global_prefs read as BOINC's prefs_parse_global (defaults for
    what is missing; unset not-in-use limits from the in-use ones)."""
    tags = {}
    for pref in _all(groups):
        for tag in pref.tags():
            tags[tag] = pref
    top = PrefsSet(default_global(groups))
    current, venue = top.values, None
    for kind, name, data, _ in _elements(xml):
        if kind == "start":
            if name == "venue":
                venue = _venue_attr(data, "home")
                current = default_global(groups)
            continue
        if name in tags:
            tags[name].parse_xml(current, name, data)
        elif name == "venue":
            if venue in VENUES:
                set_niu(current)
                top.venues[venue] = current
            current, venue = top.values, None
        elif name == "mod_time":
            top.mod_time = data
    set_niu(top.values)
    return top


def global_xml(prefs, groups, now):
    """The global_preferences document BOINC writes (mod_time = ``now``)."""
    return _document("global_preferences", "<mod_time>%d</mod_time>\n" % now, prefs,
                     lambda values: _global_body(values, groups))


def _document(root, head, prefs, body):
    """A preferences document: the default set's elements, then the venues'
    (``body(values)``: a set's elements)."""
    out = ["<%s>\n" % root, head] + body(prefs.values)
    for venue in VENUE_WRITE_ORDER:
        if venue in prefs.venues:
            out += ['<venue name="%s">\n' % venue] + body(prefs.venues[venue]) + ["</venue>\n"]
    out.append("</%s>\n" % root)
    return "".join(out)


def _global_body(values, groups):
    return [pref.xml(values) for pref in _all(groups)]


# ---------------------------------------------------------------------------
# Project preferences (html/inc/prefs_project.inc, project_specific_prefs.inc)

class ProjectSpec:
    """What the project's preferences hold, from its apps: the processor
    types it has app versions for, whether it has beta apps, the apps a
    volunteer may choose (with ``app_select_prefs``)."""

    def __init__(self, ctx):
        db, cfg = ctx.db, ctx.cfg
        types = set()
        plan_classes = [r["plan_class"] or "" for r in db.query(
            "SELECT plan_class FROM app_version WHERE deprecated = 0")]
        try:
            with open(cfg.project_path("buda_plan_classes"), encoding="utf-8",
                      errors="replace") as f:
                plan_classes += f.read().splitlines()
        except OSError:
            pass
        for pc in plan_classes:
            types.add(_resource_of(pc))
        self.prefs = [Pref("num", "Resource share", "Your computer's share of resources "
                           "for this project, against your other projects' shares: with "
                           "shares 100 and 200, the first gets 1/3 and the second 2/3.",
                           "resource_share", spec=NumSpec("", 0, 9999999, 100))]
        for tag, kind, desc in (("no_cpu", "cpu", "Allow CPU-only tasks"),
                                ("no_ati", "ati", "Use AMD GPU"),
                                ("no_cuda", "cuda", "Use NVIDIA GPU"),
                                ("no_intel_gpu", "intel_gpu", "Use Intel GPU"),
                                ("no_apple_gpu", "apple_gpu", "Use Apple GPU")):
            if kind in types:
                self.prefs.append(Pref("bool", desc, "Ask this project for these tasks.",
                                       tag, False, invert=True))
        has_beta = db.query_value(
            "SELECT (SELECT COUNT(*) FROM app WHERE deprecated = 0 AND beta > 0) + "
            "(SELECT COUNT(*) FROM app_version WHERE deprecated = 0 AND beta > 0)", default=0)
        if has_beta:
            self.prefs.append(Pref("bool", "Run test applications?", "Test versions help the "
                                   "project, but their jobs may fail on your computer.",
                                   "allow_beta_work", False))
        self.app_select = bool(cfg.app_select_prefs)
        self.apps = []
        if self.app_select:
            self.apps = [(int(r["id"]), r["user_friendly_name"] or r["name"]) for r in db.query(
                "SELECT id, name, user_friendly_name FROM app WHERE deprecated = 0 "
                "ORDER BY id")]
        # caps the project lets volunteers set (BOINC's MAX_JOBS_PREF, MAX_CPUS_PREF)
        self.limits = [(tag, desc) for tag, desc, on in (
            ("max_jobs", "Max # of jobs for this project", cfg.max_jobs_pref),
            ("max_cpus", "Max # of CPUs for this project", cfg.max_cpus_pref)) if on]
        self.db = db
        # privacy consents asked on the form (consent_type enabled, privacypref)
        self.consents = [(int(r["id"]), "consent_" + quote_plus(r["shortname"]),
                          r["description"]) for r in db.query(
            "SELECT id, shortname, description FROM consent_type WHERE enabled = 1 AND "
            "privacypref = 1 ORDER BY project_specific")]

    def consent_given(self, userid, ctid):
        """The user's latest consent of this type (None: never asked)."""
        flag = self.db.query_value(
            "SELECT consent_flag FROM consent WHERE userid = %s AND consent_type_id = %s "
            "ORDER BY consent_time DESC, id DESC LIMIT 1", (userid, ctid), default=None)
        return None if flag is None else bool(flag)

    def record_consents(self, userid, form, now):
        """A consent row for each consent the form changed (BOINC's
        PREF_CONSENT parse_form, source "Webform")."""
        for ctid, tag, _ in self.consents:
            flag = tag in form
            if self.consent_given(userid, ctid) != flag:
                user_table.insert_consent(self.db, userid, ctid, now, int(flag), 0, "Webform")


def _resource_of(plan_class):
    """The processor type of a plan class, as BOINC's do_plan_class."""
    for needle, kind in (("ati", "ati"), ("amd", "ati"), ("cuda", "cuda"),
                         ("nvidia", "cuda"), ("intel_gpu", "intel_gpu"),
                         ("apple_gpu", "apple_gpu")):
        if needle in plan_class:
            return kind
    return "cpu"


PRIVACY = (
    Pref("bool", "May the project and your team (if any) send you email?", "",
         "send_email", True),
    Pref("bool", "Show your computers on the project's web site?", "Others can then see "
         "your computers and their tasks.", "show_hosts", True),
)


def default_project(spec):
    values = {}
    for pref in spec.prefs:
        pref.set_default(values)
    values["project_specific"] = ""
    return values


def parse_project(xml, spec):
    """user.project_prefs read as BOINC's prefs_parse_project; the
    project-specific part is kept as its XML text."""
    tags = {pref.tag: pref for pref in spec.prefs}
    top = PrefsSet(default_project(spec))
    current, venue, specific_start = top.values, None, None
    text = xml or ""
    for kind, name, data, pos in _elements(text):
        if specific_start is not None:
            if kind == "end" and name == "project_specific":
                current["project_specific"] = text[specific_start:pos]
                specific_start = None
            continue
        if kind == "start":
            if name == "venue":
                venue = _venue_attr(data, "")
                current = default_project(spec)
            elif name == "project_specific":
                specific_start = pos
            continue
        if name in tags:
            tags[name].parse_xml(current, name, data)
        elif name == "venue":
            if venue in VENUES:
                top.venues[venue] = current
            current, venue = top.values, None
    return top


def project_xml(prefs, spec):
    """The project_preferences document BOINC writes."""
    return _document("project_preferences", "", prefs,
                     lambda values: _project_body(values, spec))


def _project_body(values, spec):
    out = [pref.xml(values) for pref in spec.prefs]
    specific = values.get("project_specific") or ""
    if specific:
        out.append("<project_specific>\n%s\n</project_specific>\n" % specific.strip())
    return out


def selected_apps(specific):
    """The app ids a project-specific part selects (None: all apps)."""
    m = re.search(r"<apps_selected>(.*?)</apps_selected>", specific or "", re.S)
    if not m:
        return None
    return [int(x) for x in re.findall(r"<app_id>\s*(\d+)\s*</app_id>", m.group(1))]


def allows_other_apps(specific):
    m = re.search(r"<allow_non_preferred_apps>([^<]*)</allow_non_preferred_apps>",
                  specific or "")
    return bool(m and parse_bool(m.group(1)))


def specific_limit(specific, tag):
    """A cap (max_jobs, max_cpus) in a project-specific part (0: none)."""
    m = re.search(r"<%s>\s*(\d+)\s*</%s>" % (tag, tag), specific or "")
    return int(m.group(1)) if m else 0


def specific_from_form(spec, form):
    """The project-specific part a posted form gives (BOINC's sample
    project_specific_prefs_parse_form: apps only when some are unchecked;
    the caps from 0, no limit, to 8)."""
    out = ""
    if spec.app_select:
        chosen = ["<app_id>%d</app_id>\n" % appid for appid, _ in spec.apps
                  if "app_id_%d" % appid in form]
        if len(chosen) < len(spec.apps):
            out += "<apps_selected>\n%s</apps_selected>\n" % "".join(chosen)
        if "allow_non_preferred_apps" in form:
            out += "<allow_non_preferred_apps>1</allow_non_preferred_apps>\n"
    for tag, desc in spec.limits:
        text = _one(form, tag).strip() or "0"
        if not (text.isdigit() and text.isascii() and int(text) <= 8):
            raise PageError(fmt("{} ({}): {} is not a number from 0 (no limit) to 8; "
                                "nothing was saved.", tag, desc, repr(text)[:40]),
                            title="Preferences not saved")
        out += "<%s>%d</%s>\n" % (tag, int(text), tag)
    return out


# ---------------------------------------------------------------------------
# Page pieces

def _subset(ctx, optional=True):
    subset = ctx.req.get("subset") or ("global" if optional else "")
    if subset not in SUBSETS:
        raise PageError(fmt("subset: {} is not global or project", subset[:40]))
    return subset


def _venue(ctx, required=False):
    venue = ctx.req.get("venue")
    if venue not in VENUES and not (venue == "" and not required):
        raise PageError(fmt("venue: {} is not home, school or work", venue[:40]))
    return venue


def subset_title(subset):
    return "Computing" if subset == "global" else "Project"


def _row(desc, value, tooltip=""):
    if tooltip:
        return fmt('<tr title="{}"><th>{}</th><td>{}</td></tr>', tooltip, desc, value)
    return fmt("<tr><th>{}</th><td>{}</td></tr>", desc, value)


def _heading_row(text):
    return fmt('<tr><td colspan="2"><h2>{}</h2></td></tr>', text)


def _table(rows):
    return fmt('<table class="kv">{}</table>', join(rows))


def _global_rows(groups, values, form):
    rows = []
    for heading, prefs in groups:
        rows.append(_heading_row(heading))
        for pref in prefs:
            cell = pref.form_cell(values) if form else pref.readable(values)
            rows.append(_row(Markup(fmt('<label for="{}">{}</label>', pref.tag, pref.desc))
                             if form else pref.desc, cell, pref.tooltip))
    return rows


def _project_rows(spec, values, user, form):
    rows = []
    for pref in spec.prefs:
        rows.append(_row(pref.desc, pref.form_cell(values) if form else pref.readable(values),
                         pref.tooltip))
    if user is not None:
        for pref in PRIVACY:
            flags = {pref.tag: getattr(user, pref.tag)}
            rows.append(_row(pref.desc, pref.form_cell(flags) if form else pref.readable(flags),
                             pref.tooltip))
        for ctid, tag, desc in spec.consents:
            given = spec.consent_given(user.id, ctid)
            if form:
                cell = fmt('<input type="checkbox" name="{}"{}>', tag,
                           Markup(" checked") if given else Markup(""))
            else:
                cell = "---" if given is None else ("yes" if given else "no")
            rows.append(_row(desc, cell, desc))
        tip = "The venue this account's new computers start with."
        if form:
            opts = [fmt('<option value="{}"{}>{}</option>', v,
                        Markup(" selected") if user.venue == v else Markup(""), label)
                    for v, label in (("", "---"), ("home", "Home"), ("work", "Work"),
                                     ("school", "School"))]
            rows.append(_row("Default computer location",
                             fmt('<select name="default_venue" id="default_venue">{}</select>',
                                 join(opts)), tip))
        else:
            rows.append(_row("Default computer location", user.venue or "---", tip))
    if spec.app_select:
        specific = values.get("project_specific")
        chosen = selected_apps(specific)
        others = allows_other_apps(specific)
        if form:
            apps = join(fmt('<label><input type="checkbox" name="app_id_{}"{}> {}</label><br>',
                            appid, Markup(" checked") if chosen is None or appid in chosen
                            else Markup(""), name) for appid, name in spec.apps)
            others = fmt('<input type="checkbox" name="allow_non_preferred_apps"{}>',
                         Markup(" checked") if others else Markup(""))
        else:
            apps = "(all applications)" if chosen is None else join(
                (fmt("{}: {}", name, "yes" if appid in chosen else "no")
                 for appid, name in spec.apps), Markup("<br>"))
            others = "yes" if others else "no"
        rows.append(_row("Run only the selected applications", apps))
        rows.append(_row("When the selected applications have no work, take work from "
                         "the others?", others))
    for tag, desc in spec.limits:
        n = specific_limit(values.get("project_specific"), tag)
        if form:
            opts = [fmt('<option value="{}"{}>{}</option>', i,
                        Markup(" selected") if i == n else Markup(""), i or "No limit")
                    for i in range(9)]
            rows.append(_row(desc, fmt('<select name="{}" id="{}">{}</select>', tag, tag,
                                       join(opts))))
        else:
            rows.append(_row(desc, n or "No limit"))
    return rows


def _form(ctx, action, subset, venue, rows, submit):
    return fmt('<form method="post" action="{}">{}{}{}{}<p><button type="submit" '
               'name="action" value="1">{}</button></p></form>',
               action, ctx.token_field(action), hidden("subset", subset),
               hidden("venue", venue) if venue else Markup(""), _table(rows), submit)


def _pretty_time(text):
    number = php_number(text or "")
    if number is None:
        return text
    return time.strftime("%d %b %Y, %H:%M:%S UTC", time.gmtime(float(number)))


# ---------------------------------------------------------------------------
# prefs.php

def prefs_page(ctx):
    """Show the computing or project preferences: default set, then each venue."""
    user = ctx.require_login()
    subset = _subset(ctx)
    parts = []
    if ctx.req.get("updated"):
        parts.append(notice("ok", "Your preferences have been updated. They take effect "
                            "when your computer next contacts the project, or when you "
                            "click Update in the BOINC Manager."))
    if ctx.req.get("defaults"):
        parts.append(notice("ok", "Your preferences have been reset to the defaults. They "
                            "take effect when your computer next contacts the project."))
    other = "project" if subset == "global" else "global"
    parts.append(fmt("<p>{} &middot; {}</p>",
                     link(url("prefs.php", subset=other),
                          "%s preferences" % subset_title(other)),
                     link("kw_prefs.php", "Science and location preferences")))
    if subset == "global":
        groups = global_groups(ctx.cfg)
        prefs = parse_global(user.global_prefs, groups)
        parts.append(Markup("<p>Every computer attached with this account uses these "
                            "settings, except where preferences were set locally in the "
                            "BOINC Manager, and on Android devices.</p>"))

        def rows_of(values, owner=None):
            return _global_rows(groups, values, False)
    else:
        spec = ProjectSpec(ctx)
        prefs = parse_project(user.project_prefs, spec)

        def rows_of(values, owner=None):
            # the user row's flags and default venue go with the default set
            return _project_rows(spec, values, owner, False)
    columns = truthy(ctx.req.get("cols"))
    parts.append(fmt("<p>{}</p>", link(url("prefs.php", subset=subset, cols=0 if columns else 1),
                                       "(Switch view)")))
    if columns:
        listed = groups if subset == "global" else [("Project preferences", spec.prefs)]
        parts.append(_columns(subset, prefs, listed))
    else:
        parts.append(_sets(subset, prefs, rows_of, user))
    if subset == "global":
        if prefs.mod_time is not None:
            parts.append(fmt("<p>Preferences last modified: {}</p>",
                             _pretty_time(prefs.mod_time)))
        parts.append(fmt("<p>{}</p>", link("prefs_default.php", "Restore defaults")))
    return render(ctx, "%s preferences" % subset_title(subset), join(parts))


def _venue_links(subset, venue, prefs):
    """Edit and Remove links of a venue's set, or the link that adds one."""
    if venue not in prefs.venues:
        return link(url("add_venue.php", subset=subset, venue=venue),
                    "Add separate preferences for %s" % venue)
    return fmt("{} | {}", link(url("prefs_edit.php", subset=subset, venue=venue),
                               "Edit preferences"),
               link(url("prefs_remove.php", subset=subset, venue=venue), "Remove"))


def _columns(subset, prefs, groups):
    """Every set side by side: default, home, school, work (BOINC's cols=1)."""
    rows = []
    for heading, listed in groups:
        rows.append([fmt("<b>{}</b>", heading), "", "", "", ""])
        for pref in listed:
            rows.append([pref.desc, pref.readable(prefs.values)] + [
                pref.readable(prefs.venues[v]) if v in prefs.venues else "---"
                for v in VENUES])
    rows.append(["", link(url("prefs_edit.php", subset=subset), "Edit preferences")]
                + [_venue_links(subset, v, prefs) for v in VENUES])
    return table(["", "Default", "Home", "School", "Work"], rows)


def _sets(subset, prefs, rows_of, user):
    """The default set, then each venue's (or the link that adds it)."""
    parts = []
    if prefs.venues:
        parts.append(fmt("<h2>{}</h2>", "Primary (default) preferences"))
    main_rows = rows_of(prefs.values, user)
    main_rows.append(_row("", link(url("prefs_edit.php", subset=subset), "Edit preferences")))
    parts.append(_table(main_rows))
    for venue in VENUES:
        if venue in prefs.venues:
            rows = [_heading_row("Separate preferences for %s" % venue)]
            rows += rows_of(prefs.venues[venue])
            rows.append(_row("", _venue_links(subset, venue, prefs)))
            parts.append(_table(rows))
        else:
            parts.append(fmt("<p>{}</p>", _venue_links(subset, venue, prefs)))
    return join(parts)


# ---------------------------------------------------------------------------
# prefs_edit.php, add_venue.php

def _save_global(ctx, user, prefs, groups):
    user_table.update_user_columns(ctx.db, user.id,
                                   {"global_prefs": global_xml(prefs, groups, ctx.now)})


def _save_project(ctx, user, prefs, spec, flags=None):
    changes = {"project_prefs": project_xml(prefs, spec)}
    changes.update(flags or {})
    user_table.update_user_columns(ctx.db, user.id, changes)


def _parse_prefs_form(prefs_list, values, form):
    for pref in prefs_list:
        pref.parse_form(values, form)


def prefs_edit(ctx):
    """The form of one preference set; its POST (with the token) saves it."""
    if ctx.req.method == "POST":
        user = ctx.require_action()
        form = ctx.req.form
        subset = _one(form, "subset")
        venue = _one(form, "venue")
        if subset not in SUBSETS:
            raise PageError("subset: must be global or project; nothing was saved.")
        if venue and venue not in VENUES:
            raise PageError("venue: must be home, school or work; nothing was saved.")
    else:
        user = ctx.require_login()
        subset, venue = _subset(ctx, optional=False), _venue(ctx)
    if subset == "global":
        groups = global_groups(ctx.cfg)
        prefs = parse_global(user.global_prefs, groups)
    else:
        spec = ProjectSpec(ctx)
        prefs = parse_project(user.project_prefs, spec)
    if venue and venue not in prefs.venues:
        raise PageError(fmt("You have no separate {} preferences for {}: add them first.",
                            subset_title(subset).lower(), venue), "404 Not Found")
    values = prefs.venues[venue] if venue else prefs.values
    if ctx.req.method == "POST":
        form = ctx.req.form
        if subset == "global":
            _parse_prefs_form(_all(groups), values, form)
            _save_global(ctx, user, prefs, groups)
        else:
            _parse_prefs_form(spec.prefs, values, form)
            values["project_specific"] = specific_from_form(spec, form)
            flags = {}
            if not venue:
                default_venue = _one(form, "default_venue")
                if default_venue not in ("",) + VENUES:
                    raise PageError("default_venue: must be home, school, work or none; "
                                    "nothing was saved.", title="Preferences not saved")
                flags = {"send_email": 1 if "send_email" in form else 0,
                         "show_hosts": 1 if "show_hosts" in form else 0,
                         "venue": default_venue}
            _save_project(ctx, user, prefs, spec, flags)
            if not venue:
                spec.record_consents(user.id, form, ctx.now)
        raise Redirect(url("prefs.php", subset=subset, updated=1))
    title = "Edit %s preferences" % subset_title(subset).lower()
    if venue:
        title += " for %s" % venue
    if subset == "global":
        rows = _global_rows(groups, values, True)
        intro = Markup("<p>All your BOINC projects share these preferences.</p>")
    else:
        rows = _project_rows(spec, values, None if venue else user, True)
        intro = Markup("")
    body = join([intro, _form(ctx, "prefs_edit.php", subset, venue, rows,
                              "Update preferences"),
                 fmt("<p>{}</p>", link(url("prefs.php", subset=subset),
                                       "Back to preferences"))])
    return render(ctx, title, body)


def add_venue(ctx):
    """A venue's own preference set: the form starts from the defaults."""
    if ctx.req.method == "POST":
        user = ctx.require_action()
        form = ctx.req.form
        subset, venue = _one(form, "subset"), _one(form, "venue")
        if subset not in SUBSETS or venue not in VENUES:
            raise PageError("subset and venue: must be global or project, and home, school "
                            "or work; nothing was saved.")
    else:
        user = ctx.require_login()
        subset, venue = _subset(ctx, optional=False), _venue(ctx, required=True)
    if subset == "global":
        groups = global_groups(ctx.cfg)
        prefs = parse_global(user.global_prefs, groups)
        new = default_global(groups)
        set_niu(new)
    else:
        spec = ProjectSpec(ctx)
        prefs = parse_project(user.project_prefs, spec)
        new = default_project(spec)
    if ctx.req.method == "POST":
        form = ctx.req.form
        if subset == "global":
            _parse_prefs_form(_all(groups), new, form)
            prefs.venues[venue] = new
            _save_global(ctx, user, prefs, groups)
        else:
            _parse_prefs_form(spec.prefs, new, form)
            new["project_specific"] = specific_from_form(spec, form)
            prefs.venues[venue] = new
            _save_project(ctx, user, prefs, spec)
        raise Redirect(url("prefs.php", subset=subset))
    if subset == "global":
        rows = _global_rows(groups, new, True)
    else:
        rows = _project_rows(spec, new, None, True)
    body = join([_form(ctx, "add_venue.php", subset, venue, rows, "Add preferences"),
                 fmt("<p>{}</p>", link(url("prefs.php", subset=subset),
                                       "Back to preferences"))])
    return render(ctx, "Add %s preferences for %s" % (subset_title(subset).lower(), venue),
                  body)


# ---------------------------------------------------------------------------
# prefs_remove.php, prefs_default.php

def prefs_remove(ctx):
    """GET: confirm; POST (with the token): drop the venue's set."""
    if ctx.req.method == "POST":
        user = ctx.require_action()
        subset, venue = _one(ctx.req.form, "subset"), _one(ctx.req.form, "venue")
        if subset not in SUBSETS or venue not in VENUES:
            raise PageError("subset and venue: must be global or project, and home, school "
                            "or work; nothing was changed.")
        if subset == "global":
            groups = global_groups(ctx.cfg)
            prefs = parse_global(user.global_prefs, groups)
            prefs.venues.pop(venue, None)
            _save_global(ctx, user, prefs, groups)
        else:
            spec = ProjectSpec(ctx)
            prefs = parse_project(user.project_prefs, spec)
            prefs.venues.pop(venue, None)
            _save_project(ctx, user, prefs, spec)
        raise Redirect(url("prefs.php", subset=subset))
    ctx.require_login()
    subset, venue = _subset(ctx, optional=False), _venue(ctx, required=True)
    body = fmt('<p>Remove the separate {} preferences of the {} venue?</p>'
               '<form method="post" action="prefs_remove.php">{}{}{}'
               '<button type="submit" class="danger">Yes, remove them</button> {}</form>',
               subset_title(subset).lower(), venue, ctx.token_field("prefs_remove.php"),
               hidden("subset", subset), hidden("venue", venue),
               link(url("prefs.php", subset=subset), "Cancel"))
    return render(ctx, "Confirm delete preferences", body)


def prefs_default(ctx):
    """GET: confirm; POST (with the token): computing preferences as BOINC's
    defaults (default_prefs_global, venues dropped)."""
    if ctx.req.method == "POST":
        user = ctx.require_action()
        groups = global_groups(ctx.cfg)
        _save_global(ctx, user, PrefsSet(default_global(groups)), groups)
        raise Redirect(url("prefs.php", subset="global", defaults=1))
    ctx.require_login()
    body = fmt('<p>You asked to restore your computing preferences to the default settings. '
               'Your current preferences (and those of your venues) will be discarded.</p>'
               '<form method="post" action="prefs_default.php">{}'
               '<button type="submit" class="danger">Restore defaults</button> {}</form>',
               ctx.token_field("prefs_default.php"),
               link(url("prefs.php", subset="global"), "Keep current preferences"))
    return render(ctx, "Confirm reset preferences", body)


# ---------------------------------------------------------------------------
# kw_prefs.php (html/inc/keywords.inc, kw_prefs.inc)

SCIENCE, LOCATION = 0, 1
KW_YES, KW_MAYBE, KW_NO = 1, 0, -1

# (id, category, level, parent, name), in BOINC's order: ids are never reused.
KEYWORDS = (
    (1, SCIENCE, 0, 0, "Astronomy"),
    (2, SCIENCE, 1, 1, "Search for Extraterrestrial Intelligence"),
    (3, SCIENCE, 1, 1, "Detection and study of pulsars"),
    (4, SCIENCE, 1, 1, "Detection and study of gravitational waves"),
    (5, SCIENCE, 1, 1, "Cosmology"),
    (62, SCIENCE, 0, 0, "Chemistry"),
    (6, SCIENCE, 0, 0, "Physics"),
    (7, SCIENCE, 1, 6, "Particle physics"),
    (8, SCIENCE, 1, 6, "Nanoscience"),
    (9, SCIENCE, 0, 0, "Biology and Medicine"),
    (10, SCIENCE, 1, 9, "Drug discovery"),
    (11, SCIENCE, 1, 9, "Protein research"),
    (12, SCIENCE, 1, 9, "Genetics and Phylogeny"),
    (13, SCIENCE, 1, 9, "Disease research"),
    (14, SCIENCE, 2, 13, "Cancer research"),
    (64, SCIENCE, 2, 13, "COVID-19 and virology"),
    (15, SCIENCE, 0, 0, "Mathematics and Computer Science"),
    (32, SCIENCE, 1, 15, "Number Theory"),
    (33, SCIENCE, 1, 15, "Cryptography"),
    (63, SCIENCE, 1, 15, "Games"),
    (16, SCIENCE, 0, 0, "Artificial Intelligence and Cognitive Science"),
    (29, SCIENCE, 0, 0, "Earth sciences"),
    (34, SCIENCE, 1, 29, "Environmental research"),
    (35, SCIENCE, 1, 29, "Climate research"),
    (59, LOCATION, 0, 0, "International"),
    (20, LOCATION, 0, 0, "Europe"),
    (27, LOCATION, 1, 20, "CERN"),
    (36, LOCATION, 1, 20, "Czech Republic"),
    (37, LOCATION, 2, 36, "Charles University in Prague"),
    (65, LOCATION, 1, 20, "France"),
    (21, LOCATION, 1, 20, "Germany"),
    (26, LOCATION, 2, 21, "Albert Einstein Institute for Gravitational Physics"),
    (38, LOCATION, 2, 21, "Rechenkraft.net e.V"),
    (39, LOCATION, 2, 21, "Hochschule RheinMain University of Applied Sciences"),
    (61, LOCATION, 1, 20, "Holland"),
    (40, LOCATION, 1, 20, "Hungary"),
    (41, LOCATION, 1, 20, "Ireland"),
    (42, LOCATION, 2, 41, "University College Dublin"),
    (43, LOCATION, 1, 20, "Poland"),
    (57, LOCATION, 2, 43, "University of Warsaw"),
    (44, LOCATION, 1, 20, "Russia"),
    (45, LOCATION, 2, 44, "Southwest State University, Russia"),
    (46, LOCATION, 2, 44, "Russian Academy of Science"),
    (30, LOCATION, 1, 20, "Spain"),
    (31, LOCATION, 2, 30, "San Jorge University, Zaragoza, Spain"),
    (47, LOCATION, 2, 30, "Barcelona Biomedical Research Park"),
    (48, LOCATION, 1, 20, "United Kingdom"),
    (49, LOCATION, 2, 48, "Oxford University"),
    (22, LOCATION, 0, 0, "Asia"),
    (50, LOCATION, 1, 22, "China"),
    (17, LOCATION, 0, 0, "Oceania"),
    (18, LOCATION, 1, 17, "Australia"),
    (70, LOCATION, 0, 0, "Africa"),
    (71, LOCATION, 1, 70, "Egypt"),
    (69, LOCATION, 2, 71, "Sinai University"),
    (23, LOCATION, 0, 0, "Americas"),
    (66, LOCATION, 1, 23, "Canada"),
    (24, LOCATION, 1, 23, "United States"),
    (25, LOCATION, 2, 24, "University of California, Berkeley"),
    (28, LOCATION, 2, 24, "University of Washington"),
    (51, LOCATION, 2, 24, "University of Dayton"),
    (52, LOCATION, 2, 24, "Wright State University"),
    (53, LOCATION, 2, 24, "University of Southern California"),
    (54, LOCATION, 2, 24, "California State University Fullerton"),
    (55, LOCATION, 2, 24, "Arizona State University"),
    (56, LOCATION, 2, 24, "University of Illinois"),
    (58, LOCATION, 2, 24, "Rensselaer Polytechnic Institute"),
    (60, LOCATION, 2, 24, "University of North Dakota"),
    (67, LOCATION, 2, 24, "Penn State University"),
    (68, LOCATION, 2, 24, "Shenandoah University"),
)


def _keyword_order():
    """Keywords as the page lists them: each top-level one, then its
    descendants (depth first), per category."""
    children = {}
    for kw in KEYWORDS:
        children.setdefault(kw[3], []).append(kw)

    def walk(kw):
        yield kw
        for child in children.get(kw[0], ()):
            yield from walk(child)
    return [k for top in children.get(0, ()) for k in walk(top)]


def kw_prefs_path(cfg, userid):
    return cfg.project_path("kw_prefs", str(int(userid)))


def read_kw_prefs(cfg, userid):
    """([yes ids], [no ids]) from PROJECT/kw_prefs/USERID (BOINC's read_kw_prefs)."""
    try:
        with open(kw_prefs_path(cfg, userid), encoding="utf-8", errors="replace") as f:
            lines = f.read().split("\n")
    except OSError:
        return [], []

    def ids(line):
        return [int(x) for x in line.split() if x.lstrip("-").isdigit()]
    return ids(lines[0]), ids(lines[1]) if len(lines) > 1 else []


def write_kw_prefs(cfg, userid, yes, no):
    """The file as BOINC's write_kw_prefs: yes ids, newline, no ids, newline."""
    path = kw_prefs_path(cfg, userid)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = "%s.tmp%d" % (path, os.getpid())
    with open(tmp, "w", encoding="ascii") as f:
        f.write("%s\n%s\n" % (" ".join(map(str, yes)), " ".join(map(str, no))))
    os.replace(tmp, path)


# what the form's "as needed" choice sends (an absent choice counts the same)
KW_NEUTRAL_CHOICES = frozenset(("", "0"))


def kw_prefs(ctx):
    """Keywords the volunteer prefers (yes), takes as needed, or never wants."""
    saved = False
    if ctx.req.method == "POST":
        user = ctx.require_action()
        yes, no = [], []
        for kw in KEYWORDS:
            text = _one(ctx.req.form, "radio%d" % kw[0]).strip()
            if text == "1":
                yes.append(kw[0])
            elif text == "-1":
                no.append(kw[0])
            elif text not in KW_NEUTRAL_CHOICES:
                raise PageError(fmt("radio{}: {} is not 1, 0 or -1; nothing was saved.",
                                    kw[0], repr(text)[:40]), title="Preferences not saved")
        try:
            write_kw_prefs(ctx.cfg, user.id, yes, no)
        except OSError as exc:
            raise PageError("Your keyword preferences could not be saved (%s); please tell "
                            "the project." % exc.strerror, "500 Internal Server Error",
                            "Preferences not saved") from None
        saved = True
    else:
        user = ctx.require_login()
    yes, no = read_kw_prefs(ctx.cfg, user.id)
    choice = {k: KW_YES for k in yes}
    choice.update({k: KW_NO for k in no if k not in choice})
    parts = []
    if saved:
        parts.append(notice("ok", "Preferences saved."))
    parts.append(Markup("<p>Choose the science areas and locations you do or don't want to "
                        "support, then click Save at the bottom.</p>"))
    sections = []
    for category, heading in ((SCIENCE, "Science areas"), (LOCATION, "Locations")):
        rows = [Markup("<tr><th></th><th>Prefer</th><th>As needed</th><th>Never</th></tr>")]
        for kw in _keyword_order():
            if kw[1] != category:
                continue
            cells = [fmt('<td><input type="radio" name="radio{}" value="{}"{}></td>', kw[0],
                         value, Markup(" checked") if choice.get(kw[0], KW_MAYBE) == value
                         else Markup("")) for value in (KW_YES, KW_MAYBE, KW_NO)]
            rows.append(fmt("<tr><td>{}{}</td>{}</tr>", Markup("&nbsp;" * 4 * kw[2]),
                            kw[4], join(cells)))
        sections.append(fmt("<h2>{}</h2><table>{}</table>", heading, join(rows)))
    parts.append(fmt('<form method="post" action="kw_prefs.php">{}{}'
                     '<p><button type="submit">Save</button></p></form>',
                     ctx.token_field("kw_prefs.php"), join(sections)))
    return render(ctx, "Science and location preferences", join(parts))


PAGES = {
    "prefs.php": prefs_page,
    "prefs_edit.php": prefs_edit,
    "add_venue.php": add_venue,
    "prefs_remove.php": prefs_remove,
    "prefs_default.php": prefs_default,
    "kw_prefs.php": kw_prefs,
}
