"""Pricing the joules of a time-only budget at the plan's own rate (``dynamite.energy_price``).

Under a time budget alone the bound's K = T / max_i round_s_i sees one device's round: joules
are free, so wherever a link or one slow device sets the round time a larger batch elsewhere
costs nothing in Φ. The energy cap (:mod:`.energy_fill`) holds a round to the best *common*
batch's joules, but that batch is itself chosen with the joules free: on a link-bound round its
noise cut is bought at almost no time, so b_c grows to the devices' whole data once σ̂² is large
(traced in ``bench/RESULTS.md``, "dyn14s"), and a round costs up to twice the joules of a small
batch for a Φ a few per cent lower.

The cost to a target is counted in both currencies, each relative to what it would be: a round
that costs x % more joules for the same rounds to target is as much worse in energy as one x %
longer is in time. ``plan_power`` weighs them alike: a time-only budget charges a round

    √(round_s · round_j / P₀)   seconds instead of round_s,   P₀ = E₀ / s₀

with (s₀, E₀) the slowest round and fleet joules of the best common (τ, b) found with the joules
free (:func:`~fedfit.policy.dynamite.search.search_homogeneous`): the round's own exchange rate,
so that plan keeps its K and every other plan gains or loses rounds by the geometric mean of its
relative seconds and joules (K = √(K_T · K_E), K_E = P₀T / round_j: the rounds of an energy
budget of P₀T). On a compute-bound round seconds and joules grow together with τ and b and the
charge is about the time budget's; where the round time is fixed by a link, a sample's joules
cost rounds and are taken only where its noise cut pays for them. Pure policy.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Literal

from fedfit.policy.dynamite.bound import Budget, Estimates
from fedfit.policy.dynamite.costs import DeviceCost
from fedfit.policy.dynamite.search import Assignment, search_homogeneous

EnergyPrice = Literal["none", "plan_power", "per_device", "cap"]


def priced_budget(mode: EnergyPrice, budget: Budget, devices: Sequence[DeviceCost], shares: Sequence[float],
                  est: Estimates, lr: float, tau_max: int, free: Assignment | None = None) -> Budget:
    """``budget`` with its joules priced at the free-joules common optimum's power (``free``, or
    searched; time budget alone, ``mode`` not ``none``); unchanged otherwise."""
    if mode == "none" or budget.time_s is None or budget.energy_j is not None:
        return budget
    free = free or search_homogeneous(devices, shares, est, lr, dataclasses.replace(budget, power_w=None), tau_max)
    seconds = max(d.round_s(free.tau, b) for d, b in zip(devices, free.batches))
    joules = sum(d.round_j(free.tau, b) for d, b in zip(devices, free.batches))
    if seconds <= 0 or joules <= 0:
        return budget
    return dataclasses.replace(budget, power_w=joules / seconds)
