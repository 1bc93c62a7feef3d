"""Synchronous rounds over the Fleet contract: select, plan, dispatch, collect, aggregate.

Each round invites ``ceil(k·(1+ε))`` devices drawn from (seed, round), keeps the first ``k``
updates (over-selection), stops waiting at the round deadline, validates every update (wrong
shape or non-finite values are rejected and counted), folds the valid ones in with the masked
weighted average (FedAvg, McMahan et al. 2017, when weighted by samples) and evaluates.
The loop is driven by fleet events, so asynchronous modes reuse the same contract.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from fedfit.aggregation import (
    Contribution, Weighting, masked_weighted_average, validate_masks, validate_params,
)
from fedfit.errors import UpdateRejected
from fedfit.orchestration.contract import Fleet
from fedfit.orchestration.tally import RoundTally
from fedfit.policy import Planner, uniform_cohort
from fedfit.types import Failure, FailureCause, Params, RoundReport, TaskResult, Update

#: Evaluates parameters: returns (accuracy, loss).
Evaluator = Callable[[Params], tuple[float, float]]


@dataclass(frozen=True, slots=True)
class SyncConfig:
    """Synchronous-round settings.

    Attributes:
        rounds: number of rounds.
        clients_per_round: k, the updates a round waits for.
        over_selection: ε; ``ceil(k·(1+ε))`` devices are invited, the first k updates kept.
        deadline_s: virtual seconds a round waits; ``None`` waits for every invited device.
        idle_wait_s: virtual seconds to wait before the next round when a round saw no event time.
        eval_every: evaluate every this many rounds (and after the last).
    """

    rounds: int
    clients_per_round: int
    over_selection: float = 0.0
    deadline_s: float | None = None
    idle_wait_s: float = 60.0
    eval_every: int = 1


@dataclass(frozen=True)
class RoundOutcome:
    """A finished round: its report, every task result it saw, and the new parameters."""

    report: RoundReport
    results: tuple[TaskResult, ...]
    params: Params


class SyncOrchestrator:
    """Runs synchronous rounds; iterate :meth:`rounds` to drive it."""

    def __init__(self, *, fleet: Fleet, planner: Planner, weighting: Weighting, evaluator: Evaluator,
                 config: SyncConfig, seed: int) -> None:
        self.fleet, self.planner, self.weighting = fleet, planner, weighting
        self.evaluator, self.config, self.seed = evaluator, config, seed

    def rounds(self, params: Params, start_s: float = 0.0, first_round: int = 0) -> Iterator[RoundOutcome]:
        """Run ``config.rounds`` rounds from ``params``, yielding each finished round."""
        now_s, wall0 = start_s, time.perf_counter()
        for r in range(first_round, first_round + self.config.rounds):
            tally = RoundTally()
            results, end_s = self._run_round(r, params, now_s, tally)
            params = self._aggregate(params, results, tally)
            acc, loss = self._maybe_evaluate(r, first_round, params)
            report = RoundReport(
                round=r, virtual_time_s=end_s, wall_time_s=time.perf_counter() - wall0,
                accuracy=acc, loss=loss, participants_by_tier=dict(sorted((+tally.participants).items())),
                invited_by_tier=dict(sorted(tally.invited.items())),
                failures_by_cause=dict(sorted(tally.failures_by_cause.items())),
                failures_by_tier=dict(sorted(tally.failures_by_tier.items())),
                bytes_up=tally.bytes_up, bytes_down=tally.bytes_down, energy_j=tally.energy_j,
                rejected_updates=tally.rejected, micro_batch_by_tier=tally.mean_micro_batch())
            now_s = end_s
            yield RoundOutcome(report, tuple(results), params)

    def _run_round(self, r: int, params: Params, now_s: float,
                   tally: RoundTally) -> tuple[list[TaskResult], float]:
        k = self.config.clients_per_round
        invite = math.ceil(k * (1 + self.config.over_selection))
        idle = [d for d in self.fleet.device_ids() if not self.fleet.busy(d)]
        for device in uniform_cohort(idle, invite, seed=self.seed, round_=r):
            state = self.fleet.snapshot(device, now_s)
            plan = self.planner.plan(device, r, self.fleet.profile(device), state)
            self.fleet.dispatch(plan, params, now_s)
            tally.invited[self.fleet.profile(device).tier] += 1
        return self._collect(r, now_s, k, tally)

    def _collect(self, r: int, now_s: float, k: int, tally: RoundTally) -> tuple[list[TaskResult], float]:
        deadline = now_s + self.config.deadline_s if self.config.deadline_s is not None else math.inf
        results: list[TaskResult] = []
        end_s, successes = now_s, 0
        while successes < k and (t := self.fleet.peek_time()) is not None and t <= deadline:
            result = self.fleet.next_result()
            assert result is not None
            results.append(result)
            tally.count_result(result)
            end_s = max(end_s, result.finish_s)
            if isinstance(result.outcome, Failure):
                tally.count_failure(result.tier, result.outcome.cause)
            else:
                successes += 1
                tally.count_success(result)
        for plan in self.fleet.cancel_pending():
            if successes < k:  # still waiting when the deadline struck: a straggler
                tally.count_failure(self.fleet.profile(plan.device_id).tier, FailureCause.DEADLINE)
                end_s = deadline
        return results, end_s if end_s > now_s else now_s + self.config.idle_wait_s

    def _aggregate(self, params: Params, results: list[TaskResult], tally: RoundTally) -> Params:
        contributions = []
        for res in results:
            if not isinstance(res.outcome, Update):
                continue
            try:
                validate_params(params, res.outcome.params)
                validate_masks(res.outcome.params, res.outcome.masks)
            except UpdateRejected:
                tally.count_rejected(res.tier)
                continue
            contributions.append(Contribution(res.outcome.params, self.weighting(res.outcome), res.outcome.masks))
        return masked_weighted_average(params, contributions) if contributions else params

    def _maybe_evaluate(self, r: int, first: int, params: Params) -> tuple[float | None, float | None]:
        last = r == first + self.config.rounds - 1
        if (r - first + 1) % self.config.eval_every and not last:
            return None, None
        return self.evaluator(params)
