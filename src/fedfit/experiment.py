"""Build an experiment from a validated config: the one place where objects are wired.

``build`` turns an :class:`~fedfit.config.ExperimentConfig` into live objects (data, fleet,
planner, orchestrator); :mod:`fedfit.runner` drives them and writes the run directory.
"""

from __future__ import annotations

import gc
import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass


from fedfit.autoconfig import label_counts
from fedfit.autoconfig import resolve as resolve_auto
from fedfit.automode import ModeSwitch
from fedfit.autorevise import AutoReviser, auto_reviser
from fedfit.config import ExperimentConfig
from fedfit.data import FederatedData, build_federated_data
from fedfit.data.stream import DataStream
from fedfit.devices import Registry
from fedfit.models import ModelSpec
from fedfit.orchestration.asynchronous import AsyncOrchestrator
from fedfit.orchestration.submodels import SubModelExchange
from fedfit.orchestration.sync import SyncOrchestrator
from fedfit.security.builders import attack_spec
from fedfit.sources import UserSources, exchange, model_spec, user_data
from fedfit.policy.auto import AutoDecision
from fedfit.policy.auto_switch import window as stall_window
from fedfit.policy.width import WidthPlanner
from fedfit.simulation.batched import BatchedExecutor
from fedfit.simulation.executors import Executor, LocalExecutor, ProcessPoolExecutor
from fedfit.simulation.fleet import SimulatedFleet
from fedfit.simulation.workload import Workload, WorkloadRecipe
from fedfit.types import Params
from fedfit.inputs import (
    LAZY_TRACES_ABOVE, cost_inputs, data_kwargs, fleet_profiles, fleet_traces, initial_params, stream_spec,
)
from fedfit.planner_stack import _dynamic_planner
from fedfit.orchestrator_wiring import orchestrate


@dataclass
class Experiment:
    """Live objects of one experiment."""

    config: ExperimentConfig
    workload: Workload
    fleet: SimulatedFleet
    orchestrator: SyncOrchestrator | AsyncOrchestrator | ModeSwitch
    executor: Executor
    initial_params: Params
    spec: ModelSpec | None = None
    submodels: SubModelExchange | None = None
    width: WidthPlanner | None = None
    registry: Registry | None = None
    auto: AutoDecision | None = None
    stream: DataStream | None = None
    reviser: AutoReviser | None = None

    @property
    def data(self) -> FederatedData:
        return self.workload.data


def _executor(config: ExperimentConfig, recipe: WorkloadRecipe, workload: Workload) -> Executor:
    if config.simulation.executor == "process":
        return ProcessPoolExecutor(recipe, config.simulation.workers)
    if config.simulation.executor == "batched":
        return BatchedExecutor(workload)
    if config.simulation.executor == "ray":
        from fedfit.simulation.ray_executor import RayExecutor  # Ray is an optional extra

        return RayExecutor(recipe, config.simulation.workers, config.simulation.ray_address)
    return LocalExecutor(workload)


def build(config: ExperimentConfig, sources: UserSources | None = None) -> Experiment:
    """Build every object of an experiment from its config (and the user's model and data).

    Raises:
        ConfigError / DataError: the config names something that does not exist.
    """
    profiles = fleet_profiles(config)
    recipe_data = tuple(sorted(data_kwargs(config).items()))
    own = user_data(config, sources)
    data = own if own is not None else build_federated_data(**dict(recipe_data))
    spec = model_spec(config, data, sources)
    optimizer, costs, memory = cost_inputs(config, spec)
    recipe = WorkloadRecipe(spec, recipe_data, config.seed, optimizer, attack=attack_spec(config, profiles),
                            stream=stream_spec(config, profiles), data=own)
    workload = Workload(recipe, data)
    initial = initial_params(config, spec)
    executor = _executor(config, recipe, workload)
    num_examples = [len(d) for d in data.train]
    traces = fleet_traces(config, profiles)
    states = [tr.state_at(0.0) for tr in traces] if config.auto.enabled else []
    chosen, auto = resolve_auto(config, profiles, states, num_examples, costs, memory,
                                label_counts(data) if config.auto.enabled else None)
    config, asked = chosen, config
    dynamic = _dynamic_planner(config, costs, memory, num_examples)
    stream = workload.stream
    fleet = SimulatedFleet(profiles=profiles, traces=traces,
                           num_examples=num_examples, costs=costs, memory=memory,
                           executor=executor, adapter=dynamic, examples_at=stream.size if stream else None)
    submodels = exchange(spec, config.width.indices, config.seed)
    sizes: Callable[[float], list[int]] = (lambda now_s: [stream.size(d, now_s) for d in range(len(profiles))]) \
        if stream else (lambda now_s: num_examples)
    orchestrator, planner, registry = orchestrate(
        config, fleet, workload, spec=spec, costs=costs, memory=memory, num_examples=num_examples,
        profiles=profiles, initial=initial, dynamic=dynamic, submodels=submodels, sizes=sizes)
    reviser = auto_reviser(config, auto)
    driver: SyncOrchestrator | AsyncOrchestrator | ModeSwitch = orchestrator
    if isinstance(orchestrator, SyncOrchestrator):
        orchestrator.reviser = reviser
    elif auto is not None and config.auto.switch_on_stall:
        sync_config, sync_auto = resolve_auto(asked, profiles, states, num_examples, costs, memory,
                                              label_counts(data), mode="sync")
        sync, _, _ = orchestrate(
            sync_config, fleet, workload, spec=spec, costs=costs, memory=memory, num_examples=num_examples,
            profiles=profiles, initial=initial, dynamic=_dynamic_planner(sync_config, costs, memory, num_examples),
            submodels=submodels, sizes=sizes, registry=registry)
        assert isinstance(sync, SyncOrchestrator) and sync_auto is not None
        reviser = sync.reviser = auto_reviser(sync_config, sync_auto)
        trainable = sum(1 for t in auto.task_times if math.isfinite(t))
        driver = ModeSwitch(orchestrator, sync, stall_window(trainable, auto.buffer_size), config.orchestration.rounds)
    if len(profiles) > LAZY_TRACES_ABOVE:
        # The fleet's millions of long-lived objects (profiles, registry entries) leave the
        # cyclic collector's scans, which would otherwise make every round's full collections
        # cost O(fleet).
        gc.freeze()
    return Experiment(config, workload, fleet, driver, executor, initial, spec, submodels, planner, registry,
                      auto=auto, stream=stream, reviser=reviser)


@contextmanager
def built(config: ExperimentConfig, sources: UserSources | None = None) -> Iterator[Experiment]:
    """:func:`build`, closing the executor afterwards."""
    exp = build(config, sources)
    try:
        yield exp
    finally:
        exp.executor.close()
