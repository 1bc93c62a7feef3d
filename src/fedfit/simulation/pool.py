"""The process executor's pool: worker processes fed over one pipe each, with no thread in the driver.

``concurrent.futures``' pool moves every task and result through a manager thread and a queue
feeder thread of the driver, so each one trades the interpreter lock between three threads; with
tasks of a few milliseconds (a small model, a few steps) that costs more than the training.
Here the driver itself writes a task to an idle worker's pipe and reads results when it asks for
one: a worker holds at most one task, the rest wait in the driver, in submission order, and go
to the next worker that finishes (any assignment gives the same updates: a task's update is a
pure function of the task). A cancelled task still waiting is dropped; a running one finishes
and its update is discarded.

Bytes that many tasks share (a round's global model, sent with each of its tasks) travel as a
:class:`Shared` payload: a worker is sent it once, before the first task of its own that names
it, and keeps the latest one it got, so a round's model crosses each pipe once rather than once
per task.
"""

from __future__ import annotations

import multiprocessing
import pickle
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from typing import Any

#: Seconds a closing pool waits for a worker to exit before killing it.
JOIN_S = 5.0
#: The first byte of each frame the driver sends a worker: a task, or a shared payload.
_TASK, _SHARED = b"t", b"s"


@dataclass(frozen=True)
class Shared:
    """A payload several tasks need: ``token`` names it (a new payload, a new token)."""

    token: int
    payload: bytes


class Pending:
    """One task's result, once a worker has sent it."""

    def __init__(self, pool: LeanPool, message: bytes, shared: Shared | None = None) -> None:
        self.pool, self.message, self.shared = pool, message, shared
        self.done, self.cancelled = False, False
        self.value: Any = None
        self.error: BaseException | None = None

    def result(self) -> Any:
        while not self.done:
            self.pool.serve()
        if self.error is not None:
            raise self.error
        return self.value

    def cancel(self) -> bool:
        if self.done or self not in self.pool.waiting:
            return False
        self.pool.waiting.remove(self)
        self.cancelled = True
        return True


@dataclass
class _Worker:
    process: Any
    conn: Connection
    task: Pending | None = field(default=None)
    shared: int | None = field(default=None)  # the token of the shared payload it holds


#: A worker's task runner: ``(message, the latest shared payload or None) -> value``.
Runner = Callable[[memoryview, memoryview | None], Any]


def serve_tasks(conn: Connection, others: list[Connection], start: Callable[[], Runner]) -> None:
    """A worker's loop: ``start()`` returns the task runner; each task is run with the latest
    shared payload and answered with ``(ok, value or exception)``, pickled; end of file (the
    driver closed or died) ends it."""
    for other in others:  # a forked worker's copies of the other pipes' ends: closed, so EOF reaches their owners
        other.close()
    run = start()
    shared: memoryview | None = None
    while True:
        try:
            frame = conn.recv_bytes()
        except (EOFError, OSError):
            return
        if frame[:1] == _SHARED:
            shared = memoryview(frame)[1:]
            continue
        try:
            answer = pickle.dumps((True, run(memoryview(frame)[1:], shared)), protocol=5)
        except Exception as error:  # noqa: BLE001 - handed to the driver, which raises it
            answer = pickle.dumps((False, error), protocol=5)
        try:
            conn.send_bytes(answer)
        except OSError:
            return


class LeanPool:
    """``workers`` processes of start method ``method``, each running ``serve_tasks(..., start)``."""

    def __init__(self, workers: int, method: str, start: Callable[[], Runner]) -> None:
        self.size, self.method, self.start = workers, method, start
        self.workers: list[_Worker] = []
        self.waiting: deque[Pending] = deque()

    def submit(self, message: bytes, shared: Shared | None = None) -> Pending:
        """Queue a task: ``message`` for the worker's runner, with ``shared`` sent to the worker
        first unless it holds that payload already."""
        if not self.workers:
            self._launch()
        pending = Pending(self, _TASK + message, shared)
        self.waiting.append(pending)
        self._dispatch()
        return pending

    def _launch(self) -> None:
        ctx = multiprocessing.get_context(self.method)
        pipes = [ctx.Pipe() for _ in range(self.size)]
        fork = self.method == "fork"
        for mine, theirs in pipes:
            others = [c for pair in pipes for c in pair if c is not theirs] if fork else []
            process = ctx.Process(target=serve_tasks, args=(theirs, others, self.start),  # type: ignore[attr-defined]
                                  daemon=True, name="fedfit-worker")
            process.start()
            self.workers.append(_Worker(process, mine))
        for _, theirs in pipes:
            theirs.close()

    def _dispatch(self) -> None:
        for worker in self.workers:
            if worker.task is None and self.waiting:
                task = worker.task = self.waiting.popleft()
                if task.shared is not None and worker.shared != task.shared.token:
                    worker.conn.send_bytes(_SHARED + task.shared.payload)
                    worker.shared = task.shared.token
                worker.conn.send_bytes(task.message)

    def serve(self) -> None:
        """Wait for at least one busy worker's answer, record it and give that worker the next task."""
        busy = {w.conn: w for w in self.workers if w.task is not None}
        if not busy:
            raise RuntimeError("simulation.executor: process: a task was never dispatched")
        for conn in wait(list(busy)):
            worker = busy[conn]  # type: ignore[index]
            task, worker.task = worker.task, None
            assert task is not None
            try:
                ok, value = pickle.loads(worker.conn.recv_bytes())  # noqa: S301 - our own worker's answer
            except (EOFError, OSError):
                raise RuntimeError(f"simulation.executor: process: training worker {worker.process.pid} died "
                                   f"(exit code {worker.process.exitcode})") from None
            task.done = True
            if ok:
                task.value = value
            else:
                task.error = value
        self._dispatch()

    def close(self) -> None:
        """End every worker: closing its pipe ends its loop; one still training is killed after ``JOIN_S``."""
        self.waiting.clear()
        for worker in self.workers:
            worker.conn.close()
        for worker in self.workers:
            worker.process.join(JOIN_S if worker.task is None else 0.0)
            if worker.process.is_alive():
                worker.process.kill()
                worker.process.join()
        self.workers = []
