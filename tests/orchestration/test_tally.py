"""A round's results counted together equal the same results counted one by one."""

from __future__ import annotations

import dataclasses
import random

import torch

from fedfit.orchestration.tally import RoundTally
from fedfit.types import Failure, FailureCause, TaskCost, TaskResult, TrainPlan, Update


def _results(seed: int, n: int) -> list[TaskResult]:
    rng, out = random.Random(seed), []
    for d in range(n):
        tier = rng.choice(["flagship_phone", "midrange_phone", "smartwatch"])
        outcome: Update | Failure = (
            Update(d, 0, {"w": torch.zeros(1)}, num_examples=10, samples_processed=10, steps=1, micro_batch=4,
                   accumulation_steps=1, train_loss=0.5) if rng.random() < 0.6
            else Failure(d, 0, rng.choice(list(FailureCause)), "test"))
        cost = TaskCost(1.0, 1.0, 1.0, rng.random(), rng.randrange(10**6), rng.randrange(10**4), rng.randrange(10**5), 0.0)
        out.append(TaskResult(plan=TrainPlan(device_id=d, round=0, micro_batch=rng.randrange(1, 64)), tier=tier,
                              start_s=0.0, finish_s=1.0, outcome=outcome, cost=cost, free_memory_bytes=0))
    return out


def test_counting_a_round_together_equals_counting_each_result() -> None:
    results = _results(0, 300)
    together, each = RoundTally(), RoundTally()
    together.count_results(results)
    for r in results:
        each.count_result(r)
        if isinstance(r.outcome, Failure):
            each.count_failure(r.tier, r.outcome.cause)
        else:
            each.count_success(r)
    assert together == each
    assert sum(together.participants.values()) == sum(isinstance(r.outcome, Update) for r in results)
    assert together.bytes_down == sum(r.cost.bytes_down for r in results)


def test_counting_a_round_returns_its_own_successes_only() -> None:
    results = _results(1, 200)
    late = {r.plan.device_id for r in results[::3]}  # these were dispatched a round earlier
    mixed = [dataclasses.replace(r, plan=dataclasses.replace(r.plan, round=4 if r.plan.device_id in late else 5))
             for r in results]
    fresh = sum(1 for r in mixed if r.plan.round == 5 and isinstance(r.outcome, Update))
    assert 0 < fresh < sum(isinstance(r.outcome, Update) for r in mixed)
    assert RoundTally().count_results(mixed, 5) == fresh
    assert RoundTally().count_results(mixed) == 0
