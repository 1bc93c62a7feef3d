"""The same federated job through fedfit's simulator and through Flower's simulation, side by side.

Same model, data partition (``build_federated_data``, IID, same seed), fixed batch, local epochs,
learning rate, clients per round and rounds; both train with fedfit's trainer on one torch
intra-op thread and evaluate the global model on the same test set after every round. Flower
runs its own ``FedAvg`` (Message API, ``run_simulation`` on Ray, bound to 127.0.0.1, ``--num-cpus``
CPUs, one per client actor); fedfit runs its orchestrator with the ``local`` executor (one
process) on a fleet of always-online mains-powered devices (a CSV trace pins them online, cool
and on Wi-Fi), so every invited device returns an update on both sides. ``--fedfit-executor process`` gives fedfit a pool of ``--num-cpus`` workers, as
many processes as Flower's client actors.

Each side runs in its own child process; the parent times the child from spawn to exit (the
whole-process wall time, imports and Ray start-up included). Inside, the child times the round
loop; per-client-update time = round-loop wall time / client updates.

    PYTHONPATH=src python bench/flower_side_by_side.py                      # 100 clients x 10 x 20 rounds
    PYTHONPATH=src python bench/flower_side_by_side.py --clients 1000 --rounds 100   # FLUTE-style
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("FLWR_TELEMETRY_ENABLED", "0")
os.environ["OMP_NUM_THREADS"] = "1"  # both sides, and Flower's Ray workers, which inherit it

ALWAYS_ON = "t_s,link,bandwidth_bps,online,temperature_c\n0,wifi,100000000,true,30\n"


def fedfit_config(args: argparse.Namespace, trace: str) -> Any:
    from fedfit.config import parse_config

    return parse_config({
        "name": "side_by_side", "seed": args.seed,
        "data": {"dataset": args.dataset, "partition": {"kind": "iid"}, "max_train_samples": args.max_train,
                 "max_test_samples": args.max_test, "local_test_fraction": 0.0},
        "model": {"name": args.model},
        "fleet": {"tiers": {"vehicle_computer": args.clients}, "traces": {i: trace for i in range(args.clients)}},
        "training": {"batch_size": args.batch, "local_epochs": args.epochs, "lr": args.lr},
        "orchestration": {"rounds": args.rounds, "clients_per_round": args.per_round},
        "batching": {"mode": "fixed", "selection": "uniform"},
        "output": {"plots": False, "progress": False, "checkpoint_every": 0},
        "simulation": {"executor": args.fedfit_executor, "workers": args.num_cpus},
    })


def run_fedfit(args: argparse.Namespace) -> dict[str, float]:
    """fedfit's orchestrator over the simulated fleet; returns updates, loop seconds, accuracy."""
    import torch

    from fedfit.experiment import built

    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as tmp:
        trace = Path(tmp) / "always_on.csv"
        trace.write_text(ALWAYS_ON)
        config = fedfit_config(args, str(trace))
        updates, accuracy = 0, 0.0
        with built(config) as exp:
            start = time.perf_counter()
            for outcome in exp.orchestrator.rounds(exp.initial_params):
                updates += sum(1 for r in outcome.results if r.ok)
                accuracy = float(outcome.report.accuracy or 0.0)
            loop_s = time.perf_counter() - start
    return {"updates": updates, "loop_s": loop_s, "accuracy": accuracy}


def run_flower(args: argparse.Namespace) -> dict[str, float]:
    """Flower's FedAvg in Flower's simulation; returns updates, loop seconds, accuracy."""
    import logging

    import torch
    from flwr.app import ArrayRecord, Context, Message, MetricRecord, RecordDict
    from flwr.clientapp import ClientApp
    from flwr.serverapp import Grid, ServerApp
    from flwr.serverapp.strategy import FedAvg

    from fedfit.flower import PartitionData, run_local_simulation
    from fedfit.flower.records import params_record, record_params
    from fedfit.models import ModelSpec
    from fedfit.training import evaluate, train
    from fedfit.types import TrainPlan

    torch.set_num_threads(1)
    logging.getLogger("flwr").setLevel(logging.WARNING)
    data = PartitionData(args.dataset, args.clients, "iid", seed=args.seed, max_train_samples=args.max_train,
                         max_test_samples=args.max_test)
    spec = ModelSpec(args.model, data.federated().input_shape, data.federated().num_classes)
    batch, epochs, lr, seed = args.batch, args.epochs, args.lr, args.seed
    client = ClientApp()

    @client.train()
    def _train(message: Message, context: Context) -> Message:
        torch.set_num_threads(1)
        node = int(context.node_config["partition-id"])
        x, y = data.train(node)
        plan = TrainPlan(node, int(message.content["config"]["server-round"]), micro_batch=batch,
                         local_epochs=epochs, lr=lr)
        update = train(spec.build(), record_params(message.content["arrays"]), x, y, plan, seed=seed)
        metrics = MetricRecord({"num-examples": len(y)})
        return Message(RecordDict({"arrays": params_record(update.params), "metrics": metrics}), reply_to=message)

    seen = {"updates": 0, "loop_s": 0.0, "accuracy": 0.0}

    class CountingFedAvg(FedAvg):
        def aggregate_train(self, server_round, replies):  # type: ignore[no-untyped-def]
            replies = list(replies)
            seen["updates"] += sum(1 for r in replies if not r.has_error())
            return super().aggregate_train(server_round, replies)

    server = ServerApp()
    x_test, y_test = data.test()

    @server.main()
    def _main(grid: Grid, context: Context) -> None:
        def central(server_round: int, arrays: ArrayRecord) -> MetricRecord:
            accuracy, loss = evaluate(spec.build(), record_params(arrays), x_test, y_test)
            seen["accuracy"] = accuracy
            return MetricRecord({"accuracy": accuracy, "loss": loss})

        strategy = CountingFedAvg(fraction_train=args.per_round / args.clients, fraction_evaluate=0.0,
                                  min_train_nodes=args.per_round, min_available_nodes=args.clients)
        torch.manual_seed(seed)
        start = time.perf_counter()
        strategy.start(grid=grid, initial_arrays=params_record(spec.build().state_dict()), num_rounds=args.rounds,
                       evaluate_fn=central)
        seen["loop_s"] = time.perf_counter() - start

    run_local_simulation(server, client, num_nodes=args.clients, num_cpus=args.num_cpus)
    return seen


