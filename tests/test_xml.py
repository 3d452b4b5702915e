"""boincpy.xml: BOINC's xml_escape, on bytes and on str."""

from boincpy.xml import xml_escape, xml_escape_bytes


def test_escape_bytes_as_boinc():
    assert xml_escape_bytes(b"a<b&c>d") == b"a&lt;b&amp;c>d"
    assert xml_escape_bytes(b"x\x01\ty\nz\r") == b"x&#9;y&#10;z&#13;"
    assert xml_escape_bytes(b"]]>") == b"]]&gt;"
    assert xml_escape_bytes("é".encode()) == b"&#195;&#169;"


def test_escape_str_matches_bytes_and_keeps_plain_text():
    plain = "Project has no tasks available"
    assert xml_escape(plain) is plain
    for text in ("a<b", "caf\u00e9 & co", "tab\there", "]]>", "\x07bell"):
        assert xml_escape(text) == xml_escape_bytes(text.encode()).decode()


def test_escape_utf8_keeps_non_ascii_characters():
    from xml.etree import ElementTree
    from boincpy.xml import xml_escape_utf8
    plain = "job_1"
    assert xml_escape_utf8(plain) is plain
    text = "caf\u00e9 <b> & ]]> line\nnext\x07"
    escaped = xml_escape_utf8(text)
    assert escaped == "caf\u00e9 &lt;b> &amp; ]]&gt; line&#10;next"
    # a standard XML reader gets the text back (the bell, not allowed in XML, dropped)
    assert ElementTree.fromstring("<a>%s</a>" % escaped).text == text[:-1]
