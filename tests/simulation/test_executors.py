"""The process executor: forked workers from the built workload, spawn as the fallback, the wire
format, Ctrl-C, and whole runs byte-identical to ``local``."""

from __future__ import annotations

import json
import multiprocessing
import os
import pickle
import signal
from pathlib import Path

import pytest
import torch

from fedfit.config import parse_config
from fedfit.data import build_federated_data
from fedfit.errors import ConfigError
from fedfit.models import ModelSpec
from fedfit.runner import run
from fedfit.simulation import executors
from fedfit.simulation.executors import ProcessPoolExecutor, from_wire, start_method, to_wire
from fedfit.simulation.workload import TrainTask, Workload, WorkloadRecipe
from fedfit.types import TrainPlan, Update

from tests.helpers import executor_run_config

FORK = pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(), reason="no fork here")


def _workload() -> Workload:
    kwargs = {"dataset": "digits", "num_devices": 4, "partition": "iid", "seed": 5, "max_train_samples": 200}
    data = build_federated_data(**kwargs)
    return Workload(WorkloadRecipe(ModelSpec("logreg", data.input_shape, data.num_classes),
                                   tuple(sorted(kwargs.items())), seed=5), data)


def _tasks(workload: Workload) -> list[TrainTask]:
    params = workload.recipe.model.build().state_dict()
    return [TrainTask(TrainPlan(d, 1, micro_batch=8, local_epochs=2), params) for d in range(4)]


def _same(a: Update, b: Update) -> bool:
    return a.params.keys() == b.params.keys() and all(torch.equal(a.params[k], b.params[k]) for k in a.params) \
        and all(a.params[k].dtype == b.params[k].dtype for k in a.params) \
        and (a.train_loss, a.steps, a.samples_processed, a.device_id) == \
        (b.train_loss, b.steps, b.samples_processed, b.device_id)


def test_auto_forks_on_linux_only_and_an_unavailable_method_is_a_config_error(
        monkeypatch: pytest.MonkeyPatch) -> None:
    assert start_method("auto", "linux") == "fork"
    assert start_method("auto", "darwin") == start_method("auto", "win32") == "spawn"
    assert start_method("spawn", "linux") == "spawn"
    monkeypatch.setattr(multiprocessing, "get_all_start_methods", lambda: ["spawn"])
    with pytest.raises(ConfigError, match="^simulation.start_method: 'fork' is not available"):
        start_method("fork")


def test_the_config_key_defaults_to_auto_and_refuses_other_methods() -> None:
    assert parse_config({}).simulation.start_method == "auto"
    assert parse_config({"simulation": {"start_method": "spawn"}}).simulation.start_method == "spawn"
    with pytest.raises(ConfigError, match="start_method"):
        parse_config({"simulation": {"start_method": "forkserver"}})


def test_the_wire_carries_tensors_bit_for_bit_as_numpy_where_numpy_can() -> None:
    params = {"w": torch.randn(3, 4).t(), "b": torch.tensor([1.5, -0.0, float("nan")], dtype=torch.float64),
              "n": torch.tensor([7], dtype=torch.int64), "h": torch.randn(2, dtype=torch.bfloat16),
              "g": torch.ones(2, requires_grad=True)}
    wire = to_wire(params)
    assert [type(a).__name__ for a in pickle.loads(wire).values()] == ["ndarray", "ndarray", "ndarray", "Tensor",
                                                                       "ndarray"]
    back = from_wire(bytes(wire))
    assert all(t.numpy().flags.writeable for name, t in back.items() if name != "h")  # trained in place
    for name, tensor in params.items():
        assert back[name].dtype == tensor.dtype and back[name].shape == tensor.shape
        assert bytes(back[name].contiguous().untyped_storage()) == \
            bytes(tensor.detach().contiguous().untyped_storage()), name  # NaN and -0.0 included


