"""A counter-based random source: a uniform number as a pure function of integer keys.

``uniform(*keys)`` hashes the tuple of its keys with CPython's tuple hash (xxHash-style lanes;
integers hash to themselves modulo 2**61 - 1 and are never salted, so the value is the same in
every process and run; stable since CPython 3.8 on 64-bit builds), then scrambles it with the
SplitMix64 finaliser (Steele, Lea and Flood, "Fast splittable pseudorandom number generators",
OOPSLA 2014) and maps the top 53 bits to [0, 1). Nothing is stored and no history is needed:
the number for (seed, device, stream, block) is the same whenever and in whatever order it is
asked for, which is what lets a device's state at time t be computed on demand.

>>> uniform(1, 2, 3) == uniform(1, 2, 3)
True
>>> 0.0 <= uniform(1, 2, 3) < 1.0 and uniform(1, 2, 3) != uniform(1, 2, 4)
True
"""

from __future__ import annotations

import math

_MASK = (1 << 64) - 1


def _mix(z: int) -> int:
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
    return z ^ (z >> 31)


def uniform(*keys: int) -> float:
    """A number in [0, 1) fixed by ``keys`` (any Python ints; negatives allowed)."""
    return (_mix(hash(keys) & _MASK) >> 11) * (1.0 / (1 << 53))


def normal(*keys: int) -> float:
    """A standard normal number fixed by ``keys`` (Box-Muller on two keyed uniforms)."""
    u1 = 1.0 - uniform(*keys, 0)  # in (0, 1]
    u2 = uniform(*keys, 1)
    return math.sqrt(-2.0 * math.log(u1)) * math.cos(2.0 * math.pi * u2)
