"""A client's <scheduler_request>, as plain data, and the parser that reads it.

The record classes here are the contract between the request parser
(``parse_request``), host and report handling, and job choice
(:mod:`boincpy.sched.choose`): every part of the scheduler reads the request
through them, never through XML.  Field names are the request's element names
(scheduler-protocol.md §4); values are typed, and a missing element keeps the
default here.  They behave like dataclasses (keyword or positional
construction, equality, repr) but are :class:`~boincpy.record.Record`
classes, because importing ``dataclasses`` costs a CGI request ~10 ms.

The parser follows the client's dialect the way BOINC's own ``XML_PARSER``
(lib/parse.cpp) reads it, not an XML standard: it works on bytes, text ends at
the next ``<``, entities are BOINC's (``&#NNN;`` is one byte), CDATA is taken
verbatim, comments are skipped, attributes ignored, unknown elements skipped
with their subtree.  Raw blocks are copied up to their literal close tag as
BOINC stores them: ``<global_preferences>``, ``<working_global_preferences>``,
``<code_sign_key>``, a result's ``<stderr_out>`` (CDATA markers and all) and
its ``<file_info>`` elements.  A document that is cut short or lacks its start
tag raises :class:`RequestError` naming the line.
"""

from boincpy.cnum import atof, strtod as c_strtod, strtol as c_strtol
from boincpy.errors import BoincpyError
from boincpy.proc_types import PROC_AMD, PROC_APPLE, PROC_CPU, PROC_INTEL, PROC_NVIDIA
from boincpy.record import Record, factory
from boincpy.xml import MAX_DEPTH, parse_bool, xml_unescape
from boincpy.xml.scan import CDATA, TAG, Scanner

COPROC_TAGS = {"coproc_cuda": PROC_NVIDIA, "coproc_ati": PROC_AMD,
               "coproc_intel_gpu": PROC_INTEL, "coproc_apple_gpu": PROC_APPLE}
# <coproc><type>NAME</type> in app versions and generic <coproc> elements.
COPROC_TYPE_NAMES = {"NVIDIA": PROC_NVIDIA, "CUDA": PROC_NVIDIA, "ATI": PROC_AMD,
                     "intel_gpu": PROC_INTEL, "apple_gpu": PROC_APPLE}
# What BOINC keeps of a trickle-up: msg_from_host.xml is a char[262144] and
# variety a char[256] (safe_strcpy: at most one byte less).
MSG_FROM_HOST_MAX_XML = 262143
MSG_VARIETY_MAX = 255

# db/boinc_db_types.h: a BLOB column's buffer in BOINC's structures (result.xml_doc_out)
BLOB_SIZE = 65536


class RequestError(BoincpyError):
    """The request is not a <scheduler_request> BOINC could read."""

    def __init__(self, message, line=0):
        super().__init__(message)
        self.line = line


class ResourceRequest(Record):
    """Work asked for one processor type (CPU, or one GPU type from <coprocs>).

    ``estimated_delay`` is -1 for a GPU whose element had none (BOINC then
    uses the CPU's).
    """

    FIELDS = (
        ("proc_type", PROC_CPU),
        ("count", 0),                 # instances the host has (GPUs: <count>)
        ("req_secs", 0.0),
        ("req_instances", 0.0),
        ("estimated_delay", 0.0),
        ("peak_flops", 0.0),          # GPUs only
        ("name", ""),                 # GPU model
        ("xml", ""),                  # the raw <coproc_*> element, for plan classes
        ("available_ram", 0.0),       # GPUs only
    )


class HostInfo(Record):
    """<host_info>, <time_stats>, <net_stats> and <disk_usage> (scheduler-protocol.md §4.3)."""

    FIELDS = (
        ("timezone", 0),
        ("domain_name", ""),
        ("ip_addr", ""),
        ("host_cpid", ""),
        ("p_ncpus", 0),
        ("p_vendor", ""),
        ("p_model", ""),
        ("p_features", ""),
        ("p_fpops", 0.0),
        ("p_iops", 0.0),
        ("p_membw", 0.0),
        ("p_calculated", 0.0),
        ("p_vm_extensions_disabled", False),
        ("m_nbytes", 0.0),
        ("m_cache", 0.0),
        ("m_swap", 0.0),
        ("d_total", 0.0),
        ("d_free", 0.0),
        ("os_name", ""),
        ("os_version", ""),
        ("product_name", ""),
        ("mac_address", ""),
        ("virtualbox_version", ""),
        # <time_stats>
        ("on_frac", 1.0),
        ("connected_frac", 1.0),
        ("active_frac", 1.0),
        ("gpu_active_frac", 1.0),
        ("cpu_and_network_available_frac", 1.0),
        ("client_start_time", 0.0),
        ("previous_uptime", 0.0),
        # <net_stats>
        ("n_bwup", 0.0),
        ("n_bwdown", 0.0),
        # <disk_usage>; d_boinc_used_total < 0 means the client did not send it
        ("d_boinc_used_total", -1.0),
        ("d_boinc_used_project", 0.0),
        ("d_project_share", 0.0),
        # 8.x clients
        ("docker_version", ""),
        ("docker_type", 0),
        # raw <opencl_cpu_prop> elements (one per OpenCL platform), for plan classes
        ("opencl_cpu_props", list),
    )


class GlobalPrefs(Record):
    """The fields of global preferences the server uses (0 = not set)."""

    FIELDS = (
        ("mod_time", 0.0),
        ("disk_max_used_gb", 0.0),
        ("disk_max_used_pct", 0.0),
        ("disk_min_free_gb", 0.0),
        ("work_buf_min_days", 0.0),
        ("ram_max_used_busy_pct", 0.0),
        ("ram_max_used_idle_pct", 0.0),
        ("max_ncpus_pct", 0.0),
        ("xml", ""),                  # the raw block, stored in host/user as BOINC does
    )


