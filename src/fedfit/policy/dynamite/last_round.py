"""The last round the budget can buy: K counts whole rounds there (``dynamite.last_round``).

The bound's K is the ratio T / round_s by default (:func:`.bound.rounds_within`): every second
saved buys a fraction of a round. While rounds remain to be planned that is the price of a second
in expectation — the plan is re-made after every aggregation, so the slack a round leaves is
re-divided among the rounds after it. Once the budget left cannot hold two rounds even of the
shortest plan there is (τ = 1, b_i = 1: each device's round is then its transfers and one
sample's step), the round planned now is the last one any plan can buy, and the time it leaves
is wasted: no later plan exists to use it. A second saved there buys nothing, yet the ratio
still prices it at F0 / (η τ T), which grows as T runs out — the last plans' batches shrink
(to 1–11 on the bench's streams) for a fraction of a round no plan can complete. So, in that
round only, K is the number of whole rounds that fit (``Budget.whole_rounds``): 1 for every
plan whose round fits the budget left, and the bound then picks the batches by their noise
alone (below one round it stays the ratio, so plans that fit none are still ordered).

Unlike ``dynamite.whole_rounds`` (⌊K⌋ in every round), the earlier rounds keep the ratio: there
the slack of ⌊K⌋'s plateau is not this round's alone to spend.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from fedfit.policy.dynamite.bound import Budget, rounds_within
from fedfit.policy.dynamite.costs import DeviceCost


def shortest_round(devices: Sequence[DeviceCost]) -> tuple[float, float]:
    """(seconds, fleet joules) of the cheapest round any plan can make: τ = 1, every b_i = 1
    (a round's time and joules grow with τ and with each batch).

    >>> d = DeviceCost(0.01, 4.0, 1.5, 2.0, 1.0, micro_cap=8, data_size=64)
    >>> shortest_round([d, d])  # 1 step of 1 sample: 0.01 · (1 + 4) s, then 1.5 s of transfers
    (1.55, 3.2)
    """
    return max(d.round_s(1, 1) for d in devices), sum(d.round_j(1, 1) for d in devices)


def is_last_round(budget: Budget, devices: Sequence[DeviceCost]) -> bool:
    """Whether the budget left holds fewer than two of the shortest rounds (no budget: never)."""
    seconds, joules = shortest_round(devices)
    return rounds_within(dataclasses.replace(budget, whole_rounds=True), seconds, joules) < 2


def last_round_budget(budget: Budget, devices: Sequence[DeviceCost]) -> Budget:
    """``budget`` counting whole rounds when the round planned now is the last one it can buy."""
    return dataclasses.replace(budget, whole_rounds=True) if is_last_round(budget, devices) else budget
