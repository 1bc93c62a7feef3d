"""The server's batch suggestion: profile-only first, then what the device reported."""

from __future__ import annotations

from fedfit.devices.registry import Registry
from fedfit.policy import FixedPlanner
from fedfit.policy.batch_feedback import HistoryPlanner
from fedfit.types import Failure, FailureCause, TaskCost, TaskResult, TrainPlan, Update
from tests.helpers import profile, state

_COST = TaskCost(0.0, 0.0, 0.0, 0.0, 0, 0, 0, 0.0)


def _result(plan: TrainPlan, outcome: Update | Failure) -> TaskResult:
    return TaskResult(plan, "test", 0.0, 5.0, outcome, _COST, 0)


def test_first_plan_is_the_suggestion_then_the_reported_batch_then_half_after_oom() -> None:
    registry = Registry()
    registry.add(0, profile())
    registry.suggest_batch(0, 16)  # profile-only initial assignment
    planner = HistoryPlanner(FixedPlanner(batch_size=32), registry.history)  # the state affords 32

    first = planner.plan(0, 0, profile(), state())
    # the device ran micro-batch 8 × 4 accumulation and reported it
    registry.record_task(_result(first, Update(0, 0, {}, 1, 1, 1, 8, 4, 0.5)))
    second = planner.plan(0, 1, profile(), state())
    # then it ran out of memory twice in a row
    for r in (1, 2):
        registry.record_task(_result(second, Failure(0, r, FailureCause.OUT_OF_MEMORY, "peak > free")))
    third = planner.plan(0, 3, profile(), state())

    assert [first.micro_batch, second.micro_batch, third.micro_batch] == [16, 8, 2]  # 8 >> 2 = 2


def test_the_current_state_still_caps_the_reported_batch() -> None:
    registry = Registry()
    registry.add(0, profile())
    registry.record_task(_result(TrainPlan(0, 0, 32), Update(0, 0, {}, 1, 1, 1, 32, 1, 0.5)))

    plan = HistoryPlanner(FixedPlanner(batch_size=8), registry.history).plan(0, 1, profile(), state())

    assert plan.micro_batch == 8


def test_the_current_state_caps_the_profile_suggestion_before_the_first_task() -> None:
    registry = Registry()
    registry.add(0, profile())
    registry.suggest_batch(0, 4)  # from the profile at rest
    # hot now: the planner (the device's state) affords 2; suggesting 4 would make its readiness
    # (2) fall short of the plan and defer it every round until it had run once
    plan = HistoryPlanner(FixedPlanner(batch_size=2), registry.history).plan(0, 0, profile(), state())

    assert plan.micro_batch == 2


def test_other_failures_leave_the_plan_alone() -> None:
    registry = Registry()
    registry.add(0, profile())
    registry.record_task(_result(TrainPlan(0, 0, 32), Failure(0, 0, FailureCause.OFFLINE, "gone")))

    assert HistoryPlanner(FixedPlanner(batch_size=32), registry.history).plan(0, 1, profile(), state()).micro_batch == 32
