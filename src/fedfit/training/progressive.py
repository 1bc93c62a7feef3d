"""Progressive layer-wise training: a device that cannot hold the whole model trains one stage
at a time (cf. Wang et al. 2022, "ProgFed: Effective, Communication, and Computation Efficient
Federated Learning by Progressive Training"; Belilovsky et al. 2019, greedy layer-wise learning).

At stage k the stages before k run frozen (no gradients, no saved activations), stages after k
are never built into the computation, and an auxiliary linear head maps stage k's output to the
classes (the last stage uses the model's own head). The head is initialised from the task's RNG
and stays on the device; the update carries stage k's parameters only. The server keeps each
device's stage and advances it across rounds (:class:`fedfit.policy.memory.MemoryPlanner`).
"""

from __future__ import annotations

import math

import torch
from torch import nn

from fedfit.models.stages import run_stages, stages_of
from fedfit.training.freezing import freeze_except
from fedfit.training.optimizers import OptimizerConfig, make_optimizer
from fedfit.training.program import Program, loss_step, state_of


def auxiliary_head(in_features: int, classes: int, gen: torch.Generator) -> nn.Linear:
    """A linear head with PyTorch's default uniform(±1/√in) initialisation, drawn from ``gen``."""
    head = nn.Linear(in_features, classes)
    bound = 1.0 / math.sqrt(in_features)
    with torch.no_grad():
        head.weight.copy_(torch.rand(head.weight.shape, generator=gen) * 2 * bound - bound)
        head.bias.copy_(torch.rand(head.bias.shape, generator=gen) * 2 * bound - bound)
    return head


def progressive_program(model: nn.Module, stage: int, x: torch.Tensor, lr: float,
                        optimizer: OptimizerConfig, gen: torch.Generator) -> Program:
    """Train stage ``stage`` of ``model`` behind frozen earlier stages, with an auxiliary head."""
    stages = stages_of(model)
    names = freeze_except(model, stages, [stage])
    trained = list(p for p in model.parameters() if p.requires_grad)
    head: nn.Module | None = None
    if stage < len(stages) - 1:
        with torch.no_grad():
            out = run_stages(model, stages[: stage + 1], x[:1])
            classes = run_stages(model, stages[stage + 1:], out).shape[-1]  # logits: any head
        head = auxiliary_head(out[0].numel(), classes, gen)
        trained += list(head.parameters())

    def forward(xs: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            h = run_stages(model, stages[:stage], xs)
        h = stages[stage].forward(model, h)
        return head(h.flatten(1)) if head is not None else h

    opt = make_optimizer(trained, lr, optimizer)
    return Program(loss_step(forward), (opt,), lambda: (state_of(model, names), None))
