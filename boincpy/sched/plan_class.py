"""App-version plan classes: can this host run a version, and how (HOST_USAGE).

Two sources, as in BOINC (sched/sched_customize.cpp ``app_plan``):

* the project's ``plan_class_spec.xml`` (sched/plan_class_spec.cpp): when the
  file exists, it alone defines the plan classes -- a name not in it is
  refused, and a file that can't be read refuses every plan class;
* otherwise BOINC's built-in classes: ``mt``, ``nci``, ``sse3``,
  ``cuda``/``cuda23``/``cuda_fermi``, ``ati``/``ati13amd``/``ati13ati``/``ati14``,
  ``opencl_nvidia_N``/``opencl_intel_gpu_N``/``opencl_apple_gpu_N``,
  ``vbox*``.

:func:`app_plan` returns a :class:`HostUsage` or a :class:`Refusal` whose
``reason`` says why in words (for the "no work" log and message).

The scheduler is a classic CGI: this module imports only ``posix`` and
boincpy's hot-path modules (no ``os``, ``re`` or ``random``); the spec file is
stat()ed once per request and parsed only when present (cached per process by
mtime and size).
"""

import posix     # not os, on a classic CGI's path (boincpy.hot_path.join)

from boincpy import rand
from boincpy.cnum import atoi, strtod
from boincpy.errors import BoincpyError
from boincpy.hot_path import join
from boincpy.xml import parse_bool, xml_unescape
from boincpy.xml.scan import CDATA, TAG, Scanner, leaf_text, leaves
from boincpy.proc_types import (PROC_AMD, PROC_APPLE, PROC_CPU, PROC_INTEL, PROC_NVIDIA,
                                PROC_TYPE_XML)

MEGA = 1024.0 * 1024.0
GPU_NAMES = {PROC_NVIDIA: "an NVIDIA GPU", PROC_AMD: "an AMD/ATI GPU",
             PROC_INTEL: "an Intel GPU", PROC_APPLE: "an Apple GPU"}
SPEC_FILE = "plan_class_spec.xml"


class HostUsage:
    """How a job with a given app version uses the host (BOINC's HOST_USAGE)."""

    __slots__ = ("proc_type", "avg_ncpus", "gpu_usage", "gpu_ram", "peak_flops",
                 "projected_flops", "mem_usage", "cmdline")

    def __init__(self, flops=0.0):
        # sequential_app(): one CPU, no GPU
        if flops <= 0:
            flops = 1e9
        self.proc_type = PROC_CPU
        self.avg_ncpus = 1.0
        self.gpu_usage = 0.0
        self.gpu_ram = 0.0
        self.peak_flops = flops
        self.projected_flops = flops
        self.mem_usage = 0.0
        self.cmdline = ""

    def copy(self):
        u = HostUsage()
        for f in HostUsage.__slots__:
            setattr(u, f, getattr(self, f))
        return u

    def is_sequential(self):
        return self.proc_type == PROC_CPU and self.avg_ncpus == 1

    def resource_type(self):
        """app_version_id of an anonymous-platform job: -2 CPU, -3 NVIDIA ..."""
        return -(2 + self.proc_type)


class Refusal:
    """A plan class said no; ``reason`` is for the operator's log and the user."""

    __slots__ = ("reason",)

    def __init__(self, reason):
        self.reason = reason

    def __bool__(self):
        return False

    def __repr__(self):
        return "<Refusal %s>" % self.reason


class PlanClassSpecError(BoincpyError):
    """plan_class_spec.xml can't be used; the message names file, line and tag."""


# ---------------------------------------------------------------------------
# what plan classes look at

class Gpu:
    """One GPU type from the request's <coprocs> (lib/coproc.cpp parse())."""

    __slots__ = ("proc_type", "type", "count", "peak_flops", "available_ram", "name",
                 "have_cuda", "have_opencl", "have_cal", "cuda_version", "driver_version",
                 "total_global_mem", "cc", "cal_version", "cal_version_num", "cal_target",
                 "local_ram",
                 "atirt_detected", "amdrt_detected", "metal_support",
                 "ocl_global_mem_size", "ocl_local_mem_size", "ocl_version_int",
                 "ocl_driver_revision", "ocl_double_fp_config")

    def __init__(self, proc_type, xml="", count=0, peak_flops=0.0, available_ram=0.0):
        self.proc_type = proc_type
        self.type = PROC_TYPE_XML[proc_type]
        outer, _, ocl = xml.partition("<coproc_opencl>")
        v = _leaves(outer)
        o = _leaves(ocl)
        self.count = count or _int(v.get("count"))
        self.peak_flops = peak_flops or _float(v.get("peak_flops"))
        self.available_ram = available_ram or _float(v.get("available_ram"))
        self.name = v.get("name", "")
        self.have_cuda = _bool(v.get("have_cuda"))
        self.have_opencl = _bool(v.get("have_opencl"))
        self.have_cal = _bool(v.get("have_cal"))
        self.cuda_version = _int(v.get("cudaVersion"))
        self.driver_version = _int(v.get("drvVersion"))
        self.total_global_mem = _float(v.get("totalGlobalMem"))
        self.cc = _int(v.get("major")) * 100 + _int(v.get("minor"))
        self.cal_version = v.get("CALVersion", "")
        self.cal_version_num = _three_part(self.cal_version)
        self.cal_target = _int(v.get("target"))
        self.local_ram = _int(v.get("localRAM")) * MEGA
        self.atirt_detected = _bool(v.get("atirt_detected"))
        self.amdrt_detected = _bool(v.get("amdrt_detected"))
        self.metal_support = _int(v.get("metal_support"))
        _opencl_props(self, o)


class OpenclCpu:
    """One <opencl_cpu_prop> of <host_info>: an OpenCL platform for the CPU."""

    __slots__ = ("platform_vendor", "ocl_global_mem_size", "ocl_local_mem_size",
                 "ocl_version_int", "ocl_driver_revision", "ocl_double_fp_config")

    def __init__(self, xml):
        head, _, info = xml.partition("<opencl_cpu_info>")
        self.platform_vendor = _leaves(head).get("platform_vendor", "")
        _opencl_props(self, _leaves(info))


def _opencl_props(obj, o):
    """OPENCL_DEVICE_PROP's fields plan classes compare, from its leaves."""
    obj.ocl_global_mem_size = _float(o.get("global_mem_size"))
    obj.ocl_local_mem_size = _float(o.get("local_mem_size"))
    obj.ocl_double_fp_config = _int(o.get("double_fp_config"))
    dv = o.get("opencl_device_version", "")
    # "OpenCL 1.2 ..." -> 102
    v = _dotted_ints(dv[7:], 2) if dv.startswith("OpenCL ") else None
    obj.ocl_version_int = v[0] * 100 + v[1] if v else 0
    # the runtime revision: "(1800.8)" at the end of the version string
    p = dv.rfind("(")
    rev = _run_of(dv[p + 1:], "0123456789.") if p >= 0 else ""
    try:
        obj.ocl_driver_revision = int(float(rev) * 100 + 0.5) if rev else 0
    except ValueError:
        obj.ocl_driver_revision = 0


