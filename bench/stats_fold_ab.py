"""The driver's serial tail of a side-by-side round with the channel statistics folded in line
and on a thread (``SubModelExchange(background_stats=...)``), interleaved in one process so both
see the same load.

A round's tail as the sync loop runs it for the 100 × 10 × 20 job: 10 updates of the MLP on
Fashion-MNIST's shape received (``incoming_many``: validation, and the statistics' fold),
averaged (``masked_weighted_average``), the model evaluated on 1,000 test images, then the next
round's sub-models sent (``outgoing_many``, which waits for a fold still running). Reports the
median over ``--reps`` rounds of the tail's wall time and of the main thread's CPU time, per
mode, and checks both modes' statistics are bit-equal at the end.

    OMP_NUM_THREADS=1 PYTHONPATH=src python bench/stats_fold_ab.py --reps 40
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import torch

from fedfit.aggregation import Contribution, masked_weighted_average
from fedfit.models import ModelSpec
from fedfit.orchestration.submodels import SubModelExchange
from fedfit.training import evaluate
from fedfit.types import Params, TrainPlan, Update


def tail(exchange: SubModelExchange, master: Params, updates: list[Update], model: torch.nn.Module,
         test: tuple[torch.Tensor, torch.Tensor], r: int) -> tuple[float, float]:
    """(wall, main-thread CPU) seconds of one round's tail through ``exchange``."""
    plans = [TrainPlan(device_id=u.device_id, round=r, micro_batch=32) for u in updates]
    exchange.outgoing_many(plans, master)
    updates = [Update(u.device_id, r, u.params, u.num_examples, u.samples_processed, u.steps, 32, 1, 0.0)
               for u in updates]
    wall, cpu = time.perf_counter(), time.thread_time()
    got = exchange.incoming_many(updates, master, [float(u.num_examples) for u in updates])
    new = masked_weighted_average(master, [Contribution(full, 600.0, masks) for full, masks in got])  # type: ignore[misc]
    evaluate(model, new, *test)
    exchange.outgoing_many([TrainPlan(device_id=999, round=r + 1, micro_batch=32)], new)  # waits for the fold
    return time.perf_counter() - wall, time.thread_time() - cpu


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=40)
    args = ap.parse_args()
    torch.set_num_threads(1)
    spec = ModelSpec("mlp", (1, 28, 28), 10)
    torch.manual_seed(0)
    model = spec.build()
    master = {k: v.detach().clone() for k, v in model.state_dict().items()}
    g = torch.Generator().manual_seed(1)
    updates = [Update(d, 0, {k: v + 0.01 * torch.randn(v.shape, generator=g) for k, v in master.items()},
                      600, 600, 19, 32, 1, 0.0) for d in range(10)]
    test = (torch.rand(1000, 1, 28, 28, generator=g), torch.randint(0, 10, (1000,), generator=g))
    base = SubModelExchange.for_spec(spec)
    modes = {name: SubModelExchange(base.groups, base.counts, background_stats=background)
             for name, background in (("in line", False), ("on a thread", True))}
    seen: dict[str, list[tuple[float, float]]] = {m: [] for m in modes}
    for r in range(args.reps + 2):
        for name, exchange in (modes.items() if r % 2 else reversed(modes.items())):
            got = tail(exchange, master, updates, model, test, r)
            if r >= 2:  # the first two: warm-up
                seen[name].append(got)
    same = all(torch.equal(modes["in line"].stats.scores[k], modes["on a thread"].stats.scores[k])
               for k in modes["in line"].stats.scores)
    for name, got in seen.items():
        print(f"{name:<12} tail wall median {statistics.median(w for w, _ in got) * 1e3:6.2f} ms, "
              f"main-thread CPU median {statistics.median(c for _, c in got) * 1e3:6.2f} ms  (n={len(got)})")
    print(f"statistics bit-equal: {same}; load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
