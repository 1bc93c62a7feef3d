"""What a run is built from, read from its config: the data, the fleet's profiles and traces,
the model's measured costs and the starting model (:func:`fedfit.experiment.build` wires them)."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from fedfit.config import ExperimentConfig
from fedfit.cost import MemoryModel, ModelCost, measure
from fedfit.data import FederatedData, build_federated_data
from fedfit.data.stream import StreamSpec
from fedfit.devices import DeviceTrace, TraceParams, generate_traces, profile_from_mapping
from fedfit.devices.csv_trace import columns_from_start, load_csv_traces
from fedfit.devices.lazy_trace import LazyTrace
from fedfit.devices.lazy_traces import LazyTraces
from fedfit.devices.realistic import catalogue
from fedfit.errors import ConfigError
from fedfit.models import ModelSpec
from fedfit.overlap import Pending, started
from fedfit.cost.dp_memory import per_sample_gradient_costs
from fedfit.security.builders import local_dp
from fedfit.sources import UserSources, model_spec, user_data
from fedfit.training import OptimizerConfig
from fedfit.types import DeviceProfile, Params


def data_kwargs(config: ExperimentConfig) -> dict[str, Any]:
    """Arguments of :func:`fedfit.data.build_federated_data` for this config."""
    d = config.data
    return {
        "dataset": d.dataset, "num_devices": config.num_devices, "partition": d.partition.kind,
        "seed": config.seed, "path": d.path, "dirichlet_alpha": d.partition.alpha,
        "shards_per_device": d.partition.shards_per_device, "synthetic_alpha": d.synthetic.alpha,
        "synthetic_beta": d.synthetic.beta, "synthetic_iid": d.synthetic.iid,
        "max_train_samples": d.max_train_samples, "max_test_samples": d.max_test_samples,
        "local_test_fraction": d.local_test_fraction, "pool": d.pool,
    }


def fleet_profiles(config: ExperimentConfig) -> list[DeviceProfile]:
    """One profile per device: tiers in config order, device ids counting up."""
    builtin = catalogue(config.fleet.catalogue)
    custom = {name: profile_from_mapping(name, spec, tiers=builtin) for name, spec in config.fleet.custom_tiers.items()}
    profiles: list[DeviceProfile] = []
    for name, count in config.fleet.tiers.items():
        profile = custom[name] if name in custom else _builtin_tier(builtin, name)
        profiles.extend([profile] * count)
    return profiles


def _builtin_tier(builtin: Mapping[str, DeviceProfile], name: str) -> DeviceProfile:
    if name not in builtin:
        raise ConfigError(f"unknown device tier {name!r} (known: {', '.join(builtin)})")
    return builtin[name]


def stream_spec(config: ExperimentConfig, profiles: list[DeviceProfile]) -> StreamSpec | None:
    """The ``data.stream`` section as a :class:`StreamSpec` (each device at its tier's rate)."""
    st = config.data.stream
    if st is None:
        return None
    unknown = sorted(set(st.rate_by_tier) - {p.tier for p in profiles})
    if unknown:
        raise ConfigError(f"data.stream.rate_by_tier: no tier '{unknown[0]}' in the fleet")
    return StreamSpec(rate_per_s=tuple(st.rate_by_tier.get(p.tier, st.rate_per_s) for p in profiles),
                      buffer_size=st.buffer_size, replacement=st.replacement, initial=st.initial,
                      burst_every_s=st.burst_every_s, burst_size=st.burst_size, drift_at_s=st.drift_at_s,
                      seed=config.seed)


#: Above this many devices ``fleet.trace_model: auto`` computes states lazily.
LAZY_TRACES_ABOVE = 10_000
#: Bytes a device's whole-run trace arrays hold per grid step (five 8-byte and two 1-byte columns,
#: plus the 8-byte temperature where the device has a sensor): an upper bound.
TRACE_BYTES_PER_STEP = 50
#: Virtual seconds a generated trace covers before it wraps (:func:`generate_traces`' default).
TRACE_HORIZON_S = 172_800.0


def check_arrays_fit(devices: int, step_s: float, available_bytes: int) -> None:
    """Refuse ``fleet.trace_model: arrays`` when the fleet's trace arrays would take more than
    half the memory available now.

    Raises:
        ConfigError: naming the setting, the estimate and the lazy alternative.
    """
    need = devices * math.ceil(TRACE_HORIZON_S / step_s) * TRACE_BYTES_PER_STEP
    if need > available_bytes // 2:
        raise ConfigError(f"fleet.trace_model: arrays: {devices} devices' traces need about "
                          f"{need / 2**30:.1f} GiB ({need / devices / 1024:.0f} KiB a device at trace_step_s "
                          f"{step_s:g}), more than half the {available_bytes / 2**30:.1f} GiB available; "
                          f"use lazy or auto")


def fleet_traces(config: ExperimentConfig, profiles: list[DeviceProfile]) -> Sequence[DeviceTrace | LazyTrace]:
    """Seeded generated traces (per-step arrays or lazy, ``fleet.trace_model``), with the user's
    CSV traces laid over the named devices."""
    params = TraceParams(step_s=config.fleet.trace_step_s)
    model = config.fleet.trace_model
    for device in config.fleet.traces:
        if not 0 <= device < len(profiles):
            raise ConfigError(f"fleet.traces.{device}: no such device (fleet has {len(profiles)})")
    lazy = model == "lazy" or (model == "auto" and len(profiles) > LAZY_TRACES_ABOVE)
    if model == "arrays":
        import psutil  # a dependency; imported only where a run asks for whole-run arrays
        check_arrays_fit(len(profiles), params.step_s, int(psutil.virtual_memory().available))
    ids = list(config.fleet.traces) if lazy else list(range(len(profiles)))
    starts = {path: columns_from_start(path, config.fleet.max_trace_bytes) for path in set(config.fleet.traces.values())}
    replaced = [starts[config.fleet.traces[i]] if i in config.fleet.traces else frozenset[str]() for i in ids]
    generated = dict(zip(ids, generate_traces([profiles[i] for i in ids], ids, seed=config.seed, params=params,
                                              replaced=replaced), strict=True))
    csv = load_csv_traces(config.fleet.traces, generated, config.fleet.max_trace_bytes)
    if lazy:
        return LazyTraces(profiles, params, config.seed, overrides=csv)
    return [csv.get(i) or generated[i] for i in range(len(profiles))]


def cost_inputs(config: ExperimentConfig,
                spec: ModelSpec) -> tuple[OptimizerConfig, Callable[[float], ModelCost], MemoryModel]:
    """The run's optimiser, its model's measured costs per width, and the memory model over them."""
    t = config.training
    optimizer = OptimizerConfig(t.momentum, t.weight_decay, kind=t.optimizer, proximal_mu=t.proximal_mu,
                                local_dp=local_dp(config))
    costs: Callable[[float], ModelCost] = functools.partial(measure, spec)
    costs = per_sample_gradient_costs(costs) if config.privacy.local.enabled else costs
    memory = MemoryModel(optimizer_slots=optimizer.slots, workspace_bytes=config.memory.workspace_bytes,
                         step_temporaries=optimizer.step_temporaries)
    return optimizer, costs, memory


def initial_params(config: ExperimentConfig, spec: ModelSpec) -> Params:
    """The run's starting model, drawn from the config's seed (the same in simulation and deployment)."""
    torch.manual_seed(config.seed)
    return {k: v.detach().clone() for k, v in spec.build().state_dict().items()}


@dataclass(frozen=True)
class RunInputs:
    """The run's fleet profiles, data, model and costs: built once per run from its config.

    Attributes:
        own: the user's data (``sources``); ``None``: ``data`` is the config's dataset.
        num_examples: each device's training examples.
        traces: the fleet's traces (:func:`fleet_traces`), built on a thread while the data are
            read (:mod:`fedfit.overlap`); ``None``: not started.
    """

    profiles: list[DeviceProfile]
    data: FederatedData
    own: FederatedData | None
    spec: ModelSpec
    optimizer: OptimizerConfig
    costs: Callable[[float], ModelCost]
    memory: MemoryModel
    num_examples: list[int]
    traces: Pending[Sequence[DeviceTrace | LazyTrace]] | None = None


def run_inputs(config: ExperimentConfig, sources: UserSources | None = None) -> RunInputs:
    """The profiles, data (the user's or the config's), model spec and cost model of ``config``."""
    profiles = fleet_profiles(config)
    traces = started(fleet_traces, config, profiles)  # holds the GIL where reading the data releases it
    own = user_data(config, sources)
    data = own if own is not None else build_federated_data(**data_kwargs(config))
    spec = model_spec(config, data, sources)
    optimizer, costs, memory = cost_inputs(config, spec)
    return RunInputs(profiles, data, own, spec, optimizer, costs, memory, [len(d) for d in data.train], traces)
