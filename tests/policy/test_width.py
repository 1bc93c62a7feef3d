"""Width policy: capability from the memory and time formulas, random sampling, common, elastic."""

from __future__ import annotations

import functools
import math

import pytest

from fedfit.cost import MemoryModel, measure, task_cost
from fedfit.devices import TIERS
from fedfit.models import ModelSpec
from fedfit.policy import FixedPlanner
from fedfit.policy.width import (
    WidthPlanner, WidthPolicy, active_width, capability_plan, common_width, nominal_state, random_width,
)
from fedfit.types import TrainPlan
from tests.helpers import profile, state

SPEC = ModelSpec("cnn", (1, 28, 28), 10)
COSTS = functools.partial(measure, SPEC)
MEMORY = MemoryModel()
WIDTHS = (1.0, 0.5, 0.25, 0.125, 0.0625)
PLAN = TrainPlan(device_id=0, round=0, micro_batch=32)


def _peak(width: float, micro: int = 32) -> int:
    return MEMORY.peak_bytes(measure(SPEC, width), micro)


def _duration(width: float, examples: int) -> float:
    cost = measure(SPEC, width)
    return task_cost(plan=TrainPlan(0, 0, 32, width=width), profile=profile(), state=state(), cost=cost,
                     memory=MEMORY, num_examples=examples, bytes_down=cost.param_bytes,
                     bytes_up=cost.param_bytes).duration_s


def _capability(free: int, deadline_s: float | None = None, examples: int = 100) -> TrainPlan:
    return capability_plan(PLAN, profile(), state(free_memory_bytes=free), widths=WIDTHS, costs=COSTS,
                           memory=MEMORY, num_examples=examples, deadline_s=deadline_s)


def test_capability_takes_the_largest_width_whose_peak_fits_free_memory() -> None:
    assert _capability(_peak(1.0)).width == 1.0
    assert _capability(_peak(1.0) - 1).width == 0.5
    assert _capability((_peak(0.25) + _peak(0.5)) // 2).width == 0.25


def test_capability_takes_the_largest_width_that_meets_the_deadline() -> None:
    deadline = (_duration(0.25, 500) + _duration(0.5, 500)) / 2
    assert _capability(2**30, deadline, examples=500).width == 0.25
    assert _capability(2**30, _duration(1.0, 500) + 1e-6, examples=500).width == 1.0


def test_capability_micro_batches_the_smallest_width_when_nothing_fits() -> None:
    free = _peak(0.0625, 5)
    plan = _capability(free)
    assert plan.width == 0.0625
    assert plan.micro_batch == 5 and plan.accumulation_steps == math.ceil(32 / 5)
    assert _peak(0.0625, plan.micro_batch) <= free < _peak(0.0625, plan.micro_batch + 1)


def test_sensor_tier_gets_a_sub_model_under_50_kb_that_fits_its_training_memory() -> None:
    sensor = TIERS["sensor_mcu"]
    plan = capability_plan(PLAN, sensor, nominal_state(sensor), widths=WIDTHS, costs=COSTS, memory=MEMORY,
                           num_examples=300, deadline_s=None)
    cost = measure(SPEC, plan.width)
    assert cost.param_bytes < 50_000
    assert MEMORY.for_device(sensor).peak_bytes(cost, plan.micro_batch) <= sensor.training_memory_bytes == 384 * 1024
    assert plan.effective_batch >= 32


def test_random_width_is_seeded_and_drawn_from_the_list() -> None:
    draws = [random_width(WIDTHS, seed=0, device_id=d, round_=3) for d in range(40)]
    assert draws == [random_width(WIDTHS, seed=0, device_id=d, round_=3) for d in range(40)]
    assert set(draws) == set(WIDTHS)


def test_common_width_is_what_the_weakest_device_fits() -> None:
    strong, weak = profile(training_memory_bytes=2**30), profile(training_memory_bytes=_peak(0.25))
    assert common_width(PLAN, [strong, weak], [100, 100], widths=WIDTHS, costs=COSTS, memory=MEMORY,
                        deadline_s=None) == 0.25
    assert common_width(PLAN, [strong], [100], widths=WIDTHS, costs=COSTS, memory=MEMORY, deadline_s=None) == 1.0


def test_active_width_is_the_pool_quantile_snapped_down_to_a_level() -> None:
    assert active_width([], WIDTHS, 0.5) == 1.0
    assert active_width([1.0, 0.25, 0.25, 0.5], WIDTHS, 0.5) == 0.25
    assert active_width([1.0, 1.0, 0.5], WIDTHS, 0.5) == 1.0
    assert active_width([0.3], WIDTHS, 0.5) == 0.25


@pytest.mark.parametrize("elastic, expected", [(False, [1.0, 1.0, 1.0, 1.0]), (True, [1.0, 1.0, 0.25, 1.0])])
def test_elastic_width_shrinks_after_a_weak_pool_and_grows_back(elastic: bool, expected: list[float]) -> None:
    policy = WidthPolicy(mode="capability", widths=WIDTHS, elastic=elastic, quantile=0.5)
    planner = WidthPlanner(FixedPlanner(batch_size=32), policy, COSTS, MEMORY, [100] * 3)
    strong, weak = state(free_memory_bytes=2**30), state(free_memory_bytes=_peak(0.25))
    pools = [[strong, strong, strong], [weak, weak, strong], [strong, strong, strong], [strong, strong, strong]]
    strongest = []
    for r, pool in enumerate(pools):
        strongest.append(max(planner.plan(d, r, profile(), s).width for d, s in enumerate(pool)))
    assert strongest == expected
