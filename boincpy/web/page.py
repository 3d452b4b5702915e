"""What every ops page shares: the request context, the layout, small HTML helpers.

A page is a function ``page(ctx) -> Response`` (see :mod:`boincpy.web.ops.main`);
:func:`serve` runs one and turns a PageError, a Redirect or a failure into
the answer.  ``ctx.rdb`` reads through the read replica (lists, counts,
summaries: where BOINC's pages query the handle of ``BoincDb::get(true)``),
if config.xml names one completely
(:func:`boincpy.db.connection.web_replica_configured`) and it answers;
``ctx.db`` is the main database (detail views and every write).  Actions
call :meth:`Context.require_action` first: POST only, a valid form token,
and not from another site.

The submitters' pages (:mod:`boincpy.web.submitter`) use the same frame with
their own :class:`Site` (navigation, name) and a Context whose user is the
logged-in account.
"""

import binascii
import os
import sys
import time
from _sha256 import sha256     # hashlib loads OpenSSL's bindings: 2 ms of every page

from boincpy.db import connect
from boincpy.db.connection import replica_state, web_replica_configured
from boincpy.errors import BoincpyError, ConfigError, DatabaseError, Signal
from boincpy.record import Record
from boincpy.resident import Resident
from boincpy.web import csrf
from boincpy.web.http import BadRequest, Response, config_failure, run_cgi
from boincpy.web.markup import Markup, fmt, join, link, url


class PageError(BoincpyError):
    """Stop the page and show ``message`` with an HTTP ``status``."""

    def __init__(self, message, status="400 Bad Request", title="Unable to handle request"):
        super().__init__(message)
        self.message = message
        self.status = status
        self.title = title


class Redirect(Signal):
    """Stop the page and send the browser to ``location`` (303 See Other),
    with extra ``headers`` (name, value) such as cookies.  A signal, not an
    error: it does not derive from BoincpyError."""

    def __init__(self, location, headers=()):
        super().__init__(location)
        self.location = location
        self.headers = list(headers)


class Site(Record):
    """What frames a family of pages: its navigation links (the first is its
    main page), the name in the footer, and whether a failing page shows its
    traceback (the admins' pages) or only says it failed (public pages: the
    traceback goes to the web server's log, never to a visitor)."""

    FIELDS = (("nav", ()), ("name", ""), ("show_tracebacks", True))


NAV = (("index.php", "Main"), ("server_status.php", "Server status"),
       ("db_form.php?table=result", "Results"), ("db_form.php?table=workunit", "Workunits"),
       ("db_form.php?table=host", "Hosts"), ("db_form.php?table=user", "Users"),
       ("db_form.php?table=batch", "Batches"), ("manage_apps.php", "Apps"), ("manage_app_versions.php", "App versions"),
       ("failure_result_summary_by_platform.php", "Failures"),
       ("cancel_wu_form.php", "Cancel jobs"), ("show_log.php", "Logs"))
OPS = Site(NAV, "boincpy ops")


