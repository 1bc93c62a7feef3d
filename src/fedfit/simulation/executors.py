"""Executors run device training; the virtual clock never depends on which one.

The contract is ``submit(task) -> Handle`` with ``Handle.result()`` and ``Handle.cancel()``, so a
Ray executor (``ray.remote`` tasks returning object refs) fits the same shape. Training is lazy
in-process (run when its result is first needed, skipped if cancelled) and eager in the pool
(started as soon as a worker is free, so tasks of a round run in parallel; :mod:`fedfit.simulation.pool`).

Pool workers die with their parent: each starts a watchdog thread that exits the worker as soon
as the process that started it is gone (``kill -9`` of fedfit included), so no orphaned worker
holding a copy of the data outlives a run; the resource tracker follows once they are gone.
They ignore Ctrl-C, which the parent answers by shutting the pool down. On Linux they are forked
from the built workload (``simulation.start_method``); parameters travel both ways as one
blob of numpy arrays (:func:`to_wire`), so a task costs one copy of its bytes and no shared-memory hand-off.
The tasks of a round start from the same global model: it is encoded once and crosses each
worker's pipe once (a :class:`~fedfit.simulation.pool.Shared` payload), not once per task.
"""

from __future__ import annotations

import multiprocessing
import os
import pickle
import signal
import sys
import threading
import time
from dataclasses import replace
from functools import partial
from typing import Any, Literal, Protocol

import numpy as np
import torch

from fedfit.errors import ConfigError
from fedfit.simulation.pool import LeanPool, Pending, Runner, Shared
from fedfit.simulation.threads import Auto, pool_workers
from fedfit.simulation.workload import TrainTask, Workload, WorkloadRecipe
from fedfit.types import Params, Update


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

StartMethod = Literal["auto", "fork", "spawn"]


def start_method(setting: StartMethod, platform: str = sys.platform) -> Literal["fork", "spawn"]:
    """How pool workers start for ``simulation.start_method``: ``"auto"`` forks on Linux (the
    workers inherit the built workload copy-on-write and start in milliseconds) and spawns
    elsewhere (macOS's system libraries are not fork-safe; Windows has no fork).

    >>> start_method("auto", "linux"), start_method("auto", "darwin"), start_method("spawn", "linux")
    ('fork', 'spawn', 'spawn')
    """
    if setting == "auto":
        return "fork" if platform.startswith("linux") else "spawn"
    if setting not in multiprocessing.get_all_start_methods():
        raise ConfigError(f"simulation.start_method: {setting!r} is not available on this platform; use auto or spawn")
    return setting


def _start_worker(source: WorkloadRecipe | Workload, parent_pid: int) -> Runner:
    """A worker's start: a forked one inherits the parent's workload (no copy, no pickling);
    a spawned one rebuilds it from the recipe. Returns the task runner."""
    global _WORKER  # noqa: PLW0603 - one workload per worker process, set once at start-up
    threading.Thread(target=_exit_with_parent, args=(parent_pid,), daemon=True, name="parent-watch").start()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to answer; it shuts the pool down
    torch.set_num_threads(1)  # one intra-op thread per concurrently training device (fedfit.simulation.threads)
    _WORKER = source if isinstance(source, Workload) else source.build()
    return _run_in_worker


def _exit_with_parent(parent_pid: int) -> None:
    """Exit this worker at once when ``parent_pid`` is no longer its parent (the parent died)."""
    while os.getppid() == parent_pid:
        time.sleep(PARENT_CHECK_S)
    os._exit(1)


def to_wire(params: Params) -> bytes:
    """``params`` pickled once, as numpy arrays, with pickle protocol 5 (one copy of the bytes):
    a pool's queue would otherwise pickle the tensors with torch's reducer, which moves each
    storage to shared memory and passes a file descriptor over a socket, or (numpy arrays)
    with protocol 4, several copies: either costs a small model's step. Dtypes numpy lacks
    (``bfloat16``) stay tensors, pickled as torch pickles them to a file."""
    return pickle.dumps({name: t.detach().numpy() if t.dtype in _NUMPY_DTYPES else t for name, t in params.items()},
                        protocol=5)


