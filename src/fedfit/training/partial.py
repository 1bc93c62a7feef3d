"""Partial-parameter training: each device trains a random subset of the weights' elements
(federated dropout of parameters, cf. Caldas et al. 2018, "Expanding the Reach of Federated
Learning by Reducing Client Resource Requirements"; Wen et al. 2022, "Federated Dropout").

The active elements of each tensor live in a compact 1-D tensor, and only those compact tensors
are handed to the optimiser: SGD momentum and Adam's moments exist for active elements alone.
During backward a post-accumulate hook gathers each dense gradient into its compact tensor and
frees it at once, so at most one dense gradient exists at a time. After each step the compact
values are scattered back into the weights. Inactive elements keep their master values; the
update's masks say which coordinates it holds, and the masked average folds in only those.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from fedfit.training.optimizers import OptimizerConfig, make_optimizer
from fedfit.training.program import Program, loss_step, state_of
from fedfit.types import Params


def mask_generator(mask_seed: int, device_id: int, round_: int) -> torch.Generator:
    """The mask RNG of one task: the server re-derives the mask from (seed, device, round)."""
    state = np.random.SeedSequence([mask_seed, device_id, round_, 0x5EED]).generate_state(1, dtype=np.uint64)
    return torch.Generator().manual_seed(int(state[0]) & 0x7FFF_FFFF_FFFF_FFFF)


def random_masks(params: Params, keep_fraction: float, gen: torch.Generator) -> dict[str, torch.Tensor]:
    """Each float tensor's elements kept independently with probability ``keep_fraction``."""
    return {name: torch.rand(t.shape, generator=gen) < keep_fraction
            for name, t in params.items() if t.is_floating_point()}


class CompactParameters:
    """Active elements of a model's parameters as compact tensors, with gradient gathering."""

    def __init__(self, model: nn.Module, masks: dict[str, torch.Tensor]) -> None:
        self.model, self.masks = model, masks
        self.compact: dict[str, torch.Tensor] = {}
        self._hooks = []
        for name, p in model.named_parameters():
            mask = masks[name]
            p.requires_grad_(bool(mask.any()))
            if not mask.any():
                continue
            self.compact[name] = p.detach()[mask].clone().requires_grad_(True)
            self._hooks.append(p.register_post_accumulate_grad_hook(self._gather_hook(name)))

    def _gather_hook(self, name: str):  # type: ignore[no-untyped-def]
        mask, target = self.masks[name], self.compact[name]

        def gather(p: torch.Tensor) -> None:
            assert p.grad is not None
            g = p.grad[mask]
            target.grad = g if target.grad is None else target.grad.add_(g)
            p.grad = None  # the dense gradient is freed as soon as it is gathered

        return gather

    @torch.no_grad()
    def scatter(self) -> None:
        """Write the compact values back into the dense weights."""
        for name, p in self.model.named_parameters():
            if name in self.compact:
                p[self.masks[name]] = self.compact[name]

    def close(self) -> None:
        """Remove the gradient hooks."""
        for h in self._hooks:
            h.remove()


def compact_program(model: nn.Module, masks: dict[str, torch.Tensor], lr: float,
                    optimizer: OptimizerConfig) -> Program:
    """Train only the ``masks``' elements of ``model``; the update carries the masks."""
    compact = CompactParameters(model, masks)
    opt = make_optimizer(compact.compact.values(), lr, optimizer)

    def finish() -> tuple[Params, dict[str, torch.Tensor] | None]:
        compact.close()
        return state_of(model), dict(masks)

    return Program(loss_step(model), (opt,), finish, after_step=compact.scatter)
