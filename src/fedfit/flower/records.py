"""fedfit's messages in Flower's records: parameters, update metadata, readiness and failures.

Flower's Message API carries a ``RecordDict`` of ``ArrayRecord`` (tensors), ``MetricRecord``
(numbers) and ``ConfigRecord`` (numbers, strings, flags). A fedfit reply holds::

    "arrays"    ArrayRecord   the trained parameters (names and shapes of the master)
    "masks"     ArrayRecord   per-name 0/1 masks of the coordinates held (partial, pruning)
    "metrics"   MetricRecord  num-examples, samples-processed, steps, micro-batch,
                              accumulation-steps, train-loss, model-round, device-id
                              (+ start-loss, sigma2, noise-curvature when measured)
    "readiness" ConfigRecord  a readiness query's answer (affordable batch, battery, heat, ...)

``num-examples`` is Flower's own weighting key, so Flower's strategies can read fedfit replies.
A task that produced no update replies with a Flower ``Error`` whose code is
:data:`FAILURE_CODE` and whose reason starts with the :class:`~fedfit.types.FailureCause`.
"""

from __future__ import annotations

import math

import torch
from flwr.app import ArrayRecord, ConfigRecord, Error, MetricRecord, RecordDict

from fedfit.policy.readiness import Readiness
from fedfit.types import FailureCause, Params, Thermal, Update

ARRAYS, MASKS, METRICS, CONFIG, READINESS = "arrays", "masks", "metrics", "config", "readiness"
#: Flower error code of a fedfit device's failed task (out of memory, declined, ...).
FAILURE_CODE = 4_600
#: Train-config key asking a node for the σ² probe (``TrainPlan.sigma_probe``; absent: no probe).
SIGMA_PROBE = "sigma-probe"
#: Train-config key asking a node for the curvature probe too (``TrainPlan.curvature_probe``,
#: which implies the σ² probe: its direction is the σ² probe's g_A − g_B; absent: no probe).
CURVATURE_PROBE = "curvature-probe"


def number(record: MetricRecord | ConfigRecord, key: str, default: float | None = None) -> float:
    """The number under ``key`` (``default`` when absent).

    Raises:
        KeyError: absent without a default, or not a number.
    """
    value = record.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise KeyError(f"record key {key!r}: expected a number, got {value!r}")
    return float(value)


def flag(record: ConfigRecord, key: str) -> bool:
    """The boolean under ``key`` (``False`` when absent).

    Raises:
        KeyError: present but not a boolean.
    """
    value = record.get(key, False)
    if not isinstance(value, bool):
        raise KeyError(f"record key {key!r}: expected a boolean, got {value!r}")
    return value


def params_record(params: Params) -> ArrayRecord:
    """The parameters as an ``ArrayRecord`` (tensors detached to CPU)."""
    return ArrayRecord({k: v.detach().cpu() for k, v in params.items()})


def record_params(record: ArrayRecord) -> Params:
    """The parameters of an ``ArrayRecord`` as a state dict."""
    return dict(record.to_torch_state_dict())


def update_content(update: Update) -> RecordDict:
    """The reply content of a finished task."""
    metrics = MetricRecord({
        "num-examples": update.num_examples, "samples-processed": update.samples_processed,
        "steps": update.steps, "micro-batch": update.micro_batch,
        "accumulation-steps": update.accumulation_steps, "train-loss": float(update.train_loss),
        "model-round": update.round, "device-id": update.device_id,
    })
    if update.start_loss is not None:
        metrics["start-loss"] = float(update.start_loss)
    if update.sigma2 is not None:
        metrics["sigma2"] = float(update.sigma2)
    if update.noise_curvature is not None:
        metrics["noise-curvature"] = float(update.noise_curvature)
    content = RecordDict({ARRAYS: params_record(update.params), METRICS: metrics})
    if update.masks is not None:
        content[MASKS] = ArrayRecord({k: m.to(torch.uint8) for k, m in update.masks.items()})
    return content


def content_update(content: RecordDict) -> Update:
    """The :class:`Update` a fedfit reply carries.

    Raises:
        KeyError: the reply lacks fedfit's arrays or metrics (not a fedfit client).
    """
    metrics = content.metric_records[METRICS]
    masks = None
    if MASKS in content.array_records:
        masks = {k: v.bool() for k, v in record_params(content.array_records[MASKS]).items()}
    def count(key: str) -> int:
        return int(number(metrics, key))

    return Update(device_id=count("device-id"), round=count("model-round"),
                  params=record_params(content.array_records[ARRAYS]), num_examples=count("num-examples"),
                  samples_processed=count("samples-processed"), steps=count("steps"), micro_batch=count("micro-batch"),
                  accumulation_steps=count("accumulation-steps"), train_loss=number(metrics, "train-loss"),
                  masks=masks, start_loss=number(metrics, "start-loss") if "start-loss" in metrics else None,
                  sigma2=number(metrics, "sigma2") if "sigma2" in metrics else None,
                  noise_curvature=number(metrics, "noise-curvature") if "noise-curvature" in metrics else None)


def readiness_record(r: Readiness) -> ConfigRecord:
    """A readiness answer (``None`` fields left out, an infinite duration as -1)."""
    record = ConfigRecord({
        "device-id": r.device_id, "tier": r.tier, "affordable-batch": r.affordable_batch,
        "planned-batch": r.planned_batch, "thermal": r.thermal.value, "online": r.online,
        "predicted-duration-s": r.predicted_duration_s if math.isfinite(r.predicted_duration_s) else -1.0,
    })
    if r.battery_fraction is not None:
        record["battery-fraction"] = r.battery_fraction
    if r.charging is not None:
        record["charging"] = r.charging
    return record


def record_readiness(record: ConfigRecord) -> Readiness:
    """The :class:`Readiness` of a readiness answer."""
    duration = number(record, "predicted-duration-s")
    charging = record.get("charging")
    return Readiness(device_id=int(number(record, "device-id")), tier=str(record["tier"]),
                     affordable_batch=int(number(record, "affordable-batch")),
                     planned_batch=int(number(record, "planned-batch")),
                     predicted_duration_s=math.inf if duration < 0 else duration,
                     battery_fraction=number(record, "battery-fraction") if "battery-fraction" in record else None,
                     charging=None if charging is None else bool(charging),
                     thermal=Thermal(str(record["thermal"])), online=bool(record["online"]))


def failure_error(cause: FailureCause, detail: str) -> Error:
    """The Flower ``Error`` of a task that produced no update."""
    return Error(code=FAILURE_CODE, reason=f"{cause.value}: {detail}")


def error_cause(error: Error) -> str:
    """The failure cause an error reply names: a :class:`FailureCause` value for a fedfit
    device, ``client_error`` for anything else (e.g. a plain Flower client that raised)."""
    if error.code == FAILURE_CODE and error.reason:
        head = error.reason.split(":", 1)[0]
        if head in {c.value for c in FailureCause}:
            return head
    return "client_error"
