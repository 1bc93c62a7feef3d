"""A memory budget that fits one sample but not the planned batch no longer fails a device
that holds one sample: it trains, and reports the micro-batch it ran."""

from __future__ import annotations

import dataclasses
import functools

import torch

from fedfit.aggregation import weighting
from fedfit.cost import MemoryModel, measure
from fedfit.data import build_federated_data
from fedfit.models import ModelSpec
from fedfit.orchestration.sync import SyncConfig, SyncOrchestrator
from fedfit.policy import FixedPlanner
from fedfit.report.summary import event_record
from fedfit.simulation.executors import LocalExecutor
from fedfit.simulation.fleet import SimulatedFleet
from fedfit.simulation.workload import Workload, WorkloadRecipe
from fedfit.types import Update
from tests.helpers import profile, state
from tests.simulation.test_fleet import ConstantTrace


def test_one_sample_device_fits_where_batch_32_would_not() -> None:
    kwargs = {"dataset": "digits", "num_devices": 2, "partition": "iid", "seed": 5, "max_train_samples": 100}
    data = build_federated_data(**kwargs)
    spec = ModelSpec("logreg", data.input_shape, data.num_classes)
    cost = measure(spec)
    fits_one = (MemoryModel().peak_bytes(cost, 1) + MemoryModel().peak_bytes(cost, 32)) // 2
    first = dataclasses.replace(data.train[0], x=data.train[0].x[:1], y=data.train[0].y[:1])
    data = dataclasses.replace(data, train=(first, *data.train[1:]))
    sizes = [len(d) for d in data.train]
    assert sizes[0] == 1 and sizes[1] >= 32, sizes
    fleet = SimulatedFleet(profiles=[profile()] * 2, traces=[ConstantTrace(state(free_memory_bytes=fits_one))] * 2,
                           num_examples=sizes, costs=functools.partial(measure, spec), memory=MemoryModel(),
                           executor=LocalExecutor(Workload(WorkloadRecipe(spec, tuple(sorted(kwargs.items())), 5),
                                                           data)))
    orch = SyncOrchestrator(fleet=fleet, planner=FixedPlanner(batch_size=32, lr=0.1), weighting=weighting("samples"),
                            evaluator=lambda p: (0.0, 0.0), config=SyncConfig(rounds=1, clients_per_round=2), seed=5)
    torch.manual_seed(0)
    outcome = next(iter(orch.rounds({k: v.clone() for k, v in spec.build().state_dict().items()})))
    by_device = {r.plan.device_id: r for r in outcome.results}
    one, many = by_device[0], by_device[1]
    assert one.ok and isinstance(one.outcome, Update)
    assert one.cost.peak_memory_bytes == MemoryModel().peak_bytes(cost, 1)
    assert (one.plan.micro_batch, one.outcome.micro_batch) == (32, 1)  # planned kept, ran reported
    record = event_record(one)
    assert (record["micro_batch"], record["micro_batch_run"]) == (32, 1)
    # the other device holds its batch: priced at 32, which this budget does not fit
    assert many.cost.peak_memory_bytes == MemoryModel().peak_bytes(cost, 32) and not many.ok
    assert "micro_batch_run" not in event_record(many)
    assert outcome.report.micro_batch_by_tier == {"test": 1.0}
