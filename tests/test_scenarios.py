"""Each dynamic-batching scenario of seed 000 runs (few rounds) and shows its seed paragraph."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from fedfit.config import ExperimentConfig, load_config, with_overrides
from fedfit.experiment import built
from fedfit.strategies import apply_strategy
from fedfit.types import BatchRule, Failure, FailureCause, TaskResult
from tests.helpers import write_fashion_like

ROOT = Path(__file__).resolve().parents[1]


def _results(config: ExperimentConfig) -> list[TaskResult]:
    out: list[TaskResult] = []
    with built(config) as exp:
        params = exp.initial_params
        for outcome in exp.orchestrator.rounds(params):
            out.extend(outcome.results)
            params = outcome.params
    return out


def _example(name: str, monkeypatch: pytest.MonkeyPatch, **overrides: Any) -> ExperimentConfig:
    monkeypatch.chdir(ROOT)  # CSV trace paths are relative to the repository root
    return with_overrides(load_config(ROOT / "examples" / f"{name}.yaml"), {"output.progress": False, **overrides})


def _causes(results: list[TaskResult]) -> set[FailureCause]:
    return {r.outcome.cause for r in results if isinstance(r.outcome, Failure)}


@pytest.mark.slow
def test_photo_app_dynamic_settles_per_tier_and_never_ooms(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write_fashion_like(tmp_path / "fm", n_train=600, n_test=100)
    base = _example("photo_app", monkeypatch, **{"data.path": str(path), "data.max_train_samples": 600,
                                                 "orchestration.rounds": 3})
    fixed, dynamic = _results(apply_strategy(base, "fixed32")), _results(apply_strategy(base, "dynamic"))
    assert FailureCause.OUT_OF_MEMORY in _causes(fixed)
    assert FailureCause.OUT_OF_MEMORY not in _causes(dynamic)
    micro: dict[str, list[int]] = defaultdict(list)
    for r in dynamic:
        if r.ok:
            micro[r.tier].append(r.plan.micro_batch)
    # no margin beyond the model's measured error (0 for the CNN): at most what the whole budget
    # affords, (budget − 1,997,572 B fixed) // 165,780 B per sample: 24 (5926 KiB), 14 (4265 KiB)
    assert max(micro["flagship_phone"]) == 32 and max(micro["midrange_phone"]) <= 24
    assert all(1 <= m <= 14 for m in micro["older_phone"])


@pytest.mark.slow
def test_industrial_sensors_train_tiny_batches_with_accumulation(monkeypatch: pytest.MonkeyPatch) -> None:
    config = _example("industrial_sensors", monkeypatch, **{"orchestration.rounds": 3})
    results = _results(config)
    done = [r for r in results if r.ok]
    assert done and FailureCause.OUT_OF_MEMORY not in _causes(results)
    for r in done:
        assert 1 <= r.plan.micro_batch <= 4 and r.plan.effective_batch >= 8
        assert r.cost.peak_memory_bytes <= r.free_memory_bytes <= 384 * 1024
    assert _causes(_results(apply_strategy(config, "fixed32"))) >= {FailureCause.OUT_OF_MEMORY}


@pytest.mark.slow
def test_delivery_fleet_batches_follow_the_link(monkeypatch: pytest.MonkeyPatch) -> None:
    results = [r for r in _results(_example("delivery_fleet", monkeypatch, **{"orchestration.rounds": 3})) if r.ok]
    road = [r for r in results if r.plan.device_id in (0, 1, 2, 3)]
    depot = [r for r in results if r.plan.device_id >= 5]
    assert road and depot
    assert all(r.plan.micro_batch == 16 and r.plan.bound_by is BatchRule.CONNECTIVITY for r in road)
    assert all(r.plan.micro_batch == 64 and r.plan.local_epochs == 3 for r in depot)
    for r in depot:  # one richer update: three passes over the local data
        assert r.outcome.samples_processed == 3 * r.outcome.num_examples  # type: ignore[union-attr]
    for r in road:  # half the local work, in batches of 16
        assert r.outcome.samples_processed <= r.outcome.num_examples / 2 + 16  # type: ignore[union-attr]


@pytest.mark.slow
def test_smartwatch_battery_and_heat_rules(monkeypatch: pytest.MonkeyPatch) -> None:
    results = _results(_example("smartwatch_health", monkeypatch, **{"orchestration.rounds": 14}))
    draining = [r for r in results if r.plan.device_id == 0 and r.ok]
    heating = [r for r in results if r.plan.device_id == 1]
    assert {r.plan.micro_batch for r in draining} >= {1, 4, 8}
    assert all(r.plan.accumulation_steps == 4 for r in draining if r.plan.micro_batch == 1)
    paused = [r for r in heating if isinstance(r.outcome, Failure) and r.outcome.cause is FailureCause.DECLINED]
    assert paused and all(r.outcome.detail.startswith("thermal: hot") for r in paused)  # type: ignore[union-attr]
