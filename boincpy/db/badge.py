"""The writes of BOINC's badge tables: ``badge`` (the badges a project
issues), ``badge_user`` and ``badge_team`` (who holds which), as BOINC's
html/inc/util_ops.inc (get_badge, assign_badge, unassign_badges) and
html/ops/badge_admin.php write them.

A badge's ``type`` is 0 for users, 1 for teams; ``image_url`` is relative
to the master URL (``img/pct_1.png``) unless it starts with ``http``.
``create_time`` and ``reassign_time`` are Unix times (doubles, as BOINC's
schema): an assignment keeps its ``create_time`` and gets a new
``reassign_time`` each time the rule grants it again.
"""

# The text columns of badge, all varchar(255).
TEXT_COLUMNS = ("name", "title", "description", "image_url", "level", "tags", "sql_rule")



def _row(values):
    return tuple((values.get(c) or "")[:255] for c in TEXT_COLUMNS)


def insert_badge(db, now, badge_type, values):
    """A new badge (``values``: {column: text} of TEXT_COLUMNS); return its id."""
    return db.insert(
        "INSERT INTO badge (create_time, type, name, title, description, image_url, level, "
        "tags, sql_rule) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
        (now, badge_type) + _row(values))


def update_badge(db, badge_id, badge_type, values):
    """badge_admin.php's update of every field but the times; return the rowcount."""
    return db.execute(
        "UPDATE badge SET type = %s, name = %s, title = %s, description = %s, image_url = %s, "
        "level = %s, tags = %s, sql_rule = %s WHERE id = %s",
        (badge_type,) + _row(values) + (badge_id,))


def delete_badge(db, badge_id):
    """A badge and every assignment of it (badge_admin.php)."""
    db.execute("DELETE FROM badge_user WHERE badge_id = %s", (badge_id,))
    db.execute("DELETE FROM badge_team WHERE badge_id = %s", (badge_id,))
    return db.execute("DELETE FROM badge WHERE id = %s", (badge_id,))


def assign(db, kind, holder_id, badge_id, now):
    """Grant a badge to a user or team (``kind`` "user" or "team"): a new row,
    or a new reassign_time for one it holds (util_ops.inc's assign_badge)."""
    if kind == "user":
        db.execute("INSERT INTO badge_user (badge_id, user_id, create_time, reassign_time) "
                   "VALUES (%s, %s, %s, %s) ON DUPLICATE KEY UPDATE reassign_time = %s",
                   (badge_id, holder_id, now, now, now))
    else:
        db.execute("INSERT INTO badge_team (badge_id, team_id, create_time, reassign_time) "
                   "VALUES (%s, %s, %s, %s) ON DUPLICATE KEY UPDATE reassign_time = %s",
                   (badge_id, holder_id, now, now, now))


def unassign(db, kind, holder_id, badge_ids):
    """Take the badges ``badge_ids`` away from a user or team (unassign_badges)."""
    badge_ids = [int(b) for b in badge_ids]
    if not badge_ids:
        return 0
    marks = ", ".join(["%s"] * len(badge_ids))
    if kind == "user":
        return db.execute("DELETE FROM badge_user WHERE user_id = %%s AND badge_id IN (%s)"
                          % marks, (holder_id,) + tuple(badge_ids))
    return db.execute("DELETE FROM badge_team WHERE team_id = %%s AND badge_id IN (%s)"
                      % marks, (holder_id,) + tuple(badge_ids))
