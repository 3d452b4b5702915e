"""The raw RSA step through libcrypto gives exactly the Python computation's signatures."""

import secrets

from boincpy import crypto


def test_native_and_python_private_power_agree():
    key = crypto.generate_key()
    assert crypto._rsa_handle(key), "libcrypto fast path not available on this machine"
    for _ in range(20):
        m = secrets.randbelow(key.n)
        assert crypto._native_private_power(key, m) == crypto._python_private_power(key, m)


def test_signatures_identical_with_and_without_libcrypto(monkeypatch):
    key = crypto.generate_key()
    fast = crypto.sign_upload_certificate("wu_1_0_r123_0", 5e6, key)
    monkeypatch.setattr(crypto, "_native_private_power", lambda key, m: None)
    slow = crypto.sign_upload_certificate("wu_1_0_r123_0", 5e6, key)
    assert fast == slow
    assert crypto.verify_upload_certificate("wu_1_0_r123_0", 5e6, fast, key.public())


def test_key_without_crt_fields_still_signs():
    key = crypto.generate_key()
    bare = crypto.RsaKey(key.bits, key.n, key.e, key.d)
    assert crypto.sign_string("abc", bare) == crypto.sign_string("abc", key)
