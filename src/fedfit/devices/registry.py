"""The server's book of devices: profiles, last reported states and task history.

Plain bookkeeping; no clocks, no I/O. Virtual times are passed in. Each device is a row: its
profile and last reported state in lists, the state's hot fields (report time, online,
charging, battery, free memory, link) in numpy columns
(:class:`~fedfit.devices.state_columns.StateColumns`), so a round's check-in of many devices is
a few array writes and :meth:`Registry.hot_states` reads many devices at once, and its task
history in numpy columns too (:class:`~fedfit.devices.history.HistoryColumns`), so a round's
results are recorded together (:meth:`Registry.record_tasks`). The orchestration loops keep
one: devices are enrolled with their profiles, report their state when they check in, and every
finished task is recorded (:meth:`Registry.record_task`);
compute-aware and Oort-guided selection read readiness and feedback from it. It is the one
mutable piece of server state besides the fleet's tasks in flight; :meth:`Registry.entries`
and :meth:`Registry.restore` move it in and out of a checkpoint as frozen values.

>>> from fedfit.devices.catalogue import tier
>>> registry = Registry()
>>> registry.add(0, tier("smartwatch"))
>>> registry.record_result(0, ok=False, cause="battery", duration_s=12.0, round=3)
>>> registry.history(0).failures_by_cause
{'battery': 1}
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from fedfit.devices.history import DeviceHistory, HistoryColumns, UpdateRecord
from fedfit.devices.state_columns import HotStates, StateColumns
from fedfit.devices.task_columns import cause_name, task_columns
from fedfit.types import DeviceProfile, DeviceState, TaskResult

__all__ = ["DeviceHistory", "Registry", "RegistryEntry", "UpdateRecord"]


@dataclass(frozen=True, slots=True)
class RegistryEntry:
    """One enrolled device as a checkpoint holds it.

    Attributes:
        device_id: its id.
        profile: its static profile.
        state: its latest reported state (``None``: never reported).
        state_at_s: virtual time of that report.
        history: what it has done so far.
    """

    device_id: int
    profile: DeviceProfile
    state: DeviceState | None
    state_at_s: float | None
    history: DeviceHistory


#: The history of a device that has done nothing yet, shared by every such entry of
#: :meth:`Registry.entries` (a million idle devices hold one).
_NO_HISTORY = DeviceHistory()


class Registry:
    """Every enrolled device, in enrolment order."""

    def __init__(self) -> None:
        # device id -> row; ``None`` while every id is its own row (0, 1, 2, ... in order: a
        # simulated fleet), which saves a million-entry dictionary
        self._rows: dict[int, int] | None = None
        self._ids: list[int] = []
        self._profiles: list[DeviceProfile] = []
        self._states: list[DeviceState | None] = []
        self._columns = StateColumns()
        self._history = HistoryColumns()

    def __len__(self) -> int:
        return len(self._ids)

    def __contains__(self, device_id: object) -> bool:
        if self._rows is None:
            return isinstance(device_id, int | np.integer) and bool(0 <= device_id < len(self._ids))
        return device_id in self._rows

    def _row(self, device_id: int) -> int:
        rows = self._rows
        if rows is None:
            if isinstance(device_id, int | np.integer) and 0 <= device_id < len(self._ids):
                return int(device_id)
        elif device_id in rows:
            return rows[device_id]
        raise KeyError(f"unknown device {device_id!r}")

    def _rows_of(self, device_ids: Sequence[int]) -> npt.NDArray[np.int64]:
        """:meth:`_row` of each id, as an array (one numpy pass while every id is its own row)."""
        if self._rows is None:
            ids = np.asarray(device_ids)
            if ids.ndim == 1 and ids.dtype.kind in "iu" and len(ids) and \
                    int(ids.min()) >= 0 and int(ids.max()) < len(self._ids):
                return ids.astype(np.int64)
        return np.array([self._row(d) for d in device_ids], dtype=np.int64)

    def entries(self) -> tuple[RegistryEntry, ...]:
        """Every device's entry, in enrolment order (for a checkpoint)."""
        at = self._columns.rows(np.arange(len(self._ids))).reported_at_s.tolist()
        histories = [_NO_HISTORY] * len(self._ids)
        for row in self._history.written():
            histories[row] = self._history.history(row)
        return tuple(RegistryEntry(d, p, s, None if t != t else t, h) for d, p, s, t, h in zip(
            self._ids, self._profiles, self._states, at, histories))

    def restore(self, entries: tuple[RegistryEntry, ...]) -> None:
        """Replace every entry with ``entries`` (from :meth:`entries`)."""
        self._rows, self._ids, self._columns, self._history = None, [], StateColumns(), HistoryColumns()
        self._profiles, self._states = [], []
        empty = _NO_HISTORY  # a checkpoint's empty histories are often one shared value
        for row, e in enumerate(entries):
            self.add(e.device_id, e.profile)
            self._states[-1] = e.state
            if e.history is not empty:
                if e.history == _NO_HISTORY:
                    empty = e.history
                else:
                    self._history.restore(row, e.history, len(entries))
        reported = [(i, e.state, math.nan if e.state_at_s is None else e.state_at_s)
                    for i, e in enumerate(entries) if e.state is not None]
        self._columns.write(np.array([r[0] for r in reported], dtype=np.int64), [r[1] for r in reported],
                            [r[2] for r in reported])

    def add(self, device_id: int, profile: DeviceProfile) -> None:
        """Enrol a device.

        Raises:
            ValueError: the id is already enrolled.
        """
        if device_id in self:
            raise ValueError(f"device {device_id} is already registered")
        row = self._columns.append()
        if self._rows is None and device_id != row:  # ids no longer their rows: index them
            self._rows = {d: i for i, d in enumerate(self._ids)}
        if self._rows is not None:
            self._rows[device_id] = row
        self._ids.append(device_id)
        self._profiles.append(profile)
        self._states.append(None)

    def profile(self, device_id: int) -> DeviceProfile:
        """The device's static profile. Raises ``KeyError`` for an unknown id."""
        return self._profiles[self._row(device_id)]

    def report_state(self, device_id: int, state: DeviceState, at_s: float) -> bool:
        """Store a state the device reported at virtual time ``at_s``.

        Returns:
            Whether it was stored: a report older than the one held is ignored (reports can
            arrive out of order); one at the same time replaces it.
        """
        row = self._row(device_id)
        if not self._columns.write_one(row, state, at_s):
            return False
        self._states[row] = state
        return True

    def report_states(self, device_ids: Sequence[int], states: Sequence[DeviceState], at_s: float) -> None:
        """:meth:`report_state` of each device with its state, all at virtual time ``at_s``."""
        if len(device_ids) != len(states):
            raise ValueError(f"{len(device_ids)} devices but {len(states)} states")
        rows = self._rows_of(device_ids)
        written = self._columns.write(rows, states, at_s)
        held = self._states
        for row, state, ok in zip(rows.tolist(), states, written.tolist()):
            if ok:
                held[row] = state

    def hot_states(self, device_ids: Sequence[int]) -> HotStates:
        """The hot fields of the devices' last reports as arrays, one entry per device (see
        :class:`~fedfit.devices.state_columns.HotStates` for what a device that never reported
        holds). Raises ``KeyError`` for an unknown id."""
        return self._columns.rows(self._rows_of(device_ids))

    def last_state(self, device_id: int) -> DeviceState | None:
        """The latest reported state; ``None`` if the device never reported."""
        return self._states[self._row(device_id)]

    def reported_state(self, device_id: int) -> DeviceState:
        """The latest reported state.

        Raises:
            LookupError: the device never reported (``KeyError`` for an unknown id).
        """
        state = self._states[self._row(device_id)]
        if state is None:
            raise LookupError(f"device {device_id} has not reported a state")
        return state

    def last_report_s(self, device_id: int) -> float | None:
        """Virtual time of the latest report; ``None`` if the device never reported."""
        return self._columns.reported_at(self._row(device_id))

    def record_result(
        self, device_id: int, *, ok: bool, cause: str | None, duration_s: float, round: int
    ) -> None:
        """Count one finished task.

        Args:
            device_id: the device.
            ok: whether it returned an update.
            cause: why it failed (a ``FailureCause`` or its value); ``None`` when ``ok``.
            duration_s: its virtual duration (measured speed for the planner).
            round: the round it started from.

        Raises:
            ValueError: a failure without a cause, or a success with one.
        """
        if ok == (cause is not None):
            raise ValueError(f"ok={ok} needs cause {'None' if ok else 'set'}, got {cause!r}")
        self._history.record_one(self._row(device_id), ok, cause_name(cause), duration_s, round, len(self._ids))

    def record_task(self, result: TaskResult) -> None:
        """Record a finished task: its outcome (:meth:`record_result`) and, for an update, the
        batch it used (:meth:`record_batch`) and what it reported (``last_update``)."""
        self.record_tasks([result])

    def record_tasks(self, results: Sequence[TaskResult]) -> None:
        """:meth:`record_task` of each result, in order, as a few array writes
        (:func:`~fedfit.devices.task_columns.task_columns`).

        Raises:
            ValueError: an update with a micro-batch or accumulation below 1 (nothing is recorded).
        """
        if results:
            tasks = task_columns(results)
            self._history.record_columns(self._rows_of(tasks.device_ids), tasks, len(self._ids))

    def record_fold(self, device_id: int, version: int) -> tuple[int, ...]:
        """Note that the server folded one of the device's updates in at model ``version``;
        returns every version it was folded at so far."""
        row, folded = self._row(device_id), self._history.folded
        versions = folded[row] = (*folded.get(row, ()), version)
        return versions

    def record_folds(self, device_ids: Sequence[int], version: int) -> list[tuple[int, ...]]:
        """:meth:`record_fold` of each device in order, all at model ``version`` (rows found in one pass)."""
        folded, out = self._history.folded, []
        for row in self._rows_of(device_ids).tolist() if device_ids else ():
            versions = folded[row] = (*folded.get(row, ()), version)
            out.append(versions)
        return out

    def failure_streak(self, device_id: int) -> int:
        """Failures in a row since the device's last success (0: its last task succeeded)."""
        return self._history.failure_streak(self._row(device_id))

    def history(self, device_id: int) -> DeviceHistory:
        """A copy of the device's task history."""
        return self._history.history(self._row(device_id))

    def suggest_batch(self, device_id: int, micro_batch: int) -> None:
        """Store the server's initial batch suggestion for the device (from its profile, e.g.
        :func:`fedfit.policy.batching.initial_batch`)."""
        self._history.suggest_batch(self._row(device_id), micro_batch, len(self._ids))

    def record_batch(self, device_id: int, micro_batch: int, accumulation_steps: int) -> None:
        """Runtime feedback: the micro-batch and accumulation the device actually used.

        Raises:
            ValueError: a value below 1.
        """
        if micro_batch < 1 or accumulation_steps < 1:
            raise ValueError(f"need micro_batch, accumulation_steps >= 1, got {micro_batch}, {accumulation_steps}")
        self._history.record_batch(self._row(device_id), micro_batch, accumulation_steps, len(self._ids))

    def readiness(self, device_id: int, afford: Callable[[DeviceProfile, DeviceState], int]) -> int:
        """The batch the device can afford now, from its last reported state (``afford`` is the
        batch policy, e.g. ``DynamicBatchPlanner.readiness``); the initial suggestion (or 0)
        when it never reported."""
        row = self._row(device_id)
        state = self._states[row]
        if state is None:
            return self._history.history(row).suggested_batch or 0
        return afford(self._profiles[row], state)

    def ids(self) -> list[int]:
        """Device ids in enrolment order."""
        return list(self._ids)

    def ids_by_tier(self) -> dict[str, list[int]]:
        """Device ids grouped by tier name (tiers in order of first enrolment)."""
        groups: dict[str, list[int]] = {}
        for device_id, profile in zip(self._ids, self._profiles):
            groups.setdefault(profile.tier, []).append(device_id)
        return groups

    def tiers(self) -> list[str]:
        """Tier names present, in order of first enrolment."""
        return list(self.ids_by_tier())
