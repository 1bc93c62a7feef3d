"""Deployed SecAgg in one process: the routes over a NetworkFleet with tasks of two widths, devices
as threads running the real device side (:func:`secure_upload`) over TestClients, one device that
stops after sharing its keys; hostile bodies; a restart cancelling the round's tasks."""

from __future__ import annotations

import json
import random
import threading
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
import torch
from fastapi import FastAPI
from fastapi.testclient import TestClient

from fedfit.aggregation import masked_weighted_average
from fedfit.config import parse_config
from fedfit.devices import tier
from fedfit.models import ModelSpec
from fedfit.orchestration.submodels import SubModelExchange
from fedfit.security.secagg.private_sum import CohortSums, SummedAggregate
from fedfit.security.secagg.protocol import SecAggClient
from fedfit.transport.app import create_app
from fedfit.transport.client import DeviceClient
from fedfit.transport.clock import WallClock
from fedfit.transport.codec import encode, with_masks
from fedfit.transport.fleet import NetworkFleet
from fedfit.transport.secagg_device import secure_upload
from fedfit.transport.secagg_hub import SecAggHub, cancel_on_restart
from fedfit.transport.secagg_vectors import template_of
from fedfit.transport.service import Coordinator, Limits
from fedfit.transport.state import InMemoryState, TaskRecord
from fedfit.types import Failure, TrainPlan, Update

SECRET = "fleet-secret"
SPEC = ModelSpec("mlp", (6,), 3)
WIDTHS = [1.0, 1.0, 1.0, 0.5, 0.5, 0.5]
EXAMPLES = 40
CONFIG = parse_config({"privacy": {"secure_aggregation": {"enabled": True, "min_cohort": 3, "phase_timeout_s": 1.5}},
                       "fleet": {"tiers": {"flagship_phone": len(WIDTHS)}}})


def report(samples: int) -> dict[str, object]:
    return {"samples_processed": samples, "steps": 4, "micro_batch": 10, "accumulation_steps": 1,
            "train_loss": 0.5, "duration_s": 1.0, "num_examples": EXAMPLES}


@dataclass
class Run:
    app_coord: Coordinator
    fleet: NetworkFleet
    exchange: SubModelExchange
    master: dict[str, torch.Tensor]
    sums: CohortSums
    tokens: list[str]
    tasks: list[str]
    app: FastAPI  # one server for every device thread: building routes is not thread-safe (warning filters)

    def client(self, device: int) -> DeviceClient:
        c = DeviceClient(TestClient(self.app), SECRET, attempts=2)
        c.token, c.device_id = self.tokens[device], device
        return c


@pytest.fixture
def run() -> Iterator[Run]:
    store, clock = InMemoryState(), WallClock()
    coord = Coordinator(store, SECRET, len(WIDTHS), Limits(2**20, 1e4, None), clock.now)
    profile = {"total_memory_bytes": 2**31, "cpu_cores": 4, "arch": "x86_64", "flops_per_s": 1e9,
               "num_examples": EXAMPLES}
    http = TestClient(create_app(coord))
    tokens = [http.post("/v1/enrol", json={"secret": SECRET, "profile": profile}).json()["token"] for _ in WIDTHS]
    fleet = NetworkFleet(store=store, profiles=[tier("flagship_phone")] * len(WIDTHS),
                         num_examples=[EXAMPLES] * len(WIDTHS), clock=clock, task_timeout_s=600.0,
                         heartbeat_timeout_s=600.0)
    coord.fleet = fleet
    exchange = SubModelExchange.for_spec(SPEC)
    torch.manual_seed(0)
    master = {k: v.detach().clone() for k, v in SPEC.build().state_dict().items()}
    for d, w in enumerate(WIDTHS):
        plan = TrainPlan(device_id=d, round=0, micro_batch=10, width=w)
        fleet.dispatch(plan, exchange.outgoing(plan, master), 0.0)
    sums = CohortSums()
    coord.secagg = SecAggHub(fleet=fleet, store=store, exchange=exchange, template=template_of(SPEC), sums=sums,
                             threshold=0.5, min_cohort=3, timeout_s=1.5, result_of=coord.result_of)
    tasks = [fleet.task_for(d).task_id for d in range(len(WIDTHS))]  # type: ignore[union-attr]
    yield Run(coord, fleet, exchange, master, sums, tokens, tasks, create_app(coord))


def trained(run: Run, device: int) -> tuple[Update, bytes, bytes]:
    """A made-up update of ``device``'s sub-model: the payloads it received and would upload."""
    task = run.fleet.task_for(device)
    assert task is not None
    gen = torch.Generator().manual_seed(100 + device)
    params = {k: v + torch.randn(v.shape, generator=gen) for k, v in task.sent.items()}
    samples = 10 * (device + 1)
    update = Update(device, 0, params, EXAMPLES, samples, 4, 10, 1, 0.5)
    body = encode(with_masks(params, None), {"report": json.dumps(report(samples))})
    return update, encode(task.sent), body


