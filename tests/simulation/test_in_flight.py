"""The fleet's queued tasks: checkpoint round trips, the failed task's cost, the event queue's batch push."""

from __future__ import annotations

import dataclasses
import random

import pytest
import torch

from fedfit.simulation.clock import EventQueue
from fedfit.simulation.in_flight import (
    InFlight, failed_cost, failed_costs, in_flight_of, payload_bytes, payload_sizes, pending_of, queued, result_of,
)
from fedfit.simulation.workload import TrainTask
from fedfit.types import DeviceState, Failure, FailureCause, Link, TaskCost, Thermal, TrainPlan, Update

COST = TaskCost(1.0, 2.0, 3.0, 4.0, 5, 6, 7, 8.0, 9.0)
PLAN = TrainPlan(4, 2, 16)
UPDATE = Update(4, 2, {}, 10, 10, 1, 16, 1, 0.5)


class _Handle:
    def result(self) -> Update:
        return UPDATE

    def cancel(self) -> bool:
        return True


def test_success_round_trips_through_a_checkpoint_with_a_placeholder() -> None:
    task = TrainTask(PLAN, {}, 10.0)
    item = InFlight(PLAN, "phone", 10.0, 16.0, None, COST, 2**30, task, _Handle())
    pending = pending_of(16.0, item)
    assert pending.at_s == 16.0 and pending.task is task
    assert pending.result.outcome == Failure(4, 2, FailureCause.REJECTED, "pending")
    handle = _Handle()
    assert in_flight_of(pending, handle) == item._replace(handle=handle)
    result = result_of(item, UPDATE)
    assert (result.plan, result.tier, result.start_s, result.finish_s, result.outcome, result.cost,
            result.free_memory_bytes) == (PLAN, "phone", 10.0, 16.0, UPDATE, COST, 2**30)


def test_failure_round_trips_and_keeps_its_cause() -> None:
    failure = Failure(4, 2, FailureCause.BATTERY, "battery at reserve")
    item = InFlight(PLAN, "phone", 10.0, 12.5, failure, COST, 2**30, None, None)
    pending = pending_of(12.5, item)
    assert pending.result.outcome is failure and pending.task is None
    assert in_flight_of(pending, None) == item
    assert result_of(item, None).outcome is failure


def test_failed_cost_is_the_cost_with_what_was_spent_and_sent() -> None:
    # every field set: a field added to TaskCost must be carried by failed_cost too
    assert {f.name for f in dataclasses.fields(TaskCost)} == {
        "download_s", "compute_s", "upload_s", "energy_j", "peak_memory_bytes", "bytes_down", "bytes_up", "flops",
        "edge_compute_s"}
    assert failed_cost(COST, 1.5, 0) == dataclasses.replace(COST, energy_j=1.5, bytes_down=0, bytes_up=0)
    assert failed_cost(COST, 2.5, 6) == TaskCost(1.0, 2.0, 3.0, 2.5, 5, 6, 0, 8.0, 9.0)


def test_payload_sizes_size_each_distinct_set_of_tensors() -> None:
    shared = {"w": torch.zeros(3, 4), "b": torch.zeros(3)}
    other = {"w": torch.zeros(2, dtype=torch.float64)}
    assert payload_bytes(shared) == 60
    assert payload_sizes([shared, other, shared]) == [60, 16, 60]
    assert payload_sizes([shared, shared, other, other, dict(shared), shared]) == [60, 60, 16, 16, 60, 60]
    assert payload_sizes([]) == []


def test_push_many_pops_as_pushes_one_by_one() -> None:
    rng = random.Random(5)
    for before in (0, 3, 200):  # into an empty, a short and a long queue
        one, many = EventQueue[int](), EventQueue[int]()
        first = [float(rng.randrange(20)) for _ in range(before)]
        for i, t in enumerate(first):
            one.push(t, i)
            many.push(t, i)
        times = [float(rng.randrange(20)) for _ in range(40)]  # ties: insertion order decides
        for i, t in enumerate(times):
            one.push(t, 1000 + i)
        many.push_many(times, [1000 + i for i in range(len(times))])
        one.push(5.0, -1)
        many.push(5.0, -1)
        assert [one.pop() for _ in range(len(one))] == [many.pop() for _ in range(len(many))]


def test_pop_due_takes_only_events_due() -> None:
    queue = EventQueue[str]()
    queue.push_many([3.0, 1.0, 2.0], ["c", "a", "b"])
    assert queue.pop_due(0.5) is None
    assert [queue.pop_due(2.0), queue.pop_due(2.0), queue.pop_due(2.0)] == ["a", "b", None]
    assert queue.pop_due(float("inf")) == "c" and queue.pop_due(float("inf")) is None


