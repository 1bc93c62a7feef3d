"""Validation of incoming updates: names, shapes, dtypes and finite values.

An update that fails is rejected and counted by the orchestrator, never averaged in.
"""

from __future__ import annotations

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
        if value.is_floating_point() and not bool(torch.isfinite(value).all()):
            raise UpdateRejected(f"parameter '{name}' has non-finite values")
