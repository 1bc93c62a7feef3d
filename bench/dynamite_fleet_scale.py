"""CPU seconds of DYNAMITE's re-plans (``DynamitePlanner.solve``) and of whole rounds, per round,
on the QA config of issue 15's report (lazy fleet, synthetic data, logreg, 20 per round,
``dynamite.mode: heterogeneous``) with its two tiers scaled to DEVICES (60% smartwatch, 40% older
phone). Takes the tree to import (``src`` under it), so two trees can be timed in turns:

    OMP_NUM_THREADS=1 python bench/dynamite_fleet_scale.py TREE DEVICES [ROUNDS] [MODE]

Prints one line: devices, mode, per-round solve CPU s, per-round total CPU s (rounds 1.. ROUNDS,
round 0's first build of the data and model included in neither), and a digest of the plans
(τ, b_i of each re-plan) so two trees can be checked to plan alike.
"""

import hashlib
import sys
import time

tree, devices = sys.argv[1], int(sys.argv[2])
rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 2
mode = sys.argv[4] if len(sys.argv) > 4 else "heterogeneous"
sys.path[:0] = [tree + "/src"]

from fedfit.config import parse_config  # noqa: E402
from fedfit.experiment import build  # noqa: E402
from fedfit.policy.dynamite.planner import DynamitePlanner  # noqa: E402

watches = devices * 6 // 10
config = parse_config({
    "name": "lazy", "seed": 11, "model": {"name": "logreg"},
    "data": {"dataset": "synthetic", "partition": {"kind": "natural"}, "max_train_samples": 6400,
             "max_test_samples": 200, "pool": 64},
    "fleet": {"tiers": {"smartwatch": watches, "older_phone": devices - watches}, "catalogue": "scaled",
              "trace_model": "lazy"},
    "training": {"batch_size": 8, "lr": 0.05},
    "orchestration": {"rounds": rounds, "clients_per_round": 20},
    "dynamite": {"mode": mode, "budget_time_s": 100.0, "tau_max": 50},
    "output": {"plots": False, "progress": False}})
solves: list[float] = []
plans: list[object] = []
solve = DynamitePlanner.solve


def timed(self: DynamitePlanner):  # type: ignore[no-untyped-def]
    start = time.process_time()
    found = solve(self)
    solves.append(time.process_time() - start)
    plans.append((found.tau, found.batches))
    return found


DynamitePlanner.solve = timed  # type: ignore[method-assign]
exp = build(config)
marks = [time.process_time()]
for _ in exp.orchestrator.rounds(exp.initial_params):
    marks.append(time.process_time())
per_round = [b - a for a, b in zip(marks, marks[1:])]
digest = hashlib.sha256(repr(plans).encode()).hexdigest()[:12]
print(f"devices={devices} mode={mode} solve_s={','.join(f'{s:.3f}' for s in solves)} "
      f"round_s={','.join(f'{s:.3f}' for s in per_round)} plans={digest}")