def from_wire(wire: bytes | memoryview) -> Params:
    """The tensors :func:`to_wire` sent, bit for bit (writable: protocol 5 sends them as such)."""
    arrays: dict[str, np.ndarray[Any, Any] | torch.Tensor] = pickle.loads(wire)  # noqa: S301 - our own workers' bytes
    return {name: torch.from_numpy(a) if isinstance(a, np.ndarray) else a for name, a in arrays.items()}


_NUMPY_DTYPES = frozenset({torch.float64, torch.float32, torch.float16, torch.int64, torch.int32, torch.int16,
                           torch.int8, torch.uint8, torch.bool})


def _run_in_worker(message: memoryview, shared: memoryview | None) -> tuple[Update, bytes]:
    """Train one task: its parameters travel in ``message`` or, ``None`` there, are the shared payload."""
    assert _WORKER is not None, "worker not initialised"
    plan, params, at_s = pickle.loads(message)  # noqa: S301 - the driver's own bytes
    wire = params if params is not None else shared
    assert wire is not None, "a task named a shared payload its worker was never sent"
    update = _WORKER.run(TrainTask(plan, from_wire(wire), at_s))
    return replace(update, params={}), to_wire(update.params)


#: What identifies a parameter dict's bytes while its tensors are held: each tensor's name,
#: identity and in-place version counter.
_ParamsKey = tuple[tuple[str, int, int], ...]


def params_key(params: Params) -> _ParamsKey | None:
    """The key of ``params`` (valid while its tensors are alive: identities are not reused);
    ``None`` when a tensor keeps no version counter (an inference tensor), so nothing is shared."""
    if any(t.is_inference() for t in params.values()):
        return None
    return tuple((name, id(t), t._version) for name, t in params.items())


class _PoolHandle:
    def __init__(self, pending: Pending) -> None:
        self._pending = pending

    def result(self) -> Update:
        update, params = self._pending.result()
        return replace(update, params=from_wire(params))

    def cancel(self) -> bool:
        return self._pending.cancel()


class ProcessPoolExecutor:
    """Trains on a pool of worker processes, each holding its own copy of the workload and
    training on one intra-op thread; ``workers="auto"``: one per core. Forked workers (the
    default on Linux, :func:`start_method`) start at the first submission, from the workload
    already built here; spawned ones import torch and rebuild it from ``recipe``."""

    def __init__(self, recipe: WorkloadRecipe, workers: int | Auto, workload: Workload | None = None,
                 method: StartMethod = "auto") -> None:
        self.method = start_method(method)
        source: Workload | WorkloadRecipe = workload if self.method == "fork" and workload is not None else recipe
        self.workers = pool_workers(workers)
        self._pool = LeanPool(self.workers, self.method, partial(_start_worker, source, os.getpid()))
        # the last parameters sent: their key, their tensors (held, so the key stays theirs) and payload
        self._last: tuple[_ParamsKey, list[torch.Tensor], Shared] | None = None

    def submit(self, task: TrainTask) -> Handle:
        shared = self._shared(task.params)
        wire = None if shared is not None else to_wire(task.params)
        return _PoolHandle(self._pool.submit(pickle.dumps((task.plan, wire, task.at_s), protocol=5), shared))

    def _shared(self, params: Params) -> Shared | None:
        """``params`` as a shared payload: encoded again only when they are not the last ones sent."""
        key = params_key(params)
        if key is None:
            return None
        if self._last is None or self._last[0] != key:
            token = self._last[2].token + 1 if self._last is not None else 0
            self._last = (key, list(params.values()), Shared(token, to_wire(params)))
        return self._last[2]

    def close(self) -> None:
        self._pool.close()
        self._last = None
