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
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file
from torch import nn

from fedfit.errors import ConfigError, PlanError
from fedfit.report import atomic
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


def _read_spec(path: Path) -> tuple[dict[str, Any], ModelSpec]:
    """The JSON record in ``path`` and the model spec it names, checked by building the model.

    Raises:
        ConfigError: the file is unreadable, not JSON, or names no model the zoo can build.
    """
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
        spec = _spec_from(record)
        spec.build()
    except (OSError, UnicodeDecodeError, RecursionError) as exc:
        raise ConfigError(f"{path}: unreadable ({type(exc).__name__})") from None
    except (ConfigError, PlanError) as exc:
        raise ConfigError(f"{path}: {exc}") from None
    except (ValueError, KeyError, TypeError, AttributeError, IndexError, RuntimeError) as exc:
        raise ConfigError(f"{path}: damaged model description ({type(exc).__name__}: {str(exc)[:80]})") from None
    return record, spec


def _read_tensors(path: Path) -> dict[str, torch.Tensor]:
    try:
        return load_file(str(path))
    except (SafetensorError, OSError, ValueError, RuntimeError) as exc:
        raise ConfigError(f"{path}: damaged tensor file ({str(exc)[:80]})") from None


def _check_params(path: Path, spec: ModelSpec, params: dict[str, torch.Tensor], module: nn.Module | None = None) -> None:
    """Raise :class:`ConfigError` unless ``params`` fit the model ``spec`` builds, with finite values."""
    expected = (module or spec.build()).state_dict()
    if set(params) != set(expected):
        raise ConfigError(f"{path}: tensors do not fit the {spec.name} model its description names")
    for name, tensor in expected.items():
        if params[name].shape != tensor.shape:
            raise ConfigError(f"{path}: {name} has shape {tuple(params[name].shape)}, the model's is {tuple(tensor.shape)}")
        if params[name].is_floating_point() and not bool(params[name].isfinite().all()):
            raise ConfigError(f"{path}: {name} holds NaN or infinite values")


def _contiguous(params: Params) -> Params:
    return {k: v.detach().contiguous() for k, v in params.items()}


def save_model(run_dir: Path, spec: ModelSpec, params: Params, stats: ChannelStats | None) -> None:
    """Write the master model, its spec and the channel statistics into ``run_dir`` (each atomically)."""
    atomic.write_with(run_dir / "model.safetensors", lambda p: save_file(_contiguous(params), str(p)))
    atomic.write_text(run_dir / "model.json", json.dumps(_spec_record(spec), indent=2) + "\n")
    if stats is not None:
        scores = {f"scores.{k}": v for k, v in stats.scores.items()}
        atomic.write_with(run_dir / "channel_stats.safetensors", lambda p: save_file(
            _contiguous(scores), str(p), metadata={"updates": str(stats.updates)}))


def load_model(run_dir: Path) -> tuple[ModelSpec, Params, ChannelStats]:
    """The master model, its spec and channel statistics saved in ``run_dir``.

    Raises:
        ConfigError: the directory holds no saved model, or a damaged one (one line naming the file).
    """
    if not (run_dir / "model.safetensors").is_file() or not (run_dir / "model.json").is_file():
        raise ConfigError(f"RUN_DIR: {run_dir} holds no model.safetensors/model.json (not a finished run; "
                          "fedfit resume finishes a run killed after its last checkpoint)")
    _, spec = _read_spec(run_dir / "model.json")
    params = _read_tensors(run_dir / "model.safetensors")
    _check_params(run_dir / "model.safetensors", spec, params)
    stats_file = run_dir / "channel_stats.safetensors"
    stats = ChannelStats()
    if stats_file.is_file():
        raw = _read_tensors(stats_file)
        stats = ChannelStats({k.removeprefix("scores."): v for k, v in raw.items()})
        for name, score in stats.scores.items():
            if not score.is_floating_point() or not bool(score.isfinite().all()):
                raise ConfigError(f"{stats_file}: scores.{name} are not finite numbers")
    return spec, params, stats


def export_submodel(out_dir: Path, spec: ModelSpec, rate: float, module: nn.Module) -> Path:
    """Write ``module`` (the master's sub-model at ``rate``) as a standalone folder.

    The config names the architecture at its absolute width (``spec.width * rate``) without
    the scaler, so :func:`load_exported` rebuilds it from the zoo alone.
    """
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise ConfigError(f"--out: cannot create {out_dir} ({err.strerror or 'a file is in the way'})") from None
    atomic.write_with(out_dir / "model.safetensors", lambda p: save_file(_contiguous(module.state_dict()), str(p)))
    record = {**_spec_record(spec), "width": spec.width * rate, "scaler": False,
              "format": EXPORT_FORMAT, "master_rate": rate,
              "num_params": sum(p.numel() for p in module.parameters())}
    atomic.write_text(out_dir / "config.json", json.dumps(record, indent=2) + "\n")
    return out_dir


def load_exported(folder: Path | str) -> nn.Module:
    """The standalone sub-model in ``folder`` (a path or a string), in evaluation mode.

    Raises:
        ConfigError: the folder is not an exported sub-model.
    """
    folder = Path(folder)
    config = folder / "config.json"
    if not config.is_file():
        raise ConfigError(f"{folder}: no config.json (not an exported sub-model)")
    record, _ = _read_spec(config)
    if not isinstance(record, dict) or record.get("format") != EXPORT_FORMAT:
        raise ConfigError(f"{config}: not an exported sub-model of format {EXPORT_FORMAT!r}")
    spec = _spec_from(record)
    model = spec.build(track_norm_stats=spec.norm != "none")
    params = _read_tensors(folder / "model.safetensors")
    _check_params(folder / "model.safetensors", spec, params, model)
    model.load_state_dict(params)
    return model.eval()


def predict(model: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """Class predictions of a loaded sub-model."""
    with torch.no_grad():
        labels: torch.Tensor = model(x).argmax(1)
    return labels
