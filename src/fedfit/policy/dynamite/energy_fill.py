"""The heterogeneous assignment's energy cap: per-device batches within one common batch's joules.

Under a time-only budget the bound's K = T / max_i round_s_i sees only the slowest round, so a
device off the critical path can grow its batch to the whole of its time share at no cost in Φ:
the noise term βησ²/2 · Σ p_i²/b_i falls and K does not. The joules do not stay put: a round's
energy Σ_i P_i τ step_s_i(b_i) grows with every such batch, and the run's cost to a target is
counted in time *and* energy. So the heterogeneous assignment (``dynamite.energy_cap:
homogeneous``, the default) may spend, per round, no more joules than the best common batch
b_c at the same τ (:func:`~fedfit.policy.dynamite.search.search_homogeneous_at`)::

    minimise  Φ(τ, b)   subject to   Σ_i round_j_i(τ, b_i) ≤ E_c = Σ_i round_j_i(τ, b_c)
                                     round_s_i(τ, b_i) ≤ max_j round_s_j(τ, b_c)   (K kept)
                                     b_i ≤ cap_i (memory, data)

With K held, only the noise term moves, and the problem separates: minimise Σ p_i²/b_i over
Σ_i e_i(b_i) ≤ E_c, e_i(b) = P_i τ a_i k(m + h_i) the compute joules (the radio's are the same
for every b). For a step cost linear in b (one micro-batch, e_i = c_i (b + h_i), c_i = P_i τ a_i)
the Lagrangian p_i²/b_i + λ c_i b_i gives the continuous optimum::

    b_i* = p_i / sqrt(λ c_i)      (λ such that the cap binds; clamped to [1, the limits above])

larger batches where data is larger and joules per sample are cheaper — the paper's "larger
batches where data is larger" with the price of the samples in the currency the time budget
does not count. :func:`energy_fill` reaches it on each device's batch grid by the marginal
rule: from the smallest batches, repeatedly take the one grid step whose noise reduction
p_i²(1/b − 1/b') per joule added is largest among the steps the cap still affords. Each
device's ratio falls along its grid (∝ 1/(b b') for linear costs), so this is the greedy
solution of a separable convex allocation: optimal up to the last step the cap cannot pay for.
The homogeneous plan is feasible, so the fill is kept only where its Φ is lower (the caller
checks). The descent that follows (:mod:`.search`) keeps every move within E_c: it may still
shrink the straggler's batch to buy rounds (that frees joules) and spend what it freed.

An energy budget in the config (``budget_energy_j``, alone or with the time budget) already
prices joules through K = min(T / max round_s, E / Σ round_j): every fill step and descent move
is then taken only where its noise reduction is worth the rounds its joules cost, at the price
the user set. The cap is not applied then (it would override that price with a second, stricter
one; on the development runs it cost time and joules). ``energy_cap: none`` is the plain
time-share fill.

On a stream (``DeviceCost.streaming``) the noise term is the buffer's (:mod:`.stream`), so a step's
noise reduction is the difference of that term, and a step that buys none (the task already
covers the buffer) is never taken.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence

from fedfit.policy.dynamite.costs import DeviceCost


def round_energy_j(tau: int, batches: Sequence[int], devices: Sequence[DeviceCost]) -> float:
    """Joules of one round with every device at its batch."""
    return sum(d.round_j(tau, b) for d, b in zip(devices, batches))


def energy_fill(tau: int, devices: Sequence[DeviceCost], shares: Sequence[float], grids: Sequence[Sequence[int]],
                limit_s: float, cap_j: float) -> list[int]:
    """The grid batches minimising the noise sum (Σ p_i²/b_i on static data) within ``cap_j``
    joules a round and ``limit_s`` seconds each.

    Args:
        tau: local steps per round.
        devices: each device's cost.
        shares: p_i, each device's share of the data.
        grids: each device's candidate batches, ascending (the first one is always taken).
        limit_s: the longest round any device may take (the common batch's slowest round).
        cap_j: joules one round may cost the fleet, radio included.
    """
    batches = [g[0] for g in grids]
    spent = round_energy_j(tau, batches, devices)
    steps: list[tuple[float, int, int, float]] = []  # (−noise cut per joule, device, batch, joules)
    for i in range(len(devices)):
        _push(steps, tau, devices[i], shares[i], grids[i], batches[i], i, limit_s)
    while steps:  # the best step first, the lowest device among equals (a linear scan's choice)
        _, i, up, joules = heapq.heappop(steps)
        if spent + joules > cap_j * (1 + 1e-12):
            continue  # ``spent`` only grows: this device's next step never fits again
        batches[i], spent = up, spent + joules
        _push(steps, tau, devices[i], shares[i], grids[i], up, i, limit_s)
    return batches


def _push(steps: list[tuple[float, int, int, float]], tau: int, d: DeviceCost, share: float,
          grid: Sequence[int], b: int, i: int, limit_s: float) -> None:
    """Queue device ``i``'s next grid step above ``b`` where it fits ``limit_s`` and cuts noise.

    A device's step depends on its own batch alone, so each is priced once, when the device
    reaches ``b``: the fill costs O((devices + steps) log devices), not a scan of the fleet per step.
    """
    up = next((g for g in grid if g > b), None)
    if up is None or d.round_s(tau, up) > limit_s * (1 + 1e-12):
        return
    joules = d.round_j(tau, up) - d.round_j(tau, b)
    cut = d.noise(share, tau, b) - d.noise(share, tau, up)
    if cut <= 0:  # a stream buffer already covered: a larger batch buys no less noise
        return
    heapq.heappush(steps, (-(math.inf if joules <= 0 else cut / joules), i, up, joules))
