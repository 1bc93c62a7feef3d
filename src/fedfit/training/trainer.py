"""The local trainer: run a :class:`~fedfit.types.TrainPlan` on a device's data.

Plain PyTorch. Micro-batches of ``plan.micro_batch`` samples are passed through
forward/backward; gradients of ``plan.accumulation_steps`` micro-batches are summed (each loss
scaled by its share of the effective batch) before one optimiser step, so micro-batch m with k
accumulation steps gives the same step as batch m·k. A plan re-planned every local epoch
(``plan.epoch_batches``, dynamic batching) switches micro-batch and accumulation at each
epoch boundary. Shuffling uses a generator seeded from
(seed, device, round): the same task trains the same way in any process.

The trainer keeps no avoidable copy alive (the memory model, :mod:`fedfit.cost.memory`, charges
only what training needs): each micro-batch's samples are gathered from the local data when it
runs, not the whole effective batch at once, and every gradient is freed before the trained
state is copied out, so that copy never coexists with the gradients.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np
import torch
from torch import nn

from fedfit.training.curvature_probe import half_batch_probe
from fedfit.training.optimizers import OptimizerConfig
from fedfit.training.probe import half_batch_sigma2
from fedfit.training.program import MicroStep
from fedfit.training.techniques import build_program
from fedfit.types import Params, TrainPlan, Update


__all__ = ["EpochBatch", "OptimizerConfig", "evaluate", "task_generator", "train"]

#: The device's (micro-batch, accumulation) for a local epoch, decided at its start; ``None``: pause.
EpochBatch = Callable[[int], tuple[int, int] | None]


def task_generator(seed: int, device_id: int, round_: int) -> torch.Generator:
    """The RNG of one task, derived from (seed, device, round) only."""
    state = np.random.SeedSequence([seed, device_id, round_]).generate_state(1, dtype=np.uint64)
    return torch.Generator().manual_seed(int(state[0]) & 0x7FFF_FFFF_FFFF_FFFF)


def _batches(n: int, plan: TrainPlan, gen: torch.Generator, at_epoch: EpochBatch | None = None,
             ran: list[tuple[int, int]] | None = None) -> Iterator[tuple[torch.Tensor, int]]:
    """(indices, micro-batch) of each effective batch, epoch after epoch, capped by ``max_steps``.

    Lazy: ``at_epoch(epoch)`` (when given) is asked at the start of each epoch, after the previous
    one trained, for that epoch's (micro-batch, accumulation) or ``None`` to stop there; ``ran``
    collects the batches of the epochs that ran. The shuffle is the same either way."""
    epochs = len(plan.epoch_batches) or plan.local_epochs
    emitted = 0
    for epoch in range(epochs):
        if plan.max_steps is not None and emitted >= plan.max_steps:
            return
        chosen = plan.epoch_batch(epoch) if at_epoch is None else at_epoch(epoch)
        if chosen is None:
            return
        micro, accumulation = chosen
        if ran is not None:
            ran.append((micro, accumulation))
        order = torch.randperm(n, generator=gen)
        for idx in order.split(micro * accumulation):
            if plan.max_steps is not None and emitted >= plan.max_steps:
                return
            emitted += 1
            yield idx, micro


def _next_batch(n: int, batch: int, seed: int, plan: TrainPlan) -> torch.Tensor:
    """The samples of the task's second batch (its first epoch's order redrawn), disjoint from
    the first ``batch``; the first batch itself when the data holds no other sample."""
    order = torch.randperm(n, generator=task_generator(seed, plan.device_id, plan.round))
    rest = order[batch:2 * batch]
    return rest if len(rest) else order[:batch]


def _step(micro_step: MicroStep, x: torch.Tensor, y: torch.Tensor, idx: torch.Tensor, micro: int) -> float:
    """Forward/backward the effective batch ``idx`` of (x, y) in micro-batches, gathering each
    micro-batch's samples only when it runs; returns the summed loss."""
    total, n = 0.0, idx.shape[0]
    # one micro-batch: ``idx`` itself (``split`` would return it whole, through a Python wrapper
    # costing more than the gather); index_select: the same gather as x[part], without advanced
    # indexing's overhead
    for part in (idx,) if n <= micro else idx.split(micro):
        total += float(micro_step(x.index_select(0, part), y.index_select(0, part), n)) * n
    return total


def _add_proximal_gradient(model: nn.Module, anchor: list[torch.Tensor], mu: float) -> None:
    """FedProx (Li et al. 2020, "Federated Optimization in Heterogeneous Networks"): the
    gradient of μ/2·‖w − w_global‖² is μ·(w − w_global), added before each step."""
    with torch.no_grad():
        for p, p0 in zip(model.parameters(), anchor, strict=True):
            if p.grad is not None:
                p.grad.add_(p - p0, alpha=mu)


