"""Pieces of the ops pages that need no database: form tokens, escaping,
BOINC's names for codes and states, charts, request parsing."""

import io
import os
import stat

import pytest

from boincpy.error_numbers import exit_status_name, exit_status_text
from boincpy.web import http
from boincpy.web.markup import Markup, esc, fmt, url
from boincpy.web import csrf
from boincpy.web.ops import charts
from boincpy.web.ops import names as N


def test_token_is_bound_to_user_form_secret_and_time(tmp_path):
    path = str(tmp_path / "secret")
    secret = csrf.create_secret(path)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o640
    assert csrf.create_secret(path) == secret          # never overwritten
    form = "cancel_wu_action.php"
    token = csrf.make_token(secret, "admin", form, now=1000000)
    assert csrf.check_token(secret, "admin", form, token, now=1000000 + 60)
    assert not csrf.check_token(secret, "other", form, token, now=1000000)
    assert not csrf.check_token(secret, "admin", "clear_host.php", token, now=1000000)
    assert not csrf.check_token(b"x" * 64, "admin", form, token, now=1000000)
    assert not csrf.check_token(secret, "admin", form, token, now=1000000 + csrf.MAX_AGE + 1)
    assert csrf.MAX_AGE <= 3600                         # a short life
    assert not csrf.check_token(secret, "admin", form, token, now=1000000 - 3600)  # future
    stamp, mac = token.split(".")
    assert not csrf.check_token(secret, "admin", form, "%d.%s" % (int(stamp) + 1, mac),
                                now=1000000)
    for junk in ("", ".", "abc", "1.", "x.y", None, "\u0661\u0662.ab", "9" * 40 + ".x"):
        assert not csrf.check_token(secret, "admin", form, junk, now=1000000)
    assert not csrf.check_token(secret, "", form, token, now=1000000)


def test_short_secret_is_refused(tmp_path):
    path = tmp_path / "secret"
    path.write_text("short\n")
    with pytest.raises(Exception, match="too short"):
        csrf.read_secret(str(path))


@pytest.mark.parametrize("environ,ok", [
    ({}, True),
    ({"HTTP_ORIGIN": "http://127.0.0.1:8080", "HTTP_HOST": "127.0.0.1:8080"}, True),
    ({"HTTP_ORIGIN": "http://evil.example", "HTTP_HOST": "127.0.0.1:8080"}, False),
    ({"HTTP_ORIGIN": "null", "HTTP_HOST": "127.0.0.1"}, False),
    ({"HTTP_SEC_FETCH_SITE": "cross-site"}, False),
    ({"HTTP_SEC_FETCH_SITE": "same-origin"}, True),
])
def test_same_origin(environ, ok):
    assert csrf.same_origin(environ) is ok


def test_escaping():
    assert esc("<a href='x'>&</a>") == "&lt;a href=&#39;x&#39;&gt;&amp;&lt;/a&gt;"
    assert esc(Markup("<b>")) == "<b>"
    assert fmt("<td>{}</td><td>{:.1f}</td>", "<script>", 2.25) == \
        "<td>&lt;script&gt;</td><td>2.2</td>"
    assert Markup("<p>") + "<x>" == "<p>&lt;x&gt;"
    assert url("p.php", a="1&b=2", b=None, c="") == "p.php?a=1%26b%3D2"


def test_exit_status_names():
    assert exit_status_name(-186) == "ERR_RESULT_DOWNLOAD"
    assert exit_status_name(197) == "EXIT_TIME_LIMIT_EXCEEDED"
    assert exit_status_name(-1073741819) == "STATUS_ACCESS_VIOLATION"
    assert exit_status_name(1) == "" and exit_status_name(0) == ""
    assert exit_status_text(-187) == "-187 (0xffffff45) ERR_RESULT_UPLOAD"
    assert exit_status_text(3) == "3 (0x00000003)"
    assert N.exit_name(3) == "the application's own exit code"


def test_state_words_and_times():
    assert N.state_text("outcome", 3) == "Computation error [3]"
    assert N.state_text("server_state", 5) == "Over [5]"
    assert N.state_text("validate_state", 4) == "Checked, but no consensus yet [4]"
    assert N.word("client_state", 99) == "Unknown"
    assert N.error_mask_text(16 | 2) == "Too many errors (may have bug), Cancelled"
    assert N.error_mask_text(0) == ""
    assert N.time_text(1795336156) == "22 Nov 2026, 8:29:16 UTC"
    assert N.time_text(0) == "---"
    assert N.client_version_text(72005) == "7.20.5"
    assert N.delay_text(90061) == "90061 = 1 days 1 hours 1 min 1 sec"


def test_charts_are_plain_svg():
    svg = charts.bar_chart("R <&>", ["a", "b"], [("ok", "#0f0", [1, 3]), ("bad", "#f00", [0, 2])])
    assert svg.startswith("<svg") and "<script" not in svg
    assert "R &lt;&amp;&gt;" in svg
    assert svg.count("<rect") == 3 + 2        # 3 non-zero bars + 2 legend boxes
    assert "<title>b: 2 bad</title>" in svg
    line = charts.line_chart("Q", ["x", "y", "z"], [("u", "#00f", [0, 7, 2])])
    assert 'points="' in line and line.count("<circle") == 3
    assert charts.nice_scale(7) == (10, 2.0) and charts.nice_scale(0) == (5, 1.0)


def test_request_parsing():
    body = b"a=1&b=%3Cx%3E&b=2"
    req = http.read_request({"REQUEST_METHOD": "POST", "QUERY_STRING": "q=1&q=2",
                             "CONTENT_TYPE": "application/x-www-form-urlencoded",
                             "CONTENT_LENGTH": str(len(body)), "REMOTE_USER": "admin",
                             "HTTP_COOKIE": 'auth=abc; other="x y"'},
                            io.BytesIO(body))
    # PHP's rule: the last of repeated names wins; lists keep every value
    assert req.get("q") == "2" and req.get_all("q") == ["1", "2"]
    assert req.post("a") == "1" and req.post_all("b") == ["<x>", "2"]
    assert req.remote_user == "admin" and req.cookie("auth") == "abc"
    assert req.cookie("other") == "x y" and req.cookie("none") is None
    req = http.read_request({"REQUEST_METHOD": "POST", "CONTENT_TYPE": "multipart/form-data",
                             "CONTENT_LENGTH": "3"}, io.BytesIO(b"abc"))
    assert req.form == {} and "multipart" in req.body_error
    req = http.read_request({"REQUEST_METHOD": "POST",
                             "CONTENT_LENGTH": str(http.MAX_POST_BYTES + 1)}, io.BytesIO(b""))
    assert req.form == {} and "too large" in req.body_error
    req = http.read_request({"REQUEST_METHOD": "POST", "CONTENT_LENGTH": "10"},
                            io.BytesIO(b"a=1"))
    assert req.form == {} and "cut short" in req.body_error
    out = http.Response(body="<p>é</p>", status="403 Forbidden").cgi_bytes()
    assert out.startswith(b"Status: 403 Forbidden\nContent-Type: text/html; charset=UTF-8\n")
    assert out.endswith("\n\n<p>é</p>".encode())
