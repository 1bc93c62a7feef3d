"""CPU ms per round of ``Registry.record_tasks`` and the round's folds (``record_folds`` where the
tree has it, else ``record_fold`` per update) on a 1,000,000-device registry, 1,000 results a
round (20% failures), mean of rounds 2..19; the trees alternate in one process, twice.

    git archive integ src | tar -x -C /tmp/ref
    OMP_NUM_THREADS=1 .venv/bin/python bench/registry_record_ab.py /tmp/ref/src src
"""

from __future__ import annotations

import gc
import sys
import time
from typing import Any

import numpy as np


def load(src: str) -> tuple[Any, Any, Any]:
    """``Registry``, ``tier`` and ``fedfit.types`` of the tree at ``src`` (a fresh import)."""
    for name in [m for m in sys.modules if m.startswith("fedfit")]:
        del sys.modules[name]
    sys.path.insert(0, src)
    from fedfit import types
    from fedfit.devices.catalogue import tier
    from fedfit.devices.registry import Registry
    sys.path.remove(src)
    return Registry, tier, types


def rounds(tree: tuple[Any, Any, Any], devices: int = 1_000_000, k: int = 1000, count: int = 20) -> Any:
    """Mean CPU ms of (record_tasks, folds) over rounds 2..count-1."""
    registry_type, tier, t = tree
    registry, profile, rng = registry_type(), tier("smartwatch"), np.random.default_rng(0)
    for d in range(devices):
        registry.add(d, profile)
    cost, per = t.TaskCost(1.0, 1.0, 1.0, 1.0, 1, 1, 1, 1.0), []
    for r in range(count):
        results = []
        for d in rng.choice(devices, k, replace=False).tolist():
            out = t.Failure(d, r, t.FailureCause.BATTERY) if rng.random() < 0.2 else t.Update(
                device_id=d, round=r, params={}, num_examples=10, samples_processed=40, steps=5, micro_batch=8,
                accumulation_steps=1, train_loss=0.5)
            results.append(t.TaskResult(plan=t.TrainPlan(device_id=d, round=r, micro_batch=8), tier="smartwatch",
                                        start_s=0.0, finish_s=3.0, outcome=out, cost=cost, free_memory_bytes=0))
        gc.collect()
        t0 = time.process_time()
        registry.record_tasks(results)
        t1 = time.process_time()
        folded = [x.plan.device_id for x in results if isinstance(x.outcome, t.Update)]
        if hasattr(registry, "record_folds"):
            registry.record_folds(folded, r)
        else:
            for d in folded:
                registry.record_fold(d, r)
        per.append((t1 - t0, time.process_time() - t1))
    return np.array(per[2:]).mean(0) * 1e3


if __name__ == "__main__":
    for _ in range(2):
        for src in sys.argv[1:]:
            tasks_ms, folds_ms = rounds(load(src))
            print(f"{src}: record_tasks {tasks_ms:.2f} ms  folds(~800) {folds_ms:.2f} ms  "
                  f"total {tasks_ms + folds_ms:.2f}", flush=True)
