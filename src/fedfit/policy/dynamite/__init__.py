"""DYNAMITE (seed 001, arXiv 2310.14906): co-optimised batch size and aggregation frequency.

One concept per module: :mod:`.costs` (what a round of (τ, b) costs a device), :mod:`.bound`
(the convergence bound and its homogeneous closed form), :mod:`.search` (exact search and the
heterogeneous assignment), :mod:`.estimate` (online β, ρ, δ, σ², ζ), :mod:`.calibrate` (the
drift term's factor c from the global model's loss), :mod:`.stream` (the noise term when the
devices hold stream buffers), :mod:`.planner` (the adaptive planner that re-estimates and re-plans
every round) and :mod:`.snapshot` (its state, for checkpoints).
"""

from fedfit.policy.dynamite.bound import Budget, Estimates, bound, closed_form, drift, rounds_affordable
from fedfit.policy.dynamite.calibrate import Calibration, RoundLoss, calibrate
from fedfit.policy.dynamite.costs import DeviceCost, device_cost
from fedfit.policy.dynamite.estimate import EstimatorState, RoundObservation, observe
from fedfit.policy.dynamite.search import (
    Assignment, assign_heterogeneous, closed_form_assignment, search_homogeneous,
)

__all__ = [
    "Assignment", "Budget", "Calibration", "DeviceCost", "Estimates", "EstimatorState", "RoundLoss",
    "RoundObservation", "assign_heterogeneous", "bound", "calibrate", "closed_form", "closed_form_assignment",
    "device_cost", "drift", "observe", "rounds_affordable", "search_homogeneous",
]
