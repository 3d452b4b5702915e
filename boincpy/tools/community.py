"""The community's periodic tasks (BOINC's html/ops scripts of the same names,
run by config.xml <tasks> as ``run_in_ops ./NAME.php``):

``update_uotd [-f]``
    Chooses the user of the day (html/inc/uotd.inc's select_uotd): nothing
    if one was chosen today (UTC) unless ``--force``; else a random user with
    an accepted profile (verification 1 -- any profile not rejected when the
    project does not screen), recent average credit above 1, never chosen;
    if there is none, one of the 100 chosen longest ago.  Sets
    ``profile.uotd_time`` and e-mails the user (unless they opted out of
    e-mail, user.send_email 0).
``update_profile_pages``
    Writes the static profile lists into html/user_profile/ as BOINC's
    update_profile_pages.php does: ``profile_country.html`` and
    ``profile_country_COUNTRY_N.html``, ``profile_L_N.html`` /
    ``profile_other_N.html`` by the name's first character,
    ``user_gallery_N.html`` (the pictures, 7x4 a page), and
    ``profile_alpha.html`` (the letters, a fragment); then removes the
    pictures of users who no longer have a profile with one.
``badge_assign``
    BOINC's sample badge_assign.php: badges ``user_pct_0..2`` and
    ``team_pct_0..2`` (top 1%, 5%, 25% by recent average credit among those
    above 1, images ``img/pct_1.png`` ...), created when missing; each user
    and team with credit gets the best one it qualifies for and loses the
    others.

Each takes ``--dry_run`` (say what would be done, change nothing) and
``--project_dir``; lines are logged as BOINC's tasks log them.
"""

import os
import random
import re
import sys
import time

import click

from boincpy import mail
from boincpy.cli import click_main, project_dir_option
from boincpy.config import load_config
from boincpy.db import badge as badge_table
from boincpy.db import connect
from boincpy.db import profile as profile_table
from boincpy.files import atomic_write, check_file_name
from boincpy.log import MessageLog
from boincpy.web.http import Request
from boincpy.web.markup import Markup, fmt, join, link
from boincpy.web.page import Context, Site, render, table
from boincpy.web.user.profile import (ALPHABET, current_uotd, image_url, picture_shown,
                                      profile_summary, visible_to_others)
from boincpy.web.user.session import USER_SITE

UOTD_THRESHOLD = 7              # uotd.inc: warn when fewer candidates are left
GALLERY_WIDTH, GALLERY_HEIGHT = 7, 4
LIST_ROWS, LIST_COLS = 5, 2
BADGE_PCTILES = (1, 5, 25)
BADGE_IMAGES = ("pct_1.png", "pct_5.png", "pct_25.png")
CHUNK = 1000


def _connect(project_dir):
    cfg = load_config(project_dir)
    return cfg, connect(cfg)


def _dry_run_option():
    return click.option("--dry_run", "-dry_run", "dry_run", is_flag=True,
                        help="say what would be done; change nothing")


# ---------------------------------------------------------------------------
# update_uotd

def uotd_mail(cfg, user):
    """(subject, body) of the message to the chosen user."""
    project = cfg.long_name or "the project"
    subject = "You are the %s user of the day!" % project
    body = ("Hello %s,\n\n"
            "Congratulations: you were chosen as today's user of the day of %s.\n"
            "Your profile is shown on the project's web site for the next 24 hours:\n"
            "%sview_profile.php?userid=%d\n\n"
            "Thank you for taking part in %s.\n"
            % (user["name"], project, cfg.master_url, user["id"], project))
    return subject, body


def _candidate_clause(cfg):
    if cfg.profile_screening:
        return "p.verification = 1"
    return "p.verification >= 0"


