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


from boincpy.errors import DatabaseError
from boincpy.web.http import HTML_CONTENT_TYPE, Response, log_error
from boincpy.web.markup import Markup, esc, fmt, join, link

PAGE = "index.php"
# BOINC's page_head() sends these so that no proxy keeps an old scheduler list
NO_CACHE = [("Expires", "Mon, 26 Jul 1997 05:00:00 UTC"),
            ("Cache-Control", "no-cache, must-revalidate, post-check=0, pre-check=0"),
            ("Pragma", "no-cache")]
NEWS_ITEMS = 5
# The site's pages a volunteer starts from (BOINC's sample index.php menus).
MENU = (("create_account_form.php", "Join"), ("login_form.php", "Log in"),
        ("home.php", "Your account"), ("prefs.php?subset=global", "Preferences"),
        ("team.php", "Teams"), ("top_users.php", "Statistics"),
        ("forum_index.php", "Message boards"), ("apps.php", "Applications"),
        ("server_status.php", "Server status"), ("old_news.php", "News"))


def _read(path):
    """A master-page file's text, or None if there is none."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except FileNotFoundError:
        return None


def page(cfg, news=(), uotd=""):
    """The master page's HTML, from the project's files as they are now;
    ``news``: the latest news items (dicts with id and title); ``uotd``: the
    user of the day's box (Markup)."""
    name = cfg.long_name or "BOINC project"
    head = [Markup("<!DOCTYPE html>"), Markup("<html>"), Markup("<head>"),
            Markup('<meta charset="utf-8">')]
    schedulers = _read(cfg.project_path("html", "user", "schedulers.txt"))
    if schedulers:
        head.append(Markup(schedulers.strip("\n")))     # the operator's file, as it is
    head += [fmt("<title>{}</title>", name), Markup("</head>"), Markup("<body>"),
             fmt("<h1>{}</h1>", name)]
    description = _read(cfg.project_path("html", "project", "project_description.html"))
    if description is None:
        description = fmt("<p>This is a BOINC project. To take part, install BOINC from "
                          '<a href="https://boinc.berkeley.edu/download.php">'
                          "boinc.berkeley.edu</a>\nand attach it to this project's URL: "
                          "<code>{}</code></p>", cfg.master_url)
    body = [Markup(description.strip("\n"))]             # the operator's file, as it is
    # one short line per link: the client reads this page in 256-byte lines
    body.append(Markup('<ul class="menu">'))
    body += [fmt("<li>{}</li>", link(href, text)) for href, text in MENU]
    body.append(Markup("</ul>"))
    if news:
        body.append(Markup('<h2>News</h2>\n<ul class="news">'))
        for item in news:
            title = (item.get("title") or "")[:100]
            body.append(fmt("<li>{}</li>", link("forum_thread.php?id=%d" % item["id"], title)))
        body.append(Markup("</ul>"))
    if uotd:
        body.append(uotd)
    motd = _read(cfg.project_path("html", "user", "motd.html"))
    if motd and motd.strip():
        body.append(Markup('<div class="motd">\n%s\n</div>' % motd.strip("\n")))
    return str(join(head + body + [Markup("</body>"), Markup("</html>"), Markup("")],
                    Markup("\n")))


def latest_news(request, cfg):
    """The newest news items for the page, or none when the database can't
    be read (the page still lists the schedulers)."""
    from boincpy.web.user import news
    try:
        db = request.resident.database(cfg) if request.resident is not None else None
        if db is None:
            return []
        return news.news_items(db, news.news_forum(db), limit=NEWS_ITEMS)
    except DatabaseError as exc:
        log_error("index.php: no news: %s" % exc)
        return []


def user_of_the_day(request, cfg):
    """The user of the day's box, or "" (no database, no user of the day)."""
    from boincpy.web.user.profile import uotd_box
    try:
        db = request.resident.database(cfg) if request.resident is not None else None
        return uotd_box(db, cfg) if db is not None else ""
    except DatabaseError as exc:
        log_error("index.php: no user of the day: %s" % exc)
        return ""


def handle(cfg, request):
    """The page as a Response (``handler(cfg, request)`` of boincpy.web.http)."""
    return Response(body=page(cfg, latest_news(request, cfg), user_of_the_day(request, cfg)),
                    content_type=HTML_CONTENT_TYPE, headers=list(NO_CACHE))


def cgi_main():
    """Entry point of html/user/index.php (a CGI; the persistent mode serves
    :func:`handle` through boincpy.persistent)."""
    from boincpy.web.http import run_cgi
    run_cgi(handle, PAGE)
