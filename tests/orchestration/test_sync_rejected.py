"""A synchronous round folds the updates that pass validation, in device order, and counts the
others as rejected: the model is the plain mean of the valid ones, computed by hand."""

from __future__ import annotations

import math

from fedfit.aggregation import AggregationRule, weighting
from fedfit.orchestration.sync import SyncConfig, SyncOrchestrator
from fedfit.policy import FixedPlanner
from tests.orchestration.fakes import FakeFleet, scalar


def test_rejected_updates_are_counted_and_left_out_of_the_fold_and_the_registry() -> None:
    # device 1's update holds a NaN, device 4's an infinity: rejected by validation
    deltas = [1.0, math.nan, 3.0, 5.0, math.inf, 8.0]
    fleet = FakeFleet(durations=[6.0, 5.0, 4.0, 3.0, 2.0, 1.0], deltas=deltas)
    orch = SyncOrchestrator(fleet=fleet, planner=FixedPlanner(batch_size=1), weighting=weighting("uniform"),
                            evaluator=lambda p: (0.0, 0.0), config=SyncConfig(rounds=2, clients_per_round=6),
                            seed=0, rule=AggregationRule(weighting=weighting("uniform")))
    first, second = list(orch.rounds(scalar(0.0)))
    assert first.params["w"].item() == (1.0 + 3.0 + 5.0 + 8.0) / 4
    assert second.params["w"].item() == first.params["w"].item() + (1.0 + 3.0 + 5.0 + 8.0) / 4
    assert first.report.rejected_updates == 2 and first.report.failures_by_cause == {"rejected": 2}
    assert first.report.participants_by_tier == {"test": 4}
    assert {d: orch.registry.history(d).folded for d in range(6)} == {
        0: (0, 1), 1: (), 2: (0, 1), 3: (0, 1), 4: (), 5: (0, 1)}
