"""Planners write a :class:`~fedfit.types.TrainPlan` for each invited device.

The baseline planner gives every device the same fixed batch, as synchronous FedAvg does; the
memory-, battery- and network-aware policies plug in behind the same ``plan`` call.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from fedfit.types import DeviceProfile, DeviceState, Params, TaskResult, TrainPlan


class Planner(Protocol):
    """Decides what one device does in one task."""

    def plan(self, device_id: int, round_: int, profile: DeviceProfile, state: DeviceState) -> TrainPlan:
        """The plan for ``device_id`` at ``round_`` given its profile and last reported state."""
        ...


class RoundObserver(Protocol):
    """Told of every aggregation (DYNAMITE's planner re-estimates and re-plans from it)."""

    def observe(self, version: int, params: Params, results: Sequence[TaskResult], now_s: float) -> None:
        """Model ``version`` is ``params``, folded from ``results``, at virtual time ``now_s``."""
        ...


@dataclass(frozen=True, slots=True)
class FixedPlanner:
    """Every device trains the same batch, epochs and learning rate (the FedAvg baseline)."""

    batch_size: int
    local_epochs: int = 1
    lr: float = 0.05
    max_steps: int | None = None
    deadline_s: float | None = None

    def plan(self, device_id: int, round_: int, profile: DeviceProfile, state: DeviceState) -> TrainPlan:
        return TrainPlan(device_id=device_id, round=round_, micro_batch=self.batch_size,
                         local_epochs=self.local_epochs, max_steps=self.max_steps, lr=self.lr,
                         deadline_s=self.deadline_s)
