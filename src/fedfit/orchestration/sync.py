"""Synchronous rounds over the Fleet contract: select, plan, dispatch, collect, aggregate.

Each round invites ``ceil(k·(1+ε))`` devices drawn from (seed, round), keeps the first ``k``
updates (over-selection), stops waiting at the round deadline, validates every update (wrong
shape or non-finite values are rejected and counted), folds the valid ones in with the masked
weighted average (FedAvg, McMahan et al. 2017, when weighted by samples) and evaluates.
The loop is driven by fleet events, so asynchronous modes reuse the same contract.

Late updates: with ``late_updates="drop"`` tasks still running at the deadline (or after the
first k updates) are cancelled; with ``"stale"`` they keep running and are folded into the
round in which they arrive, discounted by their staleness (rounds elapsed), unless staler than
``max_staleness``. A :class:`~fedfit.orchestration.cohort.Cohort` replaces uniform selection
with readiness-based selection; an :class:`~fedfit.aggregation.AggregationRule` adds
weighting, staleness discounts, FedNova and a server learning rate around the one average.

Every round ends (it waits only for tasks already dispatched, or its deadline); a run whose
rounds fold no update for ``liveness.stall_timeout_s`` virtual seconds stops before its next
round (:class:`~fedfit.orchestration.liveness.Liveness`).
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from itertools import compress
from operator import attrgetter
from typing import Literal, cast

from fedfit.aggregation import AggregationRule, Arrivals, Weighting, aggregate_columns
from fedfit.devices.registry import Registry
from fedfit.errors import RunStopped, UpdateRejected
from fedfit.orchestration.cohort import Cohort, check_in, enrol
from fedfit.orchestration.contract import Fleet, due_results
from fedfit.orchestration.dispatching import send_all
from fedfit.orchestration.liveness import Liveness
from fedfit.orchestration.submodels import Exchange, FullModelExchange, Masks
from fedfit.orchestration.tally import RoundTally
from fedfit.policy import Planner, uniform_cohort
from fedfit.policy.candidates import compact_ids, sample_idle
from fedfit.policy.planning import RoundObserver, plans_of
from fedfit.types import FailureCause, Params, RoundReport, TaskResult, TrainPlan, Update

_FINISH = attrgetter("finish_s")

#: Evaluates parameters: returns (accuracy, loss).
Evaluator = Callable[[Params], tuple[float, float]]

#: A round's (deadline, over-selection) from the registry at its start; ``None``: the configured ones.
Reviser = Callable[[int, Registry], tuple[float | None, float] | None]


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
        late_updates: ``drop`` cancels tasks still running when a round ends; ``stale`` lets them
            finish and folds them into a later round as stale updates.
        max_staleness: updates more rounds old than this are dropped and counted ``stale``.
        liveness: when a run whose rounds fold no update stops.
        candidates: idle devices each round checks in and scores, drawn uniformly
            (:func:`~fedfit.policy.candidates.sample_idle`); ``None``: every idle device.
    """

    rounds: int
    clients_per_round: int
    over_selection: float = 0.0
    deadline_s: float | None = None
    idle_wait_s: float = 60.0
    eval_every: int = 1
    late_updates: Literal["drop", "stale"] = "drop"
    max_staleness: int | None = None
    liveness: Liveness = Liveness()
    candidates: int | None = None


@dataclass(frozen=True)
class SyncState:
    """The server's state between rounds (stale-mode stragglers live in the fleet, device history
    in the registry).

    Attributes:
        params: the current global model.
        round: the next round to run.
        now_s: virtual time the next round starts.
        wall_s: wall-clock seconds spent so far (reported; decides only ``liveness.max_wall_s``).
        progress_s: virtual time of the last round that folded an update in (or of the start).
    """

    params: Params
    round: int = 0
    now_s: float = 0.0
    wall_s: float = 0.0
    progress_s: float = 0.0


@dataclass(frozen=True)
class RoundOutcome:
    """A finished round: its report, every task result it saw, and the new parameters."""

    report: RoundReport
    results: tuple[TaskResult, ...]
    params: Params


