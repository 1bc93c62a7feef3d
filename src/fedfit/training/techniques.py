"""Which memory-saving techniques a plan may combine, and the training program they build.

Checkpointing, selective updating and QAT compose (they change how stages run and which
stages train). Partial-parameter training, pruning, progressive training and split learning
each redefine what the device holds, so each runs alone::

    allowed: any subset of {checkpointing, selective, qat}, or exactly one of
             {partial, pruning, progressive, split}
"""

from __future__ import annotations

import torch
from torch import nn

from fedfit.errors import PlanError
from fedfit.models.stages import stages_of
from fedfit.training import qat
from fedfit.training.checkpointing import layered_forward
from fedfit.training.dp_sgd import dp_sgd_step, noise_generator
from fedfit.training.freezing import freeze_except, importance_stages
from fedfit.training.fused import fused_steps
from fedfit.training.optimizers import OptimizerConfig, make_optimizer
from fedfit.training.partial import compact_program, mask_generator, random_masks
from fedfit.training.program import Program, loss_step, state_of
from fedfit.training.progressive import progressive_program
from fedfit.training.pruning import magnitude_masks, prune
from fedfit.training.split import split_program
from fedfit.types import Techniques, TrainPlan

COMPOSABLE = frozenset({"checkpointing", "selective", "qat"})


def _check_ranges(t: Techniques, num_stages: int) -> None:
    checks = [
        (t.train_stages is not None and (not t.train_stages or any(not 0 <= i < num_stages for i in t.train_stages)),
         f"selective stages {t.train_stages} outside 0..{num_stages - 1}"),
        (t.train_stages is not None and t.importance_k is not None, "selective: give stages or importance_k, not both"),
        (t.importance_k is not None and not 1 <= t.importance_k <= num_stages, f"importance k must be in 1..{num_stages}"),
        (t.keep_fraction is not None and not 0.0 < t.keep_fraction <= 1.0, "partial keep_fraction must be in (0, 1]"),
        (t.sparsity is not None and not 0.0 <= t.sparsity < 1.0, "pruning sparsity must be in [0, 1)"),
        (t.qat_bits is not None and not 2 <= t.qat_bits <= 8, "qat bits must be in 2..8"),
        (t.progressive_stage is not None and not 0 <= t.progressive_stage < num_stages,
         f"progressive stage must be in 0..{num_stages - 1}"),
        (t.split_cut is not None and not 1 <= t.split_cut < num_stages, f"split cut must be in 1..{num_stages - 1}"),
        (t.edge_flops_per_s <= 0, "edge_flops_per_s must be positive"),
    ]
    for bad, msg in checks:
        if bad:
            raise PlanError(f"techniques: {msg}")


def check_combination(active: tuple[str, ...]) -> None:
    """Raise :class:`PlanError` unless the named techniques can be combined."""
    exclusive = [a for a in active if a not in COMPOSABLE]
    if exclusive and len(active) > 1:
        others = ", ".join(a for a in active if a != exclusive[0])
        raise PlanError(f"techniques: {exclusive[0]} cannot be combined with {others}")


def check_techniques(t: Techniques, num_stages: int) -> None:
    """Raise :class:`PlanError` (one line) for an impossible value or combination."""
    check_combination(t.active)
    _check_ranges(t, num_stages)


def _layered_program(model: nn.Module, plan: TrainPlan, optimizer: OptimizerConfig, x: torch.Tensor,
                     y: torch.Tensor) -> Program:
    """Selective updating, checkpointing and QAT, in any combination."""
    t, stages = plan.techniques, stages_of(model)
    trained = t.train_stages
    if t.importance_k is not None:
        trained = importance_stages(model, stages, x[: plan.micro_batch], y[: plan.micro_batch], t.importance_k)
    trained = tuple(range(len(stages))) if trained is None else trained
    names = freeze_except(model, stages, trained)
    between = None
    if t.qat_bits is not None:
        bits = t.qat_bits
        qat.attach(model, bits)
        between = lambda a: qat.fake_quantise_activation(a, bits)  # noqa: E731
    forward = layered_forward(model, stages, checkpoint_from=min(trained) if t.checkpointing else None,
                              between=between)
    opt = make_optimizer([p for p in model.parameters() if p.requires_grad], plan.lr, optimizer)

    def finish() -> tuple[dict[str, torch.Tensor], None]:
        qat.detach_all(model)
        return state_of(model, names), None

    return Program(loss_step(forward), (opt,), finish)


def build_program(model: nn.Module, plan: TrainPlan, optimizer: OptimizerConfig, x: torch.Tensor,
                  y: torch.Tensor) -> Program:
    """The training program of ``plan`` on ``model`` (already loaded with the start parameters).

    Technique programs leave no trace on ``model`` once finished: hooks and parametrisations
    are removed and every parameter is trainable again.

    Raises:
        PlanError: the plan's techniques cannot be combined or do not fit the model.
    """
    t = plan.techniques
    if not t.active:
        opt = make_optimizer(model.parameters(), plan.lr, optimizer)
        dp = optimizer.local_dp
        if dp:
            step = dp_sgd_step(model, dp, noise_generator(dp.seed, plan.device_id, plan.round))
            return Program(step, (opt,), lambda: (state_of(model), None))
        # the zoo's linear stacks step without autograd, bit-identically (fedfit.training.fused)
        fused = fused_steps(model, opt)
        step, batch = fused if fused is not None else (loss_step(model), None)
        return Program(step, (opt,), lambda: (state_of(model), None), batch_step=batch)
    if optimizer.local_dp is not None:
        raise PlanError("techniques: local DP-SGD cannot be combined with memory techniques")
    check_techniques(t, len(stages_of(model)))
    program = _technique_program(model, plan, optimizer, x, y)
    inner = program.finish

    def finish() -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor] | None]:
        out = inner()
        for p in model.parameters():
            p.requires_grad_(True)
        return out

    program.finish = finish
    return program


def _technique_program(model: nn.Module, plan: TrainPlan, optimizer: OptimizerConfig, x: torch.Tensor,
                       y: torch.Tensor) -> Program:
    t = plan.techniques
    if t.keep_fraction is not None:
        gen = mask_generator(t.mask_seed, plan.device_id, plan.round)
        masks = random_masks(dict(model.named_parameters()), t.keep_fraction, gen)
        return compact_program(model, masks, plan.lr, optimizer)
    if t.sparsity is not None:
        masks = magnitude_masks(dict(model.named_parameters()), t.sparsity)
        model.load_state_dict(prune(model.state_dict(), masks))
        return compact_program(model, masks, plan.lr, optimizer)
    if t.progressive_stage is not None:
        gen = mask_generator(t.mask_seed, plan.device_id, plan.round)
        return progressive_program(model, t.progressive_stage, x, plan.lr, optimizer, gen)
    if t.split_cut is not None:
        return split_program(model, t.split_cut, plan.lr, optimizer)
    return _layered_program(model, plan, optimizer, x, y)
