"""Capability-based pruning: magnitude pruning of the global model to a device's sparsity, a
sparse payload, and the dense master rebuilt by the masked average (Han et al. 2015,
"Learning both Weights and Connections for Efficient Neural Networks"; capability-tailored
sparsity as in Jiang et al. 2022, "Model Pruning Enables Efficient Federated Learning on
Edge Devices").

Before training, each tensor keeps its ``(1 - sparsity)`` largest-magnitude elements; pruned
ones are zero and stay zero. The device trains the survivors (compact optimiser state, as
:mod:`fedfit.training.partial`), and its update holds exactly them: the master's coordinates
that no device kept keep their dense values.
"""

from __future__ import annotations

import numpy as np
import torch

from fedfit.types import Params


def magnitude_masks(params: Params, sparsity: float) -> dict[str, torch.Tensor]:
    """Per float tensor, the ``round((1-sparsity)·n)`` (at least 1) largest-|value| elements."""
    masks: dict[str, torch.Tensor] = {}
    for name, t in params.items():
        if not t.is_floating_point():
            continue
        keep = max(1, round((1.0 - sparsity) * t.numel()))
        top = t.detach().abs().flatten().topk(keep).indices
        mask = torch.zeros(t.numel(), dtype=torch.bool)
        mask[top] = True
        masks[name] = mask.view(t.shape)
    return masks


def prune(params: Params, masks: dict[str, torch.Tensor]) -> Params:
    """``params`` with the unmasked elements set to zero."""
    return {k: torch.where(masks[k], v, torch.zeros_like(v)) if k in masks else v.clone() for k, v in params.items()}


def encode_sparse(params: Params, masks: dict[str, torch.Tensor]) -> bytes:
    """The sparse payload: one bitmap over all elements (name order), then the kept float32 values.

    Names and shapes are the master's, known to both sides, so they are not sent.
    """
    names = sorted(masks)
    bits = np.concatenate([masks[n].flatten().numpy() for n in names])
    values = torch.cat([params[n].detach().flatten()[masks[n].flatten()] for n in names])
    return np.packbits(bits).tobytes() + values.to(torch.float32).numpy().tobytes()


def decode_sparse(blob: bytes, shapes: dict[str, tuple[int, ...]]) -> tuple[Params, dict[str, torch.Tensor]]:
    """Inverse of :func:`encode_sparse`: dense tensors (zeros where pruned) and their masks."""
    names = sorted(shapes)
    sizes = [int(np.prod(shapes[n])) for n in names]
    total = sum(sizes)
    nbitmap = (total + 7) // 8
    bits = np.unpackbits(np.frombuffer(blob[:nbitmap], dtype=np.uint8))[:total].astype(bool)
    values = torch.from_numpy(np.frombuffer(blob[nbitmap:], dtype=np.float32).copy())
    params, masks, offset, used = {}, {}, 0, 0
    for name, size in zip(names, sizes, strict=True):
        mask = torch.from_numpy(bits[offset:offset + size].copy()).view(shapes[name])
        dense = torch.zeros(size)
        k = int(mask.sum())
        dense[mask.flatten()] = values[used:used + k]
        params[name], masks[name] = dense.view(shapes[name]), mask
        offset, used = offset + size, used + k
    return params, masks
