"""Model files: the master model a run leaves behind, and standalone exported sub-models.

A run directory holds ``model.safetensors`` (the master's parameters), ``model.json`` (its
:class:`~fedfit.models.ModelSpec`) and ``channel_stats.safetensors`` (per-unit update
magnitudes). ``fedfit export`` writes a sub-model folder — ``model.safetensors`` plus a small
``config.json`` naming the zoo architecture at its absolute width — that
:func:`load_exported` turns back into a module with nothing of the master needed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file, save_file
from torch import nn

from fedfit.errors import ConfigError
from fedfit.models import ModelSpec
from fedfit.models.custom import ModelFactory
from fedfit.models.channel_stats import ChannelStats
from fedfit.types import Params

EXPORT_FORMAT = "fedfit-submodel/1"


def _spec_record(spec: ModelSpec) -> dict[str, Any]:
    user = {"factory": spec.factory.label, "kwargs": spec.factory.kwargs} if spec.factory else {}
    return {"name": spec.name, "input_shape": list(spec.input_shape), "num_classes": spec.num_classes,
            "width": spec.width, "norm": spec.norm, "scaler": spec.scaler, **user}


def _spec_from(record: dict[str, Any]) -> ModelSpec:
    factory = ModelFactory.of(record["factory"], record.get("kwargs")) if "factory" in record else None
    return ModelSpec(record["name"], tuple(record["input_shape"]), int(record["num_classes"]),
                     float(record["width"]), record.get("norm", "none"), bool(record.get("scaler", False)), factory)


def _contiguous(params: Params) -> Params:
    return {k: v.detach().contiguous() for k, v in params.items()}


def save_model(run_dir: Path, spec: ModelSpec, params: Params, stats: ChannelStats | None) -> None:
    """Write the master model, its spec and the channel statistics into ``run_dir``."""
    save_file(_contiguous(params), str(run_dir / "model.safetensors"))
    (run_dir / "model.json").write_text(json.dumps(_spec_record(spec), indent=2) + "\n")
    if stats is not None:
        scores = {f"scores.{k}": v for k, v in stats.scores.items()}
        save_file(_contiguous(scores), str(run_dir / "channel_stats.safetensors"),
                  metadata={"updates": str(stats.updates)})


def load_model(run_dir: Path) -> tuple[ModelSpec, Params, ChannelStats]:
    """The master model, its spec and channel statistics saved in ``run_dir``.

    Raises:
        ConfigError: the directory holds no saved model.
    """
    if not (run_dir / "model.safetensors").is_file() or not (run_dir / "model.json").is_file():
        raise ConfigError(f"RUN_DIR: {run_dir} holds no model.safetensors/model.json (not a finished run)")
    spec = _spec_from(json.loads((run_dir / "model.json").read_text()))
    params = load_file(str(run_dir / "model.safetensors"))
    stats_file = run_dir / "channel_stats.safetensors"
    stats = ChannelStats()
    if stats_file.is_file():
        raw = load_file(str(stats_file))
        stats = ChannelStats({k.removeprefix("scores."): v for k, v in raw.items()})
    return spec, params, stats


def export_submodel(out_dir: Path, spec: ModelSpec, rate: float, module: nn.Module) -> Path:
    """Write ``module`` (the master's sub-model at ``rate``) as a standalone folder.

    The config names the architecture at its absolute width (``spec.width * rate``) without
    the scaler, so :func:`load_exported` rebuilds it from the zoo alone.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    save_file(_contiguous(module.state_dict()), str(out_dir / "model.safetensors"))
    record = {**_spec_record(spec), "width": spec.width * rate, "scaler": False,
              "format": EXPORT_FORMAT, "master_rate": rate,
              "num_params": sum(p.numel() for p in module.parameters())}
    (out_dir / "config.json").write_text(json.dumps(record, indent=2) + "\n")
    return out_dir


def load_exported(folder: Path) -> nn.Module:
    """The standalone sub-model in ``folder``, in evaluation mode.

    Raises:
        ConfigError: the folder is not an exported sub-model.
    """
    config = folder / "config.json"
    if not config.is_file():
        raise ConfigError(f"{folder}: no config.json (not an exported sub-model)")
    record = json.loads(config.read_text())
    if record.get("format") != EXPORT_FORMAT:
        raise ConfigError(f"{config}: format {record.get('format')!r}, expected {EXPORT_FORMAT!r}")
    spec = _spec_from(record)
    model = spec.build(track_norm_stats=spec.norm != "none")
    model.load_state_dict(load_file(str(folder / "model.safetensors")))
    return model.eval()


def predict(model: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """Class predictions of a loaded sub-model."""
    with torch.no_grad():
        labels: torch.Tensor = model(x).argmax(1)
    return labels
