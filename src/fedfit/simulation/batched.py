"""The batched executor (``simulation.executor: batched``): a round's cohort trained as one op.

Tasks are collected as they are submitted; the first ``result()`` asked of a task not yet
trained trains every pending task. Those :mod:`fedfit.training.batched` can vectorise are grouped
by :func:`~fedfit.training.batched.cohort_key` (sub-model width, learning rate, effective batch
per epoch, step cap), split by step count (the longest at most :data:`STEP_SPREAD` times the
shortest: a finished device's masked steps cost as much as real ones) and into chunks of at
most :data:`COHORT_SAMPLES` samples per step; each chunk is trained with one ``vmap`` per
optimiser step, when it pays: a chunk is vectorised only when
:func:`fedfit.simulation.cohort_cost.vectorise`'s CPU cost model predicts it cheaper than one by
one (``simulation.batched_min_cohort: auto``), or, with an explicit ``min_cohort``, when it holds
at least that many devices. The rest (memory-saving techniques, local DP-SGD, batch-norm, dropout
or recurrent models, devices with no data, chunks of one, chunks not worth vectorising) train one
by one exactly as ``local`` does. A task cancelled before it was trained is dropped.

Virtual times, plans and events never depend on the executor; trained parameters and training
losses equal ``local``'s within float rounding (the same terms summed in another order).
"""

from __future__ import annotations

from collections import defaultdict

import torch

from fedfit.simulation.cohort_cost import MEASURED, CohortCosts, ModelWork, model_work, vectorise
from fedfit.simulation.threads import pinned
from fedfit.simulation.workload import TrainTask, Workload
from fedfit.training.batched import CohortKey, batchable_model, batchable_plan, cohort_key, planned_steps, train_cohort
from fedfit.types import Update

#: Samples (devices × padded effective batch) one vectorised step may hold: bounds the
#: activations alive at once (a 28×28 CNN keeps ≈ 0.2 MB per sample for the backward pass): 64
#: devices at batch 16. In a quick check on one thread, larger chunks made the CNN slower per
#: device and logistic regression only slightly faster.
COHORT_SAMPLES = 1024
#: Devices trained together take at most this many times the steps of the shortest among them.
STEP_SPREAD = 1.25


class _CohortHandle:
    def __init__(self, executor: BatchedExecutor, task: TrainTask) -> None:
        self.executor, self.task = executor, task
        self.update: Update | None = None
        self.cancelled = False
        self.inputs: tuple[torch.Tensor, torch.Tensor] | None = None

    def result(self) -> Update:
        if self.update is None:
            if self.cancelled:  # asked for after all: train it alone
                self.update = self.executor.workload.run(self.task)
            else:
                self.executor.train_pending()
        assert self.update is not None, "a pending task was left untrained"
        return self.update

    def cancel(self) -> bool:
        self.cancelled = self.update is None
        return self.cancelled


