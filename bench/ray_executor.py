"""The Ray executor against in-process training: same results, and what each costs in wall time.

One small job (Fashion-MNIST, MLP, 100 devices, 10 per round, 5 rounds by default) runs once
with ``simulation.executor: local`` and once with ``ray`` on a local Ray instance of
``--workers`` CPUs (started before the timer: a cluster outlives runs). Prints, per executor, the
wall seconds of the run (of building it plus round 1, and of each later round), a SHA-256 of
the final model's bytes and of ``events.jsonl``, and whether the metrics rows (wall time
removed) are equal.

    OMP_NUM_THREADS=1 PYTHONPATH=src nice .venv/bin/python bench/ray_executor.py --workers 2
"""

from __future__ import annotations

import argparse
import hashlib
import json
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

from fedfit.config import ExperimentConfig, parse_config
from fedfit.runner import run
from fedfit.simulation.ray_executor import start_local_cluster


def job(executor: str, args: argparse.Namespace) -> ExperimentConfig:
    return parse_config({
        "seed": 0, "data": {"dataset": args.dataset, "max_train_samples": 12000, "max_test_samples": 1000},
        "model": {"name": args.model},
        "fleet": {"tiers": {"flagship_phone": args.devices // 2, "midrange_phone": args.devices - args.devices // 2}},
        "orchestration": {"rounds": args.rounds, "clients_per_round": args.per_round},
        "simulation": {"executor": executor, "workers": args.workers},
        "output": {"plots": False, "progress": False, "checkpoint_every": 0}})


def measure(executor: str, args: argparse.Namespace, root: Path) -> dict[str, Any]:
    run_dir = root / executor
    start = time.perf_counter()
    ends: list[float] = []
    result = run(job(executor, args), run_dir, lambda outcome: ends.append(time.perf_counter()))
    wall_s = time.perf_counter() - start
    params = result.params
    metrics = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    for row in metrics:
        row.pop("wall_time_s")
    return {"executor": executor, "wall_s": round(wall_s, 2), "first_round_s": round(ends[0] - start, 2),
            "later_round_s": round((ends[-1] - ends[0]) / max(1, len(ends) - 1), 2),
            "model_sha256": hashlib.sha256(b"".join(params[k].numpy().tobytes() for k in sorted(params))).hexdigest()[:16],
            "events_sha256": hashlib.sha256((run_dir / "events.jsonl").read_bytes()).hexdigest()[:16],
            "metrics": metrics, "final_accuracy": result.summary["final_accuracy"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--devices", type=int, default=100)
    parser.add_argument("--per-round", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--dataset", default="fashion_mnist")
    parser.add_argument("--model", default="mlp")
    args = parser.parse_args()
    warnings.filterwarnings("ignore", category=FutureWarning)  # Ray's tip about a future default
    start = time.perf_counter()
    ray = start_local_cluster(num_cpus=args.workers)
    print(f"local Ray instance with {args.workers} CPUs started in {time.perf_counter() - start:.1f} s")
    try:
        with tempfile.TemporaryDirectory() as tmp:
            rows = [measure(executor, args, Path(tmp)) for executor in ("local", "ray")]
    finally:
        ray.shutdown()
    for row in rows:
        print(f"{row['executor']:>5}: wall {row['wall_s']:7.2f} s (build + round 1 {row['first_round_s']:.2f} s, "
              f"later rounds {row['later_round_s']:.2f} s each)  model {row['model_sha256']}  "
              f"events {row['events_sha256']}  final accuracy {row['final_accuracy']:.4f}")
    same = all(rows[0][k] == rows[1][k] for k in ("model_sha256", "events_sha256", "metrics"))
    print(f"identical model bytes, events and metrics: {same}")


if __name__ == "__main__":
    main()
