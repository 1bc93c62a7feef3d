"""Channel statistics: per-unit update magnitudes accumulated across devices and rounds.

For every width group and unit c, each aggregated update adds ``w · ||Δ_c||₂``, the L2 norm of
the change it made to every coordinate the unit owns (its output row, norm entries and the
consumer's input column), where it held them. Units that many devices move a lot rank high;
units nobody moves rank low and are pruning candidates (data-driven structured pruning, seed
003; magnitude criteria as Li et al. 2017, "Pruning Filters for Efficient ConvNets", but on
federated update norms). Pure: tensors in, a new :class:`ChannelStats` out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import torch

from fedfit.models.coordinates import CoordinateMap, WidthGroup
from fedfit.types import Params


@dataclass(frozen=True)
class ChannelStats:
    """Accumulated update magnitude per unit of each width group.

    Attributes:
        scores: group name → float64 tensor of one score per master unit.
        updates: number of updates folded in.
    """

    scores: dict[str, torch.Tensor] = field(default_factory=dict)
    updates: int = 0

    @classmethod
    def empty(cls, groups: Sequence[WidthGroup]) -> ChannelStats:
        """Zero scores for every group."""
        return cls({g.name: torch.zeros(g.size, dtype=torch.float64) for g in groups}, 0)

    def ranking(self, group: str) -> list[int]:
        """Units of ``group`` from most to least important (ties by index)."""
        s = self.scores[group]
        return sorted(range(len(s)), key=lambda i: (-float(s[i]), i))


def _unit_norms(squares: torch.Tensor, axis: int, block: int, size: int) -> torch.Tensor:
    """Squared L2 norm per group unit along ``axis`` (``block`` entries per unit) of the delta
    whose elementwise squares (float64, contiguous) are ``squares``.

    Squaring before moving the axis gives the values squaring after would, laid out as
    ``pow`` lays out its result for the moved view (its strides, or a contiguous copy where
    ``reshape`` copies), so the sum runs in the same order and gives the same bits
    (``tests/models/test_channel_stats.py``); a parameter two groups read is squared once.
    """
    return squares.movedim(axis, 0).reshape(size, block, -1).sum(dim=(1, 2))


def accumulate(stats: ChannelStats, groups: Sequence[WidthGroup], before: Params, after: Params,
               cmap: CoordinateMap, weight: float = 1.0) -> ChannelStats:
    """``stats`` plus one update's unit magnitudes.

    Args:
        stats: the statistics so far.
        groups: the master's width groups.
        before: master parameters the device started from (master shapes).
        after: the update scattered into master shapes (unheld coordinates equal ``before``).
        cmap: the update's coordinate map (units it did not hold score nothing).
        weight: the update's aggregation weight.
    """
    scores = dict(stats.scores)  # each group's entry is replaced by a new tensor, never changed in place
    squares: dict[str, torch.Tensor] = {}
    for g in groups:
        squared = torch.zeros(g.size, dtype=torch.float64)
        for ref in g.axes:
            if ref.param in after:
                if ref.param not in squares:
                    squares[ref.param] = (after[ref.param] - before[ref.param]).double().contiguous().pow_(2)
                squared += _unit_norms(squares[ref.param], ref.axis, ref.block, g.size)
        added = weight * squared.sqrt()
        if g.name in cmap.kept:  # a slice of the group: the units it did not hold score nothing
            held = torch.zeros(g.size, dtype=torch.bool)
            held[cmap.kept[g.name]] = True
            added = added * held
        scores[g.name] = scores.get(g.name, torch.zeros(g.size, dtype=torch.float64)) + added
    return ChannelStats(scores, stats.updates + 1)