class BatchedExecutor:
    """Trains in this process, lazily, vectorising the devices that share a plan shape.

    ``min_cohort``: vectorise every chunk of at least this many devices; ``None`` (``auto``): the
    chunks the cost model, with the constants ``costs``, predicts cheaper vectorised."""

    def __init__(self, workload: Workload, *, min_cohort: int | None = None, costs: CohortCosts = MEASURED) -> None:
        self.workload = workload
        self.min_cohort, self.costs = min_cohort, costs
        self._pending: list[_CohortHandle] = []
        self._work: dict[float, ModelWork] = {}

    def submit(self, task: TrainTask) -> _CohortHandle:
        handle = _CohortHandle(self, task)
        self._pending.append(handle)
        return handle

    def close(self) -> None:
        self._pending = []

    def train_pending(self) -> None:
        """Train every pending task that was not cancelled: vectorised groups, then the rest."""
        pending, self._pending = [h for h in self._pending if not h.cancelled], []
        groups: dict[CohortKey, list[_CohortHandle]] = defaultdict(list)
        for handle in pending:
            if self._batchable(handle):
                groups[cohort_key(handle.task.plan)].append(handle)
            else:
                handle.update = self.workload.run(handle.task)
        for group in groups.values():
            for bucket in _buckets(group):
                for chunk in _chunks(bucket, COHORT_SAMPLES):
                    if self._pays(chunk):
                        self._train_group(chunk)
                    else:
                        for handle in chunk:
                            handle.update, handle.inputs = self.workload.run(handle.task), None

    def _pays(self, chunk: list[_CohortHandle]) -> bool:
        """Whether ``chunk`` is vectorised: ``min_cohort`` devices or more, or (``None``) when the
        cost model predicts it cheaper than one by one."""
        if len(chunk) < 2:
            return False
        if self.min_cohort is not None:
            return len(chunk) >= self.min_cohort
        plan, inputs = chunk[0].task.plan, chunk[0].inputs
        assert inputs is not None, "a batchable task keeps its inputs"
        if plan.width not in self._work:  # one sample through the model, once per width
            self._work[plan.width] = model_work(self.workload.module(plan.width), inputs[0][0])
        steps = [planned_steps(len(h.inputs[0]) if h.inputs is not None else 0, h.task.plan) for h in chunk]
        return vectorise(self._work[plan.width], steps, batch=max(cohort_key(plan)[2]),
                         probing=sum(h.task.plan.sigma_probe for h in chunk), costs=self.costs)

    def _batchable(self, handle: _CohortHandle) -> bool:
        """Whether the task can join a vectorised group (its inputs are kept on the handle)."""
        plan = handle.task.plan
        if not batchable_plan(plan, self.workload.recipe.optimizer) or \
                not batchable_model(self.workload.module(plan.width)):
            return False
        handle.inputs = self.workload.inputs(handle.task)
        return len(handle.inputs[0]) > 0

    def _train_group(self, group: list[_CohortHandle]) -> None:
        tasks = [h.task for h in group]
        data = [h.inputs for h in group if h.inputs is not None]
        with pinned(1):  # as the one-by-one path: one intra-op thread
            updates = train_cohort(self.workload.module(tasks[0].plan.width), [t.params for t in tasks], data,
                                   [t.plan for t in tasks], seed=self.workload.recipe.seed,
                                   optimizer=self.workload.recipe.optimizer)
        for handle, update in zip(group, updates, strict=True):
            handle.update, handle.inputs = self.workload.delivered(handle.task, update), None


def _buckets(group: list[_CohortHandle]) -> list[list[_CohortHandle]]:
    """``group`` by step count, ascending, each bucket's longest at most :data:`STEP_SPREAD` times
    its shortest (a masked step costs as much as a real one, so wide spreads waste work)."""
    steps = {id(h): planned_steps(len(h.inputs[0]) if h.inputs is not None else 0, h.task.plan) for h in group}
    buckets: list[list[_CohortHandle]] = []
    for handle in sorted(group, key=lambda h: steps[id(h)]):
        if buckets and steps[id(handle)] <= STEP_SPREAD * steps[id(buckets[-1][0])]:
            buckets[-1].append(handle)
        else:
            buckets.append([handle])
    return buckets


def _chunks(group: list[_CohortHandle], samples: int) -> list[list[_CohortHandle]]:
    """``group`` in consecutive chunks of at most ``samples // effective batch`` devices (≥ 1).

    >>> from fedfit.types import TrainPlan
    >>> hs = [_CohortHandle(None, TrainTask(TrainPlan(i, 0, micro_batch=16), {})) for i in range(5)]  # type: ignore[arg-type]
    >>> [len(c) for c in _chunks(hs, 32)]
    [2, 2, 1]
    """
    per_chunk = max(1, samples // max(cohort_key(group[0].task.plan)[2]))
    return [group[i:i + per_chunk] for i in range(0, len(group), per_chunk)]
