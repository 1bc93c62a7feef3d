"""The DYNAMITE planner: plans carry τ and b_i, estimates come from updates, offline plans freeze."""

from __future__ import annotations

import pytest
import torch

from fedfit.cost import MemoryModel, ModelCost
from fedfit.devices.registry import Registry
from fedfit.policy import FixedPlanner
from fedfit.policy.dynamite import Budget, Estimates
from fedfit.policy.dynamite.calibrate import Calibration
from fedfit.policy.dynamite.planner import DynamitePlanner
from fedfit.policy.dynamite.settings import DynamiteSettings
from fedfit.policy.dynamite.search import search_homogeneous
from fedfit.types import TaskCost, TaskResult, TrainPlan, Update
from tests.helpers import profile, state

COST = ModelCost(num_params=3, param_bytes=12, train_flops_per_sample=3e6, forward_flops_per_sample=1e6,
                 activation_bytes_per_sample=1e4, activation_fixed_bytes=0.0)
BETA, LR = 2.0, 0.1
CENTRES = [torch.tensor([1.0, 0.0, 2.0]), torch.tensor([-1.0, 3.0, 0.0])]
SIZES = [100, 300]


def planner(**settings: object) -> DynamitePlanner:
    registry = Registry()
    for d in range(2):
        registry.add(d, profile(flops_per_s=1e9 * (1 + 9 * d)))
        registry.report_state(d, state(), 0.0)
    s = DynamiteSettings(**{"budget": Budget(time_s=200.0), "tau_max": 20, "holding": 0.0, **settings})  # type: ignore[arg-type]
    return DynamitePlanner(FixedPlanner(batch_size=32, lr=LR), s, registry=registry, costs=lambda w: COST,
                           memory=MemoryModel(), data_sizes=lambda now_s: SIZES, lr=LR,
                           initial_params={"w": torch.tensor([4.0, 4.0, 4.0])})


def gd_round(p: DynamitePlanner, version: int, w: torch.Tensor, duration_scale: float = 1.0) -> torch.Tensor:
    """Each device takes one GD step on β/2‖w − c_i‖² (its pseudo-gradient is its exact gradient)."""
    results = []
    for d, c in enumerate(CENTRES):
        plan = TrainPlan(device_id=d, round=version, micro_batch=8, max_steps=1, lr=LR)
        end = w - LR * BETA * (w - c)
        update = Update(d, version, {"w": end}, SIZES[d], 8, 1, 8, 1, train_loss=BETA / 2 * float(((w - c) ** 2).sum()))
        cost = TaskCost(0.5, 1.0, 0.5, 3.0, 0, 0, 0, 0.0)
        results.append(TaskResult(plan, "test", 0.0, 2.0 * duration_scale, update, cost, 0))
    new = sum(n / sum(SIZES) * r.outcome.params["w"] for n, r in zip(SIZES, results))  # type: ignore[union-attr]
    p.observe(version + 1, {"w": new}, results, now_s=10.0 * (version + 1))
    return new


