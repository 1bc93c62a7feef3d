"""What a run's summary says about security and privacy: ε spent, attackers, backdoor success."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from fedfit.security.attacks import AttackSpec, add_trigger, backdoor_success
from fedfit.security.builders import privacy_summary
from fedfit.simulation.workload import Workload
from fedfit.types import Params

if TYPE_CHECKING:
    from fedfit.experiment import Experiment


def backdoor_rate(workload: Workload, params: Params, spec: AttackSpec) -> float:
    """Share of global-test samples not of the target class that the trigger sends to it."""
    test = workload.data.global_test
    model = workload.module(1.0)
    model.load_state_dict(params)
    model.eval()
    with torch.no_grad():
        predict = torch.cat([model(xs).argmax(1) for xs in add_trigger(test.x).split(1024)])
    return backdoor_success(predict, test.y, spec.target_class)


def security_summary(exp: Experiment, params: Params, rounds: int) -> dict[str, Any]:
    """Summary entries: ``privacy`` (central DP; local DP-SGD for the median-sized device),
    ``attack`` (simulated attackers) and ``secure_aggregation``; empty when none is configured."""
    config, spec = exp.config, exp.workload.recipe.attack
    sizes = sorted(len(d) for d in exp.workload.data.train)
    out = privacy_summary(config, rounds, sizes[len(sizes) // 2])
    if spec.kind != "none":
        attack: dict[str, Any] = {"kind": spec.kind, "malicious_devices": sorted(spec.devices)}
        if spec.kind == "backdoor":
            attack["backdoor_success"] = backdoor_rate(exp.workload, params, spec)
        out["attack"] = attack
    s = config.privacy.secure_aggregation
    if s.enabled:
        out["secure_aggregation"] = {"threshold": s.threshold, "dropout": s.dropout, "min_cohort": s.min_cohort}
    return out
