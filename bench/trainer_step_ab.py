"""(helper flw15h) Paired A/B of one client update's CPU through ``fedfit.training.train``: a
reference tree against this one, each in its own child process, alternated A,B,B,A,... Each child
trains ``--updates`` updates of the model on ``--samples`` random Fashion-MNIST-shaped samples
(batch 32, one epoch, lr 0.05, SGD) after 10 warm-up updates, with the collector frozen after the
imports as ``fedfit run`` does, and reports its median CPU seconds per update and a hash of the
trained weights and losses (equal hashes: the two trees train bit-identically).

    git archive main src bench | tar -x -C /tmp/ref-flw15h
    OMP_NUM_THREADS=1 PYTHONPATH=src python bench/trainer_step_ab.py --ref /tmp/ref-flw15h/src --model mlp --pairs 10
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path


def child(args: argparse.Namespace) -> None:
    import gc

    gc.disable()
    import torch

    from fedfit.models import ModelSpec
    from fedfit.training import train
    from fedfit.training.optimizers import OptimizerConfig
    from fedfit.types import TrainPlan

    gc.freeze()
    gc.enable()
    torch.set_num_threads(1)
    gen = torch.Generator().manual_seed(0)
    x, y = torch.randn(args.samples, 1, 28, 28, generator=gen), torch.randint(0, 10, (args.samples,), generator=gen)
    torch.manual_seed(0)
    model = ModelSpec(args.model, (1, 28, 28), 10).build()
    params = {k: v.clone() for k, v in model.state_dict().items()}
    opt = OptimizerConfig(momentum=args.momentum)

    def update(r: int) -> tuple[float, float]:
        start = time.process_time()
        u = train(model, params, x, y, TrainPlan(1, r, micro_batch=32, local_epochs=1, lr=0.05), seed=0, optimizer=opt)
        took = time.process_time() - start
        return took, float(sum(v.double().sum() for v in u.params.values())) + u.train_loss

    for r in range(10):
        update(r)
    runs = [update(r) for r in range(args.updates)]
    print(json.dumps({"median_s": statistics.median(t for t, _ in runs), "hash": sum(h for _, h in runs)}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ref", required=True, help="the reference tree's src folder")
    ap.add_argument("--model", default="mlp", choices=["logreg", "mlp", "cnn"])
    ap.add_argument("--pairs", type=int, default=10)
    ap.add_argument("--updates", type=int, default=40, help="timed updates per child")
    ap.add_argument("--samples", type=int, default=600, help="samples of the client (600: 19 steps of 32)")
    ap.add_argument("--momentum", type=float, default=0.0)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args)
        return
    trees = {"ref": args.ref, "new": str(Path(__file__).resolve().parents[1] / "src")}
    medians: dict[str, list[float]] = {k: [] for k in trees}
    hashes: dict[str, float] = {}
    for pair in range(args.pairs):
        for name in list(trees) if pair % 2 == 0 else list(trees)[::-1]:
            env = dict(os.environ, PYTHONPATH=trees[name], OMP_NUM_THREADS="1")
            cmd = [sys.executable, __file__, "--child", "--ref", args.ref, "--model", args.model, "--updates",
                   str(args.updates), "--samples", str(args.samples), "--momentum", str(args.momentum)]
            out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
            got = json.loads(out.stdout.strip().splitlines()[-1])
            medians[name].append(got["median_s"])
            hashes.setdefault(name, got["hash"])
    for name, values in medians.items():
        print(f"{name}: median {1000 * statistics.median(values):.2f} ms/update of CPU "
              f"(children's medians {1000 * min(values):.2f}-{1000 * max(values):.2f})")
    ratios = sorted(b / a for a, b in zip(medians["ref"], medians["new"], strict=True))
    print(f"paired new/ref: median {statistics.median(ratios):.3f} (range {ratios[0]:.3f}-{ratios[-1]:.3f}, "
          f"{args.pairs} pairs); load {os.getloadavg()[0]:.1f}; same weights and losses: {hashes['ref'] == hashes['new']}")


if __name__ == "__main__":
    main()
