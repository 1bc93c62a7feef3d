"""Coordinate maps: which master coordinates a sub-model holds, and moving values between them.

A *width group* is one hidden dimension of a model (a layer's output units or channels) and
every parameter axis it indexes: the producing layer's output axis, the norm layers on it, the
consuming layer's input axis (``block`` > 1 when the consumer sees the dimension flattened,
e.g. a linear layer after ``C×H×W`` feature maps). A :class:`CoordinateMap` keeps a set of
indices per group; from it one extracts a sub-model's parameters from the master and scatters
a trained sub-model back into master coordinates with a boolean mask of the coordinates held.
Ordered prefixes (HeteroFL, Diao et al. 2021; FjORD, Horváth et al. 2021), seeded random
subsets (federated dropout, Caldas et al. 2018) and importance-ranked channels all are just
different index sets (see :mod:`fedfit.models.indices`).

>>> from torch import nn
>>> fc1, fc2 = nn.Linear(3, 4), nn.Linear(4, 2)
>>> g = WidthGroup("h", 4, (*layer_outputs("fc1", fc1), *layer_inputs("fc2", fc2)))
>>> m = CoordinateMap((g,), {"h": torch.tensor([0, 2])})
>>> {k: tuple(v.shape) for k, v in m.extract({"fc1.weight": fc1.weight, "fc2.weight": fc2.weight}).items()}
{'fc1.weight': (2, 3), 'fc2.weight': (2, 2)}

Pure: tensors in, tensors out; no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import nn

from fedfit.errors import PlanError
from fedfit.types import Params


@dataclass(frozen=True, slots=True)
class AxisRef:
    """One parameter axis indexed by a width group.

    Attributes:
        param: parameter name in the ``state_dict``.
        axis: the axis of that tensor.
        block: consecutive entries per group index along the axis (flattened feature maps).
    """

    param: str
    axis: int
    block: int = 1


@dataclass(frozen=True, slots=True)
class WidthGroup:
    """A hidden dimension of ``size`` units and the parameter axes it indexes."""

    name: str
    size: int
    axes: tuple[AxisRef, ...]


_NORMS = (nn.BatchNorm1d, nn.BatchNorm2d, nn.LayerNorm, nn.GroupNorm)


def layer_outputs(prefix: str, module: nn.Module) -> tuple[AxisRef, ...]:
    """Axes indexed by ``module``'s output units (Linear, Conv2d, BatchNorm, LayerNorm, Embedding).

    Raises:
        PlanError: a layer type with no known output axis.
    """
    if isinstance(module, nn.Embedding):
        return (AxisRef(f"{prefix}.weight", 1),)
    if not isinstance(module, (nn.Linear, nn.Conv1d, nn.Conv2d, *_NORMS)):
        raise PlanError(f"{prefix}: no coordinate map for {type(module).__name__}")
    names = [n for n, _ in module.named_parameters(recurse=False)]
    names += [n for n, b in module.named_buffers(recurse=False) if b is not None and b.is_floating_point()]
    return tuple(AxisRef(f"{prefix}.{n}", 0) for n in names)


def layer_inputs(prefix: str, module: nn.Module, block: int = 1) -> tuple[AxisRef, ...]:
    """Axes indexed by ``module``'s input units (Linear, Conv1d or Conv2d weight, axis 1).

    Args:
        prefix: the module's name in the model.
        module: the consuming layer.
        block: input entries per unit (``H*W`` when a linear layer reads flattened maps).
    """
    if not isinstance(module, (nn.Linear, nn.Conv1d, nn.Conv2d)):
        raise PlanError(f"{prefix}: no input coordinate map for {type(module).__name__}")
    return (AxisRef(f"{prefix}.weight", 1, block),)


def width_groups(model: nn.Module) -> tuple[WidthGroup, ...]:
    """The hidden-dimension groups of ``model`` (from its ``width_groups()`` method).

    Raises:
        PlanError: the model declares no width groups.
    """
    declare = getattr(model, "width_groups", None)
    if declare is None:
        raise PlanError(f"model {type(model).__name__} declares no width groups; it cannot be sliced")
    groups: tuple[WidthGroup, ...] = declare()
    return groups


def _expand(indices: torch.Tensor, block: int) -> torch.Tensor:
    if block == 1:
        return indices
    return (indices[:, None] * block + torch.arange(block)[None, :]).reshape(-1)


@dataclass(frozen=True)
class CoordinateMap:
    """Indices kept per width group; a group not in ``kept`` is kept whole.

    Attributes:
        groups: the master model's width groups.
        kept: group name → sorted int64 indices into that group's master units.
    """

    groups: tuple[WidthGroup, ...]
    kept: dict[str, torch.Tensor]

    @property
    def is_full(self) -> bool:
        """Whether every unit of every group is kept (the sub-model is the master)."""
        return all(len(self.kept.get(g.name, range(g.size))) == g.size for g in self.groups)

    def index(self, name: str, shape: Sequence[int]) -> tuple[torch.Tensor, ...] | None:
        """Broadcastable per-axis indices of the coordinates of ``name`` held (``None``: all).

        ``tensor[map.index(name, tensor.shape)]`` is the sub-model's slice of ``tensor``.
        """
        per_axis: dict[int, torch.Tensor] = {}
        for g in self.groups:
            for ref in g.axes:
                if ref.param == name and g.name in self.kept:
                    per_axis[ref.axis] = _expand(self.kept[g.name], ref.block)
        if not per_axis:
            return None
        ndim = len(shape)
        return tuple(per_axis.get(a, torch.arange(n)).reshape([-1 if b == a else 1 for b in range(ndim)])
                     for a, n in enumerate(shape))

    def extract(self, params: Params) -> Params:
        """The sub-model's parameters, sliced out of master-shaped ``params``."""
        out: Params = {}
        for name, value in params.items():
            idx = self.index(name, value.shape)
            out[name] = value if idx is None else value[idx].clone()
        return out

    def masks(self, master: Params) -> dict[str, torch.Tensor]:
        """Boolean masks (master shapes) of the coordinates held; names held whole are left out."""
        out: dict[str, torch.Tensor] = {}
        for name, value in master.items():
            idx = self.index(name, value.shape)
            if idx is not None:
                mask = torch.zeros(value.shape, dtype=torch.bool)
                mask[idx] = True
                out[name] = mask
        return out

    def scatter(self, sub: Params, master: Params) -> Params:
        """``sub`` written into a copy of ``master`` at the held coordinates (others unchanged).

        Raises:
            PlanError: a sub-model tensor whose shape is not this map's slice of the master.
        """
        out: Params = {}
        for name, value in master.items():
            if name not in sub:
                out[name] = value.clone()
                continue
            idx = self.index(name, value.shape)
            expected = value[idx].shape if idx is not None else value.shape
            if sub[name].shape != expected:
                raise PlanError(f"parameter '{name}': sub-model shape {tuple(sub[name].shape)}, "
                                f"map expects {tuple(expected)}")
            if idx is None:
                out[name] = sub[name].clone()
            else:
                out[name] = value.clone()
                out[name][idx] = sub[name].to(value.dtype)
        return out


def full_map(groups: Sequence[WidthGroup]) -> CoordinateMap:
    """The map that keeps everything (the master itself)."""
    return CoordinateMap(tuple(groups), {})
