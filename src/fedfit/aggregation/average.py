"""One aggregation rule: the masked weighted average of client contributions.

Every update is a set of master-model coordinates (all of them for plain FedAvg; a width
slice, a dropout subset, a pruning mask or a layer subset later) with new values and a weight.
For each coordinate, the new master value is the weighted mean of the contributions that hold
it; coordinates nobody holds keep their value::

    new[c] = Σ_i w_i m_i[c] x_i[c] / Σ_i w_i m_i[c]     where Σ_i w_i m_i[c] > 0
    new[c] = old[c]                                        otherwise

With full masks and weights = local sample counts this is FedAvg (McMahan et al. 2017,
"Communication-Efficient Learning of Deep Networks from Decentralized Data").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from fedfit.types import Params


@dataclass(frozen=True, slots=True)
class Contribution:
    """One client's contribution: values in master coordinates, where they hold, how much.

    Attributes:
        params: tensors with the master's names and shapes (entries outside ``masks`` ignored).
        weight: non-negative weight (e.g. samples processed).
        masks: per-name boolean masks of the coordinates held; a missing name means the whole
            tensor is held, a name absent from ``params`` is not held at all.
    """

    params: Params
    weight: float
    masks: dict[str, torch.Tensor] | None = None


def masked_weighted_average(master: Params, contributions: Sequence[Contribution]) -> Params:
    """Fold ``contributions`` into ``master`` by the masked weighted average.

    Non-float entries (e.g. batch-norm counters) are taken from the master unchanged.

    >>> m = {"w": torch.tensor([0.0, 0.0])}
    >>> a = Contribution({"w": torch.tensor([1.0, 1.0])}, 1.0)
    >>> b = Contribution({"w": torch.tensor([4.0, 4.0])}, 2.0, {"w": torch.tensor([True, False])})
    >>> masked_weighted_average(m, [a, b])["w"]
    tensor([3., 1.])
    """
    out: Params = {}
    for name, old in master.items():
        if not old.is_floating_point():
            out[name] = old.clone()
            continue
        num = torch.zeros_like(old, dtype=torch.float64)
        den = torch.zeros_like(old, dtype=torch.float64)
        for c in contributions:
            if name not in c.params or c.weight <= 0:
                continue
            held = c.masks.get(name) if c.masks else None
            w = c.weight if held is None else c.weight * held.to(torch.float64)
            num += w * c.params[name].to(torch.float64)
            den += w if held is not None else c.weight  # a scalar add: no weight-filled tensor
        new = torch.where(den > 0, num / den.clamp_min(1e-300), old.to(torch.float64))
        out[name] = new.to(old.dtype)
    return out
