"""A trace's last state read is kept: the same states, consumption applied on top, nothing shared."""

from __future__ import annotations

import dataclasses
import pickle

import pytest

from fedfit.devices.catalogue import tier
from fedfit.devices.traces import DeviceTrace, generate_trace


def _fresh(trace: DeviceTrace) -> DeviceTrace:
    """The same arrays in a new trace object (no state read yet)."""
    return dataclasses.replace(trace)


@pytest.mark.parametrize("name", ["midrange_phone", "vehicle_computer"])
def test_states_read_again_equal_states_read_fresh(name: str) -> None:
    trace = generate_trace(tier(name), seed=3, device_id=2, horizon_s=7200.0)
    times = [0.0, 1.0, 59.9, 60.0, 60.0, 5.0, 7199.0, 7200.0, 3600.5, 3600.5, 130.0, 0.0]

    for t in times:
        again, fresh = trace.state_at(t), _fresh(trace).state_at(t)
        assert again == fresh, t


def test_consumption_is_applied_to_the_kept_state_and_does_not_stick() -> None:
    trace = generate_trace(tier("midrange_phone"), seed=1, device_id=0, horizon_s=3600.0)
    plain = trace.state_at(10.0)
    capacity = tier("midrange_phone").battery_capacity_j
    assert plain.battery_fraction is not None and capacity is not None

    drained = trace.state_at(20.0, consumed_j=0.25 * capacity)

    assert drained.battery_fraction == pytest.approx(max(0.0, plain.battery_fraction - 0.25))
    assert trace.state_at(30.0) == plain == _fresh(trace).state_at(30.0)


def test_a_trace_with_a_kept_state_pickles_and_replaces_without_it() -> None:
    trace = generate_trace(tier("older_phone"), seed=0, device_id=4, horizon_s=600.0)
    first = trace.state_at(0.0)

    copy = pickle.loads(pickle.dumps(trace))

    assert copy.state_at(0.0) == first and copy.state_at(300.0) == trace.state_at(300.0)
    assert dataclasses.replace(trace)._last == []
