"""Property: any small fleet under any orchestration strategy terminates within a bound.

Random fleets of catalogue tiers (watches and sensors that cannot fit the plan among them) ×
sync / FedBuff / FedAsync × fixed / dynamic batching × buffer sizes up to larger than the fleet:
every run either finishes its rounds or stops with a one-line reason, never later than one
stall timeout (plus one task) after each version.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from fedfit.config import parse_config
from fedfit.runner import run

TIERS = ["flagship_phone", "older_phone", "smartwatch", "sensor_mcu"]
STALL_S = 1800.0
SLACK_S = 3600.0  # one task's download, compute and upload on the slowest tier, at most

fleets = st.dictionaries(st.sampled_from(TIERS), st.integers(1, 3), min_size=1, max_size=3)
modes = st.sampled_from([("sync", "fedbuff"), ("async", "fedbuff"), ("async", "fedasync")])


@settings(max_examples=6, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
# the hang: FedBuff K = 10 at batch 32 on a fleet with fewer than 10 devices that can train
@example(fleet={"flagship_phone": 1, "smartwatch": 3}, mode=("async", "fedbuff"), batching="fixed", batch=32,
         buffer=10, model="cnn")
@example(fleet={"sensor_mcu": 2}, mode=("async", "fedasync"), batching="fixed", batch=256, buffer=1, model="cnn")
@given(fleet=fleets, mode=modes, batching=st.sampled_from(["fixed", "dynamic"]),
       batch=st.sampled_from([8, 32, 256]), buffer=st.integers(1, 12), model=st.sampled_from(["logreg", "cnn"]))
def test_every_small_run_terminates_within_a_bound(fleet: dict[str, int], mode: tuple[str, str], batching: str,
                                                   batch: int, buffer: int, model: str) -> None:
    rounds = 2
    raw: dict[str, Any] = {
        "seed": 0, "data": {"dataset": "digits", "max_train_samples": 200, "max_test_samples": 50},
        "model": {"name": model}, "fleet": {"tiers": fleet}, "training": {"batch_size": batch, "max_steps": 2},
        "orchestration": {"mode": mode[0], "rounds": rounds, "stall_timeout_s": STALL_S,
                          "clients_per_round": min(3, sum(fleet.values()))},  # a sync round > fleet is a ConfigError
        "asynchronous": {"algorithm": mode[1], "buffer_size": buffer},
        "batching": {"mode": batching, "selection": "readiness"},
        "output": {"plots": False, "progress": False, "checkpoint_every": 0},
    }

    result = run(parse_config(raw))

    assert len(result.reports) == rounds or result.stopped is not None
    if result.stopped is not None:
        assert "\n" not in result.stopped and result.summary["stopped"] == result.stopped
    assert result.summary["virtual_time_s"] <= (rounds + 1) * (STALL_S + SLACK_S)
