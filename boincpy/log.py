"""BOINC-style log lines.

Every daemon and CGI writes lines like the C++ server's::

    2026-11-22 08:05:30.3392 UTC [PID=2298 ] [normal] Request: [USER#1] ...

A timestamp with four decimals, the process id (for CGIs, which share one
file), the severity word BOINC uses, then the message.  Debug levels follow
BOINC's ``-d N``: 1 critical only, 2 and 3 normal, 4 and up debug.
"""

import posix     # not os: a classic CGI's path does without it (hot_path.join)
import sys
import time

CRITICAL = 1
NORMAL = 2
DEBUG = 4

_KIND_WORDS = {CRITICAL: "[CRITICAL]", NORMAL: "[normal]", DEBUG: "[debug]"}


_last_second = (None, "")    # (a whole second, its text): one tuple, swapped whole


def timestamp(now=None):
    """BOINC's precision_time_to_string: ``YYYY-MM-DD HH:MM:SS.ffff UTC``."""
    global _last_second
    if now is None:
        now = time.time()
    whole = int(now)
    frac = int((now - whole) * 10000)
    second, text = _last_second
    if second != whole:         # a request logs many lines in one second
        text = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(whole))
        _last_second = (whole, text)
    return "%s.%04d UTC" % (text, frac)


def failure_text(exc, headline, where=""):
    """What a server program logs for a request (or a pass) that ended in
    ``exc``, an exception nothing else handled.

    A lost database (:class:`boincpy.errors.DatabaseLostError`: MariaDB
    stopped, crashed or can't be reached) is an expected event: one line,
    "lost connection to database" as BOINC's scheduler says it, with the
    server's reason (``where``, e.g. a page's name, before it if given).
    Anything else is a fault: ``headline`` ("Scheduler failed"), the
    exception, then its traceback, one line each.
    """
    from boincpy.errors import DatabaseLostError
    if isinstance(exc, DatabaseLostError):
        return "%slost connection to database (%s)" % (
            where + ": " if where else "", " ".join(str(exc.reason).split()))
    import traceback            # (only a failing request pays for it)
    trace = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    return "%s: %s: %s\n%s" % (headline, exc.__class__.__name__, exc, trace.rstrip("\n"))


class MessageLog:
    """A log file (or stream) with BOINC's line format and debug level."""

    def __init__(self, stream=None, debug_level=3, show_pid=False):
        self.stream = stream if stream is not None else sys.stderr
        self.debug_level = debug_level
        self.show_pid = show_pid

    @classmethod
    def open(cls, path, debug_level=3, show_pid=False):
        """Append to the log file at ``path`` (line buffered)."""
        stream = open(path, "a", buffering=1, encoding="utf-8", errors="replace")
        return cls(stream, debug_level, show_pid)

    def wanted(self, kind):
        return kind <= self.debug_level

    def printf(self, kind, message, word=None):
        """Write ``message`` (one or several lines) at severity ``kind``
        (``word`` replaces the severity word, e.g. "[warning]")."""
        if not self.wanted(kind):
            return
        prefix = timestamp()
        if self.show_pid:
            prefix += " [PID=%-5d]" % posix.getpid()
        if word is None:
            word = _KIND_WORDS.get(kind, "[debug]")
        for line in str(message).splitlines() or [""]:
            self.stream.write("%s %s %s\n" % (prefix, word, line))
        self.stream.flush()

    def critical(self, message):
        self.printf(CRITICAL, message)

    def normal(self, message):
        self.printf(NORMAL, message)

    def warning(self, message):
        """Something unusual but not fatal: shown at normal verbosity as "[warning]"."""
        self.printf(NORMAL, message, "[warning]")

    def debug(self, message):
        self.printf(DEBUG, message)


class SchedLog(MessageLog):
    """The scheduler's log (BOINC's SCHED_MSG_LOG): no word for normal lines,
    the process id on every line, and an indent level.

    ::

        2026-11-22 08:05:30.3392 UTC [PID=2298 ]   Request: [USER#1] [HOST#1] ...
        2026-11-22 08:05:30.3428 UTC [PID=2298 ]    Sending reply to [HOST#1]: ...

    Lines are kept in memory and written with one ``write`` by ``flush()``,
    so CGI processes running at once append whole requests, never interleaved
    lines.  ``buffer_size`` is config.xml's <scheduler_log_buffer> (BOINC's
    setvbuf of stderr to that many bytes, fully buffered): once that much is
    held it goes out in blocks of that size, as stdio writes a full buffer;
    0 writes every line at once (BOINC's stderr left unbuffered); None (the
    default, for tests) holds everything until ``flush()``.
    """

    _WORDS = {CRITICAL: "[CRITICAL]", NORMAL: "", DEBUG: "[debug]"}

    def __init__(self, stream=None, debug_level=3, pid=None, buffer_size=None):
        super().__init__(stream, debug_level, show_pid=True)
        self.pid = posix.getpid() if pid is None else pid
        self.indent = 0
        self.buffer_size = buffer_size
        self.buf = bytearray()

    @classmethod
    def open(cls, path, debug_level=3, pid=None, buffer_size=None):
        """Append to ``path`` (raw, unbuffered: this class does the buffering)."""
        stream = open(path, "ab", buffering=0)
        return cls(stream, debug_level, pid, buffer_size)

    def printf(self, kind, message, word=None):
        if kind > self.debug_level:
            return
        if word is None:
            word = self._WORDS.get(kind, "[debug]")
        prefix = "%s [PID=%-5d] %s%s " % (timestamp(), self.pid, word, " " * self.indent)
        for line in str(message).splitlines() or [""]:
            self.buf += (prefix + line + "\n").encode("utf-8", "replace")
        size = self.buffer_size
        if size is not None and len(self.buf) >= size:
            if size <= 0:
                self.flush()
            else:
                # whole buffers out, the rest kept (a line may straddle two)
                n = len(self.buf) - len(self.buf) % size
                self._write(bytes(self.buf[:n]))
                del self.buf[:n]

    def flush(self):
        """Write the buffered text (one write call) and forget it."""
        if not self.buf:
            return
        data = bytes(self.buf)
        self.buf.clear()
        self._write(data)

    def _write(self, data):
        stream = self.stream
        try:
            if "b" in getattr(stream, "mode", ""):
                stream.write(data)
            else:
                stream.write(data.decode("utf-8", "replace"))
                stream.flush()
        except (OSError, ValueError):
            pass

    def fileno(self):
        """The log file's descriptor (what it is, for a process that keeps it)."""
        return self.stream.fileno()

    def close(self):
        self.flush()
        if self.stream not in (sys.stderr, sys.stdout):
            try:
                self.stream.close()
            except OSError:
                pass
