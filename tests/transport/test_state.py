"""One suite, run against both implementations of the server's state contract."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from fedfit.transport.sqlite_state import SqliteState
from fedfit.transport.state import (
    DeviceRecord, InMemoryState, Progress, ServerState, StateError, TaskRecord, VersionCommit,
)


@pytest.fixture(params=["memory", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ServerState]:
    s: ServerState = InMemoryState() if request.param == "memory" else SqliteState(tmp_path / "state.db")
    yield s
    s.close()


def task(task_id: str, device: int = 0, round_: int = 0) -> TaskRecord:
    return TaskRecord(task_id, device, round_, '{"plan": 1}', 1.5)


def commit(version: int, applied: tuple[int, ...] = (), dropped: tuple[int, ...] = ()) -> VersionCommit:
    return VersionCommit(version, applied, dropped, 10.0 * version, (100 * version, 7 * version), f'{{"v": {version}}}')


def test_enrolment_is_found_by_token_hash_only(store: ServerState) -> None:
    store.enrol(DeviceRecord(0, "h0", "{}", 0.0))
    store.enrol(DeviceRecord(1, "h1", "{}", 0.5))
    assert store.device_for_token("h1") == 1 and store.device_for_token("nope") is None
    assert [d.device_id for d in store.devices()] == [0, 1]
    with pytest.raises(StateError):
        store.enrol(DeviceRecord(1, "h2", "{}", 0.0))
    with pytest.raises(StateError):
        store.enrol(DeviceRecord(2, "h0", "{}", 0.0))


def test_ledger_moves_issued_tasks_only(store: ServerState) -> None:
    store.issue(task("a"))
    store.issue(task("b", device=1))
    store.set_status("b", "failed", "out_of_memory: x")
    assert [t.task_id for t in store.tasks("issued")] == ["a"]
    assert store.task("b") == TaskRecord("b", 1, 0, '{"plan": 1}', 1.5, "failed", "out_of_memory: x")
    with pytest.raises(StateError):
        store.set_status("b", "cancelled")
    with pytest.raises(StateError):
        store.issue(task("a"))


def test_accept_journals_once_with_its_task(store: ServerState) -> None:
    store.issue(task("a", device=2, round_=3))
    seq = store.accept("a", b"\x00payload", '{"r": 1}', 4.0)
    assert store.task("a").status == "accepted"  # type: ignore[union-attr]
    entry = store.journal()[0]
    assert (entry.seq, entry.device_id, entry.round, entry.payload, entry.applied_version) == (seq, 2, 3, b"\x00payload", None)
    with pytest.raises(StateError):
        store.accept("a", b"again", "{}", 5.0)
    with pytest.raises(StateError):
        store.accept("unknown", b"x", "{}", 5.0)
    assert len(store.journal()) == 1


def test_a_version_settles_its_entries_exactly_once(store: ServerState) -> None:
    for name in "abc":
        store.issue(task(name))
    a, b, c = (store.accept(n, n.encode(), "{}", 1.0) for n in "abc")
    store.commit_version(commit(1, applied=(a,), dropped=(b,)))
    assert [e.seq for e in store.journal(pending_only=True)] == [c]
    settled = {e.seq: (e.applied_version, e.dropped) for e in store.journal()}
    assert settled == {a: (1, False), b: (None, True), c: (None, False)}
    with pytest.raises(StateError):
        store.commit_version(commit(2, applied=(a,)))
    with pytest.raises(StateError):
        store.commit_version(commit(3, applied=(c,)))
    assert store.progress() == Progress(1, 10.0, (100, 7), ('{"v": 1}',))
    store.commit_version(commit(2, applied=(c,)))
    assert store.progress().version == 2 and store.journal(pending_only=True) == []


def test_a_failed_commit_changes_nothing(store: ServerState) -> None:
    store.issue(task("a"))
    seq = store.accept("a", b"x", "{}", 1.0)
    with pytest.raises(StateError):
        store.commit_version(commit(1, applied=(seq, seq)))  # the same entry twice
    assert store.progress() == Progress() and store.journal(pending_only=True)[0].seq == seq


def test_sqlite_state_survives_reopening(tmp_path: Path) -> None:
    first = SqliteState(tmp_path / "s.db")
    first.enrol(DeviceRecord(0, "h", "{}", 0.0))
    first.issue(task("a"))
    seq = first.accept("a", b"x", "{}", 1.0)
    first.commit_version(commit(1, applied=(seq,)))
    del first  # no close: as after kill -9, only committed transactions count
    again = SqliteState(tmp_path / "s.db")
    assert again.device_for_token("h") == 0 and again.progress().version == 1
    assert again.journal()[0].applied_version == 1
