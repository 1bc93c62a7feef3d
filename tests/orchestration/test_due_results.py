"""due_results over a fleet without next_results: read one result at a time, the same stopping rule."""

from __future__ import annotations

import pytest

from fedfit.orchestration.contract import BatchFleet, due_results
from fedfit.types import TrainPlan
from tests.orchestration.fakes import FakeFleet, scalar

# Device d finishes DURATIONS[d] after dispatch at t=0; device 1 fails; device 4 trains round 0's task.
DURATIONS = [3.0, 1.0, 2.0, 5.0, 4.0]


def _fleet() -> FakeFleet:
    fleet = FakeFleet(DURATIONS, [0.0] * 5, failing=frozenset({1}))
    for d in range(5):
        fleet.dispatch(TrainPlan(d, 0 if d == 4 else 1, 8, lr=0.1), scalar(0.0), 0.0)
    return fleet


@pytest.mark.parametrize(("until", "wanted", "devices"), [
    (10.0, 9, [1, 2, 0, 4, 3]),  # everything due
    (10.0, 2, [1, 2, 0]),  # the failure does not count: stop at the second success
    (10.0, 3, [1, 2, 0, 4, 3]),  # round 0's update (device 4) does not count either
    (3.5, 9, [1, 2, 0]),  # nothing after until
    (3.0, 9, [1, 2, 0]),  # due at until itself
    (10.0, 0, []),
])
def test_due_results_by_hand(until: float, wanted: int, devices: list[int]) -> None:
    fleet = _fleet()
    assert not isinstance(fleet, BatchFleet)
    got = due_results(fleet, until, wanted, 1)  # type: ignore[arg-type]
    assert [r.plan.device_id for r in got] == devices
    assert [r.finish_s for r in got] == [DURATIONS[d] for d in devices]
    assert [fleet.busy(d) for d in range(5)] == [d not in devices for d in range(5)]
