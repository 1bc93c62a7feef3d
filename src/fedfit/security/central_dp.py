"""DP-FedAvg: device-level central differential privacy at the server.

McMahan, Ramage, Talwar and Zhang 2018, "Learning Differentially Private Recurrent Language
Models" (ICLR). Every device's delta is clipped to norm S (over the coordinates it holds),
the clipped deltas are summed unweighted, Gaussian noise N(0, σ²S²) is added to each summed
coordinate, and the sum is divided by the number of devices that hold the coordinate::

    x[c] ← x[c] + (Σ_i m_i[c] clip_S(Δ_i)[c] + N(0, σ²S²)) / max(1, Σ_i m_i[c])

Adding or removing one device moves the sum by at most S in L2 norm, so each round is a
Gaussian mechanism with noise multiplier σ; :mod:`fedfit.security.accountant` composes the
rounds. Heterogeneous updates: which coordinates each device holds is fixed by the server's
own plans (widths, masks), not by the data, so the holder counts are treated as public and
coordinates nobody holds get no noise and keep their value.

The noise is drawn from a generator seeded by (seed, a digest of the current master), so a
run, and a resumed run, draw the same noise.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from fedfit.aggregation import Contribution
from fedfit.aggregation.robust import clip_contributions
from fedfit.aggregation.robust.stack import move, stack
from fedfit.types import Params


def params_digest(params: Params) -> int:
    """A 63-bit digest of every tensor's name and bytes (the noise seed's second half)."""
    h = hashlib.sha256()
    for name in sorted(params):
        h.update(name.encode())
        h.update(params[name].detach().contiguous().cpu().numpy().tobytes())
    return int.from_bytes(h.digest()[:8], "little") & 0x7FFF_FFFF_FFFF_FFFF


def noise_generator(seed: int, master: Params) -> torch.Generator:
    """The generator of one round's noise, from (seed, digest of ``master``)."""
    state = np.random.SeedSequence([seed, params_digest(master)]).generate_state(1, dtype=np.uint64)
    return torch.Generator().manual_seed(int(state[0]) & 0x7FFF_FFFF_FFFF_FFFF)


@dataclass(frozen=True)
class CentralDP:
    """DP-FedAvg's clip, sum, noise and average, in place of the masked weighted average.

    >>> m = {"w": torch.zeros(2)}
    >>> cs = [Contribution({"w": torch.tensor([3.0, 4.0])}, 1.0), Contribution({"w": torch.tensor([0.0, 1.0])}, 9.0)]
    >>> CentralDP(clip_norm=1.0, noise_multiplier=0.0)(m, cs)["w"]   # ((0.6, 0.8) + (0, 1)) / 2
    tensor([0.3000, 0.9000])

    Attributes:
        clip_norm: S, the per-device L2 bound on a delta.
        noise_multiplier: σ; the noise standard deviation is σ·S.
        seed: seeds the noise (with the master's digest).
    """

    clip_norm: float
    noise_multiplier: float
    seed: int = 0

    def __call__(self, master: Params, contributions: Sequence[Contribution]) -> Params:
        live = [Contribution(c.params, 1.0, c.masks) for c in contributions if c.weight > 0]
        if not live:
            return master
        s = stack(master, clip_contributions(master, live, bound=self.clip_norm))
        gen, std = noise_generator(self.seed, master), self.noise_multiplier * self.clip_norm
        delta: dict[str, torch.Tensor] = {}
        for name, d in s.deltas.items():
            count = s.held[name].sum(dim=0)
            noise = torch.randn(d.shape[1:], generator=gen, dtype=torch.float64) * std
            delta[name] = (d.sum(dim=0) + noise) / count.clamp_min(1)
        return move(master, delta, {name: h.any(dim=0) for name, h in s.held.items()})
