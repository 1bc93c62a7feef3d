"""The readiness query deployed (seed 000): the device answers from its own batch policy, the
server validates the answer, and selection reads it the way simulation reads the policy."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from fedfit.config import parse_config
from fedfit.cost import MemoryModel, TaskPredictor, measure
from fedfit.models import ModelSpec
from fedfit.orchestration.cohort import Cohort, check_in, enrol
from fedfit.policy import DeferringSelector, FixedPlanner, UniformSelector
from fedfit.transport.client import DeviceClient
from fedfit.transport.device import Device, DeviceOptions
from fedfit.transport.messages import ProfileReport, ReadinessReport
from fedfit.transport.server import ServerRun
from fedfit.types import Techniques, TrainPlan
from tests.helpers import state
from tests.transport.conftest import Server
from tests.transport.test_device import SECRET, deployed_run, tiny
from tests.transport.test_fleet import make_fleet

POLICY_BATCH = 8  # what the server-side policy would say for every device


def _invite(fleet_devices: int, answers: dict[int, ReadinessReport], planned: int = 4) -> list[int]:
    fleet, _ = make_fleet(fleet_devices)
    for device, answer in answers.items():
        fleet.report_readiness(device, answer)
    for device in range(fleet_devices):
        fleet.heartbeat(device, state())
    registry = enrol(fleet)
    check_in(registry, fleet, fleet.device_ids(), 0.0)
    predictor = TaskPredictor(lambda w: measure(ModelSpec("logreg", (4,), 2)), MemoryModel(), [20] * fleet_devices, 8)
    cohort = Cohort(FixedPlanner(batch_size=planned), DeferringSelector(UniformSelector()), predictor,
                    fleet.batch_readiness(lambda plan, profile, st: POLICY_BATCH))
    plans = cohort.invite(registry, fleet.device_ids(), fleet_devices, round_=0, seed=0, draw=0)
    return sorted(p.device_id for p in plans)


def test_a_device_that_answers_not_ready_is_deferred_though_its_state_looks_fine() -> None:
    answers = {1: ReadinessReport(ready=False, reason="thermal: hot", affordable_batch=0)}
    assert _invite(3, answers) == [0, 2]


def test_selection_reads_the_batch_the_device_answered_not_the_servers_policy() -> None:
    # planned 4: device 1 affords only 2 (deferred, it would run out of memory); device 2 affords 16
    answers = {1: ReadinessReport(ready=True, affordable_batch=2), 2: ReadinessReport(ready=True, affordable_batch=16)}
    assert _invite(3, answers) == [0, 2]  # device 0 never answered: the policy's 8 >= 4


def test_a_plan_at_another_width_or_with_a_technique_falls_back_to_the_policy() -> None:
    fleet, _ = make_fleet(1)
    fleet.report_readiness(0, ReadinessReport(ready=True, affordable_batch=2))
    batch = fleet.batch_readiness(lambda plan, profile, st: POLICY_BATCH)
    plain = TrainPlan(device_id=0, round=0, micro_batch=4)
    assert batch(plain, fleet.profile(0), state()) == 2
    assert batch(dataclasses.replace(plain, width=0.5), fleet.profile(0), state()) == POLICY_BATCH
    checkpointed = dataclasses.replace(plain, techniques=Techniques(checkpointing=True))
    assert batch(checkpointed, fleet.profile(0), state()) == POLICY_BATCH
    fleet.report_readiness(0, ReadinessReport(ready=False, reason="battery", affordable_batch=0))
    assert batch(checkpointed, fleet.profile(0), state()) == 0  # not ready is not ready at any width


def test_the_readiness_route_stores_a_valid_answer(server: Server) -> None:
    body = {"ready": True, "affordable_batch": 12}
    resp = server.client.post("/v1/readiness", json=body, headers=server.auth(1))
    assert resp.status_code == 204
    batch = server.fleet.batch_readiness(lambda plan, profile, st: 0)
    assert batch(TrainPlan(device_id=1, round=0, micro_batch=4), server.fleet.profile(1), state()) == 12


@pytest.mark.parametrize(("body", "code"), [
    ({"ready": True, "affordable_batch": 0}, "bad_readiness"),
    ({"ready": False, "affordable_batch": 3}, "bad_readiness"),
    ({"ready": True, "affordable_batch": -1}, "bad_readiness"),
    ({"ready": True}, "bad_readiness"),
    ({"ready": True, "affordable_batch": 4, "extra": 1}, "bad_readiness"),
])
def test_a_malformed_readiness_answer_is_refused_and_changes_nothing(server: Server, body: dict[str, object],
                                                                    code: str) -> None:
    before = server.snapshot()
    resp = server.client.post("/v1/readiness", json=body, headers=server.auth(1))
    assert resp.status_code == 422 and resp.json()["error"] == code
    assert server.snapshot() == before
    batch = server.fleet.batch_readiness(lambda plan, profile, st: 5)
    assert batch(TrainPlan(device_id=1, round=0, micro_batch=4), server.fleet.profile(1), state()) == 5


def test_a_readiness_answer_needs_a_device_token(server: Server) -> None:
    resp = server.client.post("/v1/readiness", json={"ready": True, "affordable_batch": 4})
    assert resp.status_code == 401


def test_the_device_answers_from_its_own_policy_on_its_state(tmp_path: Path) -> None:
    raw = tiny(batching={"mode": "dynamic"})
    run = ServerRun(parse_config(raw), tmp_path, SECRET)
    device = Device(DeviceClient(None, SECRET), DeviceOptions())  # type: ignore[arg-type]
    device.read_config(json.loads(json.dumps(run.coord.config_body)))
    device.setup(ProfileReport(total_memory_bytes=2**32, cpu_cores=4, arch="x86_64", flops_per_s=1e9,
                               num_examples=100))
    roomy = device.readiness(state(free_memory_bytes=2**31))
    assert roomy is not None and roomy.ready and roomy.affordable_batch >= 1
    full = device.readiness(state(free_memory_bytes=0))
    assert full == ReadinessReport(ready=False, reason=full.reason, affordable_batch=0) and "memory" in full.reason


def test_readiness_selection_runs_deployed_and_skips_the_device_that_is_not_ready(tmp_path: Path) -> None:
    raw = tiny(batching={"mode": "dynamic", "selection": "readiness"},
               orchestration={"clients_per_round": 1, "rounds": 2})
    # device 1 has a 1-byte limit: its policy answers "not ready" (0), and readiness-first selection
    # invites the device that affords a batch first
    options = [DeviceOptions(shard=(0, 2)), DeviceOptions(shard=(1, 2), memory_limit_bytes=1)]
    run, codes = deployed_run(tmp_path, raw, options)
    assert codes == [0, 0]
    profiles = [ProfileReport.model_validate_json(r.profile_json) for r in run.store.devices()]
    roomy = next(i for i, p in enumerate(profiles) if p.memory_limit_bytes is None)
    assert {t.device_id for t in run.store.tasks()} == {roomy}
    assert len(run.store.journal()) == 2
