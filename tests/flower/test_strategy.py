import pytest

pytest.importorskip("flwr", reason="Flower interop needs the extra: pip install fedfit[flower]")

from collections.abc import Iterable

import torch
from flwr.app import ArrayRecord, ConfigRecord, Message, MessageType, RecordDict

from fedfit.aggregation import WEIGHTINGS, AggregationRule, LocalSolver
from fedfit.flower.records import READINESS, failure_error, params_record, readiness_record, update_content
from fedfit.flower.strategy import FedfitStrategy
from fedfit.policy.readiness import Readiness
from fedfit.types import FailureCause, Thermal, Update
from tests.flower.messages import message


@pytest.fixture(autouse=True)
def _server_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """Messages a ServerApp creates need the run id Flower's runtime sets."""
    from flwr.supercore.task_identity import TaskIdentity

    monkeypatch.setattr(TaskIdentity, "_run_id", 1)
    monkeypatch.setattr(TaskIdentity, "_node_id", 0)
    monkeypatch.setattr(TaskIdentity, "_task_id", 0)


def _reply(update: Update) -> Message:
    return message(MessageType.TRAIN, update_content(update), src=update.device_id, dst=0)


def _failed(node: int, cause: FailureCause) -> Message:
    request = message(MessageType.TRAIN, RecordDict(), src=0, dst=node)
    return Message(failure_error(cause, "test"), reply_to=request)


def _update(device: int, value: float, *, samples: int, micro: int = 8, steps: int = 1) -> Update:
    return Update(device, 1, {"w": torch.tensor([value])}, samples, samples, steps, micro, 1, 0.1)


class FakeGrid:
    """Nodes that answer readiness queries with fixed readiness (no Flower runtime)."""

    def __init__(self, ready: dict[int, Readiness]) -> None:
        self.ready = ready
        self.queried: list[int] = []

    def get_node_ids(self) -> Iterable[int]:
        return list(self.ready)

    def send_and_receive(self, messages: Iterable[Message], *, timeout: float | None = None) -> Iterable[Message]:
        replies = []
        for m in messages:
            self.queried.append(m.metadata.dst_node_id)
            content = RecordDict({READINESS: readiness_record(self.ready[m.metadata.dst_node_id])})
            replies.append(message(MessageType.QUERY, content, src=m.metadata.dst_node_id, dst=0))
        return replies


def _ready(node: int, affordable: int, planned: int, thermal: Thermal = Thermal.NOMINAL) -> Readiness:
    return Readiness(node, "t", affordable, planned, 10.0, None, None, thermal, True)


def _start(strategy: FedfitStrategy, master: float = 0.0, grid: FakeGrid | None = None) -> list[Message]:
    grid = grid or FakeGrid({n: _ready(n, 32, 32) for n in (1, 2)})
    arrays = params_record({"w": torch.tensor([master])})
    return list(strategy.configure_train(1, arrays, ConfigRecord(), grid))  # type: ignore[arg-type]


def test_samples_weighting_gives_the_hand_computed_weighted_mean() -> None:
    strategy = FedfitStrategy(cohort_size=2)
    _start(strategy)

    arrays, _ = strategy.aggregate_train(1, [_reply(_update(1, 2.0, samples=10)), _reply(_update(2, 6.0, samples=30))])

    assert arrays is not None
    assert torch.allclose(arrays.to_torch_state_dict()["w"], torch.tensor([5.0]))  # (10·2 + 30·6) / 40


def test_batch_weighting_weights_by_the_effective_batch_each_device_used() -> None:
    strategy = FedfitStrategy(cohort_size=2, rule=AggregationRule(weighting=WEIGHTINGS["batch"]))
    _start(strategy)

    arrays, _ = strategy.aggregate_train(1, [_reply(_update(1, 2.0, samples=10, micro=4)),
                                             _reply(_update(2, 6.0, samples=10, micro=12))])

    assert arrays is not None
    assert torch.allclose(arrays.to_torch_state_dict()["w"], torch.tensor([5.0]))  # (4·2 + 12·6) / 16


def test_fednova_normalises_each_move_by_its_local_steps() -> None:
    strategy = FedfitStrategy(cohort_size=2, rule=AggregationRule(fednova=LocalSolver()))
    _start(strategy, master=0.0)

    arrays, _ = strategy.aggregate_train(1, [_reply(_update(1, 4.0, samples=10, steps=4)),
                                             _reply(_update(2, 2.0, samples=10, steps=1))])

    # moves per step: 1 and 2, averaged 1.5, times tau_eff = (4 + 1) / 2 = 2.5 -> 3.75
    assert arrays is not None
    assert torch.allclose(arrays.to_torch_state_dict()["w"], torch.tensor([3.75]))


def test_failures_are_counted_by_cause_and_leave_the_model_to_the_updates() -> None:
    strategy = FedfitStrategy(cohort_size=3)
    _start(strategy, master=1.0)

    arrays, metrics = strategy.aggregate_train(1, [_reply(_update(1, 3.0, samples=5)),
                                                   _failed(2, FailureCause.OUT_OF_MEMORY),
                                                   _failed(3, FailureCause.DECLINED)])

    assert arrays is not None and torch.allclose(arrays.to_torch_state_dict()["w"], torch.tensor([3.0]))
    assert strategy.rounds[0].failures_by_cause == {"out_of_memory": 1, "declined": 1}
    assert metrics is not None and metrics["failures"] == 2


def test_selection_defers_a_node_that_cannot_afford_its_batch_and_a_hot_one() -> None:
    grid = FakeGrid({1: _ready(1, 32, 32), 2: _ready(2, 4, 32), 3: _ready(3, 32, 32, Thermal.HOT),
                     4: _ready(4, 16, 16)})
    strategy = FedfitStrategy(cohort_size=4)

    chosen = {m.metadata.dst_node_id for m in _start(strategy, grid=grid)}

    assert chosen == {1, 4}
    assert sorted(grid.queried) == [1, 2, 3, 4]


def test_the_cohort_is_the_same_for_the_same_seed_and_round() -> None:
    grid = FakeGrid({n: _ready(n, 32, 32) for n in range(10)})

    first = [m.metadata.dst_node_id for m in _start(FedfitStrategy(cohort_size=3, candidates=5, seed=4), grid=grid)]
    again = [m.metadata.dst_node_id for m in _start(FedfitStrategy(cohort_size=3, candidates=5, seed=4), grid=grid)]

    assert first == again and len(set(first)) == 3
    assert len(grid.queried) == 10  # 5 candidates asked per start



def test_evaluation_averages_accuracy_and_loss_over_the_nodes_examples() -> None:
    from flwr.app import MetricRecord

    replies = [message(MessageType.EVALUATE, RecordDict({"metrics": MetricRecord(
        {"accuracy": acc, "loss": loss, "num-examples": n})}), src=node, dst=0)
        for node, acc, loss, n in ((1, 0.5, 2.0, 10), (2, 1.0, 1.0, 30))]

    metrics = FedfitStrategy(cohort_size=2).aggregate_evaluate(1, replies)

    assert metrics is not None
    assert abs(float(metrics["accuracy"]) - 0.875) < 1e-12  # (10·0.5 + 30·1.0) / 40
    assert abs(float(metrics["loss"]) - 1.25) < 1e-12  # (10·2 + 30·1) / 40
