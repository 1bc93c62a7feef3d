"""Local optimisers: SGD (with momentum) or Adam, built over any list of tensors.

Techniques that train a subset of the model pass only that subset's tensors, so optimiser
state (momentum, Adam's two moments) is allocated for those alone.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import torch

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


def make_optimizer(tensors: Iterable[torch.Tensor], lr: float, config: OptimizerConfig) -> torch.optim.Optimizer:
    """The configured optimiser over ``tensors`` (only these get state)."""
    params = list(tensors)
    if config.kind == "adam":
        return torch.optim.Adam(params, lr=lr, betas=config.betas, weight_decay=config.weight_decay)
    return torch.optim.SGD(params, lr=lr, momentum=config.momentum, weight_decay=config.weight_decay)
