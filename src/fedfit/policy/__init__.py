"""Pure decisions: who trains (selection) and what each device does (planning)."""

from fedfit.policy.batch_planner import DynamicBatchPlanner
from fedfit.policy.batching import BatchDecision, BatchingRules, decide_batch, initial_batch
from fedfit.policy.planning import FixedPlanner, Planner
from fedfit.policy.selection import readiness_cohort, uniform_cohort

__all__ = [
    "BatchDecision", "BatchingRules", "DynamicBatchPlanner", "FixedPlanner", "Planner", "decide_batch",
    "initial_batch", "readiness_cohort", "uniform_cohort",
]
