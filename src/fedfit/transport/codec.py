"""Payload codec: parameters <-> safetensors bytes, with every check a server needs.

A payload is one safetensors file: the tensors, plus string metadata (the device's JSON report
under ``report``). Element masks of partial training travel as ``mask/<name>`` boolean tensors.
:func:`check_update` checks names, shapes, dtypes, finiteness and the update's norm against the
tensors the task was sent, and raises :class:`~fedfit.transport.rejection.Rejected` naming the
first problem.
"""

from __future__ import annotations

import json
import math

import torch
from safetensors import SafetensorError
from safetensors.torch import load, save

from fedfit.transport.rejection import Rejected
from fedfit.types import Params

MASK_PREFIX = "mask/"


def encode(params: Params, metadata: dict[str, str] | None = None) -> bytes:
    """``params`` (and ``metadata``) as safetensors bytes."""
    return save({k: v.detach().contiguous() for k, v in params.items()}, metadata=metadata)


def decode(data: bytes) -> tuple[Params, dict[str, str]]:
    """Tensors and string metadata of a safetensors payload.

    Raises:
        Rejected: the bytes are not a safetensors file.
    """
    try:
        tensors = load(data)
        size = int.from_bytes(data[:8], "little")
        raw = json.loads(data[8: 8 + size]).get("__metadata__") or {}
    except (SafetensorError, ValueError, RuntimeError, OverflowError, AttributeError) as err:
        reason = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise Rejected(400, "malformed_payload", f"payload: not a safetensors file ({reason})") from None
    if not isinstance(raw, dict) or not all(isinstance(v, str) for v in raw.values()):
        raise Rejected(400, "malformed_payload", "payload: metadata is not a string mapping")
    return tensors, raw


def split_masks(tensors: Params) -> tuple[Params, dict[str, torch.Tensor] | None]:
    """(parameters, element masks or ``None``) of a decoded update."""
    masks = {k.removeprefix(MASK_PREFIX): v for k, v in tensors.items() if k.startswith(MASK_PREFIX)}
    params = {k: v for k, v in tensors.items() if not k.startswith(MASK_PREFIX)}
    return params, masks or None


def with_masks(params: Params, masks: dict[str, torch.Tensor] | None) -> Params:
    """``params`` with ``masks`` added as ``mask/<name>`` tensors (for :func:`encode`)."""
    return params | {MASK_PREFIX + k: v.to(torch.bool) for k, v in (masks or {}).items()}


def check_update(params: Params, masks: dict[str, torch.Tensor] | None, sent: Params, max_norm: float) -> None:
    """Raise :class:`Rejected` unless ``params`` is a finite update of ``sent`` within ``max_norm``.

    The update must hold exactly the tensors sent, with their shapes and dtypes; masks name sent
    tensors, with their shapes, as booleans; ``‖params − sent‖₂ ≤ max_norm``.
    """
    missing, extra = sorted(set(sent) - set(params)), sorted(set(params) - set(sent))
    if missing or extra:
        raise Rejected(422, "tensor_names", f"payload: tensors missing {missing[:3]} / unexpected {extra[:3]}")
    squared = 0.0
    for name, ref in sent.items():
        got = params[name]
        if tuple(got.shape) != tuple(ref.shape):
            raise Rejected(422, "tensor_shape", f"payload: {name} has shape {list(got.shape)}, expected {list(ref.shape)}")
        if got.dtype != ref.dtype:
            raise Rejected(422, "tensor_dtype", f"payload: {name} has dtype {got.dtype}, expected {ref.dtype}")
        if got.is_floating_point() and not bool(torch.isfinite(got).all()):
            raise Rejected(422, "non_finite", f"payload: {name} holds NaN or Inf")
        if got.is_floating_point():
            squared += float(((got.double() - ref.double()) ** 2).sum())
    for name, mask in (masks or {}).items():
        if name not in sent or tuple(mask.shape) != tuple(sent[name].shape) or mask.dtype != torch.bool:
            raise Rejected(422, "tensor_mask", f"payload: mask {name!r} does not match a sent tensor")
    if math.sqrt(squared) > max_norm:
        raise Rejected(422, "update_norm", f"payload: update norm {math.sqrt(squared):.4g} above bound {max_norm:g}")
