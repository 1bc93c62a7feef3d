"""When a config "names no strategy", and auto's decision as config overrides."""

from __future__ import annotations

import dataclasses

import pytest

from fedfit.autoconfig import has_width, names_no_strategy, outlooks, overrides, resolve
from fedfit.cost import MemoryModel, TaskPredictor, measure
from fedfit.devices import TIERS
from fedfit.models import ModelSpec
from fedfit.policy.auto import choose_margin
from fedfit.policy.batching import BatchingRules, decide_batch
from tests.helpers import state
from fedfit.errors import PlanError
from fedfit.config import ExperimentConfig, parse_config, with_overrides
from fedfit.orchestrator_wiring import _selector
from fedfit.policy.auto import TIER_FLOOR, DeviceOutlook, decide
from fedfit.policy.selection import DeferringSelector
from fedfit.policy.stratified import StratifiedSelector, TierFloorSelector
from tests.policy.test_selection_compute_aware import ready


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
    ({"dynamite": {"mode": "heterogeneous"}}, {}, False),
    ({}, {"dynamite.mode": "homogeneous"}, False),
    ({"data": {"stream": {"rate_per_s": 1.0}}}, {}, True),
])
def test_names_no_strategy(raw: dict, sets: dict, expected: bool) -> None:
    assert names_no_strategy(raw, sets) is expected


def test_overrides_are_a_valid_config() -> None:
    # async_advantage 10 keeps it sync: FedBuff (buffer 1) 1.09/s < 10 × sync 0.818/s (m = 2 of 1, 2, 3 s)
    devices = [DeviceOutlook(10**6, 10**5, 1000.0, t, 50) for t in (1.0, 2.0, 3.0)]
    config = with_overrides(ExperimentConfig(), overrides(decide(devices, 2, async_advantage=10.0)))
    assert config.batching.mode == "dynamic" and config.batching.standard_batch == 4
    assert config.orchestration.deadline_s == pytest.approx(1.25 * 2.5)
    assert config.local_work.kind == "budget" and config.selection.kind == "compute_aware"


def test_resolve_leaves_a_config_without_auto_alone() -> None:
    config = parse_config({"data": {"dataset": "digits"}})
    assert resolve(config, [], [], [], lambda w: None, None) == (config, None)  # type: ignore[arg-type]


def _auto_config(base: ExperimentConfig) -> ExperimentConfig:
    devices = [DeviceOutlook(10**6, 10**5, 1000.0, t, 50) for t in (1.0, 2.0, 3.0)]
    return with_overrides(base, overrides(decide(devices, 2, async_advantage=10.0)))


def test_auto_keeps_the_tier_floor_even_when_the_config_turned_it_off() -> None:
    config = _auto_config(parse_config({"selection": {"tier_floor": 0.0}}))
    selector = _selector(config)
    assert config.selection.tier_floor == TIER_FLOOR == 0.25
    assert isinstance(selector, TierFloorSelector) and selector.floor == 0.25
    assert isinstance(selector.inner, DeferringSelector) and isinstance(selector.inner.inner, StratifiedSelector)


def test_auto_invites_a_one_device_tier_at_its_share_and_never_while_offline() -> None:
    selector = _selector(_auto_config(ExperimentConfig()))
    pool = [ready(i, "phone") for i in range(7)] + [ready(7, "watch")]
    offline = pool[:7] + [ready(7, "watch", online=False)]

    seats = [7 in selector.select(pool, 4, seed=1, draw=k, version=0) for k in range(4000)]

    # Floor: 0.25 × 4 = 1 seat over 8 eligible devices, the watch's tier wins it w.p. 1/8; the 3
    # other seats are stratified over the 7 left, the watch's w.p. 3/7: 1/8 + 7/8 · 3/7 = 1/2.
    assert sum(seats) / len(seats) == pytest.approx(0.5, abs=0.04)  # ± 5 σ (σ = 0.5/√4000)
    assert not any(7 in selector.select(offline, 4, seed=1, draw=k, version=0) for k in range(200))


def test_a_model_without_a_width_argument_has_no_width_to_scale() -> None:
    class _Cost:
        def __init__(self, n: int) -> None:
            self.num_params = n

    def no_width(w: float) -> _Cost:
        if w != 1.0:
            raise PlanError("model m: takes no 'width' argument")
        return _Cost(100)

    assert has_width(lambda w: _Cost(int(100 * w * w))) is True  # type: ignore[arg-type,return-value]
    assert has_width(lambda w: _Cost(100)) is False  # type: ignore[arg-type,return-value]
    assert has_width(no_width) is False  # type: ignore[arg-type]


def test_the_margin_is_judged_on_the_memory_a_device_reports_free() -> None:
    # A sensor whose profile budget leaves 20% headroom over one sample but which reports only 5%
    # more than one sample free (other apps hold the rest): rule 1's margin must come from the
    # reported 5%, or the batch policy (which applies it to the reported memory) defers it forever.
    cost = measure(ModelSpec("logreg", (1, 8, 8), 10))
    memory = MemoryModel()
    profile = TIERS["sensor_mcu"]
    need = memory.for_device(profile).peak_bytes(cost, 1)
    profile = dataclasses.replace(profile, training_memory_bytes=int(need * 1.25))
    reported = state(free_memory_bytes=int(need * 1.05))
    predictor = TaskPredictor(lambda w: cost, memory, [100])
    outlook = outlooks([profile], [reported], predictor, 4, 0.1)[0]
    assert outlook.budget_bytes == int(need * 1.05) and outlook.fits_one
    margin = choose_margin([outlook])
    assert margin == pytest.approx(0.9 * (1 - need / int(need * 1.05)), rel=0.01)  # ≈ 0.043, not 0.18
    assert not decide_batch(profile, reported, cost, memory, BatchingRules(memory_margin=margin)).declined
    # the margin from the profile's 20% would have declined it
    assert decide_batch(profile, reported, cost, memory, BatchingRules(memory_margin=0.9 * 0.2)).declined


def test_an_async_decision_runs_the_same_updates() -> None:
    # two fast devices beside ten slow ones, k = 6: FedBuff with buffer 3, 6 / 3 = 2 versions a round
    devices = [DeviceOutlook(10**6, 10**5, 1000.0, t, 50) for t in [0.1] * 2 + [50.0] * 10]
    d = decide(devices, 6)
    assert d.mode == "async" and d.buffer_size == 3
    assert overrides(d, rounds=12)["orchestration.rounds"] == 24
    assert "orchestration.rounds" not in overrides(d)
    sync = decide(devices, 6, async_advantage=1000.0)
    assert overrides(sync, rounds=12)["orchestration.rounds"] == 12
