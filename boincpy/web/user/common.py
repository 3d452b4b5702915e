"""BOINC's display formats and the small page helpers every family of the
volunteer site uses (util_basic.inc's time_str/date_str, a user's name
linking show_user.php, a required id parameter, forum.inc's moderator check,
a team board's visibility).

One of each, here: the families import these rather than keep their own.
"""

import time

from boincpy.web.markup import esc, link, url
from boincpy.web.page import PageError

ID_MAX = 2 ** 31 - 1

# forum_preferences.special_user: one character per privilege (forum.inc S_*)
S_MODERATOR, S_ADMIN, S_DEV, S_SCIENTIST = 0, 1, 2, 6
MODERATOR_FLAGS = (S_MODERATOR, S_ADMIN, S_DEV, S_SCIENTIST)


def time_str(t):
    """util_basic.inc's time_str: ``gmdate('j M Y, G:i:s') UTC``
    ("28 Nov 2026, 9:05:03 UTC"), ``---`` for 0."""
    if not t:
        return "---"
    tm = time.gmtime(int(t))
    return "%d %s, %d:%s UTC" % (tm.tm_mday, time.strftime("%b %Y", tm), tm.tm_hour,
                                 time.strftime("%M:%S", tm))


def date_str(t):
    """util_basic.inc's date_str: ``gmdate('j M Y')`` ("8 Nov 2026"), ``---`` for 0."""
    if not t:
        return "---"
    tm = time.gmtime(int(t))
    return "%d %s" % (tm.tm_mday, time.strftime("%b %Y", tm))


def user_link(user_id, name):
    """A user's name (escaped) linking show_user.php; ``name`` None: the user
    is gone, "(deleted user)" without a link."""
    if name is None:
        return esc("(deleted user)")
    return link(url("show_user.php", userid=user_id), name)


def required_id(ctx, name, post=False):
    """A required id parameter (1 .. 2^31-1); a 400 page naming it if it is
    missing or not such a number."""
    value = ctx.int_arg(name, None, post=post, minimum=1, maximum=ID_MAX)
    if value is None:
        raise PageError("parameter %s is missing" % name)
    return value


def has_privilege(prefs, flags):
    """Does the forum_preferences row (a dict, or None) have any of these
    S_* bits in special_user?"""
    bits = (prefs or {}).get("special_user") or ""
    return any(bits[i:i + 1] == "1" for i in flags)


def is_moderator(prefs, forum=None, team_admin=False):
    """forum.inc's is_moderator for a user's forum_preferences row (a dict
    with special_user, or None): on the project's boards a moderator,
    administrator, developer or scientist; on a team's board (parent_type 1)
    the project's administrators and (``team_admin``, or the row's
    ``team_admin_of`` the board's team: forum.board sets it) the team's
    founder and admins."""
    if forum is not None and forum["parent_type"] == 1:
        team_admin = team_admin or (prefs or {}).get("team_admin_of") == forum["category"]
        return bool(team_admin) or has_privilege(prefs, (S_ADMIN,))
    if forum is not None and forum["parent_type"] != 0:
        return False
    return has_privilege(prefs, MODERATOR_FLAGS)


def check_visible(ctx, forum, user):
    """A team's forum with team_forums_members_only: its members only (the
    boards' pages and forum_report_post.php)."""
    if forum["parent_type"] == 1 and ctx.cfg.team_forums_members_only:
        if user is None or user.teamid != forum["category"]:
            raise PageError("This forum is not visible to you.", "403 Forbidden",
                            "Not visible")
