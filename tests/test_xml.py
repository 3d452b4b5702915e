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
