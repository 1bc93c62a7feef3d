"""Time and energy model of one task on the virtual clock.

compute = FLOPs / (FLOP/s × utilisation(micro-batch) × thermal factor);
transfer = latency + payload bits / bandwidth; energy = compute power × compute time +
radio power × transfer time. Pure arithmetic: no clocks, no I/O.
"""

from __future__ import annotations

import math

from fedfit.cost.memory import MemoryModel
from fedfit.cost.probe_work import probe_samples, probe_units
from fedfit.cost.profile import ModelCost
from fedfit.cost.technique_work import activation_traffic_bytes, plan_flops
from fedfit.cost.techniques import plan_peak_bytes
from fedfit.types import DeviceProfile, DeviceState, TaskCost, Thermal, TrainPlan

#: Throughput kept at each thermal state (a hot device throttles its clocks).
THERMAL_FACTOR: dict[Thermal, float] = {
    Thermal.NOMINAL: 1.0,
    Thermal.WARM: 0.8,
    Thermal.HOT: 0.5,
    Thermal.UNKNOWN: 1.0,
}


def local_work(plan: TrainPlan, num_examples: int) -> tuple[int, int]:
    """(optimiser steps, samples processed) of a plan over ``num_examples`` local samples (a step
    takes at most the samples held).

    >>> local_work(TrainPlan(0, 0, 8, accumulation_steps=4, local_epochs=5, max_steps=2), 10)
    (2, 20)
    """
    steps_per_epoch = math.ceil(num_examples / plan.effective_batch)
    steps = steps_per_epoch * plan.local_epochs
    samples = num_examples * plan.local_epochs
    if plan.max_steps is not None and steps > plan.max_steps:
        steps = plan.max_steps
        samples = min(samples, steps * min(plan.effective_batch, num_examples))
    return steps, samples


def compute_time_s(flops: float, profile: DeviceProfile, micro_batch: int, thermal: Thermal) -> float:
    """Seconds to execute ``flops`` at this micro-batch and thermal state."""
    rate = profile.flops_per_s * profile.utilisation.at(micro_batch) * THERMAL_FACTOR[thermal]
    return flops / rate


def transfer_time_s(payload_bytes: int, bandwidth_bps: float, latency_s: float) -> float:
    """Seconds to move ``payload_bytes`` (``inf`` when the link has no bandwidth)."""
    if bandwidth_bps <= 0:
        return math.inf
    return latency_s + payload_bytes * 8 / bandwidth_bps


def task_cost(
    *,
    plan: TrainPlan,
    profile: DeviceProfile,
    state: DeviceState,
    cost: ModelCost,
    memory: MemoryModel,
    num_examples: int,
    bytes_down: int,
    bytes_up: int,
) -> TaskCost:
    """The modelled cost of running ``plan`` on a device in ``state``.

    The plan runs at the micro-batch its device's samples allow (:meth:`TrainPlan.for_samples`:
    a device holding fewer samples than its micro-batch puts them all through in one pass), which
    sets its peak memory and utilisation. Its techniques (:mod:`fedfit.cost.techniques`) set its peak memory and FLOPs; under
    split learning the edge server's compute and the activation traffic are added. A plain plan
    asking the σ² probe (``plan.sigma_probe``) pays its two half-batch forward/backward calls, and
    with ``plan.curvature_probe`` its Hessian-vector product too, each call at its own
    utilisation (:mod:`fedfit.cost.probe_work`), in time and energy.
    """
    memory = memory.for_device(profile)
    plan = plan.for_samples(num_examples)  # a pass holds at most the samples the device has
    steps, samples = local_work(plan, num_examples)
    flops, edge_flops = plan_flops(cost, plan, samples, steps)
    compute_s = compute_time_s(flops, profile, plan.micro_batch, state.thermal)
    if plan.sigma_probe and steps > 0 and not plan.techniques.active:
        flops, compute_s = _with_probes(flops, compute_s, plan, profile, state.thermal, cost, num_examples)
    traffic = activation_traffic_bytes(cost, plan, samples)  # split learning only
    bytes_down, bytes_up = bytes_down + traffic, bytes_up + traffic
    down_s = transfer_time_s(bytes_down, state.bandwidth_bps, profile.latency_s)
    up_s = transfer_time_s(bytes_up, state.bandwidth_bps, profile.latency_s)
    radio_s = (down_s + up_s) if math.isfinite(down_s + up_s) else 0.0
    return TaskCost(
        download_s=down_s,
        compute_s=compute_s,
        upload_s=up_s,
        energy_j=profile.compute_power_w * compute_s + profile.radio_power_w * radio_s,
        peak_memory_bytes=plan_peak_bytes(memory, cost, plan),
        bytes_down=bytes_down,
        bytes_up=bytes_up,
        flops=flops,
        edge_compute_s=edge_flops / plan.techniques.edge_flops_per_s if edge_flops else 0.0,
    )


def _with_probes(flops: float, compute_s: float, plan: TrainPlan, profile: DeviceProfile, thermal: Thermal,
                 cost: ModelCost, num_examples: int) -> tuple[float, float]:
    """(FLOPs, compute seconds) of a task with its probes added: :func:`~fedfit.cost.probe_work.probe_units`
    per-sample training computes at full utilisation (the probes' calls' own utilisation included)."""
    batch, curvature = min(plan.effective_batch, num_examples), plan.curvature_probe
    units = probe_units(batch, num_examples, curvature=curvature, half_batch=profile.utilisation.half_batch)
    rate = profile.flops_per_s * profile.utilisation.peak * THERMAL_FACTOR[thermal]
    return (flops + probe_samples(batch, num_examples, curvature=curvature) * cost.train_flops_per_sample,
            compute_s + units * cost.train_flops_per_sample / rate)
