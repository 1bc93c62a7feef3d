"""Batched cohort training vs one-by-one: training wall time of one round's cohort.

For logistic regression, the MLP and the CNN of the zoo on Fashion-MNIST (28×28), a cohort of
10, 100 and 1,000 devices (Dirichlet α = 1 partition of ``--samples`` × devices training
samples, so local data sizes are uneven) trains one round — plain SGD with momentum 0.9, batch
16, one local epoch — through ``simulation.executor: local`` (one task after another) and
``simulation.executor: batched`` (one vmap per step over each chunk of devices). Prints the
median wall and process CPU time of ``--repeats`` rounds per path, the speed-ups, and the largest parameter
difference between the two paths. One intra-op thread (as fedfit trains).

    OMP_NUM_THREADS=1 PYTHONPATH=src nice .venv/bin/python bench/batched_training.py
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from fedfit.data import build_federated_data
from fedfit.models import ModelSpec
from fedfit.simulation.batched import BatchedExecutor
from fedfit.simulation.executors import Executor, LocalExecutor
from fedfit.simulation.workload import TrainTask, Workload, WorkloadRecipe
from fedfit.training import OptimizerConfig
from fedfit.types import Params, TrainPlan, Update


def _workload(model: str, devices: int, samples: int) -> Workload:
    kwargs = {"dataset": "fashion_mnist", "num_devices": devices, "partition": "dirichlet", "dirichlet_alpha": 1.0,
              "seed": 0, "max_train_samples": samples * devices, "max_test_samples": 100}
    data = build_federated_data(**kwargs)
    recipe = WorkloadRecipe(ModelSpec(model, data.input_shape, data.num_classes), tuple(sorted(kwargs.items())),
                            seed=0, optimizer=OptimizerConfig(momentum=0.9))
    return Workload(recipe, data)


def _round(executor: Executor, tasks: list[TrainTask]) -> tuple[float, float, list[Update]]:
    """(wall s, process CPU s, updates) of one round's training."""
    wall, cpu = time.perf_counter(), time.process_time()
    handles = [executor.submit(t) for t in tasks]
    updates = [h.result() for h in handles]
    return time.perf_counter() - wall, time.process_time() - cpu, updates


def _max_diff(a: list[Update], b: list[Update]) -> float:
    return max((x.params[k] - y.params[k]).abs().max().item() for x, y in zip(a, b, strict=True) for k in x.params)


def measure(model: str, devices: int, samples: int, repeats: int) -> dict[str, float]:
    """Median one-by-one and batched round times (s) and the largest parameter difference."""
    workload = _workload(model, devices, samples)
    params: Params = workload.recipe.model.build().state_dict()
    tasks = [TrainTask(TrainPlan(d, 0, micro_batch=16, lr=0.05), params)
             for d in range(devices) if len(workload.data.train[d].x) > 0]
    local, batched = LocalExecutor(workload), BatchedExecutor(workload)
    times: dict[str, list[float]] = {"local_s": [], "batched_s": [], "local_cpu_s": [], "batched_cpu_s": []}
    for _ in range(repeats):
        wall, cpu, one_by_one = _round(local, tasks)
        times["local_s"].append(wall)
        times["local_cpu_s"].append(cpu)
        wall, cpu, vmapped = _round(batched, tasks)
        times["batched_s"].append(wall)
        times["batched_cpu_s"].append(cpu)
    return {**{k: statistics.median(v) for k, v in times.items()},
            "max_abs_diff": _max_diff(one_by_one, vmapped), "tasks": len(tasks)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=["logreg", "mlp", "cnn"])
    parser.add_argument("--devices", nargs="+", type=int, default=[10, 100, 1000])
    parser.add_argument("--samples", type=int, default=40, help="mean training samples per device")
    parser.add_argument("--repeats", type=int, default=3, help="rounds per path (median); 1 at 1,000 devices")
    args = parser.parse_args()
    torch.set_num_threads(1)
    print("| model | devices | one-by-one s | batched s | speed-up | one-by-one CPU s | batched CPU s | "
          "CPU speed-up | max abs param diff |\n|---|---|---|---|---|---|---|---|---|")
    for model in args.models:
        measure(model, 10, args.samples, 1)  # warm-up: first calls of each kernel
        for devices in args.devices:
            r = measure(model, devices, args.samples, args.repeats if devices < 1000 else 1)
            print(f"| {model} | {devices} | {r['local_s']:.3f} | {r['batched_s']:.3f} | "
                  f"{r['local_s'] / r['batched_s']:.1f}x | {r['local_cpu_s']:.3f} | {r['batched_cpu_s']:.3f} | "
                  f"{r['local_cpu_s'] / r['batched_cpu_s']:.1f}x | {r['max_abs_diff']:.1e} |", flush=True)


if __name__ == "__main__":
    main()
