"""The cost model against independent counts: hand FLOPs, hand activation bytes, formulas."""

import math

import pytest

from fedfit.cost import MemoryModel, compute_time_s, local_work, measure, transfer_time_s
from fedfit.models import ModelSpec
from fedfit.types import Thermal, TrainPlan, UtilisationCurve
from tests.helpers import profile, state


def test_logreg_flops_match_hand_count() -> None:
    cost = measure(ModelSpec("logreg", (60,), 10))
    # forward: one 60x10 matmul = 2*60*10; backward: grad wrt weight only (input needs none) = 2*60*10
    assert cost.forward_flops_per_sample == 2 * 60 * 10
    assert cost.train_flops_per_sample == 4 * 60 * 10
    assert cost.num_params == 610


def test_mlp_activation_bytes_match_hand_count() -> None:
    cost = measure(ModelSpec("mlp", (1, 28, 28), 10))
    # saved per sample: input 784, fc1 out (relu out) 200, fc2 relu out 200, logits softmax 10 → floats
    # cross_entropy saves log_softmax output (10); relu saves its output; linear saves its input.
    assert cost.activation_bytes_per_sample == pytest.approx(4 * (784 + 200 + 200 + 10), rel=0.05)


def test_cnn_step_peak_per_sample_matches_hand_count() -> None:
    cnn = measure(ModelSpec("cnn", (1, 28, 28), 10))
    # the peak comes when backward reaches conv1's ReLU: alive per sample are the gathered input
    # (784 floats), the ReLU's output, the gradients into and out of it (3 × 16·28·28) and the
    # pooled output's gradient (16·14·14); everything saved after pool1 is already freed
    hand = 4 * (784 + 3 * 16 * 28 * 28 + 16 * 14 * 14)
    assert cnn.peak_bytes_per_sample == pytest.approx(hand, rel=0.01)
    assert cnn.peak_bytes_per_sample < cnn.activation_bytes_per_sample + 2 * 16 * 28 * 28 * 4  # the old charge


def test_mlp_step_peak_per_sample_is_below_its_saved_activations() -> None:
    mlp = measure(ModelSpec("mlp", (1, 28, 28), 10))
    # autograd frees the later layers' saved tensors before the peak: less than all it saves,
    # at least the input and one 200-unit hidden layer
    assert 4 * (784 + 200) <= mlp.peak_bytes_per_sample < mlp.activation_bytes_per_sample


def test_peak_memory_is_linear_in_micro_batch() -> None:
    cost = measure(ModelSpec("cnn", (1, 28, 28), 10))
    mm = MemoryModel(optimizer_slots=1, workspace_bytes=1000)
    p1, p9 = mm.peak_bytes(cost, 1), mm.peak_bytes(cost, 9)
    per_sample = cost.peak_bytes_per_sample
    assert p9 - p1 == pytest.approx(8 * per_sample, abs=2)
    assert mm.peak_bytes(cost, 0) == pytest.approx(3 * cost.param_bytes + 1000 + cost.activation_fixed_bytes, abs=1)


def test_max_micro_batch_is_the_largest_that_fits() -> None:
    cost = measure(ModelSpec("cnn", (1, 28, 28), 10))
    mm = MemoryModel()
    for free in (mm.peak_bytes(cost, 7), mm.peak_bytes(cost, 7) + 10, mm.peak_bytes(cost, 8) - 1):
        b = mm.max_micro_batch(cost, free)
        assert b == 7
        assert mm.peak_bytes(cost, b) <= free < mm.peak_bytes(cost, b + 1)
    assert mm.max_micro_batch(cost, mm.peak_bytes(cost, 1) - 1) == 0


def test_compute_time_formula() -> None:
    p = profile(flops_per_s=1e9, utilisation=UtilisationCurve(peak=0.5, half_batch=8))
    # util(8) = 0.25 ; hot factor 0.5 → rate 1.25e8
    assert compute_time_s(2.5e8, p, 8, Thermal.HOT) == pytest.approx(2.0)


def test_transfer_time_and_offline() -> None:
    assert transfer_time_s(1_000_000, 8e6, 0.1) == pytest.approx(1.1)
    assert math.isinf(transfer_time_s(10, 0.0, 0.1))


def test_local_work_counts_steps_and_samples() -> None:
    plan = TrainPlan(0, 0, micro_batch=4, accumulation_steps=2, local_epochs=3)
    assert local_work(plan, 20) == (9, 60)  # ceil(20/8)=3 steps/epoch
    capped = TrainPlan(0, 0, micro_batch=8, local_epochs=3, max_steps=4)
    assert local_work(capped, 20) == (4, 32)


def test_device_workspace_replaces_the_default() -> None:
    cost = measure(ModelSpec("logreg", (60,), 10))
    mm = MemoryModel(workspace_bytes=256 * 1024)
    tiny = profile(workspace_bytes=16 * 1024)
    assert mm.for_device(tiny).peak_bytes(cost, 4) == mm.peak_bytes(cost, 4) - 240 * 1024
    assert mm.for_device(profile()) is mm


def test_predictor_sends_the_plans_sub_model_by_default() -> None:
    from fedfit.cost import TaskPredictor

    spec = ModelSpec("mlp", (1, 28, 28), 10)
    predictor = TaskPredictor(lambda w: measure(spec, w), MemoryModel(), [100])
    for width in (1.0, 0.25):
        c = predictor.cost(TrainPlan(0, 0, 8, width=width), profile(), state())
        assert c.bytes_down == c.bytes_up == measure(spec, width).param_bytes
