"""When a config "names no strategy", and auto's decision as config overrides."""

from __future__ import annotations

import pytest

from fedfit.autoconfig import names_no_strategy, overrides, resolve
from fedfit.config import ExperimentConfig, parse_config, with_overrides
from fedfit.policy.auto import DeviceOutlook, decide


@pytest.mark.parametrize("raw, sets, expected", [
    ({}, {}, True),
    ({"data": {"dataset": "digits"}, "training": {"lr": 0.1}, "orchestration": {"rounds": 3}}, {}, True),
    ({"training": {"batch_size": 8}}, {}, False),
    ({"batching": {"mode": "fixed"}}, {}, False),
    ({"orchestration": {"deadline_s": 5}}, {}, False),
    ({"aggregation": {"fednova": True}}, {}, False),
    ({"auto": {"enabled": False}}, {}, False),
    ({}, {"orchestration.mode": "async"}, False),
    ({}, {"width": {"mode": "capability"}}, False),
    ({}, {"orchestration.rounds": 4}, True),
])
def test_names_no_strategy(raw: dict, sets: dict, expected: bool) -> None:
    assert names_no_strategy(raw, sets) is expected


def test_overrides_are_a_valid_config() -> None:
    devices = [DeviceOutlook(10**6, 10**5, 1000.0, t, 50) for t in (1.0, 2.0, 3.0)]
    config = with_overrides(ExperimentConfig(), overrides(decide(devices, 2)))
    assert config.batching.mode == "dynamic" and config.batching.standard_batch == 4
    assert config.orchestration.deadline_s == pytest.approx(1.25 * 2.5)
    assert config.local_work.kind == "budget" and config.selection.kind == "compute_aware"


def test_resolve_leaves_a_config_without_auto_alone() -> None:
    config = parse_config({"data": {"dataset": "digits"}})
    assert resolve(config, [], [], [], lambda w: None, None) == (config, None)  # type: ignore[arg-type]
