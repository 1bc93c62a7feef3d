"""A look within the grid step of the last check-in is answered from it, equal to a fresh state."""

from __future__ import annotations

import pytest

from fedfit.devices import lazy_batch, lazy_traces
from fedfit.devices.catalogue import TIERS
from fedfit.devices.lazy_trace import LazyTrace
from fedfit.devices.lazy_traces import LazyTraces
from fedfit.devices.trace_params import TraceParams


def test_looks_in_the_check_in_step_reuse_it_and_later_looks_are_computed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lazy_traces, "BATCH_FROM", 1)
    monkeypatch.setattr(lazy_traces, "ONLINE_BATCH_FROM", 1)  # every look not answered is asked here
    asked: list[int] = []
    real = lazy_batch.online_at
    monkeypatch.setattr(lazy_batch, "online_at", lambda p, *a: asked.append(len(p)) or real(p, *a))
    profiles = [TIERS[n] for n in ("flagship_phone", "older_phone", "smartwatch")] * 20
    params = TraceParams()
    traces = LazyTraces(profiles, params, seed=4)
    devices = list(range(0, 60, 2))
    traces.states_at(devices, 7230.0)  # grid step 7200-7260
    # 30 checked-in devices looked at within the step, 12 later, 10 never checked in
    looks = [(d, 7259.0) for d in devices] + [(d, 7260.0 + 60.0 * d) for d in devices[:12]] + [
        (d, 7240.0) for d in range(1, 20, 2)]

    got = traces.online_many([d for d, _ in looks], [t for _, t in looks])

    assert got == [LazyTrace(profiles[d], params, 4, d).state_at(t).online for d, t in looks]
    assert sum(asked) == 22  # only the later looks and the devices never checked in
