"""A server over in-memory state, two enrolled devices and one task in flight for device 0."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
import torch
from fastapi.testclient import TestClient

from fedfit.devices import tier
from fedfit.transport.app import create_app
from fedfit.transport.clock import WallClock
from fedfit.transport.codec import encode
from fedfit.transport.fleet import NetworkFleet
from fedfit.transport.service import Coordinator, Limits
from fedfit.transport.state import InMemoryState
from fedfit.types import Params, TrainPlan

SECRET = "fleet-secret"
EXAMPLES = 20


def profile_body(**over: object) -> dict[str, object]:
    return {"total_memory_bytes": 2**31, "cpu_cores": 4, "arch": "x86_64", "flops_per_s": 1e9,
            "num_examples": EXAMPLES} | over


def report(**over: object) -> str:
    return json.dumps({"samples_processed": 20, "steps": 5, "micro_batch": 4, "accumulation_steps": 1,
                       "train_loss": 0.5, "duration_s": 1.0, "num_examples": EXAMPLES} | over)


def sent_params() -> Params:
    return {"w": torch.zeros(3, 2), "b": torch.zeros(3)}


def payload(params: Params | None = None, rep: str | None = None) -> bytes:
    p = params if params is not None else {"w": torch.full((3, 2), 0.1), "b": torch.full((3,), 0.1)}
    return encode(p, {"report": report() if rep is None else rep})


@dataclass
class Server:
    client: TestClient
    coord: Coordinator
    store: InMemoryState
    fleet: NetworkFleet
    tokens: list[str]
    task_id: str

    def auth(self, device: int) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.tokens[device]}"}

    def snapshot(self) -> tuple[object, ...]:
        """What a refused request must leave unchanged."""
        return (tuple((t.task_id, t.status) for t in self.store.tasks()), len(self.store.journal()),
                self.store.progress(), len(self.store.devices()), self.coord.version)


@pytest.fixture
def server() -> Iterator[Server]:
    store, clock = InMemoryState(), WallClock()
    coord = Coordinator(store, SECRET, 3, Limits(max_body_bytes=20_000, max_update_norm=10.0, max_staleness=1),
                        clock.now)
    with TestClient(create_app(coord, poll_wait_s=0.2)) as client:
        tokens = []
        for _ in range(2):
            resp = client.post("/v1/enrol", json={"secret": SECRET, "profile": profile_body()})
            assert resp.status_code == 200
            tokens.append(resp.json()["token"])
        fleet = NetworkFleet(store=store, profiles=[tier("flagship_phone")] * 2, num_examples=[EXAMPLES] * 2,
                             clock=clock, task_timeout_s=600.0, heartbeat_timeout_s=600.0)
        coord.fleet = fleet
        fleet.dispatch(TrainPlan(device_id=0, round=0, micro_batch=4), sent_params(), 0.0)
        yield Server(client, coord, store, fleet, tokens, store.tasks("issued")[0].task_id)
