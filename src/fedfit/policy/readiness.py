"""Readiness: what selection knows about a device before inviting it.

Seed 000: "the federation server can query devices for their current effective batch size as a
proxy for readiness". A :class:`Readiness` holds that affordable batch together with the
predicted task time, battery, heat and availability — plain values, so any batch policy (the
dynamic-batching planner, a network fleet's reported value) can fill them in.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from fedfit.cost.predictor import TaskPredictor
from fedfit.types import DeviceProfile, DeviceState, Thermal, TrainPlan


@dataclass(frozen=True, slots=True)
class Readiness:
    """A device's readiness to train now.

    Attributes:
        device_id: the device.
        tier: its capability tier.
        affordable_batch: largest micro-batch its free memory allows now (0: cannot train).
        planned_batch: micro-batch the planner's plan would run on it: the planned one, at most
            the samples it holds (:meth:`~fedfit.types.TrainPlan.micro_batch_for`).
        predicted_duration_s: predicted task time (``inf`` when unreachable).
        battery_fraction: charge in [0, 1]; ``None`` for mains power or unknown.
        charging: plugged in; ``None`` if unknown.
        thermal: coarse thermal state.
        online: reachable and willing.
        statistical_utility: Oort's statistical utility from its last update; ``None``: never trained.
        last_round: model version its last update started from; ``None``: never.
        measured_duration_s: virtual duration of its last update's task, from the registry's
            history; ``None``: never returned one.
    """

    device_id: int
    tier: str
    affordable_batch: int
    planned_batch: int
    predicted_duration_s: float
    battery_fraction: float | None
    charging: bool | None
    thermal: Thermal
    online: bool
    statistical_utility: float | None = None
    last_round: int | None = None
    measured_duration_s: float | None = None


def readiness(plan: TrainPlan, profile: DeviceProfile, state: DeviceState, predictor: TaskPredictor) -> Readiness:
    """The readiness of ``plan``'s device from its profile and last reported state."""
    duration = predictor.cost(plan, profile, state).duration_s if state.online else math.inf
    return Readiness(device_id=plan.device_id, tier=profile.tier,
                     affordable_batch=predictor.affordable_batch(plan, profile, state),
                     planned_batch=plan.micro_batch_for(predictor.num_examples[plan.device_id]),
                     predicted_duration_s=duration,
                     battery_fraction=state.battery_fraction, charging=state.charging,
                     thermal=state.thermal, online=state.online)


@dataclass(frozen=True, slots=True)
class Deferral:
    """When a device sits this round out.

    Attributes:
        min_battery: defer an unplugged device below this charge.
        defer_hot: defer a device reporting ``HOT``.
        require_batch: defer a device whose affordable batch is below its planned batch (it
            would crash out of memory).
        max_duration_s: defer a device predicted to take longer (``None``: no limit).
    """

    min_battery: float = 0.2
    defer_hot: bool = True
    require_batch: bool = True
    max_duration_s: float | None = None

    def defers(self, r: Readiness) -> bool:
        """Whether ``r``'s device should wait."""
        low = r.battery_fraction is not None and not r.charging and r.battery_fraction < self.min_battery
        slow = self.max_duration_s is not None and r.predicted_duration_s > self.max_duration_s
        return (not r.online or low or (self.defer_hot and r.thermal is Thermal.HOT)
                or (self.require_batch and r.affordable_batch < r.planned_batch) or slow
                or not math.isfinite(r.predicted_duration_s))
