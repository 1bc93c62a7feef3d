"""A Ctrl-C at any moment of start-up or a run ends in one line and exit status 130.

Each test waits for the child to reach the moment it means (no fixed sleep, so a loaded host
cannot make the signal land earlier or later than intended), with a bounded wait.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fedfit.simulation.checkpoint import FILENAME as CHECKPOINT

CONFIG = """
seed: 0
data: {dataset: digits, max_train_samples: 300, max_test_samples: 100}
model: {name: logreg}
fleet: {tiers: {flagship_phone: 4}}
orchestration: {rounds: 2000, clients_per_round: 2}
output: {plots: false, progress: false, checkpoint_every: 1}
"""

#: ``fedfit.entry.main`` as ``python -m fedfit.entry`` runs it, except that the moment the entry
#: point installs its Ctrl-C hold it says ``held`` on stdout and waits for a line on stdin, so the
#: test's signal lands while the imports are still to come.
ANNOUNCE_HOLD = """
import signal, sys
install = signal.signal
announced = []

def announce(signum, handler):
    previous = install(signum, handler)
    if signum == signal.SIGINT and not announced:
        announced.append(True)
        print("held", flush=True)
        sys.stdin.readline()
    return previous

signal.signal = announce
from fedfit.entry import main
sys.exit(main())
"""

READY_TIMEOUT_S = 300.0  # a loaded 2-core host imports torch and builds the run in well under this


def _start(args: list[str], tmp_path: Path) -> tuple[subprocess.Popen[str], Path]:
    config, run_dir = tmp_path / "c.yaml", tmp_path / "r"
    config.write_text(CONFIG)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2] / "src")}
    proc = subprocess.Popen([sys.executable, *args, "run", str(config), "--out", str(run_dir)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            preexec_fn=_default_ctrl_c)
    return proc, run_dir


def _default_ctrl_c() -> None:
    """Ctrl-C as a terminal's foreground job gets it: a test run in the background (``pytest &``
    from a script) inherits SIGINT ignored, and Python then keeps ignoring it."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _finish(proc: subprocess.Popen[str]) -> str:
    try:
        _, err = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        pytest.fail("the run went on after Ctrl-C")
    return err


def test_ctrl_c_during_start_up_is_one_line_and_exit_130(tmp_path: Path) -> None:
    proc, run_dir = _start(["-c", ANNOUNCE_HOLD], tmp_path)
    assert proc.stdout is not None and proc.stdin is not None
    assert proc.stdout.readline() == "held\n", _finish(proc)  # blocks until the hold is in place

    proc.send_signal(signal.SIGINT)
    proc.stdin.write("go\n")
    proc.stdin.flush()
    err = _finish(proc)

    assert proc.returncode == 130, err
    assert err == "fedfit: interrupted during start-up\n"
    assert not run_dir.exists()  # stopped before the run began: nothing written


def test_ctrl_c_during_a_run_is_one_line_exit_130_and_keeps_the_checkpoint(tmp_path: Path) -> None:
    proc, run_dir = _start(["-m", "fedfit.entry"], tmp_path)
    deadline = time.monotonic() + READY_TIMEOUT_S
    while not (run_dir / CHECKPOINT).is_file():  # the run loop has finished a round and saved it
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"no checkpoint before the run ended or {READY_TIMEOUT_S:.0f} s: {_finish(proc)}")
        time.sleep(0.05)

    proc.send_signal(signal.SIGINT)
    err = _finish(proc)

    assert proc.returncode == 130, err
    assert err == f"fedfit: interrupted; continue with: fedfit resume {run_dir}\n"
    assert (run_dir / CHECKPOINT).is_file()
