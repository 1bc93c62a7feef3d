"""Secure aggregation of heterogeneous updates: the masked weighted average from per-cohort sums.

The masked weighted average needs, per master coordinate c, the sums Σ_i w_i m_i[c] x_i[c] and
Σ_i w_i m_i[c]. Devices are grouped into cohorts by the coordinates they hold (in practice
their width group: every device of one width and index choice holds the same sub-model), and
each cohort runs one SecAgg instance (:func:`~fedfit.security.secagg.protocol.secure_sum`):

* a *uniform* cohort (every member holds the same coordinates) sums the vector
  (w_i x_i on those coordinates, w_i) — one extra number per device;
* cohorts smaller than ``min_cohort`` are merged into one *mixed* cohort that sums
  (w_i m_i x_i, w_i m_i) over the union of its members' coordinates — twice the size, but it
  hides which device held what (a cohort of one would reveal its update); if that leaves the
  mixed cohort itself smaller than ``min_cohort``, every device joins one mixed cohort.

The server adds the cohorts' sums coordinate by coordinate and divides: the same result as the
plain masked average of the survivors, up to fixed-point rounding (2^-24). A ``dropout`` share
of each cohort drops after masking (seeded by (seed, master digest, cohort)); their updates
are lost but the sum of the rest is exact. A cohort with fewer survivors than its threshold
⌈threshold · n⌉ aborts and contributes nothing. Robust rules cannot run on top: they need the
individual updates SecAgg hides.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from fedfit.aggregation import Contribution
from fedfit.aggregation.robust.stack import held_mask
from fedfit.security.central_dp import params_digest
from fedfit.security.secagg.protocol import secure_sum
from fedfit.security.secagg.server import SecAggAborted
from fedfit.types import Params

#: name → boolean mask over the master tensor.
Coordinates = dict[str, torch.Tensor]
#: name → float64 per-coordinate sums over the master tensor.
Sums = dict[str, torch.Tensor]


def cohorts(master: Params, contributions: Sequence[Contribution], min_cohort: int) -> list[tuple[list[int], bool]]:
    """Indices of each cohort's members and whether the cohort is uniform (same coordinates held)."""
    groups: dict[bytes, list[int]] = {}
    for i, c in enumerate(contributions):
        key = b"".join(held_mask(c, name, old).numpy().tobytes() for name, old in master.items()
                       if old.is_floating_point())
        groups.setdefault(key, []).append(i)
    uniform = [g for g in groups.values() if len(g) >= min_cohort]
    mixed = sorted(i for g in groups.values() if len(g) < min_cohort for i in g)
    if 0 < len(mixed) < min_cohort and uniform:  # too few to hide among: everyone joins them
        return [(list(range(len(contributions))), False)]
    return [(g, True) for g in uniform] + ([(mixed, len(groups) == 1)] if mixed else [])


def union(master: Params, members: Sequence[Contribution]) -> Coordinates:
    """The coordinates any member holds, per floating parameter."""
    out: Coordinates = {}
    for name, old in master.items():
        if old.is_floating_point():
            out[name] = torch.stack([held_mask(c, name, old) for c in members]).any(dim=0)
    return out


def vector(c: Contribution, coords: Coordinates, uniform: bool) -> np.ndarray:
    """The vector a device masks: (w x, w) if ``uniform``, else (w m x, w m), on ``coords``."""
    values, weights = [], []
    for name, where in coords.items():
        held = held_mask(c, name, where)[where].to(torch.float64)
        x = c.params[name].to(torch.float64)[where] if name in c.params else torch.zeros_like(held)
        values.append(c.weight * held * x)
        weights.append(c.weight * held)
    tail = [torch.tensor([c.weight], dtype=torch.float64)] if uniform else weights
    return torch.cat([*values, *tail]).numpy()


def fold(num: dict[str, torch.Tensor], den: dict[str, torch.Tensor], total: np.ndarray, coords: Coordinates,
         uniform: bool) -> None:
    """Add a cohort's decoded sum into the per-coordinate numerators and denominators."""
    flat, offset = torch.from_numpy(total), 0
    sizes = {name: int(where.sum()) for name, where in coords.items()}
    weight_offset = sum(sizes.values())
    for name, where in coords.items():
        num[name][where] += flat[offset: offset + sizes[name]]
        den[name][where] += flat[weight_offset] if uniform else flat[weight_offset: weight_offset + sizes[name]]
        offset += sizes[name]
        weight_offset += 0 if uniform else sizes[name]


@dataclass(frozen=True)
class SecureAggregate:
    """The masked weighted average computed from SecAgg sums only.

    Attributes:
        threshold: share t/n of a cohort needed to unmask (t = ⌈threshold · n⌉, at least 1).
        dropout: share of each cohort that drops after masking (simulated).
        min_cohort: smallest uniform cohort; smaller groups join the mixed cohort.
        seed: seeds key material and the dropout draw (with the master's digest).
    """

    threshold: float = 0.5
    dropout: float = 0.0
    min_cohort: int = 3
    seed: int = 0

    def __call__(self, master: Params, contributions: Sequence[Contribution]) -> Params:
        num, den = self.sums(master, contributions)
        return average_of(master, num, den)

    def sums(self, master: Params, contributions: Sequence[Contribution]) -> tuple[Sums, Sums]:
        """Per floating parameter, Σ w m x and Σ w m over the cohorts that finished (SecAgg only)."""
        live = [c for c in contributions if c.weight > 0]
        num = {n: torch.zeros_like(v, dtype=torch.float64) for n, v in master.items() if v.is_floating_point()}
        den = {n: torch.zeros_like(t) for n, t in num.items()}
        round_seed = params_digest(master) ^ self.seed
        for k, (members, uniform) in enumerate(cohorts(master, live, self.min_cohort)):
            group = [live[i] for i in members]
            coords = union(master, group)
            rng = random.Random(round_seed + k)
            dropped = set(rng.sample(range(len(group)), math.floor(self.dropout * len(group))))
            try:
                result = secure_sum([vector(c, coords, uniform) for c in group], dropped=dropped,
                                    threshold=max(1, math.ceil(self.threshold * len(group))), seed=round_seed + k)
            except SecAggAborted:
                continue
            fold(num, den, result.total, coords, uniform)
        return num, den


def average_of(master: Params, num: Sums, den: Sums) -> Params:
    """num / den where some device held the coordinate, the master's value elsewhere."""
    out: Params = {}
    for name, old in master.items():
        if name not in num:
            out[name] = old.clone()
            continue
        new = torch.where(den[name] > 0, num[name] / den[name].clamp_min(1e-300), old.to(torch.float64))
        out[name] = new.to(old.dtype)
    return out
