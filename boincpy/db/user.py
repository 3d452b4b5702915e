"""The user table's writes (BOINC's DB_USER), and the rows kept about a
user's account: user_deleted, login_failure, forum_preferences (special-user
flags and ban), consent, credited_job, token (one-time secrets e-mailed
to a user).

The scheduler loads this module: it imports nothing heavy.
"""

from boincpy.db.bulk import insert_rows, update_row

USER_INSERT_COLUMNS = (
    "create_time", "email_addr", "name", "authenticator", "country", "postal_code",
    "total_credit", "expavg_credit", "expavg_time", "project_prefs", "teamid", "venue",
    "send_email", "show_hosts", "posts", "seti_id", "seti_nresults", "seti_last_result_time",
    "seti_total_cpu", "has_profile", "cross_project_id", "passwd_hash", "email_validated",
    "donated")


def insert_user(db, user):
    """INSERT a new account from the rows.User ``user`` (USER_INSERT_COLUMNS;
    the others take their defaults); return its id."""
    cols = USER_INSERT_COLUMNS
    return db.insert(
        "INSERT INTO user (%s) VALUES (%s)" % (", ".join(cols), ", ".join(["%s"] * len(cols))),
        tuple(getattr(user, c) for c in cols))


def update_user_columns(db, user_id, changes):
    """UPDATE the user's columns in ``changes`` ({column: value}, names fixed
    by the caller's code); return the rowcount."""
    return update_row(db, "user", user_id, changes)


def set_cross_project_id(db, user_id, cross_project_id):
    """The account's cross-project id (the client's, once it has one)."""
    return db.execute("UPDATE user SET cross_project_id = %s WHERE id = %s",
                      (cross_project_id, user_id))


def set_global_prefs(db, user_id, global_prefs):
    """The account's global preferences (newer ones a client brought)."""
    return db.execute("UPDATE user SET global_prefs = %s WHERE id = %s",
                      (global_prefs, user_id))


def set_passwd_hash(db, user_id, passwd_hash):
    """The account's stored password hash."""
    return db.execute("UPDATE user SET passwd_hash = %s WHERE id = %s", (passwd_hash, user_id))


def set_signature(db, user_id, signature):
    """user.signature (where an account made by RPC keeps its invitation code)."""
    return db.execute("UPDATE user SET signature = %s WHERE id = %s", (signature, user_id))


def set_teamid(db, user_id, teamid):
    """The user's team (0: none)."""
    return db.execute("UPDATE user SET teamid = %s WHERE id = %s", (teamid, user_id))


def delete_user(db, user_id):
    """DELETE the user row; return the rowcount."""
    return db.execute("DELETE FROM user WHERE id = %s", (user_id,))


def record_user_deleted(db, user_id, cross_project_id, email_addr, now):
    """A user_deleted row (db_dump tells other projects), with the public
    cross-project id md5(cross_project_id + email_addr)."""
    return db.execute("INSERT IGNORE INTO user_deleted (userid, public_cross_project_id, "
                      "create_time) VALUES (%s, MD5(CONCAT(%s, %s)), %s)",
                      (user_id, cross_project_id, email_addr, now))


def count_login_failure(db, name, now, window_start):
    """Count a failed login for ``name``: the count restarts at 1 when the
    first failure is older than ``window_start``."""
    return db.execute("INSERT INTO login_failure (name, nfail, first_time) VALUES (%s, 1, %s) "
                      "ON DUPLICATE KEY UPDATE nfail = IF(first_time > %s, nfail + 1, 1), "
                      "first_time = IF(first_time > %s, first_time, %s)",
                      (name, now, window_start, window_start, now))


def set_forum_pref(db, userid, column, value):
    """One forum_preferences column of the user (row made if missing)."""
    return db.execute("INSERT INTO forum_preferences (userid, %s) VALUES (%%s, %%s) "
                      "ON DUPLICATE KEY UPDATE %s = VALUES(%s)" % (column, column, column),
                      (userid, value))


def count_forum_post(db, userid, now):
    """A new forum post of the user: forum_preferences.posts + 1 (BOINC's
    create_post) and last_post now (the interval forum.post_min_interval
    counts from); the row is made if missing."""
    return db.execute("INSERT INTO forum_preferences (userid, posts, last_post) "
                      "VALUES (%s, 1, %s) ON DUPLICATE KEY UPDATE posts = posts + 1, "
                      "last_post = VALUES(last_post)", (userid, now))


def insert_consent(db, userid, consent_type_id, consent_time, consent_flag,
                   consent_not_required, source):
    """A consent record of the user."""
    return db.execute("INSERT INTO consent (userid, consent_type_id, consent_time, "
                      "consent_flag, consent_not_required, source) "
                      "VALUES (%s, %s, %s, %s, %s, %s)",
                      (userid, consent_type_id, consent_time, consent_flag,
                       consent_not_required, source))


def record_credited_jobs(db, pairs):
    """credited_job rows for [(userid, workunitid)] (those not there yet)."""
    return insert_rows(db, "credited_job", ("userid", "workunitid"), pairs, ignore=True)


# tables of rows that belong to one user, keyed by userid (delete_account)
USER_ROW_TABLES = ("credit_user", "credited_job", "consent", "token", "profile", "sent_email",
                   "forum_preferences")


def delete_rows_of_user(db, table, user_id):
    """DELETE the user's rows of ``table`` (one of USER_ROW_TABLES); return
    the rowcount."""
    if table not in USER_ROW_TABLES:
        raise ValueError("%r is not a table of a user's rows" % (table,))
    return db.execute("DELETE FROM %s WHERE userid = %%s" % table, (user_id,))


# -- token: one-time secrets e-mailed to a user (BOINC's html/inc/token.inc) ----------

def insert_token(db, token, user_id, token_type, now, expire_time):
    """A token row of the user (type: one of BOINC's letters, e.g. 'D' delete account)."""
    return db.execute("INSERT INTO token (token, userid, type, create_time, expire_time) "
                      "VALUES (%s, %s, %s, %s, %s)",
                      (token, user_id, token_type, now, expire_time))


def delete_token(db, token, user_id, token_type):
    """DELETE one token of the user; return the rowcount (1: it was there)."""
    return db.execute("DELETE FROM token WHERE token = %s AND userid = %s AND type = %s",
                      (token, user_id, token_type))


def delete_tokens_of_type(db, user_id, token_type):
    """DELETE every token of one type of the user; return the rowcount."""
    return db.execute("DELETE FROM token WHERE userid = %s AND type = %s",
                      (user_id, token_type))


def delete_expired_tokens(db, now):
    """DELETE the tokens whose expire_time has passed (BoincToken::delete_expired);
    return the rowcount."""
    return db.execute("DELETE FROM token WHERE expire_time < %s", (now,))


def delete_expired_user_deleted(db, before):
    """DELETE user_deleted rows made before ``before``; return the rowcount."""
    return db.execute("DELETE FROM user_deleted WHERE create_time < %s", (before,))
