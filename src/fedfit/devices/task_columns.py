"""A round's finished tasks as columns: what the registry's history records of each, read once.

:meth:`~fedfit.devices.registry.Registry.record_tasks` records a round's thousand results; one
tuple and one :class:`~fedfit.devices.history.UpdateRecord` per result cost more than the array
writes that store them. :func:`task_columns` reads each field of every result in one pass into
an array (outcome, cause, duration, round; and, for the updates only, batch and report), which
:meth:`~fedfit.devices.history.HistoryColumns.record_columns` writes with fancy indexing.

>>> from fedfit.types import Failure, FailureCause, TaskCost, TaskResult, TrainPlan
>>> cost = TaskCost(0.0, 0.0, 0.0, 0.0, 0, 0, 0, 0.0)
>>> failed = TaskResult(TrainPlan(device_id=3, round=1, micro_batch=8), "smartwatch", 2.0, 5.0,
...                     Failure(3, 1, FailureCause.BATTERY), cost, 0)
>>> tasks = task_columns([failed])
>>> tasks.device_ids, tasks.ok.tolist(), tasks.causes, tasks.durations_s.tolist()
([3], [False], ['battery'], [3.0])
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import compress
from typing import cast

import numpy as np
import numpy.typing as npt

from fedfit.types import Failure, FailureCause, TaskResult, Update

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]

@dataclass(frozen=True, slots=True)
class TaskColumns:
    """Finished tasks, one entry per task in order; the update fields hold the successes only.

    Attributes:
        device_ids: each task's device.
        ok: whether it returned an update.
        causes: the failures' causes (``FailureCause`` values), in order.
        durations_s: virtual duration, dispatch to arrival.
        rounds: the round its plan started from.
        micro_batch: the micro-batch each update used.
        accumulation: the accumulation steps each update used.
        update_round: the round each update's model came from.
        samples: samples each update processed.
        train_loss: each update's mean training loss.
    """

    device_ids: list[int]
    ok: BoolArray
    causes: list[str]
    durations_s: FloatArray
    rounds: IntArray
    micro_batch: IntArray
    accumulation: IntArray
    update_round: IntArray
    samples: IntArray
    train_loss: FloatArray


def task_columns(results: Sequence[TaskResult]) -> TaskColumns:
    """The columns of ``results``.

    Raises:
        ValueError: an update with a micro-batch or accumulation below 1.
    """
    plans, outcomes = [r.plan for r in results], [r.outcome for r in results]
    ok = [not isinstance(o, Failure) for o in outcomes]
    updates = cast(list[Update], list(compress(outcomes, ok)))
    failures = cast(list[Failure], [o for o, good in zip(outcomes, ok) if not good])
    micro = np.array([u.micro_batch for u in updates], dtype=np.int64)
    accumulation = np.array([u.accumulation_steps for u in updates], dtype=np.int64)
    if updates and (int(micro.min()) < 1 or int(accumulation.min()) < 1):
        bad = next(u for u in updates if u.micro_batch < 1 or u.accumulation_steps < 1)
        raise ValueError(f"need micro_batch, accumulation_steps >= 1, got {bad.micro_batch}, "
                         f"{bad.accumulation_steps}")
    finish = np.array([r.finish_s for r in results], dtype=np.float64)
    return TaskColumns(
        device_ids=[p.device_id for p in plans],
        ok=np.array(ok, dtype=bool),
        causes=[_NAMES.get(f.cause) or str(cause_name(f.cause)) for f in failures],
        durations_s=finish - np.array([r.start_s for r in results], dtype=np.float64),
        rounds=np.array([p.round for p in plans], dtype=np.int64),
        micro_batch=micro, accumulation=accumulation,
        update_round=np.array([u.round for u in updates], dtype=np.int64),
        samples=np.array([u.samples_processed for u in updates], dtype=np.int64),
        train_loss=np.array([u.train_loss for u in updates], dtype=np.float64))


#: The stored name of each ``FailureCause``, looked up (a round records ≈ 300 failures).
_NAMES = {cause: str(cause.value) for cause in FailureCause}


def cause_name(cause: object) -> str | None:
    """A failure cause as the history stores it (a ``FailureCause``'s value); ``None`` stays."""
    if cause is None:
        return None
    return str(cause.value) if isinstance(cause, enum.Enum) else str(cause)
