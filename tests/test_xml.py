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
