"""Capability pruning: magnitude masks, sparse payload, dense master rebuilt by masked averaging."""

import torch

from fedfit.aggregation import Contribution, masked_weighted_average
from fedfit.cost.technique_work import sparse_payload_bytes
from fedfit.training import train
from fedfit.training.pruning import decode_sparse, encode_sparse, magnitude_masks
from fedfit.types import Techniques, TrainPlan


def test_magnitude_masks_keep_the_largest_values() -> None:
    params = {"w": torch.tensor([[0.1, -3.0], [2.0, 0.5]]), "b": torch.tensor([1.0, -0.2])}
    masks = magnitude_masks(params, 0.5)
    assert masks["w"].tolist() == [[False, True], [True, False]]
    assert masks["b"].tolist() == [True, False]


def test_sparse_payload_round_trips_at_bitmap_plus_values_size() -> None:
    g = torch.Generator().manual_seed(0)
    params = {"a": torch.randn(10, 7, generator=g), "b": torch.randn(13, generator=g)}
    masks = magnitude_masks(params, 0.7)
    blob = encode_sparse(params, masks)
    kept = sum(int(m.sum()) for m in masks.values())
    assert len(blob) == (83 + 7) // 8 + 4 * kept
    assert abs(len(blob) - sparse_payload_bytes(83, 0.3)) <= 4
    dense, back = decode_sparse(blob, {k: tuple(v.shape) for k, v in params.items()})
    for k in params:
        assert torch.equal(back[k], masks[k])
        assert torch.equal(dense[k], torch.where(masks[k], params[k], torch.zeros(())))


def test_pruned_training_keeps_pruned_weights_at_zero_and_holds_only_survivors(cnn_task) -> None:
    model, params, x, y = cnn_task
    update = train(model, params, x, y, TrainPlan(0, 0, 8, lr=0.1, techniques=Techniques(sparsity=0.7)), seed=0)
    masks = magnitude_masks(params, 0.7)
    for k in params:
        assert torch.equal(update.masks[k], masks[k])
        assert bool((update.params[k][~masks[k]] == 0).all())


def test_masked_average_rebuilds_the_dense_master_from_sparse_updates() -> None:
    master = {"w": torch.tensor([1.0, 1.0, 1.0, 1.0])}
    a = Contribution({"w": torch.tensor([2.0, 0.0, 4.0, 0.0])}, 1.0, {"w": torch.tensor([True, False, True, False])})
    b = Contribution({"w": torch.tensor([5.0, 6.0, 0.0, 0.0])}, 2.0, {"w": torch.tensor([True, True, False, False])})
    out = masked_weighted_average(master, [a, b])["w"]
    assert out.tolist() == [(2.0 + 2 * 5.0) / 3, 6.0, 4.0, 1.0]
