"""Batched cohort training vs one-by-one: training CPU of one round's cohort, and the cost model.

For logistic regression, the MLP and the CNN of the zoo on Fashion-MNIST (28×28), a cohort of
``--devices`` devices (Dirichlet α = 1 partition of ``--samples`` × devices training samples, so
local data sizes are uneven) trains one round — plain SGD with momentum 0.9, batch 16, one local
epoch, with ``--probes`` DYNAMITE's σ² and curvature probes — through ``simulation.executor:
local`` (one task after another), ``batched`` as configured by default (``batched_min_cohort:
auto``: the cost model decides per chunk) and ``vectorised`` (``batched_min_cohort: 2``: every
chunk of two or more vectorised). Prints the median process CPU time of ``--repeats`` rounds per
path and the CPU speed-ups against local (the median of the repeats' paired ratios: the paths'
order rotates from repeat to repeat, as a busy host biases a fixed order), and
the largest parameter difference from local. One intra-op thread (as fedfit trains). Run with
an older ``src`` (no ``min_cohort``), ``--paths local batched`` measures the executor as it was.

``--fit`` measures instead what :mod:`fedfit.simulation.cohort_cost` is fitted to: the process
CPU of ``train_cohort`` against ``train`` one by one on synthetic cohorts of equal data (2 and 10
steps, with and without probes, the least of 3), and prints the non-negative least-squares fit
of the cost model's constants (relative errors weighted equally), the ``simulation.batched_costs``
block that makes a run use them (paste it into the config), and each row's predicted ratio.

    OMP_NUM_THREADS=1 PYTHONPATH=src nice .venv/bin/python bench/batched_training.py
    OMP_NUM_THREADS=1 PYTHONPATH=src nice .venv/bin/python bench/batched_training.py --fit
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


def _workload(model: str, devices: int, samples: int, seed: int = 0) -> Workload:
    kwargs = {"dataset": "fashion_mnist", "num_devices": devices, "partition": "dirichlet", "dirichlet_alpha": 1.0,
              "seed": seed, "max_train_samples": samples * devices, "max_test_samples": 100}
    data = build_federated_data(**kwargs)
    recipe = WorkloadRecipe(ModelSpec(model, data.input_shape, data.num_classes), tuple(sorted(kwargs.items())),
                            seed=seed, optimizer=OptimizerConfig(momentum=0.9))
    return Workload(recipe, data)


def _round(executor: Executor, tasks: list[TrainTask]) -> tuple[float, float, list[Update]]:
    """(wall s, process CPU s, updates) of one round's training."""
    wall, cpu = time.perf_counter(), time.process_time()
    handles = [executor.submit(t) for t in tasks]
    updates = [h.result() for h in handles]
    return time.perf_counter() - wall, time.process_time() - cpu, updates


def _max_diff(a: list[Update], b: list[Update]) -> float:
    return max((x.params[k] - y.params[k]).abs().max().item() for x, y in zip(a, b, strict=True) for k in x.params)


def _executor(path: str, workload: Workload) -> Executor:
    if path == "local":
        return LocalExecutor(workload)
    return BatchedExecutor(workload) if path == "batched" else BatchedExecutor(workload, min_cohort=2)  # type: ignore[call-arg]


def measure(model: str, devices: int, samples: int, repeats: int, probes: bool, paths: list[str],
            seed: int = 0) -> dict[str, float]:
    """Median wall and CPU s of each path's round, the median over repeats of local's CPU over
    each path's (paired: the paths' order rotates from repeat to repeat) and the largest
    parameter difference from the first path. ``seed``: the partition's and the model's initial
    weights' (seeded per cell, so a cell's figures do not depend on the cells run before it)."""
    workload = _workload(model, devices, samples, seed)
    torch.manual_seed(seed)
    params: Params = workload.recipe.model.build().state_dict()
    tasks = [TrainTask(TrainPlan(d, 0, micro_batch=16, lr=0.05, sigma_probe=probes, curvature_probe=probes), params)
             for d in range(devices) if len(workload.data.train[d].x) > 0]
    executors = {p: _executor(p, workload) for p in paths}
    times: dict[str, list[float]] = {f"{p}_{k}": [] for p in paths for k in ("s", "cpu_s")}
    updates: dict[str, list[Update]] = {}
    _round(executors[paths[0]], tasks)  # untimed: the workload's module and first touches of its data
    for r in range(repeats):
        for path in paths[r % len(paths):] + paths[:r % len(paths)]:
            wall, cpu, updates[path] = _round(executors[path], tasks)
            times[f"{path}_s"].append(wall)
            times[f"{path}_cpu_s"].append(cpu)
    ratios = {f"{p}_ratio": statistics.median(a / b for a, b in zip(times[f"{paths[0]}_cpu_s"], times[f"{p}_cpu_s"]))
              for p in paths}
    return {**{k: statistics.median(v) for k, v in times.items()}, "tasks": len(tasks), **ratios,
            **{f"{p}_diff": _max_diff(updates[paths[0]], updates[p]) for p in paths}}


def _table(args: argparse.Namespace) -> None:
    paths = args.paths
    print("| model | devices | probes | " + " | ".join(f"{p} CPU s" for p in paths) + " | " +
          " | ".join(f"{p} vs {paths[0]}" for p in paths[1:]) + " | max abs param diff |\n" +
          "|---" * (3 + 2 * len(paths)) + "|")
    for model in args.models:
        measure(model, 10, args.samples, 1, args.probes, paths)  # warm-up: first calls of each kernel
        for devices in args.devices:
            r = measure(model, devices, args.samples, args.repeats, args.probes, paths, args.seed)
            cpu = [r[f"{p}_cpu_s"] for p in paths]
            print(f"| {model} | {devices} | {args.probes} | " + " | ".join(f"{c:.3f}" for c in cpu) + " | " +
                  " | ".join(f"{r[f'{p}_ratio']:.2f}x" for p in paths[1:]) +
                  f" | {max(r[f'{p}_diff'] for p in paths):.1e} |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=["logreg", "mlp", "cnn"])
    parser.add_argument("--devices", nargs="+", type=int, default=[2, 5, 10, 20, 100])
    parser.add_argument("--samples", type=int, default=40, help="mean training samples per device")
    parser.add_argument("--repeats", type=int, default=6, help="rounds per path (median)")
    parser.add_argument("--seed", type=int, default=0, help="the partition's and the initial weights'")
    parser.add_argument("--probes", action="store_true", help="every plan asks the σ² and curvature probes")
    parser.add_argument("--paths", nargs="+", default=["local", "batched", "vectorised"],
                        choices=["local", "batched", "vectorised"], help="the first is the reference")
    parser.add_argument("--fit", action="store_true", help="fit the cost model's constants instead")
    args = parser.parse_args()
    torch.set_num_threads(1)
    if args.fit:
        from cohort_fit import fit  # bench/cohort_fit.py
        fit(args.models, args.devices)
    else:
        _table(args)


if __name__ == "__main__":
    main()
