"""Async invitations with sampled candidates: each invitation checks in a few eligible devices,
whatever the fleet's size, instead of scanning every idle device."""

from __future__ import annotations

from fedfit.aggregation import AggregationRule, weighting
from fedfit.cost import MemoryModel, TaskPredictor, measure
from fedfit.models import ModelSpec
from fedfit.orchestration.asynchronous import AsyncConfig, AsyncOrchestrator
from fedfit.orchestration.cohort import Cohort
from fedfit.policy import FixedPlanner, UniformSelector
from tests.orchestration.fakes import FakeFleet, scalar


class CountingFleet(FakeFleet):
    """A FakeFleet counting state snapshots and busy checks."""

    def __init__(self, devices: int, failing: frozenset[int] = frozenset()) -> None:
        super().__init__(durations=[1.0 + (d % 7) / 7 for d in range(devices)], deltas=[1.0] * devices,
                         failing=failing)
        self.snapshots = self.busy_checks = 0

    def snapshot(self, device_id: int, at_s: float):  # type: ignore[no-untyped-def]
        self.snapshots += 1
        return super().snapshot(device_id, at_s)

    def busy(self, device_id: int) -> bool:
        self.busy_checks += 1
        return super().busy(device_id)


def _run(devices: int, candidates: int | None, failing: frozenset[int] = frozenset()) -> CountingFleet:
    fleet = CountingFleet(devices, failing)
    cost = measure(ModelSpec("logreg", (4,), 2))
    cohort = Cohort(FixedPlanner(batch_size=1), UniformSelector(),
                    TaskPredictor(lambda w: cost, MemoryModel(), [1] * devices, 8))
    config = AsyncConfig(aggregations=6, buffer_size=4, concurrency=8, candidates=candidates)
    orch = AsyncOrchestrator(fleet=fleet, cohort=cohort, rule=AggregationRule(weighting=weighting("uniform")),
                             evaluator=lambda p: (0.0, 0.0), config=config, seed=0)
    list(orch.rounds(scalar(0.0)))
    return fleet


def test_each_invitation_checks_in_its_candidates_whatever_the_fleet_size() -> None:
    small, big = _run(500, candidates=5), _run(20_000, candidates=5)

    # 6 versions of 4 updates, 8 in flight: the first invitation asks for 8, every later one
    # for the slot a result freed; each checks in max(5, wanted) devices.
    fills = len(big.dispatched) - 8 + 1
    assert big.snapshots == small.snapshots == 8 + 5 * (fills - 1)
    # busy checks: one count of the fleet when the run starts, then a bounded number per draw
    # (sample_idle's up to 4 tries of 2 * wanted + 8 ids), never a scan per invitation
    assert big.busy_checks - 20_000 <= fills * 4 * (2 * 8 + 8)


def test_without_sampling_every_eligible_device_checks_in() -> None:
    fleet = _run(200, candidates=None)

    assert fleet.snapshots > 200 * 10  # every invitation checks in the ~190 idle devices


def test_sampled_invitations_are_deterministic_and_respect_eligibility() -> None:
    failing = frozenset(range(0, 3000, 3))
    first, second = _run(3000, candidates=6, failing=failing), _run(3000, candidates=6, failing=failing)

    assert first.dispatched == second.dispatched
    seen: dict[tuple[int, int], int] = {}
    for _, device, version in first.dispatched:  # a device that succeeded never restarts from one version
        if device not in failing:
            seen[(device, version)] = seen.get((device, version), 0) + 1
    assert max(seen.values()) == 1
