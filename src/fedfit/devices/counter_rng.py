"""A counter-based random source: a uniform number as a pure function of integer keys.

``uniform(*keys)`` sums its keys times fixed odd 64-bit constants (one per position, mod
2**64) and hashes the sum with the SplitMix64 finaliser (Steele, Lea and Flood, "Fast
splittable pseudorandom number generators", OOPSLA 2014), then maps the top 53 bits to
[0, 1). Up to eight keys. Nothing is stored and no history is needed: the number for
(seed, device, stream, block) is the same whenever and in whatever order it is asked for,
which is what lets a device's state at time t be computed on demand.

>>> uniform(1, 2, 3) == uniform(1, 2, 3)
True
>>> 0.0 <= uniform(1, 2, 3) < 1.0 and uniform(1, 2, 3) != uniform(1, 2, 4)
True
"""

from __future__ import annotations

import math

_MASK = (1 << 64) - 1
_GOLDEN = 0x9E3779B97F4A7C15
# Odd constants from SplitMix64 itself (seeded by the golden ratio), one per key position.
_WEIGHTS = (
    0xE220A8397B1DCDAF, 0x6E789E6AA1B965F5, 0x06C45D188009454F, 0xF88BB8A8724C81EC,
    0xD3C3D7A2B3D3F0A5, 0x1C9A1C2E3F5D7B93, 0x8B4F2A6C9E1D3F57, 0x5D6E7F8091A2B3C5,
)


def _mix(z: int) -> int:
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
    return z ^ (z >> 31)


def uniform(*keys: int) -> float:
    """A number in [0, 1) fixed by ``keys`` (any Python ints; negatives allowed)."""
    if len(keys) > len(_WEIGHTS):
        raise ValueError(f"at most {len(_WEIGHTS)} keys, got {len(keys)}")
    h = _GOLDEN
    for weight, key in zip(_WEIGHTS, keys, strict=False):
        h += (key & _MASK) * (weight | 1)
    return (_mix(h & _MASK) >> 11) * (1.0 / (1 << 53))


def normal(*keys: int) -> float:
    """A standard normal number fixed by ``keys`` (Box-Muller on two keyed uniforms)."""
    u1 = 1.0 - uniform(*keys, 0)  # in (0, 1]
    u2 = uniform(*keys, 1)
    return math.sqrt(-2.0 * math.log(u1)) * math.cos(2.0 * math.pi * u2)
