"""The same federated job through fedfit's simulator and through Flower's simulation, side by side.

Same model, data partition (``build_federated_data``, IID, same seed), fixed batch, local epochs,
learning rate, clients per round and rounds; both train with fedfit's trainer on one torch
intra-op thread and evaluate the global model on the same test set after every round. Flower
runs its own ``FedAvg`` (Message API, ``run_simulation`` on Ray, bound to 127.0.0.1, ``--num-cpus``
CPUs, one per client actor); fedfit runs its orchestrator on a fleet of always-online
mains-powered devices (a CSV trace pins them online, cool and on Wi-Fi), so every invited device
returns an update on both sides. Each entry of ``--sides`` is one row: ``fedfit`` (the executor
``--fedfit-executor`` names, by default ``auto``, fedfit's default config: ``threads`` with one
training thread per core this process may run on, ``local`` on one core), ``fedfit:local`` (one
thread), ``fedfit:process`` (a pool of
``--num-cpus`` workers, as many processes as Flower's client actors; results identical to
``local``), ``fedfit:batched`` (a round's cohort trained as one vectorised op; results equal to
``local`` within float rounding), ``fedfit:threads`` (the devices of a round trained concurrently on
``--num-cpus`` threads of one process, as many as Flower's client actors; results identical to
``local``) and ``flower``.

Each side runs in its own child process; the parent times the child from spawn to exit (the
whole-process wall time, imports and Ray start-up included) and samples the CPU time (user +
system) of its whole process tree: Ray's processes for Flower, pool workers for fedfit.
Inside, the child times the round loop; per-client-update time = round-loop wall time / client
updates. fedfit's child starts and ends as ``fedfit run`` does (``fedfit.entry``): it starts reading
the data set's files before it imports torch (``fedfit.prefetch``), imports with Python's cyclic
garbage collector paused, and exits without the interpreter's teardown (``exit_now``). ``--profile FILE`` writes a cProfile of fedfit's round loop (in the driver process; the last fedfit row's).

Before the first row the parent compiles fedfit's modules to bytecode beside their sources
(``compileall``, what ``pip install`` does for an installed package; ``--no-compile`` skips it),
so that every row, the first included, imports them the way it imports torch's and Flower's:
from the bytecode their installs wrote. Both sides import fedfit (Flower's clients train with
fedfit's trainer, in each Ray worker). Without it, under ``PYTHONDONTWRITEBYTECODE`` (or in a
fresh checkout's first run) every process compiles fedfit's ~200 modules from source, a cost an
installed fedfit never pays and the installed packages beside it never pay either.

    PYTHONPATH=src python bench/flower_side_by_side.py                      # 100 clients x 10 x 20 rounds
    PYTHONPATH=src python bench/flower_side_by_side.py --clients 1000 --rounds 100   # FLUTE-style
    PYTHONPATH=src python bench/flower_side_by_side.py --sides fedfit,fedfit:process,flower
"""

from __future__ import annotations

import argparse
import cProfile
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

#: fedfit executors a row may run, and the rows ``--sides`` accepts.
EXECUTORS = ("auto", "local", "process", "batched", "threads")
SIDES = ("fedfit", *(f"fedfit:{e}" for e in EXECUTORS), "flower")
ALWAYS_ON = "t_s,link,bandwidth_bps,online,temperature_c\n0,wifi,100000000,true,30\n"


def fedfit_config(args: argparse.Namespace, trace: str, executor: str) -> Any:
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
        # auto: fedfit's default (one training thread per core); a pool: as many workers as Flower's actors
        "simulation": {"executor": executor} if executor == "auto" else {"executor": executor, "workers": args.num_cpus},
    })


