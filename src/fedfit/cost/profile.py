"""Measure a model once: training FLOPs per sample and memory per sample.

These measurements run the real module (``torch.utils.flop_counter`` for FLOPs, saved-tensor
hooks for saved activations, the tensor allocator for a whole training step's peak, see
:mod:`fedfit.cost.allocator`) and are the only impure part of the cost model; everything downstream
(:mod:`fedfit.cost.memory`, :mod:`fedfit.cost.time`) is arithmetic on the resulting
:class:`ModelCost`.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import nn
from fedfit.cost.allocator import step_peak_bytes
from fedfit.cost.flops import flop_counter
from fedfit.cost.lazy_stages import LazyStages
from fedfit.cost.stages import StageCost, measure_stages
from fedfit.errors import ConfigError
from fedfit.models.custom import check_stages, probe_inputs
from fedfit.models.zoo import ModelSpec

BYTES_PER_FLOAT = 4
#: Micro-batches of the two measured steps whose difference gives the per-sample terms.
STEP_BATCHES = (1, 33)
#: Micro-batches at which the fitted terms are checked against a third measurement.
HELD_OUT_BATCHES = (2, 9)


@dataclass(frozen=True, slots=True)
class ModelCost:
    """Measured costs of one model at one width.

    Attributes:
        num_params: trainable parameter count.
        param_bytes: bytes of the parameters (float32).
        train_flops_per_sample: forward + backward FLOPs for one sample.
        forward_flops_per_sample: forward FLOPs for one sample.
        activation_bytes_per_sample: bytes autograd saves for backward, per sample.
        activation_fixed_bytes: the batch-independent part of a training step's peak beyond
            the gradients (measured with the tensor allocator, as the transient term).
        backward_transient_bytes_per_sample: what a training step's peak holds per sample
            beyond the saved activations, measured with the tensor allocator
            (:func:`fedfit.cost.allocator.step_peak_bytes`): the backward pass's gradient
            buffers in flight (and the gathered input batch), less the saved activations
            autograd has already freed when the peak occurs; negative when those outweigh the
            buffers (a 2-layer MLP's peak comes after its first layers' inputs are freed).
        stages: per-stage costs (:mod:`fedfit.cost.stages`); empty when not measured; a zoo
            model's are measured when first read (:class:`~fedfit.cost.lazy_stages.LazyStages`).
        largest_param_bytes: bytes of the largest parameter tensor (what an optimiser step's
            temporaries copy at most at once).
        param_tensors: (elements, dimensions) of each parameter tensor: what partial training's
            and pruning's gradient gathering holds for one tensor at a time (its dense gradient,
            the int64 index of its kept elements, the gathered values); empty when not known.
        one_sample_shortfall_bytes: how much less than ``peak_bytes_per_sample +
            activation_fixed_bytes`` the measured step holds at micro-batch 1, where the fixed
            term fitted through micro-batches 1 and 33 would be negative and is clamped at 0 for
            every larger batch (a half-width 1-D CNN, MobileNetV2); 0 when it is not.
        memory_error: the memory model's measured under-prediction of a training step's peak
            at held-out micro-batches (``HELD_OUT_BATCHES``), as a share of the measured peak;
            0 when it over-predicts there. The batch policy's default safety margin.
    """

    num_params: int
    param_bytes: int
    train_flops_per_sample: float
    forward_flops_per_sample: float
    activation_bytes_per_sample: float
    activation_fixed_bytes: float
    backward_transient_bytes_per_sample: float = 0.0
    stages: Sequence[StageCost] = ()
    largest_param_bytes: int = 0
    memory_error: float = 0.0
    param_tensors: tuple[tuple[int, int], ...] = ()
    one_sample_shortfall_bytes: float = 0.0

    @property
    def peak_bytes_per_sample(self) -> float:
        """Bytes per sample of a training step's peak: saved activations and backward buffers."""
        return self.activation_bytes_per_sample + self.backward_transient_bytes_per_sample


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
    param_ptrs = {p.untyped_storage().data_ptr() for p in model.parameters()}
    seen: dict[int, int] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        storage = t.untyped_storage()
        if storage.data_ptr() not in param_ptrs:
            seen[storage.data_ptr()] = storage.nbytes()
        return t

    x, y = _sample_batch(spec, batch)
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        loss = nn.functional.cross_entropy(model(x), y)
    del loss
    return sum(seen.values())


@functools.lru_cache(maxsize=64)
def measure(spec: ModelSpec, width: float | None = None) -> ModelCost:
    """Measure ``spec`` at ``width`` (default: the spec's). Cached per (spec, width)."""
    model = spec.build(width)
    num_params = sum(p.numel() for p in model.parameters())
    train, forward = count_flops(model, spec)
    lo, hi = STEP_BATCHES
    saved = (saved_activation_bytes(model, spec, hi) - saved_activation_bytes(model, spec, lo)) / (hi - lo)
    small, large = (step_peak_bytes(model, spec.input_shape, spec.num_classes, b) for b in STEP_BATCHES)
    per_sample = (large - small) / (hi - lo)
    gradients = num_params * BYTES_PER_FLOAT
    raw_fixed = small - per_sample * lo - gradients  # negative when micro-batch 1 holds less than the line
    fixed = max(0.0, raw_fixed)
    return ModelCost(
        num_params=num_params,
        param_bytes=num_params * BYTES_PER_FLOAT,
        train_flops_per_sample=train,
        forward_flops_per_sample=forward,
        activation_bytes_per_sample=saved,
        activation_fixed_bytes=fixed,
        backward_transient_bytes_per_sample=per_sample - saved,
        stages=_stage_costs(model, spec),
        largest_param_bytes=max((p.numel() for p in model.parameters()), default=0) * BYTES_PER_FLOAT,
        memory_error=_held_out_error(model, spec, gradients + fixed, per_sample),
        param_tensors=tuple((p.numel(), p.dim()) for p in model.parameters()),
        one_sample_shortfall_bytes=fixed - raw_fixed,
    )


def _held_out_error(model: nn.Module, spec: ModelSpec, fixed: float, per_sample: float) -> float:
    """Largest share by which ``fixed + per_sample·b`` under-predicts a step's measured peak
    at the held-out micro-batches (0 when it never does)."""
    errors = [1.0 - (fixed + per_sample * b) / measured for b in HELD_OUT_BATCHES
              if (measured := step_peak_bytes(model, spec.input_shape, spec.num_classes, b)) > 0]
    return max(0.0, *errors)


def _stage_costs(model: nn.Module, spec: ModelSpec) -> Sequence[StageCost]:
    """Per-stage costs (a zoo model's when first read); none for a user module whose stages do
    not reproduce its forward (the techniques that need stages refuse such a module with a
    one-line error when configured)."""
    if spec.factory is None:
        return LazyStages(functools.partial(measure_stages, model, spec.input_shape))
    try:
        check_stages(model, spec.input_shape, spec.name)
    except ConfigError:
        return ()
    return measure_stages(model, spec.input_shape)
