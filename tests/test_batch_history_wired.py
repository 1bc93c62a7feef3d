"""A dynamic-batching run reads the registry's batch history (issue 11 smaller defect:
``Registry.suggest_batch`` and the recorded batches were never read in a run)."""

from __future__ import annotations

from fedfit.config import parse_config
from fedfit.experiment import built
from fedfit.policy.batch_feedback import HistoryPlanner
from fedfit.policy.batching import initial_batch

RAW = {
    "seed": 1, "data": {"dataset": "digits", "max_train_samples": 200, "max_test_samples": 50},
    "model": {"name": "logreg"}, "fleet": {"tiers": {"midrange_phone": 2, "smartwatch": 2}},
    "orchestration": {"rounds": 1, "clients_per_round": 2}, "batching": {"mode": "dynamic"},
    "output": {"plots": False, "progress": False},
}


def test_a_dynamic_run_stores_each_devices_suggestion_and_plans_through_its_history() -> None:
    with built(parse_config(RAW)) as exp:
        assert exp.registry is not None
        found, seen = [], [exp.orchestrator]
        while seen:  # the planner chain: wrappers hold the planner they adjust
            node = seen.pop()
            if isinstance(node, HistoryPlanner):
                found.append(node)
            seen += [getattr(node, a) for a in ("base", "inner", "planner", "cohort") if hasattr(node, a)]
        assert found, "no HistoryPlanner in the run's planner chain"
        dynamic = found[0].base
        for device in exp.registry.ids():
            expected = max(1, initial_batch(exp.registry.profile(device), dynamic.costs(1.0), dynamic.memory,
                                            dynamic.rules))
            assert exp.registry.history(device).suggested_batch == expected
