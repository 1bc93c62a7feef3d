"""DYNAMITE with the σ² probe on the batched executor vs local: same results, CPU time.

A DYNAMITE run (``dynamite.sigma_probe: true``, homogeneous or heterogeneous solver,
``dynamite.noise_model`` from ``--noise-model``: ``reshuffled`` takes the σ² probe alone,
``curvature`` the curvature probe too) on
Fashion-MNIST (Dirichlet α = 1, ``--samples`` training samples per device on average, the zoo
model ``--model``), every device of the fleet invited each round (10 or 100 per round), runs
through ``simulation.executor: local`` (one task after another), ``batched`` with probing tasks
trained one by one (what the executor did before the probe joined the cohort op: emulated by
keeping probing plans, with ``curvature`` those asking the curvature probe, out of the vectorised
groups) and ``batched`` as it is (the probes inside the cohort op). Prints each run's process CPU time and the part spent training (one-by-one tasks and
cohort ops), whether its ``events.jsonl`` equals local's byte
for byte, and the largest relative difference of its metrics (accuracy, loss, energy, ...) from
local's. One intra-op thread (as fedfit trains).

    OMP_NUM_THREADS=1 PYTHONPATH=src nice python bench/batched_probe.py
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch

from fedfit.config import ExperimentConfig, parse_config
from fedfit.runner import run
from fedfit.simulation import batched
from fedfit.simulation.workload import Workload
from fedfit.training.batched import batchable_plan


def _config(executor: str, devices: int, samples: int, model: str, mode: str, rounds: int,
            noise_model: str) -> ExperimentConfig:
    flagship, older = 3 * devices // 10, 3 * devices // 10
    return parse_config({
        "name": f"probe-{executor}", "seed": 0,
        "data": {"dataset": "fashion_mnist", "partition": {"kind": "dirichlet", "alpha": 1.0},
                 "max_train_samples": samples * devices, "max_test_samples": 500},
        "model": {"name": model},
        "fleet": {"catalogue": "scaled", "tiers": {"flagship_phone": flagship, "older_phone": older,
                                                   "midrange_phone": devices - flagship - older}},
        "training": {"batch_size": 16, "lr": 0.05},
        "orchestration": {"rounds": rounds, "clients_per_round": devices},
        "dynamite": {"mode": mode, "budget_time_s": 120, "tau_max": 20, "sigma_probe": True,
                     "noise_model": noise_model},
        "output": {"plots": False, "progress": False, "checkpoint_every": 0},
        "simulation": {"executor": executor},
    })


@contextmanager
def _probes_one_by_one(curvature: bool) -> Iterator[None]:
    """The executor as before: probing plans kept out of the vectorised groups (``curvature``:
    those asking the curvature probe, the σ² probe alone being batched)."""
    def old(plan: Any, optimizer: Any) -> bool:
        return batchable_plan(plan, optimizer) and not (plan.curvature_probe if curvature else plan.sigma_probe)
    setattr(batched, "batchable_plan", old)
    try:
        yield
    finally:
        setattr(batched, "batchable_plan", batchable_plan)


@contextmanager
def _training_clock(spent: list[float]) -> Iterator[None]:
    """Adds to ``spent[0]`` the process CPU time of every task trained one by one
    (``Workload.run``) and every cohort op (``train_cohort``)."""
    def clocked(train: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            cpu = time.process_time()
            try:
                return train(*args, **kwargs)
            finally:
                spent[0] += time.process_time() - cpu
        return timed
    one, cohort = Workload.run, getattr(batched, "train_cohort")
    setattr(Workload, "run", clocked(one))
    setattr(batched, "train_cohort", clocked(cohort))
    try:
        yield
    finally:
        setattr(Workload, "run", one)
        setattr(batched, "train_cohort", cohort)


def _run(config: ExperimentConfig, run_dir: Path, repeats: int) -> tuple[float, float, str, list[dict[str, Any]]]:
    """(least process CPU s of ``repeats`` runs, least training CPU s, events.jsonl, metric rows)."""
    times = []
    for _ in range(repeats):
        spent = [0.0]
        with _training_clock(spent):
            cpu = time.process_time()
            run(config, run_dir, force=True)
            times.append((time.process_time() - cpu, spent[0]))
    cpu, training = min(t for t, _ in times), min(t for _, t in times)
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    return cpu, training, (run_dir / "events.jsonl").read_text(), rows


def _max_rel_diff(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> float:
    diffs = [abs(x[k] - y[k]) / max(abs(x[k]), 1e-12) for x, y in zip(a, b, strict=True) for k in x
             if isinstance(x[k], float) and k != "wall_time_s"]
    return max(diffs, default=0.0) if len(a) == len(b) else float("inf")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--devices", nargs="+", type=int, default=[10, 100])
    parser.add_argument("--samples", type=int, default=40, help="mean training samples per device")
    parser.add_argument("--model", default="mlp")
    parser.add_argument("--mode", default="homogeneous", help="DYNAMITE solver")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--noise-model", default="reshuffled", choices=["reshuffled", "iid", "curvature"],
                        help="dynamite.noise_model (curvature: the curvature probe too)")
    parser.add_argument("--repeats", type=int, default=1, help="runs per path (the least CPU times are printed)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    print(f"model {args.model}, DYNAMITE {args.mode}, {args.rounds} rounds, sigma_probe: true, "
          f"noise_model: {args.noise_model}, least CPU of {args.repeats} runs\n"
          "| devices/round | path | CPU s | vs local | training CPU s | vs local | events equal local | "
          "max rel metric diff |\n|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for devices in args.devices:
            conf = {e: _config(e, devices, args.samples, args.model, args.mode, args.rounds, args.noise_model)
                    for e in ("local", "batched")}
            _run(conf["batched"], Path(tmp) / f"warm-{devices}", 1)  # warm-up: data cache, first kernel calls
            local = _run(conf["local"], Path(tmp) / f"local-{devices}", args.repeats)
            with _probes_one_by_one(args.noise_model == "curvature"):
                before = _run(conf["batched"], Path(tmp) / f"before-{devices}", args.repeats)
            after = _run(conf["batched"], Path(tmp) / f"batched-{devices}", args.repeats)
            for name, got in (("local", local), ("batched, probes one by one", before),
                              ("batched, probes in the cohort op", after)):
                print(f"| {devices} | {name} | {got[0]:.2f} | {local[0] / got[0]:.2f}x | {got[1]:.2f} | "
                      f"{local[1] / got[1]:.2f}x | {got[2] == local[2]} | {_max_rel_diff(local[3], got[3]):.1e} |",
                      flush=True)


if __name__ == "__main__":
    main()
