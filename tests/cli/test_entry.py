"""A Ctrl-C at any moment of start-up or a run ends in one line and exit status 130."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

CONFIG = """
seed: 0
data: {dataset: digits, max_train_samples: 300, max_test_samples: 100}
model: {name: logreg}
fleet: {tiers: {flagship_phone: 4}}
orchestration: {rounds: 200, clients_per_round: 2}
output: {plots: false, progress: false}
"""


@pytest.mark.parametrize("delay_s", [0.3, 1.5])
def test_ctrl_c_during_start_up_or_run_is_one_line_and_exit_130(tmp_path: Path, delay_s: float) -> None:
    config = tmp_path / "c.yaml"
    config.write_text(CONFIG)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2] / "src")}
    proc = subprocess.Popen([sys.executable, "-m", "fedfit.entry", "run", str(config), "--out", str(tmp_path / "r")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    time.sleep(delay_s)  # 0.3 s: still importing torch; 1.5 s: importing or already running

    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)

    assert proc.returncode == 130, err
    assert "Traceback" not in err
    assert "interrupted" in err and len(err.strip().splitlines()) == 1
