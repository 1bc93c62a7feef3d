"""Inviting from the registry: reported states, history as Oort's feedback, model version vs draw."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import pytest

from fedfit.aggregation import AggregationRule
from fedfit.cost import MemoryModel, TaskPredictor, measure
from fedfit.devices.registry import Registry
from fedfit.models import ModelSpec
from fedfit.orchestration.asynchronous import AsyncConfig, AsyncOrchestrator, AsyncState
from fedfit.orchestration.cohort import Cohort, check_in, enrol
from fedfit.policy import DeferringSelector, FixedPlanner, OortSelector, Readiness, UniformSelector
from fedfit.policy.oort import oort_utility
from fedfit.types import TaskCost, TaskResult, TrainPlan, Update
from tests.helpers import profile, state
from tests.orchestration.fakes import FakeFleet, scalar

COST = measure(ModelSpec("logreg", (4,), 2))


@dataclass
class SpySelector:
    """Picks the lowest ids and remembers what it was asked."""

    calls: list[tuple[int, int, list[Readiness]]] = field(default_factory=list)

    def select(self, ready: Sequence[Readiness], size: int, *, seed: int, draw: int, version: int) -> list[int]:
        self.calls.append((draw, version, list(ready)))
        return sorted(r.device_id for r in ready)[:size]


def _cohort(selector: object, n: int) -> Cohort:
    predictor = TaskPredictor(lambda w: COST, MemoryModel(), [1] * n, 8)
    return Cohort(FixedPlanner(batch_size=1), selector, predictor)  # type: ignore[arg-type]


def _registry(n: int) -> Registry:
    registry = Registry()
    for d in range(n):
        registry.add(d, profile())
    return registry


def _update(device: int, round_: int, samples: int, loss: float, start_s: float, finish_s: float) -> TaskResult:
    update = Update(device, round_, scalar(0.0), samples, samples, 1, 1, 1, loss)
    return TaskResult(TrainPlan(device_id=device, round=round_, micro_batch=1), "test", start_s, finish_s, update,
                      TaskCost(0.0, 0.0, 0.0, 0.0, 0, 0, 0, 0.0), 0)


def test_invite_reads_the_last_reported_state_and_skips_devices_that_never_reported() -> None:
    registry = _registry(3)
    registry.report_state(0, state(online=False), at_s=1.0)
    registry.report_state(1, state(), at_s=1.0)

    plans = _cohort(DeferringSelector(UniformSelector()), 3).invite(registry, [0, 1, 2], 3, round_=0, seed=0, draw=0)

    assert [p.device_id for p in plans] == [1]  # 0 reported offline, 2 never reported


def test_check_in_reports_the_fleet_snapshot_of_each_device() -> None:
    fleet = FakeFleet(durations=[1.0, 2.0], deltas=[0.0, 0.0])
    registry = enrol(fleet)

    check_in(registry, fleet, [1], now_s=7.0)

    assert registry.ids() == [0, 1] and registry.last_state(0) is None
    assert registry.last_state(1) == fleet.snapshot(1, 7.0) and registry.last_report_s(1) == 7.0


def test_readiness_carries_the_last_update_from_the_registry_history() -> None:
    registry, spy = _registry(2), SpySelector()
    for d in (0, 1):
        registry.report_state(d, state(), at_s=0.0)
    registry.record_task(_update(1, round_=2, samples=40, loss=0.5, start_s=3.0, finish_s=10.0))

    _cohort(spy, 2).invite(registry, [0, 1], 1, round_=3, seed=0, draw=9)

    never, trained = spy.calls[0][2]
    assert never.statistical_utility is None and never.last_round is None and never.measured_duration_s is None
    assert (trained.statistical_utility, trained.last_round, trained.measured_duration_s) == (20.0, 2, 7.0)


def test_oort_counts_rounds_by_model_version_while_the_draw_seeds_the_choice() -> None:
    # A: |B|·loss = 1.0, last update from round 1; B: 1.2, from round 3. At model version R = 3:
    # U_A = 1 + sqrt(0.1·ln 4 / 1) = 1.37233, U_B = 1.2 + sqrt(0.1·ln 4 / 3) = 1.41497 → B.
    # Were R the draw counter (1000): U_A = 1 + sqrt(0.1·ln 1001) = 1.83119 > U_B = 1.67989.
    registry = _registry(2)
    for d in (0, 1):
        registry.report_state(d, state(), at_s=0.0)
    registry.record_task(_update(0, round_=1, samples=4, loss=0.25, start_s=0.0, finish_s=1.0))
    registry.record_task(_update(1, round_=3, samples=4, loss=0.3, start_s=0.0, finish_s=1.0))
    oort = OortSelector(exploration=0.0, cutoff=1.0, preferred_duration_s=1e9)

    plans = _cohort(oort, 2).invite(registry, [0, 1], 1, round_=3, seed=0, draw=1000)

    assert [p.device_id for p in plans] == [1]
    ready = Readiness(0, "t", 1, 1, 1.0, None, None, state().thermal, True,
                      statistical_utility=1.0, last_round=1)
    assert oort_utility(ready, 3, 1e9, 2.0) == pytest.approx(1.37233, abs=1e-5)
    assert oort_utility(ready, 1000, 1e9, 2.0) == pytest.approx(1.83119, abs=1e-5)


def test_oort_penalises_by_the_measured_duration_of_the_last_task() -> None:
    ready = Readiness(0, "t", 1, 1, 1.0, None, None, state().thermal, True, statistical_utility=10.0,
                      last_round=1, measured_duration_s=40.0)

    # predicted 1 s is within T = 20 s, but the device took 40 s last time: × (20/40)² = 1/4
    expected = (10.0 + math.sqrt(0.1 * math.log(3) / 1)) / 4
    assert oort_utility(ready, 2, 20.0, 2.0) == pytest.approx(expected)


def test_async_loop_feeds_the_registry_and_gives_the_selector_draw_and_version_apart() -> None:
    # One task in flight, K = 2: two invitations (draws) per model version. d0 and d1 each take
    # 1 s; a device never trains twice from one version, so draws go d0, d1, d0, d1, ...
    fleet, spy = FakeFleet(durations=[1.0, 1.0, 1.0], deltas=[0.0] * 3), SpySelector()
    orch = AsyncOrchestrator(fleet=fleet, cohort=_cohort(spy, 3), rule=AggregationRule(),
                             evaluator=lambda p: (0.0, 0.0), config=AsyncConfig(aggregations=2, buffer_size=2,
                                                                                 concurrency=1), seed=0)

    list(orch.run(AsyncState(scalar(0.0))))

    assert [(draw, version) for draw, version, _ in spy.calls] == [(0, 0), (1, 0), (2, 1), (3, 1)]
    d0_at_draw_2 = spy.calls[2][2][0]  # FakeFleet's update: 1 sample, loss 0.5, from v0, took 1 s
    assert (d0_at_draw_2.statistical_utility, d0_at_draw_2.last_round, d0_at_draw_2.measured_duration_s) == (
        0.5, 0, 1.0)
    assert orch.registry.history(0).tasks == 2 and orch.registry.history(1).tasks == 2
    assert orch.registry.last_report_s(1) == 3.0  # checked in at its last invitation
