"""A run without secure aggregation never loads SecAgg's key agreement (cryptography)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from fedfit.config import parse_config
from fedfit.security.builders import security_combine


def test_building_a_simulated_run_does_not_import_cryptography() -> None:
    code = ("import sys, fedfit.experiment; "
            "print(sorted(m for m in sys.modules if m.startswith(('cryptography', 'fedfit.security.secagg'))))")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2] / "src")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize(("secure", "central", "kind"), [(True, False, "SecureAggregate"),
                                                         (True, True, "SecureCentralDP")])
def test_secure_aggregation_still_combines_with_its_rule(secure: bool, central: bool, kind: str) -> None:
    privacy = {"secure_aggregation": {"enabled": secure, "threshold": 0.6, "min_cohort": 4}}
    if central:
        privacy["central"] = {"enabled": True, "clip_norm": 1.0, "noise_multiplier": 0.5}
    config = parse_config({"name": "s", "seed": 3, "privacy": privacy})
    rule = security_combine(config, None)  # type: ignore[arg-type]  # the workload is read by local DP only
    assert type(rule).__name__ == kind
    inner = rule if kind == "SecureAggregate" else rule.secure  # type: ignore[attr-defined]
    assert (inner.threshold, inner.min_cohort, inner.seed) == (0.6, 4, 3)
