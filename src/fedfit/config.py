"""Validated experiment configuration: YAML in, one frozen config tree out, clear errors.

Every key is declared here; an unknown key, a wrong type or an impossible value raises
:class:`~fedfit.errors.ConfigError` with a one-line message naming the dotted key.
"""

from __future__ import annotations

import types
import typing
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator, model_validator

from fedfit.bounded import MAX_CONFIG_BYTES, MAX_TRACE_BYTES, load_yaml, read_text
from fedfit.errors import ConfigError, PlanError

PositiveInt = Annotated[int, Field(ge=1)]
NonNegativeInt = Annotated[int, Field(ge=0)]
Fraction = Annotated[float, Field(ge=0.0, le=1.0)]


def _check_bools(annotation: Any, value: Any) -> None:
    """Raise ``ValueError`` where ``value`` is a bool and ``annotation`` wants a number, or the reverse."""
    if annotation is Any or isinstance(annotation, typing.TypeVar):
        return
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is Annotated:
        _check_bools(args[0], value)
    elif origin in (typing.Union, types.UnionType):
        options = [a for a in args if a is not type(None)]
        if value is not None and not any(_bools_fit(a, value) for a in options):
            _check_bools(options[0], value)
    elif origin in (dict,) and isinstance(value, dict):
        for item in value.values():
            _check_bools(args[1], item)
    elif origin in (list, tuple) and isinstance(value, list | tuple):
        for item in value:
            _check_bools(args[0], item)
    elif annotation is bool and not isinstance(value, bool):
        raise ValueError("expected true or false")
    elif annotation in (int, float) and isinstance(value, bool):
        raise ValueError("expected a number, not a boolean")


def _bools_fit(annotation: Any, value: Any) -> bool:
    try:
        _check_bools(annotation, value)
    except ValueError:
        return False
    return True


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=False, allow_inf_nan=False)

    @field_validator("*", mode="before")
    @classmethod
    def _no_bool_int_mixups(cls, value: Any, info: ValidationInfo) -> Any:
        """``true`` is no number and ``1`` no boolean: pydantic's lax mode would convert both."""
        field = cls.model_fields.get(info.field_name or "")
        if field is not None:
            _check_bools(field.annotation, value)
        return value


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


class StreamConfig(_Section):
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


class DataConfig(_Section):
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

    @model_validator(mode="after")
    def _one_user_source(self) -> DataConfig:
        if self.loader is not None and self.devices_dir is not None:
            raise ValueError("give data.loader or data.devices_dir, not both")
        return self


class ModelConfig(_Section):
    """Architecture from the zoo (or the user's ``factory``) and its width multiplier."""

    name: Literal["logreg", "mlp", "cnn", "cnn1d", "resnet8", "resnet20", "lstm"] = "cnn"
    width: Annotated[float, Field(gt=0.0, le=1.0)] = 1.0
    norm: Literal["none", "batch"] = "none"
    factory: str | None = None
    kwargs: dict[str, Any] = {}


class FleetConfig(_Section):
    """Which devices exist: counts per tier, user tiers, CSV traces."""

    tiers: dict[str, Annotated[int, Field(ge=0)]] = {"flagship_phone": 10, "midrange_phone": 10, "older_phone": 10}
    custom_tiers: dict[str, dict[str, Any]] = {}
    traces: dict[int, str] = {}
    trace_step_s: Annotated[float, Field(gt=0)] = 60.0
    max_trace_bytes: PositiveInt = MAX_TRACE_BYTES

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


class BatchingConfig(_Section):
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


class RobustConfig(_Section):
    """Robust aggregation (``aggregation.robust``): a rule in place of the plain masked average,
    optionally after update-norm clipping; each works on masked, partial updates."""

    rule: Literal["mean", "median", "trimmed_mean", "krum", "multi_krum", "fltrust", "geometric_median"] = "mean"
    clip: Literal["none", "fixed", "adaptive"] = "none"
    clip_bound: Annotated[float, Field(gt=0)] = 1.0
    clip_quantile: Annotated[float, Field(gt=0, le=1)] = 0.5
    trim_fraction: Annotated[float, Field(ge=0, lt=0.5)] = 0.1
    byzantine: NonNegativeInt = 1
    krum_keep: PositiveInt = 5
    iterations: PositiveInt = 4
    root_samples: PositiveInt = 100
    root_epochs: PositiveInt = 1


class AggregationConfig(_Section):
    """What wraps the one masked average: staleness discount, FedNova, server learning rate,
    q-FFL's fairness exponent (weights × training loss^q; 0: off) and participation weighting."""

    fednova: bool = False
    fairness_q: Annotated[float, Field(ge=0)] = 0.0
    server_lr: Annotated[float, Field(gt=0)] = 1.0
    staleness: StalenessConfig = StalenessConfig()
    participation: ParticipationConfig = ParticipationConfig()
    robust: RobustConfig = RobustConfig()


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
    """Who is invited: uniform, compute-aware (deferral + optional tier strata) or Oort, with a
    participation floor per tier (``tier_floor``: share of each cohort seated across tiers in
    proportion to their eligible devices before readiness, Oort or deferral choose the rest)."""

    kind: Literal["uniform", "compute_aware", "oort"] = "uniform"
    stratify: bool = True
    tier_floor: Fraction = 0.25
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
    """How device training is executed (never changes virtual times or results).

    ``workers``: pool processes (``"auto"``: one per core). ``torch_threads``: the driver's
    intra-op threads for evaluation and aggregation (``"auto"``: 1); training always runs on one
    intra-op thread per task (:mod:`fedfit.simulation.threads`).
    """

    executor: Literal["local", "process"] = "local"
    workers: PositiveInt | Literal["auto"] = 2
    torch_threads: PositiveInt | Literal["auto"] = "auto"


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


