"""HTML building with escaping by default, over markupsafe.

Every value that reaches a page goes through :func:`esc` unless it is already
:class:`Markup` (text a page produced on purpose).  Pages build HTML with
:func:`fmt`, markupsafe's ``Markup.format``, which escapes its arguments, so a
user name, a host name or a stderr_out holding ``<script>`` is shown as text,
never run, whatever the database holds.
"""

from urllib.parse import urlencode

from markupsafe import Markup, escape

__all__ = ["Markup", "esc", "fmt", "join", "url", "link", "text_of"]


def esc(value):
    """``value`` as safe HTML: Markup unchanged, anything else escaped (None -> "")."""
    if value is None:
        return Markup("")
    return escape(value)


def fmt(template, *args, **kwargs):
    """``template.format`` with every argument escaped; the template is trusted.

    None arguments print as ""; numbers keep their format specs ({:.1f})."""
    args = ["" if a is None else a for a in args]
    kwargs = {k: ("" if v is None else v) for k, v in kwargs.items()}
    return Markup(template).format(*args, **kwargs)


def join(parts, sep=""):
    """Join escaped parts with an (escaped) separator."""
    return esc(sep).join(esc(p) for p in parts)


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
    """``<a href=...>text</a>``, both escaped (``class_=`` for class)."""
    extra = join(fmt(' {}="{}"', k.rstrip("_"), v) for k, v in attrs.items())
    return fmt('<a href="{}"{}>{}</a>', href, extra, text)


def text_of(value):
    """A database value as text: None as "", numbers as str."""
    if value is None:
        return ""
    return str(value)
