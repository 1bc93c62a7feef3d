"""fedavg-tuned: the grid from predicted task times and the choice, against hand-made cases."""

from __future__ import annotations

import math

import pytest

from fedfit.tuning import GridPoint, GridResult, choose, grid


def test_grid_takes_deadlines_from_quantiles_of_finite_times() -> None:
    points = grid({8: [1.0, 2.0, 3.0, math.inf], 32: [math.inf, math.inf]})
    assert [(p.batch, p.quantile, p.deadline_s, p.over_selection) for p in points] == [
        (8, None, None, 0.0), (8, None, None, 0.3),
        (8, 0.5, 2.0, 0.0), (8, 0.5, 2.0, 0.3),
        (8, 0.9, 2.8, 0.0), (8, 0.9, 2.8, 0.3),  # position 1.8 between 2 and 3
        (32, None, None, 0.0), (32, None, None, 0.3),  # nobody fits 32: no quantile deadline
    ]


def _r(batch: int, ttt: float | None, acc: float, virtual: float = 100.0) -> GridResult:
    return GridResult(GridPoint(batch, None, None, 0.0), ttt, acc, virtual)


def test_choose_soonest_to_target_then_accuracy_then_shortest() -> None:
    assert choose([_r(8, 10.0, 0.9), _r(16, 5.0, 0.7), _r(32, None, 0.95)]).point.batch == 16
    assert choose([_r(8, None, 0.5), _r(16, None, 0.7), _r(32, None, 0.6)]).point.batch == 16
    assert choose([_r(8, None, 0.7, 90.0), _r(16, None, 0.7, 50.0)]).point.batch == 16
    assert choose([_r(8, 5.0, 0.7), _r(16, 5.0, 0.9)]).point.batch == 8  # a tie keeps the earlier point
    with pytest.raises(ValueError):
        choose([])


def test_grid_point_overrides_are_plain_fedavg() -> None:
    o = GridPoint(16, 0.5, 2.0, 0.3).overrides()
    assert o["training.batch_size"] == 16 and o["batching.mode"] == "fixed" and o["auto.enabled"] is False
    assert o["orchestration.deadline_s"] == 2.0 and o["orchestration.over_selection"] == 0.3


def test_grid_point_undoes_what_the_base_config_chose() -> None:
    from fedfit.config import parse_config, with_overrides

    base = parse_config({"selection": {"kind": "oort"}, "memory": {"mode": "all", "techniques": ["checkpointing"]},
                         "width": {"mode": "capability"}, "aggregation": {"fairness_q": 1.0},
                         "auto": {"enabled": True}, "local_work": {"kind": "budget"}})
    c = with_overrides(base, GridPoint(8, None, None, 0.0).overrides())
    assert (c.selection.kind, c.memory.mode, c.width.mode, c.local_work.kind) == ("uniform", "off", "fixed", "fixed")
    assert c.aggregation.fairness_q == 0.0 and not c.auto.enabled and c.training.batch_size == 8
