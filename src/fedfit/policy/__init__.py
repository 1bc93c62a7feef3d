"""Pure decisions: who trains (selection), what each device does (planning), how long (local work)."""

from fedfit.policy.backoff import Backoff
from fedfit.policy.batch_planner import DynamicBatchPlanner
from fedfit.policy.batching import BatchDecision, BatchingRules, decide_batch, initial_batch
from fedfit.policy.local_work import BudgetEpochsPlanner
from fedfit.policy.oort import OortSelector
from fedfit.policy.planning import FixedPlanner, Planner
from fedfit.policy.readiness import Deferral, Readiness, readiness
from fedfit.policy.selection import (
    DeferringSelector, ReadinessFirstSelector, Selector, UniformSelector, uniform_cohort,
)
from fedfit.policy.stratified import StratifiedSelector, TierFloorSelector, tier_quotas

__all__ = [
    "Backoff", "BatchDecision", "BatchingRules", "BudgetEpochsPlanner", "Deferral", "DeferringSelector",
    "DynamicBatchPlanner", "FixedPlanner", "OortSelector", "Planner", "Readiness", "Selector",
    "StratifiedSelector", "TierFloorSelector", "UniformSelector", "decide_batch", "initial_batch", "readiness",
    "ReadinessFirstSelector", "tier_quotas", "uniform_cohort",
]
