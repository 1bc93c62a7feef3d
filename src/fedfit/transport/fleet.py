"""NetworkFleet: real devices over HTTP behind the same Fleet contract as the simulator.

The orchestrator thread calls the :class:`~fedfit.orchestration.contract.Fleet` methods; the
HTTP handlers call :meth:`NetworkFleet.task_for`, :meth:`NetworkFleet.deliver` and
:meth:`NetworkFleet.heartbeat`. One lock guards both sides. Times are wall seconds from a
:class:`~fedfit.transport.clock.WallClock`. :meth:`peek_time` blocks until a result is there,
turning a task past its timeout into a ``deadline`` failure and a task whose device stopped
sending heartbeats into an ``offline`` failure, so a round never waits for a dead device.
"""

from __future__ import annotations

import dataclasses
import json
import threading
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from fedfit.transport.clock import WallClock
from fedfit.transport.codec import encode
from fedfit.transport.messages import ReadinessReport, plan_record
from fedfit.transport.state import ServerState, TaskRecord
from fedfit.types import (
    DeviceProfile, DeviceState, Failure, FailureCause, Link, Params, TaskCost, TaskResult, Thermal, TrainPlan,
)

_NO_COST = TaskCost(0.0, 0.0, 0.0, 0.0, 0, 0, 0, 0.0)
#: A device's affordable micro-batch for a plan, given its profile and state (0: it would decline).
BatchReadiness = Callable[[TrainPlan, DeviceProfile, DeviceState], int]


@dataclass(frozen=True)
class InFlight:
    """A task sent to a device and not yet answered."""

    task_id: str
    plan: TrainPlan
    sent: Params
    payload: bytes
    start_s: float


@dataclass(frozen=True)
class Queued:
    """A finished task waiting for the orchestrator; ``seq``: its journal entry (updates)."""

    result: TaskResult
    seq: int | None


def unknown_state(memory_bytes: int) -> DeviceState:
    """State of a device that has not reported yet (reachable, nothing else known)."""
    return DeviceState(memory_bytes, None, None, None, Thermal.UNKNOWN, Link.WIFI, 0.0, True)


