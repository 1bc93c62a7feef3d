"""Mid-task offline checks asked for many tasks at once equal the task-by-task checks."""

from __future__ import annotations

import functools
import random

import pytest

from fedfit.cost import MemoryModel, measure
from fedfit.devices import lazy_traces
from fedfit.devices.catalogue import TIERS
from fedfit.devices.lazy_traces import LazyTraces
from fedfit.devices.trace_params import TraceParams
from fedfit.models import ModelSpec
from fedfit.policy import FixedPlanner
from fedfit.simulation.fleet import SimulatedFleet
from fedfit.simulation.online_checks import offline_during_many
from fedfit.simulation.workload import TrainTask
from fedfit.types import TaskResult, Update


def _one_by_one(online, device: int, start: float, end: float, step: float) -> float | None:  # type: ignore[no-untyped-def]
    """The reference: look every ``step`` after the start while before the end, then at the end."""
    t = start + step
    while t < end:
        if not online(device, t):
            return t
        t += step
    return None if online(device, end) else end


def test_batched_looks_equal_one_by_one_looks() -> None:
    rng = random.Random(4)
    down = {(d, k) for d in range(40) for k in range(30) if rng.random() < 0.08}

    def online(device: int, t: float) -> bool:
        return (device, int(t // 17)) not in down

    tasks = [(d, rng.uniform(0, 100), 0.0) for d in range(40)]
    tasks = [(d, s, s + rng.choice([0.5, 59.0, 60.0, 61.0, 250.0, 400.0])) for d, s, _ in tasks]
    asked: list[int] = []

    def many(devices: list[int], times: list[float]) -> list[bool]:
        asked.append(len(devices))
        return [online(d, t) for d, t in zip(devices, times)]

    got = offline_during_many(many, tasks, step_s=60.0)

    assert got == [_one_by_one(online, d, s, e, 60.0) for d, s, e in tasks]
    assert asked[0] == 40 and len(asked) == 7  # one call per look: the 400 s tasks need 7


class _Trained:
    def __init__(self, task: TrainTask) -> None:
        self.task = task

    def result(self) -> Update:
        plan = self.task.plan
        return Update(plan.device_id, plan.round, {}, 1, 1, 1, plan.micro_batch, 1, 0.5)

    def cancel(self) -> bool:
        return True


class _Executor:
    def submit(self, task: TrainTask) -> _Trained:
        return _Trained(task)

    def close(self) -> None:
        pass


def _fleet() -> SimulatedFleet:
    profiles = [TIERS[n] for n in ("flagship_phone", "older_phone", "smartwatch")] * 100
    spec = ModelSpec("mlp", (784,), 10)
    return SimulatedFleet(profiles=profiles, traces=LazyTraces(profiles, TraceParams(), seed=3),
                          num_examples=[400 * (1 + (d * 37) % 300) for d in range(len(profiles))], costs=functools.partial(measure, spec),
                          memory=MemoryModel(), executor=_Executor())


def _drain(fleet: SimulatedFleet) -> list[TaskResult]:
    results = []
    while (result := fleet.next_result()) is not None:
        results.append(result)
    return results


def test_a_round_dispatched_together_ends_as_dispatched_one_by_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lazy_traces, "BATCH_FROM", 2)  # batch every group of this small fleet
    monkeypatch.setattr(lazy_traces, "ONLINE_BATCH_FROM", 2)
    planner = FixedPlanner(batch_size=8, local_epochs=10)  # tasks of seconds to ~1.5 h: many looks
    params = {"w": __import__("torch").zeros(64, 10)}
    devices = list(range(0, 300, 2))
    together, alone = _fleet(), _fleet()
    now = 4 * 3600.0

    for d, state in zip(devices, together.snapshot_many(devices, now)):
        together.dispatch(planner.plan(d, 0, together.profile(d), state), params, now)
    for d in devices:  # every read finishes the dispatch before it: the task-by-task path
        alone.dispatch(planner.plan(d, 0, alone.profile(d), alone.snapshot(d, now)), params, now)
        assert alone.peek_time() is not None

    assert [alone.energy_used_j(d) for d in devices] == [together.energy_used_j(d) for d in devices]
    results = _drain(together)
    assert results == _drain(alone)
    details = {getattr(r.outcome, "detail", "update") for r in results}
    assert {"went offline mid-task", "update", "unreachable at dispatch"} <= details  # every path taken
