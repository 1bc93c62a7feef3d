"""Hostile requests: each answers a 4xx with a one-line JSON error, changes no state, and is counted."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import pytest
import torch

from tests.transport.conftest import SECRET, Server, payload, profile_body, report

OCTET = {"Content-Type": "application/octet-stream"}
JSON = {"Content-Type": "application/json"}
GOOD_STATE = '{"free_memory_bytes": 1000000}'


@dataclass(frozen=True)
class Case:
    name: str
    send: Callable[[Server], object]
    status: int
    code: str


def upload(body: bytes, device: int = 0, headers: dict[str, str] | None = None) -> Callable[[Server], object]:
    def send(s: Server) -> object:
        return s.client.post(f"/v1/tasks/{s.task_id}/update", content=body,
                             headers=s.auth(device) | (headers or OCTET))
    return send


def heartbeat(body: str, headers: Callable[[Server], dict[str, str]] | None = None) -> Callable[[Server], object]:
    def send(s: Server) -> object:
        return s.client.post("/v1/heartbeat", content=body, headers=(headers or (lambda s: s.auth(0)))(s) | JSON)
    return send


def good() -> dict[str, torch.Tensor]:
    return {"w": torch.full((3, 2), 0.1), "b": torch.full((3,), 0.1)}


def forged(s: Server) -> dict[str, str]:
    token = s.tokens[0]
    return {"Authorization": f"Bearer {token[:-1]}{'A' if token[-1] != 'A' else 'B'}"}


CASES = [
    Case("enrol: wrong secret", lambda s: s.client.post("/v1/enrol", json={"secret": "nope", "profile": profile_body()}),
         401, "bad_secret"),
    Case("enrol: malformed JSON", lambda s: s.client.post("/v1/enrol", content=b"{not json", headers=JSON),
         422, "bad_enrol"),
    Case("enrol: negative example count", lambda s: s.client.post(
        "/v1/enrol", json={"secret": SECRET, "profile": profile_body(num_examples=-3)}), 422, "bad_enrol"),
    Case("enrol: wrong content type", lambda s: s.client.post("/v1/enrol", content=b"secret=x",
                                                              headers={"Content-Type": "text/plain"}),
         415, "content_type"),
    Case("config: no fleet secret", lambda s: s.client.get("/v1/config"), 401, "bad_secret"),
    Case("token: missing", lambda s: s.client.post("/v1/heartbeat", content=GOOD_STATE, headers=JSON),
         401, "missing_token"),
    Case("token: not a bearer token", heartbeat(GOOD_STATE, lambda s: {"Authorization": f"Basic {s.tokens[0]}"}),
         401, "bad_auth_scheme"),
    Case("token: unknown", heartbeat(GOOD_STATE, lambda s: {"Authorization": "Bearer made-up"}), 401, "unknown_token"),
    Case("token: forged (one character changed)", heartbeat(GOOD_STATE, forged), 401, "unknown_token"),
    Case("state: malformed JSON", heartbeat("{free_memory_bytes: 1"), 422, "bad_state"),
    Case("state: negative memory", heartbeat('{"free_memory_bytes": -1}'), 422, "bad_state"),
    Case("state: battery above 1", heartbeat('{"free_memory_bytes": 1, "battery_fraction": 1.5}'), 422, "bad_state"),
    Case("state: unknown key", heartbeat('{"free_memory_bytes": 1, "gpu": 3}'), 422, "bad_state"),
    Case("state: body over the cap", heartbeat('{"free_memory_bytes": 1' + " " * 30_000 + "}"),
         413, "body_too_large"),
    Case("update: wrong content type", upload(payload(), headers=JSON), 415, "content_type"),
    Case("update: unknown task", lambda s: s.client.post("/v1/tasks/nope/update", content=payload(),
                                                         headers=s.auth(0) | OCTET), 404, "unknown_task"),
    Case("update: another device's task", upload(payload(), device=1), 403, "not_your_task"),
    Case("model: another device's task", lambda s: s.client.get(f"/v1/tasks/{s.task_id}/model", headers=s.auth(1)),
         403, "not_your_task"),
    Case("update: malformed safetensors", upload(b"\x08\x00\x00\x00\x00\x00\x00\x00{bad json"), 400,
         "malformed_payload"),
    Case("update: random bytes", upload(b"hello world, not tensors"), 400, "malformed_payload"),
    Case("update: tensor missing", upload(payload({"w": torch.zeros(3, 2)})), 422, "tensor_names"),
    Case("update: tensor not in the task", upload(payload(good() | {"extra": torch.zeros(1)})), 422, "tensor_names"),
    Case("update: wrong shape", upload(payload(good() | {"b": torch.zeros(4)})), 422, "tensor_shape"),
    Case("update: wrong dtype", upload(payload(good() | {"b": torch.zeros(3, dtype=torch.float64)})), 422,
         "tensor_dtype"),
    Case("update: NaN", upload(payload(good() | {"b": torch.tensor([0.0, math.nan, 0.0])})), 422, "non_finite"),
    Case("update: Inf", upload(payload(good() | {"w": torch.full((3, 2), math.inf)})), 422, "non_finite"),
    Case("update: norm above the bound", upload(payload(good() | {"w": torch.full((3, 2), 100.0)})), 422,
         "update_norm"),
    Case("update: mask of the wrong dtype", upload(payload(good() | {"mask/w": torch.ones(3, 2)})), 422,
         "tensor_mask"),
    Case("report: negative samples", upload(payload(rep=report(samples_processed=-5))), 422, "bad_report"),
    Case("report: more samples than data × epochs", upload(payload(rep=report(samples_processed=10**6))), 422,
         "bad_count"),
    Case("report: negative duration", upload(payload(rep=report(duration_s=-1.0))), 422, "bad_report"),
    Case("report: infinite loss", upload(payload(rep=report(train_loss=math.inf))), 422, "bad_report"),
    Case("report: malformed JSON", upload(payload(rep="{samples: ")), 422, "bad_report"),
    Case("report: missing", upload(payload(rep="")), 422, "bad_report"),
    Case("report: example count not the enrolled one", upload(payload(rep=report(num_examples=7))), 422,
         "bad_count"),
    Case("update: body over the cap", upload(b"\x00" * 30_000), 413, "body_too_large"),
    Case("failure: a cause devices cannot report", lambda s: s.client.post(
        f"/v1/tasks/{s.task_id}/failure", json={"cause": "stale"}, headers=s.auth(0)), 422, "bad_cause"),
    Case("failure: unknown cause", lambda s: s.client.post(
        f"/v1/tasks/{s.task_id}/failure", json={"cause": "bored"}, headers=s.auth(0)), 422, "bad_failure"),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_hostile_request_is_refused_without_effect(server: Server, case: Case) -> None:
    before = server.snapshot()
    resp = case.send(server)
    assert resp.status_code == case.status  # type: ignore[attr-defined]
    body = resp.json()  # type: ignore[attr-defined]
    assert body["error"] == case.code and "\n" not in body["detail"]
    assert server.snapshot() == before
    assert server.client.get("/metrics").json()["rejected_requests"] == {case.code: 1}


def test_replay_of_an_accepted_upload_is_refused(server: Server) -> None:
    first = upload(payload())(server)
    assert first.status_code == 200  # type: ignore[attr-defined]
    before = server.snapshot()
    again = upload(payload())(server)
    assert again.status_code == 409 and again.json()["error"] == "replay"  # type: ignore[attr-defined]
    assert server.snapshot() == before and len(server.store.journal()) == 1


def test_stale_round_is_refused(server: Server) -> None:
    server.coord.version = 5  # the task's round 0 is 5 versions old; max_staleness is 1
    before = server.snapshot()
    resp = upload(payload())(server)
    assert resp.status_code == 409 and resp.json()["error"] == "stale"  # type: ignore[attr-defined]
    assert server.snapshot() == before


def test_chunked_body_over_the_cap_is_refused_while_reading(server: Server) -> None:
    def chunks() -> object:
        for _ in range(30):
            yield b"\x00" * 1000

    before = server.snapshot()
    resp = server.client.post(f"/v1/tasks/{server.task_id}/update", content=chunks(),  # type: ignore[arg-type]
                              headers=server.auth(0) | OCTET)
    assert resp.status_code == 413 and resp.json()["error"] == "body_too_large"
    assert server.snapshot() == before


def test_enrolment_beyond_the_fleet_is_refused(server: Server) -> None:
    third = server.client.post("/v1/enrol", json={"secret": SECRET, "profile": profile_body()})
    assert third.status_code == 200
    before = server.snapshot()
    fourth = server.client.post("/v1/enrol", json={"secret": SECRET, "profile": profile_body()})
    assert fourth.status_code == 409 and fourth.json()["error"] == "fleet_full"
    assert server.snapshot() == before


def test_a_good_upload_is_journalled_then_handed_to_the_orchestrator(server: Server) -> None:
    resp = upload(payload())(server)
    assert resp.status_code == 200 and resp.json() == {"accepted": True, "journal_seq": 1}
    assert server.store.task(server.task_id).status == "accepted"  # type: ignore[union-attr]
    result = server.fleet.next_result()
    assert result is not None and result.ok and result.plan.device_id == 0
    assert torch.allclose(result.outcome.params["w"], torch.full((3, 2), 0.1))  # type: ignore[union-attr]
    assert server.fleet.settled() == ((1,), ())


def test_a_device_gets_the_slot_it_asks_for_or_else_the_next_free_one(server: Server) -> None:
    # `--shard I/N` asks for slot I, so shard I trains as device I (its tier and training seed), as
    # in simulation, whatever order the devices enrol in; slots 0 and 1 are taken by the fixture
    resp = server.client.post("/v1/enrol", json={"secret": SECRET, "profile": profile_body(), "slot": 1})
    assert resp.status_code == 200 and resp.json()["device_id"] == 2
