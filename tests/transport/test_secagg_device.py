"""What a deployed device masks: its update in master coordinates with the rule's weight, or,
with central DP, its delta clipped to clip_norm with weight 1."""

from __future__ import annotations

import json

import torch

from fedfit.config import parse_config
from fedfit.models import ModelSpec
from fedfit.orchestration.submodels import SubModelExchange
from fedfit.transport.codec import encode, with_masks
from fedfit.transport.secagg_device import device_contribution
from fedfit.types import TrainPlan

SPEC = ModelSpec("mlp", (6,), 3)
REPORT = {"samples_processed": 30, "steps": 3, "micro_batch": 10, "accumulation_steps": 1, "train_loss": 0.5,
          "duration_s": 1.0, "num_examples": 30}


def payloads(width: float, shift: float) -> tuple[TrainPlan, bytes, bytes, dict[str, torch.Tensor]]:
    plan = TrainPlan(device_id=2, round=0, micro_batch=10, width=width)
    torch.manual_seed(0)
    master = {k: v.detach().clone() for k, v in SPEC.build().state_dict().items()}
    sent = SubModelExchange.for_spec(SPEC).outgoing(plan, master)
    update = {k: v + shift for k, v in sent.items()}
    return plan, encode(sent), encode(with_masks(update, None), {"report": json.dumps(REPORT)}), update


def test_plain_secagg_masks_the_update_weighted_by_samples_on_its_slice() -> None:
    plan, sent, body, update = payloads(0.5, 0.25)
    c, _, template = device_contribution(parse_config({}), SPEC, plan, sent, body)
    assert c.weight == 30.0
    first = next(iter(update))
    held = c.masks[first]  # type: ignore[index]
    assert int(held.sum()) == update[first].numel() < template[first].numel()
    assert torch.equal(c.params[first][held], update[first].flatten())


def test_with_central_dp_the_delta_is_clipped_to_clip_norm_and_weighs_one() -> None:
    plan, sent, body, update = payloads(1.0, 0.25)
    config = parse_config({"privacy": {"central": {"enabled": True, "clip_norm": 0.5, "noise_multiplier": 1.0}}})
    c, _, _ = device_contribution(config, SPEC, plan, sent, body)
    norm = sum(float(v.pow(2).sum()) for v in c.params.values()) ** 0.5
    raw = 0.25 * sum(v.numel() for v in update.values()) ** 0.5  # every coordinate moved by 0.25
    assert c.weight == 1.0 and raw > 0.5
    assert abs(norm - 0.5) < 1e-6  # float32 parameters
