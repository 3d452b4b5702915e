"""Remote job submission, the client side: BOINC's submission web RPCs over HTTP.

A scientist's machine talks to a project (boincpy's or BOINC's own PHP server)
through three handlers under the master URL:

* ``submit_rpc_handler.php``: batches and jobs (submit_batch, query_batch ...);
* ``job_file.php``: input files named by content (query_files, upload_files);
* ``get_output.php`` / ``get_output2.php``: output files, one by one or zipped.

:class:`SubmitClient` has one typed method per operation.  Requests are BOINC's
XML, with the elements in the order BOINC's own clients send them, but every
value escaped (BOINC's Python binding pastes values in with ``%``).  Replies
are read as the GAHP reads them: PHP notices printed into the XML are skipped,
and an ``<error>`` reply becomes a :class:`~boincpy.errors.SubmitError` with
its ``error_num`` and ``error_msg``.

This module needs only the standard library and boincpy's lowest floor, so a
scientist can use it without the server's packages (database driver, lxml).
"""

import functools
import hashlib
import html
import os
import re
import secrets
import tempfile
import urllib.error
import urllib.parse
import urllib.request
import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass, field

from boincpy import __version__
from boincpy.errors import SubmitError
from boincpy.files import job_file_name as _content_name, md5_file
from boincpy.states import BatchState
from boincpy.xml import xml_escape, xml_unescape

RPC_HANDLER = "submit_rpc_handler.php"
FILE_HANDLER = "job_file.php"
OUTPUT_HANDLER = "get_output.php"
OUTPUT2_HANDLER = "get_output2.php"

USER_AGENT = "boincpy remote job submission %s" % __version__
DEFAULT_TIMEOUT = 300.0     # seconds without a byte; a 10,000-job submit_batch is slow

# Input file modes BOINC's submit_batch knows (see FileDesc).
FILE_MODES = ("local_staged", "inline", "remote", "local", "semilocal")

# upload_files sends at most this many files, and about this many bytes, per
# request: PHP drops the files beyond max_file_uploads (default 20), after
# which the handler refuses the request for a count mismatch.
UPLOAD_MAX_FILES = 20
UPLOAD_MAX_BYTES = 32 << 20

# BOINC's batch_state_string()
BATCH_STATE_NAMES = {
    BatchState.INIT: "uninitialized",
    BatchState.IN_PROGRESS: "in progress",
    BatchState.COMPLETE: "completed",
    BatchState.ABORTED: "aborted",
    BatchState.RETIRED: "retired",
}

_BLOCK = 1 << 16


# ---------------------------------------------------------------------------
# What a submitter describes

def _failure(message, op=None):
    """A SubmitError of the client's own (``num`` None: not the server's
    ``<error>``)."""
    return SubmitError(message, None, op=op)


def _text(tag, value):
    return "<%s>%s</%s>\n" % (tag, xml_escape(value), tag)


def _fixed(tag, value):
    """A number as BOINC's clients print a double: %f."""
    return "<%s>%f</%s>\n" % (tag, float(value), tag)


def _integer(tag, value):
    return "<%s>%d</%s>\n" % (tag, int(value), tag)


@dataclass
class FileDesc:
    """One input file of a job.

    ``mode`` says what ``source`` is:

    * ``local_staged``: the physical name of a file already in the project's
      download hierarchy (uploaded with :meth:`SubmitClient.stage_files`);
    * ``inline``: the file's content (text), which the server stores;
    * ``local``: a path on the server; ``semilocal``: a URL the server fetches
      (a server may refuse both);
    * ``remote``: nothing: the volunteers' clients fetch ``url`` themselves,
      and ``nbytes`` and ``md5`` must be given.
    """

    source: str = ""
    mode: str = "local_staged"
    url: str = ""
    nbytes: float = 0
    md5: str = ""

    def __post_init__(self):
        if self.mode not in FILE_MODES:
            raise _failure("input file mode %r: not one of %s"
                           % (self.mode, ", ".join(FILE_MODES)))
        if self.mode == "remote":
            if not self.url or not self.md5 or not self.nbytes:
                raise _failure("a remote input file needs url, nbytes and md5")
        elif self.mode != "inline" and not self.source:
            raise _failure("a %s input file needs a source" % self.mode)

    @classmethod
    def staged(cls, phys_name):
        """A file already on the server under ``phys_name``."""
        return cls(source=phys_name, mode="local_staged")

    @classmethod
    def inline(cls, content):
        """A file given by its content (text)."""
        return cls(source=content, mode="inline")

    @classmethod
    def remote(cls, url, nbytes, md5):
        """A file the volunteers' clients download from ``url``."""
        return cls(mode="remote", url=url, nbytes=nbytes, md5=md5)

    def to_xml(self):
        """The ``<input_file>`` element."""
        if self.mode == "remote":
            body = (_text("mode", "remote") + _text("url", self.url)
                    + _fixed("nbytes", self.nbytes) + _text("md5", self.md5))
        else:
            body = _text("mode", self.mode) + _text("source", self.source)
        return "<input_file>\n%s</input_file>\n" % body


