"""Stratified selection across capability tiers.

Each tier gets a share of the cohort proportional to its eligible devices (largest remainder,
ties broken by tier name), drawn uniformly within the tier from (seed, draw, tier), so weak
tiers are represented in every round instead of by chance.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from fedfit.policy.readiness import Readiness


def tier_quotas(counts: dict[str, int], size: int, rng: np.random.Generator | None = None) -> dict[str, int]:
    """Seats per tier, proportional to ``counts``, summing to ``min(size, Σ counts)``.

    Whole seats go by share; the seats left over go to the largest remainders (ties by tier
    name) or, given ``rng``, are drawn with probability proportional to the remainders, so a
    small tier gets its fair share on average even when cohorts are small (asynchronous refills
    invite one or two devices at a time).

    >>> tier_quotas({"a": 6, "b": 3, "c": 1}, 5)
    {'a': 3, 'b': 2, 'c': 0}
    """
    total = sum(counts.values())
    size = min(size, total)
    if total == 0:
        return {t: 0 for t in counts}
    exact = {t: size * n / total for t, n in counts.items()}
    quotas = {t: int(v) for t, v in exact.items()}
    left = size - sum(quotas.values())
    if rng is not None and left > 0:
        tiers = sorted(counts)
        remainders = np.array([exact[t] - quotas[t] for t in tiers])
        picks = rng.choice(len(tiers), size=left, replace=False, p=remainders / remainders.sum())
        winners = [tiers[i] for i in picks]
    else:
        winners = sorted(counts, key=lambda t: (-(exact[t] - quotas[t]), t))[:left]
    for t in winners:
        quotas[t] += 1
    return quotas


@dataclass(frozen=True, slots=True)
class StratifiedSelector:
    """Proportional seats per tier, uniform within each tier."""

    def select(self, ready: Sequence[Readiness], size: int, *, seed: int, draw: int, version: int) -> list[int]:
        groups: dict[str, list[int]] = {}
        for r in sorted(ready, key=lambda r: r.device_id):
            groups.setdefault(r.tier, []).append(r.device_id)
        seats = np.random.default_rng([seed, draw, 0x5EA7])
        quotas = tier_quotas({t: len(ids) for t, ids in groups.items()}, size, seats)
        chosen: list[int] = []
        for tier in sorted(groups):
            rng = np.random.default_rng([seed, draw, zlib.crc32(tier.encode())])
            ids = groups[tier]
            chosen.extend(ids[i] for i in rng.choice(len(ids), size=quotas[tier], replace=False))
        return chosen
