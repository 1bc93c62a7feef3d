"""DYNAMITE (seed 001, arXiv 2310.14906): co-optimised batch size and aggregation frequency.

One concept per module: :mod:`.costs` (what a round of (τ, b) costs a device), :mod:`.bound`
(the convergence bound and its homogeneous closed form), :mod:`.search` (exact search and the
heterogeneous assignment), :mod:`.estimate` (online β, ρ, δ, σ², ζ) and :mod:`.planner` (the
adaptive planner that re-estimates and re-plans every round).
"""

from fedfit.policy.dynamite.bound import Budget, Estimates, bound, closed_form, drift, rounds_affordable
from fedfit.policy.dynamite.costs import DeviceCost, device_cost
from fedfit.policy.dynamite.estimate import EstimatorState, RoundObservation, observe
from fedfit.policy.dynamite.search import (
    Assignment, assign_heterogeneous, closed_form_assignment, search_homogeneous,
)

__all__ = [
    "Assignment", "Budget", "DeviceCost", "Estimates", "EstimatorState", "RoundObservation",
    "assign_heterogeneous", "bound", "closed_form", "closed_form_assignment", "device_cost", "drift",
    "observe", "rounds_affordable", "search_homogeneous",
]
