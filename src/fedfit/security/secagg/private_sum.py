"""SecAgg with central DP, and the combining rule of a deployed SecAgg run.

*SecAgg + DP-FedAvg.* Each device clips its delta to norm S before masking (over the
coordinates it holds) and takes part with weight 1; SecAgg gives the server
(Σ_i m_i clip_S(Δ_i), Σ_i m_i) per cohort and nothing else; the server adds N(0, σ²S²) to the
unmasked sum and divides by the holder count, exactly as
:class:`~fedfit.security.central_dp.CentralDP` does on individual updates (same noise draws, so
the two agree up to fixed-point rounding). Clipping is the device's job: a device that does
not clip is not bounded, the trust assumption of DP-FedAvg under SecAgg (Kairouz et al. 2021,
"Advances and Open Problems in FL", §4.4). The accountant is unchanged.

*Deployed SecAgg.* The HTTP server never holds individual updates: the cohorts' unmasked
sums are put into a :class:`CohortSums` as each cohort finishes, and :class:`SummedAggregate`
(the rule's combine in a deployed SecAgg run) takes them and ignores the placeholder
contributions the orchestrator hands it (they only carry weights and counts).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field

import torch

from fedfit.aggregation import Contribution
from fedfit.aggregation.robust import clip_contributions
from fedfit.security.central_dp import noise_generator
from fedfit.security.secagg.cohorts import SecureAggregate, Sums, average_of
from fedfit.types import Params


def noisy_mean(master: Params, num: Sums, den: Sums, std: float, seed: int) -> Params:
    """master + (Σ clipped deltas + N(0, std²)) / max(1, holders) on held coordinates.

    The noise is drawn as :class:`~fedfit.security.central_dp.CentralDP` draws it (one tensor per
    floating parameter, in the master's order, from (seed, digest of ``master``)).
    """
    gen = noise_generator(seed, master)
    out: Params = {}
    for name, old in master.items():
        if name not in num:
            out[name] = old.clone()
            continue
        noise = torch.randn(old.shape, generator=gen, dtype=torch.float64) * std
        step = (num[name] + noise) / den[name].clamp_min(1)
        new = torch.where(den[name] > 0, old.to(torch.float64) + step, old.to(torch.float64))
        out[name] = new.to(old.dtype)
    return out


def clipped_deltas(master: Params, contributions: Sequence[Contribution], clip_norm: float) -> list[Contribution]:
    """Each live contribution's delta, clipped to ``clip_norm`` over the coordinates it holds, weight 1."""
    live = [Contribution(c.params, 1.0, c.masks) for c in contributions if c.weight > 0]
    clipped = clip_contributions(master, live, bound=clip_norm)
    return [Contribution({n: p.to(torch.float64) - master[n].to(torch.float64) for n, p in c.params.items()},
                         1.0, c.masks) for c in clipped]


@dataclass(frozen=True)
class SecureCentralDP:
    """DP-FedAvg whose sum is computed under SecAgg (simulated).

    Attributes:
        secure: the SecAgg settings (cohorts, threshold, dropout).
        clip_norm: S.
        noise_multiplier: σ (noise std σ·S on the sum).
        seed: seeds the noise (with the master's digest).
    """

    secure: SecureAggregate
    clip_norm: float
    noise_multiplier: float
    seed: int = 0

    def __call__(self, master: Params, contributions: Sequence[Contribution]) -> Params:
        deltas = clipped_deltas(master, contributions, self.clip_norm)
        if not deltas:
            return master
        num, den = self.secure.sums(master, deltas)
        return noisy_mean(master, num, den, self.noise_multiplier * self.clip_norm, self.seed)


@dataclass
class CohortSums:
    """Unmasked cohort sums waiting for the round's aggregation (thread-safe)."""

    _parts: list[tuple[int, Sums, Sums]] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, round_: int, num: Sums, den: Sums) -> None:
        with self._lock:
            self._parts.append((round_, num, den))

    def take(self, master: Params) -> tuple[Sums, Sums]:
        """The sums of the newest round added since the last call, added together (zeros when none)."""
        with self._lock:
            parts, self._parts = self._parts, []
        newest = max((r for r, _, _ in parts), default=0)
        parts = [p for p in parts if p[0] == newest]
        num = {n: torch.zeros_like(v, dtype=torch.float64) for n, v in master.items() if v.is_floating_point()}
        den = {n: torch.zeros_like(t) for n, t in num.items()}
        for _, n_part, d_part in parts:
            for name in num:
                num[name] += n_part[name]
                den[name] += d_part[name]
        return num, den


@dataclass(frozen=True)
class SummedAggregate:
    """A deployed SecAgg run's combine: the average (or DP-FedAvg step) from the cohorts' sums.

    Attributes:
        sums: where the server's SecAgg sessions put each finished cohort's sums.
        noise_std: σ·S when central DP is on (the sums are then of clipped deltas), else ``None``.
        seed: seeds the noise.
    """

    sums: CohortSums
    noise_std: float | None = None
    seed: int = 0

    def __call__(self, master: Params, contributions: Sequence[Contribution]) -> Params:
        num, den = self.sums.take(master)
        if self.noise_std is None:
            return average_of(master, num, den)
        return noisy_mean(master, num, den, self.noise_std, self.seed)
