"""Local DP-SGD: per-sample gradient clipping and Gaussian noise on the device.

Abadi et al. 2016, "Deep Learning with Differential Privacy" (CCS). Each sample's gradient g_j
is clipped to norm C, the clipped gradients of an effective batch of n samples are summed,
Gaussian noise N(0, σ²C²) is added and the sum divided by n::

    g̃ = (Σ_j g_j · min(1, C/‖g_j‖) + N(0, σ²C²·I)) / n

Per-sample gradients come from ``torch.func`` (``vmap`` over ``grad`` of a ``functional_call``),
so the device holds a gradient per sample of the micro-batch: micro-batch × parameter bytes,
which :func:`fedfit.cost.dp_memory.with_per_sample_gradients` charges to the memory model
(dynamic batching then picks smaller micro-batches). With gradient accumulation each micro-batch
adds its share of the noise, N(0, σ²C²·m/n) for m of the n samples, so a step's noise is the
same whatever the micro-batching. Batch-norm models are not supported (per-sample gradients are
undefined when a sample's output depends on the others).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import nn
from torch.func import functional_call, grad, vmap

from fedfit.training.program import MicroStep


@dataclass(frozen=True, slots=True)
class LocalDP:
    """DP-SGD's settings.

    Attributes:
        clip_norm: C, the per-sample gradient bound.
        noise_multiplier: σ; the noise on a step's gradient sum has standard deviation σ·C.
        seed: seeds the noise (with device and round).
    """

    clip_norm: float = 1.0
    noise_multiplier: float = 1.0
    seed: int = 0


def noise_generator(seed: int, device_id: int, round_: int) -> torch.Generator:
    """The noise RNG of one task, from (seed, device, round)."""
    state = np.random.SeedSequence([seed, 0xD9, device_id, round_]).generate_state(1, dtype=np.uint64)
    return torch.Generator().manual_seed(int(state[0]) & 0x7FFF_FFFF_FFFF_FFFF)


def clipped_sum(per_sample: dict[str, torch.Tensor], clip_norm: float) -> dict[str, torch.Tensor]:
    """Σ_j g_j · min(1, C/‖g_j‖) over the leading (sample) dimension of each gradient.

    >>> clipped_sum({"w": torch.tensor([[3.0, 4.0], [0.3, 0.4]])}, 1.0)["w"]
    tensor([0.9000, 1.2000])
    """
    first = next(iter(per_sample.values()))
    sq = torch.zeros(first.shape[0], dtype=first.dtype)
    for g in per_sample.values():
        sq += g.reshape(g.shape[0], -1).pow(2).sum(dim=1)
    factor = (clip_norm / (sq.sqrt() + 1e-12)).clamp(max=1.0)
    return {k: torch.einsum("b,b...->...", factor, g) for k, g in per_sample.items()}


def dp_sgd_step(model: nn.Module, dp: LocalDP, gen: torch.Generator) -> MicroStep:
    """A micro-step that adds the clipped per-sample gradient sum and its noise share to ``.grad``."""
    names = [n for n, p in model.named_parameters() if p.requires_grad]

    def sample_loss(params: dict[str, torch.Tensor], x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        out = functional_call(model, params, (x.unsqueeze(0),))
        return nn.functional.cross_entropy(out, y.unsqueeze(0))

    per_sample_grad = vmap(grad(sample_loss), in_dims=(None, 0, 0))

    def step(xs: torch.Tensor, ys: torch.Tensor, n: int) -> torch.Tensor:
        named = dict(model.named_parameters())
        params = {k: named[k].detach() for k in names}
        summed = clipped_sum(per_sample_grad(params, xs, ys), dp.clip_norm)
        std = dp.noise_multiplier * dp.clip_norm * (len(xs) / n) ** 0.5
        for k in names:
            noise = torch.randn(summed[k].shape, generator=gen, dtype=summed[k].dtype) * std
            g = (summed[k] + noise) / n
            p = named[k]
            p.grad = g if p.grad is None else p.grad + g
        with torch.no_grad():
            return nn.functional.cross_entropy(model(xs), ys, reduction="sum") / n

    return step