class Context:
    """The request, the project's config, lazily opened database connections.

    ``user`` is who form tokens are made for (the admin Apache authenticated);
    ``site`` the navigation and name that frame the pages."""

    site = OPS

    def __init__(self, req, cfg, now=None, page=""):
        self.req = req
        self.cfg = cfg
        self.page = page                # the script answering, e.g. "cancel_wu_action.php"
        self.now = int(now if now is not None else time.time())
        self.user = req.remote_user
        self._db = None
        self._shared = False            # _db is the process's (not closed here)
        self._rdb = None
        self._secret = None
        self.replica_note = None        # set when lists came from a stale replica

    @property
    def db(self):
        """The main database (reads that must be current, and all writes):
        :meth:`boincpy.web.http.Request.database`."""
        if self._db is None:
            self._db, self._shared = self.req.database(self.cfg)
        return self._db

    @property
    def rdb(self):
        """The read replica if one is configured and reachable, else the main one."""
        if self._rdb is None:
            cfg = self.cfg
            if not web_replica_configured(cfg):
                self._rdb = self.db
            else:
                resident = self.req.resident
                cgi = resident is not None and not resident.persistent
                try:
                    # a classic CGI's over wire as well (no client library)
                    self._rdb = connect(cfg, replica=True, driver="wire" if cgi else "mysqlclient")
                except DatabaseError:
                    # As BOINC's BoincDb::get(true): fall back to the main DB.
                    self._rdb = self.db
                else:
                    # the page still answers from a replica that stopped or
                    # lags, and says so (BOINC's pages don't tell)
                    stale, text = replica_state(self._rdb)
                    if stale:
                        self.replica_note = (
                            "The lists and counts on this page come from the read replica "
                            "(%s), which %s: they may be stale." % (cfg.replica_db_host, text))
        return self._rdb

    def who(self):
        """The header's note of who is logged in."""
        return fmt('<span class="who">admin: {}</span>', self.user) if self.user else ""

    def close(self):
        """Close the connections this page opened (not the process's)."""
        opened = [] if self._shared else [self._db]
        if self._rdb is not self._db:
            opened.append(self._rdb)
        for conn in opened:
            if conn is not None:
                conn.close()
        self._db = self._rdb = None

    # -- form tokens ------------------------------------------------------

    def secret(self):
        if self._secret is None:
            self._secret = csrf.load_secret(self.cfg)
        return self._secret

    def token(self, action=None):
        """A form token for the logged-in admin's form posting to ``action``
        (a page name; this page by default)."""
        return csrf.make_token(self.secret(), self.user, action or self.page, self.now)

    def token_field(self, action=None):
        """The hidden form field every POST form carries (``action``: the
        page the form posts to, if not this one)."""
        return fmt('<input type="hidden" name="{}" value="{}">', csrf.FIELD, self.token(action))

    def require_action(self):
        """Refuse anything but a same-site POST with this admin's valid token."""
        req = self.req
        if req.method != "POST":
            raise PageError("This page changes the database and only accepts a POST "
                            "from its form; nothing was changed.",
                            "405 Method Not Allowed", "Action refused")
        if not csrf.same_origin(req.environ):
            raise PageError("The form was posted from another site; nothing was changed.",
                            "403 Forbidden", "Action refused")
        if not csrf.check_token(self.secret(), self.user, self.page, req.post(csrf.FIELD),
                                self.now):
            raise PageError("The form token is missing, wrong, made for another form or "
                            "expired (tokens last %d minutes): reload the form and submit "
                            "it again; nothing was changed." % (csrf.MAX_AGE // 60),
                            "403 Forbidden", "Action refused")

    # -- parameters -------------------------------------------------------

    def int_arg(self, name, default=None, post=False, minimum=None, maximum=None):
        """An integer parameter; PageError naming it if it is not one."""
        text = self.req.post(name) if post else self.req.get(name)
        if text == "":
            return default
        try:
            value = int(text)
        except ValueError:
            raise PageError("parameter %s: %r is not an integer" % (name, text)) from None
        if minimum is not None and value < minimum:
            raise PageError("parameter %s: %d is below %d" % (name, value, minimum))
        if maximum is not None and value > maximum:
            raise PageError("parameter %s: %d is above %d" % (name, value, maximum))
        return value


# ---------------------------------------------------------------------------
# Layout

STYLE = """
body{font-family:Helvetica,Arial,sans-serif;font-size:14px;color:#222;margin:0 16px 24px}
header{display:flex;flex-wrap:wrap;align-items:center;gap:4px 14px;border-bottom:1px solid #ddd;padding:8px 0}
header a{color:#2a6496;text-decoration:none}header a:hover{text-decoration:underline}
header .who{margin-left:auto;color:#666}
h1{font-weight:normal;font-size:26px;margin:14px 0 10px}h2{font-weight:normal;font-size:20px;margin:22px 0 8px}
a{color:#2a6496}
table{border-collapse:collapse;margin:6px 0 12px}
th,td{padding:4px 8px;text-align:left;vertical-align:top;border-bottom:1px solid #e4e4e4}
th{background:#337ab7;color:#fff;font-weight:bold}
th a{color:#fff}
tr:nth-child(even) td{background:#f7f7f7}
td.num,th.num{text-align:right}
table.kv th{background:none;color:#333;text-align:right;font-weight:normal;white-space:nowrap;border-bottom:1px solid #e4e4e4}
td.ok{background:#dff0d8!important}td.bad{background:#f2dede!important}td.warn{background:#fcf8e3!important}td.off{color:#888}
pre{background:#f5f5f5;border:1px solid #ccc;border-radius:3px;padding:8px;white-space:pre-wrap;word-break:break-all;max-width:100em;margin:0}
.notice{padding:8px 12px;border-radius:3px;margin:8px 0}
.notice.ok{background:#dff0d8}.notice.bad{background:#f2dede}.notice.warn{background:#fcf8e3}
.cols{display:flex;flex-wrap:wrap;gap:8px 36px}
.muted{color:#777}.small{font-size:12px}
form.filters{display:grid;grid-template-columns:max-content auto;gap:6px 12px;align-items:center;margin:8px 0 16px}
form.filters label{text-align:right}
form.inline{display:inline}
input[type=text],input[type=number],input[type=date],select{padding:2px 4px}
input[type=number]{width:7em}
.goto form{display:block;margin:4px 0}
button{padding:3px 10px}
button.danger{background:#c9302c;color:#fff;border:1px solid #ac2925;border-radius:3px}
blockquote.quote{margin:6px 0 10px 8px;padding:6px 10px;border-left:4px solid #9ab;background:#f3f6f9;color:#333}
blockquote.quote .quote-by{font-size:12px;color:#666;margin-bottom:4px}
svg{display:block;margin:4px 0 12px}
svg.progress{display:inline-block;vertical-align:middle;margin:0 8px}
footer{margin-top:24px;border-top:1px solid #ddd;padding-top:8px;color:#777;font-size:12px}
"""
_STYLE_HASH = binascii.b2a_base64(sha256(STYLE.encode()).digest(), newline=False).decode()

# No scripts (but a page's own third-party ones: security_headers); styles
# only from the page's own <style> block; forms only post back here; the
# pages can't be framed.
_CSP = ("default-src 'none'; style-src 'sha256-%s'; img-src 'self' data:%s; "
        "form-action 'self'; frame-ancestors 'none'; base-uri 'none'%s")
SECURITY_HEADERS = [
    ("Content-Security-Policy", _CSP % (_STYLE_HASH, "", "")),
    ("X-Content-Type-Options", "nosniff"),
    ("X-Frame-Options", "DENY"),
    ("Referrer-Policy", "same-origin"),
    ("Cache-Control", "no-store"),
]


def security_headers(scripts=()):
    """The pages' headers; ``scripts``: (URL of a script the page loads, the
    origins it uses), each allowed for scripts, frames and images (the
    reCAPTCHA widget on the sign-up form)."""
    if not scripts:
        return list(SECURITY_HEADERS)
    origins = " ".join(sorted({o for _, used in scripts for o in used}))
    extra = "; script-src %s; frame-src %s; connect-src %s" % (origins, origins, origins)
    return [("Content-Security-Policy", _CSP % (_STYLE_HASH, " " + origins, extra))] + \
        SECURITY_HEADERS[1:]


def render(ctx, title, body, status="200 OK", site=None, scripts=()):
    """A complete page: project name and title, navigation, body, footer.

    ``site``: the frame when there is no context yet (default: the context's);
    ``scripts``: third-party scripts the page loads (see security_headers)."""
    site = site or (ctx.site if ctx is not None else OPS)
    project = ctx.cfg.long_name if ctx is not None and ctx.cfg is not None else ""
    heading = "%s: %s" % (project, title) if project else title
    nav = join((link(href, text) for href, text in site.nav), " ")
    who = ctx.who() if ctx is not None else ""
    if ctx is not None and ctx.replica_note:
        body = join([notice("warn", ctx.replica_note), body])
    stamp = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(ctx.now if ctx else time.time()))
    html = fmt(
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<title>{}</title><style>{}</style>{}</head>\n<body><header>{}{}</header>\n'
        '<h1>{}</h1>\n{}\n<footer>{} &middot; {} &middot; page made {}</footer>\n'
        '</body></html>\n',
        heading, Markup(STYLE), join(fmt('<script src="{}" async defer></script>', src)
                                     for src, _ in scripts),
        nav, who, heading, body, link(site.nav[0][0], "Main page"), site.name, stamp)
    return Response(body=html, status=status, headers=security_headers(scripts))


