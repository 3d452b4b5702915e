"""Signatures made through cryptography (PKCS1v15, NoDigestInfo) are exactly the
raw computation's, and the Python public step reads signatures as cryptography does."""

import secrets

import pytest

from boincpy import crypto
from conftest import altered


def _by_hand(data, key):
    """BOINC's signature computed without any library: a PKCS#1 type 1 block
    around ``data``, raised to d mod n."""
    k = (key.n.bit_length() + 7) // 8
    block = b"\x00\x01" + b"\xff" * (k - 3 - len(data)) + b"\x00" + data
    return pow(int.from_bytes(block, "big"), key.d, key.n).to_bytes(k, "big")


def _cryptography_public(key):
    from cryptography.hazmat.primitives.asymmetric import rsa
    return rsa.RSAPublicNumbers(key.e, key.n).public_key()


def test_cryptography_and_the_raw_computation_agree():
    key = crypto.generate_key()
    for size in (0, 1, 16, 32, 64, 117):
        data = secrets.token_bytes(size)
        assert crypto.private_encrypt(data, key) == _by_hand(data, key)


def test_upload_certificate_is_the_raw_computation():
    key = crypto.generate_key()
    sig = crypto.sign_upload_certificate("wu_1_0_r123_0", 5e6, key)
    text = crypto.upload_certificate_text("wu_1_0_r123_0", 5e6)
    md5_hex = crypto.md5(text.encode()).hexdigest().encode()
    assert crypto.parse_hex(sig) == _by_hand(md5_hex, key)
    assert crypto.verify_upload_certificate("wu_1_0_r123_0", 5e6, sig, key.public())


def test_key_without_crt_fields_still_signs():
    key = crypto.generate_key()
    bare = crypto.RsaKey(key.bits, key.n, key.e, key.d)
    assert crypto.sign_string("abc", bare) == crypto.sign_string("abc", key)


def test_inconsistent_private_key_is_refused():
    key = crypto.generate_key()
    damaged = crypto.RsaKey(key.bits, key.n, key.e, key.d, key.p, key.q,
                            key.dmp1 ^ 2, key.dmq1, key.iqmp)
    with pytest.raises(crypto.KeyFileError):
        crypto.sign_string("abc", damaged)


def test_public_decrypt_answers_as_cryptography():
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric import padding, utils
    key, other = crypto.generate_key(), crypto.generate_key()
    public = _cryptography_public(key)
    good = crypto.private_encrypt(b"0123456789abcdef0123456789abcdef", key)
    cases = [good, crypto.private_encrypt(b"", key),
             crypto.private_encrypt(b"x" * 117, key),
             crypto.private_encrypt(b"abc", other),           # another key's
             bytes([good[0] ^ 1]) + good[1:], altered(good),
             (key.n - 1).to_bytes(128, "big")]
    # blocks with bad padding, made with the private key so only the padding is wrong
    for block in (b"\x00\x02" + b"\xff" * 100 + b"\x00" + b"y" * 25,    # type 2
                  b"\x00\x01" + b"\xff" * 7 + b"\x00" + b"y" * 118,     # 7 bytes of ff
                  b"\x00\x01" + b"\xff" * 8 + b"\x00" + b"y" * 117,     # 8: the least
                  b"\x00\x01" + b"\xff" * 50 + b"\xfe" + b"\x00" + b"y" * 74,
                  b"\x00\x01" + b"\xff" * 126):                           # no 00
        cases.append(pow(int.from_bytes(block, "big"), key.d, key.n).to_bytes(128, "big"))
    for sig in cases:
        try:
            expected = public.recover_data_from_signature(sig, padding.PKCS1v15(),
                                                          utils.NoDigestInfo())
        except InvalidSignature:
            expected = None
        assert crypto.public_decrypt(sig, key.public()) == expected, sig.hex()
