"""Orchestration CPU ms of every round (not only their mean) of ``scale.py fleet``'s 1M x 1,000 run.

``bench/scale.py fleet`` reports the mean of rounds 2-4; on a shared host one round can take
twice another's CPU. This runs the same experiment for ``ROUNDS`` rounds and prints each round's
orchestration CPU ms (rounds 2 on; training and evaluation taken out as scale.py does), so runs
of two trees can be compared round by round (e.g. each round's minimum over several runs).
Takes the tree to import (``src`` and ``bench`` under it):

    OMP_NUM_THREADS=1 python bench/round_cpu.py /tmp/main-tree 8
"""

import statistics
import sys
import time

tree, rounds = (sys.argv[1] if len(sys.argv) > 1 else "."), int(sys.argv[2]) if len(sys.argv) > 2 else 8
sys.path[:0] = [tree + "/src", tree + "/bench"]

import scale  # noqa: E402
from fedfit.config import parse_config  # noqa: E402
from fedfit.experiment import build  # noqa: E402

devices, per_round, third = 1_000_000, 1000, 1_000_000 // 3
config = parse_config({
    "seed": 0, "model": {"name": "logreg"},
    "data": {"dataset": "synthetic", "partition": {"kind": "natural"}, "pool": 1000,
             "max_train_samples": 50_000, "max_test_samples": 500},
    "fleet": {"tiers": {"flagship_phone": third, "midrange_phone": third, "older_phone": devices - 2 * third},
              "trace_model": "lazy"},
    "training": {"batch_size": 16, "max_steps": 4},
    "orchestration": {"rounds": rounds, "clients_per_round": per_round},
    "output": {"plots": False, "progress": False},
    "simulation": {"executor": "local"}})
exp = build(config)
parts = scale._Parts()
exp.fleet._executor = scale._TimedEach(exp.fleet._executor, parts)
parts.wrap(exp.orchestrator, "evaluator", "evaluation")
marks = []
for _ in exp.orchestrator.rounds(exp.initial_params):
    spent = parts.seconds()
    marks.append((time.process_time(), spent["training"] + spent["evaluation"]))
per = [((w1 - w0) - (h1 - h0)) * 1e3 for (w0, h0), (w1, h1) in zip(marks, marks[1:])]
print(f"mean={statistics.mean(per):.1f} median={statistics.median(per):.1f} min={min(per):.1f} rounds="
      + ",".join(f"{p:.0f}" for p in per))
