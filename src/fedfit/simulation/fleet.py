"""SimulatedFleet: devices on a discrete-event virtual clock, training real PyTorch models.

At dispatch the cost model decides, from the device's state at that virtual moment, how the
task ends and when: offline (unreachable, or the device goes offline mid-task), out of memory
(peak bytes above free memory), battery (the task's energy exceeds the charge left above the
reserve), or success after download + compute + upload. Successful tasks are trained by the
executor; every outcome is an event at its virtual time.

With an ``adapter`` (dynamic batching) a device re-plans its micro-batch at the virtual start
of every local epoch from its state then (:mod:`fedfit.simulation.adaptive`); it may decline
the task (``FailureCause.DECLINED``, with the reason) and an epoch whose peak exceeds free
memory still crashes out of memory. Without one, a fixed plan is judged once at dispatch: the
tasks dispatched until the fleet is next read are priced together
(:mod:`fedfit.cost.task_costs`) and judged together by :mod:`fedfit.simulation.endings`. Every
decided task waits in the event queue as one :class:`~fedfit.simulation.in_flight.InFlight`; its
:class:`~fedfit.types.TaskResult` is built once, when it pops.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Protocol, cast

from fedfit.devices import with_consumption
from fedfit.devices.lazy_trace import LazyTrace
from fedfit.devices.lazy_traces import LazyTraces
from fedfit.devices.state_columns import ColumnStates
from fedfit.errors import CheckpointError
from fedfit.cost import MemoryModel, ModelCost, task_cost
from fedfit.cost.task_costs import task_costs
from fedfit.cost.technique_work import plan_payload_bytes
from fedfit.simulation.adaptive import EpochAdapter, EpochSchedule, schedule_epochs
from fedfit.simulation.clock import EventQueue
from fedfit.simulation.endings import adapted_ending, dispatch_ending, dispatch_endings
from fedfit.simulation.in_flight import FleetState as FleetState, PendingTask as PendingTask  # re-exported
from fedfit.simulation.in_flight import (
    InFlight, pop_due_results, in_flight_of, payload_bytes, payload_sizes, pending_of, queued, result_of,
)
from fedfit.simulation.online_checks import Dispatched, Ending, after_check, offline_during_many
from fedfit.simulation.executors import Executor
from fedfit.types import DeviceProfile, DeviceState, Params, TaskCost, TaskResult, TrainPlan


class StateTrace(Protocol):
    """Anything that tells a device's state at a virtual time (generated or CSV traces)."""

    def state_at(self, t_s: float) -> DeviceState: ...


#: Measured model cost at a width: ``costs(width) -> ModelCost``.
CostTable = Callable[[float], ModelCost]