class ClientAppVersion(Record):
    """One <app_versions>/<app_version> the client has (index = position in the list)."""

    FIELDS = (
        ("app_name", ""),
        ("version_num", 0),
        ("platform", ""),
        ("plan_class", ""),
        ("avg_ncpus", 1.0),
        ("flops", 0.0),
        ("api_version", ""),
        ("cmdline", ""),
        ("coproc_type", ""),          # e.g. "NVIDIA", "" for CPU versions
        ("coproc_count", 0.0),
        ("proc_type", PROC_CPU),      # coproc_type as a processor type
    )


class OtherResult(Record):
    """A task the client holds and is not reporting (<other_results>)."""

    FIELDS = (
        ("name", ""),
        ("app_version", -1),          # index into SchedulerRequest.app_versions
        ("plan_class", ""),
        ("have_plan_class", False),
    )


class IpResult(Record):
    """A task of any project in progress on the host (<in_progress_results>)."""

    FIELDS = (
        ("name", ""),
        ("report_deadline", 0.0),     # absolute, as sent
        ("cpu_time_remaining", None),  # what BOINC reads; None if absent
        ("time_remaining", 0.0),      # what clients since 6.x send
    )


class ReportedResult(Record):
    """A completed task being reported (<result>, scheduler-protocol.md §4.4)."""

    FIELDS = (
        ("name", ""),
        ("state", 0),                 # the client's state -> result.client_state
        ("final_cpu_time", 0.0),
        ("final_elapsed_time", 0.0),
        ("exit_status", 0),
        ("platform", ""),
        ("version_num", 0),
        ("plan_class", ""),
        ("app_version_num", 0),
        ("final_peak_working_set_size", 0.0),
        ("final_peak_swap_size", 0.0),
        ("final_peak_disk_usage", 0.0),
        ("final_bytes_sent", 0.0),
        ("final_bytes_received", 0.0),
        ("stderr_out", ""),           # raw, as BOINC stores it
        ("file_info_xml", ""),        # the <file_info> elements, verbatim -> xml_doc_out
        ("line", 0),                  # where its <result> starts in the request
    )


class MsgFromHost(Record):
    """A trickle-up message (<msg_from_host>)."""

    FIELDS = (
        ("result_name", ""),
        ("time", 0),
        ("variety", ""),
        ("xml", ""),                  # the body as BOINC stores it in msg_from_host.xml
    )


class SchedulerRequest(Record):
    """Everything the scheduler uses from one <scheduler_request>."""

    FIELDS = (
        ("authenticator", ""),
        ("hostid", 0),
        ("rpc_seqno", 0),
        ("core_client_major_version", 0),
        ("core_client_minor_version", 0),
        ("core_client_release", 0),
        ("resource_share_fraction", 1.0),
        ("rrs_fraction", 1.0),
        ("prrs_fraction", 1.0),
        ("duration_correction_factor", 1.0),
        ("allow_multiple_clients", False),
        ("sandbox", False),
        ("dont_send_work", False),
        ("work_req_seconds", 0.0),
        ("client_cap_plan_class", False),
        ("platform_name", ""),
        ("alt_platforms", list),          # [str]
        ("code_sign_key", ""),            # whitespace-stripped; "" when absent
        ("cross_project_id", ""),
        ("client_brand", ""),
        ("client_opaque", ""),
        # The preferences scheduling uses.  The parser fills it from
        # <working_global_preferences>; the handler replaces it with the
        # master or database preferences when BOINC would (§7.4).
        ("global_prefs", GlobalPrefs),
        ("global_prefs_xml", ""),         # <global_preferences> (7.20 master prefs), raw
        ("host", HostInfo),
        # [0] is the CPU request (cpu_req_secs / cpu_req_instances / estimated_delay);
        # then one per GPU type listed in <coprocs>
        ("resources", factory(lambda: [ResourceRequest()])),
        ("results", list),                # [ReportedResult]
        ("app_versions", list),           # [ClientAppVersion]
        ("other_results", list),          # [OtherResult]
        ("have_other_results_list", False),
        ("msgs_from_host", list),         # [MsgFromHost]
        ("sticky_files", list),           # [(name, nbytes)] top-level <file_info>
        ("user_keywords_yes", list),      # [int] <user_keywords><yes> (account managers)
        ("user_keywords_no", list),       # [int] <user_keywords><no>
        # -- added with the parser --
        ("working_global_prefs_xml", ""),  # <working_global_preferences> contents, raw
        ("global_prefs_source_email_hash", ""),
        ("file_xfer_results", list),      # [ReportedResult] names with download/upload
        ("results_truncated", False),     # max_results_accepted dropped some
        ("ip_results", list),             # [IpResult]
        ("have_ip_results_list", False),
        ("time_stats_log", None),         # <time_stats_log> contents (str), raw; None if absent
        ("dont_use_docker", False),
        ("dont_use_wsl", False),
        ("uptime", 0.0),
        ("previous_uptime", 0.0),
        ("unexpected", list),             # [(tag, line)] elements skipped as unknown
    )

    @property
    def core_client_version(self):
        """10000*major + 100*minor + release, as the C++ server computes it (7.20.5 -> 72005)."""
        return (10000 * self.core_client_major_version
                + 100 * self.core_client_minor_version + self.core_client_release)

    @property
    def anonymous_platform(self):
        return self.platform_name == "anonymous"

    @property
    def platforms(self):
        """The primary platform, then the alternates, without repeats."""
        seen = []
        for name in [self.platform_name] + list(self.alt_platforms):
            if name and name not in seen:
                seen.append(name)
        return seen

    def cpu(self):
        """The CPU resource request."""
        return self.resources[0]


