"""A simulated BOINC client: the real protocol over HTTP, no real computing.

For tests, load tests and demos without the stock client.  A :class:`SimHost`
is one volunteer's computer attached to a project:

* its scheduler requests are laid out exactly as the stock 7.20.5 client
  writes them (:class:`SchedulerRequest` reproduces the captured requests
  byte for byte): authenticator, hostid, rpc_seqno, platform, work request,
  global preferences, time and network statistics, host_info, disk usage,
  the results it reports (with ``stderr_out`` and the uploaded files'
  ``<file_info>``), its app versions and the jobs it still holds
  (``<other_results>``);
* the reply is parsed strictly (:func:`parse_reply`: well-formed XML, every
  result with its workunit, file infos, app version, upload URL and
  certificate) -- a reply the real client could not use raises
  :class:`ProtocolError`;
* app files are downloaded once (signature checked against the project's
  code-signing key), input files for every job (size and MD5 checked); a
  download answered 404 is recorded in ``download_errors`` and the job is
  reported as a download error, as the real client does;
* "computing" is instant: the output is what the example app writes (its
  input upper-cased), or, when the host's ``behaviour`` says so for a job,
  a wrong output or a compute error;
* outputs are uploaded with BOINC's data-server protocol (a size query first
  for files of 8 KiB or more, the upload certificate from the reply), then
  reported at the next RPC, and again at every RPC until acknowledged.

Faults a test can ask for: ``abort_rpc_prob`` (the client gives up on a
scheduler RPC: it disconnects after sending the request, or half-way through
it, and never sees the reply), ``abort_upload_prob`` (an upload cut off
half-way).  Everything random comes from the host's own ``random.Random``,
seeded by the caller.  One SimHost is used by one thread at a time.

    auth = create_account(master_url, "me@example.org", "secret", "Me")
    host = SimHost(discover_scheduler(master_url), auth, name="h1", seed=1)
    host.cycle()        # report, fetch work, download, compute, upload
"""

import hashlib
import http.client
import random
import re
import time
import zlib
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from boincpy.errors import BoincpyError
from boincpy.states import ClientState
from boincpy.xml import tree, xml_escape

CLIENT_VERSION = (7, 20, 5)
PLATFORM = "x86_64-pc-linux-gnu"
USER_AGENT = "BOINC client (%s %d.%d.%d)" % ((PLATFORM,) + CLIENT_VERSION)
FILE_SIZE_CHECK_THRESHOLD = 8192        # client/file_xfer.h: bigger uploads ask for the offset

# lib/error_numbers.h and the client's exit codes
ERR_RESULT_DOWNLOAD = -186
ERR_RESULT_UPLOAD = -187
EXIT_ABORTED_BY_PROJECT = 202

# ---------------------------------------------------------------------------
# The scheduler request, as client/cs_scheduler.cpp writes it.  Each block is
# an ordered tuple of (tag, default); the defaults are the capture machine's
# (shared/fixtures/client-7.20.5).  The value's Python type picks the format:
# float %f, int %d, str as is.

GLOBAL_PREFS = (
    ("source_project", ""), ("mod_time", 0.0), ("battery_charge_min_pct", 90.0),
    ("battery_max_temperature", 40.0), ("run_on_batteries", 1), ("run_if_user_active", 1),
    ("run_gpu_if_user_active", 1), ("suspend_if_no_recent_input", 0.0),
    ("suspend_cpu_usage", 0.0), ("start_hour", 0.0), ("end_hour", 0.0),
    ("net_start_hour", 0.0), ("net_end_hour", 0.0), ("leave_apps_in_memory", 0),
    ("confirm_before_connecting", 1), ("hangup_if_dialed", 0), ("dont_verify_images", 0),
    ("work_buf_min_days", 0.01), ("work_buf_additional_days", 0.0),
    ("max_ncpus_pct", 100.0), ("cpu_scheduling_period_minutes", 60.0),
    ("disk_interval", 1.0), ("disk_max_used_gb", 0.0), ("disk_max_used_pct", 90.0),
    ("disk_min_free_gb", 0.1), ("vm_max_used_pct", 75.0), ("ram_max_used_busy_pct", 50.0),
    ("ram_max_used_idle_pct", 90.0), ("idle_time_to_run", 0.0), ("max_bytes_sec_up", 0.0),
    ("max_bytes_sec_down", 0.0), ("cpu_usage_limit", 100.0), ("daily_xfer_limit_mb", 0.0),
    ("daily_xfer_period_days", 0), ("override_file_present", 1), ("network_wifi_only", 0),
)

TIME_STATS = (
    ("on_frac", 1.0), ("connected_frac", -1.0), ("cpu_and_network_available_frac", 1.0),
    ("active_frac", 1.0), ("gpu_active_frac", 1.0), ("client_start_time", 0.0),
    ("total_start_time", 0.0), ("total_duration", 0.0), ("total_active_duration", 0.0),
    ("total_gpu_active_duration", 0.0), ("now", 0.0), ("previous_uptime", 0.0),
    ("session_active_duration", 0.0), ("session_gpu_active_duration", 0.0),
)

NET_STATS = (
    ("bwup", 0.0), ("avg_up", 0.0), ("avg_time_up", 0.0), ("bwdown", 0.0),
    ("avg_down", 0.0), ("avg_time_down", 0.0),
)

HOST_INFO = (
    ("timezone", 0), ("domain_name", "vm"), ("ip_addr", "127.0.0.1"), ("host_cpid", ""),
    ("p_ncpus", 2), ("p_vendor", "AuthenticAMD"),
    ("p_model", "AMD EPYC [Family 25 Model 1 Stepping 1]"),
    ("p_features", "fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 "
                   "clflush mmx fxsr sse sse2 ht syscall nx mmxext fxsr_opt pdpe1gb rdtscp lm "
                   "constant_tsc rep_good nopl xtopology nonstop_tsc cpuid extd_apicid "
                   "tsc_known_freq pni pclmulqdq ssse3 fma cx16 pcid sse4_1 sse4_2 x2apic "
                   "movbe popcnt tsc_deadline_timer aes xsave avx f16c rdrand hypervisor "
                   "lahf_lm cmp_legacy cr8_legacy abm sse4a misalignsse 3dnowprefetch osvw "
                   "topoext ssbd ibrs ibpb stibp vmmcall fsgsbase tsc_adjust bmi1 avx2 smep "
                   "bmi2 erms invpcid rdseed adx smap clflushopt clwb sha_ni xsaveopt xsavec "
                   "xgetbv1 xsaves clzero xsaveerptr wbnoinvd arat umip pku ospke vaes "
                   "vpclmulqdq rdpid fsrm"),
    ("p_fpops", 1e9), ("p_iops", 1e9), ("p_membw", 1e9), ("p_calculated", 0.0),
    ("p_vm_extensions_disabled", 0), ("m_nbytes", 25276063744.0), ("m_cache", 524288.0),
    ("m_swap", 0.0), ("d_total", 270553174016.0), ("d_free", 84029132800.0),
    ("os_name", "Linux Debian"),
    ("os_version", "Debian GNU/Linux 12 (bookworm) [6.18.44-fc-v769|libc 2.36]"),
    ("n_usable_coprocs", 0), ("wsl_available", 0),
)

