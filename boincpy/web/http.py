"""The one request and response layer of every page and RPC.

BOINC's web side is PHP: each page reads ``$_GET``, ``$_POST``, ``$_COOKIE``
and ``$_FILES`` and prints headers and a body.  Every boincpy page, whether an
account RPC, a remote-submission RPC, a volunteer's page, a submitter's page
or an ops page, is a function ``handler(cfg, request) -> Response`` over this
module, and runs unchanged as a classic CGI (:func:`run_cgi`) or in a
persistent process (:func:`serve`, called by :mod:`boincpy.persistent`).

Parameters are read as PHP reads them: URL-decoded, ``+`` a space, the last
of repeated names wins (:meth:`Request.get`, :meth:`Request.post`); pages that
take a list read every value (:meth:`Request.get_all`, ``name[]`` included).
Nothing is trimmed: a password may end in a space.  Cookies are read with the
standard library's parser.  A multipart/form-data body is read only for a
handler that says it takes uploads (``handler.uploads``): its file parts are
spooled to temporary files (:mod:`boincpy.web.multipart`) and removed after
the page.
"""

import os
import sys
from http.cookies import CookieError, SimpleCookie
from urllib.parse import parse_qsl, quote, urlsplit

from boincpy.cnum import int64, php_numeric
from boincpy.errors import BoincpyError, ConfigError
from boincpy.hot_path import exit_now
from boincpy.record import Record
from boincpy.resident import Resident

HTML_CONTENT_TYPE = "text/html; charset=UTF-8"
MAX_POST_BYTES = 1 << 20
MAX_FIELDS = 10000


class BadRequest(BoincpyError):
    """The request is malformed or lacks a parameter; the message names it.

    ``num`` is BOINC's error number when an RPC answers it as ``<error>``
    (-1, as BOINC's ``error_page`` in an RPC context, unless a subclass says
    otherwise); ``status`` the HTTP status when a page answers it."""

    status = "400 Bad Request"

    def __init__(self, message, num=-1):
        super().__init__(message)
        self.num = num


def parse_params(text):
    """name -> [values] from an urlencoded string, in order (blank values
    kept, bad UTF-8 as U+FFFD); BadRequest past MAX_FIELDS fields."""
    out = {}
    try:
        pairs = parse_qsl(text or "", keep_blank_values=True, encoding="utf-8",
                          errors="replace", max_num_fields=MAX_FIELDS)
    except ValueError as exc:
        raise BadRequest("malformed parameters: %s" % exc) from None
    for key, value in pairs:
        out.setdefault(key, []).append(value)
    return out


def _as_lists(values):
    return {k: (list(v) if isinstance(v, (list, tuple)) else [v])
            for k, v in (values or {}).items()}