# ---------------------------------------------------------------------------
# Leaves as each kind of field reads them, and the fast path over plain leaves
# (tokens: boincpy.xml.scan, BOINC's XML_PARSER over bytes).

def _text(raw):
    """Element text as str: bytes (after unescaping) read as UTF-8."""
    return raw.decode("utf-8", "replace")


# A leaf's unescaped, stripped text as each kind of field reads it; None
# means BOINC would not take the value (the field keeps what it had).
def _as_int(raw):
    # plain decimal digits, not octal, short of INT_MAX: what strtol reads too
    if raw.isdigit() and len(raw) < 10 and (raw[0] != 48 or len(raw) == 1):
        return int(raw)
    return c_strtol(raw.decode("latin-1")) if raw else 0


def _as_float(raw):
    return c_strtod(raw.decode("latin-1")) if raw else 0.0


def _as_bool(raw):
    return parse_bool(raw) if raw else None    # <x></x> is not a boolean to BOINC


_CONVERT = {"str_": _text, "int_": _as_int, "float_": _as_float, "bool_": _as_bool}


def _fast_table(table, slow=(), target=None):
    """A field table (tag -> (attribute, kind)) for _fast_children: the tag as
    bytes -> (its end tag, that tag's length, attribute, converter, target).
    ``target``, if given, maps the object being filled to the one that gets
    the field.  ``slow`` names the other children the container's on_child
    reads itself (False here): they must reach it, not be skipped."""
    fast = {tag.encode(): (("</%s>" % tag).encode(), len(tag) + 3, attr, _CONVERT[kind], target)
            for tag, (attr, kind) in table.items() if tag not in slow}
    fast.update((tag.encode(), False) for tag in slow)
    return fast


def _fast_children(sc, obj, table, end, skip):
    """Read a container's children while they are plain leaves, without tokens
    (a Python-level token per tag was most of a request's parse).

    A child ``<tag>text</tag>`` whose tag is in ``table`` (see _fast_table)
    is stored in ``obj`` as _Parser.fields would; one whose tag is in
    ``skip`` (True: any tag not in ``table``) is skipped as _Parser.skip
    would.  Text between children is dropped, as containers drop text
    tokens.  Returns True after consuming the end tag ``end`` (bytes,
    "/tag"); otherwise stops at the first child it can't be sure of (a
    comment, CDATA, attributes, an empty element, a container, a leaf holding
    markup, a tag it doesn't know...) with ``sc.pos`` at that child's ``<``,
    for the token path to read.  No ``re``: it costs a CGI process ~7 ms to
    import, more than the whole parse.
    """
    d = sc.d
    find = d.find
    startswith = d.startswith
    pos = sc.pos
    while True:
        lt = find(b"<", pos)
        if lt < 0:
            break
        gt = find(b">", lt)
        if gt < 0:
            pos = lt
            break
        name = d[lt + 1:gt]
        entry = table.get(name)
        if entry:
            close, n, attr, convert, target = entry
            # the same test as _Parser.leaf's: the next "<" starts </tag>
            lt2 = find(b"<", gt)
            if lt2 < 0 or not startswith(close, lt2):
                pos = lt
                break
            raw = d[gt + 1:lt2].strip()
            if raw.find(b"&") >= 0:     # (not "in": see boincpy.xml.scan)
                raw = xml_unescape(raw)
            value = convert(raw)
            if value is not None:
                setattr(obj if target is None else target(obj), attr, value)
            pos = lt2 + n
            continue
        if name == end:
            sc.pos = gt + 1
            return True
        # A skipped leaf: the scanner's tag must be the raw name (no white
        # space, which would make attributes; no "/", which would make an
        # empty element; not a comment or CDATA), followed by text and </name>.
        if entry is None and (skip is True or name in skip) and name and name.find(b"/") < 0 \
                and name[:1] != b"!" and name.split() == [name]:
            close = b"</" + name + b">"
            lt2 = find(b"<", gt)
            if lt2 >= 0 and startswith(close, lt2):
                pos = lt2 + len(close)
                continue
        pos = lt
        break
    sc.pos = pos
    return False