DISK_USAGE = (
    ("d_boinc_used_total", 61440.0), ("d_boinc_used_project", 0.0),
    ("d_project_share", 92314002063.36002),
)


def format_value(value):
    """A request value as the client prints it: float %f, int %d, text as is."""
    if isinstance(value, float):
        return "%f" % value
    if isinstance(value, (bool, int)):
        return "%d" % value
    return xml_escape(str(value), boinc=True)      # the client's own xml_escape


def merged(defaults, values):
    """``defaults`` (tag, value) pairs with ``values`` (a dict) taking precedence,
    each converted to its default's type; tags keep the defaults' order."""
    out = []
    for tag, default in defaults:
        v = values.get(tag, default)
        if not isinstance(v, type(default)):
            v = type(default)(v)
        out.append((tag, v))
    return tuple(out)


def _block(lines, pairs, indent):
    for tag, value in pairs:
        lines.append("%s<%s>%s</%s>\n" % (indent, tag, format_value(value), tag))


@dataclass
class UploadedFile:
    """An output file as the report lists it (FILE_INFO::write to the server)."""
    name: str
    nbytes: float
    max_nbytes: float
    md5_cksum: str
    upload_url: str

    def xml(self):
        return ("<file_info>\n    <name>%s</name>\n    <nbytes>%f</nbytes>\n"
                "    <max_nbytes>%f</max_nbytes>\n%s    <upload_url>%s</upload_url>\n"
                "</file_info>\n" % (self.name, self.nbytes, self.max_nbytes,
                                    "    <md5_cksum>%s</md5_cksum>\n" % self.md5_cksum
                                    if self.md5_cksum else "", xml_escape(self.upload_url, boinc=True)))


@dataclass
class ReportedResult:
    """A finished job in a scheduler request (client RESULT::write to the server)."""
    name: str
    final_cpu_time: float = 0.0
    final_elapsed_time: float = 0.0
    exit_status: int = 0
    state: int = int(ClientState.FILES_UPLOADED)
    platform: str = PLATFORM
    version_num: int = 0
    plan_class: str = ""
    final_peak_working_set_size: float = 0.0
    final_peak_swap_size: float = 0.0
    final_peak_disk_usage: float = 0.0
    app_version_num: int = 0
    stderr_out: str = ""                  # what goes between <![CDATA[ and ]]>
    files: list = field(default_factory=list)        # UploadedFile
    core_client_version: tuple = CLIENT_VERSION

    def xml(self):
        out = ["<result>\n    <name>%s</name>\n    <final_cpu_time>%f</final_cpu_time>\n"
               "    <final_elapsed_time>%f</final_elapsed_time>\n"
               "    <exit_status>%d</exit_status>\n    <state>%d</state>\n"
               "    <platform>%s</platform>\n    <version_num>%d</version_num>\n"
               % (self.name, self.final_cpu_time, self.final_elapsed_time, self.exit_status,
                  self.state, self.platform, self.version_num)]
        if self.plan_class:
            out.append("    <plan_class>%s</plan_class>\n" % self.plan_class)
        for tag in ("final_peak_working_set_size", "final_peak_swap_size",
                    "final_peak_disk_usage"):
            value = getattr(self, tag)
            if value:
                out.append("    <%s>%.0f</%s>\n" % (tag, value, tag))
        out.append("    <app_version_num>%d</app_version_num>\n<stderr_out>\n"
                   "<core_client_version>%d.%d.%d</core_client_version>\n"
                   % ((self.app_version_num,) + tuple(self.core_client_version)))
        if self.stderr_out:
            text = self.stderr_out if self.stderr_out.endswith("\n") else self.stderr_out + "\n"
            out.append("<![CDATA[\n%s]]>\n" % text)
        out.append("</stderr_out>\n")
        out.extend(f.xml() for f in self.files)
        out.append("</result>\n")
        return "".join(out)


@dataclass
class ClientAppVersion:
    """An app version the client has (<app_versions> of the request)."""
    app_name: str
    version_num: int
    platform: str = PLATFORM
    plan_class: str = ""
    avg_ncpus: float = 1.0
    flops: float = 1e9
    api_version: str = ""

    def xml(self):
        out = ["<app_version>\n    <app_name>%s</app_name>\n    <version_num>%d</version_num>\n"
               "    <platform>%s</platform>\n" % (self.app_name, self.version_num, self.platform)]
        if self.plan_class:
            out.append("    <plan_class>%s</plan_class>\n" % self.plan_class)
        out.append("    <avg_ncpus>%f</avg_ncpus>\n    <flops>%f</flops>\n"
                   % (self.avg_ncpus, self.flops))
        if self.api_version:
            out.append("    <api_version>%s</api_version>\n" % self.api_version)
        out.append("</app_version>\n")
        return "".join(out)


