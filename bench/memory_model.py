"""Predicted vs allocator-measured peak training memory of fedfit's own trainer, every zoo model.

For every (model, technique) a *fresh* Python process, for each micro-batch in turn, builds the
model, the starting parameters and 2 × micro-batch samples, runs fedfit's ``train`` once to warm
the kernels up, then runs it again (two optimiser steps) under ``torch.profiler`` with ``profile_memory=True``
(:func:`fedfit.cost.allocator.peak_live_bytes`): measured = the weights + the peak growth of live
tensor bytes, which is what the tensor allocator holds at the task's worst moment. Predicted (in
this process, from ``measure(spec, width)``) = :func:`fedfit.cost.techniques.plan_peak_bytes`
with ``MemoryModel(workspace_bytes=0)`` (``MemoryModel.peak_bytes`` for plain training): the
tensor part of the model (the 256 KiB workspace is the runtime's memory outside the tensor
allocator, so the allocator cannot see it). Error = (predicted − measured) / measured.
``--optimizer`` picks the local optimiser (``sgd``, ``momentum``, ``decay``, ``adam``) to check
the optimiser terms; ``--technique`` the memory technique the task trains with.

    PYTHONPATH=src python bench/memory_model.py [--optimizer sgd] [--models logreg,mlp,cnn,cnn1d]
        [--batches 1,2,4,8,16,32,64,128] [--technique plain]  # or pruning, qat, partial, selective
        # (the last stage), importance (k = 1), width (0.5), checkpointing; comma lists; all
        [--jsonl rows.jsonl] [--reuse rows.jsonl]  # record rows; re-predict recorded measurements
        # also lstm, resnet8, resnet20 (batch-norm), mobilenetv2 (width 0.35, 3x64x64, batch-norm)
        # and mobilenetv2@96 (width 0.5, 3x96x96, batch-norm: the realistic catalogue's reference)
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import subprocess
import sys

import torch

from fedfit.cost import MemoryModel, ModelCost, measure
from fedfit.cost.techniques import plan_peak_bytes
from fedfit.models import ModelSpec
from fedfit.models.stages import stages_of
from fedfit.training.optimizers import OptimizerConfig
from fedfit.types import Techniques, TrainPlan

BATCHES = (1, 2, 4, 8, 16, 32, 64, 128)
MODELS = {"logreg": ((1, 28, 28), 10), "mlp": ((1, 28, 28), 10), "cnn": ((1, 28, 28), 10),
          "cnn1d": ((1, 1024), 4), "lstm": ((1, 28, 28), 10), "resnet8": ((1, 28, 28), 10),
          "resnet20": ((1, 28, 28), 10), "mobilenetv2": ((3, 64, 64), 10), "mobilenetv2@96": ((3, 96, 96), 10)}
DEFAULT_MODELS = ("logreg", "mlp", "cnn", "cnn1d")
#: Spec options beyond shape and classes (the residual networks and MobileNetV2 with their batch-norms).
OPTIONS: dict[str, dict[str, object]] = {"resnet8": {"norm": "batch"}, "resnet20": {"norm": "batch"},
                                         "mobilenetv2": {"width": 0.35, "norm": "batch"},
                                         "mobilenetv2@96": {"width": 0.5, "norm": "batch"}}
#: Technique name -> Techniques fields; "selective" trains the last stage only (its index is filled
#: in per model), "width" trains the sub-model at half width (``WIDTH``) with plain training.
TECHNIQUES: dict[str, dict[str, object]] = {
    "plain": {}, "checkpointing": {"checkpointing": True}, "pruning": {"sparsity": 0.9}, "qat": {"qat_bits": 8},
    "partial": {"keep_fraction": 0.25}, "selective": {"train_stages": [-1]}, "importance": {"importance_k": 1},
    "width": {}}
WIDTH = 0.5
OPTIMIZERS = {"sgd": {}, "momentum": {"momentum": 0.9}, "decay": {"weight_decay": 1e-4}, "adam": {"kind": "adam"}}

_CHILD = r"""
import json, sys
import torch
from fedfit.cost.allocator import peak_live_bytes
from fedfit.models import ModelSpec
from fedfit.training.optimizers import OptimizerConfig
from fedfit.training.trainer import train
from fedfit.types import Techniques, TrainPlan

name, shape, classes, batches, opt = sys.argv[1].split("@")[0], tuple(json.loads(sys.argv[2])), int(sys.argv[3]), json.loads(sys.argv[4]), json.loads(sys.argv[5])
torch.set_num_threads(1)
spec = ModelSpec(name, shape, classes, **json.loads(sys.argv[6]))
fields = json.loads(sys.argv[7])
if fields.get("train_stages") is not None:
    fields["train_stages"] = tuple(fields["train_stages"])
techniques, width = Techniques(**fields), float(sys.argv[8])
optimizer = OptimizerConfig(**opt)
for batch in batches:
    model = spec.build(width)
    params = {k: v.detach().clone() for k, v in model.state_dict().items()}
    gen = torch.Generator().manual_seed(1)
    x, y = torch.randn((2 * batch, *shape), generator=gen), torch.randint(0, classes, (2 * batch,), generator=gen)
    plan = TrainPlan(device_id=0, round=0, micro_batch=batch, lr=0.01, techniques=techniques)
    train(spec.build(width), params, x, y, plan, seed=0, optimizer=optimizer)
    growth = peak_live_bytes(lambda: train(model, params, x, y, plan, seed=0, optimizer=optimizer))
    weights = sum(p.numel() * p.element_size() for p in model.parameters())
    print(json.dumps({"batch": batch, "measured": weights + growth}), flush=True)
