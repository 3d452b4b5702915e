"""BOINC's keys and signatures: key files, code signatures, upload certificates.

BOINC keeps RSA keys in a text format of its own (the RSAREF key structure as
hex lines, see ``../shared/reference/crypto-keys.md``), and its signatures are
not standard PKCS#1 signatures: the signed message is the 32 ASCII characters
of the data's MD5 hex digest, padded with PKCS#1 v1.5 block type 1 without a
DigestInfo and raised to the private exponent (lib/crypt.cpp's sign_block and
encrypt_private).  ``cryptography`` makes and converts keys and signs
(PKCS1v15 with NoDigestInfo, cryptography >= 47), imported only by the
functions that need it.  The padding is deterministic, so a signature made
here is byte for byte the one the C++ tools make with the same key.
"""

import math

from boincpy.errors import KeyFileError
from boincpy.files import md5

KEY_BITS = 1024
_MODULUS_BYTES = 128          # RSAREF's MAX_RSA_MODULUS_LEN for 1024-bit keys
_PRIME_BYTES = 64
PUBLIC_KEY_BYTES = 2 * _MODULUS_BYTES                          # n, e
PRIVATE_KEY_BYTES = 3 * _MODULUS_BYTES + 5 * _PRIME_BYTES      # n, e, d, p, q, dp, dq, qinv
_HEX = frozenset("0123456789abcdefABCDEF")


class RsaKey:
    """An RSA key as BOINC stores it; ``d`` and the CRT fields are None for public keys.

    A plain class rather than a dataclass: the upload handler CGI imports this
    module on every request, and importing dataclasses (inspect, ast, re)
    costs more than the whole certificate check."""

    __slots__ = ("bits", "n", "e", "d", "p", "q", "dmp1", "dmq1", "iqmp")

    def __init__(self, bits, n, e, d=None, p=None, q=None, dmp1=None, dmq1=None, iqmp=None):
        self.bits, self.n, self.e, self.d = bits, n, e, d
        self.p, self.q, self.dmp1, self.dmq1, self.iqmp = p, q, dmp1, dmq1, iqmp

    def _fields(self):
        return tuple(getattr(self, name) for name in self.__slots__)

    def __eq__(self, other):
        return self._fields() == other._fields() if type(other) is RsaKey else NotImplemented

    __hash__ = None             # mutable and compared by value, as the dataclass was

    def __repr__(self):
        return "RsaKey(%s)" % ", ".join("%s=%r" % (name, getattr(self, name))
                                         for name in self.__slots__)

    @property
    def is_private(self):
        return self.d is not None

    def public(self):
        """The public half of this key."""
        return RsaKey(self.bits, self.n, self.e)


# -- text encoding ------------------------------------------------------------

def hex_lines(data):
    """Bytes as BOINC writes them: 64 lowercase hex digits a line, then a ``.`` line."""
    h = data.hex()
    return "".join(h[i:i + 64] + "\n" for i in range(0, len(h), 64)) + ".\n"


def scan_hex(text):
    """(bytes, stop): the hex pairs of ``text``, skipping white space, and the index of
    the first character that is not part of them (``len(text)`` when the text ran out)."""
    out = bytearray()
    i, size = 0, len(text)
    while i < size:
        c = text[i]
        if c.isspace():
            i += 1
            continue
        pair = text[i:i + 2]
        if len(pair) < 2 or pair[0] not in _HEX or pair[1] not in _HEX:
            break
        out.append(int(pair, 16))
        i += 2
    return bytes(out), i


def parse_hex(text):
    """Hex pairs of ``text``, skipping white space, up to the first non-hex character."""
    return scan_hex(text)[0]


def _be(value, width):
    return value.to_bytes(width, "big")


