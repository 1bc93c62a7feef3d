"""Each straggler mode runs from a config on a simulated mixed fleet; async resumption is exact."""

from __future__ import annotations

import pytest

from fedfit.config import ExperimentConfig, parse_config
from fedfit.experiment import built
from fedfit.runner import run
from fedfit.orchestration.asynchronous import AsyncOrchestrator, AsyncState


def mixed(**sections: dict) -> ExperimentConfig:  # type: ignore[type-arg]
    raw: dict = {  # type: ignore[type-arg]
        "seed": 2, "data": {"dataset": "digits", "max_train_samples": 600, "max_test_samples": 100},
        "model": {"name": "logreg"},
        "fleet": {"tiers": {"flagship_phone": 3, "older_phone": 3, "smartwatch": 2}},
        "training": {"batch_size": 8}, "orchestration": {"rounds": 3, "clients_per_round": 3},
        "output": {"plots": False, "progress": False},
    }
    for key, value in sections.items():
        raw[key] = {**raw.get(key, {}), **value}
    return parse_config(raw)


@pytest.mark.slow
@pytest.mark.parametrize("sections", [
    {"orchestration": {"mode": "async"}, "asynchronous": {"algorithm": "fedbuff", "buffer_size": 3}},
    {"orchestration": {"mode": "async", "max_staleness": 2}, "asynchronous": {"algorithm": "fedasync"}},
    {"local_work": {"kind": "budget", "budget_s": 5.0}, "aggregation": {"fednova": True},
     "training": {"proximal_mu": 0.01}},
    {"selection": {"kind": "compute_aware"}, "orchestration": {"deadline_s": 30.0, "over_selection": 0.5,
                                                                "late_updates": "stale"}},
    {"selection": {"kind": "oort"}},
])
def test_mode_runs_and_reports_tier_accuracy(sections: dict) -> None:  # type: ignore[type-arg]
    result = run(mixed(**sections))

    assert len(result.reports) == 3
    assert set(result.summary["local_accuracy_by_tier"]) <= {"flagship_phone", "older_phone", "smartwatch", "fleet"}
    assert "fleet" in result.summary["local_accuracy_by_tier"]


@pytest.mark.slow
def test_resumed_async_run_on_the_simulated_fleet_equals_an_unbroken_run() -> None:
    config = mixed(orchestration={"mode": "async", "rounds": 4}, asynchronous={"buffer_size": 2})
    with built(config) as exp:
        assert isinstance(exp.orchestrator, AsyncOrchestrator)
        unbroken = [o for o, _ in exp.orchestrator.run(AsyncState(exp.initial_params))]
    with built(config) as exp:
        assert isinstance(exp.orchestrator, AsyncOrchestrator)
        first = list(exp.orchestrator.run(AsyncState(exp.initial_params), aggregations=2))
        rest = [o for o, _ in exp.orchestrator.run(first[-1][1], aggregations=2)]
    resumed = [o for o, _ in first] + rest

    assert [o.report.virtual_time_s for o in resumed] == [o.report.virtual_time_s for o in unbroken]
    for a, b in zip(resumed, unbroken, strict=True):
        assert all(a.params[k].equal(b.params[k]) for k in a.params)


@pytest.mark.slow
def test_async_oort_reading_the_registry_is_deterministic_and_resumes_exactly() -> None:
    config = mixed(orchestration={"mode": "async", "rounds": 4}, asynchronous={"buffer_size": 2},
                   selection={"kind": "oort"})
    with built(config) as exp:
        assert isinstance(exp.orchestrator, AsyncOrchestrator)
        unbroken = [o for o, _ in exp.orchestrator.run(AsyncState(exp.initial_params))]
    with built(config) as exp:
        assert isinstance(exp.orchestrator, AsyncOrchestrator) and exp.registry is exp.orchestrator.registry
        first = list(exp.orchestrator.run(AsyncState(exp.initial_params), aggregations=2))
        rest = [o for o, _ in exp.orchestrator.run(first[-1][1], aggregations=2)]
        assert sum(exp.registry.history(d).tasks for d in exp.registry.ids()) > 0
    resumed = [o for o, _ in first] + rest

    assert [o.report.invited_by_tier for o in resumed] == [o.report.invited_by_tier for o in unbroken]
    assert [o.report.virtual_time_s for o in resumed] == [o.report.virtual_time_s for o in unbroken]
    for a, b in zip(resumed, unbroken, strict=True):
        assert all(a.params[k].equal(b.params[k]) for k in a.params)
