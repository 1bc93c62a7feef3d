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
from operator import attrgetter

import numpy as np
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


_MASKS = attrgetter("masks")

#: Values (float64) a fold stacks at once: a round's small updates go in a few ops (a chunk's
#: terms, 512 KiB, stay in a core's cache; 2**14 made a 600-value tensor of 726 updates 27 chunks).
STACK_ELEMENTS = 1 << 16
#: Values above which a tensor is added one update at a time, never copied for the whole round.
ONE_BY_ONE_ABOVE = 1 << 11


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
    weighed = [c for c in contributions if c.weight > 0]
    masked = any(map(_MASKS, weighed))  # a round without masks: no chunk looks for them
    for name, old in master.items():
        if not old.is_floating_point():
            out[name] = old.clone()
            continue
        held = [c for c in weighed if name in c.params]
        num, den = _weighted_sums(name, old, held, masked)
        new = torch.where(den > 0, num / den.clamp_min(1e-300), old.to(torch.float64))
        out[name] = new.to(old.dtype)
    return out


def _weighted_sums(name: str, old: torch.Tensor, held: Sequence[Contribution],
                   masked: bool = True) -> tuple[torch.Tensor, torch.Tensor]:
    """Σ_i w_i m_i x_i and Σ_i w_i m_i at every coordinate of ``name`` (float64, in order).

    A small tensor is folded a chunk of updates at a time (:data:`STACK_ELEMENTS` values), so
    a round of a thousand small updates costs a few ops; one of more than
    :data:`ONE_BY_ONE_ABOVE` values update by update. ``masked``: whether any update may hold
    masks (``False``: none does, so the chunks do not look).
    """
    size = max(1, old.numel())
    rows = STACK_ELEMENTS // size
    if size > ONE_BY_ONE_ABOVE:
        return _one_by_one(name, old, held)
    num, den = np.zeros(size), _Denominator(size)
    for start in range(0, len(held), rows):
        chunk = held[start:start + rows]
        weights = np.array([float(c.weight) for c in chunk])[:, None]
        values = _flat(torch.stack([c.params[name] for c in chunk]).reshape(len(chunk), size))
        masks = [c.masks.get(name) if c.masks else None for c in chunk] if masked else []
        if any(m is not None for m in masks):
            every = torch.ones_like(old, dtype=torch.bool)
            held_at = torch.stack([every if m is None else m for m in masks]).reshape(len(chunk), size)
            weights = weights * held_at.numpy()
        terms = np.empty((len(chunk) + 1, size))
        terms[0] = num
        np.multiply(values, weights, out=terms[1:])
        num = sequential_sum(terms)
        den.add(weights)
    return torch.from_numpy(num).reshape(old.shape), den.tensor(old.shape)


class _Denominator:
    """Σ_i w_i m_i over ``size`` coordinates, kept as one number while every term is one weight."""

    def __init__(self, size: int) -> None:
        self.size, self.total, self.values = size, 0.0, np.empty(0)

    def add(self, weights: np.ndarray) -> None:
        """Add the rows of ``weights`` in order: shape (k, 1) (every coordinate) or (k, size)."""
        if weights.shape[1] == 1 and not self.values.size:
            for w in weights[:, 0].tolist():
                self.total += w
            return
        start = self.values if self.values.size else np.full(self.size, self.total)
        self.values = sequential_sum(np.concatenate([start[None], np.broadcast_to(weights, (len(weights), self.size))]))

    def tensor(self, shape: torch.Size) -> torch.Tensor:
        if self.values.size:
            return torch.from_numpy(self.values).reshape(shape)
        return torch.full(shape, self.total, dtype=torch.float64)


def _one_by_one(name: str, old: torch.Tensor, held: Sequence[Contribution]) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`_weighted_sums` as a loop of ``+=`` (large tensors: stacking would only copy more)."""
    num = torch.zeros_like(old, dtype=torch.float64)
    den = _Denominator(max(1, old.numel()))  # one number while no update is masked
    for c in held:
        mask = c.masks.get(name) if c.masks else None
        if mask is None:
            num += c.params[name].to(torch.float64, copy=True).mul_(c.weight)  # w·x rounded once, as w * x
            den.add(np.array([[float(c.weight)]]))
        else:
            w = c.weight * mask.to(torch.float64)
            num += w * c.params[name].to(torch.float64)
            den.add(w.reshape(1, -1).numpy())
    return num, den.tensor(old.shape)


def _flat(stacked: torch.Tensor) -> np.ndarray:
    """A stacked float tensor as an array NumPy can multiply (bfloat16 widened, exactly)."""
    return (stacked.to(torch.float64) if stacked.dtype == torch.bfloat16 else stacked).numpy()


def sequential_sum(rows: np.ndarray) -> np.ndarray:
    """``rows[0] + rows[1] + ...`` added top to bottom, as a loop of float64 ``+=`` would.

    A float sum's bits depend on its order. NumPy adds along an axis that is not the fastest
    in memory term by term (pairwise summation is only used along the fastest one, as
    ``numpy.sum`` documents), and a running sum (``accumulate``) is term by term by definition.

    >>> sequential_sum(np.array([[1e16, 0.0], [1.0, 0.5], [1.0, 0.25]])).tolist()  # pairing: 1e16 + 2
    [1e+16, 0.75]
    """
    return np.add.reduce(rows, axis=0) if rows.shape[1] > 1 else np.add.accumulate(rows, axis=0)[-1]
