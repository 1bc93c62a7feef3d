"""Planning many devices at once gives each device the plan planning it alone gives."""

from __future__ import annotations

import functools

import pytest

from fedfit.cost import MemoryModel, measure
from fedfit.devices import TIERS
from fedfit.models import ModelSpec
from fedfit.policy import FixedPlanner
from fedfit.policy.planning import BatchPlanner, plans_of
from fedfit.policy.width import WidthPlanner, WidthPolicy
from fedfit.types import DeviceProfile, DeviceState, TrainPlan
from tests.helpers import state

COSTS = functools.partial(measure, ModelSpec("cnn", (1, 28, 28), 10))
DEVICES = [5, 2, 9, 2, 40]
PROFILES = [TIERS["flagship_phone"], TIERS["smartwatch"], TIERS["older_phone"]]


def _profile_of(d: int) -> DeviceProfile:
    return PROFILES[d % 3]


def _state_of(d: int) -> DeviceState:
    return state(free_memory_bytes=2**20 * (1 + d % 7) * 64)


@pytest.mark.parametrize("planner", [FixedPlanner(batch_size=16), FixedPlanner(batch_size=8, local_epochs=3, lr=0.1,
                                                                                 max_steps=7, deadline_s=30.0)])
def test_fixed_plans_in_one_call_are_the_written_plans(planner: FixedPlanner) -> None:
    def unread(d: int) -> DeviceProfile:
        raise AssertionError("a fixed plan reads nothing of the device")

    expected = [TrainPlan(device_id=d, round=4, micro_batch=planner.batch_size, accumulation_steps=1,
                          local_epochs=planner.local_epochs, max_steps=planner.max_steps, lr=planner.lr, width=1.0,
                          deadline_s=planner.deadline_s) for d in DEVICES]
    assert isinstance(planner, BatchPlanner)
    assert plans_of(planner, DEVICES, 4, unread, unread) == expected  # type: ignore[arg-type]
    assert [planner.plan(d, 4, _profile_of(d), _state_of(d)) for d in DEVICES] == expected


@pytest.mark.parametrize("policy", [WidthPolicy(), WidthPolicy(fixed=0.5, widths=(0.5, 1.0)),
                                    WidthPolicy(mode="random", widths=(0.25, 0.5, 1.0)),
                                    WidthPolicy(mode="capability", widths=(0.25, 0.5, 1.0)),
                                    WidthPolicy(mode="capability", widths=(0.25, 0.5, 1.0), elastic=True)])
def test_width_plans_in_one_call_equal_device_by_device(policy: WidthPolicy) -> None:
    def twin() -> WidthPlanner:
        return WidthPlanner(FixedPlanner(batch_size=16), policy, COSTS, MemoryModel(), [100] * 50, seed=3)

    together, alone = twin(), twin()
    for r in range(3):  # elastic width carries each round's pool into the next
        got = plans_of(together, DEVICES, r, _profile_of, _state_of)
        assert got == [alone.plan(d, r, _profile_of(d), _state_of(d)) for d in DEVICES]
    assert together.pools == alone.pools
    if policy.mode == "fixed":
        assert {p.width for p in got} == {policy.fixed}


def test_a_planner_without_batches_is_asked_device_by_device_in_order() -> None:
    asked: list[tuple[int, str, float]] = []

    class Recording:
        def plan(self, device_id: int, round_: int, profile: DeviceProfile, state: DeviceState) -> TrainPlan:
            asked.append((device_id, profile.tier, state.free_memory_bytes))
            return TrainPlan(device_id, round_, 32)

    plans = plans_of(Recording(), DEVICES, 1, _profile_of, _state_of)
    assert plans == [TrainPlan(d, 1, 32) for d in DEVICES]
    assert asked == [(d, _profile_of(d).tier, _state_of(d).free_memory_bytes) for d in DEVICES]