class Request(Record):
    """One HTTP request as a page sees it."""

    FIELDS = (
        ("method", "GET"),
        ("query", dict),            # name -> [values], QUERY_STRING
        ("form", dict),             # name -> [values], the POST body
        ("environ", dict),
        ("files", list),            # multipart.UploadedFile, in body order
        ("body_error", ""),         # why the body could not be read
        # boincpy.resident.Resident: configuration and database kept between
        # requests when the page runs persistently
        ("resident", None),
        ("_cookies", None),         # the Cookie header, parsed on first use
    )

    @classmethod
    def of(cls, method="GET", get=None, post=None, environ=None, **kwargs):
        """A Request from plain dicts (a value or a list of values per
        name): what tests and in-process callers build."""
        return cls(method=method, query=_as_lists(get), form=_as_lists(post),
                   environ=dict(environ or {}), **kwargs)

    def database(self, cfg):
        """(connection, shared) for a page or RPC of this request: the
        process's connection (:meth:`boincpy.resident.Resident.database`: a
        classic CGI's over boincpy.db.wire, which loads no client library; a
        persistent process's kept open from one request to the next), shared
        and not to be closed by the caller; or, outside a web server (tests),
        a connection of its own."""
        if self.resident is not None:
            return self.resident.database(cfg), True
        from boincpy.db import connect
        return connect(cfg), False

    # -- parameters -------------------------------------------------------

    def get(self, name, default=""):
        """A query-string parameter (the last of repeated names, as PHP)."""
        values = self.query.get(name)
        return values[-1] if values else default

    def post(self, name, default=""):
        """A field of a form body (the last of repeated names, as PHP)."""
        values = self.form.get(name)
        return values[-1] if values else default

    def get_all(self, name):
        """Every value of a query parameter (``name`` and ``name[]``)."""
        return list(self.query.get(name, [])) + list(self.query.get(name + "[]", []))

    def post_all(self, name):
        """Every value of a form field (checkbox lists; ``name[]`` too)."""
        return list(self.form.get(name, [])) + list(self.form.get(name + "[]", []))

    def has(self, name):
        """Whether the query string names ``name``."""
        return name in self.query

    def get_str(self, name, optional=False):
        """BOINC's get_str: a query parameter; missing and not optional ->
        BadRequest "missing or bad parameter"."""
        values = self.query.get(name)
        if not values:
            if optional:
                return None
            raise BadRequest("missing or bad parameter: %s" % name)
        return values[-1]

    def get_int(self, name, optional=False):
        """BOINC's get_int: PHP's is_numeric, then truncated; None when
        optional and empty."""
        value = self.get(name, None)
        number = int64(php_numeric(value)) if value is not None else None
        if number is None:
            if optional and not value:
                return None
            raise BadRequest("missing or bad parameter: %s" % name)
        return number

    def check_args(self, allowed):
        """Refuse query parameters a page does not take (BOINC's check_get_args)."""
        for name in self.query:
            if name not in allowed:
                raise BadRequest("unexpected parameter: %s" % name)

    # -- the environment --------------------------------------------------

    @property
    def remote_addr(self):
        """The client's address (what failed logins are counted against)."""
        return self.environ.get("REMOTE_ADDR", "") or ""

    @property
    def remote_user(self):
        """The user Apache authenticated (HTTP basic auth), or ""."""
        return self.environ.get("REMOTE_USER", "") or ""

    @property
    def is_https(self):
        """Whether the request came over HTTPS (Apache's HTTPS or REQUEST_SCHEME)."""
        env = self.environ
        return (str(env.get("HTTPS", "")).lower() in ("on", "1")
                or str(env.get("REQUEST_SCHEME", "")).lower() == "https")

    @property
    def script(self):
        """The page's file name (``home.php``), from SCRIPT_NAME."""
        return self.environ.get("SCRIPT_NAME", "").rstrip("/").rsplit("/", 1)[-1]

    def this_url(self):
        """This page's name with its query string (GET) or without (POST)."""
        query = self.environ.get("QUERY_STRING", "")
        return self.script + ("?" + query if query and self.method == "GET" else "")

    def cookie(self, name):
        """A cookie the browser sent, or None (an unparseable Cookie header
        counts as none)."""
        if self._cookies is None:
            jar = SimpleCookie()
            try:
                jar.load(self.environ.get("HTTP_COOKIE", "") or "")
            except CookieError:
                jar = {}
            self._cookies = {k: m.value for k, m in jar.items()}
        return self._cookies.get(name)

    def remove_files(self):
        """Delete the uploaded files' temporary copies that are left (PHP
        does this when the page ends)."""
        if self.files:
            from boincpy.web import multipart
            multipart.remove(self.files)


def read_request(environ, stdin=None, max_post_bytes=MAX_POST_BYTES, upload_dir=None,
                 max_file_bytes=None):
    """A Request from a CGI environment and, for a POST, its body on ``stdin``.

    An urlencoded body of at most ``max_post_bytes`` fills ``form``; with
    ``upload_dir``, a multipart/form-data body fills ``form`` and ``files``.
    A body that can't be read leaves ``form`` empty and says why in
    ``body_error`` (the page decides how to answer); ``max_file_bytes``: the
    most one file part may hold (None: no limit but the web server's)."""
    method = (environ.get("REQUEST_METHOD") or "GET").upper()
    req = Request(method=method, environ=dict(environ))
    try:
        req.query = parse_params(environ.get("QUERY_STRING", ""))
    except BadRequest as exc:
        req.body_error = exc.message
    if method != "POST" or stdin is None:
        return req
    ctype = environ.get("CONTENT_TYPE", "") or ""
    try:
        length = int(environ.get("CONTENT_LENGTH") or 0)
    except ValueError:
        req.body_error = "bad Content-Length"
        return req
    kind = ctype.split(";")[0].strip().lower()
    if kind in ("application/x-www-form-urlencoded", ""):
        if length > max_post_bytes:
            req.body_error = "request body too large (%d bytes; at most %d)" % (
                length, max_post_bytes)
        elif length > 0:
            body = stdin.read(length)
            if len(body) < length:
                req.body_error = "request body cut short (%d of %d bytes)" % (len(body), length)
            else:
                try:
                    req.form = parse_params(body.decode("utf-8", "replace"))
                except BadRequest as exc:
                    req.body_error = exc.message
    elif kind == "multipart/form-data" and upload_dir is not None and length > 0:
        from boincpy.web import multipart
        boundary = multipart.boundary_of(ctype)
        if boundary is None:
            req.body_error = "bad multipart/form-data content type"
        else:
            try:
                fields, req.files = multipart.parse(stdin, length, boundary, upload_dir,
                                                    max_field_bytes=max_post_bytes,
                                                    max_file_bytes=max_file_bytes)
            except multipart.MultipartError as exc:
                req.body_error = str(exc)
            else:
                req.form = _as_lists(fields)
    elif length > 0:
        req.body_error = "unsupported form encoding %r" % kind
    return req


# ---------------------------------------------------------------------------
# Responses

