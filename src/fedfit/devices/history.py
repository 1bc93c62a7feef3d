"""What each enrolled device has done: task counters as numpy columns, one row per device.

A registry of a million devices records a round's thousand results; building a frozen
:class:`DeviceHistory` per result costs more than the round's other bookkeeping together.
:class:`HistoryColumns` keeps the counters and latest values as one numpy array each (tasks,
completions, failure streak, the latest duration, round, cause, batch and update report), so
:meth:`HistoryColumns.record_columns` of a round's results (:mod:`fedfit.devices.task_columns`) is a few
array writes; the rare, growing
fields (failures per cause, folded versions) are per-device dictionaries kept only for devices
that have them. :meth:`HistoryColumns.history` builds the :class:`DeviceHistory` value where a
reader needs all of it (Oort's feedback, ``auto``'s revision, a checkpoint).

Layout: a device gets a *slot* (the next free one) when its first task is recorded; the columns
are indexed by slot, so they hold only devices with a history, densely, and a round's writes
touch few memory pages (indexed by registry row, a million-row column per field would page-fault
on every new device for its first rounds). ``slot_of`` (int32, one entry per row, 0: none yet,
else slot + 1) is the one array as long as the registry. Encodings: an optional field is present
when its bit of ``present`` is set; ``last_cause`` indexes the cause names seen so far, 0 meaning
none.

>>> columns = HistoryColumns()
>>> columns.record_one(0, True, None, 5.0, 1, size=3)
>>> columns.record_one(2, False, "battery", 2.0, 1, size=3)
>>> columns.history(2).failures_by_cause, columns.history(2).failure_streak, columns.history(0).tasks
({'battery': 1}, 1, 1)
>>> columns.history(1) == DeviceHistory()
True
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from fedfit.devices.task_columns import TaskColumns

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class UpdateRecord:
    """What a device's latest update reported (Oort's feedback, Lai et al. 2021).

    Attributes:
        round: the model version the task started from.
        duration_s: virtual duration of the task, dispatch to arrival (its measured speed).
        samples_processed: samples it passed through forward/backward.
        train_loss: its mean training loss.
    """

    round: int
    duration_s: float
    samples_processed: int
    train_loss: float


@dataclass(frozen=True, slots=True)
class DeviceHistory:
    """What a device has done so far (a copy; the registry keeps its own).

    Attributes:
        tasks: results recorded.
        completions: results that returned an update.
        failures_by_cause: failed results per cause string (``FailureCause`` values).
        last_duration_s: virtual duration of the latest result; ``None`` before any.
        last_round: highest round a result was recorded for; ``None`` before any.
        failure_streak: failures in a row since its last success (retry back-off).
        last_cause: cause of its latest result when that was a failure (``FailureCause``
            value); ``None`` after a success or before any result.
        suggested_batch: the server's initial batch suggestion from the profile (dynamic
            batching); ``None`` until one is set.
        last_batch: ``(micro_batch, accumulation_steps)`` the device last reported using;
            ``None`` before any report. Effective batch = their product.
        last_update: what its latest update reported; ``None`` before any update.
        folded: model versions at which the server folded its updates into the model, in order
            (participation weighting's history; an update dropped as stale or rejected is not
            folded).
    """

    tasks: int = 0
    completions: int = 0
    failures_by_cause: dict[str, int] = field(default_factory=dict)
    last_duration_s: float | None = None
    last_round: int | None = None
    failure_streak: int = 0
    last_cause: str | None = None
    suggested_batch: int | None = None
    last_batch: tuple[int, int] | None = None
    last_update: UpdateRecord | None = None
    folded: tuple[int, ...] = ()


#: ``present`` bits: which optional fields a row holds.
DURATION, ROUND, SUGGESTED, BATCH, UPDATE = 1, 2, 4, 8, 16
_INTS = ("tasks", "completions", "streak", "last_round", "cause", "suggested", "micro_batch", "accumulation",
         "update_round", "samples", "present")
_FLOATS = ("last_duration_s", "update_duration_s", "train_loss")
#: Fewest results recorded with array writes (fewer are written one by one).
_MANY = 8


class HistoryColumns:
    """Every device's task history (rows as the registry numbers them)."""

    def __init__(self) -> None:
        self._slot_of: npt.NDArray[np.int32] = np.zeros(0, dtype=np.int32)  # row -> slot + 1 (0: none)
        self._used = 0
        self._ints: dict[str, IntArray] = {n: np.zeros(0, dtype=np.int64) for n in _INTS}
        self._floats: dict[str, FloatArray] = {n: np.zeros(0, dtype=np.float64) for n in _FLOATS}
        self._cause_names: list[str | None] = [None]  # code 0: no cause
        self._cause_codes: dict[str, int] = {}
        self.failures: dict[int, dict[str, int]] = {}  # row -> failures by cause, rows that failed
        self.folded: dict[int, tuple[int, ...]] = {}  # row -> versions folded, rows folded at least once

    def _slots(self, rows: IntArray, size: int) -> IntArray:
        """The slots of ``rows`` (distinct), given to those that have none yet, in order."""
        if len(self._slot_of) < size:
            grown = np.zeros(max(size, 2 * len(self._slot_of)), dtype=np.int32)
            grown[: len(self._slot_of)] = self._slot_of
            self._slot_of = grown
        slots = self._slot_of[rows].astype(np.int64)
        new = slots == 0
        if new.any():
            count = int(new.sum())
            self._reserve(self._used + count)
            slots[new] = np.arange(self._used + 1, self._used + count + 1)
            self._slot_of[rows[new]] = slots[new]
            self._used += count
        return slots - 1

    def _slot(self, row: int, size: int) -> int:
        """The slot of one row (given one if it has none yet)."""
        if row < len(self._slot_of) and (slot := int(self._slot_of[row])):
            return slot - 1
        return int(self._slots(np.array([row], dtype=np.int64), size)[0])

    def _held(self, row: int) -> int:
        """``row``'s slot; -1 when it has none."""
        return int(self._slot_of[row]) - 1 if row < len(self._slot_of) else -1

    def _reserve(self, slots: int) -> None:
        """Room for ``slots`` slots (grown by doubling)."""
        capacity = len(self._ints["tasks"])
        if slots <= capacity:
            return
        size = max(slots, 2 * capacity, 64)
        self._ints = {name: np.concatenate([col[:capacity], np.zeros(size - capacity, dtype=np.int64)])
                      for name, col in self._ints.items()}
        self._floats = {name: np.concatenate([col[:capacity], np.zeros(size - capacity, dtype=np.float64)])
                        for name, col in self._floats.items()}

    def _code(self, cause: str) -> int:
        code = self._cause_codes.get(cause)
        if code is None:
            code = self._cause_codes[cause] = len(self._cause_names)
            self._cause_names.append(cause)
        return code

    def record_columns(self, rows: IntArray, tasks: TaskColumns, size: int) -> None:
        """Count one finished task per row of ``tasks``, in order (a row may repeat)."""
        if len(rows) < _MANY or _repeats(rows):  # few, or a row repeats: in order
            self._record_each(rows.tolist(), tasks, size)
            return
        at, good, c, f = self._slots(rows, size), tasks.ok, self._ints, self._floats
        for row, cause in zip(rows[~good].tolist(), tasks.causes):
            counts = self.failures.setdefault(row, {})
            counts[cause] = counts.get(cause, 0) + 1
        had_round = (c["present"][at] & ROUND) != 0
        c["last_round"][at] = np.where(had_round, np.maximum(c["last_round"][at], tasks.rounds), tasks.rounds)
        c["tasks"][at] += 1
        c["completions"][at] += good
        c["streak"][at] = np.where(good, 0, c["streak"][at] + 1)
        codes = np.zeros(len(rows), dtype=np.int64)
        codes[~good] = [self._code(cause) for cause in tasks.causes]
        c["cause"][at] = codes
        f["last_duration_s"][at] = tasks.durations_s
        c["present"][at] |= DURATION | ROUND
        won = at[good]
        c["micro_batch"][won], c["accumulation"][won] = tasks.micro_batch, tasks.accumulation
        c["update_round"][won], c["samples"][won] = tasks.update_round, tasks.samples
        f["update_duration_s"][won], f["train_loss"][won] = tasks.durations_s[good], tasks.train_loss
        c["present"][won] |= BATCH | UPDATE

    def _record_each(self, rows: list[int], tasks: TaskColumns, size: int) -> None:
        """:meth:`record_columns` one task at a time (numpy's per-call cost dominates for few)."""
        causes, j = iter(tasks.causes), 0
        for row, ok, duration_s, round_ in zip(rows, tasks.ok.tolist(), tasks.durations_s.tolist(),
                                               tasks.rounds.tolist()):
            if not ok:
                self.record_one(row, False, next(causes), duration_s, round_, size)
                continue
            batch = int(tasks.micro_batch[j]), int(tasks.accumulation[j])
            update = UpdateRecord(int(tasks.update_round[j]), duration_s, int(tasks.samples[j]),
                                  float(tasks.train_loss[j]))
            self.record_one(row, True, None, duration_s, round_, size, batch, update)
            j += 1

    def record_one(self, row: int, ok: bool, cause: str | None, duration_s: float, round: int, size: int,
                   batch: tuple[int, int] | None = None, update: UpdateRecord | None = None) -> None:
        """Count one finished task of ``row`` (a success's batch and report: ``None`` keeps the last)."""
        slot, c = self._slot(row, size), self._ints
        if cause is not None:
            counts = self.failures.setdefault(row, {})
            counts[cause] = counts.get(cause, 0) + 1
        present = int(c["present"][slot])
        c["last_round"][slot] = max(int(c["last_round"][slot]), round) if present & ROUND else round
        c["tasks"][slot] += 1
        c["completions"][slot] += ok
        c["streak"][slot] = 0 if ok else c["streak"][slot] + 1
        c["cause"][slot] = 0 if cause is None else self._code(cause)
        self._floats["last_duration_s"][slot] = duration_s
        c["present"][slot] = present | DURATION | ROUND
        if batch is not None:
            c["micro_batch"][slot], c["accumulation"][slot] = batch
            c["present"][slot] |= BATCH
        if update is not None:
            c["update_round"][slot], c["samples"][slot] = update.round, update.samples_processed
            self._floats["update_duration_s"][slot], self._floats["train_loss"][slot] = update.duration_s, update.train_loss
            c["present"][slot] |= UPDATE

    def suggest_batch(self, row: int, micro_batch: int, size: int) -> None:
        """Store the server's initial batch suggestion for ``row``."""
        slot = self._slot(row, size)
        self._ints["suggested"][slot] = micro_batch
        self._ints["present"][slot] |= SUGGESTED

    def record_batch(self, row: int, micro_batch: int, accumulation_steps: int, size: int) -> None:
        """Store the batch ``row`` reported using."""
        slot = self._slot(row, size)
        self._ints["micro_batch"][slot], self._ints["accumulation"][slot] = micro_batch, accumulation_steps
        self._ints["present"][slot] |= BATCH

    def failure_streak(self, row: int) -> int:
        """Failures in a row since ``row``'s last success."""
        slot = self._held(row)
        return int(self._ints["streak"][slot]) if slot >= 0 else 0

    def history(self, row: int) -> DeviceHistory:
        """``row``'s history as a fresh value (its dictionary is a copy)."""
        slot = self._held(row)
        if slot < 0:  # nothing recorded in the columns: the defaults
            return DeviceHistory(failures_by_cause=dict(self.failures.get(row, {})), folded=self.folded.get(row, ()))
        v = {name: int(col[slot]) for name, col in self._ints.items()}
        f = {name: float(fcol[slot]) for name, fcol in self._floats.items()}
        present = v["present"]
        return DeviceHistory(
            tasks=v["tasks"], completions=v["completions"], failures_by_cause=dict(self.failures.get(row, {})),
            last_duration_s=f["last_duration_s"] if present & DURATION else None,
            last_round=v["last_round"] if present & ROUND else None, failure_streak=v["streak"],
            last_cause=self._cause_names[v["cause"]], suggested_batch=v["suggested"] if present & SUGGESTED else None,
            last_batch=(v["micro_batch"], v["accumulation"]) if present & BATCH else None,
            last_update=UpdateRecord(v["update_round"], f["update_duration_s"], v["samples"], f["train_loss"])
            if present & UPDATE else None, folded=self.folded.get(row, ()))

    def written(self) -> list[int]:
        """Rows whose history may not be empty, in order."""
        rows = set(self.failures) | set(self.folded)
        rows.update(np.flatnonzero(self._slot_of).tolist())
        return sorted(rows)

    def restore(self, row: int, h: DeviceHistory, size: int) -> None:
        """Set ``row``'s history to ``h`` (a checkpoint's)."""
        slot, c, f = self._slot(row, size), self._ints, self._floats
        present = (DURATION if h.last_duration_s is not None else 0) | (ROUND if h.last_round is not None else 0)
        c["tasks"][slot], c["completions"][slot], c["streak"][slot] = h.tasks, h.completions, h.failure_streak
        f["last_duration_s"][slot] = h.last_duration_s or 0.0
        c["last_round"][slot] = h.last_round or 0
        c["cause"][slot] = 0 if h.last_cause is None else self._code(h.last_cause)
        if h.suggested_batch is not None:
            c["suggested"][slot], present = h.suggested_batch, present | SUGGESTED
        if h.last_batch is not None:
            (c["micro_batch"][slot], c["accumulation"][slot]), present = h.last_batch, present | BATCH
        if (u := h.last_update) is not None:
            c["update_round"][slot], f["update_duration_s"][slot], present = u.round, u.duration_s, present | UPDATE
            c["samples"][slot], f["train_loss"][slot] = u.samples_processed, u.train_loss
        c["present"][slot] = present
        if h.failures_by_cause:
            self.failures[row] = dict(h.failures_by_cause)
        if h.folded:
            self.folded[row] = h.folded


def _repeats(rows: IntArray) -> bool:
    """Whether a row occurs twice (sorted neighbours compared: ``np.unique`` would import
    ``numpy.ma`` on a run's first call, 20-140 ms)."""
    ordered = np.sort(rows)
    return bool((ordered[1:] == ordered[:-1]).any())
