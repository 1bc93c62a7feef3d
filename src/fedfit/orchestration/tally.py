"""Counting what a round's task results did: participation, failures, bytes and energy."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from fedfit.types import Failure, FailureCause, RoundReport, TaskResult, Update, held_micro_batch


@dataclass
class RoundTally:
    """Mutable counters of one round, turned into a :class:`~fedfit.types.RoundReport`."""

    invited: Counter[str] = field(default_factory=Counter)
    participants: Counter[str] = field(default_factory=Counter)
    failures_by_cause: Counter[str] = field(default_factory=Counter)
    failures_by_tier: Counter[str] = field(default_factory=Counter)
    failures_by_tier_cause: Counter[tuple[str, str]] = field(default_factory=Counter)
    micro_batches: dict[str, list[int]] = field(default_factory=dict)
    bytes_up: int = 0
    bytes_down: int = 0
    energy_j: float = 0.0
    rejected: int = 0

    def count_result(self, result: TaskResult) -> None:
        """Bytes down and energy of a task that ended, successfully or not."""
        self.bytes_down += result.cost.bytes_down
        self.energy_j += result.cost.energy_j

    def count_failure(self, tier: str, cause: FailureCause) -> None:
        value = _VALUES[cause]
        self.failures_by_cause[value] += 1
        self.failures_by_tier[tier] += 1
        self.failures_by_tier_cause[tier, value] += 1

    def count_rejected(self, tier: str) -> None:
        """An update that arrived but failed validation: no longer a participant."""
        self.rejected += 1
        self.participants[tier] -= 1
        self.count_failure(tier, FailureCause.REJECTED)

    def count_success(self, result: TaskResult) -> None:
        self.participants[result.tier] += 1
        self.bytes_up += result.cost.bytes_up
        self.micro_batches.setdefault(result.tier, []).append(_held(result))

    def count_results(self, results: Sequence[TaskResult], round_: int | None = None) -> int:
        """:meth:`count_result`, then :meth:`count_failure` or :meth:`count_success`, of each
        result in order (a round's, counted together once it has collected them); returns how
        many are successes of round ``round_`` (late updates of earlier rounds left out)."""
        bytes_down, bytes_up, energy_j = self.bytes_down, self.bytes_up, self.energy_j
        participants, micro_batches, count_failure = self.participants, self.micro_batches, self.count_failure
        fresh = 0
        for result in results:  # count_success inlined: most results are successes (a round counts ~1,000)
            cost, outcome, tier = result.cost, result.outcome, result.tier
            bytes_down += cost.bytes_down
            energy_j += cost.energy_j
            if isinstance(outcome, Failure):
                count_failure(tier, outcome.cause)
                continue
            plan = result.plan
            fresh += plan.round == round_
            participants[tier] = participants.get(tier, 0) + 1
            bytes_up += cost.bytes_up
            batches = micro_batches.get(tier)
            if batches is None:
                batches = micro_batches[tier] = []
            batches.append(held_micro_batch(plan.micro_batch, outcome.num_examples))
        self.bytes_down, self.bytes_up, self.energy_j = bytes_down, bytes_up, energy_j
        return fresh

    def mean_micro_batch(self) -> dict[str, float]:
        return {t: sum(v) / len(v) for t, v in sorted(self.micro_batches.items())}

    def report(self, *, round_: int, virtual_time_s: float, wall_time_s: float,
               accuracy: float | None, loss: float | None) -> RoundReport:
        """The :class:`RoundReport` of these counters."""
        return RoundReport(
            round=round_, virtual_time_s=virtual_time_s, wall_time_s=wall_time_s, accuracy=accuracy,
            loss=loss, participants_by_tier=dict(sorted((+self.participants).items())),
            invited_by_tier=dict(sorted(self.invited.items())),
            failures_by_cause=dict(sorted(self.failures_by_cause.items())),
            failures_by_tier=dict(sorted(self.failures_by_tier.items())),
            bytes_up=self.bytes_up, bytes_down=self.bytes_down, energy_j=self.energy_j,
            rejected_updates=self.rejected, micro_batch_by_tier=self.mean_micro_batch(),
            failures_by_tier_cause=self.by_tier_and_cause())

    def by_tier_and_cause(self) -> dict[str, dict[str, int]]:
        """Failures per tier, then per cause (both in name order)."""
        nested: dict[str, dict[str, int]] = {}
        for (tier, cause), n in sorted(self.failures_by_tier_cause.items()):
            nested.setdefault(tier, {})[cause] = n
        return nested


#: Each failure cause's value (what the counters are keyed by), looked up instead of read off the enum.
_VALUES = {cause: cause.value for cause in FailureCause}


def _held(result: TaskResult) -> int:
    """The micro-batch a successful task ran: its plan's, at most the samples its device held."""
    outcome = result.outcome
    return held_micro_batch(result.plan.micro_batch, outcome.num_examples if isinstance(outcome, Update) else 0)
