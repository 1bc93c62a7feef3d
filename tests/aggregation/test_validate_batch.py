"""A round's finite-value checks done together say what each update's own check says."""

import pytest
import torch

from fedfit.aggregation import validate_params
from fedfit.aggregation.validate import all_finite, finite_rows, valid_rows
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


def _passes(master: dict[str, torch.Tensor], params: dict[str, object]) -> bool:
    try:
        validate_params(master, params)  # type: ignore[arg-type]
    except UpdateRejected:
        return False
    return True


def test_valid_rows_says_what_each_updates_own_validation_says() -> None:
    master = {"w": torch.zeros(2, 3), "b": torch.zeros(2), "n": torch.tensor(0)}
    updates: list[dict[str, object]] = [
        {"w": torch.ones(2, 3), "b": torch.ones(2), "n": torch.tensor(4)},  # valid
        {"w": torch.ones(2, 3)},                                             # a subset of the names: valid
        {"w": torch.ones(3, 2), "b": torch.ones(2)},                         # wrong shape
        {"w": torch.ones(2, 3, dtype=torch.float64)},                        # wrong dtype
        {"w": torch.ones(2, 3), "x": torch.ones(1)},                         # unknown name
        {"w": [[1.0] * 3] * 2},                                              # not a tensor
        {"b": torch.tensor([1.0, NAN])},                                     # non-finite
        {"w": torch.full((2, 3), 3.0e38)},                                   # sum overflows, entries finite: valid
        {"n": torch.tensor(2.0)},                                            # counter of the wrong dtype
        {},                                                                  # holds nothing: valid
    ]

    assert valid_rows(master, updates) == [True, True, False, False, False, False, False, True, False, True]  # type: ignore[arg-type]
    assert valid_rows(master, updates) == [_passes(master, u) for u in updates]  # type: ignore[arg-type]


def test_sub_model_updates_are_checked_against_the_sub_model() -> None:
    from fedfit.models import MLP
    from fedfit.models.coordinates import width_groups
    from fedfit.orchestration.submodels import SubModelExchange
    from fedfit.types import TrainPlan

    groups = width_groups(MLP(2, 2, hidden=4))
    exchange = SubModelExchange(groups, lambda w: {g.name: g.size for g in width_groups(MLP(2, 2, w, hidden=4))})
    master = {k: v.detach().clone() for k, v in MLP(2, 2, hidden=4).state_dict().items()}
    half = exchange.outgoing(TrainPlan(0, 0, 1, width=0.5), master)
    exchange.outgoing(TrainPlan(1, 0, 1, width=0.5), master)
    whole = exchange.outgoing(TrainPlan(2, 0, 1, width=1.0), master)
    updates = [Update(0, 0, {k: v + 1 for k, v in half.items()}, 1, 1, 1, 1, 1, 0.0),
               Update(1, 0, {k: v + 1 for k, v in master.items()}, 1, 1, 1, 1, 1, 0.0),  # the master's shapes: wrong
               Update(2, 0, {k: v + 1 for k, v in whole.items()}, 1, 1, 1, 1, 1, 0.0)]

    got = exchange.incoming_many(updates, master, [1.0, 1.0, 1.0])

    assert [isinstance(g, UpdateRejected) for g in got] == [False, True, False]
    assert "shape" in str(got[1])


def test_a_batch_whose_total_overflows_is_checked_row_by_row() -> None:
    # each row's sum is finite (2e38 < float32's 3.4e38), the batch's is not: every row is still finite
    rows = [{"w": torch.tensor([2.0e38, 0.0])} for _ in range(3)]
    assert finite_rows(rows) == [True, True, True]
    assert finite_rows([*rows, {"w": torch.tensor([NAN, 0.0])}]) == [True, True, True, False]
    assert valid_rows({"w": torch.zeros(2)}, rows) == [True, True, True]
