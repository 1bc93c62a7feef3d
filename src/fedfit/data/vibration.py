"""Generated machine-vibration windows: healthy rotation vs three fault signatures.

Seed 000's industrial sensors learn local fault patterns from equipment vibration. Each
example is one window of ``WINDOW`` accelerometer samples at ``SAMPLE_RATE_HZ`` from a machine
turning at a shaft frequency ``f0`` (drawn per window around ``SHAFT_HZ``), with noise:

* 0 **healthy**: the 1× shaft harmonic at small amplitude;
* 1 **imbalance**: a strong 1× harmonic;
* 2 **misalignment**: strong 2× and 3× harmonics;
* 3 **bearing fault**: a high-frequency resonance (``BEARING_HZ``) modulated at the bearing's
  defect rate (``BPFO_RATIO`` × f0) — the classic envelope signature.

These are the textbook spectral signatures of rotating-machinery faults (e.g. Randall,
*Vibration-based Condition Monitoring*, Wiley 2011, ch. 1–2). Amplitudes and phases are drawn
per window so the classes overlap a little. Randomness: ``numpy.random.default_rng(seed)``.
"""

from __future__ import annotations

import numpy as np
import torch

from fedfit.data.datasets import ArrayDataset

WINDOW = 1024
SAMPLE_RATE_HZ = 4096.0
SHAFT_HZ = 30.0
BEARING_HZ = 1200.0
BPFO_RATIO = 3.6
NUM_CLASSES = 4
NOISE_STD = 0.5
TRAIN_SIZE = 4000
TEST_SIZE = 1000


def _window(rng: np.random.Generator, label: int, t: np.ndarray) -> np.ndarray:
    f0 = SHAFT_HZ * rng.uniform(0.9, 1.1)

    def tone(multiple: float, amplitude: float) -> np.ndarray:
        return amplitude * np.sin(2 * np.pi * multiple * f0 * t + rng.uniform(0, 2 * np.pi))

    signal = tone(1.0, rng.uniform(0.2, 0.5))
    if label == 1:
        signal += tone(1.0, rng.uniform(0.6, 1.2))
    elif label == 2:
        signal += tone(2.0, rng.uniform(0.4, 0.9)) + tone(3.0, rng.uniform(0.2, 0.6))
    elif label == 3:
        envelope = 0.5 * (1 + np.sin(2 * np.pi * BPFO_RATIO * f0 * t + rng.uniform(0, 2 * np.pi)))
        signal += rng.uniform(0.3, 0.8) * envelope * np.sin(2 * np.pi * BEARING_HZ * t)
    return signal + rng.normal(0.0, NOISE_STD, t.shape)


def generate_vibration(num_samples: int, seed: int) -> ArrayDataset:
    """``num_samples`` windows with balanced labels, inputs ``float32`` of shape ``(n, 1, WINDOW)``.

    >>> data = generate_vibration(8, seed=0)
    >>> tuple(data.x.shape), data.y.tolist()
    ((8, 1, 1024), [0, 1, 2, 3, 0, 1, 2, 3])
    """
    rng = np.random.default_rng(seed)
    t = np.arange(WINDOW) / SAMPLE_RATE_HZ
    labels = np.arange(num_samples) % NUM_CLASSES
    x = np.stack([_window(rng, int(label), t) for label in labels]).astype(np.float32)
    return ArrayDataset(x=torch.from_numpy(x).unsqueeze(1), y=torch.from_numpy(labels.astype(np.int64)))


def load_vibration(seed: int = 0) -> tuple[ArrayDataset, ArrayDataset]:
    """The generated ``(train, test)`` pair (``TRAIN_SIZE`` and ``TEST_SIZE`` windows)."""
    return generate_vibration(TRAIN_SIZE, seed), generate_vibration(TEST_SIZE, seed + 1)
