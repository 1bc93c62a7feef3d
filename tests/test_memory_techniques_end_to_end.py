"""Memory techniques from a config: auto mode rescues out-of-memory devices; each technique runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from fedfit.config import parse_config
from fedfit.errors import ConfigError
from fedfit.runner import run
from tests.test_end_to_end import small

# A phone whose budget (850 kB) is below the CNN's plain peak at batch 16 (907 kB) but above its
# peak with selective training (629 kB); its devices hold their batch (a batch above the samples
# held is priced at the samples held, so it would not run out of memory).
TIGHT = {"fleet": {"tiers": {"tight_phone": 6, "flagship_phone": 6},
                   "custom_tiers": {"tight_phone": {"base": "older_phone", "training_memory_bytes": 850_000}}}}


def _failures(result, cause: str) -> int:
    return sum(r.failures_by_cause.get(cause, 0) for r in result.reports)


@pytest.mark.slow
def test_auto_mode_fits_devices_that_ran_out_of_memory_in_the_baseline() -> None:
    baseline = run(small(**TIGHT))
    fitted = run(small(memory={"mode": "auto"}, **TIGHT))
    assert _failures(fitted, "out_of_memory") < _failures(baseline, "out_of_memory")
    assert sum(sum(r.participants_by_tier.values()) for r in fitted.reports) > \
        sum(sum(r.participants_by_tier.values()) for r in baseline.reports)


@pytest.mark.slow
@pytest.mark.parametrize("technique", ["checkpointing", "selective", "partial", "pruning", "qat", "progressive", "split"])
def test_each_technique_trains_and_aggregates_from_a_config(technique: str) -> None:
    result = run(small(memory={"mode": "all", "techniques": [technique]}, orchestration={"rounds": 2}))
    assert sum(sum(r.participants_by_tier.values()) for r in result.reports) > 0
    assert all(r.rejected_updates == 0 for r in result.reports)
    assert result.reports[-1].accuracy is not None


def test_impossible_combination_in_config_is_one_line() -> None:
    with pytest.raises(ConfigError, match=r"^memory\.techniques: split cannot be combined with checkpointing$"):
        parse_config({"memory": {"mode": "all", "techniques": ["checkpointing", "split"]}})


def test_split_cut_outside_the_model_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="memory.split.cut"):
        run(small(memory={"mode": "all", "techniques": ["split"], "split": {"cut": 9}}))


@pytest.mark.slow
def test_qat_run_exports_an_int8_model_and_reports_its_accuracy(tmp_path: Path) -> None:
    result = run(small(memory={"mode": "all", "techniques": ["qat"]}, orchestration={"rounds": 1}), tmp_path)
    exported = load_file(str(tmp_path / "model_int.safetensors"))
    assert exported["fc2.weight"].dtype == torch.int8 and exported["fc2.weight.scale"].dtype == torch.float32
    assert 0.0 <= result.summary["int_accuracy"] <= 1.0
    assert json.loads((tmp_path / "summary.json").read_text())["int_accuracy"] == result.summary["int_accuracy"]