@functools.lru_cache(maxsize=64)       # a batch's jobs mostly share one template
def template_xml(text, root):
    """A per-job template as its ``<root>`` element: ``text`` is a template
    file's content, with or without that root element (older templates lack
    it).  Raises SubmitError if it is not well-formed XML."""
    body = re.sub(r"^\s*<\?xml[^>]*\?>", "", text).strip()
    try:
        parsed = ElementTree.fromstring(body)
    except ElementTree.ParseError:
        parsed = None
    if parsed is None or parsed.tag != root:
        body = "<%s>\n%s\n</%s>" % (root, body, root)
        try:
            ElementTree.fromstring(body)
        except ElementTree.ParseError as exc:
            raise _failure("%s is not well-formed XML: %s" % (root, exc)) from None
    return body


@dataclass
class JobDesc:
    """One job of a batch.  Unset fields are not sent: the server then uses
    the app's templates and its defaults.  ``input_template`` and
    ``output_template`` are template texts (see :func:`template_xml`).  At
    most one of ``target_user``, ``target_host`` and ``target_team``."""

    name: str = None
    files: list = field(default_factory=list)
    rsc_fpops_est: float = None
    command_line: str = None
    input_template: str = None
    output_template: str = None
    priority: int = None
    target_user: int = None
    target_host: int = None
    target_team: int = None

    def __post_init__(self):
        targets = [t for t in (self.target_user, self.target_host, self.target_team) if t]
        if len(targets) > 1:
            raise _failure("job %s: give one of target_user, target_host, target_team"
                           % (self.name or ""))

    def to_xml(self):
        """The ``<job>`` element (BOINC's Python binding's order; targets, which
        no BOINC client sends, before the input files)."""
        out = ["<job>\n"]
        if self.name is not None:
            out.append(_text("name", self.name))
        if self.rsc_fpops_est is not None:
            out.append(_fixed("rsc_fpops_est", self.rsc_fpops_est))
        if self.command_line is not None:
            out.append(_text("command_line", self.command_line))
        if self.input_template is not None:
            out.append(template_xml(self.input_template, "input_template") + "\n")
        if self.output_template is not None:
            out.append(template_xml(self.output_template, "output_template") + "\n")
        if self.priority is not None:
            out.append(_integer("priority", self.priority))
        for tag in ("target_user", "target_host", "target_team"):
            if getattr(self, tag):
                out.append(_integer(tag, getattr(self, tag)))
        out += [f.to_xml() for f in self.files]
        out.append("</job>\n")
        return "".join(out)


@dataclass
class JobParams:
    """Batch-wide job parameters (the GAHP's ``<job_params>``); 0 = the
    server's default."""

    rsc_disk_bound: float = 0
    rsc_fpops_est: float = 0
    rsc_fpops_bound: float = 0
    rsc_memory_bound: float = 0
    delay_bound: float = 0

    def to_xml(self):
        """The ``<job_params>`` element."""
        return "<job_params>\n%s</job_params>\n" % "".join(
            _fixed(tag, getattr(self, tag)) for tag in
            ("rsc_disk_bound", "rsc_fpops_est", "rsc_fpops_bound", "rsc_memory_bound",
             "delay_bound"))


@dataclass
class BatchDesc:
    """A batch to estimate or submit.  With ``batch_id`` the jobs go into a
    batch made by :meth:`SubmitClient.create_batch`; without it submit_batch
    makes the batch, named ``batch_name`` (or a name the server chooses)."""

    app_name: str
    jobs: list = field(default_factory=list)
    batch_id: int = None
    batch_name: str = None
    app_version_num: int = 0
    priority: int = None
    allocation_priority: bool = False
    job_params: JobParams = None

    def to_xml(self, op, authenticator):
        """The whole request of ``op`` (submit_batch or estimate_batch)."""
        out = ["<%s>\n" % op, _text("authenticator", authenticator), "<batch>\n",
               _text("app_name", self.app_name)]
        if self.batch_id is not None:
            out.append(_integer("batch_id", self.batch_id))
        elif self.batch_name is not None:
            out.append(_text("batch_name", self.batch_name))
        if self.app_version_num is not None:
            out.append(_integer("app_version_num", self.app_version_num))
        if self.allocation_priority:
            out.append("<allocation_priority/>\n")
        if self.priority is not None:
            out.append(_integer("priority", self.priority))
        if self.job_params is not None:
            out.append(self.job_params.to_xml())
        out += [job.to_xml() for job in self.jobs]
        out.append("</batch>\n</%s>\n" % op)
        return "".join(out)


# ---------------------------------------------------------------------------
# What the server answers

def _child(element, tag):
    node = element.find(tag)
    if node is None:
        return None
    return (node.text or "").strip()


def _as_int(text, tag):
    """A reply's integer, also when printed as a double ("1796250771.0")."""
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return int(float(text))
    except ValueError:
        raise _failure("reply: <%s> is not a number: %r" % (tag, text)) from None


