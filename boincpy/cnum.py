"""Numbers from clients, read one way: as BOINC's C and PHP code reads them,
except that a value that is not finite (``inf``, ``nan``, or too large for a
double) is never a number here.

* :func:`atoi` / :func:`atof`: C's, the number a string starts with, 0 when
  there is none (keyword ids, result-name suffixes, crypt_prog arguments,
  size census files, upload certificates' sizes);
* :func:`strtol` / :func:`strtod`: a whole element's text as BOINC's
  ``XML_PARSER::parse_int`` / ``parse_double`` read it (``strtol(s, 0)``:
  0x hex and leading-0 octal; an int outside C's ``int`` is refused);
  ``None`` when BOINC would not take it (scheduler requests, the upload
  handler's header, templates);
* :func:`php_numeric`: PHP's ``is_numeric`` for web parameters.

Standard library only, and no ``re`` until a function needs it: the
scheduler CGI imports this on every request (``re`` costs it ~7 ms).  Not
even ``math``, for ``isfinite`` alone (:func:`is_finite`).
"""

INT_MIN, INT_MAX = -2 ** 31, 2 ** 31 - 1
_INF = float("inf")


def is_finite(x):
    """``math.isfinite``: False for both infinities and nan (every comparison
    with nan is False).  The scheduler CGI parses its request with this
    module, and importing math cost each request 170,000 instructions."""
    return -_INF < x < _INF

_PATTERNS = {
    # leading white space, an optional sign, digits
    "int": r"\s*([-+]?\d+)",
    # PHP's is_numeric: decimal with optional sign, fraction, exponent, white space around
    "php": r"^[ \t\n\r\v\f]*[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?[ \t\n\r\v\f]*$",
}
_compiled = {}


def _match(kind, text):
    pattern = _compiled.get(kind)
    if pattern is None:
        import re
        pattern = _compiled[kind] = re.compile(_PATTERNS[kind])
    return pattern.match(text)


def atoi(text):
    """C's atoi(): the integer ``text`` starts with (after white space), 0 if none."""
    m = _match("int", text or "")
    return int(m.group(1)) if m else 0


def atof(text):
    """C's atof(): the number ``text`` starts with (after white space), 0.0 if
    none or if it is too large for a double.  Read without ``re`` (global
    preferences are read this way on every scheduler request)."""
    s = text or ""
    n = len(s)
    i = 0
    while i < n and s[i] in " \t\n\r\v\f":
        i += 1
    start = i
    if i < n and s[i] in "+-":
        i += 1
    digits = i
    while i < n and "0" <= s[i] <= "9":
        i += 1
    whole = i - digits
    if i < n and s[i] == ".":
        i += 1
        frac = i
        while i < n and "0" <= s[i] <= "9":
            i += 1
        if not whole and i == frac:
            return 0.0
    elif not whole:
        return 0.0
    if i < n and s[i] in "eE":
        j = i + 1
        if j < n and s[j] in "+-":
            j += 1
        k = j
        while k < n and "0" <= s[k] <= "9":
            k += 1
        if k > j:
            i = k
    if i - start > 400:
        return 0.0
    x = float(s[start:i])
    return x if is_finite(x) else 0.0


def strtol(text, lo=INT_MIN, hi=INT_MAX):
    """strtol(text, 0) that must consume the whole (stripped) text: 0x hex,
    leading-0 octal, optional sign.  None when BOINC's parser would reject it
    or the value lies outside [lo, hi] (C's int by default)."""
    s = text.strip() if text else ""
    sign = 1
    if s[:1] in ("+", "-"):
        sign = -1 if s[0] == "-" else 1
        s = s[1:]
    if len(s) > 40:
        return None                 # far outside any column; int() of it would be slow
    try:
        if s[:2] in ("0x", "0X"):
            if not (s[2:] and s[2:].isalnum() and s[2:].isascii()):
                return None
            value = sign * int(s[2:], 16)
        elif not (s.isdigit() and s.isascii()):
            return None
        elif len(s) > 1 and s[0] == "0":
            value = sign * int(s, 8)
        else:
            value = sign * int(s)
    except ValueError:
        return None
    return value if lo <= value <= hi else None


def strtod(text):
    """strtod that must consume the whole (stripped) text; None when BOINC's
    parser would reject it or the value is not finite (inf, nan, overflow)."""
    s = text.strip() if text else ""
    if not s or "_" in s or not s.isascii() or len(s) > 400:
        return None
    try:
        x = float(s)
    except ValueError:
        return None
    return x if is_finite(x) else None


def php_numeric(text, finite=True):
    """The number in ``text`` if PHP's is_numeric() accepts it (decimal,
    optional sign, fraction and exponent, surrounding white space), else None;
    a value too large for a double is None too unless ``finite`` is False (for
    "is this text a number at all")."""
    if text is None or len(text) > 400 or not _match("php", text):
        return None
    x = float(text)
    return x if finite is False or is_finite(x) else None


def int64(number):
    """A finite number as an int if it fits a BIGINT column (what an id or a
    count from a web form may be), else None."""
    if number is None or not is_finite(number):
        return None
    value = int(number)
    return value if -2 ** 63 <= value < 2 ** 63 else None


def php_truthy(value):
    """PHP's truthiness (``if ($value)``): false for None, False, 0, 0.0, ""
    and "0" only (a request parameter "0.0" is true, as in PHP), unlike
    BOINC's XML booleans (boincpy.xml.parse_bool)."""
    if value is None or value is False:
        return False
    if isinstance(value, str):
        return value != "" and value != "0"
    return value != 0
