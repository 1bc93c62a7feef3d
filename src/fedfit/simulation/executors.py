"""Executors run device training; the virtual clock never depends on which one.

The contract is ``submit(task) -> Handle`` with ``Handle.result()`` and ``Handle.cancel()``, so a
Ray executor (``ray.remote`` tasks returning object refs) fits the same shape. Training is lazy
in-process (run when its result is first needed, skipped if cancelled) and eager in the pool
(started at submission, so tasks of a round run in parallel).

Pool workers die with their parent: each starts a watchdog thread that exits the worker as soon
as the process that started it is gone (``kill -9`` of fedfit included), so no orphaned worker
holding a copy of the data outlives a run; the resource tracker follows once they are gone.
"""

from __future__ import annotations

import concurrent.futures as cf
import multiprocessing
import os
import threading
import time
from typing import Protocol

import torch

from fedfit.simulation.threads import Auto, pool_workers
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
#: How often a pool worker checks that its parent is alive (seconds).
PARENT_CHECK_S = 0.25


def _init_worker(recipe: WorkloadRecipe, parent_pid: int) -> None:
    global _WORKER  # noqa: PLW0603 - one workload per worker process, set once at start-up
    threading.Thread(target=_exit_with_parent, args=(parent_pid,), daemon=True, name="parent-watch").start()
    torch.set_num_threads(1)  # one intra-op thread per concurrently training device (fedfit.simulation.threads)
    _WORKER = recipe.build()


def _exit_with_parent(parent_pid: int) -> None:
    """Exit this worker at once when ``parent_pid`` is no longer its parent (the parent died)."""
    while os.getppid() == parent_pid:
        time.sleep(PARENT_CHECK_S)
    os._exit(1)


def _run_in_worker(task: TrainTask) -> Update:
    assert _WORKER is not None, "worker not initialised"
    return _WORKER.run(task)


class ProcessPoolExecutor:
    """Trains on a pool of worker processes, each holding its own copy of the workload and
    training on one intra-op thread; ``workers="auto"``: one per core."""

    def __init__(self, recipe: WorkloadRecipe, workers: int | Auto) -> None:
        ctx = multiprocessing.get_context("spawn")
        self._pool = cf.ProcessPoolExecutor(max_workers=pool_workers(workers), mp_context=ctx,
                                            initializer=_init_worker, initargs=(recipe, os.getpid()))

    def submit(self, task: TrainTask) -> Handle:
        return self._pool.submit(_run_in_worker, task)

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)
