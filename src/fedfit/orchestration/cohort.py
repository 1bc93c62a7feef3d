"""Inviting a cohort from the registry: readiness of the candidates, a selector's choice, and their plans.

Shared by the synchronous and asynchronous loops. The loops keep a
:class:`~fedfit.devices.Registry`: every device is enrolled with its profile (:func:`enrol`),
reports its state when it checks in (:func:`check_in`: in simulation, when it could be
invited, as its monitor would report it; a network fleet feeds the same registry from its
devices' reports) and has every finished task recorded. The cohort reads only the registry:
the last reported state for readiness, the history (the last update's loss, round and
measured duration) for Oort's feedback. The selector sees only
:class:`~fedfit.policy.readiness.Readiness` values, so any readiness source (the cost-model
prediction here, a batch policy's affordable batch, a network fleet's report) plugs in.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from fedfit.cost.predictor import TaskPredictor
from fedfit.devices.registry import DeviceHistory, Registry
from fedfit.orchestration.contract import Fleet
from fedfit.policy import Planner, Readiness, Selector, readiness
from fedfit.policy.oort import statistical_utility
from fedfit.types import DeviceProfile, DeviceState, TrainPlan


def enrol(fleet: Fleet) -> Registry:
    """A registry with every device of ``fleet`` enrolled by its profile (no state reported yet)."""
    registry = Registry()
    for device in fleet.device_ids():
        registry.add(device, fleet.profile(device))
    return registry


@runtime_checkable
class BatchSnapshots(Protocol):
    """A fleet that reads many devices' states at once (the simulated fleet)."""

    def snapshot_many(self, devices: Sequence[int], at_s: float) -> list[DeviceState]: ...


def check_in(registry: Registry, fleet: Fleet, devices: Iterable[int], now_s: float) -> None:
    """Each of ``devices`` reports its state at virtual time ``now_s`` to ``registry``."""
    if isinstance(fleet, BatchSnapshots):
        ids = list(devices)
        registry.report_states(ids, fleet.snapshot_many(ids, now_s), now_s)
        return
    for device in devices:
        registry.report_state(device, fleet.snapshot(device, now_s), now_s)


def with_history(r: Readiness, history: DeviceHistory) -> Readiness:
    """``r`` with Oort's feedback from the device's last update (unchanged if it never sent one)."""
    last = history.last_update
    if last is None:
        return r
    return dataclasses.replace(r, statistical_utility=statistical_utility(last.samples_processed, last.train_loss),
                               last_round=last.round, measured_duration_s=last.duration_s)


@dataclass(frozen=True)
class Cohort:
    """Plans every candidate, scores readiness, and lets the selector choose.

    Attributes:
        planner: writes each candidate's plan (its batch feeds readiness).
        selector: picks devices from readiness values.
        predictor: predicts task cost and affordable batch.
        batch_readiness: the batch a device reports it can afford now for its plan (the
            plan's sub-model width and memory techniques), from its own batch policy (the dynamic-batching planner: 0 when it
            would decline); ``None``: the predictor's memory-bound batch.
    """

    planner: Planner
    selector: Selector
    predictor: TaskPredictor
    batch_readiness: Callable[[TrainPlan, DeviceProfile, DeviceState], int] | None = None

    def invite(self, registry: Registry, candidates: Sequence[int], size: int, *, round_: int, seed: int,
               draw: int) -> list[TrainPlan]:
        """Plans of up to ``size`` devices chosen from ``candidates``.

        Args:
            registry: profiles, last reported states and histories; a candidate that never
                reported a state is skipped.
            candidates: idle devices that may be invited.
            size: devices wanted.
            round_: model version the plans start from (Oort's current round).
            seed: experiment seed.
            draw: selection counter; with ``seed`` it fixes the draw (the round in sync mode).
        """
        plans: dict[int, TrainPlan] = {}
        ready: list[Readiness] = []
        for device in sorted(candidates):
            state = registry.last_state(device)
            if state is None:
                continue
            profile = registry.profile(device)
            plans[device] = self.planner.plan(device, round_, profile, state)
            ready.append(with_history(self._readiness(plans[device], profile, state), registry.history(device)))
        return [plans[d] for d in self.selector.select(ready, size, seed=seed, draw=draw, version=round_)]

    def _readiness(self, plan: TrainPlan, profile: DeviceProfile, state: DeviceState) -> Readiness:
        r = readiness(plan, profile, state, self.predictor)
        if self.batch_readiness is None:
            return r
        return dataclasses.replace(r, affordable_batch=self.batch_readiness(plan, profile, state))
