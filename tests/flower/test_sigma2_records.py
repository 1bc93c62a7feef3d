"""The σ² probe survives Flower's records; an update without one stays without."""

import pytest

pytest.importorskip("flwr", reason="Flower interop needs the extra: pip install fedfit[flower]")

import torch

from fedfit.flower.records import content_update, update_content
from fedfit.types import Update


@pytest.mark.parametrize("sigma2", [None, 0.0, 3.25])
def test_sigma2_round_trips_through_flower_records(sigma2: float | None) -> None:
    update = Update(device_id=1, round=2, params={"w": torch.tensor([1.0])}, num_examples=10, samples_processed=10,
                    steps=1, micro_batch=10, accumulation_steps=1, train_loss=0.5, start_loss=0.7, sigma2=sigma2)
    back = content_update(update_content(update))
    assert (back.sigma2, back.start_loss) == (sigma2, 0.7)
