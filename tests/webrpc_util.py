"""Helpers shared by the web RPC tests: the reference server's captured replies
and an element-by-element comparison of XML replies."""

import os
import re

from lxml import etree

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures",
                        "reference_web_rpc")

# The reference server's account (throwaway): refuser@example.com / "refpass".
REF_EMAIL = "refuser@example.com"
REF_PASSWORD = "refpass"

HEX32 = re.compile(r"^[0-9a-f]{32}$")
WEAK_AUTH = re.compile(r"^[0-9]+_[0-9a-f]{32}$")
NUMBER = re.compile(r"^-?[0-9]+(\.[0-9]+)?(e[-+]?[0-9]+)?$")


def fixture_response(name):
    """(status line, headers dict, body) of a captured reply, PHP warnings removed."""
    with open(os.path.join(FIXTURES, name + ".response.http"), "rb") as f:
        raw = f.read().decode("utf-8")
    head, body = raw.split("\r\n\r\n", 1)
    lines = head.split("\r\n")
    headers = dict(line.split(": ", 1) for line in lines[1:])
    kept = [line for line in body.split("\n")
            if not line.startswith("<br />") and not line.startswith("<b>Deprecated</b>")]
    return lines[0], headers, "\n".join(kept)


def elements(xml_text):
    """[(path, text)] of every element of an XML reply, in document order.

    Parsing is strict: a reply that is not well-formed XML fails here.
    """
    data = xml_text.encode("utf-8") if isinstance(xml_text, str) else xml_text
    root = etree.fromstring(data, etree.XMLParser(remove_blank_text=False))
    out = []

    def walk(node, prefix):
        path = prefix + "/" + node.tag
        out.append((path, (node.text or "").strip()))
        for child in node:
            if isinstance(child.tag, str):
                walk(child, path)

    walk(root, "")
    return out


def assert_same_elements(ours, reference, varying=None, drop=()):
    """Same elements in the same order; same text except for ``varying``
    paths, whose text must match the given regex (values that differ by
    nature: keys, ids, times, names of another project), and ``drop``ped
    paths (the reference's extra elements we leave out on purpose)."""
    varying = varying or {}
    a = elements(ours)
    b = [e for e in elements(reference) if e[0] not in drop]
    assert [p for p, _ in a] == [p for p, _ in b], (
        "element sequence differs:\nours:      %s\nreference: %s"
        % ([p for p, _ in a], [p for p, _ in b]))
    for (path, text), (_, ref_text) in zip(a, b):
        rule = varying.get(path)
        if rule is None:
            assert text == ref_text, "%s: %r != reference %r" % (path, text, ref_text)
        else:
            assert re.match(rule, text, re.S), "%s: %r does not match %s" % (path, text, rule)


def text_of(xml_text, tag):
    """The text of the first <tag> in a reply (None if absent)."""
    for path, text in elements(xml_text):
        if path.rsplit("/", 1)[-1] == tag:
            return text
    return None


def error_of(xml_text):
    """(error_num, error_msg) of an <error> reply, or None."""
    pairs = dict((p, t) for p, t in elements(xml_text))
    if "/error/error_num" not in pairs:
        return None
    return int(pairs["/error/error_num"]), pairs["/error/error_msg"]