class _Parser:
    """Recursive descent over Scanner tokens, one method per container."""

    def __init__(self, data, max_results_accepted=0, fast=True):
        self.s = Scanner(data)
        self.fast = fast        # False: tokens only (the reference the fast path is tested against)
        self.max_results_accepted = max_results_accepted
        self.req = SchedulerRequest()
        self.open = []          # [(tag, offset)] containers being read, for errors
        self.result_names = set()   # of req.results (a set: a client may report thousands)

    # -- errors and skipping -------------------------------------------------

    def fail(self, message, offset=None):
        raise RequestError(message, self.s.line(offset))

    def eof(self):
        """The input ended inside an element: name the innermost open one."""
        if len(self.open) > 1:
            tag, offset = self.open[-1]
            self.fail("no end tag for <%s> (opened at line %d; input ends at line %d)"
                      % (tag, self.s.line(offset), self.s.line(self.s.n)), offset)
        self.fail("no end tag </scheduler_request> (input ends at line %d)"
                  % self.s.line(self.s.n), self.s.n)

    def token(self):
        tok = self.s.next()
        if tok is None:
            self.eof()
        return tok

    def skip(self, tag, offset):
        """Skip an element we don't use, with its subtree (BOINC's skip_unexpected)."""
        if "/" in tag:
            return
        end = "/" + tag
        self.open.append((tag, offset))
        if len(self.open) > MAX_DEPTH:
            self.fail("elements nested more than %d deep" % MAX_DEPTH, offset)
        while True:
            kind, value, start = self.token()
            if kind != TAG:
                continue
            if value == end:
                break
            self.skip(value, start)
        self.open.pop()

    # -- leaves ----------------------------------------------------------------

    def leaf(self, tag, offset):
        """The raw text of <tag>text</tag> (b"" for <tag></tag>), or None when
        the element is malformed (then skipped to its end tag)."""
        if tag.endswith("/"):
            return b""
        # the common case, <tag>text</tag>, without the two tokens
        sc = self.s
        d, pos = sc.d, sc.pos
        lt = d.find(b"<", pos)
        close = b"</" + tag.encode("latin-1") + b">"
        if lt >= 0 and d.startswith(close, lt):
            sc.pos = lt + len(close)
            return xml_unescape(d[pos:lt].strip())
        tok = self.token()
        end = "/" + tag
        if tok[0] == TAG:
            if tok[1] == end:
                return b""
            self.open.append((tag, offset))
            self.skip(tok[1], tok[2])
            self.skip_to(end)
            self.open.pop()
            return None
        value = tok[1] if tok[0] == CDATA else xml_unescape(tok[1])
        tok2 = self.token()
        if tok2[0] == TAG and tok2[1] == end:
            return value
        self.open.append((tag, offset))
        if tok2[0] == TAG:
            self.skip(tok2[1], tok2[2])
        self.skip_to(end)
        self.open.pop()
        return None

    def skip_to(self, end):
        while True:
            kind, value, start = self.token()
            if kind == TAG:
                if value == end:
                    return
                self.skip(value, start)

    def str_(self, tag, offset):
        raw = self.leaf(tag, offset)
        return None if raw is None else _text(raw)

    def int_(self, tag, offset):
        if tag.endswith("/"):
            return None
        raw = self.leaf(tag, offset)
        return None if raw is None else _as_int(raw)

    def float_(self, tag, offset):
        if tag.endswith("/"):
            return None
        raw = self.leaf(tag, offset)
        return None if raw is None else _as_float(raw)

    def bool_(self, tag, offset):
        if tag.endswith("/"):
            return True
        raw = self.leaf(tag, offset)
        return None if raw is None else _as_bool(raw)

    def fields(self, obj, tag, offset, table):
        """Read one leaf listed in ``table`` (tag -> (attribute, kind)) into ``obj``;
        False when ``tag`` is not in the table."""
        entry = table.get(tag.rstrip("/"))
        if entry is None:
            return False
        attr, kind = entry
        value = getattr(self, kind)(tag, offset)
        if value is not None:
            setattr(obj, attr, value)
        return True

    def container(self, tag, offset, on_child, obj=None, fast=None):
        """Call ``on_child(tag, offset)`` for each child until </tag>; unknown
        children (on_child returns False) are skipped with their subtree.

        ``fast`` (a _fast_table, for an on_child that reads those leaves into
        ``obj`` with fields()) lets runs of plain leaves skip the tokens."""
        end = "/" + tag
        self.open.append((tag, offset))
        if fast is not None and self.fast:
            endb = end.encode("latin-1")
            # skip() would refuse a child this deep; leave that to it
            skip = True if len(self.open) < MAX_DEPTH else ()
        else:
            fast = None
        while True:
            if fast is not None and _fast_children(self.s, obj, fast, endb, skip):
                break
            kind, value, start = self.token()
            if kind != TAG:
                continue
            if value == end:
                break
            if not on_child(value, start):
                self.skip(value, start)
        self.open.pop()

    def raw_block(self, tag, offset):
        """Bytes up to the literal </tag> (BOINC's copy_element_contents)."""
        raw = self.s.raw_until(b"</" + tag.encode() + b">")
        if raw is None:
            self.fail("no </%s> for <%s> opened at line %d" % (tag, tag, self.s.line(offset)),
                      offset)
        return raw

    # -- the document ------------------------------------------------------------

    def parse(self):
        s = self.s
        tok = s.next()
        if tok is not None and tok[0] == TAG and tok[1].startswith("?xml"):
            tok = s.next()
        if tok is None or tok[0] != TAG or tok[1] != "scheduler_request":
            where = tok[2] if tok else 0
            what = ("<%s>" % tok[1]) if tok and tok[0] == TAG else (
                "text" if tok else "nothing")
            self.fail("no start tag <scheduler_request> (found %s at line %d)"
                      % (what, s.line(where)), where)
        self.open.append(("scheduler_request", tok[2]))
        req = self.req
        top = _TOP_FIELDS
        handlers = _TOP_HANDLERS
        fast = self.fast
        while True:
            # unknown elements are not skipped here: they are logged with a line
            if fast and _fast_children(s, req, _TOP_FAST, b"/scheduler_request",
                                       _IGNORED_TOP_BYTES):
                break
            kind, tag, start = self.token()
            if kind != TAG:
                continue
            if tag == "/scheduler_request":
                break
            if tag in top or tag.rstrip("/") in top:
                self.fields(req, tag, start, top)
                continue
            handler = handlers.get(tag)
            if handler is not None:
                handler(self, tag, start)
                continue
            if tag in _IGNORED_TOP or tag.startswith("/"):
                self.skip(tag, start)
                continue
            req.unexpected.append((tag, s.line(start)))
            self.skip(tag, start)
        self.open.pop()
        if "'" in req.authenticator or '"' in req.authenticator:
            # BOINC truncates at a quote (its SQL-safety measure)
            auth = req.authenticator
            cut = min(i for i in (auth.find("'"), auth.find('"')) if i >= 0)
            req.authenticator = auth[:cut]
        req.resources[0].count = req.host.p_ncpus
        return req

    # -- containers ----------------------------------------------------------------

    def alt_platform(self, tag, offset):
        box = {}

        def child(t, o):
            if t == "name":
                value = self.str_(t, o)
                if value is not None:
                    box["name"] = value
                return True
            return False
        if tag.endswith("/"):
            return
        self.container(tag, offset, child)
        if box.get("name"):
            self.req.alt_platforms.append(box["name"])

    def host_info(self, tag, offset):
        if tag.endswith("/"):
            return
        host = self.req.host
        host.p_ncpus = 1            # BOINC's HOST::parse default

        def child(t, o):
            if t == "opencl_cpu_prop":
                host.opencl_cpu_props.append(_text(self.raw_block(t, o)))
                return True
            return self.fields(host, t, o, _HOST_INFO_FIELDS)
        self.container(tag, offset, child, host, _HOST_INFO_FAST)

    def time_stats(self, tag, offset):
        if tag.endswith("/"):
            return
        host = self.req.host
        self.container(tag, offset, lambda t, o: self.fields(host, t, o, _TIME_STATS_FIELDS),
                       host, _TIME_STATS_FAST)

    def net_stats(self, tag, offset):
        if tag.endswith("/"):
            return
        host = self.req.host
        self.container(tag, offset, lambda t, o: self.fields(host, t, o, _NET_STATS_FIELDS),
                       host, _NET_STATS_FAST)

    def disk_usage(self, tag, offset):
        if tag.endswith("/"):
            return
        host = self.req.host
        self.container(tag, offset, lambda t, o: self.fields(host, t, o, _DISK_USAGE_FIELDS),
                       host, _DISK_USAGE_FAST)

    def global_preferences(self, tag, offset):
        if tag.endswith("/"):
            return
        raw = self.s.raw_until(b"</global_preferences>")
        if raw is None:
            self.fail("error copying global prefs: no </global_preferences> for the "
                      "element opened at line %d" % self.s.line(offset), offset)
        self.req.global_prefs_xml = ("<global_preferences>\n" + _text(raw.strip())
                                     + "\n</global_preferences>\n")

    def working_global_preferences(self, tag, offset):
        if tag.endswith("/"):
            return
        raw = self.s.raw_until(b"</working_global_preferences>")
        if raw is None:
            self.fail("error copying working global prefs: no "
                      "</working_global_preferences> for the element opened at line %d"
                      % self.s.line(offset), offset)
        xml = _text(raw.strip())
        self.req.working_global_prefs_xml = xml
        self.req.global_prefs = parse_global_prefs(xml)

    def code_sign_key(self, tag, offset):
        if tag.endswith("/"):
            return
        self.req.code_sign_key = _text(self.raw_block(tag, offset).strip())

    def result(self, tag, offset):
        if tag.endswith("/"):
            return
        res = ReportedResult(line=self.s.line(offset))
        file_infos, size = [], [0]

        def child(t, o):
            if self.fields(res, t, o, _RESULT_FIELDS):
                return True
            if t == "stderr_out":
                res.stderr_out = _text(self.raw_block(t, o))
                return True
            if t == "file_info":
                raw = self.raw_block(t, o)
                # BOINC's safe_strcat into xml_doc_out[BLOB_SIZE]: a file_info
                # that would overflow it is left out whole, never cut
                if size[0] + len(raw) + 23 < BLOB_SIZE:
                    size[0] += len(raw) + 23
                    file_infos.append("<file_info>" + _text(raw.strip()) + "</file_info>")
                return True
            return False
        self.container(tag, offset, child, res, _RESULT_FAST)
        res.file_info_xml = "".join(file_infos)
        if not res.name:
            return                      # BOINC drops a result without a name
        req = self.req
        if "download" in res.name or "upload" in res.name:
            req.file_xfer_results.append(res)
            return
        if self.max_results_accepted and len(req.results) >= self.max_results_accepted:
            req.results_truncated = True
            return
        if res.name in self.result_names:
            return                      # reported twice in one request: once is enough
        self.result_names.add(res.name)
        req.results.append(res)

    def app_versions(self, tag, offset):
        if tag.endswith("/"):
            return

        def child(t, o):
            if t == "app_version":
                self.req.app_versions.append(self.app_version(t, o))
                return True
            return False
        self.container(tag, offset, child)

    def app_version(self, tag, offset):
        cav = ClientAppVersion()
        if tag.endswith("/"):
            return cav

        def child(t, o):
            if self.fields(cav, t, o, _APP_VERSION_FIELDS):
                return True
            if t == "coproc":
                box = {}
                self.container(t, o, lambda t2, o2: self._dict_leaf(box, t2, o2,
                                                                     _COPROC_REQ_FIELDS))
                ctype = box.get("type", "")
                if ctype in COPROC_TYPE_NAMES:
                    cav.coproc_type = ctype
                    cav.coproc_count = box.get("count", 0.0)
                    cav.proc_type = COPROC_TYPE_NAMES[ctype]
                return True
            return False
        self.container(tag, offset, child, cav, _APP_VERSION_FAST)
        if cav.avg_ncpus <= 0:
            cav.avg_ncpus = 1.0
        if cav.flops < 0:
            cav.flops = 0.0
        return cav

    def _dict_leaf(self, box, tag, offset, table):
        entry = table.get(tag.rstrip("/"))
        if entry is None:
            return False
        key, kind = entry
        value = getattr(self, kind)(tag, offset)
        if value is not None:
            box[key] = value
        return True

    def other_results(self, tag, offset):
        self.req.have_other_results_list = True
        if tag.endswith("/"):
            return

        def child(t, o):
            if t == "other_result":
                orr = OtherResult()

                def leaf(t2, o2):
                    if self.fields(orr, t2, o2, _OTHER_RESULT_FIELDS):
                        if t2.rstrip("/") == "plan_class":
                            orr.have_plan_class = True
                        return True
                    return False
                if not t.endswith("/"):
                    self.container(t, o, leaf, orr, _OTHER_RESULT_FAST)
                if orr.name:
                    self.req.other_results.append(orr)
                return True
            return False
        self.container(tag, offset, child)

    def in_progress_results(self, tag, offset):
        self.req.have_ip_results_list = True
        if tag.endswith("/"):
            return

        def child(t, o):
            if t == "ip_result":
                ipr = IpResult()
                if not t.endswith("/"):
                    self.container(t, o, lambda t2, o2: self.fields(ipr, t2, o2, _IP_RESULT_FIELDS),
                                   ipr, _IP_RESULT_FAST)
                if not ipr.name:
                    ipr.name = "ip%d" % len(self.req.ip_results)
                self.req.ip_results.append(ipr)
                return True
            return False
        self.container(tag, offset, child)

    def coprocs(self, tag, offset):
        if tag.endswith("/"):
            return

        def child(t, o):
            proc_type = COPROC_TAGS.get(t)
            if proc_type is None and t != "coproc":
                return False
            start = o
            rr = ResourceRequest(proc_type=proc_type or 0, estimated_delay=-1.0)
            box = {}
            self.container(t, o, lambda t2, o2: self._dict_leaf(box, t2, o2, _COPROC_FIELDS))
            rr.xml = _text(self.s.d[start:self.s.pos])
            if t == "coproc":
                rr.proc_type = COPROC_TYPE_NAMES.get(box.get("type", ""), 0)
                if not rr.proc_type:
                    return True         # a coprocessor type BOINC doesn't schedule
            for key, value in box.items():
                if key != "type":
                    setattr(rr, key, value)
            if rr.count > 0 and not any(r.proc_type == rr.proc_type for r in self.req.resources):
                self.req.resources.append(rr)
            return True
        self.container(tag, offset, child)

    def sticky_file_info(self, tag, offset):
        if tag.endswith("/"):
            return
        box = {}
        self.container(tag, offset, lambda t, o: self._dict_leaf(box, t, o, _FILE_INFO_FIELDS))
        if box.get("name"):
            self.req.sticky_files.append((box["name"], box.get("nbytes", 0.0)))

    def time_stats_log(self, tag, offset):
        """<time_stats_log>: kept raw, as BOINC's dup_element_contents, to be
        written once the host is known (request_time_stats_log)."""
        if tag.endswith("/"):
            self.req.time_stats_log = ""
            return
        self.req.time_stats_log = _text(self.raw_block(tag, offset))

    def user_keywords(self, tag, offset):
        """<user_keywords> (USER_KEYWORDS::parse): <yes>N</yes> and <no>N</no>
        keyword ids, for keyword scheduling."""
        if tag.endswith("/"):
            return
        yes, no = self.req.user_keywords_yes, self.req.user_keywords_no
        del yes[:], no[:]

        def child(t, o):
            name = t.rstrip("/")
            if name not in ("yes", "no"):
                return False
            value = self.int_(t, o)
            if value is not None:
                (yes if name == "yes" else no).append(value)
            return True
        self.container(tag, offset, child)

    def msg_from_host(self, tag, offset):
        if tag.endswith("/"):
            return
        # BOINC reads this element line by line: every line up to the one
        # holding </msg_from_host>, except <variety> lines, is the message.
        raw = self.s.raw_until(b"</msg_from_host>")
        if raw is None:
            self.fail("no </msg_from_host> for <msg_from_host> opened at line %d"
                      % self.s.line(offset), offset)
        lines = raw.split(b"\n")
        lines = [ln + b"\n" for ln in lines[:-1]]      # the last piece ends at the close tag
        msg = MsgFromHost()
        body = []
        for ln in lines:
            if b"<variety>" in ln:
                msg.variety = _inner(ln, b"variety", MSG_VARIETY_MAX)
                continue
            if b"<result_name>" in ln:
                msg.result_name = _inner(ln, b"result_name")
            elif b"<time>" in ln:
                msg.time = c_strtol(_inner(ln, b"time")) or 0
            body.append(ln)
        msg.xml = _text(b"".join(body)[:MSG_FROM_HOST_MAX_XML])
        self.req.msgs_from_host.append(msg)


