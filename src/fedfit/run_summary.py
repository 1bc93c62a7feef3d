"""The summary of a finished run: round totals, each tier's local accuracy, auto's choices,
the security figures and, for QAT, the integer model's accuracy."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from fedfit.automode import ModeSwitch
from fedfit.experiment import Experiment
from fedfit.report import local_accuracy_by_tier, summarise, worst_tier_gap
from fedfit.report import atomic
from fedfit.security.report import security_summary
from fedfit.training import evaluate
from fedfit.training.qat import export_int, quantised_accuracy, save_int
from fedfit.types import Params, RoundReport


def finish_run(exp: Experiment, params: Params, reports: list[RoundReport], run_dir: Path | None,
            unfinished: RoundReport | None = None) -> dict[str, Any]:
    """The summary: round totals, each tier's local accuracy, and the integer model's accuracy for QAT."""
    config = exp.config
    tiers = [exp.fleet.profile(d).tier for d in exp.fleet.device_ids()]
    summary = summarise(reports, config.evaluation.target_accuracy, tiers=tiers, unfinished=unfinished,
                        online_tiers=_online_tiers(exp, reports))
    local = _local_accuracy(exp, params)
    int8 = _export_quantised(exp, params, run_dir) if "qat" in config.memory.techniques else {}
    auto = {"auto": list(exp.auto.reasons)} if exp.auto else {}
    if exp.reviser is not None:
        auto["auto_revisions"] = list(exp.reviser.log)
    if isinstance(exp.orchestrator, ModeSwitch):
        auto["auto_switch"] = list(exp.orchestrator.log)
    security = security_summary(exp, params, len(reports))
    return summary | {"local_accuracy_by_tier": local, "worst_tier_gap": worst_tier_gap(local), **int8, **auto,
                      **security, "tier_catalogue": config.fleet.catalogue}


def _online_tiers(exp: Experiment, reports: Sequence[RoundReport]) -> set[str]:
    """Tiers with a device online at the run's start or at the end of a round (aggregation): the
    times a cohort is invited (async refills in between are not sampled)."""
    starts = [0.0, *(r.virtual_time_s for r in reports)]
    return {exp.fleet.profile(d).tier for d in exp.fleet.device_ids()
            if any(exp.fleet.snapshot(d, t).online for t in starts)}


def _local_accuracy(exp: Experiment, params: Params) -> dict[str, float]:
    """The final model's accuracy on each tier's own local test data."""
    model = exp.workload.module(1.0)  # widths are relative to the master
    tiers = [exp.fleet.profile(d).tier for d in exp.fleet.device_ids()]
    return local_accuracy_by_tier(tiers, exp.data.test, lambda x, y: evaluate(model, params, x, y))


def _export_quantised(exp: Experiment, params: Params, run_dir: Path | None) -> dict[str, float]:
    """QAT runs: the integer model's test accuracy, and ``model_int.safetensors`` in the run directory."""
    bits = exp.config.memory.qat.bits
    test = exp.data.global_test
    accuracy = quantised_accuracy(exp.workload.module(1.0), params, test.x, test.y, bits)
    if run_dir is not None:
        atomic.write_with(run_dir / "model_int.safetensors", lambda p: save_int(p, export_int(params, bits)))
    return {"int_accuracy": accuracy}
