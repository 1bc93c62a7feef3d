"""Validated experiment configuration: YAML in, one frozen config tree out, clear errors.

Every key is declared here; an unknown key, a wrong type or an impossible value raises
:class:`~fedfit.errors.ConfigError` with a one-line message naming the dotted key.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator, model_validator

from fedfit.errors import ConfigError, PlanError

PositiveInt = Annotated[int, Field(ge=1)]
NonNegativeInt = Annotated[int, Field(ge=0)]
Fraction = Annotated[float, Field(ge=0.0, le=1.0)]


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=False)


class PartitionConfig(_Section):
    """How the training set is split over devices."""

    kind: Literal["iid", "dirichlet", "shards", "natural"] = "dirichlet"
    alpha: Annotated[float, Field(gt=0)] = 0.5
    shards_per_device: PositiveInt = 2


class SyntheticConfig(_Section):
    """FedProx Synthetic(α, β) parameters."""

    alpha: Annotated[float, Field(ge=0)] = 1.0
    beta: Annotated[float, Field(ge=0)] = 1.0
    iid: bool = False


class DataConfig(_Section):
    """Dataset, location and partitioning."""

    dataset: Literal["fashion_mnist", "digits", "synthetic", "vibration"] = "fashion_mnist"
    path: str = "/usr/share/datasets/fashion-mnist"
    partition: PartitionConfig = PartitionConfig()
    synthetic: SyntheticConfig = SyntheticConfig()
    max_train_samples: PositiveInt | None = 12000
    max_test_samples: PositiveInt | None = 2000
    local_test_fraction: Annotated[float, Field(ge=0.0, lt=1.0)] = 0.1


class ModelConfig(_Section):
    """Architecture from the zoo and its width multiplier."""

    name: Literal["logreg", "mlp", "cnn", "cnn1d"] = "cnn"
    width: Annotated[float, Field(gt=0.0, le=1.0)] = 1.0
    norm: Literal["none", "batch"] = "none"


class FleetConfig(_Section):
    """Which devices exist: counts per tier, user tiers, CSV traces."""

    tiers: dict[str, Annotated[int, Field(ge=0)]] = {"flagship_phone": 10, "midrange_phone": 10, "older_phone": 10}
    custom_tiers: dict[str, dict[str, Any]] = {}
    traces: dict[int, str] = {}
    trace_step_s: Annotated[float, Field(gt=0)] = 60.0

    @model_validator(mode="after")
    def _some_devices(self) -> FleetConfig:
        if sum(self.tiers.values()) < 1:
            raise ValueError("fleet.tiers: the fleet has no devices")
        return self


class TrainingConfig(_Section):
    """Local training of every device (the baseline planner's fixed values)."""

    batch_size: PositiveInt = 32
    local_epochs: PositiveInt = 1
    max_steps: PositiveInt | None = None
    lr: Annotated[float, Field(gt=0)] = 0.05
    momentum: Annotated[float, Field(ge=0, lt=1)] = 0.0
    weight_decay: Annotated[float, Field(ge=0)] = 0.0
    proximal_mu: Annotated[float, Field(ge=0)] = 0.0
    optimizer: Literal["sgd", "adam"] = "sgd"


class OrchestrationConfig(_Section):
    """Round structure."""

    mode: Literal["sync", "async"] = "sync"
    rounds: PositiveInt = 30
    clients_per_round: PositiveInt = 10
    over_selection: Annotated[float, Field(ge=0)] = 0.0
    deadline_s: Annotated[float, Field(gt=0)] | None = None
    weighting: Literal["samples", "examples", "uniform", "steps", "batch"] = "samples"
    late_updates: Literal["drop", "stale"] = "drop"
    max_staleness: Annotated[int, Field(ge=0)] | None = None


class BatchingConfig(_Section):
    """Dynamic batching (seed 000): ``fixed`` runs ``training.batch_size`` everywhere; ``dynamic``
    lets each device's batch policy pick its micro-batch every local epoch (see
    :mod:`fedfit.policy.batching` for every rule)."""

    mode: Literal["fixed", "dynamic"] = "fixed"
    standard_batch: PositiveInt | None = None  # None: training.batch_size
    min_effective_batch: PositiveInt = 4
    target_effective_batch: PositiveInt | None = None
    memory_margin: Annotated[float, Field(ge=0.0, lt=1.0)] = 0.22
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


class StalenessConfig(_Section):
    """Staleness discount s(versions elapsed) (FedAsync's constant / polynomial / hinge)."""

    kind: Literal["constant", "polynomial", "hinge"] = "polynomial"
    exponent: Annotated[float, Field(ge=0)] = 0.5
    hinge_a: Annotated[float, Field(ge=0)] = 10.0
    hinge_b: Annotated[int, Field(ge=0)] = 4


class ParticipationConfig(_Section):
    """Participation weighting (FedAU): each update × its device's mean interval, in model
    versions, between its folded updates, each interval capped at ``cutoff``."""

    kind: Literal["none", "interval"] = "none"
    cutoff: PositiveInt = 50


class AggregationConfig(_Section):
    """What wraps the one masked average: staleness discount, FedNova, server learning rate,
    q-FFL's fairness exponent (weights × training loss^q; 0: off) and participation weighting."""

    fednova: bool = False
    fairness_q: Annotated[float, Field(ge=0)] = 0.0
    server_lr: Annotated[float, Field(gt=0)] = 1.0
    staleness: StalenessConfig = StalenessConfig()
    participation: ParticipationConfig = ParticipationConfig()


class AsyncSection(_Section):
    """Asynchronous mode (``orchestration.mode: async``): FedBuff or FedAsync."""

    algorithm: Literal["fedbuff", "fedasync"] = "fedbuff"
    buffer_size: PositiveInt = 10
    concurrency: PositiveInt | None = None
    mixing: Annotated[float, Field(gt=0, le=1)] = 0.6
    retry_after_s: Annotated[float, Field(ge=0)] = 60.0


class DeferralConfig(_Section):
    """When a device sits a round out."""

    min_battery: Fraction = 0.2
    defer_hot: bool = True
    require_batch: bool = True
    max_duration_s: Annotated[float, Field(gt=0)] | None = None


class OortConfig(_Section):
    """Oort-guided selection (Lai et al. 2021)."""

    exploration: Fraction = 0.2
    cutoff: Fraction = 0.95
    penalty: Annotated[float, Field(ge=0)] = 2.0
    preferred_duration_s: Annotated[float, Field(gt=0)] | None = None


class SelectionConfig(_Section):
    """Who is invited: uniform, compute-aware (deferral + optional tier strata) or Oort."""

    kind: Literal["uniform", "compute_aware", "oort"] = "uniform"
    stratify: bool = True
    defer: DeferralConfig = DeferralConfig()
    oort: OortConfig = OortConfig()


class LocalWorkConfig(_Section):
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


class EvaluationConfig(_Section):
    """When and against what the global model is evaluated."""

    every: PositiveInt = 1
    target_accuracy: Fraction = 0.70


class SimulationConfig(_Section):
    """How device training is executed (never changes virtual times or results)."""

    executor: Literal["local", "process"] = "local"
    workers: PositiveInt = 2


class OutputConfig(_Section):
    """Where the run directory goes and what it holds.

    ``checkpoint_every``: write ``checkpoint.safetensors`` every this many rounds (server versions
    in async mode) and after the last, so ``fedfit resume`` can continue the run; 0: never.
    """

    dir: str = "runs"
    plots: bool = True
    progress: bool = True
    checkpoint_every: NonNegativeInt = 10


Width = Annotated[float, Field(gt=0.0, le=1.0)]


class WidthConfig(_Section):
    """Dynamic width: which sub-model each device trains (seed 003, HeteroFL)."""

    mode: Literal["fixed", "capability", "random", "common"] = "fixed"
    widths: Annotated[tuple[Width, ...], Field(min_length=1)] = (1.0, 0.5, 0.25, 0.125, 0.0625)
    fixed: Width = 1.0
    indices: Literal["prefix", "random", "importance"] = "prefix"
    deadline_s: Annotated[float, Field(gt=0)] | None = None
    elastic: bool = False
    elastic_quantile: Fraction = 0.5
    scaler: bool = False
    calibration_samples: PositiveInt = 2000


TechniqueName = Literal["checkpointing", "selective", "partial", "pruning", "qat", "progressive", "split"]


class SelectiveConfig(_Section):
    """Selective layer updating: which stages a device trains."""

    mode: Literal["head", "last_k", "cyclic", "importance"] = "head"
    k: PositiveInt = 1


class PartialConfig(_Section):
    """Partial-parameter training: share of elements each device trains."""

    keep_fraction: Annotated[float, Field(gt=0.0, le=1.0)] = 0.5


class PruningConfig(_Section):
    """Capability pruning: candidate sparsities (the least that fits wins), or one per tier."""

    sparsities: list[Annotated[float, Field(ge=0.0, lt=1.0)]] = [0.5, 0.7, 0.9]
    by_tier: dict[str, Annotated[float, Field(ge=0.0, lt=1.0)]] = {}

    @model_validator(mode="after")
    def _some(self) -> PruningConfig:
        if not self.sparsities:
            raise ValueError("memory.pruning.sparsities: give at least one sparsity")
        return self


class QatConfig(_Section):
    """Quantisation-aware training."""

    bits: Annotated[int, Field(ge=2, le=8)] = 8


class ProgressiveConfig(_Section):
    """Progressive layer-wise training."""

    rounds_per_stage: PositiveInt = 2


class SplitConfig(_Section):
    """Split learning with an edge server."""

    cut: PositiveInt | None = None
    edge_flops_per_s: Annotated[float, Field(gt=0)] = 1e11


class MemoryConfig(_Section):
    """Memory: the memory model's fixed runtime workspace (allocator slack, kernels' scratch), and
    memory-constrained training — which techniques, for which devices."""

    workspace_bytes: Annotated[int, Field(ge=0)] = 256 * 1024
    mode: Literal["off", "all", "auto"] = "off"
    techniques: list[TechniqueName] = Field(default=[], validate_default=True)
    candidates: list[TechniqueName] = ["checkpointing", "selective", "partial", "pruning", "progressive", "split"]
    selective: SelectiveConfig = SelectiveConfig()
    partial: PartialConfig = PartialConfig()
    pruning: PruningConfig = PruningConfig()
    qat: QatConfig = QatConfig()
    progressive: ProgressiveConfig = ProgressiveConfig()
    split: SplitConfig = SplitConfig()

    @field_validator("techniques")
    @classmethod
    def _combinable(cls, techniques: list[str], info: ValidationInfo) -> list[str]:
        from fedfit.training.techniques import check_combination  # torch-heavy: only when used

        if info.data.get("mode") == "all" and not techniques:
            raise ValueError("mode 'all' needs at least one technique")
        try:
            check_combination(tuple(dict.fromkeys(techniques)))
        except PlanError as err:
            raise ValueError(str(err).removeprefix("techniques: ")) from None
        return techniques


class DeployConfig(_Section):
    """Real deployment (``fedfit server`` / ``fedfit device``): request limits and timeouts."""

    max_body_bytes: Annotated[int, Field(gt=0)] = 64 * 2**20
    max_update_norm: Annotated[float, Field(gt=0)] = 1e4
    heartbeat_timeout_s: Annotated[float, Field(gt=0)] = 30.0
    task_timeout_s: Annotated[float, Field(gt=0)] = 600.0
    poll_wait_s: Annotated[float, Field(gt=0, le=60)] = 10.0
    linger_s: Annotated[float, Field(ge=0)] = 3.0


class ExperimentConfig(_Section):
    """The whole experiment."""

    name: str = "experiment"
    seed: int = 0
    data: DataConfig = DataConfig()
    model: ModelConfig = ModelConfig()
    fleet: FleetConfig = FleetConfig()
    training: TrainingConfig = TrainingConfig()
    orchestration: OrchestrationConfig = OrchestrationConfig()
    evaluation: EvaluationConfig = EvaluationConfig()
    simulation: SimulationConfig = SimulationConfig()
    output: OutputConfig = OutputConfig()
    batching: BatchingConfig = BatchingConfig()
    memory: MemoryConfig = MemoryConfig()
    aggregation: AggregationConfig = AggregationConfig()
    asynchronous: AsyncSection = AsyncSection()
    selection: SelectionConfig = SelectionConfig()
    local_work: LocalWorkConfig = LocalWorkConfig()
    width: WidthConfig = WidthConfig()
    deploy: DeployConfig = DeployConfig()
    strategies: dict[str, dict[str, Any]] = {}

    @property
    def num_devices(self) -> int:
        """Devices in the fleet."""
        return sum(self.fleet.tiers.values())


def default_scenario() -> ExperimentConfig:
    """The built-in scenario ``fedfit run`` uses without a config (``examples/photo_app.yaml``):
    seed 000's photo app on a phone fleet, every device choosing its batch dynamically and the
    server inviting ready devices first."""
    return ExperimentConfig(name="photo_app", batching=BatchingConfig(mode="dynamic", selection="readiness"))


def _first_error(err: ValidationError) -> str:
    e = err.errors()[0]
    key = ".".join(str(p) for p in e["loc"]) or "config"
    msg = e["msg"].removeprefix("Value error, ")
    if e["type"] == "extra_forbidden":
        return f"{key}: unknown key"
    got = e.get("input")
    shown = "" if isinstance(got, dict | list) or got is None else f" (got {got!r})"
    return f"{key}: {msg}{shown}"


def parse_config(raw: dict[str, Any]) -> ExperimentConfig:
    """Validate a raw mapping into an :class:`ExperimentConfig`.

    Raises:
        ConfigError: one line naming the first offending key.
    """
    if not isinstance(raw, dict):
        raise ConfigError("config: the top level must be a mapping of sections")
    try:
        return ExperimentConfig.model_validate(raw)
    except ValidationError as err:
        raise ConfigError(_first_error(err)) from None


def load_config(path: str | Path) -> ExperimentConfig:
    """Read and validate a YAML config file."""
    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"config: file not found: {p}")
    try:
        raw = yaml.safe_load(p.read_text()) or {}
    except yaml.YAMLError as err:
        raise ConfigError(f"config: {p} is not valid YAML: {str(err).splitlines()[0]}") from None
    return parse_config(raw)


def with_overrides(config: ExperimentConfig, overrides: dict[str, Any]) -> ExperimentConfig:
    """A copy of ``config`` with dotted-key overrides applied (``{"training.batch_size": 8}``).

    Raises:
        ConfigError: an override names a key that does not exist or gives a bad value.
    """
    raw = config.model_dump()
    for dotted, value in overrides.items():
        node = raw
        *parents, leaf = dotted.split(".")
        for part in parents:
            if not isinstance(node.get(part), dict):
                raise ConfigError(f"{dotted}: unknown key")
            node = node[part]
        if leaf not in node:
            raise ConfigError(f"{dotted}: unknown key")
        node[leaf] = value
    return parse_config(raw)