def key_text(key):
    """The key file text of ``key`` (private when it has ``d``, else public)."""
    body = _be(key.n, _MODULUS_BYTES) + _be(key.e, _MODULUS_BYTES)
    if key.is_private:
        body += (_be(key.d, _MODULUS_BYTES) + _be(key.p, _PRIME_BYTES) + _be(key.q, _PRIME_BYTES)
                 + _be(key.dmp1, _PRIME_BYTES) + _be(key.dmq1, _PRIME_BYTES)
                 + _be(key.iqmp, _PRIME_BYTES))
    return "%d\n%s" % (key.bits, hex_lines(body))


def parse_key(text, source="key"):
    """An :class:`RsaKey` from BOINC key file text (public or private).

    ``source`` names the file in the error raised for text that is not a key,
    is cut short (no ``.`` end line), or whose private fields do not belong
    together (a damaged file would otherwise make signatures no client accepts).
    """
    text = text.strip()
    first, sep, rest = text.partition("\n")
    try:
        bits = int(first.strip())
    except ValueError:
        hint = ""
        if first.startswith("-----BEGIN"):
            hint = " (this is an OpenSSL PEM key: convert it with crypt_prog -convkey o2b)"
        raise KeyFileError("%s: not a BOINC key file: the first line must be the key size "
                           "in bits, found %r%s" % (source, first[:40], hint)) from None
    if not sep or bits <= 0 or bits > 8 * _MODULUS_BYTES:
        raise KeyFileError("%s: not a BOINC key file (key size %d, body missing or size "
                           "unsupported)" % (source, bits))
    blob, stop = scan_hex(rest)
    tail = rest[stop:]
    if not tail.startswith("."):
        if "." not in tail:
            raise KeyFileError("%s: key file is truncated (%d bytes of key data and no "
                               "'.' end line)" % (source, len(blob)))
        line = 2 + rest.count("\n", 0, stop)
        raise KeyFileError("%s line %d: unexpected character %r in the key data (damaged "
                           "file?)" % (source, line, tail[0]))
    if len(blob) not in (PUBLIC_KEY_BYTES, PRIVATE_KEY_BYTES):
        raise KeyFileError("%s: key data has %d bytes; a BOINC public key has %d and a "
                           "private key %d (truncated or damaged file?)"
                           % (source, len(blob), PUBLIC_KEY_BYTES, PRIVATE_KEY_BYTES))

    def field(offset, width):
        return int.from_bytes(blob[offset:offset + width], "big")

    n, e = field(0, _MODULUS_BYTES), field(_MODULUS_BYTES, _MODULUS_BYTES)
    if n == 0 or e == 0:
        raise KeyFileError("%s: key has a zero modulus or exponent" % source)
    if len(blob) == PUBLIC_KEY_BYTES:
        return RsaKey(bits, n, e)
    o = 2 * _MODULUS_BYTES
    d = field(o, _MODULUS_BYTES)
    o += _MODULUS_BYTES
    p, q, dmp1, dmq1, iqmp = (field(o + k * _PRIME_BYTES, _PRIME_BYTES) for k in range(5))
    if not _consistent(n, e, d, p, q, dmp1, dmq1, iqmp):
        raise KeyFileError("%s: private key fields are inconsistent (damaged file?)" % source)
    return RsaKey(bits, n, e, d, p, q, dmp1, dmq1, iqmp)


def _consistent(n, e, d, p, q, dmp1, dmq1, iqmp):
    """True when the private fields form one RSA key (each checked: signing uses the
    CRT fields, so a damaged one would silently produce bad signatures)."""
    if d == 0 or p < 2 or q < 2 or p * q != n:
        return False
    if dmp1 != d % (p - 1) or dmq1 != d % (q - 1) or (iqmp * q) % p != 1:
        return False
    lam = (p - 1) * (q - 1) // math.gcd(p - 1, q - 1)
    return (e * d) % lam == 1


def read_key(path):
    """Read a BOINC key file; :class:`KeyFileError` names the file when it is unusable."""
    try:
        with open(path, encoding="ascii", errors="replace") as f:
            text = f.read()
    except OSError as exc:
        raise KeyFileError("can't read key file %s: %s" % (path, exc.strerror)) from None
    return parse_key(text, path)