def _run_of(s, chars):
    """The longest prefix of ``s`` made of ``chars``."""
    n = 0
    while n < len(s) and s[n] in chars:
        n += 1
    return s[:n]


def _dotted_ints(s, count):
    """The ``count`` integers "N.N.N" at the start of ``s`` (re's
    ``(\\d+)\\.(\\d+)...`` match), or None; no re: a GPU's request doesn't load it."""
    out = []
    for i in range(count):
        digits = _run_of(s, "0123456789")
        if not digits:
            return None
        out.append(int(digits))
        s = s[len(digits):]
        if i < count - 1:
            if s[:1] != ".":
                return None
            s = s[1:]
    return out


def _leaves(xml):
    """{tag: text} of a GPU's or an OpenCL platform's leaves, the first of
    each; ``<tag/>`` reads as "1"."""
    return {tag: "1" if text is None else text for tag, text in leaves(xml).items()}


def _int(s):
    return atoi(s)


def _float(s):
    """A spec's number; one that isn't a finite number counts as absent (0)."""
    x = strtod(s) if s else None
    return 0.0 if x is None else x


def _bool(s):
    return bool(parse_bool(s))


def _three_part(s):
    """ati_version_int: "1.4.1848" -> 10041848; 0 if not three numbers."""
    v = _dotted_ints((s or "").lstrip(), 3)
    if not v:
        return 0
    return v[0] * 10000000 + v[1] * 10000 + v[2]


class PlanHost:
    """The request as plan classes see it (SCHEDULER_REQUEST + the parts of
    WORK_REQ they read).  ``host`` is request.HostInfo (or anything with its
    fields); ``resources`` the request's ResourceRequest list."""

    def __init__(self, host, resources=(), core_client_version=0, core_client_major=0,
                 user_id=0, effective_ncpus=1, usable_ram=0.0, capped_fpops=None,
                 primary_platform="", project_prefs="", dont_use_docker=False,
                 dont_use_wsl=False):
        self.host = host
        self.core_client_version = core_client_version
        self.core_client_major = core_client_major
        self.user_id = user_id
        self.effective_ncpus = effective_ncpus
        self.usable_ram = usable_ram
        self.p_fpops = getattr(host, "p_fpops", 0.0) or 0.0
        self.capped_fpops = self.p_fpops if capped_fpops is None else capped_fpops
        self.primary_platform = primary_platform
        self.project_prefs = project_prefs or ""     # already reduced to the host's venue
        self.dont_use_docker = dont_use_docker
        self.dont_use_wsl = dont_use_wsl
        self.messages = []                            # add_no_work_message() texts
        # GPU_REQUIREMENTS per processor type: [min_ram, opt_ram, min_driver, opt_driver]
        self.gpu_requirements = {}
        self._resources = list(resources)
        self._gpus = {}

    def gpu(self, proc_type):
        """The host's GPUs of one type (a Gpu with count 0 if it has none)."""
        g = self._gpus.get(proc_type)
        if g is None:
            rr = next((r for r in self._resources if r.proc_type == proc_type), None)
            if rr is None:
                g = Gpu(proc_type)
            else:
                g = Gpu(proc_type, rr.xml or "", rr.count, rr.peak_flops,
                        getattr(rr, "available_ram", 0.0))
            self._gpus[proc_type] = g
        return g

    def opencl_cpus(self):
        """The host's OpenCL CPU platforms (HOST::opencl_cpu_prop)."""
        return [OpenclCpu(x) for x in getattr(self.host, "opencl_cpu_props", ())]

    def gpus(self):
        return [self.gpu(r.proc_type) for r in self._resources if r.proc_type]

    def require(self, proc_type, driver_version, ram):
        """GPU_REQUIREMENTS::update: what the project's GPU versions need, for
        the "upgrade your driver" / "more video RAM" messages."""
        r = self.gpu_requirements.setdefault(proc_type, [0.0, 0.0, 0, 0])
        if not r[2] or driver_version < r[2]:
            r[2] = driver_version
        r[3] = max(r[3], driver_version)
        if not r[0] or ram < r[0]:
            r[0] = ram
        r[1] = max(r[1], ram)

    def message(self, text):
        if text not in self.messages:
            self.messages.append(text)


def gpu_messages(ph, have_apps, anonymous=False):
    """send_gpu_messages(): [(priority, text)] about the host's GPUs -- an old
    Mac client, a GPU-only project, too little video RAM, an old driver.
    ``have_apps``: the job array's have_apps_for_proc_type."""
    if anonymous:
        return []
    out = []
    h = ph.host
    names = ("CPU", "NVIDIA GPU", "AMD/ATI GPU", "Intel GPU", "Apple GPU")
    if ph.gpu(PROC_NVIDIA).count and have_apps[PROC_NVIDIA] \
            and "Darwin" in (h.os_name or "") and ph.core_client_version < 61028:
        out.append(("notice", "A newer version of BOINC is needed to use your NVIDIA GPU; "
                              "please upgrade to the current version"))
    gpu_types = [pt for pt in range(1, 5) if have_apps[pt]]
    if not have_apps[PROC_CPU] and gpu_types \
            and not any(ph.gpu(pt).count for pt in gpu_types):
        out.append(("notice", "An %s GPU is required to run tasks for this project"
                    % " or ".join(names[pt] for pt in gpu_types)))
    for pt in range(1, 5):
        g = ph.gpu(pt)
        if not g.count or not have_apps[pt]:
            continue
        ram, version = {PROC_NVIDIA: (g.total_global_mem, g.driver_version),
                        PROC_AMD: (g.local_ram, g.cal_version_num)}.get(
                            pt, (g.ocl_global_mem_size, 0))
        min_ram, opt_ram, min_drv, opt_drv = ph.gpu_requirements.get(pt, (0, 0, 0, 0))
        if ram < min_ram:
            out.append(("low", "A minimum of %d MB (preferably %d MB) of video RAM is needed "
                               "to process tasks using your computer's %s"
                        % (int(min_ram / MEGA), int(opt_ram / MEGA), names[pt])))
        elif version and version < min_drv:
            out.append(("notice", "%s: Upgrade to the latest driver to process tasks using "
                                  "your computer's GPU" % names[pt]))
        elif version and version < opt_drv:
            out.append(("low", "%s: Upgrade to the latest driver to use all of this "
                               "project's GPU applications" % names[pt]))
    return out


