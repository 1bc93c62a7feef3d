"""Validated experiment configuration: YAML in, one frozen config tree out, clear errors.

Every key is declared in this package, one module of sections per domain (:mod:`.sections`,
:mod:`.techniques`, :mod:`.security`, :mod:`.dynamite`, :mod:`.deploy`); an unknown key, a wrong
type or an impossible value raises :class:`~fedfit.errors.ConfigError` with a one-line message
naming the dotted key.
"""

from __future__ import annotations

import types
import typing
from pathlib import Path
from typing import Annotated, Any, cast

from pydantic import BaseModel, Field, ValidationError

from fedfit.bounded import MAX_CONFIG_BYTES, load_yaml, read_text
from fedfit.errors import ConfigError
from fedfit.config.base import Section
from fedfit.config.deploy import DeployConfig
from fedfit.config.dynamite import DynamiteConfig
from fedfit.config.security import AttackConfig, PrivacyConfig
from fedfit.config.aggregation import AggregationConfig
from fedfit.config.sections import (
    AsyncSection, AutoConfig, BatchingConfig, DataConfig, EvaluationConfig, FleetConfig,
    LocalWorkConfig, ModelConfig, OrchestrationConfig, OutputConfig, SelectionConfig, SimulationConfig,
    TrainingConfig,
)
from fedfit.config.techniques import MemoryConfig, WidthConfig

__all__ = ["ExperimentConfig", "default_scenario", "load_config", "parse_config", "with_overrides"]


class ExperimentConfig(Section):
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
    server inviting ready devices first; the small CNN on the ``scaled`` tier catalogue, whose
    budgets are calibrated so the phones train seed 000's batches 32 / 16 / 8."""
    return ExperimentConfig(name="photo_app", batching=BatchingConfig(mode="dynamic", selection="readiness"),
                            fleet=FleetConfig(catalogue="scaled"))


def _first_error(err: ValidationError) -> str:
    errors = err.errors()
    e = errors[0]
    loc, tagged = _key_loc(e["loc"])
    key = ".".join(loc) or "config"
    msg = e["msg"].removeprefix("Value error, ")
    if e["type"] == "extra_forbidden":
        return f"{key}: unknown key"
    if tagged:  # a key of several types (``'auto'`` or a number): what each of them wants
        msg = ", or ".join([msg] + [o["msg"].removeprefix("Input should be ")
                                    for o in errors[1:] if _key_loc(o["loc"]) == (loc, True)])
    got = e.get("input")
    shown = "" if isinstance(got, dict | list) or got is None else f" (got {got!r})"
    return f"{key}: {msg}{shown}"


def _key_loc(loc: tuple[int | str, ...]) -> tuple[tuple[str, ...], bool]:
    """``loc`` without pydantic's tag of a union's member (``constrained-int``, ``literal[...]``),
    found by walking the config's annotations, and whether it had one."""
    node: Any = ExperimentConfig
    out: list[str] = []
    for part in loc:
        if node is None:  # the union member's tag
            return tuple(out), True
        out.append(str(part))
        node = _child(node, part)
    return tuple(out), False


def _child(annotation: Any, part: int | str) -> Any:
    """The annotation of ``annotation``'s member ``part``; ``None`` for a union of several types
    (pydantic's next location is then the member's tag), ``Any`` where the walk cannot tell."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        field = annotation.model_fields.get(str(part))
        annotation = Any if field is None else field.annotation
    elif typing.get_origin(annotation) is dict:
        annotation = typing.get_args(annotation)[1]
    elif typing.get_origin(annotation) in (list, tuple):
        annotation = typing.get_args(annotation)[0]
    else:
        return Any
    while typing.get_origin(annotation) is Annotated:
        annotation = typing.get_args(annotation)[0]
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        options = [a for a in typing.get_args(annotation) if a is not type(None)]
        return None if len(options) > 1 else options[0]
    return annotation


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
        node, annotation = raw, cast(Any, ExperimentConfig)
        *parents, leaf = dotted.split(".")
        for depth, part in enumerate(parents):
            annotation = _child(annotation, part)
            section_type = isinstance(annotation, type) and issubclass(annotation, BaseModel)
            if part in node and node[part] is None and section_type:
                section, rest = ".".join(parents[:depth + 1]), ".".join([*parents[depth + 1:], leaf])
                raise ConfigError(f"{dotted}: {section} is null (off); give the whole section, "
                                  f"e.g. {section}={{{rest}: {value!r}}}")
            if not isinstance(node.get(part), dict):
                raise ConfigError(f"{dotted}: unknown key")
            node = node[part]
        if leaf not in node:
            raise ConfigError(f"{dotted}: unknown key")
        node[leaf] = value
        if isinstance(value, dict):  # a section given whole: its defaults filled in for the keys after it
            raw = parse_config(raw).model_dump()
    return parse_config(raw)
