"""Wiring a deployed run: the same planner, rule, selection and orchestrator as ``fedfit run``,
over a :class:`~fedfit.transport.fleet.NetworkFleet` of the devices that enrolled.

Each enrolled device's profile is its slot's catalogue tier (``fleet.tiers`` in config order,
or the tier the device named) with what the device measured on its host laid over it: RAM
(capped by ``--memory-limit``), cores and FLOP/s.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from dataclasses import dataclass

import torch

from fedfit.config import ExperimentConfig
from fedfit.cost import MemoryModel, ModelCost, TaskPredictor, measure
from fedfit.data import FederatedData
from fedfit.devices import Registry
from fedfit.devices.realistic import catalogue
from fedfit.planner_stack import dynamic_planner
from fedfit.inputs import data_kwargs, fleet_profiles, initial_params
from fedfit.orchestrator_wiring import orchestrate
from fedfit.sources import exchange, model_spec
from fedfit.models import ModelSpec
from fedfit.orchestration.asynchronous import AsyncOrchestrator
from fedfit.orchestration.cohort import enrol
from fedfit.orchestration.submodels import SubModelExchange
from fedfit.orchestration.sync import SyncOrchestrator
from fedfit.simulation.workload import Workload, WorkloadRecipe
from fedfit.training import OptimizerConfig
from fedfit.transport.fleet import NetworkFleet
from fedfit.transport.messages import ProfileReport
from fedfit.types import DeviceProfile, Params


def device_profile(config: ExperimentConfig, slot: int, report: ProfileReport) -> DeviceProfile:
    """Slot ``slot``'s profile: its tier's values with the host's measurements laid over."""
    builtin = catalogue(config.fleet.catalogue)
    base = builtin[report.tier] if report.tier is not None and report.tier in builtin else fleet_profiles(config)[slot]
    memory = report.memory_limit_bytes or report.total_memory_bytes
    return dataclasses.replace(base, total_memory_bytes=min(report.total_memory_bytes, memory),
                               training_memory_bytes=memory, flops_per_s=report.flops_per_s,
                               cpu_cores=report.cpu_cores)


@dataclass
class Deployed:
    spec: ModelSpec
    workload: Workload
    orchestrator: SyncOrchestrator | AsyncOrchestrator
    submodels: SubModelExchange
    registry: Registry


def assemble(config: ExperimentConfig, fleet_: NetworkFleet, profiles: list[DeviceProfile],
             num_examples: list[int], data: FederatedData) -> Deployed:
    """The orchestrator of ``config`` over ``fleet_`` (``data``: the config's, for evaluation): the
    same registry, planner stack, rule and orchestrator as ``fedfit run`` (:func:`fedfit.orchestrator_wiring.orchestrate`)."""
    t = config.training
    recipe_data = tuple(sorted(data_kwargs(config).items()))
    spec = model_spec(config, data, None)
    optimizer = OptimizerConfig(t.momentum, t.weight_decay, kind=t.optimizer, proximal_mu=t.proximal_mu)
    workload = Workload(WorkloadRecipe(spec, recipe_data, config.seed, optimizer), data)
    costs: Callable[[float], ModelCost] = functools.partial(measure, spec)
    memory = MemoryModel(optimizer_slots=optimizer.slots, workspace_bytes=config.memory.workspace_bytes,
                         step_temporaries=optimizer.step_temporaries)
    submodels = exchange(spec, config.width.indices, config.seed)  # a user module without width groups: none
    dynamic = dynamic_planner(config, costs, memory, num_examples)
    orchestrator, _, registry = orchestrate(
        config, fleet_, workload, spec=spec, costs=costs, memory=memory, num_examples=num_examples,
        profiles=profiles, initial=initial_params(config, spec), dynamic=dynamic, submodels=submodels)
    if orchestrator.cohort is not None and orchestrator.cohort.batch_readiness is not None:
        # selection reads the devices' own answers to the readiness query where simulation asks the policy
        orchestrator.cohort = dataclasses.replace(
            orchestrator.cohort, batch_readiness=fleet_.batch_readiness(orchestrator.cohort.batch_readiness))
    return Deployed(spec, workload, orchestrator, submodels, registry)
