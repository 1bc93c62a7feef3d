"""The threads executor (``simulation.executor: threads``): devices trained on a pool of threads.

Training is eager: a task starts on one of ``workers`` threads of this process (``"auto"``: one
per core) as soon as it is submitted, so the devices of a round train concurrently, each on one
intra-op thread, sharing the data already in memory (no process start-up, no copy of the data
set per worker, no pickling of parameters). PyTorch releases the GIL inside its operators, so
small models' steps overlap on separate cores; the trainer's own Python between operators does
not.

Results are bit-identical to ``local``: a task's update is a pure function of its plan, its
starting parameters and the seed, computed by the same trainer on one intra-op thread. What a
device trains on (its stream buffer, an attacker's poisoned data) is read in the submitting
thread; each training thread takes a module of its own, copied in the submitting thread from the
workload's (one per worker and width), so no module is shared and no global RNG is drawn on a
worker. A cancelled task that has not started is dropped; one already running finishes and its
update is discarded, as the process pool does.
"""

from __future__ import annotations

import concurrent.futures as cf
import copy
import queue
from collections import defaultdict

import torch
from torch import nn

from fedfit.simulation.threads import Auto, pool_workers
from fedfit.simulation.workload import TrainTask, Workload
from fedfit.training import train
from fedfit.types import Update


def _one_intra_op_thread() -> None:
    """A training thread's initialiser: one intra-op thread, as every executor trains."""
    if torch.get_num_threads() != 1:
        torch.set_num_threads(1)


class ThreadExecutor:
    """Trains on a pool of threads in this process, eagerly; results identical to ``local``."""

    def __init__(self, workload: Workload, workers: int | Auto) -> None:
        self.workload = workload
        self.workers = pool_workers(workers)
        self._pool = cf.ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="fedfit-train",
                                           initializer=_one_intra_op_thread)
        self._free: dict[float, queue.SimpleQueue[nn.Module]] = defaultdict(queue.SimpleQueue)
        self._copies: dict[float, int] = defaultdict(int)

    def submit(self, task: TrainTask) -> cf.Future[Update]:
        width = task.plan.width
        if self._copies[width] < self.workers:  # at most ``workers`` tasks hold a module at once
            self._free[width].put(copy.deepcopy(self.workload.module(width)))
            self._copies[width] += 1
        x, y = self.workload.inputs(task)
        return self._pool.submit(self._train, task, x, y)

    def _train(self, task: TrainTask, x: torch.Tensor, y: torch.Tensor) -> Update:
        free = self._free[task.plan.width]
        model = free.get()
        try:
            update = train(model, task.params, x, y, task.plan, seed=self.workload.recipe.seed,
                           optimizer=self.workload.recipe.optimizer)
        finally:
            free.put(model)
        return self.workload.delivered(task, update)

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)
