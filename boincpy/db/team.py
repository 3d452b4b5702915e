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
