"""Stratified selection across capability tiers, and a participation floor per tier.

Each tier gets a share of the cohort proportional to its eligible devices (largest remainder,
ties broken by tier name), drawn uniformly within the tier from (seed, draw, tier), so weak
tiers are represented in every round instead of by chance.

:class:`TierFloorSelector` puts a floor under any selector: a share ``floor`` of every cohort
is seated per tier in proportion to its eligible devices before the inner selector (readiness
first, Oort, ...) fills the rest, so tier t's devices are invited at least at
``floor × size × n_t / n`` seats per draw in expectation, however low their readiness. Without
it, readiness-first selection can leave watches and sensors uninvited for a whole run.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from fedfit.policy.readiness import Deferral, Readiness
from fedfit.policy.selection import Selector


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


@dataclass(frozen=True, slots=True)
class TierFloorSelector:
    """Seats a share ``floor`` of each cohort across tiers in proportion to their eligible
    devices, then lets ``inner`` choose the rest from the devices left.

    The reserved seats R = floor × size are made whole at random (⌊R⌋, plus one with
    probability R − ⌊R⌋) and split over tiers by :func:`tier_quotas` with random remainders,
    so a small tier gets its share in expectation even when cohorts are one or two devices.

    Attributes:
        inner: chooses the remaining seats.
        floor: share of each cohort reserved across tiers, in [0, 1] (0: ``inner`` alone;
            1: stratified).
        deferral: which devices are eligible for a reserved seat (online ones when ``None``):
            a floor seat never goes to a device that would be deferred.
    """

    inner: Selector
    floor: float = 0.25
    deferral: Deferral | None = None

    def select(self, ready: Sequence[Readiness], size: int, *, seed: int, draw: int, version: int) -> list[int]:
        eligible = [r for r in ready if (not self.deferral.defers(r) if self.deferral is not None else r.online)]
        floor = self._floor_seats(eligible, size, seed=seed, draw=draw)
        taken = set(floor)
        rest = [r for r in ready if r.device_id not in taken]
        return floor + self.inner.select(rest, size - len(floor), seed=seed, draw=draw, version=version)

    def _floor_seats(self, eligible: Sequence[Readiness], size: int, *, seed: int, draw: int) -> list[int]:
        if self.floor <= 0 or not eligible or size <= 0:
            return []
        rng = np.random.default_rng([seed, draw, 0xF1004])
        reserved = self.floor * min(size, len(eligible))
        seats = int(reserved) + int(rng.random() < reserved - int(reserved))
        # Its own stream: with the seed itself, a stratified ``inner`` would redraw the same
        # uniforms, so a tier that won a floor seat would have won the inner draw anyway.
        stream = zlib.crc32(f"{seed}/tier-floor".encode())
        sub = StratifiedSelector().select(eligible, seats, seed=stream, draw=draw, version=0) if seats else []
        return sorted(sub)
