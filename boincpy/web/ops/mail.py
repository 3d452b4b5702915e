"""``mass_email.php``: e-mail a group of users (BOINC's mass_email.php).

Groups as BOINC's page offers them (all users, unsuccessful, successful,
currently contributing, lapsed, a list of user IDs); every group but the
list leaves out users who asked for no e-mail (``send_email`` = 0).
``USERNAME`` in the body becomes each user's name.

The messages go out as every e-mail of the site does (:mod:`boincpy.mail`:
config.xml's ``<smtp_host>``, else ``<email_command>``); with neither, the
page appends them to an mbox file in ``PROJECT/mail/``, for the operator to
check and send with their own tools.  Composing goes through a preview that
shows the number of recipients and the first message; only the confirmed
POST sends.
"""

import mailbox
import os
import time

from boincpy import mail
from boincpy.web.markup import Markup, fmt, join
from boincpy.web.page import PageError, hidden, notice, render, table, text_input
from boincpy.web.ops.users import log_action

WEEK = 7 * 86400

# (value, label, SQL selecting id, name, email_addr); BOINC's receiver numbers.
GROUPS = (
    (1, "All users", "SELECT id, name, email_addr FROM user WHERE send_email > 0"),
    (2, "Unsuccessful users: no credit, joined over a week ago, no jobs in the database",
     "SELECT u.id, u.name, u.email_addr FROM user u LEFT JOIN result r ON r.userid = u.id "
     "WHERE u.send_email > 0 AND u.total_credit = 0 AND u.create_time < %(week_ago)s "
     "AND r.id IS NULL"),
    (3, "Successful users: total credit above 0",
     "SELECT id, name, email_addr FROM user WHERE send_email > 0 AND total_credit > 0"),
    (4, "Currently contributing users: at least one job in the database",
     "SELECT DISTINCT u.id, u.name, u.email_addr FROM user u JOIN result r ON r.userid = u.id "
     "WHERE u.send_email > 0"),
    (5, "Lapsed users: credit, but no jobs in the database",
     "SELECT u.id, u.name, u.email_addr FROM user u LEFT JOIN result r ON r.userid = u.id "
     "WHERE u.send_email > 0 AND u.total_credit > 0 AND r.id IS NULL"),
    (6, "These user IDs (comma-separated):", None),
)


def recipients(db, group, userids, now):
    """The (id, name, email_addr) rows of a group, by id."""
    if group == 6:
        if not userids:
            return []
        return db.query("SELECT id, name, email_addr FROM user WHERE id IN (%s) ORDER BY id"
                        % ", ".join(["%s"] * len(userids)), userids)
    sql = dict((g[0], g[2]) for g in GROUPS)[group]
    return db.query(sql.replace("%(week_ago)s", "%s") + " ORDER BY id",
                    (now - WEEK,) if "%(week_ago)s" in sql else None)


def make_message(cfg, user, subject, body, now):
    """One user's e-mail."""
    text = body.replace("USERNAME", user["name"] or "")
    text += ("\n\nYou get this e-mail because your account at %s allows e-mail from the "
             "project; turn that off in your account settings to get no more.\n"
             % (cfg.long_name or cfg.master_url))
    return mail.make_message(cfg, user["email_addr"], subject, text, user["name"], now,
                             "mass_email")


def deliver(cfg, messages, now):
    """Send or store the messages; return (number delivered, [failure texts], where)."""
    if mail.configured(cfg):
        where = ("the SMTP server %s" % cfg.smtp_host if cfg.smtp_host
                 else "the command %s" % cfg.email_command)
        try:
            sent, failures = mail.deliver(cfg, messages)
        except mail.MailError as exc:
            sent, failures = 0, [exc.message]
        return sent, failures, where
    directory = cfg.project_path("mail")
    try:
        os.makedirs(directory, mode=0o2770, exist_ok=True)
    except OSError as exc:
        raise PageError("can't create %s (%s): create it, writable by the web server's "
                        "group, or set <email_command> in config.xml; nothing was sent"
                        % (directory, exc.strerror), "500 Internal Server Error") from None
    path = os.path.join(directory, time.strftime("mass_email_%Y%m%d_%H%M%S.mbox",
                                                 time.gmtime(now)))
    box = mailbox.mbox(path)
    try:
        box.lock()
        for msg in messages:
            box.add(msg)
        box.flush()
    except OSError as exc:
        raise PageError("can't write %s: %s; nothing was sent" % (path, exc.strerror),
                        "500 Internal Server Error") from None
    finally:
        box.unlock()
        box.close()
    return len(messages), [], "the file %s" % path


