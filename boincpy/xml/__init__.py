"""BOINC's XML text conventions shared by the scheduler, the web pages, the archives and the dumps.

:func:`xml_escape` is boincpy's one escaper, :func:`xml_unescape` its one
unescaper (BOINC's, on the scheduler request's bytes and on template text): every value from a client, a
volunteer or an operator that goes into XML (scheduler replies, upload
replies, web RPC replies, config.xml, templates) or HTML (the pages go through
:mod:`boincpy.web.markup`, which calls it) is escaped here.

Kept import-free: the scheduler CGI loads it on every request.
"""

# How deep elements may nest in a document from outside (a scheduler request,
# config.xml): no writer nests this deep, and deeper is refused, with the
# line, before a recursive reader exhausts Python's stack.
MAX_DEPTH = 64


def _boinc_bytes(data):
    """BOINC's xml_escape (lib/parse.cpp) on bytes."""
    out = bytearray()
    i, n = 0, len(data)
    while i < n:
        x = data[i]
        if x == 0x3C:
            out += b"&lt;"
        elif x == 0x26:
            out += b"&amp;"
        elif x > 127:
            out += b"&#%d;" % x
        elif x < 32:
            if x in (9, 10, 13):
                out += b"&#%d;" % x
        elif x == 0x5D and data[i:i + 3] == b"]]>":
            out += b"]]&gt;"
            i += 3
            continue
        else:
            out.append(x)
        i += 1
    return bytes(out)


def xml_escape(value, quote=False, boinc=False):
    """``value`` made safe as XML character data (or, with ``quote``, as an
    attribute value or HTML text).

    * default: ``&`` ``<`` ``>`` as entities; ``quote`` adds ``"`` and ``'``
      (``&quot;`` ``&#039;``, PHP's htmlspecialchars with ENT_QUOTES);
    * ``boinc`` (for what a BOINC client or BOINC's own tools read: scheduler
      replies, db_dump, db_purge archives), or ``value`` given as bytes: BOINC's
      xml_escape byte by byte -- ``<`` ``&`` and bytes above 127 as entities,
      tab/LF/CR as ``&#N;``, other control bytes dropped, ``]]>`` as
      ``]]&gt;``.  Bytes in, bytes out; str in, str out (its UTF-8 bytes
      escaped; plain text passes unchanged).

    ``None`` is "", other non-text values their str().
    """
    if isinstance(value, (bytes, bytearray)):
        return _boinc_bytes(bytes(value))
    if value is None:
        return ""
    text = value if isinstance(value, str) else str(value)
    if boinc:
        if (text.isascii() and text.isprintable() and "<" not in text and "&" not in text
                and "]]>" not in text):
            return text
        return _boinc_bytes(text.encode("utf-8")).decode("ascii")
    if not text.isprintable():
        # control characters other than tab, LF, CR are not allowed in XML at all
        text = "".join(c for c in text if c >= " " or c in "\t\n\r" or c.isprintable())
    if "&" in text:
        text = text.replace("&", "&amp;")
    if "<" in text:
        text = text.replace("<", "&lt;")
    if ">" in text:
        text = text.replace(">", "&gt;")
    if quote:
        if '"' in text:
            text = text.replace('"', "&quot;")
        if "'" in text:
            text = text.replace("'", "&#039;")
    return text


_NAMED = (("&lt;", "<"), ("&gt;", ">"), ("&quot;", '"'), ("&apos;", "'"), ("&amp;", "&"),
          ("&#xD;", "\r"), ("&#xd;", "\r"), ("&#xA;", "\n"), ("&#xa;", "\n"))
_NAMED_BYTES = tuple((e.encode(), c.encode()) for e, c in _NAMED)


def xml_unescape(value):
    """BOINC's xml_unescape (lib/parse.cpp), on str or bytes: the five named
    entities, ``&#xD;``/``&#xA;``, and ``&#NNN;`` (decimal, below 256) as one
    character -- one byte, for bytes; anything else is kept as written."""
    is_bytes = value.__class__ is bytes
    if is_bytes:
        if value.find(b"&") < 0:        # most element texts (find: boincpy.xml.scan)
            return value
        amp, num, semi, named = b"&", b"&#", b";", _NAMED_BYTES
    else:
        if "&" not in value:
            return value
        amp, num, semi, named = "&", "&#", ";", _NAMED
    out = []
    i = 0
    while True:
        j = value.find(amp, i)
        if j < 0:
            out.append(value[i:])
            return value[:0].join(out)
        out.append(value[i:j])
        for entity, char in named:
            if value.startswith(entity, j):
                out.append(char)
                i = j + len(entity)
                break
        else:
            k = value.find(semi, j + 2) if value.startswith(num, j) else -1
            digits = value[j + 2:k] if k > 0 else value[:0]
            if digits.isdigit() and digits.isascii() and int(digits) < 256:
                out.append(bytes((int(digits),)) if is_bytes else chr(int(digits)))
                i = k + 1
            elif value.startswith(num, j):
                out.append(num)
                i = j + 2
            else:
                out.append(amp)
                i = j + 1


_HEX = "0123456789abcdefABCDEF"
_OCT = "01234567"
_DEC = "0123456789"


def parse_bool(text, empty_element=False):
    """BOINC's parse_bool (lib/parse.cpp, XML_PARSER::parse_bool), the one
    reader of its booleans: ``<tag/>`` (``empty_element``) is true; otherwise
    the element's text, blanks stripped, must be a whole C integer as
    strtol(..., 0) reads it (decimal, ``0x`` hex, leading-0 octal, a sign):
    true if it is not zero.  Anything else, and no text at all, is not a
    boolean to BOINC: None, so the caller keeps its default.  ``text``: str or
    bytes."""
    if empty_element:
        return True
    if text is None:
        return None
    if text.__class__ is bytes:
        text = text.decode("latin-1")
    s = text.strip()
    if s[:1] in ("+", "-") and s:
        s = s[1:]
    if s[:2] in ("0x", "0X"):
        digits, allowed = s[2:], _HEX
    elif s[:1] == "0":
        digits, allowed = s[1:], _OCT
        if not digits:
            return False
    else:
        digits, allowed = s, _DEC
    if not digits or any(c not in allowed for c in digits):
        return None
    return digits.strip("0") != ""
