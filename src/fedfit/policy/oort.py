"""Oort-guided selection: statistical utility × system utility, with exploration.

Lai, Zhu, Madhyastha and Chowdhury 2021, "Oort: Efficient Federated Learning via Guided
Participant Selection" (OSDI), Algorithm 1. A device's utility is

    U_i = (stat_i + sqrt(0.1 · ln R / L_i)) · (T / t_i)^α·[T < t_i]

with stat_i = |B_i|·sqrt(mean loss²) from its last update (fedfit has the mean loss, so
|B_i|·loss — the square root of the mean square is bounded below by it), R the current round
(the model version the cohort will start from, also in asynchronous mode, where the server
draws many times per version), L_i the round its last update started from, t_i the duration
of that last task as measured (Oort's feedback) and T the preferred round duration. A share ε
of the seats explores never-tried devices (faster first: drawn with probability ∝ 1/t_i, t_i
predicted by the cost model); the rest are drawn, with probability ∝ utility, among explored
devices whose utility is at least c × the utility at the cut-off rank.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from fedfit.policy.readiness import Readiness


def statistical_utility(samples_processed: int, train_loss: float) -> float:
    """Oort's statistical utility of an update, |B|·loss (0 for a non-finite loss: a diverged
    update tells nothing about the data's utility)."""
    return samples_processed * train_loss if math.isfinite(train_loss) else 0.0


def oort_utility(r: Readiness, version: int, preferred_s: float, penalty: float) -> float:
    """Oort's utility of an explored device at model version ``version`` (R).

    ``statistical_utility`` must be set; t_i is ``measured_duration_s`` when the device has one,
    else its predicted duration.
    """
    last = max(r.last_round if r.last_round is not None else 0, 1)
    stat = (r.statistical_utility or 0.0) + math.sqrt(0.1 * math.log(max(version, 1) + 1) / last)
    duration = r.measured_duration_s if r.measured_duration_s is not None else r.predicted_duration_s
    if duration > preferred_s:
        stat *= (preferred_s / duration) ** penalty
    return stat


def _draw(rng: np.random.Generator, ids: list[int], weights: list[float], k: int) -> list[int]:
    k = min(k, len(ids))
    if k == 0:
        return []
    p = np.asarray(weights, dtype=np.float64)
    p = p / p.sum() if p.sum() > 0 else np.full(len(ids), 1.0 / len(ids))
    nonzero = int((p > 0).sum())
    if nonzero < k:  # not enough positive weights: fill uniformly
        p = np.full(len(ids), 1.0 / len(ids))
    return [ids[i] for i in rng.choice(len(ids), size=k, replace=False, p=p)]


@dataclass(frozen=True, slots=True)
class OortSelector:
    """Oort's guided selection.

    Attributes:
        exploration: ε, share of seats for never-tried devices.
        cutoff: c, explored devices within this fraction of the cut-off utility are candidates.
        penalty: α, the exponent on slow devices' system utility.
        preferred_duration_s: T; ``None`` uses the median predicted duration of the candidates.
    """

    exploration: float = 0.2
    cutoff: float = 0.95
    penalty: float = 2.0
    preferred_duration_s: float | None = None

    def select(self, ready: Sequence[Readiness], size: int, *, seed: int, draw: int, version: int) -> list[int]:
        pool = sorted(ready, key=lambda r: r.device_id)
        if not pool:
            return []
        rng = np.random.default_rng([seed, draw, 0x0027])
        explored = [r for r in pool if r.statistical_utility is not None]
        fresh = [r for r in pool if r.statistical_utility is None]
        finite = [r.predicted_duration_s for r in pool if math.isfinite(r.predicted_duration_s)]
        preferred = self.preferred_duration_s or (statistics.median(finite) if finite else 1.0)
        explore = min(len(fresh), max(size - len(explored), round(self.exploration * size)))
        chosen = _draw(rng, [r.device_id for r in fresh],
                       [1.0 / max(r.predicted_duration_s, 1e-9) for r in fresh], explore)
        utilities = sorted(((oort_utility(r, version, preferred, self.penalty), r.device_id) for r in explored),
                           reverse=True)
        exploit = min(size - len(chosen), len(utilities))
        if exploit > 0:
            bar = self.cutoff * utilities[exploit - 1][0]
            admitted = [(u, d) for u, d in utilities if u >= bar]
            chosen += _draw(rng, [d for _, d in admitted], [u for u, _ in admitted], exploit)
        return chosen
