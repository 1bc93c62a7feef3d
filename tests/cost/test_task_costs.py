"""The task cost model over a round's tasks equals the scalar model task by task, bit for bit."""

from __future__ import annotations

import dataclasses
import math
import random

from fedfit.cost import MemoryModel, ModelCost, task_cost
from fedfit.cost.task_costs import task_costs
from fedfit.devices.catalogue import TIERS
from fedfit.types import DeviceState, Link, TaskCost, Techniques, Thermal, TrainPlan

_COSTS = {1.0: ModelCost(7850, 31400, 47100.5, 15700.25, 40.0, 1000.0, 12.5, largest_param_bytes=31360),
          0.5: ModelCost(3925, 15700, 23550.75, 7850.5, 20.0, 500.0, 6.25, largest_param_bytes=15680)}


def _state(rng: random.Random) -> DeviceState:
    bandwidth = rng.choice([0.0, -1.0, rng.uniform(2e4, 1e8), rng.uniform(2e4, 1e8)])
    return DeviceState(free_memory_bytes=rng.randrange(2**20, 2**31), battery_fraction=rng.random(),
                       charging=rng.random() < 0.3, temperature_c=rng.uniform(20, 45), thermal=rng.choice(list(Thermal)),
                       link=Link.WIFI, bandwidth_bps=bandwidth, online=True)


def _reference(plan: TrainPlan, profile: object, state: DeviceState, examples: int, payload: int,
               memory: MemoryModel) -> TaskCost:
    """The scalar model written out (local work, FLOPs, transfer, energy) for plain plans, at the
    micro-batch the device can run: at most the samples it holds."""
    assert isinstance(profile, type(TIERS["flagship_phone"]))
    cost = _COSTS[plan.width]
    micro = min(plan.micro_batch, examples)
    effective = micro * plan.accumulation_steps
    steps = math.ceil(examples / effective) * plan.local_epochs
    samples = examples * plan.local_epochs
    if plan.max_steps is not None and steps > plan.max_steps:
        samples = min(samples, plan.max_steps * min(effective, examples))
    flops = cost.train_flops_per_sample * samples
    rate = profile.flops_per_s * profile.utilisation.at(micro) * {
        Thermal.NOMINAL: 1.0, Thermal.WARM: 0.8, Thermal.HOT: 0.5, Thermal.UNKNOWN: 1.0}[state.thermal]
    bw = state.bandwidth_bps
    transfer = math.inf if bw <= 0 else profile.latency_s + payload * 8 / bw
    radio = 2 * transfer if math.isfinite(2 * transfer) else 0.0
    compute = flops / rate
    return TaskCost(download_s=transfer, compute_s=compute, upload_s=transfer,
                    energy_j=profile.compute_power_w * compute + profile.radio_power_w * radio,
                    peak_memory_bytes=memory.for_device(profile).peak_bytes(cost, micro),
                    bytes_down=payload, bytes_up=payload, flops=flops)


def test_a_round_of_random_plain_plans_equals_the_scalar_model_and_a_reference() -> None:
    rng, memory = random.Random(0), MemoryModel(optimizer_slots=1)
    profiles = [TIERS[n] for n in ("flagship_phone", "older_phone", "smartwatch", "sensor_mcu")]
    shared = [TrainPlan(0, 3, 16, max_steps=4), TrainPlan(0, 3, 8, accumulation_steps=2, local_epochs=3),
              TrainPlan(0, 3, 32, width=0.5, max_steps=50, local_epochs=2)]
    plans, chosen, states, examples, payloads = [], [], [], [], []
    for d in range(600):  # plans of a few shapes, shared by many tasks, and some of their own
        shape = rng.choice(shared) if rng.random() < 0.8 else TrainPlan(
            0, 3, rng.randint(1, 64), accumulation_steps=rng.randint(1, 3), local_epochs=rng.randint(1, 4),
            max_steps=rng.choice([None, rng.randint(1, 30)]), width=rng.choice([1.0, 0.5]))
        plans.append(dataclasses.replace(shape, device_id=d))
        chosen.append(rng.choice(profiles))
        states.append(_state(rng))
        examples.append(rng.randint(1, 5000) if rng.random() < 0.9 else rng.randint(1, 40))  # some short
        payloads.append(rng.choice([31400, 15700, rng.randrange(1, 2**40)]))

    got = task_costs(plans, chosen, states, _COSTS.__getitem__, memory, examples, payloads)

    assert got == [task_cost(plan=p, profile=f, state=s, cost=_COSTS[p.width], memory=memory, num_examples=n,
                             bytes_down=b, bytes_up=b) for p, f, s, n, b in zip(plans, chosen, states, examples, payloads)]
    assert got == [_reference(p, f, s, n, b, memory) for p, f, s, n, b in zip(plans, chosen, states, examples, payloads)]
    assert any(math.isinf(c.download_s) for c in got) and any(c.energy_j > 0 for c in got)


def test_plans_with_techniques_or_integer_flops_are_priced_task_by_task() -> None:
    rng, memory = random.Random(1), MemoryModel()
    stages_cost = _COSTS[1.0]
    sparse = Techniques(sparsity=0.5)
    int_flops = dataclasses.replace(stages_cost, train_flops_per_sample=47100)
    plans = [TrainPlan(d, 0, 16, techniques=sparse if d % 2 else Techniques()) for d in range(40)]
    states = [_state(rng) for _ in plans]
    profile = TIERS["midrange_phone"]

    got = task_costs(plans, [profile] * 40, states, lambda w: int_flops, memory, [100] * 40, [31400] * 40)

    assert got == [task_cost(plan=p, profile=profile, state=s, cost=int_flops, memory=memory, num_examples=100,
                             bytes_down=31400, bytes_up=31400) for p, s in zip(plans, states)]
    assert all(isinstance(c.flops, int) for c in got)  # the scalar model's own type, not a numpy float
