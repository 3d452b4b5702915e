"""The writes of BOINC's message-board tables: category, forum, thread and
post (BOINC's html/inc/forum_db.inc and forum.inc).

The project's news are the threads of its "News" forum (a forum of a
category that is not a help desk): a news item is a thread whose first post
holds the text.  The rows are written as BOINC's PHP writes them, so either
implementation shows what the other posted:

* a new thread: ``replies`` -1 raised to 0 by its first post, ``timestamp``
  and ``create_time`` now, ``status`` 1 in the News forum unless the item is
  to be exported as a notice to the clients (BOINC's "export" checkbox);
* a new post: ``modified`` 0 until edited, the thread's ``replies`` and
  ``timestamp``, the forum's ``posts`` and ``timestamp`` raised;
* the forum's ``threads`` counts its visible threads.
"""

# BOINC keeps at most this much of a post (create_post: substr($content, 0, 64000),
# bytes: post.content is a TEXT of 65535 bytes).
MAX_POST_CONTENT = 64000


def cut_content(content):
    """A post's text cut to MAX_POST_CONTENT bytes of UTF-8 (never in a character)."""
    data = content.encode("utf-8", "surrogatepass")
    if len(data) <= MAX_POST_CONTENT:
        return content
    return data[:MAX_POST_CONTENT].decode("utf-8", "ignore")


def insert_category(db, order_id, name, is_helpdesk):
    """A category (create_forums.php's create_category); return its id, or the
    id of the existing one of that name."""
    row = db.query_one("SELECT id FROM category WHERE name = %s AND is_helpdesk = %s",
                       (name, is_helpdesk))
    if row:
        return row["id"]
    return db.insert("INSERT INTO category (orderID, lang, name, is_helpdesk) "
                     "VALUES (%s, 1, %s, %s)", (order_id, name, is_helpdesk))


def insert_forum(db, category, order_id, title, description, is_dev_blog=0, parent_type=0):
    """A forum (create_forums.php's create_forum); return its id, or the id of
    the existing one of that title in the category."""
    row = db.query_one("SELECT id FROM forum WHERE parent_type = %s AND category = %s "
                       "AND title = %s", (parent_type, category, title))
    if row:
        return row["id"]
    return db.insert("INSERT INTO forum (category, orderID, title, description, is_dev_blog, "
                     "parent_type) VALUES (%s, %s, %s, %s, %s, %s)",
                     (category, order_id, title, description, is_dev_blog, parent_type))


def insert_team_forum(db, team_id):
    """team_forum.php's create: the team's message board (parent_type 1,
    category the team's id; title and description set by its edit form);
    None if the team has one already."""
    if db.query_one("SELECT id FROM forum WHERE parent_type = 1 AND category = %s FOR UPDATE",
                    (team_id,)):
        return None
    return db.insert("INSERT INTO forum (category, parent_type) VALUES (%s, 1)", (team_id,))


def update_team_forum(db, forum_id, team_id, title, description, post_min_interval,
                      post_min_total_credit, post_min_expavg_credit):
    """team_forum.php's edit_action on the team's forum (the team in the
    query); return the rowcount."""
    return db.execute(
        "UPDATE forum SET title = %s, description = %s, post_min_interval = %s, "
        "post_min_total_credit = %s, post_min_expavg_credit = %s "
        "WHERE id = %s AND parent_type = 1 AND category = %s",
        (title, description, post_min_interval, post_min_total_credit,
         post_min_expavg_credit, forum_id, team_id))


def delete_team_forum(db, team_id):
    """team_forum.php's remove: the team's forum with its threads and posts;
    return 1 if it was there."""
    forum = db.query_one("SELECT id FROM forum WHERE parent_type = 1 AND category = %s "
                         "FOR UPDATE", (team_id,))
    if forum is None:
        return 0
    db.execute("DELETE post FROM post JOIN thread ON thread.id = post.thread "
               "WHERE thread.forum = %s", (forum["id"],))
    db.execute("DELETE FROM thread WHERE forum = %s", (forum["id"],))
    db.execute("DELETE FROM forum WHERE id = %s", (forum["id"],))
    return 1


