"""The batched executor with DYNAMITE's σ² probe: probing tasks join the cohort op, and a round
mixing tasks with and without a probe gives what one-by-one training (``Workload.run``) gives."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from fedfit.data import build_federated_data
from fedfit.models import ModelSpec
from fedfit.runner import run
from fedfit.simulation import batched
from fedfit.simulation.batched import BatchedExecutor
from fedfit.simulation.workload import TrainTask, Workload, WorkloadRecipe
from fedfit.types import TrainPlan, Update


def _workload(model: str) -> Workload:
    kwargs = {"dataset": "digits", "num_devices": 8, "partition": "iid", "seed": 5, "max_train_samples": 400}
    data = build_federated_data(**kwargs)
    return Workload(WorkloadRecipe(ModelSpec(model, data.input_shape, data.num_classes), tuple(sorted(kwargs.items())),
                                   seed=5), data)


@pytest.mark.parametrize("model", ["logreg", "mlp"])
def test_probing_and_plain_tasks_train_in_one_cohort_as_one_by_one(model: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """σ² probes alone (devices 2, 6), σ² and curvature probes (0, 4) and plain plans train together."""
    workload = _workload(model)
    cohorts: list[list[int]] = []
    train_cohort = batched.train_cohort
    monkeypatch.setattr(batched, "train_cohort", lambda *a, **k: cohorts.append([p.device_id for p in a[3]])
                        or train_cohort(*a, **k))
    params = workload.recipe.model.build().state_dict()
    tasks = [TrainTask(TrainPlan(d, 2, micro_batch=8, accumulation_steps=2 if d % 3 else 1,
                                 local_epochs=1 if d % 3 else 2, max_steps=3, sigma_probe=d % 2 == 0,
                                 curvature_probe=d % 4 == 0), params)
             for d in range(8)]  # effective batch 16 or 8 per step, at most 3 steps: one cohort each
    executor = BatchedExecutor(workload, min_cohort=2)  # the vectorised path, whatever the cost model says
    handles = [executor.submit(t) for t in tasks]
    updates = [h.result() for h in handles]
    assert sorted(sorted(c) for c in cohorts) == [[0, 3, 6], [1, 2, 4, 5, 7]]  # probing with plain
    for task, got in zip(tasks, updates, strict=True):
        ref = workload.run(task)
        assert max((ref.params[k] - got.params[k]).abs().max().item() for k in ref.params) <= 1e-5
        assert got.train_loss == pytest.approx(ref.train_loss, rel=1e-5)
        if task.plan.sigma_probe:
            assert ref.sigma2 is not None and got.sigma2 == pytest.approx(ref.sigma2, rel=1e-5)
        else:
            assert ref.sigma2 is None and got.sigma2 is None
        if task.plan.curvature_probe:
            assert ref.noise_curvature is not None
            assert got.noise_curvature == pytest.approx(ref.noise_curvature, rel=1e-4, abs=1e-7)
        else:
            assert ref.noise_curvature is None and got.noise_curvature is None


def _dynamite_config(executor: str, noise_model: str = "reshuffled") -> object:
    """A 12-device digits/MLP run with homogeneous DYNAMITE (one b and τ: the cohort groups) and the probe."""
    from fedfit.config import parse_config

    return parse_config({
        "name": "probe", "seed": 3,
        "data": {"dataset": "digits", "partition": {"kind": "dirichlet", "alpha": 1.0},
                 "max_train_samples": 900, "max_test_samples": 200},
        "model": {"name": "mlp"},
        "fleet": {"catalogue": "scaled", "tiers": {"flagship_phone": 4, "midrange_phone": 4, "older_phone": 4}},
        "training": {"batch_size": 16},
        "orchestration": {"rounds": 3, "clients_per_round": 6},
        "dynamite": {"mode": "homogeneous", "budget_time_s": 60, "tau_max": 10, "sigma_probe": True,
                     "noise_model": noise_model},
        "output": {"plots": False, "progress": False},
        "simulation": {"executor": executor, "batched_min_cohort": 2},  # vectorised: cohorts of 2 or more
    })


@pytest.mark.slow
@pytest.mark.parametrize("noise_model", ["reshuffled", "curvature"])
def test_a_batched_dynamite_run_with_the_probe_matches_a_local_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                 noise_model: str) -> None:
    """σ² probes, and with ``noise_model: curvature`` the curvature probes too, are taken in the cohort op."""
    probed: list[tuple[float | None, float | None]] = []  # the probes the cohort op took
    train_cohort = batched.train_cohort

    def recorded(*args: Any, **kwargs: Any) -> list[Update]:
        updates = train_cohort(*args, **kwargs)
        probed.extend((u.sigma2, u.noise_curvature) for u in updates)
        return updates
    monkeypatch.setattr(batched, "train_cohort", recorded)
    for executor in ("local", "batched"):
        run(_dynamite_config(executor, noise_model), tmp_path / executor)  # type: ignore[arg-type]
    assert probed and all(s is not None and s > 0 for s, _ in probed)
    assert all((c is not None) == (noise_model == "curvature") for _, c in probed)
    assert (tmp_path / "local" / "events.jsonl").read_text() == (tmp_path / "batched" / "events.jsonl").read_text()
    rows = [[json.loads(line) for line in (tmp_path / d / "metrics.jsonl").read_text().splitlines()]
            for d in ("local", "batched")]
    assert len(rows[0]) == len(rows[1]) > 0
    for a, b in zip(*rows, strict=True):
        assert a.keys() == b.keys()
        for key in a:
            if isinstance(a[key], float) and key != "wall_time_s":
                assert b[key] == pytest.approx(a[key], rel=1e-4, abs=1e-6), key
