"""A run's traces built on a thread while its data are read: the same traces, data and errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from fedfit.autorun import resolve
from fedfit.config import parse_config
from fedfit.devices import DeviceTrace
from fedfit.errors import ConfigError
from fedfit.inputs import fleet_profiles, fleet_traces, run_inputs
from fedfit.overlap import started
from tests.helpers import write_fashion_like

ARRAYS = ("free_memory_bytes", "battery_fraction", "charging", "temperature_c", "link", "bandwidth_bps", "online",
          "cpu_utilisation")


def _config(tmp_path: Path, traces: dict[int, str]) -> Any:
    return parse_config({
        "name": "overlap", "seed": 5,
        "data": {"dataset": "fashion_mnist", "path": str(write_fashion_like(tmp_path / "fm", n_train=240)),
                 "partition": {"kind": "iid"}, "local_test_fraction": 0.1},
        "model": {"name": "mlp"},
        "fleet": {"tiers": {"midrange_phone": 5, "vehicle_computer": 3}, "traces": traces},
        "orchestration": {"rounds": 1, "clients_per_round": 2},
        "output": {"plots": False, "progress": False},
    })


def _equal(a: DeviceTrace, b: DeviceTrace) -> bool:
    return all((getattr(a, k) is None and getattr(b, k) is None)
               or np.array_equal(getattr(a, k), getattr(b, k), equal_nan=True) for k in ARRAYS)


def test_started_returns_the_value_and_reraises_the_same_error() -> None:
    error = ConfigError("fleet.traces.9: no such device")

    def fail() -> None:
        raise error

    assert started(sorted, [3, 1, 2]).result() == [1, 2, 3]
    with pytest.raises(ConfigError) as raised:
        started(fail).result()
    assert raised.value is error


def test_traces_from_the_thread_equal_those_built_alone_and_the_data_are_unchanged(tmp_path: Path) -> None:
    csv = tmp_path / "on.csv"
    csv.write_text("t_s,online,temperature_c\n0,true,30\n600,false,45\n")
    config = _config(tmp_path, {1: str(csv), 6: str(csv)})

    inputs = run_inputs(config)
    threaded = resolve(config, inputs).traces
    alone = fleet_traces(config, fleet_profiles(config))
    again = run_inputs(config)

    assert len(threaded) == len(alone) == 8
    assert all(_equal(a, b) for a, b in zip(threaded, alone, strict=True))  # type: ignore[arg-type]
    assert threaded[1].temperature_c[10] == 45.0  # type: ignore[union-attr]  # the CSV's second row at 600 s
    assert all(torch.equal(a.x, b.x) and torch.equal(a.y, b.y) for a, b in zip(inputs.data.train, again.data.train))


def test_a_bad_trace_is_reported_after_the_data_as_before(tmp_path: Path) -> None:
    config = _config(tmp_path, {0: str(tmp_path / "missing.csv")})

    inputs = run_inputs(config)  # the data are read; the trace thread's error waits for its result
    with pytest.raises(ConfigError, match="missing.csv: file not found"):
        resolve(config, inputs)
