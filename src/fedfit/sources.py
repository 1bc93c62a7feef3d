"""Where an experiment's model and data come from: the zoo and built-in data sets, or the user's.

The config names a user model (``model.factory``) and user data (``data.loader``,
``data.devices_dir``); Python callers may pass the objects themselves (:class:`UserSources`:
a model builder, and data as a loader, ``(train, test)``, a mapping ``device id -> data`` or a
directory of ``.npz`` files). This module turns either into the :class:`~fedfit.models.ModelSpec`
and :class:`~fedfit.data.FederatedData` the experiment is built from, checking them against each
other once, up front, so a mismatch is a one-line error and not a crash mid-run.
"""

from __future__ import annotations

import functools
import pickle
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

from fedfit.config import ExperimentConfig
from fedfit.data import FederatedData
from fedfit.data.user import Sources, device_sources, federate, npz_sources, split_sources
from fedfit.errors import ConfigError, DataError
from fedfit.models import ModelSpec
from fedfit.models.custom import ModelFactory, check_stages, import_target, probe_inputs
from fedfit.models.indices import width_counts
from fedfit.models.stages import stages_of
from fedfit.orchestration.submodels import SubModelExchange

#: A user's model builder: called with ``input_shape``, ``num_classes``, ``width`` where it names them.
ModelBuilder = Callable[..., nn.Module]


@dataclass(frozen=True)
class UserSources:
    """Model and data given as Python objects (they take precedence over the config's).

    Attributes:
        model: a callable returning an ``nn.Module`` (``None``: the config's).
        data: a loader returning ``(train, test)``; a pair ``(train, test)``; a mapping
            ``device id -> data``; a directory of per-device ``.npz`` files; or a ready
            :class:`FederatedData` (``None``: the config's). Each data set is ``(x, y)`` arrays
            or a torch ``Dataset`` of ``(x, y)`` items.
    """

    model: ModelBuilder | None = None
    data: Any = None


def _from_loader_output(out: Any, where: str) -> Sources:
    if isinstance(out, Mapping) and {"train", "test"} <= set(out):
        return split_sources(out["train"], out["test"])
    if isinstance(out, tuple | list) and len(out) == 2:
        return split_sources(out[0], out[1])
    raise DataError(f"{where}: must return (train, test) or {{'train': ..., 'test': ...}}, got {type(out).__name__}")


def _sources(config: ExperimentConfig, data: Any) -> Sources | FederatedData | None:
    d = config.data
    if data is None and d.loader is not None:
        return _from_loader_output(import_target(d.loader, "data.loader")(**d.loader_kwargs), f"data.loader {d.loader}")
    if data is None:
        return npz_sources(d.devices_dir) if d.devices_dir is not None else None
    if isinstance(data, FederatedData):
        return data
    if isinstance(data, str | Path):
        return npz_sources(data)
    if isinstance(data, Mapping) and not {"train", "test"} <= set(data):
        return device_sources(data)
    if callable(data):
        return _from_loader_output(data(**d.loader_kwargs), "data loader")
    return _from_loader_output(data, "data")


def user_data(config: ExperimentConfig, sources: UserSources | None) -> FederatedData | None:
    """The user's data split over the fleet, or ``None`` for a built-in data set.

    Raises:
        DataError / ConfigError: one line: see :func:`fedfit.data.user.federate`.
    """
    found = _sources(config, sources.data if sources else None)
    if found is None or isinstance(found, FederatedData):
        if found is not None and found.num_devices != config.num_devices:
            raise DataError(f"data: {found.num_devices} devices' data for a fleet of {config.num_devices} devices")
        return found
    d = config.data
    return federate(found, num_devices=config.num_devices, partition=d.partition.kind, seed=config.seed,
                    dirichlet_alpha=d.partition.alpha, shards_per_device=d.partition.shards_per_device,
                    max_train_samples=d.max_train_samples, max_test_samples=d.max_test_samples,
                    local_test_fraction=d.local_test_fraction, num_classes=d.num_classes)


def model_spec(config: ExperimentConfig, data: FederatedData, sources: UserSources | None) -> ModelSpec:
    """The zoo model the config names, or the user's, checked against the data and the techniques.

    Raises:
        ConfigError: one line naming the module: it does not build, its logits do not fit the
            data, or a configured technique needs something it does not offer.
    """
    m = config.model
    target: str | ModelBuilder | None = sources.model if sources and sources.model else m.factory
    if target is None:
        return ModelSpec(m.name, data.input_shape, data.num_classes, m.width, m.norm, config.width.scaler)
    if m.norm != "none":
        raise ConfigError("model.norm: applies to zoo models only; a user module brings its own norms")
    factory = ModelFactory.of(target, m.kwargs)
    if config.simulation.executor == "process" and not _picklable(target):
        raise ConfigError(f"simulation.executor: process workers cannot receive model {factory.label} (a lambda "
                          "or local function); use a module-level function, or executor: local")
    spec = ModelSpec(factory.label, data.input_shape, data.num_classes, m.width, "none", config.width.scaler, factory)
    module = spec.build()
    _check_logits(module, spec)
    w = config.width
    if (w.mode != "fixed" or w.fixed < 1.0) and not callable(getattr(module, "width_groups", None)):
        raise ConfigError(f"width.mode: model {spec.name} declares no width groups (width_groups()), "
                          "so it has no sub-models to train")
    if config.memory.mode != "off":
        check_stages(module, spec.input_shape, spec.name)
    return spec


def _picklable(obj: object) -> bool:
    try:
        pickle.dumps(obj)
    except (pickle.PicklingError, AttributeError, TypeError):
        return False
    return True


def _check_logits(module: nn.Module, spec: ModelSpec) -> None:
    try:
        with torch.no_grad():
            out = module.eval()(probe_inputs(spec.input_shape, 2))
    except (RuntimeError, TypeError, ValueError, IndexError) as exc:
        raise ConfigError(f"model {spec.name}: fails on inputs of shape {spec.input_shape} "
                          f"({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})") from None
    finally:
        module.train()
    if not isinstance(out, torch.Tensor) or tuple(out.shape) != (2, spec.num_classes):
        shape = tuple(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__
        raise ConfigError(f"model {spec.name}: returns {shape} for a batch of 2, "
                          f"needs (batch, {spec.num_classes}) logits for the data's {spec.num_classes} classes")


def num_stages(spec: ModelSpec) -> int:
    """Stages of ``spec``'s model (a user module's are checked against its forward first)."""
    module = spec.build()
    return check_stages(module, spec.input_shape, spec.name) if spec.factory else len(stages_of(module))


def _counts(spec: ModelSpec, width: float) -> dict[str, int]:
    return {} if width == 1.0 else width_counts(spec, width)


def exchange(spec: ModelSpec, indices: str, seed: int) -> SubModelExchange:
    """The sub-model exchange of ``spec``: none to slice for a module without width groups."""
    if callable(getattr(spec.build(), "width_groups", None)):
        return SubModelExchange.for_spec(spec, indices, seed)
    return SubModelExchange((), functools.partial(_counts, spec), indices, seed)
