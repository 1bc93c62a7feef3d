"""Asynchronous aggregation: FedBuff applies exactly at K, FedAsync mixing, staleness bound,
and a paused-and-continued run equals an unbroken one."""

from __future__ import annotations

import io
import math

import pytest
import torch

from fedfit.aggregation import AggregationRule, MeanInterval, StalenessDiscount, weighting
from fedfit.cost import MemoryModel, TaskPredictor, measure
from fedfit.models import ModelSpec
from fedfit.orchestration.asynchronous import AsyncConfig, AsyncOrchestrator, AsyncState
from fedfit.orchestration.cohort import Cohort
from fedfit.policy import FixedPlanner, UniformSelector
from tests.orchestration.fakes import FakeFleet, scalar


def _cohort(n: int) -> Cohort:
    cost = measure(ModelSpec("logreg", (4,), 2))
    predictor = TaskPredictor(lambda w: cost, MemoryModel(), [1] * n, 8)
    return Cohort(FixedPlanner(batch_size=1), UniformSelector(), predictor)


def _orchestrator(fleet: FakeFleet, rule: AggregationRule, k: int, **kw: object) -> AsyncOrchestrator:
    config = AsyncConfig(aggregations=10, buffer_size=k, **kw)  # type: ignore[arg-type]
    return AsyncOrchestrator(fleet=fleet, cohort=_cohort(len(fleet.durations)), rule=rule,
                             evaluator=lambda p: (float(p["w"].item()), 0.0), config=config, seed=0)


def test_fedbuff_applies_exactly_at_k_with_staleness_weights() -> None:
    fleet = FakeFleet(durations=[1.0, 2.0, 3.0, 10.0], deltas=[1.0, 2.0, 3.0, 4.0])
    rule = AggregationRule(weighting=weighting("uniform"), staleness=StalenessDiscount("polynomial", exponent=1.0))
    orch = _orchestrator(fleet, rule, k=2)

    outcomes = [o for o, _ in orch.run(AsyncState(scalar(0.0)), aggregations=2)]

    # v1 at t=2: d0 (x=1) and d1 (x=2), both fresh → 1.5. d0 finished at t=1 but waits for v1
    # (a device never trains twice from one version); d0 and d1 restart from v1 at t=2.
    assert [sum(o.report.participants_by_tier.values()) for o in outcomes] == [2, 2]
    assert outcomes[0].report.virtual_time_s == 2.0
    assert outcomes[0].params["w"].item() == pytest.approx(1.5)
    # v2 at t=3: d2 (from v0: x=3, staleness 1, s=1/2) then d0 (from v1: x=2.5, s=1).
    avg = (0.5 * 3.0 + 1.0 * 2.5) / 1.5
    assert outcomes[1].params["w"].item() == pytest.approx(1.5 + 0.75 * (avg - 1.5))


def test_fedasync_mixing_with_a_known_staleness_through_the_loop() -> None:
    fleet = FakeFleet(durations=[1.0, 5.0], deltas=[1.0, 4.0])
    rule = AggregationRule(weighting=weighting("uniform"), staleness=StalenessDiscount("polynomial", exponent=0.5),
                           server_lr=0.5)
    orch = _orchestrator(fleet, rule, k=1)

    outcomes = [o for o, _ in orch.run(AsyncState(scalar(0.0)), aggregations=5)]

    # d0 every second from the newest version: x ← x + 0.5·1 → 0.5, 1.0, 1.5, 2.0 at t = 1..4;
    # at t=5 d1's update (from v0: x = 4, staleness 4) mixes with α_t = 0.5·(4+1)^−0.5.
    assert [o.params["w"].item() for o in outcomes[:4]] == pytest.approx([0.5, 1.0, 1.5, 2.0])
    assert outcomes[4].params["w"].item() == pytest.approx(2.0 + 0.5 / math.sqrt(5) * (4.0 - 2.0))


