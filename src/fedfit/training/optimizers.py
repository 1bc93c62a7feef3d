"""Local optimisers: SGD (with momentum) or Adam, built over any list of tensors.

Techniques that train a subset of the model pass only that subset's tensors, so optimiser
state (momentum, Adam's two moments) is allocated for those alone.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import torch

from fedfit.models.eager import spare_dynamo_import

if TYPE_CHECKING:
    from fedfit.training.dp_sgd import LocalDP


@dataclass(frozen=True, slots=True)
class OptimizerConfig:
    """Local optimiser hyperparameters (the learning rate comes from the plan).

    Attributes:
        momentum: SGD momentum (ignored by Adam).
        weight_decay: L2 weight decay.
        kind: ``sgd`` or ``adam`` (Kingma & Ba 2015, "Adam: A Method for Stochastic Optimization").
        betas: Adam's moment decay rates.
        proximal_mu: FedProx μ: adds μ/2·‖w − w_global‖² to the local loss (0: off).
        local_dp: DP-SGD's per-sample clipping and noise (:mod:`fedfit.training.dp_sgd`); ``None``: off.
    """

    momentum: float = 0.0
    weight_decay: float = 0.0
    kind: Literal["sgd", "adam"] = "sgd"
    betas: tuple[float, float] = (0.9, 0.999)
    proximal_mu: float = 0.0
    local_dp: LocalDP | None = None

    @property
    def slots(self) -> int:
        """Optimiser state tensors per trained parameter (SGD 0, momentum 1, Adam 2)."""
        if self.kind == "adam":
            return 2
        return 1 if self.momentum > 0 else 0

    @property
    def step_temporaries(self) -> int:
        """Parameter-sized temporaries alive at once while one tensor is updated (measured with
        the tensor allocator, ``bench/memory_model.py``): weight decay's ``grad + wd·w`` and
        FedProx's ``w − w_global`` one each; Adam's ``sqrt(v)`` and its bias-corrected quotient
        two (PyTorch's per-tensor CPU implementations, which free them tensor by tensor)."""
        decay = 1 if self.weight_decay > 0 else 0
        if self.kind == "adam":
            return 2 + decay
        return max(decay, 1 if self.proximal_mu > 0 else 0)


spare_dynamo_import()  # optimiser bookkeeping would import torch._dynamo (~1.8 s) on first use


def make_optimizer(tensors: Iterable[torch.Tensor], lr: float, config: OptimizerConfig) -> torch.optim.Optimizer:
    """The configured optimiser over ``tensors`` (only these get state)."""
    params = list(tensors)
    if config.kind == "adam":
        return torch.optim.Adam(params, lr=lr, betas=config.betas, weight_decay=config.weight_decay)
    return EagerSGD(params, lr=lr, momentum=config.momentum, weight_decay=config.weight_decay)


class EagerSGD(torch.optim.SGD):
    """``torch.optim.SGD`` with the same per-tensor CPU update, stepped without the wrapper that
    imports ``torch._dynamo`` on the first step (~1.8 s of CPU) and enters a profiler scope and a
    graph break on every step. The arithmetic is PyTorch's ``_single_tensor_sgd`` for dense
    gradients (weight decay, momentum with dampening, Nesterov), so updates are bit-identical;
    momentum buffers live in ``state[p]["momentum_buffer"]`` as PyTorch keeps them. Its step is
    not wrapped in PyTorch's step hooks and profiler scope (tens of µs a step): step hooks
    registered on it are refused rather than silently skipped.
    """

    def step(self, closure: Callable[[], float] | None = None) -> float | None:  # type: ignore[override]
        if self._optimizer_step_pre_hooks or self._optimizer_step_post_hooks:
            raise ValueError("EagerSGD does not run step hooks; use torch.optim.SGD")
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        with torch.no_grad():
            for group in self.param_groups:
                if group["maximize"] or group["differentiable"] or group["fused"]:
                    raise ValueError("EagerSGD: maximize, differentiable and fused are not supported")
                if group["momentum"] == 0:
                    self._plain(group)
                    continue
                for p in group["params"]:
                    if p.grad is not None:
                        self._update(p, p.grad, group)
        return loss

    step.hooked = True  # type: ignore[attr-defined]  # keeps Optimizer from wrapping it in its hook scope

    def _plain(self, group: dict[str, Any]) -> None:
        """Without momentum, every tensor of ``group`` in one call of each op: on the CPU
        ``torch._foreach_add_`` runs ``add_`` on each tensor in turn (the same arithmetic as
        :meth:`_update`, one dispatch instead of one per tensor)."""
        params: list[torch.Tensor] = [p for p in group["params"] if p.grad is not None]
        grads: list[torch.Tensor] = [p.grad for p in params if p.grad is not None]
        if not params:
            return
        if any(g.is_sparse for g in grads):
            raise ValueError("EagerSGD: sparse gradients are not supported")
        plain_sgd_update(params, grads, group)

    def _update(self, param: torch.Tensor, grad: torch.Tensor, group: dict[str, Any]) -> None:
        if grad.is_sparse:
            raise ValueError("EagerSGD: sparse gradients are not supported")
        weight_decay, momentum, lr = group["weight_decay"], group["momentum"], group["lr"]
        if weight_decay != 0:
            grad = grad.add(param, alpha=weight_decay)
        if momentum != 0:
            state = self.state[param]
            buf = state.get("momentum_buffer")
            if buf is None:
                buf = state["momentum_buffer"] = grad.detach().clone()
            else:
                buf.mul_(momentum).add_(grad, alpha=1 - group["dampening"])
            grad = grad.add(buf, alpha=momentum) if group["nesterov"] else buf
        param.add_(grad, alpha=-lr)


def plain_sgd_update(params: list[torch.Tensor], grads: list[torch.Tensor], group: dict[str, Any]) -> None:
    """:class:`EagerSGD`'s step without momentum over ``params`` with ``grads`` (weight decay
    ``g + wd·w``, then ``w − lr·g``, each one ``torch._foreach`` call), read from ``group``."""
    if group["weight_decay"] != 0:
        grads = list(torch._foreach_add(grads, params, alpha=group["weight_decay"]))
    torch._foreach_add_(params, grads, alpha=-group["lr"])
