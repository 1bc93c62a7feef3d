"""Pure decisions: who trains (selection) and what each device does (planning)."""

from fedfit.policy.planning import FixedPlanner, Planner
from fedfit.policy.selection import uniform_cohort

__all__ = ["FixedPlanner", "Planner", "uniform_cohort"]
