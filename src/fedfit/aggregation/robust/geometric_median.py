"""RFA: the geometric median of the updates by the smoothed Weiszfeld algorithm.

Pillutla, Kakade and Harchaoui 2022, "Robust Aggregation for Federated Learning" (IEEE TSP).
The geometric median z minimises Σ α_i ‖z − x_i‖; Weiszfeld's iteration re-weights every
update by the inverse of its distance to the current estimate::

    β_i = α_i / max(ν, ‖z − x_i‖)       z ← Σ β_i x_i / Σ β_i

so an outlier's weight falls with its distance: outlier down-weighting that needs nothing but
the updates (no server data, no assumed count of attackers), and each step is the one masked
weighted average. Heterogeneous updates: ‖z − x_i‖ runs over the coordinates device i holds,
scaled to the master's size D (√(D/|held_i|) · ‖·‖), so a narrow sub-model is not favoured for
holding fewer coordinates.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from fedfit.aggregation.average import Contribution, masked_weighted_average
from fedfit.aggregation.robust.stack import held_mask
from fedfit.types import Params


def held_distance(z: Params, c: Contribution) -> float:
    """‖z − x_c‖ over the coordinates ``c`` holds, scaled to the size of ``z``'s float tensors."""
    total, held, size = 0.0, 0, 0
    for name, value in z.items():
        if not value.is_floating_point():
            continue
        size += value.numel()
        mask = held_mask(c, name, value)
        if bool(mask.any()):
            diff = (value.to(torch.float64) - c.params[name].to(torch.float64))[mask]
            total += float(diff.pow(2).sum())
            held += int(mask.sum())
    return math.sqrt(total * size / held) if held else 0.0


@dataclass(frozen=True)
class GeometricMedian:
    """RFA's smoothed Weiszfeld geometric median, weights α_i from the contributions.

    >>> m = {"w": torch.zeros(1)}
    >>> cs = [Contribution({"w": torch.tensor([v])}, 1.0) for v in (1.0, 2.0, 3.0, 4.0, 1000.0)]
    >>> round(float(GeometricMedian(iterations=50)(m, cs)["w"]), 2)   # in 1-D, the median
    3.0

    Attributes:
        iterations: Weiszfeld steps (the paper finds 3–4 enough).
        smoothing: ν, the floor on distances (keeps a weight finite when z meets an update).
    """

    iterations: int = 4
    smoothing: float = 1e-6

    def __call__(self, master: Params, contributions: Sequence[Contribution]) -> Params:
        live = [c for c in contributions if c.weight > 0]
        if not live:
            return master
        z = masked_weighted_average(master, live)
        for _ in range(self.iterations):
            reweighted = [Contribution(c.params, c.weight / max(self.smoothing, held_distance(z, c)), c.masks)
                          for c in live]
            z = masked_weighted_average(master, reweighted)
        return z