def test_two_width_cohorts_with_a_dropout_give_the_plain_average_of_the_survivors(run: Run) -> None:
    dropped = 4  # in the width-0.5 cohort: shares its keys, never masks
    outcomes: dict[int, object] = {}
    updates = {d: trained(run, d) for d in range(len(WIDTHS))}

    def device(d: int) -> None:
        plan = run.fleet.task_for(d).plan  # type: ignore[union-attr]
        _, payload, body = updates[d]
        outcomes[d] = secure_upload(run.client(d), CONFIG, SPEC, plan, (run.tasks[d], payload, body), lambda _: None)

    def quitter() -> None:
        c, rng = run.client(dropped), random.Random(7)
        me = SecAggClient(dropped, rng)
        ck, sk = me.advertise()
        _, _, body = updates[dropped]
        rep = report(50)
        c._call("POST", f"/v1/tasks/{run.tasks[dropped]}/secagg/keys",
                json={"c_key": ck.hex(), "s_key": sk.hex(), "report": rep})
        while (st := c._call("GET", f"/v1/tasks/{run.tasks[dropped]}/secagg").json())["phase"] == "keys":
            threading.Event().wait(0.1)
        roster = {int(k): (bytes.fromhex(a), bytes.fromhex(b)) for k, (a, b) in st["roster"].items()}
        boxes = me.share_keys(roster, st["threshold"], rng)
        c._call("POST", f"/v1/tasks/{run.tasks[dropped]}/secagg/shares",
                json={"boxes": {str(j): b.hex() for j, b in boxes.items()}})

    threads = [threading.Thread(target=quitter if d == dropped else device, args=() if d == dropped else (d,))
               for d in range(len(WIDTHS))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert sorted(outcomes) == [0, 1, 2, 3, 5]
    survivors = [d for d in range(len(WIDTHS)) if d != dropped]
    reference = masked_weighted_average(run.master, [
        run.exchange.contribution(updates[d][0], run.master, float(updates[d][0].samples_processed))
        for d in survivors])
    secure = SummedAggregate(run.sums)(run.master, [])
    for name in run.master:
        torch.testing.assert_close(secure[name], reference[name], atol=1e-6, rtol=0)
    results = [run.fleet.next_result() for _ in WIDTHS]
    kinds = {r.plan.device_id: type(r.outcome) for r in results if r is not None}
    assert kinds == {d: (Failure if d == dropped else Update) for d in range(len(WIDTHS))}


def refusal(resp: object) -> tuple[int, str]:
    body = resp.json()  # type: ignore[attr-defined]
    assert set(body) == {"error", "detail"} and "\n" not in body["detail"]
    return resp.status_code, body["error"]  # type: ignore[attr-defined]


@pytest.mark.parametrize(("path", "body", "code"), [
    ("keys", {"c_key": "zz" * 32, "s_key": "00" * 32, "report": report(10)}, "bad_secagg_keys"),
    ("keys", {"c_key": "00" * 31, "s_key": "00" * 32, "report": report(10)}, "bad_secagg_keys"),
    ("keys", {"c_key": "00" * 32, "s_key": "00" * 32}, "bad_secagg_keys"),
    ("keys", {"c_key": "00" * 32, "s_key": "00" * 32, "report": report(10) | {"num_examples": 7}}, "bad_count"),
    ("shares", {"boxes": {"0": "00"}}, "bad_secagg_shares"),
    ("reveal", {"shares": {"0": {"kind": "q", "x": 1, "y": "1"}}}, "bad_secagg_reveal"),
])
def test_malformed_bodies_get_one_line_4xx(run: Run, path: str, body: dict[str, object], code: str) -> None:
    http = TestClient(create_app(run.app_coord))
    resp = http.post(f"/v1/tasks/{run.tasks[0]}/secagg/{path}", json=body,
                     headers={"Authorization": f"Bearer {run.tokens[0]}"})
    assert refusal(resp) == (422, code)


def test_wrong_phase_wrong_task_wrong_length_and_plain_uploads_are_refused(run: Run) -> None:
    http = TestClient(create_app(run.app_coord))
    auth = {"Authorization": f"Bearer {run.tokens[0]}"}
    url = f"/v1/tasks/{run.tasks[0]}/secagg"
    assert refusal(http.post(url + "/masked", content=b"\0" * 8, headers=auth | {
        "Content-Type": "application/octet-stream"})) == (409, "secagg_unknown")
    assert refusal(http.post(f"/v1/tasks/{run.tasks[1]}/secagg/keys", headers=auth, json={
        "c_key": "00" * 32, "s_key": "00" * 32, "report": report(10)})) == (403, "not_your_task")
    assert refusal(http.post(f"/v1/tasks/{run.tasks[0]}/update", content=b"x", headers=auth | {
        "Content-Type": "application/octet-stream"})) == (409, "secagg_required")
    run.app_coord.secagg = None
    assert refusal(http.get(url, headers=auth)) == (404, "secagg_off")


def test_a_restart_cancels_the_tasks_of_the_round_in_flight() -> None:
    store = InMemoryState()
    for i in range(3):
        store.issue(TaskRecord(f"t{i}", i, 4, "{}", 0.0))
    store.set_status("t2", "failed", "out of memory")
    assert cancel_on_restart(store) == 2
    assert {t.task_id: t.status for t in store.tasks()} == {"t0": "cancelled", "t1": "cancelled", "t2": "failed"}