def read_private_key(path):
    """Read a BOINC private key file; a public key there is an error naming the file."""
    key = read_key(path)
    if not key.is_private:
        raise KeyFileError("%s is a public key; a private key is needed here" % path)
    return key


def read_public_key(path):
    """Read a BOINC public key file; a private key there is an error naming the file
    (BOINC's readers require the exact public structure)."""
    key = read_key(path)
    if key.is_private:
        raise KeyFileError("%s is a private key; the public key is needed here" % path)
    return key


# -- key generation and conversion ------------------------------------------

def _from_numbers(priv):
    pub = priv.public_numbers
    return RsaKey(pub.n.bit_length(), pub.n, pub.e, priv.d, priv.p, priv.q,
                  priv.dmp1, priv.dmq1, priv.iqmp)


def generate_key(bits=KEY_BITS):
    """A new private :class:`RsaKey` (public exponent 65537)."""
    from cryptography.hazmat.primitives.asymmetric import rsa
    if bits != KEY_BITS:
        raise KeyFileError("only %d-bit keys are supported (BOINC's key structure holds "
                           "at most %d bits)" % (KEY_BITS, KEY_BITS))
    while True:
        key = _from_numbers(rsa.generate_private_key(65537, bits).private_numbers())
        if key.bits == bits:
            return key


def generate_key_pair(private_path=None, public_path=None, bits=KEY_BITS):
    """Make a key pair; return (private text, public text), writing the files when paths
    are given (the private one readable by its owner only)."""
    from boincpy.files import atomic_write
    key = generate_key(bits)
    private, public = key_text(key), key_text(key.public())
    if private_path:
        atomic_write(private_path, private, mode=0o600)
    if public_path:
        atomic_write(public_path, public, mode=0o644)
    return private, public


def key_to_pem(key):
    """``key`` as OpenSSL PEM text, PKCS#1 (``RSA PRIVATE KEY`` / ``RSA PUBLIC KEY``):
    what BOINC's ``crypt_prog -convkey b2o`` writes with OpenSSL 3's default encoder."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa
    public_numbers = rsa.RSAPublicNumbers(key.e, key.n)
    if key.is_private:
        obj = rsa.RSAPrivateNumbers(key.p, key.q, key.d, key.dmp1, key.dmq1, key.iqmp,
                                    public_numbers).private_key()
        data = obj.private_bytes(serialization.Encoding.PEM,
                                 serialization.PrivateFormat.TraditionalOpenSSL,
                                 serialization.NoEncryption())
    else:
        data = public_numbers.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.PKCS1)
    return data.decode("ascii")


def key_from_pem(pem, private, source="PEM key"):
    """An :class:`RsaKey` from OpenSSL PEM text."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa
    data = pem.encode("ascii") if isinstance(pem, str) else pem
    try:
        if private:
            obj = serialization.load_pem_private_key(data, password=None)
        else:
            obj = serialization.load_pem_public_key(data)
    except (ValueError, TypeError) as exc:
        raise KeyFileError("%s: not a PEM %s key (%s)"
                           % (source, "private" if private else "public", exc)) from None
    if not isinstance(obj, (rsa.RSAPrivateKey, rsa.RSAPublicKey)):
        raise KeyFileError("%s: not an RSA key" % source)
    if private:
        key = _from_numbers(obj.private_numbers())
    else:
        numbers = obj.public_numbers()
        key = RsaKey(numbers.n.bit_length(), numbers.n, numbers.e)
    if key.bits > KEY_BITS:
        raise KeyFileError("%s: %d-bit key; BOINC keys hold at most %d bits"
                           % (source, key.bits, KEY_BITS))
    return key


# -- signatures -----------------------------------------------------------------

def _modulus_bytes(key):
    return (key.n.bit_length() + 7) // 8