def coproc_perf(cpu_flops, gpu_flops, cpu_frac):
    """(speed, CPU usage) of a job alternating between CPU and GPU
    (sched_customize.h coproc_perf)."""
    y = cpu_frac * gpu_flops + (1 - cpu_frac) * cpu_flops
    return cpu_flops * gpu_flops / y, cpu_frac * gpu_flops / y


def _has_vm_accel(host):
    f = host.p_features or ""
    return ("vmx" in f or "svm" in f) and not host.p_vm_extensions_disabled


def _is_64b_platform(name):
    return "64" in name


# ---------------------------------------------------------------------------
# plan_class_spec.xml

class PlanClassSpec:
    """One <plan_class> of plan_class_spec.xml (PLAN_CLASS_SPEC)."""

    def __init__(self):
        for tag, (kind, default) in _SPEC_TAGS.items():
            setattr(self, _attr(tag), list(default) if isinstance(default, list) else default)
        self.name = ""
        self.line = 0

    @property
    def wu_restricted(self):
        return bool(self.min_wu_id or self.max_wu_id or self.min_batch or self.max_batch)


def _attr(tag):
    return {"cpu_feature": "cpu_features", "exclude_vbox_version": "exclude_vbox_versions",
            "mem_usage_base_mb": "mem_usage_base", "mem_usage_per_cpu_mb":
            "mem_usage_per_cpu"}.get(tag, tag)


# tag -> (kind, default); every tag PLAN_CLASS_SPEC::parse reads
_SPEC_TAGS = {
    "name": ("str", ""), "gpu_type": ("str", ""),
    "cuda": ("bool", False), "cal": ("bool", False), "opencl": ("bool", False),
    "virtualbox": ("bool", False), "wsl": ("bool", False), "docker": ("bool", False),
    "min_boinc_wsl_distro_version": ("int", 0), "is64bit": ("bool", False),
    "cpu_feature": ("strlist", []), "min_ncpus": ("float", 0.0), "max_threads": ("int", 1),
    "mem_usage_base_mb": ("mb", 0.0), "mem_usage_per_cpu_mb": ("mb", 0.0),
    "nthreads_cmdline": ("bool", False), "projected_flops_scale": ("float", 1.0),
    "os_regex": ("regex", None), "cpu_vendor_regex": ("regex", None),
    "cpu_model_regex": ("regex", None),
    "user_id": ("int", 0), "infeasible_random": ("float", 0.0),
    "min_os_version": ("float", 0.0), "max_os_version": ("float", 0.0),
    "min_android_version": ("int", 0), "max_android_version": ("int", 0),
    "min_libc_version": ("int", 0),
    "project_prefs_tag": ("str", ""), "project_prefs_regex": ("regex", None),
    "project_prefs_default_true": ("bool", False), "avg_ncpus": ("float", 0.0),
    "min_core_client_version": ("int", 0), "max_core_client_version": ("int", 0),
    "cpu_frac": ("float", 0.1), "min_gpu_ram_mb": ("float", 0.0),
    "gpu_ram_used_mb": ("float", 0.0), "gpu_peak_flops_scale": ("float", 1.0),
    "ngpus": ("float", 1.0), "min_gpu_peak_flops": ("float", 0.0),
    "max_gpu_peak_flops": ("float", 0.0), "min_driver_version": ("int", 0),
    "max_driver_version": ("int", 0), "gpu_utilization_tag": ("str", ""),
    "need_ati_libs": ("bool", False), "need_amd_libs": ("bool", False),
    "without_opencl": ("bool", False), "min_cal_target": ("int", 0),
    "max_cal_target": ("int", 0), "min_nvidia_compcap": ("int", 0),
    "max_nvidia_compcap": ("int", 0), "min_cuda_version": ("int", 0),
    "max_cuda_version": ("int", 0), "min_opencl_version": ("int", 0),
    "max_opencl_version": ("int", 0), "min_opencl_driver_revision": ("int", 0),
    "max_opencl_driver_revision": ("int", 0), "double_precision_fp": ("bool", False),
    "min_metal_support": ("int", 0), "gpu_type_regex": ("regex", None),
    "min_vbox_version": ("int", 0), "max_vbox_version": ("int", 0),
    "exclude_vbox_version": ("intlist", []), "vm_accel_required": ("bool", False),
    "min_wu_id": ("int", 0), "max_wu_id": ("int", 0),
    "min_batch": ("int", 0), "max_batch": ("int", 0),
}
# gpu_type values a request can satisfy (the GPU types BOINC schedules)
_GPU_TYPES = {"nvidia": PROC_NVIDIA, "amd": PROC_AMD, "ati": PROC_AMD,
              "apple": PROC_APPLE, "apple_gpu": PROC_APPLE}


def parse_specs(text, path=SPEC_FILE):
    """plan_class_spec.xml text -> {name: PlanClassSpec}.

    Raises PlanClassSpecError naming ``path``, the line and the tag for
    anything BOINC's parser would fail on, and for what it would silently
    ignore (unknown tags, text that is not a number, unknown gpu_type).
    """
    specs = {}
    sc = Scanner(text.encode("utf-8"))

    def fail(pos, msg):
        raise PlanClassSpecError("%s line %d: %s" % (path, sc.line(pos), msg))

    def token():
        # BOINC's XML_PARSER tokens, without <?xml ...?> and <!DOCTYPE ...>
        while True:
            tok = sc.next()
            if tok is None or tok[0] != TAG or tok[1][:1] not in ("?", "!"):
                return tok

    def text_of(tok):
        return tok[1].decode("utf-8", "replace")

    tok = token()
    if tok is None or tok[0] != TAG or tok[1] != "plan_classes":
        fail(tok[2] if tok else 0, "expected <plan_classes>")
    while True:
        tok = token()
        if tok is None:
            fail(sc.n, "missing </plan_classes>")
        kind, name, start = tok
        if kind != TAG:
            fail(start, "unexpected text %r" % text_of(tok)[:40])
        if name == "/plan_classes":
            break
        if name != "plan_class":
            fail(start, "unexpected <%s> in <plan_classes>" % name)
        spec = PlanClassSpec()
        spec.line = sc.line(start)
        while True:
            tok = token()
            if tok is None:
                fail(sc.n, "missing </plan_class>")
            kind, tag, start = tok
            if kind != TAG:
                fail(start, "unexpected text %r" % text_of(tok)[:40])
            if tag[:1] == "/":
                if tag != "/plan_class":
                    fail(start, "unexpected <%s>" % tag)
                break
            empty = tag.endswith("/")
            tag = tag.rstrip("/")
            if tag not in _SPEC_TAGS:
                fail(start, "unknown tag <%s> in <plan_class>" % tag)
            value = ""
            if not empty:
                tok = token()
                if tok is not None and tok[0] != TAG:
                    value = text_of(tok) if tok[0] == CDATA else xml_unescape(text_of(tok))
                    tok = token()
                if tok is None or tok[0] != TAG or tok[1] != "/" + tag:
                    fail(start, "<%s> is not closed by </%s>" % (tag, tag))
            _set_field(spec, tag, value.strip(), lambda msg: fail(start, msg))
        if not spec.name:
            fail(start, "a <plan_class> has no <name>")
        if spec.name in specs:
            fail(start, "plan class '%s' is defined twice" % spec.name)
        gt = spec.gpu_type
        if gt and gt not in _GPU_TYPES and not gt.startswith("intel"):
            fail(start, "plan class '%s': unknown <gpu_type> '%s' (BOINC schedules "
                 "nvidia, amd/ati, intel_gpu, apple_gpu)" % (spec.name, gt))
        specs[spec.name] = spec
    tok = token()
    if tok is not None:
        fail(tok[2], "text after </plan_classes>")
    return specs