def run_fedfit(args: argparse.Namespace, executor: str) -> dict[str, float]:
    """fedfit's orchestrator over the simulated fleet; returns updates, loop seconds, accuracy."""
    from fedfit.entry import collector_paused
    from fedfit.prefetch import start_dataset

    with collector_paused():  # as ``fedfit run`` does (fedfit.entry): no collections while importing,
        start_dataset(args.dataset)  # and the files read while torch imports
        import torch

        from fedfit.experiment import built

    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as tmp:
        trace = Path(tmp) / "always_on.csv"
        trace.write_text(ALWAYS_ON)
        config = fedfit_config(args, str(trace), executor)
        updates, accuracy = 0, 0.0
        profile = cProfile.Profile() if args.profile else None  # the driver only on a pool
        with built(config) as exp:
            start, start_cpu = time.perf_counter(), time.process_time()
            if profile is not None:
                profile.enable()
            for outcome in exp.orchestrator.rounds(exp.initial_params):
                updates += sum(1 for r in outcome.results if r.ok)
                accuracy = float(outcome.report.accuracy or 0.0)
            loop_s, loop_cpu_s = time.perf_counter() - start, time.process_time() - start_cpu
        if profile is not None:
            profile.disable()
            profile.dump_stats(args.profile)
    # loop_cpu_s: this process's CPU time in the loop (all of it for ``local``; the driver only otherwise)
    return {"updates": updates, "loop_s": loop_s, "loop_cpu_s": loop_cpu_s, "accuracy": accuracy}


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


def fedfit_executor(side: str, args: argparse.Namespace) -> str:
    """The executor a ``fedfit`` or ``fedfit:EXECUTOR`` row runs."""
    return side.partition(":")[2] or args.fedfit_executor


def child(args: argparse.Namespace) -> None:
    side = args.side
    result = run_flower(args) if side == "flower" else run_fedfit(args, fedfit_executor(side, args))
    print("RESULT " + json.dumps(result), flush=True)
    if side != "flower":
        from fedfit.entry import exit_now

        exit_now(0)  # as ``fedfit run`` ends (fedfit.entry)


#: How often the parent samples the CPU time of a side's process tree (seconds).
CPU_SAMPLE_S = 0.2


def tree_cpu_s(proc: subprocess.Popen[str], seen: dict[int, float]) -> None:
    """Record the user + system CPU seconds of ``proc`` and every descendant now (per pid, the
    latest reading: Ray's GCS, raylet and workers for Flower, pool workers for fedfit)."""
    import psutil

    try:
        root = psutil.Process(proc.pid)
        tree = [root, *root.children(recursive=True)]
    except psutil.Error:
        return
    for p in tree:
        try:
            t = p.cpu_times()
            seen[p.pid] = max(seen.get(p.pid, 0.0), t.user + t.system)
        except psutil.Error:
            continue


def measure_side(side: str, argv: list[str]) -> dict[str, float]:
    """Run one side in a child process; its whole-process wall time, CPU time and own figures."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(Path(__file__).parent), *sys.path]))
    seen: dict[int, float] = {}
    start = time.perf_counter()
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen([sys.executable, __file__, "--side", side, *argv], env=env, text=True,
                                stdout=out, stderr=err, stdin=subprocess.DEVNULL)
        while proc.poll() is None:
            tree_cpu_s(proc, seen)
            time.sleep(CPU_SAMPLE_S)
        whole_s = time.perf_counter() - start
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    lines = [ln for ln in stdout.splitlines() if ln.startswith("RESULT ")]
    if proc.returncode != 0 or not lines:
        raise SystemExit(f"{side} side failed (exit {proc.returncode}): {stderr.strip()[-2000:]}")
    return {**json.loads(lines[-1][7:]), "whole_s": whole_s, "cpu_s": sum(seen.values())}


def row_label(side: str, args: argparse.Namespace) -> str:
    """A row's name in the table: the side and, for fedfit, its executor."""
    if side == "flower":
        return f"flower ({args.num_cpus} actors)"
    executor = fedfit_executor(side, args)
    if executor == "auto":
        from fedfit.simulation.threads import auto_executor

        chosen, workers = auto_executor(zoo_model=True)
        return f"fedfit auto ({chosen}" + (f", {workers} workers)" if chosen == "threads" else ")")
    return f"fedfit {executor}" + (f" ({args.num_cpus} workers)" if executor in ("process", "threads") else "")


def per_update(r: dict[str, float]) -> float:
    return r["loop_s"] / max(r["updates"], 1)