# cryptography's key objects, one per private key signed with (what lets the
# transitioner sign upload certificates for thousands of results a second).
# cryptography is imported here, at the first signature, not with the module:
# its import costs ~25 ms, and the CGIs that import this module (the upload
# handler checks one certificate a request) only verify.
_signing_keys = {}           # (n, d) -> RSAPrivateKey
_sign_args = None            # (PKCS1v15(), NoDigestInfo()) once imported


def _signing_key(key):
    """``key`` as cryptography's RSAPrivateKey (made once per key)."""
    global _sign_args
    cache_key = (key.n, key.d)
    obj = _signing_keys.get(cache_key)
    if obj is not None:
        return obj
    from cryptography.hazmat.primitives.asymmetric import padding, rsa, utils
    p, q, dmp1, dmq1, iqmp = key.p, key.q, key.dmp1, key.dmq1, key.iqmp
    if not (p and q and dmp1 and dmq1 and iqmp):
        # a key with n, e and d only: the CRT fields follow from them
        try:
            p, q = rsa.rsa_recover_prime_factors(key.n, key.e, key.d)
        except ValueError:
            raise KeyFileError("private key: n, e and d are not one RSA key") from None
        dmp1, dmq1 = rsa.rsa_crt_dmp1(key.d, p), rsa.rsa_crt_dmq1(key.d, q)
        iqmp = rsa.rsa_crt_iqmp(p, q)
    if not _consistent(key.n, key.e, key.d, p, q, dmp1, dmq1, iqmp):
        raise KeyFileError("private key fields are inconsistent (damaged file?)")
    numbers = rsa.RSAPrivateNumbers(p, q, key.d, dmp1, dmq1, iqmp,
                                    rsa.RSAPublicNumbers(key.e, key.n))
    # The fields were just checked against each other; OpenSSL's own check
    # (primality tests) would add ~7 ms to the first signature of a process.
    obj = numbers.private_key(unsafe_skip_rsa_key_validation=True)
    if _sign_args is None:
        _sign_args = (padding.PKCS1v15(), utils.NoDigestInfo())
    _signing_keys[cache_key] = obj
    return obj


def private_encrypt(data, key):
    """RSA private-key "encryption" of ``data`` with PKCS#1 v1.5 block type 1 padding
    and no DigestInfo (OpenSSL's EVP_PKEY_sign with RSA_PKCS1_PADDING and no digest,
    BOINC's encrypt_private): k bytes."""
    if not key.is_private:
        raise KeyFileError("signing needs a private key, got a public one")
    k = _modulus_bytes(key)
    if len(data) > k - 11:
        raise KeyFileError("%d bytes are too many to sign with a %d-bit key"
                           % (len(data), key.n.bit_length()))
    obj = _signing_key(key)
    return obj.sign(bytes(data), *_sign_args)


def public_decrypt(sig, key):
    """The data inside ``sig`` (bytes) recovered with ``key``'s public half, or None
    when it is not a PKCS#1 type 1 block (wrong key, damaged or oversized signature).

    The public step stays in Python (one pow with e = 65537, ~50 us): the upload
    handler CGI checks one certificate a request, and cryptography's
    recover_data_from_signature would first cost its ~25 ms import.  As OpenSSL's
    RSA_public_decrypt (BOINC's decrypt_public), a signature shorter than the
    modulus is read as a number; the padding check is RSA_padding_check_PKCS1_type_1's
    (00 01, at least 8 bytes of ff, 00); tests/test_crypto_native.py holds it to
    cryptography's answers."""
    k = _modulus_bytes(key)
    if not sig or len(sig) > k:
        return None
    s = int.from_bytes(sig, "big")
    if s >= key.n:
        return None
    block = _be(pow(s, key.e, key.n), k)
    if block[:2] != b"\x00\x01":
        return None
    sep = block.find(b"\x00", 2)
    if sep < 10 or block[2:sep].strip(b"\xff"):
        return None
    return block[sep + 1:]


def sign_md5_hex(md5_hex, key):
    """Signature text over a 32-character MD5 hex digest (BOINC's raw scheme)."""
    return hex_lines(private_encrypt(md5_hex.encode("ascii"), key))


