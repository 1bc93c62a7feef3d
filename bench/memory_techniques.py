"""Memory-constrained training techniques beside plain training, in one run.

For each technique on the CNN and the MLP (Adam, so optimiser state counts):

- predicted peak: :func:`fedfit.cost.techniques.plan_peak_bytes` at micro-batch ``--batch``;
- measured peak: peak-RSS growth (VmHWM after ``clear_refs``, glibc mmap threshold pinned so
  freed tensors leave RSS) of a fresh process running the real training step (forked from a
  process that has only imported fedfit), plus the weights already resident;
- FLOPs ×: the time model's device FLOPs per task relative to plain; wall ×: the subprocess's
  measured wall time per step relative to plain (one thread);
- up KiB: bytes the device uploads per task (model payload, plus activations under split);
- accuracy after ``--rounds`` federated rounds on Fashion-MNIST (``--dataset digits``: the 8×8
  digits, where Fashion-MNIST is not installed) (tablets only, so every
  task fits and only the technique differs), and the int8 export's accuracy for QAT.

    PYTHONPATH=src .venv/bin/python bench/memory_techniques.py [--rounds 5] [--batch 128]
        [--models cnn,mlp]   # also resnet8, resnet20 (static batch-norm), lstm, mobilenetv2 (width 0.35,
                             # 3x64x64, static batch-norm; --rounds 0 only); --rounds 0: steps only
        [--tuned] [--target 0.65]  # also fedavg-tuned's grid per model: time to target vs it
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import subprocess
import sys
import time

import torch

from fedfit import inputs
from fedfit.config import ExperimentConfig, parse_config
from fedfit.cost import MemoryModel, measure
from fedfit.cost.technique_work import activation_traffic_bytes, plan_flops, plan_payload_bytes
from fedfit.cost.techniques import plan_peak_bytes
from fedfit.runner import run
from fedfit.models import ModelSpec
from fedfit.models.stages import stages_of
from fedfit.training import OptimizerConfig, train
from fedfit.types import Techniques, TrainPlan
from tuned_baseline import print_ratios, tuned

SHAPE, CLASSES, SAMPLES = (1, 28, 28), 10, 512
#: The residual networks and MobileNetV2 train with (static) batch-norm, as they are meant to.
NORM = {"resnet8": "batch", "resnet20": "batch", "mobilenetv2": "batch"}
#: MobileNetV2 small: width 0.35 on 3×64×64 images (it needs a side of 64 or more).
SHAPES = {"mobilenetv2": (3, 64, 64)}
WIDTHS = {"mobilenetv2": 0.35}


def bench_spec(model_name: str) -> ModelSpec:
    return ModelSpec(model_name, SHAPES.get(model_name, SHAPE), CLASSES, width=WIDTHS.get(model_name, 1.0),
                     norm=NORM.get(model_name, "none"))
OPT = OptimizerConfig(kind="adam")
#: name → (Techniques for the step measurement, ``memory:`` config for the federated run)
TECHNIQUES: dict[str, tuple[Techniques, dict]] = {
    "plain": (Techniques(), {"mode": "off"}),
    "checkpointing": (Techniques(checkpointing=True), {"techniques": ["checkpointing"]}),
    "head-only": (Techniques(train_stages=(-1,)), {"techniques": ["selective"]}),
    "importance k=1": (Techniques(importance_k=1), {"techniques": ["selective"], "selective": {"mode": "importance"}}),
    "partial 25%": (Techniques(keep_fraction=0.25), {"techniques": ["partial"], "partial": {"keep_fraction": 0.25}}),
    "pruning 90%": (Techniques(sparsity=0.9), {"techniques": ["pruning"], "pruning": {"sparsities": [0.9]}}),
    "qat int8": (Techniques(qat_bits=8), {"techniques": ["qat"]}),
    "progressive": (Techniques(progressive_stage=0), {"techniques": ["progressive"],
                                                      "progressive": {"rounds_per_stage": 1}}),
    "split cut 1": (Techniques(split_cut=1), {"techniques": ["split"], "split": {"cut": 1}}),
}


def _techniques(name: str, num_stages: int) -> Techniques:
    t = TECHNIQUES[name][0]
    return Techniques(train_stages=(num_stages - 1,)) if t.train_stages == (-1,) else t


def _status_kib(field: str) -> int:
    for line in open("/proc/self/status"):
        if line.startswith(field):
            return int(line.split()[1])
    raise RuntimeError(field)


def child(model_name: str, name: str, batch: int) -> None:
    """Run the real training step in this fresh process; print peak-RSS growth and step time."""
    torch.set_num_threads(1)
    spec = bench_spec(model_name)
    model = spec.build()
    params = {k: v.clone() for k, v in model.state_dict().items()}
    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(SAMPLES, *spec.input_shape, generator=g), torch.randint(0, CLASSES, (SAMPLES,), generator=g)
    plan = TrainPlan(0, 0, batch, lr=1e-3, techniques=_techniques(name, len(stages_of(model))))
    train(model, params, x[:batch], y[:batch], plan, seed=0, optimizer=OPT)  # warm-up, then freed
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # reset the peak-RSS mark
    base = _status_kib("VmRSS:")
    t0 = time.perf_counter()
    update = train(model, params, x, y, plan, seed=0, optimizer=OPT)
    wall = (time.perf_counter() - t0) / update.steps
    growth = (_status_kib("VmHWM:") - base) * 1024
    # the weights were resident before the mark: add them back, as the prediction counts them
    print(json.dumps({"peak_bytes": growth + sum(p.numel() * 4 for p in model.parameters()), "step_s": wall}))


def measure_steps(models: list[str], batch: int) -> dict[tuple[str, str], dict]:
    """Every (model, technique) step, each in a fresh process forked from one that has only
    imported torch and fedfit (so no import cost, and no state from another measurement)."""
    env = {**os.environ, "MALLOC_MMAP_THRESHOLD_": "65536", "OMP_NUM_THREADS": "1"}
    out = subprocess.run([sys.executable, __file__, "--children", ",".join(models), "--batch", str(batch)],
                         env=env, check=True, capture_output=True, text=True).stdout
    rows = [json.loads(line) for line in out.strip().splitlines()]
    return {(r["model"], r["technique"]): r for r in rows}


def fork_children(models: list[str], batch: int) -> None:
    """In the measuring process: fork one child per (model, technique), print its JSON line."""
    for m in models:
        for name in TECHNIQUES:
            read, write = os.pipe()
            pid = os.fork()
            if pid == 0:
                os.close(read)
                with os.fdopen(write, "w") as w:
                    sys.stdout = w
                    child(m, name, batch)
                os._exit(0)
            os.close(write)
            with os.fdopen(read) as r:
                row = json.loads(r.read())
            os.waitpid(pid, 0)
            print(json.dumps({"model": m, "technique": name, **row}), flush=True)


def predicted(model_name: str, name: str, batch: int) -> dict:
    spec = bench_spec(model_name)
    cost = measure(spec)
    plan = TrainPlan(0, 0, batch, techniques=_techniques(name, len(cost.stages)))
    steps = SAMPLES // batch
    device, edge = plan_flops(cost, plan, SAMPLES, steps)
    _, up = plan_payload_bytes(cost, plan, cost.param_bytes)
    memory = MemoryModel(optimizer_slots=OPT.slots, workspace_bytes=0, step_temporaries=OPT.step_temporaries)
    return {"peak_bytes": plan_peak_bytes(memory, cost, plan),
            "flops": device + edge, "up_bytes": up + activation_traffic_bytes(cost, plan, SAMPLES)}


#: The federated runs' data set (``--dataset``; ``digits`` where Fashion-MNIST is not installed).
DATASET = {"name": "fashion_mnist"}
#: Target accuracy of the federated runs (``--target``): time to it is compared with fedavg-tuned's.
TARGET = {"accuracy": 0.65}


def fl_config(model_name: str, name: str, rounds: int) -> ExperimentConfig:
    memory = {"mode": "all", **TECHNIQUES[name][1]} if name != "plain" else {"mode": "off"}
    return parse_config({
        "name": f"bench-{model_name}-{name}", "seed": 0,
        "data": {"dataset": DATASET["name"], "partition": {"kind": "iid"}, "max_train_samples": 3000,
                 "max_test_samples": 1000},
        "model": {"name": model_name, "norm": NORM.get(model_name, "none")}, "fleet": {"tiers": {"tablet": 10}, "catalogue": "scaled"},
        "training": {"batch_size": 32, "lr": 1e-3, "optimizer": "adam"},
        "orchestration": {"rounds": rounds, "clients_per_round": 5}, "memory": memory,
        "evaluation": {"target_accuracy": TARGET["accuracy"]},
        "output": {"plots": False, "progress": False},
    })


#: Every federated run loads the same data: load it once (the runs never modify it).
inputs.build_federated_data = functools.lru_cache(maxsize=4)(inputs.build_federated_data)


def federated(model_name: str, name: str, rounds: int) -> dict:
    if rounds == 0:
        return {"accuracy": float("nan"), "virtual_s": float("nan"), "bytes_up": float("nan")}
    config = fl_config(model_name, name, rounds)
    result = run(config)
    row = {"accuracy": result.reports[-1].accuracy, "virtual_s": result.reports[-1].virtual_time_s,
           "bytes_up": sum(r.bytes_up for r in result.reports), "time_to_target_s": result.summary["time_to_target_s"]}
    if "int_accuracy" in result.summary:
        row["int8_accuracy"] = result.summary["int_accuracy"]
    return row


def table(models: list[str], rounds: int, batch: int, tuned_baseline: bool = False) -> None:
    print(f"models {','.join(models)} (inputs {', '.join(str(bench_spec(m).input_shape) for m in models)}); Adam; step: micro-batch {batch}, {SAMPLES} samples; federated: {rounds} rounds, 5 of 10 tablets, "
          f"{DATASET['name']} up to 3000 train / 1000 test, IID, batch 32, lr 1e-3")
    head = (f"{'model':11} {'technique':15} {'pred MiB':>8} {'meas MiB':>8} {'FLOPs x':>7} {'wall x':>6} "
            f"{'up KiB':>8} {'acc':>6} {'virt s':>7} {'up MiB/run':>10}")
    print(head)
    steps = measure_steps(models, batch)  # first, while nothing else ran
    runs: dict[str, dict[str, dict]] = {}
    for m in models:
        base_p, base_m = predicted(m, "plain", batch), steps[m, "plain"]
        runs[m] = {}
        for name in TECHNIQUES:
            p, meas, fl = predicted(m, name, batch), steps[m, name], federated(m, name, rounds)
            runs[m][name] = fl
            acc = f"{fl['accuracy']:.3f}" + (f" (int8 {fl['int8_accuracy']:.3f})" if "int8_accuracy" in fl else "")
            print(f"{m:11} {name:15} {p['peak_bytes'] / 2**20:8.2f} {meas['peak_bytes'] / 2**20:8.2f} "
                  f"{p['flops'] / base_p['flops']:7.2f} {meas['step_s'] / base_m['step_s']:6.2f} "
                  f"{p['up_bytes'] / 1024:8.1f} {acc:>6} {fl['virtual_s']:7.1f} {fl['bytes_up'] / 2**20:10.2f}",
                  flush=True)
    if tuned_baseline:
        for m in models:
            print(f"\n{m}: time to {TARGET['accuracy']:.2f}, every technique vs fedavg-tuned on the same fleet and rounds")
            chosen, _ = tuned(fl_config(m, "plain", rounds))
            print_ratios(chosen, runs[m])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--children", metavar="MODELS")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--models", default="cnn,mlp")
    ap.add_argument("--dataset", default="fashion_mnist", choices=["fashion_mnist", "digits"])
    ap.add_argument("--tuned", action="store_true", help="also run fedavg-tuned's grid per model and compare")
    ap.add_argument("--target", type=float, default=0.65, help="target accuracy of the federated runs")
    args = ap.parse_args()
    DATASET["name"], TARGET["accuracy"] = args.dataset, args.target
    if args.children:
        fork_children(args.children.split(","), args.batch)
    else:
        table(args.models.split(","), args.rounds, args.batch, args.tuned)


if __name__ == "__main__":
    main()