def _finite(text, scale=1):
    """A spec's number times ``scale``: finite, else ValueError (reported with the tag)."""
    x = strtod(text)
    if x is None or abs(x * scale) == float("inf"):
        raise ValueError(text)
    return x * scale


def _set_field(spec, tag, value, fail):
    import re   # here: only a spec file's tests need it (~7 ms for a CGI)
    kind, _ = _SPEC_TAGS[tag]
    attr = _attr(tag)
    try:
        if kind == "str":
            setattr(spec, attr, value)
        elif kind == "strlist":
            # matched against the host's " features " lower-cased; the spec's
            # word is taken as written, as BOINC does ("AVX" never matches)
            getattr(spec, attr).append(" %s " % value)
        elif kind == "bool":
            setattr(spec, attr, value == "" or int(value) != 0)
        elif kind == "int":
            setattr(spec, attr, int(value))
        elif kind == "intlist":
            getattr(spec, attr).append(int(value))
        elif kind == "float":
            setattr(spec, attr, _finite(value))
        elif kind == "mb":
            setattr(spec, attr, _finite(value, MEGA))
        elif kind == "regex":
            setattr(spec, attr, re.compile(value))
    except ValueError:
        fail("<%s> must be %s, not %r" % (tag, {"bool": "0 or 1", "int": "an integer",
                                               "intlist": "an integer"}.get(kind, "a number"),
                                         value))
    except re.error as e:
        fail("<%s>: bad regular expression %r: %s" % (tag, value, e))


_cache = {}      # path -> (mtime, size, specs or PlanClassSpecError)


def load_specs(project_dir):
    """The project's plan classes: None when it has no plan_class_spec.xml,
    else {name: spec}; a bad file gives a PlanClassSpecError (returned, not
    raised, so the caller logs it once and refuses).  Cached by mtime/size."""
    path = join(project_dir, SPEC_FILE)
    try:
        st = posix.stat(path)
    except OSError:
        return None
    hit = _cache.get(path)
    if hit is not None and hit[0] == st.st_mtime_ns and hit[1] == st.st_size:
        return hit[2]
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            specs = parse_specs(f.read(), path)
    except PlanClassSpecError as e:
        specs = e
    except OSError as e:
        specs = PlanClassSpecError("%s: can't read: %s" % (path, e))
    _cache[path] = (st.st_mtime_ns, st.st_size, specs)
    return specs


def os_version_num(os_name, os_version):
    """A number for comparing OS versions (plan_class_spec.cpp os_version_num)."""
    import re   # here: only a spec file's tests need it (~7 ms for a CGI)
    if "Darwin" in os_name or "Android" in os_name:
        m = re.match(r"(\d+)\.(\d+)\.(\d+)", os_version)
        return 10000.0 * int(m.group(1)) + 100.0 * int(m.group(2)) + int(m.group(3)) \
            if m else 0.0
    if "Windows" in os_name:
        p = os_version.rfind("(")
        m = re.match(r"\((\d+)\.(\d+)\.(\d+)\.(\d+)\)", os_version[p:]) if p >= 0 else None
        if m:
            a, b, c, d = (int(x) for x in m.groups())
            return 100000000.0 * a + 1000000.0 * b + 100.0 * c + d
        return 0.0
    if "Linux" in os_name:
        p = os_version.find("[")
        m = re.match(r"(\d+)\.(\d+)\.(\d+)", os_version[p + 1:] if p >= 0 else os_version)
        if m:
            return 10000.0 * int(m.group(1)) + 100.0 * int(m.group(2)) + int(m.group(3))
    return 0.0


def _libc_version(os_version):
    import re   # here: only a spec file's tests need it (~7 ms for a CGI)
    m = re.search(r"\|libc (\d+)\.(\d+)", os_version)
    return int(m.group(1)) * 100 + int(m.group(2)) if m else 0


def _android_version(os_version):
    import re   # here: only a spec file's tests need it (~7 ms for a CGI)
    m = re.search(r"\(Android (\d+)(?:\.(\d+))?(?:\.(\d+))?", os_version)
    if not m:
        return 0
    return int(m.group(1)) * 10000 + int(m.group(2) or 0) * 100 + int(m.group(3) or 0)


def _pref_value(prefs, tag):
    return leaf_text(prefs or "", tag)


def wu_infeasible(spec, wu):
    """A reason if this job's id or batch is outside the plan class's range."""
    wid, batch = wu.get("id", 0), wu.get("batch", 0)
    if spec.min_wu_id and wid < spec.min_wu_id:
        return "job #%d is older than plan class '%s' allows (min_wu_id %d)" % (
            wid, spec.name, spec.min_wu_id)
    if spec.max_wu_id and wid > spec.max_wu_id:
        return "job #%d is newer than plan class '%s' allows (max_wu_id %d)" % (
            wid, spec.name, spec.max_wu_id)
    if spec.min_batch and batch < spec.min_batch:
        return "batch %d is older than plan class '%s' allows (min_batch %d)" % (
            batch, spec.name, spec.min_batch)
    if spec.max_batch and batch > spec.max_batch:
        return "batch %d is newer than plan class '%s' allows (max_batch %d)" % (
            batch, spec.name, spec.max_batch)
    return None


def _ocl_check(spec, g):
    """PLAN_CLASS_SPEC::opencl_check: a reason, or None."""
    v = g.ocl_version_int
    if spec.min_opencl_version and v and spec.min_opencl_version > v:
        return "needs OpenCL version %d, the GPU has %d" % (spec.min_opencl_version, v)
    if spec.max_opencl_version and v and spec.max_opencl_version < v:
        return "needs OpenCL version %d or lower, the GPU has %d" % (spec.max_opencl_version, v)
    if spec.min_opencl_driver_revision and v \
            and spec.min_opencl_driver_revision > g.ocl_driver_revision:
        return "needs OpenCL driver revision %d, the GPU has %d" % (
            spec.min_opencl_driver_revision, g.ocl_driver_revision)
    if spec.max_opencl_driver_revision and v \
            and spec.max_opencl_driver_revision < g.ocl_driver_revision:
        return "needs OpenCL driver revision %d or lower, the GPU has %d" % (
            spec.max_opencl_driver_revision, g.ocl_driver_revision)
    if spec.double_precision_fp and not g.ocl_double_fp_config:
        return "needs double-precision OpenCL"
    return None


