"""Wiring of ``auto``'s mid-run mode decision: FedBuff until the global loss stalls, then sync rounds.

:class:`ModeSwitch` is the orchestrator of an async ``auto`` run (``auto.switch_on_stall``). It
drives the run's :class:`~fedfit.orchestration.asynchronous.AsyncOrchestrator` one version at a
time and, before each, asks the pure rule of :mod:`fedfit.policy.auto_switch` whether the
evaluated loss of the versions so far has stalled. When it has (and a synchronous round is left
in the update budget), it cancels the tasks still in flight and goes on with a
:class:`~fedfit.orchestration.sync.SyncOrchestrator` built from ``auto``'s sync decision over the
same fleet and registry (deadline, over-selection, local work and its revision from measured
durations), from the current model, version number and clock, for the rounds that fold the
budget's remaining updates. Both orchestrators are the ones every run uses; nothing here trains
or aggregates.

The state it hands the runner is an :class:`AsyncState` before the switch and a
:class:`SyncState` after, so checkpoints hold what they always hold. The switch is decided from
the reports' losses alone: a resumed run (given the saved reports, :meth:`ModeSwitch.resume_from`)
finds it where the unbroken run made it.
"""

from __future__ import annotations

from collections.abc import Iterator

from fedfit.devices.registry import Registry
from fedfit.orchestration.asynchronous import AsyncOrchestrator, AsyncState
from fedfit.orchestration.sync import RoundOutcome, SyncOrchestrator, SyncState
from fedfit.policy.auto_switch import stalled, switch_point, sync_rounds
from fedfit.policy.planning import RoundObserver
from fedfit.types import Params, RoundReport


class ModeSwitch:
    """An async ``auto`` run that turns synchronous once its global loss stalls.

    Args:
        async_: the run's FedBuff orchestrator.
        sync: the synchronous orchestrator over the same fleet and registry.
        window: evaluated versions the stall test reads (:func:`~fedfit.policy.auto_switch.window`).
        versions: the run's budget in FedBuff versions (the resolved ``orchestration.rounds``).
    """

    def __init__(self, async_: AsyncOrchestrator, sync: SyncOrchestrator, window: int, versions: int) -> None:
        self.async_, self.sync, self.window, self.versions = async_, sync, window, versions
        self.history: list[RoundReport] = []
        self.log: list[str] = []

    @property
    def registry(self) -> Registry:
        return self.async_.registry

    @property
    def observer(self) -> RoundObserver | None:
        return self.async_.observer

    def resume_from(self, reports: list[RoundReport]) -> None:
        """Take the reports a resumed run already has (the switch is replayed from their losses)."""
        self.history = list(reports)
        at = switch_point([r.loss for r in self.history], self.window)
        self.log = [] if at is None or at >= len(self.history) else [self._line(at)]

    def total(self) -> int:
        """Reports the run will have: the budget's versions, or after a switch at version v, v plus
        the sync rounds that fold the updates of the versions left."""
        at = self._switched_at()
        return self.versions if at is None else at + self._sync_rounds(at)

    def rounds(self, params: Params, start_s: float = 0.0, first_round: int = 0) -> Iterator[RoundOutcome]:
        """Run the whole budget from ``params`` (the orchestrators' interface)."""
        for outcome, _ in self.run(AsyncState(params, version=first_round, now_s=start_s)):
            yield outcome

    def run(self, state: AsyncState | SyncState,
            count: int | None = None) -> Iterator[tuple[RoundOutcome, AsyncState | SyncState]]:
        """Run from ``state`` to the end of the budget, at most ``count`` reports."""
        left = self.total() - len(self.history) if count is None else count
        while left > 0 and isinstance(state, AsyncState):
            if self._should_switch(state.version):
                self.async_.fleet.cancel_pending()  # FedBuff's tasks in flight end with the mode
                self.log.append(self._line(state.version))
                state = SyncState(state.params, round=state.version, now_s=state.now_s, wall_s=state.wall_s,
                                  progress_s=state.now_s)
                break
            outcome, state = next(iter(self.async_.run(state, 1)))
            self.history.append(outcome.report)
            left -= 1
            yield outcome, state
        if isinstance(state, SyncState):
            rounds = min(left, self.total() - len(self.history))
            for outcome, after in self.sync.run(state, rounds) if rounds > 0 else ():
                self.history.append(outcome.report)
                yield outcome, after

    def _should_switch(self, version: int) -> bool:
        losses = [r.loss for r in self.history[:version]]
        return stalled(losses, self.window) and self._sync_rounds(version) > 0

    def _switched_at(self) -> int | None:
        at = switch_point([r.loss for r in self.history], self.window)
        return None if at is None or self._sync_rounds(at) == 0 else at

    def _sync_rounds(self, version: int) -> int:
        return sync_rounds(self.versions - version, self.async_.config.buffer_size,
                           self.sync.config.clients_per_round)

    def _line(self, version: int) -> str:
        k, b = self.sync.config.clients_per_round, self.async_.config.buffer_size
        return (f"version {version}: global loss stalled over the last {self.window} evaluated versions "
                f"(least-squares fall not significant at 5%); sync rounds of {k} for the "
                f"{self.versions - version} versions of {b} updates left: {self._sync_rounds(version)} rounds")
