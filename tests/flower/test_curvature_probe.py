"""The curvature probe through Flower: asked in the train config, measured by the client as fedfit's
trainer measures it (with the σ² probe it needs), carried back and pooled by the strategy as
DYNAMITE's estimator pools it; not asked, none."""

import pytest

pytest.importorskip("flwr", reason="Flower interop needs the extra: pip install fedfit[flower]")

import math

import torch
from flwr.app import ArrayRecord, ConfigRecord, Message, MessageType

from fedfit.flower.client import train_reply
from fedfit.flower.records import CURVATURE_PROBE, SIGMA_PROBE, content_update, params_record, update_content
from fedfit.flower.strategy import FedfitStrategy
from fedfit.policy.selection import UniformSelector
from fedfit.training.trainer import train
from fedfit.types import TrainPlan, Update
from tests.flower.messages import context, message
from tests.flower.test_sigma_probe import (  # _server_run: the autouse fixture setting Flower's run id
    DATA, NODE, ROUND, SIDE, SPEC, OneNodeGrid, _round_trip, _server_run,  # noqa: F401
)


def _strategy(**probes: bool) -> FedfitStrategy:
    return FedfitStrategy(cohort_size=1, candidates=0, selector=UniformSelector(), **probes)


def test_asking_for_the_curvature_probe_sends_both_probe_keys() -> None:
    arrays = params_record(SPEC.build().state_dict())
    (sent,) = _strategy(curvature_probe=True).configure_train(ROUND, arrays, ConfigRecord(), OneNodeGrid())  # type: ignore[arg-type]
    config = sent.content.config_records["config"]
    assert (config[SIGMA_PROBE], config[CURVATURE_PROBE]) == (True, True)
    (plain,) = _strategy(sigma_probe=True).configure_train(ROUND, arrays, ConfigRecord(), OneNodeGrid())  # type: ignore[arg-type]
    assert CURVATURE_PROBE not in plain.content.config_records["config"]


def test_a_flower_round_asked_for_the_curvature_probe_carries_the_local_trainers_beta() -> None:
    update, metrics = _round_trip(_strategy(curvature_probe=True))

    torch.manual_seed(0)
    params = SPEC.build().state_dict()
    x, y = DATA.train(NODE)
    plan = TrainPlan(device_id=NODE, round=ROUND, micro_batch=16, lr=SIDE.lr, sigma_probe=True, curvature_probe=True)
    local = train(SPEC.build(), params, x, y, plan, seed=SIDE.seed)
    assert (update.micro_batch, update.accumulation_steps) == (16, 1)  # the plan the local run reproduces
    assert local.noise_curvature is not None and math.isfinite(local.noise_curvature) and local.noise_curvature != 0
    assert (update.noise_curvature, update.sigma2) == (local.noise_curvature, local.sigma2)
    assert (metrics["noise-curvature"], metrics["sigma2"]) == (local.noise_curvature, local.sigma2)


def test_the_curvature_key_alone_implies_the_sigma2_probe() -> None:
    arrays = params_record(SPEC.build().state_dict())
    (sent,) = _strategy().configure_train(ROUND, arrays, ConfigRecord({CURVATURE_PROBE: True}), OneNodeGrid())  # type: ignore[arg-type]
    reply = train_reply(SIDE, message(MessageType.TRAIN, sent.content, src=0, dst=NODE), context(NODE))
    update = content_update(reply.content)
    assert update.sigma2 is not None and update.noise_curvature is not None


@pytest.mark.parametrize("probes", [{}, {"sigma_probe": True}])
def test_a_round_not_asked_for_the_curvature_probe_carries_none(probes: dict[str, bool]) -> None:
    update, metrics = _round_trip(_strategy(**probes))
    assert update.noise_curvature is None and "noise-curvature" not in metrics
    assert (update.sigma2 is not None) == bool(probes)


def test_the_rounds_curvature_is_the_probes_mean_weighted_by_examples() -> None:
    def reply(device: int, examples: int, curvature: float | None) -> Message:
        update = Update(device, ROUND, {"w": torch.tensor([1.0])}, examples, examples, 1, 8, 1, 0.1,
                        sigma2=None if curvature is None else 1.0, noise_curvature=curvature)
        return message(MessageType.TRAIN, update_content(update), src=device, dst=0)

    strategy = _strategy(curvature_probe=True)
    strategy.configure_train(ROUND, ArrayRecord({"w": torch.tensor([0.0])}), ConfigRecord(), OneNodeGrid())  # type: ignore[arg-type]
    replies = [reply(1, 10, 8.0), reply(2, 30, -4.0), reply(3, 60, None), reply(4, 20, math.inf)]
    _, metrics = strategy.aggregate_train(ROUND, replies)

    assert metrics is not None and metrics["noise-curvature"] == pytest.approx((10 * 8.0 + 30 * -4.0) / 40)
    assert metrics["sigma2"] == pytest.approx(1.0)


@pytest.mark.parametrize("curvature", [None, 0.0, -1.5, 3.25])
def test_noise_curvature_round_trips_through_flower_records(curvature: float | None) -> None:
    update = Update(device_id=1, round=2, params={"w": torch.tensor([1.0])}, num_examples=10, samples_processed=10,
                    steps=1, micro_batch=10, accumulation_steps=1, train_loss=0.5, sigma2=2.0,
                    noise_curvature=curvature)
    assert content_update(update_content(update)).noise_curvature == curvature
