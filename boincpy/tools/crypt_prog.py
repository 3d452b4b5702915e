"""crypt_prog and sign_executable: BOINC's key and signature tools.

    crypt_prog -genkey n private_keyfile public_keyfile
    crypt_prog -sign file private_keyfile
    crypt_prog -sign_string string private_keyfile
    crypt_prog -verify file signature_file public_keyfile
    crypt_prog -verify_string string signature_file public_keyfile
    crypt_prog -test_crypt private_keyfile public_keyfile
    crypt_prog -convkey o2b|b2o priv|pub input_file output_file
    crypt_prog -convsig b2o|o2b input_file output_file
    crypt_prog -cert_verify file signature_file certificate_dir ca_dir
    sign_executable data_file private_key_file

Behaviour follows lib/crypt_prog.cpp and tools/sign_executable.cpp: output on
stdout, errors on stderr as ``Error: WHAT`` (WHAT starts with the name of the
C++ step that failed, then says which file and why), exit status 1 for usage
errors and an invalid signature, 2 for any other error; sign_executable exits
1 on any error.  Options may be written with one dash or two.

``-verify`` distinguishes, as the C++ tool does, a signature that decrypts
to another digest ("signature is invalid", exit 1: the file changed) from one
that does not decrypt with the key at all (an error, exit 2: another key, or a
damaged signature).  ``-convkey b2o`` writes PKCS#1 PEM (``RSA PRIVATE KEY`` /
``RSA PUBLIC KEY``, OpenSSL 3's default encoding, as BOINC's tool does);
``o2b`` reads PKCS#1, PKCS#8 and SubjectPublicKeyInfo PEM.

``-cert_verify`` is lib/crypt.cpp's check_validity: the signature (BOINC hex
text, as ``-sign`` writes it) is accepted when a PEM certificate in
certificate_dir has a chain that verifies against ca_dir and holds the key
that made it.  ca_dir is read as OpenSSL's hash-dir lookup reads it: only files
named after a certificate's subject hash (``HASH.0``, ``HASH.1``, ... as
``openssl rehash`` leaves them).  The certificates are tried in name order
(BOINC takes the directory's order) and the line printed is BOINC's, without a
space before the path; when none verifies, the error lists each certificate
and why it failed (boincpy.crypto.verify_certificate_chain).
"""

import hashlib
import sys

import click

from boincpy import crypto
from boincpy.cli import click_main, option
from boincpy.cnum import atoi
from boincpy.errors import BoincpyError, KeyFileError
from boincpy.files import atomic_write, md5_file

USAGE = """Usage: crypt_prog options

Options:

-genkey n private_keyfile public_keyfile
    create an n-bit key pair
-sign file private_keyfile
    create a signature for a given file, write to stdout
-sign_string string private_keyfile
    create a signature for a given string
-verify file signature_file public_keyfile
    verify a file signature
-verify_string string signature_file public_keyfile
    verify a string signature
-test_crypt private_keyfile public_keyfile
    test encrypt/decrypt functions
-convkey o2b/b2o priv/pub input_file output_file
    convert keys between BOINC and OpenSSL format
-convsig b2o/o2b input_file output_file
    convert signature between BOINC and OpenSSL format
-cert_verify file signature certificate_dir ca_dir
    verify a signature using a directory of certificates
"""

SIGN_EXECUTABLE_USAGE = """syntax: sign_executable data_file private_key_file

Writes signature to stdout.
"""

# verify_string reads at most this much of the signature file, as the C++ tool does
_STRING_SIGNATURE_MAX = 511


class _Fail(BoincpyError):
    """An error of one crypt_prog operation: ``Error: ...`` and exit 2."""

    exit_code = 2


def _step(name, exc):
    """A _Fail for the C++ step ``name`` carrying the reason in ``exc``."""
    return _Fail("%s: %s" % (name, exc))


def _private(path, step="scan_private_key_hex"):
    try:
        return crypto.read_private_key(path)
    except KeyFileError as exc:
        raise _step(step, exc) from None


def _public(path, step="read_public_key"):
    try:
        return crypto.read_public_key(path)
    except KeyFileError as exc:
        raise _step(step, exc) from None


def _read_bytes(path, step, limit=None):
    try:
        with open(path, "rb") as f:
            return f.read() if limit is None else f.read(limit)
    except OSError as exc:
        raise _Fail("%s: can't read %s: %s" % (step, path, exc.strerror)) from None


def _write(path, data, mode=0o644):
    try:
        atomic_write(path, data, mode=mode)
    except OSError as exc:
        raise _Fail("fopen: can't write %s: %s" % (path, exc.strerror)) from None


