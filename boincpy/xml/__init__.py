"""BOINC's XML text conventions shared by the scheduler, the archives and the dumps.

Kept import-free: the scheduler CGI loads it on every request.
"""


def xml_escape_bytes(data):
    """BOINC's xml_escape (lib/parse.cpp), byte by byte: ``<`` ``&`` and bytes
    above 127 as entities, tab/LF/CR as ``&#N;``, other control bytes dropped,
    ``]]>`` as ``]]&gt;``."""
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


def xml_escape(text):
    """:func:`xml_escape_bytes` of a str's UTF-8 bytes, as str (plain text passes unchanged)."""
    if (text.isascii() and text.isprintable() and "<" not in text and "&" not in text
            and "]]>" not in text):
        return text
    return xml_escape_bytes(text.encode("utf-8")).decode("ascii")