def check_spec(spec, ph, wu=None):
    """PLAN_CLASS_SPEC::check: HostUsage, or Refusal naming the reason."""
    r = _check_spec(spec, ph, wu)
    if isinstance(r, str):
        return Refusal("plan class '%s' %s" % (spec.name, r))
    return r


def _check_spec(s, ph, wu):
    """The host usage of a plan_class_spec.xml class on this host, or why the
    host can't use it: the host and client checks, then virtual machines and
    containers, project preferences, the GPU, and the GPU's or CPUs' usage."""
    why = _check_host(s, ph, wu) or _check_vm(s, ph) or _check_prefs(s, ph)
    if why:
        return why
    found = _find_gpu(s, ph)
    if isinstance(found, str):
        return found
    g, gpu_ram, driver_version = found
    hu = HostUsage(ph.p_fpops)
    if g is not None:
        return _spec_gpu_usage(s, ph, hu, g, gpu_ram, driver_version)
    return _spec_cpu_usage(s, ph, hu)


def _check_host(s, ph, wu):
    """Why the host, its client or the job rule the class out (None: they don't)."""
    h = ph.host
    if s.infeasible_random and rand.drand() < s.infeasible_random:
        return "refused this request at random (infeasible_random)"
    if s.user_id and ph.user_id != s.user_id:
        return "is only for user #%d" % s.user_id
    if s.wu_restricted and wu is not None:
        why = wu_infeasible(s, wu)
        if why:
            return "can't run this job: " + why
    if s.cpu_features:
        have = " %s " % (h.p_features or "")
        p = (h.p_model or "").rfind("[")
        if p >= 0:
            have += " %s " % h.p_model[p + 1:].partition("]")[0]
        have = have.lower()
        for f in s.cpu_features:
            if f not in have:
                return "needs CPU feature '%s'" % f.strip()
    if s.min_ncpus and ph.effective_ncpus < s.min_ncpus:
        return "needs %g CPUs, host has %d" % (s.min_ncpus, ph.effective_ncpus)
    if s.os_regex is not None and not s.os_regex.search(h.os_version or ""):
        return "doesn't accept OS version '%s'" % h.os_version
    if s.min_os_version or s.max_os_version:
        v = os_version_num(h.os_name or "", h.os_version or "")
        if not v:
            return "can't determine a numerical OS version from '%s'" % h.os_version
        if s.min_os_version and v < s.min_os_version:
            return "needs OS version %.0f, host has %.0f" % (s.min_os_version, v)
        if s.max_os_version and v > s.max_os_version:
            return "needs OS version %.0f or lower, host has %.0f" % (s.max_os_version, v)
    if s.min_android_version or s.max_android_version:
        if (h.os_name or "").lower() != "android":
            return "needs Android"
        v = _android_version(h.os_version or "")
        if not v and s.min_android_version > 0:
            return "can't determine the Android version"
        if s.min_android_version and v < s.min_android_version:
            return "needs Android %d, host has %d" % (s.min_android_version, v)
        if s.max_android_version and v > s.max_android_version:
            return "needs Android %d or lower, host has %d" % (s.max_android_version, v)
    if s.min_libc_version:
        v = _libc_version(h.os_version or "")
        if v < s.min_libc_version:
            return "needs libc %d, host has %d" % (s.min_libc_version, v)
    if s.cpu_vendor_regex is not None and not s.cpu_vendor_regex.search(h.p_vendor or ""):
        return "doesn't accept CPU vendor '%s'" % h.p_vendor
    if s.cpu_model_regex is not None and not s.cpu_model_regex.search(h.p_model or ""):
        return "doesn't accept CPU model '%s'" % h.p_model
    ccv = ph.core_client_version
    if s.min_core_client_version and ccv < s.min_core_client_version:
        ph.message("A newer BOINC may be required for some tasks.")
        return "needs client version %d, host has %d" % (s.min_core_client_version, ccv)
    if s.max_core_client_version and ccv > s.max_core_client_version:
        return "needs client version %d or lower, host has %d" % (
            s.max_core_client_version, ccv)
    return None


def _check_vm(s, ph):
    """Why VirtualBox, WSL or Docker rule the class out (None: they don't)."""
    h = ph.host
    ccv = ph.core_client_version
    if s.virtualbox:
        why = _vbox_basics(ph)
        if why:
            return why
        vbv = _three_part_tuple(h.virtualbox_version)
        if vbv is None:
            return "can't parse VirtualBox version '%s'" % h.virtualbox_version
        v = vbv[0] * 10000 + vbv[1] * 100 + vbv[2]
        if s.min_vbox_version and v < s.min_vbox_version:
            return "needs VirtualBox %d, host has %d" % (s.min_vbox_version, v)
        if s.max_vbox_version and v > s.max_vbox_version:
            return "needs VirtualBox %d or lower, host has %d" % (s.max_vbox_version, v)
        if v in s.exclude_vbox_versions:
            return "excludes VirtualBox %d" % v
        if s.vm_accel_required and not _has_vm_accel(h):
            return "needs VM acceleration (vmx/svm)"
        if _is_64b_platform(ph.primary_platform) != bool(s.is64bit):
            return "is%s for 64-bit platforms; host's is %s" % (
                "" if s.is64bit else " not", ph.primary_platform)
    if s.wsl:
        if ph.dont_use_wsl:
            ph.message("Client config does not allow using WSL")
            return "needs WSL, which the client's config forbids"
        # requests' <wsl> distro lists aren't parsed by this scheduler
        ph.message("No WSL distros found")
        return "needs a WSL distro (this scheduler doesn't read the client's WSL list)"
    if s.docker:
        if ph.dont_use_docker:
            ph.message("Client config does not allow using Docker")
            return "needs Docker, which the client's config forbids"
        if "Windows" in (h.os_name or ""):
            ph.message("No usable WSL distros found")
            return "needs Docker in WSL (this scheduler doesn't read the client's WSL list)"
        if not getattr(h, "docker_version", ""):
            ph.message("Docker not present")
            return "needs Docker"
        if "Darwin" in (h.os_name or "") and ccv < 80206:
            ph.message("Docker jobs need 8.2.6+ client")
            return "needs client 8.2.6 for Docker on macOS"
    return None