def _inputs(ctx):
    """(group, userids, subject, body) from the POSTed form, checked."""
    text = ctx.req.post("receiver")
    group = int(text) if text.isdigit() else None
    if group not in dict((g[0], g) for g in GROUPS):
        raise PageError("Choose who gets the e-mail (receiver 1 to 6); nothing was sent.")
    userids = []
    if group == 6:
        text = ctx.req.post("userids").replace(",", " ").split()
        if not text or not all(t.isdigit() for t in text):
            raise PageError("User IDs: write numbers separated by commas; nothing was sent.")
        userids = sorted({int(t) for t in text})
    subject = ctx.req.post("subject")
    body = ctx.req.post("body").replace("\r\n", "\n")
    if not subject or "\n" in subject or "\r" in subject or len(subject) > 200:
        raise PageError("Give a subject of one line (at most 200 characters); nothing was sent.")
    if not body.strip():
        raise PageError("The e-mail has no text; nothing was sent.")
    return group, userids, subject, body


def mass_email(ctx):
    """GET: the form; POST preview: who gets it and the first message; POST
    send (from the preview): send or store the messages."""
    cfg = ctx.cfg
    where = ("sent through the SMTP server %s" % cfg.smtp_host if cfg.smtp_host else
             "handed to %s" % cfg.email_command if cfg.email_command else
             "written to an mbox file in %s (set <smtp_host> or <email_command> in "
             "config.xml to send them)" % cfg.project_path("mail"))
    if ctx.req.method == "POST":
        ctx.require_action()
        group, userids, subject, body = _inputs(ctx)
        users = recipients(ctx.db, group, userids, ctx.now)
        if ctx.req.post("action") == "send":
            messages = [make_message(cfg, u, subject, body, ctx.now) for u in users]
            sent, failures, dest = deliver(cfg, messages, ctx.now)
            log_action(ctx, "mass e-mail %r to group %d: %d of %d delivered to %s"
                       % (subject, group, sent, len(messages), dest))
            parts = [notice("ok" if not failures else "warn",
                            "%d of %d e-mail(s) delivered to %s." % (sent, len(messages), dest))]
            if failures:
                parts.append(table(("Failed",), [(f,) for f in failures]))
            return render(ctx, "Mass e-mail sent", join(parts))
        if not users:
            raise PageError("Nobody in this group gets e-mail; nothing was sent.", "404 Not Found")
        first = make_message(cfg, users[0], subject, body, ctx.now)
        keep = join([hidden("receiver", group), hidden("userids", " ".join(map(str, userids))),
                     hidden("subject", subject), hidden("body", body)])
        return render(ctx, "Confirm: mass e-mail", fmt(
            "{}<h2>The first of them</h2><pre>{}</pre>"
            '<form method="post" action="mass_email.php">{}{}{}'
            '<button type="submit" class="danger" id="send">Send {} e-mail(s)</button></form>',
            notice("warn", "%d user(s) will get this e-mail; it will be %s." % (len(users), where)),
            first.as_string(), ctx.token_field(), hidden("action", "send"), keep, len(users)))
    radios = join(fmt('<label><input type="radio" name="receiver" value="{}"{}> {}</label>{}<br>',
                      value, Markup(" checked") if value == 6 else Markup(""), label,
                      text_input("userids", "", 30) if value == 6 else "")
                  for value, label, _ in GROUPS)
    body = fmt(
        "<p>Messages are {}.</p>"
        '<form method="post" action="mass_email.php">{}{}'
        "<p>{}</p>"
        '<p><label for="subject">Subject</label><br>{}</p>'
        '<p><label for="body">Text (USERNAME is replaced by each user\'s name)</label><br>'
        '<textarea name="body" id="body" rows="15" cols="70"></textarea></p>'
        '<button type="submit" id="preview">Preview</button></form>',
        where, ctx.token_field(), hidden("action", "preview"), radios,
        text_input("subject", "", 60))
    return render(ctx, "Send mass e-mail", body)

