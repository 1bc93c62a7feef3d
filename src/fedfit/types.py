"""Messages between fedfit's layers: small, frozen, slotted dataclasses.

Every layer speaks in these: the registry keeps ``DeviceProfile`` and ``DeviceState``,
the planner writes ``TrainPlan``, the fleet returns ``TaskResult`` (an ``Update`` or a
``Failure``), the orchestrator emits ``RoundReport``. Units are in the field names.
"""

from __future__ import annotations

import dataclasses
import enum
from dataclasses import dataclass, field

import torch

from fedfit.device_messages import DeviceProfile as DeviceProfile, DeviceState as DeviceState, Link as Link
from fedfit.device_messages import Thermal as Thermal, UtilisationCurve as UtilisationCurve

#: Model parameters by name (a ``state_dict`` of floating tensors).
Params = dict[str, torch.Tensor]


class BatchRule(str, enum.Enum):
    """The dynamic-batching rule that bound a micro-batch (see :mod:`fedfit.policy.batching`)."""

    STANDARD = "standard"
    MEMORY = "memory"
    COMPUTE = "compute"
    BATTERY = "battery"
    THERMAL = "thermal"
    CONNECTIVITY = "connectivity"


class FailureCause(str, enum.Enum):
    """Why a task produced no usable update."""

    OUT_OF_MEMORY = "out_of_memory"
    BATTERY = "battery"
    OFFLINE = "offline"
    DEADLINE = "deadline"
    DECLINED = "declined"
    REJECTED = "rejected"
    STALE = "stale"


@dataclass(frozen=True, slots=True)
class Techniques:
    """Memory-saving techniques of one task (all off by default = plain training).

    Stages are the model's stages (:mod:`fedfit.models.stages`), input to output. Which
    combinations are allowed is checked by :func:`fedfit.training.techniques.check_techniques`.

    Attributes:
        checkpointing: recompute each stage's activations in backward instead of keeping them.
        train_stages: selective updating: the stages trained (others frozen); ``None``: all.
        importance_k: selective updating by gradient magnitude: the device trains its ``k``
            stages with the largest mean |gradient| on its first micro-batch.
        keep_fraction: partial-parameter training: share of elements trained (random mask per
            device and round); ``None``: off.
        sparsity: capability-based pruning: share of weights removed by magnitude; ``None``: off.
        qat_bits: quantisation-aware training with fake-quantised weights and activations of
            this many bits; ``None``: off.
        progressive_stage: progressive training: the stage trained (earlier frozen, later absent,
            an auxiliary head); ``None``: off.
        split_cut: split learning: the device trains stages ``< split_cut``, an edge server the
            rest; ``None``: off.
        edge_flops_per_s: the edge server's FLOP/s (split learning).
        mask_seed: seed of the partial-parameter mask (with device and round).
    """

    checkpointing: bool = False
    train_stages: tuple[int, ...] | None = None
    importance_k: int | None = None
    keep_fraction: float | None = None
    sparsity: float | None = None
    qat_bits: int | None = None
    progressive_stage: int | None = None
    split_cut: int | None = None
    edge_flops_per_s: float = 1e11
    mask_seed: int = 0

    @property
    def active(self) -> tuple[str, ...]:
        """Names of the techniques switched on."""
        on = {"checkpointing": self.checkpointing, "selective": self.train_stages is not None
              or self.importance_k is not None, "partial": self.keep_fraction is not None,
              "pruning": self.sparsity is not None, "qat": self.qat_bits is not None,
              "progressive": self.progressive_stage is not None, "split": self.split_cut is not None}
        return tuple(k for k, v in on.items() if v)


def held_micro_batch(micro_batch: int, num_examples: int) -> int:
    """``min(micro_batch, num_examples)``: a pass holds at most the samples the device has
    (``micro_batch`` itself when it has none: nothing runs)."""
    return min(micro_batch, num_examples) if num_examples > 0 else micro_batch


