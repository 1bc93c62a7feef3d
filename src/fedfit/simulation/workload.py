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
from fedfit.data.stream import DataStream, StreamSpec
from fedfit.models import ModelSpec
from fedfit.security.attacks import AttackSpec, poison_data, poison_update
from fedfit.simulation.threads import pinned
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
    attack: AttackSpec = AttackSpec()
    stream: StreamSpec | None = None
    data: FederatedData | None = None

    def build(self) -> Workload:
        """Build the data (or take the user's, shipped with the recipe) and return the workload."""
        return Workload(self, self.data if self.data is not None else build_federated_data(**dict(self.data_kwargs)))


@dataclass(frozen=True, slots=True)
class TrainTask:
    """One task for an executor: a plan, the parameters it starts from, and the virtual time
    it was dispatched (a streaming device trains on what its buffer holds then)."""

    plan: TrainPlan
    params: Params
    at_s: float = 0.0


class Workload:
    """A recipe made concrete: data in memory and one module per width, reused across tasks."""

    def __init__(self, recipe: WorkloadRecipe, data: FederatedData) -> None:
        self.recipe = recipe
        self.data = data
        self._modules: dict[float, nn.Module] = {}
        self.stream = None if recipe.stream is None else \
            DataStream(recipe.stream, [d.y for d in data.train], data.num_classes)

    def module(self, width: float) -> nn.Module:
        """A module of the model at ``width`` (built once, weights overwritten per task)."""
        if width not in self._modules:
            self._modules[width] = self.recipe.model.build(width)
        return self._modules[width]

    def inputs(self, task: TrainTask) -> tuple[torch.Tensor, torch.Tensor]:
        """The (x, y) a task trains on: the device's data (what its stream buffer holds at
        dispatch, when streaming), poisoned when the device is a simulated attacker."""
        local, attack, plan = self.data.train[task.plan.device_id], self.recipe.attack, task.plan
        if self.stream is not None:
            local = local.subset(list(self.stream.buffer(task.plan.device_id, task.at_s).indices))
        x, y = local.x, local.y
        if attack.attacks(plan.device_id):  # a simulated malicious device (fedfit.security.attacks)
            x, y = poison_data(attack, plan.device_id, plan.round, x, y, self.data.num_classes)
        return x, y

    def delivered(self, task: TrainTask, update: Update) -> Update:
        """The update the device sends: ``update``, poisoned when the device is an attacker."""
        attack = self.recipe.attack
        return poison_update(attack, update, task.params) if attack.attacks(task.plan.device_id) else update

    def run(self, task: TrainTask) -> Update:
        """Train one task on a single intra-op thread (bitwise-reproducible in any process)."""
        x, y = self.inputs(task)
        with pinned(1):  # no set_num_threads call (an OpenMP pool rebuild) when already at one
            update = train(self.module(task.plan.width), task.params, x, y, task.plan, seed=self.recipe.seed,
                           optimizer=self.recipe.optimizer)
            return self.delivered(task, update)