@dataclass
class SchedulerRequest:
    """One <scheduler_request> document; ``xml()`` lays it out as the stock
    7.20.5 client does.  ``prefs``, ``time_stats``, ``net_stats``,
    ``host_info``, ``disk_usage``: dicts overriding the module's defaults."""
    authenticator: str
    hostid: int = 0
    rpc_seqno: int = 0
    core_client_version: tuple = CLIENT_VERSION
    resource_share_fraction: float = 1.0
    rrs_fraction: float = 1.0
    prrs_fraction: float = 1.0
    duration_correction_factor: float = 1.0
    allow_multiple_clients: int = 0
    sandbox: int = 0
    dont_send_work: int = 0
    work_req_seconds: float = 0.0
    cpu_req_secs: float = None            # default: work_req_seconds
    cpu_req_instances: float = 0.0
    estimated_delay: float = 0.0
    platform_name: str = PLATFORM
    alt_platforms: tuple = ()
    code_sign_key: str = ""
    cross_project_id: str = ""
    prefs: dict = field(default_factory=dict)
    time_stats: dict = field(default_factory=dict)
    net_stats: dict = field(default_factory=dict)
    host_info: dict = field(default_factory=dict)
    disk_usage: dict = field(default_factory=dict)
    results: list = field(default_factory=list)          # ReportedResult
    app_versions: list = field(default_factory=list)     # ClientAppVersion
    other_results: list = field(default_factory=list)    # (name, app version index, plan class)

    def xml(self):
        major, minor, release = self.core_client_version
        cpu_secs = self.work_req_seconds if self.cpu_req_secs is None else self.cpu_req_secs
        lines = ["<scheduler_request>\n    <authenticator>%s</authenticator>\n"
                 "    <hostid>%d</hostid>\n    <rpc_seqno>%d</rpc_seqno>\n"
                 "    <core_client_major_version>%d</core_client_major_version>\n"
                 "    <core_client_minor_version>%d</core_client_minor_version>\n"
                 "    <core_client_release>%d</core_client_release>\n"
                 "    <resource_share_fraction>%f</resource_share_fraction>\n"
                 "    <rrs_fraction>%f</rrs_fraction>\n    <prrs_fraction>%f</prrs_fraction>\n"
                 "    <duration_correction_factor>%f</duration_correction_factor>\n"
                 "    <allow_multiple_clients>%d</allow_multiple_clients>\n"
                 "    <sandbox>%d</sandbox>\n    <dont_send_work>%d</dont_send_work>\n"
                 "    <work_req_seconds>%f</work_req_seconds>\n"
                 "    <cpu_req_secs>%f</cpu_req_secs>\n"
                 "    <cpu_req_instances>%f</cpu_req_instances>\n"
                 "    <estimated_delay>%f</estimated_delay>\n"
                 "    <client_cap_plan_class>1</client_cap_plan_class>\n"
                 "    <platform_name>%s</platform_name>\n"
                 % (self.authenticator, self.hostid, self.rpc_seqno, major, minor, release,
                    self.resource_share_fraction, self.rrs_fraction, self.prrs_fraction,
                    self.duration_correction_factor, self.allow_multiple_clients,
                    self.sandbox, self.dont_send_work, self.work_req_seconds, cpu_secs,
                    self.cpu_req_instances, self.estimated_delay, self.platform_name)]
        for name in self.alt_platforms:
            lines.append("    <alt_platform>\n        <name>%s</name>\n    </alt_platform>\n"
                         % name)
        if self.code_sign_key:
            lines.append("    <code_sign_key>\n%s\n</code_sign_key>\n"
                         % self.code_sign_key.strip())
        lines.append("<working_global_preferences>\n<global_preferences>\n")
        _block(lines, merged(GLOBAL_PREFS, self.prefs), "   ")
        lines.append("</global_preferences>\n</working_global_preferences>\n"
                     "<cross_project_id>%s</cross_project_id>\n<time_stats>\n"
                     % self.cross_project_id)
        _block(lines, merged(TIME_STATS, self.time_stats), "    ")
        lines.append("</time_stats>\n<net_stats>\n")
        _block(lines, merged(NET_STATS, self.net_stats), "    ")
        lines.append("</net_stats>\n<host_info>\n")
        _block(lines, merged(HOST_INFO, self.host_info), "    ")
        lines.append("</host_info>\n    <disk_usage>\n")
        _block(lines, merged(DISK_USAGE, self.disk_usage), "        ")
        lines.append("    </disk_usage>\n")
        lines.extend(r.xml() for r in self.results)
        lines.append("<app_versions>\n")
        lines.extend(av.xml() for av in self.app_versions)
        lines.append("</app_versions>\n<other_results>\n")
        for name, index, plan_class in self.other_results:
            lines.append("    <other_result>\n        <name>%s</name>\n"
                         "        <app_version>%d</app_version>\n" % (name, index))
            if plan_class:
                lines.append("        <plan_class>%s</plan_class>\n" % plan_class)
            lines.append("    </other_result>\n")
        lines.append("</other_results>\n</scheduler_request>\n")
        return "".join(lines)


# ---------------------------------------------------------------------------
# The scheduler reply, parsed strictly

class ProtocolError(BoincpyError):
    """A reply (or file server answer) the stock client could not have used."""


@dataclass
class FileInfo:
    """A <file_info> of a reply."""
    name: str
    urls: list
    nbytes: float = 0.0
    max_nbytes: float = 0.0
    md5_cksum: str = ""
    executable: bool = False
    file_signature: str = ""
    xml_signature: str = ""

    @property
    def is_upload(self):
        return any("file_upload_handler" in u for u in self.urls)


@dataclass
class AppVersion:
    """An <app_version> of a reply."""
    app_name: str
    version_num: int
    platform: str
    plan_class: str
    avg_ncpus: float
    flops: float
    api_version: str
    files: list                  # (file name, is main program)

    @property
    def key(self):
        return (self.app_name, self.version_num, self.platform, self.plan_class)


@dataclass
class Workunit:
    """A <workunit> of a reply."""
    name: str
    app_name: str
    command_line: str
    rsc_fpops_est: float
    inputs: list                 # (file name, open name)


@dataclass
class Job:
    """A <result> of a reply: one job sent to this host."""
    name: str
    wu_name: str
    report_deadline: int
    platform: str
    version_num: int
    plan_class: str
    outputs: list                # (file name, open name)


@dataclass
class SchedulerReply:
    """What the client uses of a <scheduler_reply>."""
    scheduler_version: int = 0
    hostid: int = 0
    request_delay: float = 0.0
    messages: list = field(default_factory=list)          # (priority, text)
    project_is_down: bool = False
    code_sign_key: str = ""
    userid: int = 0
    user_total_credit: float = 0.0
    host_total_credit: float = 0.0
    result_acks: list = field(default_factory=list)
    result_aborts: list = field(default_factory=list)
    result_abort_if_not_started: list = field(default_factory=list)
    file_infos: dict = field(default_factory=dict)        # name -> FileInfo
    app_versions: list = field(default_factory=list)      # AppVersion
    workunits: dict = field(default_factory=dict)         # name -> Workunit
    jobs: list = field(default_factory=list)              # Job


def _num(el, tag, kind=float, default=None, where=""):
    text = el.findtext(tag)
    if text is None or not text.strip():
        if default is None:
            raise ProtocolError("%s: <%s> missing" % (where or el.tag, tag))
        return default
    try:
        return kind(text.strip())
    except ValueError:
        raise ProtocolError("%s: <%s> is %r, not a number" % (where or el.tag, tag,
                                                             text)) from None


def _req_text(el, tag, where):
    text = tree.text(el, tag)
    if not text:
        raise ProtocolError("%s: <%s> missing or empty" % (where, tag))
    return text