@dataclass(frozen=True, slots=True)
class TrainPlan:
    """What one device is asked to do in one task.

    Attributes:
        device_id: the device.
        round: the server round (model version) the task starts from.
        micro_batch: samples per forward/backward pass.
        accumulation_steps: micro-batches whose gradients are summed before one optimiser step.
        local_epochs: passes over the device's data.
        max_steps: cap on optimiser steps (``None``: no cap).
        lr: learning rate of the local optimiser.
        width: width of the sub-model relative to the master (1.0 = the master itself).
        deadline_s: virtual seconds after dispatch the server waits; ``None``: no deadline.
        epoch_batches: per-epoch ``(micro_batch, accumulation_steps)`` when the device re-plans
            every local epoch (dynamic batching); empty: every epoch uses ``micro_batch`` and
            ``accumulation_steps``. When set, its length is the number of epochs run.
        bound_by: the dynamic-batching rule that set the (first epoch's) micro-batch;
            ``None`` for a fixed plan.
        techniques: memory-saving techniques (default: none).
        sigma_probe: measure the per-sample gradient variance at the received model on the first
            step's batch (:mod:`fedfit.training.probe`; one extra forward/backward of that batch);
            requested by DYNAMITE only (``dynamite.sigma_probe``).
        curvature_probe: with ``sigma_probe``, also measure the loss's curvature along the
            probe's direction g_A − g_B (one Hessian-vector product on the next batch's samples,
            :mod:`fedfit.training.curvature_probe`); requested by ``dynamite.noise_model: curvature``.
    """

    device_id: int
    round: int
    micro_batch: int
    accumulation_steps: int = 1
    local_epochs: int = 1
    max_steps: int | None = None
    lr: float = 0.05
    width: float = 1.0
    deadline_s: float | None = None
    epoch_batches: tuple[tuple[int, int], ...] = ()
    bound_by: BatchRule | None = None
    techniques: Techniques = Techniques()
    sigma_probe: bool = False
    curvature_probe: bool = False

    @property
    def effective_batch(self) -> int:
        """Samples per optimiser step: ``micro_batch * accumulation_steps``."""
        return self.micro_batch * self.accumulation_steps

    def micro_batch_for(self, num_examples: int) -> int:
        """Samples one forward/backward pass can hold on a device with ``num_examples`` samples:
        ``min(micro_batch, num_examples)`` (the planned ``micro_batch`` when it holds none, as
        nothing then runs). What the cost model prices and the trainer reports.

        >>> TrainPlan(0, 0, 32).micro_batch_for(1), TrainPlan(0, 0, 32).micro_batch_for(40)
        (1, 32)
        """
        return held_micro_batch(self.micro_batch, num_examples)

    def for_samples(self, num_examples: int) -> TrainPlan:
        """The plan as it runs on ``num_examples`` samples: its micro-batch (and each epoch's)
        capped by :meth:`micro_batch_for`; ``self`` when nothing is capped."""
        if num_examples <= 0 or max((self.micro_batch, *(m for m, _ in self.epoch_batches))) <= num_examples:
            return self
        held = tuple((held_micro_batch(m, num_examples), a) for m, a in self.epoch_batches)
        return dataclasses.replace(self, micro_batch=self.micro_batch_for(num_examples), epoch_batches=held)

    def epoch_batch(self, epoch: int) -> tuple[int, int]:
        """``(micro_batch, accumulation_steps)`` of local epoch ``epoch`` (0-based)."""
        if self.epoch_batches:
            return self.epoch_batches[epoch]
        return self.micro_batch, self.accumulation_steps