def test_updates_past_max_staleness_are_dropped_and_counted() -> None:
    fleet = FakeFleet(durations=[1.0, 5.0], deltas=[1.0, 4.0])
    rule = AggregationRule(weighting=weighting("uniform"), server_lr=0.5)
    orch = _orchestrator(fleet, rule, k=1, max_staleness=3)

    outcomes = [o for o, _ in orch.run(AsyncState(scalar(0.0)), aggregations=5)]

    # d1's update (staleness 4) is dropped; the 5th version is d0's fresh update instead.
    dropped = sum(o.report.failures_by_cause.get("stale", 0) for o in outcomes)
    assert dropped == 1
    assert outcomes[4].params["w"].item() == pytest.approx(2.5)


def test_concurrency_caps_tasks_in_flight() -> None:
    fleet = FakeFleet(durations=[1.0, 2.0, 3.0, 4.0], deltas=[1.0] * 4)
    orch = _orchestrator(fleet, AggregationRule(), k=1, concurrency=2)

    list(orch.run(AsyncState(scalar(0.0)), aggregations=4))

    starts = [t for t, _, _ in fleet.dispatched]
    assert starts[:2] == [0.0, 0.0] and len([t for t in starts if t == 0.0]) == 2


def test_paused_run_continued_from_saved_state_equals_unbroken_run() -> None:
    rule = AggregationRule(weighting=weighting("uniform"), staleness=StalenessDiscount("polynomial"), server_lr=0.7)
    unbroken_fleet = FakeFleet(durations=[1.0, 2.5, 4.0], deltas=[1.0, -2.0, 3.0])
    unbroken = [o for o, _ in _orchestrator(unbroken_fleet, rule, k=2).run(AsyncState(scalar(0.0)), aggregations=6)]

    fleet = FakeFleet(durations=[1.0, 2.5, 4.0], deltas=[1.0, -2.0, 3.0])
    first = list(_orchestrator(fleet, rule, k=2).run(AsyncState(scalar(0.0)), aggregations=3))
    buffer = io.BytesIO()
    torch.save(first[-1][1], buffer)  # the server's state goes to disk and back
    buffer.seek(0)
    saved: AsyncState = torch.load(buffer, weights_only=False)
    rest = [o for o, _ in _orchestrator(fleet, rule, k=2).run(saved, aggregations=3)]

    resumed = [o for o, _ in first] + rest
    assert [o.report.virtual_time_s for o in resumed] == [o.report.virtual_time_s for o in unbroken]
    assert [o.params["w"].item() for o in resumed] == [o.params["w"].item() for o in unbroken]
    assert fleet.dispatched == unbroken_fleet.dispatched


def test_a_rarely_heard_device_counts_for_the_versions_it_missed() -> None:
    fleet = FakeFleet(durations=[1.0, 1.0, 4.5], deltas=[1.0, 1.0, 10.0])
    rule = AggregationRule(weighting=weighting("uniform"), staleness=StalenessDiscount("constant"),
                           participation=MeanInterval(cutoff=50))
    orch = _orchestrator(fleet, rule, k=2)

    outcomes = [o for o, _ in orch.run(AsyncState(scalar(0.0)), aggregations=5)]

    # d0 and d1 fold in at every version: x = 1, 2, 3, 4 at t = 1..4. d2 (from v0: x = 10)
    # arrives at t=4.5, folded at version 4 after waiting versions 0..4: ω = 5. At t=5 d0 and d1
    # finish together (from v4: x = 5, ω = 1); the first fills the buffer: (5·10 + 1·5) / 6, where plain FedBuff would take (10 + 5) / 2.
    assert [o.params["w"].item() for o in outcomes[:4]] == pytest.approx([1.0, 2.0, 3.0, 4.0])
    assert outcomes[4].params["w"].item() == pytest.approx(55 / 6)
    assert orch.registry.history(2).folded == (4,)
    assert {orch.registry.history(0).folded, orch.registry.history(1).folded} == {(0, 1, 2, 3), (0, 1, 2, 3, 4)}
