"""The ``dynamite:`` section: co-optimised batch size and aggregation frequency (seed 001)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from fedfit.config.base import PositiveInt, Section


class DynamitePriorConfig(Section):
    """Estimates DYNAMITE plans with before it has measured its own (see :mod:`fedfit.policy.dynamite`)."""

    beta: Annotated[float, Field(gt=0.0)] = 1.0
    rho: Annotated[float, Field(gt=0.0)] = 1.0
    delta: Annotated[float, Field(ge=0.0)] = 1.0
    sigma2: Annotated[float, Field(ge=0.0)] = 1.0
    loss: Annotated[float, Field(gt=0.0)] = 2.3


class DriftCalibrationConfig(Section):
    """The drift term's factor c measured from the global model's loss (:mod:`fedfit.policy.dynamite.calibrate`).

    ``prior`` is c before two consecutive rounds were observed (0, the default: optimistic, so
    the first rounds try a large τ where drift is measurable; 1: the bound's worst case);
    the estimate is clamped to [``low``, ``high``]; ``holding`` is the least-squares fit's
    forgetting factor (the loss samples are noisy: it averages over ~1/(1 − holding) rounds);
    ``enabled: false`` keeps c = 1."""

    enabled: bool = True
    prior: Annotated[float, Field(ge=0.0)] = 0.0
    low: Annotated[float, Field(ge=0.0)] = 0.0
    high: Annotated[float, Field(gt=0.0)] = 10.0
    holding: Annotated[float, Field(ge=0.0, lt=1.0)] = 0.9

    @model_validator(mode="after")
    def _ordered(self) -> DriftCalibrationConfig:
        if self.low > self.high:
            raise ValueError(f"low: {self.low} is above high: {self.high}")
        if not self.low <= self.prior <= self.high:
            raise ValueError(f"prior: {self.prior} must lie in [low, high] = [{self.low}, {self.high}]"
                             " (set it with low)")
        return self


class DynamiteConfig(Section):
    """DYNAMITE (seed 001): co-optimised local steps τ and per-device batch b_i under a budget.

    ``mode`` picks the solver (``off``: not used); ``adapt`` re-estimates and re-plans after
    every aggregation, else the plan is fixed after ``warmup_rounds``. ``energy_cap`` (the
    ``heterogeneous`` solver, without ``budget_energy_j``): ``homogeneous`` keeps each round's
    joules at or below the best common batch's at the same τ
    (:mod:`fedfit.policy.dynamite.energy_fill`); ``none`` lets devices off the critical path
    fill their time share with larger batches whatever the joules. ``stream_noise`` (with
    ``data.stream``): the bound's noise term is the stream buffer's
    (:mod:`fedfit.policy.dynamite.stream`) instead of σ²/b; off by default (measured below the
    plain term together with the energy cap, see the README). ``plan_for``: ``reachable``
    writes the bound over the devices whose last report says they can be reached (the ones that
    can train next round, :mod:`fedfit.policy.dynamite.reachable`); ``fleet`` over every
    enrolled device. ``stream_turnover`` (with ``data.stream``): σ² is read net of each buffer's
    turnover between a device's tasks (:mod:`fedfit.policy.dynamite.turnover`); off by default
    (neutral on accuracy and further from the measured σ², see the README). ``sigma_probe``:
    each task measures σ² at the received model from its first batch split in halves
    (:mod:`fedfit.training.probe`, one extra forward/backward of that batch) and σ² is read from
    those probes instead of from the change of consecutive pseudo-gradients; on by default
    (measured closer to the offline optimum, see the README; ``false``: no task pays for it).
    ``whole_rounds``: the bound's K counts only the rounds that finish within the budget left,
    ⌊T / round⌋ (:func:`fedfit.policy.dynamite.bound.rounds_within`), instead of the ratio.
    ``noise_model`` (static data): the bound's mini-batch noise per step is ``reshuffled``, that
    of the trainer's reshuffled epochs over each device's data, the sampling error of a round's
    summed steps (:func:`fedfit.policy.dynamite.sampling.step_noise`: tasks covering whole epochs
    carry almost none), ``iid``, σ²/b (independent draws), or ``curvature``, the reshuffled
    epochs' noise left at the round's end when each step forgets a share η β_σ of the noise before
    it, β_σ the curvature along the noise measured by a probe per task
    (:mod:`fedfit.policy.dynamite.curvature`; it rides on ``sigma_probe``: without it, β̂ stands
    in for β_σ; the default, measured closer to the offline optimum, see the README); on a stream the term is ``stream_noise``'s.
    ``last_round``: K counts whole rounds in the last round the budget left can buy (fewer than
    two of the shortest rounds, τ = 1 and b_i = 1, fit; :mod:`fedfit.policy.dynamite.last_round`),
    the ratio in the others; moot with ``whole_rounds``; off by default (neutral on the streaming
    bench, see the README). ``curvature_estimate`` (``noise_model: curvature``): β_σ is the
    probes' moving average with ``holding`` (``smoothed``) or the latest round's pooled probe
    alone (``latest``: the curvature rises along training, so older probes bias it low);
    ``sigma_estimate`` likewise for σ² read from ``sigma_probe``'s probes. ``slack_fill``
    (``mode: heterogeneous``): each device off the plan's critical path takes the largest batch
    whose round still fits that path and with which the bound is not worse
    (:mod:`fedfit.policy.dynamite.slack`): ``within_cap`` within the energy cap's joules,
    ``time_share`` its whole slack, ``off`` not at all; ``within_cap`` by default (measured
    closer to the offline optimum, see the README)."""

    mode: Literal["off", "closed_form", "homogeneous", "heterogeneous"] = "off"
    adapt: bool = True
    budget_time_s: Annotated[float, Field(gt=0.0)] | None = 3600.0
    budget_energy_j: Annotated[float, Field(gt=0.0)] | None = None
    tau_max: PositiveInt = 50
    holding: Annotated[float, Field(ge=0.0, lt=1.0)] = 0.5
    warmup_rounds: PositiveInt = 2
    max_accumulation: PositiveInt = 1
    prior: DynamitePriorConfig = DynamitePriorConfig()
    drift_calibration: DriftCalibrationConfig = DriftCalibrationConfig()
    energy_cap: Literal["homogeneous", "none"] = "homogeneous"
    stream_noise: bool = False
    plan_for: Literal["reachable", "fleet"] = "reachable"
    stream_turnover: bool = False
    sigma_probe: bool = True
    whole_rounds: bool = False
    noise_model: Literal["iid", "reshuffled", "curvature"] = "curvature"
    last_round: bool = False
    curvature_estimate: Literal["smoothed", "latest"] = "smoothed"
    sigma_estimate: Literal["smoothed", "latest"] = "smoothed"
    slack_fill: Literal["off", "within_cap", "time_share"] = "within_cap"

    @model_validator(mode="after")
    def _has_budget(self) -> DynamiteConfig:
        if self.mode != "off" and self.budget_time_s is None and self.budget_energy_j is None:
            raise ValueError("budget_time_s: set it or budget_energy_j (DYNAMITE plans against a budget)")
        return self
