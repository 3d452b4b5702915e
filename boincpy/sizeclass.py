"""Job size classes: the ``size_census_APPNAME`` file and the host's class.

An app with ``n_size_classes`` > 1 splits its jobs into that many classes
(workunit.size_class 0 = smallest).  ``bin/size_census`` (BOINC's
html/ops/size_census.php) writes, for each such app, the ``n_size_classes - 1``
boundaries between the classes' host speeds to ``PROJECT/size_census_APPNAME``,
one per line, printed as PHP's ``%e`` prints them (``4.395179e+7``: six
decimals, exponent without leading zeros).  The feeder reads the file into
the app's row in the job array (SCHED_SHMEM::scan_tables), so the scheduler
CGI never opens it; the scheduler then puts a host of effective speed ``es``
in the first class whose boundary is above ``es`` (:func:`host_size_class`).

Standard library only: the feeder imports this.
"""

from boincpy.cnum import atof
from boincpy.errors import BoincpyError

CENSUS_PREFIX = "size_census_"

# html/inc/util_basic.inc is_gpu(): substrings of a GPU plan class
GPU_PLAN_CLASS_WORDS = ("ati", "cuda", "nvidia", "intel_gpu", "apple_gpu")


class CensusFileError(BoincpyError):
    """The census file is missing or has fewer lines than the app needs."""


def census_file_name(app_name):
    """``size_census_APPNAME``, relative to the project directory."""
    return CENSUS_PREFIX + app_name


def php_e(x):
    """``x`` as PHP's ``sprintf("%e")`` prints it: ``1.234560e+9``, ``0.000000e+0``."""
    mantissa, exponent = ("%.6e" % x).split("e")
    sign, digits = exponent[0], exponent[1:].lstrip("0") or "0"
    return "%se%s%s" % (mantissa, sign, digits)



def is_gpu_plan_class(plan_class):
    """True for a plan class size_census treats as a GPU one (PHP is_gpu())."""
    return any(w in plan_class for w in GPU_PLAN_CLASS_WORDS)


def census_quantiles(speeds, n_size_classes):
    """The ``n_size_classes - 1`` class boundaries of ``speeds`` (FLOPS): after
    sorting, element ``int(i * n / n_size_classes)`` for i = 1 .. n_size_classes-1.
    With no speeds at all PHP reads a missing array element, which prints as 0."""
    ordered = sorted(speeds)
    n = len(ordered)
    out = []
    for i in range(1, n_size_classes):
        k = (i * n) // n_size_classes
        out.append(ordered[k] if k < n else 0.0)
    return out


def census_text(quantiles):
    """The file's contents: one boundary per line."""
    return "".join(php_e(q) + "\n" for q in quantiles)


def read_census(path, app_name, n_size_classes):
    """The first ``n_size_classes - 1`` numbers of the census file at ``path``.

    Raises :class:`CensusFileError` with the message BOINC's feeder logs when
    the file can't be opened or has too few lines; a line that is not a number
    reads as 0 (atof), as in BOINC."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = f.readlines()
    except OSError as exc:
        raise CensusFileError("Missing size census file for app %s (%s: %s)"
                              % (app_name, path, exc.strerror)) from None
    want = n_size_classes - 1
    if len(lines) < want:
        raise CensusFileError("Size census file for app %s is too short (%s: %d line%s, "
                              "need %d)" % (app_name, path, len(lines),
                                            "" if len(lines) == 1 else "s", want))
    return [atof(line) for line in lines[:want]]


def host_size_class(quantiles, n_size_classes, effective_speed):
    """The host's size class (sched_score.cpp get_size_class): the first class
    whose upper boundary exceeds the host's speed, else the largest."""
    for i in range(n_size_classes - 1):
        if i < len(quantiles) and effective_speed < quantiles[i]:
            return i
    return n_size_classes - 1
