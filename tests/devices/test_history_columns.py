"""The registry's columnar histories against a reference that keeps one frozen value per device.

The reference is the registry's former bookkeeping, written out here: each recorded result
builds a new :class:`DeviceHistory` from the previous one. A random sequence of every kind of
record (single results, a round's results together, with a device repeated or not, folds,
batch suggestions and reports) must leave the same histories, streaks, entries and restored
registry as the reference.
"""

from __future__ import annotations

import dataclasses
import random

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from fedfit.devices import DeviceHistory, Registry, UpdateRecord
from fedfit.devices.catalogue import tier
from fedfit.types import Failure, FailureCause, TaskCost, TaskResult, TrainPlan, Update

_CAUSES = [FailureCause.OFFLINE, FailureCause.BATTERY, FailureCause.DEADLINE, FailureCause.OUT_OF_MEMORY]


def _counted(h: DeviceHistory, cause: str | None, duration_s: float, round_: int,
             last_batch: tuple[int, int] | None = None, last_update: UpdateRecord | None = None) -> DeviceHistory:
    failures = h.failures_by_cause
    if cause is not None:
        failures = {**failures, cause: failures.get(cause, 0) + 1}
    return DeviceHistory(
        tasks=h.tasks + 1, completions=h.completions + (cause is None), failures_by_cause=failures,
        last_duration_s=duration_s, last_round=round_ if h.last_round is None else max(h.last_round, round_),
        failure_streak=0 if cause is None else h.failure_streak + 1, last_cause=cause,
        suggested_batch=h.suggested_batch, last_batch=last_batch or h.last_batch,
        last_update=last_update or h.last_update, folded=h.folded)


class _Reference:
    """One frozen history per device, replaced on every record."""

    def __init__(self, devices: int) -> None:
        self.h = {d: DeviceHistory() for d in range(devices)}

    def task(self, r: TaskResult) -> None:
        d, duration = r.plan.device_id, r.finish_s - r.start_s
        if isinstance(r.outcome, Failure):
            self.h[d] = _counted(self.h[d], r.outcome.cause.value, duration, r.plan.round)
        else:
            u = r.outcome
            self.h[d] = _counted(self.h[d], None, duration, r.plan.round, (u.micro_batch, u.accumulation_steps),
                                 UpdateRecord(u.round, duration, u.samples_processed, u.train_loss))


def _result(rng: random.Random, device: int) -> TaskResult:
    round_, start = rng.randrange(20), rng.uniform(0, 1000)
    finish = start + rng.uniform(0, 300)
    outcome: Update | Failure
    if rng.random() < 0.6:
        outcome = Update(device, max(0, round_ - rng.randrange(2)), {"w": torch.zeros(1)}, num_examples=30,
                         samples_processed=rng.randrange(1, 10**6), steps=3, micro_batch=rng.randrange(1, 64),
                         accumulation_steps=rng.randrange(1, 4), train_loss=rng.random())
    else:
        outcome = Failure(device, round_, rng.choice(_CAUSES), "test")
    return TaskResult(plan=TrainPlan(device_id=device, round=round_, micro_batch=8), tier="older_phone",
                      start_s=start, finish_s=finish, outcome=outcome, cost=TaskCost(0.0, 0.0, 0.0, 0.0, 0, 0, 0, 0.0),
                      free_memory_bytes=0)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_columnar_histories_equal_one_value_per_result(seed: int) -> None:
    rng, devices = random.Random(seed), 40
    registry, reference = Registry(), _Reference(devices)
    for d in range(devices):
        registry.add(d, tier("older_phone"))
    for _ in range(400):
        kind, d = rng.random(), rng.randrange(devices)
        if kind < 0.3:
            results = [_result(rng, rng.randrange(devices)) for _ in range(rng.randrange(1, 30))]  # repeats likely
            if rng.random() < 0.5:
                results = list({r.plan.device_id: r for r in results}.values())  # each device once
            registry.record_tasks(results)
            for r in results:
                reference.task(r)
        elif kind < 0.5:
            r = _result(rng, d)
            registry.record_task(r)
            reference.task(r)
        elif kind < 0.65:
            cause = None if rng.random() < 0.3 else rng.choice(_CAUSES)
            duration, round_ = rng.uniform(0, 50), rng.randrange(20)
            registry.record_result(d, ok=cause is None, cause=cause, duration_s=duration, round=round_)
            reference.h[d] = _counted(reference.h[d], None if cause is None else cause.value, duration, round_)
        elif kind < 0.8:
            version = rng.randrange(30)
            assert registry.record_fold(d, version) == (*reference.h[d].folded, version)
            reference.h[d] = dataclasses.replace(reference.h[d], folded=(*reference.h[d].folded, version))
        elif kind < 0.9:
            batch = rng.randrange(1, 64)
            registry.suggest_batch(d, batch)
            reference.h[d] = dataclasses.replace(reference.h[d], suggested_batch=batch)
        else:
            batch, steps = rng.randrange(1, 64), rng.randrange(1, 5)
            registry.record_batch(d, batch, steps)
            reference.h[d] = dataclasses.replace(reference.h[d], last_batch=(batch, steps))
    assert [registry.history(d) for d in range(devices)] == [reference.h[d] for d in range(devices)]
    assert [registry.failure_streak(d) for d in range(devices)] == [reference.h[d].failure_streak for d in range(devices)]
    entries = registry.entries()
    assert [e.history for e in entries] == [reference.h[d] for d in range(devices)]
    restored = Registry()
    restored.restore(entries)
    assert restored.entries() == entries