class SyncOrchestrator:
    """Runs synchronous rounds; iterate :meth:`rounds` to drive it.

    With ``submodels``, each device is sent only its plan's sub-model and its update is folded
    back at the coordinates it held (width-aware aggregation); without, the whole model.
    ``registry`` (default: the fleet's devices enrolled) receives the idle devices' states at
    each round's start and every finished task (stragglers cancelled at the deadline as
    ``deadline`` failures); plans and the cohort's selection read it. ``observer`` (DYNAMITE's
    planner) is told of every aggregation. ``reviser`` (``auto``'s, set after construction) is
    asked at each round's start for that round's deadline and over-selection from the registry;
    ``None`` from it keeps the configured ones. It reads only the registry, so a resumed run
    revises exactly as the unbroken one.
    """

    def __init__(self, *, fleet: Fleet, planner: Planner, weighting: Weighting, evaluator: Evaluator,
                 config: SyncConfig, seed: int, cohort: Cohort | None = None,
                 rule: AggregationRule | None = None, submodels: Exchange | None = None,
                 registry: Registry | None = None, observer: RoundObserver | None = None) -> None:
        self.fleet, self.planner, self.weighting = fleet, planner, weighting
        self.observer = observer
        self.evaluator, self.config, self.seed = evaluator, config, seed
        self.cohort, self.rule = cohort, rule or AggregationRule(weighting=weighting)
        self.submodels: Exchange = submodels or FullModelExchange()
        self.registry = registry if registry is not None else enrol(fleet)
        self._ids = compact_ids(fleet.device_ids())  # a fleet's devices are fixed for a run
        self.reviser: Reviser | None = None
        self._configured = config

    def _revise(self, r: int) -> None:
        revised = self.reviser(r, self.registry) if self.reviser is not None else None
        self.config = self._configured if revised is None else dataclasses.replace(
            self._configured, deadline_s=revised[0], over_selection=revised[1])

    def rounds(self, params: Params, start_s: float = 0.0, first_round: int = 0) -> Iterator[RoundOutcome]:
        """Run ``config.rounds`` rounds from ``params``, yielding each finished round."""
        for outcome, _ in self.run(SyncState(params, round=first_round, now_s=start_s, progress_s=start_s)):
            yield outcome
        if self.config.late_updates == "stale":
            self.fleet.cancel_pending()

    def run(self, state: SyncState, rounds: int | None = None) -> Iterator[tuple[RoundOutcome, SyncState]]:
        """Run ``rounds`` rounds (default ``config.rounds``) from ``state``.

        ``run`` on a yielded state (with the fleet in the state it had then) continues exactly
        as the unbroken run does; stale-mode stragglers stay in flight in the fleet.

        Yields:
            Each round's outcome and the state right after it.
        """
        wall0 = time.perf_counter() - state.wall_s
        last = state.round + (self.config.rounds if rounds is None else rounds) - 1
        stalled: Counter[str] = Counter()  # failures since the last progress, named if the run stops
        for r in range(state.round, last + 1):
            reason = self.config.liveness.stop_reason(now_s=state.now_s, progress_s=state.progress_s,
                                                      wall_s=time.perf_counter() - wall0, done=r, failures=stalled)
            if reason is not None:
                raise RunStopped(reason)
            self._revise(r)
            tally = RoundTally()
            results, end_s = self._run_round(r, state, tally)
            params = self._aggregate(r, state.params, results, tally)
            if self.observer is not None:
                self.observer.observe(r + 1, params, results, end_s)
            acc, loss = self._maybe_evaluate(r, last, params)
            wall_s = time.perf_counter() - wall0
            report = tally.report(round_=r, virtual_time_s=end_s, wall_time_s=wall_s, accuracy=acc, loss=loss)
            progressed = any(n > 0 for n in report.participants_by_tier.values())
            stalled = Counter() if progressed else stalled + tally.failures_by_cause
            state = SyncState(params, round=r + 1, now_s=end_s, wall_s=wall_s,
                              progress_s=end_s if progressed else state.progress_s)
            yield RoundOutcome(report, tuple(results), params), state

    def _run_round(self, r: int, state: SyncState, tally: RoundTally) -> tuple[list[TaskResult], float]:
        k, now_s = self.config.clients_per_round, state.now_s
        invite = math.ceil(k * (1 + self.config.over_selection))
        plans = self._plans(self._candidates(r, invite), invite, r, now_s)
        send_all(self.fleet, self.submodels, plans, state.params, now_s)
        profile = self.fleet.profile
        tally.invited.update([profile(plan.device_id).tier for plan in plans])  # counted in plan order, as dispatched
        return self._collect(r, now_s, k, tally)

    def _candidates(self, r: int, invite: int) -> list[int]:
        """The idle devices round ``r`` checks in: all, or a uniform sample (``config.candidates``)."""
        count = self.config.candidates
        if count is None:
            return [d for d in self._ids if not self.fleet.busy(d)]
        return sample_idle(self._ids, self.fleet.busy, max(count, invite), seed=self.seed, draw=r)

    def _plans(self, idle: list[int], invite: int, r: int, now_s: float) -> list[TrainPlan]:
        check_in(self.registry, self.fleet, idle, now_s)
        if self.cohort is not None:
            return self.cohort.invite(self.registry, idle, invite, round_=r, seed=self.seed, draw=r)
        return plans_of(self.planner, uniform_cohort(idle, invite, seed=self.seed, round_=r), r,
                        self.registry.profile, self.registry.reported_state)

    def _collect(self, r: int, now_s: float, k: int, tally: RoundTally) -> tuple[list[TaskResult], float]:
        deadline = now_s + self.config.deadline_s if self.config.deadline_s is not None else math.inf
        results = due_results(self.fleet, deadline, k, r)
        end_s = max(now_s, max(map(_FINISH, results), default=now_s))
        # counted and recorded together (nothing reads them while a round collects); the
        # successes of this round: late updates of earlier rounds do not count
        successes = tally.count_results(results, r)
        self.registry.record_tasks(results)
        if self.config.late_updates == "stale":
            if successes < k and self.fleet.peek_time() is not None:
                end_s = deadline  # the round gave up on its stragglers, which keep running
        else:
            for plan in self.fleet.cancel_pending():
                if successes < k:  # still waiting when the deadline struck: a straggler
                    tally.count_failure(self.fleet.profile(plan.device_id).tier, FailureCause.DEADLINE)
                    self.registry.record_result(plan.device_id, ok=False, cause=FailureCause.DEADLINE,
                                                duration_s=deadline - now_s, round=plan.round)
                    end_s = deadline
        return results, end_s if end_s > now_s else now_s + self.config.idle_wait_s

    def _aggregate(self, r: int, params: Params, results: list[TaskResult], tally: RoundTally) -> Params:
        # summed in device order, not arrival order: float sums depend on their order, and arrival
        # order is the wall clock's in a deployment (same round, same updates -> same model bits)
        fresh = sorted([res for res in results if isinstance(res.outcome, Update)],
                       key=lambda res: (res.plan.round, res.plan.device_id))
        limit = self.config.max_staleness
        if limit is not None:
            for res in fresh:
                if r - res.plan.round > limit:
                    tally.participants[res.tier] -= 1
                    tally.count_failure(res.tier, FailureCause.STALE)
            fresh = [res for res in fresh if r - res.plan.round <= limit]
        updates = [cast(Update, res.outcome) for res in fresh]
        weighting, participation = self.rule.weighting, self.rule.participation
        weights = [weighting(u) for u in updates]
        received = self.submodels.incoming_many(updates, params, weights)
        rejected = [isinstance(got, UpdateRejected) for got in received]
        if any(rejected):  # rare: counted, and the kept ones picked out
            for res, bad in zip(fresh, rejected):
                if bad:
                    tally.count_rejected(res.tier)
            kept = [not bad for bad in rejected]
            fresh, updates = list(compress(fresh, kept)), list(compress(updates, kept))
            weights, received = list(compress(weights, kept)), list(compress(received, kept))
        plans = [res.plan for res in fresh]
        folds = self.registry.record_folds([plan.device_id for plan in plans], r)
        taken = cast(list[tuple[Params, Masks | None]], received)
        return aggregate_columns(params, self.rule, Arrivals(  # no Arrival per update: a round folds ~700
            updates, weights, [r - plan.round for plan in plans], [full for full, _ in taken],
            [masks for _, masks in taken], list(map(participation, folds))))

    def _maybe_evaluate(self, r: int, last: int, params: Params) -> tuple[float | None, float | None]:
        if (r + 1) % self.config.eval_every and r != last:
            return None, None
        return self.evaluator(params)
