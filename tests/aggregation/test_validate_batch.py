"""A round's finite-value checks done together say what each update's own check says."""

import pytest
import torch

from fedfit.aggregation import validate_params
from fedfit.aggregation.validate import all_finite, finite_rows
from fedfit.errors import UpdateRejected
from fedfit.orchestration.submodels import FullModelExchange
from fedfit.types import Update

NAN, INF = float("nan"), float("inf")


def test_finite_rows_matches_each_updates_own_check() -> None:
    updates = [
        {"w": torch.ones(2, 3), "b": torch.zeros(2)},
        {"w": torch.tensor([[0.0, NAN, 0.0], [0.0, 0.0, 0.0]]), "b": torch.zeros(2)},
        {"w": torch.full((2, 3), 3.0e38), "b": torch.zeros(2)},      # sum overflows, entries finite
        {"w": torch.full((2, 3), -INF), "b": torch.zeros(2)},
        {"w": torch.ones(2, 3), "b": torch.tensor([1.0, INF])},
        {"w": torch.ones(4), "b": torch.zeros(2)},                   # another shape, its own stack
        {"w": torch.ones(2, 3, dtype=torch.float64), "n": torch.tensor(3)},
        {"w": torch.ones(0, 3)},
    ]
    own = [all(all_finite(v) for v in u.values() if v.is_floating_point()) for u in updates]

    assert own == [True, False, True, False, False, True, True, True]
    assert finite_rows(updates) == own


def test_non_tensor_values_are_not_known_finite() -> None:
    assert finite_rows([{"w": [1.0]}, {}]) == [False, True]


def test_known_finite_skips_only_the_value_check() -> None:
    master = {"w": torch.zeros(2)}

    validate_params(master, {"w": torch.tensor([NAN, 0.0])}, known_finite=True)
    with pytest.raises(UpdateRejected, match="shape"):
        validate_params(master, {"w": torch.zeros(3)}, known_finite=True)


def test_incoming_many_rejects_what_incoming_rejects() -> None:
    master = {"w": torch.zeros(2, 2), "b": torch.zeros(2)}
    values = [torch.ones(2, 2), torch.full((2, 2), NAN), torch.ones(2, 2), torch.ones(3)]
    updates = [Update(i, 0, {"w": w, "b": torch.full((2,), float(i))}, 1, 1, 1, 1, 1, 0.0) for i, w in enumerate(values)]
    exchange = FullModelExchange()

    got = exchange.incoming_many(updates, master, [1.0] * len(updates))

    rejected = [isinstance(g, UpdateRejected) for g in got]
    assert rejected == [False, True, False, True]
    for update, g in zip(updates, got):
        if not isinstance(g, UpdateRejected):
            assert g == exchange.incoming(update, master, 1.0)
