"""Registry bookkeeping."""

import pickle

import pytest
import torch

from fedfit.devices.catalogue import tier
from fedfit.devices import DeviceHistory, Registry, UpdateRecord
from fedfit.types import (
    DeviceState, Failure, FailureCause, Link, TaskCost, TaskResult, Thermal, TrainPlan, Update,
)


def _state(free: int) -> DeviceState:
    return DeviceState(
        free_memory_bytes=free,
        battery_fraction=0.5,
        charging=False,
        temperature_c=30.0,
        thermal=Thermal.NOMINAL,
        link=Link.WIFI,
        bandwidth_bps=1e7,
        online=True,
    )


@pytest.fixture
def registry() -> Registry:
    registry = Registry()
    registry.add(3, tier("older_phone"))
    registry.add(1, tier("flagship_phone"))
    registry.add(2, tier("older_phone"))
    return registry


def test_ids_and_tiers_keep_enrolment_order(registry: Registry) -> None:
    assert registry.ids() == [3, 1, 2]
    assert registry.ids_by_tier() == {"older_phone": [3, 2], "flagship_phone": [1]}
    assert registry.tiers() == ["older_phone", "flagship_phone"]
    assert len(registry) == 3 and 2 in registry and 7 not in registry


def test_profile_is_the_one_enrolled(registry: Registry) -> None:
    assert registry.profile(1) == tier("flagship_phone")


def test_duplicate_enrolment_is_rejected(registry: Registry) -> None:
    with pytest.raises(ValueError, match="already registered"):
        registry.add(1, tier("tablet"))


def test_unknown_device_raises_key_error(registry: Registry) -> None:
    with pytest.raises(KeyError, match="unknown device 9"):
        registry.profile(9)


def test_new_device_has_no_state_and_empty_history(registry: Registry) -> None:
    assert registry.last_state(1) is None and registry.last_report_s(1) is None
    assert registry.history(1) == DeviceHistory()


def test_latest_report_wins_and_older_reports_are_ignored(registry: Registry) -> None:
    assert registry.report_state(1, _state(100), at_s=10.0)
    assert registry.report_state(1, _state(200), at_s=20.0)

    stored = registry.report_state(1, _state(300), at_s=15.0)

    assert not stored
    assert registry.last_state(1) == _state(200) and registry.last_report_s(1) == 20.0


def test_results_are_counted_by_outcome_and_cause(registry: Registry) -> None:
    registry.record_result(2, ok=True, cause=None, duration_s=30.0, round=1)
    registry.record_result(2, ok=False, cause="out_of_memory", duration_s=5.0, round=3)
    registry.record_result(2, ok=False, cause=FailureCause.OUT_OF_MEMORY, duration_s=6.0, round=2)
    registry.record_result(2, ok=False, cause="deadline", duration_s=60.0, round=4)

    history = registry.history(2)

    assert (history.tasks, history.completions) == (4, 1)
    assert history.failures_by_cause == {"out_of_memory": 2, "deadline": 1}
    assert all(type(key) is str for key in history.failures_by_cause)
    assert (history.last_duration_s, history.last_round) == (60.0, 4)


def test_history_is_a_copy(registry: Registry) -> None:
    registry.record_result(2, ok=False, cause="offline", duration_s=1.0, round=0)

    registry.history(2).failures_by_cause["offline"] = 99

    assert registry.history(2).failures_by_cause == {"offline": 1}


@pytest.mark.parametrize(("ok", "cause"), [(True, "deadline"), (False, None)])
def test_outcome_and_cause_must_agree(registry: Registry, ok: bool, cause: str | None) -> None:
    with pytest.raises(ValueError):
        registry.record_result(1, ok=ok, cause=cause, duration_s=1.0, round=0)


def _result(ok: bool, start_s: float, finish_s: float) -> TaskResult:
    plan = TrainPlan(device_id=2, round=4, micro_batch=8)
    cost = TaskCost(0.0, 0.0, 0.0, 0.0, 0, 0, 0, 0.0)
    outcome = (Update(2, 4, {"w": torch.zeros(1)}, num_examples=30, samples_processed=60, steps=8, micro_batch=4,
                      accumulation_steps=2, train_loss=0.25) if ok
               else Failure(2, 4, FailureCause.OFFLINE, "went offline mid-task"))
    return TaskResult(plan=plan, tier="older_phone", start_s=start_s, finish_s=finish_s, outcome=outcome, cost=cost,
                      free_memory_bytes=0)


def test_record_task_counts_the_outcome_and_keeps_what_the_update_reported(registry: Registry) -> None:
    registry.record_task(_result(ok=True, start_s=10.0, finish_s=35.0))
    registry.record_task(_result(ok=False, start_s=40.0, finish_s=41.5))

    history = registry.history(2)

    assert (history.tasks, history.completions, history.failures_by_cause) == (2, 1, {"offline": 1})
    assert (history.last_duration_s, history.last_round) == (1.5, 4)  # the latest result, a failure
    assert history.last_batch == (4, 2)  # what the device used, not the plan's 8
    assert history.last_update == UpdateRecord(round=4, duration_s=25.0, samples_processed=60, train_loss=0.25)


def test_reported_state_raises_until_the_device_reports(registry: Registry) -> None:
    with pytest.raises(LookupError, match="device 1 has not reported"):
        registry.reported_state(1)
    registry.report_state(1, _state(100), at_s=3.0)
    assert registry.reported_state(1) == _state(100)


def test_a_pickled_registry_is_an_identical_copy(registry: Registry) -> None:
    registry.report_state(2, _state(100), at_s=3.0)
    registry.record_task(_result(ok=True, start_s=10.0, finish_s=35.0))

    copy = pickle.loads(pickle.dumps(registry))
    registry.record_task(_result(ok=False, start_s=40.0, finish_s=41.5))  # the copy does not follow

    assert copy.ids() == [3, 1, 2] and copy.profile(2) == tier("older_phone")
    assert copy.last_state(2) == _state(100) and copy.last_report_s(2) == 3.0
    assert copy.history(2).tasks == 1 and copy.history(2).last_update is not None