"""


def _fields(name: str, technique: str) -> dict[str, object]:
    """The Techniques fields of ``technique`` on model ``name`` (selective: its last stage)."""
    fields = dict(TECHNIQUES[technique])
    if fields.get("train_stages") == [-1]:
        shape, classes = MODELS[name]
        spec = ModelSpec(name.split("@")[0], shape, classes, **OPTIONS.get(name, {}))  # type: ignore[arg-type]
        fields["train_stages"] = [len(stages_of(spec.build())) - 1]
    return fields


@functools.lru_cache(maxsize=None)
def _cost(name: str, width: float) -> ModelCost:
    shape, classes = MODELS[name]
    return measure(ModelSpec(name.split("@")[0], shape, classes, **OPTIONS.get(name, {})), width)  # type: ignore[arg-type]


def predicted(name: str, batch: int, optimizer: str, technique: str) -> dict[str, float]:
    """The model's prediction (tensor part: no workspace) of one row, with the cost's figures."""
    opt = OptimizerConfig(**OPTIMIZERS[optimizer])  # type: ignore[arg-type]
    cost = _cost(name, WIDTH if technique == "width" else 1.0)
    fields = _fields(name, technique)
    if fields.get("train_stages") is not None:
        fields["train_stages"] = tuple(fields["train_stages"])  # type: ignore[arg-type]
    plan = TrainPlan(device_id=0, round=0, micro_batch=batch, lr=0.01, techniques=Techniques(**fields))  # type: ignore[arg-type]
    memory = MemoryModel(optimizer_slots=opt.slots, workspace_bytes=0, step_temporaries=opt.step_temporaries)
    return {"predicted": plan_peak_bytes(memory, cost, plan), "params": cost.param_bytes, "margin": cost.memory_error}


def measure_points(name: str, batches: list[int], optimizer: str, technique: str = "plain") -> dict[int, float]:
    """Measured peaks of one (model, technique) at ``batches``, in one fresh process (each
    micro-batch on a fresh model, after its own warm-up run)."""
    shape, classes = MODELS[name]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    width = WIDTH if technique == "width" else 1.0
    args = [name, json.dumps(shape), str(classes), json.dumps(batches), json.dumps(OPTIMIZERS[optimizer]),
            json.dumps(OPTIONS.get(name, {})), json.dumps(_fields(name, technique)), str(width)]
    out = subprocess.run([sys.executable, "-c", _CHILD, *args], capture_output=True, text=True, check=True, env=env)
    rows = [json.loads(line) for line in out.stdout.strip().splitlines() if line.startswith("{")]
    return {int(r["batch"]): float(r["measured"]) for r in rows}


def _reused(path: str) -> dict[tuple[str, str, int, str], float]:
    """Measured peaks of an earlier run's ``--jsonl`` rows, by (model, technique, batch, optimizer)."""
    with open(path) as f:
        rows = [json.loads(line) for line in f if line.strip()]
    return {(r["model"], r["technique"], r["batch"], r["optimizer"]): r["measured"] for r in rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--optimizer", choices=sorted(OPTIMIZERS), default="sgd")
    parser.add_argument("--models", default=",".join(DEFAULT_MODELS), help=f"comma-separated, of {', '.join(MODELS)}")
    parser.add_argument("--technique", default="plain",
                        help=f"comma-separated, of {', '.join(TECHNIQUES)}; 'all': every one")
    parser.add_argument("--batches", default=",".join(map(str, BATCHES)), help="comma-separated micro-batches")
    parser.add_argument("--jsonl", help="append each row (measured and predicted) to this JSON-lines file")
    parser.add_argument("--reuse", help="take the measured peaks from a --jsonl file of an earlier run (rows it "
                                        "lacks are measured); predictions are always computed anew")
    args = parser.parse_args()
    torch.set_num_threads(1)
    models, batches = args.models.split(","), [int(b) for b in args.batches.split(",")]
    techniques = list(TECHNIQUES) if args.technique == "all" else args.technique.split(",")
    unknown = [m for m in models if m not in MODELS]
    if unknown:
        parser.error(f"--models: unknown model {unknown[0]!r} (known: {', '.join(MODELS)})")
    if any(t not in TECHNIQUES for t in techniques):
        parser.error(f"--technique: unknown technique (known: {', '.join(TECHNIQUES)}, all)")
    reused = _reused(args.reuse) if args.reuse else {}
    print(f"optimizer: {args.optimizer}; allocator: torch.profiler memory events, fresh process per row")
    print(f"{'model':14} {'technique':13} {'batch':>5} {'predicted B':>12} {'measured B':>12} {'error':>7} "
          f"{'× params':>8} {'margin':>7}", flush=True)
    worst, misses = 0.0, 0
    for name in models:
        for technique in techniques:
            todo = [b for b in batches if (name, technique, b, args.optimizer) not in reused]
            measured = {b: reused[(name, technique, b, args.optimizer)] for b in batches if b not in todo}
            measured |= measure_points(name, todo, args.optimizer, technique) if todo else {}
            for batch in batches:
                r = {"measured": measured[batch]} | predicted(name, batch, args.optimizer, technique)
                if args.jsonl:
                    with open(args.jsonl, "a") as f:
                        f.write(json.dumps({"model": name, "technique": technique, "batch": batch,
                                            "optimizer": args.optimizer, **r}) + "\n")
                error = (r["predicted"] - r["measured"]) / r["measured"]
                worst, misses = max(worst, abs(error)), misses + (abs(error) > 0.10)
                print(f"{name:14} {technique:13} {batch:5d} {r['predicted']:12.0f} {r['measured']:12.0f} {error:7.2%} "
                      f"{r['measured'] / r['params']:8.2f} {r['margin']:7.2%}", flush=True)
    print(f"worst |error|: {worst:.2%}; rows outside 10%: {misses} (target 10%)")


if __name__ == "__main__":
    main()
