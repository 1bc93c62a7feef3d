"""Techniques feed the batch: a technique that lowers the peak lets the dynamic batch grow."""

from __future__ import annotations

import functools

import pytest

from fedfit.cost import MemoryModel, measure
from fedfit.cost.techniques import plan_peak_bytes
from fedfit.models import ModelSpec
from fedfit.policy.batch_planner import DynamicBatchPlanner
from fedfit.policy.batching import BatchingRules, decide_batch
from fedfit.policy.memory import MemoryPlanner, MemorySettings
from fedfit.types import Techniques, TrainPlan
from tests.helpers import profile, state

SPEC = ModelSpec("cnn", (1, 28, 28), 10)
CNN = measure(SPEC)
MEMORY = MemoryModel()
RULES = BatchingRules(standard_batch=4096, throughput_target=1.0, memory_margin=0.0)  # memory binds
DEVICE = profile(utilisation=profile().utilisation)
TECHNIQUES = {
    "checkpointing": Techniques(checkpointing=True),
    "pruning": Techniques(sparsity=0.9),
    "partial": Techniques(keep_fraction=0.5),
    "selective": Techniques(train_stages=(len(CNN.stages) - 1,)),
    "qat": Techniques(qat_bits=8),
}


def _peak(t: Techniques, micro: int) -> int:
    return plan_peak_bytes(MEMORY, CNN, TrainPlan(0, 0, micro, techniques=t))


def _hand_batch(t: Techniques, free: int) -> int:
    """The largest micro-batch whose predicted peak fits ``free``, by counting up from one sample:
    a technique's peak is piecewise affine, not one line (pruning's start, where the trainer
    builds the pruned state, is flat in the batch; partial training's gradient gathering sits
    beside the saved activations up to a batch, beside the step's peak beyond it)."""
    micro = 0
    while _peak(t, micro + 1) <= free:
        micro += 1
    return micro


def _free_between(t: Techniques, k: int) -> int:
    """Free memory halfway between the peaks of k and k + 1 samples (no rounding at the edge)."""
    return (_peak(t, k) + _peak(t, k + 1)) // 2


@pytest.mark.parametrize("name", sorted(TECHNIQUES))
def test_dynamic_batch_is_the_hand_computed_batch_of_the_techniques_peak(name: str) -> None:
    t = TECHNIQUES[name]
    free = _free_between(t, 20)
    d = decide_batch(DEVICE, state(free_memory_bytes=free), CNN, MEMORY, RULES, t)
    assert d.micro_batch == _hand_batch(t, free) == 20


@pytest.mark.parametrize("name", sorted(TECHNIQUES))
def test_the_batch_grows_exactly_when_the_technique_lowers_the_peak(name: str) -> None:
    t = TECHNIQUES[name]
    free = _free_between(Techniques(), 12)  # plain training affords 12 samples
    s = state(free_memory_bytes=free)
    plain = decide_batch(DEVICE, s, CNN, MEMORY, RULES)
    fitted = decide_batch(DEVICE, s, CNN, MEMORY, RULES, t)
    assert plain.micro_batch == 12
    assert fitted.micro_batch == _hand_batch(t, free)
    assert (fitted.micro_batch > 12) == (_peak(t, 13) < _peak(Techniques(), 13))


def test_checkpointing_and_selective_lower_the_cnns_peak_so_grow_its_batch() -> None:
    free = _free_between(Techniques(), 12)
    for name in ("checkpointing", "selective"):
        assert decide_batch(DEVICE, state(free_memory_bytes=free), CNN, MEMORY, RULES, TECHNIQUES[name]).micro_batch > 12


def _planners(techniques: tuple[str, ...]) -> tuple[DynamicBatchPlanner, MemoryPlanner]:
    dynamic = DynamicBatchPlanner(rules=RULES, costs=functools.partial(measure, SPEC), memory=MEMORY,
                                  num_examples=[1000])
    settings = MemorySettings(mode="all", techniques=techniques)
    return dynamic, MemoryPlanner(dynamic, settings=settings, costs=dynamic.costs, memory=MEMORY,
                                  num_stages=len(CNN.stages))


def test_memory_planner_plans_the_batch_its_techniques_afford_and_readiness_reports_it() -> None:
    dynamic, planner = _planners(("checkpointing",))
    free = _free_between(Techniques(), 12)
    s = state(free_memory_bytes=free)
    plan = planner.plan(0, 0, DEVICE, s)
    expected = _hand_batch(Techniques(checkpointing=True), free)
    assert plan.techniques.checkpointing and plan.micro_batch == expected > 12
    assert dynamic.plan_readiness(plan, DEVICE, s) == expected
    assert dynamic.adapt(plan, DEVICE, s, 0).micro_batch == expected


def test_auto_mode_rescues_a_device_plain_training_declines() -> None:
    dynamic = DynamicBatchPlanner(rules=RULES, costs=functools.partial(measure, SPEC), memory=MEMORY,
                                  num_examples=[1000])
    planner = MemoryPlanner(dynamic, settings=MemorySettings(mode="auto", candidates=("checkpointing",)),
                            costs=dynamic.costs, memory=MEMORY, num_stages=len(CNN.stages))
    free = _peak(Techniques(), 1) - 1  # not even one sample of plain training
    s = state(free_memory_bytes=free)
    assert dynamic.decide(DEVICE, s).declined
    plan = planner.plan(0, 0, DEVICE, s)
    assert plan.techniques.checkpointing
    assert plan.micro_batch == _hand_batch(plan.techniques, free) >= 1
