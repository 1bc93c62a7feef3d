"""Cohort selection. Uniform random selection derives its draw from (seed, round) only, so a
resumed run picks the same cohort as an unbroken one (as FedJAX's client samplers do)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np


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
    return [pool[i] for i in rng.choice(len(pool), size=take, replace=False)]


def readiness_cohort(candidates: Sequence[int], size: int, *, seed: int, round_: int,
                     readiness: Callable[[int], int], low: int = 2) -> list[int]:
    """Uniform draw that deprioritises devices whose readiness is at most ``low``.

    Seed 000: "a device in a low-power state may report a batch size of 1 or 2, signalling it
    should be deprioritised". Devices reporting more than ``low`` are drawn first (uniformly,
    from (seed, round)); the low ones fill the cohort only when too few are ready.

    Args:
        candidates: device ids that may be invited.
        size: cohort size.
        seed: experiment seed.
        round_: round number.
        readiness: the batch a device can afford now (0: it would decline).
        low: readiness at or below which a device is deprioritised.
    """
    ready = [d for d in candidates if readiness(d) > low]
    chosen = uniform_cohort(ready, size, seed=seed, round_=round_)
    if len(chosen) < size:
        rest = [d for d in candidates if d not in set(ready)]
        chosen += uniform_cohort(rest, size - len(chosen), seed=seed, round_=round_)
    return chosen
