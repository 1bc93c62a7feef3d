"""Per-epoch re-planning: a device reacts when its resources change mid-task."""

from __future__ import annotations

import functools
from dataclasses import dataclass

import torch
from torch import nn

from fedfit.cost import MemoryModel, measure
from fedfit.data import build_federated_data
from fedfit.models import ModelSpec
from fedfit.policy.batch_planner import DynamicBatchPlanner
from fedfit.policy.batching import BatchingRules
from fedfit.simulation.executors import LocalExecutor
from fedfit.simulation.fleet import SimulatedFleet
from fedfit.simulation.workload import Workload, WorkloadRecipe
from fedfit.training import task_generator
from fedfit.types import DeviceState, FailureCause, Thermal, Update
from tests.helpers import profile, state

KW = {"dataset": "digits", "num_devices": 1, "partition": "iid", "seed": 5, "max_train_samples": 200}
SPEC = ModelSpec("logreg", (1, 8, 8), 10)
COST = measure(SPEC)
MEMORY = MemoryModel()
RULES = BatchingRules(standard_batch=16, min_effective_batch=4, memory_margin=0.0, throughput_target=1.0)


@dataclass(frozen=True)
class StepTrace:
    """``before`` up to and including ``switch_s``, ``after`` from then on."""

    before: DeviceState
    after: DeviceState
    switch_s: float

    def state_at(self, t_s: float) -> DeviceState:
        return self.before if t_s <= self.switch_s else self.after


def _fleet(trace: StepTrace, epochs: int = 2):
    data = build_federated_data(**KW)
    workload = Workload(WorkloadRecipe(SPEC, tuple(sorted(KW.items())), seed=5), data)
    n = [len(d) for d in data.train]
    planner = DynamicBatchPlanner(rules=RULES, costs=functools.partial(measure, SPEC), memory=MEMORY, num_examples=n,
                                  local_epochs=epochs, lr=0.1)
    fleet = SimulatedFleet(profiles=[profile()], traces=[trace], num_examples=n,
                           costs=functools.partial(measure, SPEC), memory=MEMORY,
                           executor=LocalExecutor(workload), adapter=planner)
    return data, planner, fleet


def _dispatch(fleet: SimulatedFleet, planner: DynamicBatchPlanner, initial: dict[str, torch.Tensor]):
    plan = planner.plan(0, 0, profile(), fleet.snapshot(0, 0.0))
    fleet.dispatch(plan, initial, 0.0)
    result = fleet.next_result()
    assert result is not None
    return plan, result


def test_memory_drop_mid_task_shrinks_the_next_epoch() -> None:
    download_s = 0.05 + 650 * 4 * 8 / 1e7  # logreg 8x8→10 at 1e7 bit/s: the first epoch's start
    tight = MEMORY.peak_bytes(COST, 2)  # only 2 samples fit after the drop
    trace = StepTrace(state(), state(free_memory_bytes=tight), download_s)
    data, planner, fleet = _fleet(trace)
    initial = {k: v.clone() for k, v in SPEC.build().state_dict().items()}

    plan, result = _dispatch(fleet, planner, initial)

    assert plan.micro_batch == 16
    assert result.plan.epoch_batches == ((16, 1), (2, 2))
    update = result.outcome
    assert isinstance(update, Update) and update.epoch_batches == ((16, 1), (2, 2))
    model = SPEC.build()
    model.load_state_dict(initial)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = data.train[0].x, data.train[0].y
    gen = task_generator(5, 0, 0)
    for effective in (16, 4):  # epoch 0 batch 16, epoch 1 micro 2 × accumulation 2
        for idx in torch.randperm(len(x), generator=gen).split(effective):
            opt.zero_grad()
            nn.functional.cross_entropy(model(x[idx]), y[idx]).backward()
            opt.step()
    for name, value in model.state_dict().items():
        assert torch.allclose(update.params[name], value, atol=1e-5)


def test_hot_at_dispatch_declines_with_reason_and_no_cost() -> None:
    hot = state(thermal=Thermal.HOT, temperature_c=45.0)
    _, planner, fleet = _fleet(StepTrace(hot, hot, 0.0))
    _, result = _dispatch(fleet, planner, {k: v.clone() for k, v in SPEC.build().state_dict().items()})
    assert not result.ok and result.outcome.cause is FailureCause.DECLINED
    assert result.outcome.detail.startswith("thermal")
    assert result.cost.energy_j == 0.0 and result.cost.bytes_down == 0 and result.finish_s == 0.0


def test_heating_mid_task_pauses_after_the_epochs_done() -> None:
    download_s = 0.05 + 650 * 4 * 8 / 1e7
    trace = StepTrace(state(), state(thermal=Thermal.HOT, temperature_c=45.0), download_s)
    _, planner, fleet = _fleet(trace, epochs=3)
    _, result = _dispatch(fleet, planner, {k: v.clone() for k, v in SPEC.build().state_dict().items()})
    assert result.ok and result.plan.local_epochs == 1 and result.plan.epoch_batches == ((16, 1),)


def test_epoch_costs_add_up() -> None:
    trace = StepTrace(state(), state(), 0.0)
    data, planner, fleet = _fleet(trace, epochs=2)
    _, result = _dispatch(fleet, planner, {k: v.clone() for k, v in SPEC.build().state_dict().items()})
    n = len(data.train[0])
    flops = COST.train_flops_per_sample * n * 2
    assert result.cost.flops == flops
    assert result.cost.compute_s == flops / 1e10
    assert result.finish_s == result.cost.download_s + result.cost.compute_s + result.cost.upload_s
