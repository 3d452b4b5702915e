"""BOINC's XML dialect as lib/parse.cpp's XML_PARSER reads it: the one reader
of the hot path (what the scheduler CGI and the upload handler import per
request).

:class:`Scanner` tokenizes bytes the way XML_PARSER does -- text ends at the
next ``<``, attributes are dropped, comments skipped, CDATA taken verbatim --
for the scheduler request's recursive descent (:mod:`boincpy.sched.request`)
and plan_class_spec.xml.  The functions below it read one element out of a
small document (a user's preferences, a workunit's xml_doc, a GPU's
description) by a scan for its tags, as BOINC's parse_str/parse_int/
parse_bool(buf, tag) do; they take str or bytes and answer in the same type.

Import-free but for :mod:`boincpy.xml`: no ``re`` (~7 ms for a CGI process)
and no lxml (~10 ms); everything off the hot path reads XML with
:mod:`boincpy.xml.tree` (lxml).

On this path a search for bytes within bytes is written ``find(x) >= 0``, not
``x in data``: CPython 3.11's ``in`` on bytes first tries the needle as an
integer and raises and clears a TypeError, which made it three times slower
(175 ns against 53) and, at some 65 tests a scheduler request, 5% of a
persistent request's instructions.
"""

from boincpy.xml import parse_bool, xml_unescape

TAG, DATA, CDATA = 1, 2, 3


class LineCounter:
    """1-based line numbers of offsets in a text (str or bytes) read from
    start to end: each counts the newlines from the furthest offset asked
    for so far, so a reader that takes the line of every element stays
    linear (counting from the start each time, a scheduler request of 16,000
    results took 13 s to parse, a template of 32,000 elements 2.8 s).  An
    earlier offset (where an element opened, for an error) is counted from
    the start."""

    __slots__ = ("text", "newline", "none", "offset", "line")

    def __init__(self, text):
        self.text = text
        self.newline, self.none = ("\n", "") if text.__class__ is str else (b"\n", b"")
        self.offset, self.line = 0, 1

    def at(self, offset):
        start, line = self.offset, self.line
        if offset < start:
            start, line = 0, 1
        # what count(newline, start, offset) gives, several times faster on
        # bytes (their count of one byte is slow)
        segment = self.text[start:offset]
        line += len(segment) - len(segment.replace(self.newline, self.none))
        if offset >= self.offset:
            self.offset, self.line = offset, line
        return line


class Scanner:
    """Tokens of BOINC's dialect, as its XML_PARSER sees them, over bytes.

    ``next()`` returns ``(kind, value, start)``: kind TAG with the tag name
    (attributes dropped, every ``/`` kept: ``x/`` is an empty element,
    ``/x`` an end tag; ``?xml`` and ``!DOCTYPE`` as they come), DATA with the
    stripped raw text, CDATA with the stripped raw contents; ``start`` is the
    offset of the token.  None at EOF (an unterminated comment, CDATA or tag
    is EOF too).
    """

    __slots__ = ("d", "pos", "n", "lines")

    def __init__(self, data):
        self.d = data
        self.pos = 0
        self.n = len(data)
        self.lines = LineCounter(data)      # every <result> takes its line

    def line(self, offset=None):
        """1-based line number of ``offset`` (default: the current position)."""
        return self.lines.at(self.pos if offset is None else offset)

    def next(self):
        d = self.d
        pos = self.pos
        while True:
            lt = d.find(b"<", pos)
            if lt < 0:
                self.pos = self.n
                return None                     # trailing text is EOF too
            chunk = d[pos:lt]
            if chunk and not chunk.isspace():
                self.pos = lt
                return (DATA, chunk.strip(), pos + (len(chunk) - len(chunk.lstrip())))
            if d.startswith(b"!--", lt + 1):
                end = d.find(b"-->", lt + 4)
                if end < 0:
                    self.pos = self.n
                    return None
                pos = end + 3
                continue
            if d.startswith(b"![CDATA[", lt + 1):
                end = d.find(b"]]>", lt + 9)
                if end < 0:
                    self.pos = self.n
                    return None
                self.pos = end + 3
                return (CDATA, d[lt + 9:end].strip(), lt)
            gt = d.find(b">", lt + 1)
            if gt < 0:
                self.pos = self.n
                return None
            self.pos = gt + 1
            raw = d[lt + 1:gt]
            parts = raw.split(None, 1)
            if not parts:
                return (TAG, "", lt)
            name = parts[0]
            if len(parts) > 1 and parts[1].find(b"/") >= 0:
                name += b"/" * parts[1].count(b"/")
            return (TAG, name.decode("latin-1"), lt)

    def raw_until(self, close):
        """Raw bytes up to the literal ``close`` (which is consumed); None if absent."""
        end = self.d.find(close, self.pos)
        if end < 0:
            return None
        raw = self.d[self.pos:end]
        self.pos = end + len(close)
        return raw


