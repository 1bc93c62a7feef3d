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


#: Values (float64) a fold stacks at once: a round's small updates go in a few ops, while a large
#: tensor is added one update at a time, never copied for the whole round.
STACK_ELEMENTS = 1 << 16


def masked_weighted_average(master: Params, contributions: Sequence[Contribution]) -> Params:
    """Fold ``contributions`` into ``master`` by the masked weighted average.

    Non-float entries (e.g. batch-norm counters) are taken from the master unchanged. The sums
    run in float64 in the order of ``contributions``, term by term (:func:`sequential_sum`), so
    folding many small updates in stacked ops gives the same bits as adding them one by one.

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
        held = [c for c in contributions if name in c.params and c.weight > 0]
        num, den = _weighted_sums(name, old, held)
        new = torch.where(den > 0, num / den.clamp_min(1e-300), old.to(torch.float64))
        out[name] = new.to(old.dtype)
    return out


def _weighted_sums(name: str, old: torch.Tensor, held: Sequence[Contribution]) -> tuple[torch.Tensor, torch.Tensor]:
    """Σ_i w_i m_i x_i and Σ_i w_i m_i at every coordinate of ``name`` (float64, in order).

    Contributions are stacked a chunk at a time (about :data:`STACK_ELEMENTS` values), so a
    round of a thousand small updates costs a few ops and a large tensor is never copied whole.
    """
    num = torch.zeros_like(old, dtype=torch.float64)
    den = torch.zeros_like(old, dtype=torch.float64)
    rows = max(1, STACK_ELEMENTS // max(1, old.numel()))
    for start in range(0, len(held), rows):
        chunk = held[start:start + rows]
        weights = torch.tensor([float(c.weight) for c in chunk], dtype=torch.float64).reshape(-1, *[1] * old.dim())
        masks = [c.masks.get(name) if c.masks else None for c in chunk]
        if any(m is not None for m in masks):
            ones = torch.ones_like(old, dtype=torch.bool)
            weights = weights * torch.stack([ones if m is None else m for m in masks]).to(torch.float64)
            den = sequential_sum(den, weights)
        else:
            den = sequential_sum(den, weights.expand(len(chunk), *old.shape))
        values = torch.stack([c.params[name] for c in chunk]).to(torch.float64)
        num = sequential_sum(num, weights * values)
    return num, den


def sequential_sum(total: torch.Tensor, terms: torch.Tensor) -> torch.Tensor:
    """``total + terms[0] + terms[1] + ...`` added left to right, as a loop of ``+=`` would.

    A float sum's bits depend on its order, and ``terms.sum(0)`` may pair terms up; a running
    sum (``cumsum``) along a contiguous row is the loop's order by definition. Float64 only
    (a float32 ``cumsum`` accumulates in float64, which a loop of float32 ``+=`` does not).

    >>> f64 = torch.float64
    >>> sequential_sum(torch.tensor([1e16], dtype=f64), torch.tensor([[1.0], [1.0]], dtype=f64)).item() == 1e16
    True
    """
    if len(terms) == 1:
        return total + terms[0]
    rows = torch.cat([total.reshape(1, -1), terms.reshape(len(terms), -1)]).T.contiguous()
    return rows.cumsum(1)[:, -1].reshape(total.shape)
