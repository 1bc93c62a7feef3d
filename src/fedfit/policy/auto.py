"""``auto``: the run's strategy chosen from what a deployment knows, not tuned by hand.

Pure rules over one :class:`DeviceOutlook` per device — its training-memory budget, the bytes
one sample and the fixed part of a step need (memory model), its predicted task time on its
reported state (cost model: download at its reported bandwidth, one epoch, upload) and its data
size. Nothing here reads a data set's or a tier's name. The per-device, per-round choices (batch
and accumulation from the reported state, which memory technique, which width, how many local
epochs) are made by the planners these rules switch on; this module decides which planners run
and with what run-wide parameters (see the README section "auto"):

1. **Batch**: dynamic batching always (each device, each local epoch, the largest micro-batch its
   reported state affords, accumulation up to the effective minimum); its standard batch is the
   largest power of two in [4, 32] that still gives the median device ``min_steps`` (10)
   optimiser steps per epoch (small local data sets learn per step, not per sample); the memory
   margin is the default unless that would exclude a device that fits one sample, then 90% of
   the smallest such headroom — both judged on the free memory the device *reports* (at most its
   profile's budget), which is what the batch policy applies the margin to.
2. **Memory technique**: per-device technique fitting (``memory.mode: auto``) only when some
   device cannot fit one sample of the plain model.
3. **Deadline**: 1.25 × the 75th percentile of the predicted task times of devices that can
   train; **over-selection**: the shortfall of devices predicted to meet it, capped at 1.
4. **Width**: capability widths (each device the widest sub-model that meets the deadline and
   its memory) only when some trainable device is predicted to miss the deadline by 2× and the
   model has a width to scale (a narrower model has fewer parameters).
5. **Sync vs async**: FedBuff when its expected rate of valued updates exceeds
   ``async_advantage`` × that of sync rounds with rule 3's deadline and over-selection, both
   computed from the trainable devices' task times (:mod:`fedfit.policy.auto_rates`: FedBuff as
   fedfit runs it, each device once per model version, each update valued by the configured
   staleness discount at its staleness scaled up by its label skew), and at least ``2 × buffer``
   devices can train; otherwise synchronous rounds with the deadline. The buffer is half a
   cohort (at least 2, at most half the trainable devices): a device trains once per model
   version, so a version waits for the b-th fastest device *online*, and a buffer of a whole
   cohort made every version wait for a slow device whenever fewer than k fast ones were online
   (measured: 2.1 s per version at b = k = 6 against 0.1 s at b = 3). **Budget**: a run of R
   rounds of k updates asks for R·k updates; FedBuff folds b per version, so an async run applies
   ``⌈R·k / b⌉`` versions (``rounds_scale`` = k / b), the same number of updates, not R versions
   of b (which stopped async runs at a fraction of sync's training, still climbing). **Switch**:
   label counts cannot show concept shift, so an async run whose evaluated global loss stops
   falling significantly goes on in synchronous rounds with this module's sync decision, for
   the updates left in its budget (:mod:`fedfit.policy.auto_switch`, ``auto.switch_on_stall``).
6. **Local work**: a round lasts until its deadline anyway, so a device may spend half of it
   computing: local epochs from a compute budget of 0.5 × the deadline (async: 0.5 × the median
   predicted task time), between 1 and 3 epochs (the cap bounds client drift on skewed data).
7. **Fairness weights**: participation-interval weighting when devices are predicted to join at
   unequal rates (some miss the deadline, or async); loss-weighted q-FFL stays off.
8. **Selection**: every round, devices whose reported state says they cannot train now (offline,
   battery under 20%, hot) sit out, and the cohort is stratified across device groups, with a
   participation floor (a quarter of each cohort seated across groups first), so every group
   with an eligible device is invited at its share; devices with no plain batch are deferred too
   unless rule 2 gives them a technique.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass

from fedfit.policy.auto_rates import Discount, async_rate, sync_rate

#: Memory margin used when no device is pushed out by it (the batch policy's default).
DEFAULT_MARGIN = 0.22

#: Share of every cohort seated across device groups before the compute-aware selector fills the
#: rest (rule 8; :class:`~fedfit.policy.stratified.TierFloorSelector`'s participation floor).
TIER_FLOOR = 0.25


@dataclass(frozen=True, slots=True)
class DeviceOutlook:
    """What the server knows of one device before it plans: all from profile, report and models.

    Attributes:
        budget_bytes: training memory the device reports free (its reported free memory, at most its
            profile's budget: what the batch policy applies the margin to).
        fixed_bytes: predicted peak of a plain step at micro-batch 0 (weights, gradients, optimiser,
            workspace) on this device.
        sample_bytes: predicted peak bytes each further sample adds.
        task_s: predicted seconds of one plain task at the largest batch it fits (≤ the standard
            batch): download at the reported bandwidth, one epoch, upload; ``inf``: none fits or
            the device reports no link.
        num_examples: local training samples.
        label_skew: total-variation distance between the device's label distribution and the
            fleet's (:func:`~fedfit.policy.auto_rates.label_skew`, from reported label counts;
            0 when none are reported).
    """

    budget_bytes: int
    fixed_bytes: int
    sample_bytes: float
    task_s: float
    num_examples: int
    label_skew: float = 0.0

    @property
    def fits_one(self) -> bool:
        """One sample of the plain model fits the budget (no margin)."""
        return self.fixed_bytes + self.sample_bytes <= self.budget_bytes

    @property
    def headroom(self) -> float:
        """Share of the budget left after one sample: 1 − (fixed + sample) / budget (≤ 0: none fits)."""
        if self.budget_bytes <= 0:
            return 0.0
        return 1.0 - (self.fixed_bytes + self.sample_bytes) / self.budget_bytes


@dataclass(frozen=True, slots=True)
class AutoDecision:
    """The run-wide choices of ``auto`` and why each was made.

    Attributes:
        mode: ``sync`` or ``async`` (FedBuff).
        deadline_s: a sync round's deadline (``None``: no trainable device's time is known).
        over_selection: extra share of devices invited per round.
        buffer_size: FedBuff's updates per version (async): half a cohort (at least 2), at most half
            the trainable devices.
        standard_batch: the batch a device uses when nothing limits it.
        epoch_budget_s: compute seconds that set each task's local epochs (``None``: one epoch).
        max_epochs: the most local epochs a task runs.
        memory_margin: the batch policy's share of free memory kept back.
        memory_mode: ``off`` or ``auto`` (techniques for devices that need them).
        width_mode: ``fixed`` (full model) or ``capability``.
        participation: ``none`` or ``interval`` (FedAU participation weighting).
        defer_unfit: defer devices whose reported state affords no plain batch (rule 8).
        reasons: one line per decision, for the summary.
        task_times: each device's predicted task time the decision read (the revision's prior).
        skews: each device's label skew the decision read (the revision reuses them).
        rounds_scale: versions per configured round (async: k / b, the same updates; sync: 1).
    """

    mode: str
    deadline_s: float | None
    over_selection: float
    buffer_size: int
    standard_batch: int
    epoch_budget_s: float | None
    max_epochs: int
    memory_margin: float
    memory_mode: str
    width_mode: str
    participation: str
    defer_unfit: bool
    reasons: tuple[str, ...]
    task_times: tuple[float, ...] = ()
    skews: tuple[float, ...] = ()
    rounds_scale: float = 1.0


def quantile(values: Sequence[float], q: float) -> float:
    """The ``q`` quantile of ``values`` by linear interpolation between order statistics.

    >>> quantile([4.0, 1.0, 3.0, 2.0], 0.75)  # position 0.75 × 3 = 2.25: 3 + 0.25 × (4 − 3)
    3.25
    """
    if not values:
        raise ValueError("quantile of no values")
    ordered = sorted(values)
    pos = q * (len(ordered) - 1)
    low = math.floor(pos)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


def choose_margin(devices: Sequence[DeviceOutlook], default: float = DEFAULT_MARGIN) -> float:
    """``default``, or 90% of the smallest headroom of a device that fits one sample if smaller."""
    headrooms = [d.headroom for d in devices if d.fits_one]
    if not headrooms:
        return default
    return min(default, 0.9 * min(headrooms))


def choose_batch(devices: Sequence[DeviceOutlook], min_steps: int = 10, low: int = 4, high: int = 32) -> int:
    """Largest power of two in [low, high] with ≥ ``min_steps`` steps per epoch on the median device.

    >>> choose_batch([DeviceOutlook(1, 0, 0.0, 1.0, n) for n in (40, 80, 300)])  # 80 / 8 = 10 steps
    8
    """
    if not devices:
        return high
    median = quantile([float(d.num_examples) for d in devices], 0.5)
    batch = high
    while batch > low and median / batch < min_steps:
        batch //= 2
    return batch


def choose_deadline(devices: Sequence[DeviceOutlook]) -> float | None:
    """1.25 × the 75th percentile of the finite predicted task times (``None``: none finite)."""
    times = [d.task_s for d in devices if math.isfinite(d.task_s)]
    return 1.25 * quantile(times, 0.75) if times else None


def choose_over_selection(devices: Sequence[DeviceOutlook], deadline_s: float | None, cap: float = 1.0) -> float:
    """Invite 1/p times as many, p the share of devices predicted to finish by the deadline."""
    if deadline_s is None or not devices:
        return 0.0
    on_time = sum(1 for d in devices if d.task_s <= deadline_s) / len(devices)
    if on_time == 0:
        return cap
    return min(cap, round(1.0 / on_time - 1.0, 3))


def choose_mode(times: Sequence[float], clients_per_round: int, over_selection: float, deadline_s: float | None,
                buffer_size: int, async_advantage: float = 1.0, discount: Discount | None = None,
                skews: Sequence[float] | None = None) -> str:
    """``async`` when FedBuff's rate of valued updates beats sync's by ``async_advantage`` on the
    finite ``times`` and at least ``2 × buffer_size`` devices can train (rule 5). ``skews``: each
    device's label skew, aligned with ``times``."""
    kept = [(t, 0.0 if skews is None else h) for t, h in zip(times, skews or [0.0] * len(times), strict=True)
            if math.isfinite(t)]
    if len(kept) < 2 * buffer_size or len(kept) < 2:
        return "sync"
    finite = [t for t, _ in kept]
    sync = sync_rate(finite, clients_per_round, over_selection, deadline_s)
    fedbuff = async_rate(finite, buffer_size, discount, [h for _, h in kept])
    return "async" if fedbuff > async_advantage * sync else "sync"


