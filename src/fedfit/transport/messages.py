"""The wire format: pydantic models of every request and response body, and plan (de)serialisation.

Bodies are validated on arrival (``extra="forbid"``, bounded numbers, finite floats), so a
malformed report is refused before it touches state. Tensors never travel as JSON: models and
updates are safetensors payloads (:mod:`fedfit.transport.codec`), the update's report riding in
the payload's metadata.
"""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from fedfit.types import BatchRule, DeviceState, FailureCause, Link, Techniques, Thermal, TrainPlan

Count = Annotated[int, Field(ge=0, le=10**12)]
Seconds = Annotated[float, Field(ge=0.0, le=1e7, allow_inf_nan=False)]


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ProfileReport(_Body):
    """A device's static profile as measured on its host."""

    total_memory_bytes: Count
    memory_limit_bytes: Count | None = None
    cpu_cores: Annotated[int, Field(ge=1, le=4096)]
    arch: Annotated[str, Field(max_length=64)]
    flops_per_s: Annotated[float, Field(gt=0, le=1e18, allow_inf_nan=False)]
    tier: Annotated[str, Field(max_length=64)] | None = None
    num_examples: Annotated[int, Field(ge=1, le=10**9)]


class EnrolRequest(_Body):
    secret: Annotated[str, Field(max_length=512)]
    profile: ProfileReport
    slot: Annotated[int, Field(ge=0, le=10**9)] | None = None  # the slot asked for (``--shard I/N``: I)


class EnrolResponse(_Body):
    device_id: int
    token: str


class StateReport(_Body):
    """A device's live state (``None``: the platform does not report it)."""

    free_memory_bytes: Count
    battery_fraction: Annotated[float, Field(ge=0.0, le=1.0)] | None = None
    charging: bool | None = None
    temperature_c: Annotated[float, Field(ge=-100.0, le=300.0)] | None = None
    thermal: Thermal = Thermal.UNKNOWN
    link: Link = Link.WIFI
    bandwidth_bps: Annotated[float, Field(ge=0.0, le=1e13, allow_inf_nan=False)] = 0.0
    online: bool = True
    cpu_utilisation: Annotated[float, Field(ge=0.0, le=1.0)] | None = None

    def to_state(self) -> DeviceState:
        return DeviceState(**self.model_dump())

    @classmethod
    def of(cls, state: DeviceState) -> StateReport:
        return cls(**{f.name: getattr(state, f.name) for f in dataclasses.fields(state)})


class ReadinessReport(_Body):
    """A device's answer to the readiness query (seed 000), from its own batch policy on its state
    now: whether it would train, why not, and the micro-batch it can afford for the full model
    without memory techniques (0 when not ready)."""

    ready: bool
    reason: Annotated[str, Field(max_length=500)] = ""
    affordable_batch: Annotated[int, Field(ge=0, le=10**7)]


class TaskMessage(_Body):
    task_id: str
    version: int
    plan: dict[str, Any]


class UpdateReport(_Body):
    """What the device measured while training (sent in the update payload's metadata)."""

    samples_processed: Count
    steps: Count
    micro_batch: Annotated[int, Field(ge=1, le=10**7)]
    accumulation_steps: Annotated[int, Field(ge=1, le=10**6)]
    train_loss: Annotated[float, Field(ge=0.0, allow_inf_nan=False)]
    epoch_batches: list[tuple[int, int]] = []
    duration_s: Seconds
    download_s: Seconds = 0.0
    peak_rss_bytes: Count = 0
    num_examples: Annotated[int, Field(ge=1, le=10**9)]
    start_loss: Annotated[float, Field(ge=0.0, allow_inf_nan=False)] | None = None
    sigma2: Annotated[float, Field(ge=0.0, allow_inf_nan=False)] | None = None
    noise_curvature: Annotated[float, Field(allow_inf_nan=False)] | None = None


class FailureReport(_Body):
    cause: FailureCause
    detail: Annotated[str, Field(max_length=500)] = ""


class ErrorBody(_Body):
    error: str
    detail: str


def plan_record(plan: TrainPlan) -> dict[str, Any]:
    """A plan as JSON-ready data."""
    record = dataclasses.asdict(plan)
    record["bound_by"] = None if plan.bound_by is None else plan.bound_by.value
    return record


def plan_from_record(record: dict[str, Any]) -> TrainPlan:
    """The plan of :func:`plan_record`'s output."""
    tech = dict(record["techniques"])
    if tech.get("train_stages") is not None:
        tech["train_stages"] = tuple(tech["train_stages"])
    fields = dict(record) | {"techniques": Techniques(**tech),
                             "epoch_batches": tuple(tuple(b) for b in record.get("epoch_batches", ())),
                             "bound_by": None if record.get("bound_by") is None else BatchRule(record["bound_by"])}
    return TrainPlan(**fields)
