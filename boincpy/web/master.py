"""The master page (BOINC's html/user/index.php), built on each request.

A client attaching to the project, and every client now and then, reads the
master page for the scheduler URLs: BOINC's page_head() copies
``html/user/schedulers.txt`` into the page's head on every request (unless
<no_computing>), so an operator adds or removes a scheduler host by editing
that file, with no rebuild (BOINC leaves it out when project.inc defines
NO_COMPUTING; boincpy has no project.inc, and a web-only project has no
schedulers.txt).  boincpy does the same, and reads the project's other
master-page files at each request too:

* ``html/user/schedulers.txt``: the scheduler declarations, copied as they
  are, if the file exists (make_project writes both forms, ``<!-- <scheduler>URL</scheduler> -->``
  and ``<link rel="boinc_scheduler" href="URL">``, one per line);
* ``html/project/project_description.html``: the page's description (BOINC's
  project_description.php, here an HTML fragment), a default sentence if
  missing;
* ``html/user/motd.html``: a message of the day (BOINC's motd.php), if any.

The client reads the page in 256-byte lines, so the declarations stay on
lines of their own.
"""


from boincpy.web.http import HTML_CONTENT_TYPE, Response
from boincpy.xml import xml_escape

PAGE = "index.php"
# BOINC's page_head() sends these so that no proxy keeps an old scheduler list
NO_CACHE = [("Expires", "Mon, 26 Jul 1997 05:00:00 UTC"),
            ("Cache-Control", "no-cache, must-revalidate, post-check=0, pre-check=0"),
            ("Pragma", "no-cache")]


def _read(path):
    """A master-page file's text, or None if there is none."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except FileNotFoundError:
        return None


def page(cfg):
    """The master page's HTML, from the project's files as they are now."""
    name = xml_escape(cfg.long_name or "BOINC project", quote=True)
    head = ["<!DOCTYPE html>", "<html>", "<head>", '<meta charset="utf-8">']
    schedulers = _read(cfg.project_path("html", "user", "schedulers.txt"))
    if schedulers:
        head.append(schedulers.strip("\n"))
    head += ["<title>%s</title>" % name, "</head>", "<body>", "<h1>%s</h1>" % name]
    description = _read(cfg.project_path("html", "project", "project_description.html"))
    if description is None:
        description = ("<p>This is a BOINC project. To take part, install BOINC from "
                       '<a href="https://boinc.berkeley.edu/download.php">'
                       "boinc.berkeley.edu</a>\nand attach it to this project's URL: "
                       "<code>%s</code></p>" % xml_escape(cfg.master_url, quote=True))
    body = [description.strip("\n")]
    motd = _read(cfg.project_path("html", "user", "motd.html"))
    if motd and motd.strip():
        body.append('<div class="motd">\n%s\n</div>' % motd.strip("\n"))
    return "\n".join(head + body + ["</body>", "</html>", ""])


def handle(cfg, request):
    """The page as a Response (``handler(cfg, request)`` of boincpy.web.http)."""
    return Response(body=page(cfg), content_type=HTML_CONTENT_TYPE, headers=list(NO_CACHE))


def cgi_main():
    """Entry point of html/user/index.php (a CGI; the persistent mode serves
    :func:`handle` through boincpy.persistent)."""
    from boincpy.web.http import run_cgi
    run_cgi(handle, PAGE)
