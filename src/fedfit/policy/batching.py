"""Dynamic batching: the batch policy, a pure function of a device's profile and state.

Seed 000 ("Dynamic Batching") asks for the largest viable batch a device can afford *now*,
bounded by free memory, compute throughput, battery, heat and the network, with a minimum
effective batch reached by gradient accumulation. :func:`decide_batch` applies the rules of
:class:`BatchingRules` in one pass and records which rule bound the micro-batch:

* **memory**: the largest micro-batch whose predicted peak with the plan's memory techniques
  (:func:`~fedfit.cost.techniques.plan_peak_bytes`; a technique that lowers the per-sample or
  fixed bytes lets the batch grow) fits ``free_memory_bytes × (1 − margin)``; none fits →
  decline. The margin is the memory model's own measured error for the model
  (``ModelCost.memory_error``, its under-prediction of the tensor allocator's peak at held-out
  micro-batches) unless ``memory_margin`` sets one;
* **standard**: ``standard_batch`` is the batch of a device with nothing holding it back;
* **compute**: no more than the smallest micro-batch reaching ``throughput_target`` of the
  utilisation curve's ceiling (larger batches only add latency and memory pressure); a busy
  CPU (``cpu_utilisation ≥ busy_cpu``) halves it; the decision records the utilisation and
  the energy per sample at the chosen size (energy per sample falls as utilisation rises);
* **battery** (not charging): at or above ``full_battery`` the size the other rules allow;
  between ``low_battery`` and ``full_battery`` that size × ``mid_battery_scale``; below
  ``low_battery`` micro-batch 1 and ``low_battery_work`` of the local work. Charging lifts it;
* **thermal**: WARM scales the micro-batch by ``warm_scale``; HOT declines the task;
* **connectivity**: strong Wi-Fi (≥ ``strong_wifi_bps``) allows ``wifi_batch_scale`` × the
  standard batch and ``wifi_epochs`` × the local epochs (one richer update); a poor cellular
  link (< ``poor_link_bps``) scales the micro-batch and the local work by ``poor_link_scale``
  (smaller, more frequent updates);

The caps (memory, standard, compute, low battery) are taken first, their minimum naming the
rule; the factors (mid-band battery, poor link, warm) then scale it, each naming itself when
it lowers the micro-batch;
* **minimum effective batch**: accumulation ``k = ceil(min_effective_batch / micro)`` (or up to
  ``target_effective_batch`` when set).

The device recomputes it at the start of every local epoch (see
:mod:`fedfit.simulation.adaptive`), so it reacts when its resources change mid-task.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from fedfit.cost.memory import MemoryModel
from fedfit.cost.profile import ModelCost
from fedfit.cost.techniques import max_plan_micro_batch, plan_peak_bytes
from fedfit.types import BatchRule, DeviceProfile, DeviceState, Link, Techniques, Thermal, TrainPlan


@dataclass(frozen=True, slots=True)
class BatchingRules:
    """The policy's parameters (each rule's knob; see the module docstring).

    Attributes:
        standard_batch: micro-batch of a device with nothing holding it back.
        min_effective_batch: floor on micro-batch × accumulation.
        target_effective_batch: accumulate up to this effective batch (``None``: only the floor).
        memory_margin: share of free memory kept back as a safety margin, in [0, 1); ``None``
            (default): the memory model's measured error for the trained model
            (``ModelCost.memory_error``), so the margin never exceeds what the model can be
            wrong by (0 for the zoo models, which it over-predicts slightly at held-out sizes).
        throughput_target: share of the utilisation ceiling beyond which a larger micro-batch
            buys nothing (1.0 disables the rule).
        busy_cpu: background CPU load at or above which the micro-batch is halved.
        full_battery: battery fraction at or above which the standard size applies.
        low_battery: battery fraction below which the micro-batch is 1 and work is reduced.
        mid_battery_scale: cap factor on the standard size between low and full battery.
        low_battery_work: share of the local work kept below ``low_battery``.
        warm_scale: micro-batch factor when the device is WARM.
        decline_hot: whether a HOT device declines (pauses) the task.
        strong_wifi_bps: Wi-Fi bandwidth from which the link counts as strong.
        wifi_batch_scale: factor on the standard batch on a strong Wi-Fi link.
        wifi_epochs: local-epoch multiplier on a strong Wi-Fi link.
        poor_link_bps: cellular bandwidth below which the link counts as poor.
        poor_link_scale: micro-batch and local-work factor on a poor cellular link.
    """

    standard_batch: int = 32
    min_effective_batch: int = 4
    target_effective_batch: int | None = None
    memory_margin: float | None = None
    throughput_target: float = 0.8
    busy_cpu: float = 0.9
    full_battery: float = 0.8
    low_battery: float = 0.2
    mid_battery_scale: float = 1.0
    low_battery_work: float = 0.5
    warm_scale: float = 0.5
    decline_hot: bool = True
    strong_wifi_bps: float = float("inf")
    wifi_batch_scale: float = 1.0
    wifi_epochs: int = 1
    poor_link_bps: float = 0.0
    poor_link_scale: float = 0.5


@dataclass(frozen=True, slots=True)
class BatchDecision:
    """What the policy decided for one device at one moment.

    Attributes:
        micro_batch: samples per forward/backward pass (0 when declined).
        accumulation_steps: micro-batches per optimiser step.
        epochs_scale: multiplier on the plan's local epochs (strong Wi-Fi).
        work_fraction: share of the plan's local work to do (battery, poor link), in (0, 1].
        bound_by: the rule that set the micro-batch.
        declined: whether the device declines the task.
        reason: why it declined, or what bound it (for the event log).
        predicted_peak_bytes: the memory model's peak at ``micro_batch``.
        utilisation: utilisation-curve value at ``micro_batch``.
        energy_per_sample_j: modelled compute energy per training sample at ``micro_batch``.
    """

    micro_batch: int
    accumulation_steps: int
    epochs_scale: int
    work_fraction: float
    bound_by: BatchRule
    declined: bool
    reason: str
    predicted_peak_bytes: int
    utilisation: float
    energy_per_sample_j: float

    @property
    def effective_batch(self) -> int:
        """Samples per optimiser step."""
        return self.micro_batch * self.accumulation_steps


def _throughput_cap(profile: DeviceProfile, target: float) -> int:
    """Smallest micro-batch with ``b / (b + half) >= target`` (``b >= half·t/(1−t)``)."""
    if target >= 1.0:
        return 1 << 30
    return max(1, math.ceil(profile.utilisation.half_batch * target / (1.0 - target) - 1e-9))


def _caps(profile: DeviceProfile, state: DeviceState, rules: BatchingRules) -> list[tuple[BatchRule, int]]:
    """Upper bounds on the micro-batch from the standard, compute and low-battery rules."""
    standard = rules.standard_batch
    if _strong_wifi(state, rules):
        standard = max(1, math.floor(standard * rules.wifi_batch_scale))
    caps = [(BatchRule.STANDARD, standard)]
    compute = min(standard, _throughput_cap(profile, rules.throughput_target))
    busy = state.cpu_utilisation is not None and state.cpu_utilisation >= rules.busy_cpu
    caps.append((BatchRule.COMPUTE, max(1, compute // 2) if busy else compute))
    if _low_battery(state, rules):
        caps.append((BatchRule.BATTERY, 1))
    return caps


def _scales(state: DeviceState, rules: BatchingRules) -> list[tuple[BatchRule, float]]:
    """Factors on the capped micro-batch: mid-band battery, poor link, warm device."""
    scales = []
    level = state.battery_fraction
    if level is not None and not state.charging and rules.low_battery <= level < rules.full_battery:
        scales.append((BatchRule.BATTERY, rules.mid_battery_scale))
    if _poor_link(state, rules):
        scales.append((BatchRule.CONNECTIVITY, rules.poor_link_scale))
    if state.thermal is Thermal.WARM:
        scales.append((BatchRule.THERMAL, rules.warm_scale))
    return scales


def _strong_wifi(state: DeviceState, rules: BatchingRules) -> bool:
    return state.link is Link.WIFI and state.bandwidth_bps >= rules.strong_wifi_bps


def _low_battery(state: DeviceState, rules: BatchingRules) -> bool:
    level = state.battery_fraction
    return level is not None and not state.charging and level < rules.low_battery


def _poor_link(state: DeviceState, rules: BatchingRules) -> bool:
    return state.link is Link.CELLULAR and state.bandwidth_bps < rules.poor_link_bps


def _work(state: DeviceState, rules: BatchingRules) -> tuple[int, float]:
    """(epochs multiplier, work fraction) from the network and battery rules."""
    fraction = 1.0
    if _low_battery(state, rules):
        fraction *= rules.low_battery_work
    if _poor_link(state, rules):
        fraction *= rules.poor_link_scale
    return (rules.wifi_epochs if _strong_wifi(state, rules) else 1), fraction


def _accumulation(micro: int, rules: BatchingRules) -> int:
    target = max(rules.min_effective_batch, rules.target_effective_batch or 0)
    return max(1, math.ceil(target / micro))


def decide_batch(profile: DeviceProfile, state: DeviceState, cost: ModelCost, memory: MemoryModel,
                 rules: BatchingRules = BatchingRules(), techniques: Techniques = Techniques()) -> BatchDecision:
    """The batch a device should train with now (pure; see the module docstring).

    Args:
        profile: the device's static profile.
        state: its current state, as its monitor reports it.
        cost: the measured model it trains.
        memory: the memory model that predicts the peak.
        rules: the policy's parameters.
        techniques: the memory techniques of its plan (they set the peak per micro-batch).

    Returns:
        The decision; ``declined`` when the device is HOT or not even one sample fits.

    >>> from fedfit.devices import tier
    >>> from fedfit.cost import measure
    >>> from fedfit.models import ModelSpec
    >>> from fedfit.types import DeviceState, Link, Thermal
    >>> s = DeviceState(3_400_000, 0.9, False, 30.0, Thermal.NOMINAL, Link.WIFI, 5e7, True, 0.1)
    >>> d = decide_batch(tier("older_phone"), s, measure(ModelSpec("cnn", (1, 28, 28), 10)), MemoryModel())
    >>> d.micro_batch, d.accumulation_steps, d.bound_by.value
    (8, 1, 'memory')
    """
    memory = memory.for_device(profile)
    if state.thermal is Thermal.HOT and rules.decline_hot:
        return _declined(BatchRule.THERMAL, f"thermal: hot ({state.temperature_c} °C), training paused")
    margin = cost.memory_error if rules.memory_margin is None else rules.memory_margin
    fits = max_plan_micro_batch(memory, cost, techniques, int(state.free_memory_bytes * (1.0 - margin)))
    if fits < 1:
        return _declined(BatchRule.MEMORY, f"memory: one sample needs {_peak(memory, cost, techniques, 1)} B, "
                                           f"free {state.free_memory_bytes} B less a {margin:.1%} margin")
    rule, micro = min([(BatchRule.MEMORY, fits), *_caps(profile, state, rules)], key=lambda c: c[1])
    for scaled_by, factor in _scales(state, rules):
        if micro > 1 and factor < 1.0:
            rule, micro = scaled_by, max(1, math.floor(micro * factor))
    epochs, fraction = _work(state, rules)
    utilisation = profile.utilisation.at(micro)
    energy = profile.compute_power_w * cost.train_flops_per_sample / (profile.flops_per_s * utilisation)
    return BatchDecision(micro, _accumulation(micro, rules), epochs, fraction, rule, False,
                         f"{rule.value} bound micro-batch {micro}", _peak(memory, cost, techniques, micro),
                         utilisation, energy)


def _peak(memory: MemoryModel, cost: ModelCost, techniques: Techniques, micro: int) -> int:
    return plan_peak_bytes(memory, cost, TrainPlan(0, 0, micro, techniques=techniques))


def _declined(rule: BatchRule, reason: str) -> BatchDecision:
    return BatchDecision(0, 1, 1, 0.0, rule, True, reason, 0, 0.0, 0.0)


def initial_batch(profile: DeviceProfile, cost: ModelCost, memory: MemoryModel,
                  rules: BatchingRules = BatchingRules(), techniques: Techniques = Techniques()) -> int:
    """The server's first suggestion from the static profile alone: the whole training budget
    free, nominal heat, full battery, a middling link (the registry's initial assignment)."""
    idle = DeviceState(free_memory_bytes=profile.training_memory_bytes, battery_fraction=None,
                       charging=None, temperature_c=None, thermal=Thermal.NOMINAL, link=Link.CELLULAR,
                       bandwidth_bps=max(rules.poor_link_bps, 1.0), online=True, cpu_utilisation=None)
    return decide_batch(profile, idle, cost, memory, rules, techniques).micro_batch
