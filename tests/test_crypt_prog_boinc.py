"""BOINC's own tests of crypt_prog and sign_executable, as boincpy's tests, and
``crypt_prog -cert_verify`` (lib/crypt.cpp's check_validity) on certificate chains.

The first tests are the cases of BOINC's tests/crypt_prog_tests.py and
tests/sign_executable_tests.py (same commands, same inputs, same expected
outcomes), run on bin/crypt_prog and bin/sign_executable.  The -cert_verify
tests build a CA directory the way OpenSSL's hash-dir lookup reads it (files
named after the subject hash) with certificates made here by ``cryptography``.
The last test runs BOINC's script itself when BOINC_SRC_DIR names a BOINC source
tree (slow tier).
"""

import datetime
import filecmp
import os
import shutil
import subprocess
import sys

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec

from boincpy import crypto

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NOW = datetime.datetime.now(datetime.timezone.utc)
DAY = datetime.timedelta(days=1)


def run(name, *args, cwd=None):
    """Run bin/NAME with this interpreter; return the CompletedProcess (text)."""
    return subprocess.run([sys.executable, os.path.join(REPO, "bin", name)]
                          + [str(a) for a in args], cwd=cwd, capture_output=True, text=True)


def ok(name, *args, cwd=None):
    return run(name, *args, cwd=cwd).returncode == 0


def sign_to(path, data_file, private_key, cwd):
    """crypt_prog -sign DATA KEY > PATH; True when it succeeded."""
    proc = run("crypt_prog", "-sign", data_file, private_key, cwd=cwd)
    (cwd / path).write_text(proc.stdout)
    return proc.returncode == 0


# -- BOINC's tests/crypt_prog_tests.py: "Test genkey" ------------------------------

@pytest.mark.parametrize("bits", ["512", "2048"])
def test_genkey_refuses_other_sizes(tmp_path, bits):
    assert not ok("crypt_prog", "-genkey", bits, "private.key", "public.key", cwd=tmp_path)
    assert not (tmp_path / "private.key").exists()


@pytest.fixture(scope="module")
def two_pairs(tmp_path_factory):
    """The two 1024-bit pairs BOINC's test makes (private.key/public.key, ...1.key)."""
    d = tmp_path_factory.mktemp("pairs")
    assert ok("crypt_prog", "-genkey", "1024", "private.key", "public.key", cwd=d)
    assert ok("crypt_prog", "-genkey", "1024", "private1.key", "public1.key", cwd=d)
    return d


def test_genkey_makes_new_pairs_that_convert_both_ways(two_pairs):
    d = two_pairs
    assert not filecmp.cmp(d / "private.key", d / "private1.key", shallow=False)
    assert not filecmp.cmp(d / "public.key", d / "public1.key", shallow=False)
    for kind, name in (("priv", "private"), ("pub", "public")):
        assert ok("crypt_prog", "-convkey", "b2o", kind, name + ".key", name + "_o.key", cwd=d)
        assert ok("crypt_prog", "-convkey", "o2b", kind, name + "_o.key", name + "_b.key", cwd=d)
        assert filecmp.cmp(d / (name + ".key"), d / (name + "_b.key"), shallow=False)


def _signature_cases(d, make):
    """BOINC's sequence for file and for string signatures: each pair verifies its own
    signature and not the other's; the two differ; -convsig round-trips both."""
    assert make("signature", "private.key")
    assert make("signature1", "private1.key")
    assert not filecmp.cmp(d / "signature", d / "signature1", shallow=False)
    for sig in ("signature", "signature1"):
        assert ok("crypt_prog", "-convsig", "b2o", sig, sig + "_o", cwd=d)
        assert ok("crypt_prog", "-convsig", "o2b", sig + "_o", sig + "_b", cwd=d)
        assert filecmp.cmp(d / sig, d / (sig + "_b"), shallow=False)


def test_file_signatures(two_pairs):
    d = two_pairs
    data = os.path.join(REPO, "bin", "crypt_prog")      # BOINC's test signs the tool itself
    _signature_cases(d, lambda sig, key: sign_to(sig, data, key, d))
    assert ok("crypt_prog", "-verify", data, "signature", "public.key", cwd=d)
    assert ok("crypt_prog", "-verify", data, "signature1", "public1.key", cwd=d)
    assert not ok("crypt_prog", "-verify", data, "signature1", "public.key", cwd=d)
    assert not ok("crypt_prog", "-verify", data, "signature", "public1.key", cwd=d)


