"""Wiring of ``auto``'s revision: the registry's measured durations in, a round's deadline out.

:class:`AutoReviser` is the :data:`~fedfit.orchestration.sync.Reviser` a sync ``auto`` run's
orchestrator asks at each round's start (from round ``auto.revise_after`` on): it reads each
device's latest measured update duration and deadline cut from the registry and applies the pure
rule of :mod:`fedfit.policy.auto_revision`. It keeps a log of each change for the summary.
"""

from __future__ import annotations

from collections.abc import Sequence

from fedfit.aggregation.staleness import StalenessDiscount
from fedfit.config import ExperimentConfig
from fedfit.devices.registry import Registry
from fedfit.policy.auto import AutoDecision
from fedfit.policy.auto_revision import Observed, Revision, revise
from fedfit.types import FailureCause


class AutoReviser:
    """Revises a sync ``auto`` run's deadline and over-selection from measured durations."""

    def __init__(self, predicted_s: Sequence[float], clients_per_round: int, buffer_size: int,
                 async_advantage: float, after: int, skews: Sequence[float] = (),
                 discount: StalenessDiscount = StalenessDiscount("polynomial")) -> None:
        self.predicted_s = tuple(predicted_s)
        self.skews, self.discount = tuple(skews) or (0.0,) * len(self.predicted_s), discount
        self.clients_per_round, self.buffer_size = clients_per_round, buffer_size
        self.async_advantage, self.after = async_advantage, after
        self.log: list[str] = []
        self._last: tuple[float | None, float, str] | None = None

    def observed(self, registry: Registry) -> list[Observed]:
        """What the registry knows of each device's speed, in device-id order."""
        out = []
        for device in registry.ids():
            h = registry.history(device)
            cut = h.last_duration_s if h.last_cause == FailureCause.DEADLINE.value else None
            out.append(Observed(self.predicted_s[device], h.last_update.duration_s if h.last_update else None, cut))
        return out

    def __call__(self, round_: int, registry: Registry) -> tuple[float | None, float] | None:
        if round_ < self.after:
            return None
        rev = revise(self.observed(registry), self.clients_per_round, self.buffer_size, self.async_advantage,
                     discount=self.discount, skews=self.skews)
        self._note(round_, rev)
        return rev.deadline_s, rev.over_selection

    def _note(self, round_: int, rev: Revision) -> None:
        key = (rev.deadline_s, rev.over_selection, rev.mode)
        if key == self._last:
            return
        self._last = key
        deadline = "none" if rev.deadline_s is None else f"{rev.deadline_s:.2f} s"
        self.log.append(f"round {round_}: deadline {deadline}, over-selection {rev.over_selection:.2f} "
                        f"({rev.measured} devices measured, bias {rev.bias:.2f}); measured times favour {rev.mode}")


def auto_reviser(config: ExperimentConfig, decision: AutoDecision | None) -> AutoReviser | None:
    """The reviser of a sync ``auto`` run (``None``: auto off, async, or ``auto.revise_after: null``)."""
    if decision is None or decision.mode != "sync" or config.auto.revise_after is None:
        return None
    st = config.aggregation.staleness
    return AutoReviser(decision.task_times, config.orchestration.clients_per_round, decision.buffer_size,
                       config.auto.async_advantage, config.auto.revise_after, decision.skews,
                       StalenessDiscount(st.kind, st.exponent, st.hinge_a, st.hinge_b))
