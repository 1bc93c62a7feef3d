"""The task cost model for a round's tasks at once: :func:`fedfit.cost.time.task_cost` over arrays.

Tasks of one device profile whose plans share a shape (width, micro-batch, accumulation, local
epochs, step cap and techniques) differ only in the device's state (thermal state, bandwidth)
and its local data: their model cost, peak memory and compute rate per thermal state are worked
out once per group, and the per-task terms (local work, FLOPs, transfer, energy) as numpy
arrays. Every float operation is the scalar model's, in its order, on the same values, so each
:class:`~fedfit.types.TaskCost` equals the one ``task_cost`` gives, bit for bit. Plans with
memory-saving techniques or the σ² probe (and models whose FLOPs are not floats), and tasks of
devices holding fewer samples than the micro-batch (priced at the micro-batch they can run,
:meth:`~fedfit.types.TrainPlan.for_samples`), are priced task by task.

>>> from fedfit.cost import MemoryModel, ModelCost, task_cost
>>> from fedfit.devices.catalogue import tier
>>> from fedfit.types import DeviceState, Link, Thermal, TrainPlan
>>> cost = ModelCost(7850, 31400, 47100.0, 15700.0, 40.0, 0.0)
>>> phone = tier("midrange_phone")
>>> state = DeviceState(2**30, 0.5, False, 30.0, Thermal.WARM, Link.WIFI, 4e7, True)
>>> plans = [TrainPlan(d, 0, 16, max_steps=4) for d in range(3)]
>>> got = task_costs(plans, [phone] * 3, [state] * 3, lambda w: cost, MemoryModel(), [100, 7, 40], [31400] * 3)
>>> got == [task_cost(plan=p, profile=phone, state=state, cost=cost, memory=MemoryModel(), num_examples=n,
...                   bytes_down=31400, bytes_up=31400) for p, n in zip(plans, [100, 7, 40])]
True
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from operator import attrgetter

import numpy as np
import numpy.typing as npt

from fedfit.bulk import build_many
from fedfit.cost.memory import MemoryModel
from fedfit.cost.profile import ModelCost
from fedfit.cost.technique_work import plan_payload_bytes
from fedfit.cost.techniques import plan_peak_bytes
from fedfit.cost.time import THERMAL_FACTOR, task_cost
from fedfit.types import DeviceProfile, DeviceState, TaskCost, TrainPlan

FloatArray = npt.NDArray[np.float64]


def task_costs(plans: Sequence[TrainPlan], profiles: Sequence[DeviceProfile], states: Sequence[DeviceState],
               costs: Callable[[float], ModelCost], memory: MemoryModel, num_examples: Sequence[int],
               payloads: Sequence[int]) -> list[TaskCost]:
    """``task_cost`` of each task: its plan, its device's profile and state, the device's local
    samples and the raw payload sent (``payloads``; the plan's techniques may shrink it), with the
    model cost at each plan's width from ``costs``."""
    groups: dict[tuple[object, ...], list[int]] = {}
    shapes = map(_SHAPE, plans)  # read in C: a round prices ~1,000 plans
    for i, key in enumerate(zip(map(id, profiles), shapes, map(id, map(_TECHNIQUES, plans)))):
        groups.setdefault(key, []).append(i)
    found: list[TaskCost | None] = [None] * len(plans)
    for rows in groups.values():
        first = plans[rows[0]]
        profile, model_cost = profiles[rows[0]], costs(first.width)
        whole = first.techniques.active or first.sigma_probe or not isinstance(model_cost.train_flops_per_sample, float)
        short = rows if whole else _short(rows, plans, num_examples, first.micro_batch)
        if short:  # a device holding fewer samples than its micro-batch: priced at what it holds
            for i in short:
                down, up = plan_payload_bytes(model_cost, plans[i], payloads[i])
                found[i] = task_cost(plan=plans[i], profile=profile, state=states[i], cost=model_cost, memory=memory,
                                     num_examples=num_examples[i], bytes_down=down, bytes_up=up)
            if whole or len(short) == len(rows):
                continue
            rows = [i for i in rows if found[i] is None]
        priced = _plain(first, profile, [states[i] for i in rows], model_cost, memory,
                        [num_examples[i] for i in rows], [payloads[i] for i in rows])
        for i, cost in zip(rows, priced):
            found[i] = cost
    return [c for c in found if c is not None]


def _short(rows: list[int], plans: Sequence[TrainPlan], num_examples: Sequence[int], micro: int) -> list[int]:
    """The ``rows`` whose device holds fewer samples than its plan's micro-batch (``micro``, or
    an epoch's): checked row by row only when some might."""
    if min(num_examples[i] for i in rows) >= micro and not any(plans[i].epoch_batches for i in rows):
        return []
    return [i for i in rows if plans[i].for_samples(num_examples[i]) is not plans[i]]


#: A plan's shape besides its techniques (grouped by the techniques' identity).
_SHAPE = attrgetter("width", "micro_batch", "accumulation_steps", "local_epochs", "max_steps", "sigma_probe")
_TECHNIQUES = attrgetter("techniques")
_THERMAL, _BANDWIDTH = attrgetter("thermal"), attrgetter("bandwidth_bps")


def _samples(plan: TrainPlan, num_examples: Sequence[int]) -> npt.NDArray[np.int64]:
    """``local_work(plan, n)[1]`` of each ``n``."""
    examples = np.array(num_examples, dtype=np.int64)
    samples = examples * plan.local_epochs
    if plan.max_steps is not None:
        steps = np.ceil(examples / plan.effective_batch).astype(np.int64) * plan.local_epochs
        capped = steps > plan.max_steps
        step = np.minimum(examples, plan.effective_batch)  # a step takes at most the samples held
        samples = np.where(capped, np.minimum(samples, plan.max_steps * step), samples)
    return samples


def _transfer_s(payload: npt.NDArray[np.int64], bandwidth: FloatArray, latency_s: float) -> FloatArray:
    """``transfer_time_s`` of each payload and bandwidth."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(bandwidth <= 0, np.inf, latency_s + payload * 8 / bandwidth)


def _plain(plan: TrainPlan, profile: DeviceProfile, states: list[DeviceState], model_cost: ModelCost,
           memory: MemoryModel, num_examples: list[int], payloads: list[int]) -> list[TaskCost]:
    """``task_cost`` of tasks of one profile and one plan shape without techniques."""
    utilisation = profile.utilisation.at(plan.micro_batch)
    rates = {th: profile.flops_per_s * utilisation * factor for th, factor in THERMAL_FACTOR.items()}
    flops = model_cost.train_flops_per_sample * _samples(plan, num_examples)
    compute_s = flops / np.fromiter(map(rates.__getitem__, map(_THERMAL, states)), np.float64, len(states))
    payload = np.array(payloads, dtype=np.int64)
    bandwidth = np.fromiter(map(_BANDWIDTH, states), np.float64, len(states))
    transfer_s = _transfer_s(payload, bandwidth, profile.latency_s)
    radio_s = transfer_s + transfer_s
    radio_s = np.where(np.isfinite(radio_s), radio_s, 0.0)
    energy = profile.compute_power_w * compute_s + profile.radio_power_w * radio_s
    peak = plan_peak_bytes(memory.for_device(profile), model_cost, plan)
    transfer = transfer_s.tolist()  # built field by field (fedfit.bulk: a round prices ~1,000 tasks)
    return build_many(TaskCost, len(states), {
        "download_s": transfer, "compute_s": compute_s.tolist(), "upload_s": transfer, "energy_j": energy.tolist(),
        "bytes_down": payloads, "bytes_up": payloads, "flops": flops.tolist()},
        {"peak_memory_bytes": peak, "edge_compute_s": 0.0})
