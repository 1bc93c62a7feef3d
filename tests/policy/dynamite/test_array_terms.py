"""The array forms of the bound's sums give the one-by-one path's floats exactly.

:class:`~fedfit.policy.dynamite.table.CommonBatchTerms` against :func:`bound` over every device,
and :class:`~fedfit.policy.dynamite.descent.Moves` against ``min`` over every device's grid
neighbours scored by :meth:`Totals.value_if` (the descent's choice before it was vectorised), on
fleets of varied devices under each noise model and budget kind. Equality, not closeness: the
plans must not change.
"""

from __future__ import annotations

import math

import pytest

from fedfit.policy.dynamite.bound import Budget, Estimates, bound
from fedfit.policy.dynamite.costs import DeviceCost
from fedfit.policy.dynamite.descent import Moves, Totals
from fedfit.policy.dynamite.search import batch_grid
from fedfit.policy.dynamite.table import CommonBatchTerms

EST = Estimates(beta=1.3, rho=0.7, delta=0.9, sigma2=2.1, loss=2.3)
MODES = [{}, {"streaming": True}, {"reshuffled": True}, {"contraction": 0.93, "sigma_probe": True}]
BUDGETS = [Budget(time_s=150.0), Budget(energy_j=900.0), Budget(time_s=150.0, energy_j=900.0, whole_rounds=True)]


def fleet(n: int, **mode: object) -> list[DeviceCost]:
    return [DeviceCost(0.001 * (1 + i % 7), 2.0 + i % 5, 0.5 + (i % 11) / 4, 2.0 + i % 3, 1.0 + i % 2,
                       micro_cap=2 << (i % 4), data_size=3 + (i * 37) % 90, max_accumulation=1 + i % 2,
                       **mode) for i in range(n)]  # type: ignore[arg-type]


def one_by_one_best(state: Totals, grids: list[list[int]], batches: list[int]) -> tuple[float, int, int]:
    moves = [(i, b) for i, g in enumerate(grids) for b in ([x for x in g if x > batches[i]][:1]
                                                          + [x for x in g if x < batches[i]][-1:])]
    return min(((state.value_if(i, b), i, b) for i, b in moves), default=(math.inf, -1, 0))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("budget", BUDGETS)
def test_common_batch_terms_equal_the_bound(mode: dict[str, object], budget: Budget) -> None:
    devices = fleet(23, **mode)
    shares = [(1 + i % 4) / sum(1 + j % 4 for j in range(23)) for i in range(23)]
    terms = CommonBatchTerms(devices, shares)
    for tau in (1, 7, 30):
        for b in (1, 3, 8, 40):
            same = [b] * len(devices)
            capped = [min(b, d.batch_cap) for d in devices]
            assert terms.bound(tau, b, EST, 0.05, budget) == bound(tau, same, devices, shares, EST, 0.05, budget)
            assert terms.bound(tau, b, EST, 0.05, budget, capped=True) == bound(
                tau, capped, devices, shares, EST, 0.05, budget)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("budget", BUDGETS)
def test_moves_choose_what_min_over_value_if_chooses(mode: dict[str, object], budget: Budget) -> None:
    devices = fleet(31, **mode)
    shares = [1 / 31] * 31  # equal shares: many exact ties, broken by device, then batch
    grids = [batch_grid(d.batch_cap) for d in devices]
    batches = [g[len(g) // 2] for g in grids]
    for cap_j in (math.inf, 1.05 * sum(d.round_j(5, b) for d, b in zip(devices, batches))):
        state = Totals(5, list(batches), devices, shares, EST, 0.05, budget, cap_j)
        moves, now = Moves(state, grids, batches), list(batches)
        for _ in range(40):
            expected = one_by_one_best(state, grids, now)
            assert moves.best() == expected
            if expected[1] < 0 or not math.isfinite(expected[0]):
                break
            now[expected[1]] = expected[2]
            moves.move(expected[1], expected[2])
