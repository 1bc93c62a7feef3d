"""When a round's tasks carry DYNAMITE's probes (``dynamite.probe``), from the estimate's own error.

The σ² probe and the curvature probe cost every task that carries them (b + 2h and 3·(b' + h)
units of per-sample compute, :mod:`fedfit.cost.probe_work`). Their round's pooled value is the
share-weighted mean of the devices' probes (:func:`.estimate.probed_sigma2`), so its sampling
error follows from the same probes: with weights w_i, mean m and spread
s² = Σ w_i (x_i − m)² / Σ w_i, the effective number of probes is n = (Σ w_i)² / Σ w_i² and the
standard error is √(s² / n).

``every_round``: every task probes. ``until_settled``: tasks probe until a round's pooled probe
moves the smoothed estimate it updates by no more than its own standard error,
|m − estimate| ≤ SE(m), for σ² and, where probed, the curvature: the probe then tells the
estimate nothing it cannot already attribute to sampling error, and the estimate is held from
then on (no task probes and no round pays for it). ``sampled``: the same stop, and while the
estimate moves only k devices probe, the fewest whose standard error s/√k is within the move Δ
the estimate just made, k = ⌈s² / Δ²⌉ (at least 2, so the next round has a spread; at most the
fleet), taken in turn over the fleet's ids so every device's data enters the estimate
(:func:`probing_ids`). No constant is tuned: every threshold is the probes' own error. The
planner prices each device's round with the probes its own plan carries.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Literal

ProbeSchedule = Literal["every_round", "until_settled", "sampled"]


def pooled(values: Mapping[int, float], shares: Mapping[int, float]) -> tuple[float, float] | None:
    """(share-weighted mean, its standard error) of one round's probes; ``None``: no probe.

    >>> pooled({1: 2.0, 2: 6.0}, {1: 1.0, 2: 1.0})  # s² = 4, n = 2: SE = √2
    (4.0, 1.4142135623730951)
    """
    weighted = [(x, shares[i]) for i, x in values.items() if i in shares and shares[i] > 0 and math.isfinite(x)]
    total = sum(w for _, w in weighted)
    if total <= 0:
        return None
    mean = sum(x * w for x, w in weighted) / total
    spread = sum(w * (x - mean) ** 2 for x, w in weighted) / total
    effective = total ** 2 / sum(w * w for _, w in weighted)
    return mean, math.sqrt(spread / effective)


def settled(estimate: float | None, probes: Mapping[int, float], shares: Mapping[int, float]) -> bool:
    """Whether this round's pooled probe lies within its standard error of the ``estimate`` it
    updates (``False`` with no estimate before it or no probe: nothing to judge yet).

    >>> settled(5.0, {1: 2.0, 2: 6.0}, {1: 1.0, 2: 1.0}), settled(6.0, {1: 2.0, 2: 6.0}, {1: 1.0, 2: 1.0})
    (True, False)
    """
    found = pooled(probes, shares)
    if estimate is None or found is None:
        return False
    mean, error = found
    return abs(mean - estimate) <= error


def sample_size(estimate: float | None, probes: Mapping[int, float], shares: Mapping[int, float], fleet: int) -> int:
    """``sampled``'s k for the next round from this round's probes of one estimate: 0 when
    :func:`settled`, the ``fleet`` with nothing to compare, else ⌈s² / Δ²⌉ within [2, fleet].

    >>> sample_size(None, {1: 2.0, 2: 6.0}, {1: 1.0, 2: 1.0}, 8), sample_size(5.0, {1: 2.0, 2: 6.0}, {1: 1.0, 2: 1.0}, 8)
    (8, 0)
    >>> sample_size(1.0, {1: 2.0, 2: 6.0}, {1: 1.0, 2: 1.0}, 8)  # s² = 4, Δ = 3: ⌈4/9⌉ = 1 → 2
    2
    """
    found = pooled(probes, shares)
    if estimate is None or found is None:
        return fleet
    mean, error = found
    if abs(mean - estimate) <= error:
        return 0
    weights = [shares[i] for i in probes if i in shares and shares[i] > 0 and math.isfinite(probes[i])]
    spread = error ** 2 * sum(weights) ** 2 / sum(w * w for w in weights)  # s² = SE² · n
    return min(fleet, max(2, math.ceil(spread / (mean - estimate) ** 2)))


def probing_ids(ids: Sequence[int], count: int, turn: int) -> frozenset[int]:
    """The ``count`` devices that probe at ``turn``: consecutive in id order, starting where the
    last turn's stopped (round-robin).

    >>> sorted(probing_ids([4, 1, 3, 2, 5], 2, 0)), sorted(probing_ids([4, 1, 3, 2, 5], 2, 1)), sorted(probing_ids([4, 1, 3, 2, 5], 2, 2))
    ([1, 2], [3, 4], [1, 5])
    """
    order = sorted(ids)
    if not order or count <= 0:
        return frozenset()
    start = (turn * count) % len(order)
    return frozenset(order[(start + j) % len(order)] for j in range(min(count, len(order))))
