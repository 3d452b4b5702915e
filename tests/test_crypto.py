"""Keys and signatures: bin/crypt_prog, bin/sign_executable and boincpy.crypto.

Formats are checked three independent ways: by hand (the key file's numbers
read with int(hex, 16) and the signature computed with pow()), with
``cryptography`` / the openssl command on the converted PEM keys, and with
BOINC's own C++ code (the client's libboinc_crypt, see cxx_crypt.py).
"""

import hashlib
import os
import shutil
import subprocess
import sys

import pytest

from tests.shared_fixtures import fixture_path

from boincpy import crypto
from boincpy.errors import KeyFileError
from cxx_crypt import boinc_crypt  # noqa: F401  (fixture)
from conftest import altered

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _fixtures():
    """The shared captured fixtures."""
    return fixture_path()


def tool(name, *args, cwd=None, input=None):
    """Run bin/NAME with this interpreter; return the CompletedProcess (text)."""
    return subprocess.run([sys.executable, os.path.join(REPO, "bin", name)]
                          + [str(a) for a in args], cwd=cwd, input=input,
                          capture_output=True, text=True)


@pytest.fixture(scope="module")
def keys(tmp_path_factory):
    """A key pair made by bin/crypt_prog -genkey, plus a second, unrelated pair."""
    d = tmp_path_factory.mktemp("keys")
    proc = tool("crypt_prog", "-genkey", "1024", d / "priv", d / "pub")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "creating keys in %s and %s\n" % (d / "priv", d / "pub")
    other = tool("crypt_prog", "-genkey", "1024", d / "priv2", d / "pub2")
    assert other.returncode == 0
    return d


def numbers(path):
    """The integers of a BOINC key file, read independently of boincpy: the hex
    lines joined and cut at the RSAREF field offsets."""
    lines = open(path).read().split("\n")
    body = bytes.fromhex("".join(lines[1:lines.index(".")]))
    fields = [("n", 0, 128), ("e", 128, 128), ("d", 256, 128), ("p", 384, 64),
              ("q", 448, 64), ("dmp1", 512, 64), ("dmq1", 576, 64), ("iqmp", 640, 64)]
    return {name: int.from_bytes(body[o:o + w], "big") for name, o, w in fields
            if o + w <= len(body)}


# -- file layouts ------------------------------------------------------------------

def test_key_files_have_boincs_exact_layout(keys):
    for name, nlines, nbytes in (("pub", 10, 256), ("priv", 24, 704)):
        data = (keys / name).read_bytes()
        assert data.endswith(b"\n.\n") and b"\r" not in data
        lines = data.decode().split("\n")
        assert lines[-1] == ""
        lines = lines[:-1]
        assert len(lines) == nlines
        assert lines[0] == "1024"
        assert lines[-1] == "."
        hex_lines = lines[1:-1]
        assert all(len(line) == 64 for line in hex_lines)
        assert all(c in "0123456789abcdef" for line in hex_lines for c in line)
        assert len(bytes.fromhex("".join(hex_lines))) == nbytes
    pub = (keys / "pub").read_text().split("\n")
    assert pub[8].endswith("00010001")            # e = 65537, zero-padded to 128 bytes
    assert (keys / "priv").stat().st_mode & 0o077 == 0


def test_key_numbers_form_an_rsa_key(keys):
    k = numbers(keys / "priv")
    assert k["n"].bit_length() == 1024 and k["e"] == 65537
    assert k["p"] * k["q"] == k["n"]
    assert k["dmp1"] == k["d"] % (k["p"] - 1) and k["dmq1"] == k["d"] % (k["q"] - 1)
    assert k["iqmp"] * k["q"] % k["p"] == 1
    assert numbers(keys / "pub") == {"n": k["n"], "e": k["e"]}


def test_boinc_reads_and_rewrites_our_keys_identically(keys, boinc_crypt):
    for name, private in (("pub", False), ("priv", True)):
        assert boinc_crypt.rewrite_key(keys / name, private) == (keys / name).read_text()


