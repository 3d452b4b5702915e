"""boincpy.rand: the scheduler's random numbers without the random module,
the same numbers as random's from the same generator state."""

import random
import _random

import pytest

from boincpy import rand
from boincpy.sched.hosts import rpc_day_offset


@pytest.fixture
def same_state(monkeypatch):
    """boincpy.rand's generator and a random.Random, both seeded alike."""
    monkeypatch.setattr(rand, "_shared", _random.Random(20261130))
    monkeypatch.setattr(rand, "_spare", [])
    return random.Random(20261130)


def test_a_seeded_generator_is_randoms(same_state):
    # the quota day's offset of a host (hosts.rpc_day_offset, which job choice's
    # n_jobs_today rollover takes too): BOINC seeds with the host id, and a
    # host keeps its offset from one run to the next
    for seed in (0, 1, 7, 123456, 2 ** 40 + 3):
        assert rpc_day_offset(seed) == random.Random(seed).random() * 86400


def test_draws_are_randoms(same_state):
    theirs = same_state
    for n in (1, 2, 3, 10, 100, 2 ** 31, 10 ** 12 + 7):
        assert rand.randrange(n) == theirs.randrange(n)
    assert rand.drand() == theirs.random()
    assert rand.getrandbits(31) == theirs.getrandbits(31)
    assert [rand.gauss(0.5, 2.0) for _ in range(9)] == [theirs.gauss(0.5, 2.0) for _ in range(9)]
    assert rand.uniform(2.0, 5.0) == theirs.uniform(2.0, 5.0)


def test_randrange_covers_its_range_and_no_more():
    seen = {rand.randrange(5) for _ in range(2000)}
    assert seen == {0, 1, 2, 3, 4}
    assert all(0 <= rand.randrange(1000) < 1000 for _ in range(1000))
    assert rand.randrange(1) == 0


def test_uniform_and_drand_stay_in_bounds():
    assert all(0.0 <= rand.drand() < 1.0 for _ in range(1000))
    assert all(1.5 <= rand.uniform(1.5, 2.5) <= 2.5 for _ in range(1000))