class NetworkFleet:
    """Enrolled devices reached over HTTP (implements :class:`fedfit.orchestration.contract.Fleet`).

    Args:
        store: the durable server state (ledger).
        profiles: each enrolled device's profile, by device id.
        num_examples: each device's local training-set size.
        clock: the wall clock.
        task_timeout_s: a task without a result after this long (or its plan's deadline) fails.
        heartbeat_timeout_s: a device silent this long is offline; its task fails.
    """

    def __init__(self, *, store: ServerState, profiles: Sequence[DeviceProfile], num_examples: Sequence[int],
                 clock: WallClock, task_timeout_s: float, heartbeat_timeout_s: float) -> None:
        self.store, self.clock = store, clock
        self._profiles, self._examples = list(profiles), list(num_examples)
        self._timeout_s, self._heartbeat_s = task_timeout_s, heartbeat_timeout_s
        self._cond = threading.Condition()
        self._states: dict[int, DeviceState] = {}
        self._ready: dict[int, ReadinessReport] = {}
        self._seen: dict[int, float] = {d: clock.now() for d in range(len(self._profiles))}
        self._flight: dict[int, InFlight] = {}
        self._queue: list[Queued] = []
        self._consumed: list[int] = []
        self._dropped: list[int] = []

    # -- the Fleet contract (orchestrator thread) ---------------------------------------------
    def device_ids(self) -> list[int]:
        return list(range(len(self._profiles)))

    def profile(self, device_id: int) -> DeviceProfile:
        return self._profiles[device_id]

    def num_examples(self, device_id: int) -> int:
        return self._examples[device_id]

    def snapshot(self, device_id: int, at_s: float) -> DeviceState:
        with self._cond:
            state = self._states.get(device_id) or unknown_state(self._profiles[device_id].training_memory_bytes)
            if self.clock.now() - self._seen[device_id] > self._heartbeat_s:
                state = dataclasses.replace(state, online=False, link=Link.OFFLINE, bandwidth_bps=0.0)
            return state

    def busy(self, device_id: int) -> bool:
        with self._cond:
            return device_id in self._flight or any(q.result.plan.device_id == device_id for q in self._queue)

    def dispatch(self, plan: TrainPlan, params: Params, now_s: float) -> None:
        start = max(now_s, self.clock.now())
        if not self.snapshot(plan.device_id, start).online:
            self._push(Queued(self._failed(plan, start, FailureCause.OFFLINE, "unreachable at dispatch"), None))
            return
        task = InFlight(uuid.uuid4().hex, plan, params, encode(params), start)
        self.store.issue(TaskRecord(task.task_id, plan.device_id, plan.round, json.dumps(plan_record(plan)), start))
        with self._cond:
            self._flight[plan.device_id] = task
            self._cond.notify_all()

    def peek_time(self) -> float | None:
        with self._cond:
            while not self._queue and self._flight:
                self._expire()
                if not self._queue:
                    self._cond.wait(timeout=0.2)
            return min((q.result.finish_s for q in self._queue), default=None)

    def next_result(self) -> TaskResult | None:
        with self._cond:
            if self.peek_time() is None:
                return None
            first = min(range(len(self._queue)), key=lambda i: self._queue[i].result.finish_s)
            queued = self._queue.pop(first)
            if queued.seq is not None:
                self._consumed.append(queued.seq)
            return queued.result

    def cancel_pending(self) -> list[TrainPlan]:
        with self._cond:
            plans = [q.result.plan for q in self._queue]
            self._dropped += [q.seq for q in self._queue if q.seq is not None]
            for task in self._flight.values():
                self.store.set_status(task.task_id, "cancelled", "round closed")
                plans.append(task.plan)
            self._queue, self._flight = [], {}
            return plans

    def settled(self) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """Journal entries handed to the orchestrator and dropped since the last call."""
        with self._cond:
            out = tuple(self._consumed), tuple(self._dropped)
            self._consumed, self._dropped = [], []
            return out

    # -- the device side (HTTP handlers) -------------------------------------------------------
    def heartbeat(self, device_id: int, state: DeviceState | None) -> None:
        with self._cond:
            self._seen[device_id] = self.clock.now()
            if state is not None:
                self._states[device_id] = state
                self._cond.notify_all()

    def wait_for_reports(self, timeout_s: float) -> int:
        """Wait up to ``timeout_s`` until every device has reported its state (the first selection
        then sees measured states, not placeholders); returns how many have."""
        deadline = self.clock.now() + timeout_s
        with self._cond:
            while len(self._states) < len(self._profiles) and self.clock.now() < deadline:
                self._cond.wait(timeout=0.2)
            return len(self._states)

    def report_readiness(self, device_id: int, report: ReadinessReport) -> None:
        with self._cond:
            self._seen[device_id] = self.clock.now()
            self._ready[device_id] = report

    def batch_readiness(self, policy: BatchReadiness) -> BatchReadiness:
        """The cohort's readiness source: what each device answered to the readiness query.

        A device that said it is not ready affords 0 (selection defers or deprioritises it, as
        a simulated device that would decline); a device that answered affords the batch it
        reported for a plain plan (full width, no memory technique); a plan at another width or
        with a technique, or a device that has not answered yet, gets ``policy`` (the same batch
        policy) on its last reported state, as in simulation.
        """
        def answered(plan: TrainPlan, profile: DeviceProfile, state: DeviceState) -> int:
            with self._cond:
                report = self._ready.get(plan.device_id)
            if report is not None and not report.ready:
                return 0
            if report is None or plan.width != 1.0 or plan.techniques.active:
                return policy(plan, profile, state)
            return report.affordable_batch
        return answered

    def task_for(self, device_id: int) -> InFlight | None:
        with self._cond:
            return self._flight.get(device_id)

    def in_flight(self, task_id: str) -> InFlight | None:
        with self._cond:
            return next((t for t in self._flight.values() if t.task_id == task_id), None)

    def deliver(self, task_id: str, outcome: Callable[[InFlight, float], tuple[TaskResult, int | None]]) -> TaskResult:
        """Finish in-flight task ``task_id`` with ``outcome(task, now)`` (which makes it durable).

        Raises:
            KeyError: the task is not in flight (any more).
        """
        with self._cond:
            task = next(t for t in self._flight.values() if t.task_id == task_id)
            result, seq = outcome(task, self.clock.now())
            del self._flight[task.plan.device_id]
            self._queue.append(Queued(result, seq))
            self._cond.notify_all()
            return result

    def restore(self, queued: Sequence[Queued], flying: Sequence[InFlight]) -> None:
        """After a restart: journalled updates not yet aggregated, and tasks devices still hold."""
        with self._cond:
            self._queue.extend(queued)
            self._flight.update({t.plan.device_id: t for t in flying})

    # -- internals --------------------------------------------------------------------------------
    def _push(self, queued: Queued) -> None:
        with self._cond:
            self._queue.append(queued)
            self._cond.notify_all()

    def _failed(self, plan: TrainPlan, at_s: float, cause: FailureCause, detail: str) -> TaskResult:
        return TaskResult(plan, self._profiles[plan.device_id].tier, at_s, at_s,
                          Failure(plan.device_id, plan.round, cause, detail), _NO_COST, 0)

    def _expire(self) -> None:
        """Fail tasks past their timeout and tasks of devices that went silent (lock held)."""
        now = self.clock.now()
        for device, task in list(self._flight.items()):
            limit = task.plan.deadline_s if task.plan.deadline_s is not None else self._timeout_s
            if now - task.start_s > limit:
                cause, detail = FailureCause.DEADLINE, f"no result within {limit:g} s"
            elif now - self._seen[device] > self._heartbeat_s:
                cause, detail = FailureCause.OFFLINE, f"no heartbeat for {self._heartbeat_s:g} s"
            else:
                continue
            self.store.set_status(task.task_id, "failed", detail)
            del self._flight[device]
            self._queue.append(Queued(self._failed(task.plan, now, cause, detail), None))
