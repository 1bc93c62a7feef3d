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

    dataset: Literal["fashion_mnist", "digits", "synthetic"] = "fashion_mnist"
    path: str = "/usr/share/datasets/fashion-mnist"
    partition: PartitionConfig = PartitionConfig()
    synthetic: SyntheticConfig = SyntheticConfig()
    max_train_samples: PositiveInt | None = 12000
    max_test_samples: PositiveInt | None = 2000
    local_test_fraction: Annotated[float, Field(ge=0.0, lt=1.0)] = 0.1


class ModelConfig(_Section):
    """Architecture from the zoo and its width multiplier."""

    name: Literal["logreg", "mlp", "cnn"] = "cnn"
    width: Annotated[float, Field(gt=0.0, le=1.0)] = 1.0


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
    optimizer: Literal["sgd", "adam"] = "sgd"


class OrchestrationConfig(_Section):
    """Round structure."""

    mode: Literal["sync"] = "sync"
    rounds: PositiveInt = 30
    clients_per_round: PositiveInt = 10
    over_selection: Annotated[float, Field(ge=0)] = 0.0
    deadline_s: Annotated[float, Field(gt=0)] | None = None
    weighting: Literal["samples", "examples", "uniform"] = "samples"


class EvaluationConfig(_Section):
    """When and against what the global model is evaluated."""

    every: PositiveInt = 1
    target_accuracy: Fraction = 0.70


class SimulationConfig(_Section):
    """How device training is executed (never changes virtual times or results)."""

    executor: Literal["local", "process"] = "local"
    workers: PositiveInt = 2


class OutputConfig(_Section):
    """Where the run directory goes and what it holds."""

    dir: str = "runs"
    plots: bool = True
    progress: bool = True


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
    """Memory-constrained training: which techniques, for which devices."""

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
    memory: MemoryConfig = MemoryConfig()
    strategies: dict[str, dict[str, Any]] = {}

    @property
    def num_devices(self) -> int:
        """Devices in the fleet."""
        return sum(self.fleet.tiers.values())


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
