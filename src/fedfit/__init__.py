"""fedfit: federated learning fitted to every device of a heterogeneous fleet.

The public API: configuration, the run entry points, the message types and the pieces a user
composes (fleet, planner, orchestrator, aggregation).
"""

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
