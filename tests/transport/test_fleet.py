"""NetworkFleet behind the Fleet contract: the unchanged SyncOrchestrator over it, and its timeouts."""

from __future__ import annotations

import threading
import time

import torch

from fedfit.aggregation import weighting
from fedfit.devices import tier
from fedfit.orchestration.sync import SyncConfig, SyncOrchestrator
from fedfit.policy import FixedPlanner
from fedfit.transport.clock import WallClock
from fedfit.transport.codec import encode
from fedfit.transport.fleet import NetworkFleet
from fedfit.transport.service import Coordinator, Limits
from fedfit.transport.state import InMemoryState
from fedfit.types import FailureCause, TrainPlan

from tests.transport.conftest import report


def make_fleet(devices: int = 2, heartbeat_s: float = 600.0) -> tuple[NetworkFleet, Coordinator]:
    store, clock = InMemoryState(), WallClock()
    coord = Coordinator(store, "s", devices, Limits(10**7, 1e6, None), clock.now)
    fleet = NetworkFleet(store=store, profiles=[tier("midrange_phone")] * devices, num_examples=[20] * devices,
                         clock=clock, task_timeout_s=600.0, heartbeat_timeout_s=heartbeat_s)
    coord.fleet = fleet
    return fleet, coord


def answer_tasks(fleet: NetworkFleet, coord: Coordinator, stop: threading.Event, shift: dict[int, float]) -> None:
    """Fake devices: each answers its task with the sent tensors plus its own constant."""
    while not stop.is_set():
        for device, delta in shift.items():
            task = fleet.task_for(device)
            if task is not None:
                params = {k: v + delta for k, v in task.sent.items()}
                coord.upload(device, task.task_id, encode(params, {"report": report()}))
        time.sleep(0.01)


def test_sync_orchestrator_runs_unchanged_over_the_network_fleet() -> None:
    fleet, coord = make_fleet()
    stop = threading.Event()
    devices = threading.Thread(target=answer_tasks, args=(fleet, coord, stop, {0: 1.0, 1: 3.0}))
    devices.start()
    try:
        orch = SyncOrchestrator(fleet=fleet, planner=FixedPlanner(batch_size=4), weighting=weighting("samples"),
                                evaluator=lambda p: (0.0, 0.0), config=SyncConfig(rounds=2, clients_per_round=2), seed=0)
        outcomes = list(orch.rounds({"w": torch.zeros(2, 2)}))
    finally:
        stop.set()
        devices.join()
    # Equal sample counts: FedAvg moves the model by the mean shift, (1 + 3) / 2 = 2 per round.
    assert torch.allclose(outcomes[-1].params["w"], torch.full((2, 2), 4.0))
    assert [o.report.participants_by_tier for o in outcomes] == [{"midrange_phone": 2}] * 2
    assert len(coord.store.journal()) == 4 and all(t.status == "accepted" for t in coord.store.tasks())
    assert sorted(fleet.settled()[0]) == [1, 2, 3, 4]


def test_a_task_past_its_deadline_fails_as_deadline() -> None:
    fleet, _ = make_fleet()
    fleet.dispatch(TrainPlan(device_id=0, round=0, micro_batch=4, deadline_s=0.2), {"w": torch.zeros(1)}, 0.0)
    assert fleet.busy(0)
    result = fleet.next_result()
    assert result is not None and result.outcome.cause is FailureCause.DEADLINE  # type: ignore[union-attr]
    assert fleet.store.tasks()[0].status == "failed" and not fleet.busy(0)


def test_a_silent_device_is_offline_and_its_task_fails() -> None:
    fleet, _ = make_fleet(heartbeat_s=0.2)
    fleet.dispatch(TrainPlan(device_id=1, round=0, micro_batch=4), {"w": torch.zeros(1)}, 0.0)
    result = fleet.next_result()
    assert result is not None and result.outcome.cause is FailureCause.OFFLINE  # type: ignore[union-attr]
    assert "heartbeat" in result.outcome.detail  # type: ignore[union-attr]
    assert not fleet.snapshot(1, 0.0).online
    fleet.dispatch(TrainPlan(device_id=1, round=1, micro_batch=4), {"w": torch.zeros(1)}, 0.0)
    again = fleet.next_result()  # unreachable at dispatch: fails at once, nothing issued
    assert again is not None and again.outcome.detail == "unreachable at dispatch"  # type: ignore[union-attr]
    assert len(fleet.store.tasks()) == 1


def test_cancel_pending_withdraws_tasks_and_drops_unread_updates() -> None:
    fleet, coord = make_fleet()
    for d in (0, 1):
        fleet.dispatch(TrainPlan(device_id=d, round=0, micro_batch=4), {"w": torch.zeros(1)}, 0.0)
    task = fleet.task_for(0)
    assert task is not None
    coord.upload(0, task.task_id, encode({"w": torch.ones(1)}, {"report": report()}))
    plans = fleet.cancel_pending()
    assert sorted(p.device_id for p in plans) == [0, 1]
    assert fleet.settled() == ((), (1,))
    assert sorted(t.status for t in coord.store.tasks()) == ["accepted", "cancelled"]
