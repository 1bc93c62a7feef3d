"""Updates as stacked deltas over the coordinates each device holds: what robust rules work on.

A robust rule compares devices coordinate by coordinate or as whole vectors. With
heterogeneous updates (sub-model widths, dropout subsets, pruning and layer masks) device i
holds only some master coordinates, so every rule here works on

    Δ_i[c] = x_i[c] − x[c]      for the coordinates c that device i holds (m_i[c] = 1)

and ignores the rest: a coordinate's median or trimmed mean runs over its holders only, a
norm or a distance over the coordinates held (in common). A contribution with weight ≤ 0
holds nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from fedfit.aggregation.average import Contribution
from fedfit.types import Params

#: A combining rule: the master and the contributions in, the new master out.
Combine = Callable[[Params, Sequence[Contribution]], Params]


@dataclass(frozen=True)
class Stacked:
    """Deltas of n contributions per floating parameter.

    Attributes:
        deltas: name → float64 tensor ``[n, *shape]`` of x_i − x (0 where not held).
        held: name → boolean tensor ``[n, *shape]``, True where device i holds the coordinate.
    """

    deltas: dict[str, torch.Tensor]
    held: dict[str, torch.Tensor]


def held_mask(c: Contribution, name: str, like: torch.Tensor) -> torch.Tensor:
    """Boolean mask of the coordinates of ``name`` that ``c`` holds (shaped like ``like``)."""
    if name not in c.params or c.weight <= 0:
        return torch.zeros_like(like, dtype=torch.bool)
    mask = c.masks.get(name) if c.masks else None
    return torch.ones_like(like, dtype=torch.bool) if mask is None else mask.to(torch.bool)


def stack(master: Params, contributions: Sequence[Contribution]) -> Stacked:
    """The contributions' deltas and held masks, stacked per floating parameter."""
    deltas: dict[str, torch.Tensor] = {}
    held: dict[str, torch.Tensor] = {}
    for name, old in master.items():
        if not old.is_floating_point():
            continue
        base = old.to(torch.float64)
        masks = [held_mask(c, name, old) for c in contributions]
        rows = [torch.where(m, c.params[name].to(torch.float64) - base, 0.0) if bool(m.any()) else
                torch.zeros_like(base) for c, m in zip(contributions, masks, strict=True)]
        deltas[name] = torch.stack(rows) if rows else base.new_zeros((0, *base.shape))
        held[name] = torch.stack(masks) if masks else torch.zeros((0, *old.shape), dtype=torch.bool)
    return Stacked(deltas, held)


def norms(stacked: Stacked, n: int) -> torch.Tensor:
    """‖Δ_i‖₂ over the coordinates each device holds, shape ``[n]``."""
    total = torch.zeros(n, dtype=torch.float64)
    for d in stacked.deltas.values():
        total += d.reshape(n, -1).pow(2).sum(dim=1)
    return total.sqrt()


def move(master: Params, delta: dict[str, torch.Tensor], held_any: dict[str, torch.Tensor]) -> Params:
    """``master + delta`` where some device held the coordinate, the master elsewhere.

    Non-float entries are the master's, cloned.
    """
    out: Params = {}
    for name, old in master.items():
        if name not in delta:
            out[name] = old.clone()
            continue
        new = old.to(torch.float64) + torch.where(held_any[name], delta[name], 0.0)
        out[name] = new.to(old.dtype)
    return out


def rescaled(master: Params, c: Contribution, factor: float) -> Contribution:
    """``c`` with its delta scaled by ``factor``: x + factor·(x_c − x) on every float tensor."""
    params: Params = {}
    for name, value in c.params.items():
        old = master[name]
        if not value.is_floating_point():
            params[name] = value
            continue
        base = old.to(torch.float64)
        params[name] = (base + factor * (value.to(torch.float64) - base)).to(value.dtype)
    return Contribution(params, c.weight, c.masks)