def test_reference_server_key_parses():
    """The code_sign_key the C++ reference server sent to the stock client."""
    reply = open(os.path.join(_fixtures(), "reference-server/sched/"
                              "01_attach_first_rpc.reply.xml")).read()
    text = reply.split("<code_sign_key>\n", 1)[1].split("</code_sign_key>", 1)[0]
    key = crypto.parse_key(text, "fixture")
    assert not key.is_private and key.e == 65537 and key.n.bit_length() == 1024
    assert crypto.key_text(key) == text


# -- signatures ------------------------------------------------------------------------

def test_signature_layout_and_known_answer(keys, tmp_path):
    data = tmp_path / "app"
    data.write_bytes(bytes(range(256)) * 40)
    proc = tool("crypt_prog", "-sign", data, keys / "priv")
    assert proc.returncode == 0 and proc.stderr == ""
    sig = proc.stdout
    assert len(sig) == 262
    lines = sig.split("\n")
    assert lines[4:] == [".", ""] and all(len(x) == 64 for x in lines[:4])
    # by hand: PKCS#1 type 1 block around the ASCII MD5 hex, raised to d mod n
    k = numbers(keys / "priv")
    md5hex = hashlib.md5(data.read_bytes()).hexdigest().encode()
    block = b"\x00\x01" + b"\xff" * (128 - 3 - 32) + b"\x00" + md5hex
    expected = pow(int.from_bytes(block, "big"), k["d"], k["n"]).to_bytes(128, "big")
    assert bytes.fromhex("".join(lines[:4])) == expected


def test_sign_verify_round_trip(keys, tmp_path):
    f = tmp_path / "file"
    f.write_bytes(b"some application\x00\xff")
    sig = tmp_path / "file.sig"
    sig.write_text(tool("crypt_prog", "-sign", f, keys / "priv").stdout)
    ok = tool("crypt_prog", "-verify", f, sig, keys / "pub")
    assert (ok.returncode, ok.stdout) == (0, "signature is valid\n")
    f.write_bytes(b"some application\x00\xfe")
    bad = tool("crypt_prog", "-verify", f, sig, keys / "pub")
    assert (bad.returncode, bad.stdout) == (1, "signature is invalid\n")
    # a signature made with another key does not even decrypt: an error, as in C++
    other = tool("crypt_prog", "-verify", f, sig, keys / "pub2")
    assert other.returncode == 2 and other.stderr.startswith("Error: check_file_signature")


def test_sign_executable_output_verifies(keys, tmp_path):
    f = tmp_path / "example_app"
    f.write_bytes(os.urandom(5000))
    proc = tool("sign_executable", f, keys / "priv")
    assert proc.returncode == 0 and proc.stderr == ""
    assert proc.stdout == tool("crypt_prog", "-sign", f, keys / "priv").stdout
    (tmp_path / "sig").write_text(proc.stdout)
    ok = tool("crypt_prog", "-verify", f, tmp_path / "sig", keys / "pub")
    assert ok.returncode == 0 and ok.stdout == "signature is valid\n"


def test_signatures_match_boincs_cxx_code(keys, tmp_path, boinc_crypt):
    f = tmp_path / "bin"
    f.write_bytes(os.urandom(70000))
    ours = tool("sign_executable", f, keys / "priv").stdout
    assert boinc_crypt.sign(f, keys / "priv") == ours          # deterministic padding
    (tmp_path / "sig").write_text(ours)
    assert boinc_crypt.verify_file(f, tmp_path / "sig", keys / "pub") == (0, True)
    assert boinc_crypt.verify_file(f, tmp_path / "sig", keys / "pub2")[1] is False
    text = "<name>x_0</name><max_nbytes>5000000</max_nbytes>"
    (tmp_path / "ssig").write_text(tool("crypt_prog", "-sign_string", text, keys / "priv").stdout)
    assert boinc_crypt.verify_string(text, tmp_path / "ssig", keys / "pub") == (0, True)
    assert boinc_crypt.verify_string(text + " ", tmp_path / "ssig", keys / "pub")[1] is False