def select_uotd(cfg, db, log, now=None, force=False, dry_run=False):
    """Choose the user of the day; return the chosen user id (None: none)."""
    now = int(time.time() if now is None else now)
    current = current_uotd(db)
    if current and not force:
        if time.gmtime(int(current["uotd_time"]))[:3] == time.gmtime(now)[:3]:
            log.normal("Already have UOTD for today (user %d)" % current["userid"])
            return current["userid"]
    if force:
        log.normal("Forcing new UOTD")
    fresh = db.query(
        "SELECT p.userid FROM profile p JOIN user u ON u.id = p.userid WHERE %s "
        "AND u.expavg_credit > 1 AND (p.uotd_time IS NULL OR p.uotd_time = 0)"
        % _candidate_clause(cfg))
    if len(fresh) < UOTD_THRESHOLD:
        log.warning("only %d candidates for UOTD left (screen more profiles: ops page "
                    "profile_screen_form.php)" % len(fresh))
    if fresh:
        userid = random.choice(fresh)["userid"]
    else:
        log.normal("no new candidate found; choosing one of those shown least recently")
        old = db.query(
            "SELECT p.userid FROM profile p JOIN user u ON u.id = p.userid WHERE %s "
            "AND p.uotd_time > 0 ORDER BY p.uotd_time ASC LIMIT 100" % _candidate_clause(cfg))
        if not old:
            log.normal("No screened users found")
            return None
        userid = random.choice(old)["userid"]
    user = db.query_one("SELECT id, name, email_addr, send_email FROM user WHERE id = %s",
                        (userid,))
    if dry_run:
        log.normal("dry run: would choose user %d as UOTD" % userid)
        return userid
    profile_table.set_uotd_time(db, userid, now)
    log.normal("Chose user %d as UOTD" % userid)
    _mail_uotd(cfg, user, log)
    return userid


def _mail_uotd(cfg, user, log):
    if not user["send_email"]:
        log.normal("user %d does not want e-mail from the project; not mailed" % user["id"])
        return
    if not mail.configured(cfg):
        log.normal("the project sends no e-mail (no smtp_host or email_command); not mailed")
        return
    subject, body = uotd_mail(cfg, user)
    try:
        mail.send(cfg, user["email_addr"], subject, body, user["name"])
    except mail.MailError as exc:
        log.warning("mail to user %d failed: %s" % (user["id"], exc.message))
    else:
        log.normal("mailed user %d" % user["id"])


UOTD_USAGE = """Usage: update_uotd [-f|--force] [--dry_run] [--project_dir DIR]

Chooses the project's user of the day (a daily task).
  -f, --force   choose a new one even if today's is chosen already
  --dry_run     say whom it would choose; change nothing, send no e-mail
"""


def _run_task(project_dir, work):
    """A task's run: the project's config and database, ``work(cfg, db,
    log)`` between BOINC's "Starting" and "Finished" lines; exit status 0."""
    log = MessageLog(sys.stdout)
    cfg, db = _connect(project_dir)
    try:
        log.normal("Starting")
        work(cfg, db, log)
        log.normal("Finished")
    finally:
        db.close()
    return 0


@click.command(add_help_option=False)
@click.option("-h", "--help", "-help", "show_help", is_flag=True)
@click.option("-f", "--force", "force", is_flag=True)
@_dry_run_option()
@project_dir_option()
def update_uotd_cmd(show_help, force, dry_run, project_dir):
    if show_help:
        sys.stdout.write(UOTD_USAGE)
        return 0
    return _run_task(project_dir, lambda cfg, db, log: select_uotd(cfg, db, log, force=force,
                                                                   dry_run=dry_run))


def update_uotd_main(argv=None):
    """Entry point of bin/update_uotd."""
    return click_main(update_uotd_cmd, argv, "update_uotd", UOTD_USAGE)


# ---------------------------------------------------------------------------
# update_profile_pages

def legal_filename(name):
    """A country as part of a file name (util.inc's get_legal_filename: no
    commas, spaces as underscores), and nothing that leaves the folder."""
    name = name.replace(",", "").replace(" ", "_")
    name = "".join(c if c.isalnum() or c in "_-.()'" else "_" for c in name).lstrip(".")
    while ".." in name:                     # (files.check_file_name refuses "..")
        name = name.replace("..", ".")
    return name or "_"


