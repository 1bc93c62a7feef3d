"""Participation weighting: count a rarely heard device's update for the versions it was missing.

Devices that finish often (fast, always online) put many more updates into the average than
slow or intermittent ones, so over a run the model leans to their data. FedAU (Wang and Ji
2023, "A Lightweight Method for Tackling Unknown Participation Statistics in Federated
Averaging", NeurIPS) weights each update by an online estimate ω_i of the device's mean
interval between participations, which makes the expected weight per model version the same
for every device whatever its participation rate. Here an interval is counted in model
versions (sync rounds, async server steps) between two of the device's updates being folded
in; the first runs from version 0, so an update folded in at version v opens with v + 1.
An interval longer than the cutoff K is recorded as whole intervals of K plus the rest (as
FedAU records K each time a device stays away K rounds), which bounds ω_i by K:

    ω_i = (versions covered) / (intervals recorded),  each interval ≤ K

A device folded in at every version has ω = 1, so participation weighting changes nothing
for a fleet where every device arrives every time.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

#: Versions at which a device's updates were folded in (ascending) → its weight factor.
ParticipationFn = Callable[[Sequence[int]], float]


def unweighted(folded: Sequence[int]) -> float:
    """No participation weighting: every update counts 1."""
    return 1.0


def mean_interval(folded: Sequence[int], cutoff: int) -> float:
    """FedAU's ω: mean interval between the folds in ``folded``, each interval capped at ``cutoff``.

    >>> mean_interval([0, 1, 2], cutoff=10)   # every version: 1, 1, 1
    1.0
    >>> mean_interval([5], cutoff=10)         # first fold at version 5: one interval of 6
    6.0
    >>> mean_interval([9], cutoff=4)          # 10 versions as intervals 4, 4, 2
    3.3333333333333335

    Two folds at one version (possible only if a device finished twice before the server
    stepped) count as two intervals over it, so ω drops below 1.

    Raises:
        ValueError: ``cutoff`` below 1, a negative version or versions out of order.
    """
    if cutoff < 1:
        raise ValueError(f"cutoff must be >= 1, got {cutoff}")
    if not folded:
        return 1.0
    previous, intervals = -1, 0
    for version in folded:
        if version < max(previous, 0):
            raise ValueError(f"folded versions must not descend and start at 0 or later, got {list(folded)}")
        intervals += max(1, math.ceil((version - previous) / cutoff))
        previous = version
    return (folded[-1] + 1) / intervals


@dataclass(frozen=True, slots=True)
class MeanInterval:
    """:func:`mean_interval` with its cutoff bound: the ``interval`` participation weighting.

    >>> MeanInterval(cutoff=50)([3, 7])
    4.0
    """

    cutoff: int

    def __call__(self, folded: Sequence[int]) -> float:
        return mean_interval(folded, self.cutoff)
