"""Filling the compute slack of devices off the critical path (``dynamite.slack_fill``).

A synchronous round ends when its slowest device has trained and transferred, so the bound's
K = T / max_i round_s_i (:func:`~fedfit.policy.dynamite.bound.rounds_affordable`) sees one
device's round alone. On a link-bound fleet the slowest round is mostly one device's transfer
(``comm_s``), and every other device waits: its *compute slack*::

    slack_i = max_j round_s_j(τ, b_j) − round_s_i(τ, b_i)

is time in which it could process more samples — a larger b_i at the same τ — without moving K.
The bound then changes only through its noise term Σ p_i² v_i(τ, b_i) (and, with an energy
budget, through the joules in K). The solvers (:mod:`.search`) minimise Φ, but where the noise
term is flat in b_i (a task that already covers whole epochs of reshuffled data carries almost
no sampling error, :mod:`.sampling`, :mod:`.curvature`) they are indifferent between the batch
they found and a larger one, and keep the one they found. The fill breaks those ties towards
samples: each device off the critical path takes the **largest** batch on its grid whose round
still fits the critical path and with which Φ is **not worse**::

    b_i ← max { g ∈ grid_i : g ≥ b_i, round_s_i(τ, g) ≤ max_j round_s_j(τ, b_j),
                Φ(τ, b with b_i = g) ≤ Φ(τ, b) }

so it never lowers the bound's value the solver reached, never lengthens the round, and credits
the extra samples a task processes at no cost in time. (The authors' AdaCoOpt code sets the batch
as the samples a device's per-round time share affords, b = t_s / τ, and, without stragglers,
b_i proportional to each device's speed: every device busy for the whole round.) More local
steps instead of a larger batch would fill the same slack, but the bound has one τ for the fleet
(its drift term and the aggregation weigh equal steps), so only batches are filled.

The time is free, the joules are not: a round's energy Σ_i P_i τ step_s_i(b_i) grows with every
sample filled in. ``within_cap`` fills only within the joules the heterogeneous solver may spend
(its energy cap, :mod:`.energy_fill`: the best common batch's joules at τ), devices with the
cheapest joules per sample first; ``time_share`` fills every device's whole slack. Pure policy.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Literal

from fedfit.policy.dynamite.bound import Budget, Estimates, bound, phi, rounds_within
from fedfit.policy.dynamite.costs import DeviceCost
from fedfit.policy.dynamite.energy_fill import round_energy_j
from fedfit.policy.dynamite.search import Assignment, batch_grid, search_homogeneous_at

SlackFill = Literal["off", "within_cap", "time_share"]


def slack_filled(found: Assignment, mode: SlackFill, devices: Sequence[DeviceCost], shares: Sequence[float],
                 est: Estimates, lr: float, budget: Budget, *, energy_cap: bool) -> Assignment:
    """``found`` with its batches filled by ``mode`` (``off``: unchanged). ``within_cap`` caps the
    fill at the best common batch's joules at τ where the heterogeneous solver's energy cap
    applies (``energy_cap`` and no energy budget); elsewhere it fills like ``time_share``."""
    if mode == "off":
        return found
    cap_j = math.inf
    if mode == "within_cap" and energy_cap and budget.energy_j is None:
        cap_j = round_energy_j(found.tau, search_homogeneous_at(found.tau, devices, shares, est, lr, budget), devices)
    batches = fill_slack(found.tau, found.batches, devices, shares, est, lr, budget, cap_j)
    return dataclasses.replace(found, batches=batches,
                               bound=bound(found.tau, batches, devices, shares, est, lr, budget))


def fill_slack(tau: int, batches: Sequence[int], devices: Sequence[DeviceCost], shares: Sequence[float],
               est: Estimates, lr: float, budget: Budget, cap_j: float = math.inf) -> tuple[int, ...]:
    """The batches with every device off the critical path raised to the largest grid batch whose
    round fits the critical path and with which Φ is not worse (module docstring).

    Args:
        tau: local steps per round.
        batches: b_i the solver chose, per device.
        devices: each device's cost.
        shares: p_i, each device's share of the data.
        est: the convergence quantities.
        lr: η, the local learning rate.
        budget: what training may spend (K as in :func:`~fedfit.policy.dynamite.bound.bound`).
        cap_j: joules one round may cost the fleet (``inf``: no cap); a plan already above it
            is left as it is.
    """
    out = list(batches)
    critical = max(d.round_s(tau, b) for d, b in zip(devices, out))
    energy = sum(d.round_j(tau, b) for d, b in zip(devices, out))
    noise = sum(d.noise(p, tau, b) for d, p, b in zip(devices, shares, out))
    value = _value(tau, est, lr, budget, critical, energy, noise)
    for i in sorted(range(len(out)), key=lambda j: (_joules_per_sample(devices[j], tau, out[j]), j)):
        d, b = devices[i], out[i]
        before_j, before_noise = d.round_j(tau, b), d.noise(shares[i], tau, b)
        for g in reversed(batch_grid(d.batch_cap)):
            if g <= b:
                break
            if d.round_s(tau, g) > critical * (1 + 1e-12):
                continue
            e = energy - before_j + d.round_j(tau, g)
            if e > cap_j * (1 + 1e-12):
                continue
            n = noise - before_noise + d.noise(shares[i], tau, g)
            v = _value(tau, est, lr, budget, critical, e, n)
            if v <= value * (1 + 1e-12):
                out[i], energy, noise, value = g, e, n, v
                break
    return tuple(out)


def _value(tau: int, est: Estimates, lr: float, budget: Budget, slowest_s: float, energy_j: float,
           noise: float) -> float:
    """Φ from the round's slowest seconds, fleet joules and noise sum (as :func:`.bound.bound`)."""
    return phi(tau, rounds_within(budget, slowest_s, energy_j), noise, est, lr)


def _joules_per_sample(device: DeviceCost, tau: int, batch: int) -> float:
    """Compute joules per sample at ``batch`` (the order the fill spends a capped budget in)."""
    return device.compute_power_w * device.step_s(batch) / max(1, batch)
