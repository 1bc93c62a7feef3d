"""A synchronous round's model does not depend on the order its updates arrive in (a deployment's
arrival order is the wall clock's): the updates are summed in device order."""

from __future__ import annotations

from fedfit.aggregation import AggregationRule, weighting
from fedfit.orchestration.sync import SyncConfig, SyncOrchestrator
from fedfit.policy import FixedPlanner
from tests.orchestration.fakes import FakeFleet, scalar


def _final(durations: list[float]) -> float:
    # 1e17 + 1 == 1e17 in float64, so summing these deltas in another order gives other bits
    fleet = FakeFleet(durations=durations, deltas=[1e17, 1.0, -1e17])
    orch = SyncOrchestrator(fleet=fleet, planner=FixedPlanner(batch_size=1), weighting=weighting("uniform"),
                            evaluator=lambda p: (0.0, 0.0), config=SyncConfig(rounds=1, clients_per_round=3),
                            seed=0, rule=AggregationRule(weighting=weighting("uniform")))
    return float(list(orch.rounds(scalar(0.0)))[-1].params["w"].item())


def test_the_same_updates_arriving_in_any_order_give_the_same_model_bits() -> None:
    finals = {_final(d) for d in ([1.0, 2.0, 3.0], [1.0, 3.0, 2.0], [3.0, 2.0, 1.0], [2.0, 1.0, 3.0])}
    assert len(finals) == 1
