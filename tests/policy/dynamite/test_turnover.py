"""A stream buffer's turnover between a device's tasks: its variance against a simulation, the
estimator's σ² net of it by hand, and the planner measuring it on the buffers the tasks held."""

from __future__ import annotations


import pytest
import torch

from fedfit.experiment import built
from fedfit.policy.dynamite.estimate import EstimatorState, RoundObservation, observe
from fedfit.policy.dynamite.planner import DynamitePlanner
from fedfit.policy.dynamite.turnover import turnover_variance
from fedfit.types import Update

from tests.policy.dynamite.test_dynamite_end_to_end import small


@pytest.mark.parametrize("before, after", [
    (list(range(10)), list(range(3, 16))),      # grew: 7 kept, 6 added, 3 removed
    (list(range(8)), [0, 1, 2, 3, 8, 9, 10, 11]),  # a full buffer, half replaced
    ([0, 0, 1, 2], [0, 1, 2, 3]),               # a repeated sample leaves
])
def test_turnover_is_the_variance_of_the_change_of_buffer_means(before: list[int], after: list[int]) -> None:
    # Every sample's gradient i.i.d. N(0, σ² = 4): the change of buffer means, simulated.
    gen = torch.Generator().manual_seed(0)
    x = 2.0 * torch.randn(200_000, 20, generator=gen, dtype=torch.float64)
    change = x[:, after].mean(dim=1) - x[:, before].mean(dim=1)
    assert float(change.var()) == pytest.approx(4.0 * turnover_variance(before, after), rel=0.02)


def test_turnover_by_hand() -> None:
    # 10 held, then 13: 7 kept (1/13 − 1/10)², 6 added 1/13², 3 removed 1/10².
    assert turnover_variance(range(10), range(3, 16)) == pytest.approx(7 * (1 / 13 - 1 / 10) ** 2 + 6 / 169 + 3 / 100)
    assert turnover_variance(range(5), range(5)) == 0.0


def _round(w: float, grads: dict[int, float], turnover: dict[int, float]) -> RoundObservation:
    return RoundObservation(start=torch.tensor([w, 0.0]), grads={i: torch.tensor([0.0, g]) for i, g in grads.items()},
                            samples={i: 10 for i in grads}, shares={i: 1.0 for i in grads}, loss=1.0,
                            turnover=turnover)


def test_sigma2_is_read_net_of_the_turnover() -> None:
    # Two devices whose gradients change by +3 and −3 along an axis the model did not move on:
    # the global gradient does not change (β unknown, 0), so each residual is 9, and σ² is the
    # pooled Σ residual / Σ (1/n(t) + 1/n(t+1) + u_i) = 18 / (0.2 + 0.2 + 0.05 + 0.15) = 30.
    first = observe(EstimatorState(), _round(0.0, {1: 0.0, 2: 0.0}, {}), holding=0.0)
    second = observe(first, _round(1.0, {1: 3.0, 2: -3.0}, {1: 0.05, 2: 0.15}), holding=0.0)
    assert second.sigma2 == pytest.approx(18 / 0.6)
    static = observe(first, _round(1.0, {1: 3.0, 2: -3.0}, {}), holding=0.0)
    assert static.sigma2 == pytest.approx(18 / 0.4)  # without turnover: the epoch noise alone


def test_planner_measures_each_devices_turnover_on_the_buffers_its_tasks_held() -> None:
    config = small(data={"stream": {"rate_per_s": 2.0, "buffer_size": 12, "initial": 4, "replacement": "random"}},
                   orchestration={"rounds": 4, "clients_per_round": 4}, dynamite={"stream_turnover": True})
    seen: dict[int, tuple[int, ...]] = {}
    with built(config) as exp:
        planner, stream = exp.orchestrator.observer, exp.stream
        assert isinstance(planner, DynamitePlanner) and stream is not None
        checked = 0
        for outcome in exp.orchestrator.rounds(exp.initial_params):
            obs = planner.estimator.last
            assert obs is not None
            expected = {}
            for r in outcome.results:
                if isinstance(r.outcome, Update):
                    now = stream.buffer(r.plan.device_id, r.start_s).indices
                    if r.plan.device_id in seen:
                        expected[r.plan.device_id] = turnover_variance(seen[r.plan.device_id], now)
                    seen[r.plan.device_id] = now
            assert obs.turnover == pytest.approx(expected)
            checked += len(expected)
        assert checked > 0 and any(u > 0 for u in planner.estimator.last.turnover.values())


@pytest.mark.parametrize("sections", [
    {},                                                                  # static data
    {"dynamite": {"stream_turnover": True}},                             # static data, knob on
    {"data": {"stream": {"rate_per_s": 2.0, "buffer_size": 12, "initial": 4}}},  # a stream, knob off (default)
])
def test_no_turnover_is_taken_out_on_static_data_or_by_default(sections: dict[str, dict[str, object]]) -> None:
    with built(small(**sections)) as exp:
        planner = exp.orchestrator.observer
        assert isinstance(planner, DynamitePlanner) and planner.held is None
        for _ in exp.orchestrator.rounds(exp.initial_params):
            assert planner.estimator.last is not None and planner.estimator.last.turnover == {}
