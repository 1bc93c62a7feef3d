"""SimulatedFleet.next_results: a round's due results at once, equal to reading them one by one."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from fedfit.orchestration.contract import BatchFleet, due_results
from fedfit.simulation.fleet import SimulatedFleet
from fedfit.types import Failure, TaskResult, TrainPlan, Update
from tests.helpers import profile, state
from tests.simulation.test_fleet import _setup

# Device d trains at SPEEDS[d] FLOP/s: the faster, the earlier its result (all else equal).
SPEEDS = (1e9, 4e8, 2e8, 1e8, 5e7, 2.5e7)
OFFLINE, ROUND0 = 1, 3  # device 1 is unreachable (fails at dispatch), device 3 trains round 0's task
FLEETS: list[SimulatedFleet] = []  # the fleet under test, whose queue the spy reads
QUEUED: list[int] = []  # its queue's length at each training


class OneByOne:
    """A fleet seen only through the one-result-at-a-time contract (not a :class:`BatchFleet`)."""

    def __init__(self, fleet: SimulatedFleet) -> None:
        self._fleet = fleet

    def __getattr__(self, name: str) -> Any:
        if name == "next_results":
            raise AttributeError(name)
        return getattr(self._fleet, name)


class Spy:
    """Records the devices whose training results are asked for, in order."""

    def __init__(self, inner: Any, order: list[int]) -> None:
        self.inner, self.order = inner, order

    def submit(self, task: Any) -> Any:
        return _SpyHandle(self.inner.submit(task), task.plan.device_id, self.order)

    def close(self) -> None:
        self.inner.close()


class _SpyHandle:
    def __init__(self, inner: Any, device: int, order: list[int]) -> None:
        self.inner, self.device, self.order = inner, device, order

    def result(self) -> Update:
        self.order.append(self.device)
        QUEUED.append(len(FLEETS[-1]._queue) if FLEETS else -1)
        return self.inner.result()  # type: ignore[no-any-return]

    def cancel(self) -> bool:
        return bool(self.inner.cancel())


def _fleet(order: list[int] | None = None) -> SimulatedFleet:
    states = [state(online=d != OFFLINE, bandwidth_bps=0.0 if d == OFFLINE else 1e7) for d in range(len(SPEEDS))]
    _, _, fleet, _, initial = _setup(len(SPEEDS), states, profiles=[profile(flops_per_s=f) for f in SPEEDS])
    if order is not None:
        fleet._executor = Spy(fleet._executor, order)  # type: ignore[assignment]
    for d in range(len(SPEEDS)):
        fleet.dispatch(TrainPlan(d, 0 if d == ROUND0 else 1, 8, lr=0.1), initial, now_s=2.0)
    return fleet


def _same(a: list[TaskResult], b: list[TaskResult]) -> None:
    assert len(a) == len(b)
    for x, y in zip(a, b, strict=True):
        assert (x.plan, x.tier, x.start_s, x.finish_s, x.cost, x.free_memory_bytes) == \
               (y.plan, y.tier, y.start_s, y.finish_s, y.cost, y.free_memory_bytes)
        if isinstance(x.outcome, Update):
            assert isinstance(y.outcome, Update) and x.outcome.params.keys() == y.outcome.params.keys()
            assert all(x.outcome.params[k].equal(y.outcome.params[k]) for k in x.outcome.params)
            assert dataclasses.replace(x.outcome, params={}) == dataclasses.replace(y.outcome, params={})
        else:
            assert x.outcome == y.outcome


# (until_s, wanted) -> devices returned, worked out from the order the speeds give: 1 (offline at
# dispatch, t=2), then 0, 2 (round 1's first two successes), 3 (round 0's: not counted), 4, 5.
CASES = [((float("inf"), 99), [1, 0, 2, 3, 4, 5]), ((float("inf"), 2), [1, 0, 2]),
         ((float("inf"), 3), [1, 0, 2, 3, 4]), ((float("inf"), 0), []), ((2.0, 99), [1])]


@pytest.mark.parametrize(("until_wanted", "devices"), CASES)
def test_next_results_equal_one_by_one_and_pop_before_training(until_wanted: tuple[float, int],
                                                                devices: list[int]) -> None:
    until, wanted = until_wanted
    trained: list[int] = []
    reference = _fleet()
    batch = _fleet(trained)
    FLEETS[:] = [batch]
    QUEUED.clear()
    assert isinstance(batch, BatchFleet) and not isinstance(OneByOne(reference), BatchFleet)
    got = batch.next_results(until, wanted, 1)
    expected = due_results(OneByOne(reference), until, wanted, 1)  # type: ignore[arg-type]
    assert [r.plan.device_id for r in got] == devices
    _same(got, expected)
    assert isinstance(got[0].outcome, Failure) if got else True
    assert trained == [d for d in devices if d != OFFLINE]  # trained in the order popped
    assert QUEUED == [len(SPEEDS) - len(devices)] * len(trained)  # every due result popped first
    assert [batch.busy(d) for d in range(len(SPEEDS))] == [reference.busy(d) for d in range(len(SPEEDS))]
    assert batch.peek_time() == reference.peek_time()
    _same(due_results(batch, float("inf"), 99, 1), due_results(OneByOne(reference), float("inf"), 99, 1))  # type: ignore[arg-type]


def test_a_restored_queue_pops_the_same() -> None:
    fleet, other = _fleet(), _fleet()
    other.restore(fleet.state())
    _same(other.next_results(float("inf"), 2, 1), fleet.next_results(float("inf"), 2, 1))
    _same(other.next_results(float("inf"), 9, 1), fleet.next_results(float("inf"), 9, 1))
    assert other.next_results(float("inf"), 9, 1) == []
