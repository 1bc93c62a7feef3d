"""The server's durable state in SQLite (stdlib ``sqlite3``, WAL): every SQL statement lives here.

Each method of :class:`~fedfit.transport.state.ServerState` is one transaction, committed
before it returns (``synchronous=FULL``), so what a method reported done survives ``kill -9``.
Connections are per thread; WAL lets the status page read while a version commits.
"""

from __future__ import annotations


import sqlite3
import threading
from pathlib import Path

from fedfit.transport.state import (
    DeviceRecord, JournalEntry, Progress, StateError, TaskRecord, TaskStatus, VersionCommit,
)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS devices (device_id INTEGER PRIMARY KEY, token_hash TEXT UNIQUE NOT NULL,
    profile_json TEXT NOT NULL, enrolled_s REAL NOT NULL);
CREATE TABLE IF NOT EXISTS tasks (task_id TEXT PRIMARY KEY, device_id INTEGER NOT NULL, round INTEGER NOT NULL,
    plan_json TEXT NOT NULL, issued_s REAL NOT NULL, status TEXT NOT NULL, detail TEXT NOT NULL DEFAULT '');
CREATE TABLE IF NOT EXISTS journal (seq INTEGER PRIMARY KEY, task_id TEXT UNIQUE NOT NULL,
    device_id INTEGER NOT NULL, round INTEGER NOT NULL, payload BLOB NOT NULL, report_json TEXT NOT NULL,
    accepted_s REAL NOT NULL, applied_version INTEGER, dropped INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS versions (version INTEGER PRIMARY KEY, clock_s REAL NOT NULL,
    metrics_bytes INTEGER NOT NULL, events_bytes INTEGER NOT NULL, report_json TEXT NOT NULL);
"""
_JOURNAL_COLUMNS = "seq, task_id, device_id, round, payload, report_json, accepted_s, applied_version, dropped"
_TASK_COLUMNS = "task_id, device_id, round, plan_json, issued_s, status, detail"


class SqliteState:
    """:class:`~fedfit.transport.state.ServerState` in a SQLite file (created if missing)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._local = threading.local()
        self._db().executescript(_SCHEMA)

    def _db(self) -> sqlite3.Connection:
        db: sqlite3.Connection | None = getattr(self._local, "db", None)
        if db is None:
            db = sqlite3.connect(self.path, timeout=30.0, isolation_level=None)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=FULL")
            self._local.db = db
        return db

    def _tx(self) -> _Transaction:
        return _Transaction(self._db())

    def enrol(self, device: DeviceRecord) -> None:
        try:
            with self._tx() as db:
                db.execute("INSERT INTO devices VALUES (?, ?, ?, ?)",
                           (device.device_id, device.token_hash, device.profile_json, device.enrolled_s))
        except sqlite3.IntegrityError:
            raise StateError(f"device {device.device_id} already enrolled") from None

    def devices(self) -> list[DeviceRecord]:
        rows = self._db().execute("SELECT device_id, token_hash, profile_json, enrolled_s FROM devices "
                                  "ORDER BY device_id").fetchall()
        return [DeviceRecord(*row) for row in rows]

    def device_for_token(self, token_hash: str) -> int | None:
        row = self._db().execute("SELECT device_id FROM devices WHERE token_hash = ?", (token_hash,)).fetchone()
        return None if row is None else int(row[0])

    def issue(self, task: TaskRecord) -> None:
        try:
            with self._tx() as db:
                db.execute(f"INSERT INTO tasks ({_TASK_COLUMNS}) VALUES (?, ?, ?, ?, ?, 'issued', ?)",
                           (task.task_id, task.device_id, task.round, task.plan_json, task.issued_s, task.detail))
        except sqlite3.IntegrityError:
            raise StateError(f"task {task.task_id} already issued") from None

    def task(self, task_id: str) -> TaskRecord | None:
        row = self._db().execute(f"SELECT {_TASK_COLUMNS} FROM tasks WHERE task_id = ?", (task_id,)).fetchone()
        return None if row is None else TaskRecord(*row)

    def tasks(self, status: TaskStatus | None = None) -> list[TaskRecord]:
        rows = self._db().execute(f"SELECT {_TASK_COLUMNS} FROM tasks WHERE ? IS NULL OR status = ? ORDER BY rowid",
                                  (status, status)).fetchall()
        return [TaskRecord(*row) for row in rows]

    def set_status(self, task_id: str, status: TaskStatus, detail: str = "") -> None:
        with self._tx() as db:
            self._check_issued(db, task_id)
            db.execute("UPDATE tasks SET status = ?, detail = ? WHERE task_id = ?", (status, detail, task_id))

    def accept(self, task_id: str, payload: bytes, report_json: str, at_s: float) -> int:
        with self._tx() as db:
            device, round_ = self._check_issued(db, task_id)
            db.execute("UPDATE tasks SET status = 'accepted' WHERE task_id = ?", (task_id,))
            cur = db.execute("INSERT INTO journal (task_id, device_id, round, payload, report_json, accepted_s) "
                             "VALUES (?, ?, ?, ?, ?, ?)", (task_id, device, round_, payload, report_json, at_s))
            assert cur.lastrowid is not None
            return int(cur.lastrowid)

    @staticmethod
    def _check_issued(db: sqlite3.Connection, task_id: str) -> tuple[int, int]:
        row = db.execute("SELECT device_id, round, status FROM tasks WHERE task_id = ?", (task_id,)).fetchone()
        if row is None or row[2] != "issued":
            raise StateError(f"task {task_id} is not in flight")
        return int(row[0]), int(row[1])

    def journal(self, pending_only: bool = False) -> list[JournalEntry]:
        where = "WHERE applied_version IS NULL AND dropped = 0" if pending_only else ""
        rows = self._db().execute(f"SELECT {_JOURNAL_COLUMNS} FROM journal {where} ORDER BY seq").fetchall()
        return [JournalEntry(row[0], row[1], row[2], row[3], bytes(row[4]), row[5], row[6], row[7], bool(row[8]))
                for row in rows]

    def commit_version(self, commit: VersionCommit) -> None:
        with self._tx() as db:
            last = db.execute("SELECT COALESCE(MAX(version), 0) FROM versions").fetchone()[0]
            if commit.version != last + 1:
                raise StateError(f"version {commit.version} does not follow {last}")
            settled = [(commit.version if s in commit.applied else None, int(s in commit.dropped), s)
                       for s in commit.applied + commit.dropped]
            for applied, dropped, seq in settled:
                cur = db.execute("UPDATE journal SET applied_version = ?, dropped = ? WHERE seq = ? "
                                 "AND applied_version IS NULL AND dropped = 0", (applied, dropped, seq))
                if cur.rowcount != 1:
                    raise StateError(f"journal entry {seq} already settled")
            db.execute("INSERT INTO versions VALUES (?, ?, ?, ?, ?)", (commit.version, commit.clock_s,
                       commit.log_bytes[0], commit.log_bytes[1], commit.report_json))

    def progress(self) -> Progress:
        rows = self._db().execute("SELECT version, clock_s, metrics_bytes, events_bytes, report_json "
                                  "FROM versions ORDER BY version").fetchall()
        if not rows:
            return Progress()
        v, clock_s, m, e, _ = rows[-1]
        return Progress(int(v), float(clock_s), (int(m), int(e)), tuple(str(r[4]) for r in rows))

    def close(self) -> None:
        db = getattr(self._local, "db", None)
        if db is not None:
            db.close()
            self._local.db = None


class _Transaction:
    """``BEGIN IMMEDIATE`` … ``COMMIT`` (``ROLLBACK`` on error) on one connection."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def __enter__(self) -> sqlite3.Connection:
        self.db.execute("BEGIN IMMEDIATE")
        return self.db

    def __exit__(self, exc_type: object, *exc: object) -> None:
        self.db.execute("ROLLBACK" if exc_type is not None else "COMMIT")


__all__ = ["SqliteState"]
