"""Sync rounds with sampled candidates: only candidates check in, whatever the fleet's size."""

from fedfit.aggregation import weighting
from fedfit.orchestration.sync import SyncConfig, SyncOrchestrator
from fedfit.policy import FixedPlanner
from tests.orchestration.fakes import FakeFleet, scalar


class CountingFleet(FakeFleet):
    """A FakeFleet counting the state snapshots the server asks for."""

    def __init__(self, devices: int) -> None:
        super().__init__(durations=[1.0] * devices, deltas=[1.0] * devices)
        self.snapshots = 0

    def snapshot(self, device_id: int, at_s: float):  # type: ignore[no-untyped-def]
        self.snapshots += 1
        return super().snapshot(device_id, at_s)


def _run(devices: int, candidates: int | None, rounds: int = 3) -> CountingFleet:
    fleet = CountingFleet(devices)
    config = SyncConfig(rounds=rounds, clients_per_round=10, candidates=candidates)
    orch = SyncOrchestrator(fleet=fleet, planner=FixedPlanner(batch_size=1), weighting=weighting("uniform"),
                            evaluator=lambda p: (0.0, 0.0), config=config, seed=0)
    list(orch.rounds(scalar(0.0)))
    return fleet


def test_sampled_rounds_check_in_only_their_candidates() -> None:
    small, big = _run(500, candidates=40), _run(20_000, candidates=40)

    # 40 candidates per round, 3 rounds, whether the fleet has 500 devices or 20,000.
    assert small.snapshots == big.snapshots == 3 * 40


def test_without_sampling_every_idle_device_checks_in() -> None:
    assert _run(500, candidates=None, rounds=2).snapshots == 2 * 500


def test_sampled_rounds_are_deterministic_and_invite_distinct_devices() -> None:
    first, second = _run(5_000, candidates=30), _run(5_000, candidates=30)

    assert first.dispatched == second.dispatched
    for r in range(3):
        devices = [d for _, d, version in first.dispatched if version == r]
        assert len(devices) == len(set(devices)) == 10