def decide(devices: Sequence[DeviceOutlook], clients_per_round: int, async_advantage: float = 1.0,
           scalable_width: bool = True, discount: Discount | None = None, mode: str | None = None) -> AutoDecision:
    """Every run-wide choice of ``auto`` for this fleet (rules 1–8 of the module docstring).

    Args:
        devices: one outlook per device.
        clients_per_round: k, the updates a round (or FedBuff's buffer at most) waits for.
        async_advantage: factor by which FedBuff's discounted update rate must beat sync's (rule 5).
        scalable_width: whether the model has a width to scale (rule 4).
        discount: the aggregation's staleness discount (default FedBuff's ``(1 + s)^(−½)``).
        mode: ``sync`` or ``async`` imposed instead of rule 5's choice (``None``: rule 5); an
            async run that stalls goes on with the ``sync`` decision (:mod:`fedfit.policy.auto_switch`).
    """
    trainable = [d.task_s for d in devices if math.isfinite(d.task_s)]
    skews = [d.label_skew for d in devices if math.isfinite(d.task_s)]
    buffer = max(1, min(max(2, clients_per_round // 2), len(trainable) // 2))
    deadline = choose_deadline(devices)
    over = choose_over_selection(devices, deadline)
    mode = mode or choose_mode(trainable, clients_per_round, over, deadline, buffer, async_advantage, discount, skews)
    needs_memory = any(not d.fits_one for d in devices)
    budget = None
    if trainable:
        budget = 0.5 * (deadline if mode == "sync" and deadline is not None else quantile(trainable, 0.5))
    late = deadline is not None and any(t > deadline for t in trainable)
    slow = scalable_width and deadline is not None and any(t > 2 * deadline for t in trainable)
    decision = AutoDecision(
        mode=mode, deadline_s=deadline if mode == "sync" else None,
        over_selection=over if mode == "sync" else 0.0,
        buffer_size=buffer, standard_batch=choose_batch(devices), epoch_budget_s=budget, max_epochs=3,
        memory_margin=choose_margin(devices), memory_mode="auto" if needs_memory else "off",
        width_mode="capability" if slow else "fixed",
        participation="interval" if mode == "async" or late else "none", defer_unfit=not needs_memory, reasons=(),
        task_times=tuple(d.task_s for d in devices), skews=tuple(d.label_skew for d in devices),
        rounds_scale=clients_per_round / buffer if mode == "async" else 1.0)
    return dataclasses.replace(decision, reasons=explain(decision, async_advantage))


def explain(d: AutoDecision, async_advantage: float) -> tuple[str, ...]:
    """One line per rule: what ``d`` chose and the fact it rests on."""
    deadline = "none" if d.deadline_s is None else f"{d.deadline_s:.2f} s"
    work = "1 epoch" if d.epoch_budget_s is None else f"1-{d.max_epochs} epochs in {d.epoch_budget_s:.2f} s of compute"
    return (
        f"batch: dynamic, standard {d.standard_batch} (>= 10 steps per epoch on the median device), "
        f"memory margin {d.memory_margin:.3f}",
        f"memory: {d.memory_mode} ({'some' if d.memory_mode == 'auto' else 'no'} device cannot fit one plain sample)",
        f"deadline: {deadline} (1.25 x p75 of predicted task times; none in async mode)",
        f"over-selection: {d.over_selection:.2f} (shortfall of devices predicted on time)",
        f"local work: {work}",
        f"width: {d.width_mode} (capability when a device is predicted past 2x the deadline)",
        f"mode: {d.mode} (async when FedBuff's rate of valued updates, once per version, staleness scaled by "
        f"label skew, > {async_advantage:g} x sync's with this deadline, from predicted task times; buffer "
        f"{d.buffer_size}, {d.rounds_scale:g} versions per round)",
        f"weights: participation {d.participation} (interval when predicted participation is unequal)",
        f"selection: compute-aware, stratified, tier floor {TIER_FLOOR:g}; defer offline / low battery / hot"
        f"{' / no plain batch' if d.defer_unfit else ''}",
    )
