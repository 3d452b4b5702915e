"""A CGI request and response, without the deprecated ``cgi`` module.

:func:`read_request` turns the CGI environment (RFC 3875) and the request
body into a :class:`Request`; a page returns a :class:`Response`, which
:func:`write_response` prints with the ``Status:`` header Apache expects.
Tests build a Request from a dict environ and bytes directly.
"""

import os
import sys
from dataclasses import dataclass, field
from urllib.parse import parse_qs

from boincpy.errors import BoincpyError

# Form bodies larger than this are refused: admin forms are small, and a
# CGI should not read an unbounded body into memory.
MAX_BODY = 1 << 20


class BadRequest(BoincpyError):
    """The request is malformed; the message says what is wrong."""

    status = "400 Bad Request"


@dataclass
class Request:
    """One HTTP request as a CGI sees it."""

    method: str = "GET"
    query: dict = field(default_factory=dict)   # name -> [values], from QUERY_STRING
    form: dict = field(default_factory=dict)    # name -> [values], from a POST body
    environ: dict = field(default_factory=dict)

    @property
    def remote_addr(self):
        """The client's address (what failed logins are counted against)."""
        return self.environ.get("REMOTE_ADDR", "") or ""

    @property
    def remote_user(self):
        """The user Apache authenticated (HTTP basic auth), or ""."""
        return self.environ.get("REMOTE_USER", "") or ""

    def get(self, name, default=""):
        """First value of a query-string parameter, stripped."""
        values = self.query.get(name)
        return values[0].strip() if values else default

    def get_all(self, name):
        """All values of a query-string parameter."""
        return list(self.query.get(name, []))

    def post(self, name, default=""):
        """First value of a form field of a POST body, stripped."""
        values = self.form.get(name)
        return values[0].strip() if values else default

    def post_all(self, name):
        """All values of a POST form field (checkbox lists)."""
        return list(self.form.get(name, []))


@dataclass
class Response:
    """A page's answer: status line, headers and an HTML (or other) body."""

    body: str = ""
    status: str = "200 OK"
    content_type: str = "text/html; charset=utf-8"
    headers: list = field(default_factory=list)   # extra (name, value) pairs


def project_dir_for(script_file):
    """The project root of a page's script (PROJECT/html/DIR/NAME.php):
    $BOINC_PROJECT_DIR, else two levels up."""
    env = os.environ.get("BOINC_PROJECT_DIR")
    if env:
        return env
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(script_file))))


def parse_query(text):
    """name -> [values] from an urlencoded string (blank values kept)."""
    try:
        return parse_qs(text or "", keep_blank_values=True, strict_parsing=False,
                        errors="strict", max_num_fields=10000)
    except (ValueError, UnicodeDecodeError) as exc:
        raise BadRequest("malformed query string: %s" % exc) from None


def read_request(environ, stdin=None):
    """Build a Request from a CGI environment and its body stream."""
    method = (environ.get("REQUEST_METHOD") or "GET").upper()
    query = parse_query(environ.get("QUERY_STRING", ""))
    form = {}
    if method == "POST":
        ctype = (environ.get("CONTENT_TYPE") or "").split(";")[0].strip().lower()
        try:
            length = int(environ.get("CONTENT_LENGTH") or 0)
        except ValueError:
            raise BadRequest("bad Content-Length") from None
        if length > MAX_BODY:
            raise BadRequest("request body too large (%d bytes)" % length)
        stream = stdin if stdin is not None else sys.stdin.buffer
        body = stream.read(length) if length > 0 else b""
        if ctype in ("application/x-www-form-urlencoded", ""):
            try:
                form = parse_query(body.decode("utf-8"))
            except UnicodeDecodeError:
                raise BadRequest("form body is not UTF-8") from None
        else:
            raise BadRequest("unsupported form encoding %r: use "
                             "application/x-www-form-urlencoded" % ctype)
    return Request(method=method, query=query, form=form, environ=dict(environ))


def response_bytes(resp):
    """The CGI output of a Response: headers, blank line, body."""
    lines = ["Status: " + resp.status, "Content-Type: " + resp.content_type]
    lines += ["%s: %s" % (k, v) for k, v in resp.headers]
    head = "\r\n".join(lines) + "\r\n\r\n"
    body = resp.body if isinstance(resp.body, bytes) else str(resp.body).encode("utf-8")
    return head.encode("latin-1") + body


def write_response(resp, stdout=None):
    """Print a Response to the CGI's stdout."""
    out = stdout if stdout is not None else sys.stdout.buffer
    out.write(response_bytes(resp))
    out.flush()


def run_script(script_file, handle):
    """A page script's CGI main: read the request, answer it with
    ``handle(page name, request, project dir)``, print the Response."""
    try:
        req = read_request(os.environ, sys.stdin.buffer)
    except BadRequest as err:
        write_response(Response(body=str(err), status=err.status,
                                content_type="text/plain; charset=utf-8"))
        return
    write_response(handle(os.path.basename(script_file), req, project_dir_for(script_file)))
