"""Split learning: the device trains the stages before a cut, an edge server the rest
(Vepakomma et al. 2018, "Split learning for health"; Thapa et al. 2022, "SplitFed").

Per micro-batch the device runs its stages and sends the cut activation; the edge server runs
the remaining stages and the loss, back-propagates to the cut, and returns the activation's
gradient; the device back-propagates it through its stages. Each side steps its own optimiser.
The gradients are exactly those of unsplit training. The returned update holds both parts (the
edge server forwards its part to the aggregator); only the device's part crosses the device's
link, with the activations and gradients, as the cost model charges.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from fedfit.models.stages import Stage, run_stages, stages_of
from fedfit.training.optimizers import OptimizerConfig, make_optimizer
from fedfit.training.program import Program, state_of


def split_micro_step(model: nn.Module, stages: Sequence[Stage], cut: int, xs: torch.Tensor, ys: torch.Tensor,
                     n: int) -> torch.Tensor:
    """Forward/backward of one micro-batch across the cut; returns the (scaled) loss."""
    activation = run_stages(model, stages[:cut], xs)               # on the device
    received = activation.detach().requires_grad_(True)            # sent over the link
    logits = run_stages(model, stages[cut:], received)             # on the edge server
    loss = nn.functional.cross_entropy(logits, ys, reduction="sum") / n
    loss.backward()                                                # edge backward to the cut
    assert received.grad is not None
    activation.backward(received.grad)                             # gradient sent back; device backward
    return loss.detach()


def split_program(model: nn.Module, cut: int, lr: float, optimizer: OptimizerConfig) -> Program:
    """Device part (stages < ``cut``) and edge part, each with its own optimiser."""
    stages = stages_of(model)
    device = [p for n, p in model.named_parameters() if any(s.owns(n) for s in stages[:cut])]
    edge = [p for n, p in model.named_parameters() if any(s.owns(n) for s in stages[cut:])]
    opts = (make_optimizer(device, lr, optimizer), make_optimizer(edge, lr, optimizer))

    def micro(xs: torch.Tensor, ys: torch.Tensor, n: int) -> torch.Tensor:
        return split_micro_step(model, stages, cut, xs, ys, n)

    return Program(micro, opts, lambda: (state_of(model), None))
