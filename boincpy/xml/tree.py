"""lxml, the one tree API for BOINC's documents off the hot path (daemons'
spec files, tools, the web RPCs, the test clients).

:func:`parse` reads a document the same way for every caller: no entity
expansion, no DTD or network access, comments and processing instructions
dropped; ``recover`` for what BOINC itself writes loosely (a client's state
file, a reply with bad bytes), which libxml2 then reads as far as it can.
A document it can't read raises :class:`XmlError` with the line.  The
leaf readers below take BOINC's rules: text stripped, booleans by
:func:`boincpy.xml.parse_bool`.

The scheduler CGI and the upload handler never import this (lxml costs a
process ~10 ms): they read with :mod:`boincpy.xml.scan`.  The one other
exception is the scientist's side of remote submission
(:mod:`boincpy.submit.client`, :mod:`boincpy.submit.gahp`,
:mod:`boincpy.tools.submit`), which must run with the standard library
alone and so keeps ElementTree.
"""

from lxml import etree

from boincpy.errors import BoincpyError
from boincpy.xml import parse_bool


class XmlError(BoincpyError, ValueError):
    """A document lxml can't read; ``line`` (0 if unknown) and ``msg``."""

    def __init__(self, msg, line=0):
        super().__init__("line %d: %s" % (line, msg) if line else msg)
        self.msg = msg
        self.line = line


_PARSERS = {}


def _parser(recover, huge, comments):
    key = (recover, huge, comments)
    parser = _PARSERS.get(key)
    if parser is None:
        parser = _PARSERS[key] = etree.XMLParser(
            resolve_entities=False, no_network=True, load_dtd=False,
            remove_comments=not comments, remove_pis=not comments, recover=recover,
            huge_tree=huge)
    return parser


def parse(data, recover=False, huge=False, comments=False):
    """The root element of ``data`` (bytes, or str read as UTF-8).  ``huge``
    lifts libxml2's limits on a text's size and depth (a client's state);
    ``comments`` keeps comments and processing instructions in the tree (a
    document copied back out as PHP's simplexml would)."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    try:
        root = etree.fromstring(data, _parser(recover, huge, comments))
    except etree.XMLSyntaxError as exc:
        line = exc.lineno or (exc.position[0] if exc.position else 0)
        raise XmlError(exc.msg or str(exc), line) from None
    if root is None:                     # recover on a document with no element
        raise XmlError("no element")
    return root


def parse_file(path, recover=False, huge=False, comments=False):
    """:func:`parse` on a file's bytes (OSError if it can't be read)."""
    with open(path, "rb") as f:
        return parse(f.read(), recover, huge, comments)


def text(el, tag, default=""):
    """The stripped text of ``el``'s first child ``tag`` (a path, as for
    find: "a/b"); ``default`` when there is none.  Text only: a child's
    own elements are not part of it."""
    child = el.find(tag)
    if child is None:
        return default
    return (child.text or "").strip()


def flag(el, tag, default=False):
    """BOINC's parse_bool on ``el``'s first child ``tag``: ``<tag/>`` (no
    text) is true, else its text by :func:`boincpy.xml.parse_bool`;
    ``default`` when the child is absent or its text is not a boolean."""
    child = el.find(tag)
    if child is None:
        return default
    value = parse_bool(child.text, empty_element=not (child.text or "").strip()
                       and not len(child))
    return default if value is None else value


def leaves(el):
    """{tag: stripped text} of ``el``'s children that hold no elements, the
    first of each tag."""
    out = {}
    for child in el:
        if isinstance(child.tag, str) and not len(child):
            out.setdefault(child.tag, (child.text or "").strip())
    return out


def to_string(el):
    """``el`` as XML text (str), without its tail."""
    return etree.tostring(el, encoding="unicode", with_tail=False)
