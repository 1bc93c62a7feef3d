"""DynamicBatchPlanner, readiness selection and batch weighting."""

from __future__ import annotations

import dataclasses
import functools
import math

import torch

from fedfit.aggregation import weighting
from fedfit.cost import MemoryModel, measure
from fedfit.devices import TIERS
from fedfit.models import ModelSpec
from fedfit.policy.batch_planner import DynamicBatchPlanner
from fedfit.policy.batching import BatchingRules
from fedfit.policy.readiness import Readiness
from fedfit.policy.selection import ReadinessFirstSelector, UniformSelector, uniform_cohort
from fedfit.types import BatchRule, Thermal, Update
from tests.helpers import state

SPEC = ModelSpec("cnn", (1, 28, 28), 10)
CNN = measure(SPEC)


def _planner(**kw: object) -> DynamicBatchPlanner:
    return DynamicBatchPlanner(rules=BatchingRules(**kw), costs=functools.partial(measure, SPEC),
                               memory=MemoryModel(), num_examples=[100, 360], local_epochs=2, lr=0.05)


def test_plan_carries_the_decision_and_reduced_work_on_low_battery() -> None:
    p = TIERS["midrange_phone"]
    plan = _planner().plan(1, 4, p, state(free_memory_bytes=p.training_memory_bytes, battery_fraction=0.1))
    assert (plan.micro_batch, plan.accumulation_steps, plan.local_epochs) == (1, 4, 2)
    assert plan.max_steps == math.ceil(math.ceil(360 / 4) * 2 * 0.5) and plan.bound_by is BatchRule.BATTERY


def test_plan_on_strong_wifi_trains_more_epochs() -> None:
    p = TIERS["flagship_phone"]
    plan = _planner(strong_wifi_bps=50e6, wifi_epochs=3).plan(
        0, 0, p, state(free_memory_bytes=p.training_memory_bytes, bandwidth_bps=60e6))
    assert plan.local_epochs == 6 and plan.max_steps is None


def test_readiness_is_affordable_micro_batch_zero_when_hot_or_offline() -> None:
    p, planner = TIERS["older_phone"], _planner()
    free = int(p.training_memory_bytes * 0.78)  # typical app pressure: the calibration point
    assert planner.readiness(p, state(free_memory_bytes=free)) == 8
    assert planner.readiness(p, state(free_memory_bytes=free, thermal=Thermal.HOT)) == 0
    assert planner.readiness(p, state(free_memory_bytes=free, online=False)) == 0


def _ready(device: int, batch: int) -> Readiness:
    return Readiness(device_id=device, tier="t", affordable_batch=batch, planned_batch=1,
                     predicted_duration_s=1.0, battery_fraction=None, charging=None,
                     thermal=Thermal.NOMINAL, online=True)


def test_readiness_first_selector_prefers_ready_devices() -> None:
    reported = {0: 1, 1: 16, 2: 2, 3: 8, 4: 0, 5: 32}
    ready = [_ready(d, b) for d, b in reported.items()]
    selector = ReadinessFirstSelector(UniformSelector(), low=2)
    cohort = selector.select(ready, 3, seed=0, draw=1, version=1)
    assert sorted(cohort) == [1, 3, 5]
    bigger = selector.select(ready, 4, seed=0, draw=1, version=1)
    assert set(bigger[:3]) == {1, 3, 5} and bigger[3] in {0, 2, 4}
    assert bigger[3:] == uniform_cohort([0, 2, 4], 1, seed=0, round_=1)


def test_batch_weighting_is_effective_batch() -> None:
    u = Update(0, 0, {"w": torch.zeros(1)}, num_examples=50, samples_processed=50, steps=13,
               micro_batch=2, accumulation_steps=2, train_loss=0.0)
    assert weighting("batch")(u) == 4.0 and weighting("samples")(u) == 50.0


def test_a_sensor_affords_its_quarter_width_sub_model_though_not_one_sample_of_the_master() -> None:
    sensor, planner = TIERS["sensor_mcu"], _planner(memory_margin=0.0)
    free = sensor.training_memory_bytes  # 384 KiB
    s = state(free_memory_bytes=free, battery_fraction=None)
    memory = MemoryModel().for_device(sensor)
    assert memory.peak_bytes(CNN, 1) > free  # one sample of the master does not fit
    quarter = planner.plan(0, 0, sensor, s)
    quarter = dataclasses.replace(quarter, width=0.25)

    assert planner.readiness(sensor, s) == 0 and planner.adapt(quarter, sensor, s, 0).micro_batch >= 1
    micro = planner.readiness(sensor, s, width=0.25)
    assert micro >= 1 and memory.peak_bytes(measure(SPEC, 0.25), micro) <= free
    assert planner.adapt(dataclasses.replace(quarter, width=1.0), sensor, s, 0).declined
