"""Coordinate-wise trimmed mean over the devices that hold each coordinate.

Yin, Chen, Ramchandran and Bartlett 2018, "Byzantine-Robust Distributed Learning: Towards
Optimal Statistical Rates" (ICML). For each master coordinate c held by m_c devices, sort
their values, drop the t_c = ⌊β·m_c⌋ largest and smallest, and average the rest::

    new[c] = x[c] + mean of Δ_(t_c+1..m_c−t_c)[c]      (Δ sorted at c; unweighted)

Coordinates nobody holds keep the master's value. The mean is unweighted, as in the paper: a
device's sample count would otherwise be a lever for an attacker who lies about it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from fedfit.aggregation.average import Contribution
from fedfit.aggregation.robust.stack import move, stack
from fedfit.types import Params

#: Holders per coordinate → values trimmed from each end.
TrimCount = Callable[[torch.Tensor], torch.Tensor]


def trimmed_delta(deltas: torch.Tensor, held: torch.Tensor, trim: TrimCount) -> torch.Tensor:
    """Mean over dimension 0 of the held values, ``trim(m)`` dropped from each end.

    Args:
        deltas: ``[n, *shape]`` values.
        held: ``[n, *shape]`` booleans, True where a value counts.
        trim: m (holders per coordinate, int64 tensor) → values dropped at each end.

    Returns:
        ``[*shape]`` means (0 where nothing is held).
    """
    count = held.sum(dim=0)
    ordered = torch.where(held, deltas, torch.inf).sort(dim=0).values
    t = trim(count)
    rank = torch.arange(deltas.shape[0]).reshape(-1, *([1] * (deltas.dim() - 1)))
    keep = (rank >= t) & (rank < count - t)
    kept = (count - 2 * t).clamp_min(1)
    return torch.where(keep, ordered, 0.0).sum(dim=0) / kept


def trim_fraction(beta: float) -> TrimCount:
    """⌊β·m⌋ values off each end (β in [0, 0.5))."""
    return lambda m: torch.floor(beta * m.to(torch.float64)).to(torch.int64)


def coordinatewise(master: Params, contributions: Sequence[Contribution], trim: TrimCount) -> Params:
    """The master moved by the trimmed mean of the deltas at every coordinate."""
    if not contributions:
        return master
    s = stack(master, contributions)
    delta = {name: trimmed_delta(d, s.held[name], trim) for name, d in s.deltas.items()}
    return move(master, delta, {name: h.any(dim=0) for name, h in s.held.items()})


@dataclass(frozen=True)
class TrimmedMean:
    """Coordinate-wise β-trimmed mean (each coordinate over its holders).

    >>> m = {"w": torch.zeros(1)}
    >>> cs = [Contribution({"w": torch.tensor([v])}, 1.0) for v in (1.0, 2.0, 3.0, 100.0)]
    >>> TrimmedMean(0.25)(m, cs)["w"]
    tensor([2.5000])
    """

    beta: float = 0.1

    def __call__(self, master: Params, contributions: Sequence[Contribution]) -> Params:
        return coordinatewise(master, contributions, trim_fraction(self.beta))
