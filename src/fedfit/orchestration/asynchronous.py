"""Asynchronous aggregation over the Fleet contract: FedBuff and FedAsync on the virtual clock.

Devices train continuously: whenever a task ends, an idle device is invited (up to
``concurrency`` tasks in flight), starting from the current model version — a device never
trains twice from the same version (it would repeat the same update). The server folds
each arriving update into a buffer and applies the buffer once it holds K updates — FedBuff
(Nguyen et al. 2022, "Federated Learning with Buffered Asynchronous Aggregation"); K = 1 with
server learning rate α is FedAsync (Xie et al. 2019, "Asynchronous Federated Optimization").
Staleness is the number of versions applied since the update's starting version; updates
staler than ``max_staleness`` are dropped and counted as ``stale``. Each application is one
server version and one :class:`~fedfit.types.RoundReport`.

Liveness. K is an upper bound, not a promise: when nothing is in flight and nobody can be
invited now (every device has already trained from this version, is backing off, or the
selector defers it), the buffer is applied with the updates it holds — the effective buffer
shrinks to what the fleet can deliver, so a fleet with fewer able devices than K still makes
progress, and the server never idles beside a ready update. A failed task produced no update,
so its device may train from the same version again, after an exponential back-off
(:class:`~fedfit.policy.backoff.Backoff`, ``retry_after_s`` doubling per failure in a row up to
``backoff_cap_s``). A version that gets no update for ``liveness.stall_timeout_s`` virtual
seconds stops the run (:class:`~fedfit.orchestration.liveness.Liveness`).

The loop's state is an explicit value (:class:`AsyncState`): ``run(state)`` yields after each
application with the new state, and ``run`` on a yielded state continues exactly where an
unbroken run would be, given the fleet and the :class:`~fedfit.devices.Registry` in the states
they had then (the fleet holds the tasks still in flight, the registry the devices' reported
states and history, Oort's feedback among it); :mod:`fedfit.simulation.checkpoint` saves all
three to disk for a resume in a new process.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

from fedfit.aggregation import AggregationRule, Arrival, aggregate
from fedfit.devices.registry import Registry
from fedfit.errors import RunStopped, UpdateRejected
from fedfit.orchestration.cohort import Cohort, check_in, enrol
from fedfit.orchestration.contract import Fleet
from fedfit.orchestration.liveness import Liveness
from fedfit.orchestration.submodels import Exchange, FullModelExchange
from fedfit.orchestration.sync import Evaluator, RoundOutcome
from fedfit.orchestration.tally import RoundTally
from fedfit.policy.backoff import Backoff
from fedfit.policy.candidates import compact_ids, sample_idle
from fedfit.policy.planning import RoundObserver
from fedfit.types import Failure, FailureCause, Params, TaskResult


@dataclass(frozen=True, slots=True)
class AsyncConfig:
    """Asynchronous-mode settings.

    Attributes:
        aggregations: server versions to produce (each one a report).
        buffer_size: K, updates per application (1: FedAsync).
        concurrency: tasks kept in flight; ``None``: every device trains continuously.
        max_staleness: updates staler than this many versions are dropped; ``None``: no bound.
        retry_after_s: virtual seconds a device whose task failed waits before its next
            invitation, doubled per further failure in a row (exponential back-off).
        backoff_cap_s: the longest back-off.
        idle_wait_s: virtual seconds the server waits when nobody can be invited and nothing runs.
        eval_every: evaluate every this many versions (and after the last).
        liveness: when a run that makes no progress stops.
        candidates: eligible devices each invitation draws uniformly, checks in and scores (at
            least the number it invites; :func:`~fedfit.policy.candidates.sample_idle`), so an
            invitation costs the same whatever the fleet's size; ``None``: every eligible device.
    """

    aggregations: int
    buffer_size: int = 10
    concurrency: int | None = None
    max_staleness: int | None = None
    retry_after_s: float = 60.0
    backoff_cap_s: float = 3600.0
    idle_wait_s: float = 60.0
    eval_every: int = 1
    liveness: Liveness = Liveness()
    candidates: int | None = None

    @property
    def backoff(self) -> Backoff:
        """The retry policy of failed devices."""
        return Backoff(base_s=self.retry_after_s, cap_s=max(self.backoff_cap_s, self.retry_after_s))


@dataclass(frozen=True)
class AsyncState:
    """Everything the server holds between events (tasks in flight live in the fleet).

    Attributes:
        params: the current master model.
        version: server versions applied so far.
        now_s: virtual time of the last event.
        buffer: arrivals waiting for the next application.
        draws: selection draws so far (fixes the next draw with the seed).
        retry_at_s: device → earliest virtual time of its next invitation.
        started: device → the version its latest task that did not fail started from (a device
            never trains twice from one version).
        wall_s: wall-clock seconds spent so far (reported, never decides anything).
    """

    params: Params
    version: int = 0
    now_s: float = 0.0
    buffer: tuple[Arrival, ...] = ()
    draws: int = 0
    retry_at_s: dict[int, float] = field(default_factory=dict)
    started: dict[int, int] = field(default_factory=dict)
    wall_s: float = 0.0


class AsyncOrchestrator:
    """Runs buffered asynchronous aggregation; iterate :meth:`run`.

    ``registry`` (default: the fleet's devices enrolled) receives each invited device's state
    and every finished task; the cohort selects from it. ``observer`` (DYNAMITE's planner) is
    told of every application.
    """

    def __init__(self, *, fleet: Fleet, cohort: Cohort, rule: AggregationRule, evaluator: Evaluator,
                 config: AsyncConfig, seed: int, submodels: Exchange | None = None,
                 registry: Registry | None = None, observer: RoundObserver | None = None) -> None:
        self.fleet, self.cohort, self.rule = fleet, cohort, rule
        self.observer = observer
        self.evaluator, self.config, self.seed = evaluator, config, seed
        self.submodels: Exchange = submodels or FullModelExchange()
        self.registry = registry if registry is not None else enrol(fleet)
        self._ids = compact_ids(fleet.device_ids())  # a fleet's devices are fixed for a run
        self._running = 0  # tasks in flight, counted as they are dispatched and arrive (sampled candidates)

    def rounds(self, params: Params, start_s: float = 0.0, first_round: int = 0) -> Iterator[RoundOutcome]:
        """Run ``config.aggregations`` versions from ``params`` (the sync loop's interface)."""
        for outcome, _ in self.run(AsyncState(params, version=first_round, now_s=start_s)):
            yield outcome

    def run(self, state: AsyncState, aggregations: int | None = None) -> Iterator[tuple[RoundOutcome, AsyncState]]:
        """Apply ``aggregations`` versions (default ``config.aggregations``) from ``state``.

        Yields:
            Each version's outcome and the state right after it.
        """
        wall0 = time.perf_counter() - state.wall_s
        self._running = sum(self.fleet.busy(d) for d in self._ids)  # once: a resumed fleet holds tasks
        target = state.version + (self.config.aggregations if aggregations is None else aggregations)
        while state.version < target:
            tally, results = RoundTally(), list[TaskResult]()
            progress_s = state.now_s  # the last version was applied now (or the run starts)
            while len(state.buffer) < self.config.buffer_size:
                self._check_liveness(state, progress_s, time.perf_counter() - wall0, tally, results)
                state = self._fill(state, tally)
                result = self.fleet.next_result()
                self._running -= result is not None
                if result is None:
                    if state.buffer:  # nothing in flight, nobody to invite: apply what the fleet gave
                        break
                    state = dataclasses.replace(state, now_s=state.now_s + self.config.idle_wait_s)
                    continue
                results.append(result)
                state = self._receive(state, result, tally)
            state = self._apply(state)
            if self.observer is not None:
                self.observer.observe(state.version, state.params, results, state.now_s)
            acc, loss = self._maybe_evaluate(state, target)
            state = dataclasses.replace(state, wall_s=time.perf_counter() - wall0)
            report = tally.report(round_=state.version - 1, virtual_time_s=state.now_s,
                                  wall_time_s=state.wall_s, accuracy=acc, loss=loss)
            yield RoundOutcome(report, tuple(results), state.params), state

    def _check_liveness(self, state: AsyncState, progress_s: float, wall_s: float, tally: RoundTally,
                        results: list[TaskResult]) -> None:
        reason = self.config.liveness.stop_reason(now_s=state.now_s, progress_s=progress_s, wall_s=wall_s,
                                                  done=state.version, failures=tally.failures_by_cause)
        if reason is not None:
            unfinished = tally.report(round_=state.version, virtual_time_s=state.now_s, wall_time_s=wall_s,
                                      accuracy=None, loss=None)
            raise RunStopped(reason, tuple(results), unfinished)

    def _fill(self, state: AsyncState, tally: RoundTally) -> AsyncState:
        if self.config.candidates is None:  # scanning anyway: count what the fleet says is in flight
            self._running = sum(self.fleet.busy(d) for d in self._ids)
        want = (self.config.concurrency or len(self._ids)) - self._running
        if want <= 0:
            return state
        idle = self._eligible(state, want)
        if not idle:
            return state
        check_in(self.registry, self.fleet, idle, state.now_s)
        plans = self.cohort.invite(self.registry, idle, want, round_=state.version, seed=self.seed,
                                   draw=state.draws)
        for plan in plans:
            self.fleet.dispatch(plan, self.submodels.outgoing(plan, state.params), state.now_s)
            tally.invited[self.fleet.profile(plan.device_id).tier] += 1
        self._running += len(plans)
        # a device that started from an older version may start again: only this version's matter
        started = {d: v for d, v in state.started.items() if v >= state.version}
        started |= {p.device_id: state.version for p in plans}
        return dataclasses.replace(state, draws=state.draws + 1, started=started)

    def _eligible(self, state: AsyncState, want: int) -> list[int]:
        """Devices that may be invited now: idle, not backing off, not yet trained from this
        version; all of them, or a uniform sample (``config.candidates``)."""
        busy, retry_at_s, started = self.fleet.busy, state.retry_at_s, state.started

        def barred(d: int) -> bool:
            return busy(d) or retry_at_s.get(d, 0.0) > state.now_s or started.get(d, -1) >= state.version

        if self.config.candidates is None:
            return [d for d in self._ids if not barred(d)]
        return sample_idle(self._ids, barred, max(self.config.candidates, want), seed=self.seed,
                           draw=state.draws)

    def _receive(self, state: AsyncState, result: TaskResult, tally: RoundTally) -> AsyncState:
        state = dataclasses.replace(state, now_s=max(state.now_s, result.finish_s))
        self.registry.record_task(result)
        tally.count_result(result)
        device = result.plan.device_id
        if isinstance(result.outcome, Failure):
            tally.count_failure(result.tier, result.outcome.cause)
            wait_s = self.config.backoff.delay_s(self.registry.failure_streak(device))
            started = {d: v for d, v in state.started.items() if d != device}  # no update: may retry
            # a back-off that has run out bars nobody: only those still running are kept
            retry_at_s = {d: t for d, t in state.retry_at_s.items() if t > state.now_s}
            return dataclasses.replace(state, retry_at_s={**retry_at_s, device: state.now_s + wait_s},
                                       started=started)
        staleness = state.version - result.plan.round
        if self.config.max_staleness is not None and staleness > self.config.max_staleness:
            tally.count_failure(result.tier, FailureCause.STALE)
            return state
        tally.count_success(result)
        try:
            full, masks = self.submodels.incoming(result.outcome, state.params, self.rule.weighting(result.outcome))
        except UpdateRejected:
            tally.count_rejected(result.tier)
            return state
        folded = self.registry.record_fold(device, state.version)
        arrival = Arrival(result.outcome, staleness, full, masks, self.rule.participation(folded))
        return dataclasses.replace(state, buffer=(*state.buffer, arrival))

    def _apply(self, state: AsyncState) -> AsyncState:
        params = aggregate(state.params, state.buffer, self.rule)
        return dataclasses.replace(state, params=params, version=state.version + 1, buffer=())

    def _maybe_evaluate(self, state: AsyncState, last: int) -> tuple[float | None, float | None]:
        if state.version % self.config.eval_every and state.version != last:
            return None, None
        return self.evaluator(state.params)