def child(args: argparse.Namespace) -> None:
    result = run_fedfit(args) if args.side == "fedfit" else run_flower(args)
    print("RESULT " + json.dumps(result), flush=True)


def measure_side(side: str, argv: list[str]) -> dict[str, float]:
    """Run one side in a child process; its whole-process wall time and its own figures."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(Path(__file__).parent), *sys.path]))
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, __file__, "--side", side, *argv], env=env, text=True,
                          capture_output=True, check=False)
    whole_s = time.perf_counter() - start
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    if proc.returncode != 0 or not lines:
        raise SystemExit(f"{side} side failed (exit {proc.returncode}): {proc.stderr.strip()[-2000:]}")
    return {**json.loads(lines[-1][7:]), "whole_s": whole_s}


def table(results: dict[str, dict[str, float]], args: argparse.Namespace) -> str:
    rows = [f"job: {args.clients} clients x {args.per_round} per round x {args.rounds} rounds, {args.model} on "
            f"{args.dataset} (IID, {args.max_train} train samples), batch {args.batch}, {args.epochs} epoch(s), "
            f"torch threads 1; Flower on {args.num_cpus} Ray CPU(s), fedfit executor {args.fedfit_executor}"
            f"{f' ({args.num_cpus} workers)' if args.fedfit_executor == 'process' else ''}; load average {os.getloadavg()[0]:.1f} "
            f"on {os.cpu_count()} cores",
            f"{'side':<8} {'updates':>8} {'loop s':>9} {'s/update':>9} {'process s':>10} {'final acc':>9}"]
    for side, r in results.items():
        rows.append(f"{side:<8} {int(r['updates']):>8} {r['loop_s']:>9.2f} {r['loop_s'] / max(r['updates'], 1):>9.4f} "
                    f"{r['whole_s']:>10.2f} {r['accuracy']:>9.3f}")
    if {"fedfit", "flower"} <= results.keys():
        f, w = results["fedfit"], results["flower"]
        per = (w["loop_s"] / max(w["updates"], 1)) / (f["loop_s"] / max(f["updates"], 1))
        rows.append(f"Flower / fedfit: {per:.2f}x per client update, {w['whole_s'] / f['whole_s']:.2f}x whole process "
                    f"(target >= 5x)")
    return "\n".join(rows)


def parse(argv: list[str] | None = None) -> tuple[argparse.Namespace, list[str]]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clients", type=int, default=100)
    ap.add_argument("--per-round", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--model", default="mlp", choices=["logreg", "mlp", "cnn"])
    ap.add_argument("--dataset", default="fashion_mnist", choices=["fashion_mnist", "digits"])
    ap.add_argument("--max-train", type=int, default=60000, help="training samples over all clients")
    ap.add_argument("--max-test", type=int, default=1000)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--num-cpus", type=int, default=2,
                    help="Ray CPUs for Flower's simulation (and fedfit's pool workers with --fedfit-executor process)")
    ap.add_argument("--fedfit-executor", default="local", choices=["local", "process"],
                    help="fedfit's executor: local (one process) or process (a pool of --num-cpus workers)")
    ap.add_argument("--sides", default="fedfit,flower")
    ap.add_argument("--side", choices=["fedfit", "flower"], help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    raw = [a for a in (argv if argv is not None else sys.argv[1:])]
    passthrough = [a for i, a in enumerate(raw) if not (a.startswith("--side") or (i and raw[i - 1] == "--sides"))]
    return args, passthrough


def main() -> None:
    args, passthrough = parse()
    if args.side:
        child(args)
        return
    results = {side: measure_side(side, passthrough) for side in args.sides.split(",")}
    print(table(results, args))


if __name__ == "__main__":
    main()
