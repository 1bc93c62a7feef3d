"""``fleet.trace_model: arrays`` is refused, in one line, where the fleet's whole-run arrays would
not fit; the estimate bounds what the arrays really hold."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from fedfit.config import parse_config
from fedfit.devices import TraceParams, generate_traces
from fedfit.devices.realistic import catalogue
from fedfit.errors import ConfigError
from fedfit.inputs import TRACE_HORIZON_S, check_arrays_fit, fleet_profiles, fleet_traces

ARRAYS = ("free_memory_bytes", "battery_fraction", "charging", "temperature_c", "link", "bandwidth_bps", "online",
          "cpu_utilisation")


def _held(step_s: float) -> list[int]:
    tiers = catalogue("realistic")
    profiles = [tiers[name] for name in sorted(tiers)]
    traces = generate_traces(profiles, list(range(len(profiles))), seed=3, params=TraceParams(step_s=step_s))
    return [sum(getattr(t, k).nbytes for k in ARRAYS if getattr(t, k) is not None) for t in traces]


@pytest.mark.parametrize("step_s", [60.0, 3600.0])
def test_the_estimate_bounds_every_tiers_arrays_and_is_tight_for_the_fullest(step_s: float) -> None:
    fullest = max(_held(step_s))
    with pytest.raises(ConfigError):  # refused below twice what the fullest device holds: estimate >= it
        check_arrays_fit(1, step_s, 2 * fullest - 2)
    check_arrays_fit(1, step_s, 2 * fullest)  # and accepted at twice it: the estimate is that exactly
    steps = -(-int(TRACE_HORIZON_S) // int(step_s))
    assert len(generate_traces([catalogue("realistic")["midrange_phone"]], [0], seed=1,
                               params=TraceParams(step_s=step_s))[0].online) == steps


def test_a_fleet_that_does_not_fit_is_one_line_naming_the_setting() -> None:
    with pytest.raises(ConfigError) as err:
        check_arrays_fit(1_000_000, 60.0, 24 * 2**30)
    message = str(err.value)
    assert "\n" not in message and message.startswith("fleet.trace_model: arrays")
    assert "1000000 devices" in message and "use lazy or auto" in message
    check_arrays_fit(1_000, 60.0, 24 * 2**30)  # 140 MiB fits


def _config(model: str) -> Any:
    return parse_config({
        "name": "guard", "seed": 5, "data": {"dataset": "synthetic"}, "model": {"name": "logreg"},
        "fleet": {"tiers": {"midrange_phone": 40}, "trace_model": model},
        "orchestration": {"rounds": 1, "clients_per_round": 2},
        "output": {"plots": False, "progress": False},
    })


def test_the_run_checks_the_memory_available_now(monkeypatch: pytest.MonkeyPatch) -> None:
    import psutil
    monkeypatch.setattr(psutil, "virtual_memory", lambda: SimpleNamespace(available=8 * 2**20))
    config = _config("arrays")
    with pytest.raises(ConfigError, match="40 devices"):
        fleet_traces(config, fleet_profiles(config))
    lazy = _config("lazy")  # lazy state holds no arrays: nothing to check
    assert len(fleet_traces(lazy, fleet_profiles(lazy))) == 40
