"""The Ray executor against in-process training: same results, and what each costs in wall time.

One small job (Fashion-MNIST, MLP, 100 devices, 10 per round, 5 rounds by default) runs once
with ``simulation.executor: local`` and once with ``ray`` on a local Ray instance of
``--workers`` CPUs (started before the timer: a cluster outlives runs). Prints, per executor, the
wall seconds of the run (of building it plus round 1, and of each later round), a SHA-256 of
the final model's bytes and of ``events.jsonl``, and whether the metrics rows (wall time
removed) are equal.

``--nodes N`` runs the Ray side on a cluster of N nodes emulated on this machine instead
(``ray.cluster_utils.Cluster``: N Ray nodes, each its own raylet, object store and workers, with
``workers / N`` CPUs each, all on 127.0.0.1), joined through ``simulation.ray_address`` as a
real cluster would be; the executor's stderr line says how many workers ran on each node.

    OMP_NUM_THREADS=1 PYTHONPATH=src nice .venv/bin/python bench/ray_executor.py --workers 2
    OMP_NUM_THREADS=1 PYTHONPATH=src nice .venv/bin/python bench/ray_executor.py --workers 3 --nodes 3
"""

from __future__ import annotations

import argparse
import hashlib
import json
import tempfile
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psutil

from fedfit.config import ExperimentConfig, parse_config
from fedfit.runner import run
from fedfit.simulation.ray_executor import loopback_only, start_local_cluster


def job(executor: str, args: argparse.Namespace, address: str | None = None) -> ExperimentConfig:
    return parse_config({
        "seed": 0, "data": {"dataset": args.dataset, "max_train_samples": 12000, "max_test_samples": 1000},
        "model": {"name": args.model},
        "fleet": {"tiers": {"flagship_phone": args.devices // 2, "midrange_phone": args.devices - args.devices // 2}},
        "orchestration": {"rounds": args.rounds, "clients_per_round": args.per_round},
        "simulation": {"executor": executor, "workers": args.workers, "ray_address": address},
        "output": {"plots": False, "progress": False, "checkpoint_every": 0}})


def measure(executor: str, args: argparse.Namespace, root: Path, address: str | None = None) -> dict[str, Any]:
    run_dir = root / executor
    start = time.perf_counter()
    ends: list[float] = []
    result = run(job(executor, args, address), run_dir, lambda outcome: ends.append(time.perf_counter()))
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


@contextmanager
def local_instance(cpus: int) -> Iterator[None]:
    start = time.perf_counter()
    ray = start_local_cluster(num_cpus=cpus)
    print(f"local Ray instance with {cpus} CPUs started in {time.perf_counter() - start:.1f} s")
    try:
        yield
    finally:
        ray.shutdown()


@contextmanager
def emulated_cluster(nodes: int, workers: int) -> Iterator[str]:
    """``nodes`` Ray nodes of ``workers / nodes`` CPUs each on 127.0.0.1; yields the head's address."""
    from ray.cluster_utils import Cluster

    if workers % nodes:
        raise SystemExit(f"--workers {workers} must be a multiple of --nodes {nodes}")
    start, cluster = time.perf_counter(), Cluster()
    try:
        with loopback_only():
            for _ in range(nodes):  # the first is the head
                cluster.add_node(wait=False, num_cpus=workers // nodes, node_ip_address="127.0.0.1",
                                 include_dashboard=False)
        cluster.wait_for_nodes(timeout=300)
        print(f"{nodes} Ray nodes with {workers // nodes} CPU(s) each started in {time.perf_counter() - start:.1f} s "
              f"at {cluster.address}")
        yield cluster.address
    finally:
        started = psutil.Process().children(recursive=True)
        for node in [*cluster.worker_nodes, *([cluster.head_node] if cluster.head_node else [])]:
            cluster.remove_node(node, allow_graceful=False)  # a graceful stop can wait for ever
        cluster.shutdown()  # forgets the cluster's address
        for process in started:  # agents a killed raylet leaves behind
            if process.is_running():
                process.kill()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--devices", type=int, default=100)
    parser.add_argument("--per-round", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--dataset", default="fashion_mnist")
    parser.add_argument("--model", default="mlp")
    parser.add_argument("--nodes", type=int, default=0, help="emulate a cluster of this many Ray nodes (0: one local instance)")
    args = parser.parse_args()
    warnings.filterwarnings("ignore", category=FutureWarning)  # Ray's tip about a future default
    with tempfile.TemporaryDirectory() as tmp:
        if args.nodes:
            with emulated_cluster(args.nodes, args.workers) as address:
                rows = [measure("local", args, Path(tmp)), measure("ray", args, Path(tmp), address)]
        else:
            with local_instance(args.workers):
                rows = [measure(executor, args, Path(tmp)) for executor in ("local", "ray")]
    for row in rows:
        print(f"{row['executor']:>5}: wall {row['wall_s']:7.2f} s (build + round 1 {row['first_round_s']:.2f} s, "
              f"later rounds {row['later_round_s']:.2f} s each)  model {row['model_sha256']}  "
              f"events {row['events_sha256']}  final accuracy {row['final_accuracy']:.4f}")
    same = all(rows[0][k] == rows[1][k] for k in ("model_sha256", "events_sha256", "metrics"))
    print(f"identical model bytes, events and metrics: {same}")


if __name__ == "__main__":
    main()