def leaf_list(data):
    """(tag, text) of the leaves in ``data``, at any depth, in order:
    ``<tag>text</tag>`` gives its text (stripped, unescaped; CDATA
    verbatim), ``<tag/>`` None.  Elements holding elements give their
    leaves, not themselves; comments are skipped.  ``data`` bytes or str,
    the texts in its type; tags are str.  By a split at each ``<``, not
    tokens (a GPU's description is read on each request that has one):
    within 2x of a compiled regular expression, without importing re.
    Text with comments or CDATA takes Scanner tokens; the two agree but on a
    ``<`` left without its ``>`` (markup no writer makes)."""
    is_str = data.__class__ is str
    if is_str:
        if "<!" in data:
            return [(tag, None if text is None else text.decode("utf-8", "replace"))
                    for tag, text in _leaf_list_finds(data.encode("utf-8"))]
        lt, gt_, slash, amp, q = "<", ">", "/", "&", "/?"
    else:
        if data.find(b"<!") >= 0:
            return _leaf_list_finds(data)
        lt, gt_, slash, amp, q = b"<", b">", b"/", b"&", b"/?"
    out = []
    parts = data.split(lt)
    n = len(parts)
    i = 1
    garbage = False               # a "<" with no ">" before the next "<"
    while i < n:
        head, gt, text = parts[i].partition(gt_)
        i += 1
        if garbage or not gt:
            # the Scanner reads up to the next ">" as one tag, holding "<": no leaf
            garbage = not gt
            continue
        if not head or q.find(head[:1]) >= 0 or head.isspace():
            continue
        words = head.split(None, 1)
        name = words[0]
        if name[-1:] == slash or (len(words) > 1 and words[1].find(slash) >= 0):
            name = name.rstrip(slash)                  # <tag/>, <tag />, <tag a="1"/>
            if name:
                out.append((name if is_str else name.decode("latin-1"), None))
            continue
        if i < n and (parts[i].startswith(slash + name + gt_)
                      or parts[i].partition(gt_)[0].split() == [slash + name]):
            text = text.strip()
            out.append((name if is_str else name.decode("latin-1"),
                        xml_unescape(text) if text.find(amp) >= 0 else text))
            i += 1
    return out


def _leaf_list_finds(data):
    # leaf_list by Scanner tokens, for text with comments or CDATA (whose
    # insides may hold "<")
    out = []
    sc = Scanner(data)
    prev = None                   # the start tag just read, if the last token
    text = b""
    while True:
        tok = sc.next()
        if tok is None:
            return out
        kind, value, _ = tok
        if kind != TAG:
            if prev is not None:
                text = value if kind == CDATA else xml_unescape(value)
            continue
        if not value.strip("/") or "<" in value:
            prev = None                 # "</>", "<<x>": not a tag to leaf_list either
        elif value.endswith("/"):
            out.append((value.rstrip("/"), None))
            prev = None
        elif value[:1] == "/":
            if prev is not None and value[1:] == prev:
                out.append((prev, text))
            prev = None
        elif value[:1] in ("?", "!"):
            prev = None
        else:
            prev, text = value, b""


def leaves(data):
    """{tag: text} of :func:`leaf_list`, the first of each tag winning."""
    out = {}
    for tag, text in leaf_list(data):
        out.setdefault(tag, text)
    return out


# -- one element of a small document (BOINC's parse_str(buf, tag) and kin) ---------------

def _lit(text, s):
    return s if text.__class__ is str else s.encode()


def _blocks(text, tag):
    start, end = _lit(text, "<%s>" % tag), _lit(text, "</%s>" % tag)
    pos = 0
    while True:
        p = text.find(start, pos)
        if p < 0:
            return
        p += len(start)
        q = text.find(end, p)
        if q < 0:
            return
        yield text[p:q]
        pos = q + len(end)


def blocks(text, tag):
    """The raw insides of each ``<tag>...</tag>`` in ``text``, in order (the
    first ``</tag>`` after a ``<tag>`` ends it, as BOINC's scans do)."""
    return list(_blocks(text, tag))


def block(text, tag):
    """The raw inside of the first ``<tag>...</tag>`` in ``text``; None if none."""
    return next(_blocks(text, tag), None)


def _leaf_texts(text, tag):
    lt = _lit(text, "<")
    return (xml_unescape(b.strip()) for b in _blocks(text, tag) if b.find(lt) < 0)


def leaf_texts(text, tag):
    """The text (stripped, unescaped) of each ``<tag>text</tag>`` in ``text``
    whose text holds no markup, in order."""
    return list(_leaf_texts(text, tag))


def leaf_text(text, tag):
    """The text (stripped, unescaped) of the first ``<tag>text</tag>`` in
    ``text`` whose text holds no markup; None if there is none."""
    return next(_leaf_texts(text, tag), None)


def has_empty(text, tag):
    """Whether ``text`` has the empty element ``<tag/>`` (or ``<tag />``)."""
    head = _lit(text, "<" + tag)
    close = _lit(text, "/>")
    pos = 0
    while True:
        p = text.find(head, pos)
        if p < 0:
            return False
        p += len(head)
        q = text.find(close, p)
        if q == p or (q > p and text[p:q].isspace()):
            return True
        pos = p


def flag(text, tag):
    """BOINC's parse_bool(buf, tag, b) on a small document: ``<tag/>`` is
    true, else the first ``<tag>text</tag>`` read by :func:`boincpy.xml.parse_bool`;
    False when neither is there (or the text is not a boolean)."""
    if text.find(_lit(text, "<" + tag)) < 0:   # the usual case: not there at all
        return False
    if has_empty(text, tag):
        return True
    return bool(parse_bool(leaf_text(text, tag)))
