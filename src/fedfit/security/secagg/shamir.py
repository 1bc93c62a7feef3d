"""Shamir secret sharing over the prime field GF(2^521 − 1).

Shamir 1979, "How to Share a Secret". A secret s < p is the constant term of a random
polynomial f of degree t − 1; share k is (k, f(k)) for k = 1..n. Any t shares give s by
Lagrange interpolation at 0; fewer than t reveal nothing about it. p = 2^521 − 1 (a Mersenne
prime) holds a 256-bit key or seed in one share.
"""

from __future__ import annotations

import random
import secrets
from collections.abc import Sequence

PRIME = 2**521 - 1

#: One share: (x, f(x)), x in 1..n.
Share = tuple[int, int]


def split(secret: int, n: int, threshold: int, rng: random.Random | None = None) -> list[Share]:
    """``n`` shares of ``secret``, any ``threshold`` of which recover it.

    Args:
        secret: 0 ≤ secret < :data:`PRIME`.
        n: shares to make (≥ threshold).
        threshold: t, shares needed (≥ 1).
        rng: the coefficients' source (default: the operating system's CSPRNG; a seeded one
            only for reproducible simulations).

    Raises:
        ValueError: a secret out of range or an impossible (n, t).
    """
    if not 0 <= secret < PRIME:
        raise ValueError("secret must lie in [0, 2^521 - 1)")
    if not 1 <= threshold <= n:
        raise ValueError(f"need 1 <= threshold <= n, got threshold {threshold}, n {n}")
    draw = rng.randrange if rng is not None else secrets.randbelow
    coefficients = [secret, *(draw(PRIME) for _ in range(threshold - 1))]
    return [(x, _evaluate(coefficients, x)) for x in range(1, n + 1)]


def _evaluate(coefficients: Sequence[int], x: int) -> int:
    acc = 0
    for c in reversed(coefficients):
        acc = (acc * x + c) % PRIME
    return acc


def reconstruct(shares: Sequence[Share]) -> int:
    """The secret behind ``shares`` (Lagrange interpolation at 0); needs ≥ t distinct shares.

    >>> reconstruct(split(42, n=5, threshold=3, rng=random.Random(0))[1:4])
    42

    Raises:
        ValueError: no shares, or two shares at the same x.
    """
    xs = [x for x, _ in shares]
    if not shares or len(set(xs)) != len(xs):
        raise ValueError("need distinct shares to reconstruct")
    secret = 0
    for i, (xi, yi) in enumerate(shares):
        num, den = 1, 1
        for j, xj in enumerate(xs):
            if j != i:
                num = num * (-xj) % PRIME
                den = den * (xi - xj) % PRIME
        secret = (secret + yi * num * pow(den, -1, PRIME)) % PRIME
    return secret
