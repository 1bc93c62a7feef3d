"""The threads executor: bit-identical updates to one-by-one training, concurrent, whole runs equal."""

from __future__ import annotations

import dataclasses
import json
import threading
from pathlib import Path
from typing import Any

import pytest
import torch

from fedfit.data import build_federated_data
from fedfit.models import ModelSpec
from fedfit.runner import run
from fedfit.security.attacks import AttackSpec
from fedfit.simulation import threaded
from fedfit.simulation.threaded import ThreadExecutor
from fedfit.simulation.workload import TrainTask, Workload, WorkloadRecipe
from fedfit.types import Techniques, TrainPlan, Update

from tests.helpers import executor_run_config


def _workload(model: str = "mlp", attack: AttackSpec = AttackSpec()) -> Workload:
    kwargs = {"dataset": "digits", "num_devices": 8, "partition": "dirichlet", "dirichlet_alpha": 0.5, "seed": 5,
              "max_train_samples": 400}
    data = build_federated_data(**kwargs)
    return Workload(WorkloadRecipe(ModelSpec(model, data.input_shape, data.num_classes), tuple(sorted(kwargs.items())),
                                   seed=5, attack=attack), data)


def _tasks(workload: Workload) -> list[TrainTask]:
    full = workload.recipe.model.build().state_dict()
    half = workload.recipe.model.build(0.5).state_dict()
    plans = [TrainPlan(d, 1, micro_batch=8, accumulation_steps=2 if d % 2 else 1, local_epochs=2,
                       width=0.5 if d in (1, 6) else 1.0,
                       techniques=Techniques(checkpointing=True) if d == 3 else Techniques())
             for d in range(8)]
    return [TrainTask(p, half if p.width == 0.5 else full) for p in plans]


def _same(a: Update, b: Update) -> bool:
    return a.params.keys() == b.params.keys() and all(torch.equal(a.params[k], b.params[k]) for k in a.params) \
        and (a.train_loss, a.steps, a.samples_processed) == (b.train_loss, b.steps, b.samples_processed)


def test_updates_are_bit_identical_to_one_by_one_and_train_off_the_calling_thread(
        monkeypatch: pytest.MonkeyPatch) -> None:
    workload = _workload()
    seen: list[tuple[str, int, int]] = []
    train = threaded.train

    def spy(model: torch.nn.Module, *args: Any, **kwargs: Any) -> Update:
        seen.append((threading.current_thread().name, id(model), torch.get_num_threads()))
        return train(model, *args, **kwargs)

    monkeypatch.setattr(threaded, "train", spy)
    executor = ThreadExecutor(workload, 3)
    tasks = _tasks(workload)
    try:
        handles = [executor.submit(t) for t in tasks]
        updates = [h.result() for h in handles]
    finally:
        executor.close()
    for task, got in zip(tasks, updates, strict=True):
        assert _same(workload.run(task), got)
    assert all(name.startswith("fedfit-train") for name, _, _ in seen)
    assert all(threads == 1 for _, _, threads in seen)
    modules = {m for _, m, _ in seen}
    assert id(workload.module(1.0)) not in modules and 2 <= len(modules) <= 6  # ≤ 3 workers × 2 widths


def test_attackers_are_poisoned_as_in_local_training() -> None:
    attack = AttackSpec(kind="sign_flip", devices=frozenset({0, 2}), boost=3.0)
    workload = _workload("logreg", attack)
    executor = ThreadExecutor(workload, 2)
    tasks = [TrainTask(TrainPlan(d, 1, micro_batch=8), t.params) for d, t in enumerate(_tasks(workload))]
    try:
        for task, handle in [(t, executor.submit(t)) for t in tasks]:
            assert _same(workload.run(task), handle.result())
    finally:
        executor.close()


def test_training_threads_run_one_intra_op_thread_whatever_the_driver_runs() -> None:
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        executor = ThreadExecutor(_workload("logreg"), 1)
        counts = executor._pool.submit(torch.get_num_threads).result()
        executor.close()
        assert counts == 1 and torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


def test_a_cancelled_task_that_has_not_started_is_dropped(monkeypatch: pytest.MonkeyPatch) -> None:
    workload = _workload("logreg")
    release, started = threading.Event(), threading.Event()
    ran: list[int] = []
    train = threaded.train

    def blocking(model: torch.nn.Module, params: Any, x: Any, y: Any, plan: TrainPlan, **kw: Any) -> Update:
        ran.append(plan.device_id)
        started.set()
        release.wait(10)
        return train(model, params, x, y, plan, **kw)

    monkeypatch.setattr(threaded, "train", blocking)
    executor = ThreadExecutor(workload, 1)
    tasks = _tasks(workload)[:3]
    handles = [executor.submit(t) for t in tasks]
    started.wait(10)
    assert not handles[0].cancel()  # running: finishes, its update is discarded by the caller
    assert handles[1].cancel()
    release.set()
    assert _same(handles[2].result(), workload.run(tasks[2]))
    executor.close()
    assert ran == [0, 2]


def _config(executor: str) -> object:
    return executor_run_config("threaded", executor, training={"momentum": 0.9}, simulation={"workers": 2})


@pytest.mark.slow
def test_a_threaded_run_is_the_local_run(tmp_path: Path) -> None:
    run(_config("local"), tmp_path / "local")  # type: ignore[arg-type]
    run(_config("threads"), tmp_path / "threads")  # type: ignore[arg-type]
    for name in ("events.jsonl", "model.safetensors"):
        assert (tmp_path / "local" / name).read_bytes() == (tmp_path / "threads" / name).read_bytes(), name
    rows = [[json.loads(line) for line in (tmp_path / d / "metrics.jsonl").read_text().splitlines()]
            for d in ("local", "threads")]
    assert len(rows[0]) == 3
    assert [{k: v for k, v in r.items() if k != "wall_time_s"} for r in rows[0]] == \
        [{k: v for k, v in r.items() if k != "wall_time_s"} for r in rows[1]]
