"""Finding the (τ, b_i) that minimise DYNAMITE's bound (:mod:`.bound`).

Three solvers, from the paper's offline solutions:

* :func:`closed_form_assignment`: the homogeneous closed form (one b for all), rounded to the
  integers around it and checked against the exact bound for every candidate binding budget;
* :func:`search_homogeneous`: an exact search over τ = 1..τ_max and a batch grid;
* :func:`assign_heterogeneous`: different b_i per device. From the homogeneous optimum at each
  τ near it, a greedy descent moves one device's batch a grid step up or down, whichever
  lowers the bound most, until no move helps. By default (``energy_cap``) a round may cost no
  more joules than the best common batch's at that τ: the descent starts from the batches
  that spend those joules where they cut the noise most (:mod:`.energy_fill`, which derives
  it). Without the cap, devices off the critical path first grow into their time share for
  free (K is set by the slowest round), capped by what their memory and data afford. Either
  way larger-data devices gain most (their noise weight is p_i²), and a slow device's batch
  shrinks when more rounds are worth more than its noise.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from fedfit.policy.dynamite.bound import Budget, Estimates, RoundShape, bound, closed_form, drift, rounds_within
from fedfit.policy.dynamite.costs import DeviceCost
from fedfit.policy.dynamite.descent import Moves, Totals
from fedfit.policy.dynamite.energy_fill import energy_fill, round_energy_j
from fedfit.policy.dynamite.table import CommonBatchTerms


@dataclass(frozen=True, slots=True)
class Assignment:
    """A co-optimised plan: τ local steps, b_i per device, and its bound.

    Attributes:
        tau: local steps between aggregations.
        batches: b_i per device, in the order the devices were given.
        bound: Φ(τ, b) of this assignment.
    """

    tau: int
    batches: tuple[int, ...]
    bound: float


def batch_grid(cap: int) -> list[int]:
    """Candidate batches: every batch up to 8, then steps of about 2^(1/4), and ``cap`` itself.

    >>> batch_grid(20)
    [1, 2, 3, 4, 5, 6, 7, 8, 10, 11, 13, 16, 19, 20]
    """
    grid, b = list(range(1, min(cap, 8) + 1)), 8.0
    while True:
        b *= 2 ** 0.25
        if round(b) >= cap:
            break
        grid.append(round(b))
    return sorted({*grid, max(1, cap)})


def search_homogeneous(devices: Sequence[DeviceCost], shares: Sequence[float], est: Estimates, lr: float,
                       budget: Budget, tau_max: int) -> Assignment:
    """The best common (τ, b) over τ = 1..``tau_max`` and :func:`batch_grid` of the smallest cap."""
    best = (math.inf, 1, 1)  # (Φ, τ, b)
    terms = CommonBatchTerms(devices, shares)  # :func:`bound`'s values, as arrays over the devices
    for tau in range(1, tau_max + 1):
        for b in batch_grid(min(d.batch_cap for d in devices)):
            value = terms.bound(tau, b, est, lr, budget)
            if value < best[0]:
                best = (value, tau, b)
    return Assignment(best[1], tuple(best[2] for _ in devices), best[0])


def _shapes(devices: Sequence[DeviceCost], budget: Budget) -> list[RoundShape]:
    """Each way the budget can bind: one device's time, or the fleet's energy."""
    shapes = []
    if budget.time_s is not None:
        shapes += [RoundShape(d.sample_s, d.sample_s * d.half_batch, d.comm_s, budget.time_s) for d in devices]
    if budget.energy_j is not None:
        shapes.append(RoundShape(sum(d.compute_power_w * d.sample_s for d in devices),
                                 sum(d.compute_power_w * d.sample_s * d.half_batch for d in devices),
                                 sum(d.radio_power_w * d.comm_s for d in devices), budget.energy_j))
    return shapes


def closed_form_assignment(devices: Sequence[DeviceCost], shares: Sequence[float], est: Estimates, lr: float,
                           budget: Budget, tau_max: int) -> Assignment:
    """The homogeneous closed form: (τ*, b*) for each binding budget, rounded down and up,
    clamped to [1, τ_max] × [1, smallest cap], the candidate with the lowest exact bound."""
    cap = min(d.batch_cap for d in devices)
    best = Assignment(1, tuple(1 for _ in devices), math.inf)
    for shape in _shapes(devices, budget) or [RoundShape(1.0, 0.0, 0.0, math.inf)]:
        tau_real, b_real = closed_form(shape, shares, est, lr)
        for tau in _integers_around(tau_real, tau_max):
            for b in _integers_around(b_real, cap):
                batches = tuple(b for _ in devices)
                value = bound(tau, batches, devices, shares, est, lr, budget)
                if value < best.bound:
                    best = Assignment(tau, batches, value)
    return best


def _integers_around(x: float, upper: int) -> tuple[int, ...]:
    if not math.isfinite(x):
        return (upper,) if x > 0 else (1,)
    return tuple(sorted({min(upper, max(1, math.floor(x))), min(upper, max(1, math.ceil(x)))}))


def assign_heterogeneous(devices: Sequence[DeviceCost], shares: Sequence[float], est: Estimates, lr: float,
                         budget: Budget, tau_max: int, *, start: Assignment | None = None,
                         energy_cap: bool = True) -> Assignment:
    """Per-device b_i: greedy descent from the homogeneous optimum at τ and its neighbours
    (``energy_cap`` and no energy budget: no round above the joules of the best common batch at
    its τ; an energy budget prices the joules through K instead)."""
    start = start or search_homogeneous(devices, shares, est, lr, budget, tau_max)
    best = start
    for tau in range(max(1, start.tau - 2), min(tau_max, start.tau + 2) + 1):
        common = search_homogeneous_at(tau, devices, shares, est, lr, budget)
        cap_j = round_energy_j(tau, common, devices) if energy_cap and budget.energy_j is None else math.inf
        found = _descend(tau, list(common), devices, shares, est, lr, budget, cap_j)
        if found.bound < best.bound:
            best = found
    return best


def search_homogeneous_at(tau: int, devices: Sequence[DeviceCost], shares: Sequence[float], est: Estimates,
                          lr: float, budget: Budget) -> tuple[int, ...]:
    """The best common batch at a fixed τ, each device at that batch or its own cap if smaller.

    The heterogeneous solver's reference (its start and its energy cap): over the grid of the
    largest cap, so one device that can hold a single sample does not pin the fleet's common
    batch, and with it the joules every other device may spend, to 1.
    """
    grid = batch_grid(max(d.batch_cap for d in devices))
    terms = CommonBatchTerms(devices, shares)  # :func:`bound` of each capped common batch, as arrays
    b = min(grid, key=lambda c: terms.bound(tau, c, est, lr, budget, capped=True))
    return _capped(b, devices)


def _capped(batch: int, devices: Sequence[DeviceCost]) -> tuple[int, ...]:
    return tuple(min(batch, d.batch_cap) for d in devices)


def _descend(tau: int, batches: list[int], devices: Sequence[DeviceCost], shares: Sequence[float],
             est: Estimates, lr: float, budget: Budget, cap_j: float = math.inf) -> Assignment:
    grids = [batch_grid(d.batch_cap) for d in devices]
    state = Totals(tau, batches, devices, shares, est, lr, budget, cap_j)
    if math.isinf(cap_j):
        _fill_time_shares(state, batches, grids)
    else:
        _fill_energy(state, batches, grids)
    moves = Moves(state, grids, batches)  # every device's grid neighbours, scored as arrays
    for _ in range(2 * sum(len(g) for g in grids)):  # each device crosses its grid at most twice
        value, i, b = moves.best()
        if value >= state.value() * (1 - 1e-12):
            break
        batches[i] = b
        moves.move(i, b)
    return Assignment(tau, tuple(batches), state.value())


def _fill_time_shares(state: Totals, batches: list[int], grids: list[list[int]]) -> None:
    """Raise each device to the largest grid batch whose round fits the slowest round, where
    that lowers the bound (with only a time budget it always does: K is unchanged)."""
    slowest = max(state.times)
    for i, grid in enumerate(grids):
        fits = [g for g in grid if g > batches[i] and state.devices[i].round_s(state.tau, g) <= slowest]
        if fits and state.value_if(i, fits[-1]) < state.value():
            batches[i] = fits[-1]
            state.move(i, fits[-1])


def _fill_energy(state: Totals, batches: list[int], grids: list[list[int]]) -> None:
    """Replace the common batches by :func:`energy_fill`'s within the same joules and slowest
    round, where that lowers the bound."""
    filled = energy_fill(state.tau, state.devices, state.shares, grids, max(state.times), state.cap_j)
    before = state.value()
    moved = list(batches)
    state.move_all(filled)
    if state.value() < before:
        batches[:] = filled
        return
    state.move_all(moved)


def _neighbours(grid: list[int], b: int) -> list[int]:
    up = [g for g in grid if g > b]
    down = [g for g in grid if g < b]
    return ([up[0]] if up else []) + ([down[-1]] if down else [])
