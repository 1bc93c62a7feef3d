"""The phone tiers are calibrated to seed 000: the default CNN affords 32 / 16 / 8 samples."""

import numpy as np
import pytest

from fedfit.config import ExperimentConfig
from fedfit.cost import MemoryModel, measure
from fedfit.devices import TIERS, generate_trace
from fedfit.models import ModelSpec

TYPICAL_FREE_SHARE = 0.78  # free memory left by app pressure at its 25th percentile


@pytest.mark.parametrize("tier, batch", [("flagship_phone", 32), ("midrange_phone", 16), ("older_phone", 8)])
def test_default_model_affords_seed_batch(tier: str, batch: int) -> None:
    default = ExperimentConfig().model
    cost = measure(ModelSpec(default.name, (1, 28, 28), 10, default.width))
    free = int(TIERS[tier].training_memory_bytes * TYPICAL_FREE_SHARE)
    assert MemoryModel().max_micro_batch(cost, free) == batch


def test_typical_free_share_matches_the_generated_traces() -> None:
    profile = TIERS["flagship_phone"]
    traces = [generate_trace(profile, seed=s, device_id=d) for s in range(3) for d in range(10)]
    shares = [tr.state_at(t).free_memory_bytes / profile.training_memory_bytes
              for tr in traces for t in np.arange(0, 86400, 900)]
    assert np.quantile(shares, 0.25) == pytest.approx(TYPICAL_FREE_SHARE, abs=0.04)