class Response(Record):
    """What a page prints: status, content type, headers and a body.

    The body is ``body`` (text, sent as UTF-8), or ``data`` (bytes), or the
    file at ``path`` (sent in chunks, then deleted if ``remove_path``).
    ``headers`` are (name, value) pairs."""

    FIELDS = (
        ("body", ""),
        ("content_type", HTML_CONTENT_TYPE),
        ("status", ""),
        ("headers", list),
        ("data", None),
        ("path", None),
        ("remove_path", False),
    )

    def _payload_size(self):
        if self.path is not None:
            return os.path.getsize(self.path)
        if self.data is None:
            self.data = str(self.body).encode("utf-8")
        return len(self.data)

    def header(self, name):
        """The value of header ``name`` (case-insensitive), or None."""
        for key, value in self.headers:
            if key.lower() == name.lower():
                return value
        return None

    def head_bytes(self):
        """The CGI header block (with Content-Length)."""
        head = []
        if self.status:
            head.append("Status: %s" % self.status)
        head.extend("%s: %s" % (k, v) for k, v in self.headers)
        head.append("Content-Type: %s" % self.content_type)
        head.append("Content-Length: %d" % self._payload_size())
        return ("\n".join(head) + "\n\n").encode("latin-1", "replace")

    def chunks(self, size=1 << 16):
        """The body, in pieces."""
        if self.path is None:
            if self.data is None:
                self.data = str(self.body).encode("utf-8")
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

    def cgi_bytes(self):
        """Header block and body as the CGI writes them to stdout."""
        return self.head_bytes() + b"".join(self.chunks())

    @property
    def text(self):
        """The body as text (tests and callers that read a page)."""
        if self.path is not None:
            with open(self.path, "rb") as f:
                return f.read().decode("utf-8", "replace")
        if self.data is not None:
            return self.data.decode("utf-8", "replace")
        return str(self.body)

    def write(self, out):
        """Write header block and body to ``out`` (a binary stream)."""
        out.write(self.head_bytes())
        for block in self.chunks():
            out.write(block)


def cookie_header(name, value, path="/", max_age=None, secure=False, samesite="Lax"):
    """A ``Set-Cookie`` (name, value) pair, HttpOnly always (no page script
    ever needs a login cookie); ``max_age`` 0 deletes the cookie."""
    jar = SimpleCookie()
    jar[name] = value
    morsel = jar[name]
    morsel["path"] = quote(path, safe="/-._~")
    morsel["httponly"] = True
    morsel["samesite"] = samesite
    if max_age is not None:
        morsel["max-age"] = int(max_age)
    if secure:
        morsel["secure"] = True
    return ("Set-Cookie", morsel.OutputString())


def url_path(url):
    """The path of a URL ("/" when it has none): a project's cookie path."""
    return urlsplit(url or "").path or "/"


def log_error(message):
    """A line in the web server's error log (a CGI's or a persistent
    process's stderr), as PHP's error_log."""
    sys.stderr.write("[boincpy web] %s\n" % message)
    sys.stderr.flush()


def config_failure(exc):
    """The answer when config.xml can't be read: a plain page naming the
    problem (the file and what is wrong), as BOINC's pages die on it."""
    return Response("Can't parse project config file: %s\n" % exc,
                    content_type="text/plain; charset=UTF-8",
                    status="500 Internal Server Error")


def serve(handler, environ, stream, resident, script=""):
    """A page as a plain function: the CGI environment and the body's stream
    in, the CGI output (bytes) out.

    ``handler(cfg, request) -> Response`` is the page (``cfg`` config.xml
    without config_aux.xml, as BOINC's PHP reads it); ``resident``
    (:class:`boincpy.resident.Resident`) keeps the configuration and the
    database connection between requests (``request.resident``).  A handler
    may say how its body is read: ``handler.max_post_bytes`` (a larger form),
    ``handler.uploads`` (True, or the most bytes one file part may have:
    multipart file parts spooled in the project's tmp
    directory); ``handler.config_failure(exc)`` answers a config.xml that
    can't be read in the page's own format.
    """
    resident.requests += 1
    try:
        cfg = resident.config(aux=False)
    except ConfigError as exc:
        log_error("%s: %s" % (script, exc))
        answer = getattr(handler, "config_failure", config_failure)
        return answer(exc).cgi_bytes()
    uploads = getattr(handler, "uploads", False)
    request = read_request(environ, stream,
                           getattr(handler, "max_post_bytes", MAX_POST_BYTES),
                           cfg.tmp_dir if uploads else None,
                           uploads if uploads is not True and uploads else None)
    request.resident = resident
    try:
        return handler(cfg, request).cgi_bytes()
    finally:
        request.remove_files()


def run_cgi(handler, script=""):
    """Run a page (see :func:`serve`) as a CGI: os.environ and stdin in,
    stdout out, and leave at once (:func:`boincpy.hot_path.exit_now`: the
    interpreter's shutdown was a tenth of a page's CPU)."""
    resident = Resident()
    try:
        out = serve(handler, os.environ, sys.stdin.buffer, resident, script)
    finally:
        resident.close()
    sys.stdout.buffer.write(out)
    exit_now()