def insert_post(db, thread_id, forum_id, user_id, content, now, parent_post=0, signature=0):
    """A post in a thread (BOINC's create_post); the thread's and the forum's
    counters and timestamps follow.  Return the post's id."""
    post_id = db.insert(
        "INSERT INTO post (thread, user, timestamp, content, modified, parent_post, score, "
        "votes, signature, hidden) VALUES (%s, %s, %s, %s, 0, %s, 0, 0, %s, 0)",
        (thread_id, user_id, now, cut_content(content), parent_post,
         1 if signature else 0))
    db.execute("UPDATE thread SET replies = replies + 1, timestamp = %s WHERE id = %s",
               (now, thread_id))
    db.execute("UPDATE forum SET posts = posts + 1, timestamp = %s WHERE id = %s",
               (now, forum_id))
    return post_id


def insert_thread(db, forum_id, user_id, title, content, now, status=0, signature=0):
    """A thread with its first post (BOINC's create_thread); return the thread's id."""
    thread_id = db.insert(
        "INSERT INTO thread (forum, owner, status, title, timestamp, views, replies, activity, "
        "sufferers, score, votes, create_time, hidden, sticky, locked) "
        "VALUES (%s, %s, %s, %s, %s, 0, -1, 0, 0, 0, 0, %s, 0, 0, 0)",
        (forum_id, user_id, status, title, now, now))
    insert_post(db, thread_id, forum_id, user_id, content, now, signature=signature)
    db.execute("UPDATE forum SET threads = threads + 1 WHERE id = %s", (forum_id,))
    return thread_id


def edit_post(db, post_id, content, now):
    """New text of a post (forum_edit.php): ``modified`` now."""
    return db.execute("UPDATE post SET content = %s, modified = %s WHERE id = %s",
                      (cut_content(content), now, post_id))


def set_thread_title(db, thread_id, title):
    return db.execute("UPDATE thread SET title = %s WHERE id = %s", (title, thread_id))


def set_thread_status(db, thread_id, status):
    """News forum: status 0 exports the item to the clients' notices, 1 doesn't."""
    return db.execute("UPDATE thread SET status = %s WHERE id = %s", (status, thread_id))


def _forum_timestamp(db, forum_id):
    """The forum's timestamp: its newest visible thread's (update_forum_timestamp)."""
    db.execute("UPDATE forum SET timestamp = COALESCE((SELECT MAX(timestamp) FROM thread "
               "WHERE forum = %s AND hidden = 0), timestamp) WHERE id = %s",
               (forum_id, forum_id))


def hide_thread(db, thread_id, forum_id, reason=1):
    """Hide a visible thread (BOINC's hide_thread; ``reason`` is stored in
    ``hidden``); return 1 if it was visible."""
    row = db.query_one("SELECT replies FROM thread WHERE id = %s AND forum = %s AND hidden = 0 "
                       "FOR UPDATE", (thread_id, forum_id))
    if row is None:
        return 0
    db.execute("UPDATE thread SET hidden = %s WHERE id = %s", (reason or 1, thread_id))
    db.execute("UPDATE forum SET threads = IF(threads > 0, threads - 1, 0), "
               "posts = GREATEST(posts - %s - 1, 0) WHERE id = %s",
               (max(row["replies"], 0), forum_id))
    _forum_timestamp(db, forum_id)
    return 1


def unhide_thread(db, thread_id, forum_id):
    """Show a hidden thread again (BOINC's unhide_thread); return 1 if it was hidden."""
    row = db.query_one("SELECT replies FROM thread WHERE id = %s AND forum = %s AND hidden <> 0 "
                       "FOR UPDATE", (thread_id, forum_id))
    if row is None:
        return 0
    db.execute("UPDATE thread SET hidden = 0 WHERE id = %s", (thread_id,))
    db.execute("UPDATE forum SET threads = threads + 1, posts = posts + %s + 1 WHERE id = %s",
               (max(row["replies"], 0), forum_id))
    _forum_timestamp(db, forum_id)
    return 1


