"""SimulatedFleet and the synchronous loop against references."""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass

import torch
from torch import nn

from fedfit.aggregation import weighting
from fedfit.cost import MemoryModel, measure
from fedfit.data import build_federated_data
from fedfit.models import ModelSpec
from fedfit.orchestration.sync import SyncConfig, SyncOrchestrator
from fedfit.policy import FixedPlanner
from fedfit.simulation.executors import LocalExecutor
from fedfit.simulation.fleet import SimulatedFleet
from fedfit.simulation.workload import Workload, WorkloadRecipe
from fedfit.training import evaluate, task_generator
from fedfit.types import DeviceState, FailureCause, TrainPlan
from tests.helpers import profile, state


@dataclass(frozen=True)
class ConstantTrace:
    """A device whose state never changes."""

    value: DeviceState

    def state_at(self, t_s: float) -> DeviceState:
        return self.value


def _setup(num_devices: int, states: list[DeviceState], batch: int = 8, rounds: int = 3,
           profiles: list | None = None, deadline: float | None = None, k: int | None = None,
           over: float = 0.0):
    kwargs = {"dataset": "digits", "num_devices": num_devices, "partition": "iid", "seed": 5,
              "max_train_samples": 200 * num_devices}
    data = build_federated_data(**kwargs)
    spec = ModelSpec("logreg", data.input_shape, data.num_classes)
    recipe = WorkloadRecipe(spec, tuple(sorted(kwargs.items())), seed=5)
    workload = Workload(recipe, data)
    fleet = SimulatedFleet(profiles=profiles or [profile()] * num_devices,
                           traces=[ConstantTrace(s) for s in states],
                           num_examples=[len(d) for d in data.train], costs=functools.partial(measure, spec),
                           memory=MemoryModel(), executor=LocalExecutor(workload))
    test = data.global_test
    model = spec.build()
    orch = SyncOrchestrator(fleet=fleet, planner=FixedPlanner(batch_size=batch, lr=0.1, deadline_s=deadline),
                            weighting=weighting("samples"),
                            evaluator=lambda p: evaluate(model, p, test.x, test.y),
                            config=SyncConfig(rounds=rounds, clients_per_round=k or num_devices,
                                              deadline_s=deadline, over_selection=over), seed=5)
    torch.manual_seed(0)
    initial = {k_: v.clone() for k_, v in spec.build().state_dict().items()}
    return data, spec, fleet, orch, initial


def test_one_device_fedavg_equals_local_sgd() -> None:
    data, spec, _, orch, initial = _setup(1, [state()], rounds=3)
    outcomes = list(orch.rounds(initial))
    final = outcomes[-1].params

    model = spec.build()
    model.load_state_dict(initial)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = data.train[0].x, data.train[0].y
    for r in range(3):  # one epoch a round, reshuffled from (seed, device, round)
        for idx in torch.randperm(len(x), generator=task_generator(5, 0, r)).split(8):
            opt.zero_grad()
            nn.functional.cross_entropy(model(x[idx]), y[idx]).backward()
            opt.step()
    for name, value in model.state_dict().items():
        assert torch.allclose(final[name], value, atol=1e-6)


def test_fedavg_round_is_sample_weighted_mean_of_local_models() -> None:
    data, spec, _, orch, initial = _setup(3, [state()] * 3, rounds=1)
    outcome = next(iter(orch.rounds(initial)))
    updates = [r.outcome for r in outcome.results]
    total = sum(u.samples_processed for u in updates)
    for name in initial:
        expected = sum(u.samples_processed * u.params[name].double() for u in updates) / total
        assert torch.allclose(outcome.params[name].double(), expected, atol=1e-6)


def test_out_of_memory_when_peak_exceeds_free_memory() -> None:
    spec_cost = measure(ModelSpec("logreg", (1, 8, 8), 10))
    free = MemoryModel().peak_bytes(spec_cost, 8) - 1  # batch 8 needs one byte more than there is
    _, _, _, orch, initial = _setup(2, [state(free_memory_bytes=free), state()], rounds=1)
    outcome = next(iter(orch.rounds(initial)))
    assert outcome.report.failures_by_cause == {FailureCause.OUT_OF_MEMORY.value: 1}
    assert sum(outcome.report.participants_by_tier.values()) == 1


