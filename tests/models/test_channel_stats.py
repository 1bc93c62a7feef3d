"""Channel statistics: per-unit update norms, held units only, and the pruning suggestion."""

from __future__ import annotations

import pytest
import torch

from fedfit.models import MLP, ModelSpec
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


def _old_accumulate(stats: ChannelStats, groups, before, after, cmap, weight):  # type: ignore[no-untyped-def]
    """The accumulation as it was written first (each axis squared on its own moved view): the reference."""
    scores = dict(stats.scores)
    for g in groups:
        squared = torch.zeros(g.size, dtype=torch.float64)
        for ref in g.axes:
            if ref.param in after:
                moved = (after[ref.param] - before[ref.param]).double().movedim(ref.axis, 0).reshape(g.size, ref.block, -1)
                squared += moved.pow(2).sum(dim=(1, 2))
        added = weight * squared.sqrt()
        if g.name in cmap.kept:
            held = torch.zeros(g.size, dtype=torch.bool)
            held[cmap.kept[g.name]] = True
            added = added * held
        scores[g.name] = scores.get(g.name, torch.zeros(g.size, dtype=torch.float64)) + added
    return ChannelStats(scores, stats.updates + 1)


@pytest.mark.parametrize("name", ["mlp", "cnn", "cnn1d", "resnet8"])
def test_scores_keep_the_bits_of_squaring_each_moved_view(name: str) -> None:
    shape = (1, 64) if name == "cnn1d" else (3, 32, 32) if name == "resnet8" else (1, 28, 28)
    model = ModelSpec(name, shape, 10).build()
    groups = width_groups(model)
    gen = torch.Generator().manual_seed(7)
    before = {k: v.detach().clone() for k, v in model.state_dict().items()}
    new = old = ChannelStats.empty(groups)
    for i in range(3):
        after = {k: v + torch.randn(v.shape, generator=gen) * 10.0 ** (i - 2) if v.is_floating_point() else v
                 for k, v in before.items()}
        kept = {g.name: torch.arange(0, g.size, 2) for g in groups[:1]} if i == 1 else {}
        cmap = CoordinateMap(groups, kept)
        new = accumulate(new, groups, before, after, cmap, weight=1.5 + i)
        old = _old_accumulate(old, groups, before, after, cmap, 1.5 + i)
    assert new.scores.keys() == old.scores.keys() and new.updates == old.updates == 3
    assert all(torch.equal(new.scores[k], old.scores[k]) for k in new.scores)