def _can_use_multicore(s, ph):
    """A VirtualBox class runs one thread on a host without VM acceleration."""
    return not (s.virtualbox and s.max_threads > 1 and not _has_vm_accel(ph.host))


def _check_prefs(s, ph):
    """Why the project preference that selects the class rules it out (None:
    it doesn't)."""
    if s.project_prefs_regex is not None and s.project_prefs_tag:
        v = _pref_value(ph.project_prefs, s.project_prefs_tag)
        if (v is not None and not s.project_prefs_regex.search(v)) \
                or (v is None and not s.project_prefs_default_true):
            return "is not selected by the project preference <%s>" % s.project_prefs_tag
    return None


def _gpu_utilization(s, ph):
    """The share of the GPU the user's project preference gives a job (1: all)."""
    gpu_utilization = 1.0
    if s.gpu_utilization_tag:
        v = _float(_pref_value(ph.project_prefs, s.gpu_utilization_tag))
        if v:
            gpu_utilization = v
    return gpu_utilization


def _find_gpu(s, ph):
    """(the GPU the class uses or None, its RAM, its driver version), after
    the GPU's own and OpenCL's checks; or why the host has no such GPU."""
    g = None
    gpu_ram = 0.0
    driver_version = 0
    gt = s.gpu_type
    if gt in ("amd", "ati"):
        g = ph.gpu(PROC_AMD)
        if not g.count:
            return "needs an AMD/ATI GPU"
        _spec_requirements(s, ph, PROC_AMD)
        if s.need_ati_libs:
            if not g.atirt_detected:
                return "needs ATI libraries"
        elif s.need_amd_libs and not g.amdrt_detected:
            return "needs AMD libraries"
        if s.without_opencl and g.have_opencl:
            return "is for GPUs without OpenCL"
        if s.min_cal_target and g.cal_target < s.min_cal_target:
            return "needs CAL target %d, GPU has %d" % (s.min_cal_target, g.cal_target)
        if s.max_cal_target and g.cal_target > s.max_cal_target:
            return "needs CAL target %d or lower, GPU has %d" % (s.max_cal_target, g.cal_target)
        gpu_ram = g.ocl_global_mem_size
        if g.have_cal:
            if _three_part_tuple(g.cal_version) is None:
                return "can't parse the CAL version '%s'" % g.cal_version
            driver_version = g.cal_version_num
    elif gt == "nvidia":
        g = ph.gpu(PROC_NVIDIA)
        if not g.count:
            return "needs an NVIDIA GPU"
        driver_version = g.driver_version
        _spec_requirements(s, ph, PROC_NVIDIA)
        if s.min_nvidia_compcap and s.min_nvidia_compcap > g.cc:
            return "needs compute capability %d, GPU has %d" % (s.min_nvidia_compcap, g.cc)
        if s.max_nvidia_compcap and s.max_nvidia_compcap < g.cc:
            return "needs compute capability %d or lower, GPU has %d" % (
                s.max_nvidia_compcap, g.cc)
        if s.cuda:
            if s.min_cuda_version and s.min_cuda_version > g.cuda_version:
                return "needs CUDA version %d, GPU has %d" % (s.min_cuda_version, g.cuda_version)
            if s.max_cuda_version and s.max_cuda_version < g.cuda_version:
                return "needs CUDA version %d or lower, GPU has %d" % (
                    s.max_cuda_version, g.cuda_version)
        gpu_ram = g.total_global_mem
    elif gt.startswith("intel"):
        g = ph.gpu(PROC_INTEL)
        if not g.count:
            return "needs an Intel GPU"
        if s.min_gpu_ram_mb:
            ph.require(PROC_INTEL, 0, s.min_gpu_ram_mb * MEGA)
    elif gt in ("apple", "apple_gpu"):
        g = ph.gpu(PROC_APPLE)
        if not g.count:
            return "needs an Apple GPU"
        if s.min_gpu_ram_mb:
            ph.require(PROC_APPLE, 0, s.min_gpu_ram_mb * MEGA)
        if s.min_metal_support and g.metal_support < s.min_metal_support:
            return "needs Metal support %d, GPU has %d" % (s.min_metal_support, g.metal_support)
    elif s.gpu_type_regex is not None:
        g = next((x for x in ph.gpus() if x.count and s.gpu_type_regex.search(x.type)), None)
        if g is None:
            return "needs a GPU whose type matches <gpu_type_regex>"

    if s.opencl:
        if g is not None:
            if not g.have_opencl:
                return "needs OpenCL on the GPU"
            why = _ocl_check(s, g)
            if why:
                return why
            gpu_ram = g.ocl_global_mem_size
        else:
            # an OpenCL CPU version: any of the host's CPU platforms that passes
            cpus = ph.opencl_cpus()
            if not any(_ocl_check(s, c) is None for c in cpus):
                return ("needs OpenCL for the CPU; no OpenCL CPU platform of the host "
                        "qualifies" if cpus else "needs OpenCL for the CPU")
    return g, gpu_ram, driver_version


def _spec_gpu_usage(s, ph, hu, g, gpu_ram, driver_version):
    """``hu`` filled in for a GPU version, or why the GPU falls short."""
    gpu_utilization = _gpu_utilization(s, ph)
    if s.min_gpu_ram_mb and s.min_gpu_ram_mb * MEGA > gpu_ram:
        return "needs %.0f MB of GPU RAM, GPU has %.0f MB" % (s.min_gpu_ram_mb,
                                                              gpu_ram / MEGA)
    if s.min_driver_version and driver_version and s.min_driver_version > driver_version:
        return "needs driver version %d, GPU has %d" % (abs(s.min_driver_version),
                                                       driver_version)
    if s.max_driver_version and driver_version and s.max_driver_version < driver_version:
        return "needs driver version %d or lower, GPU has %d" % (
            abs(s.max_driver_version), driver_version)
    hu.gpu_ram = (s.gpu_ram_used_mb or s.min_gpu_ram_mb) * MEGA
    if s.ngpus < 0:
        if not hu.gpu_ram or not gpu_ram:
            return "has ngpus < 0 but no GPU RAM figure to divide"
        gpu_usage = (int(gpu_ram / hu.gpu_ram) * hu.gpu_ram) / gpu_ram
    elif s.ngpus > 0:
        gpu_usage = s.ngpus * gpu_utilization
    else:
        gpu_usage = gpu_utilization
    if g.peak_flops == 0:
        hu.avg_ncpus = s.cpu_frac
    else:
        if s.min_gpu_peak_flops and g.peak_flops < s.min_gpu_peak_flops:
            return "needs GPU peak FLOPS %g, GPU has %g" % (s.min_gpu_peak_flops,
                                                             g.peak_flops)
        if s.max_gpu_peak_flops and g.peak_flops > s.max_gpu_peak_flops:
            return "needs GPU peak FLOPS at most %g, GPU has %g" % (
                s.max_gpu_peak_flops, g.peak_flops)
        hu.projected_flops, hu.avg_ncpus = coproc_perf(
            ph.capped_fpops, s.gpu_peak_flops_scale * gpu_usage * g.peak_flops, s.cpu_frac)
        hu.projected_flops *= s.projected_flops_scale
        if s.avg_ncpus:
            hu.avg_ncpus = s.avg_ncpus
        hu.peak_flops = (s.gpu_peak_flops_scale * gpu_usage * g.peak_flops
                         + hu.avg_ncpus * ph.capped_fpops)
    hu.proc_type = g.proc_type
    hu.gpu_usage = gpu_usage
    return hu