def test_offline_device_fails_and_battery_failure_on_tiny_charge() -> None:
    states = [state(online=False, bandwidth_bps=0.0), state(battery_fraction=0.0500001), state()]
    _, _, _, orch, initial = _setup(3, states, rounds=1)
    report = next(iter(orch.rounds(initial))).report
    assert report.failures_by_cause == {"battery": 1, "offline": 1}


def test_deadline_drops_slow_devices() -> None:
    slow = profile(tier="slow", flops_per_s=1e3)
    fast = profile(tier="fast")
    _, _, _, orch, initial = _setup(2, [state()] * 2, rounds=1, profiles=[slow, fast], deadline=30.0)
    report = next(iter(orch.rounds(initial))).report
    assert report.failures_by_tier == {"slow": 1}
    assert report.failures_by_cause == {"deadline": 1}
    assert report.virtual_time_s == 30.0


def test_over_selection_keeps_first_k() -> None:
    slow = profile(tier="slow", flops_per_s=1e5)
    _, _, fleet, orch, initial = _setup(3, [state()] * 3, rounds=1, profiles=[slow, profile(), profile()],
                                        k=2, over=0.5)
    outcome = next(iter(orch.rounds(initial)))
    assert outcome.report.participants_by_tier == {"test": 2}
    assert outcome.report.failures_by_cause == {}
    assert not any(fleet.busy(d) for d in fleet.device_ids())


def test_virtual_time_is_download_compute_upload() -> None:
    _, _, _, orch, initial = _setup(1, [state()], rounds=1)
    outcome = next(iter(orch.rounds(initial)))
    (res,) = outcome.results
    c = res.cost
    # logreg 8x8→10: 650 params * 4 B = 2600 B each way at 1e7 bit/s + 0.05 s latency
    assert c.bytes_down == c.bytes_up == 650 * 4
    assert c.download_s == c.upload_s == 0.05 + 2600 * 8 / 1e7
    plan = TrainPlan(0, 0, 8)
    assert res.plan.micro_batch == plan.micro_batch
    assert outcome.report.virtual_time_s == res.finish_s == c.download_s + c.compute_s + c.upload_s


class PoisonExecutor:
    """Returns updates with a NaN in them: the server must reject, count and not average them."""

    def __init__(self, inner: LocalExecutor) -> None:
        self.inner = inner

    def submit(self, task):  # type: ignore[no-untyped-def]
        update = self.inner.workload.run(task)
        poisoned = {k: torch.full_like(v, float("nan")) for k, v in update.params.items()}

        class Done:
            def result(self_inner):  # type: ignore[no-untyped-def]
                return dataclasses.replace(update, params=poisoned)

            def cancel(self_inner) -> bool:  # type: ignore[no-untyped-def]
                return False

        return Done()

    def close(self) -> None:
        return None


def test_non_finite_update_is_rejected_and_counted() -> None:
    _, _, fleet, orch, initial = _setup(2, [state()] * 2, rounds=1)
    fleet._executor = PoisonExecutor(fleet._executor)  # noqa: SLF001 - inject a faulty device
    outcome = next(iter(orch.rounds(initial)))
    assert outcome.report.rejected_updates == 2
    assert outcome.report.failures_by_cause == {"rejected": 2}
    assert outcome.report.participants_by_tier == {}
    for name, value in initial.items():
        assert torch.equal(outcome.params[name], value)


def test_checked_in_states_are_read_again_at_dispatch_until_energy_is_spent() -> None:
    """A snapshot at the check-in's time is its state with the energy spent so far (0.9 of a
    36 kJ battery, minus what each finished task drew), before and after tasks finish."""
    _, _, fleet, _, initial = _setup(3, [state(battery_fraction=0.9)] * 3)
    first = fleet.snapshot_many([0, 1, 2], 0.0)
    assert [s.battery_fraction for s in first] == [0.9] * 3
    assert fleet.snapshot(1, 0.0) is first[1]  # read again, not recomputed

    fleet.dispatch(TrainPlan(device_id=1, round=0, micro_batch=8), initial, 0.0)
    spent = fleet.energy_used_j(1)  # finishes the dispatched task: its energy is spent
    assert spent > 0
    again = fleet.snapshot(1, 0.0)
    assert again.battery_fraction == 0.9 - spent / 36000.0
    assert fleet.snapshot(0, 0.0).battery_fraction == 0.9
    assert fleet.snapshot_many([1], 0.0)[0] == again