def test_failed_costs_together_equal_failed_cost_one_by_one() -> None:
    rng = random.Random(11)
    costs = [TaskCost(rng.random(), rng.random(), rng.random(), rng.random(), rng.randrange(1 << 40),
                      rng.randrange(1 << 30), rng.randrange(1 << 30), rng.random(), rng.random()) for _ in range(300)]
    now = [rng.uniform(0, 50) for _ in costs]
    endings = []
    for cost, start in zip(costs, now):
        at = start + rng.choice([0.0, rng.uniform(0, 9)])  # some fail at once (nothing downloaded)
        failure = None if rng.random() < 0.4 else Failure(1, 0, FailureCause.OFFLINE)
        endings.append((at, failure, rng.random()))
    expected = [failed_cost(c, e[2], c.bytes_down if e[0] > t else 0)
                for c, e, t in zip(costs, endings, now) if e[1] is not None]
    assert failed_costs(costs, endings, now) == expected
    assert failed_costs([], [], []) == []


def _one_by_one_queue(plans, tiers, states, costs, params, now_s, endings, submit):  # type: ignore[no-untyped-def]
    """The fleet's queueing loop before ``queued``: item by item, each success submitted in turn."""
    lost, items = iter(failed_costs(costs, endings, now_s)), []
    for plan, tier, state, cost, param, start_s, (finish_s, failure, _) in zip(
            plans, tiers, states, costs, params, now_s, endings):
        if failure is None:
            task = TrainTask(plan, param, start_s)
            items.append(InFlight(plan, tier, start_s, finish_s, None, cost, state.free_memory_bytes, task, submit(task)))
        else:
            items.append(InFlight(plan, tier, start_s, finish_s, failure, next(lost), state.free_memory_bytes, None, None))
    return items


@pytest.mark.parametrize("seed", range(6))
def test_queued_together_equals_the_item_by_item_queue(seed: int) -> None:
    rng = random.Random(seed)
    n = rng.choice([0, 1, 2, 40, 400])
    plans = [TrainPlan(rng.randrange(1000), rng.randrange(5), 16) for _ in range(n)]
    tiers = [rng.choice(["watch", "phone"]) for _ in range(n)]
    states = [DeviceState(free_memory_bytes=rng.randrange(1 << 32), battery_fraction=None, charging=None,
                          temperature_c=25.0, thermal=Thermal.NOMINAL, link=Link.WIFI, bandwidth_bps=1e6,
                          online=True) for _ in range(n)]
    costs = [TaskCost(rng.random(), rng.random(), rng.random(), rng.random(), rng.randrange(1 << 40),
                      rng.randrange(1 << 30), rng.randrange(1 << 30), rng.random(), rng.random()) for _ in range(n)]
    params = [{"w": torch.full((2,), float(i))} for i in range(n)]
    now = [rng.uniform(0, 50) for _ in range(n)]
    endings = [(t + rng.choice([0.0, rng.uniform(0, 9)]), None if rng.random() < 0.6 else
                Failure(p.device_id, p.round, rng.choice(list(FailureCause))), rng.random()) for p, t in zip(plans, now)]
    submitted: list[list[TrainTask]] = [[], []]

    def recorder(k: int):  # type: ignore[no-untyped-def]
        def submit(task: TrainTask) -> tuple[int, int]:
            submitted[k].append(task)
            return (k, len(submitted[k]))  # a handle naming its place in the submission order
        return submit

    together = queued(plans, tiers, states, costs, params, now, endings, recorder(0))
    expected = _one_by_one_queue(plans, tiers, states, costs, params, now, endings, recorder(1))
    assert submitted[0] == submitted[1]
    assert [type(item) for item in together] == [InFlight] * n
    assert [item[:-1] for item in together] == [item[:-1] for item in expected]
    assert [item.handle and item.handle[1] for item in together] == [item.handle and item.handle[1] for item in expected]


def test_popping_due_pops_only_the_items_reached() -> None:
    queue = EventQueue[str]()
    queue.push_many([4.0, 1.0, 3.0, 2.0], ["d", "a", "c", "b"])
    taken = []
    for item in queue.popping_due(3.5):
        taken.append(item)
        if item == "b":
            break
    assert taken == ["a", "b"] and len(queue) == 2
    assert list(queue.popping_due(3.5)) == ["c"] and queue.pop() == (4.0, "d")
