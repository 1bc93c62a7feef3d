"""A local training program: what one micro-batch does, what one step does, what is returned.

The trainer's loop (:func:`fedfit.training.trainer.train`) is the same for every technique;
a technique only builds a different :class:`Program` (which tensors are optimised, how a
micro-batch runs forward and backward, what the update holds).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import torch
from torch import nn

from fedfit.types import Params

#: Forward + backward of one micro-batch ``(xs, ys, effective_batch) -> summed loss / effective_batch``.
MicroStep = Callable[[torch.Tensor, torch.Tensor, int], torch.Tensor]
#: A whole optimiser step over the effective batch ``idx`` of ``(x, y)`` in micro-batches of ``micro``
#: samples (zero the gradients, every micro-step, the update) ``(x, y, idx, micro) -> summed loss``.
BatchStep = Callable[[torch.Tensor, torch.Tensor, torch.Tensor, int], float]
#: The update's parameters and masks (``None``: every returned tensor held whole).
Finish = Callable[[], tuple[Params, dict[str, torch.Tensor] | None]]


def _nothing() -> None:
    return None


def clear_grads(opt: torch.optim.Optimizer) -> None:
    """``opt.zero_grad(set_to_none=True)``: every gradient of ``opt``'s tensors set to ``None``.

    For an optimiser that keeps PyTorch's ``zero_grad`` this sets them directly, without the
    profiler scope and compiler guard PyTorch enters on every call (≈ 60 µs, a few percent of a
    small model's step on one thread); an optimiser with its own ``zero_grad`` gets that called.
    """
    if type(opt).zero_grad is not torch.optim.Optimizer.zero_grad:
        opt.zero_grad(set_to_none=True)
        return
    for group in opt.param_groups:
        for tensor in group["params"]:
            tensor.grad = None


def loss_step(forward: Callable[[torch.Tensor], torch.Tensor]) -> MicroStep:
    """The usual micro-step: cross-entropy of ``forward(xs)``, scaled by the effective batch."""
    def step(xs: torch.Tensor, ys: torch.Tensor, n: int) -> torch.Tensor:
        loss = nn.functional.cross_entropy(forward(xs), ys, reduction="sum") / n
        loss.backward()
        return loss.detach()
    return step


def state_of(model: nn.Module, names: Sequence[str] | None = None) -> Params:
    """A detached copy of the model's state (only ``names`` when given)."""
    state = model.state_dict()
    keep = state.keys() if names is None else names
    return {k: state[k].detach().clone() for k in keep}


@dataclass
class Program:
    """One task's training program.

    Attributes:
        micro_step: forward + backward of one micro-batch.
        optimizers: the optimisers stepped after each effective batch.
        finish: the update's parameters and masks, after training.
        after_step: run after every optimiser step (e.g. scatter compact values back).
        batch_step: the same zero_grad, micro-steps and step in one call, for a trainer step
            with nothing between the micro-steps and the update (no FedProx); ``None``: none.
    """

    micro_step: MicroStep
    optimizers: tuple[torch.optim.Optimizer, ...]
    finish: Finish
    after_step: Callable[[], None] = field(default=_nothing)
    batch_step: BatchStep | None = None

    def zero_grad(self) -> None:
        for opt in self.optimizers:
            clear_grads(opt)

    def step(self) -> None:
        for opt in self.optimizers:
            opt.step()
        self.after_step()
