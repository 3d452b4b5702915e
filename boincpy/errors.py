"""One base exception for everything boincpy reports to a user.

Each error carries the text the user must be told (naming the file, line or
field at fault) and the exit status a command-line tool should return.  Every
exception class boincpy defines derives from :class:`BoincpyError` (the
errors of one module beside their code, where only that module raises them),
except the few signals that end a page, a command or a transaction early on
purpose: those derive from :class:`Signal`, so no ``except BoincpyError``
ever mistakes them for a failure.  tests/test_errors.py checks both.
"""


class Signal(Exception):
    """Not an error: a way out of a page, a command or a transaction that
    its caller catches by name (a redirect, a dry run's rollback)."""


class BoincpyError(Exception):
    """Base of every error boincpy raises on purpose."""

    exit_code = 1

    def __init__(self, message="", *, exit_code=None):
        super().__init__(message)
        self.message = message
        if exit_code is not None:
            self.exit_code = exit_code

    def __str__(self):
        return self.message


class ConfigError(BoincpyError):
    """config.xml (or another project file) is missing or malformed."""


class DatabaseError(BoincpyError):
    """The database is unreachable, lacks the schema, or refused a write."""


class DatabaseLostError(DatabaseError):
    """The database server went away: it stopped, crashed or dropped the
    connection under a statement, or can't be reached at all (MySQL's 2002,
    2003, 2006, 2013...).  An expected event, not a fault: a server program
    logs one line (``boincpy.log.failure_text``), answers with its error
    reply and opens a new connection for the next request; a daemon exits
    and cron starts it again.  ``reason`` is the server's or the client
    library's own words."""

    def __init__(self, message="", *, reason="", exit_code=None):
        super().__init__(message, exit_code=exit_code)
        self.reason = reason or message


class MissingTableError(DatabaseError):
    """A statement names a table the database lacks: a project made before
    boincpy (or BOINC) had that table (the community's, login_failure...)."""


class KeyFileError(BoincpyError):
    """A key or signature file is missing or not in BOINC's format."""


class TemplateError(BoincpyError):
    """An input or output template is malformed or does not fit the job."""


class FileNameError(BoincpyError):
    """A physical file name refused by ``files.check_file_name`` (it could
    leave its directory, hide, or change the XML it is written into), or one
    ``files.dir_hier_path`` would place outside its root."""


class ToolError(BoincpyError):
    """A bin/ tool was given bad arguments or met a state it cannot handle."""


class ShmemError(BoincpyError):
    """The feeder's job array can't be used: missing (feeder not running),
    unreadable, of another layout, or not ready yet.

    ``log_text`` is the scheduler.log line BOINC writes; ``user_message`` is
    what the reply tells the client (with <project_is_down/> and
    ``maintenance_delay``).
    """

    user_message = "Server error: feeder not running"

    def __init__(self, message, *, log_text=None, user_message=None, exit_code=None):
        super().__init__(message, exit_code=exit_code)
        self.log_text = log_text or message
        if user_message is not None:
            self.user_message = user_message


class SubmitError(BoincpyError):
    """A remote job submission request refused, or failed.

    On the server, a refusal answered with BOINC's ``<error>`` reply: ``num``
    is its error_num (-1 for every refusal the PHP handlers make) and the
    message its error_msg.  In the client, ``num`` and ``error_msg`` are
    those of the project's ``<error>`` reply and ``op`` its RPC; a request
    the client refused to send, or could not send or read (no connection,
    HTTP error, not XML), has ``num`` None.
    """

    def __init__(self, message, num=-1, *, error_msg=None, op=None, exit_code=None):
        super().__init__(message, exit_code=exit_code)
        self.num = num
        self.error_msg = message if error_msg is None else error_msg
        self.op = op

    @property
    def error_num(self):
        """``num`` under the reply's name for it."""
        return self.num
