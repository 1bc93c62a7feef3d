"""Candidate sampling: the idle devices a round checks in, without scanning the fleet.

A round at a million devices cannot afford to ask every idle device for its state. With a
candidate count ``m``, the server draws ``m`` distinct idle devices uniformly (from (seed,
draw), like every selection), and only those check in and are scored; the selector then picks
the cohort among them. Drawing ids with replacement and skipping busy ones and repeats costs
O(m) while the fleet is mostly idle; when that keeps missing (most devices busy) it falls back
to one scan of the idle devices. A uniform cohort drawn from a uniform candidate sample is a
uniform draw from all idle devices.

>>> sample_idle(list(range(1000)), lambda d: d % 2 == 1, 5, seed=0, draw=3) == \\
...     sample_idle(list(range(1000)), lambda d: d % 2 == 1, 5, seed=0, draw=3)
True
>>> all(d % 2 == 0 for d in sample_idle(list(range(1000)), lambda d: d % 2 == 1, 5, seed=0, draw=3))
True

A fleet's ids are usually 0, 1, ..., n-1: :func:`compact_ids` gives them as a ``range``, from
which a draw makes its id, where a list of a million is read at random places in memory (a
cache miss or two a draw: ≈ 0.7 ms of a round's 1,000 candidates). Same ids, same draws.

>>> compact_ids([0, 1, 2]), compact_ids([0, 2, 1])
(range(0, 3), [0, 2, 1])
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from operator import eq

import numpy as np

_TRIES = 4


def sample_idle(ids: Sequence[int], busy: Callable[[int], bool], count: int, *, seed: int,
                draw: int) -> list[int]:
    """Up to ``count`` distinct idle devices of ``ids``, drawn uniformly, in ascending order.

    Args:
        ids: every device.
        busy: whether a device has a task in flight (busy devices are never drawn).
        count: candidates wanted; every idle device when fewer are idle.
        seed: experiment seed.
        draw: selection counter (the round); with ``seed`` it fixes the sample.
    """
    rng = np.random.default_rng([seed, draw, 0xCA4D])
    chosen: dict[int, None] = {}
    for _ in range(_TRIES):
        need = count - len(chosen)
        if need <= 0:
            break
        for i in rng.integers(0, len(ids), size=2 * need + 8).tolist():
            device = ids[i]
            if device not in chosen and not busy(device):
                chosen[device] = None
                if len(chosen) == count:
                    break
    if len(chosen) < count:  # mostly busy: scan once
        idle = [d for d in ids if not busy(d)]
        if len(idle) <= count:
            return idle
        chosen = dict.fromkeys(idle[i] for i in rng.choice(len(idle), size=count, replace=False).tolist())
    return sorted(chosen)


def compact_ids(ids: list[int]) -> Sequence[int]:
    """``ids`` as ``range(len(ids))`` when they are exactly 0, 1, ..., n-1, else as given (checked once)."""
    return range(len(ids)) if all(map(eq, ids, range(len(ids)))) else ids
