"""A tiny in-memory Fleet for orchestration tests: fixed durations, updates x + delta."""

from __future__ import annotations

import dataclasses

import torch

from fedfit.simulation.clock import EventQueue
from fedfit.types import Failure, FailureCause, Params, TaskCost, TaskResult, TrainPlan, Update
from tests.helpers import profile, state

_COST = TaskCost(0.0, 0.0, 0.0, 0.0, 0, 0, 0, 0.0)


class FakeFleet:
    """Device d finishes ``durations[d]`` after dispatch with params + ``deltas[d]``; devices in
    ``failing`` run out of memory instead, every time."""

    def __init__(self, durations: list[float], deltas: list[float], tiers: list[str] | None = None,
                 failing: frozenset[int] = frozenset()) -> None:
        self.durations, self.deltas, self.failing = durations, deltas, failing
        self.tiers = tiers or ["test"] * len(durations)
        self._queue: EventQueue[TaskResult] = EventQueue()
        self._busy: set[int] = set()
        self.dispatched: list[tuple[float, int, int]] = []  # (time, device, version)

    def device_ids(self) -> list[int]:
        return list(range(len(self.durations)))

    def profile(self, device_id: int):  # type: ignore[no-untyped-def]
        return dataclasses.replace(profile(), tier=self.tiers[device_id])

    def snapshot(self, device_id: int, at_s: float):  # type: ignore[no-untyped-def]
        return state()

    def num_examples(self, device_id: int) -> int:
        return 1

    def busy(self, device_id: int) -> bool:
        return device_id in self._busy

    def dispatch(self, plan: TrainPlan, params: Params, now_s: float) -> None:
        d = plan.device_id
        new = {k: v + self.deltas[d] for k, v in params.items()}
        update: Update | Failure = Update(d, plan.round, new, 1, 1, 1, plan.micro_batch, 1, 0.5)
        if d in self.failing:
            update = Failure(d, plan.round, FailureCause.OUT_OF_MEMORY, "fake")
        self._busy.add(d)
        self.dispatched.append((now_s, d, plan.round))
        self._queue.push(now_s + self.durations[d], TaskResult(plan, self.tiers[d], now_s, now_s + self.durations[d],
                                                               update, _COST, 0))

    def next_result(self) -> TaskResult | None:
        if not self._queue:
            return None
        _, result = self._queue.pop()
        self._busy.discard(result.plan.device_id)
        return result

    def peek_time(self) -> float | None:
        return self._queue.peek_time()

    def cancel_pending(self) -> list[TrainPlan]:
        plans = [r.plan for r in self._queue.drain()]
        self._busy.clear()
        return plans


def scalar(value: float) -> dict[str, torch.Tensor]:
    return {"w": torch.tensor([value], dtype=torch.float64)}