def recover_message(signature_text, key):
    """The message inside a signature (None when its padding is not PKCS#1 type 1)."""
    return public_decrypt(parse_hex(signature_text), key)


def verify_md5_hex(md5_hex, signature_text, key):
    """True when ``signature_text`` signs this MD5 hex digest with ``key``'s pair."""
    return recover_message(signature_text, key) == md5_hex.encode("ascii")


def md5_hex_of_file(path):
    from boincpy.files import md5_file
    return md5_file(path)[0]


def sign_file(path, key):
    """``sign_executable``'s output: the signature of the file's contents."""
    return sign_md5_hex(md5_hex_of_file(path), key)


def verify_file(path, signature_text, key):
    return verify_md5_hex(md5_hex_of_file(path), signature_text, key)


def _md5_of_text(text):
    data = text.encode("utf-8") if isinstance(text, str) else text
    return md5(data).hexdigest()


def sign_string(text, key):
    """Signature of a string's bytes (no terminator), as ``crypt_prog -sign_string``."""
    return sign_md5_hex(_md5_of_text(text), key)


def verify_string(text, signature_text, key):
    return verify_md5_hex(_md5_of_text(text), signature_text, key)


# -- upload certificates ----------------------------------------------------------

def upload_certificate_text(name, max_nbytes):
    """The exact text an upload certificate signs for one output file."""
    return "<name>%s</name><max_nbytes>%.0f</max_nbytes>" % (name, max_nbytes)


def sign_upload_certificate(name, max_nbytes, key):
    """The ``<xml_signature>`` text for an output file (signed with upload_private)."""
    return sign_string(upload_certificate_text(name, max_nbytes), key)


def verify_upload_certificate(name, max_nbytes, signature_text, key):
    """True when the certificate was made by the project's upload key for this file."""
    return verify_string(upload_certificate_text(name, max_nbytes), signature_text, key)


# -- X.509 certificate chains (crypt_prog -cert_verify) ----------------------------
#
# BOINC's check_validity (lib/crypt.cpp) verifies a code signature with any
# certificate of a directory whose chain OpenSSL's X509_verify_cert accepts,
# the trusted certificates being found by X509_LOOKUP_hash_dir: files named
# after the subject hash, HASH.0, HASH.1, ... (as `openssl rehash` / c_rehash
# leave a CA directory).  The functions below make the same decisions with
# `cryptography` and default OpenSSL settings: the chain must reach a
# self-signed certificate of the CA directory; every certificate must be in
# its validity period, every issuer a CA (basic constraints, key usage, path
# length) and its signature on the one below good; the root's own signature,
# revocation and name constraints are not checked (nor does OpenSSL by
# default).  cryptography is imported inside them, for the same reason as above.

# ASN.1 string tags whose values OpenSSL folds (trimmed, runs of white space made
# one space, ASCII lower-cased, as UTF-8) before hashing or comparing names
# (ASN1_MASK_CANON), with the codec that reads each
_CANON_STRINGS = {12: "utf-8", 19: "latin-1", 20: "latin-1", 22: "latin-1", 26: "latin-1",
                  28: "utf-32-be", 30: "utf-16-be"}

# critical extensions OpenSSL's verifier understands (X509_supported_extension)
_KNOWN_CRITICAL = frozenset((
    "2.5.29.15", "2.5.29.17", "2.5.29.19", "2.5.29.30", "2.5.29.32", "2.5.29.33",
    "2.5.29.36", "2.5.29.37", "2.5.29.54", "2.16.840.1.113730.1.1",
    "1.3.6.1.5.5.7.1.7", "1.3.6.1.5.5.7.1.8", "1.3.6.1.5.5.7.1.14"))

_MAX_CHAIN = 100               # X509_VERIFY_PARAM's default depth


