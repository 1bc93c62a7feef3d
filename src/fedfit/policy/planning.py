"""Planners write a :class:`~fedfit.types.TrainPlan` for each invited device.

The baseline planner gives every device the same fixed batch, as synchronous FedAvg does; the
memory-, battery- and network-aware policies plug in behind the same ``plan`` call.

A round plans every invited device; :func:`plans_of` asks a :class:`BatchPlanner` for them in one
call (the fixed planner writes them without reading any device's profile or state), any other
planner device by device, with the same plans.

>>> fixed = FixedPlanner(batch_size=16, max_steps=4)
>>> def unread(device): raise AssertionError("the fixed planner reads no profile or state")
>>> plans_of(fixed, [3, 1], 2, unread, unread) == [TrainPlan(3, 2, 16, max_steps=4), TrainPlan(1, 2, 16, max_steps=4)]
True
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from fedfit.bulk import build_many
from fedfit.types import DeviceProfile, DeviceState, Params, TaskResult, TrainPlan


class Planner(Protocol):
    """Decides what one device does in one task."""

    def plan(self, device_id: int, round_: int, profile: DeviceProfile, state: DeviceState) -> TrainPlan:
        """The plan for ``device_id`` at ``round_`` given its profile and last reported state."""
        ...


#: A device's profile, or its last reported state, by id (the registry's, read only when needed).
ProfileOf = Callable[[int], DeviceProfile]
StateOf = Callable[[int], DeviceState]


@runtime_checkable
class BatchPlanner(Protocol):
    """A planner that plans many devices at once (what ``plan`` gives each, in order)."""

    def plan_many(self, device_ids: Sequence[int], round_: int, profile_of: ProfileOf,
                  state_of: StateOf) -> list[TrainPlan]:
        """``plan(d, round_, profile_of(d), state_of(d))`` of each of ``device_ids``."""
        ...


def plans_of(planner: Planner, device_ids: Sequence[int], round_: int, profile_of: ProfileOf,
             state_of: StateOf) -> list[TrainPlan]:
    """The plan of each of ``device_ids`` at ``round_``: in one call from a :class:`BatchPlanner`,
    else device by device."""
    if isinstance(planner, BatchPlanner):
        return planner.plan_many(device_ids, round_, profile_of, state_of)
    return [planner.plan(d, round_, profile_of(d), state_of(d)) for d in device_ids]


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

    def plan_many(self, device_ids: Sequence[int], round_: int, profile_of: ProfileOf,
                  state_of: StateOf) -> list[TrainPlan]:
        """``plan`` of each device (no profile or state read: the plan depends on neither),
        built field by field (:func:`fedfit.bulk.build_many`: a round builds one plan per
        invited device; ``tests/policy/test_planning.py`` holds both ways equal)."""
        return build_many(TrainPlan, len(device_ids), {"device_id": device_ids}, {
            "round": round_, "micro_batch": self.batch_size, "local_epochs": self.local_epochs,
            "max_steps": self.max_steps, "lr": self.lr, "deadline_s": self.deadline_s})
