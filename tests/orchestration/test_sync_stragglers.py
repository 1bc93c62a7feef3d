"""Synchronous straggler handling: late updates dropped, or folded in later as stale."""

from __future__ import annotations

import pytest

from fedfit.aggregation import (
    AggregationRule,
    MeanInterval,
    ParticipationFn,
    StalenessDiscount,
    unweighted,
    weighting,
)
from fedfit.orchestration.sync import SyncConfig, SyncOrchestrator
from fedfit.policy import FixedPlanner
from tests.orchestration.fakes import FakeFleet, scalar


def _run(late: str, max_staleness: int | None = None,
         participation: ParticipationFn = unweighted) -> list:  # type: ignore[type-arg]
    fleet = FakeFleet(durations=[1.0, 8.0], deltas=[1.0, 4.0])
    config = SyncConfig(rounds=2, clients_per_round=2, deadline_s=5.0, late_updates=late,  # type: ignore[arg-type]
                        max_staleness=max_staleness)
    rule = AggregationRule(weighting=weighting("uniform"), staleness=StalenessDiscount("polynomial", exponent=1.0),
                           participation=participation)
    orch = SyncOrchestrator(fleet=fleet, planner=FixedPlanner(batch_size=1), weighting=weighting("uniform"),
                            evaluator=lambda p: (0.0, 0.0), config=config, seed=0, rule=rule)
    return list(orch.rounds(scalar(0.0)))


def test_drop_cancels_the_straggler_and_counts_a_deadline_failure() -> None:
    rounds = _run("drop")

    assert rounds[0].report.failures_by_cause == {"deadline": 1}
    assert rounds[0].params["w"].item() == pytest.approx(1.0)  # only d0
    assert rounds[1].params["w"].item() == pytest.approx(2.0)  # d0 again; d1 cancelled again


def test_stale_folds_the_straggler_into_the_next_round_with_its_discount() -> None:
    rounds = _run("stale")

    # Round 0 ends at its deadline (t=5) with d0 only: x = 1. d1 keeps running from x=0.
    assert rounds[0].report.virtual_time_s == 5.0
    assert rounds[0].params["w"].item() == pytest.approx(1.0)
    # Round 1: d0 from x=1 → 2 (fresh, s=1) at t=6, d1 from x=0 → 4 at t=8 (1 round stale, s=1/2).
    assert rounds[1].report.participants_by_tier == {"test": 2}
    assert rounds[1].params["w"].item() == pytest.approx(1.0 + 0.75 * ((2.0 + 0.5 * 4.0) / 1.5 - 1.0))


def test_a_folded_straggler_counts_for_the_rounds_it_missed() -> None:
    rounds = _run("stale", participation=MeanInterval(cutoff=50))

    # Round 1 folds d0 (its second fold: ω = 1, s = 1, x = 2) and d1 (first fold, at round 1:
    # ω = 2, s = 1/2, x = 4). w·ω·s = 1 and 1: average 3; η = Σ w·ω·s / Σ w·ω = 2/3.
    assert rounds[1].params["w"].item() == pytest.approx(1.0 + (2 / 3) * (3.0 - 1.0))


def test_stale_beyond_the_bound_is_dropped_and_counted() -> None:
    rounds = _run("stale", max_staleness=0)

    assert rounds[1].report.failures_by_cause == {"stale": 1}
    assert rounds[1].params["w"].item() == pytest.approx(2.0)


def test_the_registry_records_every_result_and_each_straggler_cut_at_the_deadline() -> None:
    fleet = FakeFleet(durations=[1.0, 8.0], deltas=[1.0, 4.0])
    config = SyncConfig(rounds=2, clients_per_round=2, deadline_s=5.0, late_updates="drop")
    orch = SyncOrchestrator(fleet=fleet, planner=FixedPlanner(batch_size=1), weighting=weighting("uniform"),
                            evaluator=lambda p: (0.0, 0.0), config=config, seed=0)

    list(orch.rounds(scalar(0.0)))

    d0, d1 = orch.registry.history(0), orch.registry.history(1)
    assert (d0.tasks, d0.completions, d0.last_update and d0.last_update.round) == (2, 2, 1)
    assert (d1.tasks, d1.failures_by_cause, d1.last_duration_s) == (2, {"deadline": 2}, 5.0)
    assert orch.registry.last_report_s(0) == 5.0  # round 1 starts when round 0's deadline struck


def test_a_reviser_sets_each_rounds_deadline_from_the_registry() -> None:
    fleet = FakeFleet(durations=[1.0, 8.0], deltas=[1.0, 4.0])
    config = SyncConfig(rounds=2, clients_per_round=2, deadline_s=5.0, late_updates="drop")
    orch = SyncOrchestrator(fleet=fleet, planner=FixedPlanner(batch_size=1), weighting=weighting("uniform"),
                            evaluator=lambda p: (0.0, 0.0), config=config, seed=0)
    seen: list[int] = []

    def reviser(round_: int, registry: object) -> tuple[float | None, float] | None:
        seen.append(round_)
        return None if round_ == 0 else (10.0, 0.0)  # round 0 keeps 5 s; round 1 waits 10 s

    orch.reviser = reviser  # type: ignore[assignment]
    rounds = list(orch.rounds(scalar(0.0)))
    assert seen == [0, 1]
    assert rounds[0].report.failures_by_cause == {"deadline": 1}  # d1 (8 s) cut at 5 s
    assert rounds[1].report.failures_by_cause == {} and rounds[1].report.virtual_time_s == pytest.approx(13.0)
