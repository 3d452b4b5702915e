"""Where the captured protocol fixtures are: ``shared/fixtures`` next to the
repository (a session's checkout), else /work/shared/fixtures (CI's checkout
on the same machine)."""

import os

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_CANDIDATES = (os.path.join(os.path.dirname(REPO), "shared", "fixtures"),
               "/work/shared/fixtures")

FIXTURES = next((d for d in _CANDIDATES if os.path.isdir(d)), _CANDIDATES[-1])


def fixture_path(*parts):
    """Path of a captured fixture; the test is skipped when the set is absent."""
    if not os.path.isdir(FIXTURES):
        pytest.skip("captured fixtures (shared/fixtures) not present")
    return os.path.join(FIXTURES, *parts)
