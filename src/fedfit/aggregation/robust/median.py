"""Coordinate-wise median over the devices that hold each coordinate.

Yin, Chen, Ramchandran and Bartlett 2018 (ICML), as Flower's ``FedMedian``. For each master
coordinate c held by m_c devices::

    new[c] = x[c] + median{Δ_i[c] : device i holds c}

with the mean of the two middle values when m_c is even (the trimmed mean that drops
⌊(m_c − 1)/2⌋ values from each end). Unweighted; coordinates nobody holds keep their value.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from fedfit.aggregation.average import Contribution
from fedfit.aggregation.robust.trimmed_mean import coordinatewise
from fedfit.types import Params


def _middle(m: torch.Tensor) -> torch.Tensor:
    return torch.div(m - 1, 2, rounding_mode="floor").clamp_min(0)


def coordinate_median(master: Params, contributions: Sequence[Contribution]) -> Params:
    """The master moved by the median delta at every coordinate (over its holders).

    >>> m = {"w": torch.zeros(2)}
    >>> a = Contribution({"w": torch.tensor([1.0, 1.0])}, 1.0)
    >>> b = Contribution({"w": torch.tensor([2.0, 9.0])}, 1.0, {"w": torch.tensor([True, False])})
    >>> c = Contribution({"w": torch.tensor([7.0, 3.0])}, 1.0)
    >>> coordinate_median(m, [a, b, c])["w"]   # median(1, 2, 7) = 2; median(1, 3) = 2
    tensor([2., 2.])
    """
    return coordinatewise(master, contributions, _middle)
