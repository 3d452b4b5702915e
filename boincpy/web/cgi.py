"""The CGI side of BOINC's web RPCs: request parameters, XML replies, errors.

BOINC's RPC handlers are PHP pages; a client sees only the parameters they
read and the bytes they print.  This module keeps those bytes: the XML
declaration PHP's ``xml_header()`` prints, the ``<error>`` block of
``xml_error()`` with BOINC's default message for each error number, and
PHP's ``Content-Type: text/xml;charset=UTF-8``.

Parameters are read like PHP's ``$_GET`` / ``$_POST``: URL-decoded, ``+``
is a space, the last of repeated names wins.
"""

import os
import sys
from dataclasses import dataclass, field
from urllib.parse import parse_qsl

from boincpy.cnum import int64, php_numeric
from boincpy.errors import BoincpyError
from boincpy.xml import xml_escape

# lib/error_numbers.h (the subset the web RPCs use).
ERR_XML_PARSE = -112
ERR_DB_NOT_FOUND = -136
ERR_DB_NOT_UNIQUE = -137
ERR_DB_CANT_CONNECT = -138
ERR_PROJECT_DOWN = -183
ERR_BAD_USER_NAME = -188
ERR_BAD_EMAIL_ADDR = -205
ERR_BAD_PASSWD = -206
ERR_ACCT_CREATION_DISABLED = -208
ERR_ATTACH_FAIL_INIT = -209
ERR_ACCT_REQUIRE_CONSENT = -242

# xml_error()'s message when the caller gives none.
DEFAULT_MESSAGES = {
    -112: "Invalid XML",
    -136: "Not found",
    -137: "Name or email address is not unique",
    -138: "Can't access database",
    -183: "Project is temporarily offline",
    -205: "Email address has invalid syntax",
    -206: "Invalid password",
    -207: "Email address is not unique",
    -208: "Account creation is disabled",
    -209: "Invalid invitation code",
    -210: "Invalid request method",
}

XML_DECLARATION = '<?xml version="1.0" encoding="ISO-8859-1" ?>\n'
XML_CONTENT_TYPE = "text/xml;charset=UTF-8"
HTML_CONTENT_TYPE = "text/html; charset=UTF-8"

MAX_POST_BYTES = 1 << 20


class XmlError(BoincpyError):
    """An ``<error>`` reply: BOINC error number and message."""

    def __init__(self, num=-1, msg=None):
        self.num = num
        self.msg = msg or DEFAULT_MESSAGES.get(num, "Unknown error")
        super().__init__("%d %s" % (num, self.msg))


def error_xml(num, msg):
    """The ``<error>`` block xml_error() prints."""
    return ("<error>\n    <error_num>%d</error_num>\n    <error_msg>%s</error_msg>\n</error>\n"
            % (num, xml_escape(msg)))


@dataclass
class WebRequest:
    """One HTTP request as a CGI sees it."""

    method: str = "GET"
    get: dict = field(default_factory=dict)
    post: dict = field(default_factory=dict)
    environ: dict = field(default_factory=dict)
    files: list = field(default_factory=list)       # multipart.UploadedFile, in body order
    body_error: str = ""                            # why the body could not be read
    # boincpy.resident.Resident: the process's configuration and database,
    # kept between requests when the page runs persistently (boincpy.persistent)
    resident: object = field(default=None, repr=False, compare=False)

    def remove_files(self):
        """Delete the uploaded files' temporary copies that are left (PHP does
        this when the page ends)."""
        from boincpy.web import multipart
        multipart.remove(self.files)

    @property
    def remote_addr(self):
        return self.environ.get("REMOTE_ADDR", "")

    @property
    def is_https(self):
        return self.environ.get("HTTPS", "").lower() in ("on", "1")

    def get_str(self, name, optional=False):
        """A query-string parameter; missing and not optional -> BOINC's error."""
        value = self.get.get(name)
        if value is None and not optional:
            raise XmlError(-1, "missing or bad parameter: %s" % name)
        return value

    def get_int(self, name, optional=False):
        """An integer query parameter (PHP's is_numeric, then truncated), or None."""
        value = self.get.get(name)
        number = int64(php_numeric(value)) if value is not None else None
        if number is None:
            if optional and not value:
                return None
            raise XmlError(-1, "missing or bad parameter: %s" % name)
        return number

    def check_args(self, allowed):
        """Refuse query parameters a page does not take (BOINC's check_get_args)."""
        for name in self.get:
            if name not in allowed:
                raise XmlError(-1, "unexpected parameter: %s" % name)


def php_float(value):
    """A number as PHP's echo prints a float (precision 14: %.14G, exponent
    as ``1.0E+25``); integers as they are."""
    if isinstance(value, int):
        return str(value)
    if value != value:
        return "NAN"
    if value in (float("inf"), float("-inf")):
        return "INF" if value > 0 else "-INF"
    text = "%.14G" % value
    if "E" in text:
        mantissa, exponent = text.split("E")
        if "." not in mantissa:
            mantissa += ".0"
        return "%sE%+d" % (mantissa, int(exponent))
    return text


def _params(text):
    out = {}
    for key, value in parse_qsl(text, keep_blank_values=True, encoding="utf-8",
                                errors="replace"):
        out[key] = value
    return out


