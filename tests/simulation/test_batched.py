"""The batched executor: same updates as one-by-one training, fallbacks exact, whole runs equal."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
import torch

from fedfit.data import build_federated_data
from fedfit.models import ModelSpec
from fedfit.runner import run
from fedfit.security.attacks import AttackSpec
from fedfit.simulation import batched
from fedfit.simulation.batched import BatchedExecutor
from fedfit.simulation.workload import TrainTask, Workload, WorkloadRecipe
from fedfit.types import Techniques, TrainPlan

from tests.helpers import executor_run_config


def _workload(model: str = "cnn", partition: str = "iid") -> Workload:
    kwargs = {"dataset": "digits", "num_devices": 8, "partition": partition, "dirichlet_alpha": 0.5, "seed": 5,
              "max_train_samples": 400}
    data = build_federated_data(**kwargs)
    return Workload(WorkloadRecipe(ModelSpec(model, data.input_shape, data.num_classes), tuple(sorted(kwargs.items())),
                                   seed=5), data)


def _tasks(workload: Workload) -> list[TrainTask]:
    params = workload.recipe.model.build().state_dict()
    plans = [TrainPlan(d, 1, micro_batch=8, accumulation_steps=2 if d % 2 else 1, local_epochs=2,
                       techniques=Techniques(checkpointing=True) if d == 3 else Techniques())
             for d in range(8)]
    plans[5] = TrainPlan(5, 1, micro_batch=16, lr=0.1)  # a cohort of its own: trained alone
    return [TrainTask(plan, params) for plan in plans]


def test_updates_equal_one_by_one_and_fallbacks_are_exact(monkeypatch: pytest.MonkeyPatch) -> None:
    workload = _workload()
    assert len({len(workload.data.train[d].x) for d in range(8)}) == 1  # iid: equal step counts
    cohorts: list[list[int]] = []
    train_cohort = batched.train_cohort
    monkeypatch.setattr(batched, "train_cohort", lambda *a, **k: cohorts.append([p.device_id for p in a[3]])
                        or train_cohort(*a, **k))
    executor = BatchedExecutor(workload, min_cohort=2)
    tasks = _tasks(workload)
    handles = [executor.submit(t) for t in tasks]
    updates = [h.result() for h in handles]
    # effective batch 8 (even devices, 3 uses a technique) and 16 (1, 7); 5 has its own lr: trained alone
    assert sorted(sorted(c) for c in cohorts) == [[0, 2, 4, 6], [1, 7]]
    for task, got in zip(tasks, updates, strict=True):
        ref = workload.run(task)
        tol = 0.0 if task.plan.device_id in (3, 5) else 1e-5
        assert max((ref.params[k] - got.params[k]).abs().max().item() for k in ref.params) <= tol
        assert (got.samples_processed, got.steps, got.num_examples) == (ref.samples_processed, ref.steps,
                                                                         ref.num_examples)


def test_cohorts_split_by_step_count() -> None:
    """Effective batch 16: 5, 17, 40, 33, 48, 70 and 80 samples take 1, 2, 3, 3, 3, 5 and 5 steps; a
    bucket's longest takes at most 1.25 times its shortest's steps."""
    plan = TrainPlan(0, 0, micro_batch=16)
    handles = []
    for n in (48, 5, 17, 80, 40, 33, 70):
        handle = batched._CohortHandle(None, TrainTask(plan, {}))  # type: ignore[arg-type]
        handle.inputs = (torch.zeros(n, 1), torch.zeros(n))
        handles.append(handle)
    buckets = batched._buckets(handles)
    assert [[len(h.inputs[0]) for h in b] for b in buckets] == [[5], [17], [48, 40, 33], [80, 70]]  # type: ignore[index]


def test_uneven_data_through_the_executor() -> None:
    workload = _workload("mlp", partition="dirichlet")
    tasks = [TrainTask(TrainPlan(d, 1, micro_batch=4, local_epochs=2), t.params) for d, t in enumerate(_tasks(workload))]
    executor = BatchedExecutor(workload, min_cohort=2)
    handles = [executor.submit(t) for t in tasks]
    for task, handle in zip(tasks, handles, strict=True):
        ref = workload.run(task)
        assert max((ref.params[k] - handle.result().params[k]).abs().max().item() for k in ref.params) <= 1e-5


@pytest.mark.parametrize("kind", ["label_flip", "sign_flip"])
def test_simulated_attackers_poison_the_same_way(kind: str) -> None:
    """Data poisoning before and update poisoning after batched training, as Workload.run does."""
    plain = _workload("logreg")
    attack = AttackSpec(kind=kind, devices=frozenset({0, 2}), boost=3.0)  # type: ignore[arg-type]
    workload = Workload(dataclasses.replace(plain.recipe, attack=attack), plain.data)
    tasks = [TrainTask(TrainPlan(d, 1, micro_batch=8), t.params) for d, t in enumerate(_tasks(workload))]
    executor = BatchedExecutor(workload, min_cohort=2)
    handles = [executor.submit(t) for t in tasks]
    for task, handle in zip(tasks, handles, strict=True):
        ref, clean = workload.run(task), plain.run(task)
        got = handle.result()
        assert max((ref.params[k] - got.params[k]).abs().max().item() for k in ref.params) <= 1e-5
        poisoned = max((clean.params[k] - got.params[k]).abs().max().item() for k in ref.params) > 1e-3
        assert poisoned == (task.plan.device_id in (0, 2))


def test_a_cancelled_task_is_not_trained_unless_asked_for() -> None:
    workload = _workload("logreg")
    executor = BatchedExecutor(workload, min_cohort=2)
    tasks = _tasks(workload)
    handles = [executor.submit(t) for t in tasks]
    assert handles[2].cancel()
    handles[0].result()
    assert handles[2].update is None and handles[4].update is not None
    assert not handles[4].cancel()  # already trained
    ref = workload.run(tasks[2])
    assert all(torch.equal(ref.params[k], handles[2].result().params[k]) for k in ref.params)


def _config(executor: str, min_cohort: int | str = 2) -> object:
    return executor_run_config("batched", executor, simulation={"batched_min_cohort": min_cohort})


@pytest.mark.slow
@pytest.mark.parametrize("min_cohort", [2, "auto"])  # every cohort vectorised; those the cost model picks
def test_a_batched_run_matches_a_local_run(tmp_path: Path, min_cohort: int | str) -> None:
    local = run(_config("local"), tmp_path / "local")  # type: ignore[arg-type]
    vmapped = run(_config("batched", min_cohort), tmp_path / "batched")  # type: ignore[arg-type]
    assert (tmp_path / "local" / "events.jsonl").read_text() == (tmp_path / "batched" / "events.jsonl").read_text()
    rows = [[json.loads(line) for line in (tmp_path / d / "metrics.jsonl").read_text().splitlines()]
            for d in ("local", "batched")]
    assert len(rows[0]) == len(rows[1]) == 3
    for a, b in zip(*rows, strict=True):
        for key in a:
            if key == "wall_time_s":
                continue
            if isinstance(a[key], float):
                assert b[key] == pytest.approx(a[key], rel=1e-4, abs=1e-6), key
            else:
                assert a[key] == b[key], key
    assert vmapped.summary["final_accuracy"] == pytest.approx(local.summary["final_accuracy"], abs=1e-6)


def test_auto_asks_the_cost_model_and_trains_refused_chunks_one_by_one(monkeypatch: pytest.MonkeyPatch) -> None:
    """``min_cohort=None``: each chunk of two or more goes to ``vectorise`` with its devices' steps,
    effective batch and probing count; a refused chunk trains exactly as ``local``."""
    workload = _workload()
    asked: list[tuple[list[int], int, int]] = []
    monkeypatch.setattr(batched, "vectorise", lambda work, steps, *, batch, probing, costs:
                        asked.append((list(steps), batch, probing)) or False)
    monkeypatch.setattr(batched, "train_cohort", lambda *a, **k: pytest.fail("a refused chunk was vectorised"))
    executor = BatchedExecutor(workload)
    tasks = _tasks(workload)
    updates = [h.result() for h in [executor.submit(t) for t in tasks]]
    examples = len(workload.data.train[0].x)  # iid: every device holds as many
    # devices 0, 2, 4, 6: batch 8, 2 epochs; 1 and 7: batch 16 (8 × 2), 2 epochs
    assert sorted(asked) == sorted([([2 * -(-examples // 8)] * 4, 8, 0), ([2 * -(-examples // 16)] * 2, 16, 0)])
    for task, got in zip(tasks, updates, strict=True):
        ref = workload.run(task)
        assert all(torch.equal(ref.params[k], got.params[k]) for k in ref.params)


def test_an_explicit_min_cohort_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    """``min_cohort=3``: the cohort of four is vectorised whatever the cost model says, the pair is not."""
    workload = _workload()
    cohorts: list[list[int]] = []
    train_cohort = batched.train_cohort
    monkeypatch.setattr(batched, "train_cohort", lambda *a, **k: cohorts.append([p.device_id for p in a[3]])
                        or train_cohort(*a, **k))
    monkeypatch.setattr(batched, "vectorise", lambda *a, **k: pytest.fail("asked the cost model"))
    executor = BatchedExecutor(workload, min_cohort=3)
    tasks = _tasks(workload)
    updates = [h.result() for h in [executor.submit(t) for t in tasks]]
    assert sorted(cohorts) == [[0, 2, 4, 6]]
    for device in (1, 7):
        ref = workload.run(tasks[device])
        assert all(torch.equal(ref.params[k], updates[device].params[k]) for k in ref.params)


def test_the_setting_reaches_the_executor_and_rejects_one() -> None:
    from fedfit.config import parse_config
    from fedfit.errors import ConfigError

    with pytest.raises((ConfigError, ValueError), match="batched_min_cohort"):
        parse_config({"simulation": {"executor": "batched", "batched_min_cohort": 1}})
    assert parse_config({}).simulation.batched_min_cohort == "auto"
    assert parse_config({"simulation": {"batched_min_cohort": 8}}).simulation.batched_min_cohort == 8


def _vectorised_cohorts(monkeypatch: pytest.MonkeyPatch, executor: BatchedExecutor) -> list[list[int]]:
    cohorts: list[list[int]] = []
    train_cohort = batched.train_cohort
    monkeypatch.setattr(batched, "train_cohort", lambda *a, **k: cohorts.append(sorted(p.device_id for p in a[3]))
                        or train_cohort(*a, **k))
    for handle in [executor.submit(t) for t in _tasks(executor.workload)]:
        handle.result()
    return sorted(cohorts)


def test_batched_costs_from_the_config_decide_which_chunks_are_vectorised(monkeypatch: pytest.MonkeyPatch) -> None:
    """``simulation.batched_costs`` replaces the cost model's constants it names: with one by one
    priced at nothing no chunk is vectorised; with vectorising priced at nothing every chunk is."""
    from fedfit.config import parse_config
    from fedfit.experiment import _executor
    from fedfit.simulation.cohort_cost import MEASURED

    def executor(costs: dict[str, float]) -> BatchedExecutor:
        config = parse_config({"simulation": {"executor": "batched", "batched_costs": costs}})
        workload = _workload()
        built = _executor(config, workload.recipe, workload)
        assert isinstance(built, BatchedExecutor)
        return built

    free_one_by_one = {"task": 0.0, "step": 0.0, "mac": 0.0}
    assert executor(free_one_by_one).costs == dataclasses.replace(MEASURED, **free_one_by_one)
    assert _vectorised_cohorts(monkeypatch, executor(free_one_by_one)) == []
    free_vectorised = {k: 0.0 for k in ("cohort", "cohort_step", "device_step", "stacked_mac", "stacked_param")}
    monkeypatch.undo()
    assert _vectorised_cohorts(monkeypatch, executor({**free_vectorised, "margin": 0.0})) == [[0, 2, 4, 6], [1, 7]]


def test_batched_costs_name_every_constant_and_reject_bad_ones() -> None:
    from fedfit.config import parse_config
    from fedfit.config.batched_costs import BatchedCostsConfig
    from fedfit.errors import ConfigError
    from fedfit.simulation.cohort_cost import CohortCosts

    assert set(BatchedCostsConfig.model_fields) == {f.name for f in dataclasses.fields(CohortCosts)}
    assert parse_config({}).simulation.batched_costs.overrides() == {}
    for bad in ({"tsak": 1.0}, {"step": -1.0}, {"step": True}, {"step": "fast"}):
        with pytest.raises((ConfigError, ValueError), match="batched_costs"):
            parse_config({"simulation": {"batched_costs": bad}})
