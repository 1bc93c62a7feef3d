"""What a worker needs to train any device's task: the model spec, the data, the optimiser.

A :class:`WorkloadRecipe` is small and picklable; each executor process turns it into a
:class:`Workload` once (building the federated data deterministically from the recipe) and
then trains tasks against it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from fedfit.data import FederatedData, build_federated_data
from fedfit.models import ModelSpec
from fedfit.training import OptimizerConfig, train
from fedfit.types import Params, TrainPlan, Update


@dataclass(frozen=True)
class WorkloadRecipe:
    """Picklable instructions to rebuild a workload in another process (``data``: the user's
    own data, which no builder can regenerate; ``None`` for the built-in data sets)."""

    model: ModelSpec
    data_kwargs: tuple[tuple[str, Any], ...]
    seed: int
    optimizer: OptimizerConfig = OptimizerConfig()
    data: FederatedData | None = None

    def build(self) -> Workload:
        """Build the data (or take the user's, shipped with the recipe) and return the workload."""
        return Workload(self, self.data if self.data is not None else build_federated_data(**dict(self.data_kwargs)))


@dataclass(frozen=True)
class TrainTask:
    """One task for an executor: a plan and the parameters it starts from."""

    plan: TrainPlan
    params: Params


class Workload:
    """A recipe made concrete: data in memory and one module per width, reused across tasks."""

    def __init__(self, recipe: WorkloadRecipe, data: FederatedData) -> None:
        self.recipe = recipe
        self.data = data
        self._modules: dict[float, nn.Module] = {}

    def module(self, width: float) -> nn.Module:
        """A module of the model at ``width`` (built once, weights overwritten per task)."""
        if width not in self._modules:
            self._modules[width] = self.recipe.model.build(width)
        return self._modules[width]

    def run(self, task: TrainTask) -> Update:
        """Train one task on a single intra-op thread (bitwise-reproducible in any process)."""
        local = self.data.train[task.plan.device_id]
        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            return train(self.module(task.plan.width), task.params, local.x, local.y, task.plan,
                         seed=self.recipe.seed, optimizer=self.recipe.optimizer)
        finally:
            torch.set_num_threads(threads)
