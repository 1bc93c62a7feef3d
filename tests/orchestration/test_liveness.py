"""Liveness: FedBuff with fewer able devices than its buffer still makes versions, failed
devices back off exponentially, and a run with no progress stops with one line saying why."""

from __future__ import annotations

import pytest

from fedfit.aggregation import AggregationRule, weighting
from fedfit.errors import RunStopped
from fedfit.orchestration.asynchronous import AsyncConfig, AsyncOrchestrator, AsyncState
from fedfit.orchestration.liveness import Liveness
from fedfit.orchestration.sync import SyncConfig, SyncOrchestrator, SyncState
from fedfit.policy import FixedPlanner
from tests.orchestration.fakes import FakeFleet, scalar
from tests.orchestration.test_asynchronous import _cohort


def _async(fleet: FakeFleet, k: int, liveness: Liveness = Liveness()) -> AsyncOrchestrator:
    config = AsyncConfig(aggregations=10, buffer_size=k, retry_after_s=60.0, backoff_cap_s=3600.0,
                         liveness=liveness)
    return AsyncOrchestrator(fleet=fleet, cohort=_cohort(len(fleet.durations)),
                             rule=AggregationRule(weighting=weighting("uniform")),
                             evaluator=lambda p: (0.0, 0.0), config=config, seed=0)


def test_fedbuff_applies_what_it_has_when_fewer_devices_can_deliver_than_its_buffer() -> None:
    # K = 3 but only d0 and d1 can train; d2 and d3 run out of memory at t = 3 and 4.
    fleet = FakeFleet(durations=[1.0, 2.0, 3.0, 4.0], deltas=[1.0, 2.0, 0.0, 0.0], failing=frozenset({2, 3}))

    outcomes = [o for o, _ in _async(fleet, k=3).run(AsyncState(scalar(0.0)), aggregations=2)]

    # v1 at t=4: once d3 failed nothing is in flight and nobody may be invited (d0 and d1 trained
    # from v0, d2 and d3 back off for 60 s): the buffer is applied with 2 updates, mean(1, 2).
    # v2 at t=6: d0 and d1 from v1 (x = 2.5, 3.5) while d2 and d3 still back off.
    assert [o.report.virtual_time_s for o in outcomes] == [4.0, 6.0]
    assert [o.params["w"].item() for o in outcomes] == pytest.approx([1.5, 3.0])
    assert outcomes[0].report.failures_by_cause == {"out_of_memory": 2}


def test_a_buffer_larger_than_the_fleet_still_makes_versions() -> None:
    fleet = FakeFleet(durations=[1.0, 2.0, 3.0], deltas=[3.0, 3.0, 3.0])

    outcomes = [o for o, _ in _async(fleet, k=10).run(AsyncState(scalar(0.0)), aggregations=3)]

    assert [sum(o.report.participants_by_tier.values()) for o in outcomes] == [3, 3, 3]
    assert [o.params["w"].item() for o in outcomes] == pytest.approx([3.0, 6.0, 9.0])


def test_a_device_that_keeps_failing_waits_twice_as_long_each_time() -> None:
    # d0 makes an event every second; d1 fails 3 s after each dispatch.
    fleet = FakeFleet(durations=[1.0, 3.0], deltas=[1.0, 0.0], failing=frozenset({1}))

    list(_async(fleet, k=1).run(AsyncState(scalar(0.0)), aggregations=300))

    starts = [t for t, d, _ in fleet.dispatched if d == 1]
    waits = [b - (a + 3.0) for a, b in zip(starts, starts[1:])]
    # re-invited at the first event at or after its back-off ends: 60, 120 s (events are 1 s apart)
    assert len(waits) == 2
    assert waits[0] == pytest.approx(60.0, abs=1.0) and waits[1] == pytest.approx(120.0, abs=1.0)


def test_async_run_where_every_task_fails_stops_naming_the_cause() -> None:
    fleet = FakeFleet(durations=[2.0, 5.0], deltas=[0.0, 0.0], failing=frozenset({0, 1}))
    orch = _async(fleet, k=2, liveness=Liveness(stall_timeout_s=1000.0))

    with pytest.raises(RunStopped, match=r"no progress for 10\d\d virtual s .* after 0 rounds; "
                                         r"failures since: out_of_memory \d+") as stop:
        list(orch.run(AsyncState(scalar(0.0))))

    unfinished = stop.value.unfinished
    assert unfinished is not None and unfinished.virtual_time_s >= 1000.0
    # back-off 60, 120, 240, 480 s: each device is tried 5 times in the first 1000 s (not 1000/60)
    assert unfinished.invited_by_tier == {"test": 10}
    assert len(stop.value.results) == 10


def test_async_wall_time_bound_stops_the_run() -> None:
    fleet = FakeFleet(durations=[1.0], deltas=[1.0], failing=frozenset({0}))
    orch = _async(fleet, k=1, liveness=Liveness(stall_timeout_s=None, max_wall_s=1e-9))

    with pytest.raises(RunStopped, match="wall-time bound reached"):
        list(orch.run(AsyncState(scalar(0.0))))


def _sync(fleet: FakeFleet, rounds: int, liveness: Liveness) -> SyncOrchestrator:
    config = SyncConfig(rounds=rounds, clients_per_round=2, liveness=liveness)
    return SyncOrchestrator(fleet=fleet, planner=FixedPlanner(batch_size=1), weighting=weighting("uniform"),
                            evaluator=lambda p: (0.0, 0.0), config=config, seed=0)


def test_sync_rounds_that_fold_nothing_stop_the_run_after_the_timeout() -> None:
    # every round ends when the slower device fails at +4 s: rounds end at 4, 8, 12, ...
    fleet = FakeFleet(durations=[2.0, 4.0], deltas=[0.0, 0.0], failing=frozenset({0, 1}))
    seen = []

    with pytest.raises(RunStopped, match=r"no progress for 12 virtual s .* after 3 rounds; "
                                         r"failures since: out_of_memory 6"):
        for outcome in _sync(fleet, 100, Liveness(stall_timeout_s=10.0)).rounds(scalar(0.0)):
            seen.append(outcome.report.virtual_time_s)

    assert seen == [4.0, 8.0, 12.0]  # the check before round 3 sees 12 s without progress


def test_sync_progress_resets_the_stall_clock() -> None:
    fleet = FakeFleet(durations=[2.0, 4.0], deltas=[1.0, 0.0], failing=frozenset({1}))

    states = [s for _, s in _sync(fleet, 10, Liveness(stall_timeout_s=10.0)).run(SyncState(scalar(0.0)))]

    assert len(states) == 10  # d0's update every round is progress
    assert [s.progress_s for s in states[:3]] == [4.0, 8.0, 12.0]
