"""E-mail the project sends: password-reset links, e-mail-change notices,
account-deletion confirmations (the volunteer's pages) and mass_email.php.

One way out, chosen by config.xml: ``<smtp_host>`` (with ``smtp_port``,
``smtp_starttls``, ``smtp_username``/``smtp_password``) sends through that
SMTP server with the standard library's smtplib; else ``<email_command>``
(say ``/usr/sbin/sendmail -t -i``) gets each message on its standard input;
with neither, :func:`configured` is False and :func:`send` refuses, so a page
can say that no e-mail went out.  ``From:`` is ``<email_from>`` (BOINC's
EMAIL_FROM), else ``noreply@`` the master URL's host.

Every failure is a :class:`MailError` naming the address and the cause (the
server's answer, a timeout, a command's exit status), never a traceback: the
pages log it and tell the user.
"""

# email, smtplib, ssl and subprocess are imported where a message is made or
# sent: every page that may send imports this module, and a classic CGI pays
# some 20 ms for them though most requests send nothing.
import time
from urllib.parse import urlsplit

from boincpy.errors import BoincpyError

TIMEOUT = 30            # seconds for an SMTP conversation step or the command


class MailError(BoincpyError):
    """An e-mail could not be sent (the message says to whom and why)."""


def configured(cfg):
    """Can the project send e-mail at all (an SMTP server or a command)?"""
    return bool(cfg.smtp_host or cfg.email_command)


def sender(cfg):
    """The From: address: config.xml's email_from, else noreply@ the project's host."""
    if cfg.email_from:
        return cfg.email_from
    import email.utils
    host = urlsplit(cfg.master_url).hostname or "localhost"
    return email.utils.formataddr((cfg.long_name or "BOINC project", "noreply@" + host))


def _one_line(text):
    return " ".join(str(text or "").split())


def make_message(cfg, to, subject, body, to_name="", now=None, id_tag="boincpy"):
    """A plain-text message (UTF-8) to ``to``; names and subjects are kept on one line."""
    import email.message
    import email.utils
    msg = email.message.EmailMessage()
    msg["From"] = sender(cfg)
    msg["To"] = email.utils.formataddr((_one_line(to_name), _one_line(to)))
    msg["Subject"] = _one_line(subject)
    msg["Date"] = email.utils.formatdate(time.time() if now is None else now)
    msg["Message-ID"] = email.utils.make_msgid(id_tag)
    msg.set_content(body)
    return msg


def _smtp(cfg):
    """An open, logged-in SMTP connection as config.xml says."""
    import smtplib
    import ssl
    port = cfg.smtp_port or (587 if cfg.smtp_starttls else 25)
    try:
        conn = smtplib.SMTP(cfg.smtp_host, port, timeout=TIMEOUT)
    except (OSError, smtplib.SMTPException) as exc:
        raise MailError("can't reach the SMTP server %s:%d: %s" % (cfg.smtp_host, port, exc)) \
            from None
    step = "the greeting"
    try:
        if cfg.smtp_starttls:
            step = "STARTTLS"
            conn.ehlo()
            conn.starttls(context=ssl.create_default_context())
            conn.ehlo()
        if cfg.smtp_username:
            step = "the login"
            conn.login(cfg.smtp_username, cfg.smtp_password)
    except (OSError, smtplib.SMTPException) as exc:
        _close(conn)
        raise MailError("the SMTP server %s:%d failed %s: %s"
                        % (cfg.smtp_host, port, step, exc)) from None
    return conn


def _close(conn):
    import smtplib
    try:
        conn.quit()
    except (OSError, smtplib.SMTPException):
        conn.close()


def _run_command(cfg, msg):
    import shlex
    import subprocess
    argv = shlex.split(cfg.email_command)
    try:
        proc = subprocess.run(argv, input=bytes(msg), capture_output=True, timeout=TIMEOUT)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise MailError("%s: %s" % (msg["To"], exc)) from None
    if proc.returncode:
        raise MailError("%s: %s exited with %d: %s" % (
            msg["To"], argv[0], proc.returncode,
            proc.stderr.decode("utf-8", "replace").strip()[:200]))


def deliver(cfg, messages):
    """Send each message (one SMTP connection for all); return (number sent,
    [one text per failed message]).  MailError if nothing can be sent at all
    (no way configured, the server unreachable or refusing the login)."""
    import smtplib
    messages = list(messages)
    failures = []
    sent = 0
    if cfg.smtp_host:
        conn = _smtp(cfg)
        try:
            for msg in messages:
                try:
                    conn.send_message(msg)
                    sent += 1
                except smtplib.SMTPServerDisconnected as exc:
                    failures.append("%s: %s" % (msg["To"], exc))
                    break
                except (OSError, smtplib.SMTPException) as exc:
                    failures.append("%s: %s" % (msg["To"], exc))
        finally:
            _close(conn)
        failures.extend("%s: not sent, the server closed the connection" % m["To"]
                        for m in messages[sent + len(failures):])
        return sent, failures
    if cfg.email_command:
        for msg in messages:
            try:
                _run_command(cfg, msg)
                sent += 1
            except MailError as exc:
                failures.append(exc.message)
        return sent, failures
    raise MailError("the project has no way to send e-mail (config.xml sets neither "
                    "<smtp_host> nor <email_command>)")


def send(cfg, to, subject, body, to_name=""):
    """Send one plain-text e-mail; MailError (saying why) if it did not go out."""
    msg = make_message(cfg, to, subject, body, to_name)
    sent, failures = deliver(cfg, [msg])
    if not sent:
        raise MailError(failures[0] if failures else "%s: not sent" % to)