def table(results: dict[str, dict[str, float]], args: argparse.Namespace) -> str:
    """The results as a table, with each fedfit row's speed-up over Flower (target >= 5x)."""
    rows = [f"job: {args.clients} clients x {args.per_round} per round x {args.rounds} rounds, {args.model} on "
            f"{args.dataset} (IID, {args.max_train} train samples), batch {args.batch}, {args.epochs} epoch(s), "
            f"torch threads 1, Flower on {args.num_cpus} Ray CPU(s); load average {os.getloadavg()[0]:.1f} "
            f"at the end, {os.cpu_count()} cores",
            f"{'row':<26} {'updates':>7} {'loop s':>8} {'s/update':>9} {'process s':>9} {'CPU s':>7} "
            f"{'final acc':>9} {'x per update':>12} {'x process':>9}"]
    flower = results.get("flower")
    for side, r in results.items():
        per, ratio_u, ratio_p = per_update(r), "", ""
        if flower is not None and side != "flower":
            ratio_u, ratio_p = f"{per_update(flower) / per:.2f}x", f"{flower['whole_s'] / r['whole_s']:.2f}x"
        rows.append(f"{row_label(side, args):<26} {int(r['updates']):>7} {r['loop_s']:>8.2f} {per:>9.4f} "
                    f"{r['whole_s']:>9.2f} {r['cpu_s']:>7.1f} {r['accuracy']:>9.3f} {ratio_u:>12} {ratio_p:>9}")
    rows.append("x = Flower's time / the row's time (target >= 5x per update and whole process); CPU s: user + "
                f"system of the row's whole process tree, sampled every {CPU_SAMPLE_S} s")
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
    ap.add_argument("--fedfit-executor", default="auto", choices=list(EXECUTORS),
                    help="the executor of a plain 'fedfit' row: auto (fedfit's default: a training thread "
                         "per core, local on one core), local (one thread), process (a pool of --num-cpus "
                         "workers), batched (vmap over a round's cohort) or threads (--num-cpus training "
                         "threads in one process)")
    ap.add_argument("--sides", default="fedfit,flower",
                    help="rows, comma-separated: fedfit, fedfit:auto, fedfit:local, fedfit:process, "
                         "fedfit:batched, fedfit:threads, flower")
    ap.add_argument("--profile", metavar="FILE", help="write a cProfile of fedfit's round loop (the driver's; the last fedfit row)")
    ap.add_argument("--no-compile", dest="compile", action="store_false",
                    help="do not compile fedfit's modules to bytecode before the first row (as installing it does)")
    ap.add_argument("--side", choices=SIDES, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    bad = [side for side in args.sides.split(",") if side not in SIDES]
    if bad:
        ap.error(f"--sides: unknown row {bad[0]!r} (one of {', '.join(SIDES)})")
    raw = [a for a in (argv if argv is not None else sys.argv[1:])]
    passthrough = [a for i, a in enumerate(raw) if not (a.startswith("--side") or (i and raw[i - 1] == "--sides"))]
    return args, passthrough


def compile_fedfit() -> float:
    """Compile fedfit's modules to bytecode beside their sources, as installing the package does
    (``py_compile`` writes it whatever ``PYTHONDONTWRITEBYTECODE`` says); returns the seconds taken."""
    import compileall
    import importlib.util

    spec = importlib.util.find_spec("fedfit")
    start = time.perf_counter()
    for folder in (spec.submodule_search_locations or []) if spec is not None else []:
        compileall.compile_dir(folder, quiet=1)
    return time.perf_counter() - start


def main() -> None:
    args, passthrough = parse()
    if args.side:
        child(args)
        return
    if args.compile:
        print(f"fedfit's modules compiled to bytecode in {compile_fedfit():.2f} s (as an install does)",
              file=sys.stderr, flush=True)
    results = {}
    for side in args.sides.split(","):
        results[side] = measure_side(side, passthrough)
        print(f"{row_label(side, args)}: {results[side]}", file=sys.stderr, flush=True)
    print(table(results, args))


if __name__ == "__main__":
    main()
