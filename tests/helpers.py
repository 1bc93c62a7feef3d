"""Small builders shared by tests."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from fedfit.types import DeviceProfile, DeviceState, Link, Thermal, UtilisationCurve

if TYPE_CHECKING:
    from fedfit.orchestration.sync import RoundOutcome


def profile(**overrides: Any) -> DeviceProfile:
    base = DeviceProfile(tier="test", total_memory_bytes=2**30, training_memory_bytes=2**26,
                         flops_per_s=1e10, utilisation=UtilisationCurve(1.0, 0.0), battery_capacity_j=36000.0,
                         compute_power_w=2.0, radio_power_w=1.0, latency_s=0.05,
                         radios=(Link.WIFI,))
    return replace(base, **overrides)


def state(**overrides: Any) -> DeviceState:
    base = DeviceState(free_memory_bytes=2**26, battery_fraction=0.9, charging=False, temperature_c=30.0,
                       thermal=Thermal.NOMINAL, link=Link.WIFI, bandwidth_bps=1e7, online=True)
    return replace(base, **overrides)


def write_fashion_like(folder: Path, n_train: int = 480, n_test: int = 100, seed: int = 0) -> Path:
    """A Fashion-MNIST-shaped IDX folder (28×28 uint8 images, 10 labels) with learnable classes."""
    import numpy as np

    from fedfit.data import write_idx

    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    for prefix, n in (("train", n_train), ("t10k", n_test)):
        labels = (np.arange(n) % 10).astype(np.uint8)
        images = rng.integers(0, 60, (n, 28, 28), dtype=np.uint8)
        for i, label in enumerate(labels):  # a bright band whose row encodes the class
            images[i, 2 + 2 * label: 4 + 2 * label, :] = 255
        write_idx(folder / f"{prefix}-images-idx3-ubyte", images)
        write_idx(folder / f"{prefix}-labels-idx1-ubyte", labels)
    return folder


class Killed(Exception):
    """Stands for the process dying (raised from a run's ``on_round``)."""


def kill_after(round_: int) -> Callable[[RoundOutcome], None]:
    """An ``on_round`` hook that raises :class:`Killed` once round ``round_`` is done."""
    def on_round(outcome: RoundOutcome) -> None:
        if outcome.report.round == round_:
            raise Killed
    return on_round


def executor_run_config(name: str, executor: str, *, training: dict[str, Any] | None = None,
                        simulation: dict[str, Any] | None = None) -> Any:
    """A 12-device, 3-round digits/MLP run through ``executor``: the whole-run equality checks
    between an executor and ``local`` use it."""
    from fedfit.config import parse_config

    return parse_config({
        "name": name, "seed": 3,
        "data": {"dataset": "digits", "partition": {"kind": "dirichlet", "alpha": 1.0},
                 "max_train_samples": 900, "max_test_samples": 200},
        "model": {"name": "mlp"},
        "fleet": {"tiers": {"flagship_phone": 4, "midrange_phone": 4, "older_phone": 4}},
        "training": {"batch_size": 16, **(training or {})},
        "orchestration": {"rounds": 3, "clients_per_round": 6},
        "output": {"plots": False, "progress": False},
        "simulation": {"executor": executor, **(simulation or {})},
    })
