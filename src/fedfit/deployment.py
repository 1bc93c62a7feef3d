"""Runner for finished runs: evaluate the master per width, export a sub-model, suggest pruning.

Reads a run directory (``config.yaml``, ``model.safetensors``, ``model.json``,
``channel_stats.safetensors``); like :mod:`fedfit.experiment` it is an I/O edge, the
computations live in :mod:`fedfit.training.static_bn`, :mod:`fedfit.models.prune` and
:mod:`fedfit.report.model_file`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import torch

from fedfit.config import ExperimentConfig, load_config
from fedfit.data import FederatedData, build_federated_data
from fedfit.errors import ConfigError
from fedfit.orchestrator_wiring import calibration_inputs
from fedfit.inputs import data_kwargs
from fedfit.models import ModelSpec
from fedfit.models.channel_stats import ChannelStats
from fedfit.models.coordinates import width_groups
from fedfit.models.indices import sub_map
from fedfit.models.prune import GroupSuggestion, suggest_pruning
from fedfit.report.model_file import export_submodel, load_model
from fedfit.training.static_bn import EVAL_WIDTHS, WidthScore, calibrated, evaluate_widths
from fedfit.sources import user_data
from fedfit.types import Params


def _load(run_dir: Path) -> tuple[ExperimentConfig, ModelSpec, Params, ChannelStats]:
    if not run_dir.is_dir():
        raise ConfigError(f"RUN_DIR: no such directory: {run_dir}")
    config = load_config(run_dir / "config.yaml")
    spec, params, stats = load_model(run_dir)
    return config, spec, params, stats


def _data(config: ExperimentConfig) -> FederatedData:
    own = user_data(config, None)  # the config's loader or per-device files, when it names them
    return own if own is not None else build_federated_data(**data_kwargs(config))


def _choice(config: ExperimentConfig) -> str:
    return "importance" if config.width.indices == "importance" else "prefix"


def evaluate_run(run_dir: Path, widths: Sequence[float] = EVAL_WIDTHS) -> list[WidthScore]:
    """Accuracy, loss and parameter count of the run's master model at each width (only width 1
    for a model with no hidden dimension to scale, such as logistic regression)."""
    config, spec, params, stats = _load(run_dir)
    if not width_groups(spec.build(1.0)):
        widths = [w for w in widths if w == 1.0]
    data = _data(config)
    calib = calibration_inputs(data, config.width.calibration_samples, config.seed)
    test = data.global_test
    return evaluate_widths(spec, params, calib, test.x, test.y, widths=widths, choice=_choice(config),
                           scores=stats.scores)


def export_run(run_dir: Path, width: float, out_dir: Path) -> Path:
    """Write the run's sub-model at ``width`` as a standalone folder (static-BN calibrated).

    Raises:
        ConfigError: a width outside (0, 1]. PlanError: a width the model cannot take.
    """
    if not 0.0 < width <= 1.0:
        raise ConfigError(f"--width: must be in (0, 1], got {width}")
    config, spec, params, stats = _load(run_dir)
    sub = sub_map(spec, width, _choice(config), stats.scores).extract(params)
    calib = torch.empty(0)
    if spec.norm != "none":
        calib = calibration_inputs(_data(config), config.width.calibration_samples, config.seed)
    return export_submodel(out_dir, spec, width, calibrated(spec, width, sub, calib))


def prune_run(run_dir: Path, coverage: float = 0.9) -> tuple[list[GroupSuggestion], float]:
    """Per-group pruning suggestion and the suggested width, from the run's channel statistics."""
    if not 0.0 < coverage <= 1.0:
        raise ConfigError(f"--coverage: must be in (0, 1], got {coverage}")
    _, _, _, stats = _load(run_dir)
    if not stats.scores:
        raise ConfigError(f"RUN_DIR: {run_dir} has no channel statistics (model without hidden layers?)")
    return suggest_pruning(stats, coverage)
