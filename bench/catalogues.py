"""Both tier catalogues against two models: the micro-batch each tier's budget affords.

For every built-in tier of the ``realistic`` and ``scaled`` catalogues, the training budget and
the micro-batch :func:`fedfit.policy.batching.decide_batch` gives at the traces' typical free
share (78% of the budget: the 25th percentile of the generated app pressure) on a nominal,
charged device on Wi-Fi, for the realistic reference model (MobileNetV2 width 0.5, 3×96×96,
static batch-norm) and the small zoo CNN (1×28×28). Pure arithmetic on two measured models.

    PYTHONPATH=src python bench/catalogues.py
"""

from __future__ import annotations

import torch

from fedfit.cost import MemoryModel, measure
from fedfit.devices import CATALOGUES
from fedfit.models import ModelSpec
from fedfit.policy.batching import decide_batch
from fedfit.types import DeviceState, Link, Thermal

TYPICAL_FREE_SHARE = 0.78
MODELS = {"mobilenetv2-0.5@96": ModelSpec("mobilenetv2", (3, 96, 96), 10, width=0.5, norm="batch"),
          "cnn@28": ModelSpec("cnn", (1, 28, 28), 10)}


def _state(free_bytes: int) -> DeviceState:
    return DeviceState(free_memory_bytes=free_bytes, battery_fraction=0.9, charging=True, temperature_c=30.0,
                       thermal=Thermal.NOMINAL, link=Link.WIFI, bandwidth_bps=5e7, online=True)


def main() -> None:
    torch.set_num_threads(1)
    costs = {name: measure(spec) for name, spec in MODELS.items()}
    for name, cost in costs.items():
        print(f"{name}: {cost.num_params:,} parameters, {cost.peak_bytes_per_sample / 1e6:.2f} MB per sample, "
              f"{cost.train_flops_per_sample / 1e6:.0f} MFLOP per training sample")
    print(f"{'catalogue':9} {'tier':16} {'budget':>10} " + " ".join(f"{n + ' (rule)':>28}" for n in MODELS))
    for catalogue, tiers in CATALOGUES.items():
        for tier, profile in tiers.items():
            cells = []
            for cost in costs.values():
                d = decide_batch(profile, _state(int(profile.training_memory_bytes * TYPICAL_FREE_SHARE)), cost,
                                 MemoryModel())
                cells.append(f"{d.micro_batch} ({d.bound_by.value})")
            budget = profile.training_memory_bytes
            size = f"{budget / 2**20:.1f} MiB" if budget >= 2**20 else f"{budget // 1024} KiB"
            print(f"{catalogue:9} {tier:16} {size:>10} " + " ".join(f"{c:>28}" for c in cells))


if __name__ == "__main__":
    main()