def _spec_cpu_usage(s, ph, hu):
    """``hu`` filled in for a CPU version (threads, memory), or why the RAM is short."""
    if s.avg_ncpus:
        hu.avg_ncpus = s.avg_ncpus
    elif _can_use_multicore(s, ph):
        hu.avg_ncpus = float(min(s.max_threads, ph.effective_ncpus))
        if s.mem_usage_per_cpu:
            min_ncpus = s.min_ncpus or 1
            seq = s.mem_usage_base + min_ncpus * s.mem_usage_per_cpu
            if seq > ph.usable_ram:
                return "needs %.0f MB of RAM, host has %.0f MB usable" % (
                    seq / MEGA, ph.usable_ram / MEGA)
            n = int((ph.usable_ram - s.mem_usage_base) / s.mem_usage_per_cpu)
            if n < hu.avg_ncpus:
                hu.avg_ncpus = float(n)
            hu.mem_usage = s.mem_usage_base + hu.avg_ncpus * s.mem_usage_per_cpu
            hu.cmdline += " --memory_size_mb %.0f" % (hu.mem_usage / MEGA)
    else:
        hu.avg_ncpus = 1.0
    if s.nthreads_cmdline:
        hu.cmdline += " --nthreads %d" % int(hu.avg_ncpus)
    hu.peak_flops = ph.capped_fpops * hu.avg_ncpus
    hu.projected_flops = ph.capped_fpops * hu.avg_ncpus * s.projected_flops_scale
    return hu


def _spec_requirements(s, ph, pt):
    if s.min_gpu_ram_mb:
        ph.require(pt, 0, s.min_gpu_ram_mb * MEGA)
    if s.min_driver_version:
        ph.require(pt, abs(s.min_driver_version), 0)


def _three_part_tuple(s):
    v = _dotted_ints((s or "").lstrip(), 3)
    return tuple(v) if v else None


def _vbox_basics(ph):
    h = ph.host
    if ph.core_client_major < 7:
        ph.message("BOINC client 7.0+ required for Virtualbox jobs")
        return "needs BOINC client 7.0+"
    if not h.virtualbox_version:
        ph.message("VirtualBox is not installed")
        return "needs VirtualBox"
    if "unusable" in h.virtualbox_version:
        ph.message("VirtualBox is not usable")
        return "needs a usable VirtualBox"
    return None


# ---------------------------------------------------------------------------
# BOINC's built-in plan classes (sched_customize.cpp)

# (min compute capability, max (exclusive), min CUDA version, min driver,
#  min RAM, GPUs, CPU fraction, FLOPS scale)
_CUDA = {
    "cuda_fermi": (200, 0, 3000, 19500, 384 * MEGA, 1, .01, .22),
    "cuda23": (100, 200, 2030, 19038, 384 * MEGA, 1, .01, .21),
    "cuda": (100, 200, 0, 17700, 256 * MEGA, 1, .01, .20),
}
# (min CAL version, need AMD libs (else ATI libs), min RAM, GPUs, CPU fraction, scale)
_ATI = {
    "ati": (10000000, True, 256 * MEGA, 1, .01, .20),
    "ati13amd": (10030000, True, 256 * MEGA, 1, .01, .21),
    "ati13ati": (10030186, False, 256 * MEGA, 1, .01, .22),
    "ati14": (10040000, False, 256 * MEGA, 1, .01, .23),
}


def _gpu_usage(hu, ph, g, ndevs, cpu_frac, flops_scale, min_ram):
    hu.gpu_ram = min_ram
    hu.proc_type = g.proc_type
    hu.gpu_usage = float(ndevs)
    hu.projected_flops, hu.avg_ncpus = coproc_perf(
        ph.capped_fpops, flops_scale * ndevs * g.peak_flops, cpu_frac)
    hu.peak_flops = ndevs * g.peak_flops + hu.avg_ncpus * ph.capped_fpops
    return hu


def _builtin_mt(ph, hu):
    n = ph.effective_ncpus
    if n < 2:
        return "needs 2 CPUs, host has %d" % n
    n = min(int(n), 64)
    hu.avg_ncpus = float(n)
    hu.cmdline = "--nthreads %d" % n
    # .99: a sequential version wins on a host where both use one CPU
    hu.projected_flops = ph.capped_fpops * n * .99
    hu.peak_flops = ph.capped_fpops * n
    return hu