def _int(element, tag, default=0):
    text = _child(element, tag)
    return _as_int(text, tag) if text else default


def _float(element, tag, default=0.0):
    text = _child(element, tag)
    if not text:
        return default
    try:
        return float(text)
    except ValueError:
        raise _failure("reply: <%s> is not a number: %r" % (tag, text)) from None


@dataclass
class JobStatus:
    """A job (workunit) of query_batch.  ``status`` (queued, in_progress,
    done, error), ``cpu_time`` (of the canonical instance), ``errors`` (the
    workunit's error flags, e.g. "cancelled") and ``exit_statuses`` (of
    failed instances) come only with get_job_details."""

    id: int
    name: str
    canonical_instance_id: int = 0
    status: str = None
    cpu_time: float = None
    errors: list = field(default_factory=list)
    exit_statuses: list = field(default_factory=list)

    @classmethod
    def from_element(cls, el):
        cpu = _child(el, "cpu_time")
        return cls(id=_int(el, "id"), name=_child(el, "name") or "",
                   canonical_instance_id=_int(el, "canonical_instance_id"),
                   status=_child(el, "status"),
                   cpu_time=None if cpu is None else _float(el, "cpu_time"),
                   errors=[(e.text or "").strip() for e in el.findall("error")],
                   exit_statuses=[_as_int((e.text or "").strip() or "0", "exit_status")
                                  for e in el.findall("exit_status")])


@dataclass
class BatchStatus:
    """A batch as query_batches and query_batch describe it (times are Unix
    seconds, 0 = not yet); ``jobs`` is filled by query_batch only, and
    ``total_cpu_time`` only when asked for."""

    id: int
    name: str
    app_name: str = ""
    state: int = 0
    njobs: int = 0
    nerror_jobs: int = 0
    fraction_done: float = 0.0
    create_time: float = 0.0
    expire_time: float = 0.0
    est_completion_time: float = 0.0
    completion_time: float = 0.0
    credit_estimate: float = 0.0
    credit_canonical: float = 0.0
    total_cpu_time: float = None
    jobs: list = field(default_factory=list)

    @property
    def state_name(self):
        """BOINC's word for the state (batch_state_string)."""
        try:
            return BATCH_STATE_NAMES[BatchState(self.state)]
        except ValueError:
            return "unknown"

    @classmethod
    def from_element(cls, el):
        cpu = _child(el, "total_cpu_time")
        return cls(id=_int(el, "id"), name=_child(el, "name") or "",
                   app_name=_child(el, "app_name") or "", state=_int(el, "state"),
                   njobs=_int(el, "njobs"), nerror_jobs=_int(el, "nerror_jobs"),
                   fraction_done=_float(el, "fraction_done"),
                   create_time=_float(el, "create_time"),
                   expire_time=_float(el, "expire_time"),
                   est_completion_time=_float(el, "est_completion_time"),
                   completion_time=_float(el, "completion_time"),
                   credit_estimate=_float(el, "credit_estimate"),
                   credit_canonical=_float(el, "credit_canonical"),
                   total_cpu_time=None if cpu is None else _float(el, "total_cpu_time"),
                   jobs=[JobStatus.from_element(j) for j in el.findall("job")])


@dataclass
class JobBrief:
    """A job of query_batch2: its name and status in capitals (UNSENT,
    IN_PROGRESS, DONE, ERROR)."""

    name: str
    status: str


@dataclass
class BatchJobs:
    """query_batch2's answer: the server's clock when it looked (the next
    poll's ``min_mod_time``), and per batch name the jobs changed since."""

    server_time: float
    batches: dict = field(default_factory=dict)


@dataclass
class JobInstance:
    """An instance (result) of a job, from query_job: ``state`` is the web
    site's text ("Completed and validated" ...), ``outfile_sizes`` the sizes
    of its output files on the server once it is over."""

    name: str
    id: int
    state: str
    outfile_sizes: list = field(default_factory=list)


@dataclass
class CompletedJob:
    """query_completed_job's answer: the canonical instance, or else an
    instance that failed (``error_resultid``), with its exit status, times
    and stderr."""

    error_mask: int = 0
    canonical_resultid: int = 0
    error_resultid: int = 0
    exit_status: int = 0
    elapsed_time: float = 0.0
    cpu_time: float = 0.0
    stderr_out: str = ""

    @classmethod
    def from_element(cls, el):
        stderr = el.find("stderr_out")
        # The handler htmlspecialchars() the stderr inside a CDATA section.
        text = xml_unescape(stderr.text or "") if stderr is not None else ""
        return cls(error_mask=_int(el, "error_mask"),
                   canonical_resultid=_int(el, "canonical_resultid"),
                   error_resultid=_int(el, "error_resultid"),
                   exit_status=_int(el, "exit_status"),
                   elapsed_time=_float(el, "elapsed_time"), cpu_time=_float(el, "cpu_time"),
                   stderr_out=text)