@dataclass(frozen=True, slots=True)
class Update:
    """A device's trained parameters and how much work produced them.

    Attributes:
        device_id: the device.
        round: the round whose model the device started from.
        params: the device's parameters after local training (its sub-model's tensors: the
            master's shapes at width 1; the server scatters them back into master coordinates).
        num_examples: size of the device's local training set.
        samples_processed: samples passed through forward/backward (epochs × data, capped by steps).
        steps: optimiser steps taken.
        micro_batch: micro-batch setting used (the last epoch's when it changed per epoch); a
            pass holds at most ``num_examples`` of it (:func:`held_micro_batch`: what metrics
            and events report as run). The setting, not that, is what the registry's batch
            history keeps, so a stream device whose buffer was small is not planned small later.
        accumulation_steps: accumulation actually used (the last epoch's likewise).
        train_loss: mean training loss over the task.
        epoch_batches: per-epoch ``(micro_batch, accumulation_steps)`` used (runtime feedback).
        masks: per-name boolean masks of the coordinates the update holds (partial training,
            pruning); ``None``: every tensor in ``params`` is held whole.
        start_loss: mean loss of the first step's batch, taken at the received model before any
            local step (an unbiased sample of the device's loss at the global model; no extra
            compute); ``None``: not reported (no step, or an older device).
        sigma2: the per-sample gradient variance of the device's data at the received model,
            measured from the first step's batch split in halves (:mod:`fedfit.training.probe`;
            only when the plan asked, ``TrainPlan.sigma_probe``); ``None``: not measured.
        noise_curvature: β_σ, the curvature of the device's loss at the received model along
            the σ² probe's direction g_A − g_B (``TrainPlan.curvature_probe``,
            :mod:`fedfit.training.curvature_probe`); ``None``: not measured.
    """

    device_id: int
    round: int
    params: Params
    num_examples: int
    samples_processed: int
    steps: int
    micro_batch: int
    accumulation_steps: int
    train_loss: float
    epoch_batches: tuple[tuple[int, int], ...] = ()
    masks: dict[str, torch.Tensor] | None = None
    start_loss: float | None = None
    sigma2: float | None = None
    noise_curvature: float | None = None

    @property
    def effective_batch(self) -> int:
        """Samples per optimiser step actually used (the last epoch's)."""
        return self.micro_batch * self.accumulation_steps


@dataclass(frozen=True, slots=True)
class Failure:
    """A task that produced no usable update, and why."""

    device_id: int
    round: int
    cause: FailureCause
    detail: str = ""


@dataclass(frozen=True, slots=True)
class TaskCost:
    """Modelled cost of one task on the virtual clock."""

    download_s: float
    compute_s: float
    upload_s: float
    energy_j: float
    peak_memory_bytes: int
    bytes_down: int
    bytes_up: int
    flops: float
    edge_compute_s: float = 0.0

    @property
    def duration_s(self) -> float:
        """Download + compute + upload (+ the edge server's compute under split learning)."""
        return self.download_s + self.compute_s + self.upload_s + self.edge_compute_s


@dataclass(frozen=True, slots=True)
class TaskResult:
    """One event of the fleet: a task ended, at ``finish_s`` on the virtual clock."""

    plan: TrainPlan
    tier: str
    start_s: float
    finish_s: float
    outcome: Update | Failure
    cost: TaskCost
    free_memory_bytes: int

    @property
    def ok(self) -> bool:
        """Whether the task returned an update."""
        return isinstance(self.outcome, Update)


@dataclass(frozen=True, slots=True)
class RoundReport:
    """What one round (or one asynchronous aggregation) did, as logged in ``metrics.jsonl``."""

    round: int
    virtual_time_s: float
    wall_time_s: float
    accuracy: float | None
    loss: float | None
    participants_by_tier: dict[str, int]
    invited_by_tier: dict[str, int]
    failures_by_cause: dict[str, int]
    failures_by_tier: dict[str, int]
    bytes_up: int
    bytes_down: int
    energy_j: float
    rejected_updates: int
    micro_batch_by_tier: dict[str, float] = field(default_factory=dict)
    failures_by_tier_cause: dict[str, dict[str, int]] = field(default_factory=dict)
    buffer_size_by_tier: dict[str, float] = field(default_factory=dict)
    data_age_s_by_tier: dict[str, float] = field(default_factory=dict)