def test_sign_string_and_verify_string(keys, tmp_path):
    proc = tool("crypt_prog", "-sign_string", "hello world", keys / "priv")
    assert proc.returncode == 0 and len(proc.stdout) == 262
    k = numbers(keys / "pub")
    s = int(proc.stdout.replace("\n", "").rstrip("."), 16)
    recovered = pow(s, k["e"], k["n"]).to_bytes(128, "big")
    assert recovered.endswith(b"\x00" + hashlib.md5(b"hello world").hexdigest().encode())
    (tmp_path / "s").write_text(proc.stdout)
    ok = tool("crypt_prog", "-verify_string", "hello world", tmp_path / "s", keys / "pub")
    assert (ok.returncode, ok.stdout) == (0, "signature is valid\n")
    bad = tool("crypt_prog", "-verify_string", "hello World", tmp_path / "s", keys / "pub")
    assert (bad.returncode, bad.stdout) == (1, "signature is invalid\n")


def test_test_crypt(keys):
    ok = tool("crypt_prog", "-test_crypt", keys / "priv", keys / "pub")
    assert (ok.returncode, ok.stdout) == (0, "out: encryption test successful\n")
    mismatch = tool("crypt_prog", "-test_crypt", keys / "priv", keys / "pub2")
    assert mismatch.returncode == 2 and "pub2" in mismatch.stderr


# -- PEM conversion ---------------------------------------------------------------------

def test_convkey_both_ways(keys, tmp_path):
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import padding, rsa
    assert tool("crypt_prog", "-convkey", "b2o", "priv", keys / "priv",
                tmp_path / "priv.pem").returncode == 0
    assert tool("crypt_prog", "-convkey", "b2o", "pub", keys / "pub",
                tmp_path / "pub.pem").returncode == 0
    priv_pem = (tmp_path / "priv.pem").read_bytes()
    pub_pem = (tmp_path / "pub.pem").read_bytes()
    assert priv_pem.startswith(b"-----BEGIN RSA PRIVATE KEY-----\n")
    assert pub_pem.startswith(b"-----BEGIN RSA PUBLIC KEY-----\n")
    private = serialization.load_pem_private_key(priv_pem, None)
    public = serialization.load_pem_public_key(pub_pem)
    k = numbers(keys / "priv")
    assert isinstance(private, rsa.RSAPrivateKey)
    pn = private.private_numbers()
    assert (pn.public_numbers.n, pn.public_numbers.e, pn.d, pn.p, pn.q) == (
        k["n"], k["e"], k["d"], k["p"], k["q"])
    assert public.public_numbers().n == k["n"]
    # a BOINC signature recovers through the converted public key
    f = tmp_path / "f"
    f.write_bytes(b"abc" * 1000)
    sig = tool("crypt_prog", "-sign", f, keys / "priv").stdout
    raw = bytes.fromhex(sig.replace("\n", "").rstrip("."))
    assert public.recover_data_from_signature(raw, padding.PKCS1v15(), None) == \
        hashlib.md5(f.read_bytes()).hexdigest().encode()
    # and back: PEM -> BOINC gives the same files
    for kind, name in (("priv", "priv"), ("pub", "pub")):
        out = tmp_path / (name + ".back")
        proc = tool("crypt_prog", "-convkey", "o2b", kind, tmp_path / (name + ".pem"), out)
        assert proc.returncode == 0, proc.stderr
        assert out.read_text() == (keys / name).read_text()


