"""BBCode in text that volunteers write (profiles, and anything else that
shows a user's text), rendered safely.

BOINC's pages let users format profile answers and posts with BBCode
(html/inc/text_transform.inc).  Here the user's text is escaped first, whole;
then a small whitelist of tags becomes HTML:

=========================  ==================================================
``[b] [i] [u] [s]``        bold, italic, underlined, struck out
``[url=http(s)://..]``     a link (``rel="nofollow"``); ``[url]http://..[/url]``
``[quote]`` ``[quote=W]``  a quotation (W wrote:)
``[code]`` ``[pre]``       preformatted; no tags inside
``[list]`` ``[list=1]``    lists, items after ``[*]``
``[img]http(s)://..[/img]`` a picture, only if the reader's preferences allow
                           images (else a link to it)
=========================  ==================================================

Only ``http://`` and ``https://`` addresses become links or pictures (never
``javascript:``, ``data:`` or a relative path); since the text was escaped
before any tag was read, an address can't close its attribute.  Tags are
nested properly (a closing tag closes whatever it encloses; tags left open
are closed at the end; a stray closing tag stays as text), so a user's text
never leaves an element open on the page.  Line breaks become ``<br>``.
"""

import re

from markupsafe import Markup, escape

TAG = re.compile(r"\[(/?)([A-Za-z]+|\*)(?:=([^\[\]\n]{1,500}))?\]")
URL = re.compile(r"^https?://[^\s\[\]<>\"']+$", re.IGNORECASE)

# tag -> (opening HTML, closing HTML) for the plain ones
SIMPLE = {"b": ("<b>", "</b>"), "i": ("<i>", "</i>"), "u": ("<u>", "</u>"),
          "s": ("<s>", "</s>")}
RAW = {"code": ('<pre class="code">', "</pre>"), "pre": ("<pre>", "</pre>")}
MAX_DEPTH = 64         # tags open at once; deeper ones stay text
# tags whose content is an address: [url]ADDRESS[/url], [img]ADDRESS[/img]
ADDRESS_TAGS = ("url", "img")


def _valid_url(text):
    """The address as it may go into an attribute (it is escaped text), or None."""
    text = text.strip()
    # the text is escaped already: &amp; stays, any other entity means a
    # quote or a bracket was there
    if URL.match(text) and not re.search(r"&(?!amp;)", text):
        return text
    return None


def _lines(text):
    return text.replace("\r\n", "\n").replace("\r", "\n").replace("\n", "<br>\n")


def render(text, images=False):
    """The HTML (Markup) of a user's BBCode text; ``images``: show [img] pictures."""
    src = str(escape(text or ""))
    lower = src.lower()
    out = []
    stack = []            # open tags: (name, closing HTML)
    opened = {}           # name -> how many of the stack's tags have it
    pos = 0

    def push(name, end):
        stack.append((name, end))
        opened[name] = opened.get(name, 0) + 1

    def pop():
        name, end = stack.pop()
        opened[name] -= 1
        out.append(end)
        return name
    while True:
        m = TAG.search(src, pos)
        if m is None:
            out.append(_lines(src[pos:]))
            break
        out.append(_lines(src[pos:m.start()]))
        closing, name, param = m.group(1), m.group(2).lower(), m.group(3)
        pos = m.end()
        literal = _lines(m.group(0))
        if closing:
            if opened.get(name) and name != "*":
                while pop() != name:
                    pass
            else:
                out.append(literal)
            continue
        if len(stack) >= MAX_DEPTH and name != "*":
            out.append(literal)
        elif name in SIMPLE and param is None:
            out.append(SIMPLE[name][0])
            push(name, SIMPLE[name][1])
        elif name in RAW and param is None:
            end = lower.find("[/%s]" % name, pos)
            body = src[pos:] if end < 0 else src[pos:end]
            out.append(RAW[name][0] + body + RAW[name][1])
            pos = len(src) if end < 0 else end + len(name) + 3
        elif name == "url" and param is not None:
            href = None if opened.get("url") else _valid_url(param)
            if href is None:
                out.append(literal)
            else:
                out.append('<a href="%s" rel="nofollow">' % href)
                push("url", "</a>")
        elif name in ADDRESS_TAGS and param is None:
            end = lower.find("[/%s]" % name, pos)
            href = _valid_url(src[pos:end]) if end >= 0 else None
            if href is None:
                out.append(literal)
                continue
            pos = end + len(name) + 3
            if name == "img" and images:
                out.append('<img src="%s" alt="" class="bbcode">' % href)
            else:
                out.append('<a href="%s" rel="nofollow">%s</a>' % (href, href))
        elif name == "quote":
            who = ""
            if param is not None:
                who = '<div class="quote-by">%s wrote:</div>' % param.strip()
            out.append('<blockquote class="quote">' + who)
            push("quote", "</blockquote>")
        elif name == "list" and param in (None, "1", "a", "A", "i", "I"):
            if param is None:
                out.append("<ul>")
                push("list", "</ul>")
            else:
                out.append('<ol type="%s">' % param)
                push("list", "</ol>")
            push("*", "")                    # text before the first item
        elif name == "*" and param is None and opened.get("list"):
            while stack[-1][0] != "list":
                pop()
            out.append("<li>")
            push("*", "</li>")
        else:
            out.append(literal)
    while stack:
        pop()
    return Markup("".join(out))


def plain_text(text):
    """The user's text without its BBCode tags (for summaries; still to be escaped)."""
    return TAG.sub("", text or "")


def summary(text, max_chars):
    """The first words of ``plain_text(text)`` up to ``max_chars`` characters,
    with "..." if cut (BOINC's sub_sentence)."""
    words = " ".join(plain_text(text).split())
    if len(words) <= max_chars:
        return words
    cut = words[:max_chars]
    if " " in cut:
        cut = cut[:cut.rindex(" ")]
    return cut + "..."