# html/ops/create_forums.php: the categories and forums BOINC's sample creates,
# (category orderID, name, is_helpdesk) -> [(forum orderID, title, description,
# is_dev_blog)]; the first forum is where the project's news go.
DEFAULT_FORUMS = (
    ((0, "", 0), ((0, "News", "News from this project", 1),
                  (1, "Science", "Discussion of this project's science", 0),
                  (2, "Number crunching", "Credit, leaderboards, CPU performance", 0),
                  (3, "Cafe", "Meet and greet other participants", 0))),
    ((0, "Platform-specific problems", 1),
     ((0, "Windows", "Installing and running BOINC on Windows", 0),
      (1, "Unix/Linux", "Installing and running BOINC on Unix and Linux", 0),
      (2, "Macintosh", "Installing and running BOINC on Mac OS/X", 0))),
    ((1, "General issues", 1),
     ((3, "Getting started", "Creating your account", 0),
      (4, "Preferences", "Using preferences", 0),
      (6, "Web site", "Issues involving this web site", 0))),
)
NEWS_FORUM = "News"


def create_forums(db):
    """The categories and forums of DEFAULT_FORUMS (those that exist are kept)."""
    for (order, name, helpdesk), forums in DEFAULT_FORUMS:
        category = insert_category(db, order, name, helpdesk)
        for f_order, title, description, dev_blog in forums:
            insert_forum(db, category, f_order, title, description, dev_blog)


# -- the message boards' pages (boincpy.web.user.forum) -----------------------------

def add_view(db, thread_id):
    """forum_thread.php: views + 1."""
    return db.execute("UPDATE thread SET views = views + 1 WHERE id = %s", (thread_id,))


def set_post_signature(db, post_id, signature):
    return db.execute("UPDATE post SET signature = %s WHERE id = %s",
                      (1 if signature else 0, post_id))


def set_thread_activity(db, thread_id, activity):
    """update_forum_activities.php's value of a thread."""
    return db.execute("UPDATE thread SET activity = %s WHERE id = %s", (activity, thread_id))


def add_sufferer(db, thread_id):
    """forum_thread_vote.php: one more "I also have this question"."""
    return db.execute("UPDATE thread SET sufferers = sufferers + 1 WHERE id = %s", (thread_id,))


def subscribe(db, user_id, thread_id):
    """BoincSubscription::replace (a forum's subscription has -forum id)."""
    return db.execute("REPLACE INTO subscriptions (userid, threadid) VALUES (%s, %s)",
                      (user_id, thread_id))


def unsubscribe(db, user_id, thread_id):
    return db.execute("DELETE FROM subscriptions WHERE userid = %s AND threadid = %s",
                      (user_id, thread_id))


def rate_post(db, user_id, post_id, rating):
    """BoincPostRating::replace: the user's rating (+1 or -1) of a post."""
    return db.execute("REPLACE INTO post_ratings (post, user, rating) VALUES (%s, %s, %s)",
                      (post_id, user_id, rating))


def mark_thread_read(db, user_id, thread_id, now):
    """forum_logging: the user read the thread up to now (BoincForumLogging::replace)."""
    return db.execute("REPLACE INTO forum_logging (userid, threadid, timestamp) "
                      "VALUES (%s, %s, %s)", (user_id, thread_id, now))


def delete_forum_rows_of_user(db, user_id):
    """A deleted account's subscriptions, ratings and read marks."""
    return {t: db.execute("DELETE FROM %s WHERE %s = %%s" % (t, col), (user_id,))
            for t, col in (("subscriptions", "userid"), ("post_ratings", "user"),
                           ("forum_logging", "userid"))}


def forum_delete_user(db, user_id):
    """BOINC's forum_delete_user (a deleted or obfuscated account): the user's
    posts go (delete_post: counts kept, emptied threads deleted), with the
    ratings of them; then the user's subscriptions, ratings and read marks.
    Returns {what: rows}."""
    posts = db.query("SELECT p.id, p.thread, t.forum FROM post p JOIN thread t "
                     "ON t.id = p.thread WHERE p.user = %s", (user_id,))
    rated = db.execute("DELETE r FROM post_ratings r JOIN post p ON p.id = r.post "
                       "WHERE p.user = %s", (user_id,))
    for p in posts:
        delete_post(db, p["id"], p["thread"], p["forum"])
    done = {"forum posts": len(posts), "ratings of the posts": rated}
    done.update(delete_forum_rows_of_user(db, user_id))
    return done


# -- moderation (boincpy.web.user.moderation; BOINC's forum.inc) -------------------------