def test_string_signatures(two_pairs):
    d = two_pairs

    def make(sig, key):
        proc = run("crypt_prog", "-sign_string", "test", key, cwd=d)
        (d / sig).write_text(proc.stdout)
        return proc.returncode == 0
    _signature_cases(d, make)
    assert ok("crypt_prog", "-verify_string", "test", "signature", "public.key", cwd=d)
    assert ok("crypt_prog", "-verify_string", "test", "signature1", "public1.key", cwd=d)
    assert not ok("crypt_prog", "-verify_string", "test", "signature1", "public.key", cwd=d)
    assert not ok("crypt_prog", "-verify_string", "test", "signature", "public1.key", cwd=d)


def test_test_crypt(two_pairs):
    proc = run("crypt_prog", "-test_crypt", "private.key", "public.key", cwd=two_pairs)
    assert proc.returncode == 0 and "encryption test successful" in proc.stdout


# -- BOINC's tests/sign_executable_tests.py ----------------------------------------

def test_sign_executable_cases(tmp_path):
    data = os.path.abspath(__file__)                # BOINC's test signs itself
    assert ok("crypt_prog", "-genkey", "1024", "private.key", "public.key", cwd=tmp_path)
    proc = run("sign_executable", data, "private.key", cwd=tmp_path)
    assert proc.returncode == 0
    (tmp_path / "file_to_sign.sig").write_text(proc.stdout)
    assert ok("crypt_prog", "-verify", data, "file_to_sign.sig", "public.key", cwd=tmp_path)
    # a key file that does not exist, a file that does not exist
    assert not ok("sign_executable", data, "invalid_private.key", cwd=tmp_path)
    assert not ok("sign_executable", "non_existent_file", "private.key", cwd=tmp_path)


# -- certificates -------------------------------------------------------------------

def _name(cn):
    return x509.Name([x509.NameAttribute(x509.NameOID.COMMON_NAME, cn)])


def make_cert(cn, key, issuer=None, issuer_key=None, ca=False, path_length=None,
              start=NOW - DAY, end=NOW + 365 * DAY, key_usage=True):
    """A certificate for ``key`` (cryptography public key), signed by ``issuer_key``
    (self-signed when no issuer), with BOINC's test's extensions."""
    builder = (x509.CertificateBuilder()
               .subject_name(_name(cn))
               .issuer_name(issuer.subject if issuer is not None else _name(cn))
               .public_key(key)
               .serial_number(x509.random_serial_number())
               .not_valid_before(start).not_valid_after(end)
               .add_extension(x509.BasicConstraints(ca=ca, path_length=path_length),
                              critical=True))
    if key_usage:
        builder = builder.add_extension(x509.KeyUsage(
            digital_signature=not ca, key_encipherment=not ca, content_commitment=False,
            data_encipherment=False, key_agreement=False, key_cert_sign=ca, crl_sign=ca,
            encipher_only=False, decipher_only=False), critical=True)
    return builder.sign(issuer_key, hashes.SHA256())


def pem(cert):
    return cert.public_bytes(serialization.Encoding.PEM)


def boinc_pair(directory, name):
    """A BOINC key pair in DIRECTORY/name_private.key and name_public.key, and the same
    key as cryptography's private key object."""
    key = crypto.generate_key()
    (directory / (name + "_private.key")).write_text(crypto.key_text(key))
    (directory / (name + "_public.key")).write_text(crypto.key_text(key.public()))
    return serialization.load_pem_private_key(crypto.key_to_pem(key).encode("ascii"),
                                              password=None)


def hashed_ca_dir(path, *certs):
    """A CA directory as `openssl rehash` leaves it: each certificate in HASH.N."""
    path.mkdir(exist_ok=True)
    for cert in certs:
        h = crypto.name_hash(cert.subject)
        n = 0
        while (path / ("%s.%d" % (h, n))).exists():
            n += 1
        (path / ("%s.%d" % (h, n))).write_bytes(pem(cert))
    return path


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    """A root CA, an intermediate CA under it, a second unrelated root, and the keys."""
    d = tmp_path_factory.mktemp("pki")
    root_key = boinc_pair(d, "root")
    root = make_cert("Test CA", root_key.public_key(), issuer_key=root_key, ca=True)
    inter_key = boinc_pair(d, "inter")
    inter = make_cert("Test Intermediate", inter_key.public_key(), root, root_key, ca=True)
    other_key = boinc_pair(d, "other")
    other = make_cert("Other CA", other_key.public_key(), issuer_key=other_key, ca=True)
    leaf_key = boinc_pair(d, "leaf")
    return dict(dir=d, root=root, root_key=root_key, inter=inter, inter_key=inter_key,
                other=other, other_key=other_key, leaf_key=leaf_key)


