"""fedfit: federated learning fitted to every device of a heterogeneous fleet.

The public API: configuration, the run entry points, the message types and the pieces a user
composes (fleet, planner, orchestrator, aggregation).
"""

from fedfit.aggregation import Contribution, masked_weighted_average, weighting
from fedfit.config import ExperimentConfig, load_config, parse_config, with_overrides
from fedfit.cost import MemoryModel, ModelCost, measure, task_cost
from fedfit.data import FederatedData, build_federated_data
from fedfit.devices import TIERS, DeviceTrace, PsutilMonitor, Registry, TraceMonitor, generate_trace, tier
from fedfit.errors import ConfigError, DataError, FedfitError, PlanError, UpdateRejected
from fedfit.experiment import Experiment, RunResult, build, run
from fedfit.models import ModelSpec, build_model
from fedfit.orchestration.contract import Fleet
from fedfit.orchestration.sync import SyncConfig, SyncOrchestrator
from fedfit.policy import FixedPlanner, Planner, uniform_cohort
from fedfit.simulation.fleet import SimulatedFleet
from fedfit.types import (
    DeviceProfile, DeviceState, Failure, FailureCause, Link, RoundReport, TaskCost, TaskResult,
    Techniques, Thermal, TrainPlan, Update, UtilisationCurve,
)

__version__ = "0.1.0"

__all__ = [
    "TIERS", "ConfigError", "Contribution", "DataError", "DeviceProfile", "DeviceState", "DeviceTrace",
    "Experiment", "ExperimentConfig", "Failure", "FailureCause", "FedfitError", "FederatedData",
    "FixedPlanner", "Fleet", "Link", "MemoryModel", "ModelCost", "ModelSpec", "PlanError", "Planner",
    "PsutilMonitor", "Registry", "RoundReport", "RunResult", "SimulatedFleet", "SyncConfig",
    "SyncOrchestrator", "TaskCost", "TaskResult", "Techniques", "Thermal", "TraceMonitor", "TrainPlan", "Update",
    "UpdateRejected", "UtilisationCurve", "build", "build_federated_data", "build_model",
    "generate_trace", "load_config", "masked_weighted_average", "measure", "parse_config", "run",
    "task_cost", "tier", "uniform_cohort", "weighting", "with_overrides",
]
