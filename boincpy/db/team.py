"""The writes of the team table (BOINC's DB_TEAM) and of its companions
team_admin (who administers a team) and team_delta (the history of
joining and leaving)."""

from boincpy.db.bulk import update_by_id


def insert_team(db, team):
    """INSERT the rows.Team ``team`` (no members yet); return its id."""
    return db.insert(
        "INSERT INTO team (userid, create_time, name, name_lc, url, type, name_html, "
        "description, country, nusers, expavg_time) "
        "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, 0, %s)",
        (team.userid, team.create_time, team.name, team.name_lc, team.url, team.type,
         team.name_html, team.description, team.country, team.expavg_time))


def unping_founder(db, team_id, user_id):
    """A member leaving who was asked to take the team over: the request
    lapses (ping_user negated)."""
    return db.execute("UPDATE team SET ping_user = -ping_user WHERE id = %s AND ping_user = %s",
                      (team_id, user_id))


def clear_founder(db, user_id):
    """The teams this user founded lose their founder; return the rowcount."""
    return db.execute("UPDATE team SET userid = 0 WHERE userid = %s", (user_id,))


def set_team_nusers(db, counts):
    """``counts`` maps team id to (nusers,); return rows changed."""
    return update_by_id(db, "team", ("nusers",), counts)


def delete_team(db, team_id):
    """DELETE a team and its admin rights; return the team rowcount."""
    n = db.execute("DELETE FROM team WHERE id = %s", (team_id,))
    db.execute("DELETE FROM team_admin WHERE teamid = %s", (team_id,))
    return n


def delete_team_admin(db, team_id, user_id):
    """The user no longer administers the team."""
    return db.execute("DELETE FROM team_admin WHERE teamid = %s AND userid = %s",
                      (team_id, user_id))


def delete_admin_rights_of_user(db, user_id):
    """DELETE every team_admin row of the user; return the rowcount."""
    return db.execute("DELETE FROM team_admin WHERE userid = %s", (user_id,))


def record_team_delta(db, user_id, team_id, timestamp, joining, total_credit):
    """A team_delta row: the user joined (``joining`` 1) or left (0) the team."""
    return db.execute("INSERT INTO team_delta (userid, teamid, timestamp, joining, total_credit) "
                      "VALUES (%s, %s, %s, %s, %s)",
                      (user_id, team_id, timestamp, joining, total_credit))


def delete_team_deltas_of_user(db, user_id):
    """DELETE the user's team history; return the rowcount."""
    return db.execute("DELETE FROM team_delta WHERE userid = %s", (user_id,))


def update_team_info(db, team_id, name, name_lc, name_html, url, description, type_num,
                     country, joinable):
    """The founder's or an admin's edit of a team (team_edit_action.php)."""
    return db.execute("UPDATE team SET name = %s, name_lc = %s, name_html = %s, url = %s, "
                      "description = %s, type = %s, country = %s, joinable = %s WHERE id = %s",
                      (name, name_lc, name_html, url, description, type_num, country,
                       joinable, team_id))


def set_founder(db, team_id, user_id, clear_ping_time=False):
    """``user_id`` founds the team now; any foundership request ends
    (team_change_founder_action.php; the finished transfer also clears ping_time)."""
    if clear_ping_time:
        return db.execute("UPDATE team SET userid = %s, ping_user = 0, ping_time = 0 "
                          "WHERE id = %s", (user_id, team_id))
    return db.execute("UPDATE team SET userid = %s, ping_user = 0 WHERE id = %s",
                      (user_id, team_id))


def set_ping(db, team_id, user_id, when):
    """A member asks for the team's foundership (team_founder_transfer_action.php)."""
    return db.execute("UPDATE team SET ping_user = %s, ping_time = %s WHERE id = %s",
                      (user_id, when, team_id))


def clear_ping_user(db, team_id):
    """The founder declined a foundership request (ping_time kept: the next
    request waits for it, team_founder_transfer_action.php)."""
    return db.execute("UPDATE team SET ping_user = 0 WHERE id = %s", (team_id,))


def insert_team_admin(db, team_id, user_id, when):
    """The user becomes an admin of the team (team_admins.php)."""
    return db.execute("INSERT INTO team_admin (teamid, userid, create_time) VALUES (%s, %s, %s)",
                      (team_id, user_id, when))
