"""BOINC's XML text conventions shared by the scheduler, the web pages, the archives and the dumps.

:func:`xml_escape` is boincpy's one escaper: every value from a client, a
volunteer or an operator that goes into XML (scheduler replies, upload
replies, web RPC replies, config.xml, templates) or HTML (the pages go through
:mod:`boincpy.web.markup`, which calls it) is escaped here.

Kept import-free: the scheduler CGI loads it on every request.
"""


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
