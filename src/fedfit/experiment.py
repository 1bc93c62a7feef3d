"""Build an experiment from a validated config: the one place where objects are wired.

``build`` turns an :class:`~fedfit.config.ExperimentConfig` into live objects (data, fleet,
planner, orchestrator); :mod:`fedfit.runner` drives them and writes the run directory.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace

from fedfit.automode import ModeSwitch
from fedfit.autorevise import AutoReviser
from fedfit.config import ExperimentConfig
from fedfit.data import FederatedData
from fedfit.data.stream import DataStream
from fedfit.devices import Registry
from fedfit.models import ModelSpec
from fedfit.orchestration.asynchronous import AsyncOrchestrator
from fedfit.orchestration.submodels import SubModelExchange
from fedfit.orchestration.sync import SyncOrchestrator
from fedfit.security.builders import attack_spec
from fedfit.sources import UserSources, exchange
from fedfit.policy.auto import AutoDecision
from fedfit.policy.width import WidthPlanner
from fedfit.simulation.batched import BatchedExecutor
from fedfit.simulation.cohort_cost import MEASURED
from fedfit.simulation.executors import Executor, LocalExecutor, ProcessPoolExecutor
from fedfit.simulation.fleet import SimulatedFleet
from fedfit.simulation.threaded import ThreadExecutor
from fedfit.simulation.threads import auto_executor
from fedfit.simulation.workload import Workload, WorkloadRecipe
from fedfit.types import Params
from fedfit.autorun import Resolved, driver, resolve
from fedfit.inputs import LAZY_TRACES_ABOVE, data_kwargs, initial_params, run_inputs, stream_spec
from fedfit.planner_stack import dynamic_planner
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
    if config.simulation.executor == "auto":
        chosen, workers = auto_executor(recipe.model.factory is None)
        return ThreadExecutor(workload, workers) if chosen == "threads" else LocalExecutor(workload)
    if config.simulation.executor == "process":
        return ProcessPoolExecutor(recipe, config.simulation.workers, workload, config.simulation.start_method)
    if config.simulation.executor == "batched":
        least = config.simulation.batched_min_cohort
        return BatchedExecutor(workload, min_cohort=None if least == "auto" else least,
                               costs=replace(MEASURED, **config.simulation.batched_costs.overrides()))
    if config.simulation.executor == "threads":
        return ThreadExecutor(workload, config.simulation.workers)
    if config.simulation.executor == "ray":
        from fedfit.simulation.ray_executor import RayExecutor  # Ray is an optional extra

        return RayExecutor(recipe, config.simulation.workers, config.simulation.ray_address)
    return LocalExecutor(workload)


#: Python's youngest-generation collection threshold (allocations) for fleets above ``LAZY_TRACES_ABOVE``.
BIG_FLEET_GC_THRESHOLD = 20_000


def build(config: ExperimentConfig, sources: UserSources | None = None,
          resolved: Resolved | None = None) -> Experiment:
    """Build every object of an experiment from its config (and the user's model and data).

    Args:
        resolved: ``config`` as auto resolved it already (:func:`fedfit.autorun.resolve_run`, a
            resume's check), with its data and traces; ``None``: resolved here.

    Raises:
        ConfigError / DataError: the config names something that does not exist.
    """
    assert resolved is None or resolved.asked == config
    inputs = resolved.inputs if resolved else run_inputs(config, sources)
    profiles, data, spec, costs, memory = inputs.profiles, inputs.data, inputs.spec, inputs.costs, inputs.memory
    recipe = WorkloadRecipe(spec, tuple(sorted(data_kwargs(config).items())), config.seed, inputs.optimizer,
                            attack=attack_spec(config, profiles), stream=stream_spec(config, profiles), data=inputs.own)
    workload = Workload(recipe, data)
    initial = initial_params(config, spec)
    executor = _executor(config, recipe, workload)
    num_examples = inputs.num_examples
    resolved = resolved or resolve(config, inputs)
    config = resolved.config
    dynamic = dynamic_planner(config, costs, memory, num_examples)
    stream = workload.stream
    fleet = SimulatedFleet(profiles=profiles, traces=resolved.traces,
                           num_examples=num_examples, costs=costs, memory=memory,
                           executor=executor, adapter=dynamic, examples_at=stream.size if stream else None)
    submodels = exchange(spec, config.width.indices, config.seed)
    sizes: Callable[[float], list[int]] = (lambda now_s: [stream.size(d, now_s) for d in range(len(profiles))]) \
        if stream else (lambda now_s: num_examples)
    orchestrator, planner, registry = orchestrate(
        config, fleet, workload, spec=spec, costs=costs, memory=memory, num_examples=num_examples,
        profiles=profiles, initial=initial, dynamic=dynamic, submodels=submodels, sizes=sizes)
    driven, reviser = driver(resolved, orchestrator, fleet, workload, initial, submodels, sizes, registry)
    if len(profiles) > LAZY_TRACES_ABOVE:
        # The fleet's millions of long-lived objects (profiles, registry entries) leave the
        # cyclic collector's scans, which would otherwise make every round's full collections
        # cost O(fleet).
        gc.freeze()
        # A round's thousands of short-lived containers (states, plans, results) would trigger a
        # young collection every 700 allocations; most die by reference counting before a rarer one.
        gc.set_threshold(max(gc.get_threshold()[0], BIG_FLEET_GC_THRESHOLD), *gc.get_threshold()[1:])
    return Experiment(config, workload, fleet, driven, executor, initial, spec, submodels, planner, registry,
                      auto=resolved.decision, stream=stream, reviser=reviser)


@contextmanager
def built(config: ExperimentConfig, sources: UserSources | None = None,
          resolved: Resolved | None = None) -> Iterator[Experiment]:
    """:func:`build`, closing the executor afterwards."""
    exp = build(config, sources, resolved)
    try:
        yield exp
    finally:
        exp.executor.close()
