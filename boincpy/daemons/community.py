"""Periodic tasks of the volunteer web site (BOINC's html/ops scripts of the
same names, run from config.xml's <tasks>, also as ``run_in_ops NAME.php``):

* ``notify`` (notify.php, daily): delete notifications older than 90 days,
  then send each user whose forum_preferences.pm_notification is 2 (digest)
  one e-mail listing the notifications of the past day (plus an hour of
  slop, as BOINC: a late run repeats rather than loses one);
* ``remind`` (remind.php): reminder e-mails to "failed" users (created over
  14 days ago, no credit) and "lapsed" ones (no scheduler RPC from any host
  in 60 days), at most one per 200 days (sent_email), never to a user whose
  send_email is 0; texts from html/ops/remind_email/reminder_{failed,lapsed}_
  {subject,text} with BOINC's <name/>, <email/>, <create_time/>,
  <total_credit/>, <opt_out_url/>, <user_id/>, <lapsed_interval/>.  Nothing
  is sent without ``--send`` (BOINC's dry run), ``--explain`` says why;
* ``delete_expired_tokens``: token rows whose expire_time has passed;
* ``delete_expired_users_and_hosts``: user_deleted and host_deleted rows
  older than 60 days.

Every e-mail honours user.send_email; logs are BOINC's lines.
"""

import os
import re
import time

from boincpy import mail, passwords
from boincpy.cli import option
from boincpy.daemons.base import Daemon
from boincpy.db import messages as mdb
from boincpy.db.host import delete_expired_host_deleted
from boincpy.db.messages import EMAIL_FAILED, EMAIL_LAPSED, record_sent_email
from boincpy.db.schema import ensure_table
from boincpy.db.user import delete_expired_tokens, delete_expired_user_deleted
from boincpy.errors import ConfigError
from boincpy.web import accounts
from boincpy.web.markup import url
from boincpy.web.user.messages import NOTIFY_KEEP_DAYS, describe_notifies, email_line

DAY = 86400


class _Task(Daemon):
    one_shot = True
    supports_mod = False

    def now(self):
        return time.time()

    def mailer_ready(self):
        if mail.configured(self.cfg):
            return True
        self.log.critical("config.xml sets neither <smtp_host> nor <email_command>: "
                          "no e-mail can be sent")
        return False

    def mail(self, user, subject, body):
        """Send one e-mail to a user (not if send_email is 0); True if sent."""
        if not user.send_email or not user.email_addr:
            return False
        try:
            mail.send(self.cfg, user.email_addr, subject, body, user.name)
        except mail.MailError as exc:
            self.log.normal("e-mail to user %d not sent: %s" % (user.id, exc.message))
            return False
        return True


def _time_str(t):
    return time.strftime("%d %b %Y, %H:%M:%S UTC", time.gmtime(int(t)))


class Notify(_Task):
    """notify.php"""

    name = "notify"
    description = ("Delete notifications older than 90 days and e-mail the day's "
                   "notifications to users who asked for a daily digest.")

    def one_pass(self):
        now = int(self.now())
        db = self.db
        self.log.normal("Starting at %s" % _time_str(now))
        mdb.ensure_tables(db)
        ensure_table(db, "forum_preferences")
        gone = mdb.delete_old_notifies(db, now - NOTIFY_KEEP_DAYS * DAY)
        self.log.normal("deleted %d notifications older than %d days" % (gone, NOTIFY_KEEP_DAYS))
        rows = db.query("SELECT n.* FROM notify n JOIN forum_preferences f ON f.userid = "
                        "n.userid WHERE f.pm_notification = 2 AND n.create_time > %s "
                        "ORDER BY n.userid, n.create_time, n.id", (now - (DAY + 3600),))
        by_user = {}
        for n, about in describe_notifies(db, rows):
            if about is None:
                mdb.delete_notify_id(db, n["id"])
            else:
                by_user.setdefault(n["userid"], []).append(email_line(n, about))
        sent = 0
        if by_user and self.mailer_ready():
            base = self.cfg.secure_url_base or self.cfg.master_url
            for userid, lines in sorted(by_user.items()):
                user = accounts.lookup_user_by_id(db, userid)
                if user is None:
                    continue
                text = "".join("%d) %s\n" % (i, line) for i, line in enumerate(lines, 1))
                body = ("The following events occurred in the past day at %s.\n"
                        "For details, visit your Account page at\n%shome.php\n\n%s"
                        "---------------\nTo change your email preferences for %s, visit:\n"
                        "%sedit_forum_preferences_form.php\n\nDo not reply to this email.\n"
                        % (self.cfg.long_name, base, text, self.cfg.long_name, base))
                if self.mail(user, "Daily notification summary from %s" % self.cfg.long_name,
                             body):
                    sent += 1
                    self.log.normal("sending to %s" % user.email_addr)
                elif not user.send_email:
                    self.log.normal("user %d does not want e-mail (send_email 0)" % user.id)
        self.log.normal("Ending at %s: %d digest(s) sent" % (_time_str(self.now()), sent))
        return bool(gone or sent)