@FORK
def test_forked_workers_train_the_parents_workload_without_rebuilding_it(monkeypatch: pytest.MonkeyPatch) -> None:
    workload = _workload()
    tasks = _tasks(workload)
    expected = [workload.run(t) for t in tasks]

    def no_build(self: WorkloadRecipe) -> Workload:
        raise AssertionError("a forked worker rebuilt the workload")

    monkeypatch.setattr(WorkloadRecipe, "build", no_build)  # inherited by the forked workers
    pool = ProcessPoolExecutor(workload.recipe, 2, workload, "fork")
    try:
        got = [h.result() for h in [pool.submit(t) for t in tasks]]
    finally:
        pool.close()
    assert pool.method == "fork" and all(_same(a, b) for a, b in zip(expected, got, strict=True))


def test_spawned_workers_rebuild_the_workload_from_the_recipe() -> None:
    workload = _workload()
    tasks = _tasks(workload)[:2]
    pool = ProcessPoolExecutor(workload.recipe, 1, workload, "spawn")
    try:
        got = [h.result() for h in [pool.submit(t) for t in tasks]]
    finally:
        pool.close()
    assert pool.method == "spawn"
    assert all(_same(workload.run(t), g) for t, g in zip(tasks, got, strict=True))


@FORK
def test_a_worker_ignores_ctrl_c_and_dies_with_its_parent_by_its_watchdog() -> None:
    workload = _workload()
    task = _tasks(workload)[0]
    pool = ProcessPoolExecutor(workload.recipe, 1, workload, "fork")
    try:
        assert _same(pool.submit(task).result(), workload.run(task))
        (worker,) = pool._pool.workers
        os.kill(worker.process.pid, signal.SIGINT)
        assert _same(pool.submit(task).result(), workload.run(task))  # the same worker, still serving
        assert pool._pool.workers == [worker] and worker.process.is_alive()
    finally:
        pool.close()
    assert not worker.process.is_alive()


def test_a_task_that_fails_in_a_worker_raises_its_error_in_the_driver() -> None:
    workload = _workload()
    bad = TrainTask(TrainPlan(99, 1, micro_batch=8), _tasks(workload)[0].params)  # no device 99
    pool = ProcessPoolExecutor(workload.recipe, 1, workload, "fork")
    try:
        with pytest.raises(IndexError):
            pool.submit(bad).result()
        task = _tasks(workload)[1]
        assert _same(pool.submit(task).result(), workload.run(task))  # the worker survives it
    finally:
        pool.close()


def test_a_waiting_task_can_be_cancelled_and_a_running_one_cannot() -> None:
    workload = _workload()
    tasks = _tasks(workload)
    pool = ProcessPoolExecutor(workload.recipe, 1, workload, "fork")
    try:
        first, second, third = (pool.submit(t) for t in tasks[:3])
        assert not first.cancel() and second.cancel()
        assert _same(third.result(), workload.run(tasks[2])) and _same(first.result(), workload.run(tasks[0]))
    finally:
        pool.close()


def test_workers_auto_is_one_per_core() -> None:
    workload = _workload()
    pool = ProcessPoolExecutor(workload.recipe, "auto", workload)
    pool.close()
    assert pool.workers == len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    assert executors.PARENT_CHECK_S <= 1.0


@pytest.mark.slow
@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_a_process_run_is_the_local_run_byte_for_byte(tmp_path: Path, method: str) -> None:
    if method not in multiprocessing.get_all_start_methods():
        pytest.skip(f"no {method} here")
    run(executor_run_config("local", "local", training={"momentum": 0.9}), tmp_path / "local")
    run(executor_run_config("pool", "process", training={"momentum": 0.9},
                            simulation={"workers": 2, "start_method": method}), tmp_path / "pool")
    for name in ("events.jsonl", "model.safetensors"):
        assert (tmp_path / "local" / name).read_bytes() == (tmp_path / "pool" / name).read_bytes(), name
    rows = [[{k: v for k, v in json.loads(line).items() if k != "wall_time_s"}
             for line in (tmp_path / d / "metrics.jsonl").read_text().splitlines()] for d in ("local", "pool")]
    assert len(rows[0]) == 3 and rows[0] == rows[1]
