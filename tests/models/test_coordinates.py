"""Coordinate maps: extraction matches hand slicing, scatter inverts it, every layer type maps."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from fedfit.errors import PlanError
from fedfit.models import ModelSpec
from fedfit.models.coordinates import CoordinateMap, WidthGroup, layer_inputs, layer_outputs, width_groups
from fedfit.models.indices import choose_map, sub_map, width_counts

SPECS = [ModelSpec("mlp", (1, 8, 8), 10), ModelSpec("cnn", (1, 8, 8), 10),
         ModelSpec("cnn", (1, 8, 8), 10, norm="batch"), ModelSpec("cnn", (1, 28, 28), 10, width=0.5)]


def _master(spec: ModelSpec) -> dict[str, torch.Tensor]:
    torch.manual_seed(0)
    return {k: v.detach().clone() for k, v in spec.build().state_dict().items()}


def test_mlp_prefix_half_is_the_leading_block_of_each_matrix() -> None:
    spec = ModelSpec("mlp", (1, 8, 8), 10)
    master = _master(spec)
    sub = sub_map(spec, 0.5).extract(master)
    assert torch.equal(sub["fc1.weight"], master["fc1.weight"][:100])
    assert torch.equal(sub["fc1.bias"], master["fc1.bias"][:100])
    assert torch.equal(sub["fc2.weight"], master["fc2.weight"][:100, :100])
    assert torch.equal(sub["fc3.weight"], master["fc3.weight"][:, :100])
    assert torch.equal(sub["fc3.bias"], master["fc3.bias"])


def test_cnn_linear_after_flatten_takes_whole_feature_maps_of_kept_channels() -> None:
    spec = ModelSpec("cnn", (1, 8, 8), 10)  # feature maps 2×2 → 4 columns per conv2 channel
    master = _master(spec)
    cmap = choose_map(width_groups(spec.build()), width_counts(spec, 0.25), "random", seed=1, device_id=2, round_=3)
    sub = cmap.extract(master)
    kept2, kept_fc = cmap.kept["conv2"], cmap.kept["fc1"]
    cols = torch.cat([torch.arange(4 * c, 4 * c + 4) for c in kept2.tolist()])
    assert torch.equal(sub["fc1.weight"], master["fc1.weight"][kept_fc][:, cols])
    assert torch.equal(sub["conv2.weight"], master["conv2.weight"][kept2][:, cmap.kept["conv1"]])


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: f"{s.name}-{s.norm}-{s.width}")
@pytest.mark.parametrize("choice", ["prefix", "random", "importance"])
@pytest.mark.parametrize("width", [1.0, 0.5, 0.25, 0.0625])
def test_extract_loads_into_the_sub_model_and_scatter_leaves_the_master_unchanged(
        spec: ModelSpec, choice: str, width: float) -> None:
    master = _master(spec)
    groups = width_groups(spec.build())
    scores = {g.name: torch.rand(g.size, generator=torch.Generator().manual_seed(5)) for g in groups}
    cmap = choose_map(groups, width_counts(spec, width), choice, seed=0, device_id=1, round_=2, scores=scores)
    sub = cmap.extract(master)
    spec.build(width).load_state_dict(sub)  # shapes match the sub-model exactly
    back = cmap.scatter(sub, master)
    assert back.keys() == master.keys()
    assert all(torch.equal(back[k], master[k]) for k in master)


def test_scatter_writes_only_held_coordinates_and_masks_count_them() -> None:
    spec = ModelSpec("cnn", (1, 8, 8), 10, norm="batch")
    master = _master(spec)
    cmap = sub_map(spec, 0.5)
    sub = {k: v + 1.0 for k, v in cmap.extract(master).items()}
    back, masks = cmap.scatter(sub, master), cmap.masks(master)
    for name, value in master.items():
        changed = back[name] != value
        held = masks.get(name, torch.ones_like(value, dtype=torch.bool))
        assert torch.equal(changed, held)
        assert int(held.sum()) == sub[name].numel()


class _Tagger(nn.Module):
    """Embedding → LayerNorm → BatchNorm1d → Linear: a hidden dimension through every layer type."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.embed, self.ln = nn.Embedding(7, dim), nn.LayerNorm(dim)
        self.bn, self.head = nn.BatchNorm1d(dim), nn.Linear(dim, 3)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.head(self.bn(self.ln(self.embed(tokens))))

    def width_groups(self) -> tuple[WidthGroup, ...]:
        axes = (*layer_outputs("embed", self.embed), *layer_outputs("ln", self.ln), *layer_outputs("bn", self.bn),
                *layer_inputs("head", self.head))
        return (WidthGroup("dim", self.embed.embedding_dim, axes),)


def test_embedding_layernorm_and_batchnorm_slice_along_the_hidden_dimension() -> None:
    torch.manual_seed(0)
    master_model, small = _Tagger(6), _Tagger(2)
    master = master_model.state_dict()
    cmap = CoordinateMap(width_groups(master_model), {"dim": torch.tensor([1, 4])})
    sub = cmap.extract(master)
    small.load_state_dict(sub)
    assert torch.equal(sub["embed.weight"], master["embed.weight"][:, [1, 4]])
    assert torch.equal(sub["ln.weight"], master["ln.weight"][[1, 4]])
    assert torch.equal(sub["bn.running_var"], master["bn.running_var"][[1, 4]])
    assert torch.equal(sub["head.weight"], master["head.weight"][:, [1, 4]])
    assert all(torch.equal(cmap.scatter(sub, master)[k], master[k]) for k in master)


def test_random_indices_are_seeded_by_device_and_round() -> None:
    spec = ModelSpec("mlp", (4,), 2)
    groups, counts = width_groups(spec.build()), width_counts(spec, 0.5)
    a = choose_map(groups, counts, "random", seed=0, device_id=1, round_=1).kept["fc1"]
    b = choose_map(groups, counts, "random", seed=0, device_id=1, round_=1).kept["fc1"]
    c = choose_map(groups, counts, "random", seed=0, device_id=2, round_=1).kept["fc1"]
    assert torch.equal(a, b) and not torch.equal(a, c)
    assert len(a) == 100 and torch.equal(a, a.sort().values) and len(set(a.tolist())) == 100


def test_plans_that_do_not_fit_the_model_are_plan_errors() -> None:
    with pytest.raises(PlanError, match="no hidden dimension"):
        width_counts(ModelSpec("logreg", (4,), 2), 0.5)
    with pytest.raises(PlanError, match=r"must be in \(0, 1\]"):
        width_counts(ModelSpec("mlp", (4,), 2), 1.5)
    groups = width_groups(ModelSpec("mlp", (4,), 2).build())
    with pytest.raises(PlanError, match="keeps 300 units, master has 200"):
        choose_map(groups, {"fc1": 300, "fc2": 10}, "prefix")
    with pytest.raises(PlanError, match="unknown choice"):
        choose_map(groups, {"fc1": 10, "fc2": 10}, "lottery")
    with pytest.raises(PlanError, match="shape"):
        sub_map(ModelSpec("mlp", (4,), 2), 0.5).scatter({"fc1.weight": torch.zeros(3, 4)},
                                                         ModelSpec("mlp", (4,), 2).build().state_dict())