def test_a_failure_count_read_is_a_copy() -> None:
    registry = Registry()
    registry.add(0, tier("smartwatch"))
    registry.record_result(0, ok=False, cause="battery", duration_s=1.0, round=0)
    registry.history(0).failures_by_cause["battery"] = 99
    registry.entries()[0].history.failures_by_cause["battery"] = 99
    assert registry.history(0).failures_by_cause == {"battery": 1}


def test_a_bad_batch_in_a_round_records_nothing() -> None:
    registry, rng = Registry(), random.Random(0)
    for d in range(12):
        registry.add(d, tier("older_phone"))
    results = [_result(rng, d) for d in range(12)]
    good = next(r for r in results if isinstance(r.outcome, Update))
    bad = dataclasses.replace(good, outcome=dataclasses.replace(good.outcome, micro_batch=0))
    with pytest.raises(ValueError, match="micro_batch"):
        registry.record_tasks([*results[:5], bad])
    assert all(registry.history(d) == DeviceHistory() for d in range(12))


@pytest.mark.parametrize("seed", [3, 4])
def test_a_round_written_as_arrays_equals_one_result_at_a_time(seed: int) -> None:
    """Rounds of many distinct devices (the fancy-indexed path) against the same results recorded
    one by one (:meth:`Registry.record_task`, the scalar path) and the reference."""
    rng, devices = random.Random(seed), 300
    batched, scalar, reference = Registry(), Registry(), _Reference(devices)
    for d in range(devices):
        batched.add(d, tier("older_phone"))
        scalar.add(d, tier("older_phone"))
    for round_ in range(12):
        cohort = rng.sample(range(devices), rng.randrange(8, 120))
        results = [_result(rng, d) for d in cohort]
        batched.record_tasks(results)
        for r in results:
            scalar.record_task(r)
            reference.task(r)
        folded = [d for d in cohort if rng.random() < 0.5]
        got = batched.record_folds(folded, round_)
        assert got == [scalar.record_fold(d, round_) for d in folded]
        for d in folded:
            reference.h[d] = dataclasses.replace(reference.h[d], folded=(*reference.h[d].folded, round_))
    assert batched.entries() == scalar.entries()
    assert [batched.history(d) for d in range(devices)] == [reference.h[d] for d in range(devices)]


def test_folds_of_a_repeated_device_accumulate_in_order() -> None:
    registry = Registry()
    for d in range(3):
        registry.add(d, tier("smartwatch"))
    assert registry.record_folds([2, 0, 2], 5) == [(5,), (5,), (5, 5)]
    assert registry.record_folds([], 6) == []
    with pytest.raises(KeyError):
        registry.record_folds([7], 6)


@given(st.lists(st.integers(min_value=0, max_value=50), max_size=40))
def test_a_repeated_row_is_found_exactly_when_a_row_occurs_twice(rows: list[int]) -> None:
    from fedfit.devices.history import _repeats

    assert _repeats(np.array(rows, dtype=np.int64)) == (len(set(rows)) < len(rows))
