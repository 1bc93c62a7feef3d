"""The server's request handling: enrolment, authentication, tasks, uploads, failure reports.

Every check runs before anything is written; a failed check raises
:class:`~fedfit.transport.rejection.Rejected` (an HTTP 4xx with a short code) and leaves the
model, the ledger and the journal as they were. An update is journalled (durable) before the
device is told it was accepted.
"""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import secrets
import threading
from collections import Counter
from collections.abc import Callable
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from fedfit.transport.codec import check_update, decode, split_masks
from fedfit.transport.fleet import InFlight, NetworkFleet
from fedfit.transport.messages import (
    EnrolRequest, EnrolResponse, FailureReport, ReadinessReport, StateReport, TaskMessage, UpdateReport,
    plan_record,
)
from fedfit.transport.rejection import Rejected
from fedfit.transport.secagg_hub import SecAggHub
from fedfit.transport.state import DeviceRecord, ServerState, StateError
from fedfit.types import Failure, FailureCause, TaskCost, TaskResult, Update

#: What a deployed run's ``energy_j`` is: no device measures its energy, so the server estimates it
#: with the simulator's cost model (the tier's compute and radio power) over the measured times.
ENERGY_SOURCE = "estimate: tier compute_power_w x measured training s + radio_power_w x measured download s"

#: Causes a device may report for its own task.
DEVICE_CAUSES = {FailureCause.OUT_OF_MEMORY, FailureCause.DECLINED, FailureCause.BATTERY, FailureCause.OFFLINE}


def token_hash(token: str) -> str:
    """What the server stores of a device token."""
    return hashlib.sha256(token.encode()).hexdigest()


@dataclasses.dataclass(frozen=True)
class Limits:
    max_body_bytes: int
    max_update_norm: float
    max_staleness: int | None


