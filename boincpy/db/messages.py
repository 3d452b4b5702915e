"""Writes of the community's private tables (BOINC's BoincPrivateMessage,
BoincFriend and BoincNotify of html/inc/boinc_db.inc and forum_db.inc):
private_messages, friend, notify; and the sent_email record the reminder
task keeps.  Every statement on a user's messages names the recipient in
its WHERE clause, so an id from a request can't reach another user's row.

Tables a project made before boincpy had them are created on first use
(:func:`ensure_tables`).
"""

from boincpy.db.bulk import placeholders

# notify.type (html/inc/forum_db.inc)
NOTIFY_FRIEND_REQ = 1
NOTIFY_FRIEND_ACCEPT = 2
NOTIFY_PM = 3
NOTIFY_SUBSCRIBED_THREAD = 4
NOTIFY_SUBSCRIBED_FORUM = 5

# sent_email.email_type (db/schema.sql)
EMAIL_LAPSED = 2
EMAIL_FAILED = 3

TABLES = ("private_messages", "friend", "notify")


def ensure_tables(db):
    """Create the three tables if the database lacks them."""
    from boincpy.db.schema import ensure_table
    for table in TABLES:
        ensure_table(db, table)


# -- private_messages -----------------------------------------------------------

def insert_pm(db, to_id, from_id, now, subject, content):
    """A new private message to user ``to_id``; return its id."""
    return db.insert("INSERT INTO private_messages (userid, senderid, date, subject, content) "
                     "VALUES (%s, %s, %s, %s, %s)", (to_id, from_id, now, subject, content))


def mark_opened(db, user_id, ids):
    """Mark the recipient's messages ``ids`` read."""
    ids = [int(i) for i in ids]
    if not ids:
        return 0
    return db.execute("UPDATE private_messages SET opened = 1 WHERE userid = %%s AND id IN (%s)"
                      % placeholders(len(ids)), [user_id] + ids)


def delete_pms(db, user_id, ids):
    """DELETE the recipient's messages ``ids`` (others' ids match nothing);
    return the rowcount."""
    ids = [int(i) for i in ids]
    if not ids:
        return 0
    return db.execute("DELETE FROM private_messages WHERE userid = %%s AND id IN (%s)"
                      % placeholders(len(ids)), [user_id] + ids)


def delete_pms_from(db, user_id, sender_ids):
    """DELETE the recipient's messages whose senders no longer exist."""
    ids = [int(i) for i in sender_ids]
    if not ids:
        return 0
    return db.execute("DELETE FROM private_messages WHERE userid = %%s AND senderid IN (%s)"
                      % placeholders(len(ids)), [user_id] + ids)


# -- friend -------------------------------------------------------------------------

def replace_friend(db, src, dest, message, now, reciprocated):
    """BoincFriend::replace: the (src, dest) row, made or replaced."""
    return db.execute("REPLACE INTO friend (user_src, user_dest, message, create_time, "
                      "reciprocated) VALUES (%s, %s, %s, %s, %s)",
                      (src, dest, message, now, 1 if reciprocated else 0))


def set_reciprocated(db, src, dest):
    return db.execute("UPDATE friend SET reciprocated = 1 WHERE user_src = %s AND user_dest = %s",
                      (src, dest))


def delete_friendship(db, id1, id2):
    """BoincFriend::delete: both directions."""
    return db.execute("DELETE FROM friend WHERE (user_src = %s AND user_dest = %s) "
                      "OR (user_src = %s AND user_dest = %s)", (id1, id2, id2, id1))


# -- notify ---------------------------------------------------------------------------

def insert_notify(db, userid, now, notify_type, opaque):
    """A notification for ``userid`` (REPLACE, as BoincNotify::replace: one
    per user, type and opaque)."""
    return db.execute("REPLACE INTO notify (userid, create_time, type, opaque) "
                      "VALUES (%s, %s, %s, %s)", (userid, now, notify_type, opaque))


def delete_notify(db, userid, notify_type, opaque=None):
    """DELETE the user's notifications of a type (and opaque, if given)."""
    if opaque is None:
        return db.execute("DELETE FROM notify WHERE userid = %s AND type = %s",
                          (userid, notify_type))
    return db.execute("DELETE FROM notify WHERE userid = %s AND type = %s AND opaque = %s",
                      (userid, notify_type, opaque))


def delete_notify_id(db, notify_id):
    """DELETE one notification (one whose subject is gone)."""
    return db.execute("DELETE FROM notify WHERE id = %s", (notify_id,))


def delete_old_notifies(db, before):
    """DELETE notifications made before ``before`` (notify.php: 90 days); return the count."""
    return db.execute("DELETE FROM notify WHERE create_time < %s", (before,))


# -- a deleted account -------------------------------------------------------------------

def delete_community_rows_of_user(db, user_id):
    """Everything of these tables a deleted account leaves (BOINC's
    pm_delete_user, delete_friends, and its notifications); {table: rows}."""
    return {
        "private_messages": db.execute(
            "DELETE FROM private_messages WHERE userid = %s OR senderid = %s",
            (user_id, user_id)),
        "friend": db.execute("DELETE FROM friend WHERE user_src = %s OR user_dest = %s",
                             (user_id, user_id)),
        "notify": db.execute("DELETE FROM notify WHERE userid = %s OR (type IN (%s, %s) "
                             "AND opaque = %s)",
                             (user_id, NOTIFY_FRIEND_REQ, NOTIFY_FRIEND_ACCEPT, user_id)),
    }


# -- sent_email (remind.php's record of reminders) -----------------------------------------

def record_sent_email(db, userid, now, email_type):
    """The user's sent_email row (its key is userid: the latest e-mail)."""
    return db.execute("INSERT INTO sent_email (userid, time_sent, email_type) "
                      "VALUES (%s, %s, %s) ON DUPLICATE KEY UPDATE "
                      "time_sent = VALUES(time_sent), email_type = VALUES(email_type)",
                      (userid, now, email_type))
