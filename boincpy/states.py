"""BOINC's enumerations, with the numeric values the C++ server stores."""

from enum import IntEnum, IntFlag

INT_MAX = 2147483647  # transition_time meaning "never"


class ServerState(IntEnum):
    INACTIVE = 1
    UNSENT = 2
    IN_PROGRESS = 4
    OVER = 5


class Outcome(IntEnum):
    INIT = 0
    SUCCESS = 1
    COULDNT_SEND = 2
    CLIENT_ERROR = 3
    NO_REPLY = 4
    DIDNT_NEED = 5
    VALIDATE_ERROR = 6
    CLIENT_DETACHED = 7


class ClientState(IntEnum):
    NEW = 0
    FILES_DOWNLOADING = 1
    FILES_DOWNLOADED = 2
    COMPUTE_ERROR = 3
    FILES_UPLOADING = 4
    FILES_UPLOADED = 5
    ABORTED = 6
    UPLOAD_FAILED = 7


class ValidateState(IntEnum):
    INIT = 0
    VALID = 1
    INVALID = 2
    NO_CHECK = 3
    INCONCLUSIVE = 4
    TOO_LATE = 5


class FileDeleteState(IntEnum):
    INIT = 0
    READY = 1
    DONE = 2
    ERROR = 3


class AssimilateState(IntEnum):
    INIT = 0
    READY = 1
    DONE = 2


class WuError(IntFlag):
    COULDNT_SEND_RESULT = 1
    TOO_MANY_ERROR_RESULTS = 2
    TOO_MANY_SUCCESS_RESULTS = 4
    TOO_MANY_TOTAL_RESULTS = 8
    CANCELLED = 16
    NO_CANONICAL_RESULT = 32


class TransitionerFlags(IntFlag):
    TRANSITION_NONE = 1
    TRANSITION_NO_NEW_RESULTS = 2


class BatchState(IntEnum):
    INIT = 0
    IN_PROGRESS = 1
    COMPLETE = 2
    ABORTED = 3
    RETIRED = 4


class AssignType(IntEnum):
    NONE = 0
    HOST = 1
    USER = 2
    TEAM = 3
