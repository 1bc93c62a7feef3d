"""FedProx's Synthetic(alpha, beta) federated data: one multinomial-logistic task per device.

Li, Sahu, Zaheer, Sanjabi, Talwalkar and Smith, "Federated Optimization in Heterogeneous
Networks", MLSys 2020 (arXiv:1812.06127), section 5.1, following the authors' generators
``data/synthetic_*/generate_synthetic.py`` and ``data/synthetic_iid/generate_iid.py`` in
github.com/litian96/FedProx. Per device k, with 60 features and 10 classes:

- ``u_k ~ N(0, alpha)``, ``B_k ~ N(0, beta)``, ``v_k ~ N(B_k, 1)`` (a 60-vector);
- ``W_k`` (60x10) and ``b_k`` (10) elementwise ``~ N(u_k, 1)`` (the same ``u_k`` for both);
- ``x ~ N(v_k, Sigma)`` with ``Sigma = diag(j ** -1.2)``, ``j = 1..60``;
- ``y = argmax(softmax(x @ W_k + b_k))``;
- ``int(lognormal(4, 2)) + 50`` samples, the first ``int(0.9 n)`` for training, the rest held out.

As in the authors' code, ``alpha`` and ``beta`` are passed as the *scale* (standard deviation)
argument of the normal draw (``np.random.normal(0, alpha, num_users)``), although the paper
writes ``N(0, alpha)``. The IID variant draws one ``W, b ~ N(0, 1)`` shared by all devices and
``x ~ N(0, Sigma)`` everywhere; ``alpha`` and ``beta`` play no part in it.

Randomness comes from ``numpy.random.default_rng(seed)``, drawn in this documented order:

1. the sample counts, ``rng.lognormal(4, 2, num_devices)`` (before any cap);
2. non-IID: ``u = rng.normal(0, alpha, K)``, ``B = rng.normal(0, beta, K)``, then each device's
   ``v_k = rng.normal(B_k, 1, 60)`` in device order; IID: ``W = rng.normal(0, 1, (60, 10))``,
   ``b = rng.normal(0, 1, 10)``;
3. per device in order: non-IID ``W_k = rng.normal(u_k, 1, (60, 10))``,
   ``b_k = rng.normal(u_k, 1, 10)``; then ``x = rng.normal(v_k, sqrt(diag(Sigma)), (n, 60))``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from fedfit.data.datasets import ArrayDataset
from fedfit.errors import DataError

NUM_FEATURES = 60
NUM_CLASSES = 10
TRAIN_FRACTION = 0.9
#: Parameters of the log-normal sample-count draw, and the floor added to it.
COUNT_LOG_MEAN = 4.0
COUNT_LOG_STD = 2.0
MIN_SAMPLES = 50


@dataclass(frozen=True, slots=True)
class SyntheticDevice:
    """One device's generated data and the model that labelled it.

    Attributes:
        x: Inputs, ``float64``, shape ``(n, 60)``.
        y: Labels ``argmax(x @ weights + bias)``, ``int64``, shape ``(n,)``.
        weights: The device's ``W_k``, shape ``(60, 10)``.
        bias: The device's ``b_k``, shape ``(10,)``.
    """

    x: np.ndarray
    y: np.ndarray
    weights: np.ndarray
    bias: np.ndarray


def feature_variances() -> np.ndarray:
    """The diagonal of ``Sigma``: ``j ** -1.2`` for ``j = 1..60``, shape ``(60,)``."""
    return np.arange(1, NUM_FEATURES + 1, dtype=np.float64) ** -1.2


def draw_sample_counts(rng: np.random.Generator, num_devices: int) -> np.ndarray:
    """Samples per device, ``int(lognormal(4, 2)) + 50``, shape ``(num_devices,)``, ``int64``."""
    draws = rng.lognormal(COUNT_LOG_MEAN, COUNT_LOG_STD, num_devices)
    return draws.astype(np.int64) + MIN_SAMPLES


def synthetic_device(
    rng: np.random.Generator,
    *,
    num_samples: int,
    feature_mean: np.ndarray,
    weights: np.ndarray,
    bias: np.ndarray,
) -> SyntheticDevice:
    """Draw one device's inputs ``x ~ N(feature_mean, Sigma)`` and label them with its model.

    Args:
        rng: Source of the ``x`` draw (``num_samples * 60`` normals).
        num_samples: Rows to draw.
        feature_mean: ``v_k``, shape ``(60,)``.
        weights: ``W_k``, shape ``(60, 10)``.
        bias: ``b_k``, shape ``(10,)``.

    Returns:
        The device's data, labelled ``argmax(x @ weights + bias)`` (softmax keeps the argmax).
    """
    x = rng.normal(feature_mean, np.sqrt(feature_variances()), (num_samples, NUM_FEATURES))
    y = np.argmax(x @ weights + bias, axis=1).astype(np.int64)
    return SyntheticDevice(x=x, y=y, weights=weights, bias=bias)


def synthetic_federated(
    num_devices: int,
    alpha: float,
    beta: float,
    *,
    iid: bool = False,
    seed: int,
    max_samples_per_device: int | None = None,
) -> tuple[list[ArrayDataset], list[ArrayDataset]]:
    """Generate Synthetic(alpha, beta), or the IID variant, for ``num_devices`` devices.

    Args:
        num_devices: Devices to generate (at least 1).
        alpha: Standard deviation of ``u_k``, how much device models differ (>= 0).
        beta: Standard deviation of ``B_k``, how much device inputs differ (>= 0).
        iid: Draw the IID variant (one shared model, ``v_k = 0``); ignores alpha and beta.
        seed: Seed of ``numpy.random.default_rng``; the draw order is in the module docstring.
        max_samples_per_device: Cap on each device's sample count (>= 2), applied after the
            count draw so the other draws are unchanged; ``None`` keeps the recipe's counts.

    Returns:
        ``(train, test)``: per device, the first ``int(0.9 n)`` samples and the rest, with
        ``x`` ``float32`` of shape ``(m, 60)`` and ``y`` ``int64``.

    Raises:
        DataError: ``num_devices < 1``, a negative alpha or beta, or a cap below 2.
    """
    _check_arguments(num_devices, alpha, beta, max_samples_per_device)
    rng = np.random.default_rng(seed)
    counts = draw_sample_counts(rng, num_devices)
    if max_samples_per_device is not None:
        counts = np.minimum(counts, max_samples_per_device)
    devices = _draw_iid(rng, counts) if iid else _draw_non_iid(rng, counts, alpha, beta)
    splits = [_split_device(device) for device in devices]
    return [train for train, _ in splits], [test for _, test in splits]


def _check_arguments(num_devices: int, alpha: float, beta: float, cap: int | None) -> None:
    """Raise ``DataError`` for arguments the generator cannot honour."""
    if num_devices < 1:
        raise DataError(f"synthetic data needs at least 1 device, got num_devices={num_devices}")
    if not (alpha >= 0 and beta >= 0):
        raise DataError(f"synthetic alpha and beta must be >= 0, got alpha={alpha}, beta={beta}")
    if cap is not None and cap < 2:
        raise DataError(
            f"synthetic max_samples_per_device must be >= 2 (one train, one test), got {cap}"
        )


def _draw_non_iid(
    rng: np.random.Generator, counts: np.ndarray, alpha: float, beta: float
) -> list[SyntheticDevice]:
    """Synthetic(alpha, beta): a model and an input mean per device."""
    num_devices = len(counts)
    model_means = rng.normal(0.0, alpha, num_devices)
    input_shifts = rng.normal(0.0, beta, num_devices)
    feature_means = [rng.normal(shift, 1.0, NUM_FEATURES) for shift in input_shifts]
    devices = []
    for count, model_mean, feature_mean in zip(counts, model_means, feature_means, strict=True):
        weights = rng.normal(model_mean, 1.0, (NUM_FEATURES, NUM_CLASSES))
        bias = rng.normal(model_mean, 1.0, NUM_CLASSES)
        devices.append(
            synthetic_device(
                rng, num_samples=int(count), feature_mean=feature_mean, weights=weights, bias=bias
            )
        )
    return devices


def _draw_iid(rng: np.random.Generator, counts: np.ndarray) -> list[SyntheticDevice]:
    """The IID variant: one shared model, inputs centred at zero on every device."""
    weights = rng.normal(0.0, 1.0, (NUM_FEATURES, NUM_CLASSES))
    bias = rng.normal(0.0, 1.0, NUM_CLASSES)
    zero_mean = np.zeros(NUM_FEATURES)
    return [
        synthetic_device(
            rng, num_samples=int(count), feature_mean=zero_mean, weights=weights, bias=bias
        )
        for count in counts
    ]


def _split_device(device: SyntheticDevice) -> tuple[ArrayDataset, ArrayDataset]:
    """The first ``int(0.9 n)`` samples for training, the rest held out."""
    num_train = int(TRAIN_FRACTION * len(device.y))
    data = ArrayDataset(
        x=torch.from_numpy(device.x.astype(np.float32)), y=torch.from_numpy(device.y)
    )
    return data.subset(np.arange(num_train)), data.subset(np.arange(num_train, len(device.y)))
