"""Payload codec: round trip, metadata, masks, and the update checks against hand-made tensors."""

from __future__ import annotations

import math

import pytest
import torch

from fedfit.transport.codec import check_update, decode, encode, split_masks, with_masks
from fedfit.transport.rejection import Rejected


def test_round_trip_keeps_tensors_metadata_and_masks() -> None:
    params = {"a": torch.arange(6.0).reshape(2, 3), "b": torch.tensor([1.5])}
    masks = {"a": torch.tensor([[True, False, True], [False, False, True]])}
    tensors, meta = decode(encode(with_masks(params, masks), {"report": "{}"}))
    got, got_masks = split_masks(tensors)
    assert meta == {"report": "{}"} and set(got) == {"a", "b"}
    assert torch.equal(got["a"], params["a"]) and got_masks is not None and torch.equal(got_masks["a"], masks["a"])


def test_norm_is_of_the_difference_to_what_was_sent() -> None:
    sent = {"w": torch.zeros(2, 2)}
    check_update({"w": torch.full((2, 2), 1.5)}, None, sent, max_norm=3.0)  # ‖·‖ = sqrt(4 · 2.25) = 3
    with pytest.raises(Rejected, match="norm 3.002"):
        check_update({"w": torch.full((2, 2), 1.501)}, None, sent, max_norm=3.0)


def test_checks_name_the_tensor() -> None:
    sent = {"w": torch.zeros(2)}
    with pytest.raises(Rejected, match="w holds NaN"):
        check_update({"w": torch.tensor([0.0, math.nan])}, None, sent, 1.0)
    with pytest.raises(Rejected, match=r"w has shape \[3\], expected \[2\]"):
        check_update({"w": torch.zeros(3)}, None, sent, 1.0)