def _inner(line, tag, limit=None):
    start = line.find(b"<" + tag + b">") + len(tag) + 2
    end = line.find(b"</" + tag + b">", start)
    value = xml_unescape(line[start:end if end >= 0 else len(line)].strip())
    return _text(value[:limit] if limit else value)


_TOP_FIELDS = {
    "authenticator": ("authenticator", "str_"),
    "cross_project_id": ("cross_project_id", "str_"),
    "hostid": ("hostid", "int_"),
    "rpc_seqno": ("rpc_seqno", "int_"),
    "uptime": ("uptime", "float_"),
    "previous_uptime": ("previous_uptime", "float_"),
    "platform_name": ("platform_name", "str_"),
    "core_client_major_version": ("core_client_major_version", "int_"),
    "core_client_minor_version": ("core_client_minor_version", "int_"),
    "core_client_release": ("core_client_release", "int_"),
    "work_req_seconds": ("work_req_seconds", "float_"),
    "resource_share_fraction": ("resource_share_fraction", "float_"),
    "rrs_fraction": ("rrs_fraction", "float_"),
    "prrs_fraction": ("prrs_fraction", "float_"),
    "duration_correction_factor": ("duration_correction_factor", "float_"),
    "dont_send_work": ("dont_send_work", "bool_"),
    "dont_use_docker": ("dont_use_docker", "bool_"),
    "dont_use_wsl": ("dont_use_wsl", "bool_"),
    "global_prefs_source_email_hash": ("global_prefs_source_email_hash", "str_"),
    "client_cap_plan_class": ("client_cap_plan_class", "bool_"),
    "sandbox": ("sandbox", "bool_"),
    "allow_multiple_clients": ("allow_multiple_clients", "bool_"),
    "client_brand": ("client_brand", "str_"),
    "client_opaque": ("client_opaque", "str_"),
}


