"""Password hashes as BOINC's PHP site stores them (password_hash, $2y$10$), through
the bcrypt package: a row BOINC's own sign-up form wrote checks here, and what
boincpy writes has the shape PHP's password_verify reads."""

import re

import pytest

from tests.shared_fixtures import fixture_text

from boincpy import passwords

PASSWORD = "correct horse battery staple"
EMAIL = "Fixture.Volunteer@Example.org"          # as typed into the sign-up form
# PHP's password_hash(): "$2y$", two-digit cost, "$", 22 salt and 31 hash characters
# of bcrypt's base64 alphabet
PHP_BCRYPT = re.compile(r"\$2y\$10\$[./A-Za-z0-9]{53}\Z")


def _signup_row():
    """The user row BOINC's PHP sign-up form wrote (tests/fixtures/volunteer)."""
    lines = fixture_text("volunteer", "user_row_web_signup.tsv").decode().splitlines()
    return dict(zip(lines[0].split("\t"), lines[1].split("\t")))


def test_the_php_sites_stored_hash_checks():
    row = _signup_row()
    stored = row["passwd_hash"]
    assert PHP_BCRYPT.match(stored)
    client_hash = passwords.client_passwd_hash(PASSWORD, EMAIL)
    assert client_hash == "7b20c1458d69a37e18eaa9fe7f4b17eb"     # the fixture's README
    assert passwords.client_passwd_hash(PASSWORD, row["email_addr"]) == client_hash
    assert passwords.password_verify(client_hash, stored)
    assert passwords.check_passwd_hash(client_hash, stored) == (True, None)   # no rehash
    assert passwords.matches_stored(client_hash, stored)
    assert not passwords.password_verify(passwords.client_passwd_hash(PASSWORD + " ", EMAIL),
                                         stored)
    assert passwords.check_passwd_hash("0" * 32, stored) == (False, None)


def test_written_hashes_have_phps_shape_and_check():
    client_hash = passwords.client_passwd_hash(PASSWORD, EMAIL)
    stored = passwords.password_hash(client_hash)
    assert PHP_BCRYPT.match(stored)
    assert not passwords.needs_rehash(stored)
    assert passwords.password_verify(client_hash, stored)
    assert not passwords.password_verify(client_hash.upper(), stored)
    assert passwords.password_hash(client_hash) != stored               # fresh salt


def test_one_algorithm_under_three_names():
    client_hash = passwords.client_passwd_hash(PASSWORD, EMAIL)
    stored = _signup_row()["passwd_hash"]
    for prefix in ("$2b$", "$2a$"):
        assert passwords.password_verify(client_hash, prefix + stored[4:])
        assert passwords.needs_rehash(prefix + stored[4:])
    assert not passwords.password_verify(client_hash, "$2x$" + stored[4:])


def test_legacy_md5_value_is_rewritten():
    client_hash = passwords.client_passwd_hash(PASSWORD, EMAIL)
    ok, new = passwords.check_passwd_hash(client_hash, client_hash)
    assert ok and PHP_BCRYPT.match(new) and passwords.password_verify(client_hash, new)


@pytest.mark.parametrize("secret", ["x" * 73, "y" * 500, "\u00e9" * 100, "a\0b", "\ud800",
                                    ""])
def test_any_secret_hashes_and_checks_without_raising(secret):
    stored = passwords.password_hash(secret)
    assert PHP_BCRYPT.match(stored)
    assert passwords.password_verify(secret, stored)
    ok, new = passwords.check_passwd_hash(secret, stored)
    assert ok and new is None


def test_secrets_are_read_as_crypt3_reads_them():
    """PHP hands bcrypt a C string: up to the first NUL, at most 72 bytes."""
    stored = passwords.password_hash("z" * 72)
    assert passwords.password_verify("z" * 72 + "anything after byte 72", stored)
    assert not passwords.password_verify("z" * 71, stored)
    stored = passwords.password_hash("abc")
    assert passwords.password_verify("abc\0def", stored)


@pytest.mark.parametrize("stored", [None, "", "$2y$10$short", "$2y$99$" + "." * 53,
                                    "$2y$03$" + "." * 53, "$2y$10$" + "\u00e9" * 53,
                                    "$1$abcdefgh$0123456789012345678901",
                                    "7b20c1458d69a37e18eaa9fe7f4b17eb"])
def test_damaged_or_other_stored_values_do_not_verify(stored):
    assert passwords.password_verify("7b20c1458d69a37e18eaa9fe7f4b17eb", stored) is False
