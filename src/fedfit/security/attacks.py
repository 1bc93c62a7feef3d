"""Simulated attacks: a chosen set of devices send poisoned updates.

Model poisoning acts on the update Δ = x_i − x_sent a device would have sent:

* ``scale``      — Δ · s (the boosted update of Bhagoji et al. 2019);
* ``sign_flip``  — −s · Δ (the reversed gradient of e.g. Fang et al. 2020);
* ``random``     — Gaussian noise with s times the norm of Δ (a broken or Byzantine device).

Data poisoning trains on altered local data, then optionally boosts Δ by ``boost``:

* ``label_flip`` — every label y becomes C − 1 − y (Tolpegin et al. 2020);
* ``backdoor``   — a ``poison_fraction`` of the local samples gets a trigger (a bright square in
  the bottom-right corner, a seventh of the image's side and at least 2 pixels: 4×4 on
  Fashion-MNIST, 2×2 on 8×8 digits; the last 4 features for 1-D inputs) and the target label (Gu et al.
  2017, BadNets; with ``boost`` > 1, the model replacement of Bagdasaryan et al. 2020).

Poisoning is deterministic: the same (seed, device, round) poisons the same samples.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import torch

from fedfit.training.trainer import task_generator
from fedfit.types import Params, Update

AttackKind = Literal["none", "scale", "sign_flip", "random", "label_flip", "backdoor"]
TRIGGER_FEATURES = 4


@dataclass(frozen=True, slots=True)
class AttackSpec:
    """Who attacks and how.

    Attributes:
        kind: the attack.
        devices: ids of the malicious devices.
        scale: s of ``scale``, ``sign_flip`` and ``random``.
        boost: factor on Δ after training on poisoned data (``label_flip``, ``backdoor``).
        poison_fraction: share of a backdoor device's samples that get the trigger.
        target_class: the backdoor's target label.
        seed: fixes poisoned samples and random updates (with device and round).
    """

    kind: AttackKind = "none"
    devices: frozenset[int] = frozenset()
    scale: float = 10.0
    boost: float = 1.0
    poison_fraction: float = 0.5
    target_class: int = 0
    seed: int = 0

    def attacks(self, device_id: int) -> bool:
        """Whether ``device_id`` is malicious under this spec."""
        return self.kind != "none" and device_id in self.devices


def add_trigger(x: torch.Tensor) -> torch.Tensor:
    """``x`` with the trigger stamped on every sample (value: the data's maximum).

    >>> add_trigger(torch.arange(4.0).reshape(1, 1, 2, 2))   # a 2×2 image: all trigger
    tensor([[[[3., 3.],
              [3., 3.]]]])
    """
    out = x.clone()
    bright = float(x.max()) if x.numel() else 1.0
    if out.dim() >= 3:
        side = max(2, round(out.shape[-2] / 7))
        out[..., -side:, -side:] = bright
    else:
        out[..., -TRIGGER_FEATURES:] = bright
    return out


def poison_data(spec: AttackSpec, device_id: int, round_: int, x: torch.Tensor, y: torch.Tensor,
                num_classes: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The local data a malicious device trains on (unchanged for model-poisoning kinds)."""
    if spec.kind == "label_flip":
        return x, (num_classes - 1) - y
    if spec.kind != "backdoor" or len(x) == 0:
        return x, y
    gen = task_generator(spec.seed + 7919, device_id, round_)
    count = max(1, round(spec.poison_fraction * len(x)))
    chosen = torch.randperm(len(x), generator=gen)[:count]
    x2, y2 = x.clone(), y.clone()
    x2[chosen] = add_trigger(x[chosen])
    y2[chosen] = spec.target_class
    return x2, y2


def poison_update(spec: AttackSpec, update: Update, sent: Params) -> Update:
    """``update`` as the malicious device sends it, Δ transformed relative to ``sent``."""
    factor = {"scale": spec.scale, "sign_flip": -spec.scale, "label_flip": spec.boost,
              "backdoor": spec.boost}.get(spec.kind, 1.0)
    gen = task_generator(spec.seed + 104729, update.device_id, update.round)
    deltas = {n: v.to(torch.float64) - sent[n].to(torch.float64) for n, v in update.params.items()
              if v.is_floating_point()}
    if spec.kind == "random":
        noise = {n: torch.randn(d.shape, generator=gen, dtype=torch.float64) for n, d in deltas.items()}
        size = sum(float(d.pow(2).sum()) for d in deltas.values()) ** 0.5
        noise_size = sum(float(z.pow(2).sum()) for z in noise.values()) ** 0.5
        deltas = {n: z * spec.scale * size / max(noise_size, 1e-12) for n, z in noise.items()}
        factor = 1.0
    params = dict(update.params)
    for n, d in deltas.items():
        params[n] = (sent[n].to(torch.float64) + factor * d).to(update.params[n].dtype)
    return Update(update.device_id, update.round, params, update.num_examples, update.samples_processed,
                  update.steps, update.micro_batch, update.accumulation_steps, update.train_loss,
                  update.epoch_batches, update.masks, update.start_loss, update.sigma2,
                  update.noise_curvature)


def backdoor_success(predict: torch.Tensor, y: torch.Tensor, target_class: int) -> float:
    """Share of samples not of ``target_class`` that, triggered, are predicted as it.

    Args:
        predict: predicted labels on the triggered inputs.
        y: their true labels.
    """
    others = y != target_class
    if not bool(others.any()):
        return 0.0
    return float((predict[others] == target_class).float().mean())
