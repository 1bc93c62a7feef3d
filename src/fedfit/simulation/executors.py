"""Executors run device training; the virtual clock never depends on which one.

The contract is ``submit(task) -> Handle`` with ``Handle.result()`` and ``Handle.cancel()``, so a
Ray executor (``ray.remote`` tasks returning object refs) fits the same shape. Training is lazy
in-process (run when its result is first needed, skipped if cancelled) and eager in the pool
(started at submission, so tasks of a round run in parallel).
"""

from __future__ import annotations

import concurrent.futures as cf
import multiprocessing
from typing import Protocol

from fedfit.simulation.workload import TrainTask, Workload, WorkloadRecipe
from fedfit.types import Update


class Handle(Protocol):
    """A pending training result."""

    def result(self) -> Update: ...

    def cancel(self) -> bool: ...


class Executor(Protocol):
    """Runs :class:`TrainTask` s against a workload."""

    def submit(self, task: TrainTask) -> Handle: ...

    def close(self) -> None: ...


class _LazyHandle:
    def __init__(self, workload: Workload, task: TrainTask) -> None:
        self._workload, self._task = workload, task
        self._update: Update | None = None

    def result(self) -> Update:
        if self._update is None:
            self._update = self._workload.run(self._task)
        return self._update

    def cancel(self) -> bool:
        return self._update is None


class LocalExecutor:
    """Trains in this process, lazily."""

    def __init__(self, workload: Workload) -> None:
        self.workload = workload

    def submit(self, task: TrainTask) -> Handle:
        return _LazyHandle(self.workload, task)

    def close(self) -> None:
        return None


_WORKER: Workload | None = None


def _init_worker(recipe: WorkloadRecipe) -> None:
    global _WORKER  # noqa: PLW0603 - one workload per worker process, set once at start-up
    _WORKER = recipe.build()


def _run_in_worker(task: TrainTask) -> Update:
    assert _WORKER is not None, "worker not initialised"
    return _WORKER.run(task)


class ProcessPoolExecutor:
    """Trains on a pool of worker processes, each holding its own copy of the workload."""

    def __init__(self, recipe: WorkloadRecipe, workers: int) -> None:
        ctx = multiprocessing.get_context("spawn")
        self._pool = cf.ProcessPoolExecutor(max_workers=workers, mp_context=ctx,
                                            initializer=_init_worker, initargs=(recipe,))

    def submit(self, task: TrainTask) -> Handle:
        return self._pool.submit(_run_in_worker, task)

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)
