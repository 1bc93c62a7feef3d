"""The bound's per-device terms for one common batch, as arrays over the planned devices.

:func:`~fedfit.policy.dynamite.search.search_homogeneous` scores τ_max × ~15 common batches, each
over every planned device: one device's round seconds, joules and noise term per score, as
:func:`~fedfit.policy.dynamite.bound.bound` writes them, is τ_max × 15 × n Python calls per re-plan
(most of a re-plan at a few hundred devices). Here a batch's step and probe seconds are taken once
per device (they do not depend on τ), a noise value once per distinct data size (devices holding as
many samples share it), and each τ is then a few array operations. The values are the same floats
:func:`bound` computes — the same operations, in the same order, element by element, and the
fleet's sums taken by Python's ``sum`` in device order — so the plans are unchanged. Pure.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from fedfit.policy.dynamite.bound import Budget, Estimates, phi, rounds_within
from fedfit.policy.dynamite.costs import DeviceCost

Floats = NDArray[np.float64]


class CommonBatchTerms:
    """:func:`bound` for every device at one common batch, τ by τ (``devices`` fixed)."""

    def __init__(self, devices: Sequence[DeviceCost], shares: Sequence[float]) -> None:
        self.devices = devices
        self.comm = np.array([d.comm_s for d in devices], dtype=np.float64)
        self.compute_w = np.array([d.compute_power_w for d in devices], dtype=np.float64)
        self.radio_j = np.array([d.radio_power_w * d.comm_s for d in devices], dtype=np.float64)
        self.squares = np.array([p * p for p in shares], dtype=np.float64)
        self.iid = np.array([_iid(d) for d in devices], dtype=bool)
        self.caps = [d.batch_cap for d in devices]
        self._at: dict[tuple[int, bool], _AtBatch] = {}

    def bound(self, tau: int, batch: int, est: Estimates, lr: float, budget: Budget, *, capped: bool = False) -> float:
        """Φ(τ, b, …, b) over the devices (``capped``: each device at ``min(b, its cap)``), equal to
        :func:`~fedfit.policy.dynamite.bound.bound` of those batches."""
        at = self._batch(batch, capped)
        busy = tau * at.step + at.probe
        slowest = float(np.max(busy + self.comm))
        joules = sum((self.compute_w * busy + self.radio_j).tolist())
        unit = np.array([d.noise(1.0, tau, b) for d, b in at.kinds], dtype=np.float64)[at.kind]
        terms = np.where(self.iid, self.squares / at.batches, self.squares * unit)
        return phi(tau, rounds_within(budget, slowest, joules), sum(terms.tolist()), est, lr)

    def _batch(self, batch: int, capped: bool) -> _AtBatch:
        """The devices' τ-independent terms at the common ``batch`` (taken once per batch)."""
        key = (batch, capped)
        if key not in self._at:
            batches = [min(batch, c) if capped else batch for c in self.caps]
            kinds: dict[tuple[object, ...], int] = {}
            representative: list[tuple[DeviceCost, int]] = []  # one (device, batch) per unit noise
            index = []
            for d, b in zip(self.devices, batches):
                k = kinds.setdefault((*_noise_kind(d), b), len(kinds))
                if k == len(representative):
                    representative.append((d, b))
                index.append(k)
            self._at[key] = _AtBatch(
                step=np.array([d.step_s(b) for d, b in zip(self.devices, batches)], dtype=np.float64),
                probe=np.array([d.probe_s(b) for d, b in zip(self.devices, batches)], dtype=np.float64),
                batches=np.array(batches, dtype=np.float64), kind=np.array(index, dtype=np.int64),
                kinds=representative)
        return self._at[key]


@dataclass(frozen=True)
class _AtBatch:
    """Each device's step and probe seconds, batch, and which unit noise it shares, at one batch."""

    step: Floats
    probe: Floats
    batches: Floats
    kind: NDArray[np.int64]
    kinds: list[tuple[DeviceCost, int]]


def _iid(d: DeviceCost) -> bool:
    """Whether the device's noise term is p²/b (independent draws), not p² × a unit noise."""
    return not d.streaming and d.contraction is None and not d.reshuffled


def _noise_kind(d: DeviceCost) -> tuple[object, ...]:
    """What a device's unit noise depends on besides (τ, b)."""
    return (d.streaming, d.contraction, d.reshuffled, d.data_size)