_CPU_FIELDS = {
    "cpu_req_secs": ("req_secs", "float_"),
    "cpu_req_instances": ("req_instances", "float_"),
    "estimated_delay": ("estimated_delay", "float_"),
}


def _cpu_field(parser, tag, offset):
    parser.fields(parser.req.resources[0], tag, offset, _CPU_FIELDS)


_TOP_HANDLERS = {
    "alt_platform": _Parser.alt_platform,
    "host_info": _Parser.host_info,
    "time_stats": _Parser.time_stats,
    "net_stats": _Parser.net_stats,
    "disk_usage": _Parser.disk_usage,
    "global_preferences": _Parser.global_preferences,
    "working_global_preferences": _Parser.working_global_preferences,
    "code_sign_key": _Parser.code_sign_key,
    "result": _Parser.result,
    "app_versions": _Parser.app_versions,
    "other_results": _Parser.other_results,
    "in_progress_results": _Parser.in_progress_results,
    "coprocs": _Parser.coprocs,
    "file_info": _Parser.sticky_file_info,
    "user_keywords": _Parser.user_keywords,
    "msg_from_host": _Parser.msg_from_host,
    "time_stats_log": _Parser.time_stats_log,
    "cpu_req_secs": _cpu_field,
    "cpu_req_instances": _cpu_field,
    "estimated_delay": _cpu_field,
}

