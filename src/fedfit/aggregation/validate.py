"""Validation of incoming updates: names, shapes, dtypes and finite values.

An update that fails is rejected and counted by the orchestrator, never averaged in.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

from fedfit.errors import UpdateRejected
from fedfit.types import Params


def validate_params(master: Params, params: Params, *, known_finite: bool = False) -> None:
    """Raise :class:`UpdateRejected` unless ``params`` matches ``master`` and is finite.

    Names must be a subset of the master's; each tensor has the master's shape and dtype.
    ``known_finite``: every floating tensor of ``params`` is already known finite (checked for
    a whole round at once by :func:`finite_rows`), so only names, shapes and dtypes are checked.
    """
    for name, value in params.items():
        ref = master.get(name)
        if ref is None:
            raise UpdateRejected(f"unknown parameter '{name}'")
        if not isinstance(value, torch.Tensor) or value.shape != ref.shape:
            shape = getattr(value, "shape", type(value).__name__)
            raise UpdateRejected(f"parameter '{name}' has shape {tuple(shape)}, expected {tuple(ref.shape)}")
        if value.dtype != ref.dtype:
            raise UpdateRejected(f"parameter '{name}' has dtype {value.dtype}, expected {ref.dtype}")
        if not known_finite and value.is_floating_point() and not all_finite(value):
            raise UpdateRejected(f"parameter '{name}' has non-finite values")


def all_finite(value: torch.Tensor) -> bool:
    """Whether every entry of the floating-point tensor ``value`` is finite.

    A sum is finite only if every term is (a NaN or an infinity never sums back to a finite
    number), so a finite sum settles it in one pass with no mask tensor; only a non-finite sum
    (a non-finite entry, or finite entries overflowing) needs the entry-wise check.

    >>> [all_finite(torch.tensor(v)) for v in ([1.0, 2.0], [3e38, 3e38], [1.0, float("nan")])]
    [True, True, False]
    """
    return math.isfinite(float(value.sum())) or bool(torch.isfinite(value).all())


def finite_rows(updates: Sequence[Params]) -> list[bool]:
    """Whether every floating tensor of each of ``updates`` is known finite, in one check per
    parameter name and shape for the whole batch (as :func:`all_finite` says of each tensor).

    ``False`` only means "not known": a non-tensor value, or a row whose stacked sum is not
    finite (an entry not finite, or finite entries overflowing) and has a non-finite entry.

    >>> finite_rows([{"w": torch.tensor([1.0])}, {"w": torch.tensor([float("inf")])}, {"w": 3}])
    [True, False, False]
    """
    known = [True] * len(updates)
    groups: dict[tuple[str, tuple[int, ...], torch.dtype], list[int]] = {}
    for i, params in enumerate(updates):
        for name, value in params.items():
            if not isinstance(value, torch.Tensor):
                known[i] = False
            elif value.is_floating_point():
                groups.setdefault((name, tuple(value.shape), value.dtype), []).append(i)
    for (name, shape, _), rows in groups.items():
        if math.prod(shape) == 0:
            continue  # no entries: vacuously finite
        stacked = torch.stack([updates[i][name] for i in rows]).reshape(len(rows), -1)
        sums = stacked.sum(dim=1)
        for j in torch.nonzero(~torch.isfinite(sums)).flatten().tolist():
            known[rows[j]] = known[rows[j]] and bool(torch.isfinite(stacked[j]).all())
    return known


def validate_masks(params: Params, masks: dict[str, torch.Tensor] | None) -> None:
    """Raise :class:`UpdateRejected` unless every mask is a boolean tensor shaped like its parameter.

    ``None`` (every tensor held whole) always passes.
    """
    for name, mask in (masks or {}).items():
        ref = params.get(name)
        if ref is None:
            raise UpdateRejected(f"mask for '{name}', which the update does not hold")
        if not isinstance(mask, torch.Tensor) or mask.dtype != torch.bool or mask.shape != ref.shape:
            raise UpdateRejected(f"mask for '{name}' is not a boolean tensor of shape {tuple(ref.shape)}")
