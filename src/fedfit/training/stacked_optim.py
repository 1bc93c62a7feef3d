"""The local optimiser over stacked parameters (a leading device axis), with a per-device step mask.

SGD and Adam are elementwise, so ``torch.optim`` stepping a stack of G devices' parameters
does, slice by slice, exactly what it does to each device's parameters alone (the same
implementation, in place, one pass per operation). Adam's step count is shared: devices are
active for a prefix of the steps, so all active devices have taken the same number. A device
not ``active`` in a step keeps its parameters and optimiser state: its slices are saved before
the step and put back after, so a device with fewer steps than the cohort's longest ends
exactly where it would alone. FedProx's proximal gradient μ·(w − w_global) is added to the
gradient before the step, as the trainer does. Under ``vmap`` a linear layer's weight gradient
comes transposed in memory; it is copied into the parameters' layout (a contiguous stack, each
device's slice laid out as its own weight one by one), so the update walks both tensors
contiguously and the next forward pass takes the kernel one by one takes. (Copying the parameters
into the gradients' layout instead saves that copy, but a narrow layer's forward pass then rounds
about twice as much, and the cohort drifts from one-by-one training faster than float32 rounding
of either: bench/RESULTS.md, "Batched executor, bat15b".)

>>> p = {"w": torch.tensor([[1.0], [1.0]])}
>>> opt = StackedOptimizer(p, 0.5, OptimizerConfig())
>>> opt.step({"w": torch.tensor([[2.0], [2.0]])}, active=torch.tensor([True, False]))["w"].flatten().tolist()
[0.0, 1.0]
"""

from __future__ import annotations

import torch

from fedfit.training.optimizers import OptimizerConfig, make_optimizer
from fedfit.types import Params


class StackedOptimizer:
    """The configured optimiser over stacked copies of ``start`` (which it does not modify)."""

    def __init__(self, start: Params, lr: float, config: OptimizerConfig) -> None:
        self.params = {n: t.detach().clone() for n, t in start.items()}
        self._mu = config.proximal_mu
        self._anchor = {n: t.detach() for n, t in start.items()} if self._mu > 0 else {}
        self._lr, self._config = lr, config
        self._opt: torch.optim.Optimizer | None = None

    def step(self, grads: Params, *, active: torch.Tensor) -> Params:
        """Step the ``active`` devices with their ``grads``; returns the (updated) parameters."""
        if self._opt is None:
            self._opt = make_optimizer(self.params.values(), self._lr, self._config)
        for name, p in self.params.items():
            g = grads[name].contiguous()  # the parameters' layout: a contiguous stack
            p.grad = g + self._mu * (p - self._anchor[name]) if self._anchor else g
        idle = (~active).nonzero().flatten()
        saved = self._slices(idle) if len(idle) else []
        self._opt.step()
        for tensor, kept in saved:
            tensor[idle] = kept
        for p in self.params.values():
            p.grad = None
        return self.params

    def _slices(self, devices: torch.Tensor) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """(tensor, copy of its ``devices`` slices) of every parameter and optimiser-state tensor."""
        tensors = list(self.params.values())
        for state in self._opt.state.values() if self._opt is not None else []:
            tensors += [v for v in state.values() if isinstance(v, torch.Tensor) and v.dim() > 0]
        return [(t, t[devices].clone()) for t in tensors]