def _file_refs(el, where):
    refs = []
    for ref in el.findall("file_ref"):
        refs.append((_req_text(ref, "file_name", where + " file_ref"),
                     tree.text(ref, "open_name"),
                     ref.find("main_program") is not None))
    return refs


def parse_reply(body):
    """A :class:`SchedulerReply` from the reply body (bytes, without the CGI
    header).  Raises ProtocolError unless it is well-formed XML whose jobs
    the client can run: each result's workunit, every file named, each input
    with URL, size and MD5, each output with an upload URL and a size limit,
    each app file signed."""
    try:
        root = tree.parse(body)
    except tree.XmlError as exc:
        raise ProtocolError("reply is not well-formed XML: %s" % exc) from None
    if root.tag != "scheduler_reply":
        raise ProtocolError("reply's root element is <%s>" % root.tag)
    r = SchedulerReply()
    r.scheduler_version = _num(root, "scheduler_version", int, 0)
    r.hostid = _num(root, "hostid", int, 0)
    r.request_delay = _num(root, "request_delay", float, 0.0)
    r.messages = [(m.get("priority", ""), m.text or "") for m in root.findall("message")]
    r.project_is_down = root.find("project_is_down") is not None
    r.code_sign_key = tree.text(root, "code_sign_key")
    r.userid = _num(root, "userid", int, 0)
    r.user_total_credit = _num(root, "user_total_credit", float, 0.0)
    r.host_total_credit = _num(root, "host_total_credit", float, 0.0)
    for tag, out in (("result_ack", r.result_acks), ("result_abort", r.result_aborts),
                     ("result_abort_if_not_started", r.result_abort_if_not_started)):
        for el in root.findall(tag):
            out.append(_req_text(el, "name", tag))
    for el in root.findall("file_info"):
        name = _req_text(el, "name", "file_info")
        urls = [u.text.strip() for u in el.findall("url") if u.text and u.text.strip()]
        urls += [u.text.strip() for u in el.findall("upload_url") if u.text and u.text.strip()]
        if not urls:
            raise ProtocolError("file_info %s has no <url>" % name)
        r.file_infos[name] = FileInfo(
            name=name, urls=urls, nbytes=_num(el, "nbytes", float, 0.0),
            max_nbytes=_num(el, "max_nbytes", float, 0.0),
            md5_cksum=tree.text(el, "md5_cksum"),
            executable=el.find("executable") is not None,
            file_signature=tree.text(el, "file_signature"),
            xml_signature=tree.text(el, "xml_signature"))
    for el in root.findall("app_version"):
        where = "app_version"
        av = AppVersion(app_name=_req_text(el, "app_name", where),
                        version_num=_num(el, "version_num", int, where=where),
                        platform=_req_text(el, "platform", where),
                        plan_class=tree.text(el, "plan_class"),
                        avg_ncpus=_num(el, "avg_ncpus", float, 1.0),
                        flops=_num(el, "flops", float, where=where),
                        api_version=tree.text(el, "api_version"),
                        files=[(n, main) for n, _, main in _file_refs(el, where)])
        if av.flops <= 0:
            raise ProtocolError("app_version %s %d: flops %f" % (av.app_name, av.version_num,
                                                                 av.flops))
        if sum(1 for _, main in av.files if main) != 1:
            raise ProtocolError("app_version %s %d: not exactly one main program"
                                % (av.app_name, av.version_num))
        for name, _ in av.files:
            fi = r.file_infos.get(name)
            if fi is None:
                raise ProtocolError("app_version %s %d: file %s has no file_info"
                                    % (av.app_name, av.version_num, name))
            if not fi.file_signature.endswith("."):
                raise ProtocolError("app file %s has no file_signature" % name)
        r.app_versions.append(av)
    for el in root.findall("workunit"):
        name = _req_text(el, "name", "workunit")
        where = "workunit %s" % name
        wu = Workunit(name=name, app_name=_req_text(el, "app_name", where),
                      command_line=tree.text(el, "command_line"),
                      rsc_fpops_est=_num(el, "rsc_fpops_est", float, where=where),
                      inputs=[(n, o) for n, o, _ in _file_refs(el, where)])
        for tag in ("rsc_fpops_bound", "rsc_memory_bound", "rsc_disk_bound"):
            if _num(el, tag, float, where=where) <= 0:
                raise ProtocolError("%s: <%s> is not positive" % (where, tag))
        for fname, _ in wu.inputs:
            fi = r.file_infos.get(fname)
            if fi is None:
                raise ProtocolError("%s: input %s has no file_info" % (where, fname))
            if fi.is_upload:
                raise ProtocolError("%s: input %s has an upload URL" % (where, fname))
            if not re.fullmatch(r"[0-9a-f]{32}", fi.md5_cksum):
                raise ProtocolError("%s: input %s has no MD5" % (where, fname))
        r.workunits[name] = wu
    for el in root.findall("result"):
        name = _req_text(el, "name", "result")
        where = "result %s" % name
        job = Job(name=name, wu_name=_req_text(el, "wu_name", where),
                  report_deadline=_num(el, "report_deadline", int, where=where),
                  platform=tree.text(el, "platform"),
                  version_num=_num(el, "version_num", int, 0),
                  plan_class=tree.text(el, "plan_class"),
                  outputs=[(n, o) for n, o, _ in _file_refs(el, where)])
        if job.wu_name not in r.workunits:
            raise ProtocolError("%s: its workunit %s is not in the reply" % (where, job.wu_name))
        for fname, _ in job.outputs:
            fi = r.file_infos.get(fname)
            if fi is None:
                raise ProtocolError("%s: output %s has no file_info" % (where, fname))
            if not fi.is_upload:
                raise ProtocolError("%s: output %s has no upload URL" % (where, fname))
            if fi.max_nbytes <= 0:
                raise ProtocolError("%s: output %s has no max_nbytes" % (where, fname))
        r.jobs.append(job)
    return r


# ---------------------------------------------------------------------------
# HTTP as libcurl does it for the client (a new connection per transfer)

class Disconnected(BoincpyError):
    """The client gave up on a transfer on purpose (a simulated abort)."""


def _connection(url, timeout):
    u = urlsplit(url)
    path = u.path + ("?" + u.query if u.query else "")
    return http.client.HTTPConnection(u.hostname, u.port or 80, timeout=timeout), path