class AutoConfig(_Section):
    """``auto``: the strategy chosen from the fleet's profiles, reported states and cost model
    (:mod:`fedfit.policy.auto`). ``fedfit run CONFIG`` turns it on when the YAML names none of
    the keys it decides (:data:`fedfit.autoconfig.DECIDED_KEYS`)."""

    enabled: bool = False
    async_spread: Annotated[float, Field(gt=1.0)] = 50.0
class AttackConfig(_Section):
    """Simulated attackers: which devices (a seeded ``fraction`` of the fleet, plus ``devices`` by
    id and every device of ``tiers``) and what they send."""

    kind: Literal["none", "scale", "sign_flip", "random", "label_flip", "backdoor"] = "none"
    fraction: Fraction = 0.0
    devices: list[NonNegativeInt] = []
    tiers: list[str] = []
    scale: Annotated[float, Field(gt=0)] = 10.0
    boost: Annotated[float, Field(gt=0)] = 1.0
    poison_fraction: Annotated[float, Field(gt=0, le=1)] = 0.5
    target_class: NonNegativeInt = 0


class CentralDPConfig(_Section):
    """DP-FedAvg at the server: per-device clipping and Gaussian noise; give ``noise_multiplier``
    or a ``target_epsilon`` (reached after ``orchestration.rounds`` rounds) to calibrate it."""

    enabled: bool = False
    clip_norm: Annotated[float, Field(gt=0)] = 1.0
    noise_multiplier: Annotated[float, Field(gt=0)] | None = None
    target_epsilon: Annotated[float, Field(gt=0)] | None = None
    delta: Annotated[float, Field(gt=0, lt=1)] = 1e-5
    accountant: Literal["rdp", "pld"] = "rdp"


class SecureAggregationConfig(_Section):
    """SecAgg (simulated): the server learns only per-cohort sums."""

    enabled: bool = False
    threshold: Annotated[float, Field(gt=0, le=1)] = 0.5
    dropout: Annotated[float, Field(ge=0, lt=1)] = 0.0
    min_cohort: PositiveInt = 3


class LocalDPConfig(_Section):
    """DP-SGD on the device: per-sample clipping to ``clip_norm`` and Gaussian noise of
    ``noise_multiplier`` × ``clip_norm`` on each step's gradient sum (sample-level DP)."""

    enabled: bool = False
    clip_norm: Annotated[float, Field(gt=0)] = 1.0
    noise_multiplier: Annotated[float, Field(ge=0)] = 1.0
    delta: Annotated[float, Field(gt=0, lt=1)] = 1e-5


class PrivacyConfig(_Section):
    """Differential privacy and secure aggregation."""

    central: CentralDPConfig = CentralDPConfig()
    local: LocalDPConfig = LocalDPConfig()
    secure_aggregation: SecureAggregationConfig = SecureAggregationConfig()
class DynamitePriorConfig(_Section):
    """Estimates DYNAMITE plans with before it has measured its own (see :mod:`fedfit.policy.dynamite`)."""

    beta: Annotated[float, Field(gt=0.0)] = 1.0
    rho: Annotated[float, Field(gt=0.0)] = 1.0
    delta: Annotated[float, Field(ge=0.0)] = 1.0
    sigma2: Annotated[float, Field(ge=0.0)] = 1.0
    loss: Annotated[float, Field(gt=0.0)] = 2.3


class DynamiteConfig(_Section):
    """DYNAMITE (seed 001): co-optimised local steps τ and per-device batch b_i under a budget.

    ``mode`` picks the solver (``off``: not used); ``adapt`` re-estimates and re-plans after
    every aggregation, else the plan is fixed after ``warmup_rounds``."""

    mode: Literal["off", "closed_form", "homogeneous", "heterogeneous"] = "off"
    adapt: bool = True
    budget_time_s: Annotated[float, Field(gt=0.0)] | None = 3600.0
    budget_energy_j: Annotated[float, Field(gt=0.0)] | None = None
    tau_max: PositiveInt = 50
    holding: Annotated[float, Field(ge=0.0, lt=1.0)] = 0.5
    warmup_rounds: PositiveInt = 2
    max_accumulation: PositiveInt = 1
    prior: DynamitePriorConfig = DynamitePriorConfig()

    @model_validator(mode="after")
    def _has_budget(self) -> DynamiteConfig:
        if self.mode != "off" and self.budget_time_s is None and self.budget_energy_j is None:
            raise ValueError("budget_time_s: set it or budget_energy_j (DYNAMITE plans against a budget)")
        return self
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
    seed: Annotated[int, Field(ge=0, lt=2**63)] = 0
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
    attack: AttackConfig = AttackConfig()
    privacy: PrivacyConfig = PrivacyConfig()
    dynamite: DynamiteConfig = DynamiteConfig()
    deploy: DeployConfig = DeployConfig()
    strategies: dict[str, dict[str, Any]] = {}
    auto: AutoConfig = AutoConfig()

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


def load_config(path: str | Path, max_bytes: int = MAX_CONFIG_BYTES) -> ExperimentConfig:
    """Read and validate a YAML config file of at most ``max_bytes`` (aliases bounded, see
    :mod:`fedfit.bounded`)."""
    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"config: file not found: {p}")
    return parse_config(load_yaml(read_text(p, max_bytes, "config"), str(p)) or {})


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
