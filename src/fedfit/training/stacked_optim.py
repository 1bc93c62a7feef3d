"""SGD and Adam over stacked parameters (a leading device axis), with a per-device step mask.

The same arithmetic as ``torch.optim.SGD`` (momentum without dampening, L2 weight decay added to
the gradient) and ``torch.optim.Adam`` (Kingma & Ba 2015, "Adam: A Method for Stochastic
Optimization"; bias-corrected moments, ε = 1e-8), applied to every device's slice at once. A
device not ``active`` in a step keeps its parameters and optimiser state unchanged, so a device
with fewer steps than the cohort's longest ends exactly where it would alone. Devices are active
for a prefix of the steps, so all active devices share Adam's step count ``t``. FedProx's
proximal gradient μ·(w − w_global) is added to the gradient first, as the trainer does.

>>> p = {"w": torch.tensor([[1.0], [1.0]])}
>>> opt = StackedOptimizer(p, 0.5, OptimizerConfig())
>>> opt.step(p, {"w": torch.tensor([[2.0], [2.0]])}, active=torch.tensor([True, False]))["w"].flatten().tolist()
[0.0, 1.0]
"""

from __future__ import annotations

import torch

from fedfit.training.optimizers import OptimizerConfig
from fedfit.types import Params

#: Adam's ε (``torch.optim.Adam``'s default, which :func:`fedfit.training.make_optimizer` keeps).
ADAM_EPS = 1e-8


def _per_device(mask: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    """``mask`` (one entry per device) shaped to broadcast over ``like``'s per-device slices."""
    return mask.view(-1, *([1] * (like.dim() - 1)))


class StackedOptimizer:
    """The configured local optimiser over stacked parameters (state: one slot per device)."""

    def __init__(self, start: Params, lr: float, config: OptimizerConfig) -> None:
        self.lr, self.config = lr, config
        self._anchor = {n: t.clone() for n, t in start.items()} if config.proximal_mu > 0 else {}
        self._first = {n: torch.zeros_like(t) for n, t in start.items()} if config.slots >= 1 else {}
        self._second = {n: torch.zeros_like(t) for n, t in start.items()} if config.slots >= 2 else {}
        self._t = 0

    def step(self, params: Params, grads: Params, *, active: torch.Tensor) -> Params:
        """The parameters after one step of the ``active`` devices (a new dict)."""
        self._t += 1
        out: Params = {}
        for name, p in params.items():
            g, keep = grads[name], _per_device(active, p)
            if self._anchor:
                g = g + self.config.proximal_mu * (p - self._anchor[name])
            if self.config.weight_decay > 0:
                g = g + self.config.weight_decay * p
            change = self._adam(name, g, keep) if self.config.kind == "adam" else self._sgd(name, g, keep)
            out[name] = torch.where(keep, p - change, p)
        return out

    def _sgd(self, name: str, g: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
        if self._first:  # the buffer starts at 0, so the first step's buffer is the gradient
            buf = self.config.momentum * self._first[name] + g
            self._first[name] = torch.where(keep, buf, self._first[name])
            g = buf
        return self.lr * g

    def _adam(self, name: str, g: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
        beta1, beta2 = self.config.betas
        m = self._first[name].lerp(g, 1 - beta1)
        v = self._second[name] * beta2 + (1 - beta2) * g * g
        self._first[name] = torch.where(keep, m, self._first[name])
        self._second[name] = torch.where(keep, v, self._second[name])
        denom = v.sqrt() / (1 - beta2 ** self._t) ** 0.5 + ADAM_EPS
        return (self.lr / (1 - beta1 ** self._t)) * m / denom
