"""A round's global model crosses each worker's pipe once: shared payloads in the process pool."""

from __future__ import annotations

import multiprocessing

import pytest
import torch

from fedfit.data import build_federated_data
from fedfit.models import ModelSpec
from fedfit.simulation import executors
from fedfit.simulation.executors import ProcessPoolExecutor, params_key
from fedfit.simulation.pool import LeanPool, Runner, Shared
from fedfit.simulation.workload import TrainTask, Workload, WorkloadRecipe
from fedfit.types import TrainPlan, Update

FORK = pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(), reason="no fork here")


def _echo() -> Runner:
    """A worker's runner that answers with the task and the shared payload it was given."""
    return lambda message, shared: (bytes(message), None if shared is None else bytes(shared))


@FORK
def test_each_task_runs_with_the_payload_it_named_whichever_worker_takes_it() -> None:
    pool = LeanPool(2, "fork", _echo)
    a, b = Shared(0, b"model a"), Shared(1, b"model b")
    try:
        sent = [(b"1", a), (b"2", a), (b"3", None), (b"4", b), (b"5", a), (b"6", b), (b"7", b)]
        handles = [pool.submit(m, s) for m, s in sent]
        got = [h.result() for h in handles]
    finally:
        pool.close()
    # a task without a payload sees whatever its worker holds; one with a payload sees exactly it
    assert [g[0] for g in got] == [m for m, _ in sent]
    assert [g[1] for g, (_, s) in zip(got, sent, strict=True) if s is not None] == \
        [s.payload for _, s in sent if s is not None]


def _workload() -> Workload:
    kwargs = {"dataset": "digits", "num_devices": 4, "partition": "iid", "seed": 5, "max_train_samples": 200}
    data = build_federated_data(**kwargs)
    return Workload(WorkloadRecipe(ModelSpec("logreg", data.input_shape, data.num_classes),
                                   tuple(sorted(kwargs.items())), seed=5), data)


def _same(a: Update, b: Update) -> bool:
    return a.params.keys() == b.params.keys() and all(torch.equal(a.params[k], b.params[k]) for k in a.params) \
        and (a.train_loss, a.steps, a.device_id) == (b.train_loss, b.steps, b.device_id)


@FORK
def test_the_same_tensors_are_encoded_once_and_a_tensor_changed_in_place_again(
        monkeypatch: pytest.MonkeyPatch) -> None:
    workload = _workload()
    params = dict(workload.recipe.model.build().state_dict())
    encoded: list[int] = []
    to_wire = executors.to_wire
    monkeypatch.setattr(executors, "to_wire", lambda p: encoded.append(len(p)) or to_wire(p))
    pool = ProcessPoolExecutor(workload.recipe, 2, workload, "fork")
    try:
        tasks = [TrainTask(TrainPlan(d, 1, micro_batch=8), dict(params)) for d in range(4)]  # new dicts, same tensors
        first = [h.result() for h in [pool.submit(t) for t in tasks]]
        assert len(encoded) == 1  # in the driver (a worker's encodings happen in its own process)
        assert all(_same(workload.run(t), u) for t, u in zip(tasks, first, strict=True))
        with torch.no_grad():
            params["linear.bias"].add_(1.0)  # the same tensor, new values
        moved = [TrainTask(TrainPlan(d, 2, micro_batch=8), dict(params)) for d in range(4)]
        second = [h.result() for h in [pool.submit(t) for t in moved]]
        assert len(encoded) == 2
    finally:
        pool.close()
    assert all(_same(workload.run(t), u) for t, u in zip(moved, second, strict=True))


@FORK
def test_inference_tensors_travel_with_each_task() -> None:
    workload = _workload()
    with torch.inference_mode():
        params = {k: v.clone() for k, v in workload.recipe.model.build().state_dict().items()}
    assert params_key(params) is None
    pool = ProcessPoolExecutor(workload.recipe, 2, workload, "fork")
    try:
        tasks = [TrainTask(TrainPlan(d, 1, micro_batch=8), params) for d in range(3)]
        got = [h.result() for h in [pool.submit(t) for t in tasks]]
    finally:
        pool.close()
    plain = {k: v.clone() for k, v in params.items()}
    assert all(_same(workload.run(TrainTask(t.plan, plain)), u) for t, u in zip(tasks, got, strict=True))


def test_the_key_follows_identity_and_in_place_changes() -> None:
    w, b = torch.zeros(2), torch.ones(2)
    key = params_key({"w": w, "b": b})
    assert params_key({"w": w, "b": b}) == key
    assert params_key({"w": w.clone(), "b": b}) != key
    b.add_(1.0)
    assert params_key({"w": w, "b": b}) != key
