"""bin/delete_spammers: BOINC's html/ops/delete_spammers.php.

Deletes spammers' accounts, and with them everything they made: profile,
message-board posts (a thread left empty goes too), subscriptions, read
marks, ratings, private messages, friends, notifications, badges, votes to
banish them, credit by app, tokens, forum preferences, and the account
itself (``accounts.delete_account``: as BOINC's wipe, so a statistics site
hears of the deletion; their hosts, which BOINC's delete_user leaves
orphaned, go too; most spammers have none).  Teams are deleted as BOINC's
``$team->delete()`` does (the row).

Options are read first, then the commands run in the order given, as BOINC's
script does::

    delete_spammers [--test|--dry_run] [--min_days N] [--max_days N] COMMAND...

``--test`` (boincpy also spells it ``--dry_run``) shows who would be deleted
and deletes nothing.  ``--min_days N`` / ``--max_days N``: only accounts
(teams, for --teams) created at least / at most N days ago (``--days`` is
BOINC's old name of --max_days).  Commands:

``--profiles``         a profile with a link, no hosts, no posts
``--profiles_strict``  a profile and no posts (for BOINC's own message boards)
``--user_url``         a URL in the account, no hosts, no posts
``--user_null``        no hosts, no posts, founded no team
``--forums``           no hosts, no team, a post with two URLs (http...http)
``--banished``         a forum ban at some time (forum_preferences.banished_until > 0)
``--teams``            teams with no credit, fewer than 2 members, a link in the
                       description or a URL, none of whose members and founder
                       posted or has a host: the team and those users (a team
                       whose founder is gone: the team)
``--list FILE``        the user ids of FILE, one a line
``--id N``             user N
``--id_range N M``     users N to M
``--team_id_range N M`` teams N to M and their founders
``--all``              --profiles --teams --user_url

As BOINC's, --forums reads forum posts (so it can delete volunteers who
joined only to take part in the forums; use it with care).
"""

import os
import sys
import time

from boincpy.config import load_config
from boincpy.db import badge as badge_db
from boincpy.db import connect
from boincpy.db import forum as forum_db
from boincpy.db import messages as mdb
from boincpy.db import team as team_db
from boincpy.errors import BoincpyError, MissingTableError
from boincpy.web import accounts

USAGE = ("Usage: delete_spammers [--test|--dry_run] [--min_days N] [--max_days N] "
         "[--project_dir DIR] COMMAND...\n\nDeletes spammers' accounts (BOINC's "
         "delete_spammers.php); run with --test first.\n\n"
         + __doc__[__doc__.index("``--test``"):])
DAY = 86400


class Usage(BoincpyError):
    pass


def has_link(text):
    """delete_spammers.php's has_link."""
    text = text or ""
    return any(m in text for m in ("<a ", "[url", "http://", "https://", "www."))


def _tolerant(fn, *args):
    """A statement on a table the project may not have (made before it existed)."""
    try:
        return fn(*args)
    except MissingTableError:
        return 0


def delete_user(db, user, now=None):
    """BOINC's delete_user, then the account's rows (accounts.delete_account)."""
    with db.transaction():
        for post in db.query_if_table("SELECT p.id, p.thread, t.forum FROM post p JOIN thread t "
                              "ON t.id = p.thread WHERE p.user = %s", (user.id,)):
            forum_db.delete_post(db, post["id"], post["thread"], post["forum"])
        extra = getattr(forum_db, "delete_forum_rows_of_user", None)
        if extra is not None:
            _tolerant(extra, db, user.id)
        _tolerant(forum_db.delete_banishment_votes_of_user, db, user.id)
        _tolerant(mdb.delete_community_rows_of_user, db, user.id)
        badges = [r["badge_id"] for r in db.query_if_table("SELECT badge_id FROM badge_user "
                                                   "WHERE user_id = %s", (user.id,))]
        if badges:
            badge_db.unassign(db, "user", user.id, badges)
    return accounts.delete_account(db, user, now)


