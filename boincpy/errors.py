"""One base exception for everything boincpy reports to a user.

Each error carries the text the user must be told (naming the file, line or
field at fault) and the exit status a command-line tool should return.
"""


class BoincpyError(Exception):
    """Base of every error boincpy raises on purpose."""

    exit_code = 1

    def __init__(self, message, *, exit_code=None):
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


class KeyFileError(BoincpyError):
    """A key or signature file is missing or not in BOINC's format."""


class TemplateError(BoincpyError):
    """An input or output template is malformed or does not fit the job."""


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
    """A remote job submission request failed.

    When the project answered with BOINC's ``<error>`` reply, ``error_num``
    and ``error_msg`` carry its number and text, and ``op`` the RPC; a
    request that could not be made or whose reply could not be read (no
    connection, HTTP error, not XML) has ``error_num`` None.
    """

    def __init__(self, message, *, error_num=None, error_msg=None, op=None, exit_code=None):
        super().__init__(message, exit_code=exit_code)
        self.error_num = error_num
        self.error_msg = error_msg
        self.op = op
