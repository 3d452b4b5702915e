"""Form tokens that protect the ops pages' POST actions against CSRF.

A token is ``TIME.MAC`` where MAC = HMAC-SHA256(secret, "USER|FORM|TIME"),
USER is the HTTP basic-auth user Apache authenticated (REMOTE_USER) and FORM
the page the form posts to (``cancel_wu_action.php``).  A forged form on
another site cannot carry a valid token: it knows neither the secret nor a
token minted for this admin.  A token works for its own form only (one
copied from a harmless form can't cancel jobs) and for ``MAX_AGE`` seconds,
so a leaked page source soon stops being useful.

The secret is 32 random bytes (hex) in ``KEY_DIR/ops_form_secret``: outside
the web tree (Apache denies keys/), readable by the web server's user.  The
first ops page that needs it creates it (mode 0640) if the directory is
writable; otherwise the page says which command creates it.

Also refused: POSTs whose ``Origin`` names another host, or that a browser
labels ``Sec-Fetch-Site: cross-site``.
"""

import os
import time
from _sha256 import sha256
from urllib.parse import urlsplit

from boincpy.errors import ConfigError
from boincpy.passwords import compare_digest

SECRET_FILE = "ops_form_secret"
MAX_AGE = 3600
FIELD = "csrf_token"


def secret_path(cfg):
    """Where the project's form secret lives."""
    return os.path.join(cfg.key_dir, SECRET_FILE)


def create_secret(path):
    """Write a fresh secret at ``path`` unless one exists; return the secret bytes."""
    value = os.urandom(32).hex()                # secrets.token_hex(32)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o640)
    except FileExistsError:
        return read_secret(path)
    with os.fdopen(fd, "w") as f:
        f.write(value + "\n")
    return value.encode()


def read_secret(path):
    """The secret at ``path``; ConfigError if it is missing, unreadable or short."""
    try:
        with open(path, "rb") as f:
            value = f.read().strip()
    except OSError as exc:
        raise ConfigError("can't read the ops form secret %s: %s" % (path, exc.strerror)) from None
    if len(value) < 32:
        raise ConfigError("the ops form secret %s is too short: delete it and "
                          "let the ops pages create a new one" % path)
    return value


def load_secret(cfg):
    """The project's form secret, created on first use if possible."""
    path = secret_path(cfg)
    if os.path.exists(path):
        return read_secret(path)
    try:
        return create_secret(path)
    except OSError as exc:
        raise ConfigError(
            "no ops form secret at %s and the web server can't create it (%s): run "
            "`python3 -c 'import secrets; print(secrets.token_hex(32))' > %s` as the "
            "project owner and make it readable by the web server's group"
            % (path, exc.strerror, path)) from None


def hmac_sha256(key, msg):
    """HMAC-SHA256 of ``msg`` (RFC 2104), hex, over the interpreter's built-in
    SHA-256: the hmac module loads OpenSSL's bindings, 2 ms of every page of
    the site in classic CGI mode (tests/test_csrf.py compares it with hmac)."""
    if len(key) > 64:
        key = sha256(key).digest()
    key = key.ljust(64, b"\0")
    inner = sha256(bytes(b ^ 0x36 for b in key) + msg).digest()
    return sha256(bytes(b ^ 0x5C for b in key) + inner).hexdigest()


def _mac(secret, user, form, stamp):
    msg = ("%s|%s|%d" % (user, form, stamp)).encode("utf-8")
    return hmac_sha256(secret, msg)


def make_token(secret, user, form, now=None):
    """A token for ``user``'s form posting to ``form``, valid for MAX_AGE seconds."""
    stamp = int(now if now is not None else time.time())
    return "%d.%s" % (stamp, _mac(secret, user, form, stamp))


def check_token(secret, user, form, token, now=None, max_age=MAX_AGE):
    """True if ``token`` was made for ``user`` and ``form`` with this secret
    and has not expired."""
    if not token or not user or "." not in token:
        return False
    stamp_text, mac = token.split(".", 1)
    if not (stamp_text.isdigit() and stamp_text.isascii()) or len(stamp_text) > 12:
        return False
    stamp = int(stamp_text)
    now = int(now if now is not None else time.time())
    if stamp > now + 60 or now - stamp > max_age:
        return False
    return compare_digest(mac, _mac(secret, user, form, stamp))


def same_origin(environ):
    """False if the browser says the request came from another site."""
    if (environ.get("HTTP_SEC_FETCH_SITE") or "").lower() == "cross-site":
        return False
    origin = environ.get("HTTP_ORIGIN")
    if not origin or origin == "null":
        # "null" is what a sandboxed or file: page sends: not ours.
        return origin != "null"
    host = environ.get("HTTP_HOST") or environ.get("SERVER_NAME", "")
    return urlsplit(origin).netloc.lower() == host.lower()
