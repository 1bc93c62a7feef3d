"""The results side of a 1M x 1,000 round in isolation, min-of-N CPU ms (robust on a loaded host).

720 logistic-regression updates (10 x 60 + 10) received by a ``SubModelExchange`` without
width groups (``exchange_in``: ``incoming_many``), folded by ``aggregate`` (``fold``), and
1,000 results (720 successes) counted by ``RoundTally.count_results`` (``tally``). Takes the
tree to import (``src`` under it), so two trees can be run alternately:

    OMP_NUM_THREADS=1 python bench/results_side_parts.py /tmp/main-tree
    OMP_NUM_THREADS=1 python bench/results_side_parts.py .
"""

import random
import sys
import time
from collections.abc import Callable
from typing import Any

sys.path.insert(0, (sys.argv[1] if len(sys.argv) > 1 else ".") + "/src")

import torch  # noqa: E402

from fedfit.aggregation import AggregationRule, Arrival, aggregate  # noqa: E402
from fedfit.orchestration.submodels import SubModelExchange  # noqa: E402
from fedfit.orchestration.tally import RoundTally  # noqa: E402
from fedfit.types import Failure, FailureCause, TaskCost, TaskResult, TrainPlan, Update  # noqa: E402


def main(repeats: int = 15) -> None:
    g = torch.Generator().manual_seed(0)
    master = {"linear.weight": torch.randn(10, 60, generator=g), "linear.bias": torch.zeros(10)}
    updates = [Update(d, 3, {k: v + torch.randn(v.shape, generator=g) for k, v in master.items()}, 50, 64, 4, 16, 1,
                      0.5) for d in range(720)]
    rng = random.Random(0)
    results = [TaskResult(TrainPlan(d, 3, 16), rng.choice(["a", "b", "c"]), 0.0, 1.0,
                          updates[d] if d < 720 else Failure(d, 3, FailureCause.OFFLINE, "x"),
                          TaskCost(1.0, 1.0, 1.0, 2.0, 10, 100, 100, 1.0), 0) for d in range(1000)]

    def exchange_in() -> tuple[float, Any]:
        exchange = SubModelExchange((), lambda w: {})
        for u in updates:
            exchange.outgoing(TrainPlan(u.device_id, 3, 16), master)
        t = time.process_time()
        got = exchange.incoming_many(updates, master, [64.0] * len(updates))
        return time.process_time() - t, got

    def best(f: Callable[[], object]) -> float:
        times = []
        for _ in range(repeats):
            t = time.process_time()
            f()
            times.append(time.process_time() - t)
        return min(times) * 1e3

    received = exchange_in()[1]
    arrivals = [Arrival(u, 0, *got, 1.0) for u, got in zip(updates, received)]
    rule = AggregationRule()
    print(f"exchange_in={min(exchange_in()[0] for _ in range(repeats)) * 1e3:.2f} "
          f"fold={best(lambda: aggregate(master, arrivals, rule)):.2f} "
          f"tally={best(lambda: RoundTally().count_results(results)):.2f}")


if __name__ == "__main__":
    main()
