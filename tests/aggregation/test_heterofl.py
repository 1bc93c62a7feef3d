"""HeteroFL's width-aware aggregation through the sub-model exchange and the one masked average.

Three devices train a two-hidden-layer MLP (4 units per hidden layer) at widths 1, 0.5 and
0.25: they hold 4, 2 and 1 units. Each device returns all-constant parameters (1, 4, 10) with
weights (samples) 1, 2, 1. A coordinate held by all three averages to (1·1 + 2·4 + 1·10) / 4 =
4.75; by the first two, (1 + 8) / 3 = 3; by the full-width device only, 1; by none, the master's 0.
"""

from __future__ import annotations

import torch

from fedfit.aggregation import masked_weighted_average
from fedfit.models import MLP
from fedfit.models.coordinates import width_groups
from fedfit.orchestration.submodels import SubModelExchange
from fedfit.types import TrainPlan, Update

ALL, TWO, ONE = 4.75, 3.0, 1.0


def _exchange() -> tuple[SubModelExchange, dict[str, torch.Tensor]]:
    groups = width_groups(MLP(2, 2, hidden=4))
    exchange = SubModelExchange(groups, lambda w: {g.name: g.size for g in width_groups(MLP(2, 2, w, hidden=4))})
    master = {"fc1.weight": torch.zeros(4, 2), "fc1.bias": torch.zeros(4), "fc2.weight": torch.zeros(4, 4),
              "fc2.bias": torch.zeros(4), "fc3.weight": torch.zeros(2, 4), "fc3.bias": torch.zeros(2)}
    return exchange, master


def _round(exchange: SubModelExchange, master: dict[str, torch.Tensor],
           devices: list[tuple[float, float, float]]) -> dict[str, torch.Tensor]:
    contributions = []
    for device, (width, value, weight) in enumerate(devices):
        plan = TrainPlan(device_id=device, round=0, micro_batch=1, width=width)
        sent = exchange.outgoing(plan, master)
        trained = {k: torch.full_like(v, value) for k, v in sent.items()}
        update = Update(device, 0, trained, 1, int(weight), 1, 1, 1, 0.0)
        contributions.append(exchange.contribution(update, master, weight))
    return masked_weighted_average(master, contributions)


def test_three_widths_average_each_coordinate_over_its_holders() -> None:
    exchange, master = _exchange()
    new = _round(exchange, master, [(1.0, 1.0, 1.0), (0.5, 4.0, 2.0), (0.25, 10.0, 1.0)])

    rows = torch.tensor([ALL, TWO, ONE, ONE])
    assert torch.allclose(new["fc1.weight"], rows[:, None].expand(4, 2))
    assert torch.allclose(new["fc1.bias"], rows)
    fc2 = torch.tensor([[ALL, TWO, ONE, ONE],
                        [TWO, TWO, ONE, ONE],
                        [ONE, ONE, ONE, ONE],
                        [ONE, ONE, ONE, ONE]])
    assert torch.allclose(new["fc2.weight"], fc2)
    assert torch.allclose(new["fc2.bias"], rows)
    assert torch.allclose(new["fc3.weight"], rows[None, :].expand(2, 4))
    assert torch.allclose(new["fc3.bias"], torch.full((2,), ALL))


def test_coordinates_nobody_trained_keep_their_value() -> None:
    exchange, master = _exchange()
    master = {k: v - 7.0 for k, v in master.items()}
    new = _round(exchange, master, [(0.5, 4.0, 2.0), (0.25, 10.0, 1.0)])
    assert torch.allclose(new["fc1.bias"], torch.tensor([(8 + 10) / 3, 4.0, -7.0, -7.0]))
    assert torch.allclose(new["fc2.weight"][2:], torch.full((2, 4), -7.0))
    assert torch.allclose(new["fc3.weight"][:, 2:], torch.full((2, 2), -7.0))


def test_sub_model_sent_is_only_the_held_coordinates() -> None:
    exchange, master = _exchange()
    sent = exchange.outgoing(TrainPlan(device_id=0, round=0, micro_batch=1, width=0.5), master)
    assert {k: tuple(v.shape) for k, v in sent.items()} == {
        "fc1.weight": (2, 2), "fc1.bias": (2,), "fc2.weight": (2, 2), "fc2.bias": (2,),
        "fc3.weight": (2, 2), "fc3.bias": (2,)}
