"""Where the captured protocol fixtures are: tests/fixtures, inside the
repository, so a plain clone runs every test (tests/fixtures/README.md says
where each set came from)."""

import os

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(REPO, "tests", "fixtures")


def fixture_path(*parts):
    """Path of a captured fixture under tests/fixtures."""
    return os.path.join(FIXTURES, *parts)


def fixture_text(*parts):
    """A captured fixture file's bytes; ``parts`` may start with an absolute
    path (sched_env's CLIENT or REFERENCE).  A missing file is an error, never a skip."""
    with open(os.path.join(FIXTURES, *parts), "rb") as f:
        return f.read()
