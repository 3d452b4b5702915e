"""BOINC's words for the database's numbers, as its web pages print them.

States read ``Word [n]`` (``Over [5]``, ``Computation error [3]``), times
``22 Nov 2026, 8:22:38 UTC``, error masks as the names of their bits and
exit statuses by their ERR_/EXIT_ names (boincpy.error_numbers).
"""

import time

from boincpy.error_numbers import exit_status_name, exit_status_text
from boincpy.states import (INT_MAX, AssimilateState, ClientState, FileDeleteState,
                            Outcome, ServerState, ValidateState, WuError)

# (value, word) in display order; the words are those of BOINC's result.inc.
SERVER_STATES = ((ServerState.INACTIVE, "Inactive"), (ServerState.UNSENT, "Unsent"),
                 (ServerState.IN_PROGRESS, "In progress"), (ServerState.OVER, "Over"))
OUTCOMES = ((Outcome.INIT, "---"), (Outcome.SUCCESS, "Success"),
            (Outcome.COULDNT_SEND, "Couldn't send"),
            (Outcome.CLIENT_ERROR, "Computation error"), (Outcome.NO_REPLY, "No reply"),
            (Outcome.DIDNT_NEED, "Didn't need"),
            (Outcome.VALIDATE_ERROR, "Validate error"),
            (Outcome.CLIENT_DETACHED, "Abandoned"))
CLIENT_STATES = ((ClientState.NEW, "New"), (ClientState.FILES_DOWNLOADING, "Downloading"),
                 (ClientState.FILES_DOWNLOADED, "Processing"),
                 (ClientState.COMPUTE_ERROR, "Compute error"),
                 (ClientState.FILES_UPLOADING, "Uploading"),
                 (ClientState.FILES_UPLOADED, "Done"),
                 (ClientState.ABORTED, "Aborted by user"),
                 (ClientState.UPLOAD_FAILED, "Upload failed"))
VALIDATE_STATES = ((ValidateState.INIT, "Initial"), (ValidateState.VALID, "Valid"),
                   (ValidateState.INVALID, "Invalid"),
                   (ValidateState.NO_CHECK, "Workunit error - check skipped"),
                   (ValidateState.INCONCLUSIVE, "Checked, but no consensus yet"),
                   (ValidateState.TOO_LATE, "Task was reported too late to validate"))
FILE_DELETE_STATES = ((FileDeleteState.INIT, "Initial"),
                      (FileDeleteState.READY, "Ready to delete"),
                      (FileDeleteState.DONE, "Deleted"),
                      (FileDeleteState.ERROR, "Delete Error"))
ASSIMILATE_STATES = ((AssimilateState.INIT, "Initial"),
                     (AssimilateState.READY, "Ready to assimilate"),
                     (AssimilateState.DONE, "Assimilated"))
ERROR_MASK_BITS = ((WuError.COULDNT_SEND_RESULT, "Couldn't send result"),
                   (WuError.TOO_MANY_ERROR_RESULTS, "Too many errors (may have bug)"),
                   (WuError.TOO_MANY_SUCCESS_RESULTS, "Too many results (may be nondeterministic)"),
                   (WuError.TOO_MANY_TOTAL_RESULTS, "Too many total results"),
                   (WuError.CANCELLED, "Cancelled"),
                   (WuError.NO_CANONICAL_RESULT, "No canonical result"))

# Enum columns of each table -> their (value, word) list.
ENUM_COLUMNS = {
    "server_state": SERVER_STATES, "outcome": OUTCOMES, "client_state": CLIENT_STATES,
    "validate_state": VALIDATE_STATES, "file_delete_state": FILE_DELETE_STATES,
    "assimilate_state": ASSIMILATE_STATES,
}


def word(column, value):
    """BOINC's word for an enum column's value (``Unknown`` if out of range)."""
    for v, w in ENUM_COLUMNS[column]:
        if int(v) == int(value):
            return w
    return "Unknown"


def state_text(column, value):
    """``Word [n]``."""
    return "%s [%d]" % (word(column, value), int(value))


def error_mask_text(mask):
    """Names of the bits set in a workunit's error_mask ("" for 0)."""
    mask = int(mask)
    names = [w for bit, w in ERROR_MASK_BITS if mask & int(bit)]
    rest = mask & ~sum(int(b) for b, _ in ERROR_MASK_BITS)
    if rest:
        names.append("unknown bits 0x%x" % rest)
    return ", ".join(names)


def exit_name(code):
    """BOINC's name of an exit status, or what kind of code it is."""
    name = exit_status_name(code)
    if name:
        return name
    return "success" if int(code) == 0 else "the application's own exit code"


def exit_text(code):
    """``-186 (0xffffff46) ERR_RESULT_DOWNLOAD``."""
    return exit_status_text(code)


def time_text(t, never="---"):
    """``22 Nov 2026, 8:22:38 UTC``; 0 -> ``never``; INT_MAX -> ``never (INT_MAX)``."""
    t = int(t or 0)
    if t <= 0:
        return never
    if t >= INT_MAX:
        return "never (%d)" % INT_MAX
    tm = time.gmtime(t)
    return "%d %s, %d:%s UTC" % (tm.tm_mday, time.strftime("%b %Y", tm), tm.tm_hour,
                                 time.strftime("%M:%S", tm))


def age_text(seconds):
    """A duration in words: ``3 d 4 h``, ``5 h 2 min``, ``40 s``."""
    seconds = int(seconds)
    sign = "-" if seconds < 0 else ""
    seconds = abs(seconds)
    d, rem = divmod(seconds, 86400)
    h, rem = divmod(rem, 3600)
    m, s = divmod(rem, 60)
    if d:
        return "%s%d d %d h" % (sign, d, h)
    if h:
        return "%s%d h %d min" % (sign, h, m)
    if m:
        return "%s%d min %d s" % (sign, m, s)
    return "%s%d s" % (sign, s)


def delay_text(seconds):
    """``604800 = 7 days 0 hours 0 min 0 sec`` as on BOINC's workunit page."""
    seconds = int(seconds)
    d, rem = divmod(seconds, 86400)
    h, rem = divmod(rem, 3600)
    m, s = divmod(rem, 60)
    return "%d = %d days %d hours %d min %d sec" % (seconds, d, h, m, s)


def version_text(version_num):
    """``1.00`` from 100."""
    return "%d.%02d" % divmod(int(version_num), 100)


def client_version_text(n):
    """A client version number M*10000+m*100+r as ``7.20.5`` (0 -> "none")."""
    n = int(n or 0)
    if not n:
        return "none"
    return "%d.%d.%d" % (n // 10000, (n // 100) % 100, n % 100)


def bytes_text(n):
    """``476.84 MB`` style sizes (binary multiples, as BOINC's pages)."""
    n = float(n or 0)
    for unit in ("bytes", "KB", "MB", "GB", "TB"):
        if abs(n) < 1024 or unit == "TB":
            return ("%d %s" % (n, unit)) if unit == "bytes" else ("%.2f %s" % (n, unit))
        n /= 1024


ANON_VERSIONS = {-1: "Anonymous platform: unknown type", -2: "Anonymous platform: CPU",
                 -3: "Anonymous platform: NVIDIA GPU", -4: "Anonymous platform: AMD GPU",
                 -5: "Anonymous platform: Intel GPU", -6: "Anonymous platform: Apple GPU"}
