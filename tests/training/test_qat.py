"""Quantisation-aware training: fake quantisation, straight-through gradient, int8 export."""

import torch

from fedfit.models.stages import stages_of
from fedfit.training import train
from fedfit.training.qat import dequantise, export_int, fake_quantise_activation, fake_quantise_weight, quantised_forward
from fedfit.types import Techniques, TrainPlan


def test_weight_fake_quantisation_matches_hand_rounding() -> None:
    w = torch.tensor([1.27, -0.5, 0.004], requires_grad=True)
    q = fake_quantise_weight(w, 8)  # scale 0.01: 127, -50, 0
    assert torch.allclose(q, torch.tensor([1.27, -0.5, 0.0]), atol=1e-6)
    q.sum().backward()
    assert torch.equal(w.grad, torch.ones(3))  # straight through


def test_activation_fake_quantisation_uses_the_tensor_range() -> None:
    a = torch.tensor([0.0, 0.1, 2.55])
    assert torch.allclose(fake_quantise_activation(a, 8), torch.tensor([0.0, 0.1, 2.55]), atol=1e-6)
    assert torch.allclose(fake_quantise_activation(torch.tensor([0.0, 0.004, 2.55]), 8)[1], torch.tensor(0.0))


def test_export_is_int8_within_half_a_step(cnn_task) -> None:
    _, params, _, _ = cnn_task
    exported = export_int(params)
    back = dequantise(exported)
    for k, (q, s) in exported.items():
        assert q.dtype == torch.int8
        assert float((back[k] - params[k]).abs().max()) <= s / 2 + 1e-7


def test_qat_training_returns_float_weights_and_runs_quantised_inference(cnn_task) -> None:
    model, params, x, y = cnn_task
    update = train(model, params, x, y, TrainPlan(0, 0, 8, techniques=Techniques(qat_bits=8)), seed=0)
    assert set(update.params) == set(params) and all(v.dtype == torch.float32 for v in update.params.values())
    model.load_state_dict(dequantise(export_int(update.params)))
    logits = quantised_forward(model, stages_of(model), x)
    assert logits.shape == (24, 4)
    assert list(dict(model.named_parameters())) == list(params)  # the caller's module is untouched
