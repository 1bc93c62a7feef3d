"""fedfit: federated learning fitted to every device of a heterogeneous fleet.

The public API: configuration, the run entry points, the message types and the pieces a user
composes (fleet, planner, orchestrator, aggregation). Names load on first use (PEP 562), so
``import fedfit`` and the command line start without importing torch until they need it, and
a Ctrl-C during start-up is answered in one line (:mod:`fedfit.entry`).
"""

from __future__ import annotations

import importlib as _importlib
import typing as _typing

if _typing.TYPE_CHECKING:
    from fedfit.aggregation import AggregationRule, Contribution, aggregate, masked_weighted_average, weighting
    from fedfit.config import ExperimentConfig, load_config, parse_config, with_overrides
    from fedfit.cost import MemoryModel, ModelCost, measure, task_cost
    from fedfit.data import FederatedData, build_federated_data
    from fedfit.devices import TIERS, DeviceTrace, PsutilMonitor, Registry, TraceMonitor, generate_trace, tier
    from fedfit.errors import CheckpointError, ConfigError, DataError, FedfitError, PlanError, UpdateRejected
    from fedfit.experiment import Experiment, build
    from fedfit.runner import RunResult, resume
    from fedfit.api import Result, compare, run
    from fedfit.sources import UserSources
    from fedfit.models import ModelSpec, build_model
    from fedfit.models.coordinates import CoordinateMap, WidthGroup
    from fedfit.orchestration.asynchronous import AsyncConfig, AsyncOrchestrator, AsyncState
    from fedfit.orchestration.contract import Fleet
    from fedfit.orchestration.submodels import SubModelExchange
    from fedfit.orchestration.sync import SyncConfig, SyncOrchestrator, SyncState
    from fedfit.policy import (
        BatchDecision, BatchingRules, DynamicBatchPlanner, FixedPlanner, Planner, decide_batch, uniform_cohort,
    )
    from fedfit.policy.width import WidthPlanner, WidthPolicy
    from fedfit.report.model_file import load_exported
    from fedfit.simulation.fleet import SimulatedFleet
    from fedfit.types import (
        BatchRule, DeviceProfile, DeviceState, Failure, FailureCause, Link, RoundReport, TaskCost, TaskResult,
        Techniques, Thermal, TrainPlan, Update, UtilisationCurve,
    )

#: Where each public name lives.
_HOMES: dict[str, str] = {
    "AggregationRule": "fedfit.aggregation",
    "Contribution": "fedfit.aggregation",
    "aggregate": "fedfit.aggregation",
    "masked_weighted_average": "fedfit.aggregation",
    "weighting": "fedfit.aggregation",
    "ExperimentConfig": "fedfit.config",
    "load_config": "fedfit.config",
    "parse_config": "fedfit.config",
    "with_overrides": "fedfit.config",
    "MemoryModel": "fedfit.cost",
    "ModelCost": "fedfit.cost",
    "measure": "fedfit.cost",
    "task_cost": "fedfit.cost",
    "FederatedData": "fedfit.data",
    "build_federated_data": "fedfit.data",
    "TIERS": "fedfit.devices",
    "DeviceTrace": "fedfit.devices",
    "PsutilMonitor": "fedfit.devices",
    "Registry": "fedfit.devices",
    "TraceMonitor": "fedfit.devices",
    "generate_trace": "fedfit.devices",
    "tier": "fedfit.devices",
    "CheckpointError": "fedfit.errors",
    "ConfigError": "fedfit.errors",
    "DataError": "fedfit.errors",
    "FedfitError": "fedfit.errors",
    "PlanError": "fedfit.errors",
    "UpdateRejected": "fedfit.errors",
    "Experiment": "fedfit.experiment",
    "build": "fedfit.experiment",
    "RunResult": "fedfit.runner",
    "resume": "fedfit.runner",
    "Result": "fedfit.api",
    "compare": "fedfit.api",
    "run": "fedfit.api",
    "UserSources": "fedfit.sources",
    "ModelSpec": "fedfit.models",
    "build_model": "fedfit.models",
    "CoordinateMap": "fedfit.models.coordinates",
    "WidthGroup": "fedfit.models.coordinates",
    "AsyncConfig": "fedfit.orchestration.asynchronous",
    "AsyncOrchestrator": "fedfit.orchestration.asynchronous",
    "AsyncState": "fedfit.orchestration.asynchronous",
    "Fleet": "fedfit.orchestration.contract",
    "SubModelExchange": "fedfit.orchestration.submodels",
    "SyncConfig": "fedfit.orchestration.sync",
    "SyncOrchestrator": "fedfit.orchestration.sync",
    "SyncState": "fedfit.orchestration.sync",
    "BatchDecision": "fedfit.policy",
    "BatchingRules": "fedfit.policy",
    "DynamicBatchPlanner": "fedfit.policy",
    "FixedPlanner": "fedfit.policy",
    "Planner": "fedfit.policy",
    "decide_batch": "fedfit.policy",
    "uniform_cohort": "fedfit.policy",
    "WidthPlanner": "fedfit.policy.width",
    "WidthPolicy": "fedfit.policy.width",
    "load_exported": "fedfit.report.model_file",
    "SimulatedFleet": "fedfit.simulation.fleet",
    "BatchRule": "fedfit.types",
    "DeviceProfile": "fedfit.types",
    "DeviceState": "fedfit.types",
    "Failure": "fedfit.types",
    "FailureCause": "fedfit.types",
    "Link": "fedfit.types",
    "RoundReport": "fedfit.types",
    "TaskCost": "fedfit.types",
    "TaskResult": "fedfit.types",
    "Techniques": "fedfit.types",
    "Thermal": "fedfit.types",
    "TrainPlan": "fedfit.types",
    "Update": "fedfit.types",
    "UtilisationCurve": "fedfit.types",
}

__version__ = "0.1.0"

__all__ = [
    "AggregationRule", "AsyncConfig", "AsyncOrchestrator", "AsyncState", "aggregate",
    "TIERS", "BatchDecision", "BatchRule", "BatchingRules", "DynamicBatchPlanner", "decide_batch",
    "ConfigError", "Contribution", "DataError", "DeviceProfile", "DeviceState", "DeviceTrace",
    "CoordinateMap", "SubModelExchange", "WidthGroup", "WidthPlanner", "WidthPolicy", "load_exported",
    "Experiment", "ExperimentConfig", "Failure", "FailureCause", "FedfitError", "FederatedData",
    "FixedPlanner", "Fleet", "Link", "MemoryModel", "ModelCost", "ModelSpec", "PlanError", "Planner",
    "PsutilMonitor", "Registry", "RoundReport", "RunResult", "SimulatedFleet", "SyncConfig",
    "SyncOrchestrator", "TaskCost", "TaskResult", "Techniques", "Thermal", "TraceMonitor", "TrainPlan", "Update",
    "UpdateRejected", "UtilisationCurve", "build", "build_federated_data", "build_model",
    "generate_trace", "load_config", "masked_weighted_average", "measure", "parse_config", "run",
    "task_cost", "tier", "uniform_cohort", "weighting", "with_overrides", "resume", "SyncState", "CheckpointError",
    "Result", "UserSources", "compare",
]


def __getattr__(name: str) -> _typing.Any:
    """Import a public name's module on first use (PEP 562)."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'fedfit' has no attribute {name!r}")
    value = getattr(_importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
