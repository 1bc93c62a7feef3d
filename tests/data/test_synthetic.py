"""FedProx Synthetic(alpha, beta): statistics and draw order checked against the recipe.

The reference numbers come from the recipe itself (Li et al. 2020 and the authors'
``generate_synthetic.py``), recomputed here independently of ``fedfit.data.synthetic``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from fedfit.data.synthetic import draw_sample_counts, synthetic_device, synthetic_federated
from fedfit.errors import DataError

DIMENSION = 60
CLASSES = 10
RECIPE_VARIANCES = np.array([j**-1.2 for j in range(1, DIMENSION + 1)])


def _softmax(logits: np.ndarray) -> np.ndarray:
    shifted: np.ndarray = np.exp(logits - logits.max(axis=1, keepdims=True))
    probabilities: np.ndarray = shifted / shifted.sum(axis=1, keepdims=True)
    return probabilities


def _reference_non_iid(
    seed: int, num_devices: int, alpha: float, beta: float, cap: int
) -> list[tuple[np.ndarray, np.ndarray]]:
    """The recipe written out in the documented draw order: (x, y) per device."""
    rng = np.random.default_rng(seed)
    counts = np.minimum(rng.lognormal(4, 2, num_devices).astype(int) + 50, cap)
    u = rng.normal(0, alpha, num_devices)
    shifts = rng.normal(0, beta, num_devices)
    means = [rng.normal(shifts[k], 1, DIMENSION) for k in range(num_devices)]
    devices = []
    for k in range(num_devices):
        w = rng.normal(u[k], 1, (DIMENSION, CLASSES))
        b = rng.normal(u[k], 1, CLASSES)
        x = rng.normal(means[k], np.sqrt(RECIPE_VARIANCES), (counts[k], DIMENSION))
        devices.append((x, np.argmax(_softmax(x @ w + b), axis=1)))
    return devices


def test_device_inputs_have_the_recipe_mean_and_diagonal_covariance() -> None:
    rng = np.random.default_rng(1)
    mean = np.linspace(-2.0, 2.0, DIMENSION)

    device = synthetic_device(
        rng,
        num_samples=40_000,
        feature_mean=mean,
        weights=np.zeros((DIMENSION, CLASSES)),
        bias=np.zeros(CLASSES),
    )

    np.testing.assert_allclose(device.x.mean(axis=0), mean, atol=0.03)
    np.testing.assert_allclose(device.x.var(axis=0), RECIPE_VARIANCES, rtol=0.05)
    off_diagonal = np.corrcoef(device.x, rowvar=False) - np.eye(DIMENSION)
    assert np.abs(off_diagonal).max() < 0.05


def test_device_labels_are_the_argmax_of_the_softmax_of_its_model() -> None:
    rng = np.random.default_rng(2)
    weights, bias = rng.normal(0, 1, (DIMENSION, CLASSES)), rng.normal(0, 1, CLASSES)

    device = synthetic_device(
        rng, num_samples=500, feature_mean=np.zeros(DIMENSION), weights=weights, bias=bias
    )

    expected = np.argmax(_softmax(device.x @ weights + bias), axis=1)
    np.testing.assert_array_equal(device.y, expected)
    assert device.y.dtype == np.int64 and len(set(device.y.tolist())) > 1


def test_sample_counts_follow_int_lognormal_4_2_plus_50() -> None:
    counts = draw_sample_counts(np.random.default_rng(3), 20_000)

    excess = counts - 50
    assert counts.min() >= 50
    # floor(exp(4 + 2 z)) at z = 0 and z = 1 are the 50% and 84.13% quantiles
    assert abs(np.quantile(excess, 0.5) - math.exp(4)) / math.exp(4) < 0.05
    assert abs(np.quantile(excess, 0.8413) - math.exp(6)) / math.exp(6) < 0.10
    # P(floor(L) = 0) = P(L < 1) = P(z < -2)
    assert abs(np.mean(excess == 0) - 0.5 * math.erfc(2 / math.sqrt(2))) < 0.005


def test_non_iid_devices_match_the_recipe_in_its_documented_draw_order() -> None:
    reference = _reference_non_iid(seed=4, num_devices=6, alpha=0.5, beta=0.5, cap=400)

    train, test = synthetic_federated(6, 0.5, 0.5, seed=4, max_samples_per_device=400)

    for (x, y), device_train, device_test in zip(reference, train, test, strict=True):
        num_train = int(0.9 * len(y))
        assert (len(device_train), len(device_test)) == (num_train, len(y) - num_train)
        np.testing.assert_allclose(device_train.x.numpy(), x[:num_train], rtol=1e-6)
        np.testing.assert_array_equal(device_test.y.numpy(), y[num_train:])


def test_uncapped_counts_are_lognormal_draws_and_split_90_10() -> None:
    expected = np.random.default_rng(5).lognormal(4, 2, 4).astype(int) + 50

    train, test = synthetic_federated(4, 1.0, 1.0, seed=5)

    assert [len(a) + len(b) for a, b in zip(train, test, strict=True)] == expected.tolist()
    assert [len(a) for a in train] == [int(0.9 * n) for n in expected]


def test_iid_variant_labels_every_device_with_one_shared_model() -> None:
    rng = np.random.default_rng(6)
    counts = np.minimum(rng.lognormal(4, 2, 5).astype(int) + 50, 300)
    weights, bias = rng.normal(0, 1, (DIMENSION, CLASSES)), rng.normal(0, 1, CLASSES)
    reference_x = [rng.normal(0, np.sqrt(RECIPE_VARIANCES), (n, DIMENSION)) for n in counts]

    train, test = synthetic_federated(5, 3.0, 3.0, iid=True, seed=6, max_samples_per_device=300)

    for x, device_train, device_test in zip(reference_x, train, test, strict=True):
        labels = np.argmax(_softmax(x @ weights + bias), axis=1)
        np.testing.assert_array_equal(np.concatenate([device_train.y, device_test.y]), labels)
        np.testing.assert_allclose(device_train.x.numpy(), x[: len(device_train)], rtol=1e-6)


def test_larger_beta_spreads_device_input_means_further() -> None:
    def spread(beta: float) -> float:
        train, _ = synthetic_federated(40, 0.0, beta, seed=7, max_samples_per_device=200)
        return float(np.std([device.x.numpy().mean() for device in train]))

    # the mean over the 60 features of v_k ~ N(B_k, 1) has std sqrt(beta^2 + 1/60)
    assert spread(0.0) < 2 * math.sqrt(1 / 60)
    assert 1.0 < spread(2.0) < 3.0


def test_same_seed_gives_identical_data() -> None:
    first, _ = synthetic_federated(3, 1.0, 1.0, seed=8, max_samples_per_device=100)
    second, _ = synthetic_federated(3, 1.0, 1.0, seed=8, max_samples_per_device=100)

    assert all(np.array_equal(a.x.numpy(), b.x.numpy()) for a, b in zip(first, second, strict=True))


def test_outputs_are_float32_inputs_of_60_features_and_int64_labels() -> None:
    train, test = synthetic_federated(2, 1.0, 1.0, seed=9, max_samples_per_device=50)

    assert train[0].x.shape[1:] == (60,) and str(train[0].x.dtype) == "torch.float32"
    assert str(test[1].y.dtype) == "torch.int64"


@pytest.mark.parametrize(
    ("num_devices", "alpha", "beta", "cap"),
    [(0, 1.0, 1.0, None), (2, -1.0, 1.0, None), (2, 1.0, float("nan"), None), (2, 1.0, 1.0, 1)],
)
def test_impossible_requests_raise_data_error(
    num_devices: int, alpha: float, beta: float, cap: int | None
) -> None:
    with pytest.raises(DataError):
        synthetic_federated(num_devices, alpha, beta, seed=0, max_samples_per_device=cap)
