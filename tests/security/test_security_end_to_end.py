"""Whole runs with attacks and defences from the config: SecAgg changes nothing but who sees what,
DP reports the ε it was asked for, a robust rule survives what breaks FedAvg."""

from __future__ import annotations

import pytest
import torch

from fedfit.config import ExperimentConfig, parse_config
from fedfit.runner import run

pytestmark = pytest.mark.slow


def small(**sections: dict) -> ExperimentConfig:
    raw: dict = {
        "name": "small", "seed": 3,
        "data": {"dataset": "digits", "partition": {"kind": "iid"}, "max_train_samples": 900, "max_test_samples": 300},
        "model": {"name": "logreg"},
        "fleet": {"tiers": {"flagship_phone": 4, "midrange_phone": 4, "older_phone": 4}},
        "training": {"batch_size": 16, "lr": 0.1, "local_epochs": 3},
        "orchestration": {"rounds": 5, "clients_per_round": 12},
        "output": {"plots": False, "progress": False},
    }
    for key, value in sections.items():
        raw[key] = {**raw.get(key, {}), **value}
    return parse_config(raw)


def test_secure_aggregation_of_width_groups_gives_the_plain_runs_model() -> None:
    width, mlp = {"mode": "random"}, {"name": "mlp"}  # random widths: several width groups a round
    plain = run(small(width=width, model=mlp))
    secure = run(small(width=width, model=mlp, privacy={"secure_aggregation": {"enabled": True}}))
    assert all(torch.allclose(secure.params[k], plain.params[k], atol=1e-4) for k in plain.params)
    assert secure.summary["secure_aggregation"]["dropout"] == 0.0


def test_central_dp_reports_the_target_epsilon_in_the_summary() -> None:
    result = run(small(privacy={"central": {"enabled": True, "target_epsilon": 4.0, "delta": 1e-3}}))
    assert result.summary["privacy"]["epsilon"] == pytest.approx(4.0, abs=0.01)
    assert result.summary["privacy"]["rounds"] == 5


def test_median_survives_a_scaled_attack_that_breaks_fedavg() -> None:
    attack = {"kind": "scale", "fraction": 0.25, "scale": 20.0}
    clean = run(small()).summary["final_accuracy"]
    broken = run(small(attack=attack)).summary["final_accuracy"]
    defended = run(small(attack=attack, aggregation={"robust": {"rule": "median"}})).summary["final_accuracy"]
    assert broken < clean - 0.2
    assert defended > clean - 0.1


def test_a_backdoor_run_reports_its_success_rate() -> None:
    result = run(small(attack={"kind": "backdoor", "fraction": 0.25, "target_class": 1}))
    assert 0.0 <= result.summary["attack"]["backdoor_success"] <= 1.0
    assert len(result.summary["attack"]["malicious_devices"]) == 3


def test_local_dp_sgd_reports_the_sample_level_epsilon() -> None:
    result = run(small(privacy={"local": {"enabled": True, "noise_multiplier": 1.0, "clip_norm": 1.0}}))
    local = result.summary["privacy"]["local"]
    # the median device holds 1437/12 ≈ 120 samples: 3 epochs × ⌈120/16⌉ steps × 5 rounds
    assert local["steps"] == 5 * 3 * -(-local["examples"] // 16)
    assert 0 < local["epsilon"] < 100
    assert "epsilon" not in result.summary["privacy"]
