"""Cohort selection. Uniform random selection derives its draw from (seed, round) only, so a
resumed run picks the same cohort as an unbroken one (as FedJAX's client samplers do).

Selectors draw from (seed, draw): the draw number is the round in synchronous mode and the
count of invitations so far in asynchronous mode, where the server invites many times per
model version. Terms that count rounds (Oort's staleness bonus) use ``version``, the model
version the invited devices will start from.

Selectors take :class:`~fedfit.policy.readiness.Readiness` values and compose: a
:class:`DeferringSelector` filters, then an inner selector (uniform, stratified across tiers,
or Oort-guided) draws.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from fedfit.policy.readiness import Deferral, Readiness


def uniform_cohort(candidates: Sequence[int], size: int, *, seed: int, round_: int) -> list[int]:
    """``size`` devices drawn uniformly without replacement from ``candidates``.

    Args:
        candidates: device ids that may be invited (sorted order is not required).
        size: cohort size; all candidates when it exceeds their number.
        seed: experiment seed.
        round_: round number; with ``seed`` it fixes the draw.

    Returns:
        The chosen ids, in draw order.
    """
    pool = sorted(candidates)
    rng = np.random.default_rng([seed, round_, 0x5E1EC7])
    take = min(size, len(pool))
    return [pool[i] for i in rng.choice(len(pool), size=take, replace=False).tolist()]


class Selector(Protocol):
    """Chooses a cohort from readiness values; deterministic from (seed, draw)."""

    def select(self, ready: Sequence[Readiness], size: int, *, seed: int, draw: int, version: int) -> list[int]:
        """Up to ``size`` device ids from ``ready``.

        Args:
            ready: the candidates' readiness.
            size: devices wanted.
            seed: experiment seed.
            draw: selection counter; with ``seed`` it fixes the draw.
            version: model version the chosen devices start from (Oort's current round R).
        """
        ...


@dataclass(frozen=True, slots=True)
class UniformSelector:
    """Uniform random selection (readiness ignored): the FedAvg baseline."""

    def select(self, ready: Sequence[Readiness], size: int, *, seed: int, draw: int, version: int) -> list[int]:
        return uniform_cohort([r.device_id for r in ready], size, seed=seed, round_=draw)


@dataclass(frozen=True, slots=True)
class DeferringSelector:
    """Drops deferred devices (offline, low battery, hot, too little memory, too slow), then
    lets ``inner`` choose among the rest."""

    inner: Selector
    deferral: Deferral = Deferral()

    def select(self, ready: Sequence[Readiness], size: int, *, seed: int, draw: int, version: int) -> list[int]:
        eligible = [r for r in ready if not self.deferral.defers(r)]
        return self.inner.select(eligible, size, seed=seed, draw=draw, version=version)


@dataclass(frozen=True, slots=True)
class ReadinessFirstSelector:
    """Deprioritises devices whose affordable batch is at most ``low``, then lets ``inner`` choose.

    Seed 000: "a device in a low-power state may report a batch size of 1 or 2, signalling it
    should be deprioritised". Devices reporting more than ``low`` are chosen first; the low ones
    fill the cohort only when too few are ready.
    """

    inner: Selector
    low: int = 2

    def select(self, ready: Sequence[Readiness], size: int, *, seed: int, draw: int, version: int) -> list[int]:
        high = [r for r in ready if r.affordable_batch > self.low]
        chosen = self.inner.select(high, size, seed=seed, draw=draw, version=version)
        if len(chosen) < size:
            rest = [r for r in ready if r.affordable_batch <= self.low]
            chosen += self.inner.select(rest, size - len(chosen), seed=seed, draw=draw, version=version)
        return chosen