def update_thread_timestamp(db, thread_id):
    """The thread's timestamp: its newest visible post's (update_thread_timestamp)."""
    db.execute("UPDATE thread SET timestamp = COALESCE((SELECT MAX(timestamp) FROM post "
               "WHERE thread = %s AND hidden = 0), timestamp) WHERE id = %s",
               (thread_id, thread_id))


def hide_post(db, post_id, thread_id, forum_id):
    """Hide a visible post (BOINC's hide_post: ``hidden`` 1, one reply and one
    post fewer); return 1 if it was visible."""
    if not db.execute("UPDATE post SET hidden = 1 WHERE id = %s AND thread = %s AND hidden = 0",
                      (post_id, thread_id)):
        return 0
    db.execute("UPDATE thread SET replies = IF(replies > 0, replies - 1, 0) WHERE id = %s",
               (thread_id,))
    db.execute("UPDATE forum SET posts = IF(posts > 0, posts - 1, 0) WHERE id = %s", (forum_id,))
    update_thread_timestamp(db, thread_id)
    _forum_timestamp(db, forum_id)
    return 1


def unhide_post(db, post_id, thread_id, forum_id):
    """Show a hidden post again (BOINC's unhide_post); return 1 if it was hidden."""
    if not db.execute("UPDATE post SET hidden = 0 WHERE id = %s AND thread = %s AND hidden <> 0",
                      (post_id, thread_id)):
        return 0
    db.execute("UPDATE thread SET replies = replies + 1 WHERE id = %s", (thread_id,))
    db.execute("UPDATE forum SET posts = posts + 1 WHERE id = %s", (forum_id,))
    update_thread_timestamp(db, thread_id)
    _forum_timestamp(db, forum_id)
    return 1


def move_post(db, post_id, old_thread, old_forum, new_thread, new_forum):
    """Move a post to another thread (BOINC's move_post: the counters of both
    threads and forums follow); return 1 if it moved."""
    if not db.execute("UPDATE post SET thread = %s WHERE id = %s AND thread = %s",
                      (new_thread, post_id, old_thread)):
        return 0
    db.execute("UPDATE thread SET replies = IF(replies > 0, replies - 1, 0) WHERE id = %s",
               (old_thread,))
    db.execute("UPDATE thread SET replies = replies + 1 WHERE id = %s", (new_thread,))
    db.execute("UPDATE forum SET posts = IF(posts > 0, posts - 1, 0) WHERE id = %s", (old_forum,))
    db.execute("UPDATE forum SET posts = posts + 1 WHERE id = %s", (new_forum,))
    for thread_id in (old_thread, new_thread):
        update_thread_timestamp(db, thread_id)
    for forum_id in {old_forum, new_forum}:
        _forum_timestamp(db, forum_id)
    return 1


def set_thread_flag(db, thread_id, flag, value):
    """A thread's ``sticky`` or ``locked`` (forum_moderate_thread_action.php);
    return 1 if it changed."""
    if flag not in ("sticky", "locked"):
        raise ValueError("thread flag %r" % flag)
    return db.execute("UPDATE thread SET %s = %%s WHERE id = %%s" % flag,
                      (1 if value else 0, thread_id))


def move_thread(db, thread_id, old_forum, new_forum, now):
    """Move a thread to another forum (BOINC's move_thread); return 1 if it moved."""
    row = db.query_one("SELECT replies FROM thread WHERE id = %s AND forum = %s FOR UPDATE",
                       (thread_id, old_forum))
    if row is None or old_forum == new_forum:
        return 0
    n = max(row["replies"], 0) + 1
    db.execute("UPDATE forum SET threads = IF(threads > 0, threads - 1, 0), "
               "posts = GREATEST(posts - %s, 0) WHERE id = %s", (n, old_forum))
    db.execute("UPDATE forum SET threads = threads + 1, posts = posts + %s, timestamp = %s "
               "WHERE id = %s", (n, now, new_forum))
    return db.execute("UPDATE thread SET forum = %s WHERE id = %s", (new_forum, thread_id))