class Coordinator:
    """The server side of the protocol, between the HTTP routes and the :class:`NetworkFleet`.

    Args:
        store: durable state.
        secret: the fleet secret devices enrol with.
        slots: how many devices the run expects.
        limits: request limits.
        now: wall seconds (enrolment times).
    """

    def __init__(self, store: ServerState, secret: str, slots: int, limits: Limits, now: Callable[[], float]) -> None:
        self.store, self.slots, self.limits, self._now = store, slots, limits, now
        self._secret = secret.encode()
        self.fleet: NetworkFleet | None = None
        self.finished = False
        self.version = store.progress().version
        self.rejections: Counter[str] = Counter()
        self.status: dict[str, object] = {}
        self.config_body: dict[str, object] = {}
        self.secagg: SecAggHub | None = None  # set by the server when the run uses secure aggregation
        self._lock = threading.Lock()

    def reject(self, err: Rejected) -> None:
        with self._lock:
            self.rejections[err.code] += 1

    # -- enrolment and auth ------------------------------------------------------------------
    def check_secret(self, secret: str) -> None:
        if not hmac.compare_digest(secret.encode(), self._secret):
            raise Rejected(401, "bad_secret", "fleet secret: wrong or missing")

    def enrol(self, request: EnrolRequest) -> EnrolResponse:
        self.check_secret(request.secret)
        with self._lock:
            taken = {d.device_id for d in self.store.devices()}
            if len(taken) >= self.slots:
                raise Rejected(409, "fleet_full", f"enrol: the fleet already has its {self.slots} devices")
            free = set(range(self.slots)) - taken  # the slot asked for if free, else the next free one
            slot = request.slot if request.slot in free else min(free)
            token = secrets.token_urlsafe(32)
            self.store.enrol(DeviceRecord(slot, token_hash(token), request.profile.model_dump_json(), self._now()))
        return EnrolResponse(device_id=slot, token=token)

    def authenticate(self, authorization: str | None) -> int:
        if not authorization:
            raise Rejected(401, "missing_token", "auth: missing Authorization: Bearer <token>")
        scheme, _, token = authorization.partition(" ")
        if scheme.lower() != "bearer" or not token:
            raise Rejected(401, "bad_auth_scheme", "auth: expected Authorization: Bearer <token>")
        device = self.store.device_for_token(token_hash(token.strip()))
        if device is None:
            raise Rejected(401, "unknown_token", "auth: unknown device token")
        return device

    # -- device requests -----------------------------------------------------------------------
    def heartbeat(self, device: int, body: bytes) -> None:
        report = parse(StateReport, body, "state")
        if self.fleet is not None:
            self.fleet.heartbeat(device, report.to_state())

    def readiness(self, device: int, body: bytes) -> None:
        report = parse(ReadinessReport, body, "readiness")
        if report.ready != (report.affordable_batch > 0):
            raise Rejected(422, "bad_readiness", "readiness: ready needs affordable_batch > 0, not ready needs 0")
        if self.fleet is not None:
            self.fleet.report_readiness(device, report)

    def task(self, device: int) -> TaskMessage | None:
        if self.finished:
            raise Rejected(410, "run_finished", "task: the run has finished")
        if self.fleet is None:
            return None
        self.fleet.heartbeat(device, None)
        task = self.fleet.task_for(device)
        if task is None:
            return None
        return TaskMessage(task_id=task.task_id, version=task.plan.round, plan=plan_record(task.plan))

    def model(self, device: int, task_id: str) -> bytes:
        return self._owned(device, task_id).payload

    def _owned(self, device: int, task_id: str) -> InFlight:
        record = self.store.task(task_id)
        if record is None:
            raise Rejected(404, "unknown_task", f"task {task_id[:40]!r}: no such task")
        if record.device_id != device:
            raise Rejected(403, "not_your_task", f"task {task_id}: issued to another device")
        if record.status == "accepted":
            raise Rejected(409, "replay", f"task {task_id}: its update was already accepted")
        task = self.fleet.in_flight(task_id) if self.fleet is not None else None
        if record.status != "issued" or task is None:
            raise Rejected(409, "task_closed", f"task {task_id}: no longer open ({record.status})")
        stale = self.limits.max_staleness
        if stale is not None and self.version - task.plan.round > stale:
            raise Rejected(409, "stale", f"task {task_id}: round {task.plan.round} is staler than {stale}")
        return task

    def upload(self, device: int, task_id: str, body: bytes) -> int:
        if self.secagg is not None:
            raise Rejected(409, "secagg_required", "update: this run takes updates only through secure aggregation")
        task = self._owned(device, task_id)
        tensors, metadata = decode(body)
        params, masks = split_masks(tensors)
        check_update(params, masks, task.sent, self.limits.max_update_norm)
        report = parse(UpdateReport, metadata.get("report", "").encode(), "report")
        self._check_counts(device, task, report)
        update = Update(device, task.plan.round, params, report.num_examples, report.samples_processed, report.steps,
                        report.micro_batch, report.accumulation_steps, report.train_loss,
                        tuple(report.epoch_batches), masks, report.start_loss, report.sigma2,
                        report.noise_curvature)
        seq: list[int] = []

        def outcome(t: InFlight, now: float) -> tuple[TaskResult, int | None]:
            seq.append(self.store.accept(task_id, body, report.model_dump_json(), now))
            return self.result_of(self.fleet, t, update, report, len(body), now), seq[0]

        self._deliver(task_id, outcome)
        return seq[0]

    def _check_counts(self, device: int, task: InFlight, report: UpdateReport) -> None:
        assert self.fleet is not None
        examples = self.fleet.num_examples(device)
        if report.num_examples != examples:
            raise Rejected(422, "bad_count", f"report: num_examples {report.num_examples} != enrolled {examples}")
        epochs = max(task.plan.local_epochs, len(report.epoch_batches), 1)
        if report.samples_processed > examples * epochs:
            raise Rejected(422, "bad_count", f"report: samples_processed {report.samples_processed} > "
                                             f"{examples} examples × {epochs} epochs")

    @staticmethod
    def result_of(fleet: NetworkFleet | None, task: InFlight, update: Update, report: UpdateReport, size: int,
                  now: float) -> TaskResult:
        """The fleet event of an accepted update: measured times, and energy estimated from them
        with the tier's power model (:data:`ENERGY_SOURCE`; no device measures its energy)."""
        assert fleet is not None
        plan = dataclasses.replace(task.plan, micro_batch=report.micro_batch,
                                   accumulation_steps=report.accumulation_steps,
                                   epoch_batches=tuple(report.epoch_batches))
        profile = fleet.profile(task.plan.device_id)
        energy = profile.compute_power_w * report.duration_s + profile.radio_power_w * report.download_s
        cost = TaskCost(report.download_s, report.duration_s, 0.0, energy, report.peak_rss_bytes,
                        len(task.payload), size, 0.0)
        free = fleet.snapshot(task.plan.device_id, now).free_memory_bytes
        return TaskResult(plan, fleet.profile(task.plan.device_id).tier, task.start_s, now, update, cost, free)

    def failure(self, device: int, task_id: str, body: bytes) -> None:
        self._owned(device, task_id)
        report = parse(FailureReport, body, "failure")
        if report.cause not in DEVICE_CAUSES:
            raise Rejected(422, "bad_cause", f"failure: a device cannot report {report.cause.value!r}")

        def outcome(t: InFlight, now: float) -> tuple[TaskResult, int | None]:
            self.store.set_status(task_id, "failed", f"{report.cause.value}: {report.detail}")
            failure = Failure(device, t.plan.round, report.cause, report.detail)
            cost = TaskCost(0.0, 0.0, 0.0, 0.0, 0, len(t.payload), 0, 0.0)
            tier = self.fleet.profile(device).tier if self.fleet else ""
            return TaskResult(t.plan, tier, t.start_s, now, failure, cost, 0), None

        self._deliver(task_id, outcome)

    def _deliver(self, task_id: str, outcome: Callable[[InFlight, float], tuple[TaskResult, int | None]]) -> None:
        assert self.fleet is not None
        try:
            self.fleet.deliver(task_id, outcome)
        except (StopIteration, StateError):
            raise Rejected(409, "task_closed", f"task {task_id}: closed while the request was checked") from None


M = TypeVar("M", bound=BaseModel)


def parse(model: type[M], body: bytes, what: str) -> M:
    """``body`` as ``model``, or a 422 naming the first bad field."""
    try:
        return model.model_validate_json(body)
    except ValidationError as err:
        e = err.errors()[0]
        where = ".".join(str(p) for p in e["loc"]) or "body"
        raise Rejected(422, f"bad_{what}", f"{what}: {where}: {e['msg']}") from None


__all__ = ["Coordinator", "Limits", "parse", "token_hash"]