# Elements BOINC skips without a log line (legacy or unused).
_IGNORED_TOP = frozenset((
    "host_venue", "job_log", "daily_xfer_history",
    "active_task_set", "app", "app_version", "duration_variability",
    "new_version_check_time", "newer_version", "project", "project_files", "proxy_info",
    "user_network_request", "user_run_request", "master_url", "project_name",
    "user_name", "team_name", "email_hash", "user_total_credit", "user_expavg_credit",
    "user_create_time", "host_total_credit", "host_expavg_credit", "host_create_time",
    "nrpc_failures", "master_fetch_failures", "min_rpc_time", "short_term_debt",
    "long_term_debt", "resource_share", "scheduler_url", "?xml",
))

_HOST_INFO_FIELDS = {
    "timezone": ("timezone", "int_"),
    "domain_name": ("domain_name", "str_"),
    "ip_addr": ("ip_addr", "str_"),
    "host_cpid": ("host_cpid", "str_"),
    "p_ncpus": ("p_ncpus", "int_"),
    "p_vendor": ("p_vendor", "str_"),
    "p_model": ("p_model", "str_"),
    "p_features": ("p_features", "str_"),
    "p_fpops": ("p_fpops", "float_"),
    "p_iops": ("p_iops", "float_"),
    "p_membw": ("p_membw", "float_"),
    "p_calculated": ("p_calculated", "float_"),
    "p_vm_extensions_disabled": ("p_vm_extensions_disabled", "bool_"),
    "m_nbytes": ("m_nbytes", "float_"),
    "m_cache": ("m_cache", "float_"),
    "m_swap": ("m_swap", "float_"),
    "d_total": ("d_total", "float_"),
    "d_free": ("d_free", "float_"),
    "os_name": ("os_name", "str_"),
    "os_version": ("os_version", "str_"),
    "product_name": ("product_name", "str_"),
    "mac_address": ("mac_address", "str_"),
    "virtualbox_version": ("virtualbox_version", "str_"),
    "docker_version": ("docker_version", "str_"),
    "docker_type": ("docker_type", "int_"),
    "n_bwup": ("n_bwup", "float_"),
    "n_bwdown": ("n_bwdown", "float_"),
}

_TIME_STATS_FIELDS = {
    "on_frac": ("on_frac", "float_"),
    "connected_frac": ("connected_frac", "float_"),
    "active_frac": ("active_frac", "float_"),
    "gpu_active_frac": ("gpu_active_frac", "float_"),
    "cpu_and_network_available_frac": ("cpu_and_network_available_frac", "float_"),
    "client_start_time": ("client_start_time", "float_"),
    "previous_uptime": ("previous_uptime", "float_"),
}

_NET_STATS_FIELDS = {
    "bwup": ("n_bwup", "float_"),
    "bwdown": ("n_bwdown", "float_"),
}

_DISK_USAGE_FIELDS = {
    "d_boinc_used_total": ("d_boinc_used_total", "float_"),
    "d_boinc_used_project": ("d_boinc_used_project", "float_"),
    "d_project_share": ("d_project_share", "float_"),
}

_RESULT_FIELDS = {
    "name": ("name", "str_"),
    "state": ("state", "int_"),
    "final_cpu_time": ("final_cpu_time", "float_"),
    "final_elapsed_time": ("final_elapsed_time", "float_"),
    "final_peak_working_set_size": ("final_peak_working_set_size", "float_"),
    "final_peak_swap_size": ("final_peak_swap_size", "float_"),
    "final_peak_disk_usage": ("final_peak_disk_usage", "float_"),
    "final_bytes_sent": ("final_bytes_sent", "float_"),
    "final_bytes_received": ("final_bytes_received", "float_"),
    "exit_status": ("exit_status", "int_"),
    "app_version_num": ("app_version_num", "int_"),
    "platform": ("platform", "str_"),
    "version_num": ("version_num", "int_"),
    "plan_class": ("plan_class", "str_"),
}

