"""Channel statistics: per-unit update norms, held units only, and the pruning suggestion."""

from __future__ import annotations

import torch

from fedfit.models import MLP
from fedfit.models.channel_stats import ChannelStats, accumulate
from fedfit.models.coordinates import CoordinateMap, width_groups
from fedfit.models.prune import suggest_pruning


def test_unit_score_is_the_weighted_norm_of_its_row_and_column_changes() -> None:
    model = MLP(2, 1, hidden=3)
    groups = width_groups(model)
    before = {k: torch.zeros_like(v) for k, v in model.state_dict().items()}
    after = {k: v.clone() for k, v in before.items()}
    after["fc1.weight"][1] = torch.tensor([3.0, 0.0])   # unit 1 of fc1: its row ...
    after["fc2.weight"][0, 1] = 4.0                      # ... and its column in fc2: norm 5 (also fc2's unit 0)
    after["fc2.bias"][2] = 2.0                           # unit 2 of fc2
    after["fc2.bias"][1] = 9.0                           # unit 1 of fc2, not held: scores nothing
    cmap = CoordinateMap(groups, {"fc1": torch.tensor([0, 1]), "fc2": torch.tensor([0, 2])})
    stats = accumulate(ChannelStats.empty(groups), groups, before, after, cmap, weight=2.0)
    assert torch.allclose(stats.scores["fc1"], torch.tensor([0.0, 10.0, 0.0], dtype=torch.float64))
    assert torch.allclose(stats.scores["fc2"], torch.tensor([8.0, 0.0, 4.0], dtype=torch.float64))
    assert stats.ranking("fc1") == [1, 0, 2] and stats.updates == 1


def test_pruning_keeps_the_units_covering_the_requested_share() -> None:
    stats = ChannelStats({"a": torch.tensor([5.0, 3.0, 2.0, 0.0]), "b": torch.tensor([1.0, 1.0])})
    rows, width = suggest_pruning(stats, coverage=0.8)
    assert [(r.group, r.keep, r.dead) for r in rows] == [("a", 2, 1), ("b", 2, 0)]
    assert width == 1.0