class Remind(_Task):
    """remind.php"""

    name = "remind"
    description = ("E-mail reminders to users who never got credit (--failed) or whose "
                   "hosts stopped contacting the project (--lapsed). Nothing is sent "
                   "without --send.")
    START_INTERVAL = 14 * DAY
    EMAIL_INTERVAL = 200 * DAY
    LAPSED_INTERVAL = 60 * DAY
    TEMPLATE_DIR = os.path.join("html", "ops", "remind_email")

    @classmethod
    def add_options(cls, params):
        params.append(option("failed", is_flag=True,
                             help="remind users created 14+ days ago with no credit"))
        params.append(option("lapsed", is_flag=True,
                             help="remind users none of whose hosts contacted the project "
                                  "in 60 days"))
        params.append(option("userid", type=int, default=0, metavar="ID",
                             help="send both reminders to this user now, whatever is due "
                                  "(for testing; --failed and --lapsed are ignored)"))
        params.append(option("show_email", is_flag=True,
                             help="print the text that would be mailed"))
        params.append(option("explain", is_flag=True,
                             help="say which users would get e-mail and why"))
        params.append(option("send", is_flag=True,
                             help="really send (without it: a dry run)"))
        params.append(option("count", type=int, default=-1, metavar="N",
                             help="stop after N users (default: all that qualify)"))

    def initialise(self):
        super().initialise()
        self.templates = {}
        for kind in ("failed", "lapsed"):
            parts = {}
            for part in ("subject", "text"):
                path = self.cfg.project_path(self.TEMPLATE_DIR, "reminder_%s_%s" % (kind, part))
                try:
                    with open(path, encoding="utf-8") as f:
                        parts[part] = f.read()
                except OSError:
                    parts[part] = ""
                if not parts[part].strip():
                    raise ConfigError("file missing: %s (copy and edit the sample_%s_%s "
                                      "beside it)" % (path, kind, part))
            self.templates[kind] = parts
        self.left = self.args.count

    def last_rpc_time(self, user_id):
        return int(self.db.query_value("SELECT MAX(rpc_time) FROM host WHERE userid = %s",
                                       (user_id,), 0) or 0)

    def last_reminder_time(self, user_id):
        return int(self.db.query_value(
            "SELECT MAX(time_sent) FROM sent_email WHERE userid = %s AND email_type IN (%s, %s)",
            (user_id, EMAIL_LAPSED, EMAIL_FAILED), 0) or 0)

    def fill(self, user, template, now):
        base = self.cfg.secure_url_base or self.cfg.master_url
        values = {
            "name": user.name, "email": user.email_addr,
            "create_time": time.strftime("%d %B %Y", time.gmtime(user.create_time)),
            "total_credit": "{:,.0f}".format(user.total_credit or 0),
            "opt_out_url": base + url("opt_out.php",
                                      code=passwords.opt_out_code(user.authenticator),
                                      userid=user.id),
            "user_id": str(user.id),
            "lapsed_interval": str(int((now - self.last_rpc_time(user.id)) // DAY)),
        }
        return re.sub(r"<(%s)/>" % "|".join(values), lambda m: values[m.group(1)], template)

    def mail_type(self, user, kind, now):
        """remind.php's mail_type: show, send and record one reminder;
        False once --count is reached."""
        subject = self.templates[kind]["subject"].strip()
        text = self.fill(user, self.templates[kind]["text"], now)
        if self.args.show_email:
            print("------- SUBJECT ----------\n%s\n------- TEXT ----------\n%s" % (subject, text))
        if self.args.send:
            self.log.normal("sending to %s" % user.email_addr)
            if self.mail(user, subject, text):
                record_sent_email(self.db, user.id, int(now),
                                  EMAIL_LAPSED if kind == "lapsed" else EMAIL_FAILED)
                self.sent += 1
        self.left -= 1
        if self.left == 0:
            self.log.normal("reached limit set by --count - exiting...")
            return False
        return True

    def handle_user(self, user, kind, now):
        if not user.send_email:
            if self.args.explain:
                self.log.normal("user: %d send_email = 0" % user.id)
            return True
        if self.last_reminder_time(user.id) > now - self.EMAIL_INTERVAL:
            if self.args.explain:
                self.log.normal("user: %d sent too recently" % user.id)
            return True
        if self.args.explain:
            self.log.normal("user %d (%s) was created %.1f days ago\n  total_credit: %g; last "
                            "RPC %.1f days ago\n  sending %s email"
                            % (user.id, user.email_addr, (now - user.create_time) / DAY,
                               user.total_credit or 0,
                               (now - self.last_rpc_time(user.id)) / DAY, kind))
        self.would.append((user.id, kind))
        return self.mail_type(user, kind, now)

    def one_pass(self):
        now = self.now()
        self.sent = 0
        self.would = []
        if self.args.send and not self.mailer_ready():
            return False
        db = self.db
        if self.args.userid:
            user = accounts.lookup_user_by_id(db, self.args.userid)
            if user is None:
                self.log.critical("No such user: %d" % self.args.userid)
                return False
            self.mail_type(user, "failed", now) and self.mail_type(user, "lapsed", now)
            return bool(self.sent)
        if not (self.args.failed or self.args.lapsed):
            self.log.normal("nothing to do: give --failed and/or --lapsed")
        going = True
        if self.args.failed:
            for row in db.query("SELECT * FROM user WHERE send_email <> 0 AND create_time < %s "
                                "AND total_credit = 0 ORDER BY id",
                                (now - self.START_INTERVAL,)):
                if not self.handle_user(accounts._user(row), "failed", now):
                    going = False
                    break
        if self.args.lapsed and going:
            for row in db.query("SELECT userid FROM host GROUP BY userid HAVING "
                                "MAX(rpc_time) < %s ORDER BY userid",
                                (now - self.LAPSED_INTERVAL,)):
                user = accounts.lookup_user_by_id(db, row["userid"])
                if user is None:
                    self.log.normal("Can't find user %d" % row["userid"])
                    continue
                if not self.handle_user(user, "lapsed", now):
                    break
        self.log.normal("%d reminder(s) %s" % (len(self.would) if not self.args.send
                                               else self.sent,
                                               "sent" if self.args.send else
                                               "due (dry run: give --send to send them)"))
        return bool(self.sent)


class DeleteExpiredTokens(_Task):
    """delete_expired_tokens.php"""

    name = "delete_expired_tokens"
    description = "Delete the token rows whose expire time has passed."

    def one_pass(self):
        now = self.now()
        self.log.normal("Starting: %s" % _time_str(now))
        n = delete_expired_tokens(self.db, int(now))
        self.log.normal("%d tokens deleted" % n)
        self.log.normal("Finished: %s" % _time_str(self.now()))
        return bool(n)


class DeleteExpiredUsersAndHosts(_Task):
    """delete_expired_users_and_hosts.php"""

    name = "delete_expired_users_and_hosts"
    description = ("Delete user_deleted and host_deleted rows older than 60 days (db_dump "
                   "has told the statistics sites by then).")
    KEEP = 60 * DAY

    def one_pass(self):
        now = self.now()
        self.log.normal("Starting: %s" % _time_str(now))
        users = delete_expired_user_deleted(self.db, now - self.KEEP)
        self.log.normal("%d users deleted from user_deleted" % users)
        hosts = delete_expired_host_deleted(self.db, now - self.KEEP)
        self.log.normal("%d hosts deleted from host_deleted" % hosts)
        self.log.normal("Finished: %s" % _time_str(self.now()))
        return bool(users or hosts)
