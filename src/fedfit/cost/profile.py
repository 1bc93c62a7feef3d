"""Measure a model once: training FLOPs per sample and activation bytes per sample.

These measurements run the real module (``torch.utils.flop_counter`` for FLOPs, saved-tensor
hooks for activations) and are the only impure part of the cost model; everything downstream
(:mod:`fedfit.cost.memory`, :mod:`fedfit.cost.time`) is arithmetic on the resulting
:class:`ModelCost`.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import torch
from torch import nn

from fedfit.cost.stages import StageCost, flop_counter, measure_stages
from fedfit.errors import ConfigError
from fedfit.models.custom import check_stages, probe_inputs
from fedfit.models.zoo import ModelSpec

BYTES_PER_FLOAT = 4


@dataclass(frozen=True, slots=True)
class ModelCost:
    """Measured costs of one model at one width.

    Attributes:
        num_params: trainable parameter count.
        param_bytes: bytes of the parameters (float32).
        train_flops_per_sample: forward + backward FLOPs for one sample.
        forward_flops_per_sample: forward FLOPs for one sample.
        activation_bytes_per_sample: bytes autograd saves for backward, per sample.
        activation_fixed_bytes: the batch-independent part of the saved bytes.
        backward_transient_bytes_per_sample: gradient buffers alive at once during backward,
            per sample: while autograd back-propagates through the largest activation that
            needs a gradient it holds that activation's gradient and its input's, so twice the
            largest saved tensor that requires grad (``bench/memory_model.py`` validates it).
        stages: per-stage costs (:mod:`fedfit.cost.stages`); empty when not measured.
    """

    num_params: int
    param_bytes: int
    train_flops_per_sample: float
    forward_flops_per_sample: float
    activation_bytes_per_sample: float
    activation_fixed_bytes: float
    backward_transient_bytes_per_sample: float = 0.0
    stages: tuple[StageCost, ...] = ()


def _sample_batch(spec: ModelSpec, batch: int) -> tuple[torch.Tensor, torch.Tensor]:
    x = probe_inputs(spec.input_shape, batch)
    y = torch.randint(0, spec.num_classes, (batch,), generator=torch.Generator().manual_seed(0))
    return x, y


def count_flops(model: nn.Module, spec: ModelSpec, batch: int = 2) -> tuple[float, float]:
    """(train, forward) FLOPs per sample, counted by ``FlopCounterMode`` on a real step."""
    x, y = _sample_batch(spec, batch)
    with flop_counter() as fwd:
        out = model(x)
    loss = nn.functional.cross_entropy(out, y)
    with flop_counter() as bwd:
        loss.backward()
    model.zero_grad(set_to_none=True)
    forward = fwd.get_total_flops() / batch
    return forward + bwd.get_total_flops() / batch, forward


def saved_activation_bytes(model: nn.Module, spec: ModelSpec, batch: int) -> int:
    """Bytes autograd keeps for backward on a batch, parameters excluded, each storage once."""
    return _saved_bytes(model, spec, batch)[0]


def _saved_bytes(model: nn.Module, spec: ModelSpec, batch: int) -> tuple[int, int]:
    """(all saved bytes, largest saved storage that requires grad) on a batch, params excluded."""
    param_ptrs = {p.untyped_storage().data_ptr() for p in model.parameters()}
    seen: dict[int, int] = {}
    largest = 0

    def pack(t: torch.Tensor) -> torch.Tensor:
        nonlocal largest
        storage = t.untyped_storage()
        if storage.data_ptr() not in param_ptrs:
            seen[storage.data_ptr()] = storage.nbytes()
            if t.requires_grad:
                largest = max(largest, storage.nbytes())
        return t

    x, y = _sample_batch(spec, batch)
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        loss = nn.functional.cross_entropy(model(x), y)
    del loss
    return sum(seen.values()), largest


@functools.lru_cache(maxsize=64)
def measure(spec: ModelSpec, width: float | None = None) -> ModelCost:
    """Measure ``spec`` at ``width`` (default: the spec's). Cached per (spec, width)."""
    model = spec.build(width)
    num_params = sum(p.numel() for p in model.parameters())
    train, forward = count_flops(model, spec)
    (small, small_grad), (large, large_grad) = _saved_bytes(model, spec, 1), _saved_bytes(model, spec, 9)
    per_sample = (large - small) / 8
    return ModelCost(
        num_params=num_params,
        param_bytes=num_params * BYTES_PER_FLOAT,
        train_flops_per_sample=train,
        forward_flops_per_sample=forward,
        activation_bytes_per_sample=per_sample,
        activation_fixed_bytes=max(0.0, small - per_sample),
        backward_transient_bytes_per_sample=2 * (large_grad - small_grad) / 8,
        stages=_stage_costs(model, spec),
    )


def _stage_costs(model: nn.Module, spec: ModelSpec) -> tuple[StageCost, ...]:
    """Per-stage costs; none for a user module whose stages do not reproduce its forward (the
    techniques that need stages refuse such a module with a one-line error when configured)."""
    if spec.factory is not None:
        try:
            check_stages(model, spec.input_shape, spec.name)
        except ConfigError:
            return ()
    return measure_stages(model, spec.input_shape)