def error_page(ctx, err, site=None):
    """The page for a PageError."""
    body = fmt('<div class="notice bad">{}</div>', err.message)
    return render(ctx, err.title, body, err.status, site)


def redirect_response(redirect):
    """The 303 answer to a Redirect (with a link, for clients that don't follow)."""
    body = fmt('<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>See other'
               '</title></head><body><a href="{}">Continue</a></body></html>\n',
               redirect.location)
    return Response(body=body, status="303 See Other",
                    headers=[("Location", redirect.location)] + redirect.headers
                    + list(SECURITY_HEADERS))


def serve(pages, page_name, make_context, site=OPS):
    """Run ``pages[page_name]`` with the context ``make_context()`` returns.

    Always a Response: a PageError becomes its error page, a Redirect a 303,
    any other failure an error page (a BoincpyError's message, or the
    traceback, which also goes to the web server's error log)."""
    ctx = None
    try:
        ctx = make_context()
        func = pages.get(page_name)
        if func is None:
            raise PageError("no page named %s" % page_name, "404 Not Found", "Not found")
        return func(ctx)
    except Redirect as redirect:
        return redirect_response(redirect)
    except PageError as err:
        return error_page(ctx, err, site)
    except BadRequest as err:
        return error_page(ctx, PageError(err.message, err.status), site)
    except BoincpyError as err:
        return error_page(ctx, PageError(err.message, "500 Internal Server Error", "Error"), site)
    except Exception:
        import traceback  # (only a failing page pays for it)
        text = traceback.format_exc()
        sys.stderr.write(text)
        if (site or OPS).show_tracebacks:
            body = fmt('<div class="notice bad">The page failed:</div><pre>{}</pre>', text)
        else:
            body = notice("bad", "The page failed; the project's administrators can find "
                                 "why in the web server's error log.")
        return render(ctx, "Internal error", body, "500 Internal Server Error", site)
    finally:
        if ctx is not None:
            ctx.close()


