"""Named strategies for ``fedfit compare``: each is a set of dotted config overrides.

Built-in names cover the baselines; a config's ``strategies:`` section adds or replaces names,
e.g. ``strategies: {small-batch: {training.batch_size: 8}}``.
"""

from __future__ import annotations

from typing import Any

from fedfit.config import ExperimentConfig, with_overrides
from fedfit.errors import ConfigError

BUILTIN: dict[str, dict[str, Any]] = {
    "fedavg": {},
    # a fixed batch everywhere: DYNAMITE, which sets each device's batch, off (it is off by default)
    **{f"fixed{b}": {"training.batch_size": b, "batching.mode": "fixed", "batching.selection": "uniform",
                     "dynamite.mode": "off"} for b in (32, 16, 8, 4)},
    "overselect": {"orchestration.over_selection": 0.3},
    "dynamic": {"batching.mode": "dynamic", "batching.selection": "uniform"},
    "dynamic-ready": {"batching.mode": "dynamic", "batching.selection": "readiness"},
    "dynamic-batchweight": {"batching.mode": "dynamic", "orchestration.weighting": "batch"},
    # dynamic width (seed 003): every device full width / the width all fit / its own width /
    # its own width with random units (federated dropout) / random levels / elastic global width
    "width-full": {"width.mode": "fixed", "width.fixed": 1.0, "width.indices": "prefix"},
    "width-common": {"width.mode": "common", "width.indices": "prefix"},
    "width-capability": {"width.mode": "capability", "width.indices": "prefix"},
    "width-dropout": {"width.mode": "capability", "width.indices": "random"},
    "width-random": {"width.mode": "random", "width.indices": "prefix"},
    "width-elastic": {"width.mode": "capability", "width.indices": "prefix", "width.elastic": True},
    # memory-constrained training (``memory:`` section): every device, or only those that need it
    "checkpointing": {"memory.mode": "all", "memory.techniques": ["checkpointing"]},
    "head-only": {"memory.mode": "all", "memory.techniques": ["selective"], "memory.selective.mode": "head"},
    "partial": {"memory.mode": "all", "memory.techniques": ["partial"]},
    "pruning": {"memory.mode": "all", "memory.techniques": ["pruning"]},
    "qat": {"memory.mode": "all", "memory.techniques": ["qat"]},
    "progressive": {"memory.mode": "all", "memory.techniques": ["progressive"]},
    "split": {"memory.mode": "all", "memory.techniques": ["split"]},
    "memory-auto": {"memory.mode": "auto"},
    # chosen from the fleet (fedfit.policy.auto); fedavg-tuned runs its grid in fedfit.tuning
    "auto": {"auto.enabled": True},
    # security (``attack:``, ``aggregation.robust``, ``privacy:``): defences, then attacks on 10% of the fleet
    "clip": {"aggregation.robust.clip": "adaptive"},
    "median": {"aggregation.robust.rule": "median"},
    "trimmed-mean": {"aggregation.robust.rule": "trimmed_mean"},
    "krum": {"aggregation.robust.rule": "krum"},
    "multi-krum": {"aggregation.robust.rule": "multi_krum"},
    "fltrust": {"aggregation.robust.rule": "fltrust"},
    "geomed": {"aggregation.robust.rule": "geometric_median"},
    "dp": {"privacy.central.enabled": True, "privacy.central.target_epsilon": 8.0,
           "aggregation.robust.rule": "mean", "aggregation.robust.clip": "none"},
    "secagg": {"privacy.secure_aggregation.enabled": True, "aggregation.robust.rule": "mean",
               "aggregation.robust.clip": "none"},
    "attack-scale": {"attack.kind": "scale", "attack.fraction": 0.1},
    "attack-signflip": {"attack.kind": "sign_flip", "attack.fraction": 0.1},
    "attack-random": {"attack.kind": "random", "attack.fraction": 0.1},
    "attack-labelflip": {"attack.kind": "label_flip", "attack.fraction": 0.1},
    "attack-backdoor": {"attack.kind": "backdoor", "attack.fraction": 0.1},
    # DYNAMITE (seed 001): the untuned baseline, then the co-optimised (τ, b) solvers
    "batch32-epoch1": {"training.batch_size": 32, "training.local_epochs": 1, "training.max_steps": None,
                       "batching.mode": "fixed", "dynamite.mode": "off"},
    "dynamite-closed": {"dynamite.mode": "closed_form", "dynamite.adapt": False},
    "dynamite-homogeneous": {"dynamite.mode": "homogeneous", "dynamite.adapt": False},
    "dynamite-hetero": {"dynamite.mode": "heterogeneous", "dynamite.adapt": False},
    "dynamite-online": {"dynamite.mode": "heterogeneous", "dynamite.adapt": True},
}

#: Strategies that are a procedure rather than a set of overrides (``fedfit compare`` runs them).
TUNED = "fedavg-tuned"


def strategy_names(config: ExperimentConfig) -> list[str]:
    """Every strategy name this config can use."""
    return sorted({*BUILTIN, TUNED, *config.strategies})


def apply_strategy(config: ExperimentConfig, name: str) -> ExperimentConfig:
    """``config`` with strategy ``name``'s overrides applied (the config's own names win).

    ``a+b`` applies strategy ``a``'s overrides, then ``b``'s (e.g. ``attack-scale+median``).

    Raises:
        ConfigError: unknown strategy, or an override that does not fit the config.
    """
    overrides = config.strategies.get(name)
    if overrides is None and name in BUILTIN:  # a built-in names its choices: auto only if it is auto
        overrides = {"auto.enabled": False, **BUILTIN[name]}
    if overrides is None and "+" in name:
        parts = [config.strategies.get(part, BUILTIN.get(part)) for part in name.split("+")]
        overrides = None if None in parts else {"auto.enabled": False,
                                                **{k: v for part in parts if part for k, v in part.items()}}
    if name == TUNED and overrides is None:
        raise ConfigError(f"--strategy: '{TUNED}' runs a grid of FedAvg configs; use fedfit compare")
    if overrides is None:
        raise ConfigError(f"--strategy: unknown strategy '{name}' (known: {', '.join(strategy_names(config))})")
    try:
        return with_overrides(config, overrides).model_copy(update={"name": f"{config.name}:{name}"})
    except ConfigError as err:
        raise ConfigError(f"strategies.{name}.{err}") from None
