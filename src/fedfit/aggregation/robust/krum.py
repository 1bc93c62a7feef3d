"""Krum and multi-Krum: keep the updates closest to their neighbours.

Blanchard, El Mhamdi, Guerraoui and Stainer 2017, "Machine Learning with Adversaries:
Byzantine Tolerant Gradient Descent" (NeurIPS). With n updates of which at most f are
Byzantine, update i scores the sum of its squared distances to its n − f − 2 nearest
neighbours; Krum keeps the lowest-scoring update, multi-Krum the ``m`` lowest, averaged (here
with the one masked weighted average, so heterogeneous updates fold in as usual).

Heterogeneous updates: devices i and j are compared on the coordinates both hold, as a mean
squared difference scaled to the master's size D::

    d(i, j) = D · Σ_c h_i h_j (Δ_i − Δ_j)² / Σ_c h_i h_j       (∞ if they share nothing)

so a narrow sub-model is neither closer nor farther merely for holding fewer coordinates.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from fedfit.aggregation.average import Contribution, masked_weighted_average
from fedfit.aggregation.robust.stack import stack
from fedfit.types import Params


def pairwise_distances(master: Params, contributions: Sequence[Contribution]) -> torch.Tensor:
    """``[n, n]`` squared distances d(i, j) over shared coordinates (diagonal 0)."""
    n = len(contributions)
    s = stack(master, contributions)
    flat_d = torch.cat([d.reshape(n, -1) for d in s.deltas.values()], dim=1)
    flat_h = torch.cat([h.reshape(n, -1) for h in s.held.values()], dim=1).to(torch.float64)
    sq = flat_d.pow(2) @ flat_h.T  # sq[i, j] = Σ_c Δ_i[c]² h_j[c]
    total = sq + sq.T - 2.0 * (flat_d @ flat_d.T)
    common = flat_h @ flat_h.T
    dist = torch.where(common > 0, flat_d.shape[1] * total.clamp_min(0.0) / common.clamp_min(1.0), torch.inf)
    return dist.fill_diagonal_(0.0)


def krum_scores(dist: torch.Tensor, byzantine: int) -> torch.Tensor:
    """Each update's sum of distances to its n − f − 2 nearest others (at least one)."""
    n = dist.shape[0]
    k = max(1, n - byzantine - 2)
    others = dist + torch.diag(torch.full((n,), torch.inf, dtype=dist.dtype))
    nearest = others.sort(dim=1).values[:, : min(k, n - 1)]
    return nearest.sum(dim=1)


def krum_select(master: Params, contributions: Sequence[Contribution], byzantine: int, keep: int) -> list[int]:
    """Indices of the ``keep`` lowest-scoring contributions (ties: lower index first)."""
    live = [i for i, c in enumerate(contributions) if c.weight > 0]
    if len(live) <= 2:
        return live
    scores = krum_scores(pairwise_distances(master, [contributions[i] for i in live]), byzantine)
    order = sorted(range(len(live)), key=lambda i: (float(scores[i]), i))
    return sorted(live[i] for i in order[: max(1, keep)])


@dataclass(frozen=True)
class Krum:
    """(Multi-)Krum: average the ``keep`` updates closest to their neighbours.

    >>> m = {"w": torch.zeros(1)}
    >>> cs = [Contribution({"w": torch.tensor([v])}, 1.0) for v in (1.0, 1.1, 0.9, 50.0)]
    >>> Krum(byzantine=1, keep=2)(m, cs)["w"]
    tensor([1.0500])

    Attributes:
        byzantine: f, the number of Byzantine updates assumed.
        keep: m updates averaged (1: Krum).
    """

    byzantine: int = 1
    keep: int = 1

    def __call__(self, master: Params, contributions: Sequence[Contribution]) -> Params:
        chosen = krum_select(master, contributions, self.byzantine, self.keep)
        return masked_weighted_average(master, [contributions[i] for i in chosen])