def http_post(url, body, timeout=120.0, cut_at=None, linger=0.0):
    """POST ``body``; return (status, reply bytes).  ``cut_at``: send only that
    many bytes of the body (None: all of it), wait ``linger`` seconds and
    disconnect without reading the reply (raises Disconnected)."""
    conn, path = _connection(url, timeout)
    try:
        headers = {"User-Agent": USER_AGENT, "Accept": "*/*",
                   "Accept-Encoding": "deflate, gzip",
                   "Content-Type": "application/x-www-form-urlencoded",
                   "Content-Length": str(len(body))}
        if cut_at is not None or linger:
            conn.putrequest("POST", path, skip_accept_encoding=True)
            for k, v in headers.items():
                conn.putheader(k, v)
            conn.endheaders()
            conn.send(body if cut_at is None else body[:cut_at])
            if linger:
                time.sleep(linger)
            raise Disconnected("disconnected after sending %d of %d bytes"
                               % (len(body) if cut_at is None else cut_at, len(body)))
        conn.request("POST", path, body, headers)
        resp = conn.getresponse()
        data = _decoded(resp)
        return resp.status, data
    finally:
        conn.close()


def http_get(url, timeout=120.0):
    """GET ``url``; return (status, body bytes)."""
    conn, path = _connection(url, timeout)
    try:
        conn.request("GET", path, headers={"User-Agent": USER_AGENT, "Accept": "*/*",
                                           "Accept-Encoding": "deflate, gzip"})
        resp = conn.getresponse()
        return resp.status, _decoded(resp)
    finally:
        conn.close()


def _decoded(resp):
    data = resp.read()
    enc = (resp.getheader("Content-Encoding") or "").lower()
    if enc == "gzip":
        data = zlib.decompress(data, 16 + zlib.MAX_WBITS)
    elif enc == "deflate":
        data = zlib.decompress(data)
    return data


def cgi_body(data):
    """The document of a CGI reply: without any header block the server left in."""
    if data.startswith(b"Content-type:") or data.startswith(b"Content-Type:"):
        data = data.split(b"\n\n", 1)[-1]
    return data


def discover_scheduler(master_url, timeout=30.0):
    """The scheduler URL the master page declares (``<link rel="boinc_scheduler">``
    or ``<scheduler>``), as the client finds it on attach."""
    status, body = http_get(master_url, timeout)
    if status != 200:
        raise ProtocolError("master page %s: HTTP %d" % (master_url, status))
    text = body.decode("utf-8", "replace")
    m = (re.search(r'<link\s+rel="boinc_scheduler"\s+href="([^"]+)"', text)
         or re.search(r"<scheduler>\s*([^<\s]+)\s*</scheduler>", text))
    if not m:
        raise ProtocolError("master page %s declares no scheduler" % master_url)
    return m.group(1)


def _account_rpc(master_url, script, params, timeout):
    from urllib.parse import quote
    query = "&".join("%s=%s" % (k, quote(v, safe="")) for k, v in params)
    status, body = http_get(master_url.rstrip("/") + "/" + script + "?" + query, timeout)
    text = cgi_body(body).decode("utf-8", "replace")
    if status != 200:
        raise ProtocolError("%s: HTTP %d" % (script, status))
    try:
        root = tree.parse(text, recover=True)
    except tree.XmlError:
        root = None
    num = None if root is None else root.findtext(".//error_num")
    if num is not None:
        msg = root.findtext(".//error_msg")
        raise ProtocolError("%s: error %s: %s" % (script, num.strip(),
                                                  text if msg is None else msg.strip()))
    auth = "" if root is None else (root.findtext(".//authenticator") or "").strip()
    if not auth:
        raise ProtocolError("%s: no authenticator in %r" % (script, text[:300]))
    return auth


def create_account(master_url, email_addr, password, user_name, timeout=30.0):
    """A new account through the project's create_account.php, as the stock
    client (boinccmd --create_account) asks for it; returns the authenticator."""
    from boincpy.passwords import client_passwd_hash
    return _account_rpc(master_url, "create_account.php",
                        (("email_addr", email_addr),
                         ("passwd_hash", client_passwd_hash(password, email_addr)),
                         ("user_name", user_name)), timeout)


def lookup_account(master_url, email_addr, password, timeout=30.0):
    """The authenticator of an existing account (lookup_account.php)."""
    from boincpy.passwords import client_passwd_hash
    return _account_rpc(master_url, "lookup_account.php",
                        (("email_addr", email_addr),
                         ("passwd_hash", client_passwd_hash(password, email_addr))), timeout)


# ---------------------------------------------------------------------------
# The data server (file_upload_handler)

def upload_header(name, xml_signature, max_nbytes, nbytes, md5, offset):
    """The <data_server_request> of an upload, as client/file_xfer.cpp writes it."""
    return ("<data_server_request>\n"
            "    <core_client_major_version>%d</core_client_major_version>\n"
            "    <core_client_minor_version>%d</core_client_minor_version>\n"
            "    <core_client_release>%d</core_client_release>\n"
            "<file_upload>\n<file_info>\n<name>%s</name>\n<xml_signature>\n%s</xml_signature>\n"
            "<max_nbytes>%.0f</max_nbytes>\n</file_info>\n<nbytes>%.0f</nbytes>\n"
            "<md5_cksum>%s</md5_cksum>\n<offset>%.0f</offset>\n<data>\n"
            % (CLIENT_VERSION + (name, xml_signature.strip(), max_nbytes, nbytes, md5,
                                 offset))).encode()


def size_query(name):
    """The <data_server_request> asking how much of ``name`` the server holds."""
    return ("<data_server_request>\n"
            "    <core_client_major_version>%d</core_client_major_version>\n"
            "    <core_client_minor_version>%d</core_client_minor_version>\n"
            "    <core_client_release>%d</core_client_release>\n"
            "    <get_file_size>%s</get_file_size>\n</data_server_request>\n"
            % (CLIENT_VERSION + (name,))).encode()


def parse_data_server_reply(body):
    """(status, file_size or None, message) of a <data_server_reply>; a reply
    without a status counts as transient (1), as the client takes it."""
    text = cgi_body(body).decode("utf-8", "replace")
    if "<data_server_reply>" not in text:
        raise ProtocolError("not a data_server_reply: %r" % text[:200])
    try:
        root = tree.parse(text, recover=True)
    except tree.XmlError as exc:
        raise ProtocolError("data_server_reply: %s: %r" % (exc, text[:200])) from None
    status = tree.text(root, "status")
    status = int(status) if status.lstrip("-").isdigit() else 1
    size = tree.text(root, "file_size")
    try:
        size = int(float(size)) if size else None
    except ValueError:
        size = None
    return status, size, root.findtext("message") or ""


# ---------------------------------------------------------------------------
# The simulated host

GOOD, WRONG, ERROR = "good", "wrong", "error"


def example_app(task, inputs):
    """What the example app computes: each output is its first input upper-cased."""
    data = next(iter(inputs.values()), b"")
    return {open_name: data.upper() for _, open_name in task.job.outputs}


