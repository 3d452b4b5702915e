"""Homogeneous redundancy (HR) classes of hosts, and the HR census file
(BOINC's sched/hr.cpp and sched/hr_info.cpp).

An app with homogeneous redundancy (``app.homogeneous_redundancy``, or
config.xml's ``<homogeneous_redundancy>`` for every app) sends all instances
of a workunit to hosts of one class, so numerically fragile results can be
compared bitwise.  A class is ``os + cpu``: the OS part is a multiple of 128,
the CPU part below 128.  HR type 1 ("fine") tells CPU models apart, type 2
("coarse") only vendors (AMD counts as Intel there, as in BOINC).  The
numbers are stored in ``workunit.hr_class``, so they must be BOINC's.

:class:`HrInfo` is BOINC's HR_INFO: how much recent credit (RAC) each class
of each type earns, written by the ``census`` task to ``PROJECT/hr_info.txt``
and read by the feeder with ``<hr_allocate_slots/>`` to share the job array's
slots out among the classes (see :meth:`HrInfo.allocate`).

The scheduler's side (this host's class, the feasibility check) is
boincpy.sched.hr; this module is below both the scheduler and the daemons.
"""

from boincpy.errors import BoincpyError

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
# the census file and the slot allocation (hr_info.cpp)

HR_INFO_FILE = "hr_info.txt"         # in the project directory (BOINC: ../hr_info.txt)
# Classes of each type, as hr_nclasses: every number below MAX_HR_CLASS.
HR_NCLASSES = (0, MAX_HR_CLASS, MAX_HR_CLASS)
# Hosts that count in the census: those earning credit (HR_INFO::scan_db).
CENSUS_HOST_WHERE = "expavg_credit > 1"


class HrInfoError(BoincpyError, ValueError):
    """hr_info.txt is missing a line or has a bad one (the feeder refuses to start)."""