def delete_post(db, post_id, thread_id, forum_id):
    """Delete a post (BOINC's delete_post); a thread left without posts goes
    too.  Return 1 if the post was there."""
    post = db.query_one("SELECT hidden FROM post WHERE id = %s AND thread = %s FOR UPDATE",
                        (post_id, thread_id))
    if post is None:
        return 0
    db.execute("DELETE FROM post WHERE id = %s", (post_id,))
    if not post["hidden"]:
        db.execute("UPDATE thread SET replies = IF(replies > 0, replies - 1, 0) WHERE id = %s",
                   (thread_id,))
        db.execute("UPDATE forum SET posts = IF(posts > 0, posts - 1, 0) WHERE id = %s",
                   (forum_id,))
    if db.query_value("SELECT COUNT(*) FROM post WHERE thread = %s", (thread_id,)):
        update_thread_timestamp(db, thread_id)
    else:
        thread = db.query_one("SELECT hidden FROM thread WHERE id = %s", (thread_id,))
        if thread is not None and not thread["hidden"]:
            db.execute("UPDATE forum SET threads = IF(threads > 0, threads - 1, 0) "
                       "WHERE id = %s", (forum_id,))
        db.execute("DELETE FROM thread WHERE id = %s", (thread_id,))
    return 1


def delete_thread(db, thread_id, forum_id):
    """Delete a thread and its posts (BOINC's delete_thread); return 1 if it was there."""
    thread = db.query_one("SELECT hidden FROM thread WHERE id = %s AND forum = %s FOR UPDATE",
                          (thread_id, forum_id))
    if thread is None:
        return 0
    visible = db.query_value("SELECT COUNT(*) FROM post WHERE thread = %s AND hidden = 0",
                             (thread_id,))
    db.execute("UPDATE forum SET posts = GREATEST(posts - %s, 0) WHERE id = %s",
               (visible, forum_id))
    db.execute("DELETE FROM post WHERE thread = %s", (thread_id,))
    if not thread["hidden"]:
        db.execute("UPDATE forum SET threads = IF(threads > 0, threads - 1, 0) WHERE id = %s",
                   (forum_id,))
    db.execute("DELETE FROM thread WHERE id = %s", (thread_id,))
    return 1


# banishment_vote / banishment_votes (html/inc/forum_banishment_vote.inc)

def insert_banishment_vote(db, userid, modid, start_time, end_time):
    """A vote to banish ``userid`` started by moderator ``modid``; its id."""
    return db.insert("INSERT INTO banishment_vote (userid, modid, start_time, end_time) "
                     "VALUES (%s, %s, %s, %s)", (userid, modid, start_time, end_time))


def insert_banishment_ballot(db, voteid, modid, now, yes):
    """One moderator's ballot in a vote (banishment_votes.yes 1 or 0)."""
    return db.insert("INSERT INTO banishment_votes (voteid, modid, time, yes) "
                     "VALUES (%s, %s, %s, %s)", (voteid, modid, now, 1 if yes else 0))


def end_banishment_vote(db, voteid, now):
    """Close a vote early (a majority decided): its end_time becomes now."""
    return db.execute("UPDATE banishment_vote SET end_time = %s WHERE id = %s AND end_time > %s",
                      (now, voteid, now))


def delete_banishment_votes_of_user(db, userid):
    """delete_account.inc: the votes about a deleted user."""
    return db.execute("DELETE FROM banishment_vote WHERE userid = %s", (userid,))


def update_activities(db, now):
    """update_forum_activities.php: each thread's ``activity``.  A help-desk
    thread's is (sufferers + 1) / its age in days; any other's the sum over
    its posts of 2^-(post's age in weeks).  Return (help-desk threads,
    other threads) updated."""
    helpdesk = db.execute(
        "UPDATE thread t JOIN forum f ON f.id = t.forum AND f.parent_type = 0 "
        "JOIN category c ON c.id = f.category AND c.is_helpdesk <> 0 "
        "SET t.activity = (t.sufferers + 1) / GREATEST((%s - t.create_time) / 86400, "
        "1 / 86400)", (now,))
    others = db.execute(
        "UPDATE thread t LEFT JOIN forum f ON f.id = t.forum LEFT JOIN category c "
        "ON c.id = f.category AND f.parent_type = 0 "
        "LEFT JOIN (SELECT thread, SUM(POW(2, -(%s - timestamp) / 604800)) AS a "
        "FROM post GROUP BY thread) p ON p.thread = t.id "
        "SET t.activity = COALESCE(p.a, 0) WHERE COALESCE(c.is_helpdesk, 0) = 0", (now,))
    return helpdesk, others