def wrong_output(task, outputs):
    """A wrong answer that no other wrong answer matches (it names the result)."""
    return {k: v + b"wrong answer from " + task.name.encode() + b"\n" for k, v in outputs.items()}


@dataclass
class Output:
    """One output file of a task, with its upload progress."""
    name: str
    open_name: str
    info: FileInfo
    data: bytes = b""
    offset: int = -1               # -1: unknown, ask the server
    uploaded: bool = False


@dataclass
class Task:
    """A job the host holds (the client's RESULT)."""
    job: Job
    wu: Workunit
    app_version: AppVersion
    received_at: float
    state: int = int(ClientState.NEW)
    exit_status: int = 0
    stderr_out: str = ""
    outputs: list = field(default_factory=list)      # Output
    inputs: list = field(default_factory=list)       # (file name, open name, FileInfo)
    app_files: list = field(default_factory=list)    # (file name, FileInfo)
    input_data: dict = field(default_factory=dict)   # open name -> bytes
    ready_to_report: bool = False
    cpu_time: float = 0.0
    elapsed_time: float = 0.0

    @property
    def name(self):
        return self.job.name


class SimHost:
    """One simulated computer attached to a project (see the module docstring).

    ``behaviour(task) -> "good" | "wrong" | "error"`` decides each job's fate
    (default: always good); ``compute(task, inputs) -> {open_name: bytes}``
    is the application (default :func:`example_app`).

    Records, for the test to inspect: ``received`` (every result name the
    host was sent, with repeats), ``download_errors`` (dicts: url, status,
    file, result), ``rpc_errors`` (text of failed RPCs: HTTP errors, cut-off
    replies), ``protocol_errors`` (complete replies the client could not
    use: a server bug), ``aborted_rpcs``, ``aborted_uploads``, ``acked``
    (names acknowledged), ``reported`` (names sent in reports).
    """

    def __init__(self, scheduler_url, authenticator, name="simhost", seed=None,
                 ncpus=2, p_fpops=1e9, behaviour=None, compute=None, work_req_seconds=3600.0,
                 max_tasks=8, abort_rpc_prob=0.0, abort_upload_prob=0.0, delay_cap=None,
                 idle_delay=60.0, timeout=120.0, clock=time.time):
        self.scheduler_url = scheduler_url
        self.authenticator = authenticator
        self.name = name
        self.rng = random.Random(seed)
        self.behaviour = behaviour or (lambda task: GOOD)
        self.compute = compute or example_app
        self.work_req_seconds = work_req_seconds
        self.max_tasks = max_tasks
        self.abort_rpc_prob = abort_rpc_prob
        self.abort_upload_prob = abort_upload_prob
        self.delay_cap = delay_cap
        self.idle_delay = idle_delay
        self.timeout = timeout
        self.clock = clock
        self.hostid = 0
        self.rpc_seqno = 0
        self.code_sign_key = ""
        self.cross_project_id = ""
        self.host_cpid = "%032x" % self.rng.getrandbits(128)
        self.host_info = {"p_ncpus": ncpus, "p_fpops": p_fpops, "p_iops": p_fpops,
                          "domain_name": name, "host_cpid": self.host_cpid}
        self.start_time = clock()
        self.next_rpc_time = 0.0       # request_delay, failures: no RPC before this
        self.next_fetch_time = 0.0     # asked for work and got none: no fetch before this
        self.app_versions = {}        # key -> AppVersion (files downloaded and verified)
        self.app_files = {}           # file name -> bytes
        self.tasks = {}               # result name -> Task, in arrival order
        # records
        self.received = []
        self.download_errors = []
        self.rpc_errors = []
        self.protocol_errors = []
        self.aborted_rpcs = 0
        self.aborted_uploads = 0
        self.acked = []
        self.reported = []
        self.last_reply = None

    # -- the request ------------------------------------------------------------

    def _request(self, want_work):
        now = self.clock()
        up = now - self.start_time
        in_progress = sum(1 for t in self.tasks.values() if not t.ready_to_report)
        ask = self.work_req_seconds if want_work and in_progress < self.max_tasks else 0.0
        req = SchedulerRequest(
            authenticator=self.authenticator, hostid=self.hostid, rpc_seqno=self.rpc_seqno,
            work_req_seconds=ask if self.hostid else min(ask, 1.0),
            cpu_req_instances=0.0, code_sign_key=self.code_sign_key,
            cross_project_id=self.cross_project_id,
            host_info=dict(self.host_info, p_calculated=self.start_time),
            time_stats={"client_start_time": self.start_time, "total_start_time": self.start_time,
                        "total_duration": up, "total_active_duration": up,
                        "total_gpu_active_duration": up, "now": now,
                        "session_active_duration": up, "session_gpu_active_duration": up},
            disk_usage={"d_boinc_used_project": float(sum(len(d) for d in
                                                          self.app_files.values()))})
        versions = list(self.app_versions.values())
        req.app_versions = [ClientAppVersion(av.app_name, av.version_num, av.platform,
                                             av.plan_class, av.avg_ncpus, av.flops,
                                             av.api_version) for av in versions]
        index = {av.key: i for i, av in enumerate(versions)}
        for task in self.tasks.values():
            if task.ready_to_report:
                req.results.append(self._report(task))
            else:
                req.other_results.append((task.name, index.get(task.app_version.key, 0),
                                          task.app_version.plan_class))
        return req

    def _report(self, task):
        files = [UploadedFile(o.name, float(len(o.data)), o.info.max_nbytes,
                              hashlib.md5(o.data).hexdigest(), o.info.urls[0])
                 for o in task.outputs if o.uploaded]
        av = task.app_version
        return ReportedResult(
            name=task.name, final_cpu_time=task.cpu_time, final_elapsed_time=task.elapsed_time,
            exit_status=task.exit_status, state=task.state, platform=av.platform,
            version_num=av.version_num, plan_class=av.plan_class,
            final_peak_working_set_size=4116480.0 if task.cpu_time else 0.0,
            final_peak_swap_size=6877184.0 if task.cpu_time else 0.0,
            final_peak_disk_usage=34314.0 if task.cpu_time else 0.0,
            app_version_num=av.version_num, stderr_out=task.stderr_out, files=files)

    # -- one RPC ------------------------------------------------------------------

    def rpc(self, want_work=True, abort=None):
        """One scheduler RPC (reports, work request); returns the parsed reply,
        or None if the RPC failed or was aborted (then nothing it carried is
        considered delivered: reports go again next time).

        ``abort``: "reply" (disconnect once the request is sent: the server
        acts on it, the client never sees the reply), "request" (disconnect
        half-way through the request), or None: one of them with probability
        ``abort_rpc_prob``, chosen 2:1."""
        req = self._request(want_work)
        body = req.xml().encode()
        self.rpc_seqno += 1                 # the client counts every RPC it starts
        if abort is None and self.abort_rpc_prob and self.rng.random() < self.abort_rpc_prob:
            abort = self.rng.choice(("reply", "reply", "request"))
        if abort:
            cut = len(body) if abort == "reply" else self.rng.randrange(1, len(body))
            try:
                http_post(self.scheduler_url, body, self.timeout, cut_at=cut,
                          linger=self.rng.uniform(0.0, 0.2))
            except (Disconnected, OSError):
                pass
            self.aborted_rpcs += 1
            self._defer(5.0)
            return None
        try:
            status, data = http_post(self.scheduler_url, body, self.timeout)
        except (OSError, http.client.HTTPException) as exc:
            return self._rpc_failed("%s: %s" % (type(exc).__name__, exc))
        if status != 200:
            return self._rpc_failed("HTTP %d: %r" % (status, data[:300]))
        doc = cgi_body(data)
        try:
            reply = parse_reply(doc)
            self._handle_reply(reply, req)
        except ProtocolError as exc:
            if doc.rstrip().endswith(b"</scheduler_reply>"):
                # a whole reply the client can't use: the server's fault
                self.protocol_errors.append("%s\n%s" % (exc, doc.decode("utf-8", "replace")))
            # else cut short (a killed CGI): the client retries later
            return self._rpc_failed("%s (%d bytes)" % (exc, len(data)))
        return reply

    def _rpc_failed(self, text):
        self.rpc_errors.append(text)
        self._defer(5.0)
        return None

    def _defer(self, seconds):
        if self.delay_cap is not None:
            seconds = min(seconds, self.delay_cap)
        self.next_rpc_time = max(self.next_rpc_time, self.clock() + seconds)

    def _app_versions_of(self, reply):
        """(job, workunit, app version) of each job; ProtocolError if the
        reply names an app version this host neither has nor is given."""
        versions = {av.key: av for av in reply.app_versions}
        out = []
        for job in reply.jobs:
            wu = reply.workunits[job.wu_name]
            key = (wu.app_name, job.version_num, job.platform, job.plan_class)
            av = versions.get(key) or self.app_versions.get(key)
            if av is None:
                raise ProtocolError("result %s: no app_version %s in the reply" % (job.name, key))
            out.append((job, wu, av))
        return out

    def _handle_reply(self, reply, req):
        jobs = self._app_versions_of(reply)
        self.last_reply = reply
        if reply.hostid:
            if self.hostid and reply.hostid != self.hostid:
                # the client's answer to a new host id: a new CPID (cs_scheduler.cpp)
                self.host_cpid = "%032x" % self.rng.getrandbits(128)
                self.host_info["host_cpid"] = self.host_cpid
            self.hostid = reply.hostid
            self.rpc_seqno = 0
        if reply.code_sign_key:
            self.code_sign_key = reply.code_sign_key
        self.next_rpc_time = 0.0
        if reply.request_delay:
            self._defer(reply.request_delay)
        for name in reply.result_acks:
            task = self.tasks.get(name)
            if task is not None and task.ready_to_report:
                del self.tasks[name]
            self.acked.append(name)
        for name in reply.result_aborts:
            self._abort_task(name)
        for name in reply.result_abort_if_not_started:
            task = self.tasks.get(name)
            if task is not None and task.state == ClientState.NEW:
                self._abort_task(name)
        self.reported.extend(r.name for r in req.results)
        now = self.clock()
        if req.work_req_seconds and not reply.jobs:
            self.next_fetch_time = now + self.idle_delay
        for job, wu, av in jobs:
            self.received.append(job.name)
            if job.name in self.tasks:
                continue            # a resend of a job we hold
            self.tasks[job.name] = Task(
                job=job, wu=wu, app_version=av, received_at=now,
                outputs=[Output(n, o, reply.file_infos[n]) for n, o in job.outputs],
                inputs=[(n, o, reply.file_infos[n]) for n, o in wu.inputs],
                app_files=[(n, reply.file_infos.get(n)) for n, _ in av.files])

    def _abort_task(self, name):
        task = self.tasks.get(name)
        if task is None or task.ready_to_report:
            return
        task.state = int(ClientState.ABORTED)
        task.exit_status = EXIT_ABORTED_BY_PROJECT
        task.stderr_out = "<message>\naborted by project - no longer usable\n</message>\n"
        task.ready_to_report = True

    # -- the jobs -------------------------------------------------------------------

    def work(self):
        """Download, compute and upload every job that needs it; returns the
        number of jobs that became ready to report."""
        done = 0
        for task in list(self.tasks.values()):
            if task.ready_to_report:
                continue
            if task.state == ClientState.NEW:
                if not self._get_files(task):
                    if task.ready_to_report:
                        done += 1
                    continue
                self._run(task)
                if task.ready_to_report:
                    done += 1
                    continue
            if task.state == ClientState.FILES_UPLOADING:
                if self._upload_all(task):
                    done += 1
        return done

    def _download(self, task, name, fi, check):
        """One file's bytes, or None (a transient failure: try again later, or a
        permanent one: the task is then ready to report as a download error)."""
        status, data = 0, b""
        for url in fi.urls:
            try:
                status, data = http_get(url, self.timeout)
            except (OSError, http.client.HTTPException):
                status = 0
                continue
            if status == 200:
                break
        if status == 200:
            problem = check(data)
            if problem is None:
                return data
            code, text = problem
        elif 400 <= status < 500:
            code, text = -224, "permanent HTTP error"       # ERR_HTTP_PERMANENT
            self.download_errors.append({"url": fi.urls[0], "status": status, "file": name,
                                         "result": task.name, "time": self.clock(),
                                         "host": self.name})
        else:
            return None                 # transient: retried at the next work()
        task.state = int(ClientState.FILES_DOWNLOADING)
        task.exit_status = ERR_RESULT_DOWNLOAD
        task.stderr_out = ("<message>\ncouldn't get input files:\n<file_xfer_error>\n"
                           "  <file_name>%s</file_name>\n  <error_code>%d (%s)</error_code>\n"
                           "</file_xfer_error>\n</message>\n" % (name, code, text))
        task.ready_to_report = True
        return None

    def _get_files(self, task):
        av = task.app_version
        if av.key not in self.app_versions:
            for name, fi in task.app_files:
                if name in self.app_files:
                    continue
                if fi is None:
                    return False
                data = self._download(task, name, fi, lambda d, fi=fi: self._check_app_file(d, fi))
                if data is None:
                    return False
                self.app_files[name] = data
            self.app_versions[av.key] = av
        task.input_data = {}
        for name, open_name, fi in task.inputs:
            data = self._download(task, name, fi, lambda d, fi=fi: _check_input(d, fi))
            if data is None:
                return False
            task.input_data[open_name or name] = data
        task.state = int(ClientState.FILES_DOWNLOADED)
        return True

    def _check_app_file(self, data, fi):
        if fi.nbytes and len(data) != int(fi.nbytes):
            return -200, "wrong size"                       # ERR_WRONG_SIZE
        from boincpy import crypto
        if not fi.file_signature:
            return -123, "no signature"
        try:
            ok = crypto.verify_md5_hex(hashlib.md5(data).hexdigest(), fi.file_signature + "\n",
                                       crypto.parse_key(self.code_sign_key))
        except Exception:
            ok = False
        return None if ok else (-120, "RSA failed")         # ERR_RSA_FAILED

    def _run(self, task):
        fate = self.behaviour(task)
        task.cpu_time = round(self.rng.uniform(0.5, 3.0), 6)
        task.elapsed_time = round(task.cpu_time + self.rng.uniform(0.0, 0.5), 6)
        if fate == ERROR:
            task.state = int(ClientState.COMPUTE_ERROR)
            task.exit_status = 3
            task.stderr_out = ("<message>\nprocess exited with code 3 (0x3, -253)</message>\n"
                               "<stderr_txt>\nsimulated application error\n\n</stderr_txt>\n")
            task.ready_to_report = True
            return
        outputs = self.compute(task, task.input_data)
        if fate == WRONG:
            outputs = wrong_output(task, outputs)
        for out in task.outputs:
            out.data = outputs.get(out.open_name, b"")
            if len(out.data) < FILE_SIZE_CHECK_THRESHOLD:
                out.offset = 0
        task.stderr_out = ("<stderr_txt>\nsimclient: %s started\n%s (%d): called "
                           "boinc_finish(0)\n\n</stderr_txt>\n"
                           % (task.name, time.strftime("%H:%M:%S"), 10000 + len(self.tasks)))
        task.state = int(ClientState.FILES_UPLOADING)

    def _upload_all(self, task):
        for out in task.outputs:
            if not out.uploaded:
                result = self._upload(out)
                if result == "permanent":
                    task.state = int(ClientState.UPLOAD_FAILED)
                    task.exit_status = ERR_RESULT_UPLOAD
                    task.stderr_out += ("<upload_error>\n    <file_name>%s</file_name>\n"
                                        "    <error_code>-128 (permanent upload error)"
                                        "</error_code>\n</upload_error>\n" % out.name)
                    task.ready_to_report = True
                    return True
                if result != "done":
                    return False
        task.state = int(ClientState.FILES_UPLOADED)
        task.ready_to_report = True
        return True

    def _upload(self, out):
        """One output's upload: "done", "transient" or "permanent"."""
        url = out.info.urls[0]
        nbytes = len(out.data)
        try:
            if out.offset < 0:
                status, body = http_post(url, size_query(out.name), self.timeout)
                st, size, _ = parse_data_server_reply(body) if status == 200 else (1, None, "")
                if st != 0 or size is None:
                    return "permanent" if st == -1 else "transient"
                if size >= nbytes:
                    out.uploaded = True
                    return "done"
                out.offset = size
            header = upload_header(out.name, out.info.xml_signature, out.info.max_nbytes,
                                   nbytes, hashlib.md5(out.data).hexdigest(), out.offset)
            body = header + out.data[out.offset:]
            if self.abort_upload_prob and self.rng.random() < self.abort_upload_prob:
                self.aborted_uploads += 1
                cut = len(header) + self.rng.randrange(0, max(1, nbytes - out.offset))
                try:
                    http_post(url, body, self.timeout, cut_at=cut, linger=0.05)
                except (Disconnected, OSError):
                    pass
                if nbytes >= FILE_SIZE_CHECK_THRESHOLD:
                    out.offset = -1         # bytes went out: ask the server where to resume
                return "transient"
            status, reply = http_post(url, body, self.timeout)
        except (OSError, http.client.HTTPException):
            if nbytes >= FILE_SIZE_CHECK_THRESHOLD:
                out.offset = -1
            return "transient"
        if status != 200:
            return "transient"          # the client takes HTTP errors on uploads as transient
        try:
            st, _, message = parse_data_server_reply(reply)
        except ProtocolError:
            st, message = 1, "unparsable reply"
        if st == 0:
            out.uploaded = True
            return "done"
        if st == -1:
            self.rpc_errors.append("upload of %s refused: %s" % (out.name, message))
            return "permanent"
        if nbytes >= FILE_SIZE_CHECK_THRESHOLD:
            out.offset = -1
        return "transient"

    # -- the loop ------------------------------------------------------------------

    def due(self):
        """True when the host should contact the scheduler again: not before
        the request delay, and, after a work request that got nothing, not
        before ``idle_delay`` unless it has something to report (a much
        simplified work-fetch backoff)."""
        now = self.clock()
        if now < self.next_rpc_time:
            return False
        return now >= self.next_fetch_time or any(t.ready_to_report
                                                  for t in self.tasks.values())

    def cycle(self, want_work=True):
        """One round of the client's life: an RPC (reporting what is done,
        asking for work while it holds fewer than ``max_tasks`` jobs), then
        the new jobs' downloads, computing and uploads.  Returns the reply
        (None if the RPC failed)."""
        reply = self.rpc(want_work)
        self.work()
        return reply

    @property
    def busy(self):
        """True while the host holds jobs (unfinished or not yet acknowledged)."""
        return bool(self.tasks)


def _check_input(data, fi):
    if fi.nbytes and len(data) != int(fi.nbytes):
        return -200, "wrong size"
    if fi.md5_cksum and hashlib.md5(data).hexdigest() != fi.md5_cksum:
        return -119, "MD5 check failed"                     # ERR_MD5_FAILED
    return None


def run_host(host, stop, errors, pause=0.02):
    """Drive ``host`` until ``stop`` (a threading.Event) is set: a cycle
    whenever it is due.  An exception ends it and is appended to ``errors``
    (host name and error), so that a client bug fails a run instead of
    hanging it.  Meant as a thread's target, one thread per host."""
    try:
        while not stop.is_set():
            if host.due():
                host.cycle()
            else:
                time.sleep(pause)
    except Exception as exc:
        errors.append("%s: %r" % (host.name, exc))