class _Pages:
    """Writes the static pages, framed like the site's pages with absolute links."""

    def __init__(self, cfg, now, dry_run, log):
        self.cfg, self.now, self.dry_run, self.log = cfg, now, dry_run, log
        self.folder = cfg.project_path("html", "user_profile")
        self.ctx = Context(Request(), cfg, now)
        self.ctx.site = Site(tuple((cfg.master_url + h, t) for h, t in USER_SITE.nav),
                             USER_SITE.name)
        self.written = []

    def write(self, name, title, body):
        stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(self.now))
        html = render(self.ctx, title, fmt("<p>Last updated {}</p>{}", stamp, body)).body
        self.write_fragment(name, html)

    def write_fragment(self, name, html):
        """Write one file of the folder; its name (made from countries and
        letters users chose) passes the one name check first."""
        check_file_name(name, "profile page")
        self.written.append(name)
        if not self.dry_run:
            os.makedirs(self.folder, exist_ok=True)
            atomic_write(os.path.join(self.folder, name), str(html).encode("utf-8"))


def _page_links(base, page, npages):
    nav = []
    if page > 1:
        nav.append(link("%s_%d.html" % (base, page - 1), "Previous page"))
    if page < npages:
        nav.append(link("%s_%d.html" % (base, page + 1), "Next page"))
    jump = [fmt("<b>{}</b>", i) if i == page else link("%s_%d.html" % (base, i), str(i))
            for i in range(1, npages + 1)]
    return fmt("<p>Page {} of {}</p><p>{}</p><p>Jump to page: {}</p>", page, npages,
               join(nav, " | "), join(jump, " "))


def _summary_table(cfg, members):
    rows = []
    for i in range(0, len(members), LIST_COLS):
        cells = []
        for profile in members[i:i + LIST_COLS]:
            view = "%sview_profile.php?userid=%d" % (cfg.master_url, profile["userid"])
            pic = Markup("&nbsp;")
            if picture_shown(cfg, profile):
                pic = link(view, fmt('<img src="{}" alt="">',
                                     cfg.master_url + image_url(profile["userid"], True)))
            cells.append(fmt("<td>{}</td><td>{}</td>", pic,
                             profile_summary(profile, profile["name"], base=cfg.master_url)))
        rows.append(fmt("<tr>{}</tr>", join(cells)))
    return fmt("<table>{}</table>", join(rows))


