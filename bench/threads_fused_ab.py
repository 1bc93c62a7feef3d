"""Paired A/B in one process: the fused micro-step against autograd's, and the threads executor
against ``local``, on the 100-client side-by-side job's devices (Fashion-MNIST IID, 600 samples
each, MLP, batch 32, one epoch, one intra-op thread).

Alternating A and B many times and taking medians keeps a shared host's changing load out of
the comparison (both see the same load). Prints CPU per update (fused vs autograd) and wall and
CPU per round of ten updates (threads vs local), and checks the results are bit-identical.

    PYTHONPATH=src python bench/threads_fused_ab.py [--repeats 150] [--rounds 40] [--workers 2]
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

import torch

from fedfit.data import build_federated_data
from fedfit.models import ModelSpec
from fedfit.simulation.executors import Executor, LocalExecutor
from fedfit.simulation.threaded import ThreadExecutor
from fedfit.simulation.workload import TrainTask, Workload, WorkloadRecipe
from fedfit.training import techniques
from fedfit.training.trainer import train
from fedfit.types import TrainPlan, Update

DATA: dict[str, Any] = {"dataset": "fashion_mnist", "num_devices": 100, "partition": "iid", "seed": 0, "max_train_samples": 60000,
        "max_test_samples": 1000, "local_test_fraction": 0.0}


def fused_vs_autograd(workload: Workload, repeats: int) -> None:
    fused = getattr(techniques, "fused_steps")
    model, params = workload.module(1.0), workload.recipe.model.build().state_dict()
    x, y = workload.data.train[0].x, workload.data.train[0].y
    plan = TrainPlan(0, 1, micro_batch=32, lr=0.05)
    cpu: dict[bool, list[float]] = {True: [], False: []}
    last: dict[bool, Update] = {}
    try:
        for _ in range(repeats):
            for on in (True, False):
                setattr(techniques, "fused_steps", fused if on else (lambda m, opt: None))
                start = time.process_time()
                last[on] = train(model, params, x, y, plan, seed=0)
                cpu[on].append(time.process_time() - start)
    finally:
        setattr(techniques, "fused_steps", fused)
    same = all(torch.equal(last[True].params[k], last[False].params[k]) for k in params)
    f, a = statistics.median(cpu[True]), statistics.median(cpu[False])
    print(f"fused {f * 1e3:.2f} ms vs autograd {a * 1e3:.2f} ms CPU per update (median of {repeats}): "
          f"{f / a:.3f}x; bit-identical: {same}")


def threads_vs_local(workload: Workload, rounds: int, workers: int) -> None:
    params = workload.recipe.model.build().state_dict()
    executors: dict[str, Executor] = {"local": LocalExecutor(workload), "threads": ThreadExecutor(workload, workers)}

    def one_round(ex: Executor, r: int) -> list[Update]:
        handles = [ex.submit(TrainTask(TrainPlan(d, r, micro_batch=32, lr=0.05), params)) for d in range(10)]
        return [h.result() for h in handles]

    wall: dict[str, list[float]] = {n: [] for n in executors}
    cpu: dict[str, list[float]] = {n: [] for n in executors}
    for r in range(rounds):
        for name, ex in executors.items():
            start, start_cpu = time.perf_counter(), time.process_time()
            one_round(ex, r)
            wall[name].append(time.perf_counter() - start)
            cpu[name].append(time.process_time() - start_cpu)
    a, b = (one_round(ex, 0) for ex in executors.values())
    same = all(torch.equal(u.params[k], v.params[k]) for u, v in zip(a, b, strict=True) for k in u.params)
    for ex in executors.values():
        ex.close()
    for name in executors:
        print(f"{name:8s} wall {statistics.median(wall[name]) * 1e3:.0f} ms, CPU {statistics.median(cpu[name]) * 1e3:.0f} ms "
              f"per round of 10 updates (median of {rounds})")
    ratio = statistics.median(t / lo for lo, t in zip(wall["local"], wall["threads"], strict=True))
    print(f"threads ({workers}) / local wall, paired median: {ratio:.2f}; bit-identical: {same}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=150)
    ap.add_argument("--rounds", type=int, default=40)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    torch.set_num_threads(1)
    data = build_federated_data(**DATA)
    workload = Workload(WorkloadRecipe(ModelSpec("mlp", data.input_shape, data.num_classes),
                                       tuple(sorted(DATA.items())), seed=0), data)
    fused_vs_autograd(workload, args.repeats)
    threads_vs_local(workload, args.rounds, args.workers)


if __name__ == "__main__":
    main()