def _der(tag, content):
    n = len(content)
    if n < 0x80:
        return bytes((tag, n)) + content
    size = n.to_bytes((n.bit_length() + 7) // 8, "big")
    return bytes((tag, 0x80 | len(size))) + size + content


def _der_items(data):
    """(tag, whole element, content) of each DER element in ``data`` (well formed:
    names re-encoded by cryptography)."""
    i = 0
    while i < len(data):
        tag, n, j = data[i], data[i + 1], i + 2
        if n & 0x80:
            k = n & 0x7f
            n, j = int.from_bytes(data[j:j + k], "big"), j + k
        yield tag, data[i:j + n], data[j:j + n]
        i = j + n


def _canonical_name(name):
    """OpenSSL's canonical encoding of an X.509 name (x509_name_canon): what its
    subject hash is taken of and what it compares names by."""
    (_, _, rdns), = _der_items(name.public_bytes())
    out = []
    for _, _, rdn in _der_items(rdns):
        avas = []
        for _, _, ava in _der_items(rdn):
            (_, oid, _), (tag, whole, value) = _der_items(ava)
            codec = _CANON_STRINGS.get(tag)
            if codec is not None:
                text = value.decode(codec, "replace").encode("utf-8")
                whole = _der(12, b" ".join(text.split()).lower())
            avas.append(_der(0x30, oid + whole))
        out.append(_der(0x31, b"".join(sorted(avas))))
    return b"".join(out)


def name_hash(name):
    """The 8 hex digits OpenSSL names a CA file by for this X.509 name
    (``openssl x509 -subject_hash``, X509_NAME_hash)."""
    import hashlib
    digest = hashlib.sha1(_canonical_name(name)).digest()
    return "%08x" % int.from_bytes(digest[:4], "little")


def read_certificate(path):
    """The first PEM certificate in the file ``path`` (other PEM blocks skipped, as
    OpenSSL's PEM_read_X509), or None when the file holds none or is not a
    regular readable file (BOINC passes over such files of a certificate directory)."""
    import os       # certificates: code signing, off the upload handler's path
    from cryptography import x509
    if not os.path.isfile(path):
        return None
    try:
        with open(path, "rb") as f:
            return x509.load_pem_x509_certificate(f.read())
    except (OSError, ValueError):
        return None


def _describe(cert, path):
    return "certificate '%s' (%s)" % (cert.subject.rfc4514_string(), path)


def _utc(when):
    return when.strftime("%Y-%m-%d %H:%M:%S UTC")


def _extension(cert, cls):
    """The value of ``cert``'s extension of class ``cls``; None when absent or
    malformed (the chain check then names the malformed one)."""
    from cryptography import x509
    try:
        return cert.extensions.get_extension_for_class(cls).value
    except (x509.ExtensionNotFound, ValueError):
        return None


def _key_ids_agree(cert, issuer):
    """False when ``cert`` names its issuer's key id and ``issuer`` has another one."""
    from cryptography import x509
    akid = _extension(cert, x509.AuthorityKeyIdentifier)
    skid = _extension(issuer, x509.SubjectKeyIdentifier)
    return not (akid and akid.key_identifier and skid
                and akid.key_identifier != skid.digest)


def _ca_certificates(ca_dirs, name):
    """(path, certificate) of each certificate filed under ``name``'s hash in the CA
    directories: HASH.0, HASH.1, ... up to the first missing number."""
    import os       # certificates: code signing, off the upload handler's path
    from cryptography import x509
    h = name_hash(name)
    for d in ca_dirs:
        for n in range(1 << 16):
            path = os.path.join(d, "%s.%d" % (h, n))
            try:
                with open(path, "rb") as f:
                    data = f.read()
            except OSError:
                break
            try:
                certs = x509.load_pem_x509_certificates(data)
            except ValueError:
                certs = []
            for cert in certs:
                yield path, cert


def _in_period(cert, at):
    return cert.not_valid_before_utc <= at <= cert.not_valid_after_utc


def _find_issuer(cert, ca_dirs, at):
    """The CA directory's issuer of ``cert`` as OpenSSL picks it: one whose name and key
    id match, preferably one valid at ``at``; None when there is none."""
    wanted = _canonical_name(cert.issuer)
    found = None
    for path, cand in _ca_certificates(ca_dirs, cert.issuer):
        if _canonical_name(cand.subject) == wanted and _key_ids_agree(cert, cand):
            found = (path, cand)
            if _in_period(cand, at):
                break
    return found


def _unfiled_hint(ca_dirs, name):
    """Why an issuer may not have been found: a file of the CA directory holds it, but
    not under the hash name OpenSSL's lookup reads."""
    import os       # certificates: code signing, off the upload handler's path
    wanted = _canonical_name(name)
    for d in ca_dirs:
        try:
            entries = sorted(os.listdir(d))
        except OSError as exc:
            return "; can't read CA directory %s: %s" % (d, exc.strerror)
        for entry in entries:
            cert = read_certificate(os.path.join(d, entry))
            if cert is not None and _canonical_name(cert.subject) == wanted:
                return ("; %s holds it, but the lookup reads only %s.0, %s.1, ... "
                        "(run `openssl rehash %s`)" % (os.path.join(d, entry),
                                                       name_hash(name), name_hash(name), d))
    return ""


def _check_ca(cert, path, below):
    """None when ``cert`` may issue the chain's ``below`` non-self-issued CAs under it,
    else why not (OpenSSL's check_chain_extensions)."""
    from cryptography import x509
    bc = _extension(cert, x509.BasicConstraints)
    ku = _extension(cert, x509.KeyUsage)
    if bc is not None and not bc.ca:
        return "%s is not a CA certificate (basic constraints CA:FALSE)" % _describe(cert, path)
    if ku is not None and not ku.key_cert_sign:
        return "%s may not sign certificates (key usage lacks keyCertSign)" % _describe(cert, path)
    if bc is None and ku is None and not (
            cert.version == x509.Version.v1
            and _canonical_name(cert.subject) == _canonical_name(cert.issuer)):
        return "%s is not a CA certificate (no basic constraints)" % _describe(cert, path)
    if bc is not None and bc.path_length is not None and below > bc.path_length:
        return "%s allows %d CA certificates under it, the chain has %d" % (
            _describe(cert, path), bc.path_length, below)
    return None


def verify_certificate_chain(cert, ca_dir, path="certificate", at=None):
    """Check ``cert`` (from the file ``path``) as BOINC's check_validity_of_cert has
    OpenSSL do it against the CA directory ``ca_dir`` (several may be given
    ``:``-separated, as OpenSSL's hash-dir lookup takes them), at the time ``at``
    (default now).  Return the chain, leaf first, as (path, certificate) pairs;
    raise KeyFileError naming the certificate that fails and why."""
    import datetime
    from cryptography.exceptions import InvalidSignature
    if at is None:
        at = datetime.datetime.now(datetime.timezone.utc)
    ca_dirs = [d for d in ca_dir.split(":") if d]
    chain = [(path, cert)]
    while True:
        cpath, cur = chain[-1]
        if _canonical_name(cur.subject) == _canonical_name(cur.issuer):
            # a self-signed leaf is trusted only when the CA directory holds it
            if len(chain) == 1 and not any(c == cur for _, c in
                                           _ca_certificates(ca_dirs, cur.subject)):
                raise KeyFileError("%s is self-signed and not in the CA directory %s"
                                   % (_describe(cur, cpath), ca_dir))
            break
        if len(chain) > _MAX_CHAIN:
            raise KeyFileError("certificate chain of %s is longer than %d"
                               % (_describe(cert, path), _MAX_CHAIN))
        issuer = _find_issuer(cur, ca_dirs, at)
        if issuer is None:
            raise KeyFileError("unable to get the issuer '%s' of %s from the CA directory %s%s"
                               % (cur.issuer.rfc4514_string(), _describe(cur, cpath), ca_dir,
                                  _unfiled_hint(ca_dirs, cur.issuer)))
        chain.append(issuer)
    below = 0
    for i, (cpath, cur) in enumerate(chain):
        if i > 0:
            why = _check_ca(cur, cpath, below)
            if why:
                raise KeyFileError(why)
            if _canonical_name(cur.subject) != _canonical_name(cur.issuer):
                below += 1
        try:
            critical = [e.oid.dotted_string for e in cur.extensions if e.critical]
        except ValueError as exc:
            raise KeyFileError("%s has a malformed extension: %s" % (_describe(cur, cpath), exc))
        unknown = [oid for oid in critical if oid not in _KNOWN_CRITICAL]
        if unknown:
            raise KeyFileError("%s has an unhandled critical extension %s"
                               % (_describe(cur, cpath), unknown[0]))
    for i in range(len(chain) - 1, -1, -1):          # from the root down, as OpenSSL
        cpath, cur = chain[i]
        if i + 1 < len(chain):
            try:
                cur.verify_directly_issued_by(chain[i + 1][1])
            except (InvalidSignature, ValueError, TypeError):
                raise KeyFileError("%s: the signature of its issuer %s does not verify"
                                   % (_describe(cur, cpath), chain[i + 1][0])) from None
        if at < cur.not_valid_before_utc:
            raise KeyFileError("%s is not valid before %s"
                               % (_describe(cur, cpath), _utc(cur.not_valid_before_utc)))
        if at > cur.not_valid_after_utc:
            raise KeyFileError("%s expired on %s"
                               % (_describe(cur, cpath), _utc(cur.not_valid_after_utc)))
    return chain


def certificate_key(cert):
    """The certificate's public key as an :class:`RsaKey` (KeyFileError when it is not
    RSA: BOINC's signatures are RSA only)."""
    from cryptography.hazmat.primitives.asymmetric import rsa
    key = cert.public_key()
    if not isinstance(key, rsa.RSAPublicKey):
        raise KeyFileError("only RSA keys are supported, the certificate has a %s key"
                           % type(key).__name__.lstrip("_"))
    numbers = key.public_numbers()
    return RsaKey(key.key_size, numbers.n, numbers.e)


def check_validity(certificate_dir, path, signature, ca_dir, at=None):
    """The path of the first certificate of ``certificate_dir`` (in name order) whose
    chain verifies against ``ca_dir`` and whose key made ``signature`` (bytes) of
    the file ``path``: BOINC's check_validity.  Files that hold no PEM certificate
    are passed over; KeyFileError lists why each certificate failed."""
    import os       # certificates: code signing, off the upload handler's path
    if not os.path.isfile(path):
        raise KeyFileError("%s is not a file" % path)
    try:
        md5_hex = md5_hex_of_file(path).encode("ascii")
    except OSError as exc:
        raise KeyFileError("can't read %s: %s" % (path, exc.strerror)) from None
    try:
        entries = sorted(os.listdir(certificate_dir))
    except OSError as exc:
        raise KeyFileError("can't read certificate directory %s: %s"
                           % (certificate_dir, exc.strerror)) from None
    failures = []
    for entry in entries:
        cpath = os.path.join(certificate_dir, entry)
        cert = read_certificate(cpath)
        if cert is None:
            continue
        try:
            verify_certificate_chain(cert, ca_dir, cpath, at)
            recovered = public_decrypt(signature, certificate_key(cert))
        except KeyFileError as exc:
            failures.append("%s: %s" % (cpath, exc.message))
            continue
        if recovered == md5_hex:
            return cpath
        failures.append("%s: %s" % (cpath, "the signature is of other data (%s changed?)" % path
                                    if recovered else
                                    "the signature was not made with this certificate's key "
                                    "(or is damaged)"))
    if not failures:
        raise KeyFileError("no PEM certificate in %s" % certificate_dir)
    raise KeyFileError("no certificate in %s verifies the signature of %s:\n  %s"
                       % (certificate_dir, path, "\n  ".join(failures)))