_APP_VERSION_FIELDS = {
    "app_name": ("app_name", "str_"),
    "platform": ("platform", "str_"),
    "plan_class": ("plan_class", "str_"),
    "version_num": ("version_num", "int_"),
    "avg_ncpus": ("avg_ncpus", "float_"),
    "flops": ("flops", "float_"),
    "api_version": ("api_version", "str_"),
    "cmdline": ("cmdline", "str_"),
}

_COPROC_REQ_FIELDS = {
    "type": ("type", "str_"),
    "count": ("count", "float_"),
}

_OTHER_RESULT_FIELDS = {
    "name": ("name", "str_"),
    "app_version": ("app_version", "int_"),
    "plan_class": ("plan_class", "str_"),
}

_IP_RESULT_FIELDS = {
    "name": ("name", "str_"),
    "report_deadline": ("report_deadline", "float_"),
    "cpu_time_remaining": ("cpu_time_remaining", "float_"),
    "time_remaining": ("time_remaining", "float_"),
}

_COPROC_FIELDS = {
    "type": ("type", "str_"),
    "count": ("count", "int_"),
    "name": ("name", "str_"),
    "peak_flops": ("peak_flops", "float_"),
    "req_secs": ("req_secs", "float_"),
    "req_instances": ("req_instances", "float_"),
    "estimated_delay": ("estimated_delay", "float_"),
    "available_ram": ("available_ram", "float_"),
}

_FILE_INFO_FIELDS = {
    "name": ("name", "str_"),
    "nbytes": ("nbytes", "float_"),
}


# The same tables for _fast_children, with the children each container's
# on_child reads besides its fields (keep them in step with the methods).
# <other_result>'s <plan_class> also sets have_plan_class.  At the top, only
# elements BOINC ignores are skipped: the handlers' reach parse()'s loop.
_TOP_FAST = {**_fast_table(_TOP_FIELDS),
             **_fast_table(_CPU_FIELDS, target=lambda req: req.resources[0])}
_IGNORED_TOP_BYTES = frozenset(tag.encode() for tag in _IGNORED_TOP)
_HOST_INFO_FAST = _fast_table(_HOST_INFO_FIELDS, slow=("opencl_cpu_prop",))
_TIME_STATS_FAST = _fast_table(_TIME_STATS_FIELDS)
_NET_STATS_FAST = _fast_table(_NET_STATS_FIELDS)
_DISK_USAGE_FAST = _fast_table(_DISK_USAGE_FIELDS)
_RESULT_FAST = _fast_table(_RESULT_FIELDS, slow=("stderr_out", "file_info"))
_APP_VERSION_FAST = _fast_table(_APP_VERSION_FIELDS, slow=("coproc",))
_OTHER_RESULT_FAST = _fast_table(_OTHER_RESULT_FIELDS, slow=("plan_class",))
_IP_RESULT_FAST = _fast_table(_IP_RESULT_FIELDS)


def parse_request(data, max_results_accepted=0):
    """Parse a client's <scheduler_request> (bytes) into a SchedulerRequest.

    Lenient where BOINC's parser is (unescaped text, unknown elements, bad
    numbers are skipped); raises :class:`RequestError` (with ``line``) when
    the document has no <scheduler_request> start tag or ends before its end
    tag.  ``max_results_accepted`` (config option) caps the reported results
    kept; the rest set ``results_truncated``.
    """
    if isinstance(data, str):
        data = data.encode("utf-8")
    return _Parser(data, max_results_accepted).parse()


# ---------------------------------------------------------------------------
# Global preferences (BOINC's GLOBAL_PREFS::parse, venue-aware)

def _find_double(text, tag):
    """BOINC's parse_double(buf, "<tag>", x): the number after the first <tag>."""
    start = text.find("<%s>" % tag)
    if start < 0:
        return None
    start += len(tag) + 2
    # strtod reads a prefix, up to the next tag or line at the most
    value = text[start:start + 400].split("<", 1)[0].split("\n", 1)[0]
    # the usual "0.010000" is all number, read by float() as by atof (and
    # finite, this short); atof walks the rest a character at a time
    if len(value) < 300 and value.isascii() and value.replace(".", "", 1).isdigit():
        return float(value)
    return atof(value)


def extract_venue(text, venue):
    """The <venue name="VENUE"> section of prefs if present, else the prefs
    without any venue sections (BOINC's extract_venue)."""
    if venue:
        head = '<venue name="%s">' % venue
        start = text.find(head)
        if start >= 0:
            start += len(head)
            end = text.find("</venue>", start)
            return text[start:end if end >= 0 else len(text)]
    out = []
    pos = 0
    while True:
        start = text.find("<venue", pos)
        if start < 0:
            out.append(text[pos:])
            break
        out.append(text[pos:start])
        end = text.find("</venue>", start)
        if end < 0:
            break
        pos = end + len("</venue>")
    return "".join(out)


def parse_global_prefs(xml, venue="", now=None):
    """The GlobalPrefs in a <global_preferences> block (mod_time clamped to now)."""
    import time
    prefs = GlobalPrefs(xml=xml)
    if not xml:
        return prefs
    now = time.time() if now is None else now
    mod_time = _find_double(xml, "mod_time")
    if mod_time is not None:
        prefs.mod_time = min(mod_time, now)
    section = extract_venue(xml, venue)
    for name in ("disk_max_used_gb", "disk_max_used_pct", "disk_min_free_gb",
                 "work_buf_min_days", "ram_max_used_busy_pct", "ram_max_used_idle_pct",
                 "max_ncpus_pct"):
        value = _find_double(section, name)
        if value is not None:
            setattr(prefs, name, value)
    return prefs


def prefs_mod_time(xml, now=None):
    """The <mod_time> of a prefs block, clamped to now (0 when absent)."""
    import time
    value = _find_double(xml, "mod_time") if xml else None
    if value is None:
        return 0.0
    now = time.time() if now is None else now
    return min(value, now)
