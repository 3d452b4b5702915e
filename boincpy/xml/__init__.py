"""BOINC's XML text conventions shared by the scheduler, the archives and the dumps.

Kept import-free: the scheduler CGI loads it on every request.
"""


def xml_escape_bytes(data, *, keep_high=False):
    """BOINC's xml_escape (lib/parse.cpp), byte by byte: ``<`` ``&`` and bytes
    above 127 as entities, tab/LF/CR as ``&#N;``, other control bytes dropped,
    ``]]>`` as ``]]&gt;``.  With ``keep_high`` bytes above 127 pass unchanged
    (see :func:`xml_escape_utf8`)."""
    out = bytearray()
    i, n = 0, len(data)
    while i < n:
        x = data[i]
        if x == 0x3C:
            out += b"&lt;"
        elif x == 0x26:
            out += b"&amp;"
        elif x > 127:
            if keep_high:
                out.append(x)
            else:
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


def xml_escape(text):
    """:func:`xml_escape_bytes` of a str's UTF-8 bytes, as str (plain text passes unchanged)."""
    if (text.isascii() and text.isprintable() and "<" not in text and "&" not in text
            and "]]>" not in text):
        return text
    return xml_escape_bytes(text.encode("utf-8")).decode("ascii")


def xml_escape_utf8(text):
    """:func:`xml_escape` for readers that decode ``&#N;`` as the Unicode
    character N (PHP's SimpleXML, lxml, ElementTree: the remote submission
    handlers): the same escapes, but non-ASCII characters stay UTF-8, since
    BOINC's ``&#195;&#169;`` for "\u00e9" reaches such a reader as two characters."""
    if (text.isascii() and text.isprintable() and "<" not in text and "&" not in text
            and "]]>" not in text):
        return text
    return xml_escape_bytes(text.encode("utf-8"), keep_high=True).decode("utf-8")
