"""DYNAMITE's planner settings (what :class:`~fedfit.policy.dynamite.planner.DynamitePlanner` decides with)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from fedfit.policy.dynamite.bound import Budget, Estimates
from fedfit.policy.dynamite.calibrate import Calibration
from fedfit.policy.dynamite.slack import SlackFill

Solver = Literal["closed_form", "homogeneous", "heterogeneous"]
EnergyCap = Literal["homogeneous", "none"]
PlanFor = Literal["reachable", "fleet"]
NoiseModel = Literal["iid", "reshuffled", "curvature"]


@dataclass(frozen=True, slots=True)
class DynamiteSettings:
    """The planner's parameters (the ``dynamite:`` config section).

    Attributes:
        solver: ``closed_form`` (one b, the paper's closed form), ``homogeneous`` (one b, exact
            search) or ``heterogeneous`` (b_i per device).
        adapt: re-estimate and re-plan after every aggregation (online); ``False``: plan once
            after ``warmup_rounds`` and keep it (offline).
        budget: the training budget (virtual seconds and/or fleet joules).
        prior: estimates used until the first ones exist.
        tau_max: the largest τ searched.
        holding: α of the estimates' moving average.
        warmup_rounds: aggregations observed before an offline plan is fixed.
        max_accumulation: micro-batches a step may accumulate above the memory cap.
        participation: share of the fleet training each round (scales the energy a round costs).
        calibration: the drift factor's prior and clamp (:mod:`.calibrate`); ``None``: the
            drift term uncalibrated (c = 1).
        streaming: stream buffers (``data.stream``): the noise term is the buffer's (:mod:`.stream`).
        energy_cap: ``homogeneous``: without an energy budget, the heterogeneous solver's rounds
            cost no more joules than the best common batch's at the same τ (:mod:`.energy_fill`).
        plan_for: ``reachable``: the bound is over the devices that can be reached (:mod:`.reachable`).
        sigma_probe: tasks take the σ² probe while estimates are used (online: always; offline:
            until the plan is fixed); σ² is read from them (:func:`.estimate.probed_sigma2`).
        noise_model: the mini-batch noise on static data: ``iid``, σ²/b per step; ``reshuffled``,
            the reshuffled epochs' (:func:`.sampling.step_noise`); ``curvature``, those epochs'
            noise at the round's end given the probed curvature β_σ (:mod:`.curvature`; β̂ until
            a probe reports). A stream's term is ``streaming``'s.
        last_round: K counts whole rounds in the last round the budget buys (:mod:`.last_round`).
        curvature_latest, sigma_latest: β_σ / a probed σ² is the latest round's pooled probe alone.
        slack_fill: devices off the heterogeneous plan's critical path fill their slack (:mod:`.slack`).
    """

    solver: Solver = "heterogeneous"
    adapt: bool = True
    budget: Budget = Budget(time_s=3600.0)
    prior: Estimates = Estimates(beta=1.0, rho=1.0, delta=1.0, sigma2=1.0, loss=2.3)
    tau_max: int = 50
    holding: float = 0.5
    warmup_rounds: int = 2
    max_accumulation: int = 1
    participation: float = 1.0
    calibration: Calibration | None = Calibration()
    streaming: bool = False
    energy_cap: EnergyCap = "homogeneous"
    plan_for: PlanFor = "reachable"
    sigma_probe: bool = False
    noise_model: NoiseModel = "iid"
    last_round: bool = False
    curvature_latest: bool = False
    sigma_latest: bool = False
    slack_fill: SlackFill = "off"