def test_plan_carries_tau_and_the_devices_batch() -> None:
    p = planner()
    a = p.current()
    plan = p.plan(1, 0, p.registry.profile(1), state())
    assert plan.max_steps == a.tau
    assert plan.effective_batch == a.batches[1]
    steps_per_epoch = -(-SIZES[1] // plan.effective_batch)
    assert plan.local_epochs * steps_per_epoch >= a.tau
    assert plan.lr == LR


def test_estimates_from_updates_match_the_quadratic() -> None:
    p = planner()
    w1 = gd_round(p, 0, torch.tensor([4.0, 4.0, 4.0]))
    gd_round(p, 1, w1)
    c_bar = sum(n / sum(SIZES) * c for n, c in zip(SIZES, CENTRES))
    delta = sum(n / sum(SIZES) * BETA * float(torch.linalg.vector_norm(c - c_bar)) for n, c in zip(SIZES, CENTRES))
    est = p.estimator.estimates(p.settings.prior)
    assert est.beta == pytest.approx(BETA, rel=1e-6)
    assert est.delta == pytest.approx(delta, rel=1e-6)


def test_online_replans_after_each_aggregation_offline_after_warmup() -> None:
    online, offline = planner(adapt=True), planner(adapt=False, warmup_rounds=2)
    for p in (online, offline):
        w = torch.tensor([4.0, 4.0, 4.0])
        for v in range(4):
            p.current()
            w = gd_round(p, v, w)
        p.current()
    assert [h[0] for h in online.history] == [0, 1, 2, 3, 4]
    assert [h[0] for h in offline.history] == [0, 2]


def test_measured_durations_win_over_predictions() -> None:
    fast, slow = planner(), planner()
    gd_round(fast, 0, torch.tensor([4.0, 4.0, 4.0]))
    gd_round(slow, 0, torch.tensor([4.0, 4.0, 4.0]), duration_scale=3.0)
    # predicted 2 s (the task's modelled cost), measured 2 s and 6 s
    assert slow.speed[0] == pytest.approx(3.0) and fast.speed[0] == pytest.approx(1.0)
    assert slow._device(0, 100).round_s(5, 8) == pytest.approx(3 * fast._device(0, 100).round_s(5, 8))
    a, b = fast.current(), slow.current()
    assert b.bound > a.bound  # a slower fleet affords fewer steps in the same budget


def local_gd_round(p: DynamitePlanner, version: int, w: torch.Tensor, steps: int,
                   start_losses: list[float] | None = None) -> torch.Tensor:
    """Each device takes ``steps`` GD steps on β/2‖w − c_i‖² and reports its loss at ``w``
    (or ``start_losses``) as the loss of the model it received."""
    results = []
    for d, c in enumerate(CENTRES):
        end = c + (1 - LR * BETA) ** steps * (w - c)
        received = BETA / 2 * float(((w - c) ** 2).sum()) if start_losses is None else start_losses[d]
        update = Update(d, version, {"w": end}, SIZES[d], 8 * steps, steps, 8, 1, train_loss=received,
                        start_loss=received)
        plan = TrainPlan(device_id=d, round=version, micro_batch=8, max_steps=steps, lr=LR)
        results.append(TaskResult(plan, "test", 0.0, 2.0, update, TaskCost(0.5, 1.0, 0.5, 3.0, 0, 0, 0, 0.0), 0))
    new = sum(n / sum(SIZES) * r.outcome.params["w"] for n, r in zip(SIZES, results))  # type: ignore[union-attr]
    p.observe(version + 1, {"w": new}, results, now_s=10.0 * (version + 1))
    return new


@pytest.mark.parametrize("c_true", [0.0, 0.4, 3.0])
def test_the_received_models_loss_calibrates_the_drift_term_the_plan_uses(c_true: float) -> None:
    p = planner(solver="homogeneous", calibration=Calibration(prior=1.0, holding=0.0))
    w = local_gd_round(p, 0, torch.tensor([4.0, 4.0, 4.0]), steps=4)
    first = p.calibration.last if p.calibration else None
    assert first is not None and first.drift > 0 and p.estimates().drift_scale == 1.0  # prior: one round only
    # the next round's losses say the round lost c_true times the drift the bound charged
    fallen = sum(first.losses[d] * first.shares[d] for d in (0, 1)) / sum(SIZES) \
        - (first.progress - c_true * first.drift)
    local_gd_round(p, 1, w, steps=4, start_losses=[fallen, fallen])
    assert p.estimates().drift_scale == pytest.approx(c_true)
    devices = [p._device(d, SIZES[d]) for d in p.registry.ids()]
    expected = search_homogeneous(devices, [0.25, 0.75], p.estimates(), LR, p._budget_left(2), p.settings.tau_max)
    assert p.current() == expected


def test_uncalibrated_planner_keeps_the_worst_case() -> None:
    p = planner(calibration=None)
    w = local_gd_round(p, 0, torch.tensor([4.0, 4.0, 4.0]), steps=4)
    local_gd_round(p, 1, w, steps=4, start_losses=[0.0, 0.0])
    assert p.estimates().drift_scale == 1.0


@pytest.mark.parametrize("solver", ["homogeneous", "heterogeneous"])
def test_the_default_optimistic_prior_plans_the_first_round_at_tau_max(solver: str) -> None:
    # with c = 0, Φ's τ-dependence under a time budget is F0 (τ·step(b) + comm) / (η T τ) for every
    # b: falling in τ, so the first round takes τ_max, where drift (if any) is best measured
    optimistic = planner(solver=solver)
    assert optimistic.settings.calibration == Calibration(prior=0.0)
    assert optimistic.estimates().drift_scale == 0.0 and optimistic.current().tau == 20
    worst_case = planner(solver=solver, calibration=Calibration(prior=1.0))
    assert worst_case.current().tau < 20  # the prior estimates' worst-case drift holds τ down