class Spammers:
    """One run: the options, the database, where lines go."""

    def __init__(self, db, out, test=False, min_days=0, max_days=0, now=None):
        self.db = db
        self.out = out
        self.test = test
        self.min_days = min_days
        self.max_days = max_days
        self.now = int(time.time() if now is None else now)
        self.deleted_users = []
        self.deleted_teams = []

    def say(self, text):
        self.out.write(text + "\n")

    def user(self, user_id):
        return accounts.lookup_user_by_id(self.db, user_id)

    def age_ok(self, create_time):
        if self.min_days and create_time > self.now - self.min_days * DAY:
            return False
        if self.max_days and create_time < self.now - self.max_days * DAY:
            return False
        return True

    def count(self, sql, ident):
        return int(self.db.query_value(sql, (ident,), default=0) or 0)

    def nhosts(self, user_id):
        return self.count("SELECT COUNT(*) FROM host WHERE userid = %s", user_id)

    def nposts(self, user_id):
        return int((self.db.query_if_table("SELECT COUNT(*) AS n FROM post WHERE user = %s",
                          (user_id,)) or [{"n": 0}])[0]["n"])

    def do_delete_user(self, user, reason):
        age = (self.now - user.create_time) / DAY
        self.say("deleting user: %s\n   ID: %d\n   email: %s\n   name: %s\n   URL: %s\n"
                 "   age:%g days" % (reason, user.id, user.email_addr, user.name, user.url, age))
        if self.test:
            self.say("   %d hosts\n   %d posts\n   (test mode - nothing deleted)"
                     % (self.nhosts(user.id), self.nposts(user.id)))
            return
        delete_user(self.db, user, self.now)
        self.deleted_users.append(user.id)

    # -- commands ------------------------------------------------------

    def delete_list(self, path):
        try:
            with open(path) as f:
                lines = f.read().split("\n")
        except OSError:
            raise Usage("no such file %s" % path) from None
        ids = []
        for line in lines:
            s = line.strip()
            if not s:
                continue
            if not s.isdigit():
                raise Usage("bad ID %s" % s)
            ids.append(int(s))
        for uid in ids:
            user = self.user(uid)
            if user is None:
                self.say("no user ID %d" % uid)
            else:
                self.do_delete_user(user, "list")

    def delete_profiles(self, strict=False):
        n = 0
        for p in self.db.query_if_table("SELECT userid, response1, response2 FROM profile "
                                "ORDER BY userid"):
            if not strict and not (has_link(p["response1"]) or has_link(p["response2"])):
                continue
            user = self.user(p["userid"])
            if user is None:
                self.say("profile has missing user: %d" % p["userid"])
                continue
            if not strict:
                if not self.age_ok(user.create_time) or self.nhosts(user.id):
                    continue
            if self.nposts(user.id):
                continue
            self.do_delete_user(user, "profiles_strict" if strict else "profiles")
            if self.test:
                self.say("\n%d\n%s\n%s" % (p["userid"], p["response1"], p["response2"]))
            n += 1
        if not strict:
            self.say("delete_profiles(): deleted %d users" % n)

    def delete_forums(self):
        n = 0
        for row in self.db.query_if_table("SELECT DISTINCT user FROM post ORDER BY user"):
            user = self.user(row["user"])
            if user is None:
                self.say("missing user %d" % row["user"])
                continue
            if not self.age_ok(user.create_time) or user.teamid or self.nhosts(user.id):
                continue
            if not self.count("SELECT COUNT(*) FROM post WHERE user = %s AND content LIKE "
                              "'%%http%%http%%'", user.id):
                continue
            self.do_delete_user(user, "forums")
            n += 1
        self.say("delete_forums(): deleted %d users" % n)

    def delete_users(self, no_hosts, no_posts, no_teams, have_url):
        sql = ["SELECT a.id FROM user a WHERE 1"]
        if no_hosts:
            sql.append("AND NOT EXISTS (SELECT 1 FROM host c WHERE c.userid = a.id)")
        if no_posts and self.db.query_if_table("SHOW TABLES LIKE 'post'"):
            sql.append("AND NOT EXISTS (SELECT 1 FROM post b WHERE b.user = a.id)")
        if no_teams:
            sql.append("AND NOT EXISTS (SELECT 1 FROM team d WHERE d.userid = a.id)")
        if self.min_days:
            sql.append("AND a.create_time < %d" % (self.now - self.min_days * DAY))
        if self.max_days:
            sql.append("AND a.create_time > %d" % (self.now - self.max_days * DAY))
        n = 0
        for row in self.db.query(" ".join(sql) + " ORDER BY a.id"):
            user = self.user(row["id"])
            if user is None or (have_url and not user.url):
                continue
            self.do_delete_user(user, "users")
            n += 1
        self.say("deleted %d users" % n)

    def delete_banished(self):
        for row in self.db.query_if_table("SELECT userid FROM forum_preferences WHERE banished_until > 0 "
                                  "ORDER BY userid"):
            user = self.user(row["userid"])
            if user is not None and self.age_ok(user.create_time):
                self.do_delete_user(user, "banished")

    def delete_teams(self):
        sql = "SELECT * FROM team WHERE nusers < 2 AND seti_id = 0 AND total_credit = 0"
        if self.min_days:
            sql += " AND create_time < %d" % (self.now - self.min_days * DAY)
        if self.max_days:
            sql += " AND create_time > %d" % (self.now - self.max_days * DAY)
        count = 0
        for team in self.db.query(sql + " ORDER BY id"):
            founder = self.user(team["userid"]) if team["userid"] else None
            if founder is None:
                self.delete_team(team, [])
                count += 1
                continue
            members = [r["id"] for r in self.db.query("SELECT id FROM user WHERE teamid = %s "
                                                      "ORDER BY id", (team["id"],))]
            if len(members) > 1:
                continue
            if not has_link(team["description"]) and not team["url"]:
                continue
            users = [self.user(uid) for uid in members]
            if founder.teamid != team["id"]:
                users.append(founder)
            users = [u for u in users if u is not None]
            if any(u.seti_nresults or self.nposts(u.id) or self.nhosts(u.id) for u in users):
                continue
            count += 1
            self.delete_team(team, users)
        self.say("deleted %d teams" % count)

    def delete_team(self, team, users):
        if self.test:
            self.say("would delete team:\n   ID: %d\n   name: %s\n   description: %s\n   URL: %s"
                     % (team["id"], team["name"], team["description"], team["url"]))
            for user in users:
                self.say("would delete user %d: %s:" % (user.id, user.email_addr))
            return
        with self.db.transaction():
            team_db.delete_team(self.db, team["id"])
        self.deleted_teams.append(team["id"])
        self.say("deleted team ID %d name %s" % (team["id"], team["name"]))
        for user in users:
            self.do_delete_user(user, "team")

    def delete_user_id(self, uid):
        user = self.user(uid)
        if user is None:
            self.say("no such user")
            return
        self.say("deleting user %d" % uid)
        self.do_delete_user(user, "id")

    def delete_user_id_range(self, first, last):
        for uid in range(first, last + 1):
            user = self.user(uid)
            if user is not None:
                self.say("deleting user %d" % uid)
                self.do_delete_user(user, "id range")

    def delete_team_id_range(self, first, last):
        for tid in range(first, last + 1):
            self.say("deleting team %d" % tid)
            team = self.db.query_one("SELECT * FROM team WHERE id = %s", (tid,))
            if team is None:
                continue
            founder = self.user(team["userid"]) if team["userid"] else None
            self.delete_team(team, [founder] if founder else [])