def handle_in_project(respond, page_name, req, project_dir, now=None):
    """``respond(page_name, cfg, req, now)`` of a page family with the config
    of the project at ``project_dir`` (tests, run_in_ops); a config.xml that
    can't be read is answered as the CGI answers it."""
    try:
        cfg = Resident(project_dir).config(aux=False)
    except ConfigError as exc:
        return config_failure(exc)
    return respond(page_name, cfg, req, now)


def run_page(respond, script_file, uploads=False):
    """The CGI main of a page file of a family (html/ops/NAME.php,
    html/user/NAME.php): ``respond(NAME.php, cfg, request)`` over
    :func:`boincpy.web.http.run_cgi`; ``uploads``: the page reads file parts."""
    page = os.path.basename(script_file)

    def handler(cfg, req):
        return respond(page, cfg, req)
    handler.uploads = uploads
    run_cgi(handler, page)


# ---------------------------------------------------------------------------
# HTML helpers

def table(headers, rows, classes=None, empty="none", head=None):
    """A table with a header row; cells are escaped unless Markup.

    ``classes``: an optional function (row index, column index, cell) -> CSS class;
    ``head``: an optional function header text -> its cell's content (sort links).
    """
    head = join(fmt("<th>{}</th>", head(h) if head else h) for h in headers)
    body = []
    for i, row in enumerate(rows):
        cells = []
        for j, cell in enumerate(row):
            cls = classes(i, j, cell) if classes else ""
            if cls:
                cells.append(fmt('<td class="{}">{}</td>', cls, cell))
            else:
                cells.append(fmt("<td>{}</td>", cell))
        body.append(fmt("<tr>{}</tr>", join(cells)))
    if not body:
        body.append(fmt('<tr><td colspan="{}" class="muted">{}</td></tr>', len(headers), empty))
    return fmt("<table><thead><tr>{}</tr></thead><tbody>\n{}\n</tbody></table>",
               head, join(body, Markup("\n")))


def sort_link(page, params, column, label, sort, order):
    """A column header that sorts the list by ``column``: descending first,
    the other way when it is already the sort column (with an arrow)."""
    if column == sort:
        new = "asc" if order == "desc" else "desc"
        label = "%s %s" % (label, "\u25bc" if order == "desc" else "\u25b2")
    else:
        new = "desc"
    return link(url(page, **dict(params, sort=column, order=new)), label)


def paging(page, params, start, shown, total, n):
    """Previous/next links of a paged list ("" when it all fits)."""
    nav = []
    if start > 0:
        nav.append(link(url(page, **dict(params, start=max(0, start - n) or None)),
                        "Previous %d" % n))
    if start + shown < total:
        nav.append(link(url(page, **dict(params, start=start + n)), "Next %d" % n))
    if not nav:
        return Markup("")
    return fmt('<p class="paging">{}</p>', join(nav, " | "))


def kv_table(pairs):
    """A label/value table for one row's fields."""
    rows = join(fmt("<tr><th>{}</th><td>{}</td></tr>", k, v) for k, v in pairs)
    return fmt('<table class="kv">{}</table>', rows)


def select(name, options, selected="", any_label=None):
    """A ``<select>``; ``options`` are (value, label); ``any_label`` adds value ""."""
    opts = []
    if any_label is not None:
        opts.append(fmt('<option value="">{}</option>', any_label))
    for value, label in options:
        sel = Markup(" selected") if str(value) == str(selected) else Markup("")
        opts.append(fmt('<option value="{}"{}>{}</option>', value, sel, label))
    return fmt('<select name="{}" id="{}">{}</select>', name, name, join(opts))


def text_input(name, value="", size=12, kind="text"):
    """An ``<input>`` with an id equal to its name."""
    return fmt('<input type="{}" name="{}" id="{}" value="{}" size="{}">',
               kind, name, name, value, size)


def checkbox(name, checked, value="1"):
    return fmt('<input type="checkbox" name="{}" value="{}"{}>', name, value,
               Markup(" checked") if checked else Markup(""))


def hidden(name, value):
    return fmt('<input type="hidden" name="{}" value="{}">', name, value)


def notice(kind, message):
    """A coloured box: kind ok, bad or warn."""
    return fmt('<div class="notice {}">{}</div>', kind, message)


def num(x, digits=2):
    """A number for a table cell: ints plain, floats with ``digits`` decimals."""
    if x is None:
        return ""
    if isinstance(x, int):
        return "{:,}".format(x)
    return "{:,.{}f}".format(float(x), digits)
