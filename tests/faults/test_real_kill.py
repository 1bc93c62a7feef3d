"""Real ``kill -9``: the process dies at a named phase, a new process resumes, nothing is lost.

A child process runs a small experiment and sends itself SIGKILL from the phase hook (no
``finally``, no flush, no lock release but the kernel's) after its last checkpoint, where a run
used to be unfinishable; ``fedfit resume`` in a fresh process must then finish the run exactly
as the unbroken one (kills at every other phase: ``test_phases.py``). With the process executor, the pool
workers must not outlive their killed parent. A second writer is refused while the first lives,
and welcome as soon as it has been killed.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from fedfit.cli import main
from fedfit.report.lock import RunLock
from fedfit.runner import run
from tests.faults.conftest import SMALL, assert_same_run, small_config

pytestmark = pytest.mark.slow

CHILD = """
import multiprocessing, os, signal, sys, yaml
from pathlib import Path
from fedfit.config import parse_config
from fedfit.runner import run
config = parse_config(yaml.safe_load(Path(sys.argv[1]).read_text()))
out, target, seen = Path(sys.argv[2]), int(sys.argv[3]), []
def hook(phase):
    seen.append(phase)
    if len(seen) == target:
        pids = [p.pid for p in multiprocessing.active_children()]
        out.with_suffix(".pids").write_text(" ".join(map(str, pids)))
        os.kill(os.getpid(), signal.SIGKILL)
run(config, out, on_phase=hook)
"""


def _kill_child_at(tmp_path: Path, raw: dict, phase: int) -> tuple[Path, list[int]]:
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump(raw))
    out = tmp_path / "run"
    proc = subprocess.run([sys.executable, "-c", CHILD, str(config), str(out), str(phase)],
                          capture_output=True, text=True, check=False, timeout=300)
    assert proc.returncode == -9, proc.stderr[-2000:]
    pids = out.with_suffix(".pids").read_text().split()
    return out, [int(p) for p in pids]


def _resume(out: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "fedfit.cli", "resume", str(out)], capture_output=True,
                          text=True, check=False, timeout=300)


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("reference") / "run"
    run(small_config(), out)
    return out


def test_kill_9_after_the_last_checkpoint_then_resume_equals_the_unbroken_run(tmp_path: Path,
                                                                             reference: Path) -> None:
    out, _ = _kill_child_at(tmp_path, SMALL, 7)  # the last checkpoint is written; model and summary not
    done = _resume(out)
    assert done.returncode == 0, done.stderr
    assert_same_run(out, reference)


def _alive(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    return "\nState:\tZ" not in status


def test_pool_workers_die_with_a_killed_parent(tmp_path: Path) -> None:
    raw = {**SMALL, "simulation": {"executor": "process", "workers": 2}}
    _, workers = _kill_child_at(tmp_path, raw, 4)  # round 2 logged, its checkpoint not yet written
    assert len(workers) == 2
    deadline = time.monotonic() + 20
    while any(map(_alive, workers)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not any(map(_alive, workers))


HOLDER = """
import sys, time
from pathlib import Path
from fedfit.report.lock import RunLock
with RunLock(Path(sys.argv[1])):
    print("locked", flush=True)
    time.sleep(120)
"""


def test_a_second_writer_is_refused_until_the_first_is_killed(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "run"
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump(SMALL))
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(out)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        assert main(["run", str(config), "--out", str(out)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and f"PID {holder.pid}" in err
        assert not (out / "config.yaml").exists()
    finally:
        holder.kill()
        holder.wait()
        if holder.stdout is not None:
            holder.stdout.close()
    assert main(["run", str(config), "--out", str(out)]) == 0  # the kernel released the dead holder's lock


def test_the_lock_is_held_for_the_whole_run(tmp_path: Path) -> None:
    out = tmp_path / "run"
    refused: list[str] = []

    def second_writer(phase: str) -> None:
        try:
            RunLock(out).acquire()
        except Exception as err:  # noqa: BLE001 - recorded and checked below
            refused.append(f"{phase}: {err}")

    run(small_config(), out, on_phase=second_writer)
    assert len(refused) == 9 and all(f"PID {os.getpid()}" in r for r in refused)
