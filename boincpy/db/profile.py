"""The writes of BOINC's ``profile`` table (html/inc/profile.inc,
create_profile.php, profile_screen_action.php, uotd.inc).

One row per user who wrote a profile (``userid`` its key), as BOINC's PHP
writes it:

* a new profile: ``recommend``, ``reject``, ``posts`` and ``uotd_time`` 0,
  ``verification`` 0 (not yet screened);
* ``verification``: 0 not screened, 1 accepted, -1 rejected
  (profile_screen_action.php);
* ``uotd_time``: when the user was last chosen as user of the day (0 or NULL:
  never).

``user.has_profile`` follows the row (its write is boincpy/db/user.py's).
"""

# What each text column keeps (BOINC's PHP writes whatever the form gave; a
# MySQL TEXT holds 65,535 bytes, and our column cut is by bytes).
MAX_RESPONSE_BYTES = 65535


def _cut(text, limit):
    data = (text or "").encode("utf-8")
    if len(data) <= limit:
        return text or ""
    return data[:limit].decode("utf-8", "ignore")


def lookup(db, userid):
    """The profile row of a user (dict) or None."""
    return db.query_one("SELECT * FROM profile WHERE userid = %s", (userid,))


def insert_profile(db, userid, language, response1, response2, has_picture):
    """A new profile (create_profile.php), not yet screened."""
    db.execute(
        "INSERT INTO profile (userid, language, response1, response2, has_picture, recommend, "
        "reject, posts, uotd_time, verification) VALUES (%s, %s, %s, %s, %s, 0, 0, 0, 0, 0)",
        (userid, _cut(language, 254), _cut(response1, MAX_RESPONSE_BYTES),
         _cut(response2, MAX_RESPONSE_BYTES), 1 if has_picture else 0))


def update_profile(db, userid, language, response1, response2, has_picture, verification):
    """An edited profile (create_profile.php); return the rowcount."""
    return db.execute(
        "UPDATE profile SET response1 = %s, response2 = %s, language = %s, has_picture = %s, "
        "verification = %s WHERE userid = %s",
        (_cut(response1, MAX_RESPONSE_BYTES), _cut(response2, MAX_RESPONSE_BYTES),
         _cut(language, 254), 1 if has_picture else 0, verification, userid))


def delete_profile(db, userid):
    """Remove a user's profile row (delete_profile.php); return the rowcount."""
    return db.execute("DELETE FROM profile WHERE userid = %s", (userid,))


def set_verification(db, userid, verification):
    """Screening's verdict (profile_screen_action.php): 1 accepted, -1 rejected."""
    return db.execute("UPDATE profile SET verification = %s WHERE userid = %s",
                      (verification, userid))


def set_uotd_time(db, userid, when):
    """The user was chosen as user of the day at ``when`` (uotd.inc's select_uotd)."""
    return db.execute("UPDATE profile SET uotd_time = %s WHERE userid = %s", (when, userid))
