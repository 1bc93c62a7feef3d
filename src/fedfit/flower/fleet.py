"""A heterogeneous fleet inside one Flower simulation: tiers, memory budgets and shared data.

Flower's simulation runs every ``ClientApp`` on one host, so nothing runs out of memory the way
a watch or an old phone would. Here each simulated node stands in for a fedfit tier: node ``i``
gets the catalogue profile ``tiers[i % len(tiers)]`` and, as its memory, that tier's training
budget. A task whose predicted peak (fedfit's memory model, the same arithmetic the simulated
fleet uses) exceeds the budget raises :class:`SimulatedOutOfMemory`, a ``MemoryError``: the
*OOM-equivalent* failure a real device of that tier would hit.

Data come from :func:`fedfit.data.build_federated_data` once per process (Flower ships the
client app to its workers with every message, so it holds the recipe, not the tensors).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from fedfit.cost.memory import MemoryModel
from fedfit.cost.profile import ModelCost
from fedfit.cost.techniques import plan_peak_bytes
from fedfit.data.federated import FederatedData, build_federated_data
from fedfit.devices.catalogue import tier
from fedfit.devices.monitor import Monitor, PsutilMonitor
from fedfit.errors import ConfigError
from fedfit.types import DeviceProfile, DeviceState, Link, Thermal, TrainPlan


class SimulatedOutOfMemory(MemoryError):
    """A task's predicted peak exceeds its simulated device's memory budget."""


@dataclass(frozen=True, slots=True)
class SimulatedTiers:
    """Which fedfit tier each simulated node stands in for (node ``i``: ``names[i % len]``).

    >>> SimulatedTiers(("flagship_phone", "smartwatch")).profile(3).tier
    'smartwatch'
    """

    names: tuple[str, ...]

    def __post_init__(self) -> None:
        if not self.names:
            raise ConfigError("flower tiers: give at least one tier name")
        for name in self.names:
            tier(name)  # an unknown name fails here, naming the known ones

    def profile(self, node: int) -> DeviceProfile:
        """The catalogue profile of node ``node``."""
        return tier(self.names[node % len(self.names)])


@dataclass(frozen=True, slots=True)
class BudgetMonitor:
    """A steady device whose free memory is its budget (mains power, cool, on Wi-Fi).

    The deterministic twin of :class:`~fedfit.devices.monitor.PsutilMonitor` for tests and
    simulations that should not depend on the host's load.
    """

    free_memory_bytes: int

    def snapshot(self, at_s: float) -> DeviceState:
        """The same state at any time."""
        return DeviceState(free_memory_bytes=self.free_memory_bytes, battery_fraction=None, charging=None,
                           temperature_c=None, thermal=Thermal.NOMINAL, link=Link.WIFI,
                           bandwidth_bps=0.0, online=True, cpu_utilisation=None)


def psutil_budget(profile: DeviceProfile) -> Monitor:
    """The host's psutil monitor with free memory capped at the tier's training budget."""
    return PsutilMonitor(training_budget_bytes=profile.training_memory_bytes)


def steady_budget(profile: DeviceProfile) -> Monitor:
    """A :class:`BudgetMonitor` at the tier's training budget (deterministic)."""
    return BudgetMonitor(profile.training_memory_bytes)


def check_fits(plan: TrainPlan, profile: DeviceProfile, cost: ModelCost, memory: MemoryModel,
               free_memory_bytes: int) -> None:
    """Raise :class:`SimulatedOutOfMemory` when ``plan``'s predicted peak exceeds the free memory.

    Args:
        plan: the task (micro-batch and memory techniques set the peak).
        profile: the device (its runtime workspace enters the peak).
        cost: the measured model.
        memory: the memory model.
        free_memory_bytes: what the device's monitor reports free.
    """
    peak = plan_peak_bytes(memory.for_device(profile), cost, plan)
    if peak > free_memory_bytes:
        raise SimulatedOutOfMemory(f"{profile.tier}: micro-batch {plan.micro_batch} needs {peak} B, "
                                   f"budget {free_memory_bytes} B")


@dataclass(frozen=True, slots=True)
class PartitionData:
    """A recipe for the fleet's data, built once per process (see :func:`build_federated_data`).

    Attributes:
        dataset: ``fashion_mnist``, ``digits``, ``synthetic`` or ``vibration``.
        num_devices: devices (simulated nodes) to split over.
        partition: ``iid``, ``dirichlet``, ``shards`` (``natural`` for synthetic).
        seed: data seed.
        max_train_samples: cap on training samples in all; ``None``: all.
        max_test_samples: cap on the global test set; ``None``: all.
    """

    dataset: str
    num_devices: int
    partition: str = "iid"
    seed: int = 0
    max_train_samples: int | None = None
    max_test_samples: int | None = None

    def federated(self) -> FederatedData:
        """The whole federated data set (cached per process)."""
        return _build(self.dataset, self.num_devices, self.partition, self.seed, self.max_train_samples,
                      self.max_test_samples)

    def train(self, node: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Node ``node``'s training data."""
        local = self.federated().train[node % self.num_devices]
        return local.x, local.y

    def test(self) -> tuple[torch.Tensor, torch.Tensor]:
        """The global test set."""
        held = self.federated().global_test
        return held.x, held.y

    def sizes(self) -> Sequence[int]:
        """Training examples per node."""
        return [len(d.y) for d in self.federated().train]


@functools.lru_cache(maxsize=4)
def _build(dataset: str, num_devices: int, partition: str, seed: int, max_train: int | None,
           max_test: int | None) -> FederatedData:
    return build_federated_data(dataset=dataset, num_devices=num_devices, partition=partition, seed=seed,
                                max_train_samples=max_train, max_test_samples=max_test, local_test_fraction=0.0)
