"""Batched cohort training against the one-by-one trainer (the reference), device by device."""

from __future__ import annotations

import pytest
import torch

from fedfit.models import ModelSpec, build_model
from fedfit.training import OptimizerConfig, train
from fedfit.training.batched import batchable_model, batchable_plan, cohort_key, train_cohort
from fedfit.training.dp_sgd import LocalDP
from fedfit.training.stacked_optim import StackedOptimizer
from fedfit.types import Techniques, TrainPlan

SIZES = (5, 17, 40, 33)  # uneven: 1 to 3 steps per epoch at effective batch 16


def _cohort(name: str) -> tuple[torch.nn.Module, list[dict[str, torch.Tensor]], list[tuple[torch.Tensor, torch.Tensor]]]:
    torch.manual_seed(0)
    model = build_model(name, (1, 8, 8), 10)
    start = model.state_dict()
    g = torch.Generator().manual_seed(3)
    data = [(torch.randn(n, 1, 8, 8, generator=g), torch.randint(0, 10, (n,), generator=g)) for n in SIZES]
    starts = [{k: v + 0.01 * i for k, v in start.items()} for i in range(len(SIZES))]  # each device its own start
    return model, starts, data


def _plans(**extra: object) -> list[TrainPlan]:
    """Effective batch 16 as one micro-batch or as 4 × 4 accumulated, two epochs."""
    return [TrainPlan(i, 2, micro_batch=16 if i % 2 else 4, accumulation_steps=1 if i % 2 else 4, local_epochs=2,
                      lr=0.05, **extra) for i in range(len(SIZES))]  # type: ignore[arg-type]


def _max_diff(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> float:
    assert list(a) == list(b)
    return max((a[k] - b[k]).abs().max().item() for k in a)


@pytest.mark.parametrize("name", ["logreg", "mlp", "cnn"])
@pytest.mark.parametrize("optimizer", [OptimizerConfig(), OptimizerConfig(momentum=0.9, weight_decay=1e-3),
                                       OptimizerConfig(momentum=0.5, proximal_mu=0.1)])
def test_cohort_equals_one_by_one(name: str, optimizer: OptimizerConfig) -> None:
    model, starts, data = _cohort(name)
    plans = _plans()
    batched = train_cohort(model, starts, data, plans, seed=1, optimizer=optimizer)
    for start, (x, y), plan, got in zip(starts, data, plans, batched, strict=True):
        ref = train(model, start, x, y, plan, seed=1, optimizer=optimizer)
        assert _max_diff(ref.params, got.params) <= 1e-5
        assert got.train_loss == pytest.approx(ref.train_loss, rel=1e-5)
        assert (got.device_id, got.round, got.num_examples, got.samples_processed, got.steps, got.micro_batch,
                got.accumulation_steps, got.epoch_batches, got.masks) == \
               (ref.device_id, ref.round, ref.num_examples, ref.samples_processed, ref.steps, ref.micro_batch,
                ref.accumulation_steps, ref.epoch_batches, ref.masks)
    assert [u.steps for u in batched] == [2, 4, 6, 6]  # ceil(n / 16) per epoch, two epochs: masking was needed


@pytest.mark.parametrize("name, shape", [("cnn1d", (3, 32)), ("resnet8", (3, 8, 8))])
def test_other_zoo_models_without_batch_norm(name: str, shape: tuple[int, ...]) -> None:
    torch.manual_seed(0)
    model = ModelSpec(name, shape, 10).build()
    start = {k: v.clone() for k, v in model.state_dict().items()}
    g = torch.Generator().manual_seed(1)
    data = [(torch.randn(n, *shape, generator=g), torch.randint(0, 10, (n,), generator=g)) for n in (9, 20)]
    plans = [TrainPlan(i, 0, micro_batch=8, lr=0.05) for i in range(2)]
    momentum = OptimizerConfig(momentum=0.9)
    for (x, y), plan, got in zip(data, plans, train_cohort(model, [start, start], data, plans, seed=0,
                                                           optimizer=momentum), strict=True):
        assert _max_diff(train(model, start, x, y, plan, seed=0, optimizer=momentum).params, got.params) <= 1e-5


def test_adam_and_step_cap_and_per_epoch_batches() -> None:
    model, starts, data = _cohort("logreg")
    adam = OptimizerConfig(kind="adam", weight_decay=1e-3)
    plans = [TrainPlan(i, 0, micro_batch=8, max_steps=3, lr=0.01, epoch_batches=((8, 1), (4, 2), (2, 4)))
             for i in range(len(SIZES))]
    batched = train_cohort(model, starts, data, plans, seed=7, optimizer=adam)
    for start, (x, y), plan, got in zip(starts, data, plans, batched, strict=True):
        ref = train(model, start, x, y, plan, seed=7, optimizer=adam)
        assert _max_diff(ref.params, got.params) <= 1e-5
        assert (got.steps, got.samples_processed, got.micro_batch, got.accumulation_steps) == \
               (ref.steps, ref.samples_processed, 2, 4)


def test_a_device_alone_in_its_cohort_is_unchanged_by_the_others() -> None:
    """Masking: the 5-sample device stops after 2 steps while the others go on to 6."""
    model, starts, data = _cohort("mlp")
    plans = _plans()
    together = train_cohort(model, starts, data, plans, seed=1)[0]
    alone = train_cohort(model, starts[:1], data[:1], plans[:1], seed=1)[0]
    assert _max_diff(together.params, alone.params) <= 1e-6


def test_stacked_sgd_by_hand() -> None:
    """Momentum 0.5, lr 0.1, gradients 1 then 1: w = 1 − 0.1·1 − 0.1·(0.5 + 1) = 0.75; the
    inactive device's second step is skipped: 1 − 0.1 = 0.9, and so is its momentum: a third
    step with gradient 0 moves it by 0.1·0.5·1 = 0.05 (the other by 0.1·0.5·1.5 = 0.075)."""
    opt = StackedOptimizer({"w": torch.ones(2, 1)}, 0.1, OptimizerConfig(momentum=0.5))
    opt.step({"w": torch.ones(2, 1)}, active=torch.tensor([True, True]))
    p = opt.step({"w": torch.ones(2, 1)}, active=torch.tensor([True, False]))
    assert p["w"].flatten().tolist() == pytest.approx([0.75, 0.9])
    p = opt.step({"w": torch.zeros(2, 1)}, active=torch.tensor([True, True]))
    assert p["w"].flatten().tolist() == pytest.approx([0.675, 0.85])


def test_which_models_and_plans_are_batched() -> None:
    assert batchable_model(build_model("cnn", (1, 8, 8), 4))
    assert not batchable_model(ModelSpec("cnn", (1, 8, 8), 4, norm="batch").build())  # batch statistics
    assert not batchable_model(ModelSpec("lstm", (20,), 4).build())
    assert not batchable_model(torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.Dropout(0.5)))
    plan = TrainPlan(0, 0, micro_batch=8)
    assert batchable_plan(plan, OptimizerConfig())
    assert not batchable_plan(TrainPlan(0, 0, micro_batch=8, techniques=Techniques(checkpointing=True)),
                              OptimizerConfig())
    assert not batchable_plan(plan, OptimizerConfig(local_dp=LocalDP(clip_norm=1.0, noise_multiplier=1.0)))
    assert cohort_key(TrainPlan(0, 0, micro_batch=2, accumulation_steps=8)) == cohort_key(TrainPlan(1, 0, micro_batch=16))
    assert cohort_key(TrainPlan(0, 0, micro_batch=8, width=0.5)) != cohort_key(plan)