def _md5_of_file(path):
    try:
        return md5_file(path)[0]
    except OSError as exc:
        raise _Fail("md5_file: can't read %s: %s" % (path, exc.strerror)) from None


def _arg_bytes(text):
    """The bytes of a command-line argument as the C++ tool sees them."""
    return text.encode("utf-8", "surrogateescape")


def _signature_bytes(path, step="scan_hex_data"):
    """The signature in a BOINC hex signature file (error when there is none)."""
    text = _read_bytes(path, step).decode("ascii", "replace")
    sig = crypto.parse_hex(text)
    if not sig:
        raise _Fail("%s: %s holds no hex signature data" % (step, path))
    return sig


# -- operations ---------------------------------------------------------------

def genkey(nbits, private_path, public_path, out):
    """-genkey: write a new key pair (only 1024 bits, as BOINC's structures hold)."""
    if nbits != crypto.KEY_BITS:
        raise _Fail("only %d-bit keys are supported" % crypto.KEY_BITS)
    out.write("creating keys in %s and %s\n" % (private_path, public_path))
    key = crypto.generate_key(nbits)
    _write(private_path, crypto.key_text(key), mode=0o600)
    _write(public_path, crypto.key_text(key.public()))
    return 0


def sign(path, private_path, out):
    """-sign: the signature text of a file's contents."""
    key = _private(private_path)
    out.write(crypto.sign_md5_hex(_md5_of_file(path), key))
    return 0


def sign_string(text, private_path, out):
    """-sign_string: the signature text of a string's bytes."""
    key = _private(private_path)
    out.write(crypto.sign_string(_arg_bytes(text), key))
    return 0


def _report(recovered, md5_hex, step, out):
    if not recovered:
        raise _Fail("%s: the signature does not decrypt with this public key "
                    "(made with another key, or damaged)" % step)
    if recovered != md5_hex.encode("ascii"):
        out.write("signature is invalid\n")
        return 1
    out.write("signature is valid\n")
    return 0


def verify(path, signature_path, public_path, out):
    """-verify: 0 "signature is valid", 1 "signature is invalid", 2 on errors."""
    key = _public(public_path)
    sig = _signature_bytes(signature_path)
    md5_hex = _md5_of_file(path)
    return _report(crypto.public_decrypt(sig, key), md5_hex, "check_file_signature", out)


def verify_string(text, signature_path, public_path, out):
    """-verify_string: as -verify for the bytes of a string."""
    key = _public(public_path)
    data = _read_bytes(signature_path, "fopen", _STRING_SIGNATURE_MAX)
    sig = crypto.parse_hex(data.decode("ascii", "replace"))
    if not sig:
        raise _Fail("check_string_signature: %s holds no hex signature data" % signature_path)
    md5_hex = hashlib.md5(_arg_bytes(text)).hexdigest()
    return _report(crypto.public_decrypt(sig, key), md5_hex, "check_string_signature", out)


def test_crypt(private_path, public_path, out):
    """-test_crypt: encrypt a test string with the private key, decrypt it with the
    public one and print what came back (proves the two files are a pair)."""
    private = _private(private_path)
    public = _public(public_path)
    message = b"encryption test successful"
    block = crypto.private_encrypt(message, private)
    back = crypto.public_decrypt(block, public)
    if not back:
        raise _Fail("decrypt_public: %s is not the public half of %s"
                    % (public_path, private_path))
    out.write("out: %s\n" % back.decode("ascii", "replace"))
    return 0


def convsig(direction, input_path, output_path):
    """-convsig b2o: BOINC hex text -> raw bytes; o2b: raw bytes -> BOINC hex text."""
    if direction == "b2o":
        sig = _signature_bytes(input_path)
        _write(output_path, sig)
        return 0
    if direction == "o2b":
        raw = _read_bytes(input_path, "fopen")
        if not raw:
            raise _Fail("scan_raw_data: %s is empty" % input_path)
        _write(output_path, crypto.hex_lines(raw))
        return 0
    raise _Fail("invalid conversion type: " + direction)


def convkey(direction, key_type, input_path, output_path):
    """-convkey b2o (BOINC text -> PEM) or o2b (PEM -> BOINC text), priv or pub."""
    if direction not in ("b2o", "o2b"):
        raise _Fail("invalid conversion type: " + direction)
    if key_type not in ("priv", "pub"):
        raise _Fail("invalid key type: " + key_type)
    private = key_type == "priv"
    if direction == "b2o":
        if private:
            key = _private(input_path)
        else:
            key = _public(input_path, "scan_public_key_hex")
        _write(output_path, crypto.key_to_pem(key), mode=0o600 if private else 0o644)
        return 0
    pem = _read_bytes(input_path, "fopen")
    try:
        key = crypto.key_from_pem(pem, private, input_path)
    except KeyFileError as exc:
        raise _Fail("could not load %s key. %s" % ("private" if private else "public",
                                                   exc)) from None
    if not private:
        key = key.public()
    _write(output_path, crypto.key_text(key), mode=0o600 if private else 0o644)
    return 0


