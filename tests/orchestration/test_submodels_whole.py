"""A full-width plan skips slicing and scattering, with the general path's values, masks and statistics."""

from __future__ import annotations

import pytest
import torch

from fedfit.errors import UpdateRejected
from fedfit.models import MLP
from fedfit.models.channel_stats import ChannelStats, accumulate
from fedfit.models.coordinates import CoordinateMap, width_groups
from fedfit.orchestration.submodels import SubModelExchange
from fedfit.types import TrainPlan, Update


def _exchange(indices: str = "prefix") -> tuple[SubModelExchange, dict[str, torch.Tensor]]:
    groups = width_groups(MLP(2, 2, hidden=4))
    exchange = SubModelExchange(groups, lambda w: {g.name: g.size for g in width_groups(MLP(2, 2, w, hidden=4))},
                                indices=indices, seed=3)
    master = {k: v.detach().clone() for k, v in MLP(2, 2, hidden=4).state_dict().items()}
    return exchange, master


def _trained(sent: dict[str, torch.Tensor], device: int) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(device)
    return {k: v + torch.randn(v.shape, generator=g) for k, v in sent.items()}


@pytest.mark.parametrize("indices", ["prefix", "random", "importance"])
def test_full_width_sends_the_master_whatever_the_index_choice(indices: str) -> None:
    exchange, master = _exchange(indices)

    sent = exchange.outgoing(TrainPlan(device_id=0, round=0, micro_batch=1, width=1.0), master)

    assert sent.keys() == master.keys()
    assert all(torch.equal(sent[k], master[k]) for k in master)


def test_full_width_update_returns_whole_with_the_scatter_paths_values_and_stats() -> None:
    exchange, master = _exchange()
    plan = TrainPlan(device_id=5, round=2, micro_batch=1, width=1.0)
    trained = _trained(exchange.outgoing(plan, master), 5)
    element = {"fc2.weight": torch.rand(4, 4) < 0.5}

    full, masks = exchange.incoming(Update(5, 2, trained, 1, 8, 1, 1, 1, 0.0, masks=element), master, 8.0)

    whole = CoordinateMap(exchange.groups, {})
    expected = whole.scatter(trained, master)
    assert full.keys() == trained.keys() and all(torch.equal(full[k], expected[k]) for k in full)
    assert masks is not None and masks.keys() == {"fc2.weight"} and torch.equal(masks["fc2.weight"], element["fc2.weight"])
    stats = accumulate(ChannelStats.empty(exchange.groups), exchange.groups, master, expected, whole, 8.0)
    assert exchange.stats.updates == 1
    assert all(torch.equal(exchange.stats.scores[g], stats.scores[g]) for g in stats.scores)


def test_full_width_update_without_masks_holds_everything() -> None:
    exchange, master = _exchange()
    plan = TrainPlan(device_id=1, round=0, micro_batch=1, width=1.0)
    trained = _trained(exchange.outgoing(plan, master), 1)

    _, masks = exchange.incoming(Update(1, 0, trained, 1, 1, 1, 1, 1, 0.0), master, 1.0)

    assert masks is None


def test_full_width_non_finite_update_is_rejected_and_forgotten() -> None:
    exchange, master = _exchange()
    plan = TrainPlan(device_id=2, round=0, micro_batch=1, width=1.0)
    trained = _trained(exchange.outgoing(plan, master), 2)
    trained["fc1.bias"][1] = float("nan")

    with pytest.raises(UpdateRejected, match="fc1.bias"):
        exchange.incoming(Update(2, 0, trained, 1, 1, 1, 1, 1, 0.0), master, 1.0)

    assert exchange.state().pending == {}
    assert exchange.stats.updates == 0


def test_narrow_plans_still_slice() -> None:
    exchange, master = _exchange()

    sent = exchange.outgoing(TrainPlan(device_id=0, round=0, micro_batch=1, width=0.5), master)

    assert tuple(sent["fc2.weight"].shape) == (2, 2)


def test_a_rounds_updates_without_width_groups_are_received_as_one_by_one() -> None:
    """incoming_many's in-loop path (no width groups) gives incoming's results, rejections and count."""
    master = {"w": torch.zeros(3, 2), "b": torch.zeros(3)}
    together, alone = (SubModelExchange((), lambda w: {}, seed=1) for _ in range(2))
    masked = {"w": torch.tensor([[True, False]] * 3)}
    params = [{"w": torch.ones(3, 2), "b": torch.ones(3)},
              {"w": torch.ones(2, 3), "b": torch.ones(3)},                        # wrong shape: rejected
              {"w": torch.full((3, 2), float("nan")), "b": torch.ones(3)},        # non-finite: rejected
              {"w": torch.ones(3, 2), "b": torch.ones(3)},                        # with element masks
              {"w": torch.ones(3, 2)}]                                            # a subset of the names
    updates = [Update(d, 4, p, 1, 1, 1, 1, 1, 0.0, masks=masked if d == 3 else None) for d, p in enumerate(params)]
    weights = [1.0, 1.0, 1.0, 2.0, 0.0]
    for exchange in (together, alone):
        for d in range(len(updates)):
            exchange.outgoing(TrainPlan(device_id=d, round=4, micro_batch=1), master)

    got = together.incoming_many(updates, master, weights)
    expected = []
    for update, weight in zip(updates, weights):
        try:
            expected.append(alone.incoming(update, master, weight))
        except UpdateRejected as rejected:
            expected.append(rejected)

    assert [isinstance(g, UpdateRejected) for g in got] == [False, True, True, False, False]
    assert [str(g) for g in got if isinstance(g, UpdateRejected)] == [str(e) for e in expected if isinstance(e, UpdateRejected)]
    for g, e in zip(got, expected):
        if not isinstance(g, UpdateRejected):
            assert not isinstance(e, UpdateRejected)
            assert g[0].keys() == e[0].keys() and all(torch.equal(g[0][k], e[0][k]) for k in g[0])
            assert (g[1] is None) == (e[1] is None)
    assert together.stats.updates == alone.stats.updates == 2  # weight > 0 and accepted
    assert together.state().pending == alone.state().pending == {}