class SimulatedFleet:
    """A fleet of simulated devices (implements :class:`fedfit.orchestration.contract.Fleet`).

    Args:
        profiles: static profile of each device, indexed by device id.
        traces: dynamic-state trace of each device.
        num_examples: local training-set size of each device.
        costs: measured model cost per width (``costs(width) -> ModelCost``).
        memory: the memory model.
        executor: runs the training of successful tasks.
        adapter: device-side per-epoch batch policy (dynamic batching); ``None``: plans run as sent.
        examples_at: samples a device holds at a virtual time (a stream's buffer);
            ``None``: ``num_examples``.
    """

    def __init__(self, *, profiles: Sequence[DeviceProfile], traces: Sequence[StateTrace],
                 num_examples: Sequence[int], costs: CostTable, memory: MemoryModel,
                 executor: Executor, adapter: EpochAdapter | None = None,
                 examples_at: Callable[[int, float], int] | None = None) -> None:
        # A list is copied; any other sequence (lazy traces made on demand) is kept as given.
        self._traces = list(traces) if isinstance(traces, list) else traces
        self._profiles, self._examples = list(profiles), list(num_examples)
        self._costs, self._memory, self._executor = costs, memory, executor
        self._adapter, self._examples_at = adapter, examples_at
        self._consumed_j = [0.0] * len(self._profiles)
        self._queue: EventQueue[InFlight] = EventQueue()
        self._busy: set[int] = set()
        # The trace states (before consumption) of the last batch of snapshots, and their time.
        self._snapshots: tuple[float, dict[int, DeviceState]] = (-1.0, {})
        self._seen: dict[int, DeviceState] = {}  # those states with the energy spent, until more is spent
        self._waiting: list[Dispatched] = []  # dispatched and judged (adapting devices), not yet finished
        self._unpriced: list[tuple[TrainPlan, DeviceState, Params, float]] = []  # dispatched, cost not yet known
        self._waiting_ids: set[int] = set()

    def device_ids(self) -> list[int]:
        return list(range(len(self._profiles)))

    def profile(self, device_id: int) -> DeviceProfile:
        return self._profiles[device_id]

    def num_examples(self, device_id: int) -> int:
        return self._examples[device_id]

    def busy(self, device_id: int) -> bool:
        return device_id in self._busy

    def energy_used_j(self, device_id: int) -> float:
        """Energy the device has spent on fedfit tasks so far."""
        self._flush()
        return self._consumed_j[device_id]

    def snapshot(self, device_id: int, at_s: float) -> DeviceState:
        if device_id in self._waiting_ids:
            self._flush()
        at, held = self._snapshots
        seen = self._seen.get(device_id) if at == at_s else None
        if seen is not None:  # checked in at this time (dispatch reads it again): nothing spent since
            return seen
        state = held.get(device_id) if at == at_s else None
        if state is None:
            state = self._traces[device_id].state_at(at_s)
        return with_consumption(state, self._profiles[device_id], self._consumed_j[device_id])

    def snapshot_many(self, devices: Sequence[int], at_s: float) -> list[DeviceState]:
        """``snapshot(d, at_s)`` of each of ``devices``; lazy traces are computed together, and
        kept until another time is asked for (dispatch at the same time reads them again)."""
        self._flush()
        traces = self._traces
        if isinstance(traces, LazyTraces):
            states = traces.states_at(devices, at_s)
        else:
            states = [traces[d].state_at(at_s) for d in devices]
        self._snapshots = (at_s, dict(zip(devices, states)))
        profiles, used = self._profiles, self._consumed_j
        spent = [i for i, d in enumerate(devices) if used[d] != 0]  # most never trained: unchanged
        spent_states = [with_consumption(states[i], profiles[devices[i]], used[devices[i]]) for i in spent]
        seen: list[DeviceState]
        if isinstance(states, ColumnStates):  # the hot fields as columns too (the registry stores them)
            seen = states.replaced(spent, spent_states) if spent else states
        else:
            seen = list(states)
            for i, state in zip(spent, spent_states):
                seen[i] = state
        self._seen = dict(zip(devices, seen))
        return seen

    def dispatch(self, plan: TrainPlan, params: Params, now_s: float) -> None:
        device = plan.device_id
        state = self.snapshot(device, now_s)
        if self._examples_at is not None:
            self._examples[device] = self._examples_at(device, now_s)
        self._busy.add(device)
        self._waiting_ids.add(device)
        if self._adapter is None:  # priced with the other tasks dispatched meanwhile (see _flush)
            self._unpriced.append((plan, state, params, now_s))
            return
        profile, size = self._profiles[device], payload_bytes(params)
        cost = self._task_cost(plan, state, size)
        schedule = self._schedule(plan, cost, size, now_s)
        if schedule is None:
            ending = dispatch_ending(plan, profile, state, cost, now_s)
        else:
            plan, cost = schedule.plan, schedule.cost
            ending = adapted_ending(schedule, profile, state, now_s)
        self._waiting.append(Dispatched(plan, profile, state, cost, params, now_s, ending))

    def dispatch_many(self, plans: Sequence[TrainPlan], params: Sequence[Params], now_s: float) -> None:
        """``dispatch`` of each plan with its parameters, in order: a fixed plan's device is read
        (its checked-in state) and queued for pricing without a call per plan."""
        ids = [plan.device_id for plan in plans]
        if self._adapter is not None or self._examples_at is not None or len(set(ids)) < len(ids) \
                or not self._waiting_ids.isdisjoint(ids):  # dispatch's own path (a repeat flushes)
            for plan, param in zip(plans, params, strict=True):
                self.dispatch(plan, param, now_s)
            return
        seen, snapshot = self._seen if self._snapshots[0] == now_s else {}, self.snapshot
        states = [seen[d] if d in seen else snapshot(d, now_s) for d in ids]
        self._busy.update(ids)
        self._waiting_ids.update(ids)
        self._unpriced.extend(zip(plans, states, params, [now_s] * len(ids), strict=True))

    def _flush(self) -> None:
        """Finish the waiting dispatches in order: their cost, mid-task checks, energy and events.

        A task's cost and how it ends depend only on its plan and its device's state at dispatch,
        so the tasks dispatched since the fleet was last read are priced together
        (:func:`~fedfit.cost.task_costs.task_costs`), judged together
        (:func:`~fedfit.simulation.endings.dispatch_endings`) and their mid-task offline checks
        asked of the traces together, in dispatch order."""
        if self._unpriced:
            unpriced, self._unpriced = self._unpriced, []
            plans, states, params, now_s = map(list, zip(*unpriced))
            profiles = [self._profiles[plan.device_id] for plan in plans]
            costs = task_costs(plans, profiles, states, self._costs, self._memory,
                               [self._examples[p.device_id] for p in plans], payload_sizes(params))
            self._finish(plans, profiles, states, costs, params, now_s,
                         dispatch_endings(plans, profiles, states, costs, now_s))
        if self._waiting:
            w, self._waiting = self._waiting, []
            self._finish([d.plan for d in w], [d.profile for d in w], [d.state for d in w], [d.cost for d in w],
                         [d.params for d in w], [d.now_s for d in w], [d.ending for d in w])
        self._waiting_ids.clear()

    def _finish(self, plans: list[TrainPlan], profiles: list[DeviceProfile], states: list[DeviceState],
                costs: list[TaskCost], params: list[Params], now_s: list[float],
                endings: list[Ending | None]) -> None:
        """Check the tasks that passed their dispatch checks mid-task (together), spend each
        task's energy, start training the successes and queue every task in dispatch order."""
        looks = [i for i, ending in enumerate(endings) if ending is None]
        ends = [now_s[i] + costs[i].duration_s for i in looks]
        offline = offline_during_many(self._online_many, [(plans[i].device_id, now_s[i], end)
                                                          for i, end in zip(looks, ends)])
        for i, at, end in zip(looks, offline, ends):  # after_check's ending, that of a device that stayed online inline
            endings[i] = (end, None, costs[i].energy_j) if at is None else after_check(plans[i], costs[i], now_s[i], at)
        consumed = self._consumed_j
        self._seen = {}  # energy is spent below
        decided = cast(list[Ending], endings)  # every ending is known now
        for plan, (_, _, spent_j) in zip(plans, decided):
            consumed[plan.device_id] += spent_j
        items = queued(plans, [p.tier for p in profiles], states, costs, params, now_s, decided, self._executor.submit)
        self._queue.push_many([at_s for at_s, _, _ in decided], items)  # their devices are busy since dispatch

    def _online_many(self, devices: list[int], times: list[float]) -> list[bool]:
        if isinstance(self._traces, LazyTraces):
            return self._traces.online_many(devices, times)
        return [self._online_at(d, t) for d, t in zip(devices, times)]

    def _task_cost(self, plan: TrainPlan, state: DeviceState, size: int) -> TaskCost:
        """The plan's modelled cost; ``size`` is the raw payload sent (techniques may shrink it)."""
        model_cost = self._costs(plan.width)
        down, up = plan_payload_bytes(model_cost, plan, size)
        return task_cost(plan=plan, profile=self._profiles[plan.device_id], state=state,
                         cost=model_cost, memory=self._memory,
                         num_examples=self._examples[plan.device_id], bytes_down=down, bytes_up=up)

    def _schedule(self, plan: TrainPlan, cost: TaskCost, size: int, now_s: float) -> EpochSchedule | None:
        """The per-epoch schedule when the device adapts (and is reachable); else ``None``."""
        device = plan.device_id
        if self._adapter is None or not self.snapshot(device, now_s).online or not math.isfinite(cost.download_s):
            return None
        profile, used_j = self._profiles[device], self._consumed_j[device]

        def snapshot(t: float, extra_j: float) -> DeviceState:
            return with_consumption(self._traces[device].state_at(t), profile, used_j + extra_j)

        return schedule_epochs(plan, profile, self._examples[device], now_s=now_s, snapshot=snapshot,
                               cost_of=lambda p, s: self._task_cost(p, s, size), adapter=self._adapter)

    def _online_at(self, device: int, t: float) -> bool:
        trace = self._traces[device]
        return trace.online_at(t) if isinstance(trace, LazyTrace) else trace.state_at(t).online

    def next_result(self) -> TaskResult | None:
        self._flush()
        if not self._queue:
            return None
        item = self._queue.pop()[1]
        self._busy.discard(item.plan.device_id)
        return result_of(item, None if item.handle is None else item.handle.result())

    def next_results(self, until_s: float, wanted: int, round_: int) -> list[TaskResult]:
        """:func:`~fedfit.orchestration.contract.due_results` in one call
        (:func:`~fedfit.simulation.in_flight.pop_due_results`): every due result popped (a
        success is known before training: it has a task), then trained in that order (training
        is a pure function of the task), so the results are ``next_result``'s, while the queue's
        bookkeeping runs back to back instead of after each training step (out of the caches)."""
        self._flush()
        return pop_due_results(self._queue, self._busy, until_s, wanted, round_)

    def peek_time(self) -> float | None:
        self._flush()
        return self._queue.peek_time()

    def state(self) -> FleetState:
        """The fleet's state now, for a checkpoint (training in flight is not waited for)."""
        self._flush()
        return FleetState(tuple(self._consumed_j), tuple(pending_of(at_s, item) for at_s, item in self._queue.items()))

    def restore(self, state: FleetState) -> None:
        """Continue from ``state``: tasks in flight are cancelled and ``state``'s re-submitted.

        Training is a pure function of the task (plan, starting parameters, seed), so a
        re-submitted task returns the update the interrupted one would have.
        """
        if len(state.consumed_j) != len(self._profiles):
            raise CheckpointError(f"checkpoint holds {len(state.consumed_j)} devices, fleet has {len(self._profiles)}")
        self.cancel_pending()
        self._consumed_j, self._seen = list(state.consumed_j), {}
        for pending in state.pending:  # each device busy, a success's training started, its result scheduled
            handle = None if pending.task is None else self._executor.submit(pending.task)
            self._busy.add(pending.result.plan.device_id)
            self._queue.push(pending.at_s, in_flight_of(pending, handle))

    def cancel_pending(self) -> list[TrainPlan]:
        self._flush()
        plans = []
        for item in self._queue.drain():
            if item.handle is not None:
                item.handle.cancel()
            self._busy.discard(item.plan.device_id)
            plans.append(item.plan)
        return plans

