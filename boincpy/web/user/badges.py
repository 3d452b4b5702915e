"""Badges on the volunteer's pages (BOINC's badges_string / show_badges_row
in html/inc/util.inc): the pictures of the badges a user or a team holds
(tables ``badge``, ``badge_user``, ``badge_team``; bin/badge_assign grants
them, the ops page badge_admin.php edits them).

:func:`badges_html` and :func:`team_badges_html` are what the user's and the
team's pages call; both answer "" when there is nothing to show.  A badge's
``image_url`` is relative to the master URL, or an ``http(s)://`` address;
anything else (``javascript:``, ``//host``) is not shown.
"""

import re

from boincpy.web.markup import Markup, fmt, join

BADGE_HEIGHT_SMALL = 20         # html/inc/util.inc
BADGE_HEIGHT_MEDIUM = 24
BADGE_HEIGHT_LARGE = 56

_IMAGE_URL = re.compile(r"^(https?://[^\s\"'<>]+|[A-Za-z0-9_][A-Za-z0-9_./-]*)$")


def safe_image_url(text):
    """A badge image address that may go into src="...", or None."""
    text = (text or "").strip()
    if not _IMAGE_URL.match(text) or ".." in text:
        return None
    return text


def _held(db, table, column, holder_id):
    return db.query(
        "SELECT b.id, b.title, b.image_url FROM %s h JOIN badge b ON b.id = h.badge_id "
        "WHERE h.%s = %%s ORDER BY b.id" % (table, column), (holder_id,))


def _html(rows, height):
    imgs = []
    for row in rows:
        src = safe_image_url(row["image_url"])
        if src is None:
            continue
        imgs.append(fmt('<img class="badge" src="{}" title="{}" alt="{}" height="{}">',
                        src, row["title"], row["title"], height))
    return join(imgs, " ") if imgs else Markup("")


def badges_html(db, user_id, height=BADGE_HEIGHT_LARGE):
    """The badges a user holds, as pictures (Markup; "" if none)."""
    return _html(_held(db, "badge_user", "user_id", int(user_id)), height)


def team_badges_html(db, team_id, height=BADGE_HEIGHT_LARGE):
    """The badges a team holds, as pictures (Markup; "" if none)."""
    return _html(_held(db, "badge_team", "team_id", int(team_id)), height)


PAGES = {}