@dataclass
class Templates:
    """An app's input and output templates (get_templates), as XML text,
    with the open names of their file references in order."""

    input_template: str
    output_template: str
    input_open_names: list = field(default_factory=list)
    output_open_names: list = field(default_factory=list)

    @classmethod
    def from_element(cls, el):
        found = {}
        for root in ("input_template", "output_template"):
            node = el.find(root)
            if node is None:
                raise _failure("get_templates: the reply has no <%s>" % root)
            node.tail = None
            found[root] = (ElementTree.tostring(node, encoding="unicode"),
                           [(n.text or "").strip() for n in node.iter("open_name")])
        return cls(input_template=found["input_template"][0],
                   output_template=found["output_template"][0],
                   input_open_names=found["input_template"][1],
                   output_open_names=found["output_template"][1])


# ---------------------------------------------------------------------------
# Reading replies

# A PHP message printed into the reply with display_errors on and html_errors:
# "<br />\n<b>Warning</b>:  text in <b>file</b> on line <b>N</b><br />"
_PHP_MESSAGE = re.compile(r"<br />\s*<b>([A-Za-z ]+)</b>:(.*?)<br />", re.S)
_XML_DECLARATION = re.compile(r"^\s*<\?xml[^>]*\?>")
# The stock handler's abort_jobs prints "<aborted NAME>", which is not XML.
_STOCK_ABORTED = re.compile(r"<aborted ([^<>]*)>")
# Characters XML 1.0 allows nowhere, not even in CDATA (a job's stderr may hold them).
_NOT_XML_CHARS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f]")
_BARE_AMPERSAND = re.compile(r"&(?!#?[A-Za-z0-9]+;)")
_TAGS = re.compile(r"<[^>]*>")


def _plain(markup, limit=400):
    text = " ".join(html.unescape(_TAGS.sub("", markup)).split())
    return text if len(text) <= limit else text[:limit] + "..."


def parse_reply(data, op):
    """The ``<op>`` element of a reply (bytes or str), read as BOINC's GAHP
    reads it: PHP notices and warnings printed into the XML are skipped, the
    stock handler's non-XML ``<aborted NAME>`` lines are mended.  Raises
    SubmitError for an ``<error>`` reply (BOINC's, inside ``<op>``, or at the
    top level when the request was not XML; an error_num of 0 is a PHP notice
    and is ignored, as the GAHP does), for a PHP fatal error, and for a reply
    that is not XML."""
    if isinstance(data, bytes):
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            text = data.decode("latin-1")
    else:
        text = data
    fatal = []

    def drop(match):
        if match.group(1).strip() in ("Fatal error", "Parse error"):
            fatal.append(_plain(match.group(2)))
        return ""

    text = _PHP_MESSAGE.sub(drop, text)
    text = _XML_DECLARATION.sub("", text)
    text = _STOCK_ABORTED.sub(r"<aborted>\1</aborted>", text)
    text = _NOT_XML_CHARS.sub("", text)
    root = None
    for attempt in (text, _BARE_AMPERSAND.sub("&amp;", text)):
        try:
            root = ElementTree.fromstring("<reply>%s</reply>" % attempt)
            break
        except ElementTree.ParseError:
            continue
    outer = root.find(op) if root is not None else None
    error = None
    if outer is not None:
        error = outer.find("error")
    elif root is not None:
        # at the top level (a request PHP could not parse), or in another
        # RPC's element (a handler answering something else)
        error = root.find("error")
        if error is None:
            error = root.find("*/error")
    if error is not None and _int(error, "error_num") != 0:
        num, msg = _int(error, "error_num"), _child(error, "error_msg") or ""
        raise SubmitError("%s: %s (error %d)" % (op, msg, num), num, error_msg=msg, op=op)
    if fatal:
        raise _failure("%s: the server failed: %s" % (op, fatal[0]), op=op)
    if root is None:
        raise _failure("%s: the reply is not XML: %s" % (op, _plain(text, 200) or "(empty)"),
                       op=op)
    if outer is None:
        raise _failure("%s: the reply has no <%s> element: %s"
                       % (op, op, _plain(text, 200) or "(empty)"), op=op)
    return outer


def _need_success(element, op):
    if element.find("success") is None:
        raise _failure("%s: the reply does not say <success>" % op, op=op)


# ---------------------------------------------------------------------------
# Request bodies

