"""Measure each stage of a model: parameters, FLOPs, saved activations, boundary bytes.

The memory and time formulas of the techniques (:mod:`fedfit.cost.techniques`) need costs per
stage: checkpointing keeps only stage inputs and recomputes one stage at a time in backward,
freezing drops the backward of early stages, split learning sends the cut stage's output.
Measured like :mod:`fedfit.cost.profile`: FLOPs by :func:`fedfit.cost.flops.flop_counter`, saved bytes by
saved-tensor hooks, a stage's own training-step peak and its gradient-free forward by the tensor allocator
(:func:`fedfit.cost.allocator.peak_live_bytes`), on the real module.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any
from dataclasses import dataclass

import torch
from torch import nn

from fedfit.cost.allocator import peak_live_bytes
from fedfit.cost.flops import stage_flops
from fedfit.models.custom import probe_inputs
from fedfit.models.stages import Stage, stages_of

BYTES_PER_FLOAT = 4
#: The large micro-batch a frozen stage's forward is also measured at (the largest the bench asks).
LARGE_MICRO_BATCH = 128


@dataclass(frozen=True, slots=True)
class StageCost:
    """Measured costs of one stage, per sample where it says so.

    Attributes:
        name: the stage's name.
        num_params: parameters the stage owns.
        largest_param: elements of its largest parameter tensor.
        forward_flops: forward FLOPs per sample.
        backward_flops: backward FLOPs per sample (weight and input gradients).
        activation_bytes: bytes autograd saves for this stage's backward, per sample, each
            storage charged to the first stage that saves it (the last stage includes the loss).
        input_bytes: bytes of the stage's input, per sample.
        output_bytes: bytes of the stage's output, per sample.
        isolated_bytes: bytes the stage saves when run alone (its input included if it saves it).
        saves_input: whether the stage saves its own input for backward.
        transient_bytes: live bytes per sample while the stage runs forward without autograd
            (its input plus the tensor allocator's peak growth: its intermediates and output):
            all a frozen stage costs.
        step_bytes: peak live bytes per sample of the stage's own forward and backward run
            alone, its input excluded, measured with the tensor allocator as a checkpointed
            recomputation holds it: its saved activations plus the backward's gradient buffers
            in flight (the gradients of its output, of its inner activations and of its input),
            the output's gradient alive from before the forward. What recomputing the stage in
            backward holds beside the checkpointed inputs; 0 when not measured.
        step_fixed_bytes: the batch-independent part of that step's peak beyond the stage's
            parameter gradients (micro-batch 1's peak less one sample's; a residual block's step
            peaks as high at 1 as at 2); negative when micro-batch 1's peak is below the slope,
            which then applies at micro-batch 1 only (:func:`phase_fixed`);
            0 when not measured.
        transient_fixed_bytes: the batch-independent part of the gradient-free forward's live
            bytes (micro-batch 1's less one ``transient_bytes``), applied at micro-batch 1 only.
        transient_line_fixed_bytes: the gradient-free forward's fixed bytes from micro-batch 2 on:
            the intercept of its line through micro-batches 2 and 10 (at least 0). Not micro-batch
            1's excess, which a residual block's forward holds at 1 only (a workspace 2 and 10 lack).
        transient_large_bytes: the gradient-free forward's live bytes at ``LARGE_MICRO_BATCH``
            (its input included), which that line need not reach: a kernel may change path
            there (the LSTM's from 128 on, a quarter less per sample); 0 when not measured.
    """

    name: str
    num_params: int
    largest_param: int
    forward_flops: float
    backward_flops: float
    activation_bytes: float
    input_bytes: float
    output_bytes: float
    isolated_bytes: float = 0.0
    saves_input: bool = False
    transient_bytes: float = 0.0
    step_bytes: float = 0.0
    step_fixed_bytes: float = 0.0
    transient_fixed_bytes: float = 0.0
    transient_line_fixed_bytes: float = 0.0
    transient_large_bytes: float = 0.0

    @property
    def internal_bytes(self) -> float:
        """Saved bytes per sample other than the stage's input (what a recomputation adds)."""
        return self.isolated_bytes - (self.input_bytes if self.saves_input else 0.0)

    @property
    def recompute_bytes(self) -> float:
        """Bytes per sample a recomputed stage's backward holds beyond its input: the measured
        step peak, at least its saved bytes (a hand-built cost without ``step_bytes``)."""
        return max(self.step_bytes, self.internal_bytes)

    @property
    def param_bytes(self) -> int:
        """Bytes of the stage's parameters (float32)."""
        return self.num_params * BYTES_PER_FLOAT


def _saved_by_stage(model: nn.Module, stages: tuple[Stage, ...], x: torch.Tensor) -> list[int]:
    """Bytes autograd saves over a whole forward + loss, each storage charged to the stage that
    saves it first (so the stages' sum is the whole model's saved bytes)."""
    param_ptrs = {p.untyped_storage().data_ptr() for p in model.parameters()}
    owner: dict[int, tuple[int, int]] = {}
    current = [0]

    def pack(t: torch.Tensor) -> torch.Tensor:
        ptr = t.untyped_storage().data_ptr()
        if ptr not in param_ptrs and ptr not in owner:
            owner[ptr] = (current[0], t.untyped_storage().nbytes())
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        for i, stage in enumerate(stages):
            current[0] = i
            x = stage.forward(model, x)
        loss = nn.functional.cross_entropy(x, torch.zeros(len(x), dtype=torch.long), reduction="sum")
    del loss
    return [sum(b for s, b in owner.values() if s == i) for i in range(len(stages))]


def _isolated(model: nn.Module, stage: Stage, x: torch.Tensor, grad_input: bool, last: bool) -> tuple[int, bool]:
    """(saved bytes, whether the input is among them) of ``stage`` run alone on ``x`` (with the
    loss when it is the ``last`` stage)."""
    x = x.detach().clone().requires_grad_(grad_input)
    param_ptrs = {p.untyped_storage().data_ptr() for p in model.parameters()}
    seen: dict[int, int] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        if t.untyped_storage().data_ptr() not in param_ptrs:
            seen[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = stage.forward(model, x)
        if last:
            out = nn.functional.cross_entropy(out, torch.zeros(len(x), dtype=torch.long), reduction="sum")
    del out
    return sum(seen.values()), x.untyped_storage().data_ptr() in seen


class _OutputGradient(torch.autograd.Function):
    """Ends a stage's graph in a scalar whose backward hands over ``grad``, the output's gradient,
    as the next stage's backward would: the output itself need not stay alive, and the engine
    frees the gradient once the stage's last operator has consumed it."""

    @staticmethod
    def forward(ctx: Any, y: torch.Tensor, grad: torch.Tensor) -> torch.Tensor:
        ctx.grad = [grad]  # popped in backward, so only the engine holds it from there on
        return y.new_zeros(())

    @staticmethod
    def backward(ctx: Any, _: torch.Tensor) -> tuple[torch.Tensor, None]:
        return ctx.grad.pop(), None


def _stage_step_bytes(model: nn.Module, stage: Stage, xs: dict[int, torch.Tensor], grad_input: bool,
                      last: bool) -> tuple[float, float]:
    """(per sample, fixed) allocator peak of ``stage``'s forward + backward alone, beyond its input
    (``xs``: its inputs at micro-batches 2 and 10; the loss after it when it is the ``last``
    stage), as a checkpointed stage's recomputation holds it: the output's gradient exists
    before the forward runs (backward reaches the stage, then recomputes it) and is freed once
    consumed, the output is dropped unless the stage saves it, the input's gradient is computed
    when ``grad_input``. The parameter gradients' buffers are the same at both micro-batches, so
    they drop out (a stage whose weights outweigh ten samples' activations is under-counted: its
    saved bytes bound it). The slope is not taken from micro-batch 1, where a residual block's
    step peaks as high as at 2: that goes into the fixed part, micro-batch 1's peak less one
    sample's and less the stage's parameter gradients (resident state, charged apart); negative
    when micro-batch 1's step holds less than one slope (the 1-D CNN's first convolution, whose
    unfolded input at micro-batch 1 is smaller than a sample's share at 2 and 10)."""
    def step(x: torch.Tensor, shape: torch.Size) -> None:
        if last:
            end = nn.functional.cross_entropy(stage.forward(model, x), torch.zeros(len(x), dtype=torch.long),
                                              reduction="sum")
        else:
            grad = torch.ones(shape)
            end = _OutputGradient.apply(stage.forward(model, x), grad)
            del grad
        end.backward()

    peaks = {}
    for b in (2, 1, 2, 10):  # the first run warms up the kernels' lazily initialised state
        x = xs[b].detach().clone().requires_grad_(grad_input)
        with torch.no_grad():
            shape = stage.forward(model, x).shape
        model.zero_grad(set_to_none=True)
        peaks[b] = peak_live_bytes(lambda: step(x, shape))
    model.zero_grad(set_to_none=True)
    per_sample = (peaks[10] - peaks[2]) / 8
    grads = sum(p.numel() * p.element_size() for n, p in model.named_parameters() if stage.owns(n))
    return per_sample, peaks[1] - per_sample - grads


def _transient(model: nn.Module, stage: Stage, xs: dict[int, torch.Tensor]) -> tuple[float, float, float, float]:
    """(per sample, fixed at micro-batch 1, fixed from 2 on, all at ``LARGE_MICRO_BATCH``) live
    bytes of a frozen forward of ``stage`` (grad mode on, as the trainer runs it: a recurrent
    kernel keeps its training workspace), its parameters frozen: its input plus the allocator's
    peak growth while it runs (every intermediate the stage's code keeps referenced, kernels'
    scratch, max-pooling's indices), slope between micro-batches 2 and 10; the fixed part is
    micro-batch 1's figure less one slope (negative where micro-batch 1 holds less, as the 1-D
    CNN's unfolded convolution input); from micro-batch 2 on the fixed part is the line's own
    intercept, at least 0. The last figure is the whole at the large micro-batch, measured too."""

    def forward(x: torch.Tensor) -> torch.Tensor:
        return stage.forward(model, x)

    trainable = [p for p in model.parameters() if p.requires_grad]
    for p in trainable:  # frozen as the trainer freezes it: grad mode on, no parameter needs a gradient
        p.requires_grad_(False)
    try:
        forward(xs[2])  # warm-up: lazily initialised kernel state is not the stage's
        peaks = {b: peak_live_bytes(functools.partial(forward, xs[b])) for b in (1, 2, 10, LARGE_MICRO_BATCH)}
    finally:
        for p in trainable:
            p.requires_grad_(True)
    x = xs[2]
    slope = (peaks[10] - peaks[2]) / 8
    per_sample = x[0].numel() * x.element_size() + slope
    large = xs[LARGE_MICRO_BATCH].numel() * x.element_size() + peaks[LARGE_MICRO_BATCH]
    return per_sample, x[0].numel() * x.element_size() + peaks[1] - per_sample, max(0.0, peaks[2] - 2 * slope), large


def measure_stages(model: nn.Module, input_shape: tuple[int, ...]) -> tuple[StageCost, ...]:
    """Per-stage costs of ``model`` on inputs of ``input_shape`` (one sample's shape)."""
    stages = stages_of(model)
    xs = {b: probe_inputs(input_shape, b, seed=b) for b in (1, 9)}
    x2 = probe_inputs(input_shape, 2, seed=2)
    small, large = (_saved_by_stage(model, stages, xs[b]) for b in (1, 9))
    xs1 = {**xs, **{b: probe_inputs(input_shape, b, seed=b) for b in (2, 10, LARGE_MICRO_BATCH)}}
    out: list[StageCost] = []
    for i, stage in enumerate(stages):
        params = [p for n, p in model.named_parameters() if stage.owns(n)]
        fwd, bwd = stage_flops(model, stage, x2.detach().requires_grad_(i > 0))
        y2 = stage.forward(model, x2).detach()
        out.append(StageCost(
            name=stage.name, num_params=sum(p.numel() for p in params),
            largest_param=max((p.numel() for p in params), default=0),
            forward_flops=fwd / 2, backward_flops=bwd / 2,
            activation_bytes=(large[i] - small[i]) / 8,
            input_bytes=float(x2[0].numel() * x2.element_size()),
            output_bytes=float(y2[0].numel() * y2.element_size())))
        (iso1, saves), (iso9, _) = (_isolated(model, stage, xs1[b], i > 0, i == len(stages) - 1) for b in (1, 9))
        step, step_fixed = _stage_step_bytes(model, stage, xs1, i > 0, i == len(stages) - 1)
        transient, transient_fixed, transient_line, transient_large = _transient(model, stage, xs1)
        out[-1] = dataclasses.replace(out[-1], isolated_bytes=(iso9 - iso1) / 8, saves_input=saves,
                                      transient_bytes=transient, transient_fixed_bytes=transient_fixed,
                                      transient_line_fixed_bytes=transient_line, transient_large_bytes=transient_large,
                                      step_bytes=step, step_fixed_bytes=step_fixed)
        xs1 = {b: stage.forward(model, x).detach() for b, x in xs1.items()}
        x2 = y2
    return tuple(out)


def phase_fixed(fixed: float, micro_batch: int) -> float:
    """A phase's fixed bytes at ``micro_batch``: as measured at micro-batch 1 (its step's peak
    there less one slope: negative when that step holds less than the slope through 2 and 10),
    never below 0 from micro-batch 2 on, where the line through 2 and 10 holds."""
    return fixed if micro_batch == 1 else max(0.0, fixed)
