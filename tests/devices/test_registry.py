"""Registry bookkeeping."""

import pytest

from fedfit.devices.catalogue import tier
from fedfit.devices.registry import DeviceHistory, Registry
from fedfit.types import DeviceState, FailureCause, Link, Thermal


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