class HrInfo:
    """HR_INFO: RAC per class per type (the census), and the feeder's slot
    quota per class (``max_slots``) with the slots in use (``cur_slots``)."""

    def __init__(self):
        self.rac_per_class = [[0.0] * n for n in HR_NCLASSES]
        self.max_slots = [[0] * n for n in HR_NCLASSES]
        self.cur_slots = [[0] * n for n in HR_NCLASSES]
        self.type_weights = [0.0] * HR_NTYPES
        self.slots_per_type = [0] * HR_NTYPES
        self.type_being_used = [False] * HR_NTYPES

    # -- the census -------------------------------------------------------------

    def add_host(self, host):
        """scan_db for one host row (os_name, p_vendor, p_model, expavg_credit):
        its RAC counts for its class of each type it has one in."""
        fields = (host["os_name"], host["p_vendor"], host["p_model"])
        for t in range(1, HR_NTYPES):
            if hr_unknown_class(*fields, t):
                continue
            c = hr_class(*fields, t)
            if c:
                self.rac_per_class[t][c] += host["expavg_credit"]

    def text(self):
        """The file's text (write_file): per type a header, then 'CLASS RAC' lines."""
        out = []
        for t in range(1, HR_NTYPES):
            out.append("--------- %s ----------\n" % HR_NAMES[t])
            out.extend("%d %f\n" % (c, self.rac_per_class[t][c]) for c in range(HR_NCLASSES[t]))
        return "".join(out)

    @classmethod
    def parse(cls, text):
        """read_file: the census as written by :meth:`text`; HrInfoError if a
        line is missing or not 'CLASS RAC' for the next class."""
        info = cls()
        lines = text.splitlines()
        pos = 0
        for t in range(1, HR_NTYPES):
            if pos >= len(lines):
                raise HrInfoError("unexpected EOF in HR info")
            pos += 1                                    # the type's header
            for c in range(HR_NCLASSES[t]):
                if pos >= len(lines):
                    raise HrInfoError("unexpected EOF in HR info")
                parts = lines[pos].split()
                pos += 1
                try:
                    if len(parts) < 2 or int(parts[0]) != c:
                        raise ValueError
                    info.rac_per_class[t][c] = float(parts[1])
                except ValueError:
                    raise HrInfoError("bad line %r in HR info (expected class %d)"
                                      % (lines[pos - 1], c)) from None
        return info

    # -- the feeder's quota -------------------------------------------------------

    def allocate(self, total_slots, log=None):
        """Share ``total_slots`` among the HR types in use (by their apps'
        weights, ``type_weights``), then within a type: half to jobs not yet
        committed to a class (class 0), the other half to the classes in
        proportion to their RAC -- every class at least one, so a new class
        can get on the board (the sum may then exceed the slots)."""
        weight_total = sum(self.type_weights[1:])
        for t in range(1, HR_NTYPES):
            self.slots_per_type[t] = (int(total_slots * self.type_weights[t] / weight_total)
                                      if weight_total else 0)
        for t in range(1, HR_NTYPES):
            nuncom = self.slots_per_type[t] // 2
            ncom = self.slots_per_type[t] - nuncom
            if log is not None:
                log.debug("type %d: %d total slots" % (t, self.slots_per_type[t]))
                log.debug("type %d uncommitted: allocating %d slots" % (t, nuncom))
            total_rac = sum(self.rac_per_class[t][1:])
            self.max_slots[t][0] = nuncom
            for c in range(1, HR_NCLASSES[t]):
                # no RAC yet: BOINC divides by zero (the class then gets no
                # slot at all); here it gets its one
                n = int(ncom * self.rac_per_class[t][c] / total_rac) if total_rac else 0
                n = max(n, 1)
                self.max_slots[t][c] = n
                if n > 1 and log is not None:
                    log.debug("type %d class %d: allocating %d slots" % (t, c, n))
            self.cur_slots[t] = [0] * HR_NCLASSES[t]

    def accept(self, hr_type, hr_cls, log=None):
        """Whether a job of this type and class may take a slot (then it is
        counted): False once the class has its ``max_slots``."""
        if self.cur_slots[hr_type][hr_cls] >= self.max_slots[hr_type][hr_cls]:
            if log is not None:
                log.debug("skipping job because HR class (%d, %d) full" % (hr_type, hr_cls))
            return False
        self.cur_slots[hr_type][hr_cls] += 1
        return True

    def lines(self):
        """show(): the allocation, one line per type and per class in use."""
        out = []
        for t in range(1, HR_NTYPES):
            out.append("HR type %s: weight %f nslots %d"
                       % (HR_NAMES[t], self.type_weights[t], self.slots_per_type[t]))
            for c in range(HR_NCLASSES[t]):
                if c and self.rac_per_class[t][c] == 0:
                    continue
                out.append("  class %d: rac %f max_slots %d cur_slots %d"
                           % (c, self.rac_per_class[t][c], self.max_slots[t][c],
                              self.cur_slots[t][c]))
        return out


def class_name(hr_cls):
    """'Linux, Intel Core2' for a class number (the ops page's words)."""
    os_names = {NOOS: "No OS", LINUX: "Linux", WINDOWS: "Windows", DARWIN: "Darwin",
                FREEBSD: "FreeBSD", ANDROID: "Android"}
    os_p = hr_cls - hr_cls % 128
    cpu = hr_cls % 128
    return "%s, %s" % (os_names.get(os_p, "OS %d" % os_p), CPU_NAMES.get(cpu, "CPU %d" % cpu))


# hrclass_summary.php's names of the CPU parts
CPU_NAMES = {0: "Unspecified", NOCPU: "No cpu", INTEL: "Intel", AMD: "AMD",
             MACINTOSH: "Macintosh", AMD_ATHLON: "AMD Athlon", AMD_DURON: "AMD Duron",
             AMD_SEMPRON: "AMD Sempron", AMD_OPTERON: "AMD Opteron",
             AMD_ATHLON64: "AMD Athlon 64", AMD_ATHLON_XP: "AMD Athlon XP",
             INTEL_XEON: "Intel Xeon", INTEL_CELERON: "Intel Celeron",
             INTEL_PENTIUM: "Intel Pentium", INTEL_PENTIUM_II: "Intel Pentium II",
             INTEL_PENTIUM_III: "Intel Pentium III", INTEL_PENTIUM_4: "Intel Pentium 4",
             INTEL_PENTIUM_D: "Intel Pentium D", INTEL_PENTIUM_M: "Intel Pentium M",
             AMD_ATHLON_MP: "AMD Athlon MP", AMD_TURION: "AMD Turion",
             INTEL_CORE2: "Intel Core2", ARM: "ARM"}