def test_convkey_o2b_reads_openssl_formats(keys, tmp_path):
    """PKCS#8 private keys and SubjectPublicKeyInfo public keys (what `openssl`
    and `cryptography` write by default) convert to the same BOINC files."""
    from cryptography.hazmat.primitives import serialization
    tool("crypt_prog", "-convkey", "b2o", "priv", keys / "priv", tmp_path / "p1.pem")
    key = serialization.load_pem_private_key((tmp_path / "p1.pem").read_bytes(), None)
    (tmp_path / "p8.pem").write_bytes(key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption()))
    (tmp_path / "spki.pem").write_bytes(key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
    assert tool("crypt_prog", "-convkey", "o2b", "priv", tmp_path / "p8.pem",
                tmp_path / "p8").returncode == 0
    assert (tmp_path / "p8").read_text() == (keys / "priv").read_text()
    assert tool("crypt_prog", "-convkey", "o2b", "pub", tmp_path / "spki.pem",
                tmp_path / "spki").returncode == 0
    assert (tmp_path / "spki").read_text() == (keys / "pub").read_text()
    # BOINC's PEM_read_bio_PUBKEY does not take a private key PEM either
    assert tool("crypt_prog", "-convkey", "o2b", "pub", tmp_path / "p1.pem",
                tmp_path / "half").returncode == 2   # a private PEM is not a public key


@pytest.mark.skipif(not shutil.which("openssl"), reason="no openssl command")
def test_openssl_recovers_md5_with_converted_key(keys, tmp_path):
    f = tmp_path / "f"
    f.write_bytes(os.urandom(1234))
    (tmp_path / "sig").write_text(tool("crypt_prog", "-sign", f, keys / "priv").stdout)
    assert tool("crypt_prog", "-convsig", "b2o", tmp_path / "sig",
                tmp_path / "sig.raw").returncode == 0
    assert (tmp_path / "sig.raw").stat().st_size == 128
    tool("crypt_prog", "-convkey", "b2o", "pub", keys / "pub", tmp_path / "pub.pem")
    proc = subprocess.run(["openssl", "pkeyutl", "-verifyrecover", "-pubin", "-inkey",
                           tmp_path / "pub.pem", "-in", tmp_path / "sig.raw",
                           "-pkeyopt", "rsa_padding_mode:pkcs1"], capture_output=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == hashlib.md5(f.read_bytes()).hexdigest().encode()
    tool("crypt_prog", "-convkey", "b2o", "priv", keys / "priv", tmp_path / "priv.pem")
    check = subprocess.run(["openssl", "rsa", "-in", tmp_path / "priv.pem", "-check",
                            "-noout"], capture_output=True, text=True)
    assert check.returncode == 0 and "RSA key ok" in check.stdout


def test_convsig_round_trip(keys, tmp_path):
    f = tmp_path / "f"
    f.write_bytes(b"x")
    (tmp_path / "sig").write_text(tool("crypt_prog", "-sign", f, keys / "priv").stdout)
    to_raw = tool("crypt_prog", "-convsig", "b2o", tmp_path / "sig", tmp_path / "raw")
    back = tool("crypt_prog", "-convsig", "o2b", tmp_path / "raw", tmp_path / "back")
    assert to_raw.returncode == 0 and back.returncode == 0
    assert (tmp_path / "back").read_text() == (tmp_path / "sig").read_text()
    (tmp_path / "empty").write_bytes(b"")
    assert tool("crypt_prog", "-convsig", "o2b", tmp_path / "empty", tmp_path / "x").returncode == 2
    assert tool("crypt_prog", "-convsig", "b2o", tmp_path / "empty", tmp_path / "x").returncode == 2
    bad = tool("crypt_prog", "-convsig", "x2y", tmp_path / "raw", tmp_path / "x")
    assert bad.returncode == 2 and bad.stderr == "Error: invalid conversion type: x2y\n"


# -- bad input ------------------------------------------------------------------------------

def _bad_keys(keys, d):
    """name -> (path, why) for key files no tool may accept as a private key."""
    priv = (keys / "priv").read_text()
    lines = priv.split("\n")
    out = {}

    def put(name, text):
        (d / name).write_text(text)
        out[name] = d / name
    put("truncated_mid_line", priv[:700])
    put("truncated_no_dot", "\n".join(lines[:23]) + "\n")        # all hex lines, no '.'
    put("cut_at_line", "\n".join(lines[:12]) + "\n")
    put("extra_line", "\n".join(lines[:23] + [lines[5]] + lines[23:]))
    put("not_a_key", "hello, I am not a key\n")
    put("empty", "")
    flipped = list(priv)
    pos = priv.index("\n", 0) + 1 + 65 * 17 + 10            # inside d mod (p-1)
    flipped[pos] = "0" if flipped[pos] != "0" else "1"
    put("damaged_crt", "".join(flipped))
    put("garbage_in_hex", priv.replace(lines[3], lines[3][:30] + "zz" + lines[3][32:]))
    tool("crypt_prog", "-convkey", "b2o", "priv", keys / "priv", d / "pem")
    out["pem"] = d / "pem"
    out["public_key"] = keys / "pub"
    out["missing"] = d / "does_not_exist"
    return out


def test_bad_private_keys_are_refused_by_name(keys, tmp_path):
    f = tmp_path / "f"
    f.write_bytes(b"data")
    for name, path in _bad_keys(keys, tmp_path).items():
        for prog, args, status in (("crypt_prog", ("-sign", f, path), 2),
                                   ("crypt_prog", ("-sign_string", "x", path), 2),
                                   ("crypt_prog", ("-convkey", "b2o", "priv", path,
                                                   tmp_path / "o"), 2),
                                   ("sign_executable", (f, path), 1)):
            proc = tool(prog, *args)
            assert proc.returncode == status, (name, prog, proc)
            assert proc.stdout == "", (name, prog)
            assert str(path) in proc.stderr, (name, prog, proc.stderr)
        assert not (tmp_path / "o").exists()


def test_bad_key_messages_say_what_is_wrong(keys, tmp_path):
    bad = _bad_keys(keys, tmp_path)
    expect = {"truncated_mid_line": "truncated", "truncated_no_dot": "truncated",
              "cut_at_line": "truncated", "extra_line": "bytes",
              "not_a_key": "not a BOINC key file", "damaged_crt": "inconsistent",
              "garbage_in_hex": "line 4: unexpected character", "pem": "convkey o2b",
              "public_key": "is a public key", "missing": "No such file"}
    for name, word in expect.items():
        proc = tool("sign_executable", tmp_path / "missing_data_is_checked_later", bad[name])
        assert word in proc.stderr, (name, proc.stderr)


def test_public_key_tools_refuse_private_and_bad_keys(keys, tmp_path):
    f = tmp_path / "f"
    f.write_bytes(b"data")
    (tmp_path / "sig").write_text(tool("crypt_prog", "-sign", f, keys / "priv").stdout)
    for path in (keys / "priv", tmp_path / "nope"):
        proc = tool("crypt_prog", "-verify", f, tmp_path / "sig", path)
        assert proc.returncode == 2 and str(path) in proc.stderr
    (tmp_path / "short_pub").write_text((keys / "pub").read_text()[:300])
    proc = tool("crypt_prog", "-verify", f, tmp_path / "sig", tmp_path / "short_pub")
    assert proc.returncode == 2 and "truncated" in proc.stderr


def test_bad_signature_and_data_files(keys, tmp_path):
    f = tmp_path / "f"
    f.write_bytes(b"data")
    (tmp_path / "empty_sig").write_text("")
    (tmp_path / "junk_sig").write_text(".\n")
    (tmp_path / "sig").write_text(tool("crypt_prog", "-sign", f, keys / "priv").stdout)
    for sig in ("empty_sig", "junk_sig", "missing_sig"):
        proc = tool("crypt_prog", "-verify", f, tmp_path / sig, keys / "pub")
        assert proc.returncode == 2, sig
        assert proc.stderr.startswith("Error: ")
    missing = tool("crypt_prog", "-verify", tmp_path / "nofile", tmp_path / "sig", keys / "pub")
    assert missing.returncode == 2 and "md5_file" in missing.stderr
    assert "nofile" in missing.stderr
    # a damaged signature: a flipped digit no longer decrypts
    text = (tmp_path / "sig").read_text()
    (tmp_path / "flipped").write_text(("0" if text[5] != "0" else "1").join(
        [text[:5], text[6:]]))
    assert tool("crypt_prog", "-verify", f, tmp_path / "flipped", keys / "pub").returncode in (1, 2)
    assert tool("crypt_prog", "-sign", tmp_path / "nofile", keys / "priv").returncode == 2
    nofile = tool("sign_executable", tmp_path / "nofile", keys / "priv")
    assert nofile.returncode == 1 and "can't sign file" in nofile.stderr
    assert "nofile" in nofile.stderr


def test_usage_and_argument_errors(keys, tmp_path):
    for args in ((), ("-sign",), ("-sign", "a"), ("-genkey", "1024", "a"), ("-bogus", "a", "b"),
                 ("sign", "a", "b"), ("-verify", "a", "b")):
        proc = tool("crypt_prog", *args)
        assert proc.returncode == 1 and proc.stderr.startswith("Usage: crypt_prog options")
    proc = tool("crypt_prog", "-genkey", "512", tmp_path / "a", tmp_path / "b")
    assert (proc.returncode, proc.stderr) == (2, "Error: only 1024-bit keys are supported\n")
    assert not (tmp_path / "a").exists()
    for args in ((), ("a",), ("a", "b", "c")):
        proc = tool("sign_executable", *args)
        assert proc.returncode == 1
        assert proc.stderr == "syntax: sign_executable data_file private_key_file\n\n" \
                              "Writes signature to stdout.\n"
    bad = tool("crypt_prog", "-convkey", "b2o", "secret", keys / "priv", tmp_path / "o")
    assert bad.returncode == 2 and bad.stderr == "Error: invalid key type: secret\n"
    # both spellings of an option work
    assert tool("crypt_prog", "--test_crypt", keys / "priv", keys / "pub").returncode == 0
    unwritable = tool("crypt_prog", "-genkey", "1024", tmp_path / "no" / "a", tmp_path / "b")
    assert unwritable.returncode == 2 and str(tmp_path / "no" / "a") in unwritable.stderr


# -- boincpy.crypto directly ------------------------------------------------------------

def test_damaged_private_key_is_detected_not_used(keys):
    """A flipped digit in a CRT field used to pass (p*q == n still held) and then
    produced signatures no client accepts; now the key is refused."""
    text = (keys / "priv").read_text()
    lines = text.split("\n")
    # line index 1 + 576/32 = 19 is the first line of d mod (q-1)
    line = lines[19]
    lines[19] = altered(line)
    with pytest.raises(KeyFileError, match="inconsistent"):
        crypto.parse_key("\n".join(lines), "k")
    lines[19] = line
    key = crypto.parse_key("\n".join(lines), "k")
    assert crypto.verify_string("x", crypto.sign_string("x", key), key.public())


def test_key_text_round_trip_and_pem_helpers(keys):
    key = crypto.read_private_key(str(keys / "priv"))
    assert crypto.key_text(key) == (keys / "priv").read_text()
    assert crypto.key_text(key.public()) == (keys / "pub").read_text()
    assert crypto.key_from_pem(crypto.key_to_pem(key), True) == key
    assert crypto.key_from_pem(crypto.key_to_pem(key.public()), False) == key.public()
    with pytest.raises(KeyFileError, match="is a private key"):
        crypto.read_public_key(str(keys / "priv"))
    with pytest.raises(KeyFileError, match="is a public key"):
        crypto.read_private_key(str(keys / "pub"))


def test_lenient_signature_text_is_still_verified(keys):
    """Clients trim and re-indent signature text; verification skips white space."""
    key = crypto.read_private_key(str(keys / "priv"))
    sig = crypto.sign_string("abc", key)
    messy = "\n   " + sig.replace("\n", "\r\n    ")
    assert crypto.verify_string("abc", messy, key.public())
    assert not crypto.verify_string("abd", messy, key.public())
