"""boincpy.xml: the one escaper -- plain XML/HTML, and BOINC's xml_escape on bytes and str."""

import os
import re

from boincpy.xml import xml_escape

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_escape_bytes_as_boinc():
    assert xml_escape(b"a<b&c>d") == b"a&lt;b&amp;c>d"
    assert xml_escape(b"x\x01\ty\nz\r") == b"x&#9;y&#10;z&#13;"
    assert xml_escape(b"]]>") == b"]]&gt;"
    assert xml_escape("é".encode()) == b"&#195;&#169;"


def test_boinc_str_matches_bytes_and_keeps_plain_text():
    plain = "Project has no tasks available"
    assert xml_escape(plain, boinc=True) is plain
    for text in ("a<b", "caf\u00e9 & co", "tab\there", "]]>", "\x07bell"):
        assert xml_escape(text, boinc=True) == xml_escape(text.encode()).decode()


def test_plain_and_quoted():
    assert xml_escape("a<b>&c") == "a&lt;b&gt;&amp;c"
    assert xml_escape("caf\u00e9") == "caf\u00e9"
    assert xml_escape("'\"") == "'\""
    assert xml_escape("<a href='x'>\"", quote=True) == "&lt;a href=&#039;x&#039;&gt;&quot;"
    assert xml_escape(None) == "" and xml_escape(12) == "12"


def test_one_escaper_in_the_package():
    """No module but boincpy/xml writes its own entity replacement for '<'."""
    pattern = re.compile(r"""replace\(\s*b?["']<["']|html\.escape\(|saxutils""")
    found = []
    for top in ("boincpy", "bin", "cgi-bin", "html"):
        for dirpath, _, files in os.walk(os.path.join(REPO, top)):
            for name in files:
                path = os.path.join(dirpath, name)
                if not (name.endswith(".py") or top != "boincpy") or "__pycache__" in path:
                    continue
                if os.path.join("boincpy", "xml") in path:
                    continue
                with open(path, encoding="utf-8", errors="replace") as f:
                    for lineno, line in enumerate(f, 1):
                        if pattern.search(line):
                            found.append("%s:%d: %s" % (os.path.relpath(path, REPO), lineno,
                                                        line.strip()))
    assert not found, "\n".join(found)


def test_one_unescaper_for_text_and_bytes():
    """BOINC's xml_unescape: named entities, &#xD;/&#xA;, &#NNN; below 256 as
    one character (one byte for bytes), anything else kept as written."""
    from boincpy.xml import xml_unescape
    cases = [
        ("a &lt;b&gt; &amp; &quot;c&quot; &apos;d&apos;", "a <b> & \"c\" 'd'"),
        ("line&#xD;&#xA;next&#xd;&#xa;", "line\r\nnext\r\n"),
        ("&#65;&#066;", "AB"),
        ("&#x41;&#300;&#;&#12&nbsp;&", "&#x41;&#300;&#;&#12&nbsp;&"),
        ("&#\u00b2;", "&#\u00b2;"),               # a digit, but not an ASCII one
        ("plain", "plain"),
    ]
    for raw, text in cases:
        assert xml_unescape(raw) == text
        if raw.isascii():
            assert xml_unescape(raw.encode()) == text.encode("latin-1")
    # bytes: a numeric reference is one byte (UTF-8 sequences written byte by byte)
    assert xml_unescape(b"&#195;&#169;").decode("utf-8") == "\u00e9"
    assert xml_unescape("&#233;") == "\u00e9"