# ---------------------------------------------------------------------------
# the command line, read as BOINC's script reads it

_OPTIONS = {"--test": 0, "--dry_run": 0, "--min_days": 1, "--max_days": 1, "--days": 1,
            "--project_dir": 1}
_COMMANDS = {"--list": 1, "--profiles": 0, "--profiles_strict": 0, "--forums": 0,
             "--id_range": 2, "--id": 1, "--team_id_range": 2, "--banished": 0, "--teams": 0,
             "--user_url": 0, "--user_null": 0, "--all": 0}


def parse_args(argv):
    """(options dict, [(command, args)]); Usage for anything else."""
    opts = {"test": False, "min_days": 0, "max_days": 0, "project_dir": None}
    commands = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg.startswith("-") and not arg.startswith("--"):
            arg = "-" + arg                 # -test as --test
        nargs = _OPTIONS.get(arg, _COMMANDS.get(arg))
        if nargs is None:
            raise Usage("unknown argument %s" % argv[i])
        values = argv[i + 1:i + 1 + nargs]
        if len(values) < nargs:
            raise Usage("%s needs %d value%s" % (arg, nargs, "s" if nargs > 1 else ""))
        i += 1 + nargs
        if arg in ("--test", "--dry_run"):
            opts["test"] = True
        elif arg == "--project_dir":
            opts["project_dir"] = values[0]
        elif arg in ("--min_days", "--max_days", "--days"):
            if not values[0].isdigit():
                raise Usage("%s: %r is not a number of days" % (arg, values[0]))
            opts["max_days" if arg == "--days" else arg[2:]] = int(values[0])
        elif arg == "--list":
            commands.append((arg, values))
        else:
            if any(not v.isdigit() for v in values):
                raise Usage("bad args")
            ints = [int(v) for v in values]
            if nargs == 2 and ints[1] < ints[0]:
                raise Usage("bad args")
            commands.append((arg, ints))
    return opts, commands


