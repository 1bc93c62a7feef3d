"""Selective layer updating: which stages a device trains, and freezing the rest.

Frozen parameters get no gradient and no optimiser state; stages before the first trained one
save no activations (nothing before them needs a gradient); the update carries only the trained
stages' parameters, so the masked average touches only them. Modes: the head only, the last k
stages, cyclic groups of k stages by round, and importance: the k stages whose mean |gradient|
on the first micro-batch is largest (the probe is one extra forward/backward).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from fedfit.errors import PlanError
from fedfit.models.stages import Stage, run_stages

SELECTIVE_MODES = ("head", "last_k", "cyclic", "importance")


def select_stages(mode: str, k: int, round_: int, num_stages: int) -> tuple[int, ...] | None:
    """Stages trained under a selection ``mode`` (``None`` for ``importance``: the device decides).

    >>> select_stages("cyclic", 2, 3, 4)  # groups (0,1), (2,3); round 3 → second group
    (2, 3)
    """
    if mode not in SELECTIVE_MODES:
        raise PlanError(f"memory.selective.mode: unknown mode '{mode}' (known: {', '.join(SELECTIVE_MODES)})")
    k = max(1, min(k, num_stages))
    if mode == "head":
        return (num_stages - 1,)
    if mode == "last_k":
        return tuple(range(num_stages - k, num_stages))
    if mode == "cyclic":
        groups = [tuple(range(s, min(s + k, num_stages))) for s in range(0, num_stages, k)]
        return groups[round_ % len(groups)]
    return None


def importance_stages(model: nn.Module, stages: Sequence[Stage], x: torch.Tensor, y: torch.Tensor,
                      k: int) -> tuple[int, ...]:
    """The ``k`` stages with the largest mean |gradient| of the loss on (x, y)."""
    model.zero_grad(set_to_none=True)
    nn.functional.cross_entropy(run_stages(model, stages, x), y).backward()
    score = []
    for stage in stages:
        grads = [p.grad.abs().mean() for n, p in model.named_parameters() if stage.owns(n) and p.grad is not None]
        score.append(float(torch.stack(grads).mean()) if grads else 0.0)
    model.zero_grad(set_to_none=True)
    ranked = sorted(range(len(stages)), key=lambda i: (-score[i], i))
    return tuple(sorted(ranked[:k]))


def freeze_except(model: nn.Module, stages: Sequence[Stage], trained: Sequence[int]) -> list[str]:
    """Freeze every parameter outside the ``trained`` stages; returns the trained names, with
    the buffers of those stages (a user module's batch-norm running statistics) after them."""
    names = []
    for name, p in model.named_parameters():
        keep = any(stages[i].owns(name) for i in trained)
        p.requires_grad_(keep)
        if keep:
            names.append(name)
    return names + [n for n, _ in model.named_buffers() if any(stages[i].owns(n) for i in trained)]