@pytest.fixture
def case(tmp_path, pki):
    """A working directory with a data file signed by the leaf key (``signature``),
    an empty certificate directory ``certs`` and a CA directory ``ca`` with the root."""
    shutil.copy(pki["dir"] / "leaf_private.key", tmp_path)
    (tmp_path / "data").write_bytes(b"the application's executable\n")
    assert sign_to("signature", "data", "leaf_private.key", tmp_path)
    (tmp_path / "certs").mkdir()
    hashed_ca_dir(tmp_path / "ca", pki["root"])
    return tmp_path


def leaf(pki, issuer="root", **kw):
    return make_cert("Test Leaf", pki["leaf_key"].public_key(), pki[issuer],
                     pki[issuer + "_key"], **kw)


def cert_verify(d, certs="certs", ca="ca", data="data", sig="signature"):
    return run("crypt_prog", "-cert_verify", data, sig, certs, ca, cwd=d)


def test_boinc_cert_store_case(tmp_path):
    """BOINC's "Test cert store": keys made and converted by crypt_prog, a CA and a
    leaf certificate, both filed under their hash in the CA directory; the
    certificate directory is the working directory itself (keys and all)."""
    d = tmp_path
    for who in ("ca", "leaf"):
        assert ok("crypt_prog", "-genkey", "1024", "b_%s_private.key" % who,
                  "b_%s_public.key" % who, cwd=d)
        for kind, half in (("priv", "private"), ("pub", "public")):
            assert ok("crypt_prog", "-convkey", "b2o", kind, "b_%s_%s.key" % (who, half),
                      "%s_%s.key" % (who, half), cwd=d)
    ca_key = serialization.load_pem_private_key((d / "ca_private.key").read_bytes(), None)
    leaf_pub = serialization.load_pem_public_key((d / "leaf_public.key").read_bytes())
    ca = make_cert("Test CA", ca_key.public_key(), issuer_key=ca_key, ca=True)
    lf = make_cert("Test Leaf", leaf_pub, ca, ca_key)
    (d / "ca").mkdir()
    (d / "ca" / "ca_cert.pem").write_bytes(pem(ca))
    (d / "leaf_cert.pem").write_bytes(pem(lf))
    os.symlink(d / "ca" / "ca_cert.pem", d / "ca" / (crypto.name_hash(ca.subject) + ".0"))
    os.symlink(d / "leaf_cert.pem", d / "ca" / (crypto.name_hash(lf.subject) + ".0"))
    program = os.path.join(REPO, "bin", "crypt_prog")
    assert sign_to("signature", program, "b_leaf_private.key", d)
    proc = cert_verify(d, certs=d, ca=d / "ca", data=program)
    assert proc.returncode == 0, proc.stderr
    # BOINC's line, without a space before the path
    assert proc.stdout == "signature verified using certificate%s\n" % (d / "leaf_cert.pem")


def test_cert_verify_valid_chain(case, pki):
    (case / "certs" / "leaf.pem").write_bytes(pem(leaf(pki)))
    proc = cert_verify(case)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "signature verified using certificatecerts/leaf.pem\n"


def test_cert_verify_through_an_intermediate(case, pki):
    (case / "certs" / "leaf.pem").write_bytes(pem(leaf(pki, "inter")))
    assert cert_verify(case).returncode == 2            # intermediate not in the CA dir
    hashed_ca_dir(case / "ca", pki["inter"])
    proc = cert_verify(case)
    assert proc.returncode == 0, proc.stderr


def _refused(case, *words):
    proc = cert_verify(case)
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr.startswith("Error: check_validity: no certificate in certs verifies "
                                  "the signature of data:\n  certs/leaf.pem: ")
    for word in words:
        assert word in proc.stderr
    return proc.stderr


def test_cert_verify_expired_and_not_yet_valid(case, pki):
    (case / "certs" / "leaf.pem").write_bytes(pem(leaf(pki, start=NOW - 30 * DAY,
                                                       end=NOW - DAY)))
    _refused(case, "certificate 'CN=Test Leaf'", "expired on")
    (case / "certs" / "leaf.pem").write_bytes(pem(leaf(pki, start=NOW + DAY)))
    _refused(case, "is not valid before")


def test_cert_verify_expired_ca(case, pki):
    old_root = make_cert("Test CA", pki["root_key"].public_key(), issuer_key=pki["root_key"],
                         ca=True, start=NOW - 30 * DAY, end=NOW - DAY)
    shutil.rmtree(case / "ca")
    hashed_ca_dir(case / "ca", old_root)
    (case / "certs" / "leaf.pem").write_bytes(pem(leaf(pki)))
    _refused(case, "certificate 'CN=Test CA'", "expired on")