def _list_pages(pages, members, title, base):
    per_page = LIST_ROWS * LIST_COLS
    npages = max(1, -(-len(members) // per_page))
    for page in range(1, npages + 1):
        chunk = members[(page - 1) * per_page:page * per_page]
        pages.write("%s_%d.html" % (base, page), "%s: page %d of %d" % (title, page, npages),
                    join([_summary_table(pages.cfg, chunk), _page_links(base, page, npages)]))


def build_profile_pages(cfg, db, log, now=None, dry_run=False):
    """Write every page; return the names written (or that would be)."""
    now = int(time.time() if now is None else now)
    pages = _Pages(cfg, now, dry_run, log)
    rows = [p for p in db.query(
        "SELECT p.userid, p.response1, p.has_picture, p.verification, u.name, u.country "
        "FROM profile p JOIN user u ON u.id = p.userid ORDER BY p.userid")
        if visible_to_others(cfg, p)]
    log.normal("%d profiles shown" % len(rows))

    by_country = {}
    for p in rows:
        by_country.setdefault(p["country"] or "Other", []).append(p)
    countries = sorted(by_country)
    for country in countries:
        _list_pages(pages, by_country[country], "User profiles from %s" % country,
                    "profile_country_" + legal_filename(country))
    pages.write("profile_country.html", "User profiles by country", table(
        ["Country", "Profiles"],
        [(link("profile_country_%s_1.html" % legal_filename(c), c), len(by_country[c]))
         for c in countries]))

    by_letter = {}
    for p in rows:
        name = (p["name"] or "").lstrip()
        if name:
            first = name[0].upper()
            by_letter.setdefault(first if first in ALPHABET else "other", []).append(p)
    for letter, members in sorted(by_letter.items()):
        title = ("User profiles: names beginning with %s" % letter if letter != "other"
                 else "User profiles: names beginning with other characters")
        _list_pages(pages, members, title, "profile_" + letter)
    letters = [link("%suser_profile/profile_%s_1.html" % (cfg.master_url, ch), ch)
               if ch in by_letter else fmt("{}", ch) for ch in ALPHABET]
    if "other" in by_letter:
        letters.append(link("%suser_profile/profile_other_1.html" % cfg.master_url, "Other"))
    pages.write_fragment("profile_alpha.html", join(letters, " "))

    pictured = [p for p in rows if p["has_picture"] and (p["name"] or "")]
    per_page = GALLERY_WIDTH * GALLERY_HEIGHT
    npages = max(1, -(-len(pictured) // per_page))
    log.normal("%d users have profiles and pictures%s" % (
        len(pictured), " screened by the project" if cfg.profile_screening else ""))
    for page in range(1, npages + 1):
        chunk = pictured[(page - 1) * per_page:page * per_page]
        trs = []
        for i in range(0, len(chunk), GALLERY_WIDTH):
            trs.append(fmt("<tr>{}</tr>", join(
                fmt("<td>{}</td>", link("%sview_profile.php?userid=%d" % (
                    cfg.master_url, p["userid"]), fmt('<img src="{}" alt="{}">',
                                                       cfg.master_url + image_url(p["userid"],
                                                                                  True),
                                                       p["name"])))
                for p in chunk[i:i + GALLERY_WIDTH])))
        pages.write("user_gallery_%d.html" % page,
                    "Profile gallery: page %d of %d" % (page, npages),
                    join([fmt("<p>The profiles with pictures.</p><table>{}</table>", join(trs)),
                          _page_links("user_gallery", page, npages)]))
    log.normal("%s %d pages" % ("would write" if dry_run else "wrote", len(pages.written)))
    remove_orphan_pictures(cfg, db, log, now, dry_run)
    return pages.written


ORPHAN_GRACE = 3600             # a picture younger than this may be a profile being saved


def remove_orphan_pictures(cfg, db, log, now, dry_run=False):
    """Remove pictures of users without a profile with a picture (a deleted
    account's: BOINC's delete_account removes them, boincpy's account
    deletion knows no files); return the names removed."""
    folder = cfg.project_path("html", "user_profile", "images")
    try:
        names = os.listdir(folder)
    except FileNotFoundError:
        return []
    keep = {r["userid"] for r in db.query("SELECT userid FROM profile WHERE has_picture <> 0")}
    removed = []
    for name in sorted(names):
        m = re.match(r"^(\d+)(_sm)?\.jpg$", name)
        path = os.path.join(folder, name)
        if not m or int(m.group(1)) in keep or now - os.path.getmtime(path) < ORPHAN_GRACE:
            continue
        removed.append(name)
        if dry_run:
            log.normal("dry run: would remove %s (no profile with a picture)" % name)
        else:
            os.unlink(path)
            log.normal("removed %s (no profile with a picture)" % name)
    return removed


PAGES_USAGE = """Usage: update_profile_pages [--dry_run] [--project_dir DIR]

Writes the static lists of profiles (by country, by name, the picture
gallery) into html/user_profile/ (a daily task).
  --dry_run     say which pages it would write; write none
"""


@click.command(add_help_option=False)
@click.option("-h", "--help", "-help", "show_help", is_flag=True)
@click.option("-d", "debug", is_flag=True, hidden=True)
@_dry_run_option()
@project_dir_option()
def update_profile_pages_cmd(show_help, debug, dry_run, project_dir):
    if show_help:
        sys.stdout.write(PAGES_USAGE)
        return 0

    def work(cfg, db, log):
        names = build_profile_pages(cfg, db, log, dry_run=dry_run)
        if dry_run:
            for name in names:
                log.normal("dry run: would write %s" % name)
    return _run_task(project_dir, work)


def update_profile_pages_main(argv=None):
    """Entry point of bin/update_profile_pages."""
    return click_main(update_profile_pages_cmd, argv, "update_profile_pages", PAGES_USAGE)


# ---------------------------------------------------------------------------
# badge_assign

def percentile(db, table, pct):
    """The recent average credit at ``pct`` percent of those above 1 (BOINC's
    DbConn::percentile), or None when nobody has any."""
    n = db.query_value("SELECT COUNT(*) FROM %s WHERE expavg_credit > 1" % table)
    if not n:
        return None
    m = int(n * pct / 100)
    return db.query_value("SELECT expavg_credit FROM %s WHERE expavg_credit > 1 "
                          "ORDER BY expavg_credit LIMIT %d, 1" % (table, m))


def pct_badges(db, kind, now, dry_run=False):
    """The ids of the three percentile badges of ``kind`` (user, team),
    created when missing (util_ops.inc's get_badge)."""
    ids = []
    for i, (pct, image) in enumerate(zip(BADGE_PCTILES, BADGE_IMAGES)):
        name = "%s_pct_%d" % (kind, i)
        row = db.query_one("SELECT id FROM badge WHERE name = %s", (name,))
        if row:
            ids.append(row["id"])
        elif dry_run:
            ids.append(None)
        else:
            ids.append(badge_table.insert_badge(
                db, now, 0 if kind == "user" else 1,
                {"name": name, "title": "Top %d%% in average credit" % pct,
                 "image_url": "img/" + image}))
    return ids


def assign_badges(db, kind, log, now=None, dry_run=False):
    """Assign the percentile badges of users or teams; return {level: count}
    (level 0..2, or None for no badge)."""
    now = int(time.time() if now is None else now)
    table = "user" if kind == "user" else "team"
    badges = pct_badges(db, kind, now, dry_run)
    thresholds = [percentile(db, table, 100 - pct) for pct in BADGE_PCTILES]
    if thresholds[0] is None:
        log.normal("no %s has recent average credit above 1: no %s badges assigned"
                   % (kind, kind))
        return {}
    log.normal("thresholds for %s badges: %s" % (kind, " ".join("%.2f" % t for t in thresholds)))
    counts = {}
    maxid = db.query_value("SELECT MAX(id) FROM %s" % table) or 0
    start = 0
    while start <= maxid:
        items = db.query("SELECT id, expavg_credit FROM %s WHERE id >= %%s AND id < %%s "
                         "AND total_credit > 0" % table, (start, start + CHUNK))
        for item in items:
            level = next((i for i, t in enumerate(thresholds)
                          if item["expavg_credit"] >= t), None)
            counts[level] = counts.get(level, 0) + 1
            if dry_run:
                continue
            if level is not None:
                badge_table.assign(db, kind, item["id"], badges[level], now)
            badge_table.unassign(db, kind, item["id"],
                                 [b for i, b in enumerate(badges) if i != level])
        start += CHUNK
    for level in (0, 1, 2, None):
        if counts.get(level):
            what = ("top %d%%" % BADGE_PCTILES[level]) if level is not None else "no badge"
            log.normal("%s%d %ss: %s" % ("dry run: " if dry_run else "", counts[level], kind,
                                         what))
    return counts


BADGE_USAGE = """Usage: badge_assign [--dry_run] [--project_dir DIR]

Assigns the percentile badges (top 1%, 5%, 25% by recent average credit)
to users and teams (a daily task).
  --dry_run     say who would get which badge; change nothing
"""


@click.command(add_help_option=False)
@click.option("-h", "--help", "-help", "show_help", is_flag=True)
@_dry_run_option()
@project_dir_option()
def badge_assign_cmd(show_help, dry_run, project_dir):
    if show_help:
        sys.stdout.write(BADGE_USAGE)
        return 0

    def work(cfg, db, log):
        assign_badges(db, "user", log, dry_run=dry_run)
        assign_badges(db, "team", log, dry_run=dry_run)
    return _run_task(project_dir, work)


def badge_assign_main(argv=None):
    """Entry point of bin/badge_assign."""
    return click_main(badge_assign_cmd, argv, "badge_assign", BADGE_USAGE)
