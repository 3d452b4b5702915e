"""boincpy.web.csrf: the form tokens of the site and the ops pages, signed
with an HMAC-SHA256 over the interpreter's built-in SHA-256 (the hmac module
would load OpenSSL's bindings in every page's CGI)."""

import hashlib
import hmac
import os

import pytest

from boincpy.errors import ConfigError
from boincpy.web import csrf


# RFC 4231's test cases 1, 2 and 6 (key, data, HMAC-SHA-256)
RFC_4231 = [
    (b"\x0b" * 20, b"Hi There",
     "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"),
    (b"Jefe", b"what do ya want for nothing?",
     "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"),
    (b"\xaa" * 131, b"Test Using Larger Than Block-Size Key - Hash Key First",
     "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"),
]


@pytest.mark.parametrize("key, data, mac", RFC_4231)
def test_hmac_gives_rfc_4231_values(key, data, mac):
    assert csrf.hmac_sha256(key, data) == mac


def test_hmac_is_the_standard_librarys_for_every_key_length():
    for n in range(0, 140, 7):
        key, msg = os.urandom(n), os.urandom(n * 3 % 97)
        assert csrf.hmac_sha256(key, msg) == hmac.new(key, msg, hashlib.sha256).hexdigest()


def test_tokens_are_bound_to_user_form_and_time(tmp_path):
    path = str(tmp_path / csrf.SECRET_FILE)
    secret = csrf.create_secret(path)
    assert len(secret) == 64 and csrf.read_secret(path) == secret
    assert oct(os.stat(path).st_mode & 0o777) == "0o640"
    token = csrf.make_token(secret, "alice", "edit.php", now=1000)
    assert csrf.check_token(secret, "alice", "edit.php", token, now=1000 + csrf.MAX_AGE)
    assert not csrf.check_token(secret, "alice", "edit.php", token, now=1001 + csrf.MAX_AGE)
    assert not csrf.check_token(secret, "bob", "edit.php", token, now=1000)
    assert not csrf.check_token(secret, "alice", "delete.php", token, now=1000)
    assert not csrf.check_token(b"x" * 64, "alice", "edit.php", token, now=1000)
    stamp, mac = token.split(".")
    assert not csrf.check_token(secret, "alice", "edit.php",
                                "%s.%s" % (stamp, mac[:-1] + ("0" if mac[-1] != "0" else "1")),
                                now=1000)
    assert not csrf.check_token(secret, "alice", "edit.php", "%d.%s" % (int(stamp) + 1, mac),
                                now=1001)
    # a second create keeps the first secret; a short one is refused
    assert csrf.create_secret(path) == secret
    with open(path, "w") as f:
        f.write("short\n")
    with pytest.raises(ConfigError, match="too short"):
        csrf.read_secret(path)
