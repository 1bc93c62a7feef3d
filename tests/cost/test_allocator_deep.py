"""The memory model against the tensor allocator on the deeper zoo models: MobileNetV2 and the LSTM."""

from __future__ import annotations

import pytest

from fedfit.cost import measure
from fedfit.models import ModelSpec
from tests.cost.test_allocator import TENSORS_ONLY, trainer_peak_bytes

SPECS = {"mobilenetv2": ModelSpec("mobilenetv2", (3, 64, 64), 10, width=0.35, norm="batch"),
         "lstm": ModelSpec("lstm", (1, 28, 28), 10)}


@pytest.mark.parametrize(("name", "micro_batch"), [("mobilenetv2", 1), ("mobilenetv2", 4), ("lstm", 1),
                                                   ("lstm", 16)])
def test_predicted_peak_within_10_percent_of_the_trainers_allocator_peak(name: str, micro_batch: int) -> None:
    spec = SPECS[name]
    cost = measure(spec)
    measured = trainer_peak_bytes(spec, micro_batch)
    assert TENSORS_ONLY.peak_bytes(cost, micro_batch) == pytest.approx(measured, rel=0.10)