def cert_verify(path, signature_path, certificate_dir, ca_dir, out):
    """-cert_verify: 0 and the certificate's path when one of certificate_dir, with a
    chain ca_dir trusts, made the signature of ``path``; 2 with the reasons otherwise."""
    sig = _signature_bytes(signature_path)
    try:
        cert_path = crypto.check_validity(certificate_dir, path, sig, ca_dir)
    except KeyFileError as exc:
        raise _step("check_validity", exc) from None
    # BOINC's line, its missing space included: scripts may match it
    out.write("signature verified using certificate%s\n" % cert_path)
    return 0


# -- command lines ------------------------------------------------------------------

# operation -> number of arguments after it
_OPERATIONS = {
    "genkey": 3, "sign": 2, "sign_string": 2, "verify": 3, "verify_string": 3,
    "test_crypt": 2, "convsig": 3, "convkey": 4, "cert_verify": 4,
}


def run(argv, out=None):
    """Run crypt_prog with ``argv`` (without the program name); return the exit status."""
    return click_main(_command(out or sys.stdout), list(argv), "crypt_prog", USAGE,
                      say_why=False)


def _command(out):
    """crypt_prog's command line: exactly one operation, ``-op ARG...``."""
    params = [option(name, nargs=nargs, default=None) for name, nargs in _OPERATIONS.items()]

    def crypt_prog(**ops):
        given = [(name, args) for name, args in ops.items() if args]
        if len(given) != 1:
            raise click.UsageError("give one operation")
        name, a = given[0]
        try:
            return _operation(name, a, out)
        except BoincpyError as exc:
            sys.stdout.flush()
            sys.stderr.write("Error: %s\n" % exc.message)
            return exc.exit_code if exc.exit_code else 2
    return click.Command("crypt_prog", params=params, callback=crypt_prog,
                         add_help_option=False)


def _operation(name, a, out):
    if name == "genkey":
        return genkey(atoi(a[0]), a[1], a[2], out)
    if name == "sign":
        return sign(a[0], a[1], out)
    if name == "sign_string":
        return sign_string(a[0], a[1], out)
    if name == "verify":
        return verify(a[0], a[1], a[2], out)
    if name == "verify_string":
        return verify_string(a[0], a[1], a[2], out)
    if name == "test_crypt":
        return test_crypt(a[0], a[1], out)
    if name == "convsig":
        return convsig(a[0], a[1], a[2])
    if name == "cert_verify":
        return cert_verify(a[0], a[1], a[2], a[3], out)
    return convkey(a[0], a[1], a[2], a[3])


def main(argv=None):
    """Entry point of bin/crypt_prog."""
    if argv is None:
        argv = sys.argv[1:]
    if not argv:
        sys.stderr.write(USAGE)
        sys.exit(1)
    try:
        status = run(argv)
    except KeyboardInterrupt:
        status = 130
    sys.stdout.flush()
    sys.exit(status)


def sign_executable(path, private_path):
    """The signature text of a file, as tools/sign_executable prints it."""
    try:
        key = crypto.read_private_key(private_path)
    except KeyFileError as exc:
        raise KeyFileError("can't read key: %s" % exc) from None
    try:
        md5_hex = md5_file(path)[0]
    except OSError as exc:
        raise KeyFileError("can't sign file: can't read %s: %s"
                           % (path, exc.strerror)) from None
    return crypto.sign_md5_hex(md5_hex, key)


def sign_executable_main(argv=None):
    """Entry point of bin/sign_executable: print the signature; exit 1 on any error."""

    @click.command(add_help_option=False)
    @click.argument("data_file")
    @click.argument("private_key_file")
    def sign_executable_cmd(data_file, private_key_file):
        try:
            text = sign_executable(data_file, private_key_file)
        except BoincpyError as exc:
            sys.stderr.write("sign_executable: %s\n" % exc.message)
            return 1
        sys.stdout.write(text)
        sys.stdout.flush()
        return 0
    sys.exit(click_main(sign_executable_cmd, argv, "sign_executable", SIGN_EXECUTABLE_USAGE,
                        say_why=False))
