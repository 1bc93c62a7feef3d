"""The batched executor's cost model: the formula on hand-computed cases, the margin, the work count."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from fedfit.simulation.cohort_cost import MEASURED, CohortCosts, ModelWork, batched_ms, local_ms, model_work, vectorise

#: Every constant a different small integer, so each term of the formula shows in the total.
HAND = CohortCosts(task=1, step=2, mac=3, probe=4, probe_mac=5, cohort=6, cohort_step=7, device_step=8,
                   stacked_mac=9, stacked_param=10, cohort_probe=11, device_probe=12, stacked_probe_mac=13,
                   stacked_probe_param=14, margin=0.0)
#: 2 M parameters; batch 4 × 0.5 M multiply-adds = 2 M per step.
WORK = ModelWork(params=2_000_000, macs=500_000)


def test_local_cost_by_hand() -> None:
    # (1 + 1·(2 + 3·2)) + (1 + 3·(2 + 3·2)) = 9 + 25; one probing device: 4 + 5·2 = 14
    assert local_ms(WORK, [1, 3], batch=4, probing=0, costs=HAND) == pytest.approx(34.0)
    assert local_ms(WORK, [1, 3], batch=4, probing=1, costs=HAND) == pytest.approx(48.0)


def test_batched_cost_by_hand() -> None:
    # 6 + max steps 3 · (7 + 2 devices · (8 + 9·2 + 10·2)) = 6 + 3·99; probes: 11 + 1·(12 + 13·2 + 14·2)
    assert batched_ms(WORK, [1, 3], batch=4, probing=0, costs=HAND) == pytest.approx(303.0)
    assert batched_ms(WORK, [1, 3], batch=4, probing=1, costs=HAND) == pytest.approx(303.0 + 77.0)


def _overhead_only(margin: float) -> CohortCosts:
    """One by one: 1 ms a device-step; vectorised: 2 ms a step, nothing per device."""
    zero = {name: 0.0 for name in CohortCosts.__slots__ if name != "margin"}  # type: ignore[attr-defined]
    return CohortCosts(**{**zero, "step": 1.0, "cohort_step": 2.0, "margin": margin})


@pytest.mark.parametrize(("devices", "margin", "expected"), [
    (1, 0.0, False),  # one device: never vectorised
    (2, 0.0, True),  # 2·1 ms against 2 ms: a tie is vectorised without margin
    (2, 0.15, False),  # ... but not with one
    (3, 0.5, True),  # 3 ms ≥ 1.5·2 ms
    (3, 0.51, False),
])
def test_the_margin(devices: int, margin: float, expected: bool) -> None:
    assert vectorise(WORK, [1] * devices, batch=4, probing=0, costs=_overhead_only(margin)) is expected


def test_stacked_streaming_can_make_vectorising_never_pay() -> None:
    """When each device's stacked parameters cost more per step than its own one-by-one step, no
    cohort size pays; with the streaming gone, enough devices do."""
    zero = {name: 0.0 for name in CohortCosts.__slots__ if name != "margin"}  # type: ignore[attr-defined]
    streaming = CohortCosts(**{**zero, "step": 1.0, "cohort_step": 2.0, "stacked_param": 1.0})
    assert not any(vectorise(WORK, [5] * g, batch=4, probing=0, costs=streaming) for g in (2, 10, 100, 1000))
    free = CohortCosts(**{**zero, "step": 1.0, "cohort_step": 2.0})
    assert [vectorise(WORK, [5] * g, batch=4, probing=0, costs=free) for g in (2, 3)] == [False, True]


def test_model_work_counts_parameters_and_multiply_adds() -> None:
    # conv 3→4, 3×3 on 6×6 → 4×4×4 outputs × 3·9 = 1728 MACs, 4·27 + 4 = 112 params; linear 64→10: 640 + 10
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU(), nn.Flatten(), nn.Linear(64, 10))
    assert model_work(model, torch.zeros(3, 6, 6)) == ModelWork(params=112 + 650, macs=1728 + 640)
    assert not any(m._forward_hooks for m in model.modules())  # the counting hooks are removed


def test_the_measured_model_on_the_measured_extremes() -> None:
    """bench/RESULTS.md, "Batched executor: when to vectorise": logistic regression at 64 devices
    was ≥ 2× faster vectorised, the MLP and pairs of devices slower for every model."""
    logreg, mlp = ModelWork(7850, 7840), ModelWork(199_210, 198_800)
    assert vectorise(logreg, [2] * 64, batch=16, probing=0, costs=MEASURED)
    assert not any(vectorise(mlp, [s] * g, batch=16, probing=p, costs=MEASURED)
                   for g in (2, 5, 10, 20, 64) for s in (2, 10) for p in (0, g))
    assert not vectorise(logreg, [10, 10], batch=16, probing=0, costs=MEASURED)
