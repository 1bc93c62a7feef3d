"""The DYNAMITE planner's state as one value, for checkpoints: a resumed run continues with the
same estimates, drift factor, measured speeds, spent budget and plan in force.

Pure: :func:`snapshot` reads a planner, :func:`restore` writes one back; saving the value is the
caller's business (:mod:`fedfit.simulation.planner_state`).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from fedfit.policy.dynamite.calibrate import Calibration
from fedfit.policy.dynamite.estimate import EstimatorState
from fedfit.policy.dynamite.planner import DynamitePlanner
from fedfit.policy.dynamite.search import Assignment
from fedfit.types import DeviceState


@dataclass(frozen=True)
class PlannerSnapshot:
    """Everything a :class:`DynamitePlanner` learned from the run so far.

    Attributes:
        estimator: the smoothed estimates and the last observation.
        calibration: the drift factor's state (``None``: calibration off).
        versions: recent model versions, flattened (pseudo-gradients are taken against them).
        reachable: each device's last state while reachable.
        speed: each device's measured / predicted duration.
        spent_s, spent_j: budget spent.
        observed: aggregations observed.
        assignment: the plan in force (``None``: re-plan before the next task).
        history: (version, τ, b_i) per re-plan.
    """

    estimator: EstimatorState
    calibration: Calibration | None
    versions: dict[int, torch.Tensor]
    reachable: dict[int, DeviceState]
    speed: dict[int, float]
    spent_s: float
    spent_j: float
    observed: int
    assignment: Assignment | None
    history: tuple[tuple[int, int, tuple[int, ...]], ...]


def snapshot(p: DynamitePlanner) -> PlannerSnapshot:
    """``p``'s state (shares its tensors: they are never modified in place)."""
    return PlannerSnapshot(p.estimator, p.calibration, dict(p.versions), dict(p._reachable), dict(p.speed),
                           p.spent_s, p.spent_j, p.observed, p.assignment, tuple(p.history))


def restore(p: DynamitePlanner, s: PlannerSnapshot) -> None:
    """Put ``s`` back into a freshly built planner ``p``."""
    p.estimator, p.calibration, p.versions = s.estimator, s.calibration, dict(s.versions)
    p._reachable, p.speed = dict(s.reachable), dict(s.speed)
    p.spent_s, p.spent_j, p.observed = s.spent_s, s.spent_j, s.observed
    p.assignment, p.history = s.assignment, list(s.history)
