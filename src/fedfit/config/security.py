"""Sections of security and privacy: simulated attackers, differential privacy, secure aggregation."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from fedfit.config.base import Fraction, NonNegativeInt, PositiveInt, Section


class AttackConfig(Section):
    """Simulated attackers: which devices (a seeded ``fraction`` of the fleet, plus ``devices`` by
    id and every device of ``tiers``) and what they send."""

    kind: Literal["none", "scale", "sign_flip", "random", "label_flip", "backdoor"] = "none"
    fraction: Fraction = 0.0
    devices: list[NonNegativeInt] = []
    tiers: list[str] = []
    scale: Annotated[float, Field(gt=0)] = 10.0
    boost: Annotated[float, Field(gt=0)] = 1.0
    poison_fraction: Annotated[float, Field(gt=0, le=1)] = 0.5
    target_class: NonNegativeInt = 0


class CentralDPConfig(Section):
    """DP-FedAvg at the server: per-device clipping and Gaussian noise; give ``noise_multiplier``
    or a ``target_epsilon`` (reached after ``orchestration.rounds`` rounds) to calibrate it."""

    enabled: bool = False
    clip_norm: Annotated[float, Field(gt=0)] = 1.0
    noise_multiplier: Annotated[float, Field(gt=0)] | None = None
    target_epsilon: Annotated[float, Field(gt=0)] | None = None
    delta: Annotated[float, Field(gt=0, lt=1)] = 1e-5
    accountant: Literal["rdp", "pld"] = "rdp"


class SecureAggregationConfig(Section):
    """SecAgg: the server learns only per-cohort sums (simulated, or over HTTP in ``fedfit server``;
    ``dropout`` is simulation only, ``phase_timeout_s`` deployment only)."""

    enabled: bool = False
    threshold: Annotated[float, Field(gt=0, le=1)] = 0.5
    dropout: Annotated[float, Field(ge=0, lt=1)] = 0.0
    min_cohort: PositiveInt = 3
    phase_timeout_s: Annotated[float, Field(gt=0)] = 30.0


class LocalDPConfig(Section):
    """DP-SGD on the device: per-sample clipping to ``clip_norm`` and Gaussian noise of
    ``noise_multiplier`` × ``clip_norm`` on each step's gradient sum (sample-level DP)."""

    enabled: bool = False
    clip_norm: Annotated[float, Field(gt=0)] = 1.0
    noise_multiplier: Annotated[float, Field(ge=0)] = 1.0
    delta: Annotated[float, Field(gt=0, lt=1)] = 1e-5


class PrivacyConfig(Section):
    """Differential privacy and secure aggregation."""

    central: CentralDPConfig = CentralDPConfig()
    local: LocalDPConfig = LocalDPConfig()
    secure_aggregation: SecureAggregationConfig = SecureAggregationConfig()
