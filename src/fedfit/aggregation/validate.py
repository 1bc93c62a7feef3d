"""Validation of incoming updates: names, shapes, dtypes and finite values.

An update that fails is rejected and counted by the orchestrator, never averaged in.
"""

from __future__ import annotations

import math

import torch

from fedfit.errors import UpdateRejected
from fedfit.types import Params


def validate_params(master: Params, params: Params) -> None:
    """Raise :class:`UpdateRejected` unless ``params`` matches ``master`` and is finite.

    Names must be a subset of the master's; each tensor has the master's shape and dtype.
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
        if value.is_floating_point() and not all_finite(value):
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