def run_commands(run, commands):
    for command, args in commands:
        if command == "--list":
            run.delete_list(args[0])
        elif command == "--profiles":
            run.delete_profiles()
        elif command == "--profiles_strict":
            run.delete_profiles(strict=True)
        elif command == "--forums":
            run.delete_forums()
        elif command == "--id_range":
            run.delete_user_id_range(*args)
        elif command == "--id":
            run.delete_user_id(args[0])
        elif command == "--team_id_range":
            run.delete_team_id_range(*args)
        elif command == "--banished":
            run.delete_banished()
        elif command == "--teams":
            run.delete_teams()
        elif command == "--user_url":
            run.delete_users(True, True, False, True)
        elif command == "--user_null":
            run.delete_users(True, True, True, False)
        elif command == "--all":
            run.delete_profiles()
            run.delete_teams()
            run.delete_users(True, True, False, True)


def main(argv=None, out=None):
    """Entry point of bin/delete_spammers; the exit status."""
    out = out or sys.stdout
    argv = sys.argv[1:] if argv is None else list(argv)
    if any(a in ("-h", "--help", "-help") for a in argv) or not argv:
        out.write(USAGE)
        return 0 if argv else 1
    try:
        opts, commands = parse_args(argv)
        if opts["project_dir"] is None and os.environ.get("BOINC_PROJECT_DIR"):
            opts["project_dir"] = os.environ["BOINC_PROJECT_DIR"]
        cfg = load_config(opts["project_dir"], aux=False)
        db = connect(cfg)
    except BoincpyError as exc:
        sys.stderr.write("delete_spammers: %s\n" % exc)
        return 1
    try:
        run = Spammers(db, out, opts["test"], opts["min_days"], opts["max_days"])
        run.say("Starting: %s" % time.strftime("%a, %d %b %Y %H:%M:%S +0000", time.gmtime()))
        run_commands(run, commands)
        run.say("Finished: %s" % time.strftime("%a, %d %b %Y %H:%M:%S +0000", time.gmtime()))
    except Usage as exc:
        sys.stderr.write("delete_spammers: %s\n" % exc)
        return 1
    finally:
        db.close()
    return 0
