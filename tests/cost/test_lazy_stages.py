"""A zoo model's stage costs, measured when first read, equal those measured at once
(``measure_stages`` on the same model), and read as that tuple wherever a tuple was read."""

from __future__ import annotations

import dataclasses
import pickle

import pytest
import torch

from fedfit.cost.lazy_stages import LazyStages
from fedfit.cost.memory import MemoryModel
from fedfit.cost.profile import ModelCost, measure
from fedfit.cost.stages import StageCost, measure_stages
from fedfit.cost.techniques import plan_peak_bytes
from fedfit.models import ModelSpec
from fedfit.types import Techniques, TrainPlan


@pytest.mark.parametrize("spec", [ModelSpec("logreg", (1, 8, 8), 10), ModelSpec("mlp", (1, 8, 8), 10),
                                  ModelSpec("cnn", (1, 8, 8), 4), ModelSpec("mlp", (64,), 3, width=0.5)])
def test_read_later_the_stages_equal_those_measured_at_once(spec: ModelSpec) -> None:
    cost = measure.__wrapped__(spec)  # a fresh measurement, not the cache's

    assert isinstance(cost.stages, LazyStages)
    with torch.no_grad():  # read where grad mode is off: measured with it on, as measure ran it
        got = tuple(cost.stages)
    expected = measure_stages(spec.build(), spec.input_shape)
    assert got == expected and len(got) == len(expected) > 0
    assert cost.stages == expected and expected == cost.stages and hash(cost.stages) == hash(expected)
    assert cost == dataclasses.replace(cost, stages=expected)
    assert cost.stages[-1] == expected[-1] and tuple(cost.stages[1:]) == expected[1:]


def _stage(name: str) -> StageCost:
    return StageCost(name=name, num_params=3, largest_param=3, forward_flops=1.0, backward_flops=2.0,
                     activation_bytes=4.0, input_bytes=8.0, output_bytes=8.0)


def test_measured_once_on_first_read_at_the_thread_count_of_its_creation() -> None:
    calls: list[int] = []

    def measured() -> tuple[StageCost, ...]:
        calls.append(torch.get_num_threads())
        return (_stage("a"), _stage("b"))

    before = torch.get_num_threads()
    lazy = LazyStages(measured)
    assert calls == []
    torch.set_num_threads(before + 1)
    try:
        assert len(lazy) == 2 and [s.name for s in lazy] == ["a", "b"] and lazy[0] == _stage("a")
        assert torch.get_num_threads() == before + 1  # put back after measuring
    finally:
        torch.set_num_threads(before)
    assert calls == [before]


def test_pickles_as_the_tuple() -> None:
    lazy = LazyStages(lambda: (_stage("a"),))

    back = pickle.loads(pickle.dumps(lazy))

    assert type(back) is tuple and back == (_stage("a"),)


def test_a_techniques_plan_peak_is_the_same_from_lazy_and_measured_stages() -> None:
    spec = ModelSpec("mlp", (1, 8, 8), 10)
    lazy = measure.__wrapped__(spec)
    eager = dataclasses.replace(lazy, stages=measure_stages(spec.build(), spec.input_shape))
    memory = MemoryModel()
    for techniques in (Techniques(train_stages=(1, 2)), Techniques(checkpointing=True), Techniques()):
        plan = TrainPlan(0, 0, micro_batch=16, techniques=techniques)
        assert plan_peak_bytes(memory, lazy, plan) == plan_peak_bytes(memory, eager, plan)


def test_a_plain_plans_costs_never_measure_the_stages() -> None:
    cost = ModelCost(100, 400, 10.0, 5.0, 8.0, 0.0, stages=LazyStages(_refuse))

    assert plan_peak_bytes(MemoryModel(), cost, TrainPlan(0, 0, micro_batch=8)) > 0


def _refuse() -> tuple[StageCost, ...]:
    raise AssertionError("a plain plan read the stages")
