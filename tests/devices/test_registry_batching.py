"""Registry: initial batch suggestion, runtime feedback and the readiness query."""

import functools

import pytest

from fedfit.cost import MemoryModel, measure
from fedfit.devices.catalogue import tier
from fedfit.devices.registry import Registry
from fedfit.models import ModelSpec
from fedfit.policy.batch_planner import DynamicBatchPlanner
from fedfit.policy.batching import BatchingRules, initial_batch
from tests.helpers import state

SPEC = ModelSpec("cnn", (1, 28, 28), 10)
CNN = measure(SPEC)


def test_suggestion_feedback_and_readiness() -> None:
    registry = Registry()
    registry.add(0, tier("older_phone"))
    planner = DynamicBatchPlanner(rules=BatchingRules(), costs=functools.partial(measure, SPEC), memory=MemoryModel(),
                                  num_examples=[10])
    registry.suggest_batch(0, initial_batch(tier("older_phone"), CNN, MemoryModel()))
    # never reported: the suggestion, the whole budget free: (4,367,360 − 1,997,572) // 165,780 = 14
    assert registry.readiness(0, planner.readiness) == 14
    registry.report_state(0, state(battery_fraction=0.1), at_s=5.0)
    assert registry.readiness(0, planner.readiness) == 1
    registry.record_batch(0, 1, 4)
    assert registry.history(0).last_batch == (1, 4) and registry.history(0).suggested_batch == 14
    with pytest.raises(ValueError):
        registry.record_batch(0, 0, 1)
