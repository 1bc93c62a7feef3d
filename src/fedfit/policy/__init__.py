"""Pure decisions: who trains (selection), what each device does (planning), how long (local work)."""

from fedfit.policy.local_work import BudgetEpochsPlanner
from fedfit.policy.oort import OortSelector
from fedfit.policy.planning import FixedPlanner, Planner
from fedfit.policy.readiness import Deferral, Readiness, readiness
from fedfit.policy.selection import DeferringSelector, Selector, UniformSelector, uniform_cohort
from fedfit.policy.stratified import StratifiedSelector, tier_quotas

__all__ = [
    "BudgetEpochsPlanner", "Deferral", "DeferringSelector", "FixedPlanner", "OortSelector", "Planner",
    "Readiness", "Selector", "StratifiedSelector", "UniformSelector", "readiness", "tier_quotas",
    "uniform_cohort",
]
