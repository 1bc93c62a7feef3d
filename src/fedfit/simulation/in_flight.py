"""Tasks in flight in the simulated fleet: its event queue's items, and their checkpoint form.

A dispatched task whose ending is decided becomes one :class:`InFlight` in the fleet's event
queue, holding its result's fields; the :class:`~fedfit.types.TaskResult` is built once, when
the event pops (a success's outcome is the trained update only then). A checkpoint holds the
queue as :class:`PendingTask` s (:func:`pending_of`; a success's outcome there is a placeholder
failure, since its update is not known yet), and a restored one is queued again
(:func:`in_flight_of`), so a checkpoint's bytes do not depend on how the queue holds its items.

>>> from fedfit.types import TaskCost, TrainPlan
>>> cost = TaskCost(1.0, 2.0, 1.0, 3.0, 100, 10, 10, 5.0)
>>> lost = InFlight(TrainPlan(7, 2, 16), "watch", 0.0, 1.0, Failure(7, 2, FailureCause.OFFLINE), cost, 512, None, None)
>>> in_flight_of(pending_of(1.0, lost), None) == lost
True
>>> result_of(lost, None).outcome.cause.value
'offline'
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from itertools import compress, repeat
from operator import attrgetter
from typing import NamedTuple

from fedfit.bulk import build_many
from fedfit.simulation.clock import EventQueue
from fedfit.simulation.executors import Handle
from fedfit.simulation.online_checks import Ending
from fedfit.simulation.workload import TrainTask
from fedfit.types import DeviceState, Failure, FailureCause, Params, TaskCost, TaskResult, TrainPlan, Update

#: The outcome a checkpoint holds for a success still training (its update is not known yet).
PLACEHOLDER_DETAIL = "pending"


@dataclasses.dataclass(frozen=True)
class PendingTask:
    """A task in flight (as the event queue and a checkpoint hold it).

    Attributes:
        at_s: virtual time its result arrives.
        result: its decided ending (a success's outcome is filled in when it arrives).
        task: what the device trains, for a success (re-submitted on restore); ``None``: a failure.
    """

    at_s: float
    result: TaskResult
    task: TrainTask | None


@dataclasses.dataclass(frozen=True)
class FleetState:
    """Everything a :class:`~fedfit.simulation.fleet.SimulatedFleet` holds between events
    (traces are fixed by the seed).

    Attributes:
        consumed_j: energy each device has spent on fedfit tasks so far.
        pending: tasks in flight, in the order their results arrive.
    """

    consumed_j: tuple[float, ...]
    pending: tuple[PendingTask, ...]


class InFlight(NamedTuple):
    """A task in the event queue: its result's fields, and for a success (``failure`` ``None``)
    the task and its training handle. A named tuple: a round queues one per invited device."""

    plan: TrainPlan
    tier: str
    start_s: float
    finish_s: float
    failure: Failure | None
    cost: TaskCost
    free_memory_bytes: int
    task: TrainTask | None
    handle: Handle | None


def result_of(item: InFlight, update: Update | None) -> TaskResult:
    """The event's result: a failure as decided, a success with its trained ``update``."""
    outcome = item.failure if update is None else update
    assert outcome is not None, "a success's result needs its update"
    return TaskResult(item.plan, item.tier, item.start_s, item.finish_s, outcome, item.cost, item.free_memory_bytes)


def pop_due_results(queue: EventQueue[InFlight], busy: set[int], until_s: float, wanted: int,
                round_: int) -> list[TaskResult]:
    """The fleet's ``next_results``: the events of ``queue`` due at ``until_s`` popped in order
    (their devices no longer ``busy``) until ``wanted`` successes of round ``round_`` are among
    them (a success is known before training: it has a task), then trained in that order
    (training is a pure function of the task) and made results."""
    popped: list[InFlight] = []
    discard, keep = busy.discard, popped.append
    successes = 0
    if wanted > 0:
        for item in queue.popping_due(until_s):
            plan = item.plan
            discard(plan.device_id)
            keep(item)
            if item.handle is not None and plan.round == round_:
                successes += 1
                if successes >= wanted:
                    break
    outcomes = [item.failure if item.handle is None else item.handle.result() for item in popped]
    return results_of(popped, outcomes)


def results_of(items: list[InFlight], outcomes: list[Failure | Update | None]) -> list[TaskResult]:
    """:func:`result_of` of each item with its outcome (its failure, or a success's update),
    built field by field (:mod:`fedfit.bulk`: a round pops ≈ 1,000 results)."""
    assert None not in outcomes, "a success's result needs its update"
    if not items:
        return []
    plan, tier, start_s, finish_s, _, cost, free_memory_bytes, *_ = zip(*items)
    return build_many(TaskResult, len(items), {
        "plan": plan, "tier": tier, "start_s": start_s, "finish_s": finish_s, "outcome": outcomes, "cost": cost,
        "free_memory_bytes": free_memory_bytes})


def pending_of(at_s: float, item: InFlight) -> PendingTask:
    """``item`` due at ``at_s`` as a checkpoint holds it."""
    plan = item.plan
    outcome = item.failure or Failure(plan.device_id, plan.round, FailureCause.REJECTED, PLACEHOLDER_DETAIL)
    return PendingTask(at_s, TaskResult(plan, item.tier, item.start_s, item.finish_s, outcome, item.cost,
                                        item.free_memory_bytes), item.task)


def in_flight_of(pending: PendingTask, handle: Handle | None) -> InFlight:
    """A checkpoint's task queued again; ``handle``: its training, re-submitted (a success)."""
    r = pending.result
    failure = None if pending.task is not None else r.outcome
    assert failure is None or isinstance(failure, Failure), "a pending failure holds its Failure"
    return InFlight(r.plan, r.tier, r.start_s, r.finish_s, failure, r.cost, r.free_memory_bytes, pending.task, handle)


def queued(plans: list[TrainPlan], tiers: list[str], states: list[DeviceState], costs: list[TaskCost],
           params: list[Params], now_s: list[float], endings: list[Ending],
           submit: Callable[[TrainTask], Handle]) -> list[InFlight]:
    """The queue's items of tasks whose endings are decided, in dispatch order: a success's task
    submitted for training (in order), a failure with what it spent and sent
    (:func:`failed_costs`); the tasks and items built field by field (:mod:`fedfit.bulk`, and the
    named tuple's own ``tuple.__new__``: a round queues ≈ 1,000)."""
    n = len(plans)
    ok = [failure is None for _, failure, _ in endings]
    good = list(compress(range(n), ok))
    tasks = build_many(TrainTask, len(good), {"plan": [plans[i] for i in good], "params": [params[i] for i in good],
                                              "at_s": [now_s[i] for i in good]})
    task_of: list[TrainTask | None] = [None] * n
    handle_of: list[Handle | None] = [None] * n
    for i, task, handle in zip(good, tasks, map(submit, tasks)):
        task_of[i], handle_of[i] = task, handle
    lost = iter(failed_costs(costs, endings, now_s))
    spent = [cost if success else next(lost) for cost, success in zip(costs, ok)]
    finish_s, failure, _ = zip(*endings) if endings else ((), (), ())
    return list(map(tuple.__new__, repeat(InFlight), zip(
        plans, tiers, now_s, finish_s, failure, spent, map(attrgetter("free_memory_bytes"), states), task_of, handle_of)))


def failed_cost(cost: TaskCost, spent_j: float, sent_down: int) -> TaskCost:
    """What a failed task actually spent and sent: ``cost`` with its energy, the bytes it
    downloaded and nothing uploaded (the constructor directly: ``dataclasses.replace`` costs
    three times as much)."""
    return TaskCost(download_s=cost.download_s, compute_s=cost.compute_s, upload_s=cost.upload_s, energy_j=spent_j,
                    peak_memory_bytes=cost.peak_memory_bytes, bytes_down=sent_down, bytes_up=0, flops=cost.flops,
                    edge_compute_s=cost.edge_compute_s)


def failed_costs(costs: list[TaskCost], endings: list[Ending], now_s: list[float]) -> list[TaskCost]:
    """:func:`failed_cost` of each task that failed (in order): its cost with the energy its
    ending spent, the bytes it downloaded (all, once it ended after its start) and nothing
    uploaded, built field by field (:mod:`fedfit.bulk`: a round's failures together)."""
    failed = [i for i, ending in enumerate(endings) if ending[1] is not None]
    lost = [costs[i] for i in failed]
    kept = ("download_s", "compute_s", "upload_s", "peak_memory_bytes", "flops", "edge_compute_s")
    return build_many(TaskCost, len(failed), {
        **{name: map(attrgetter(name), lost) for name in kept}, "energy_j": [endings[i][2] for i in failed],
        "bytes_down": [costs[i].bytes_down if endings[i][0] > now_s[i] else 0 for i in failed]}, {"bytes_up": 0})


def payload_bytes(params: Params) -> int:
    """Bytes of a parameter payload as sent on the wire (raw tensor bytes)."""
    return sum(t.numel() * t.element_size() for t in params.values())


def payload_sizes(params: list[Params]) -> list[int]:
    """:func:`payload_bytes` of each of the payloads of tasks not yet priced. Tasks often hold the
    same tensors (the whole model), and a task holds its payload until priced, so tensors' ids
    name them meanwhile: each distinct set of tensors is sized once."""
    sizes: dict[tuple[int, ...], int] = {}
    found = []
    last: Params | None = None
    size = 0
    for p in params:
        if p is not last:  # a round's full-width tasks share one payload dict: sized once
            key = tuple(map(id, p.values()))
            got = sizes.get(key)
            size = sizes.setdefault(key, payload_bytes(p)) if got is None else got
            last = p
        found.append(size)
    return found
