"""HTML building with escaping by default.

Every value that reaches a page goes through :func:`esc` unless it is already
:class:`Markup` (text this module or a page produced on purpose).  Pages build
HTML with :func:`fmt`, which escapes its arguments, so a host name or a
stderr_out holding ``<script>`` is shown as text, never run.
"""

from urllib.parse import urlencode

from boincpy.xml import xml_escape


class Markup(str):
    """A str known to be safe HTML; concatenation with plain str escapes it."""

    __slots__ = ()

    def __add__(self, other):
        return Markup(str.__add__(self, esc(other)))

    def __radd__(self, other):
        return Markup(str.__add__(esc(other), self))

    def __html__(self):
        return self


def esc(value):
    """``value`` as safe HTML: Markup unchanged, anything else escaped (None -> "")."""
    if isinstance(value, Markup):
        return value
    if value is None:
        return Markup("")
    return Markup(xml_escape(str(value), quote=True))


def _arg(value):
    # Numbers are safe as they are and keep their format specs ({:.1f}).
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value
    return esc(value)


def fmt(template, *args, **kwargs):
    """``template.format`` with every argument escaped; the template is trusted."""
    return Markup(template.format(*[_arg(a) for a in args],
                                  **{k: _arg(v) for k, v in kwargs.items()}))


def join(parts, sep=""):
    """Join escaped parts with an (escaped) separator."""
    return Markup(esc(sep).join(esc(p) for p in parts))


def url(page, **params):
    """A relative URL with a query string; None and "" parameters are dropped.

    The result is plain text: put it through fmt/esc (which turns ``&`` into
    ``&amp;``) when it goes into an attribute.
    """
    items = [(k, v) for k, v in params.items() if v is not None and v != ""]
    if not items:
        return page
    return page + "?" + urlencode(items, doseq=True)


def link(href, text, **attrs):
    """``<a href=...>text</a>``, both escaped."""
    extra = "".join(' %s="%s"' % (k.rstrip("_"), esc(v)) for k, v in attrs.items())
    return Markup('<a href="%s"%s>%s</a>' % (esc(href), extra, esc(text)))


def text_of(value):
    """A database value as text: None as "", numbers as str."""
    if value is None:
        return ""
    return str(value)