def test_cert_verify_cert_from_another_ca(case, pki):
    (case / "certs" / "leaf.pem").write_bytes(pem(leaf(pki, "other")))
    _refused(case, "unable to get the issuer 'CN=Other CA'")


def test_cert_verify_forged_issuer_name(case, pki):
    """A leaf naming the trusted CA as issuer but signed by another key."""
    forged = make_cert("Test Leaf", pki["leaf_key"].public_key(), pki["root"],
                       pki["other_key"])
    (case / "certs" / "leaf.pem").write_bytes(pem(forged))
    _refused(case, "the signature of its issuer", "does not verify")


def test_cert_verify_signature_from_another_key(case, pki):
    (case / "certs" / "leaf.pem").write_bytes(pem(leaf(pki)))
    assert sign_to("signature", "data", pki["dir"] / "other_private.key", case)
    _refused(case, "not made with this certificate's key")


def test_cert_verify_damaged_signature_and_changed_file(case, pki):
    (case / "certs" / "leaf.pem").write_bytes(pem(leaf(pki)))
    good = (case / "signature").read_text()
    damaged = ("0" if good[5] != "0" else "1").join((good[:5], good[6:]))
    (case / "signature").write_text(damaged)
    _refused(case, "not made with this certificate's key (or is damaged)")
    (case / "signature").write_text(good)
    (case / "data").write_bytes(b"another executable\n")
    _refused(case, "the signature is of other data")


def test_cert_verify_issuer_must_be_a_ca(case, pki):
    not_ca = make_cert("Test Intermediate", pki["inter_key"].public_key(), pki["root"],
                       pki["root_key"], ca=False)
    hashed_ca_dir(case / "ca", not_ca)
    (case / "certs" / "leaf.pem").write_bytes(pem(leaf(pki, "inter")))
    _refused(case, "certificate 'CN=Test Intermediate'", "is not a CA certificate")


def test_cert_verify_path_length(case, pki):
    short = make_cert("Test CA", pki["root_key"].public_key(), issuer_key=pki["root_key"],
                      ca=True, path_length=0)
    shutil.rmtree(case / "ca")
    hashed_ca_dir(case / "ca", short, pki["inter"])
    (case / "certs" / "leaf.pem").write_bytes(pem(leaf(pki, "inter")))
    _refused(case, "allows 0 CA certificates under it, the chain has 1")


def test_cert_verify_self_signed_leaf(case, pki):
    own = make_cert("Test Leaf", pki["leaf_key"].public_key(), issuer_key=pki["leaf_key"])
    (case / "certs" / "leaf.pem").write_bytes(pem(own))
    _refused(case, "is self-signed and not in the CA directory ca")
    hashed_ca_dir(case / "ca", own)                       # trusted as such: accepted
    assert cert_verify(case).returncode == 0


def test_cert_verify_non_rsa_certificate(case, pki):
    ec_key = ec.generate_private_key(ec.SECP256R1())
    cert = make_cert("Test Leaf", ec_key.public_key(), pki["root"], pki["root_key"])
    (case / "certs" / "leaf.pem").write_bytes(pem(cert))
    _refused(case, "only RSA keys are supported")


def test_cert_verify_ca_dir_must_be_hashed(case, pki):
    """OpenSSL's lookup (so BOINC's) reads only HASH.N files: a plain PEM file of the
    CA is not found, and the error says how to fix the directory."""
    shutil.rmtree(case / "ca")
    (case / "ca").mkdir()
    (case / "ca" / "root.pem").write_bytes(pem(pki["root"]))
    (case / "certs" / "leaf.pem").write_bytes(pem(leaf(pki)))
    err = _refused(case, "ca/root.pem holds it", "openssl rehash ca")
    assert crypto.name_hash(pki["root"].subject) + ".0" in err
    if shutil.which("openssl") and subprocess.run(["openssl", "rehash", "ca"], cwd=case,
                                                  capture_output=True).returncode == 0:
        assert cert_verify(case).returncode == 0


