"""The σ² probe through Flower: asked in the train config, measured by the client as fedfit's
trainer measures it, carried back to the strategy; not asked, none."""

import pytest

pytest.importorskip("flwr", reason="Flower interop needs the extra: pip install fedfit[flower]")

import math
from collections.abc import Iterable

import torch
from flwr.app import ArrayRecord, ConfigRecord, Message, MessageType

from fedfit.flower.client import DeviceSide, train_reply
from fedfit.flower.fleet import PartitionData, SimulatedTiers, steady_budget
from fedfit.flower.records import SIGMA_PROBE, content_update, flag, params_record, update_content
from fedfit.flower.strategy import FedfitStrategy
from fedfit.models import ModelSpec
from fedfit.policy.batching import BatchingRules
from fedfit.policy.selection import UniformSelector
from fedfit.training.trainer import train
from fedfit.types import TrainPlan, Update
from tests.flower.messages import context, message

SPEC = ModelSpec("mlp", (1, 8, 8), 10, width=0.25)
DATA = PartitionData("digits", 2, "iid", seed=0, max_train_samples=80)
SIDE = DeviceSide(spec=SPEC, data=DATA.train, tiers=SimulatedTiers(("flagship_phone",)), monitor=steady_budget,
                  rules=BatchingRules(standard_batch=16, min_effective_batch=16), seed=7)
NODE, ROUND = 0, 1


@pytest.fixture(autouse=True)
def _server_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """Messages a ServerApp creates need the run id Flower's runtime sets."""
    from flwr.supercore.task_identity import TaskIdentity

    monkeypatch.setattr(TaskIdentity, "_run_id", 1)
    monkeypatch.setattr(TaskIdentity, "_node_id", 0)
    monkeypatch.setattr(TaskIdentity, "_task_id", 0)


class OneNodeGrid:
    """A grid of one node and no readiness queries (the strategy draws uniformly)."""

    def get_node_ids(self) -> Iterable[int]:
        return [NODE]


def _round_trip(strategy: FedfitStrategy) -> tuple[Update, dict[str, float]]:
    """One Flower round: the strategy's train message, the client's reply, the strategy's metrics."""
    torch.manual_seed(0)
    arrays = params_record(SPEC.build().state_dict())
    (sent,) = strategy.configure_train(ROUND, arrays, ConfigRecord(), OneNodeGrid())  # type: ignore[arg-type]
    received = message(MessageType.TRAIN, sent.content, src=0, dst=NODE)
    reply = train_reply(SIDE, received, context(NODE))
    assert not reply.has_error(), reply.error
    _, metrics = strategy.aggregate_train(ROUND, [reply])
    assert metrics is not None
    return content_update(reply.content), dict(metrics)


def _strategy(sigma_probe: bool) -> FedfitStrategy:
    return FedfitStrategy(cohort_size=1, candidates=0, selector=UniformSelector(), sigma_probe=sigma_probe)


def test_a_flower_round_asked_for_the_probe_carries_the_local_trainers_sigma2() -> None:
    update, metrics = _round_trip(_strategy(sigma_probe=True))

    torch.manual_seed(0)
    params = SPEC.build().state_dict()
    x, y = DATA.train(NODE)
    plan = TrainPlan(device_id=NODE, round=ROUND, micro_batch=16, lr=SIDE.lr, sigma_probe=True)
    local = train(SPEC.build(), params, x, y, plan, seed=SIDE.seed)
    assert (update.micro_batch, update.accumulation_steps) == (16, 1)  # the plan the local run reproduces
    assert local.sigma2 is not None and math.isfinite(local.sigma2) and local.sigma2 > 0
    assert update.sigma2 == local.sigma2
    assert metrics["sigma2"] == local.sigma2  # one node: the weighted mean is its probe


def test_a_flower_round_not_asked_carries_no_probe_and_trains_the_same_model() -> None:
    probed, _ = _round_trip(_strategy(sigma_probe=True))
    update, metrics = _round_trip(_strategy(sigma_probe=False))

    assert update.sigma2 is None and "sigma2" not in metrics
    assert all(torch.equal(update.params[k], probed.params[k]) for k in update.params)  # the probe leaves training alone


def test_the_rounds_sigma2_is_the_probes_mean_weighted_by_examples() -> None:
    def reply(device: int, examples: int, sigma2: float | None) -> Message:
        update = Update(device, ROUND, {"w": torch.tensor([1.0])}, examples, examples, 1, 8, 1, 0.1, sigma2=sigma2)
        return message(MessageType.TRAIN, update_content(update), src=device, dst=0)

    strategy = _strategy(sigma_probe=True)
    strategy.configure_train(ROUND, ArrayRecord({"w": torch.tensor([0.0])}), ConfigRecord(), OneNodeGrid())  # type: ignore[arg-type]
    _, metrics = strategy.aggregate_train(ROUND, [reply(1, 10, 2.0), reply(2, 30, 5.0), reply(3, 60, None)])

    assert metrics is not None and metrics["sigma2"] == pytest.approx((10 * 2.0 + 30 * 5.0) / 40)


def test_the_probe_flag_must_be_a_boolean() -> None:
    assert flag(ConfigRecord({SIGMA_PROBE: True}), SIGMA_PROBE) is True
    assert flag(ConfigRecord(), SIGMA_PROBE) is False
    with pytest.raises(KeyError, match="sigma-probe"):
        flag(ConfigRecord({SIGMA_PROBE: 1}), SIGMA_PROBE)
