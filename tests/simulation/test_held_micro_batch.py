"""A memory budget that fits one sample but not the planned batch no longer fails a device
that holds one sample (its data share, or its stream buffer at dispatch): it trains, priced at
micro-batch 1, and reports the micro-batch it ran."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable

import torch

from fedfit.aggregation import weighting
from fedfit.cost import MemoryModel, measure
from fedfit.data import build_federated_data
from fedfit.models import ModelSpec
from fedfit.orchestration.sync import RoundOutcome, SyncConfig, SyncOrchestrator
from fedfit.policy import FixedPlanner
from fedfit.report.summary import event_record
from fedfit.simulation.executors import LocalExecutor
from fedfit.simulation.fleet import SimulatedFleet
from fedfit.simulation.workload import Workload, WorkloadRecipe
from fedfit.types import Update
from tests.helpers import profile, state
from tests.simulation.test_fleet import ConstantTrace

KWARGS = {"dataset": "digits", "num_devices": 2, "partition": "iid", "seed": 5, "max_train_samples": 100}


def _round(first_samples: int, examples_at: Callable[[int, float], int] | None = None) -> tuple[RoundOutcome, int]:
    """One round of two devices, batch 32, with free memory between micro-batch 1's peak and 32's;
    device 0 keeps ``first_samples`` of its share. Returns the round and micro-batch 1's peak."""
    data = build_federated_data(**KWARGS)
    spec = ModelSpec("logreg", data.input_shape, data.num_classes)
    cost, memory = measure(spec), MemoryModel()
    fits_one = (memory.peak_bytes(cost, 1) + memory.peak_bytes(cost, 32)) // 2
    first = dataclasses.replace(data.train[0], x=data.train[0].x[:first_samples], y=data.train[0].y[:first_samples])
    data = dataclasses.replace(data, train=(first, *data.train[1:]))
    sizes = [len(d) for d in data.train]
    assert sizes[1] >= 32, sizes
    fleet = SimulatedFleet(profiles=[profile()] * 2, traces=[ConstantTrace(state(free_memory_bytes=fits_one))] * 2,
                           num_examples=sizes, costs=functools.partial(measure, spec), memory=memory,
                           executor=LocalExecutor(Workload(WorkloadRecipe(spec, tuple(sorted(KWARGS.items())), 5),
                                                           data)), examples_at=examples_at)
    orch = SyncOrchestrator(fleet=fleet, planner=FixedPlanner(batch_size=32, lr=0.1), weighting=weighting("samples"),
                            evaluator=lambda p: (0.0, 0.0), config=SyncConfig(rounds=1, clients_per_round=2), seed=5)
    torch.manual_seed(0)
    return next(iter(orch.rounds({k: v.clone() for k, v in spec.build().state_dict().items()}))), \
        memory.peak_bytes(cost, 1)


def test_one_sample_device_fits_where_batch_32_would_not() -> None:
    outcome, peak_one = _round(1)
    by_device = {r.plan.device_id: r for r in outcome.results}
    one, many = by_device[0], by_device[1]
    assert one.ok and isinstance(one.outcome, Update)
    assert one.cost.peak_memory_bytes == peak_one
    record = event_record(one)
    assert (record["micro_batch"], record["micro_batch_run"]) == (32, 1)
    # the other device holds its batch: priced at 32, which this budget does not fit
    assert many.cost.peak_memory_bytes > one.cost.peak_memory_bytes and not many.ok
    assert "micro_batch_run" not in event_record(many)
    assert outcome.report.micro_batch_by_tier == {"test": 1.0}


def test_stream_buffer_at_dispatch_sets_the_priced_batch() -> None:
    """The share holds 40 samples, the buffer at dispatch 1: priced (and fitted) at 1."""
    outcome, peak_one = _round(40, examples_at=lambda device, t: 1 if device == 0 else 40)
    one = next(r for r in outcome.results if r.plan.device_id == 0)
    assert one.ok and one.cost.peak_memory_bytes == peak_one