def test_cert_verify_any_certificate_of_the_directory(case, pki):
    """Files that are not certificates are passed over; one good certificate among
    failing ones is enough; when none is good each one's reason is listed."""
    (case / "certs" / "a_expired.pem").write_bytes(pem(leaf(pki, start=NOW - 9 * DAY,
                                                            end=NOW - DAY)))
    (case / "certs" / "b_notes.txt").write_text("not a certificate\n")
    (case / "certs" / "c_sub").mkdir()
    (case / "certs" / "leaf.pem").write_bytes(pem(leaf(pki)))
    proc = cert_verify(case)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.endswith("certs/leaf.pem\n")
    (case / "certs" / "leaf.pem").unlink()
    (case / "certs" / "z_other.pem").write_bytes(pem(leaf(pki, "other")))
    proc = cert_verify(case)
    assert proc.returncode == 2
    lines = proc.stderr.splitlines()
    assert [line.split(":")[0].strip() for line in lines[1:]] == [
        "certs/a_expired.pem", "certs/z_other.pem"]


def test_cert_verify_errors(case, pki):
    assert cert_verify(case, certs="nowhere").stderr.startswith(
        "Error: check_validity: can't read certificate directory nowhere")
    proc = cert_verify(case)                               # no certificate at all
    assert (proc.returncode, proc.stderr) == (2, "Error: check_validity: no PEM certificate "
                                                 "in certs\n")
    (case / "certs" / "leaf.pem").write_bytes(pem(leaf(pki)))
    proc = cert_verify(case, data="missing")
    assert proc.returncode == 2 and "missing is not a file" in proc.stderr
    proc = cert_verify(case, sig="nosig")
    assert proc.returncode == 2 and proc.stderr.startswith("Error: scan_hex_data: can't read "
                                                           "nosig")
    proc = run("crypt_prog", "-cert_verify", "data", "signature", "certs", cwd=case)
    assert proc.returncode == 1 and "-cert_verify file signature" in proc.stderr


def test_name_hash_matches_openssl(tmp_path):
    """crypto.name_hash is OpenSSL's subject hash, names folded as OpenSSL folds them."""
    if not shutil.which("openssl"):
        pytest.skip("no openssl command to compare with")
    key = crypto.generate_key()
    priv = serialization.load_pem_private_key(crypto.key_to_pem(key).encode("ascii"),
                                              password=None)
    names = [
        _name("Test CA"),
        _name("  MiXeD   Case\tName "),
        x509.Name([x509.NameAttribute(x509.NameOID.COUNTRY_NAME, "DE"),
                   x509.NameAttribute(x509.NameOID.ORGANIZATION_NAME, "Ünï Çødé"),
                   x509.NameAttribute(x509.NameOID.COMMON_NAME, "x")]),
        x509.Name([x509.RelativeDistinguishedName([
            x509.NameAttribute(x509.NameOID.COMMON_NAME, "b"),
            x509.NameAttribute(x509.NameOID.ORGANIZATIONAL_UNIT_NAME, "a")])]),
    ]
    for name in names:
        cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
                .public_key(priv.public_key()).serial_number(1)
                .not_valid_before(NOW).not_valid_after(NOW + DAY)
                .sign(priv, hashes.SHA256()))
        (tmp_path / "c.pem").write_bytes(pem(cert))
        out = subprocess.run(["openssl", "x509", "-in", "c.pem", "-noout", "-subject_hash"],
                             cwd=tmp_path, capture_output=True, text=True, check=True).stdout
        assert crypto.name_hash(name) == out.strip(), name


# -- BOINC's scripts themselves ----------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("script, programs", [
    ("crypt_prog_tests.py", ["crypt_prog"]),
    ("sign_executable_tests.py", ["sign_executable", "crypt_prog"]),
])
def test_boinc_scripts(tmp_path, script, programs):
    """BOINC's tests/SCRIPT run as is from the tree BOINC_SRC_DIR names, given wrappers
    that start boincpy's tools with this interpreter (the script runs them by path)."""
    src = os.environ.get("BOINC_SRC_DIR")
    if not src:
        pytest.skip("BOINC_SRC_DIR does not name a BOINC source tree")
    path = os.path.join(src, "tests", script)
    if not os.path.isfile(path):
        pytest.skip("%s is not in BOINC_SRC_DIR (%s)" % (script, src))
    python = os.environ.get("BOINC_TEST_PYTHON", sys.executable)
    probe = subprocess.run([python, "-c", "import OpenSSL, cryptography"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip("BOINC's scripts import pyOpenSSL and cryptography, which %s lacks "
                    "(BOINC_TEST_PYTHON may name another interpreter)" % python)
    wrappers = []
    for name in programs:
        w = tmp_path / name
        w.write_text('#!/bin/sh\nexec "%s" "%s" "$@"\n'
                     % (sys.executable, os.path.join(REPO, "bin", name)))
        w.chmod(0o755)
        wrappers.append(str(w))
    work = tmp_path / "work"
    work.mkdir()
    proc = subprocess.run([python, path] + wrappers, cwd=work, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Failed [" not in proc.stdout
