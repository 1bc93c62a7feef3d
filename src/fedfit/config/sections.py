"""The core sections: data, model, fleet, training, orchestration, selection, output, auto."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from fedfit.bounded import MAX_TRACE_BYTES
from fedfit.config.batched_costs import BatchedCostsConfig
from fedfit.config.base import Fraction, NonNegativeInt, PositiveInt, Section


class PartitionConfig(Section):
    """How the training set is split over devices."""

    kind: Literal["iid", "dirichlet", "shards", "natural"] = "dirichlet"
    alpha: Annotated[float, Field(gt=0)] = 0.5
    shards_per_device: PositiveInt = 2


class SyntheticConfig(Section):
    """FedProx Synthetic(α, β) parameters."""

    alpha: Annotated[float, Field(ge=0)] = 1.0
    beta: Annotated[float, Field(ge=0)] = 1.0
    iid: bool = False


class StreamConfig(Section):
    """Streaming data (``data.stream``): samples arrive over virtual time into a bounded buffer
    each device trains on (see :mod:`fedfit.data.stream`)."""

    rate_per_s: Annotated[float, Field(ge=0.0)] = 0.5
    rate_by_tier: dict[str, Annotated[float, Field(ge=0.0)]] = {}
    burst_every_s: Annotated[float, Field(gt=0.0)] | None = None
    burst_size: Annotated[int, Field(ge=0)] = 0
    buffer_size: PositiveInt = 200
    replacement: Literal["fifo", "reservoir", "random"] = "fifo"
    initial: PositiveInt = 16
    drift_at_s: Annotated[float, Field(ge=0.0)] | None = None

    @model_validator(mode="after")
    def _bursts_whole(self) -> StreamConfig:
        if self.burst_every_s is not None and self.burst_size == 0:
            raise ValueError("burst_size: set it (≥ 1) with burst_every_s: bursts of 0 samples add nothing")
        if self.burst_every_s is None and self.burst_size > 0:
            raise ValueError(f"burst_every_s: set it with burst_size: {self.burst_size} (how often a burst comes)")
        return self


class DataConfig(Section):
    """Dataset, location and partitioning; ``stream`` makes the data arrive over time."""

    dataset: Literal["fashion_mnist", "digits", "synthetic", "vibration"] = "fashion_mnist"
    path: str = "/usr/share/datasets/fashion-mnist"
    partition: PartitionConfig = PartitionConfig()
    synthetic: SyntheticConfig = SyntheticConfig()
    max_train_samples: PositiveInt | None = 12000
    max_test_samples: PositiveInt | None = 2000
    local_test_fraction: Annotated[float, Field(ge=0.0, lt=1.0)] = 0.1
    stream: StreamConfig | None = None
    loader: str | None = None
    loader_kwargs: dict[str, Any] = {}
    devices_dir: str | None = None
    num_classes: PositiveInt | None = None
    #: Distinct device data sets; device d trains on set ``d mod pool`` (repeated shards, see
    #: :func:`fedfit.data.federated.build_federated_data`); ``None``: one set per device.
    pool: PositiveInt | None = None

    @model_validator(mode="after")
    def _one_user_source(self) -> DataConfig:
        if self.loader is not None and self.devices_dir is not None:
            raise ValueError("give data.loader or data.devices_dir, not both")
        return self


class ModelConfig(Section):
    """Architecture from the zoo (or the user's ``factory``) and its width multiplier."""

    name: Literal["logreg", "mlp", "cnn", "cnn1d", "resnet8", "resnet20", "lstm", "mobilenetv2"] = "cnn"
    width: Annotated[float, Field(gt=0.0, le=1.0)] = 1.0
    norm: Literal["none", "batch"] = "none"
    factory: str | None = None
    kwargs: dict[str, Any] = {}


class FleetConfig(Section):
    """Which devices exist: counts per tier, user tiers, CSV traces, and the tier catalogue
    (``realistic``: what a background job gets on the device; ``scaled``: budgets scaled down for
    the small zoo models, see :mod:`fedfit.devices.realistic`)."""

    tiers: dict[str, Annotated[int, Field(ge=0)]] = {"flagship_phone": 10, "midrange_phone": 10, "older_phone": 10}
    custom_tiers: dict[str, dict[str, Any]] = {}
    catalogue: Literal["realistic", "scaled"] = "realistic"
    traces: dict[int, str] = {}
    trace_step_s: Annotated[float, Field(gt=0)] = 60.0
    max_trace_bytes: PositiveInt = MAX_TRACE_BYTES
    #: ``arrays``: 48 h of per-step arrays per device; ``lazy``: state computed on demand
    #: (:mod:`fedfit.devices.lazy_trace`); ``auto``: lazy above 10,000 devices.
    trace_model: Literal["auto", "arrays", "lazy"] = "auto"

    @model_validator(mode="after")
    def _some_devices(self) -> FleetConfig:
        if sum(self.tiers.values()) < 1:
            raise ValueError("fleet.tiers: the fleet has no devices")
        return self


class TrainingConfig(Section):
    """Local training of every device (the baseline planner's fixed values)."""

    batch_size: PositiveInt = 32
    local_epochs: PositiveInt = 1
    max_steps: PositiveInt | None = None
    lr: Annotated[float, Field(gt=0)] = 0.05
    momentum: Annotated[float, Field(ge=0, lt=1)] = 0.0
    weight_decay: Annotated[float, Field(ge=0)] = 0.0
    proximal_mu: Annotated[float, Field(ge=0)] = 0.0
    optimizer: Literal["sgd", "adam"] = "sgd"


class OrchestrationConfig(Section):
    """Round structure, and when a run that makes no progress stops (liveness, retry back-off)."""

    mode: Literal["sync", "async"] = "sync"
    rounds: PositiveInt = 30
    clients_per_round: PositiveInt = 10
    over_selection: Annotated[float, Field(ge=0)] = 0.0
    deadline_s: Annotated[float, Field(gt=0)] | None = None
    weighting: Literal["samples", "examples", "uniform", "steps", "batch"] = "samples"
    late_updates: Literal["drop", "stale"] = "drop"
    max_staleness: Annotated[int, Field(ge=0)] | None = None
    stall_timeout_s: Annotated[float, Field(gt=0)] | None = 21600.0
    max_wall_s: Annotated[float, Field(gt=0)] | None = None
    backoff_cap_s: Annotated[float, Field(ge=0)] = 3600.0
    #: Idle devices a sync round (an async invitation: at least those it invites) checks in and
    #: scores (:mod:`fedfit.policy.candidates`):
    #: ``all`` every idle device; a number, that many drawn uniformly; ``auto``: all up to
    #: 10,000 devices, above that 4x the invited count (exactly the invited count for uniform selection).
    candidates: Literal["auto", "all"] | PositiveInt = "auto"


class BatchingConfig(Section):
    """Dynamic batching (seed 000): ``fixed`` runs ``training.batch_size`` everywhere; ``dynamic``
    lets each device's batch policy pick its micro-batch every local epoch (see
    :mod:`fedfit.policy.batching` for every rule)."""

    mode: Literal["fixed", "dynamic"] = "fixed"
    standard_batch: PositiveInt | None = None  # None: training.batch_size
    min_effective_batch: PositiveInt = 4
    target_effective_batch: PositiveInt | None = None
    memory_margin: Annotated[float, Field(ge=0.0, lt=1.0)] | None = None
    throughput_target: Annotated[float, Field(gt=0.0, le=1.0)] = 0.8
    busy_cpu: Fraction = 0.9
    full_battery: Fraction = 0.8
    low_battery: Fraction = 0.2
    mid_battery_scale: Annotated[float, Field(gt=0.0, le=1.0)] = 1.0
    low_battery_work: Annotated[float, Field(gt=0.0, le=1.0)] = 0.5
    warm_scale: Annotated[float, Field(gt=0.0, le=1.0)] = 0.5
    decline_hot: bool = True
    strong_wifi_bps: Annotated[float, Field(gt=0)] | None = None  # None: rule off
    wifi_batch_scale: Annotated[float, Field(ge=1.0)] = 1.0
    wifi_epochs: PositiveInt = 1
    poor_link_bps: Annotated[float, Field(ge=0)] = 0.0  # 0: rule off
    poor_link_scale: Annotated[float, Field(gt=0.0, le=1.0)] = 0.5
    selection: Literal["uniform", "readiness"] = "uniform"
    low_readiness: Annotated[int, Field(ge=0)] = 2

    @model_validator(mode="after")
    def _battery_order(self) -> BatchingConfig:
        if self.low_battery > self.full_battery:
            raise ValueError("batching.low_battery: must not exceed batching.full_battery")
        return self


class AsyncSection(Section):
    """Asynchronous mode (``orchestration.mode: async``): FedBuff or FedAsync."""

    algorithm: Literal["fedbuff", "fedasync"] = "fedbuff"
    buffer_size: PositiveInt = 10
    concurrency: PositiveInt | None = None
    mixing: Annotated[float, Field(gt=0, le=1)] = 0.6
    retry_after_s: Annotated[float, Field(ge=0)] = 60.0


class DeferralConfig(Section):
    """When a device sits a round out."""

    min_battery: Fraction = 0.2
    defer_hot: bool = True
    require_batch: bool = True
    max_duration_s: Annotated[float, Field(gt=0)] | None = None


class OortConfig(Section):
    """Oort-guided selection (Lai et al. 2021)."""

    exploration: Fraction = 0.2
    cutoff: Fraction = 0.95
    penalty: Annotated[float, Field(ge=0)] = 2.0
    preferred_duration_s: Annotated[float, Field(gt=0)] | None = None


class SelectionConfig(Section):
    """Who is invited: uniform, compute-aware (deferral + optional tier strata) or Oort, with a
    participation floor per tier (``tier_floor``: share of each cohort seated across tiers in
    proportion to their eligible devices before readiness, Oort or deferral choose the rest)."""

    kind: Literal["uniform", "compute_aware", "oort"] = "uniform"
    stratify: bool = True
    tier_floor: Fraction = 0.25
    defer: DeferralConfig = DeferralConfig()
    oort: OortConfig = OortConfig()


class LocalWorkConfig(Section):
    """Local epochs per device: fixed (``training.local_epochs``) or from a compute budget."""

    kind: Literal["fixed", "budget"] = "fixed"
    budget_s: Annotated[float, Field(gt=0)] = 10.0
    min_epochs: PositiveInt = 1
    max_epochs: PositiveInt = 10

    @model_validator(mode="after")
    def _ordered(self) -> LocalWorkConfig:
        if self.min_epochs > self.max_epochs:
            raise ValueError(f"min_epochs {self.min_epochs} exceeds max_epochs {self.max_epochs}")
        return self


class EvaluationConfig(Section):
    """When and against what the global model is evaluated."""

    every: PositiveInt = 1
    target_accuracy: Fraction = 0.70


class SimulationConfig(Section):
    """How device training is executed (never changes virtual times or results).

    ``executor: auto``: ``threads`` with one worker per usable core for the zoo's models, ``local``
    on one core or for a user's module (:func:`fedfit.simulation.threads.auto_executor`).
    ``workers``: pool processes (``"auto"``: one per core). ``torch_threads``: the driver's
    intra-op threads for evaluation and aggregation (``"auto"``: 1); training always runs on one
    intra-op thread per task (:mod:`fedfit.simulation.threads`). ``batched``: in this process, a
    round's devices with the same plan shape trained as one vectorised op (:mod:`fedfit.simulation.batched`).
    ``batched_min_cohort``: ``batched`` vectorises a cohort of at least this many devices;
    ``"auto"``: those a CPU cost model predicts cheaper vectorised (:mod:`fedfit.simulation.cohort_cost`),
    whose constants ``batched_costs`` overrides (:mod:`fedfit.config.batched_costs`).
    ``ray_address``: the Ray cluster ``executor: ray`` joins (``"auto"`` or ``"HOST:PORT"``);
    ``None``: a local one (:mod:`fedfit.simulation.ray_executor`). ``threads``: in this process,
    devices trained concurrently on ``workers`` threads (:mod:`fedfit.simulation.threaded`).
    ``start_method``: how ``process`` workers start (``"auto"``: fork on Linux, spawn elsewhere;
    :func:`fedfit.simulation.executors.start_method`).
    """

    executor: Literal["auto", "local", "process", "batched", "ray", "threads"] = "auto"
    workers: PositiveInt | Literal["auto"] = 2
    torch_threads: PositiveInt | Literal["auto"] = "auto"
    ray_address: str | None = None
    start_method: Literal["auto", "fork", "spawn"] = "auto"
    batched_min_cohort: Annotated[int, Field(ge=2)] | Literal["auto"] = "auto"
    batched_costs: BatchedCostsConfig = BatchedCostsConfig()


class OutputConfig(Section):
    """Where the run directory goes and what it holds.

    ``checkpoint_every``: write ``checkpoint.safetensors`` every this many rounds (server versions
    in async mode) and after the last, so ``fedfit resume`` can continue the run; 0: never.
    """

    dir: str = "runs"
    plots: bool = True
    progress: bool = True
    checkpoint_every: NonNegativeInt = 10




class AutoConfig(Section):
    """``auto``: the strategy chosen from the fleet's profiles, reported states and cost model
    (:mod:`fedfit.policy.auto`). ``fedfit run CONFIG`` turns it on when the YAML names none of
    the keys it decides (:data:`fedfit.autoconfig.DECIDED_KEYS`)."""

    enabled: bool = False
    async_advantage: Annotated[float, Field(gt=0)] = 1.0
    revise_after: PositiveInt | None = 2
    switch_on_stall: bool = True
