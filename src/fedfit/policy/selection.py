"""Cohort selection. Uniform random selection derives its draw from (seed, round) only, so a
resumed run picks the same cohort as an unbroken one (as FedJAX's client samplers do)."""

from __future__ import annotations

from collections.abc import Sequence

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