class Body:
    """A request body made of byte strings and files, read in blocks (so a
    large upload is never all in memory) with its length known beforehand:
    PHP and CGIs need a Content-Length.  ``progress(n, total)`` is told of
    each block read."""

    def __init__(self, parts, content_type, progress=None):
        self.parts = parts
        self.content_type = content_type
        self.progress = progress
        self.length = sum(p.size if isinstance(p, _FilePart) else len(p) for p in parts)
        self._index = 0
        self._open = None
        self._left = 0
        self._offset = 0

    def read(self, size=-1):
        """Up to ``size`` bytes (all that is left if negative)."""
        want = size if size is not None and size >= 0 else self.length
        out = bytearray()
        while len(out) < want and self._index < len(self.parts):
            part = self.parts[self._index]
            if isinstance(part, _FilePart):
                if self._open is None:
                    self._open, self._left = open(part.path, "rb"), part.size
                # never more or less than the length announced
                chunk = self._open.read(min(want - len(out), self._left))
                if not chunk and self._left:
                    raise _failure("%s changed while it was being sent" % part.path)
                out += chunk
                self._left -= len(chunk)
                if not self._left:
                    self._open.close()
                    self._open = None
                    self._index += 1
            else:
                chunk = part[self._offset:self._offset + want - len(out)]
                out += chunk
                self._offset += len(chunk)
                if self._offset >= len(part):
                    self._index, self._offset = self._index + 1, 0
        if self.progress and out:
            self.progress(len(out), self.length)
        return bytes(out)

    def getvalue(self):
        """The whole body (for small bodies and tests)."""
        return self.read()


class _FilePart:
    """A file sent as part of a Body (read when its turn comes)."""

    def __init__(self, path):
        self.path = path
        self.size = os.path.getsize(path)


def multipart_body(fields, files, progress=None, boundary=None):
    """multipart/form-data (RFC 7578) of ``fields`` [(name, text)] and
    ``files`` [(field name, file name, local path)], in that order."""
    boundary = boundary or "boincpy-%s" % secrets.token_hex(16)
    parts = []
    for name, value in fields:
        parts.append(('--%s\r\nContent-Disposition: form-data; name="%s"\r\n\r\n'
                      % (boundary, name)).encode("utf-8"))
        parts += [value.encode("utf-8"), b"\r\n"]
    for name, filename, path in files:
        # as browsers do: no quote or line break can end the parameter early
        filename = re.sub(r"[\r\n]", "", filename).replace('"', "%22")
        parts.append(('--%s\r\nContent-Disposition: form-data; name="%s"; filename="%s"\r\n'
                      'Content-Type: application/octet-stream\r\n\r\n'
                      % (boundary, name, filename)).encode("utf-8"))
        parts += [_FilePart(path), b"\r\n"]
    parts.append(("--%s--\r\n" % boundary).encode("utf-8"))
    return Body(parts, "multipart/form-data; boundary=%s" % boundary, progress)


def form_body(fields, progress=None):
    """application/x-www-form-urlencoded of ``fields`` [(name, text)] (what
    BOINC's Python binding posts)."""
    data = urllib.parse.urlencode(fields).encode("ascii")
    return Body([data], "application/x-www-form-urlencoded", progress)


# ---------------------------------------------------------------------------
# Files by content

def job_file_name(path):
    """The physical name BOINC gives an uploaded input file: ``jf_<md5>`` of its
    content, so one file is stored once whoever uploads it."""
    return _content_name(md5_file(path)[0])


def check_phys_name(name):
    """Refuse a physical name that could name something outside the server's
    download directory (the server checks too; this says it before sending)."""
    if (not name or name in (".", "..") or name.startswith(".") or "/" in name
            or "\\" in name or _NOT_XML_CHARS.search(name)):
        raise _failure("bad physical file name %r" % name)
    return name


def _upload_groups(indices, sizes):
    """Split ``indices`` into runs of at most UPLOAD_MAX_FILES files and
    about UPLOAD_MAX_BYTES bytes (a larger file goes alone)."""
    groups, current, total = [], [], 0
    for i in indices:
        if current and (len(current) >= UPLOAD_MAX_FILES
                        or total + sizes[i] > UPLOAD_MAX_BYTES):
            groups.append(current)
            current, total = [], 0
        current.append(i)
        total += sizes[i]
    if current:
        groups.append(current)
    return groups


# ---------------------------------------------------------------------------
# The client

def _batch_ref(batch):
    """``<batch_id>`` for an int, ``<batch_name>`` for a str."""
    if isinstance(batch, bool) or not isinstance(batch, (int, str)):
        raise _failure("a batch is named by its id (int) or its name (str), not %r"
                       % (batch,))
    if isinstance(batch, int):
        return _integer("batch_id", batch)
    return _text("batch_name", batch)


