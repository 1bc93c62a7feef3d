"""The heterogeneous descent's state: the bound's sums under one device's move, and every move
scored at once (:func:`~fedfit.policy.dynamite.search.assign_heterogeneous`).

Each descent step scores every device's two grid neighbours (one batch step up, one down) and
takes the move that lowers Φ most. The number of steps grows with the fleet, so scoring the ~2n
moves one Python call at a time made a re-plan O(n²) calls (about 37 s of CPU per re-plan at
2,000 devices). :class:`Moves` keeps the neighbours' round seconds, joules and noise terms as
arrays, re-priced only for the device that moved, and scores them all with the same floating-point
operations, in the same order, as :meth:`Totals.value_if` — so it picks the same move (the lowest
Φ, then the lowest device, then the smaller batch, as ``min`` over ``(Φ, device, batch)`` did).
Pure.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence

import numpy as np

from fedfit.policy.dynamite.bound import Budget, Estimates, drift, rounds_within
from fedfit.policy.dynamite.costs import DeviceCost


class Totals:
    """The bound's sums kept up to date so one device's move is scored in O(1)."""

    def __init__(self, tau: int, batches: list[int], devices: Sequence[DeviceCost], shares: Sequence[float],
                 est: Estimates, lr: float, budget: Budget, cap_j: float = math.inf) -> None:
        self.tau, self.devices, self.shares, self.est, self.lr, self.budget = tau, devices, shares, est, lr, budget
        self.cap_j = cap_j  # joules a round may cost (inf: no cap)
        self.times = [d.round_s(tau, b) for d, b in zip(devices, batches)]
        self.energies = [d.round_j(tau, b) for d, b in zip(devices, batches)]
        self.noises = [d.noise(p, tau, b) for p, b, d in zip(shares, batches, devices)]
        self.fixed = est.rho * drift(tau, lr, est) / (lr * tau)
        self._terms: dict[tuple[int, int], tuple[float, float, float]] = {}
        self._totals()

    def _value(self, slowest_s: float, energy_j: float, noise: float) -> float:
        k = rounds_within(self.budget, slowest_s, energy_j)
        optimisation = self.est.loss / (self.lr * k * self.tau) if k > 0 else math.inf
        return optimisation + self.est.beta * self.lr * self.est.sigma2 / 2 * noise + self.fixed

    def value(self) -> float:
        return self._value(self.top[1], self.energy, self.noise)

    def terms(self, i: int, b: int) -> tuple[float, float, float]:
        """Device ``i``'s (round seconds, joules, noise term) at batch ``b``, priced once per (i, b):
        a descent step rescores every device's neighbours, and only the moved one's change."""
        key = (i, b)
        if key not in self._terms:
            d = self.devices[i]
            self._terms[key] = (d.round_s(self.tau, b), d.round_j(self.tau, b), d.noise(self.shares[i], self.tau, b))
        return self._terms[key]

    def value_if(self, i: int, b: int) -> float:
        """Φ with device ``i`` at batch ``b`` (``inf`` where the round would pass the energy cap)."""
        seconds, joules, noise_b = self.terms(i, b)
        others = self.top[2] if i == self.top[0] else self.top[1]
        energy = self.energy - self.energies[i] + joules
        if energy > self.cap_j * (1 + 1e-12):
            return math.inf
        noise = self.noise - self.noises[i] + noise_b
        return self._value(max(others, seconds), energy, noise)

    def move(self, i: int, b: int) -> None:
        self.times[i], self.energies[i], self.noises[i] = self.terms(i, b)
        self._totals()

    def move_all(self, batches: Sequence[int]) -> None:
        """Every device ``i`` to ``batches[i]`` (the sums taken once, after the last)."""
        for i, b in enumerate(batches):
            self.times[i], self.energies[i], self.noises[i] = self.terms(i, b)
        self._totals()

    def _totals(self) -> None:
        """Sums, and the slowest device (the first of equals) with the slowest time and the
        runner-up's (a stable sort's first two, found in one pass)."""
        self.energy, self.noise = sum(self.energies), sum(self.noises)
        first, top, second = 0, self.times[0], -math.inf
        for j in range(1, len(self.times)):
            t = self.times[j]
            if t > top:
                first, top, second = j, t, top
            elif t > second:
                second = t
        self.top = (first, top, second if len(self.times) > 1 else 0.0)


class Moves:
    """Every device's grid neighbours of its current batch, column 0 down and column 1 up."""

    def __init__(self, state: Totals, grids: Sequence[Sequence[int]], batches: Sequence[int]) -> None:
        n = len(grids)
        self.state, self.grids = state, grids
        self.batch = np.zeros((n, 2), dtype=np.int64)
        self.seconds = np.zeros((n, 2))
        self.joules = np.zeros((n, 2))
        self.noise = np.zeros((n, 2))
        self.present = np.zeros((n, 2), dtype=bool)
        self.energies = np.array(state.energies, dtype=np.float64)
        self.noises = np.array(state.noises, dtype=np.float64)
        for i, b in enumerate(batches):
            self._price(i, b)

    def _price(self, i: int, b: int) -> None:
        grid = self.grids[i]
        at = bisect.bisect_left(grid, b)
        above = at + 1 if at < len(grid) and grid[at] == b else at
        for column, k in ((0, at - 1), (1, above)):
            self.present[i, column] = 0 <= k < len(grid)
            if self.present[i, column]:
                g = grid[k]
                self.batch[i, column] = g
                self.seconds[i, column], self.joules[i, column], self.noise[i, column] = self.state.terms(i, g)

    def move(self, i: int, b: int) -> None:
        """Device ``i`` to batch ``b``: the sums, and its neighbours re-priced."""
        self.state.move(i, b)
        self.energies[i], self.noises[i] = self.state.energies[i], self.state.noises[i]
        self._price(i, b)

    def best(self) -> tuple[float, int, int]:
        """(Φ, device, batch) of the best move, as ``min`` over every move's ``value_if``;
        ``(inf, -1, 0)`` when there is none."""
        s, est = self.state, self.state.est
        first, top, second = s.top
        others = np.where(np.arange(len(self.grids)) == first, second, top)[:, None]
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            energy = (s.energy - self.energies)[:, None] + self.joules
            noise = (s.noise - self.noises)[:, None] + self.noise
            k = _rounds_within(s.budget, np.maximum(others, self.seconds), energy)
            optimisation = np.where(k > 0, est.loss / (s.lr * k * s.tau), math.inf)
            value = optimisation + est.beta * s.lr * est.sigma2 / 2 * noise + s.fixed
        value[~self.present | (energy > s.cap_j * (1 + 1e-12))] = math.inf
        if not self.present.any():
            return math.inf, -1, 0
        at = int(np.argmin(value))  # the first of equals: the lowest device, then its smaller batch
        i, column = divmod(at, 2)
        return float(value[i, column]), i, int(self.batch[i, column])


def _rounds_within(budget: Budget, round_s: np.ndarray, round_j: np.ndarray) -> np.ndarray:
    """:func:`~fedfit.policy.dynamite.bound.rounds_within` element by element."""
    k = np.full(round_s.shape, math.inf)
    if budget.time_s is not None:
        k = np.minimum(k, budget.time_s / round_s)
    if budget.energy_j is not None:
        k = np.minimum(k, budget.energy_j / round_j)
    if budget.whole_rounds:
        whole = (k >= 1) & (k < math.inf)
        k = np.where(whole, np.floor(k * (1 + 1e-9)), k)
    return k