def parse_request(environ, stdin=None, max_post_bytes=MAX_POST_BYTES, upload_dir=None):
    """A WebRequest from a CGI environment (and, for POST, the body on ``stdin``).

    A form-urlencoded body of at most ``max_post_bytes`` fills ``post``; with
    ``upload_dir``, a multipart/form-data body fills ``post`` and ``files``
    (file parts as temporary files there).  A body that can't be read leaves
    ``post`` empty and says why in ``body_error``."""
    method = environ.get("REQUEST_METHOD", "GET").upper()
    get = _params(environ.get("QUERY_STRING", ""))
    req = WebRequest(method=method, get=get, environ=dict(environ))
    if method != "POST" or stdin is None:
        return req
    ctype = environ.get("CONTENT_TYPE", "")
    try:
        length = int(environ.get("CONTENT_LENGTH") or 0)
    except ValueError:
        length = 0
    if ctype.startswith("application/x-www-form-urlencoded"):
        if 0 < length <= max_post_bytes:
            req.post = _params(stdin.read(length).decode("utf-8", "replace"))
        elif length > max_post_bytes:
            req.body_error = "request body too large (%d bytes; at most %d)" % (
                length, max_post_bytes)
    elif upload_dir is not None and length > 0:
        from boincpy.web import multipart
        boundary = multipart.boundary_of(ctype)
        if boundary is None:
            req.body_error = "bad multipart/form-data content type"
        else:
            try:
                req.post, req.files = multipart.parse(stdin, length, boundary, upload_dir,
                                                      max_field_bytes=max_post_bytes)
            except multipart.MultipartError as exc:
                req.body_error = str(exc)
    return req


@dataclass
class Response:
    """What a CGI prints: status, content type and body.

    The body is ``body`` (text, sent as UTF-8), or ``data`` (bytes), or the
    file at ``path`` (sent in chunks, then deleted if ``remove_path``)."""

    body: str = ""
    content_type: str = XML_CONTENT_TYPE
    status: str = ""
    headers: list = field(default_factory=list)
    data: bytes = None
    path: str = None
    remove_path: bool = False

    def _payload_size(self):
        if self.path is not None:
            return os.path.getsize(self.path)
        if self.data is None:
            self.data = self.body.encode("utf-8")
        return len(self.data)

    def head_bytes(self):
        """The CGI header block (with Content-Length)."""
        head = []
        if self.status:
            head.append("Status: %s" % self.status)
        head.extend(self.headers)
        head.append("Content-Type: %s" % self.content_type)
        head.append("Content-Length: %d" % self._payload_size())
        return ("\n".join(head) + "\n\n").encode("ascii", "replace")

    def cgi_bytes(self):
        """Header block and body as the CGI writes them to stdout (a ``path``
        body read whole: write() sends it in pieces)."""
        head = self.head_bytes()
        return head + b"".join(self.chunks())

    def chunks(self, size=1 << 16):
        """The body, in pieces."""
        if self.path is None:
            if self.data is None:
                self.data = self.body.encode("utf-8")
            yield self.data
            return
        try:
            with open(self.path, "rb") as f:
                while True:
                    block = f.read(size)
                    if not block:
                        break
                    yield block
        finally:
            if self.remove_path:
                try:
                    os.unlink(self.path)
                except OSError:
                    pass

    def write(self, out):
        """Write header block and body to ``out`` (a binary stream)."""
        out.write(self.head_bytes())
        for block in self.chunks():
            out.write(block)


def xml_response(body, header=True):
    """An XML reply; ``header`` adds the XML declaration xml_header() prints."""
    return Response((XML_DECLARATION if header else "") + body)


def error_response(err, header=True):
    """The reply to an XmlError: with the XML declaration when the page had
    printed it (xml_header) before failing, else PHP's bare text/html block."""
    if header:
        return xml_response(error_xml(err.num, err.msg))
    return Response(error_xml(err.num, err.msg), content_type=HTML_CONTENT_TYPE)


def log_error(message):
    """A line in the web server's error log (a CGI's or a persistent
    process's stderr), as PHP's error_log."""
    sys.stderr.write("[boincpy web rpc] %s\n" % message)
    sys.stderr.flush()


def serve(handler, environ, stream, resident, script=""):
    """A web page as a plain function: the CGI environment and the body's
    stream in, the CGI output (bytes) out.

    ``handler(cfg, request) -> Response`` is the page (``request`` a
    WebRequest from :func:`parse_request`, ``cfg`` config.xml without
    config_aux.xml, as BOINC's PHP reads it); ``resident``
    (:class:`boincpy.resident.Resident`) keeps the configuration and the
    database connection between requests when the page runs persistently
    (``request.resident``).  ``script`` names the page in error-log lines.
    A handler may say how its body is read: ``handler.max_post_bytes`` (a
    larger form), ``handler.uploads`` (multipart file parts are spooled in
    the project's tmp directory and removed after the page).
    """
    from boincpy.errors import ConfigError
    resident.requests += 1
    try:
        cfg = resident.config(aux=False)
    except ConfigError as exc:
        log_error("%s: %s" % (script, exc))
        return xml_response(error_xml(-1, "Can't parse project config file.")).cgi_bytes()
    request = parse_request(environ, stream,
                            getattr(handler, "max_post_bytes", MAX_POST_BYTES),
                            cfg.tmp_dir if getattr(handler, "uploads", False) else None)
    request.resident = resident
    try:
        return handler(cfg, request).cgi_bytes()
    finally:
        request.remove_files()


def run_cgi(handler, script=""):
    """Run a web page (see :func:`serve`) as a CGI: os.environ and stdin in,
    stdout out."""
    import os
    from boincpy.resident import Resident
    resident = Resident()
    try:
        out = serve(handler, os.environ, sys.stdin.buffer, resident, script)
    finally:
        resident.close()
    sys.stdout.buffer.write(out)
    sys.stdout.buffer.flush()


def write_response(resp, out=None):
    """Write a Response to stdout (binary) as a CGI."""
    out = out or sys.stdout.buffer
    resp.write(out)
    out.flush()
