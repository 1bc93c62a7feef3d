"""The Python API, as short as the CLI: ``fedfit.run`` and ``fedfit.compare``.

A config is a YAML path, a plain mapping or an :class:`~fedfit.config.ExperimentConfig`;
``model`` and ``data`` may be Python objects (:class:`~fedfit.sources.UserSources`), which take
precedence over the config's ``model`` and ``data`` sections. A run returns a :class:`Result`
whose attributes are the fields of ``summary.json``::

    result = fedfit.run("examples/photo_app.yaml", model=my_builder, data=(train, test),
                        overrides={"orchestration.rounds": 5})
    print(result.final_accuracy, result.time_to_target_s)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fedfit.config import ExperimentConfig, load_config, parse_config, with_overrides
from fedfit.errors import ConfigError
from fedfit.models import ModelSpec
from fedfit.runner import OnRound
from fedfit.runner import run as run_config
from fedfit.sources import ModelBuilder, UserSources
from fedfit.strategies import apply_strategy
from fedfit.types import Params, RoundReport

#: What :func:`run` takes as a config.
ConfigLike = ExperimentConfig | Mapping[str, Any] | str | Path


@dataclass(frozen=True)
class Result:
    """A finished run: every ``summary.json`` field as an attribute, plus the run's objects.

    Attributes:
        summary: the summary, exactly as ``summary.json`` holds it.
        reports: one report per round.
        params: the trained master model's parameters.
        run_dir: where the run was written (``None``: nowhere).
        spec: the model's spec (rebuilds the module: ``spec.build()``).
    """

    summary: dict[str, Any]
    reports: tuple[RoundReport, ...]
    params: Params
    run_dir: Path | None = None
    spec: ModelSpec | None = None

    def __getattr__(self, name: str) -> Any:
        """A summary field, e.g. ``result.final_accuracy``.

        Raises:
            AttributeError: the summary has no such field.
        """
        summary = object.__getattribute__(self, "summary")
        if name in summary:
            return summary[name]
        raise AttributeError(f"Result has no field '{name}' (fields: {', '.join(sorted(summary))})")

    def __dir__(self) -> list[str]:
        return sorted({*super().__dir__(), *self.summary})


def as_config(config: ConfigLike, overrides: Mapping[str, Any] | None = None) -> ExperimentConfig:
    """A validated config from a path, a mapping or a config, with dotted-key ``overrides``.

    Raises:
        ConfigError: one line naming the first offending key.
    """
    if isinstance(config, ExperimentConfig):
        parsed = config
    elif isinstance(config, str | Path):
        parsed = load_config(config)
    elif isinstance(config, Mapping):
        parsed = parse_config(dict(config))
    else:
        raise ConfigError(f"config: expected a YAML path, a mapping or an ExperimentConfig, got {type(config).__name__}")
    return with_overrides(parsed, dict(overrides)) if overrides else parsed


def run(config: ConfigLike, *, model: ModelBuilder | None = None, data: Any = None,
        overrides: Mapping[str, Any] | None = None, run_dir: str | Path | None = None,
        on_round: OnRound | None = None) -> Result:
    """Run one experiment to the end.

    Args:
        config: a YAML path, a mapping of sections, or an :class:`ExperimentConfig`.
        model: a callable returning your ``nn.Module`` (it receives ``input_shape``,
            ``num_classes`` and ``width`` where its signature names them).
        data: a loader returning ``(train, test)``; ``(train, test)``; a mapping
            ``device id -> data``; or a directory of per-device ``.npz`` files. Each data set is
            ``(x, y)`` arrays or a torch ``Dataset`` of ``(x, y)`` pairs.
        overrides: dotted-key overrides, e.g. ``{"orchestration.rounds": 5}``.
        run_dir: where to write the run directory (``None``: write nothing).
        on_round: called after each round.

    Raises:
        ConfigError / DataError: one line naming what does not fit.
    """
    cfg = as_config(config, overrides)
    out = run_config(cfg, Path(run_dir) if run_dir is not None else None, on_round,
                     sources=UserSources(model, data))
    return Result(out.summary, out.reports, out.params, out.run_dir, out.spec)


def compare(config: ConfigLike, strategies: Sequence[str], *, model: ModelBuilder | None = None, data: Any = None,
            overrides: Mapping[str, Any] | None = None, run_dir: str | Path | None = None) -> dict[str, Result]:
    """Run several strategies (names of ``fedfit compare``) on the same fleet, data and seed.

    Args:
        strategies: built-in strategy names or those of the config's ``strategies:`` section.
        run_dir: each strategy's run goes to ``run_dir/<strategy>`` (``None``: write nothing).

    Returns:
        One result per strategy, in the order given.

    Raises:
        ConfigError: an unknown strategy, or an override that does not fit.
    """
    base = as_config(config, overrides)
    configs = {name: apply_strategy(base, name) for name in strategies}
    root = Path(run_dir) if run_dir is not None else None
    return {name: run(cfg, model=model, data=data, run_dir=root / name if root else None)
            for name, cfg in configs.items()}