def _proximal_anchor(model: nn.Module, params: Params, plan: TrainPlan) -> list[torch.Tensor]:
    """FedProx's anchor: the starting point, which the caller already holds for a plain plan (no
    copy); a technique may change the weights it starts from (pruning), so they are copied."""
    if not plan.techniques.active:
        return [params[name] for name, _ in model.named_parameters()]
    return [p.detach().clone() for p in model.parameters()]


def train(
    model: nn.Module,
    params: Params,
    x: torch.Tensor,
    y: torch.Tensor,
    plan: TrainPlan,
    *,
    seed: int,
    optimizer: OptimizerConfig = OptimizerConfig(),
    at_epoch: EpochBatch | None = None,
) -> Update:
    """Train ``model`` from ``params`` on (x, y) following ``plan``.

    Args:
        model: a module with the architecture of ``params`` (its weights are overwritten).
        params: starting parameters.
        x, y: the device's local training data.
        plan: micro-batch, accumulation, epochs, step cap, learning rate and techniques
            (:func:`fedfit.training.techniques.build_program` builds the technique's program).
        seed: experiment seed (with device and round it fixes the shuffling).
        optimizer: the local optimiser (SGD with momentum and weight decay, or Adam) and FedProx μ.
        at_epoch: a deployed device's batch decision at the start of each local epoch (it re-reads
            its monitor); ``None``: the plan's batches. The update reports the batches used.

    Returns:
        The :class:`Update` with the trained parameters and the work done.
    """
    model.load_state_dict(params)
    model.train()
    program = build_program(model, plan, optimizer, x, y)
    gen = task_generator(seed, plan.device_id, plan.round)
    loss_sum, samples, steps = 0.0, 0, 0
    anchor = _proximal_anchor(model, params, plan) if optimizer.proximal_mu > 0 else []
    ran: list[tuple[int, int]] = []
    start_loss: float | None = None
    probing, sigma2 = plan.sigma_probe and not plan.techniques.active and optimizer.local_dp is None, None
    curvature: float | None = None
    whole = None if anchor else program.batch_step  # FedProx adds its gradient between micro-steps and step
    for idx, micro in _batches(len(x), plan, gen, at_epoch, ran):
        batch = idx.shape[0]
        if probing and steps == 0 and plan.curvature_probe:  # at the received model, before the first step
            sigma2, curvature = half_batch_probe(model, x, y, idx, _next_batch(len(x), batch, seed, plan))
        elif probing and steps == 0:
            sigma2 = half_batch_sigma2(model, x, y, idx)
        if whole is not None:
            loss = whole(x, y, idx, micro)
        else:
            program.zero_grad()
            loss = _step(program.micro_step, x, y, idx, micro)
            if anchor:
                _add_proximal_gradient(model, anchor, optimizer.proximal_mu)
            program.step()
        start_loss = loss / batch if start_loss is None else start_loss
        loss_sum += loss
        samples += batch
        steps += 1
    program.zero_grad()
    model.zero_grad(set_to_none=True)  # no gradient outlives training: the copy below needs the room
    new_params, masks = program.finish()
    batches = tuple(ran) if at_epoch is not None else plan.epoch_batches
    return Update(
        device_id=plan.device_id,
        round=plan.round,
        params=new_params,
        num_examples=len(x),
        samples_processed=samples,
        steps=steps,
        micro_batch=batches[-1][0] if batches else plan.micro_batch,
        accumulation_steps=batches[-1][1] if batches else plan.accumulation_steps,
        train_loss=loss_sum / max(samples, 1),
        epoch_batches=batches,
        masks=masks,
        start_loss=start_loss,
        sigma2=sigma2,
        noise_curvature=curvature,
    )


@torch.no_grad()
def evaluate(model: nn.Module, params: Params, x: torch.Tensor, y: torch.Tensor,
             batch: int = 1024) -> tuple[float, float]:
    """(accuracy, mean cross-entropy) of ``params`` on (x, y)."""
    model.load_state_dict(params)
    model.eval()
    correct, loss = 0, 0.0
    for xs, ys in zip(x.split(batch), y.split(batch), strict=True):
        out = model(xs)
        loss += float(nn.functional.cross_entropy(out, ys, reduction="sum"))
        correct += int((out.argmax(1) == ys).sum())
    n = max(len(x), 1)
    return correct / n, loss / n
