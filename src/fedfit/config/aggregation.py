"""The aggregation section: what wraps the one masked average (staleness discount, FedNova,
server learning rate, q-FFL fairness, participation weighting) and the robust rules."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from fedfit.config.base import NonNegativeInt, PositiveInt, Section


class StalenessConfig(Section):
    """Staleness discount s(versions elapsed) (FedAsync's constant / polynomial / hinge)."""

    kind: Literal["constant", "polynomial", "hinge"] = "polynomial"
    exponent: Annotated[float, Field(ge=0)] = 0.5
    hinge_a: Annotated[float, Field(ge=0)] = 10.0
    hinge_b: Annotated[int, Field(ge=0)] = 4


class ParticipationConfig(Section):
    """Participation weighting (FedAU): each update × its device's mean interval, in model
    versions, between its folded updates, each interval capped at ``cutoff``."""

    kind: Literal["none", "interval"] = "none"
    cutoff: PositiveInt = 50


class RobustConfig(Section):
    """Robust aggregation (``aggregation.robust``): a rule in place of the plain masked average,
    optionally after update-norm clipping; each works on masked, partial updates."""

    rule: Literal["mean", "median", "trimmed_mean", "krum", "multi_krum", "fltrust", "geometric_median"] = "mean"
    clip: Literal["none", "fixed", "adaptive"] = "none"
    clip_bound: Annotated[float, Field(gt=0)] = 1.0
    clip_quantile: Annotated[float, Field(gt=0, le=1)] = 0.5
    trim_fraction: Annotated[float, Field(ge=0, lt=0.5)] = 0.1
    byzantine: NonNegativeInt = 1
    krum_keep: PositiveInt = 5
    iterations: PositiveInt = 4
    root_samples: PositiveInt = 100
    root_epochs: PositiveInt = 1


class AggregationConfig(Section):
    """What wraps the one masked average: staleness discount, FedNova, server learning rate,
    q-FFL's fairness exponent (weights × training loss^q; 0: off) and participation weighting."""

    fednova: bool = False
    fairness_q: Annotated[float, Field(ge=0)] = 0.0
    server_lr: Annotated[float, Field(gt=0)] = 1.0
    staleness: StalenessConfig = StalenessConfig()
    participation: ParticipationConfig = ParticipationConfig()
    robust: RobustConfig = RobustConfig()