class SubmitClient:
    """The submission RPCs of one project, as one submitter.

    ``url`` is the project's master URL (where the handlers are);
    ``authenticator`` the submitter's account key; ``timeout`` how many
    seconds a request may wait for the server without a byte.
    """

    def __init__(self, url, authenticator, timeout=DEFAULT_TIMEOUT):
        if not url:
            raise _failure("no project URL given")
        self.url = url if url.endswith("/") else url + "/"
        self.authenticator = authenticator or ""
        self.timeout = timeout

    # -- HTTP ---------------------------------------------------------------

    def _open(self, url, body=None):
        headers = {"User-Agent": USER_AGENT}
        if body is not None:
            headers["Content-Type"] = body.content_type
            headers["Content-Length"] = str(body.length)
        request = urllib.request.Request(url, data=body, headers=headers,
                                         method="POST" if body is not None else "GET")
        try:
            return urllib.request.urlopen(request, timeout=self.timeout)
        except urllib.error.HTTPError as exc:
            detail = _plain(exc.read(2000).decode("utf-8", "replace"), 200)
            raise _failure("%s: HTTP %d %s%s" % (_shown(url), exc.code, exc.reason,
                                                  (": " + detail) if detail else "")) from None
        except urllib.error.URLError as exc:
            raise _failure("can't reach %s: %s" % (_shown(url), exc.reason)) from None
        except (OSError, ValueError) as exc:
            raise _failure("can't reach %s: %s" % (_shown(url), exc)) from None

    def _read(self, response, url):
        try:
            with response:
                return response.read()
        except (OSError, ValueError) as exc:
            raise _failure("reading the reply of %s: %s" % (_shown(url), exc)) from None

    def _post(self, handler, op, request_xml, progress=None):
        url = self.url + handler
        body = form_body([("request", request_xml)], progress)
        return parse_reply(self._read(self._open(url, body), url), op)

    def _head(self, op):
        return "<%s>\n%s" % (op, _text("authenticator", self.authenticator))

    def _simple(self, op, *elements):
        return self._post(RPC_HANDLER, op, self._head(op) + "".join(elements) + "</%s>\n" % op)

    # -- batches and jobs ----------------------------------------------------

    def ping(self):
        """Check that the handler and its database answer."""
        _need_success(self._post(RPC_HANDLER, "ping", "<ping> </ping>\n"), "ping")

    def get_templates(self, app_name=None, job_name=None):
        """The input and output templates of an app (or of a job's app)."""
        if bool(app_name) == bool(job_name):
            raise _failure("get_templates: give an app name or a job name")
        ref = _text("app_name", app_name) if app_name else _text("job_name", job_name)
        node = self._simple("get_templates", ref).find("templates")
        if node is None:
            _missing("get_templates", "templates")
        return Templates.from_element(node)

    def estimate_batch(self, batch):
        """The server's estimate of a batch's run time, in seconds."""
        reply = self._post(RPC_HANDLER, "estimate_batch",
                           batch.to_xml("estimate_batch", self.authenticator))
        if reply.find("seconds") is None:
            _missing("estimate_batch", "seconds")
        return _float(reply, "seconds")

    def create_batch(self, app_name, batch_name="", expire_time=0):
        """Make an empty batch (state uninitialized) for ``submit_batch`` to
        fill, so files can be tied to it first; return its id.
        ``expire_time`` (Unix time, 0 = never) is when its files may go."""
        reply = self._simple("create_batch", _text("app_name", app_name),
                             _text("batch_name", batch_name or ""),
                             _integer("expire_time", expire_time))
        return self._batch_id(reply, "create_batch")

    def submit_batch(self, batch, progress=None):
        """Create the jobs of ``batch`` (a BatchDesc); return the batch id.
        ``progress(n, total)`` is told of each block of the request sent."""
        reply = self._post(RPC_HANDLER, "submit_batch",
                           batch.to_xml("submit_batch", self.authenticator), progress=progress)
        return self._batch_id(reply, "submit_batch")

    @staticmethod
    def _batch_id(reply, op):
        batch_id = _int(reply, "batch_id")
        if not batch_id:
            _missing(op, "batch_id")
        return batch_id

    def query_batches(self, get_cpu_time=False):
        """The submitter's batches (retired ones left out)."""
        reply = self._simple("query_batches", _integer("get_cpu_time", bool(get_cpu_time)))
        return [BatchStatus.from_element(b) for b in reply.findall("batch")]

    def query_batch(self, batch, get_cpu_time=False, get_job_details=False):
        """One batch (by id or name) with its jobs."""
        return BatchStatus.from_element(self._simple(
            "query_batch", _batch_ref(batch), _integer("get_cpu_time", bool(get_cpu_time)),
            _integer("get_job_details", bool(get_job_details))))

    def query_batch2(self, batch_names, min_mod_time=0):
        """The jobs of the named batches changed since ``min_mod_time`` (all
        when 0), with their short status: what the HTCondor GAHP polls."""
        names = [batch_names] if isinstance(batch_names, str) else list(batch_names)
        reply = self._simple("query_batch2", _fixed("min_mod_time", min_mod_time),
                             *[_text("batch_name", n) for n in names])
        groups = []
        for node in reply:
            if node.tag == "batch_size":
                groups.append([])
            elif node.tag == "job" and groups:
                groups[-1].append(JobBrief(name=_child(node, "job_name") or "",
                                           status=_child(node, "status") or ""))
        return BatchJobs(server_time=_float(reply, "server_time"),
                         batches=dict(zip(names, groups)))

    def query_job(self, job_id):
        """The instances of a job (by workunit id)."""
        reply = self._simple("query_job", _integer("job_id", job_id))
        return [JobInstance(name=_child(i, "name") or "", id=_int(i, "id"),
                            state=_child(i, "state") or "",
                            outfile_sizes=[_int(o, "size") for o in i.findall("outfile")])
                for i in reply.findall("instance")]

    def query_completed_job(self, job_name):
        """Exit status, times and stderr of a job (by name)."""
        reply = self._simple("query_completed_job", _text("job_name", job_name))
        node = reply.find("completed_job")
        if node is None:
            _missing("query_completed_job", "completed_job")
        return CompletedJob.from_element(node)

    def abort_batch(self, batch):
        """Cancel a batch's jobs (by batch id or name): unsent ones are never
        sent, running ones are aborted on the volunteers' hosts."""
        _need_success(self._simple("abort_batch", _batch_ref(batch)), "abort_batch")

    def abort_jobs(self, job_names):
        """Cancel jobs by name; return the names the server aborted."""
        names = [job_names] if isinstance(job_names, str) else list(job_names)
        reply = self._simple("abort_jobs", *[_text("job_name", n) for n in names])
        _need_success(reply, "abort_jobs")
        return [(a.text or "").strip() for a in reply.findall("aborted")]

    def retire_batch(self, batch):
        """Retire a batch (by id or name): it leaves query_batches and its
        files may be deleted."""
        _need_success(self._simple("retire_batch", _batch_ref(batch)), "retire_batch")

    def set_expire_time(self, batch, expire_time):
        """Set when a batch (by id or name) expires (Unix time)."""
        _need_success(self._simple("set_expire_time", _batch_ref(batch),
                                   _fixed("expire_time", expire_time)), "set_expire_time")

    # -- input files ---------------------------------------------------------

    def _files_request(self, op, phys_names, batch_id, delete_time):
        return (self._head(op) + _integer("batch_id", batch_id)
                + _integer("delete_time", delete_time)
                + "".join(_text("phys_name", check_phys_name(n)) for n in phys_names)
                + "</%s>\n" % op)

    def query_files(self, phys_names, batch_id=0, delete_time=0):
        """Indices (into ``phys_names``) of the files the server lacks.  Each
        file it has gets its delete time raised to ``delete_time`` and is tied
        to batch ``batch_id``."""
        reply = self._post(FILE_HANDLER, "query_files",
                           self._files_request("query_files", phys_names, batch_id,
                                               delete_time))
        absent = reply.find("absent_files")
        if absent is None:
            _missing("query_files", "absent_files")
        return [_as_int((f.text or "").strip(), "file") for f in absent.findall("file")]

    def upload_files(self, paths, phys_names, batch_id=0, delete_time=0, progress=None):
        """Upload local files ``paths`` under ``phys_names`` (paired in order),
        only those the server lacks (query_files first); return the names sent.
        ``progress(n, total)`` is told of each block of bytes sent."""
        paths, phys_names = list(paths), list(phys_names)
        if len(paths) != len(phys_names):
            raise _failure("upload_files: %d files for %d names"
                           % (len(paths), len(phys_names)))
        for path in paths:
            if not os.path.isfile(path):
                raise _failure("no such file: %s" % path)
        absent = self.query_files(phys_names, batch_id, delete_time)
        if any(i < 0 or i >= len(paths) for i in absent):
            raise _failure("query_files: the reply names files that were not asked about")
        sizes = {i: os.path.getsize(paths[i]) for i in absent}
        bodies = []
        for group in _upload_groups(absent, sizes):
            request = self._files_request("upload_files", [phys_names[i] for i in group],
                                          batch_id, delete_time)
            files = [("file_%d" % n, phys_names[i], paths[i]) for n, i in enumerate(group)]
            bodies.append(multipart_body([("request", request)], files))
        total = sum(b.length for b in bodies)
        url = self.url + FILE_HANDLER
        for body in bodies:
            if progress:
                body.progress = lambda n, _length: progress(n, total)
            _need_success(parse_reply(self._read(self._open(url, body), url), "upload_files"),
                          "upload_files")
        return [phys_names[i] for i in absent]

    def stage_files(self, paths, batch_id=0, delete_time=0, progress=None):
        """Put local files on the server under their content's name
        (:func:`job_file_name`), uploading only those it lacks; return their
        physical names, in the order of ``paths``."""
        names = [job_file_name(p) for p in paths]
        unique = dict(zip(names, paths))
        self.upload_files(list(unique.values()), list(unique), batch_id, delete_time,
                          progress)
        return names

    # -- output files --------------------------------------------------------

    def _auth_md5(self, value):
        return hashlib.md5((self.authenticator + str(value)).encode("utf-8"),
                           usedforsecurity=False).hexdigest()

    def _url(self, handler, params):
        return self.url + handler + "?" + urllib.parse.urlencode(params)

    def output_file_url(self, result_name, file_num=0):
        """get_output.php URL of output file ``file_num`` of an instance."""
        return self._url(OUTPUT_HANDLER, [("cmd", "result_file"), ("result_name", result_name),
                                          ("file_num", int(file_num)),
                                          ("auth_str", self._auth_md5(result_name))])

    def output_files_url(self, batch_id):
        """get_output.php URL of a zip of a batch's canonical outputs."""
        return self._url(OUTPUT_HANDLER, [("cmd", "batch_files"), ("batch_id", int(batch_id)),
                                          ("auth_str", self._auth_md5(int(batch_id)))])

    def workunit_file_url(self, job_name, file_num=0):
        """get_output.php URL of output file ``file_num`` of a job's canonical
        instance (this command takes the plain authenticator)."""
        return self._url(OUTPUT_HANDLER, [("cmd", "workunit_file"),
                                          ("auth_str", self.authenticator),
                                          ("wu_name", job_name), ("file_num", int(file_num))])

    def workunit_files_url(self, job_id):
        """get_output.php URL of a zip of a job's (by workunit id) canonical outputs."""
        return self._url(OUTPUT_HANDLER, [("cmd", "workunit_files"), ("wu_id", int(job_id)),
                                          ("auth_str", self._auth_md5(int(job_id)))])

    def output2_url(self, *, result_id=None, job_id=None, batch_id=None, file_num=None):
        """get_output2.php URL: one file of an instance (result_id and
        file_num), an instance's outputs (result_id), a job's canonical
        outputs (job_id), or a batch's (batch_id), named by logical names."""
        if result_id is not None and file_num is not None:
            params = [("cmd", "file"), ("result_id", int(result_id)),
                      ("file_num", int(file_num))]
        elif result_id is not None:
            params = [("cmd", "result"), ("result_id", int(result_id))]
        elif job_id is not None:
            params = [("cmd", "workunit"), ("wu_id", int(job_id))]
        elif batch_id is not None:
            params = [("cmd", "batch"), ("batch_id", int(batch_id))]
        else:
            raise _failure("get_output2: give result_id, job_id or batch_id")
        return self._url(OUTPUT2_HANDLER, params + [("auth", self.authenticator)])

    def download(self, url, dest, progress=None):
        """Fetch an output URL into ``dest``: a file path, or an existing
        directory (then the name the server gives, made safe).  The file
        appears whole or not at all.  The handlers answer an error with plain
        text instead of an attachment: that is raised as SubmitError.  Returns
        the path written.  ``progress(n, total)`` is told of each block
        received (total: the Content-Length, or None)."""
        response = self._open(url)
        try:
            disposition = response.headers.get("Content-Disposition", "")
            if "attachment" not in disposition.lower():
                text = _plain(response.read(4000).decode("utf-8", "replace"), 300)
                raise _failure("%s: %s" % (_output_op(url), text or "empty reply"))
            if os.path.isdir(dest):
                path = os.path.join(dest, _safe_filename(disposition, url))
            else:
                path = dest
            directory = os.path.dirname(os.path.abspath(path))
            length = response.headers.get("Content-Length")
            total = int(length) if length and length.isdigit() else None
            fd, tmp = tempfile.mkstemp(prefix=".download-", dir=directory)
            try:
                with os.fdopen(fd, "wb") as out:
                    while True:
                        block = response.read(_BLOCK)
                        if not block:
                            break
                        out.write(block)
                        if progress:
                            progress(len(block), total)
                os.replace(tmp, path)
            except BaseException:
                os.unlink(tmp)
                raise
        except (OSError, ValueError) as exc:
            raise _failure("downloading %s: %s" % (_shown(url), exc)) from None
        finally:
            response.close()
        return path

    def get_output_file(self, result_name, file_num, dest, progress=None):
        """Download output file ``file_num`` of an instance; return its path."""
        return self.download(self.output_file_url(result_name, file_num), dest, progress)

    def get_job_output(self, job_name, file_num, dest, progress=None):
        """Download output file ``file_num`` of a job's canonical instance."""
        return self.download(self.workunit_file_url(job_name, file_num), dest, progress)

    def get_job_outputs(self, job_id, dest, progress=None):
        """Download a zip of a job's canonical outputs (by workunit id)."""
        return self.download(self.workunit_files_url(job_id), dest, progress)

    def get_batch_outputs(self, batch_id, dest, progress=None):
        """Download a zip of the canonical outputs of a batch's jobs."""
        return self.download(self.output_files_url(batch_id), dest, progress)


def _missing(op, tag):
    raise _failure("%s: the reply has no <%s>" % (op, tag), op=op)


def _shown(url):
    """A URL fit for a message: without its query (it may hold the authenticator)."""
    return url.split("?", 1)[0]


def _output_op(url):
    query = urllib.parse.parse_qs(urllib.parse.urlsplit(url).query)
    handler = _shown(url).rsplit("/", 1)[-1]
    return "%s %s" % (handler, query.get("cmd", [""])[0])


def _safe_filename(disposition, url):
    """The file name of a Content-Disposition, reduced to a plain name in
    the destination directory (a server can't write elsewhere)."""
    match = re.search(r'filename="?([^";]+)"?', disposition)
    name = os.path.basename(match.group(1).strip()) if match else ""
    if not name or name.startswith(".") or _NOT_XML_CHARS.search(name):
        name = _output_op(url).replace(" ", "_").replace(".php", "") + ".out"
    return name