def _builtin_cuda(ph, pc, hu):
    g = ph.gpu(PROC_NVIDIA)
    if not g.count:
        return "needs an NVIDIA GPU"
    if "Darwin" in (ph.host.os_name or "") and ph.core_client_version < 61028:
        return "needs client 6.10.28 on macOS"
    if pc not in _CUDA:
        return "is not a plan class BOINC knows (cuda, cuda23, cuda_fermi)"
    min_cc, max_cc, min_cuda, min_drv, min_ram, ndevs, cpu_frac, scale = _CUDA[pc]
    if min_cc and g.cc < min_cc:
        return "needs compute capability %d.%d, GPU has %d.%d" % (
            min_cc // 100, min_cc % 100, g.cc // 100, g.cc % 100)
    if max_cc and g.cc >= max_cc:
        return "needs compute capability below %d.%d, GPU has %d.%d" % (
            max_cc // 100, max_cc % 100, g.cc // 100, g.cc % 100)
    if g.driver_version:
        ph.require(PROC_NVIDIA, min_drv, min_ram)
    if not g.cuda_version and not g.driver_version:
        return "needs a CUDA or driver version, the client reported neither"
    if g.cuda_version and min_cuda and g.cuda_version < min_cuda:
        return "needs CUDA version %d, GPU has %d" % (min_cuda, g.cuda_version)
    if g.driver_version and min_drv and g.driver_version < min_drv:
        return "needs NVIDIA driver %.2f, GPU has %.2f" % (min_drv / 100.0,
                                                         g.driver_version / 100.0)
    if g.available_ram < min_ram:
        return "needs %.0f MB of GPU RAM, GPU has %.0f MB" % (min_ram / MEGA,
                                                              g.available_ram / MEGA)
    return _gpu_usage(hu, ph, g, ndevs, cpu_frac, scale, min_ram)


def _builtin_ati(ph, pc, hu):
    g = ph.gpu(PROC_AMD)
    if not g.count:
        return "needs an AMD/ATI GPU"
    if pc not in _ATI:
        # BOINC accepts any other ati* name without setting a speed (so never
        # picks it); refusing says so
        return "is not a plan class BOINC knows (ati, ati13amd, ati13ati, ati14)"
    min_ver, need_amd, min_ram, ndevs, cpu_frac, scale = _ATI[pc]
    if g.cal_version_num:
        ph.require(PROC_AMD, min_ver, min_ram)
    if need_amd and not g.amdrt_detected:
        return "needs the AMD runtime libraries"
    if not need_amd and not g.atirt_detected:
        return "needs the ATI runtime libraries"
    if g.cal_version_num < min_ver:
        return "needs CAL version %d.%d.%d, GPU has %s" % (
            min_ver // 10000000, min_ver % 10000000 // 10000, min_ver % 10000,
            g.cal_version or "none")
    if g.available_ram < min_ram:
        return "needs %.0f MB of GPU RAM, GPU has %.0f MB" % (min_ram / MEGA,
                                                              g.available_ram / MEGA)
    return _gpu_usage(hu, ph, g, ndevs, cpu_frac, scale, min_ram)


def _builtin_opencl(ph, pc, hu):
    digits = pc[len(pc.rstrip("0123456789")):]     # the name's trailing number
    ver = int(digits) if digits else 0
    # the order and the prefix tests are BOINC's (an "opencl_ati_N" name
    # contains no "amd", so BOINC refuses it)
    for word, pt, prefix, cpu_frac, scale in (
            ("nvidia", PROC_NVIDIA, "opencl_nvidia", .01, .14),
            ("amd", PROC_AMD, "opencl_ati", .01, .14),
            ("intel_gpu", PROC_INTEL, "opencl_intel_gpu", .1, .2),
            ("apple_gpu", PROC_APPLE, "opencl_apple_gpu", .1, .2)):
        if word not in pc:
            continue
        g = ph.gpu(pt)
        if not g.count:
            return "needs %s" % GPU_NAMES[pt]
        if not g.have_opencl:
            return "needs OpenCL on the GPU"
        if not pc.startswith(prefix):
            return "is not a plan class BOINC knows"
        if g.ocl_version_int < ver:
            return "needs OpenCL version %d, GPU has %d" % (ver, g.ocl_version_int)
        min_ram = 256 * MEGA
        if g.ocl_global_mem_size and g.ocl_global_mem_size < min_ram:
            return "needs %.0f MB of GPU RAM, GPU has %.0f MB" % (
                min_ram / MEGA, g.ocl_global_mem_size / MEGA)
        return _gpu_usage(hu, ph, g, 1, cpu_frac, scale, min_ram)
    return "is not a plan class BOINC knows (opencl_nvidia_N, opencl_intel_gpu_N, ...)"


def _builtin_vbox(ph, pc, hu):
    h = ph.host
    why = _vbox_basics(ph)
    if why:
        return why
    v = _three_part_tuple(h.virtualbox_version)
    if v is None or v[0] < 3 or (v[0] == 3 and v[1] < 2):
        ph.message("VirtualBox version 3.2 or later is required")
        return "needs VirtualBox 3.2 or later, host has '%s'" % h.virtualbox_version
    if ("hwaccel" in pc or "64" in pc) and not _has_vm_accel(h):
        ph.message("VirtualBox jobs require hardware acceleration support. Your processor "
                   "does not support the required instruction set.")
        return "needs VM acceleration (vmx/svm)"
    multicore = not ("mt" in pc and not _has_vm_accel(h))
    if _is_64b_platform(ph.primary_platform) != ("64" in pc):
        return "doesn't suit the host's primary platform %s" % ph.primary_platform
    scale = 1.0
    hu.avg_ncpus = 1.0
    if "mt" in pc:
        if multicore:
            hu.avg_ncpus = float(ph.effective_ncpus)
            hu.cmdline = "--nthreads %f" % ph.effective_ncpus
        scale = .99
    hu.projected_flops = scale * ph.capped_fpops * hu.avg_ncpus
    hu.peak_flops = ph.capped_fpops * hu.avg_ncpus
    return hu


def _builtin(ph, pc):
    hu = HostUsage(ph.capped_fpops)
    if pc == "mt":
        return _builtin_mt(ph, hu)
    if "opencl_cpu_intel" in pc:
        # BOINC compares platform_vendor with "intel" exactly
        if not any(c.platform_vendor == "intel" for c in ph.opencl_cpus()):
            return "needs an OpenCL CPU platform of vendor 'intel'"
        return _builtin_mt(ph, hu)
    if pc.startswith("opencl"):
        return _builtin_opencl(ph, pc, hu)
    if pc.startswith("ati"):
        return _builtin_ati(ph, pc, hu)
    if "cuda" in pc:
        return _builtin_cuda(ph, pc, hu)
    if pc == "nci":
        hu.avg_ncpus = .01
        hu.projected_flops = ph.capped_fpops * 1.01     # beats a plain version
        hu.peak_flops = ph.capped_fpops * .01
        return hu
    if pc == "sse3":
        if "pni" not in (ph.host.p_features or "").lower() \
                and "pni" not in (ph.host.p_model or ""):
            return "needs SSE3 (the CPU doesn't report 'pni')"
        hu.projected_flops = 1.1 * ph.capped_fpops
        hu.peak_flops = ph.capped_fpops
        return hu
    if "vbox" in pc:
        return _builtin_vbox(ph, pc, hu)
    if "wsl" in pc:
        # BOINC's app_plan_wsl accepts but gives no speed, so never picks it
        return "has no speed estimate in BOINC's built-in wsl class"
    return "is unknown (no plan_class_spec.xml, and not one of BOINC's built-in classes)"


def app_plan(ph, plan_class, specs=None, wu=None):
    """Can host ``ph`` (a PlanHost) run a version of ``plan_class``?

    ``specs`` is what :func:`load_specs` returned (None: use the built-ins).
    Returns a HostUsage, or a Refusal with the reason.
    """
    if isinstance(specs, PlanClassSpecError):
        return Refusal("plan class '%s' refused: %s" % (plan_class, specs))
    if specs is not None:
        spec = specs.get(plan_class)
        if spec is None:
            return Refusal("plan class '%s' is not in %s" % (plan_class, SPEC_FILE))
        return check_spec(spec, ph, wu)
    r = _builtin(ph, plan_class)
    if isinstance(r, str):
        return Refusal("plan class '%s' %s" % (plan_class, r))
    return r
