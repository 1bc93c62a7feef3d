"""DYNAMITE from a config: sync and async runs take the planned τ and b_i; streaming trains on buffers."""

from __future__ import annotations

from typing import Any

import pytest

from fedfit.config import ExperimentConfig, parse_config
from fedfit.errors import ConfigError
from fedfit.aggregation.weighting import weighting
from fedfit.experiment import build, built
from fedfit.orchestrator_wiring import weighting_name
from fedfit.policy.dynamite.planner import DynamitePlanner
from fedfit.runner import run
from fedfit.types import Update


def small(**sections: dict[str, Any]) -> ExperimentConfig:
    raw: dict[str, Any] = {
        "name": "dynamite-small", "seed": 1,
        "data": {"dataset": "digits", "partition": {"kind": "dirichlet", "alpha": 1.0},
                 "max_train_samples": 600, "max_test_samples": 100},
        "model": {"name": "mlp"},
        "fleet": {"tiers": {"flagship_phone": 2, "midrange_phone": 2}},
        "training": {"batch_size": 16, "lr": 0.05},
        "orchestration": {"rounds": 3, "clients_per_round": 4},
        "asynchronous": {"buffer_size": 2},
        "dynamite": {"mode": "heterogeneous", "budget_time_s": 60},
        "output": {"plots": False, "progress": False},
    }
    for key, value in sections.items():
        raw[key] = {**raw.get(key, {}), **value}
    return parse_config(raw)


def _check_tasks_follow_the_plan(config: ExperimentConfig) -> DynamitePlanner:
    with built(config) as exp:
        planner = exp.orchestrator.observer
        assert isinstance(planner, DynamitePlanner)
        seen = 0
        for outcome in exp.orchestrator.rounds(exp.initial_params):
            for r in outcome.results:
                if isinstance(r.outcome, Update):
                    assert r.outcome.steps == r.plan.max_steps  # τ local steps, exactly
                    seen += 1
        assert seen > 0
        assert len(planner.history) == planner.observed + 1 - (planner.assignment is None)
        return planner


def test_sync_tasks_take_tau_steps_and_replan_every_round() -> None:
    planner = _check_tasks_follow_the_plan(small())
    assert planner.observed == 3 and planner.estimator.beta is not None


def test_async_tasks_take_tau_steps() -> None:
    planner = _check_tasks_follow_the_plan(small(orchestration={"mode": "async"}))
    assert planner.observed == 3


def test_streaming_devices_train_on_their_buffers() -> None:
    config = small(data={"stream": {"rate_per_s": 1.0, "buffer_size": 20, "initial": 4}})
    with built(config) as exp:
        assert exp.stream is not None
        for outcome in exp.orchestrator.rounds(exp.initial_params):
            for r in outcome.results:
                if isinstance(r.outcome, Update):
                    held = exp.stream.size(r.plan.device_id, r.start_s)
                    assert r.outcome.num_examples == held == min(20, 4 + int(r.start_s))


def test_streaming_metrics_record_buffer_sizes_and_age() -> None:
    result = run(small(data={"stream": {"rate_per_s": 1.0, "buffer_size": 20, "initial": 4}},
                       dynamite={"mode": "off"}, training={"local_epochs": 1}))
    first, last = result.reports[0], result.reports[-1]
    assert set(first.buffer_size_by_tier.values()) == {4.0} and set(first.data_age_s_by_tier.values()) == {0.0}
    assert all(v > 4.0 for v in last.buffer_size_by_tier.values())


def test_same_seed_same_plans() -> None:
    a, b = _check_tasks_follow_the_plan(small()), _check_tasks_follow_the_plan(small())
    assert a.history == b.history


