"""The CGI side of BOINC's web RPCs: request parameters, XML replies, errors.

BOINC's RPC handlers are PHP pages; a client sees only the parameters they
read and the bytes they print.  This module keeps those bytes: the XML
declaration PHP's ``xml_header()`` prints, the ``<error>`` block of
``xml_error()`` with BOINC's default message for each error number, and
PHP's ``Content-Type: text/xml;charset=UTF-8``.

Parameters are read like PHP's ``$_GET`` / ``$_POST``: URL-decoded, ``+``
is a space, the last of repeated names wins.
"""

import re
import sys
from dataclasses import dataclass, field
from urllib.parse import parse_qsl

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


class XmlError(Exception):
    """An ``<error>`` reply: BOINC error number and message.

    ``login_failure`` marks failed logins, which BOINC answers only after
    LOGIN_FAIL_SLEEP_SEC (to slow password guessing).
    """

    def __init__(self, num=-1, msg=None, login_failure=False):
        self.num = num
        self.msg = msg or DEFAULT_MESSAGES.get(num, "Unknown error")
        self.login_failure = login_failure
        super().__init__("%d %s" % (num, self.msg))


def xml_escape(value):
    """Text safe inside an XML element (the client decodes &amp; &lt; &gt;)."""
    text = value if isinstance(value, str) else str(value)
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def html_escape(value):
    """PHP's htmlspecialchars (ENT_QUOTES): also quotes, as &quot; and &#039;."""
    return xml_escape(value).replace('"', "&quot;").replace("'", "&#039;")


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
    # boincpy.resident.Resident: the process's configuration and database,
    # kept between requests when the page runs persistently (boincpy.wsgi)
    resident: object = field(default=None, repr=False, compare=False)

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

    def post_str(self, name, optional=False):
        """A form (POST) parameter; missing and not optional -> BOINC's error."""
        value = self.post.get(name)
        if value is None and not optional:
            raise XmlError(-1, "missing or bad parameter: %s" % name)
        return value

    def get_int(self, name, optional=False):
        """An integer query parameter (PHP's is_numeric, then truncated), or None."""
        value = self.get.get(name)
        number = php_numeric(value) if value is not None else None
        if number is None:
            if optional and not value:
                return None
            raise XmlError(-1, "missing or bad parameter: %s" % name)
        return int(number)

    def check_args(self, allowed):
        """Refuse query parameters a page does not take (BOINC's check_get_args)."""
        for name in self.get:
            if name not in allowed:
                raise XmlError(-1, "unexpected parameter: %s" % name)


_NUMERIC_RE = re.compile(
    r"^[ \t\n\r\v\f]*[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?[ \t\n\r\v\f]*$")


def php_numeric(text):
    """The number in ``text`` if PHP's is_numeric() accepts it (decimal, optional
    sign, fraction and exponent, surrounding white space), else None."""
    if text is None or not _NUMERIC_RE.match(text):
        return None
    return float(text)


def _params(text):
    out = {}
    for key, value in parse_qsl(text, keep_blank_values=True, encoding="utf-8",
                                errors="replace"):
        out[key] = value
    return out


def parse_request(environ, stdin=None):
    """A WebRequest from a CGI environment (and, for POST, the body on ``stdin``)."""
    method = environ.get("REQUEST_METHOD", "GET").upper()
    get = _params(environ.get("QUERY_STRING", ""))
    post = {}
    if method == "POST" and stdin is not None:
        ctype = environ.get("CONTENT_TYPE", "")
        try:
            length = int(environ.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = 0
        if ctype.startswith("application/x-www-form-urlencoded") and 0 < length <= MAX_POST_BYTES:
            post = _params(stdin.read(length).decode("utf-8", "replace"))
    return WebRequest(method=method, get=get, post=post, environ=dict(environ))


@dataclass
class Response:
    """What a CGI prints: status, content type and body."""

    body: str
    content_type: str = XML_CONTENT_TYPE
    status: str = ""
    headers: list = field(default_factory=list)

    def cgi_bytes(self):
        """Header block and body as the CGI writes them to stdout."""
        data = self.body.encode("utf-8")
        head = []
        if self.status:
            head.append("Status: %s" % self.status)
        head.extend(self.headers)
        head.append("Content-Type: %s" % self.content_type)
        head.append("Content-Length: %d" % len(data))
        return ("\n".join(head) + "\n\n").encode("ascii") + data


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
    """A line in the web server's error log (a CGI's stderr, mod_wsgi's
    error log), as PHP's error_log."""
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
    """
    from boincpy.errors import ConfigError
    resident.requests += 1
    request = parse_request(environ, stream)
    request.resident = resident
    try:
        cfg = resident.config(aux=False)
    except ConfigError as exc:
        log_error("%s: %s" % (script, exc))
        return xml_response(error_xml(-1, "Can't parse project config file.")).cgi_bytes()
    return handler(cfg, request).cgi_bytes()


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
    out.write(resp.cgi_bytes())
    out.flush()
