"""BOINC's account secrets: password hashes, authenticators, weak authenticators, CPIDs.

What a client sends is never the password itself but
``passwd_hash = md5(password + lower-cased e-mail)`` (32 hex).  BOINC's web
code stores that value in ``user.passwd_hash`` in one of two forms:

* legacy: the 32-hex MD5 itself;
* current: PHP's ``password_hash(md5, PASSWORD_DEFAULT)``, a bcrypt string
  ``$2y$10$<22 salt chars><31 hash chars>`` (60 characters).

New accounts get the bcrypt form.  A successful login with a legacy (or
outdated bcrypt) value rewrites it in the current form, as BOINC's
``check_passwd_hash`` does; both forms are accepted, so a database moved
from a PHP BOINC site keeps working.  bcrypt comes from the ``bcrypt``
package; it names the algorithm ``$2b$``, which is PHP's ``$2y$`` (the same
computation), so hashes are written ``$2y$`` as PHP writes them and
``$2y$``, ``$2b$`` and ``$2a$`` are all read.  As crypt(3) under PHP, a
secret is hashed up to its first NUL byte and its first 72 bytes (the
``bcrypt`` package refuses longer ones; a client's passwd_hash is 32 bytes).
Other crypt(3) schemes ($1$, $5$, $6$: never written by BOINC) do not verify.

Hashes that depend on the stored value (``weak_auth``) change when it is
rewritten, exactly as in BOINC.
"""

# Light on purpose: every page of the site imports this module (and the
# scheduler CGI, when a client signs in with a weak authenticator), so hashlib
# (OpenSSL bindings, ~5 ms), secrets and bcrypt are imported only by the
# functions that need them.  MD5 is CPython's own: files.md5_hex, imported
# here for this module's callers.
# compare_digest: hmac.compare_digest, from the C function behind it (the
# hmac module loads OpenSSL's bindings); every comparison of a secret with
# what a visitor or client sent goes through it.
from _operator import _compare_digest as compare_digest

from boincpy.files import md5_hex

# PHP's PASSWORD_DEFAULT up to PHP 8.3 (the reference server's PHP 8.2).
BCRYPT_COST = 10
_BCRYPT_PREFIX = "$2y$%02d$" % BCRYPT_COST
_BCRYPT_LENGTH = 60

_BCRYPT_READ = ("$2y$", "$2b$", "$2a$")     # one algorithm, three names
_BCRYPT_MAX_SECRET = 72                       # bytes bcrypt reads of a secret
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def _utf8(text):
    """UTF-8 bytes of any str (a lone surrogate from a form too), bytes as they are."""
    return text.encode("utf-8", "surrogatepass") if isinstance(text, str) else bytes(text)


def _bcrypt_secret(secret):
    """The bytes of ``secret`` bcrypt hashes: UTF-8, up to the first NUL and at
    most 72 bytes (what crypt(3) reads of a C string; bcrypt 5 raises instead)."""
    return _utf8(secret).split(b"\0", 1)[0][:_BCRYPT_MAX_SECRET]


def ascii_lower(text):
    """Lower-case ASCII letters only, as PHP's strtolower and the client's downcase_string."""
    return text.translate(_ASCII_LOWER)


def opt_out_code(authenticator):
    """email.inc's salted_key: the code of a user's opt_out.php link,
    md5(authenticator + 'oogabooga') (only its owner's secret makes it)."""
    return md5_hex(authenticator + "oogabooga")


def client_passwd_hash(password, email_addr):
    """What a client sends as passwd_hash: md5(password + lower-cased e-mail)."""
    return md5_hex(password + ascii_lower(email_addr))


def random_string():
    """32 random hex characters (authenticators, cross-project ids)."""
    import secrets
    return secrets.token_hex(16)


def password_hash(passwd_hash):
    """The stored form of a client passwd_hash: bcrypt ``$2y$10$...``, fresh salt
    (PHP's password_hash(passwd_hash, PASSWORD_DEFAULT))."""
    import bcrypt
    salt = bcrypt.gensalt(BCRYPT_COST)                  # b"$2b$10$" + 22 salt chars
    out = bcrypt.hashpw(_bcrypt_secret(passwd_hash), b"$2y$" + salt[4:]).decode("ascii")
    if not out.startswith(_BCRYPT_PREFIX) or len(out) != _BCRYPT_LENGTH:
        raise RuntimeError("bcrypt made %r, not a $2y$ hash" % out[:7])
    return out


def is_crypt_hash(stored):
    """True for a crypt(3)-style stored value ($id$...), as PHP's password_verify accepts."""
    return stored.startswith("$") and len(stored) > 20


def password_verify(passwd_hash, stored):
    """True if ``stored`` is a bcrypt hash of ``passwd_hash`` (PHP's password_verify):
    ``$2y$``, ``$2b$`` or ``$2a$``; False for anything else, never an exception."""
    if not stored or not stored.startswith(_BCRYPT_READ) or len(stored) != _BCRYPT_LENGTH:
        return False
    import bcrypt
    try:
        return bcrypt.checkpw(_bcrypt_secret(passwd_hash), stored.encode("ascii"))
    except (ValueError, UnicodeError):        # a damaged value: bad cost, salt or characters
        return False


def needs_rehash(stored):
    """True unless ``stored`` is bcrypt with the current cost (PHP's password_needs_rehash)."""
    return not (stored.startswith(_BCRYPT_PREFIX) and len(stored) == _BCRYPT_LENGTH)


def check_passwd_hash(passwd_hash, stored):
    """Does a client's passwd_hash match the stored value?

    Returns ``(ok, new_stored)``: ``new_stored`` is the value to write back
    (the current bcrypt form) when the stored one is legacy or outdated, else
    None -- BOINC's check_passwd_hash and do_passwd_rehash.
    """
    if password_verify(passwd_hash, stored):
        return True, (password_hash(passwd_hash) if needs_rehash(stored) else None)
    if stored and compare_digest(_utf8(passwd_hash), _utf8(stored)):
        return True, password_hash(passwd_hash)
    return False, None


def matches_stored(passwd_hash, stored):
    """True if ``passwd_hash`` equals the stored value or verifies against it (no rehash)."""
    if stored and compare_digest(_utf8(passwd_hash), _utf8(stored)):
        return True
    return password_verify(passwd_hash, stored)


def weak_auth(userid, authenticator, stored_passwd_hash):
    """BOINC's weak account key ``ID_md5(authenticator + stored passwd_hash)``."""
    return "%d_%s" % (userid, md5_hex(authenticator + stored_passwd_hash))


def rss_auth(userid, authenticator, stored_passwd_hash):
    """The notices feed key ``ID_md5(authenticator + stored passwd_hash + "notify_rss")``."""
    return "%d_%s" % (userid, md5_hex(authenticator + stored_passwd_hash + "notify_rss"))


def external_cpid(cross_project_id, email_addr):
    """The public cross-project id: md5(cross_project_id + e-mail)."""
    return md5_hex(cross_project_id + email_addr)


def email_hash(email_addr):
    """md5 of the e-mail address as stored."""
    return md5_hex(email_addr)