def test_plans_differing_only_in_their_number_of_equal_epochs_share_a_cohort() -> None:
    """DYNAMITE gives each device the epochs its τ steps take: 2 or 5 epochs of batch 16 capped at
    τ = 6 steps train together (step counts split groups on their own); a changed batch does not."""
    two, five = TrainPlan(0, 0, micro_batch=16, local_epochs=2, max_steps=6), TrainPlan(1, 0, micro_batch=16,
                                                                                        local_epochs=5, max_steps=6)
    assert cohort_key(two) == cohort_key(five)
    assert cohort_key(TrainPlan(2, 0, micro_batch=16, max_steps=6, epoch_batches=((16, 1), (8, 1)))) != \
        cohort_key(two)
    model, starts, data = _cohort("logreg")
    for start, (x, y), plan, got in zip(starts[:2], data[:2], [two, five],
                                        train_cohort(model, starts[:2], data[:2], [two, five], seed=3), strict=True):
        assert _max_diff(train(model, start, x, y, plan, seed=3).params, got.params) <= 1e-5


def test_a_plan_asking_for_the_curvature_probe_is_batched() -> None:
    """Its Hessian-vector product is taken in the cohort op (tests/training/test_stacked_curvature.py);
    techniques and local DP-SGD still train one by one, probe or not."""
    optimizer = OptimizerConfig()
    assert batchable_plan(TrainPlan(0, 0, micro_batch=8, sigma_probe=True), optimizer)
    assert batchable_plan(TrainPlan(0, 0, micro_batch=8, sigma_probe=True, curvature_probe=True), optimizer)
    assert not batchable_plan(TrainPlan(0, 0, micro_batch=8, sigma_probe=True, curvature_probe=True,
                                        techniques=Techniques(checkpointing=True)), optimizer)