@pytest.mark.parametrize("sections, message", [
    ({"local_work": {"kind": "budget"}}, "dynamite.mode"),
    ({"data": {"stream": {"rate_by_tier": {"no_such_tier": 1.0}}}}, "data.stream.rate_by_tier"),
])
def test_bad_combinations_are_one_line_config_errors(sections: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        build(small(**sections))


def test_auto_with_dynamite_says_auto_chose_the_local_work() -> None:
    # auto's local work (kind: budget) is the one that clashes; the user never wrote local_work
    with pytest.raises(ConfigError, match="auto's choice: set auto.enabled: false"):
        build(small(auto={"enabled": True}))


@pytest.mark.parametrize("stream, message", [
    # a burst period without a size (the default 0) ran as if bursts were off; a size without a period too
    ({"burst_every_s": 5.0}, r"data.stream: burst_size: set it \(≥ 1\) with burst_every_s"),
    ({"burst_size": 8}, "data.stream: burst_every_s: set it with burst_size: 8"),
])
def test_half_a_burst_is_a_one_line_config_error(stream: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message) as err:
        small(data={"stream": {"rate_per_s": 1.0, **stream}})
    assert len(str(err.value).splitlines()) == 1


def test_a_budget_is_required() -> None:
    with pytest.raises(ConfigError, match="budget_time_s"):
        small(dynamite={"budget_time_s": None})


@pytest.mark.parametrize("name, batch", [("fixed32", 32), ("fixed16", 16), ("fixed8", 8), ("fixed4", 4)])
def test_a_fixed_batch_strategy_turns_dynamite_off(name: str, batch: int) -> None:
    # on a DYNAMITE config, compare's fixed8 kept DYNAMITE's per-device batches: the same run as fedavg
    from fedfit.strategies import apply_strategy

    fixed = apply_strategy(small(), name)
    assert (fixed.dynamite.mode, fixed.batching.mode, fixed.training.batch_size) == ("off", "fixed", batch)
    with built(fixed) as exp:
        assert not isinstance(exp.orchestrator.observer, DynamitePlanner)


@pytest.mark.parametrize("example", ["dynamite", "dynamite_stream"])
def test_examples_load_and_every_strategy_applies(example: str) -> None:
    from pathlib import Path

    from fedfit.config import load_config
    from fedfit.strategies import apply_strategy

    config = load_config(Path(__file__).resolve().parents[3] / "examples" / f"{example}.yaml")
    names = ["batch32-epoch1", "dynamic", "dynamite-closed", "dynamite-homogeneous", "dynamite-hetero",
             "dynamite-online", *[f"grid-b{b}-t{t}" for b in (8, 32, 128) for t in (5, 20, 50)]]
    applied = {n: apply_strategy(config, n) for n in names}
    assert applied["batch32-epoch1"].dynamite.mode == "off"
    assert applied["grid-b8-t50"].training.max_steps == 50 and applied["grid-b8-t50"].training.batch_size == 8
    assert applied["dynamite-hetero"].dynamite.adapt is False
    assert (config.data.stream is not None) == (example == "dynamite_stream")


def test_dynamite_aggregates_by_data_share_not_by_samples_processed() -> None:
    # the bound averages by p_i = D_i / D; with b_i per device, samples processed (τ · b_i)
    # would weight a device by the batch DYNAMITE gave it
    on, off = small(), small(dynamite={"mode": "off"})
    assert weighting_name(on) == "examples" and weighting_name(off) == "samples"
    assert weighting_name(small(orchestration={"weighting": "uniform"})) == "uniform"
    update = Update(device_id=0, round=0, params={}, num_examples=100, samples_processed=5000, steps=50,
                    micro_batch=100, accumulation_steps=1, train_loss=0.5)
    assert weighting(weighting_name(on))(update) == 100.0


@pytest.mark.parametrize("calibration, message", [
    ({"prior": 2.0, "high": 1.0}, "dynamite.drift_calibration.*prior"),
    ({"holding": 1.0}, "dynamite.drift_calibration.holding"),
    ({"low": -0.1}, "dynamite.drift_calibration.low"),
    ({"low": 0.1}, "dynamite.drift_calibration.*prior: 0.0 must lie in"),  # the default prior is 0
    ({"low": 5.0, "high": 1.0}, "dynamite.drift_calibration: low: 5.0 is above high: 1.0"),  # not the prior's fault
])
def test_bad_drift_calibration_is_a_one_line_config_error(calibration: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message) as err:
        small(dynamite={"mode": "heterogeneous", "budget_time_s": 60, "drift_calibration": calibration})
    assert len(str(err.value).splitlines()) == 1


def test_the_drift_calibration_section_reaches_the_planner() -> None:
    calibrated = small(dynamite={"mode": "heterogeneous", "budget_time_s": 60,
                                 "drift_calibration": {"prior": 0.5, "low": 0.1, "high": 2.0, "holding": 0.7}})
    plain = small(dynamite={"mode": "heterogeneous", "budget_time_s": 60, "drift_calibration": {"enabled": False}})
    with built(calibrated) as on, built(plain) as off:
        p, q = on.orchestrator.observer, off.orchestrator.observer
    assert isinstance(p, DynamitePlanner) and isinstance(q, DynamitePlanner)
    assert p.calibration is not None and (p.calibration.prior, p.calibration.low, p.calibration.high,
                                          p.calibration.holding) == (0.5, 0.1, 2.0, 0.7)
    assert p.estimates().drift_scale == 0.5 and q.calibration is None and q.estimates().drift_scale == 1.0


def test_the_drift_factor_starts_optimistic_by_default() -> None:
    with built(small(dynamite={"mode": "heterogeneous", "budget_time_s": 60})) as exp:
        p = exp.orchestrator.observer
    assert isinstance(p, DynamitePlanner) and p.calibration is not None
    assert p.calibration.prior == 0.0 and p.estimates().drift_scale == 0.0
