"""Batched cohort training: many devices' local training as one vectorised op.

The devices' parameters are stacked along a leading device axis; at every optimiser step one
``torch.func.vmap`` of ``functional_call(model, ...)``'s loss, differentiated by autograd, computes
each device's gradient of its own effective batch, and the local optimiser (:mod:`fedfit.training.stacked_optim`) steps
all devices' stacked parameters at once. The result is :func:`fedfit.training.trainer.train`'s within float
rounding, because the same terms are summed (in another order):

- each device draws the same batches, from the trainer's own batch order and its task RNG
  (seed, device, round);
- a device's effective batch of n samples contributes Σ CE / n, whether the trainer ran it as one
  pass or as micro-batches with accumulated gradients (equal for models with no batch statistics);
- devices hold different amounts of data: every batch is padded to the cohort's largest with
  samples of weight 0 (they add exactly nothing), and a device whose steps are over is masked
  (its parameters and optimiser state are kept as they are) while the others go on.

Only models whose every leaf module computes each sample on its own and holds no buffers are
batched (:data:`PER_SAMPLE_LEAVES`: linear and convolution layers, pooling, activations, the
zoo's scaler): batch-norm would see the padding, dropout draws random numbers, recurrent layers
are left out. Plans with memory-saving techniques and local DP-SGD are not batched either; the
executor (:mod:`fedfit.simulation.batched`) trains those one by one. Plans asking DYNAMITE's σ²
probe (``TrainPlan.sigma_probe``) are batched: the probing devices' half-batch gradient
differences at the first step are one more vectorised op (:mod:`fedfit.training.stacked_probe`),
and so are the Hessian-vector products of those asking the curvature probe too
(``TrainPlan.curvature_probe``, :mod:`fedfit.training.stacked_curvature`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple, cast

import torch
from torch import nn
from torch.func import functional_call, vmap

from fedfit.models.zoo import Scaler
from fedfit.training.optimizers import OptimizerConfig
from fedfit.training.stacked_optim import StackedOptimizer
from fedfit.training.stacked_curvature import Losses, cohort_curvature
from fedfit.training.stacked_probe import Gradients, half_differences, sigma2_of
from fedfit.training.trainer import _batches, _next_batch, task_generator
from fedfit.types import Params, TrainPlan, Update

#: Leaf modules that compute every sample independently and hold no state besides parameters.
PER_SAMPLE_LEAVES: tuple[type[nn.Module], ...] = (
    nn.Linear, nn.Conv1d, nn.Conv2d, nn.Identity, nn.Flatten, nn.ReLU, nn.Tanh, nn.Sigmoid, nn.GELU,
    nn.MaxPool1d, nn.MaxPool2d, nn.AvgPool1d, nn.AvgPool2d, Scaler,
)

CohortKey = tuple[float, float, tuple[int, ...], int | None]


def batchable_model(model: nn.Module) -> bool:
    """Whether ``model`` can be trained batched (only per-sample leaf modules, no buffers)."""
    leaves = [m for m in model.modules() if next(m.children(), None) is None]
    return all(isinstance(m, PER_SAMPLE_LEAVES) for m in leaves) and next(model.buffers(), None) is None


def batchable_plan(plan: TrainPlan, optimizer: OptimizerConfig) -> bool:
    """Whether a plan trains plainly (no memory technique, no local DP-SGD); σ² and curvature
    probes are taken in the cohort op."""
    return not plan.techniques.active and optimizer.local_dp is None


def cohort_key(plan: TrainPlan) -> CohortKey:
    """What plans trained together share: width (the sub-model's shapes), learning rate, the
    effective batches epoch after epoch, and the step cap. Micro-batch and accumulation may differ:
    they split the same effective batch, which sums the same terms. A run of epochs with the same
    effective batch counts once: the number of epochs only changes a device's step count, by which
    the executor splits groups anyway (DYNAMITE gives each device the epochs its τ steps take).

    >>> cohort_key(TrainPlan(0, 0, micro_batch=8, accumulation_steps=2, local_epochs=2))
    (1.0, 0.05, (16,), None)
    >>> cohort_key(TrainPlan(1, 0, micro_batch=4, accumulation_steps=4, local_epochs=3))
    (1.0, 0.05, (16,), None)
    >>> cohort_key(TrainPlan(2, 0, micro_batch=8, epoch_batches=((8, 1), (8, 1), (4, 1), (8, 1))))
    (1.0, 0.05, (8, 4, 8), None)
    """
    epochs = len(plan.epoch_batches) or plan.local_epochs
    per_epoch = [m * a for m, a in (plan.epoch_batch(e) for e in range(epochs))]
    runs = tuple(b for e, b in enumerate(per_epoch) if e == 0 or b != per_epoch[e - 1])
    return plan.width, plan.lr, runs, plan.max_steps


def planned_steps(examples: int, plan: TrainPlan) -> int:
    """Optimiser steps ``plan`` takes on ``examples`` samples (the trainer's count, without shuffling).

    >>> planned_steps(40, TrainPlan(0, 0, micro_batch=16, local_epochs=2)), planned_steps(40, TrainPlan(
    ...     0, 0, micro_batch=16, local_epochs=2, max_steps=4))
    (6, 4)
    """
    epochs = len(plan.epoch_batches) or plan.local_epochs
    steps = sum(-(-examples // (m * a)) for m, a in (plan.epoch_batch(e) for e in range(epochs)))
    return steps if plan.max_steps is None else min(steps, plan.max_steps)


def _schedule(batches: Sequence[Sequence[torch.Tensor]], offsets: Sequence[int]
              ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(index ``[S, G, B]`` into the concatenated data, sample weight ``[S, G, B]``, batch size
    ``[S, G]``) of S steps of G devices, padded to the largest batch B (weight 0, index 0).

    Scattered at once, not batch by batch (a few ops per cohort rather than three per device-step).

    >>> index, weight, count = _schedule([[torch.tensor([1, 0]), torch.tensor([2])], [torch.tensor([0])]], [0, 3])
    >>> index.tolist(), count.tolist()
    ([[[1, 0], [3, 0]], [[2, 0], [0, 0]]], [[2.0, 1.0], [1.0, 0.0]])
    """
    steps_of = torch.tensor([len(b) for b in batches])
    sizes = torch.tensor([len(idx) for b in batches for idx in b])
    index = torch.zeros(int(steps_of.max()), len(batches), int(sizes.max()), dtype=torch.long)
    weight = torch.zeros(index.shape)
    count = torch.zeros(index.shape[:2])
    device = torch.repeat_interleave(torch.arange(len(batches)), steps_of)  # of each batch
    step = torch.arange(len(sizes)) - torch.repeat_interleave(steps_of.cumsum(0) - steps_of, steps_of)
    count[step, device] = sizes.float()
    position = torch.arange(int(sizes.sum())) - torch.repeat_interleave(sizes.cumsum(0) - sizes, sizes)
    step, device = torch.repeat_interleave(step, sizes), torch.repeat_interleave(device, sizes)  # of each sample
    index[step, device, position] = torch.cat([torch.cat(list(b)) + offset for b, offset in
                                               zip(batches, offsets, strict=True) if len(b)])
    weight[step, device, position] = 1.0
    return index, weight, count


def _losses(model: nn.Module) -> Losses:
    """Each device's Σ w·CE / n over its padded batch, vectorised over devices (a ``vmap``)."""
    def loss(params: Params, x: torch.Tensor, y: torch.Tensor, w: torch.Tensor, n: torch.Tensor) -> torch.Tensor:
        out = functional_call(model, params, (x,))
        return (nn.functional.cross_entropy(out, y, reduction="none") * w).sum() / n
    return cast(Losses, vmap(loss))


def _gradients(losses_of: Losses) -> Gradients:
    """Each device's (gradient, loss) of :func:`_losses`', differentiated as their sum (device g's
    parameters reach only its own loss, so each gets its own gradient). Plain autograd rather than
    ``torch.func.grad``, whose first call imports ``torch._dynamo`` (~1.8 s of CPU)."""
    def gradients(params: Params, x: torch.Tensor, y: torch.Tensor, w: torch.Tensor,
                  n: torch.Tensor) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
        leaves = {name: t.detach().requires_grad_() for name, t in params.items()}
        with torch.enable_grad():
            losses = losses_of(leaves, x, y, w, n)
            grads = torch.autograd.grad(losses.sum(), list(leaves.values()))
        return dict(zip(leaves, grads, strict=True)), losses.detach()
    return gradients


class _Probing(NamedTuple):
    """What the probes need besides the first step: the cohort's vectorised loss and gradient, its
    concatenated data with each device's offset into it, and the experiment seed."""
    losses: Losses
    gradients: Gradients
    x_all: torch.Tensor
    y_all: torch.Tensor
    offsets: Sequence[int]
    seed: int


def _probes(cohort: _Probing, params: Params, xs: torch.Tensor, ys: torch.Tensor, count: torch.Tensor,
            data: Sequence[tuple[torch.Tensor, torch.Tensor]], plans: Sequence[TrainPlan]
            ) -> tuple[list[float | None], list[float | None]]:
    """(σ̂², β̂_σ) of each device at its starting ``params`` from its first step's padded batch
    (xs, ys) of ``count`` samples; ``None`` where not asked or not measurable, as one by one.

    β_σ's Hessian is over the samples the trainer takes for it: the task's next batch
    (:func:`fedfit.training.trainer._next_batch`, from the first batch's size)."""
    examples = torch.tensor([len(x) for x, _ in data])
    chosen, diffs = half_differences(cohort.gradients, params, xs, ys, count, examples,
                                     torch.tensor([p.sigma_probe for p in plans]))
    curvature: list[float | None] = [None] * len(plans)
    rows = [k for k, g in enumerate(chosen.tolist()) if plans[g].curvature_probe]
    if rows:
        devices = chosen[rows]
        others = [[_next_batch(len(data[g][0]), int(count[g]), cohort.seed, plans[g])] for g in devices.tolist()]
        index, weight, size = _schedule(others, [cohort.offsets[g] for g in devices.tolist()])
        values = cohort_curvature(cohort.losses, {n: p[devices] for n, p in params.items()},
                                  {n: d[rows] for n, d in diffs.items()}, cohort.x_all[index[0]],
                                  cohort.y_all[index[0]], weight[0], size[0])
        for g, value in zip(devices.tolist(), values, strict=True):
            curvature[g] = value
    return sigma2_of(chosen, diffs, count, examples), curvature


def train_cohort(model: nn.Module, starts: Sequence[Params], data: Sequence[tuple[torch.Tensor, torch.Tensor]],
                 plans: Sequence[TrainPlan], *, seed: int, optimizer: OptimizerConfig = OptimizerConfig()
                 ) -> list[Update]:
    """Train G devices at once: device g from ``starts[g]`` on ``data[g]`` following ``plans[g]``.

    Every plan must have the same :func:`cohort_key`, ``model`` must be :func:`batchable_model`
    with the plans' width, each plan :func:`batchable_plan`, and each device hold data.

    Returns:
        The G updates, as :func:`fedfit.training.trainer.train` returns them one by one.
    """
    model.train()
    batches = [[idx for idx, _ in _batches(len(x), p, task_generator(seed, p.device_id, p.round))]
               for (x, _), p in zip(data, plans, strict=True)]
    offsets = [0]
    for x, _ in data[:-1]:
        offsets.append(offsets[-1] + len(x))
    index, weight, count = _schedule(batches, offsets)
    x_all, y_all = torch.cat([x for x, _ in data]), torch.cat([y for _, y in data])
    names = [name for name, _ in model.named_parameters()]
    opt = StackedOptimizer({n: torch.stack([s[n] for s in starts]) for n in names}, plans[0].lr, optimizer)
    losses_of = _losses(model)
    gradients = _gradients(losses_of)
    loss_sum = torch.zeros(len(plans), dtype=torch.float64)
    params = opt.params
    first = torch.full((len(plans),), math.nan, dtype=torch.float64)  # each device's first-step loss
    probes: tuple[list[float | None], list[float | None]] = ([None] * len(plans), [None] * len(plans))
    for s in range(len(index)):
        xs, ys = x_all[index[s]], y_all[index[s]]
        if s == 0 and any(p.sigma_probe for p in plans):  # at the received models, before the first step
            probes = _probes(_Probing(losses_of, gradients, x_all, y_all, offsets, seed), params, xs, ys, count[0],
                             data, plans)
        grads, losses = gradients(params, xs, ys, weight[s], count[s].clamp(min=1.0))
        loss_sum += losses.double() * count[s].double()
        first = torch.where(first.isnan() & (count[s] > 0), losses.double(), first)
        params = opt.step(grads, active=count[s] > 0)
    return [_update(plan, {n: params[n][g].clone() for n in names}, len(x), device_batches, float(loss_sum[g]),
                    float(first[g]), probes[0][g], probes[1][g])
            for g, (plan, (x, _), device_batches) in enumerate(zip(plans, data, batches, strict=True))]


def _update(plan: TrainPlan, params: Params, examples: int, batches: Sequence[torch.Tensor],
            loss_sum: float, start_loss: float, sigma2: float | None, curvature: float | None) -> Update:
    samples = sum(len(idx) for idx in batches)
    return Update(
        device_id=plan.device_id,
        round=plan.round,
        params=params,
        num_examples=examples,
        samples_processed=samples,
        steps=len(batches),
        micro_batch=plan.epoch_batches[-1][0] if plan.epoch_batches else plan.micro_batch,
        accumulation_steps=plan.epoch_batches[-1][1] if plan.epoch_batches else plan.accumulation_steps,
        train_loss=loss_sum / max(samples, 1),
        epoch_batches=plan.epoch_batches,
        start_loss=None if math.isnan(start_loss) else start_loss,
        sigma2=sigma2,
        noise_curvature=curvature,
    )
