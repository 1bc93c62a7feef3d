"""On streaming data DYNAMITE plans with each device's current buffer size as its D_i."""

from __future__ import annotations

from fedfit.experiment import built
from fedfit.policy.dynamite.planner import DynamitePlanner
from fedfit.types import Update

from tests.policy.dynamite.test_dynamite_end_to_end import small


def test_planner_data_sizes_are_the_buffer_sizes_and_batches_fit_them() -> None:
    # 4 samples at t = 0, one more every second, at most 20 kept: D_i(t) = min(20, 4 + floor(t)).
    config = small(data={"stream": {"rate_per_s": 1.0, "buffer_size": 20, "initial": 4}},
                   orchestration={"rounds": 4, "clients_per_round": 4})
    with built(config) as exp:
        planner = exp.orchestrator.observer
        assert isinstance(planner, DynamitePlanner)
        for t in (0.0, 3.5, 7.0, 40.0):
            assert list(planner.data_sizes(t)) == [min(20, 4 + int(t))] * config.num_devices
        for outcome in exp.orchestrator.rounds(exp.initial_params):
            held = min(20, 4 + int(planner.spent_s))
            assert all(b <= held for b in planner.current().batches)  # b_i never above what it holds
            for r in outcome.results:
                if isinstance(r.outcome, Update):
                    assert r.plan.micro_batch * r.plan.accumulation_steps <= r.outcome.num_examples
        assert planner.observed == 4


def test_dynamite_stream_noise_turns_the_stream_buffer_noise_term_on_for_streaming_data_only() -> None:
    stream = {"stream": {"rate_per_s": 1.0, "buffer_size": 20, "initial": 4}}
    cases = ((small(data=stream, dynamite={"stream_noise": True}), True), (small(data=stream), False),
             (small(dynamite={"stream_noise": True}), False))
    for config, expected in cases:
        with built(config) as exp:
            planner = exp.orchestrator.observer
            assert isinstance(planner, DynamitePlanner)
            assert planner.settings.streaming is expected
