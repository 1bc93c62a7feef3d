"""A deployed device's side of SecAgg: its trained update leaves it only masked.

After training, instead of uploading its update, the device runs
:class:`~fedfit.security.secagg.protocol.SecAggClient` against the server's
``/v1/tasks/{id}/secagg`` routes: advertise keys (with its training report, no parameters),
wait for the cohort, send encrypted shares, mask the fixed-point vector (w m x, w m) over the
cohort's coordinates (:mod:`fedfit.transport.secagg_vectors`; with central DP: its delta clipped
to ``privacy.central.clip_norm``, weight 1), wait for the survivors, reveal the shares that
unmask, wait for the end. Key material comes from the operating system's CSPRNG.

Fault injection for tests: with ``FEDFIT_SECAGG_EXIT_BEFORE_MASKED=1`` in its environment the
process exits (status 3) right after masking, before sending the masked input: a device
dropped after masking.
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Callable
from typing import Any

import httpx

from fedfit.aggregation import Contribution
from fedfit.config import ExperimentConfig
from fedfit.orchestrator_wiring import aggregation_rule
from fedfit.models import ModelSpec
from fedfit.orchestration.submodels import SubModelExchange
from fedfit.security.secagg.cohorts import vector
from fedfit.security.secagg.primitives import encode
from fedfit.security.secagg.private_sum import clipped_deltas
from fedfit.security.secagg.protocol import SecAggClient
from fedfit.transport.client import DeviceClient, Refused
from fedfit.transport.codec import decode, split_masks
from fedfit.transport.messages import UpdateReport
from fedfit.transport.secagg_messages import Phase, SecAggStatus
from fedfit.transport.secagg_vectors import in_master, template_of, unpack
from fedfit.types import Params, TrainPlan, Update

POLL_S = 0.2
ORDER: list[Phase] = ["keys", "shares", "masked", "unmask", "done", "aborted"]


class _Channel:
    """The SecAgg calls of one task, counting the body bytes each way."""

    def __init__(self, client: DeviceClient, task_id: str) -> None:
        self.client, self.base = client, f"/v1/tasks/{task_id}/secagg"
        self.sent = self.received = 0

    def call(self, method: str, path: str, content: bytes | None = None, kind: str = "application/json") -> bytes:
        headers = {"Content-Type": kind} if content is not None else {}
        resp: httpx.Response = self.client._call(method, self.base + path, content=content, headers=headers)
        self.sent += len(content or b"")
        self.received += len(resp.content)
        return resp.content

    def wait(self, phases: set[Phase]) -> SecAggStatus:
        """The cohort's status once its phase is one of ``phases``.

        Raises:
            Refused: the cohort aborted (409 ``secagg_aborted``) or the server dropped the task.
        """
        last = max(ORDER.index(p) for p in phases)
        while True:
            status = SecAggStatus.model_validate_json(self.call("GET", ""))
            if status.phase in phases:
                return status
            if status.phase == "aborted":
                raise Refused(409, "secagg_aborted", status.detail)
            if ORDER.index(status.phase) > last:  # the cohort went on without this device (too slow)
                raise Refused(409, "secagg_left_out", f"the cohort moved on to phase '{status.phase}'")
            time.sleep(POLL_S)


def device_contribution(config: ExperimentConfig, spec: ModelSpec, plan: TrainPlan, payload: bytes,
                        body: bytes) -> tuple[Contribution, UpdateReport, Params]:
    """The update of ``body`` (sent ``payload``) in master coordinates with the weight the rule
    gives it (central DP: its delta clipped, weight 1), its report, and the master template."""
    tensors, metadata = decode(body)
    params, masks = split_masks(tensors)
    report = UpdateReport.model_validate_json(metadata["report"])
    exchange, template = SubModelExchange.for_spec(spec, config.width.indices, config.seed), template_of(spec)
    update = Update(plan.device_id, plan.round, params, report.num_examples, report.samples_processed, report.steps,
                    report.micro_batch, report.accumulation_steps, report.train_loss, tuple(report.epoch_batches),
                    masks, report.start_loss, report.sigma2, report.noise_curvature)
    contribution, base = in_master(exchange, plan, template, decode(payload)[0], params, masks,
                                   aggregation_rule(config).weighting(update))
    if config.privacy.central.enabled:
        contribution = clipped_deltas(base, [contribution], config.privacy.central.clip_norm)[0]
    return contribution, report, template


def secure_upload(client: DeviceClient, config: ExperimentConfig, spec: ModelSpec, plan: TrainPlan,
                  task: tuple[str, bytes, bytes], log: Callable[[str], None]) -> dict[str, Any]:
    """Take part in the SecAgg of task ``(id, model payload, update payload)``; returns a summary."""
    task_id, payload, body = task
    start, channel = time.perf_counter(), _Channel(client, task_id)
    contribution, report, template = device_contribution(config, spec, plan, payload, body)
    rng = random.SystemRandom()
    me = SecAggClient(plan.device_id, rng)
    c_key, s_key = me.advertise()
    channel.call("POST", "/keys", f'{{"c_key":"{c_key.hex()}","s_key":"{s_key.hex()}",'
                                  f'"report":{report.model_dump_json()}}}'.encode())
    st = channel.wait({"shares"})
    tick = time.perf_counter()
    roster = {int(d): (bytes.fromhex(c), bytes.fromhex(s)) for d, (c, s) in st.roster.items()}
    boxes = me.share_keys(roster, st.threshold, rng)
    crypto = time.perf_counter() - tick
    channel.call("POST", "/shares", ('{"boxes":{' + ",".join(f'"{j}":"{b.hex()}"' for j, b in boxes.items())
                                     + "}}").encode())
    st = channel.wait({"masked"})
    tick = time.perf_counter()
    words = vector(contribution, unpack(st.coords, template), uniform=False)
    me.roster = {j: roster[j] for j in st.shared}
    masked = me.masked_input(encode(words))
    crypto += time.perf_counter() - tick
    if os.environ.get("FEDFIT_SECAGG_EXIT_BEFORE_MASKED") == "1":
        log(f"secagg task {task_id}: exiting before the masked input (fault injection)")
        os._exit(3)
    channel.call("POST", "/masked", masked.astype("<u8").tobytes(), "application/octet-stream")
    st = channel.wait({"unmask"})
    tick = time.perf_counter()
    revealed = me.unmask(set(st.survivors), {int(s): bytes.fromhex(b) for s, b in st.inbox.items()})
    crypto += time.perf_counter() - tick
    channel.call("POST", "/reveal", ('{"shares":{' + ",".join(
        f'"{o}":{{"kind":"{k}","x":{x},"y":"{y:x}"}}' for o, (k, (x, y)) in revealed.items()) + "}}").encode())
    channel.wait({"done"})
    seconds = time.perf_counter() - start
    log(f"secagg task {task_id}: cohort of {len(roster)}, {len(words)} words, sent {channel.sent} B, "
        f"received {channel.received} B, {seconds:.3f} s ({crypto:.3f} s masking and shares)")
    return {"secagg": True, "sent_bytes": channel.sent, "received_bytes": channel.received, "seconds": seconds,
            "crypto_seconds": crypto}
