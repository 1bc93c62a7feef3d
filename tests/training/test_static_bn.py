"""Static batch-norm statistics and the scaler, against plain PyTorch computations."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from fedfit.models import MLP, ModelSpec
from fedfit.models.indices import sub_map
from fedfit.training.static_bn import calibrated, evaluate_widths

SPEC = ModelSpec("cnn", (1, 8, 8), 4, norm="batch", scaler=True)


def test_training_batch_norm_keeps_no_statistics_so_params_hold_only_weights() -> None:
    names = set(SPEC.build().state_dict())
    assert {"norm1.weight", "norm1.bias", "norm2.weight", "norm2.bias"} <= names
    assert not any("running" in n or "num_batches" in n for n in names)


def test_calibration_sets_running_statistics_to_the_data_moments() -> None:
    torch.manual_seed(0)
    params = SPEC.build(0.5).state_dict()
    x = torch.randn(64, 1, 8, 8)
    model = calibrated(SPEC, 0.5, params, x, batch=64)  # one pass: unbiased variance of all
    conv1 = nn.functional.conv2d(x, params["conv1.weight"], params["conv1.bias"], padding=2)
    mean = conv1.mean(dim=(0, 2, 3))
    var = conv1.var(dim=(0, 2, 3), unbiased=False) * conv1[:, 0].numel() / (conv1[:, 0].numel() - 1)
    assert not model.training
    assert torch.allclose(model.norm1.running_mean, mean, atol=1e-5)
    assert torch.allclose(model.norm1.running_var, var, rtol=1e-3, atol=1e-5)


def test_scaler_divides_hidden_outputs_by_the_rate_in_training_only() -> None:
    torch.manual_seed(0)
    sub = MLP(3, 2, width=0.5, hidden=4, rate=0.5)
    x = torch.randn(5, 3)
    h1 = torch.relu(x @ sub.fc1.weight.T + sub.fc1.bias)
    h2 = torch.relu(h1 / 0.5 @ sub.fc2.weight.T + sub.fc2.bias)
    sub.train()
    h1_scaled = torch.relu((x @ sub.fc1.weight.T + sub.fc1.bias) / 0.5)
    h2_scaled = torch.relu((h1_scaled @ sub.fc2.weight.T + sub.fc2.bias) / 0.5)
    assert torch.allclose(sub(x), h2_scaled @ sub.fc3.weight.T + sub.fc3.bias, atol=1e-6)
    sub.eval()
    h2 = torch.relu(h1 @ sub.fc2.weight.T + sub.fc2.bias)
    assert torch.allclose(sub(x), h2 @ sub.fc3.weight.T + sub.fc3.bias, atol=1e-6)


def test_evaluate_widths_counts_each_sub_models_parameters() -> None:
    torch.manual_seed(0)
    params = SPEC.build().state_dict()
    x, y = torch.randn(40, 1, 8, 8), torch.randint(0, 4, (40,))
    rows = evaluate_widths(SPEC, params, x, x, y, widths=(1.0, 0.25))
    assert [r.num_params for r in rows] == [sum(p.numel() for p in SPEC.build(w).parameters()) for w in (1.0, 0.25)]
    assert all(0.0 <= r.accuracy <= 1.0 for r in rows)
    model = calibrated(SPEC, 0.25, sub_map(SPEC, 0.25).extract(params), x)
    assert rows[1].accuracy == pytest.approx(int((model(x).argmax(1) == y).sum()) / 40)
