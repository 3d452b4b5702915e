"""Numbers read as BOINC's C and PHP code reads them: ``atoi`` and ``atof``
take the number a string starts with and give 0 when there is none, where
Python's int() and float() would raise.  Used wherever boincpy must read a
value exactly as the C++ server does (keyword ids, result-name suffixes,
crypt_prog arguments, size census files).

Standard library only: the scheduler and the feeder import this.
"""

import re

# leading white space, an optional sign, digits
_LEADING_INT = re.compile(r"\s*([-+]?\d+)")
# the longest leading decimal number (strtod without hex or inf/nan)
_LEADING_NUMBER = re.compile(r"\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)")


def atoi(text):
    """C's atoi(): the integer ``text`` starts with (after white space), 0 if none."""
    m = _LEADING_INT.match(text or "")
    return int(m.group(1)) if m else 0


def atof(text):
    """C's atof(): the number ``text`` starts with (after white space), 0.0 if none."""
    m = _LEADING_NUMBER.match(text or "")
    return float(m.group(1)) if m else 0.0
