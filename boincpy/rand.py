"""Random numbers for the scheduler's request path, from the interpreter's
built-in Mersenne Twister (``_random``) without the ``random`` module.

``import random`` loads os, warnings, bisect and _collections_abc with it:
about 1.5 ms of a classic CGI's start, which every request that gets work
paid (job choice picks its first slot at random).  What the scheduler
needs of it is here, with the same algorithms as ``random``'s (the same
numbers from the same state).  (The host's quota day, seeded by its id, is
boincpy.sched.hosts.rpc_day_offset's.)  Everything off the CGIs' path uses
``random`` itself.
"""

import math
from _random import Random as _Generator

# seeded from the system's entropy source, as random's module-level generator
_shared = _Generator()


def drand():
    """A float in [0, 1) (BOINC's drand())."""
    return _shared.random()


def getrandbits(k):
    """An int of ``k`` random bits."""
    return _shared.getrandbits(k)


def randrange(n):
    """An int in [0, n), n > 0, uniformly (random's _randbelow: draws of
    ``n.bit_length()`` bits until one is below n)."""
    k = n.bit_length()
    r = _shared.getrandbits(k)
    while r >= n:
        r = _shared.getrandbits(k)
    return r


def uniform(a, b):
    """A float between a and b."""
    return a + (b - a) * _shared.random()


# the second of the pair of normal deviates the last gauss() made
_spare = []


def gauss(mu=0.0, sigma=1.0):
    """A normally distributed float (mean ``mu``, standard deviation
    ``sigma``), by the Box-Muller transform as random.gauss: two uniform
    draws give two independent deviates, the second kept for the next call."""
    if _spare:
        z = _spare.pop()
    else:
        angle = 2.0 * math.pi * _shared.random()
        radius = math.sqrt(-2.0 * math.log(1.0 - _shared.random()))
        z = math.cos(angle) * radius
        _spare.append(math.sin(angle) * radius)
    return mu + z * sigma

