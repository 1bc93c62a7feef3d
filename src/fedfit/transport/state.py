"""The server's durable state contract, and its in-memory implementation.

One contract (:class:`ServerState`), two implementations: :class:`InMemoryState` here (tests,
throw-away servers) and :class:`~fedfit.transport.sqlite_state.SqliteState` (WAL-mode SQLite,
what ``fedfit server`` uses). One test suite runs against both. Each method is one atomic state
change: a device is enrolled with the hash of its token, a task moves through the ledger
(``issued`` → ``accepted`` / ``rejected`` / ``failed`` / ``cancelled``), an accepted update is
journalled together with its task's status, and a model version is committed together with the
journal entries it applied and the log sizes it had written.
"""

from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass
from typing import Literal, Protocol

TaskStatus = Literal["issued", "accepted", "rejected", "failed", "cancelled"]


@dataclass(frozen=True, slots=True)
class DeviceRecord:
    device_id: int
    token_hash: str
    profile_json: str
    enrolled_s: float


@dataclass(frozen=True, slots=True)
class TaskRecord:
    task_id: str
    device_id: int
    round: int
    plan_json: str
    issued_s: float
    status: TaskStatus = "issued"
    detail: str = ""


@dataclass(frozen=True, slots=True)
class JournalEntry:
    """An accepted update; ``applied_version``: the model version it went into (``None``: not yet);
    ``dropped``: the orchestrator discarded it (arrived after its round closed)."""

    seq: int
    task_id: str
    device_id: int
    round: int
    payload: bytes
    report_json: str
    accepted_s: float
    applied_version: int | None = None
    dropped: bool = False


@dataclass(frozen=True, slots=True)
class Progress:
    """The last committed model version and what the run had logged by then."""

    version: int = 0
    clock_s: float = 0.0
    log_bytes: tuple[int, int] = (0, 0)
    reports: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class VersionCommit:
    version: int
    applied: tuple[int, ...]
    dropped: tuple[int, ...]
    clock_s: float
    log_bytes: tuple[int, int]
    report_json: str


class StateError(Exception):
    """A state change that contradicts the state (duplicate enrolment, unknown task, wrong status)."""


class ServerState(Protocol):
    def enrol(self, device: DeviceRecord) -> None: ...
    def devices(self) -> list[DeviceRecord]: ...
    def device_for_token(self, token_hash: str) -> int | None: ...
    def issue(self, task: TaskRecord) -> None: ...
    def task(self, task_id: str) -> TaskRecord | None: ...
    def tasks(self, status: TaskStatus | None = None) -> list[TaskRecord]: ...
    def set_status(self, task_id: str, status: TaskStatus, detail: str = "") -> None: ...
    def accept(self, task_id: str, payload: bytes, report_json: str, at_s: float) -> int: ...
    def journal(self, pending_only: bool = False) -> list[JournalEntry]: ...
    def commit_version(self, commit: VersionCommit) -> None: ...
    def progress(self) -> Progress: ...
    def close(self) -> None: ...


class InMemoryState:
    """:class:`ServerState` in dictionaries (lost with the process)."""

    def __init__(self) -> None:
        self._devices: dict[int, DeviceRecord] = {}
        self._tasks: dict[str, TaskRecord] = {}
        self._journal: list[JournalEntry] = []
        self._progress = Progress()

    def enrol(self, device: DeviceRecord) -> None:
        if device.device_id in self._devices or self.device_for_token(device.token_hash) is not None:
            raise StateError(f"device {device.device_id} already enrolled")
        self._devices[device.device_id] = device

    def devices(self) -> list[DeviceRecord]:
        return sorted(self._devices.values(), key=lambda d: d.device_id)

    def device_for_token(self, token_hash: str) -> int | None:
        return next((d.device_id for d in self._devices.values() if d.token_hash == token_hash), None)

    def issue(self, task: TaskRecord) -> None:
        if task.task_id in self._tasks:
            raise StateError(f"task {task.task_id} already issued")
        self._tasks[task.task_id] = dataclasses.replace(task, status="issued")

    def task(self, task_id: str) -> TaskRecord | None:
        return self._tasks.get(task_id)

    def tasks(self, status: TaskStatus | None = None) -> list[TaskRecord]:
        return [t for t in self._tasks.values() if status is None or t.status == status]

    def set_status(self, task_id: str, status: TaskStatus, detail: str = "") -> None:
        task = self._issued(task_id)
        self._tasks[task_id] = dataclasses.replace(task, status=status, detail=detail)

    def accept(self, task_id: str, payload: bytes, report_json: str, at_s: float) -> int:
        task = self._issued(task_id)
        seq = len(self._journal) + 1
        self._journal.append(JournalEntry(seq, task_id, task.device_id, task.round, payload, report_json, at_s))
        self._tasks[task_id] = dataclasses.replace(task, status="accepted")
        return seq

    def _issued(self, task_id: str) -> TaskRecord:
        task = self._tasks.get(task_id)
        if task is None or task.status != "issued":
            raise StateError(f"task {task_id} is not in flight")
        return task

    def journal(self, pending_only: bool = False) -> list[JournalEntry]:
        return [e for e in self._journal if not pending_only or (e.applied_version is None and not e.dropped)]

    def commit_version(self, commit: VersionCommit) -> None:
        if commit.version != self._progress.version + 1:
            raise StateError(f"version {commit.version} does not follow {self._progress.version}")
        journal = copy.copy(self._journal)
        for seq in commit.applied + commit.dropped:
            entry = journal[seq - 1]
            if entry.applied_version is not None or entry.dropped:
                raise StateError(f"journal entry {seq} already settled")
            journal[seq - 1] = dataclasses.replace(entry, applied_version=commit.version) \
                if seq in commit.applied else dataclasses.replace(entry, dropped=True)
        self._journal = journal
        p = self._progress
        self._progress = Progress(commit.version, commit.clock_s, commit.log_bytes, p.reports + (commit.report_json,))

    def progress(self) -> Progress:
        return self._progress

    def close(self) -> None:
        return None
